import CRunLoopLinux
import Dispatch
import Glibc
import RunLoopCore

/// A remote named port: a connection to a ``NamedPortServer`` looked up by name, in this
/// process or another (the role of `CFMessagePortCreateRemote` and
/// `CFMessagePortSendRequest`).
///
/// ```swift
/// let main = try NamedPort(name: "com.example.main")
/// try main.send(msgid: 100, data: Array("worker-7".utf8))           // one-way
/// let answer = try main.request(msgid: 1, data: [42],
///                               sendTimeout: .seconds(1), receiveTimeout: .seconds(2))
/// ```
///
/// Calls block the calling thread (as `CFMessagePortSendRequest` does) and never longer than
/// their timeouts; calls from several threads on one port are served one at a time, and a
/// call waiting for another thread's call to finish gives up with
/// ``/RunLoopCore/RunLoopError/Code/timedOut`` at its own (send) deadline. A call that times out,
/// or finds the peer gone, closes the connection; the next call connects again, so a restarted
/// server is found.
///
/// The server is checked too: by default only a server running as this user or as root is
/// trusted (`SO_PEERCRED`), so another user cannot impersonate a name.
public final class NamedPort: Sendable {
  /// The name looked up.
  ///
  /// ```swift
  /// print(port.name)  // "com.example.main"
  /// ```
  public let name: String
  /// The registry the name is looked up in.
  ///
  /// ```swift
  /// print(port.registry.socketPath(for: port.name))
  /// ```
  public let registry: PortNameRegistry
  /// The largest payload this side sends or accepts, in bytes.
  ///
  /// ```swift
  /// guard data.count <= port.maxMessageSize else { return }
  /// ```
  public let maxMessageSize: Int
  /// The user ids a server may run as.
  ///
  /// ```swift
  /// let strict = try NamedPort(name: "com.example.main", trustedUIDs: [getuid()])
  /// ```
  public let trustedUIDs: Set<uid_t>
  /// The frame version sent: 2 (with the sending call-out's trace context) by default, or 1
  /// to talk to a server older than trace contexts, which refuses version 2: a `request`
  /// throws ``RunLoopCore/RunLoopError/Code/unsupportedFrameVersion``, while a one-way
  /// `send` returns before the refusal arrives, so that message is lost and the port's next
  /// call throws it. A server answers in the version it was asked in.
  ///
  /// ```swift
  /// let legacy = try NamedPort(name: "com.example.old", frameVersion: 1)
  /// ```
  public let frameVersion: Int

  // The connection and request counter; held for a whole exchange, which serializes callers.
  // No user code runs under it.
  private let connection = GuardedState(ClientState())
  // One exchange at a time. A caller waits for it only until its own deadline, so a call
  // never blocks past its timeout behind another thread's call. Created at 0 and raised to
  // 1: libdispatch stops the process when a semaphore is freed below its initial value.
  private let turn = DispatchSemaphore(value: 0)

