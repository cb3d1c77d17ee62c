import Glibc
import RunLoopCore

/// A named port's requests and one-way messages as an `AsyncSequence`.
extension NamedPortServer {
  /// Registers `name` and serves it on `loop` in `mode`; every message arrives in the
  /// returned sequence, in the order the loop read it, and a request is answered with
  /// ``NamedPortRequest/reply(_:)`` from any thread or task, once.
  ///
  /// Buffering and back-pressure: the sequence holds at most `capacity` messages its
  /// consumer has not taken yet. When it is full, a request is refused at once: its client
  /// gets a `serverBusy` failure (``NamedPortStatistics/requestsRefusedBusy``) and may send
  /// it again; a one-way message is dropped
  /// (``NamedPortStatistics/messagesDroppedBusy``). Both also count in
  /// `LoopEvents.droppedCount`. The server does not stop reading instead: a paused
  /// connection would hold up every client behind one slow consumer, and a refusal costs the
  /// client one round trip and an error it can act on.
  ///
  /// Nothing leaves a client waiting: a request released without a reply gets a
  /// `requestDropped` failure (``NamedPortStatistics/requestsUnanswered``). Ending the
  /// consuming task (cancelling it, leaving its `for await` loop, releasing the sequence)
  /// stops the server: every request not yet answered, held by the consumer or still in the
  /// buffer, gets a `serverStopped` failure
  /// (``NamedPortStatistics/requestsAnsweredAtStop``), then the server is invalidated (its
  /// name unregistered, its connections closed; a later connect finds `nameNotFound`).
  /// The other way round, invalidating the server ends the sequence once its connections
  /// are closed: the consumer's loop gets the messages still buffered, then ends.
  ///
  /// ```swift
  /// let (server, requests) = try NamedPortServer.requests(name: "com.example.svc", on: worker)
  /// for await request in requests {
  ///   request.reply(request.message.data.reversed())
  /// }
  /// print(server.statistics.requestsUnanswered)
  /// ```
  ///
  /// - Parameters:
  ///   - name: the name to register.
  ///   - registry: where to register; the per-user default when `nil`.
  ///   - loop: the loop that serves the connections.
  ///   - mode: the mode it serves them in.
  ///   - capacity: the most messages waiting for the consumer, at least 1.
  ///   - maxMessageSize: as for the server's initializer (``maxMessageSize``).
  ///   - allowedUIDs: as for the server's initializer (``allowedUIDs``).
  /// - Throws: what that initializer and ``add(to:mode:)`` throw;
  ///   ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a capacity below 1.
  public static func requests(
    name: String, registry: PortNameRegistry? = nil, on loop: EventRunLoop,
    mode: LoopMode = .common, capacity: Int = 64,
    maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize, allowedUIDs: Set<uid_t>? = nil
  ) throws(RunLoopError) -> (server: NamedPortServer, requests: LoopEvents<NamedPortRequest>) {
    guard capacity >= 1 else { throw .invalidArgument("capacity must be at least 1") }
    let (requests, book) = try LoopEvents<NamedPortRequest>.fed(
      on: loop, buffering: .oldest(capacity),
      by: { feed throws(RunLoopError) in
        let server = try NamedPortServer(
          name: name, registry: registry, maxMessageSize: maxMessageSize,
          allowedUIDs: allowedUIDs
        ) { _ in nil }
        let book = RequestBook(server: server, capacity: capacity)
        server.deferReplies { [weak book] server, message, route in
          guard let book else {
            // The sequence is gone: the server is being invalidated.
            if let route { server.answerStopped(route) }
            return
          }
          book.receive(message, route: route, into: feed)
        } closed: { [weak book] in
          // Invalidated directly: no request still waiting can be answered now, and the
          // consumer's `for await` ends (after what it buffered) instead of waiting for ever.
          book?.abandon()
          feed.finish()
        }
        return book
      },
      start: { book throws(RunLoopError) in try book.server.add(to: loop, mode: mode) },
      stop: { book in book.stop() })
    return (book.server, requests)
  }
}

extension NamedPortServer {
  /// Answers a request the stopped sequence will never see with `serverStopped`, counted.
  func answerStopped(_ route: DeferredReply) {
    answer(route, with: .failure(.stopped(name)))
    count { $0.requestsAnsweredAtStop += 1 }
  }
}

