import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// Two user ids with no account needed: `setpriv` switches to any number.
private let allowedUser: uid_t = 65534
private let otherUser: uid_t = 65533

/// Whether this run can play another user (root, with setpriv); says why when it cannot.
private func canPlayOtherUsers() -> Bool {
  guard getuid() == 0, access("/usr/bin/setpriv", X_OK) == 0 else {
    print("skipped: playing another user needs root and /usr/bin/setpriv")
    return false
  }
  return true
}

@Suite("Named ports and other users", .serialized)
struct NamedPortOtherUsersTests {
  /// A server whose allowedUIDs names another user serves that user's process, and refuses a
  /// third user by its uid (the server sees and counts the refusal: the file system did not
  /// stop it first).
  @Test func allowedOtherUserIsServedAndAThirdUserIsRefusedByUid() throws {
    guard canPlayOtherUsers() else { return }
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(
      name: "shared", registry: temporary.registry, allowedUIDs: [getuid(), allowedUser]
    ) { message in Array("hello ".utf8) + message.data }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let allowed = try HelperProcess(
      ["ports-request", temporary.directory, "shared", "1", "nobody"], setprivUser: allowedUser)
    #expect(allowed.readLine() == "reply:hello nobody")
    #expect(allowed.waitForExit() == 0)
    let other = try HelperProcess(
      ["ports-request", temporary.directory, "shared", "1", "intruder"], setprivUser: otherUser)
    #expect(other.readLine() == "error:peerRefused")
    #expect(other.waitForExit() == 1)
    #expect(server.statistics.peersRefused == 1)
    #expect(server.statistics.messagesHandled == 1)
    var info = stat()
    #expect(stat(temporary.registry.socketPath(for: "shared"), &info) == 0)
    #expect(info.st_mode & 0o777 == 0o666)
    #expect(stat(temporary.directory, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o711, "others may search the directory, not list or write it")
    try finish(thread)
    server.invalidate()
  }

  /// A server admitting another user in the per-user default registry makes its directory
  /// searchable (0711); the default registry is still accepted as private afterwards.
  @Test func defaultRegistryMadeSearchableForOtherUsersIsStillAccepted() throws {
    let registry = try PortNameRegistry.standard()
    var info = stat()
    #expect(stat(registry.directory, &info) == 0)
    let before = info.st_mode & 0o7777
    defer { chmod(registry.directory, before) }
    let name = "shared-default-\(getpid())"
    let server = try NamedPortServer(
      name: name, registry: registry, allowedUIDs: [getuid(), allowedUser]
    ) { _ in nil }
    defer {
      server.invalidate()
      unlink(registry.directory + "/" + name + ".lock")
    }
    #expect(stat(registry.directory, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o711)
    #expect(try PortNameRegistry.standard() == registry)
  }

  /// A server for this user alone keeps its socket 0600 and its directory private, so
  /// another user is stopped by the file system before any uid check.
  @Test func serverForItsOwnUserAloneKeepsSocketAndDirectoryPrivate() throws {
    guard canPlayOtherUsers() else { return }
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(name: "own", registry: temporary.registry) { _ in [] }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    var info = stat()
    #expect(stat(temporary.registry.socketPath(for: "own"), &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(stat(temporary.directory, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o700)
    let other = try HelperProcess(
      ["ports-request", temporary.directory, "own", "1", "x"], setprivUser: allowedUser)
    #expect(other.readLine()?.hasPrefix("error:") == true)
    #expect(other.waitForExit() == 1)
    #expect(server.statistics.peersRefused == 0)
    try finish(thread)
    server.invalidate()
  }

  /// A lock file planted as a symbolic link (by another user, in a directory they can
  /// write) is refused and not followed: no file appears where it points.
  @Test func lockFilePlantedAsASymbolicLinkIsRefusedAndNotFollowed() throws {
    let temporary = try TemporaryRegistry()
    let target = temporary.directory + "-target"
    let lockPath = temporary.directory + "/planted.lock"
    #expect(symlink(target, lockPath) == 0)
    if getuid() == 0 { lchown(lockPath, allowedUser, allowedUser) }
    #expect(throws: RunLoopError.invalidState("")) {
      try NamedPortServer(name: "planted", registry: temporary.registry) { _ in nil }
    }
    #expect(access(target, F_OK) != 0, "the server created a file through the planted link")
    unlink(target)
    #expect(!temporary.registry.isRegistered("planted"))
    #expect(access(temporary.registry.socketPath(for: "planted"), F_OK) != 0)
  }

  /// A lock file owned by another user is refused: that user could hold its lock and squat
  /// the name.
  @Test func lockFileOwnedByAnotherUserIsRefusedNotShared() throws {
    guard canPlayOtherUsers() else { return }
    let temporary = try TemporaryRegistry()
    let lockPath = temporary.directory + "/squatted.lock"
    let file = open(lockPath, O_RDWR | O_CREAT, 0o666)
    #expect(file >= 0)
    close(file)
    #expect(chown(lockPath, allowedUser, allowedUser) == 0)
    let error = #expect(throws: RunLoopError.invalidState("")) {
      try NamedPortServer(name: "squatted", registry: temporary.registry) { _ in nil }
    }
    #expect(error?.message.contains("uid \(allowedUser)") == true, "\(String(describing: error))")
    #expect(access(temporary.registry.socketPath(for: "squatted"), F_OK) != 0)
    // Once it is this user's own file again, the name can be registered.
    #expect(chown(lockPath, getuid(), getgid()) == 0)
    let server = try NamedPortServer(name: "squatted", registry: temporary.registry) { _ in nil }
    #expect(server.isValid)
    server.invalidate()
  }
}
