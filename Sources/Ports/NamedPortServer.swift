import CRunLoopLinux
import Glibc
import RunLoopCore

/// A local named port: a Unix-domain socket registered under a name in a
/// ``PortNameRegistry``, served by a run loop (the role of `CFMessagePortCreateLocal` plus
/// `CFMessagePortCreateRunLoopSource`, and of `NSMessagePort` registered with
/// `NSMessagePortNameServer`). Other processes (and threads) reach it with a ``NamedPort``.
///
/// ```swift
/// let server = try NamedPortServer(name: "com.example.main") { message in
///   message.expectsReply ? Array("pong".utf8) : nil
/// }
/// try server.add(to: .main, mode: .default)
/// try EventRunLoop.main.run()
/// ```
///
/// The handler runs on the loop's thread for each one-way message and request; for a
/// request, what it returns (or an empty reply for `nil`) goes back to the sender. To take
/// requests in a task instead, and reply later from any thread, serve the name with
/// ``requests(name:registry:on:mode:capacity:maxMessageSize:allowedUIDs:)``.
///
/// Security: every connection's peer is checked with `SO_PEERCRED`; a peer whose user id is
/// not in ``allowedUIDs`` (by default: this process's user) gets a refusal frame and is
/// disconnected. The socket is created mode 0600; when ``allowedUIDs`` names other users it
/// is created 0666 and the registry's directory, if this user owns it, is made searchable
/// (never readable or writable) by others, so those users can connect and the uid check
/// decides.
///
/// Names: a name held by a live server, in this or any process, is refused with
/// ``RunLoopCore/RunLoopError/Code/nameInUse``. A socket left by a process that died without
/// cleaning up is detected (its lock file is free) and reclaimed: ``reclaimedStaleSocket`` tells.
///
/// Faults: a frame with a bad magic, version or kind, a payload above ``maxMessageSize``, or a
/// connection that ends in the middle of a frame is rejected by dropping that connection
/// (``NamedPortStatistics/framesRejected``); the server goes on serving everyone else.
///
/// Limits: at most ``maxConnections`` connections; a connection with no message under way
/// is closed after ``idleTimeout``, and one whose frame is not complete within
/// ``frameTimeout`` is dropped, so silent or stalled clients give their slots back; the
/// bytes of unfinished frames and unsent replies held across all connections stay within
/// ``maxBufferedBytes``. ``statistics`` counts each of these.
public final class NamedPortServer: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  /// The registered name.
  ///
  /// ```swift
  /// print(server.name)  // "com.example.main"
  /// ```
  public let name: String
  /// The registry the name lives in.
  ///
  /// ```swift
  /// print(server.registry.socketPath(for: server.name))
  /// ```
  public let registry: PortNameRegistry
  /// The largest payload accepted, in bytes.
  ///
  /// ```swift
  /// print("accepts up to \(server.maxMessageSize) bytes")
  /// ```
  public let maxMessageSize: Int
  /// The user ids allowed to connect. Naming another user makes the socket mode 0666 and
  /// the registry directory searchable by others (if this user owns it); the directory's
  /// parents must let that user search too, so use a registry they can reach rather than
  /// the per-user default under `$XDG_RUNTIME_DIR`. That user's ``NamedPort`` must trust
  /// this server's uid (`trustedUIDs`).
  ///
  /// ```swift
  /// // Server, as uid 1000; /srv/svc is searchable by uid 1001:
  /// let registry = try PortNameRegistry(directory: "/srv/svc/ports")
  /// let shared = try NamedPortServer(
  ///   name: "svc", registry: registry, allowedUIDs: [getuid(), 1001]) { _ in nil }
  /// // Client, as uid 1001:
  /// let port = try NamedPort(name: "svc", registry: registry, trustedUIDs: [1000])
  /// ```
  public let allowedUIDs: Set<uid_t>
  /// Whether registering found a stale socket of a dead server and replaced it.
  ///
  /// ```swift
  /// if server.reclaimedStaleSocket { print("the previous server crashed") }
  /// ```
  public let reclaimedStaleSocket: Bool

  private let handler: @Sendable (NamedPortMessage) -> [UInt8]?
  private let listenDescriptor: Int32
  // Everything shared between threads; connections' buffers are touched on the loop
  // thread only.
  private let state = GuardedState(ServerState())
  // Set once in init.
  private var listener: DescriptorSource!
  // Set once in init; told of connection deadlines on the loop thread.
  private var sweeper: ConnectionSweeper!
  // Loop thread only: what one read takes from a connection before it is parsed.
  private var readBuffer = [UInt8](repeating: 0, count: FrameReader.keptCapacity)

  /// The default maximum payload: 1 MiB.
  ///
  /// ```swift
  /// let half = NamedPortServer.defaultMaxMessageSize / 2
  /// ```
  public static let defaultMaxMessageSize = 1 << 20

  /// The default cap on open connections: 1024.
  ///
  /// ```swift
  /// let server = try NamedPortServer(name: "svc", maxConnections:
  /// NamedPortServer.defaultMaxConnections / 4) { _ in nil }
  /// ```
  public static let defaultMaxConnections = 1024

  /// The most connections served at once; a client connecting beyond it gets a
  /// `tooManyConnections` failure frame and is disconnected
  /// (``NamedPortStatistics/connectionsRefusedAtCap`` counts them).
  ///
  /// ```swift
  /// print("serves up to \(server.maxConnections) clients")
  /// ```
  public let maxConnections: Int

  /// The default idle deadline: 30 s.
  ///
  /// ```swift
  /// let patient = try NamedPortServer(
  ///   name: "svc", idleTimeout: NamedPortServer.defaultIdleTimeout * 4) { _ in nil }
  /// ```
  public static let defaultIdleTimeout: Duration = .seconds(30)

  /// The default frame deadline: 5 s.
  ///
  /// ```swift
  /// let strict = try NamedPortServer(
  ///   name: "svc", frameTimeout: NamedPortServer.defaultFrameTimeout / 5) { _ in nil }
  /// ```
  public static let defaultFrameTimeout: Duration = .seconds(5)

  /// The default cap on bytes held for all connections: 64 MiB (or one largest frame, when
  /// ``maxMessageSize`` is larger).
  ///
  /// ```swift
  /// let lean = try NamedPortServer(
  ///   name: "svc", maxBufferedBytes: NamedPortServer.defaultMaxBufferedBytes / 8) { _ in nil }
  /// ```
  public static let defaultMaxBufferedBytes = 64 << 20

  /// How long a connection may stay open with no message under way (from its accept or its
  /// last complete frame). Past it, the server sends the client a notice and closes the
  /// connection (``NamedPortStatistics/connectionsClosedIdle``); a ``NamedPort`` that finds
  /// the notice at its next call connects again without an error.
  ///
  /// ```swift
  /// print("idle connections close after \(server.idleTimeout)")
  /// ```
  public let idleTimeout: Duration

  /// How long a frame may take from its first byte to its last. Past it, the client gets a
  /// `timedOut` failure frame and the connection is dropped
  /// (``NamedPortStatistics/framesTimedOut``). Bytes already waiting in the socket (the loop
  /// was busy) are read before either deadline is applied.
  ///
  /// ```swift
  /// print("a frame must arrive within \(server.frameTimeout)")
  /// ```
  public let frameTimeout: Duration

  /// The most bytes the server holds for all its connections together: unfinished frames
  /// and replies a client has not read yet (``NamedPortStatistics/bufferedBytes``). A read
  /// that takes the total above it drops that connection with a `bufferFull` failure frame
  /// (``NamedPortStatistics/connectionsDroppedAtBufferLimit``).
  ///
  /// ```swift
  /// print("holds at most \(server.maxBufferedBytes) bytes")
  /// ```
  public let maxBufferedBytes: Int

  /// The newest frame version the server reads: 2 (frames with the sender's trace context)
  /// by default. It reads every version up to it and answers each request in the version it
  /// came in, so clients of version 1 keep working. 1 makes it read as a version-1 server
  /// does, refusing a version-2 frame with `malformedFrame: unsupported version 2`, which is
  /// how clients can be tested against servers that predate trace contexts.
  ///
  /// ```swift
  /// let old = try NamedPortServer(name: "svc", maxFrameVersion: 1) { _ in nil }
  /// ```
  public let maxFrameVersion: Int

  /// The newest frame version of this framework: 2.
  ///
  /// ```swift
  /// print("speaks frame versions 1 to \(NamedPortServer.currentFrameVersion)")
  /// ```
  public static let currentFrameVersion = Int(Frame.version)

  /// Registers `name` and starts listening; messages are handled once the server is added
  /// to a loop.
  ///
  /// - Parameters:
  ///   - name: 1 to 64 letters, digits, `.`, `_`, `-` (for example `com.example.main`).
  ///   - registry: where to register; the per-user default when `nil`.
  ///   - maxMessageSize: the largest payload accepted (and replied).
  ///   - allowedUIDs: who may connect; this process's user when `nil`.
  ///   - maxConnections: the most connections served at once, at least 1.
  ///   - idleTimeout: how long a connection may stay open with no message under way.
  ///   - frameTimeout: how long one frame may take to arrive, from its first byte.
  ///   - maxBufferedBytes: the most bytes held for all connections together; `nil` for
  ///     ``defaultMaxBufferedBytes`` or one largest frame, whichever is more.
  ///   - maxFrameVersion: the newest frame version read, from 1 to ``currentFrameVersion``.
  ///   - handler: runs on the loop's thread per message; returns the reply of a request.
  ///
  /// ```swift
  /// let server = try NamedPortServer(name: "com.example.worker-7", maxMessageSize: 4096) {
  ///   message in nil
  /// }
  /// ```
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/invalidName``,
  ///   ``RunLoopCore/RunLoopError/Code/nameInUse``,
  ///   ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a maximum (size or connections)
  ///   below 1, a deadline that is not positive, a buffer cap below one largest frame, or a
  ///   frame version this framework does not know;
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed``.
  public init(
    name: String, registry: PortNameRegistry? = nil,
    maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize,
    allowedUIDs: Set<uid_t>? = nil, maxConnections: Int = NamedPortServer.defaultMaxConnections,
    idleTimeout: Duration = NamedPortServer.defaultIdleTimeout,
    frameTimeout: Duration = NamedPortServer.defaultFrameTimeout,
    maxBufferedBytes: Int? = nil,
    maxFrameVersion: Int = NamedPortServer.currentFrameVersion,
    handler: @escaping @Sendable (NamedPortMessage) -> [UInt8]?
  ) throws(RunLoopError) {
    try PortNameRegistry.validate(name)
    guard maxMessageSize >= 1, maxMessageSize <= Int(UInt32.max) else {
      throw .invalidArgument("maxMessageSize must be between 1 and \(UInt32.max)")
    }
    guard maxConnections >= 1 else { throw .invalidArgument("maxConnections must be at least 1") }
    guard idleTimeout > .zero, frameTimeout > .zero else {
      throw .invalidArgument("idleTimeout and frameTimeout must be positive")
    }
    guard (1...Self.currentFrameVersion).contains(maxFrameVersion) else {
      throw .invalidArgument(
        "maxFrameVersion must be between 1 and \(Self.currentFrameVersion)")
    }
    let largestFrame = Frame.headerSize(of: UInt8(maxFrameVersion)) + maxMessageSize
    let bufferCap = maxBufferedBytes ?? max(Self.defaultMaxBufferedBytes, largestFrame)
    guard bufferCap >= largestFrame else {
      throw .invalidArgument(
        "maxBufferedBytes (\(bufferCap)) must hold one largest frame (\(largestFrame) bytes)")
    }
    let chosenRegistry: PortNameRegistry
    if let registry { chosenRegistry = registry } else { chosenRegistry = try .standard() }
    let registry = chosenRegistry
    let allowed = allowedUIDs ?? [getuid()]
    let lock = try Self.openLockFile(registry.lockPath(for: name))
    guard Self.takeLock(lock) else {
      let code = errno
      close(lock)
      if code == EWOULDBLOCK {
        throw .nameInUse(
          "port name '\(name)' is registered by a live port in \(registry.directory)")
      }
      throw .systemCall("flock(\(registry.lockPath(for: name)))", errno: code)
    }
    // We hold the lock: any socket at the path belongs to a server that is gone.
    let path = registry.socketPath(for: name)
    let stale = unlink(path) == 0
    let descriptor: Int32
    do throws(RunLoopError) {
      // Other users reach the socket only if they may write it and search its directory;
      // SO_PEERCRED still decides who is served.
      let others = !allowed.isSubset(of: [geteuid()])
      if others { registry.letOthersSearch() }
      descriptor = try Self.listen(at: path, mode: others ? 0o666 : 0o600)
    } catch {
      close(lock)
      throw error
    }
    self.name = name
    self.registry = registry
    self.maxMessageSize = maxMessageSize
    self.maxConnections = maxConnections
    self.idleTimeout = idleTimeout
    self.frameTimeout = frameTimeout
    self.maxBufferedBytes = bufferCap
    self.maxFrameVersion = maxFrameVersion
    self.allowedUIDs = allowed
    self.reclaimedStaleSocket = stale
    self.handler = handler
    self.listenDescriptor = descriptor
    state.withLock { $0.lockDescriptor = lock }
    self.listener = DescriptorSource(
      fileDescriptor: descriptor, ownership: .owned, name: "\(name).listen",
      onReadable: { [self] _ in self.acceptConnections() })
    let granularity = min(max(min(idleTimeout, frameTimeout) / 16, .milliseconds(1)), .seconds(1))
    self.sweeper = ConnectionSweeper(
      granularity: granularity,
      serves: { [weak self] mode, isCommon in self?.serves(mode, isCommon: isCommon) ?? false },
      sweep: { [weak self] now in self?.closeExpiredConnections(now: now) })
  }

  /// Opens the name's lock file, creating it, without following a symbolic link and only if
  /// it is a regular file of this user: in a directory others can write, a link they plant
  /// would make the server create or lock a file of their choosing, and a lock file they own
  /// would let them hold the name.
  private static func openLockFile(_ path: String) throws(RunLoopError) -> Int32 {
    let lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
    guard lock >= 0 else {
      let code = errno
      if code == ELOOP {
        throw .invalidState("lock file \(path) is a symbolic link; it is not followed")
      }
      throw .systemCall("open(\(path))", errno: code)
    }
    var info = stat()
    guard fstat(lock, &info) == 0 else {
      let code = errno
      close(lock)
      throw .systemCall("fstat(\(path))", errno: code)
    }
    guard info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else {
      close(lock)
      throw .invalidState(
        "lock file \(path) is owned by uid \(info.st_uid) or not a regular file; only a"
          + " regular file of uid \(geteuid()) is used")
    }
    return lock
  }

  /// Takes the name's lock. ``PortNameRegistry/isRegistered(_:)`` holds it shared for an
  /// instant, so a failure is retried for about 10 ms before the name counts as taken by a
  /// live server (which holds it for its whole life).
  private static func takeLock(_ lock: Int32) -> Bool {
    for attempt in 0..<100 {
      if flock(lock, LOCK_EX | LOCK_NB) == 0 { return true }
      guard errno == EWOULDBLOCK, attempt < 99 else { return false }
      usleep(100)
    }
    return false
  }

  private static func listen(at path: String, mode: mode_t) throws(RunLoopError) -> Int32 {
    let descriptor = try SocketCalls.socket(domain: AF_UNIX, type: Int32(SOCK_STREAM.rawValue))
    do throws(RunLoopError) {
      try SocketCalls.bind(descriptor, path: path)
      guard chmod(path, mode) == 0 else { throw .systemCall("chmod(\(path))", errno: errno) }
      guard Glibc.listen(descriptor, 128) == 0 else { throw .systemCall("listen", errno: errno) }
    } catch {
      close(descriptor)
      throw error
    }
    return descriptor
  }

  /// Whether the server still holds its name.
  ///
  /// ```swift
  /// if server.isValid { server.invalidate() }
  /// ```
  public var isValid: Bool { state.withLock { $0.valid } }

  /// Counters of what the server has seen. Safe from any thread.
  ///
  /// ```swift
  /// print(server.statistics.framesRejected)
  /// ```
  public var statistics: NamedPortStatistics { state.withLock { $0.statistics } }

  /// The connections open right now.
  ///
  /// ```swift
  /// print("\(server.connectionCount) clients connected")
  /// ```
  public var connectionCount: Int { state.withLock { $0.connections.count } }

  /// Adds the server to `loop` in `mode`: the first add makes `loop` its owner, and every
  /// connection joins the same modes.
  ///
  /// ```swift
  /// try server.add(to: .current, mode: .common)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``;
  ///   ``/RunLoopCore/RunLoopError/Code/alreadyInUse`` when the server belongs to another loop.
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    let connections = try state.withLock {
      state throws(RunLoopError) -> [ServerConnection] in
      guard state.valid else { throw .invalidated("named port '\(name)' was invalidated") }
      if let owner = state.owner, owner !== loop {
        throw .alreadyInUse("named port '\(name)' belongs to \(owner)")
      }
      state.owner = loop
      state.modes.insert(mode)
      return Array(state.connections.values)
    }
    try listener.add(to: loop, mode: mode)
    loop.addDeadlineSource(sweeper)
    for connection in connections { try? connection.source.add(to: loop, mode: mode) }
  }

  /// Whether the server is in `mode` of its loop, directly or through the common modes
  /// (`isCommon`: whether `mode` is one of that loop's common modes).
  private func serves(_ mode: LoopMode, isCommon: Bool) -> Bool {
    let modes = state.withLock { state in state.modes }
    return modes.contains(mode) || (modes.contains(.common) && isCommon)
  }

  /// Unregisters the name (removing the socket file and releasing the lock at once) and
  /// closes the listening socket and every connection: at once on the owning loop's thread
  /// or without an owner, otherwise on the owner's next pass in any mode the server was added
  /// in (or a common mode). No message is handled after this call returns on the owning
  /// thread; from another thread, at most the frames already being handled finish. A second
  /// call does nothing.
  ///
  /// ```swift
  /// server.invalidate()
  /// ```
  public func invalidate() {
    let taken = state.withLock { state -> (Int32, EventRunLoop?, Set<LoopMode>)? in
      guard state.valid else { return nil }
      state.valid = false
      defer { state.lockDescriptor = -1 }
      return (state.lockDescriptor, state.owner, state.modes)
    }
    guard let (lock, owner, modes) = taken else { return }
    unlink(registry.socketPath(for: name))
    close(lock)
    if let owner, !owner.isCurrent {
      // In the server's own modes too: a loop running only a custom mode must close it.
      owner.perform(inModes: Array(modes.union([.common])), name: "\(name).invalidate") {
        self.closeEverything()
      }
      owner.wakeUp()
    } else {
      closeEverything()
    }
  }

  private func closeEverything() {
    listener.invalidate()
    let (connections, owner, closed) = state.withLock { state in
      defer {
        state.connections.removeAll()
        state.statistics.bufferedBytes = 0
        state.closedHandler = nil
      }
      return (Array(state.connections.values), state.owner, state.closedHandler)
    }
    owner?.removeDeadlineSource(sweeper)
    for connection in connections { connection.source.invalidate() }
    closed?()
  }

  // MARK: Loop thread

  private func acceptConnections() {
    while isValid {
      let descriptor = crl_accept_nonblocking(listenDescriptor)
      guard descriptor >= 0 else {
        if SocketCalls.isResourceShortage(errno) {
          state.withLock { $0.statistics.acceptPauses += 1 }
          SocketCalls.pauseAccepting(listener)
        }
        return
      }
      if state.withLock({ $0.connections.count }) >= maxConnections {
        state.withLock { $0.statistics.connectionsRefusedAtCap += 1 }
        sendFailure(
          "tooManyConnections: port '\(name)' serves at most \(maxConnections) connections",
          to: descriptor)
        close(descriptor)
        continue
      }
      guard let peer = SocketCalls.peer(of: descriptor), allowedUIDs.contains(peer.uid) else {
        refuse(descriptor)
        continue
      }
      let connection = ServerConnection(peerPID: peer.pid, peerUID: peer.uid)
      // A client that connects and says nothing gives its slot back after the idle deadline.
      connection.deadline = .now + idleTimeout
      sweeper.note(connection.deadline)
      connection.source = DescriptorSource(
        fileDescriptor: descriptor, ownership: .owned, name: "\(name).connection",
        onReadable: { [self] _ in self.readFrames(from: connection) },
        onWritable: { [self] _ in self.flush(connection) },
        onError: { [self] _, _ in
          self.drop(connection, rejected: !connection.reader.isBetweenFrames)
        })
      let placement = state.withLock { state -> (EventRunLoop?, Set<LoopMode>) in
        state.connections[descriptor] = connection
        state.statistics.connectionsAccepted += 1
        return (state.owner, state.modes)
      }
      guard let loop = placement.0 else { continue }
      for mode in placement.1 { try? connection.source.add(to: loop, mode: mode) }
    }
  }

  private func refuse(_ descriptor: Int32) {
    state.withLock { $0.statistics.peersRefused += 1 }
    sendFailure("peerRefused: uid not allowed by port '\(name)'", to: descriptor)
    close(descriptor)
  }

  /// Sends a failure notice. Notices are version-1 frames, which every client reads,
  /// whatever version it speaks.
  private func sendFailure(_ notice: String, to descriptor: Int32) {
    let refusal = Frame(
      version: 1, kind: .failure, msgid: 0, requestID: 0, payload: Array(notice.utf8)
    )
    .encoded()
    // send(2) reads the frame's bytes in place.
    _ = refusal.withUnsafeBytes {
      send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
    }
  }

  private func readFrames(from connection: ServerConnection) {
    // invalidate() from another thread closes on a later pass: stop serving at once.
    guard isValid else { return }
    let descriptor = connection.source.fileDescriptor
    // read(2) fills the kept buffer in place (no allocation per read).
    let count = readBuffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    if count == 0 {
      // End of file: fine between frames, a truncated frame otherwise.
      drop(connection, rejected: !connection.reader.isBetweenFrames)
      return
    }
    if count < 0 {
      if errno != EAGAIN && errno != EINTR { drop(connection, rejected: false) }
      return
    }
    let frameWasUnderWay = !connection.reader.isBetweenFrames
    var framesTaken = 0
    connection.reader.append(readBuffer[0..<count])
    taking: while connection.source.isValid, isValid {
      switch connection.reader.next(maxPayload: maxMessageSize, maxVersion: UInt8(maxFrameVersion))
      {
      case .needMore:
        break taking
      case .malformed(let reason):
        reject(connection, notice: "malformedFrame: \(reason)")
        return
      case .unsupportedVersion(let version):
        reject(connection, notice: versionNotice(version))
        return
      case .tooLarge(let length):
        reject(
          connection,
          notice: "messageTooLarge: payload of \(length) bytes exceeds \(maxMessageSize)")
        return
      case .frame(let frame, _):
        framesTaken += 1
        handle(frame, from: connection)
      }
    }
    guard connection.source.isValid else { return }
    connection.reader.dropTaken()
    if connection.reader.isBetweenFrames {
      connection.deadline = .now + idleTimeout
    } else if !frameWasUnderWay || framesTaken > 0 {
      // A new frame started: it has frameTimeout from now; a frame under way keeps its own.
      connection.deadline = .now + frameTimeout
      sweeper.note(connection.deadline)
    }
    if account(connection) {
      state.withLock { $0.statistics.connectionsDroppedAtBufferLimit += 1 }
      sendFailure(
        "bufferFull: port '\(name)' holds its limit of \(maxBufferedBytes) bytes of"
          + " unfinished frames and unsent replies",
        to: descriptor)
      drop(connection, rejected: false)
    }
  }

  /// Counts what `connection` holds now into ``NamedPortStatistics/bufferedBytes``; returns
  /// whether the total is above ``maxBufferedBytes`` while this connection holds something.
  private func account(_ connection: ServerConnection) -> Bool {
    // A dropped connection gave its bytes back already.
    guard connection.source.isValid else { return false }
    let held = connection.reader.count + connection.output.count
    let change = held - connection.accountedBytes
    connection.accountedBytes = held
    return state.withLock { state in
      state.statistics.bufferedBytes += change
      return held > 0 && state.statistics.bufferedBytes > maxBufferedBytes
    }
  }

  /// Drops the connections past their deadline (loop thread, from the sweeper); returns the
  /// earliest deadline left.
  private func closeExpiredConnections(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    let connections = state.withLock { Array($0.connections.values) }
    var earliest: ContinuousClock.Instant?
    for connection in connections where connection.source.isValid {
      if connection.deadline <= now {
        let descriptor = connection.source.fileDescriptor
        if SocketCalls.hasInput(descriptor) {
          // Bytes that arrived while the loop was busy (a slow handler) are not the client's
          // fault: the read call-out takes them first, and the next sweep looks again.
          earliest = now
          continue
        }
        if connection.reader.isBetweenFrames {
          state.withLock { $0.statistics.connectionsClosedIdle += 1 }
          sendFailure(
            "\(Self.idleNoticeCode): port '\(name)' closes connections idle for \(idleTimeout)",
            to: descriptor)
        } else {
          state.withLock { $0.statistics.framesTimedOut += 1 }
          sendFailure(
            "timedOut: port '\(name)' did not receive the whole frame within \(frameTimeout)",
            to: descriptor)
        }
        drop(connection, rejected: false)
        continue
      }
      earliest = min(earliest ?? connection.deadline, connection.deadline)
    }
    return earliest
  }

  /// Why a frame of `version` is refused. A server limited to version 1 says what a
  /// version-1 server says, word for word, since it stands in for one.
  private func versionNotice(_ version: UInt8) -> String {
    if maxFrameVersion == 1 { return "malformedFrame: unsupported version \(version)" }
    return "\(RunLoopError.Code.unsupportedFrameVersion.identifier): port '\(name)' reads frame"
      + " versions 1 to \(maxFrameVersion), not \(version)"
  }

  /// The code of the notice sent before closing an idle connection; a ``NamedPort`` that
  /// reads it connects again instead of failing.
  static let idleNoticeCode = "idleClosed"

  private func handle(_ frame: Frame, from connection: ServerConnection) {
    guard frame.kind == .oneWay || frame.kind == .request else {
      reject(connection, notice: "malformedFrame: a client may not send \(frame.kind) frames")
      return
    }
    let message = NamedPortMessage(
      msgid: frame.msgid, data: frame.payload, expectsReply: frame.kind == .request,
      peerPID: connection.peerPID, peerUID: connection.peerUID,
      cause: TracePropagation.cause(of: frame.context, from: connection.peerPID))
    let (owner, deferred) = state.withLock { state in
      state.statistics.messagesHandled += 1
      return (state.owner, state.deferredHandler)
    }
    if let deferred {
      let route = DeferredReply(
        connection: connection, version: frame.version, msgid: frame.msgid,
        requestID: frame.requestID, trace: message.cause?.traceID)
      // In a port call-out caused by the sender, as a handler runs.
      _ = TracePropagation.handle(message, on: owner, name: name) { message in
        deferred(self, message, frame.kind == .request ? route : nil)
        return nil
      }
      return
    }
    let (reply, replyContext) = TracePropagation.handle(
      message, on: owner, name: name, handler)
    guard frame.kind == .request, connection.source.isValid else { return }
    queueAnswer(
      answerFrame(.success(reply ?? []), for: frame, context: replyContext), to: connection)
  }

  /// The reply frame for `request`, or a failure frame when the reply is too large. A reply
  /// goes out in the version its request came in, so a version-1 client reads it.
  private func answerFrame(
    _ answer: Result<[UInt8], FailureNotice>, for request: Frame,
    context: Frame.TraceContext?
  ) -> Frame {
    switch answer {
    case .success(let reply) where reply.count > maxMessageSize:
      return Frame(
        version: request.version, kind: .failure, msgid: request.msgid,
        requestID: request.requestID,
        payload: Array(
          "messageTooLarge: reply of \(reply.count) bytes exceeds \(maxMessageSize)".utf8))
    case .success(let reply):
      return Frame(
        version: request.version, kind: .reply, msgid: request.msgid,
        requestID: request.requestID, context: context, payload: reply)
    case .failure(let notice):
      return Frame(
        version: request.version, kind: .failure, msgid: request.msgid,
        requestID: request.requestID, payload: Array(notice.text.utf8))
    }
  }

  private func queueAnswer(_ answer: Frame, to connection: ServerConnection) {
    connection.output += answer.encoded()
    flush(connection)
  }

  // MARK: Deferred replies (NamedPortServer+Requests.swift)

  /// Hands every message to `handler` (on the loop's thread) instead of the initializer's
  /// handler; a request comes with its route, answered later through `answer(_:with:)`.
  /// `closed` runs once the server has closed its connections, however it was invalidated.
  func deferReplies(
    to handler: @escaping @Sendable (NamedPortServer, NamedPortMessage, DeferredReply?) -> Void,
    closed: @escaping @Sendable () -> Void
  ) {
    state.withLock {
      $0.deferredHandler = handler
      $0.closedHandler = closed
    }
  }

  /// Sends a deferred request's answer, from any thread: on the owning loop's thread, at
  /// once there, otherwise on its next pass in the server's modes (after what was queued
  /// before, so answers sent before ``invalidate()`` leave before the connections close).
  /// An answer whose client is gone counts in ``NamedPortStatistics/repliesUndelivered``.
  func answer(_ route: DeferredReply, with answer: Result<[UInt8], FailureNotice>) {
    let request = Frame(
      version: route.version, kind: .request, msgid: route.msgid, requestID: route.requestID,
      payload: [])
    let deliver: @Sendable () -> Void = { [self] in
      // Not `isValid`: answers queued before `invalidate()` still leave, before the close.
      guard route.connection.source.isValid else {
        state.withLock { $0.statistics.repliesUndelivered += 1 }
        return
      }
      // The request's trace goes back with the span of the call-out that sends the reply.
      let context = route.trace.map {
        Frame.TraceContext(
          traceHigh: $0.high, traceLow: $0.low, spanID: EventRunLoop.currentCalloutSpan)
      }
      queueAnswer(answerFrame(answer, for: request, context: context), to: route.connection)
    }
    let (owner, modes) = state.withLock { ($0.owner, $0.modes) }
    guard let owner, !owner.isCurrent else { return deliver() }
    owner.perform(inModes: Array(modes.union([.common])), name: "\(name).reply") { deliver() }
    owner.wakeUp()
  }

  /// Counts what a deferred-reply server lost or answered for itself.
  func count(_ update: (inout NamedPortStatistics) -> Void) {
    state.withLock { update(&$0.statistics) }
  }

  private func flush(_ connection: ServerConnection) {
    let descriptor = connection.source.fileDescriptor
    defer { _ = account(connection) }
    while !connection.output.isEmpty {
      // send(2) reads the queued bytes in place.
      let written = connection.output.withUnsafeBytes {
        send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if written > 0 {
        connection.output.removeFirst(written)
      } else if written < 0 && (errno == EAGAIN || errno == EINTR) {
        // A client that sends but never reads must not make the server hoard replies.
        if connection.output.count > 4 * maxMessageSize + 4096 {
          state.withLock { $0.statistics.connectionsDroppedForUnreadReplies += 1 }
          drop(connection, rejected: false)
        } else if !connection.source.wantsWritable {
          try? connection.source.setWantsWritable(true)
        }
        return
      } else {
        drop(connection, rejected: false)
        return
      }
    }
    if connection.source.wantsWritable { try? connection.source.setWantsWritable(false) }
  }

  /// Tells the peer why (best effort) and drops the connection.
  private func reject(_ connection: ServerConnection, notice: String) {
    sendFailure(notice, to: connection.source.fileDescriptor)
    drop(connection, rejected: true)
  }

  private func drop(_ connection: ServerConnection, rejected: Bool) {
    let descriptor = connection.source.fileDescriptor
    let held = connection.accountedBytes
    connection.accountedBytes = 0
    state.withLock { state in
      if state.connections[descriptor] === connection {
        state.connections[descriptor] = nil
        state.statistics.bufferedBytes -= held
      }
      if rejected { state.statistics.framesRejected += 1 }
    }
    connection.source.invalidate()
  }
}

