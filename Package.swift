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
    .executable(name: "runloop-demo", targets: ["RunLoopDemo"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
  ],
  targets: [
    // Linux system calls that Glibc does not expose to Swift (epoll, eventfd, timerfd, signalfd).
    .target(name: "CRunLoopLinux", path: "Sources/CRunLoopLinux"),
    .target(
      name: "RunLoopCore",
      dependencies: [
        "CRunLoopLinux",
        .product(name: "DequeModule", package: "swift-collections"),
      ],
      path: "Sources/Core"
    ),
    .target(name: "RunLoopTimers", dependencies: ["RunLoopCore"], path: "Sources/Timers"),
    .target(
      name: "RunLoopPorts", dependencies: ["RunLoopCore", "CRunLoopLinux"], path: "Sources/Ports"),
    .target(name: "RunLoopObservers", dependencies: ["RunLoopCore"], path: "Sources/Observers"),
    .executableTarget(
      name: "RunLoopDemo",
      dependencies: [
        "RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Sources/Demo"
    ),
    // A small program the tests start as a separate process (main-thread behaviour, cross-process ports).
    .executableTarget(
      name: "RunLoopTestHelper",
      dependencies: ["RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers"],
      path: "Tests/Helper"
    ),
    .testTarget(
      name: "RunLoopCoreTests",
      dependencies: ["RunLoopCore", "RunLoopTestHelper"],
      path: "Tests/CoreTests"
    ),
    .testTarget(
      name: "RunLoopTimersTests",
      dependencies: ["RunLoopCore", "RunLoopTimers"],
      path: "Tests/TimersTests"
    ),
    .testTarget(
      name: "IntegrationTests",
      dependencies: ["RunLoopCore", "RunLoopTimers", "RunLoopPorts", "RunLoopObservers"],
      path: "Tests/IntegrationTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
