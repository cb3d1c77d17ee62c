import Dispatch
import Glibc
import RunLoopCore
@_exported import RunLoopTestSupport

/// A pipe whose ends are closed when the value is released.
final class Pipe: Sendable {
  let readEnd: Int32
  let writeEnd: Int32

  init() {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    readEnd = fds[0]
    writeEnd = fds[1]
  }

  deinit {
    close(readEnd)
    close(writeEnd)
  }

  func writeByte() {
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  func readByte() -> Bool {
    var byte: UInt8 = 0
    return read(readEnd, &byte, 1) == 1
  }
}
