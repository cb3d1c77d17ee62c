import Dispatch
import Glibc
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

/// A ServiceGroup of a loop group and an echo server, in a process of its own, shut down by
/// SIGTERM from this process while a client streams lines at it: the connection in flight is
/// served to its end, every byte read is echoed, and nothing is reported lost. SIGUSR1s sent
/// first reach the helper's SignalSource beside the group's SIGTERM handling.
@Suite("Loop services under a ServiceGroup")
struct GracefulShutdownTests {
  @Test func sigtermUnderLoadServesTheOpenConnectionToItsEndAndLosesNothing() throws {
    let path = "/tmp/runloop-lifecycle-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    let helper = try HelperProcess([path], executable: "RunLoopLifecycleHelper")
    #expect(helper.readLine(timeout: .seconds(60)) == "ready")
    for _ in 0..<3 {
      helper.signal(SIGUSR1)
      #expect(helper.readLine() == "usr1 from \(getpid())")
    }
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    #expect(descriptor >= 0)
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(connected == 0)
    let lines = 20_000
    var sent: [UInt8] = []
    for index in 0..<lines { sent += Array("line \(index)\n".utf8) }
    sent += Array("end\n".utf8)
    let expected = sent
    let received = GuardedState<[UInt8]>([])
    let readerDone = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { break }
        received.withLock { $0 += buffer[0..<count] }
      }
      readerDone.signal()
    }
    // Stream the lines; SIGTERM goes out once a third of them is written.
    var offset = 0
    var signalled = false
    while offset < sent.count {
      let chunk = min(4_096, sent.count - offset)
      let written = sent.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, chunk) }
      #expect(written > 0)
      guard written > 0 else { break }
      offset += written
      if !signalled, offset >= sent.count / 3 {
        helper.signal(SIGTERM)
        signalled = true
      }
    }
    #expect(readerDone.wait(timeout: .now() + 60) == .success)
    let echoed = received.withLock { $0 }
    #expect(echoed.count == expected.count)
    #expect(echoed == expected)
    let report = helper.readLine(timeout: .seconds(60))
    #expect(
      report
        == "served connections=1 in=\(expected.count) out=\(expected.count) abandoned=0"
        + " threads-ended=true")
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  }
}
