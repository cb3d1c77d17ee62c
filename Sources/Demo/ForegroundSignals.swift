import Glibc

/// The commands that do not read signals through a signalfd (scenarios, trace tools) unblock
/// SIGTERM and SIGINT, which `main.swift` blocked, so that Ctrl-C ends them as usual. Called
/// before they start any thread, so every thread they create inherits the default mask.
enum ForegroundSignals {
  /// Unblocks SIGTERM and SIGINT in the calling thread.
  static func restoreDefault() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
  }
}
