import CRunLoopLinux
import DequeModule
import Foundation
import Glibc
import RunLoopCore

/// The lossless trace sink: one JSON object per line (JSON Lines), schema version
/// ``TraceRecord/schemaVersion`` (see `Docs/RunLoopGuide.docc/TraceSchema.md` and
/// `Docs/trace-schema.json`).
///
/// The loop thread only appends each record to an in-memory queue (as a compact event with
/// no strings in it, when it comes from a ``LoopTracer``); a writer thread builds the records,
/// encodes them and writes whole lines with `write(2)`, one batch at a time. Only the writer thread
/// touches the descriptor, and it closes it itself once everything queued is written.
///
/// Nothing is dropped by the sink. The queue has no bound, deliberately: a bound would force
/// a choice between waiting (the loop would then wait for the disk, which tracing must never
/// make it do) and dropping (the log would no longer be the complete record). A writer that
/// falls behind therefore costs memory, not loop time or records;
/// ``JSONLinesSinkStatistics/queueHighWater`` tells how far behind it fell. What the system
/// refuses to take (a failed `write(2)`: full disk, closed pipe) is counted in
/// ``statistics`` and reported once on standard error.
///
/// Each `write(2)` carries whole lines only, at most `PIPE_BUF` bytes for a pipe or socket
/// (which the kernel writes atomically), so that a descriptor shared with other writers, such
/// as standard output, never gets a record split by someone else's output.
///
/// ```swift
/// let sink = try JSONLinesSink(path: "/tmp/loop.jsonl")
/// let tracer = LoopTracer(sinks: [sink])
/// tracer.attach(to: EventRunLoop.current)
/// // ... run the loop ...
/// tracer.close()  // detaches, writes what is queued, closes the file
/// ```
public final class JSONLinesSink: TraceSink, TraceEventSink, Sendable {
  /// The file written to, or `nil` for a descriptor given by the caller.
  public let path: String?
  /// How long ``close()`` waits for the writer (see ``close(timeout:)``).
  ///
  /// ```swift
  /// let timeout = sink.closeTimeout
  /// ```
  public let closeTimeout: Duration
  private let file: JSONLinesFile
  private let writer: WriterThread<TraceItem>
  private let sources: TraceSources

  /// Creates (or truncates, or with `append` extends) the file at `path`, locks it and starts
  /// the writer thread.
  ///
  /// Every write appends (`O_APPEND`) whole lines: when someone truncates the file during
  /// the run (logrotate's `copytruncate`, `truncate -s 0`), the next line lands at the new
  /// end, not at the old offset behind a hole of NUL bytes. The writer compares the file's
  /// size with what it wrote before each write and at close: a shorter file is counted in
  /// ``JSONLinesSinkStatistics/truncations`` with the records it took, a longer one in
  /// ``JSONLinesSinkStatistics/foreignBytes``. After a rotation that renames the file,
  /// ``reopen()`` moves the sink to a new file at `path`.
  ///
  /// A regular file is locked (`flock(2)`, exclusive) for as long as the sink writes it, and
  /// the lock is taken before the file is truncated: a second sink given the same path, in
  /// this process or another, throws ``/RunLoopCore/RunLoopError/Code/alreadyInUse`` and
  /// leaves the first one's file alone, instead of two runs interleaving in one log.
  ///
  /// The file is opened without blocking: `path` may name a FIFO, and opening a FIFO for
  /// writing would otherwise wait, uninterruptibly for a program that blocks its signals,
  /// until some process opens it for reading. With no reader yet, the initializer throws
  /// at once with ``/RunLoopCore/RunLoopError/systemError`` `ENXIO`; a caller that wants to
  /// wait for the reader retries (checking its own signals between tries).
  ///
  /// - Parameters:
  ///   - path: the file.
  ///   - append: add to the file instead of truncating it.
  ///   - closeTimeout: how long ``close()`` waits for the writer.
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when the file cannot be
  ///   opened (`ENXIO`: a FIFO nobody reads); ``/RunLoopCore/RunLoopError/Code/alreadyInUse``
  ///   when another sink writes it.
  ///
  /// ```swift
  /// let sink = try JSONLinesSink(path: "trace.jsonl", append: true)
  /// ```
  public convenience init(path: String, append: Bool = false, closeTimeout: Duration = .seconds(10))
    throws(RunLoopError)
  {
    let descriptor = try JSONLinesFile.open(path, truncating: !append)
    self.init(ownedDescriptor: descriptor, path: path, closeTimeout: closeTimeout)
  }

