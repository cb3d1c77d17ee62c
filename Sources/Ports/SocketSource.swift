import CRunLoopLinux
import Glibc
import RunLoopCore

/// A socket as a run-loop source, the role of `CFSocket`: accept, connect, data and write
/// call-outs on the loop's thread, for TCP and Unix-domain stream sockets.
///
/// Three ways to make one:
/// - ``init(listeningOn:backlog:name:onAccept:)``: a listening socket; `onAccept` gets each
///   new connection's descriptor (`kCFSocketAcceptCallBack`).
/// - ``init(connectingTo:name:onConnect:onData:onWritable:onClose:)``: a non-blocking
///   connect; `onConnect` tells how it ended (`kCFSocketConnectCallBack`).
/// - ``init(connected:ownership:name:onData:onWritable:onClose:)``: an already connected
///   descriptor, such as one `onAccept` received.
///
/// ```swift
/// let server = try SocketSource(listeningOn: .tcp(host: "127.0.0.1", port: 0)) { _, fd in
///   let connection = SocketSource(connected: fd, ownership: .owned, onData: { socket, bytes in
///     socket.write(bytes)  // echo
///   })
///   try? connection.add(to: .current, mode: .default)
/// }
/// try server.add(to: .current, mode: .default)
/// print("listening on port \(server.localPort!)")
/// ```
///
/// `onData` gets the bytes read (`kCFSocketDataCallBack`); `onClose` runs once when the peer
/// closes or the connection fails, and the source then invalidates itself. ``write(_:)``
/// queues bytes from any thread; the loop sends them when the socket is writable and calls
/// `onWritable` (`kCFSocketWriteCallBack`) each time the queue has drained. The source owns
/// the descriptors it creates and closes them on ``invalidate()``.
public final class SocketSource: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  /// The source's name in traces.
  ///
  /// ```swift
  /// print(socket.name)  // "connection"
  /// ```
  public let name: String

  private let onAccept: (@Sendable (SocketSource, Int32) -> Void)?
  private let onConnect: (@Sendable (SocketSource, RunLoopError?) -> Void)?
  private let onData: (@Sendable (SocketSource, [UInt8]) -> Void)?
  private let onWritable: (@Sendable (SocketSource) -> Void)?
  private let onClose: (@Sendable (SocketSource, RunLoopError?) -> Void)?
  // Shared between writers (any thread) and the loop thread.
  private let state: GuardedState<SocketState>
  // Set once in init.
  private var source: DescriptorSource!

  /// Listens on `endpoint` (TCP with `SO_REUSEADDR`; a Unix path must not exist yet).
  ///
  /// ```swift
  /// let listener = try SocketSource(listeningOn: .unix(path: path)) { _, fd in close(fd) }
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a bad address;
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when `bind` or `listen` fails.
  public init(
    listeningOn endpoint: SocketEndpoint, backlog: Int32 = 128, name: String = "listener",
    onAccept: @escaping @Sendable (SocketSource, Int32) -> Void
  ) throws(RunLoopError) {
    let descriptor = try SocketCalls.socket(
      domain: endpoint.domain, type: Int32(SOCK_STREAM.rawValue))
    do throws(RunLoopError) {
      var one: Int32 = 1
      if endpoint.domain != AF_UNIX {
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
      }
      let bound = try endpoint.withAddress { Glibc.bind(descriptor, $0, $1) }
      guard bound == 0 else { throw .systemCall("bind(\(endpoint))", errno: errno) }
      guard listen(descriptor, backlog) == 0 else { throw .systemCall("listen", errno: errno) }
    } catch {
      close(descriptor)
      throw error
    }
    self.name = name
    self.onAccept = onAccept
    (onConnect, onData, onWritable, onClose) = (nil, nil, nil, nil)
    state = GuardedState(SocketState(phase: .listening))
    source = makeSource(descriptor, ownership: .owned, wantsWritable: false)
  }

  /// Starts a non-blocking connect to `endpoint`; `onConnect` runs on the loop's thread
  /// with `nil` when connected or the error when the connect failed (the source is then
  /// invalid).
  ///
  /// ```swift
  /// let client = try SocketSource(
  ///   connectingTo: .tcp(host: "127.0.0.1", port: port),
  ///   onConnect: { socket, error in if error == nil { socket.write(Array("hi".utf8)) } },
  ///   onData: { _, bytes in print(bytes) })
  /// try client.add(to: .current, mode: .default)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a bad address;
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when the connect fails at once.
  public init(
    connectingTo endpoint: SocketEndpoint, name: String = "connection",
    onConnect: @escaping @Sendable (SocketSource, RunLoopError?) -> Void,
    onData: (@Sendable (SocketSource, [UInt8]) -> Void)? = nil,
    onWritable: (@Sendable (SocketSource) -> Void)? = nil,
    onClose: (@Sendable (SocketSource, RunLoopError?) -> Void)? = nil
  ) throws(RunLoopError) {
    let descriptor = try SocketCalls.socket(
      domain: endpoint.domain, type: Int32(SOCK_STREAM.rawValue))
    let status: Int32
    do throws(RunLoopError) {
      status = try endpoint.withAddress { Glibc.connect(descriptor, $0, $1) == 0 ? 0 : errno }
      guard status == 0 || status == EINPROGRESS || status == EAGAIN else {
        throw .systemCall("connect(\(endpoint))", errno: status)
      }
    } catch {
      close(descriptor)
      throw error
    }
    self.name = name
    self.onAccept = nil
    self.onConnect = onConnect
    self.onData = onData
    self.onWritable = onWritable
    self.onClose = onClose
    // Connected at once or not, the connect call-out comes from the loop, on writability.
    state = GuardedState(SocketState(phase: .connecting))
    source = makeSource(descriptor, ownership: .owned, wantsWritable: true)
  }

  /// Wraps a connected stream socket (for example one received by `onAccept`). The
  /// descriptor is made non-blocking.
  ///
  /// ```swift
  /// let connection = SocketSource(connected: fd, ownership: .owned, onData: { _, _ in })
  /// ```
  public init(
    connected descriptor: Int32, ownership: DescriptorOwnership = .owned,
    name: String = "connection",
    onData: (@Sendable (SocketSource, [UInt8]) -> Void)? = nil,
    onWritable: (@Sendable (SocketSource) -> Void)? = nil,
    onClose: (@Sendable (SocketSource, RunLoopError?) -> Void)? = nil
  ) {
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    self.name = name
    self.onAccept = nil
    self.onConnect = nil
    self.onData = onData
    self.onWritable = onWritable
    self.onClose = onClose
    state = GuardedState(SocketState(phase: .connected))
    source = makeSource(descriptor, ownership: ownership, wantsWritable: false)
  }

  /// The socket's descriptor.
  ///
  /// ```swift
  /// var one: Int32 = 1
  /// setsockopt(socket.fileDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, 4)
  /// ```
  public var fileDescriptor: Int32 { source.fileDescriptor }

  /// Whether the source is still open.
  ///
  /// ```swift
  /// if socket.isValid { socket.write(reply) }
  /// ```
  public var isValid: Bool { source.isValid }

  /// The local TCP port (useful after listening on port 0), or `nil` for a Unix socket.
  ///
  /// ```swift
  /// print("listening on port \(listener.localPort!)")
  /// ```
  public var localPort: UInt16? {
    // An invalidated source's descriptor is closed; its number may name another file.
    guard isValid else { return nil }
    // getsockname(2) fills a `sockaddr_storage` through a `sockaddr` pointer; the family it
    // reports says which concrete address to read it as (rebound for the read only).
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let status = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(fileDescriptor, $0, &length)
      }
    }
    guard status == 0 else { return nil }
    switch Int32(storage.ss_family) {
    case AF_INET:
      return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
          UInt16(bigEndian: $0.pointee.sin_port)
        }
      }
    case AF_INET6:
      return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          UInt16(bigEndian: $0.pointee.sin6_port)
        }
      }
    default:
      return nil
    }
  }

  /// Bytes queued by ``write(_:)`` and not yet sent.
  ///
  /// ```swift
  /// if socket.pendingOutput > 1 << 20 { pauseProducer() }
  /// ```
  public var pendingOutput: Int { state.withLock { $0.output.count } }

  /// Adds the source to `loop` in `mode`.
  ///
  /// ```swift
  /// try socket.add(to: .current, mode: .common)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` once the source is closed.
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    try source.add(to: loop, mode: mode)
  }

  /// Removes the source from `mode` of `loop`.
  ///
  /// ```swift
  /// socket.remove(from: .current, mode: .default)
  /// ```
  public func remove(from loop: EventRunLoop, mode: LoopMode) {
    source.remove(from: loop, mode: mode)
  }

  /// Queues `bytes` to send; the loop sends them when the socket is writable. Safe from any
  /// thread. Bytes written to a closed source are ignored (``isValid`` tells).
  ///
  /// ```swift
  /// socket.write(Array("hello\n".utf8))
  /// ```
  public func write(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    // Interest changes are decided under the lock, so a flush emptying the buffer on the
    // loop thread cannot turn writability off after this write asked for it.
    state.withLock { state in
      state.output += bytes
      if state.phase == .connected { try? source.setWantsWritable(true) }
    }
  }

  /// Closes the socket and removes the source everywhere; `onClose` is not called.
  ///
  /// ```swift
  /// socket.invalidate()
  /// ```
  public func invalidate() {
    state.withLock { $0.phase = .closed }
    source.invalidate()
  }

  // MARK: Loop thread

  private func makeSource(_ descriptor: Int32, ownership: DescriptorOwnership, wantsWritable: Bool)
    -> DescriptorSource
  {
    DescriptorSource(
      fileDescriptor: descriptor, ownership: ownership, name: name, wantsWritable: wantsWritable,
      onReadable: { [self] _ in self.readable() },
      onWritable: { [self] _ in self.writable() },
      onError: { [self] _, events in self.failed(events) })
  }

  private func readable() {
    switch state.withLock({ $0.phase }) {
    case .listening:
      while source.isValid {
        let descriptor = crl_accept_nonblocking(fileDescriptor)
        guard descriptor >= 0 else {
          if SocketCalls.isResourceShortage(errno) {
            SocketCalls.pauseAccepting(source)
          }
          return
        }
        onAccept?(self, descriptor)
      }
    case .connected:
      var chunk = [UInt8](repeating: 0, count: 65536)
      let count = read(fileDescriptor, &chunk, chunk.count)
      if count > 0 {
        onData?(self, Array(chunk[0..<count]))
      } else if count == 0 {
        finish(nil)
      } else if errno != EAGAIN && errno != EINTR {
        finish(.systemCall("read", errno: errno))
      }
    case .connecting, .closed:
      return
    }
  }

  private func writable() {
    switch state.withLock({ $0.phase }) {
    case .connecting:
      let code = SocketCalls.pendingError(fileDescriptor)
      if code != 0 {
        state.withLock { $0.phase = .closed }
        source.invalidate()
        onConnect?(self, .systemCall("connect", errno: code))
        return
      }
      state.withLock { state in
        state.phase = .connected
        if state.output.isEmpty { try? source.setWantsWritable(false) }
      }
      onConnect?(self, nil)
    case .connected:
      flush()
    case .listening, .closed:
      return
    }
  }

  private func flush() {
    let output = state.withLock { state -> [UInt8] in
      if state.output.isEmpty { try? source.setWantsWritable(false) }
      return state.output
    }
    guard !output.isEmpty else { return }
    // send(2) reads the queued bytes in place.
    let written = output.withUnsafeBytes {
      send(fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
    }
    if written < 0 {
      if errno != EAGAIN && errno != EINTR { finish(.systemCall("send", errno: errno)) }
      return
    }
    let drained = state.withLock { state -> Bool in
      state.output.removeFirst(written)
      guard state.output.isEmpty else { return false }
      try? source.setWantsWritable(false)
      return true
    }
    guard drained else { return }
    onWritable?(self)
  }

  private func failed(_ events: DescriptorEvents) {
    let phase = state.withLock { $0.phase }
    if phase == .connecting {
      writable()
      return
    }
    if phase == .connected, events.contains(.hangup), !events.contains(.error) {
      // Data may still be buffered: the readable call-out reads it, and reads end of file.
      readable()
      return
    }
    finish(.systemCall("socket", errno: SocketCalls.pendingError(fileDescriptor)))
  }

  private func finish(_ error: RunLoopError?) {
    let wasOpen = state.withLock { state -> Bool in
      defer { state.phase = .closed }
      return state.phase != .closed
    }
    source.invalidate()
    if wasOpen { onClose?(self, error) }
  }
}

/// Where a ``SocketSource`` is in its life, and its queued output.
struct SocketState {
  enum Phase { case listening, connecting, connected, closed }
  var phase: Phase
  var output: [UInt8] = []
}
