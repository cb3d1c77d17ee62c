import CRunLoopLinux
import Synchronization

/// The loop thread's adaptive polling window: how long the next sleep polls before it
/// blocks. The rule is the one KVM's halt polling uses for an idle vCPU. A sleep that ended
/// within the limit grows the window (from an eighth of the limit, doubling up to the
/// limit); a sleep longer than the limit shuts it (back to 0); a poll that caught work
/// leaves it as it is. So a loop that is woken again and again within microseconds comes to
/// poll for as long as the limit allows, and a loop that sleeps for longer never polls.
struct SpinWindow {
  /// How long the next sleep may poll, in nanoseconds (0: it blocks at once).
  var nanoseconds: Int64 = 0
  /// How many CPUs the loop's thread may run on, as last read.
  var allowedCPUs = 1
  /// Sleeps left before the CPU count is read again (a system call, so not every sleep).
  var sleepsUntilCPUCheck = 0

  static let cpuCheckInterval = 1024

  /// Whether the thread may run on more than one CPU; rereads the affinity mask now and
  /// then, so a thread moved to other CPUs is seen within ``cpuCheckInterval`` sleeps.
  mutating func threadHasAnotherCPU() -> Bool {
    if sleepsUntilCPUCheck == 0 {
      allowedCPUs = Int(crl_allowed_cpu_count())
      sleepsUntilCPUCheck = Self.cpuCheckInterval
    }
    sleepsUntilCPUCheck -= 1
    return allowedCPUs > 1
  }

  /// Adjusts the window after a sleep that blocked (after polling, or without) and lasted
  /// `slept` nanoseconds in all.
  mutating func adapt(slept: Int64, limit: Int64) {
    if slept > limit {
      nanoseconds = 0
    } else if nanoseconds < limit {
      nanoseconds = nanoseconds == 0 ? max(limit / 8, 1) : min(limit, nanoseconds * 2)
    }
  }
}

/// A loop's spin counts, written by its thread and read from any.
final class SpinCounters: Sendable {
  let spins = Atomic<UInt64>(0)
  let caught = Atomic<UInt64>(0)
  let nanoseconds = Atomic<UInt64>(0)

  func record(nanoseconds spent: Int64, caught wasCaught: Bool) {
    spins.wrappingAdd(1, ordering: .relaxed)
    if wasCaught { caught.wrappingAdd(1, ordering: .relaxed) }
    nanoseconds.wrappingAdd(UInt64(max(0, spent)), ordering: .relaxed)
  }
}

/// How many loops of the process are polling right now. A loop polls only while fewer than
/// its thread's CPUs minus one are: a polling loop keeps its CPU busy, and the thread that
/// is about to wake it needs a CPU of its own, or the poll only delays it.
let spinningLoops = Atomic<Int>(0)

/// The spin limit new loops start with, in nanoseconds.
let defaultSpinLimitNanoseconds = Atomic<Int64>(50_000)

/// Takes one of the `slots` polling places; false when they are all taken.
func takeSpinSlot(of slots: Int) -> Bool {
  var current = spinningLoops.load(ordering: .relaxed)
  while current < slots {
    let (exchanged, original) = spinningLoops.compareExchange(
      expected: current, desired: current + 1, ordering: .relaxed)
    if exchanged { return true }
    current = original
  }
  return false
}

func releaseSpinSlot() {
  spinningLoops.wrappingSubtract(1, ordering: .relaxed)
}

/// `duration` in nanoseconds, clamped to the range a spin limit may have: 0 to 1 ms.
func spinLimitNanoseconds(_ duration: Duration) -> Int64 {
  let (seconds, attoseconds) = duration.components
  if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
  if seconds >= 1 { return maximumSpinLimitNanoseconds }
  return min(attoseconds / 1_000_000_000, maximumSpinLimitNanoseconds)
}

let maximumSpinLimitNanoseconds: Int64 = 1_000_000