  /// Writes to an open descriptor (for example `STDOUT_FILENO`), which stays open after
  /// ``close()`` (the sink writes to a duplicate of it).
  ///
  /// - Parameters:
  ///   - fileDescriptor: the descriptor.
  ///   - closeTimeout: how long ``close()`` waits for the writer.
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when the descriptor is not
  ///   usable.
  ///
  /// ```swift
  /// let sink = try JSONLinesSink(fileDescriptor: STDOUT_FILENO)
  /// ```
  public convenience init(fileDescriptor: Int32, closeTimeout: Duration = .seconds(10))
    throws(RunLoopError)
  {
    let copy = fcntl(fileDescriptor, F_DUPFD_CLOEXEC, 0)
    guard copy >= 0 else {
      throw RunLoopError.systemCall("dup(\(fileDescriptor))", errno: errno)
    }
    self.init(ownedDescriptor: copy, path: nil, closeTimeout: closeTimeout)
  }

  /// Writes to `descriptor`, which the sink's writer thread closes after the last record.
  private init(ownedDescriptor descriptor: Int32, path: String?, closeTimeout: Duration) {
    self.path = path
    self.closeTimeout = closeTimeout
    let sources = TraceSources()
    self.sources = sources
    let file = JSONLinesFile(descriptor: descriptor, path: path, sources: sources)
    self.file = file
    self.writer = WriterThread(
      name: "trace-json", capacity: nil, write: { file.write($0) }, finish: { file.close() })
    writer.start()
  }

  /// Queues `record` for the writer thread; called on the loop thread. Never blocks
  /// beyond a short lock; records arriving after ``close()`` are ignored.
  ///
  /// ```swift
  /// sink.enqueue(record)  // on the loop thread; returns at once
  /// ```
  public func enqueue(_ record: TraceRecord) {
    writer.enqueue(.record(record))
  }

  package func _register(_ strings: TraceStrings) -> UInt32 {
    sources.register(strings)
  }

  package func _enqueue(_ event: TraceEvent) {
    writer.enqueue(.event(event))
  }

  package func _release(_ source: UInt32) {
    // Behind the tracer's events in the queue; once the writer has finished, nothing of the
    // tracer is left to write, and the table goes at once.
    if !writer.enqueueControl(.release(source)) { sources.release(source) }
  }

  package var _registeredTables: Int { sources.count }

  /// Closes the file once everything queued so far is written, and opens `path` again
  /// (creating it, appending to it, locking it): what a daemon does on SIGHUP after a
  /// rotation renamed its log. Nothing is lost: the records queued before the call go to the
  /// renamed file, the later ones to the new one. When `path` still names the open file, the
  /// sink goes on with it; when the new file cannot be opened or locked, the sink goes on
  /// with the old one and counts the failure in ``JSONLinesSinkStatistics/reopenFailures``.
  /// Does nothing for a sink made on a descriptor, or after ``close()``.
  ///
  /// ```swift
  /// // logrotate's postrotate sent SIGHUP:
  /// sink.reopen()
  /// ```
  public func reopen() {
    guard path != nil else { return }
    _ = writer.enqueueControl(.reopen)
  }

  /// Waits until every record queued so far is written, up to `timeout`; returns whether it
  /// got there. Handy before reading the file while tracing goes on.
  ///
  /// ```swift
  /// sink.flush()
  /// let records = try TraceLog.read(contentsOf: sink.path!)
  /// ```
  @discardableResult
  public func flush(timeout: Duration = .seconds(10)) -> Bool {
    writer.flush(timeout: timeout)
  }

  /// Stops taking records and waits up to ``closeTimeout`` for the writer to write every
  /// queued record and close the file (see ``close(timeout:)``).
  ///
  /// ```swift
  /// sink.close()
  /// ```
  public func close() {
    close(timeout: closeTimeout)
  }

