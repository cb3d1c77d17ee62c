#!/usr/bin/env bash
# The soak test (not part of the regular suite): floods one run loop with perform requests
# from several threads, port messages from two threads and signals for minutes, sampling its
# resident size every second, then drains and checks that nothing was lost and that memory
# stayed bounded (less than 32 MiB of growth after the first quarter). Release build.
#
#   scripts/soak.sh            # 3 minutes, 4 performing threads
#   scripts/soak.sh 600 8      # 10 minutes, 8 performing threads
#   scripts/soak.sh 30         # a quick check, 30 s
#   RUNLOOP_SOAK_NO_POLLING=1 scripts/soak.sh 30   # the loop never polls before it sleeps
#
# Exit status 0 when it passed. Its last figures are in Docs/RunLoopGuide.docc/Limits.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-180}
performers=${2:-4}
# -enable-testing: the helper imports RunLoopCore with @testable (its executor subcommands).
if ! log=$(swift build -c release -Xswiftc -enable-testing --product RunLoopTestHelper 2>&1); then
  echo "$log" >&2
  echo "soak: the helper does not build" >&2
  exit 2
fi
helper=$(swift build -c release -Xswiftc -enable-testing --show-bin-path)/RunLoopTestHelper
echo "soak: $seconds s, $performers performing threads, 2 port senders, 1 signaller"
exec "$helper" soak "$seconds" "$performers"
