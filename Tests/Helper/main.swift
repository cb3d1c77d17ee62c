import RunLoopCore

// The Ports module's subcommands (PortsHelper.swift).
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("ports-") {
  runPortsHelper(Array(CommandLine.arguments.dropFirst()))
}

print("helper")
