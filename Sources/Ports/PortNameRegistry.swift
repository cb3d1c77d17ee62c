import Glibc
import RunLoopCore

/// Where named ports live: a directory of Unix-domain sockets, one per registered name (the
/// role of `NSMessagePortNameServer`). A ``NamedPortServer`` registers a name here; a
/// ``NamedPort`` looks one up.
///
/// The default registry is `$XDG_RUNTIME_DIR/runloop-ports` (systemd makes
/// `$XDG_RUNTIME_DIR` per user, mode 0700), or `/tmp/runloop-ports-<uid>` without it. The
/// directory is created with mode 0700, and an existing one is used only if it is a real
/// directory (not a symbolic link) owned by the user with no read or write access for anyone
/// else (search access, mode 0711, is what a server admitting other users adds), so no
/// other user can plant or list sockets in it. Other users can only reach it when its
/// parents let them search too, which `$XDG_RUNTIME_DIR` does not: for a server that admits
/// other users, use a registry in a directory they can reach (``init(directory:)``).
///
/// ```swift
/// let registry = try PortNameRegistry.standard()
/// let server = try NamedPortServer(name: "com.example.main", registry: registry) { _ in nil }
/// print(registry.isRegistered("com.example.main"))  // true
/// ```
///
/// Next to each socket, a `<name>.lock` file carries an exclusive `flock` for as long as
/// the server lives. The kernel releases it when the process dies, however it dies: that is
/// how a stale socket left by a crashed process is told from a live one and reclaimed. A
/// lock file that is a symbolic link, or is not a regular file of this user, is refused
/// (``/RunLoopCore/RunLoopError/Code/invalidState``), never followed or shared.
public struct PortNameRegistry: Sendable, Hashable {
  /// The directory holding the sockets.
  ///
  /// ```swift
  /// print(registry.directory)  // "/run/user/1000/runloop-ports"
  /// ```
  public let directory: String

  /// The longest accepted name, in bytes.
  ///
  /// ```swift
  /// let fits = name.utf8.count <= PortNameRegistry.maximumNameLength
  /// ```
  public static let maximumNameLength = 64

  /// The per-user default registry, creating its directory if needed.
  ///
  /// ```swift
  /// let registry = try PortNameRegistry.standard()
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidState`` when the directory exists but is not
  ///   private to the user (another owner, group or world access, a symbolic link);
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when it cannot be created.
  public static func standard() throws(RunLoopError) -> PortNameRegistry {
    let base: String
    if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
      base = runtime + "/runloop-ports"
    } else {
      base = "/tmp/runloop-ports-\(getuid())"
    }
    let registry = try PortNameRegistry(directory: base)
    try registry.verifyPrivate()
    return registry
  }

  /// A registry in `directory`, created with mode 0700 if it does not exist. Use it to keep
  /// a group of ports apart (tests do). An existing directory's permissions are the caller's
  /// business, but it must be a real directory.
  ///
  /// ```swift
  /// let registry = try PortNameRegistry(directory: "/run/user/1000/my-app")
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a path that is not a
  ///   directory or too long for socket addresses;
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when it cannot be created.
  public init(directory: String) throws(RunLoopError) {
    // sun_path holds 108 bytes with the terminating 0; leave room for "/", a name and
    // ".sock".
    guard !directory.isEmpty, directory.utf8.count + 1 + Self.maximumNameLength + 5 < 108 else {
      throw .invalidArgument("registry directory '\(directory)' is empty or too long")
    }
    if mkdir(directory, 0o700) != 0 && errno != EEXIST {
      throw .systemCall("mkdir(\(directory))", errno: errno)
    }
    var info = stat()
    guard lstat(directory, &info) == 0 else {
      throw .systemCall("lstat(\(directory))", errno: errno)
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw .invalidArgument("registry path '\(directory)' is not a directory")
    }
    self.directory = directory
  }

  /// The socket path for `name` (whether or not it is registered): where servers bind and
  /// ports connect.
  package func socketPath(for name: String) -> String { "\(directory)/\(name).sock" }

  /// Whether a live server holds `name` right now.
  ///
  /// ```swift
  /// if registry.isRegistered("com.example.main") { print("taken") }
  /// ```
  public func isRegistered(_ name: String) -> Bool {
    guard (try? Self.validate(name)) != nil else { return false }
    let descriptor = open(lockPath(for: name), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    // If we can take the lock, nobody holds it.
    if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
      flock(descriptor, LOCK_UN)
      return false
    }
    return true
  }

  func lockPath(for name: String) -> String { "\(directory)/\(name).lock" }

  /// Names are 1 to 64 bytes of letters, digits, `.`, `_` and `-`, not starting with `.`.
  static func validate(_ name: String) throws(RunLoopError) {
    let allowed = name.utf8.allSatisfy { byte in
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
        || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x5F || byte == 0x2D
    }
    guard !name.isEmpty, name.utf8.count <= maximumNameLength, allowed, !name.hasPrefix(".")
    else {
      // Escaped (as Swift writes a string literal): a NUL or an escape sequence printed raw
      // would cut or rewrite the message on a terminal.
      let shown = name.unicodeScalars.map { $0.escaped(asASCII: false) }.joined()
      throw .invalidName(
        "port name '\(shown)' must be 1-\(maximumNameLength) letters, digits, '.', '_' or '-'")
    }
  }

  private func verifyPrivate() throws(RunLoopError) {
    var info = stat()
    guard lstat(directory, &info) == 0 else {
      throw .systemCall("lstat(\(directory))", errno: errno)
    }
    // Search permission for others is allowed: a server serving other users adds it.
    guard info.st_uid == getuid(), info.st_mode & 0o066 == 0 else {
      throw .invalidState(
        "registry directory '\(directory)' must be owned by uid \(getuid()) with mode 0700"
          + " (or 0711)")
    }
  }

  /// Adds search permission for group and others to the directory, if this user owns it:
  /// they can then reach a socket whose name they know, not list or create entries.
  func letOthersSearch() {
    var info = stat()
    guard lstat(directory, &info) == 0, info.st_uid == geteuid(),
      info.st_mode & S_IFMT == S_IFDIR, info.st_mode & 0o011 != 0o011
    else { return }
    chmod(directory, (info.st_mode & 0o7777) | 0o011)
  }
}
