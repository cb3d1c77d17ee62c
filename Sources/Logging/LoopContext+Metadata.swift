import Logging
import RunLoopTracing

extension LoopContext {
  /// The context as swift-log metadata, under the keys of the trace records with the prefix
  /// `runloop_`: `runloop_run`, `runloop_loop`, `runloop_mode`, `runloop_iteration`,
  /// `runloop_depth`, and inside a call-out `runloop_callout_kind` and `runloop_callout_name`.
  /// A handler that upper-cases keys for journald (the RunLoopJournal module's
  /// `JournalLogHandler`) turns them into the trace's own fields: `RUNLOOP_RUN`,
  /// `RUNLOOP_LOOP`, ...
  ///
  /// ```swift
  /// if let context = LoopContext.current { logger.info("tick", metadata: context.metadata) }
  /// ```
  public var metadata: Logger.Metadata {
    var metadata: Logger.Metadata = [
      "runloop_run": .string(run), "runloop_loop": .string(String(loop)),
      "runloop_mode": .string(mode), "runloop_iteration": .string(String(iteration)),
      "runloop_depth": .string(String(depth)),
    ]
    if let calloutKind { metadata["runloop_callout_kind"] = .string(calloutKind) }
    if let calloutName { metadata["runloop_callout_name"] = .string(calloutName) }
    return metadata
  }
}
