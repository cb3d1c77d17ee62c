import CRunLoopLinux
import Glibc
import Logging
import RunLoopCore
import Synchronization

/// A swift-log `LogHandler` that writes each log line to the systemd journal as one entry
/// with structured fields, so that a program's own log lines sit beside the run-loop trace
/// records of ``JournalSink`` and read together with `journalctl`.
///
/// An entry has `MESSAGE` (the message), `PRIORITY` (the syslog level of the log level:
/// trace and debug 7, info 6, notice 5, warning 4, error 3, critical 2), `SYSLOG_IDENTIFIER`,
/// `TID`, `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`, `SWIFT_LOG_LABEL`, `SWIFT_LOG_SOURCE`, and
/// one field per metadata key, named by ``fieldName(for:)`` (`request_id` becomes
/// `REQUEST_ID`). With the RunLoopLogging module's metadata provider
/// (`Logger.MetadataProvider.runLoop()`), a line logged inside a traced call-out carries
/// `RUNLOOP_RUN`, `RUNLOOP_LOOP`, `RUNLOOP_MODE`, `RUNLOOP_ITERATION`... with the values of
/// the trace records around it, so `journalctl RUNLOOP_RUN=<run id>` shows both.
///
/// Metadata merges as swift-log prescribes: the handler's own, then the provider's, then the
/// log call's, a later value replacing an earlier one for the same key.
///
/// The handler sends on the calling thread, in order, when the line is logged (a program's
/// own log lines are few and each one matters), as one datagram in journald's native
/// protocol, and never waits: a log call on a loop thread must not stall the loop when
/// journald does. A line journald cannot take at that moment (its socket's queue is full,
/// no journald, a line too long for one datagram) is dropped and counted in
/// ``droppedLines``, and the first drop is reported on standard error.
///
/// ```swift
/// LoggingSystem.bootstrap(
///   { label, provider in JournalLogHandler(label: label, identifier: "my-service", metadataProvider: provider) },
///   metadataProvider: .runLoop())
/// Logger(label: "jobs").info("job done", metadata: ["job": "42"])
/// ```
public struct JournalLogHandler: LogHandler {
  /// The logger's label (in `SWIFT_LOG_LABEL`).
  public let label: String
  /// The `SYSLOG_IDENTIFIER` of every entry (what `journalctl -t` filters on).
  public let identifier: String
  /// Where entries go.
  public let destination: JournalSink.Destination
  /// Metadata for every entry of this handler.
  ///
  /// ```swift
  /// handler.metadata["service"] = "billing"
  /// ```
  public var metadata: Logger.Metadata = [:]
  /// The lowest level logged.
  ///
  /// ```swift
  /// handler.logLevel = .debug
  /// ```
  public var logLevel: Logger.Level = .info
  /// Adds metadata at each log call (the loop's context, a task-local request id...).
  ///
  /// ```swift
  /// handler.metadataProvider = .runLoop()
  /// ```
  public var metadataProvider: Logger.MetadataProvider?

  private let transport: JournalTransport

  /// Creates a handler.
  ///
  /// - Parameters:
  ///   - label: the logger's label.
  ///   - identifier: the `SYSLOG_IDENTIFIER`; the label when `nil`.
  ///   - destination: the system journal, or a native-protocol socket.
  ///   - metadataProvider: adds metadata at each log call.
  ///
  /// ```swift
  /// let handler = JournalLogHandler(label: "jobs", identifier: "my-service")
  /// ```
  public init(
    label: String, identifier: String? = nil, destination: JournalSink.Destination = .systemJournal,
    metadataProvider: Logger.MetadataProvider? = nil
  ) {
    self.label = label
    self.identifier = identifier ?? label
    self.destination = destination
    self.metadataProvider = metadataProvider
    self.transport = JournalTransport(destination)
  }

