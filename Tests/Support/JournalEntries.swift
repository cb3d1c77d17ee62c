import Foundation

/// The journal entries that `journalctl` shows for `match` (field matches and options), after
/// `journalctl --sync`, as field dictionaries (fields with text values only).
///
/// ```swift
/// let entries = try journalEntries(["RUNLOOP_RUN=\(run)", "PRIORITY=4"])
/// ```
public func journalEntries(_ match: [String]) throws -> [[String: String]] {
  _ = try runProgram("/usr/bin/journalctl", ["--sync"])
  let result = try runProgram("/usr/bin/journalctl", ["-o", "json", "--no-pager"] + match)
  return try result.output.split(separator: "\n").map { line in
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    return (object ?? [:]).compactMapValues { $0 as? String }
  }
}
