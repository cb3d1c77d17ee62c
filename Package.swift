// swift-tools-version:6.1
// The run-loop framework: the architecture of Apple's Threading Programming Guide,
// rebuilt for Linux in modules a user can take one at a time.

import PackageDescription

let package = Package(
  name: "swift-runloop",
  products: [
    .library(name: "RunLoopCore", targets: ["RunLoopCore"]),
    .library(name: "RunLoopTimers", targets: ["RunLoopTimers"]),
    .library(name: "RunLoopPorts", targets: ["RunLoopPorts"]),
    .library(name: "RunLoopObservers", targets: ["RunLoopObservers"]),
    .library(name: "RunLoopTracing", targets: ["RunLoopTracing"]),
    .library(name: "RunLoopLifecycle", targets: ["RunLoopLifecycle"]),
    .library(name: "RunLoopJournal", targets: ["RunLoopJournal"]),
    .library(name: "RunLoopLogging", targets: ["RunLoopLogging"]),
    .library(name: "RunLoopPrometheus", targets: ["RunLoopPrometheus"]),
    .library(name: "RunLoopSpans", targets: ["RunLoopSpans"]),
    .executable(name: "runloop-demo", targets: ["RunLoopDemo"]),
    .executable(name: "runloop-bench", targets: ["RunLoopBench"]),
    .executable(name: "runloop-tutorial", targets: ["RunLoopTutorial"]),
    .executable(name: "runloop-start-here", targets: ["RunLoopStartHere"]),
    .executable(name: "runloop-snippets", targets: ["RunLoopSnippetRunner"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    // `swift package generate-documentation` (the README's documentation command).
    .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    // Test-only: `debounce` on a loop's clock (RunLoopTimersTests).
    .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.3.0"),
  ],
  targets: [
    // Linux system calls that Glibc does not expose to Swift (epoll, eventfd, timerfd, signalfd).
    .target(name: "CRunLoopLinux", path: "Sources/CRunLoopLinux"),
    .target(
      name: "RunLoopCore",
      dependencies: ["CRunLoopLinux"],
      path: "Sources/Core"
    ),
    .target(name: "RunLoopTimers", dependencies: ["RunLoopCore"], path: "Sources/Timers"),
    .target(
      name: "RunLoopPorts",
      dependencies: [
        "RunLoopCore", "CRunLoopLinux",
        .product(name: "DequeModule", package: "swift-collections"),
      ],
      path: "Sources/Ports"
    ),
    // Observers, metrics and the stall watchdog: the loop's hooks, without the trace machinery.
    .target(
      name: "RunLoopObservers",
      dependencies: [
        "RunLoopCore",
        .product(name: "Histogram", package: "hdrhistogram-swift"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
      ],
      path: "Sources/Observers"
    ),
    // The tracer and what it feeds: records, the JSON Lines sink, the reader, summaries,
    // timelines and Chrome export. It plugs into the hooks Observers exposes.
    .target(
      name: "RunLoopTracing",
      dependencies: [
        "RunLoopCore", "RunLoopObservers",
        .product(name: "DequeModule", package: "swift-collections"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
      ],
      path: "Sources/Tracing"
    ),
    // libsystemd (sd_journal_sendv), for the journald sink only: RunLoopObservers builds without it.
    .systemLibrary(
      name: "CSystemdJournal",
      path: "Sources/CSystemdJournal",
      pkgConfig: "libsystemd",
      providers: [.apt(["libsystemd-dev"])]
    ),
    // The loop's context in swift-log metadata (a metadata provider): no libsystemd.
    .target(
      name: "RunLoopLogging",
      dependencies: [
        "RunLoopCore", "RunLoopTracing", .product(name: "Logging", package: "swift-log"),
      ],
      path: "Sources/Logging"
    ),
    .target(
      name: "RunLoopJournal",
      dependencies: [
        "RunLoopTracing", "RunLoopObservers", "RunLoopCore", "CSystemdJournal", "CRunLoopLinux",
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Sources/TracingJournal"
    ),
    // Loop metrics in the Prometheus exposition format (swift-prometheus), served by a loop
    // through a socket source: its own target, so that Observers keeps no such dependency.
    .target(
      name: "RunLoopPrometheus",
      dependencies: [
        "RunLoopCore", "RunLoopPorts", "RunLoopObservers",
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
      ],
      path: "Sources/Prometheus"
    ),
    // Call-outs as swift-distributed-tracing spans, parented on the context of the code that
    // caused them: its own target, so that Core and Tracing keep no such dependency.
    .target(
      name: "RunLoopSpans",
      dependencies: [
        "RunLoopCore", "RunLoopObservers", "CRunLoopLinux",
        .product(name: "Tracing", package: "swift-distributed-tracing"),
      ],
      path: "Sources/Spans"
    ),
    .executableTarget(
      name: "RunLoopDemo",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "RunLoopJournal",
        "RunLoopLogging", "RunLoopPrometheus",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Sources/Demo"
    ),
    // Side-by-side benchmarks against CFRunLoop and the bare Linux calls (Docs/RunLoopGuide.docc/Performance.md).
    .executableTarget(
      name: "RunLoopBench",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "CBenchSupport",
        "CRunLoopLinux",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
      ],
      path: "Sources/Bench"
    ),
    // The bench's allocation counter (malloc interposed in the bench executable only).
    .target(name: "CBenchSupport", path: "Sources/BenchSupport"),
    // A small program the tests start as a separate process (main-thread behaviour, cross-process ports).
    .executableTarget(
      name: "RunLoopTestHelper",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "RunLoopSpans", "RunLoopSpansTestSupport",
        .product(name: "Tracing", package: "swift-distributed-tracing"),
      ],
      path: "Tests/Helper"
    ),
    // Counts the loop threads' allocations during actor hops between loops. It interposes
    // malloc, so it is a process of its own, and no test target depends on it (a test bundle
    // links its executable dependencies in, and would get the interposed malloc, which
    // ThreadSanitizer's runtime cannot share): `swift build` builds it with everything else.
    .executableTarget(
      name: "RunLoopAllocationHelper", dependencies: ["RunLoopCore", "CBenchSupport"],
      path: "Tests/AllocationHelper"
    ),
    // What several test targets share: starting the helper program as a real process.
    .target(
      name: "RunLoopTestSupport", dependencies: ["CRunLoopLinux", "RunLoopCore", "RunLoopTracing"],
      path: "Tests/Support"),
    .testTarget(
      name: "RunLoopCoreTests",
      dependencies: [
        "CRunLoopLinux", "RunLoopCore", "RunLoopTestHelper", "RunLoopTestSupport",
        "RunLoopAsyncMainHelper", "RunLoopTimers",
      ],
      path: "Tests/CoreTests"
    ),
    .testTarget(
      name: "RunLoopPortsTests",
      dependencies: ["RunLoopCore", "RunLoopPorts", "RunLoopTestHelper", "RunLoopTestSupport"],
      path: "Tests/PortsTests"
    ),
    .testTarget(
      name: "RunLoopObserversTests",
      dependencies: [
        "RunLoopCore", "RunLoopObservers", "RunLoopTracing", "RunLoopJournal",
        "RunLoopTestSupport", "RunLoopPorts",
        .product(name: "MetricsTestKit", package: "swift-metrics"),
      ],
      path: "Tests/ObserversTests"
    ),
    .testTarget(
      name: "RunLoopTracingTests",
      dependencies: [
        "RunLoopCore", "RunLoopObservers", "RunLoopTracing", "RunLoopJournal",
        "RunLoopTestSupport", "RunLoopLogging", "RunLoopPorts", "RunLoopTimers",
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Tests/TracingTests"
    ),
    .testTarget(
      name: "RunLoopPrometheusTests",
      dependencies: [
        "RunLoopCore", "RunLoopPorts", "RunLoopObservers", "RunLoopPrometheus",
        "RunLoopTestSupport", .product(name: "Prometheus", package: "swift-prometheus"),
      ],
      path: "Tests/PrometheusTests"
    ),
    .testTarget(
      name: "RunLoopSpansTests",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopSpans",
        "RunLoopTestSupport", "RunLoopSpansTestSupport", "RunLoopTestHelper", "RunLoopTracing",
        "RunLoopLogging", "RunLoopJournal", .product(name: "Logging", package: "swift-log"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
      ],
      path: "Tests/SpansTests"
    ),
    // The tracer the spans' tests bootstrap (in the test process and in the helper process).
    .target(
      name: "RunLoopSpansTestSupport",
      dependencies: [
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
      ],
      path: "Tests/SpansSupport"
    ),
    .testTarget(
      name: "RunLoopTimersTests",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopTestSupport",
        .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
      ],
      path: "Tests/TimersTests"
    ),
    // Loops as swift-service-lifecycle services: its own target, so Core stays bare.
    .target(
      name: "RunLoopLifecycle",
      dependencies: [
        "RunLoopCore", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ],
      path: "Sources/Lifecycle"
    ),
    // A ServiceGroup of a loop group and an echo server, shut down by SIGTERM in the tests.
    .executableTarget(
      name: "RunLoopLifecycleHelper",
      dependencies: [
        "RunLoopCore", "RunLoopPorts", "RunLoopLifecycle",
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Tests/LifecycleHelper"
    ),
    // A program with an `async` main: the main loop's misuse fails with a clear error.
    .executableTarget(
      name: "RunLoopAsyncMainHelper", dependencies: ["RunLoopCore"],
      path: "Tests/AsyncMainHelper"),
    .testTarget(
      name: "RunLoopLifecycleTests",
      dependencies: [
        "RunLoopCore", "RunLoopLifecycle", "RunLoopTestSupport", "RunLoopLifecycleHelper",
      ],
      path: "Tests/LifecycleTests"
    ),
    // The same scenarios run on CFRunLoop and on ours, their traces compared one for one
    // (Docs/RunLoopGuide.docc, SequenceOfEvents.md, "Where we differ from Core Foundation").
    .testTarget(
      name: "RunLoopParityTests",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopObservers", "RunLoopTracing", "RunLoopParityHelper",
      ],
      path: "Tests/ParityTests"
    ),
    // The parity scenarios that need a process's main thread (the main queue), on either loop.
    .executableTarget(
      name: "RunLoopParityHelper", dependencies: ["RunLoopCore"], path: "Tests/ParityHelper"),
    // The guide: the DocC catalog Docs/RunLoopGuide.docc (articles and tutorial) and the code of
    // its articles (Docs/Snippets), compiled so that an article cannot show code that does not
    // build (IntegrationTests/SnippetCheckTests ties the articles to it). The catalog lives in
    // Docs/ with this target because a catalog belongs to one target's folder, and the library
    // modules' folders are fixed; its articles link to their symbols through combined docs.
    .target(
      name: "RunLoopGuide",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "RunLoopJournal", "RunLoopLogging", "RunLoopPrometheus", "RunLoopSpans", "RunLoopLifecycle",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
      ],
      path: "Docs",
      exclude: [
        "README.md", "Snippets/README.md", "images", "trace-schema.json", "runloop-demo.service",
        "Tutorial", "StartHere", "SnippetRunner",
      ]
    ),
    // Runs one region of Docs/Snippets as a process of its own (`runloop-snippets NAME`), so
    // that SnippetRunTests runs each block an article shows and compares its output.
    .executableTarget(
      name: "RunLoopSnippetRunner", dependencies: ["RunLoopGuide", "RunLoopCore"],
      path: "Docs/SnippetRunner"
    ),
    // The first run loop of the article "Start here" (RunLoopGuide.docc/StartHere.md), the whole
    // program as the article shows it: `swift run runloop-start-here`.
    .executableTarget(
      name: "RunLoopStartHere",
      dependencies: ["RunLoopCore", "RunLoopTimers", "RunLoopObservers"],
      path: "Docs/StartHere"
    ),
    // The tutorial "Build a traced worker service": each step's code is a file of the catalog
    // (RunLoopGuide.docc/Resources/Tutorial), linked into Docs/Tutorial, so the package builds
    // every step and `swift run runloop-tutorial N` runs step N.
    .executableTarget(
      name: "RunLoopTutorial",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "RunLoopJournal",
      ],
      path: "Docs/Tutorial"
    ),
    .testTarget(
      name: "IntegrationTests",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers", "RunLoopTracing",
        "RunLoopJournal", "RunLoopGuide", "RunLoopTutorial", "RunLoopStartHere",
        "RunLoopSnippetRunner", "RunLoopTestSupport",
      ],
      path: "Tests/IntegrationTests"
    ),
    // Runs the built runloop-demo binary as a child process (depends on it so it is built).
    .testTarget(
      name: "DemoTests",
      dependencies: [
        "RunLoopDemo", "RunLoopCore", "RunLoopObservers", "RunLoopTracing", "RunLoopTestSupport",
      ],
      path: "Tests/DemoTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
