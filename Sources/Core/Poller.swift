import CRunLoopLinux
import Glibc

/// The loop's sleeping place: one `epoll` set holding an `eventfd` for explicit wake-ups, a
/// `timerfd` for deadlines and the descriptors of version-1 sources (the role the Mach port
/// set plays for CFRunLoop on macOS).
///
/// The descriptors never change after creation, so the `epoll_ctl` calls are safe from any
/// thread (and so is writing to the eventfd, which ``Waker`` does). `arm`, `wait` and
/// the buffers are for the loop's thread only.
final class Poller {
  static let wakeToken: UInt64 = 0
  static let timerToken: UInt64 = 1
  static let eventCapacity = 64

  let epollDescriptor: Int32
  let wakeDescriptor: Int32
  let timerDescriptor: Int32
  // Loop thread only: the absolute deadline the timerfd is armed for (nil: disarmed).
  private var armedDeadline: Int64?
  // Loop thread only: a deadline the timerfd refused (`timerfd_settime` failed): a blocking
  // wait ends there by itself, and the next `arm` tries the timerfd again.
  private var unarmedDeadline: Int64?
  /// How many `epoll_wait` calls the loop has made (tests count a pass's system calls).
  private(set) var waits: UInt64 = 0
  // Loop thread only: one event buffer per nesting depth, so a nested run never overwrites
  // the events an outer pass is still handling. The outermost run's is a constant, so that
  // the usual run reaches it without an access check of the array.
  private let outermostBuffer: UnsafeMutableRawPointer
  private var nestedBuffers: [UnsafeMutableRawPointer] = []

  init() throws(RunLoopError) {
    let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epoll >= 0 else { throw .systemCall("epoll_create1", errno: errno) }
    let wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
    guard wake >= 0 else {
      let code = errno
      close(epoll)
      throw .systemCall("eventfd", errno: code)
    }
    let timer = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
    guard timer >= 0 else {
      let code = errno
      close(epoll)
      close(wake)
      throw .systemCall("timerfd_create", errno: code)
    }
    epollDescriptor = epoll
    wakeDescriptor = wake
    timerDescriptor = timer
    outermostBuffer = Self.makeBuffer()
    // Edge-triggered: every write to an eventfd reports one new event, so the loop never
    // needs to read the counter back, which saves a system call per wake-up. The counter
    // only grows (by one per wake-up that found the loop blocking in `epoll`); at ten million
    // wake-ups a second it would take tens of thousands of years to reach its limit.
    try add(wake, mask: EPOLLIN.rawValue | EPOLLET.rawValue, token: Self.wakeToken)
    try add(timer, mask: EPOLLIN.rawValue, token: Self.timerToken)
  }

  deinit {
    outermostBuffer.deallocate()
    for buffer in nestedBuffers { buffer.deallocate() }
    close(timerDescriptor)
    close(wakeDescriptor)
    close(epollDescriptor)
  }

  func add(_ descriptor: Int32, mask: UInt32, token: UInt64) throws(RunLoopError) {
    if crl_epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, mask, token) != 0 {
      throw .systemCall("epoll_ctl(ADD, fd \(descriptor))", errno: errno)
    }
  }

  func modify(_ descriptor: Int32, mask: UInt32, token: UInt64) throws(RunLoopError) {
    if crl_epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, descriptor, mask, token) != 0 {
      throw .systemCall("epoll_ctl(MOD, fd \(descriptor))", errno: errno)
    }
  }

  /// Removes a descriptor; a descriptor its owner already closed is gone from the set anyway.
  func remove(_ descriptor: Int32) {
    _ = crl_epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, 0, 0)
  }

  func drainTimer() {
    var expirations: UInt64 = 0
    _ = withUnsafeMutableBytes(of: &expirations) { read(timerDescriptor, $0.baseAddress, 8) }
    armedDeadline = nil
  }

  /// Arms the timerfd for `deadline` (a ``LoopClock`` reading), or disarms it for `nil`;
  /// skips the system call when nothing changes (every sleep asks; the deadline seldom
  /// changes).
  ///
  /// When the kernel refuses (`ENOMEM`), the deadline is not lost: the next blocking
  /// ``wait(into:block:)`` bounds its own wait by it, so the loop still wakes on time and
  /// the pass after it arms the timerfd again.
  func arm(nanoseconds deadline: Int64?) {
    guard deadline != armedDeadline else { return }
    armedDeadline = deadline
    unarmedDeadline = nil
    var spec = itimerspec()
    if let deadline {
      let positive = max(1, deadline)
      spec.it_value = timespec(
        tv_sec: Int(positive / 1_000_000_000), tv_nsec: Int(positive % 1_000_000_000))
    }
    var status: Int32
    repeat {
      status = timerfd_settime(timerDescriptor, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    } while status != 0 && errno == EINTR
    guard status != 0 else { return }
    // Not armed: a disarm that failed leaves an old expiry, which `drainTimer` takes.
    armedDeadline = nil
    unarmedDeadline = deadline
  }

  /// How long a blocking wait may last, in milliseconds: for ever (-1), or until the deadline
  /// the timerfd refused, rounded up (0 once it has passed, and then it is forgotten, so that
  /// a stale one never makes every wait return at once).
  private func blockingTimeout() -> Int32 {
    guard let deadline = unarmedDeadline else { return -1 }
    let left = deadline - LoopClock.now()
    guard left > 0 else {
      unarmedDeadline = nil
      return 0
    }
    return Int32(clamping: (left + 999_999) / 1_000_000)
  }

  /// The event buffer of the run at `depth` (1 for the outermost).
  func buffer(depth: Int) -> UnsafeMutableRawPointer {
    depth > 1 ? nestedBuffer(depth: depth) : outermostBuffer
  }

  /// The event buffer of a nested run, made on first use at that depth.
  private func nestedBuffer(depth: Int) -> UnsafeMutableRawPointer {
    while nestedBuffers.count < depth - 1 { nestedBuffers.append(Self.makeBuffer()) }
    return nestedBuffers[depth - 2]
  }

  private static func makeBuffer() -> UnsafeMutableRawPointer {
    .allocate(byteCount: crl_epoll_event_size() * eventCapacity, alignment: 8)
  }

  /// Waits for events: without blocking when `block` is false, otherwise until one arrives.
  /// Returns the number of events in `buffer` (0 when interrupted by a signal).
  func wait(into buffer: UnsafeMutableRawPointer, block: Bool) -> Int {
    waits &+= 1
    let events = buffer.assumingMemoryBound(to: epoll_event.self)
    let count = crl_epoll_wait(
      epollDescriptor, events, Int32(Self.eventCapacity), block ? blockingTimeout() : 0)
    return count < 0 ? 0 : Int(count)
  }

  /// The token and readiness of event `index` in `buffer`.
  func event(_ index: Int, in buffer: UnsafeMutableRawPointer) -> (token: UInt64, mask: UInt32) {
    let pointer = UnsafeRawPointer(buffer + index * crl_epoll_event_size())
      .assumingMemoryBound(to: epoll_event.self)
    return (crl_epoll_event_data(pointer), crl_epoll_event_events(pointer))
  }
}