  /// Stops taking records and waits up to `timeout` for the writer to write every queued
  /// record and close the file; returns whether it did. When it did not (the file or pipe
  /// does not take data), nothing is thrown away: the writer goes on and closes the file when
  /// it is done; ``statistics`` tells how many records are still pending, and a later call
  /// waits again.
  ///
  /// ```swift
  /// if !sink.close(timeout: .seconds(2)) {
  ///   print("\(sink.statistics.recordsPending) records still being written")
  /// }
  /// ```
  @discardableResult
  public func close(timeout: Duration) -> Bool {
    writer.close(timeout: timeout)
  }

  /// ``close(timeout:)`` with the time left until `deadline` (none when it has passed: the
  /// writer is told to finish, and the call returns whether it already had).
  ///
  /// ```swift
  /// let done = sink.close(before: .now + .seconds(2))
  /// ```
  public func close(before deadline: ContinuousClock.Instant) -> Bool {
    writer.close(timeout: max(.zero, deadline - ContinuousClock.now))
  }

  /// What the sink has written, lost and still has to write.
  ///
  /// ```swift
  /// let stats = sink.statistics
  /// print(stats.recordsWritten, stats.recordsLost, stats.writeErrors)
  /// ```
  public var statistics: JSONLinesSinkStatistics {
    let counts = file.counts
    return JSONLinesSinkStatistics(
      recordsWritten: counts.written, recordsPending: writer.pending,
      recordsLost: counts.lost, writeErrors: counts.errors,
      lastError: counts.lastError == 0 ? nil : counts.lastError,
      queueHighWater: writer.highWater, closed: writer.isFinished,
      fileRemoved: counts.fileRemoved, partialRecords: counts.partial,
      truncations: counts.truncations, recordsTruncated: counts.truncated,
      foreignBytes: counts.foreign, reopens: counts.reopens,
      reopenFailures: counts.reopenFailures, fileRenamed: counts.fileRenamed,
      lossRecords: counts.lossRecords)
  }
}

