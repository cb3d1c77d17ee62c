// libFuzzer target: the trace-log reader the trace tools stream logs with
// (Sources/Tracing/TraceLogReader.swift), compiled by scripts/fuzz.sh together with the
// record type, its JSON encoder and RunLoopError.
//
// Any byte string must read without trapping, every line being a record, blank or counted
// bad; reading it from a file must give the same records and counts as reading it from
// memory; and every record must survive being written out and read back.

import Foundation
import Glibc

/// A scratch file the input is written to, reused across inputs.
nonisolated(unsafe) private var scratch: (descriptor: Int32, path: String)? = nil

/// libFuzzer's entry point: one input per call.
@_cdecl("LLVMFuzzerTestOneInput")
public func traceLogReaderFuzzTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
  let fromMemory = readAll(TraceLogReader(bytes: bytes))
  // Lines: newlines, plus a last line without one.
  let lines = bytes.filter { $0 == 10 }.count + (bytes.last.map { $0 == 10 ? 0 : 1 } ?? 0)
  precondition(fromMemory.records.count + fromMemory.bad <= lines, "more outcomes than lines")
  precondition(!fromMemory.cutOff || bytes.last != 10, "a cut-off line that ends in a newline")

  let file = scratchFile()
  precondition(ftruncate(file.descriptor, 0) == 0)
  let written = bytes.withUnsafeBytes { pwrite(file.descriptor, $0.baseAddress, $0.count, 0) }
  precondition(written == size)
  guard let reader = try? TraceLogReader(path: file.path) else {
    preconditionFailure("the scratch file did not open")
  }
  let fromFile = readAll(reader)
  precondition(fromFile.records == fromMemory.records, "file and memory read differently")
  precondition(fromFile.bad == fromMemory.bad && fromFile.cutOff == fromMemory.cutOff)

  // Written out and read back, a record is the same record.
  let again = readAll(
    TraceLogReader(bytes: Array(fromMemory.records.map(\.jsonLine).joined().utf8)))
  precondition(again.records == fromMemory.records, "a record changed on its way back")
  precondition(again.bad == 0)
  return 0
}

private func readAll(_ reader: TraceLogReader) -> (records: [TraceRecord], bad: Int, cutOff: Bool) {
  var records: [TraceRecord] = []
  while true {
    guard let next = try? reader.next() else { break }
    records.append(next)
  }
  precondition(reader.records == records.count)
  precondition((reader.badLines == 0) == (reader.firstBadLine == nil))
  return (records, reader.badLines, reader.endsWithCutOffLine)
}

private func scratchFile() -> (descriptor: Int32, path: String) {
  if let scratch { return scratch }
  var template = Array("/tmp/trace-log-reader-fuzz-XXXXXX".utf8CString)
  let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
  precondition(descriptor >= 0)
  let path = String(cString: template)
  unlink(path)
  // The reader opens by path: the descriptor's own entry in /proc stays valid once unlinked.
  let opened = (descriptor, "/proc/self/fd/\(descriptor)")
  scratch = opened
  return opened
}
