import Glibc

/// A value that only one thread at a time may touch, guarded by a `pthread_mutex_t`.
///
/// The run-loop modules keep every piece of shared state in one of these. It plays the
/// role of swift-nio's `NIOLockedValueBox`: the lock and the value it guards live together,
/// so code cannot reach the value without the lock.
///
/// We write our own rather than use `Synchronization.Mutex` because ThreadSanitizer on Linux
/// cannot see `Mutex` (it reports false races and the sanitized run fails), while it checks a
/// `pthread_mutex_t` lock cleanly; the design requires the stress tests to pass under TSan.
///
/// ```swift
/// let counter = GuardedState(0)
/// counter.withLock { $0 += 1 }
/// ```
///
/// Never call out to user code inside `withLock`: copy what you need out, release the lock,
/// then call.
public final class GuardedState<Value>: @unchecked Sendable {
  // Unchecked: `value` is only reached inside `withLock`, under `mutex`. The mutex is
  // allocated, not stored inline, because a pthread mutex must not move while in use.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  // Guarded by `mutex`. Exempt from the run-time exclusivity check: the mutex already makes
  // every access exclusive, and the check is a runtime call per `withLock` (figures in
  // Docs/Performance.md, "What the annotations buy").
  @exclusivity(unchecked) private var value: Value

  /// Creates the guard around an initial value.
  ///
  /// ```swift
  /// let names = GuardedState([String]())
  /// ```
  public init(_ value: Value) {
    self.value = value
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    let status = pthread_mutex_init(mutex, nil)
    precondition(status == 0, "pthread_mutex_init failed: \(status)")
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with exclusive access to the value and returns what it returns.
  ///
  /// ```swift
  /// let total = state.withLock { value -> Int in value.count }
  /// ```
  @inlinable
  public func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    lock()
    defer { unlock() }
    return try body(&valueStorage)
  }

  @usableFromInline
  var valueStorage: Value {
    _read { yield value }
    _modify { yield &value }
  }

  @usableFromInline
  func lock() {
    let status = pthread_mutex_lock(mutex)
    precondition(status == 0, "pthread_mutex_lock failed: \(status)")
  }

  @usableFromInline
  func unlock() {
    let status = pthread_mutex_unlock(mutex)
    precondition(status == 0, "pthread_mutex_unlock failed: \(status)")
  }
}