  /// Looks `name` up and connects to it.
  ///
  /// - Parameters:
  ///   - name: the server's name.
  ///   - registry: where to look; the per-user default when `nil`.
  ///   - maxMessageSize: the largest payload to send or accept (the server's failure
  ///     notices are read up to 4 KiB whatever it is).
  ///   - trustedUIDs: who the server may run as; this user and root when `nil`.
  ///   - connectTimeout: how long connecting may take.
  ///   - frameVersion: the frame version to send, from 1 to
  ///     ``NamedPortServer/currentFrameVersion``.
  ///
  /// ```swift
  /// let worker = try NamedPort(name: "com.example.worker-7", connectTimeout: .seconds(1))
  /// ```
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/nameNotFound`` when no live server has the name (no
  ///   socket, or a stale one); ``RunLoopCore/RunLoopError/Code/peerRefused`` when the server runs
  ///   as an untrusted user; ``RunLoopCore/RunLoopError/Code/invalidName``;
  ///   ``/RunLoopCore/RunLoopError/Code/timedOut``; ``/RunLoopCore/RunLoopError/Code/invalidArgument``
  ///   for an unknown frame version.
  public init(
    name: String, registry: PortNameRegistry? = nil,
    maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize,
    trustedUIDs: Set<uid_t>? = nil, connectTimeout: Duration = .seconds(1),
    frameVersion: Int = NamedPortServer.currentFrameVersion
  ) throws(RunLoopError) {
    try PortNameRegistry.validate(name)
    guard (1...NamedPortServer.currentFrameVersion).contains(frameVersion) else {
      throw .invalidArgument(
        "frameVersion must be between 1 and \(NamedPortServer.currentFrameVersion)")
    }
    self.frameVersion = frameVersion
    self.name = name
    if let registry {
      self.registry = registry
    } else {
      self.registry = try .standard()
    }
    self.maxMessageSize = maxMessageSize
    self.trustedUIDs = trustedUIDs ?? [getuid(), 0]
    turn.signal()
    let (descriptor, serverPID) = try connect(timeout: connectTimeout)
    connection.withLock {
      $0.descriptor = descriptor
      $0.serverPID = serverPID
    }
  }

  deinit {
    connection.withLock { state in
      if state.descriptor >= 0 { close(state.descriptor) }
    }
  }

  /// Whether the port can still be used.
  ///
  /// ```swift
  /// if port.isValid { try port.send(msgid: 1) }
  /// ```
  public var isValid: Bool { connection.withLock { $0.valid } }

  /// Sends a one-way message: it returns once the message is handed to the kernel, without
  /// waiting for the server to handle it. A refusal or failure the server already reported
  /// is thrown here; otherwise it shows up on the next call.
  ///
  /// ```swift
  /// try port.send(msgid: 100, data: Array(myName.utf8), timeout: .seconds(1))
  /// ```
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/messageTooLarge``,
  ///   ``/RunLoopCore/RunLoopError/Code/timedOut`` (the server does not read),
  ///   ``RunLoopCore/RunLoopError/Code/peerClosed``, ``RunLoopCore/RunLoopError/Code/nameNotFound``
  ///   (reconnecting found no server), ``/RunLoopCore/RunLoopError/Code/invalidated``, or the
  ///   server's own refusal code.
  public func send(msgid: PortMessageID, data: [UInt8] = [], timeout: Duration = .seconds(1))
    throws(RunLoopError)
  {
    try checkSize(data.count)
    let deadline = ContinuousClock.now + timeout
    _ = try exchange(waitingUntil: deadline) { state throws(RunLoopError) in
      try self.reconnectingIfIdleClosed(&state, until: deadline) {
        descriptor, _ throws(RunLoopError) in
        try self.throwPendingFailure(descriptor)
        let frame = Frame(
          version: self.wireVersion, kind: .oneWay, msgid: msgid, requestID: 0,
          context: TracePropagation.outgoing(), payload: data)
        try SocketCalls.sendAll(descriptor, frame.encoded(), until: deadline)
        return []
      }
    }
  }

  /// Sends a request and waits for its reply (the role of `CFMessagePortSendRequest` with a
  /// reply mode).
  ///
  /// ```swift
  /// let reply = try port.request(msgid: 1, data: [7], sendTimeout: .seconds(1),
  ///                              receiveTimeout: .seconds(5))
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/timedOut`` when the request cannot be written
  ///   within `sendTimeout` or no reply comes within `receiveTimeout`;
  ///   ``RunLoopCore/RunLoopError/Code/peerClosed`` when the server goes away (dies) before
  ///   replying, as soon as that happens; ``RunLoopCore/RunLoopError/Code/messageTooLarge``; the
  ///   server's refusal (``RunLoopCore/RunLoopError/Code/peerRefused``...);
  ///   ``RunLoopCore/RunLoopError/Code/unsupportedFrameVersion`` from a server older than
  ///   ``frameVersion``; ``/RunLoopCore/RunLoopError/Code/invalidated``.
  public func request(
    msgid: PortMessageID, data: [UInt8] = [], sendTimeout: Duration = .seconds(1),
    receiveTimeout: Duration = .seconds(5)
  ) throws(RunLoopError) -> [UInt8] {
    try checkSize(data.count)
    let sendDeadline = ContinuousClock.now + sendTimeout
    return try exchange(waitingUntil: sendDeadline) { state throws(RunLoopError) in
      state.nextRequestID &+= 1
      if state.nextRequestID == 0 { state.nextRequestID = 1 }
      let requestID = state.nextRequestID
      let frame = Frame(
        version: self.wireVersion, kind: .request, msgid: msgid, requestID: requestID,
        context: TracePropagation.outgoing(), payload: data)
      return try self.reconnectingIfIdleClosed(&state, until: sendDeadline) {
        descriptor, serverPID throws(RunLoopError) in
        try SocketCalls.sendAll(descriptor, frame.encoded(), until: sendDeadline)
        return try self.awaitReply(
          descriptor, requestID: requestID, serverPID: serverPID,
          until: .now + receiveTimeout)
      }
    }
  }

  /// Closes the connection; later calls throw ``/RunLoopCore/RunLoopError/Code/invalidated``. A
  /// call in progress on another thread finishes (within its timeouts) first.
  ///
  /// ```swift
  /// port.invalidate()
  /// ```
  public func invalidate() {
    connection.withLock { state in
      state.valid = false
      if state.descriptor >= 0 { close(state.descriptor) }
      state.descriptor = -1
    }
  }

  // MARK: Internals

  private func checkSize(_ count: Int) throws(RunLoopError) {
    guard count <= maxMessageSize else {
      throw .messageTooLarge(
        "message of \(count) bytes exceeds the maximum of \(maxMessageSize) for port '\(name)'")
    }
  }

  /// Runs one exchange under the connection lock; any failure closes the connection, so the
  /// next exchange starts on a clean stream.
  private func exchange(
    waitingUntil deadline: ContinuousClock.Instant,
    _ body: (inout ClientState) throws(RunLoopError) -> [UInt8]
  ) throws(RunLoopError) -> [UInt8] {
    guard turn.wait(timeout: InProcessPort.dispatchTime(at: deadline)) == .success else {
      throw .timedOut("port '\(name)' was busy with another thread's call until the deadline")
    }
    defer { turn.signal() }
    return try connection.withLock { state throws(RunLoopError) -> [UInt8] in
      guard state.valid else { throw .invalidated("named port '\(name)' was invalidated") }
      // Every body runs in `reconnectingIfIdleClosed`, which already turned a `peerClosed`
      // into the server's reason when it sent one.
      do throws(RunLoopError) {
        return try body(&state)
      } catch {
        if state.descriptor >= 0 { close(state.descriptor) }
        state.descriptor = -1
        throw error
      }
    }
  }

  /// Runs `body` on the connection; when `body` finds the server's notice that it closed
  /// the connection as idle, connects again and runs `body` once more. That is safe: a
  /// server closes a connection as idle only when no frame of it is under way or waiting,
  /// so it handled nothing `body` sent. A one-way message that the kernel took in the
  /// instant before the server closed is lost, as on any connection with an idle timeout.
  private func reconnectingIfIdleClosed(
    _ state: inout ClientState, until deadline: ContinuousClock.Instant,
    _ body: (_ descriptor: Int32, _ serverPID: pid_t) throws(RunLoopError) -> [UInt8]
  ) throws(RunLoopError) -> [UInt8] {
    var attempt = 0
    while true {
      attempt += 1
      let descriptor = try connected(&state, until: deadline)
      do throws(RunLoopError) {
        do throws(RunLoopError) {
          return try body(descriptor, state.serverPID)
        } catch let error where error.code == .peerClosed {
          // A server that refuses us or closes us as idle says why first: prefer its reason.
          try throwPendingFailure(descriptor)
          throw error
        }
      } catch let error where error.code == Self.idleClosed && attempt == 1 {
        close(descriptor)
        state.descriptor = -1
      }
    }
  }

  private static let idleClosed = RunLoopError.Code(NamedPortServer.idleNoticeCode)

  private func connected(_ state: inout ClientState, until deadline: ContinuousClock.Instant)
    throws(RunLoopError) -> Int32
  {
    if state.descriptor < 0 {
      (state.descriptor, state.serverPID) = try connect(
        timeout: ContinuousClock.now.duration(to: deadline))
    }
    return state.descriptor
  }

  /// Connects; returns the descriptor and the server's process id.
  private func connect(timeout: Duration) throws(RunLoopError) -> (Int32, pid_t) {
    let path = registry.socketPath(for: name)
    let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw .systemCall("socket", errno: errno) }
    // A blocking connect bounded by SO_SNDTIMEO (a Unix socket connect only waits when the
    // server's backlog is full), then non-blocking I/O with poll for every later wait.
    let seconds = max(timeout, .milliseconds(1))
    var limit = timeval(
      tv_sec: Int(seconds.components.seconds),
      tv_usec: Int(seconds.components.attoseconds / 1_000_000_000_000))
    setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    let code = try SocketCalls.startConnect(descriptor, path: path)
    guard code == 0 else {
      close(descriptor)
      switch code {
      case ENOENT, ECONNREFUSED:
        throw .nameNotFound("no live port named '\(name)' in \(registry.directory)")
      case EAGAIN, EINPROGRESS, ETIMEDOUT:
        throw .timedOut("port '\(name)' did not accept the connection in time")
      case EACCES, EPERM:
        throw .peerRefused("no permission to connect to port '\(name)' (\(path))")
      default:
        throw .systemCall("connect(\(path))", errno: code)
      }
    }
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    guard let peer = SocketCalls.peer(of: descriptor), trustedUIDs.contains(peer.uid) else {
      close(descriptor)
      throw .peerRefused("the server of port '\(name)' runs as an untrusted user")
    }
    return (descriptor, peer.pid)
  }