/// Where a deferred request's answer goes: its connection, its frame's version and ids, and
/// the trace it came with (the reply carries it back).
struct DeferredReply: Sendable {
  let connection: ServerConnection
  let version: UInt8
  let msgid: PortMessageID
  let requestID: UInt32
  let trace: (high: UInt64, low: UInt64)?
}

/// The text of a failure frame: `code: reason`.
struct FailureNotice: Error {
  let text: String

  static func busy(_ name: String, capacity: Int) -> FailureNotice {
    FailureNotice(
      text: "\(RunLoopError.Code.serverBusy.identifier): port '\(name)' has \(capacity) messages"
        + " waiting for its consumer")
  }

  static func stopped(_ name: String) -> FailureNotice {
    FailureNotice(
      text: "\(RunLoopError.Code.serverStopped.identifier): port '\(name)' stopped (its consumer"
        + " ended) before answering")
  }

  static func dropped(_ name: String) -> FailureNotice {
    FailureNotice(
      text: "\(RunLoopError.Code.requestDropped.identifier): port '\(name)' released the request"
        + " without replying")
  }
}

/// The requests of a sequence-serving server that wait for their answer, each under a
/// ticket; whoever takes a ticket first (a reply, a release, the stop) answers it.
final class RequestBook: Sendable {
  private struct State {
    var waiting: [UInt64: DeferredReply] = [:]
    var nextTicket: UInt64 = 0
    var stopped = false
  }
  let server: NamedPortServer
  // The sequence's buffer size, for the busy notice.
  private let capacity: Int
  private let state = GuardedState(State())

  init(server: NamedPortServer, capacity: Int) {
    self.server = server
    self.capacity = capacity
  }

  /// On the loop's thread: books a request and offers the message to the sequence; answers
  /// at once what the sequence refuses.
  func receive(
    _ message: NamedPortMessage, route: DeferredReply?, into feed: LoopEventFeed<NamedPortRequest>
  ) {
    var ticket: UInt64?
    if let route {
      ticket = state.withLock { state -> UInt64? in
        guard !state.stopped else { return nil }
        state.nextTicket += 1
        state.waiting[state.nextTicket] = route
        return state.nextTicket
      }
      guard ticket != nil else {
        server.answerStopped(route)
        return
      }
    }
    let request = NamedPortRequest(message: message, book: self, ticket: ticket)
    switch feed.offer(request) {
    case .kept:
      return
    case .refused:
      guard let ticket else {
        server.count { $0.messagesDroppedBusy += 1 }
        return
      }
      _ = answer(ticket, with: .failure(.busy(server.name, capacity: capacity)))
      server.count { $0.requestsRefusedBusy += 1 }
    case .ended:
      if let ticket, answer(ticket, with: .failure(.stopped(server.name))) {
        server.count { $0.requestsAnsweredAtStop += 1 }
      }
    }
  }

  /// Answers `ticket` unless it was answered already; returns whether this did.
  func answer(_ ticket: UInt64, with answer: Result<[UInt8], FailureNotice>) -> Bool {
    guard let route = state.withLock({ $0.waiting.removeValue(forKey: ticket) }) else {
      return false
    }
    server.answer(route, with: answer)
    return true
  }

  /// A request was released: answers it if nothing did.
  func dropped(_ ticket: UInt64) {
    if answer(ticket, with: .failure(.dropped(server.name))) {
      server.count { $0.requestsUnanswered += 1 }
    }
  }

  /// The server was invalidated directly and its connections are closed: no request still
  /// waiting can be answered. Takes them all, so that a later ``NamedPortRequest/reply(_:)``
  /// says `false` instead of accepting an answer nobody will get, and counts each once, as
  /// an answer whose client is gone.
  func abandon() {
    let lost = closeAndTakeWaiting().count
    server.count { $0.repliesUndelivered += lost }
  }

  /// The consumer ended: answers every request still waiting, then invalidates the server
  /// (the answers leave first: they are queued on the loop before the close).
  func stop() {
    let waiting = closeAndTakeWaiting()
    for route in waiting { server.answer(route, with: .failure(.stopped(server.name))) }
    server.count { $0.requestsAnsweredAtStop += waiting.count }
    server.invalidate()
  }

  /// Stops taking requests and takes the ones still waiting, in the order they came.
  private func closeAndTakeWaiting() -> [DeferredReply] {
    state.withLock { state in
      state.stopped = true
      defer { state.waiting = [:] }
      return state.waiting.sorted { $0.key < $1.key }.map(\.value)
    }
  }
}
