import CPeers

/// One column of the table: our loop, a peer a user would pick instead, or the floor.
enum Peer: String, CaseIterable, Codable, Sendable {
  case ours
  case libuv
  case sdEvent = "sd-event"
  case glib = "GLib"
  case nio = "NIO"
  case floor

  /// The C peers and the floor, as CPeers names them.
  var kind: peer_kind? {
    switch self {
    case .libuv: PEER_LIBUV
    case .sdEvent: PEER_SDEVENT
    case .glib: PEER_GLIB
    case .floor: PEER_FLOOR
    case .ours, .nio: nil
    }
  }
}
