import Testing

@testable import RunLoopCore

/// The one conversion from `Duration` to nanoseconds and between instants and readings.
@Suite("The loop's clock")
struct LoopClockTests {
  @Test func durationsConvertToWholeNanosecondsRoundedAsAsked() {
    let odd = Duration.nanoseconds(1_500) + Duration(attoseconds: 1)
    #expect(LoopClock.nanoseconds(of: odd, rounded: .towardZero) == (1_500, false))
    #expect(LoopClock.nanoseconds(of: odd, rounded: .up) == (1_501, false))
    #expect(LoopClock.nanoseconds(of: odd, rounded: .down) == (1_500, false))
    let negative = Duration.zero - odd
    #expect(LoopClock.nanoseconds(of: negative, rounded: .towardZero) == (-1_500, false))
    #expect(LoopClock.nanoseconds(of: negative, rounded: .up) == (-1_500, false))
    #expect(LoopClock.nanoseconds(of: negative, rounded: .down) == (-1_501, false))
    #expect(LoopClock.nanoseconds(of: .seconds(90), rounded: .up) == (90_000_000_000, true))
    #expect(LoopClock.nanoseconds(of: .zero) == (0, true))
  }

  @Test func durationsBeyondTheNanosecondRangeSaturate() {
    let far = Duration.seconds(Int64.max)
    #expect(LoopClock.nanoseconds(of: far) == (.max, false))
    #expect(LoopClock.nanoseconds(of: .zero - far) == (.min, false))
    // Just inside the range: about 292 years.
    let inside = Duration.nanoseconds(Int64.max - 1)
    #expect(LoopClock.nanoseconds(of: inside) == (Int64.max - 1, true))
  }

  @Test func instantsRoundTripThroughReadings() {
    let now = ContinuousClock.now
    let reading = LoopClock.nanoseconds(of: now)
    #expect(LoopClock.instant(ofNanoseconds: reading) == now)
    #expect(LoopClock.nanoseconds(of: now + .milliseconds(3)) == reading + 3_000_000)
    #expect(LoopClock.now() >= reading - 1_000_000)
  }
}
