// The Ports module: port-based (version 1) input sources. See Docs/ for the design.
import RunLoopCore
