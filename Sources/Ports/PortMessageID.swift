/// The type of a message id on every port of this module: ``InProcessPort`` and its
/// ``LoopPortMessage``, ``NamedPort``, ``NamedPortServer`` and their messages and requests.
///
/// `Int32`, as `CFMessagePort`'s `SInt32` ids (the guide's `NSPortMessage` uses `uint32_t`;
/// one type for both kinds of port means an id can go from one to the other unconverted).
/// The named-port wire format carries the id's 32 bits as they are.
///
/// ```swift
/// let checkIn: PortMessageID = 100
/// try mainPort.send(msgid: checkIn, before: .now + .seconds(1))
/// ```
public typealias PortMessageID = Int32
