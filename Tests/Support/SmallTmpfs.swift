import Foundation
import Glibc

/// A real, small tmpfs mounted for one test: a full disk on demand. Needs root (CI runs as
/// root); ``SmallTmpfs/canMount`` says whether this machine allows it.
///
/// ```swift
/// let disk = try SmallTmpfs(kilobytes: 64)
/// defer { disk.unmount() }
/// let path = disk.path + "/trace.jsonl"
/// ```
public final class SmallTmpfs: @unchecked Sendable {
  /// The mount point.
  public let path: String
  private var mounted = true

  /// Whether a tmpfs can be mounted here (tried once, with a throwaway mount).
  public static let canMount: Bool = {
    guard getuid() == 0, let probe = try? SmallTmpfs(kilobytes: 16) else { return false }
    probe.unmount()
    return true
  }()

  /// Mounts a tmpfs of `kilobytes` on a fresh directory.
  public init(kilobytes: Int) throws {
    let directory =
      NSTemporaryDirectory() + "small-tmpfs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    guard mount("tmpfs", directory, "tmpfs", 0, "size=\(kilobytes)k,mode=0755") == 0 else {
      let error = errno
      rmdir(directory)
      throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EPERM)
    }
    path = directory
  }

  /// Unmounts and removes the mount point (lazily, should a descriptor still be open).
  public func unmount() {
    guard mounted else { return }
    mounted = false
    umount2(path, Int32(MNT_DETACH))
    rmdir(path)
  }

  deinit {
    unmount()
  }
}
