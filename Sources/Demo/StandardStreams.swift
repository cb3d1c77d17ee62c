import Glibc
import Synchronization

/// Unbuffered writes to standard output and standard error, so that narration interleaves
/// in order with what threads print and reaches a pipe at once.
///
/// A reader that goes away (`runloop-demo run | head -1`) makes writes fail with `EPIPE` once
/// SIGPIPE is ignored (the `run` command ignores it, to end the run gracefully instead of
/// dying with its trace unwritten): the stream is then marked closed, later writes to it are
/// skipped, and ``out(_:)`` returns `false` for the caller to act on.
enum StandardStreams {
  /// Set when a write to standard output failed with `EPIPE`.
  static let outputClosed = Atomic<Bool>(false)
  /// Lines of standard output a write error other than `EPIPE` lost (`EIO`, `ENOSPC`), and
  /// the last such error: the `run` command reports them and exits with `EX_IOERR`.
  static let outputLinesLost = Atomic<Int>(0)
  static let outputLastError = Atomic<Int32>(0)

  /// Writes `text` and a newline to standard output; returns `false` when standard output
  /// is closed (its reader went away).
  @discardableResult
  static func out(_ text: String) -> Bool {
    guard !outputClosed.load(ordering: .acquiring) else { return false }
    switch deliver(1, text + "\n") {
    case 0:
      return true
    case EPIPE:
      outputClosed.store(true, ordering: .releasing)
      return false
    case let error:
      outputLastError.store(error, ordering: .relaxed)
      outputLinesLost.add(1, ordering: .relaxed)
      return true
    }
  }

  /// Writes `text` and a newline to standard error.
  static func error(_ text: String) {
    write(2, text + "\n")
  }

  /// Writes `text` as it is (no newline) to `descriptor`, retrying short writes; returns
  /// `false` when the reader is gone (`EPIPE`).
  @discardableResult
  static func write(_ descriptor: Int32, _ text: String) -> Bool {
    deliver(descriptor, text) != EPIPE
  }

  /// Writes `text` as it is, retrying short writes and interruptions; returns 0, or the
  /// `errno` that stopped it.
  private static func deliver(_ descriptor: Int32, _ text: String) -> Int32 {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      // write(2) reads the array's bytes in place.
      let written = bytes.withUnsafeMutableBytes { buffer in
        Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
      }
      if written < 0 {
        if errno == EINTR { continue }
        return errno
      }
      offset += written
    }
    bytes.removeAll()
    return 0
  }
}
