extension JournalSink {
  /// The sink's own rate limit, kept under journald's per-service limit so that journald
  /// never drops entries silently: records past it are dropped and counted by the sink, and
  /// the count goes into the drop reports (`RUNLOOP_RATE_LIMITED`) and
  /// ``JournalSinkStatistics/rateLimited``.
  ///
  /// journald lets a service log `burst` entries per `interval` (its defaults,
  /// `RateLimitBurst=10000` and `RateLimitIntervalSec=30s`, are ``journaldDefault``) and drops
  /// the rest of the window without telling the sender. The sink spends from a token bucket
  /// holding `burst / 2` tokens, refilled at `burst / 2` per `interval`: whatever the
  /// alignment of journald's windows, it sends at most `burst` records in any one window.
  /// Drop reports do not spend tokens; they are sent at most once a second (and once at
  /// close), a few entries on top. Other processes logging under the same service share
  /// journald's budget: give those sinks a smaller limit.
  ///
  /// ```swift
  /// let sink = try JournalSink(identifier: "worker", rateLimit: .init(burst: 2000, interval: .seconds(10)))
  /// let unlimited = try JournalSink(identifier: "bench", rateLimit: nil)
  /// ```
  public struct RateLimit: Sendable, Hashable {
    /// The entries journald lets through per `interval`.
    ///
    /// ```swift
    /// let burst = JournalSink.RateLimit.journaldDefault.burst  // 10_000
    /// ```
    public var burst: Int
    /// journald's rate-limit window.
    ///
    /// ```swift
    /// let interval = JournalSink.RateLimit.journaldDefault.interval  // 30 s
    /// ```
    public var interval: Duration

    /// Creates a limit matching a journald configured with `RateLimitBurst=burst` and
    /// `RateLimitIntervalSec=interval`.
    ///
    /// ```swift
    /// let limit = JournalSink.RateLimit(burst: 1000, interval: .seconds(5))
    /// ```
    public init(burst: Int, interval: Duration) {
      self.burst = burst
      self.interval = interval
    }

    /// journald's default: 10,000 entries per 30 seconds.
    ///
    /// ```swift
    /// let sink = try JournalSink(rateLimit: .journaldDefault)
    /// ```
    public static let journaldDefault = RateLimit(burst: 10_000, interval: .seconds(30))
  }
}

/// The token bucket of a ``JournalSink/RateLimit``; used on the writer thread only.
struct TokenBucket {
  private let capacity: Double
  private let perNanosecond: Double
  private var tokens: Double
  private var last: ContinuousClock.Instant

  init(_ limit: JournalSink.RateLimit) {
    let (seconds, attoseconds) = limit.interval.components
    let nanoseconds = max(1, Double(seconds) * 1e9 + Double(attoseconds) / 1e9)
    capacity = max(1, Double(limit.burst) / 2)
    perNanosecond = capacity / nanoseconds
    tokens = capacity
    last = .now
  }

  /// Takes one token; `false` when none is left.
  mutating func take(now: ContinuousClock.Instant = .now) -> Bool {
    let (seconds, attoseconds) = (now - last).components
    let elapsed = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    tokens = min(capacity, tokens + max(0, elapsed) * perNanosecond)
    last = now
    guard tokens >= 1 else { return false }
    tokens -= 1
    return true
  }
}
