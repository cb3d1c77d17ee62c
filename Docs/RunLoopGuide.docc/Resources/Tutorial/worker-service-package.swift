// swift-tools-version:6.1
import PackageDescription

let package = Package(
  name: "WorkerService",
  dependencies: [
    // This repository, checked out beside your package.
    .package(path: "../swift-runloop")
  ],
  targets: [
    .executableTarget(
      name: "WorkerService",
      dependencies: [
        .product(name: "RunLoopCore", package: "swift-runloop"),
        .product(name: "RunLoopTimers", package: "swift-runloop"),
        .product(name: "RunLoopPorts", package: "swift-runloop"),
        .product(name: "RunLoopObservers", package: "swift-runloop"),
        .product(name: "RunLoopTracing", package: "swift-runloop"),
        .product(name: "RunLoopJournal", package: "swift-runloop"),
      ]
    )
  ],
  swiftLanguageModes: [.v6]
)
