#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, starts journald when
# none answers, runs every test, runs it again under ThreadSanitizer, builds the benchmark
# in release mode and checks the formatting. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
bash scripts/ensure-deps.sh
step "journald"
bash scripts/ensure-journald.sh || echo "journald could not be started: its tests will say so" >&2

step "build"
swift build --build-tests
step "tests"
swift test
step "tests under ThreadSanitizer"
swift test --sanitize=thread --scratch-path .build-tsan

if grep -q '"runloop-bench"' Package.swift; then
  step "benchmark build (release)"
  swift build -c release --product runloop-bench
fi

step "format"
lint=$(swift format lint --strict --recursive Sources Tests Docs/Snippets Package.swift 2>&1)
if [ -n "$lint" ]; then
  echo "$lint"
  exit 1
fi
echo "all checks passed"
