// Runs the main-queue parity scenario on the main thread (which the test runner owns in its
// own process) against CFRunLoop (`cf`) or our loop (`ours`), and prints the trace, one
// entry a line, in RunLoopParityTests' vocabulary.
import CoreFoundation
import Dispatch
import Foundation
import RunLoopCore

/// The trace, on the main thread only.
nonisolated(unsafe) var trace: [String] = []

@MainActor func record(_ entry: String) { trace.append(entry) }

func activityName(_ bit: UInt) -> String {
  switch bit {
  case 1 << 0: "entry"
  case 1 << 1: "beforeTimers"
  case 1 << 2: "beforeSources"
  case 1 << 5: "beforeWaiting"
  case 1 << 6: "afterWaiting"
  default: "exit"
  }
}

/// The scenario: main-queue work waits while the main loop runs a mode that is not common;
/// a run in a common mode drains it (and a block that main-queue work adds meanwhile is not
/// run inside it).
protocol MainLoop {
  func run(_ mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> String
}

@MainActor func scenario(_ loop: some MainLoop) {
  DispatchQueue.main.async {
    record("block:held")
    DispatchQueue.main.async { record("block:queued-by-held") }
    record("nested:" + loop.run("default", seconds: 0.05, returnAfterSourceHandled: true))
  }
  record("result:" + loop.run("private", seconds: 0.05, returnAfterSourceHandled: true))
  record("result:" + loop.run("default", seconds: 1, returnAfterSourceHandled: true))
  record("result:" + loop.run("default", seconds: 1, returnAfterSourceHandled: true))
}

struct CFMainLoop: MainLoop {
  let loop = CFRunLoopGetMain()!

  init() {
    let observer = CFRunLoopObserverCreateWithHandler(
      nil, CFRunLoopActivity.allActivities.rawValue, true, CFIndex.min
    ) { _, activity in
      MainActor.assumeIsolated { record(activityName(UInt(activity.rawValue))) }
    }
    for mode in ["default", "private"] {
      CFRunLoopAddObserver(loop, observer, Self.mode(mode))
      // A source that never fires keeps each mode from being empty.
      var context = CFRunLoopSourceContext()
      context.info = UnsafeMutableRawPointer(bitPattern: mode == "default" ? 1 : 2)
      CFRunLoopAddSource(loop, CFRunLoopSourceCreate(nil, 0, &context), Self.mode(mode))
    }
  }

  static func mode(_ name: String) -> CFRunLoopMode {
    name == "default"
      ? kCFRunLoopDefaultMode
      : CFStringCreateWithCString(nil, name, CFStringBuiltInEncodings.UTF8.rawValue)
  }

  func run(_ mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> String {
    switch CFRunLoopRunInMode(Self.mode(mode), seconds, returnAfterSourceHandled) {
    case .finished: "finished"
    case .stopped: "stopped"
    case .timedOut: "timedOut"
    default: "handledSource"
    }
  }
}

struct OurMainLoop: MainLoop {
  final class Tracer: RunLoopInstrument, @unchecked Sendable {
    var interests: InstrumentInterests { .activities }
    func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
      MainActor.assumeIsolated { record(activityName(UInt(activity.rawValue))) }
    }
  }

  let loop = EventRunLoop.main

  init() {
    loop.addInstrument(Tracer())
    for mode in ["default", "private"] {
      try! loop.add(CustomInputSource(name: "keep") {}, mode: LoopMode(mode))
    }
  }

  func run(_ mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> String {
    let result = try! loop.run(
      mode: mode == "default" ? .default : LoopMode(mode), seconds: seconds,
      returnAfterSourceHandled: returnAfterSourceHandled)
    return result.rawValue
  }
}

MainActor.assumeIsolated {
  switch CommandLine.arguments.dropFirst().first {
  case "cf": scenario(CFMainLoop())
  case "ours": scenario(OurMainLoop())
  default:
    print("usage: RunLoopParityHelper cf|ours")
    exit(2)
  }
  for entry in trace { print(entry) }
}
exit(0)
