import Glibc

/// The commands that do not read signals through a signalfd (scenarios, trace tools) unblock
/// SIGTERM, SIGINT and SIGHUP, which `main.swift` blocked, so that Ctrl-C ends them as usual. Called
/// before they start any thread, so every thread they create inherits the default mask.
enum ForegroundSignals {
  /// Unblocks SIGTERM, SIGINT and SIGHUP in the calling thread.
  static func restoreDefault() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGHUP)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
  }
}
