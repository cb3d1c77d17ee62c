/// One narrated scenario: a concept of the guide, shown by a short run.
struct Scenario: Sendable {
  let name: String
  let title: String
  let guide: String
  /// The article of Docs/RunLoopGuide.docc that explains it, and the section: "TimerSources.md,
  /// Repeating timers".
  var article: String? = nil
  /// The question `--predict` asks before the run, for the scenarios that have one.
  var exercise: Exercise? = nil
  let body: @Sendable (Narration) throws -> Void

  /// Every scenario, in the order of the guide: one line each, so that adding one is a
  /// one-line change.
  static let all: [Scenario] = [
    Scenarios.threadAttributes,
    Scenarios.rawThreads,
    Scenarios.race,
    Scenarios.threadsAndExit,
    Scenarios.exitFlag,
    Scenarios.modes,
    Scenarios.commonModes,
    Scenarios.customSource,
    Scenarios.ports,
    Scenarios.checkIn,
    Scenarios.namedPorts,
    Scenarios.sockets,
    Scenarios.timersGrid,
    Scenarios.timersOverrun,
    Scenarios.timersTolerance,
    Scenarios.observers,
    Scenarios.threadObserver,
    Scenarios.performs,
    Scenarios.nestedRuns,
    Scenarios.mainQueue,
    Scenarios.actors,
    Scenarios.stall,
    Scenarios.busyHandler,
    Scenarios.syncAsync,
    Scenarios.mainSyncDeadlock,
    Scenarios.queues,
    Scenarios.threadExplosion,
    Scenarios.joinableExit,
  ]

  static func named(_ name: String) -> Scenario? {
    all.first { $0.name == name }
  }

  /// The scenarios that `--predict` can ask about.
  static var withExercises: [Scenario] { all.filter { $0.exercise != nil } }
}
