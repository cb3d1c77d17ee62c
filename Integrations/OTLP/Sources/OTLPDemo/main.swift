// runloop-demo-otlp: the demo service's request path, its spans exported over OTLP/HTTP.
//
//   runloop-demo-otlp ENDPOINT            the request, in this process, against a server
//                                         process it starts (`serve`) and waits for
//   runloop-demo-otlp serve ENDPOINT DIR  the server: one named-port request, then exit
//
// ENDPOINT is the OTLP/HTTP traces URL (http://127.0.0.1:4318/v1/traces).
import Foundation
import Logging
import OTel
import RunLoopCore
import RunLoopPorts
import RunLoopSpans
import ServiceLifecycle
import Tracing

let arguments = Array(CommandLine.arguments.dropFirst())
do {
  switch arguments.count {
  case 1:
    try await runRequest(endpoint: arguments[0])
  case 3 where arguments[0] == "serve":
    try await runServer(endpoint: arguments[1], directory: arguments[2])
  default:
    FileHandle.standardError.write(
      Data("usage: runloop-demo-otlp ENDPOINT | runloop-demo-otlp serve ENDPOINT DIR\n".utf8))
    exit(64)
  }
} catch {
  FileHandle.standardError.write(Data("runloop-demo-otlp: \(error)\n".utf8))
  exit(1)
}
