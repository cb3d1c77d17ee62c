#!/usr/bin/env bash
# Checks the Promela models in Models/ exhaustively with spin: builds each model's pan
# verifier with gcc and runs it; fails on any error (an assertion, an invalid end state such
# as a loop asleep through a wake-up, or a search that did not complete). Then seeds each bug
# a model lists (a `BUG_*` macro) and fails unless the verifier finds it, so a model that
# cannot fail proves nothing. Needs spin and gcc (scripts/ensure-deps.sh installs spin).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v spin >/dev/null 2>&1 || { echo "check-models: spin is missing (scripts/ensure-deps.sh)" >&2; exit 1; }
command -v gcc >/dev/null 2>&1 || { echo "check-models: gcc is missing" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs the verifier of `$1` built with the spin options `$2...`; prints pan's report.
verify() {
  local model=$1
  shift
  (
    cd "$work"
    rm -f pan pan.* ./*.trail
    cp "$OLDPWD/$model" model.pml
    spin "$@" -a model.pml >/dev/null
    gcc -O2 -DSAFETY -DMEMLIM=2048 -o pan pan.c
    ./pan -m1000000 2>&1
  )
}

status=0
for model in Models/*.pml; do
  report=$(verify "$model")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$report")
  states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' <<<"$report")
  if [ "$errors" != "0" ] || grep -q "Search not completed\|max search depth too small" <<<"$report"; then
    echo "$report"
    echo "check-models: $model FAILED" >&2
    status=1
    continue
  fi
  echo "check-models: $model holds ($states states, exhaustive)"
  for bug in $(grep -o 'BUG_[A-Z_]*' "$model" | sort -u); do
    report=$(verify "$model" "-D$bug")
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$report")
    if [ "$errors" = "0" ]; then
      echo "check-models: $model with $bug seeded: no error found, so the model proves nothing" >&2
      status=1
    else
      echo "check-models: $model with $bug seeded: found ($(grep -m1 '^pan:1:' <<<"$report"))"
    fi
  done
done
exit $status
