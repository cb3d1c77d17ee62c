import Foundation
import RunLoopCore

/// The lossless trace sink: one JSON object per line (JSON Lines), schema version
/// ``TraceRecord/schemaVersion`` (see `Docs/TraceSchema.md` and `Docs/trace-schema.json`).
///
/// The loop thread only appends each record to an in-memory queue; a writer thread encodes
/// and writes them, and flushes the file after each batch and on ``close()``.
///
/// Nothing is dropped. The queue has no bound, deliberately: a bound would force a choice
/// between waiting (the loop would then wait for the disk, which tracing must never make it
/// do) and dropping (the log would no longer be the complete record). A writer that falls
/// behind therefore costs memory, not loop time or records; ``queueHighWater`` tells how far
/// behind it fell.
///
/// ```swift
/// let sink = try JSONLinesSink(path: "/tmp/loop.jsonl")
/// let tracer = LoopTracer(sinks: [sink])
/// tracer.attach(to: EventRunLoop.current)
/// // ... run the loop ...
/// tracer.close()  // detaches, writes what is queued, closes the file
/// ```
public final class JSONLinesSink: TraceSink, @unchecked Sendable {
  /// The file written to, or `nil` for a descriptor given by the caller.
  ///
  /// ```swift
  /// let path = sink.path
  /// ```
  public let path: String?
  private let file: _JSONLinesFile
  private let writer: _WriterThread<TraceRecord>

  /// Creates (or truncates, or with `append` extends) the file at `path` and starts the
  /// writer thread.
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/systemCallFailed`` when the file cannot be
  ///   opened.
  ///
  /// ```swift
  /// let sink = try JSONLinesSink(path: "trace.jsonl", append: true)
  /// ```
  public init(path: String, append: Bool = false) throws(RunLoopError) {
    guard let handle = fopen(path, append ? "a" : "w") else {
      throw RunLoopError.systemCall("fopen(\(path))", errno: errno)
    }
    self.path = path
    let file = _JSONLinesFile(handle: handle, closesHandle: true)
    self.file = file
    self.writer = _WriterThread(name: "trace-json", capacity: nil) { batch in
      file.write(batch)
    }
    writer.start()
  }

  /// Writes to an open descriptor (for example `STDOUT_FILENO`), which stays open after
  /// ``close()``.
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/systemCallFailed`` when the descriptor is not
  ///   usable.
  ///
  /// ```swift
  /// let sink = try JSONLinesSink(fileDescriptor: STDOUT_FILENO)
  /// ```
  public init(fileDescriptor: Int32) throws(RunLoopError) {
    let copy = dup(fileDescriptor)
    guard copy >= 0, let handle = fdopen(copy, "a") else {
      throw RunLoopError.systemCall("fdopen(\(fileDescriptor))", errno: errno)
    }
    self.path = nil
    let file = _JSONLinesFile(handle: handle, closesHandle: true)
    self.file = file
    self.writer = _WriterThread(name: "trace-json", capacity: nil) { batch in
      file.write(batch)
    }
    writer.start()
  }

  /// Queues `record` for the writer thread; called on the loop thread. Never blocks
  /// beyond a short lock; records arriving after ``close()`` are ignored.
  ///
  /// ```swift
  /// sink.enqueue(record)  // on the loop thread; returns at once
  /// ```
  public func enqueue(_ record: TraceRecord) {
    writer.enqueue(record)
  }

  /// Waits until every record queued so far is written and flushed, up to `timeout`;
  /// returns whether it got there. Handy before reading the file while tracing goes on.
  ///
  /// ```swift
  /// sink.flush()
  /// let records = try TraceLog.read(contentsOf: sink.path!)
  /// ```
  @discardableResult
  public func flush(timeout: Duration = .seconds(10)) -> Bool {
    writer.flush(timeout: timeout)
  }

  /// Writes every queued record, flushes and closes the file. Later records are ignored.
  ///
  /// ```swift
  /// sink.close()
  /// ```
  public func close() {
    writer.close()
    file.close()
  }

  /// The most records that waited in the queue at once.
  ///
  /// ```swift
  /// print("the writer fell \(sink.queueHighWater) records behind at worst")
  /// ```
  public var queueHighWater: Int { writer.highWater }
}

/// The open file, touched by the writer thread and by close().
final class _JSONLinesFile: @unchecked Sendable {
  // Guarded by its own lock: the FILE*, nil once closed.
  private let handle: GuardedState<UnsafeMutablePointer<FILE>?>
  private let closesHandle: Bool

  init(handle: UnsafeMutablePointer<FILE>, closesHandle: Bool) {
    self.handle = GuardedState(handle)
    self.closesHandle = closesHandle
  }

  func write(_ batch: [TraceRecord]) {
    var text = ""
    text.reserveCapacity(batch.count * 320)
    for record in batch {
      record.appendJSONLine(to: &text)
    }
    handle.withLock { handle in
      guard let handle else { return }
      _ = text.withCString { fputs($0, handle) }
      fflush(handle)
    }
  }

  func close() {
    handle.withLock { handle in
      guard let open = handle else { return }
      fflush(open)
      if closesHandle { fclose(open) }
      handle = nil
    }
  }
}
