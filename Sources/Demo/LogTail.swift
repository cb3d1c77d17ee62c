import Foundation
import RunLoopObservers

/// Reads a growing JSON log: each call returns the records of the complete lines added since
/// the previous one (a line still being written waits for its newline).
struct LogTail {
  let path: String
  private var offset: UInt64 = 0
  private var partial: [UInt8] = []

  init(path: String) {
    self.path = path
  }

  mutating func readNewRecords() throws -> [TraceRecord] {
    guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
    defer { try? handle.close() }
    // A log truncated and started again: read it from the beginning.
    let size = (try? handle.seekToEnd()) ?? 0
    if size < offset {
      offset = 0
      partial = []
    }
    try handle.seek(toOffset: offset)
    let data = handle.readDataToEndOfFile()
    offset += UInt64(data.count)
    partial += data
    guard let lastNewline = partial.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
    let complete = String(decoding: partial[...lastNewline], as: UTF8.self)
    partial.removeSubrange(...lastNewline)
    do {
      return try TraceLog.parse(complete)
    } catch {
      throw DemoError("'\(path)' is not a runloop JSON log: \(error.message)")
    }
  }
}
