import Glibc

/// The text of a small `/proc` file (at most 512 bytes of it), or `nil` when it cannot be
/// read: one `read`, as the kernel produces these files whole for a read that is large
/// enough.
public func procFileText(_ path: String) -> String? {
  let descriptor = open(path, O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes = [UInt8](repeating: 0, count: 512)
  let count = read(descriptor, &bytes, bytes.count)
  guard count > 0 else { return nil }
  return String(decoding: bytes[0..<count], as: UTF8.self)
}

/// A field of a `/proc/PID/task/TID/status` file (`SigBlk`, `SigCgt`...), its value as the
/// kernel prints it, or `nil` when the file or the field cannot be read.
public func procStatusField(_ path: String, _ field: String) -> String? {
  let descriptor = open(path, O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes = [UInt8](repeating: 0, count: 8192)
  let count = read(descriptor, &bytes, bytes.count)
  guard count > 0 else { return nil }
  let text = String(decoding: bytes[0..<count], as: UTF8.self)
  for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
    return line.dropFirst(field.count + 1).trimmingPrefix(while: { $0 == "\t" || $0 == " " })
      .description
  }
  return nil
}

/// The names in directory `path` (`/proc/PID/task`: the thread ids), without `.` and `..`.
public func procDirectoryEntries(_ path: String) -> [String] {
  guard let directory = opendir(path) else { return [] }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return names
}
