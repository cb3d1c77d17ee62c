#!/usr/bin/env bash
# The chaos soak: the demo service (runloop-demo run, 4 workers) for SECONDS while its
# journald is stopped, killed and restarted at random, the real logrotate renames its JSON
# log (postrotate SIGHUP, which reopens it), and storms of SIGHUP arrive. At the end it sends
# SIGTERM and checks:
#   - the run exits 0 (its JSON log complete) within its shutdown bound;
#   - every record is in the rotated logs: record numbers 1..N, no hole, no repeat, no
#     broken line, and the run's last record is the main loop's exit;
#   - memory stays flat: resident size at the end at most 16 MiB above the one after warm-up;
#   - journald's share is accounted for: entries in the journal plus the losses the run
#     reports are never more than the records (nothing counted twice), and at most 1% of
#     the records are in neither (journald is best effort: what sat in its socket when it
#     was killed is lost without a report).
#
#   bash scripts/chaos-soak.sh          # 40 s (what scripts/test.sh runs)
#   bash scripts/chaos-soak.sh 1800     # the 30-minute soak, by hand
#   CHAOS_ACTIONS="rotate stop" bash scripts/chaos-soak.sh 60   # only some of the actions
#                                       # (rotate, storm, stop, kill; all by default)
#
# Needs root (a journald of its own, in a namespace), logrotate and a built demo
# (swift build; DEMO=path to use another). Exit status 0 when every check holds.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-40}
demo=${DEMO:-.build/debug/runloop-demo}
journald=/lib/systemd/systemd-journald
[ -x "$demo" ] || { echo "chaos-soak: build first (no $demo)" >&2; exit 1; }
[ -x "$journald" ] || { echo "chaos-soak: no $journald (scripts/ensure-deps.sh)" >&2; exit 1; }
command -v logrotate >/dev/null || { echo "chaos-soak: logrotate is missing (scripts/ensure-deps.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "chaos-soak: needs root for a journald of its own" >&2; exit 1; }

work=$(mktemp -d)
namespace="rlsoak$$"
socket="/run/systemd/journal.$namespace/socket"
dropin="/run/systemd/journald@$namespace.conf.d"
journal_pid=""
demo_pid=""
cleanup() {
  [ -n "$demo_pid" ] && kill -KILL "$demo_pid" 2>/dev/null
  [ -n "$journal_pid" ] && { kill -CONT "$journal_pid"; kill -TERM "$journal_pid"; } 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work" "$dropin" "/var/log/journal/"*".$namespace" "/run/log/journal/"*".$namespace"
}
trap cleanup EXIT

# journald's own rate limit would drop entries without anyone counting them: off. Each kill
# leaves a journal file behind, and journald deletes the oldest beyond 100 files: no limit.
mkdir -p "$dropin"
printf '[Journal]\nRateLimitIntervalSec=0\nStorage=volatile\nRuntimeMaxFiles=1000000\nRuntimeMaxUse=4G\n' \
  >"$dropin/soak.conf"

start_journald() {
  "$journald" "$namespace" </dev/null >/dev/null 2>&1 &
  journal_pid=$!
  for _ in $(seq 500); do [ -S "$socket" ] && return 0; sleep 0.02; done
  echo "chaos-soak: journald did not start" >&2
  exit 1
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

start_journald
log="$work/soak.jsonl"
identifier="runloop-soak-$$"
"$demo" run --workers 4 --json-log "$log" --journal-socket "$socket" \
  --identifier "$identifier" >"$work/out" 2>"$work/err" &
demo_pid=$!
cat >"$work/logrotate.conf" <<EOF
$log {
  rotate 100000
  missingok
  nocompress
  postrotate
    kill -HUP $demo_pid
  endscript
}
EOF

for _ in $(seq 300); do grep -q "workers checked in" "$work/out" && break; sleep 0.05; done
sleep 2
rss_start=$(rss_kib "$demo_pid")
echo "chaos-soak: $seconds s; demo pid $demo_pid, journald namespace $namespace, RSS after warm-up ${rss_start} KiB"

read -r -a actions <<<"${CHAOS_ACTIONS:-rotate storm stop kill}"
for action in "${actions[@]}"; do
  case $action in rotate | storm | stop | kill) ;; *)
    echo "chaos-soak: unknown action '$action' in CHAOS_ACTIONS (rotate, storm, stop, kill)" >&2
    exit 64
    ;;
  esac