  /// Throws what the server said before closing, if it already did (a refusal, a rejection).
  private func throwPendingFailure(_ descriptor: Int32) throws(RunLoopError) {
    if let failure = pendingFailure(descriptor) { throw failure }
  }

  /// What the server said before closing, if it already did; `peerClosed` when it closed
  /// without a word.
  private func pendingFailure(_ descriptor: Int32) -> RunLoopError? {
    guard SocketCalls.hasInput(descriptor) else { return nil }
    // Room for a whole notice: its header and the largest payload a reply's read takes.
    var buffer = [UInt8](
      repeating: 0, count: Frame.tracedHeaderSize + Self.maxNoticeSize)
    let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_PEEK))
    guard count > 0 else {
      return .peerClosed("port '\(name)' closed the connection")
    }
    if case .frame(let frame, _) = Frame.parse(
      Array(buffer[0..<count]), from: 0, maxPayload: maxMessageSize,
      maxFailurePayload: Self.maxNoticeSize, maxVersion: wireVersion),
      frame.kind == .failure
    {
      return error(from: frame)
    }
    return nil
  }

  /// Reads until the reply to `requestID` arrives or `deadline` passes. Frames for other
  /// requests are dropped as they are read, so a server that sends them without end costs
  /// one read and one frame of memory, and the deadline is checked after each of them as
  /// well as by every wait.
  private func awaitReply(
    _ descriptor: Int32, requestID: UInt32, serverPID: pid_t,
    until deadline: ContinuousClock.Instant
  )
    throws(RunLoopError) -> [UInt8]
  {
    var reader = FrameReader()
    var skipped = 0
    // Start small and grow when a read fills the chunk: a zeroed 64 KiB array per request
    // cost more than the round trip itself for small replies (runloop-bench, ports).
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      switch reader.next(
        maxPayload: maxMessageSize, maxFailurePayload: Self.maxNoticeSize, maxVersion: wireVersion)
      {
      case .frame(let frame, _):
        if frame.kind == .failure && (frame.requestID == requestID || frame.requestID == 0) {
          throw self.error(from: frame)
        }
        if frame.kind == .reply && frame.requestID == requestID {
          TracePropagation.receivedReply(frame.context, from: serverPID, name: name)
          return frame.payload
        }
        skipped += 1
        guard ContinuousClock.now < deadline else {
          throw .timedOut(
            "port '\(name)' did not reply before the receive timeout (it sent \(skipped)"
              + " frames for other requests instead)")
        }
        continue
      case .malformed(let reason):
        throw .malformedFrame("port '\(name)' sent a bad frame: \(reason)")
      case .unsupportedVersion(let version):
        throw .unsupportedFrameVersion(
          "port '\(name)' sent a frame of version \(version); this port reads versions 1 to"
            + " \(frameVersion)")
      case .tooLarge(let length):
        throw .messageTooLarge("reply of \(length) bytes exceeds the maximum of \(maxMessageSize)")
      case .needMore:
        reader.dropTaken()
      }
      guard SocketCalls.wait(descriptor, for: Int16(POLLIN), until: deadline) != 0 else {
        let extra = skipped > 0 ? " (it sent \(skipped) frames for other requests instead)" : ""
        throw .timedOut("port '\(name)' did not reply before the receive timeout\(extra)")
      }
      let count = read(descriptor, &chunk, chunk.count)
      if count > 0 {
        reader.append(chunk[0..<count])
        if count == chunk.count && chunk.count < FrameReader.keptCapacity {
          chunk = [UInt8](repeating: 0, count: chunk.count * 4)
        }
      } else if count == 0 || errno == ECONNRESET {
        throw .peerClosed("port '\(name)' closed the connection before replying")
      } else if errno != EAGAIN && errno != EINTR {
        throw .systemCall("read", errno: errno)
      }
    }
  }

  /// The largest failure frame's payload read whatever ``maxMessageSize`` is: a server's
  /// notices (an idle close, a refusal, a reply too large) are a line of text, and a client
  /// that cannot read them cannot tell an idle close, after which it connects again, from a
  /// dead server.
  static let maxNoticeSize = 4096

  /// The frame version sent and read, as the codec takes it.
  private var wireVersion: UInt8 { UInt8(frameVersion) }

  /// A failure frame's payload is `code: reason`. A version-1 server refuses a newer frame
  /// as `malformedFrame: unsupported version N`: that becomes `unsupportedFrameVersion`,
  /// with what to do about it.
  private func error(from frame: Frame) -> RunLoopError {
    let text = String(decoding: frame.payload, as: UTF8.self)
    // "code: reason": the code becomes the error's code, the reason its message (the
    // description puts the code back in front).
    let parts = text.split(separator: ":", maxSplits: 1)
    let code = parts.first.map(String.init) ?? "failure"
    let reason = parts.count == 2 ? String(parts[1].drop { $0 == " " }) : text
    if text.hasPrefix("malformedFrame: unsupported version ") && frameVersion > 1 {
      return .unsupportedFrameVersion(
        "port '\(name)' reads an older frame version than \(frameVersion) (it said: \(text));"
          + " create the NamedPort with frameVersion: 1 to talk to it, without trace context")
    }
    return RunLoopError(code: RunLoopError.Code(code), message: reason)
  }
}

/// The connection of a ``NamedPort``.
struct ClientState {
  var valid = true
  var descriptor: Int32 = -1
  var nextRequestID: UInt32 = 0
  // From SO_PEERCRED at connect: where a reply's trace context comes from.
  var serverPID: pid_t = 0
}
