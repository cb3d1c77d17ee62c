#!/usr/bin/env bash
# Draws the pictures of one pass, and the timelines of lessons, in
# Docs/RunLoopGuide.docc/Resources from traces this script records: `runloop-demo scenario
# NAME --json-log` runs a scenario on real loops, `runloop-demo trace pass` draws one of its
# passes from the records' steps and `runloop-demo trace timeline` its timeline. The traces are
# kept beside this script, so the tests can check that each picture is the drawing of its
# trace.
#
#     bash Docs/images/pass-pictures.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build --product runloop-demo
demo="$(swift build --show-bin-path)/runloop-demo"
images=Docs/images
resources=Docs/RunLoopGuide.docc/Resources

# A call-out that runs the loop nested: the first pass that holds a nested run.
"$demo" scenario nested-runs --json-log "$images/pass-nested-runs.jsonl" >/dev/null
"$demo" trace pass "$images/pass-nested-runs.jsonl" --svg "$resources/pass-nested-run.svg"

# The command buffer of Figure 3-2 on a worker: pass 1 sleeps and is woken with nothing to
# handle at step 9 (the source was signalled, not yet performed); pass 2 fires it at step 4.
"$demo" scenario custom-source --json-log "$images/pass-custom-source.jsonl" >/dev/null
"$demo" trace pass "$images/pass-custom-source.jsonl" --svg "$resources/pass-woken.svg" \
  --iteration 1
"$demo" trace pass "$images/pass-custom-source.jsonl" --svg "$resources/pass-source.svg" \
  --iteration 2

# A port found ready before the sleep: the main loop's pass that handles 'own.port' at step 9
# went there from step 5 (it reported steps 2 and 3 only); the drawing marks step 5.
"$demo" scenario ports --json-log "$images/pass-ports.jsonl" >/dev/null
iteration=$(sed -n 's/.*"iteration":\([0-9]*\).*"callout_name":"own.port".*/\1/p' \
  "$images/pass-ports.jsonl" | head -1)
"$demo" trace pass "$images/pass-ports.jsonl" --svg "$resources/pass-port-ready.svg" \
  --iteration "$iteration" --loop 1

# A handler that bypasses the loop for 300 ms starves its timer; the same work in chunks
# lets the timer fire between them.
"$demo" scenario busy-handler --json-log "$images/timeline-busy-handler.jsonl" >/dev/null
"$demo" trace timeline "$images/timeline-busy-handler.jsonl" \
  --svg "$resources/timeline-busy-handler.svg"
