import RunLoopPorts

/// A unit of work the main thread hands to a worker, and the message ids of the demo's port
/// protocol.
struct DemoJob: Sendable {
  /// How the job travelled to the worker.
  enum Channel: UInt8, Sendable {
    /// Through the worker's custom input source and its command buffer (Figure 3-2).
    case commandBuffer = 1
    /// As a message on the worker's port.
    case port = 2
  }

  /// Message ids on the ports (the guide's check-in protocol uses 100 for the check-in).
  enum MessageID {
    /// worker to main: "here is my port" (Listing 3-15).
    static let checkIn: PortMessageID = 100
    /// main to worker: a job.
    static let job: PortMessageID = 200
    /// worker to main: a job is done.
    static let jobDone: PortMessageID = 201
    /// main to worker: finish your run loop.
    static let quit: PortMessageID = 300
  }

  let id: Int
  let size: Int
  let channel: Channel

  /// The job's work: counts the primes below `size` (a millisecond or so of real CPU work).
  func run() -> Int {
    var count = 0
    var candidate = 2
    while candidate < size {
      var divisor = 2
      var prime = true
      while divisor * divisor <= candidate {
        if candidate % divisor == 0 {
          prime = false
          break
        }
        divisor += 1
      }
      if prime { count += 1 }
      candidate += 1
    }
    return count
  }

  /// The job as port message components.
  var components: [[UInt8]] {
    [Self.bytes(of: id), Self.bytes(of: size), [channel.rawValue]]
  }

  /// Reads a job from port message components.
  init?(components: [[UInt8]]) {
    guard components.count == 3, let id = Self.integer(components[0]),
      let size = Self.integer(components[1]), let channelByte = components[2].first,
      let channel = Channel(rawValue: channelByte)
    else { return nil }
    self.init(id: id, size: size, channel: channel)
  }

  init(id: Int, size: Int, channel: Channel) {
    self.id = id
    self.size = size
    self.channel = channel
  }

  static func bytes(of value: Int) -> [UInt8] {
    // The job travels in a port message as its 8 little-endian bytes.
    withUnsafeBytes(of: Int64(value).littleEndian) { Array($0) }
  }

  static func integer(_ bytes: [UInt8]) -> Int? {
    guard bytes.count == 8 else { return nil }
    var value: Int64 = 0
    // The inverse of `bytes(of:)`: the 8 bytes copied into the integer's storage.
    withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes) }
    return Int(Int64(littleEndian: value))
  }
}
