import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopSpans
import RunLoopSpansTestSupport
import Tracing

/// `spans-traced-request DIRECTORY NAME`: with a tracer bootstrapped and the spans on every
/// loop, one named-port request from a perform block (`send`) made inside a root span
/// (`client-request`); prints each finished span as
/// `span:NAME trace:TRACE id:SPAN parent:PARENT` (`none` for a root), then `done`.
func runSpansHelper(_ arguments: [String]) -> Never {
  guard arguments.count == 3, arguments[0] == "spans-traced-request" else {
    print("unknown spans subcommand \(arguments)")
    exit(2)
  }
  let tracer = W3CTestTracer(seed: UInt64(getpid()))
  InstrumentationSystem.bootstrap(tracer)
  EventRunLoop.addProcessInstrument(LoopSpans())
  do {
    let registry = try PortNameRegistry(directory: arguments[1])
    let port = try NamedPort(name: arguments[2], registry: registry)
    let loop = EventRunLoop.current
    let request = tracer.startSpan("client-request", context: .topLevel)
    _ = ServiceContext.withValue(request.context) {
      loop.perform(name: "send") {
        do throws(RunLoopError) {
          _ = try port.request(msgid: 1, data: Array("traced".utf8))
        } catch {
          print("error: \(error)")
          exit(1)
        }
      }
    }
    _ = try loop.run(mode: .default, timeout: .zero)
    request.end()
  } catch {
    print("error: \(error)")
    exit(1)
  }
  for span in tracer.recorder.finishedSpans {
    print(
      "span:\(span.operationName) trace:\(span.traceID) id:\(span.spanID)"
        + " parent:\(span.parentSpanID ?? "none")")
  }
  print("done")
  exit(0)
}
