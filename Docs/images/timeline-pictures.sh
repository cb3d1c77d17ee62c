#!/usr/bin/env bash
# Draws the timeline pictures of lessons in Docs/RunLoopGuide.docc/Resources from traces this
# script records: `runloop-demo scenario NAME --json-log` runs the lesson on real loops, and
# `runloop-demo trace timeline` draws the trace. The traces are kept beside this script, so
# the tests can check that each picture is the drawing of its trace.
#
#     bash Docs/images/timeline-pictures.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build --product runloop-demo
demo="$(swift build --show-bin-path)/runloop-demo"
images=Docs/images
resources=Docs/RunLoopGuide.docc/Resources

# A handler that bypasses the loop for 300 ms starves its timer; the same work in chunks
# lets the timer fire between them.
"$demo" scenario busy-handler --json-log "$images/timeline-busy-handler.jsonl" >/dev/null
"$demo" trace timeline "$images/timeline-busy-handler.jsonl" \
  --svg "$resources/timeline-busy-handler.svg"
