import Glibc
import RunLoopCore
import RunLoopPorts
import ServiceLifecycle

/// An echo server on the project's socket sources, as a `Service`: it echoes every byte it
/// reads; a connection that sends a line "end" is closed once its echo is out. Graceful
/// shutdown stops accepting and waits until every open connection has ended that way.
final class EchoService: Service, Sendable {
  struct Counts {
    var connections = 0
    var bytesIn = 0
    var bytesOut = 0
  }
  private struct State {
    var open: [ObjectIdentifier: SocketSource] = [:]
    var ending: Set<ObjectIdentifier> = []
    var tails: [ObjectIdentifier: [UInt8]] = [:]
    var counts = Counts()
    var idle: CheckedContinuation<Void, Never>?
  }
  private let loop: EventRunLoop
  private let path: String
  private let state = GuardedState(State())

  init(loop: EventRunLoop, path: String) {
    self.loop = loop
    self.path = path
  }

  var counts: Counts { state.withLock { $0.counts } }

  func run() async throws {
    let path = self.path
    let listener = try await loop.submit { [self] in
      let listener = try SocketSource(listeningOn: .unix(path: path)) { [self] _, descriptor in
        accept(descriptor)
      }
      try listener.add(to: loop, mode: .default)
      return listener
    }
    say("ready")
    try? await gracefulShutdown()
    try await loop.submit { listener.invalidate() }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let idle = state.withLock { state -> Bool in
        guard !state.open.isEmpty else { return true }
        state.idle = continuation
        return false
      }
      if idle { continuation.resume() }
    }
    unlink(path)
  }

  /// On the loop's thread: a new connection.
  private func accept(_ descriptor: Int32) {
    let connection = SocketSource(
      connected: descriptor, ownership: .owned,
      onData: { [self] socket, bytes in echo(socket, bytes) },
      onWritable: { [self] socket in closeIfEnded(socket) },
      onClose: { [self] socket, _ in forget(socket) })
    state.withLock { state in
      state.open[ObjectIdentifier(connection)] = connection
      state.counts.connections += 1
    }
    try? connection.add(to: loop, mode: .default)
  }

  private func echo(_ socket: SocketSource, _ bytes: [UInt8]) {
    let id = ObjectIdentifier(socket)
    state.withLock { state in
      state.counts.bytesIn += bytes.count
      state.counts.bytesOut += bytes.count
      let tail = Array(((state.tails[id] ?? []) + bytes).suffix(4))
      state.tails[id] = tail
      if tail == Array("end\n".utf8) { state.ending.insert(id) }
    }
    socket.write(bytes)
  }

  private func closeIfEnded(_ socket: SocketSource) {
    let ended = state.withLock { $0.ending.contains(ObjectIdentifier(socket)) }
    guard ended, socket.pendingOutput == 0 else { return }
    socket.invalidate()
    forget(socket)
  }

  private func forget(_ socket: SocketSource) {
    let idle = state.withLock { state -> CheckedContinuation<Void, Never>? in
      let id = ObjectIdentifier(socket)
      state.open[id] = nil
      state.ending.remove(id)
      state.tails[id] = nil
      return state.open.isEmpty ? state.idle.take() : nil
    }
    idle?.resume()
  }
}

/// Writes `line` to standard output at once (a pipe would buffer `print`).
func say(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}
