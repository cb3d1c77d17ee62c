import CRunLoopLinux
import Glibc
import Synchronization

/// The loop thread's adaptive polling window: how long the next sleep polls before it
/// blocks. Two rules decide it.
///
/// The window follows the length of the loop's sleeps, as KVM's halt polling does for an
/// idle vCPU. A sleep that blocked and still ended within the limit opens the window at an
/// eighth of the limit, or doubles it, up to the limit. A sleep longer than the limit shuts
/// it, and a poll that caught work leaves it as it is. So a loop woken again and again
/// within microseconds comes to poll for as long as the limit allows, and a loop that
/// sleeps for longer never polls.
///
/// Polling must also pay. KVM stops polling when another task wants the CPU; a thread cannot
/// see that, but it sees the symptom: its polls stop catching work, because the thread that
/// would wake it is waiting for a CPU (often the very one the poll keeps busy). So every
/// ``reviewInterval`` polls the catch rate is reviewed. Below one half, the window stays
/// shut for a pause of ``firstPause`` blocking sleeps, doubling with each failed review
/// up to ``longestPause``; a review that passes resets the pause to its first length.
struct SpinWindow {
  /// How long the next sleep may poll, in nanoseconds (0: it blocks at once).
  var nanoseconds: Int64 = 0
  /// How many CPUs the loop's thread may run on, as last read.
  var allowedCPUs = 1
  /// Sleeps left before the CPU count is read again (a system call, so not every sleep).
  var sleepsUntilCPUCheck = 0
  /// The polls since the last review, and how many of them caught work.
  var polls = 0
  var catches = 0
  /// Blocking sleeps left during which the window stays shut after a failed review.
  var pausedSleeps = 0
  /// How long the next pause will be.
  var nextPause = SpinWindow.firstPause

  static let cpuCheckInterval = 1024
  static let reviewInterval = 32
  static let firstPause = 64
  static let longestPause = 65_536

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

  /// Counts a poll, and reviews the catch rate every ``reviewInterval`` polls.
  mutating func pollEnded(caught: Bool) {
    polls += 1
    if caught { catches += 1 }
    guard polls == Self.reviewInterval else { return }
    if catches * 2 < polls {
      nanoseconds = 0
      pausedSleeps = nextPause
      nextPause = min(nextPause * 2, Self.longestPause)
    } else {
      nextPause = Self.firstPause
    }
    polls = 0
    catches = 0
  }

  /// Adjusts the window after a sleep that blocked (after polling, or without) and lasted
  /// `slept` nanoseconds in all.
  mutating func adapt(slept: Int64, limit: Int64) {
    if pausedSleeps > 0 {
      pausedSleeps -= 1
    } else if slept > limit {
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

  /// Counts one spin. Only the loop's thread writes, so plain loads and stores do (a
  /// read-modify-write would lock the bus three times per poll for nothing).
  func record(nanoseconds spent: Int64, caught wasCaught: Bool) {
    spins.store(spins.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    if wasCaught { caught.store(caught.load(ordering: .relaxed) &+ 1, ordering: .relaxed) }
    nanoseconds.store(
      nanoseconds.load(ordering: .relaxed) &+ UInt64(max(0, spent)), ordering: .relaxed)
  }
}

/// How many loops of the process are polling right now. A loop polls only while fewer than
/// its thread's CPUs are: each polling loop keeps a CPU busy. (Not CPUs minus one: two loops
/// that hand work back and forth on two CPUs take turns, each polling while the other works.
/// When the thread that would wake a poll has no CPU to run on, the polls stop catching work
/// and the catch-rate review in `SpinWindow` pauses them.)
let spinningLoops = Atomic<Int>(0)

/// The spin limit new loops start with, in nanoseconds.
let defaultSpinLimitNanoseconds = Atomic<Int64>(50_000)

/// Installs, once per process, the fork handler that empties ``spinningLoops`` in a child:
/// only the forking thread lives on there, and it was not polling.
let spinSlotsResetInForkedChild: Void = {
  pthread_atfork(nil, nil) { spinningLoops.store(0, ordering: .relaxed) }
}()

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
