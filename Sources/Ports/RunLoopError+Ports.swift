import RunLoopCore

// The failures of the Ports module, as codes of the framework's one error type.
extension RunLoopError.Code {
  /// A bounded port queue stayed full until the send's deadline; the message was not sent.
  ///
  /// ```swift
  /// catch let error where error.code == .queueFull { retryLater() }
  /// ```
  public static let queueFull = RunLoopError.Code("queueFull")
  /// A message is larger than the port accepts.
  ///
  /// ```swift
  /// catch let error where error.code == .messageTooLarge { split(data) }
  /// ```
  public static let messageTooLarge = RunLoopError.Code("messageTooLarge")
  /// A named port's name is taken by a live port (in this or another process).
  ///
  /// ```swift
  /// catch let error where error.code == .nameInUse { print("already running") }
  /// ```
  public static let nameInUse = RunLoopError.Code("nameInUse")
  /// No port is registered under the name looked up.
  ///
  /// ```swift
  /// catch let error where error.code == .nameNotFound { startServer() }
  /// ```
  public static let nameNotFound = RunLoopError.Code("nameNotFound")
  /// A port name has characters or a length the registry does not accept.
  ///
  /// ```swift
  /// catch let error where error.code == .invalidName { print(error.message) }
  /// ```
  public static let invalidName = RunLoopError.Code("invalidName")
  /// The peer closed the connection (or died) before the exchange was complete.
  ///
  /// ```swift
  /// catch let error where error.code == .peerClosed { reconnect() }
  /// ```
  public static let peerClosed = RunLoopError.Code("peerClosed")
  /// The peer is not allowed: its user id is not accepted.
  ///
  /// ```swift
  /// catch let error where error.code == .peerRefused { print(error.message) }
  /// ```
  public static let peerRefused = RunLoopError.Code("peerRefused")
  /// Bytes on a connection are not a valid frame (bad magic, version, kind or length).
  ///
  /// ```swift
  /// catch let error where error.code == .malformedFrame { print(error.message) }
  /// ```
  public static let malformedFrame = RunLoopError.Code("malformedFrame")
  /// A named port's server already serves its maximum number of connections.
  ///
  /// ```swift
  /// catch let error where error.code == .tooManyConnections { retryLater() }
  /// ```
  public static let tooManyConnections = RunLoopError.Code("tooManyConnections")
  /// A named port's server holds as many bytes of unfinished frames and unsent replies as
  /// it allows (``NamedPortServer/maxBufferedBytes``); the connection was dropped.
  ///
  /// ```swift
  /// catch let error where error.code == .bufferFull { retryLater() }
  /// ```
  public static let bufferFull = RunLoopError.Code("bufferFull")
  /// The peer does not read the frame version sent: a server older than the client (it
  /// reads version 1 only, and says `malformedFrame: unsupported version 2`), or a frame
  /// newer than this side reads. Nothing of the call was handled.
  ///
  /// ```swift
  /// catch let error where error.code == .unsupportedFrameVersion {
  ///   port = try NamedPort(name: "svc", frameVersion: 1)  // an old server: no trace context
  /// }
  /// ```
  public static let unsupportedFrameVersion = RunLoopError.Code("unsupportedFrameVersion")
}

// The factories the Ports module throws with; a user matches on the codes above and never
// makes these errors, so they stay inside the package.
extension RunLoopError {
  /// A bounded queue stayed full until the deadline.
  ///
  /// ```swift
  /// throw RunLoopError.queueFull("port 'jobs' is full (capacity 64)")
  /// ```
  package static func queueFull(_ message: String) -> RunLoopError {
    RunLoopError(code: .queueFull, message: message)
  }

  /// A message is larger than allowed.
  ///
  /// ```swift
  /// throw RunLoopError.messageTooLarge("2000000 bytes > 1048576")
  /// ```
  package static func messageTooLarge(_ message: String) -> RunLoopError {
    RunLoopError(code: .messageTooLarge, message: message)
  }

  /// A port name is taken.
  ///
  /// ```swift
  /// throw RunLoopError.nameInUse("'com.example.main' is registered by a live port")
  /// ```
  package static func nameInUse(_ message: String) -> RunLoopError {
    RunLoopError(code: .nameInUse, message: message)
  }

  /// No port has the name.
  ///
  /// ```swift
  /// throw RunLoopError.nameNotFound("no port named 'com.example.worker'")
  /// ```
  package static func nameNotFound(_ message: String) -> RunLoopError {
    RunLoopError(code: .nameNotFound, message: message)
  }

  /// A name is not acceptable.
  ///
  /// ```swift
  /// throw RunLoopError.invalidName("'a/b' contains '/'")
  /// ```
  package static func invalidName(_ message: String) -> RunLoopError {
    RunLoopError(code: .invalidName, message: message)
  }

  /// The peer went away mid-exchange.
  ///
  /// ```swift
  /// throw RunLoopError.peerClosed("the server closed the connection before replying")
  /// ```
  package static func peerClosed(_ message: String) -> RunLoopError {
    RunLoopError(code: .peerClosed, message: message)
  }

  /// The peer is not allowed.
  ///
  /// ```swift
  /// throw RunLoopError.peerRefused("peer uid 65534 is not uid 0")
  /// ```
  package static func peerRefused(_ message: String) -> RunLoopError {
    RunLoopError(code: .peerRefused, message: message)
  }

  /// Bytes that are not a valid frame.
  ///
  /// ```swift
  /// throw RunLoopError.malformedFrame("bad magic")
  /// ```
  package static func malformedFrame(_ message: String) -> RunLoopError {
    RunLoopError(code: .malformedFrame, message: message)
  }

  /// A server at its connection cap.
  ///
  /// ```swift
  /// throw RunLoopError.tooManyConnections("port 'svc' serves at most 1024 connections")
  /// ```
  package static func tooManyConnections(_ message: String) -> RunLoopError {
    RunLoopError(code: .tooManyConnections, message: message)
  }

  /// A server at its cap on buffered bytes.
  ///
  /// ```swift
  /// throw RunLoopError.bufferFull("port 'svc' holds its limit of 67108864 bytes")
  /// ```
  package static func bufferFull(_ message: String) -> RunLoopError {
    RunLoopError(code: .bufferFull, message: message)
  }

  /// A frame version the peer does not read, or one this side does not read.
  ///
  /// ```swift
  /// throw RunLoopError.unsupportedFrameVersion("port 'svc' reads frame version 1 only")
  /// ```
  public static func unsupportedFrameVersion(_ message: String) -> RunLoopError {
    RunLoopError(code: .unsupportedFrameVersion, message: message)
  }
}
