// The Observers module: run-loop observers and tracing. See Docs/ for the design.
import RunLoopCore
