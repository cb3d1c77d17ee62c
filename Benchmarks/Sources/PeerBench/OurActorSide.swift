/// Our side of issue 12's rows, which needs our loops as executors (issue 12's
/// `extension EventRunLoop: SerialExecutor, TaskExecutor` and the awaitable `perform`).
/// Until they are in this branch, the rows show NIO's side alone.
enum OurActorSide {
  static let isAvailable = false
  static let missing =
    "ours not measured: EventRunLoop is not yet a SerialExecutor and has no awaitable perform "
    + "in this build (issue 12, helper async12)"

  static func pingPong(_ count: Int) throws -> ThreadedSample {
    preconditionFailure(missing)
  }

  static func awaitedPerform(_ count: Int) throws -> Double {
    preconditionFailure(missing)
  }
}
