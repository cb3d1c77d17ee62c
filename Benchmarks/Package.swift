// swift-tools-version:6.1
// runloop-peers: the run loop beside the event loops a user would pick instead (libuv,
// sd-event, GLib, SwiftNIO), on the same work in one run. A package of its own so that the
// main package depends on none of them (Docs/Performance.md, "Against the peers").

import PackageDescription

let package = Package(
  name: "swift-runloop-benchmarks",
  products: [
    .executable(name: "runloop-peers", targets: ["PeerBench"])
  ],
  dependencies: [
    .package(name: "swift-runloop", path: ".."),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
  ],
  targets: [
    // The C peers, through Debian's -dev packages and pkg-config.
    .systemLibrary(
      name: "CLibUV", path: "Sources/CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]
    ),
    .systemLibrary(
      name: "CGLib", path: "Sources/CGLib", pkgConfig: "glib-2.0",
      providers: [.apt(["libglib2.0-dev"])]
    ),
    .systemLibrary(
      name: "CSDEvent", path: "Sources/CSDEvent", pkgConfig: "libsystemd",
      providers: [.apt(["libsystemd-dev"])]
    ),
    // The peers' side of each piece of work, written in C against each library's own API,
    // plus the bare-call floor and the allocation counter.
    .target(name: "CPeers", dependencies: ["CLibUV", "CGLib", "CSDEvent"], path: "Sources/CPeers"),
    .executableTarget(
      name: "PeerBench",
      dependencies: [
        "CPeers",
        .product(name: "RunLoopCore", package: "swift-runloop"),
        .product(name: "RunLoopTimers", package: "swift-runloop"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Sources/PeerBench"
    ),
  ],
  swiftLanguageModes: [.v6]
)