done
rotations=0 storms=0 journald_stops=0 journald_restarts=0 rss_max=$rss_start
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
  kill -0 "$demo_pid" 2>/dev/null || { echo "chaos-soak: the demo ended early" >&2; break; }
  case ${actions[$((RANDOM % ${#actions[@]}))]} in
    rotate)
      logrotate -f -s "$work/logrotate.state" "$work/logrotate.conf" && rotations=$((rotations + 1))
      ;;
    storm)
      for _ in $(seq 20); do kill -HUP "$demo_pid" 2>/dev/null; done
      storms=$((storms + 1))
      ;;
    stop)
      kill -STOP "$journal_pid"
      sleep 0.$((RANDOM % 9 + 1))
      kill -CONT "$journal_pid"
      journald_stops=$((journald_stops + 1))
      ;;
    kill)
      kill -KILL "$journal_pid"
      wait "$journal_pid" 2>/dev/null
      sleep 0.$((RANDOM % 5 + 1))
      start_journald
      journald_restarts=$((journald_restarts + 1))
      ;;
  esac
  rss=$(rss_kib "$demo_pid")
  [ "$rss" -gt "$rss_max" ] && rss_max=$rss
  sleep 0.$((RANDOM % 5 + 3))
done
rss_end=$(rss_kib "$demo_pid")
kill -TERM "$demo_pid"
status=0
for _ in $(seq 600); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$demo_pid" 2>/dev/null; then
  echo "chaos-soak: the demo did not exit 30 s after SIGTERM" >&2
  status=1
fi
wait "$demo_pid"
exit_status=$?
demo_pid=""

failed=0
fail() {
  echo "chaos-soak: FAILED: $*" >&2
  failed=1
}
[ "$status" = 0 ] && [ "$exit_status" = 0 ] || fail "the demo exited $exit_status: $(tail -5 "$work/err")"
run_id=$(sed -n 's/.*RUNLOOP_RUN=\([0-9a-f]*\).*/\1/p' "$work/out" | head -1)
# The trace's records, not the sinks' reports of their drops (RUNLOOP_RECORD=drops) nor the
# demo's log lines (no RUNLOOP_RECORD).
journal_entries=$(journalctl --namespace="$namespace" --no-pager -o json "RUNLOOP_RUN=$run_id" \
  2>/dev/null | python3 -c '
import json, sys
print(sum(json.loads(line).get("RUNLOOP_RECORD") not in (None, "drops") for line in sys.stdin))')
journal_missed=$(sed -n 's/.*journald missed \([0-9]*\) trace entries.*/\1/p' "$work/err" | head -1)
check=$(python3 - "$log" <<'EOF'
import glob, json, sys
records, broken = [], 0
for path in glob.glob(sys.argv[1] + "*"):
    with open(path, "rb") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                broken += 1
seqs = sorted(r["seq"] for r in records)
holes = (seqs[-1] - len(set(seqs))) if seqs else 0
repeats = len(seqs) - len(set(seqs))
last = max(records, key=lambda r: r["seq"]) if records else {}
print(len(records), holes, repeats, broken, last.get("record"), last.get("activity"))
EOF
)
read -r records holes repeats broken last_kind last_activity <<<"$check"
[ "$holes" = 0 ] && [ "$repeats" = 0 ] && [ "$broken" = 0 ] \
  || fail "the logs have $holes missing, $repeats repeated and $broken broken records"
[ "$last_kind $last_activity" = "activity exit" ] || fail "the last record is '$last_kind $last_activity', not the exit"
[ -n "$run_id" ] || fail "the demo printed no run id, so its journal entries cannot be found"
unaccounted=$((records - journal_entries - ${journal_missed:-0}))
[ "$unaccounted" -ge 0 ] || fail "journald has $journal_entries entries and $journal_missed reported lost: more than the $records records"
# What sat in journald's socket at a kill is lost unreported: a few entries a kill. More than
# 1% of the records is a loss the run did not count.
[ "$unaccounted" -le $((records / 100)) ] \
  || fail "$unaccounted of $records records are neither in journald nor reported lost (bound 1%)"
growth=$((rss_end - rss_start))
[ "$growth" -le 16384 ] || fail "resident size grew by $growth KiB (bound 16384)"

printf 'chaos-soak: %s s: %d rotations, %d SIGHUP storms, journald stopped %d and killed %d times\n' \
  "$seconds" "$rotations" "$storms" "$journald_stops" "$journald_restarts"
printf 'chaos-soak: JSON log: %s records in %s files, none missing; exit status %s\n' \
  "$records" "$(ls "$log"* | wc -l)" "$exit_status"
printf 'chaos-soak: journald: %s entries found, %s reported lost, %s unaccounted (in its socket when killed)\n' \
  "$journal_entries" "${journal_missed:-0}" "$unaccounted"
printf 'chaos-soak: resident size: %s KiB after warm-up, %s KiB at the end, %s KiB at most\n' \
  "$rss_start" "$rss_end" "$rss_max"
[ "$failed" = 0 ] && echo "chaos-soak: passed"
exit "$failed"
