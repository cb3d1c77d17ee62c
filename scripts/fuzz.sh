#!/usr/bin/env bash
# Builds each libFuzzer target with `swiftc -sanitize=fuzzer,address` and runs it for a
# number of seconds. CI runs it briefly from scripts/test.sh; run it by hand for longer:
#
#   scripts/fuzz.sh                  # every target, 20 s each
#   scripts/fuzz.sh 900              # every target, 15 minutes each
#   scripts/fuzz.sh 600 frame-parser # one target
#
# A target is its harness (fuzz/<Harness>.swift, defining LLVMFuzzerTestOneInput) compiled
# together with the internal source files it exercises, so no module needs to expose them.
# Seeds live in fuzz/corpus/<target>/ (committed); what a run learns goes to
# .build-fuzz/corpus/<target>/ and is kept for the next run. A crash leaves its input in
# .build-fuzz/artifacts/<target>/ and makes the script fail, printing how to replay it.
set -euo pipefail
cd "$(dirname "$0")/.."

# One line per target: its name, its harness, then the sources it is compiled with.
targets=(
  "frame-parser fuzz/FrameParser.swift Sources/Ports/Frame.swift Sources/Ports/FrameReader.swift"
  "trace-log-reader fuzz/TraceLogReaderTarget.swift Sources/Tracing/TraceLogReader.swift Sources/Tracing/TraceLogReader+BadLine.swift Sources/Tracing/TraceRecord.swift Sources/Tracing/TraceRecord+Kind.swift Sources/Tracing/TraceRecord+JSON.swift Sources/Tracing/LineBuffer.swift Sources/Core/RunLoopError.swift Sources/Core/RunLoopError+Code.swift"
)

seconds=${1:-${FUZZ_SECONDS:-20}}
shift || true
wanted=("$@")

# The fuzzer runtime ships with the Swift toolchain; say so plainly when it does not.
toolchain=$(dirname "$(dirname "$(command -v swiftc)")")
if ! ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 \
  && ! ls "$toolchain"/lib/swift/clang/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  echo "fuzz: the toolchain at $toolchain has no libFuzzer runtime (libclang_rt.fuzzer)" >&2
  exit 1
fi

# A misspelt target would otherwise run nothing and pass.
known=" ${targets[*]%% *} "
for name in "${wanted[@]}"; do
  if [[ "$known" != *" $name "* ]]; then
    echo "fuzz: no target '$name'; the targets are:$known" >&2
    exit 1
  fi
done

out=.build-fuzz
mkdir -p "$out"
status=0
for line in "${targets[@]}"; do
  read -r name harness sources <<<"$line"
  if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" $name "* ]]; then
    continue
  fi
  echo "fuzz: building $name"
  # shellcheck disable=SC2086 # the sources are a word list on purpose
  if ! swiftc -sanitize=fuzzer,address -parse-as-library -package-name swift_runloop -O -g \
    "$harness" $sources \
    -o "$out/$name" >"$out/$name.build.log" 2>&1; then
    cat "$out/$name.build.log" >&2
    echo "fuzz: $name does not build" >&2
    exit 1
  fi
  corpus="$out/corpus/$name"
  artifacts="$out/artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds=("fuzz/corpus/$name")
  echo "fuzz: running $name for $seconds s"
  if "$out/$name" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$out/$name.log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|Done)' "$out/$name.log" | sed "s/^/fuzz: $name: /"
  else
    tail -40 "$out/$name.log" >&2
    echo "fuzz: $name FAILED; replay with: $out/$name $artifacts/<crash file>" >&2
    status=1
  fi
done
exit $status
