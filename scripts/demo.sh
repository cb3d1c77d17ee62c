#!/usr/bin/env bash
# Builds and runs the demo service, from a fresh clone: installs what is missing, starts
# journald when none answers, then runs `runloop-demo` with the arguments given (by default
# `run --duration 10`: a main loop and two worker loops for ten seconds, traced to journald
# and to runloop-trace.jsonl in the current directory).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/ensure-journald.sh || echo "journald could not be started: the demo writes its JSON log only" >&2
swift build --product runloop-demo
if [ $# -eq 0 ]; then
  set -- run --duration 10
fi
exec "$(swift build --show-bin-path)/runloop-demo" "$@"
