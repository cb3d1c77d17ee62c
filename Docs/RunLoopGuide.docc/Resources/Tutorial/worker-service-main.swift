// Sources/WorkerService/main.swift: each step of the tutorial is one function; call the
// step you are at. Top-level code, not an async main: the main thread stays yours.
try workerServiceStep1()
