#!/usr/bin/env bash
# Line coverage per module, from the profile of a `swift test --enable-code-coverage` run
# (scripts/test.sh makes one): a small table, no threshold.
#
#   bash scripts/coverage.sh [BUILD_DIR]           BUILD_DIR defaults to .build/debug
#   bash scripts/coverage.sh --gaps MODULE [BUILD_DIR]
#                                                  every line of Sources/MODULE never run,
#                                                  as FILE:LINE and the line itself
#
# The counts are of the test binary and of the programs whose processes the tests start
# (each writes a profile of its own beside the test binary's, which `swift test` merges).
set -euo pipefail
cd "$(dirname "$0")/.."

gaps=""
if [ "${1:-}" = "--gaps" ]; then
  gaps=${2:?"usage: coverage.sh --gaps MODULE [BUILD_DIR]"}
  shift 2
fi
build=${1:-.build/debug}
profile="$build/codecov/default.profdata"
binary="$build/swift-runloopPackageTests.xctest"
[ -f "$profile" ] || { echo "coverage: no profile at $profile (swift test --enable-code-coverage)" >&2; exit 1; }
[ -f "$binary" ] || { echo "coverage: no test binary at $binary" >&2; exit 1; }
# The toolchain's llvm-cov: a distribution's older one cannot read the profile's format.
llvm_cov="$(dirname "$(command -v swift)")/llvm-cov"
[ -x "$llvm_cov" ] || llvm_cov=llvm-cov
objects=("$binary")
# The programs the tests run as processes of their own: the demo, the test helpers
# (Tests/Support/HelperProcess passes them the profile's pattern) and the guide's programs.
for program in runloop-demo RunLoopTestHelper RunLoopLifecycleHelper RunLoopAsyncMainHelper \
  RunLoopAllocationHelper RunLoopParityHelper runloop-snippets runloop-start-here runloop-tutorial; do
  [ -x "$build/$program" ] && objects+=(-object "$build/$program")
done

if [ -n "$gaps" ]; then
  [ -d "Sources/$gaps" ] || { echo "coverage: no module Sources/$gaps" >&2; exit 1; }
  "$llvm_cov" export -format=lcov "${objects[@]}" -instr-profile "$profile" "$PWD/Sources/$gaps" \
    | awk -F'[:,]' -v root="$PWD/" '
        /^SF:/ { file = substr($0, 4); sub(root, "", file); line = 0; delete text
                 while ((getline source < file) > 0) text[++line] = source; close(file) }
        /^DA:/ && $3 == 0 { printf "%s:%d %s\n", file, $2, text[$2] }'
  exit 0
fi

modules=(Core Timers Ports Observers Tracing TracingJournal Logging Spans Lifecycle Prometheus Demo)
printf '%-16s %8s %8s %8s\n' module lines missed covered
for module in "${modules[@]}"; do
  [ -d "Sources/$module" ] || continue
  # The TOTAL row: regions, missed, cover, functions, missed, executed, lines, missed, cover.
  total=$("$llvm_cov" report "${objects[@]}" -instr-profile "$profile" "$PWD/Sources/$module" \
    | awk '$1 == "TOTAL" { print $8, $9, $10 }')
  read -r lines missed cover <<<"${total:-0 0 -}"
  printf '%-16s %8s %8s %8s\n' "$module" "$lines" "$missed" "$cover"
done
