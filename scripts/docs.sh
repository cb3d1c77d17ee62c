#!/usr/bin/env bash
# Builds the documentation: one DocC archive that combines the guide (the articles and the
# tutorial in Docs/RunLoopGuide.docc) with the library modules' symbol pages, transformed for
# static hosting, into the folder given as $1 (default .build/docs). Any warning from DocC or
# from the build fails it, so a broken symbol link or a missing image cannot land.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-.build/docs}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

targets=(RunLoopGuide RunLoopCore RunLoopTimers RunLoopPorts RunLoopObservers RunLoopTracing RunLoopJournal RunLoopLogging RunLoopPrometheus RunLoopSpans RunLoopLifecycle)
args=()
for target in "${targets[@]}"; do args+=(--target "$target"); done

swift package --allow-writing-to-directory "$out" generate-documentation "${args[@]}" \
  --enable-experimental-combined-documentation --transform-for-static-hosting \
  --output-path "$out" 2>&1 | tee "$log"

# swift-distributed-tracing 1.7.3's manifest leaves each target's CMakeLists.txt unhandled,
# and SwiftPM warns of it at every build; nothing in this package can change that manifest.
if grep "warning:" "$log" \
  | grep -qv "^warning: 'swift-distributed-tracing': found 1 file(s) which are unhandled"; then
  echo "the documentation build printed warnings (above)" >&2
  exit 1
fi
echo "documentation in $out (serve it with any static web server; start at index.html)"