/// The open descriptor: written and closed by the writer thread only, so no lock is held
/// across the blocking I/O. Only the counts are shared.
final class JSONLinesFile: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  struct Counts {
    var written: UInt64 = 0
    var lost: UInt64 = 0
    var errors: UInt64 = 0
    var lastError: Int32 = 0
    // Records cut short by a failed write that could not be taken back out of the file.
    var partial: UInt64 = 0
    var fileRemoved = false
    // Someone else shortened the file, and the records of ours it held then; bytes someone
    // else added.
    var truncations: UInt64 = 0
    var truncated: UInt64 = 0
    var foreign: UInt64 = 0
    var reopens: UInt64 = 0
    var reopenFailures: UInt64 = 0
    var fileRenamed = false
    var lossRecords: UInt64 = 0
  }

  // Touched by the writer thread only (and by close() before any writer thread ran).
  private var descriptor: Int32
  private let path: String?
  private var sigpipeBlocked = false
  private var chunkLimit: Int
  private var regular: Bool
  // The size the file has if nobody else touched it since our last write, and the records
  // of ours it holds (what a truncation would take).
  private var expectedSize: Int64 = 0
  private var recordsInFile: UInt64 = 0
  // The file ends inside a record that a failed write cut short and that could not be
  // truncated away: the next write starts with a newline, so later records stay lines of
  // their own instead of being glued onto it.
  private var endsInsideARecord = false
  // Records lost (failed writes, truncated away) that no loss record in the file counts yet;
  // the run id of the last record encoded, for that loss record, and the table it came from.
  private var unreportedLoss: UInt64 = 0
  private var lastRun = ""
  private var lastSource: UInt32?
  // Touched by the writer thread only: the bytes of a batch and where its lines end, kept
  // between batches; the encoder of the tracers' events.
  private let buffer = LineBuffer()
  private var lineEnds: [Int] = []
  private var encoder: JSONEventEncoder
  // Guarded by its own lock, never held across I/O: what was written and lost.
  private let state = GuardedState(Counts())

  init(descriptor: Int32, path: String?, sources: TraceSources) {
    self.descriptor = descriptor
    self.path = path
    self.encoder = JSONEventEncoder(sources: sources)
    (regular, chunkLimit, expectedSize) = Self.describe(descriptor)
  }

  /// Whether `descriptor` is a regular file, the largest write that reaches it whole, and
  /// its size.
  private static func describe(_ descriptor: Int32) -> (Bool, Int, Int64) {
    var info = stat()
    let regular = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    // A pipe or socket takes up to PIPE_BUF bytes in one piece; a regular file opened with
    // O_APPEND appends each write(2) whole, so larger chunks are safe there.
    return (regular, regular ? 1 << 18 : Int(PIPE_BUF), regular ? Int64(info.st_size) : 0)
  }

  /// Opens `path` for appending without blocking (a FIFO with no reader fails with `ENXIO`
  /// instead of waiting), locks a regular file, and then truncates it when asked.
  static func open(_ path: String, truncating: Bool) throws(RunLoopError) -> Int32 {
    let descriptor = Glibc.open(
      path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_APPEND, 0o644)
    guard descriptor >= 0 else {
      let error = errno
      guard error == ENXIO else { throw RunLoopError.systemCall("open(\(path))", errno: error) }
      throw RunLoopError(
        code: .systemCallFailed,
        message: "open(\(path)) failed: it is a FIFO and no process has it open for reading "
          + "(errno \(error))",
        systemError: error)
    }
    var info = stat()
    if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
      do throws(RunLoopError) {
        try lock(descriptor, path: path, inode: UInt64(info.st_ino))
        if truncating, ftruncate(descriptor, 0) != 0 {
          throw RunLoopError.systemCall("ftruncate(\(path))", errno: errno)
        }
      } catch {
        Glibc.close(descriptor)
        throw error
      }
    }
    // Writes block again: the writer thread is there to wait for slow readers.
    let status = fcntl(descriptor, F_GETFL)
    if status >= 0 { _ = fcntl(descriptor, F_SETFL, status & ~O_NONBLOCK) }
    return descriptor
  }

  /// Takes the exclusive lock on the file; a file system without `flock(2)` leaves it
  /// unlocked, as it was before locks.
  private static func lock(_ descriptor: Int32, path: String, inode: UInt64) throws(RunLoopError) {
    guard flock(descriptor, LOCK_EX | LOCK_NB) != 0, errno == EWOULDBLOCK else { return }
    let holder = lockHolder(inode: inode).map { " (pid \($0))" } ?? ""
    throw RunLoopError(
      code: .alreadyInUse,
      message: "'\(path)' is being written by another process\(holder): two runs would "
        + "interleave their records in one log; give each its own path",
      systemError: EWOULDBLOCK)
  }

  /// The process that holds a `flock(2)` write lock on the file numbered `inode`, from
  /// `/proc/locks` ("1: FLOCK  ADVISORY  WRITE 4242 00:2f:123456 0 EOF").
  private static func lockHolder(inode: UInt64) -> Int32? {
    guard let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
      return nil
    }
    for line in text.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "WRITE",
        fields[5].split(separator: ":").last == Substring(String(inode))
      else { continue }
      return Int32(fields[4])
    }
    return nil
  }

  var counts: Counts { state.withLock { $0 } }

  func write(_ batch: Deque<TraceItem>) {
    if !sigpipeBlocked {
      // On the writer thread (ours): a pipe whose reader is gone makes write(2) fail with
      // EPIPE, counted like any write error, instead of SIGPIPE killing the process.
      var set = sigset_t()
      sigemptyset(&set)
      sigaddset(&set, SIGPIPE)
      pthread_sigmask(SIG_BLOCK, &set, nil)
      sigpipeBlocked = true
    }
    // The batch is encoded and written a slice at a time into one reused buffer: encoding a
    // whole large batch first made the writer fault in fresh pages for every batch, time
    // taken from the traced loop on a 2-core machine (runloop-bench, tracing).
    for item in batch {
      switch item {
      case .event(let event):
        guard encoder.append(event, to: buffer) else {
          // Not expected (releases come after their events), but a record not written is
          // counted lost, so that the statistics never call an incomplete trace complete.
          state.withLock { $0.lost += 1 }
          unreportedLoss += 1
          continue
        }
        if event.source != lastSource {
          lastSource = event.source
          lastRun = encoder.runID(of: event.source) ?? lastRun
        }
      case .record(let record):
        record.appendJSONLine(to: buffer)
        lastRun = record.run
        lastSource = nil
      case .release(let source):
        // The tracer's lines are already encoded (bytes copied): its strings can go.
        encoder.release(source)
        continue
      case .reopen:
        // The lines before the reopen go to the old file.
        writeBuffered()
        reopenFile()
        continue
      }
      lineEnds.append(buffer.count)
      if buffer.count >= Self.sliceBytes { writeBuffered() }
    }
    writeBuffered()
  }

  /// How many bytes of lines the writer encodes before it writes them.
  static var sliceBytes: Int { 1 << 16 }

  /// Writes the lines in the buffer, then empties it.
  private func writeBuffered() {
    defer {
      buffer.removeAll()
      lineEnds.removeAll(keepingCapacity: true)
    }
    // Chunks of whole lines, each at most chunkLimit bytes (a longer line goes alone).
    var start = 0
    var firstLine = 0
    while firstLine < lineEnds.count {
      var lastLine = firstLine
      while lastLine + 1 < lineEnds.count, lineEnds[lastLine + 1] - start <= chunkLimit {
        lastLine += 1
      }
      let end = lineEnds[lastLine]
      checkFile()
      if unreportedLoss > 0 { writeLossRecord() }
      let (done, error) = writeChunk(buffer.bytes.baseAddress! + start, end - start)
      // The lines of the chunk that reached the file whole, and whether one was cut short.
      var whole = 0
      while firstLine + whole <= lastLine, lineEnds[firstLine + whole] - start <= done {
        whole += 1
      }
      let wholeBytes = whole == 0 ? 0 : lineEnds[firstLine + whole - 1] - start
      let cut = error != 0 && done > wholeBytes && !takeBack(done - wholeBytes)
      let lines = UInt64(lastLine - firstLine + 1)
      recordsInFile += UInt64(whole)
      let firstFailure = state.withLock { counts -> Bool in
        counts.written += UInt64(whole)
        guard error != 0 else { return false }
        counts.lost += lines - UInt64(whole)
        if cut { counts.partial += 1 }
        unreportedLoss += lines - UInt64(whole)
        counts.errors += 1
        counts.lastError = error
        return counts.errors == 1
      }
      if firstFailure {
        let text =
          "JSONLinesSink: write failed (\(String(cString: strerror(error)))); trace records "
          + "are being lost, see the sink's statistics\n"
        _ = text.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
      }
      start = end
      firstLine = lastLine + 1
    }
  }

  /// Writes one chunk of whole lines; returns how many of its bytes reached the file and 0
  /// or the errno that stopped it. A file left inside a record by an earlier failure gets
  /// its newline first.
  private func writeChunk(_ base: UnsafeRawPointer, _ count: Int) -> (done: Int, error: Int32) {
    if endsInsideARecord {
      var newline = UInt8(ascii: "\n")
      let (written, error) = writeFully(&newline, 1)
      guard written == 1 else { return (0, error) }
      endsInsideARecord = false
    }
    return writeFully(base, count)
  }

  /// Removes the last `count` bytes written (the start of a record a failed write cut
  /// short), so that the file still ends on a whole line; returns whether it could. Only a
  /// regular file can be cut back; in anything else the cut record stays, and the next
  /// write starts on a new line.
  private func takeBack(_ count: Int) -> Bool {
    if regular {
      let end = lseek(descriptor, 0, SEEK_CUR)
      if end >= count, ftruncate(descriptor, end - off_t(count)) == 0,
        lseek(descriptor, end - off_t(count), SEEK_SET) >= 0
      {
        expectedSize -= Int64(count)
        return true
      }
    }
    endsInsideARecord = true
    return false
  }

  /// Writes `count` bytes, retrying after interruptions, partial writes and (for a
  /// non-blocking descriptor) until it takes data; returns how many bytes were written
  /// and 0 or the errno that stopped it.
  private func writeFully(_ base: UnsafeRawPointer, _ count: Int) -> (done: Int, error: Int32) {
    guard descriptor >= 0 else { return (0, EBADF) }
    var done = 0
    while done < count {
      let result = Glibc.write(descriptor, base + done, count - done)
      if result >= 0 {
        done += result
        expectedSize += Int64(result)
        continue
      }
      let error = errno
      if error == EINTR { continue }
      if error == EPIPE { Self.discardPendingSIGPIPE() }
      if error == EAGAIN || error == EWOULDBLOCK {
        var wait = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        _ = poll(&wait, 1, -1)
        continue
      }
      return (done, error)
    }
    return (done, 0)
  }

  /// Takes the SIGPIPE the failed write left pending on this thread (it is blocked here).
  private static func discardPendingSIGPIPE() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGPIPE)
    var zero = timespec(tv_sec: 0, tv_nsec: 0)
    _ = sigtimedwait(&set, nil, &zero)
  }

  /// Compares the file's size with what we wrote: shorter, someone truncated it and took
  /// the records it held; longer, someone else wrote to it. Regular files only.
  private func checkFile() {
    guard regular, descriptor >= 0 else { return }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return }
    let size = Int64(info.st_size)
    defer { expectedSize = size }
    if size < expectedSize {
      let taken = recordsInFile
      recordsInFile = 0
      unreportedLoss += taken
      let first = state.withLock { counts -> Bool in
        counts.truncations += 1
        counts.truncated += taken
        return counts.truncations == 1
      }
      if first {
        note(
          "'\(path ?? "the trace file")' was truncated by another process (logrotate's "
            + "copytruncate?): \(taken) records written before are no longer in it; see the "
            + "sink's statistics")
      }
    } else if size > expectedSize {
      let added = UInt64(size - expectedSize)
      state.withLock { $0.foreign += added }
    }
  }

  /// Writes a loss record counting the records lost since the last one; on success the
  /// count starts again from zero, on failure it stays for the next write (or the close) to
  /// try. The record is the sink's own line, not counted as a record written.
  private func writeLossRecord() {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let record = TraceRecord(
      run: lastRun, seq: 0, record: .loss, timestamp: LoopClock.now(),
      wallTime: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), pid: getpid(),
      tid: crl_current_tid(), thread: "trace-json", loop: 0,
      mode: "", iteration: 0, depth: 0, lost: unreportedLoss)
    let line = LineBuffer(capacity: 512)
    record.appendJSONLine(to: line)
    let (done, error) = writeChunk(line.bytes.baseAddress!, line.count)
    guard error == 0 else {
      if done > 0 { _ = takeBack(done) }
      return
    }
    unreportedLoss = 0
    state.withLock { $0.lossRecords += 1 }
  }

  /// Closes the file and opens the path again (see ``JSONLinesSink/reopen()``).
  private func reopenFile() {
    guard let path, descriptor >= 0 else { return }
    checkFile()
    let opened: Int32
    do {
      opened = try Self.open(path, truncating: false)
    } catch let error where error.code == .alreadyInUse {
      // The lock is ours (the path still names our file, opened a second time) or another
      // writer's: either way the old file goes on.
      var old = stat()
      var new = stat()
      if fstat(descriptor, &old) == 0, stat(path, &new) == 0, old.st_ino == new.st_ino,
        old.st_dev == new.st_dev
      {
        return
      }
      reopenFailed(error.message)
      return
    } catch {
      reopenFailed(error.message)
      return
    }
    Glibc.close(descriptor)
    descriptor = opened
    (regular, chunkLimit, expectedSize) = Self.describe(opened)
    recordsInFile = 0
    endsInsideARecord = false
    state.withLock { $0.reopens += 1 }
  }

  private func reopenFailed(_ message: String) {
    state.withLock { $0.reopenFailures += 1 }
    note("reopen failed (\(message)); still writing to the file it had open")
  }

  /// One line on standard error, written whole.
  private func note(_ text: String) {
    let line = "JSONLinesSink: \(text)\n"
    _ = line.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
  }

  func close() {
    guard descriptor >= 0 else { return }
    checkFile()
    if unreportedLoss > 0 { writeLossRecord() }
    // A file deleted while it was written took every record with it, though each write
    // succeeded: say so in the statistics. One renamed kept them, under its new name.
    var info = stat()
    if regular, fstat(descriptor, &info) == 0 {
      var named = stat()
      if info.st_nlink == 0 {
        state.withLock { $0.fileRemoved = true }
      } else if let path,
        stat(path, &named) != 0 || named.st_ino != info.st_ino || named.st_dev != info.st_dev
      {
        state.withLock { $0.fileRenamed = true }
      }
    }
    Glibc.close(descriptor)
    descriptor = -1
  }
}
