import Foundation
import Glibc

/// A cgroup named like a systemd service, for a test's processes. journald rate-limits only
/// the entries it can charge to a unit, and it reads the unit from the sender's cgroup; on a
/// machine (or container) that systemd does not manage no process has one, so a test that
/// needs journald's limit puts its sender in a cgroup of this name.
///
/// ```swift
/// let unit = try UnitCGroup("flood")
/// defer { unit.remove() }
/// let result = try runProgram("/bin/sh", unit.command(["/usr/bin/logger", "hello"]))
/// ```
public struct UnitCGroup: Sendable {
  /// The unit name journald sees (`NAME-PID-RANDOM.service`).
  public let unit: String
  /// The cgroup's directory.
  public let path: String

  /// The cgroup v2 hierarchy journald reads units from: /sys/fs/cgroup/unified on a hybrid
  /// machine, /sys/fs/cgroup on a unified one; `nil` when there is none this process may
  /// write to (the v1 hierarchies carry no unit journald reads).
  public static let root: String? = {
    for candidate in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
    where access(candidate + "/cgroup.procs", W_OK) == 0 {
      // cgroup.subtree_control exists only in a cgroup v2 hierarchy.
      if access(candidate + "/cgroup.subtree_control", F_OK) == 0 { return candidate }
    }
    return nil
  }()

  /// Makes the cgroup (under ``root``).
  public init(_ name: String) throws {
    guard let root = Self.root else { throw POSIXError(.EACCES) }
    unit = "\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).service"
    path = root + "/" + unit
    guard mkdir(path, 0o755) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
  }

  /// Arguments for `/bin/sh` that join this cgroup, then run `arguments` (program first), so
  /// the program's first entry is already charged to the unit.
  public func command(_ arguments: [String]) -> [String] {
    ["-c", "echo $$ > '\(path)/cgroup.procs' && exec \"$@\"", "sh"] + arguments
  }

  /// Removes the cgroup once its processes are gone (up to 5 s).
  public func remove() {
    _ = eventually(5) { rmdir(path) == 0 || errno == ENOENT }
  }
}
