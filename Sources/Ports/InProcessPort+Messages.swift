import RunLoopCore

/// In-process port messages as an `AsyncSequence`.
extension InProcessPort {
  /// A new port added to `loop` in `mode`, and the messages it receives as a sequence. The
  /// loop takes each message off the port (on its thread, in FIFO order) and hands it to the
  /// sequence's buffer; with the default `.oldest(capacity)` a full buffer refuses further
  /// messages and counts them in `LoopEvents.droppedCount`. Ending the
  /// consuming task invalidates the port (senders then get
  /// a `RunLoopError` with code `invalidated`).
  ///
  /// ```swift
  /// let (port, messages) = try InProcessPort.messages(on: worker)
  /// try port.send(msgid: 1, before: .now + .seconds(1))
  /// for await message in messages { print(message.msgid) }
  /// ```
  ///
  /// - Throws: what ``init(name:capacity:handler:)`` and ``add(to:mode:)`` throw.
  public static func messages(
    on loop: EventRunLoop, mode: LoopMode = .common, name: String = "port",
    capacity: Int = 1024, buffering: LoopEvents<LoopPortMessage>.Buffering? = nil
  ) throws(RunLoopError) -> (port: InProcessPort, messages: LoopEvents<LoopPortMessage>) {
    let (messages, port) = try LoopEvents<LoopPortMessage>.fed(
      on: loop, buffering: buffering ?? .oldest(capacity),
      by: { feed throws(RunLoopError) in
        try InProcessPort(name: name, capacity: capacity) { message in feed.yield(message) }
      },
      start: { port throws(RunLoopError) in try port.add(to: loop, mode: mode) },
      stop: { port in port.invalidate() })
    return (port, messages)
  }
}
