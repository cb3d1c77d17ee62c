// swift-tools-version:6.2
// runloop-demo-otlp: the demo service's request path with its spans exported over OTLP by
// swift-otel. A package of its own, as Benchmarks/ is, so that the main package does not
// build swift-otel and its HTTP stack (Docs/RunLoopGuide.docc/TracingARunLoop.md).

import PackageDescription

let package = Package(
  name: "swift-runloop-otlp",
  products: [
    .executable(name: "runloop-demo-otlp", targets: ["OTLPDemo"])
  ],
  dependencies: [
    .package(name: "swift-runloop", path: "../.."),
    // OTLP/HTTP with protobuf only: the gRPC exporter's packages would double the build.
    .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.3.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.4.1"),
    .package(url: "https://github.com/apple/swift-log", from: "1.12.0"),
  ],
  targets: [
    .executableTarget(
      name: "OTLPDemo",
      dependencies: [
        .product(name: "RunLoopCore", package: "swift-runloop"),
        .product(name: "RunLoopPorts", package: "swift-runloop"),
        .product(name: "RunLoopSpans", package: "swift-runloop"),
        .product(name: "OTel", package: "swift-otel"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Sources/OTLPDemo"
    ),
    .testTarget(
      name: "OTLPExportTests",
      dependencies: ["OTLPDemo"],
      path: "Tests/OTLPExportTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