  /// One metadata value.
  ///
  /// ```swift
  /// handler[metadataKey: "request_id"] = "r-17"
  /// ```
  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  /// Sends `event` as one journal entry.
  ///
  /// ```swift
  /// Logger(label: "jobs") { JournalLogHandler(label: $0) }.warning("queue is long")
  /// ```
  public func log(event: LogEvent) {
    guard transport.sendWithoutWaiting(fields(for: event)) != 0 else { return }
    let first = _journalLogDrops.wrappingAdd(1, ordering: .relaxed).oldValue == 0
    if first {
      let text =
        "JournalLogHandler: a log line was dropped, as the journal's queue was full or no "
        + "journal answered; such lines are counted in JournalLogHandler.droppedLines\n"
      _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
  }

  /// Log lines dropped in this process because journald could not take them at once.
  ///
  /// ```swift
  /// if JournalLogHandler.droppedLines > 0 { print("journald missed some log lines") }
  /// ```
  public static var droppedLines: UInt64 { _journalLogDrops.load(ordering: .relaxed) }

  /// The entry of `event`: the fields, in the order they are sent.
  func fields(for event: LogEvent) -> [(String, String)] {
    var merged = metadata
    if let provided = metadataProvider?.get() {
      merged.merge(provided) { $1 }
    }
    if let explicit = event.metadata {
      merged.merge(explicit) { $1 }
    }
    var fields: [(String, String)] = [
      ("MESSAGE", event.message.description), ("PRIORITY", Self.priority(event.level)),
      ("SYSLOG_IDENTIFIER", identifier), ("TID", String(crl_current_tid())),
      ("CODE_FILE", event.file), ("CODE_LINE", String(event.line)),
      ("CODE_FUNC", event.function), ("SWIFT_LOG_LABEL", label),
      ("SWIFT_LOG_SOURCE", event.source), ("SWIFT_LOG_LEVEL", event.level.rawValue),
    ]
    if let error = event.error {
      fields.append(("SWIFT_LOG_ERROR", String(describing: error)))
    }
    for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
      var name = Self.fieldName(for: key)
      if Self.ownFields.contains(name) { name = Self.truncated("METADATA_" + name) }
      fields.append((name, Self.text(value)))
    }
    return fields
  }

  /// The journal field name for a metadata key: ASCII letters upper-cased, digits and `_`
  /// kept, anything else `_`; leading underscores (reserved for journald's trusted fields)
  /// dropped; `F_` in front of a name that would start with a digit or be empty; at most 64
  /// characters. So every key gives a name journald accepts.
  ///
  /// ```swift
  /// JournalLogHandler.fieldName(for: "request-id")  // "REQUEST_ID"
  /// ```
  public static func fieldName(for key: String) -> String {
    var bytes: [UInt8] = key.utf8.map { byte in
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - 32
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
        UInt8(ascii: "_"):
        byte
      default: UInt8(ascii: "_")
      }
    }
    while bytes.first == UInt8(ascii: "_") { bytes.removeFirst() }
    if bytes.isEmpty || (bytes[0] >= UInt8(ascii: "0") && bytes[0] <= UInt8(ascii: "9")) {
      bytes.insert(contentsOf: Array("F_".utf8), at: 0)
    }
    return truncated(String(decoding: bytes, as: UTF8.self))
  }

  private static func truncated(_ name: String) -> String {
    String(name.utf8.prefix(64))!
  }

  // The fields the handler sets itself: metadata with these names goes under METADATA_...
  private static let ownFields: Set<String> = [
    "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "TID", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
    "SWIFT_LOG_LABEL", "SWIFT_LOG_SOURCE", "SWIFT_LOG_LEVEL", "SWIFT_LOG_ERROR",
  ]

  static func priority(_ level: Logger.Level) -> String {
    switch level {
    case .trace, .debug: "7"
    case .info: "6"
    case .notice: "5"
    case .warning: "4"
    case .error: "3"
    case .critical: "2"
    }
  }

  static func text(_ value: Logger.Metadata.Value) -> String {
    switch value {
    case .string(let string): string
    case .stringConvertible(let convertible): convertible.description
    default: value.description
    }
  }
}

private let _journalLogDrops = Atomic<UInt64>(0)
