import CRunLoopLinux

/// The readiness of a file descriptor: what a ``DescriptorWatch`` waits for and what its
/// handler is told.
///
/// ```swift
/// let watch = DescriptorWatch(fileDescriptor: fd, interest: .readable) { events in
///   if events.contains(.hangup) { close(fd) }
/// }
/// ```
public struct DescriptorEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
  /// The bits of the set.
  ///
  /// ```swift
  /// DescriptorEvents.writable.rawValue  // 2
  /// ```
  public let rawValue: UInt32

  /// Creates a set from its bits.
  ///
  /// ```swift
  /// let events = DescriptorEvents(rawValue: 0b11)  // [.readable, .writable]
  /// ```
  public init(rawValue: UInt32) {
    self.rawValue = rawValue
  }

  /// Data can be read (or a peer closed its end: a read returns 0).
  ///
  /// ```swift
  /// let watch = DescriptorWatch(fileDescriptor: fd, interest: .readable) { _ in drain(fd) }
  /// ```
  public static let readable = DescriptorEvents(rawValue: 1 << 0)
  /// Data can be written.
  ///
  /// ```swift
  /// try watch.setInterest([.readable, .writable])  // while output is queued
  /// ```
  public static let writable = DescriptorEvents(rawValue: 1 << 1)
  /// The descriptor has an error condition. Always reported, never needs asking for.
  ///
  /// ```swift
  /// if events.contains(.error) { watch.invalidate() }
  /// ```
  public static let error = DescriptorEvents(rawValue: 1 << 2)
  /// The peer hung up. Always reported, never needs asking for.
  ///
  /// ```swift
  /// if events.contains(.hangup) { watch.invalidate() }
  /// ```
  public static let hangup = DescriptorEvents(rawValue: 1 << 3)

  /// The names of the members, joined with `|`.
  ///
  /// ```swift
  /// "\(DescriptorEvents([.readable, .hangup]))"  // "readable|hangup"
  /// ```
  public var description: String {
    let names: [(DescriptorEvents, String)] = [
      (.readable, "readable"), (.writable, "writable"), (.error, "error"), (.hangup, "hangup"),
    ]
    let present = names.filter { contains($0.0) }.map(\.1)
    return present.isEmpty ? "none" : present.joined(separator: "|")
  }

  var epollMask: UInt32 {
    var mask: UInt32 = 0
    if contains(.readable) { mask |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
    if contains(.writable) { mask |= EPOLLOUT.rawValue }
    return mask
  }

  init(epollMask mask: UInt32) {
    var events: DescriptorEvents = []
    if mask & (EPOLLIN.rawValue | EPOLLPRI.rawValue) != 0 { events.insert(.readable) }
    if mask & EPOLLOUT.rawValue != 0 { events.insert(.writable) }
    if mask & EPOLLERR.rawValue != 0 { events.insert(.error) }
    if mask & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0 { events.insert(.hangup) }
    self = events
  }
}
