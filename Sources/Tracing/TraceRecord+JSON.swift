extension TraceRecord {
  /// The record as one line of JSON (schema version 4), keys in schema order, ending in a
  /// newline.
  ///
  /// ```swift
  /// print(record.jsonLine, terminator: "")
  /// ```
  public var jsonLine: String {
    let buffer = LineBuffer(capacity: 512)
    appendJSONLine(to: buffer)
    return String(decoding: buffer.bytes, as: UTF8.self)
  }

  // Hand-written rather than JSONEncoder: a fixed key order (the schema's) makes the log
  // easy to read and to diff, and it is many times faster on the writer thread. The JSON
  // sink writes a tracer's events with `JSONEventEncoder`, which must write the same bytes.
  func appendJSONLine(to buffer: LineBuffer) {
    buffer.reserve(512)
    buffer.write(#"{"v":"#)
    buffer.writeDecimal(Int64(version))
    buffer.write(#","run":"#)
    buffer.writeQuoted(run)
    buffer.reserve(512)
    buffer.write(#","seq":"#)
    buffer.writeDecimal(seq)
    buffer.write(#","record":"#)
    buffer.writeQuoted(record.rawValue)
    buffer.reserve(512)
    buffer.write(#","ts_ns":"#)
    buffer.writeDecimal(timestamp)
    buffer.write(#","wall_ns":"#)
    buffer.writeDecimal(wallTime)
    buffer.write(#","pid":"#)
    buffer.writeDecimal(Int64(pid))
    buffer.write(#","tid":"#)
    buffer.writeDecimal(Int64(tid))
    buffer.write(#","thread":"#)
    buffer.writeQuoted(thread)
    buffer.reserve(512)
    buffer.write(#","loop":"#)
    buffer.writeDecimal(loop)
    buffer.write(#","mode":"#)
    buffer.writeQuoted(mode)
    buffer.reserve(512)
    buffer.write(#","iteration":"#)
    buffer.writeDecimal(iteration)
    buffer.write(#","depth":"#)
    buffer.writeDecimal(Int64(depth))
    if let step {
      buffer.write(#","step":"#)
      buffer.writeDecimal(Int64(step))
    }
    if let activity {
      buffer.write(#","activity":"#)
      buffer.writeQuoted(activity)
    }
    buffer.reserve(512)
    if let calloutKind {
      buffer.write(#","callout_kind":"#)
      buffer.writeQuoted(calloutKind)
    }
    buffer.reserve(512)
    if let calloutName {
      buffer.write(#","callout_name":"#)
      buffer.writeQuoted(calloutName)
    }
    buffer.reserve(512)
    if let duration {
      buffer.write(#","duration_ns":"#)
      buffer.writeDecimal(duration)
    }
    if let dueAt {
      buffer.write(#","due_ns":"#)
      buffer.writeDecimal(dueAt)
    }
    if let lateness {
      buffer.write(#","lateness_ns":"#)
      buffer.writeDecimal(lateness)
    }
    buffer.reserve(512)
    if let span {
      buffer.write(#","span":"#)
      buffer.writeQuoted(span)
    }
    buffer.reserve(512)
    if let causeSpan {
      buffer.write(#","cause_span":"#)
      buffer.writeQuoted(causeSpan)
    }
    buffer.reserve(512)
    if let causeTid {
      buffer.write(#","cause_tid":"#)
      buffer.writeDecimal(Int64(causeTid))
    }
    if let causeLoop {
      buffer.write(#","cause_loop":"#)
      buffer.writeDecimal(causeLoop)
    }
    if let causePid {
      buffer.write(#","cause_pid":"#)
      buffer.writeDecimal(Int64(causePid))
    }
    buffer.reserve(512)
    if let trace {
      buffer.write(#","trace":"#)
      buffer.writeQuoted(trace)
    }
    buffer.reserve(512)
    if let threadState {
      buffer.write(#","thread_state":"#)
      buffer.writeQuoted(threadState)
    }
    buffer.reserve(512)
    if let wchan {
      buffer.write(#","wchan":"#)
      buffer.writeQuoted(wchan)
    }
    if let lost {
      buffer.write(#","lost":"#)
      buffer.writeDecimal(lost)
    }
    buffer.write("}\n")
  }
}
