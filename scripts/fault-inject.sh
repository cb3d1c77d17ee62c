#!/usr/bin/env bash
# System-call fault injection: runs the demo service under strace with one system call made
# to fail (strace -f -e inject=SYSCALL:error=ERRNO:when=N) and checks the outcome: the call
# is retried (exit 0, complete log), surfaces as a typed error (exit 1, 71 or 73 with a
# message), or is counted as a loss (exit 74 with the figures). A hang (killed by timeout), a
# crash (a signal, "Fatal error") or a success that hides a loss fails the case.
#
#   bash scripts/fault-inject.sh            every case (a few minutes)
#   bash scripts/fault-inject.sh --quick    the subset scripts/test.sh runs (under a minute)
#   bash scripts/fault-inject.sh --table    every case, printed as the Markdown table of
#                                           Docs/RunLoopGuide.docc/Reliability.md
#
# Needs strace (scripts/ensure-deps.sh) and a built demo (swift build).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=${1:-all}
demo=${DEMO:-.build/debug/runloop-demo}
[ -x "$demo" ] || { echo "fault-inject: build first (no $demo)" >&2; exit 1; }
command -v strace >/dev/null || { echo "fault-inject: strace is missing (scripts/ensure-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# syscall errno when expected quick target
#   when: N (the Nth call), N+ (from the Nth on), N+S (the Nth, then every Sth); strace
#   counts the calls of each thread apart
#   expected: the outcomes allowed: retried, error, loss (several with |); - for a case
#   that cannot hold (below), run for the table and not judged
#   quick: in the subset scripts/test.sh runs (about 30 s together; every case that holds)
#   target: - for every call of that name; log or stdout for the calls on the JSON log or on
#   standard output only (strace -P: it injects into the calls it traces, and -P traces
#   only the calls on that path)
#
# Two cases inject what the kernel never returns, to show what then happens:
# - write EIO on every write (target -) fails the eventfd writes that wake the loops too,
#   which the kernel never fails with EIO (a non-blocking eventfd write fails only with
#   EAGAIN, at a count of 2^64-2). The wake-ups are lost: the workers never see their quit
#   message, the service leaves them at its 5 s join bound and exits 74 (its JSON log's
#   writes and every message to standard error failed too, so it says nothing).
# - futex EINTR cannot hold: strace's injection skips the call, and strace cannot tell a
#   FUTEX_WAKE from a FUTEX_WAIT (it does not filter on arguments). When it hits a FUTEX_WAKE
#   (an unlock, a semaphore's signal, the loop's sleep-word wake), the kernel never ran it:
#   glibc's futex_wake stops the process (__libc_fatal, "The futex facility returned an
#   unexpected error code.", exit 134) on an error the kernel never gives FUTEX_WAKE, and
#   its lll_unlock, which ignores the result, leaves the waiter asleep for ever (a hang, or
#   a run that ends well when no one waited). Which happens changes from run to run; no code
#   above glibc runs in between to retry. A FUTEX_WAIT interrupted for real returns EINTR,
#   which glibc, Dispatch and the loop's sleep word retry.
cases=(
  "epoll_create1 EMFILE 1 error yes -"
  "epoll_ctl ENOMEM 1 error yes -"
  "epoll_wait EINTR 2+3 retried yes -"
  "eventfd2 EMFILE 1 error yes -"
  "timerfd_create EMFILE 1 error yes -"
  "timerfd_settime ENOMEM 3 retried yes -"
  "signalfd4 ENOMEM 1 error yes -"
  "read EINTR 100+7 retried yes -"
  "write EINTR 5+5 retried yes -"
  "write EINTR 1+2 retried yes log"
  "write EIO 2+ loss yes log"
  "write ENOSPC 3+ loss yes log"
  "write EIO 2+ loss yes stdout"
  "write EIO 2+ loss yes -"
  "futex EINTR 10+50 - no -"
  "clone3 EAGAIN 1 loss|error yes -"
  "flock EINTR 1 retried|error yes -"
)

outcome() {
  # $1 exit status, $2 stderr file
  local status=$1 err=$2
  if grep -q "The futex facility returned an unexpected error code" "$err"; then
    echo glibc-abort
    return
  fi
  if grep -qE "Fatal error|Stack dump|Illegal instruction" "$err"; then echo crash; return; fi
  case $status in
    0) echo retried ;;
    124|137) echo hang ;;
    74) echo loss ;;
    1|64|71|73) echo error ;;
    *) if [ "$status" -gt 128 ]; then echo "crash"; else echo "exit$status"; fi ;;
  esac
}

failures=0
unjudged=0
ran=0
[ "$mode" = "--table" ] && {
  echo "| system call | error | when | outcome | what the demo said |"
  echo "|---|---|---|---|---|"
}
for entry in "${cases[@]}"; do
  read -r call errno when expected quick target <<<"$entry"
  [ "$mode" = "--quick" ] && [ "$quick" != yes ] && continue
  log="$work/trace.jsonl"
  rm -f "$log"
  err="$work/stderr"
  only=()
  case $target in
    log) only=(-P "$log") ;;
    stdout) only=(-P "$work/stdout") ;;
  esac
  timeout -k 5 40 strace -f -qq -o /dev/null "${only[@]}" -e trace="$call" \
    -e inject="$call":error="$errno":when="$when" \
    "$demo" run --duration 1.5 --no-journal --json-log "$log" --shutdown-timeout 3 \
    >"$work/stdout" 2>"$err"
  status=$?
  got=$(outcome "$status" "$err")
  # A clean exit must mean a complete log, and an error must say something.
  if [ "$got" = retried ] && ! grep -q "JSON log written" "$work/stdout"; then got="success-without-log"; fi
  if [ "$got" = error ] && [ ! -s "$err" ]; then got="silent-error"; fi
  said=$(grep -m1 -E "Error:|error|runloop-demo:|JSONLinesSink" "$err" | cut -c1-140 | tr '|' '/')
  [ -z "$said" ] && said=$(grep -m1 -E "JSON log" "$work/stdout" | cut -c1-140)
  said=$(printf '%s' "$said" | sed -e "s|$work|/tmp/…|g" -e 's/thread ([0-9]*)/thread (N)/')
  on=""
  [ "$target" != - ] && on=" ($target)"
  ran=$((ran + 1))
  verdict=ok
  if [ "$expected" = - ]; then
    verdict="not judged, see the script"
    unjudged=$((unjudged + 1))
  elif [[ "|$expected|" != *"|$got|"* ]]; then
    verdict=FAIL
    failures=$((failures + 1))
  fi
  if [ "$mode" = "--table" ]; then
    echo "| \`$call\`$on | $errno | $when | $got ($verdict) | ${said:-"(nothing)"} |"
  else
    printf '%-23s %-7s %-6s -> %-8s (exit %3s, expected %s) %s\n' \
      "$call$on" "$errno" "$when" "$got" "$status" "$expected" "$verdict"
    [ "$verdict" = FAIL ] && sed -n 1,5p "$err" | sed 's/^/    /'
  fi
done
judged=$((ran - unjudged))
echo "fault-inject: $((judged - failures)) of $judged cases as expected" \
  "($unjudged not judged: the injection cannot be held, see the script)"
[ "$failures" -eq 0 ]
