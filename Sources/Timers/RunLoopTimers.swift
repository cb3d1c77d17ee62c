// The Timers module: timer sources on a run loop. See Docs/ for the design.
import RunLoopCore
