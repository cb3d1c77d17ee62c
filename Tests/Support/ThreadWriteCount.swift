/// How many `write` system calls (and their kin: `pwrite`, `writev`) the calling thread has
/// made, as the kernel counts them in `/proc/thread-self/io` (`syscw`); `nil` when the file
/// cannot be read. Reading it makes read calls only, so a difference of two readings counts
/// the writes made between them.
public func writeSystemCallsOfThisThread() -> UInt64? {
  guard let text = procFileText("/proc/thread-self/io") else { return nil }
  for line in text.split(separator: "\n") where line.hasPrefix("syscw:") {
    return line.split(separator: " ").last.flatMap { UInt64($0) }
  }
  return nil
}
