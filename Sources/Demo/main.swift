import Glibc
import RunLoopPorts

// The service reads SIGTERM, SIGINT and SIGHUP through a signalfd on the main run loop. A signal
// stays pending for a signalfd only while every thread blocks it, and threads inherit the
// mask of the thread that creates them, so block them here, before any thread exists.
// The commands that do not read signals unblock them again (see `ForegroundSignals`).
do {
  try SignalSource.block([SIGTERM, SIGINT, SIGHUP])
} catch {
  StandardStreams.error("runloop-demo: cannot block SIGTERM/SIGINT/SIGHUP: \(error)")
  exit(1)
}

DemoCommand.main()
