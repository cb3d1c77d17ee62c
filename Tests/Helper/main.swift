import RunLoopCore

// The Ports module's subcommands (PortsHelper.swift).
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("ports-") {
  runPortsHelper(Array(CommandLine.arguments.dropFirst()))
}

// The Core module's subcommands (CoreHelper.swift).
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("core-") {
  runCoreHelper(Array(CommandLine.arguments.dropFirst()))
}

// The executor subcommands (ExecutorHelper.swift).
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("executor-") {
  runExecutorHelper(Array(CommandLine.arguments.dropFirst()))
}

// The spans' subcommands (SpansHelper.swift).
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("spans-") {
  runSpansHelper(Array(CommandLine.arguments.dropFirst()))
}

// The soak test (SoakHelper.swift, run by scripts/soak.sh).
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "soak" {
  runSoakHelper(Array(CommandLine.arguments.dropFirst()))
}

print("helper")
