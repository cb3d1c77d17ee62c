import CRunLoopLinux

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
struct PollingWindow {
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
  var nextPause = PollingWindow.firstPause

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