/// The part of a ``NamedPortServer`` shared between threads.
struct ServerState {
  var valid = true
  var lockDescriptor: Int32 = -1
  var owner: EventRunLoop?
  var modes: Set<LoopMode> = []
  var connections: [Int32: ServerConnection] = [:]
  var statistics = NamedPortStatistics()
  var deferredHandler: (@Sendable (NamedPortServer, NamedPortMessage, DeferredReply?) -> Void)?
  // Told once the connections are closed (a requests sequence ends there).
  var closedHandler: (@Sendable () -> Void)?
}

/// One client connection of a server. Loop thread only, except `source`, which is set
/// before the connection is shared.
final class ServerConnection: @unchecked Sendable {
  // Unchecked: the loop thread is the only one to touch its `var`s (see above).
  let peerPID: pid_t
  let peerUID: uid_t
  var source: DescriptorSource!
  var reader = FrameReader()
  var output: [UInt8] = []
  // When the connection is dropped: its idle deadline between frames, its frame's
  // deadline while one is under way.
  var deadline: ContinuousClock.Instant = .now
  // What this connection adds to the server's `bufferedBytes`.
  var accountedBytes = 0

  init(peerPID: pid_t, peerUID: uid_t) {
    self.peerPID = peerPID
    self.peerUID = peerUID
  }
}
