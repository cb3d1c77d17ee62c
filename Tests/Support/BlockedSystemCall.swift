import CRunLoopLinux
import Glibc

/// The system call a thread of this process is blocked in, as the kernel reports it in
/// `/proc/self/task/TID/syscall`; `nil` while the thread runs (or when the file cannot be
/// read). Tells, without touching the thread, where a loop sleeps.
public func blockedSystemCall(ofThread tid: pid_t) -> Int? {
  guard let text = procFileText("/proc/self/task/\(tid)/syscall"),
    let first = text.split(separator: " ").first
  else { return nil }
  return Int(first)
}

/// Whether thread `tid` stays blocked in system call `call` over three readings 2 ms apart:
/// a thread that only waits a moment for a lock (a `futex` too) is not asleep there.
public func isSleeping(in call: Int, thread tid: pid_t) -> Bool {
  for reading in 0..<3 {
    if reading > 0 { usleep(2000) }
    guard blockedSystemCall(ofThread: tid) == call else { return false }
  }
  return true
}

/// The `futex` system call's number on this machine.
public let futexSystemCall = Int(SYS_futex)

/// The number of the system call a loop's `epoll` sleep is on this machine (`epoll_wait`
/// where the kernel has it, else `epoll_pwait`; see `crl_epoll_wait`).
public let epollWaitSystemCall = crl_epoll_wait_system_call()
