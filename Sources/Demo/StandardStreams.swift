import Glibc

/// Unbuffered writes to standard output and standard error, so that narration interleaves
/// in order with what threads print and reaches a pipe at once.
enum StandardStreams {
  /// Writes `text` and a newline to standard output.
  static func out(_ text: String) {
    write(1, text + "\n")
  }

  /// Writes `text` and a newline to standard error.
  static func error(_ text: String) {
    write(2, text + "\n")
  }

  /// Writes `text` as it is (no newline) to `descriptor`, retrying short writes.
  static func write(_ descriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeMutableBytes { buffer in
        Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
      }
      if written < 0 {
        if errno == EINTR { continue }
        return
      }
      offset += written
    }
    bytes.removeAll()
  }
}
