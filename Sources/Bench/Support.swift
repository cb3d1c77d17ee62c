import CBenchSupport
import Foundation
import Glibc

/// Nanoseconds on CLOCK_BOOTTIME, the clock ContinuousClock and our loop's timerfd use.
func nanosNow() -> UInt64 {
  var spec = timespec()
  clock_gettime(CLOCK_BOOTTIME, &spec)
  return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Seconds since `start`.
func seconds(since start: UInt64) -> Double { Double(nanosNow() &- start) / 1e9 }

/// CPU time used so far by every thread of the process, in nanoseconds.
func processCPUNanoseconds() -> UInt64 {
  var spec = timespec()
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
  return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Bytes the allocator has handed out and not taken back (mallinfo2: all arenas plus mmap).
func heapBytesInUse() -> Int {
  Int(cbench_heap_bytes_in_use())
}

/// Allocations made by this thread so far (the interposed malloc in CBenchSupport).
func threadAllocations() -> UInt64 { cbench_thread_allocations() }

/// A field of /proc/self/status (VmRSS, VmSize...) in kB.
func procStatus(_ field: String) -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
    return 0
  }
  for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
    let digits = line.split(separator: " ").dropFirst().first { Int($0) != nil }
    return digits.flatMap { Int($0) } ?? 0
  }
  return 0
}

/// Voluntary plus involuntary context switches of one thread of this process.
func contextSwitches(thread tid: pid_t) -> Int {
  let path = "/proc/self/task/\(tid)/status"
  guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
  var total = 0
  for line in text.split(separator: "\n") where line.contains("ctxt_switches:") {
    total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
  }
  return total
}

/// The median of some samples.
func median(_ values: [Double]) -> Double {
  guard !values.isEmpty else { return .nan }
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// A counting semaphore that also carries a flag, used to hand results between threads.
final class Latch: @unchecked Sendable {
  private let semaphore = DispatchSemaphore(value: 0)
  func signal() { semaphore.signal() }
  func wait() { semaphore.wait() }
  func wait(seconds: Double) -> Bool { semaphore.wait(timeout: .now() + seconds) == .success }
}

/// A plain integer shared between a loop thread and the bench thread.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var storage = 0
  var value: Int { lock.withLock { storage } }
  func add(_ amount: Int = 1) { lock.withLock { storage += amount } }
  func reset() { lock.withLock { storage = 0 } }
}

/// Options every suite sees.
struct BenchOptions {
  var quick = false
  /// Scales a duration in seconds down in quick mode.
  func duration(_ full: Double) -> Double { quick ? full / 4 : full }
  func count(_ full: Int) -> Int { quick ? max(1, full / 10) : full }
}

/// A bare pthread running a closure, for the CF side and the Linux floors (no run loop of ours).
final class BareThread: @unchecked Sendable {
  private var handle = pthread_t()
  private let body: () -> Void

  init(_ body: @escaping () -> Void) {
    self.body = body
    let context = Unmanaged.passRetained(self).toOpaque()
    let status = pthread_create(
      &handle, nil,
      { context in
        let thread = Unmanaged<BareThread>.fromOpaque(context!).takeRetainedValue()
        thread.body()
        return nil
      }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
  }

  func join() { pthread_join(handle, nil) }
}
