import Glibc
import RunLoopCore
import RunLoopPorts

/// A fresh registry directory under /tmp, removed (with its files) when released.
final class TemporaryRegistry: Sendable {
  let registry: PortNameRegistry
  var directory: String { registry.directory }

  init() throws {
    var template = Array("/tmp/rlp-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
      throw RunLoopError.systemCall("mkdtemp", errno: errno)
    }
    registry = try PortNameRegistry(directory: String(cString: made))
  }

  deinit {
    if let directory = opendir(registry.directory) {
      while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { unlink(registry.directory + "/" + name) }
      }
      closedir(directory)
    }
    rmdir(registry.directory)
  }
}
