#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, starts journald when
# none answers, checks the spin models, runs every test, prints the line coverage of each
# module, builds the documentation, injects system-call failures into the demo (a quick
# subset of scripts/fault-inject.sh), runs a 40 s chaos soak of the demo, runs the tests
# again under ThreadSanitizer, fuzzes briefly, builds the benchmark in release mode, builds
# the peers' benchmark (Benchmarks/) and runs it briefly, builds and tests the OTLP export
# (Integrations/OTLP), and checks the formatting. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
bash scripts/ensure-deps.sh
step "journald"
bash scripts/ensure-journald.sh || echo "journald could not be started: its tests will say so" >&2

log=$(mktemp)
profiles=$(mktemp -d)
trap 'rm -rf "$log" "$profiles"' EXIT
# The debug build is instrumented for coverage: an instrumented program run outside
# `swift test` (the fault injection's demo, a snippet) writes its profile here, not into the
# working directory.
export LLVM_PROFILE_FILE="$profiles/%p-%m.profraw"

# The wake-up protocol's model, checked exhaustively (and each seeded bug found) by spin.
step "models (spin)"
bash scripts/check-models.sh

# Every test is a Swift Testing test; XCTest would only add an empty run to the output.
# With coverage: the test run reuses this build (the same flags), and its profile gives the
# coverage step its figures. The documentation step, which builds the libraries without
# coverage, comes after the tests so that it cannot make them rebuild.
step "build"
swift build --build-tests --enable-code-coverage
step "tests"
# The perform-queue line test checks that waiting tasks leave the Swift concurrency pool
# free; it needs a pool that other tests are not holding, so it runs on its own afterwards
# (outside the coverage profile, which a second coverage run would replace).
solo=PerformQueueLineTests
swift test --disable-xctest --enable-code-coverage --skip "$solo" 2>&1 | tee -a "$log"
swift test --disable-xctest --skip-build --filter "$solo" 2>&1 | tee -a "$log"
step "coverage (lines per module, no threshold)"
bash scripts/coverage.sh
step "documentation (DocC; fails on any warning)"
bash scripts/docs.sh .build/docs
# A subset of the system-call fault injection (scripts/fault-inject.sh runs every case).
step "fault injection (strace, quick subset)"
bash scripts/fault-inject.sh --quick
# A short chaos soak of the demo (scripts/chaos-soak.sh 1800 is the 30-minute one, by hand).
step "chaos soak (40 s: journald stopped and killed, logrotate, SIGHUP storms)"
bash scripts/chaos-soak.sh 40
step "tests under ThreadSanitizer"
# One report of the Swift runtime's is not ours to fix; the file says which, and why.
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-suppressions.txt"
swift test --disable-xctest --sanitize=thread --scratch-path .build-tsan --skip "$solo" 2>&1 \
  | tee -a "$log"
swift test --disable-xctest --sanitize=thread --scratch-path .build-tsan --skip-build \
  --filter "$solo" 2>&1 | tee -a "$log"
if grep -q "WARNING: ThreadSanitizer" "$log"; then
  echo "ThreadSanitizer reported a problem (see above)" >&2
  exit 1
fi

# A short run of every libFuzzer target (scripts/fuzz.sh runs them for longer by hand).
step "fuzz (20 s a target)"
bash scripts/fuzz.sh 20

if grep -q '"runloop-bench"' Package.swift; then
  step "benchmark build (release)"
  swift build -c release --product runloop-bench
fi

# The peers' benchmark is a package of its own (Benchmarks/, with swift-nio, libuv, GLib and
# sd-event). A debug build and a --quick run check that every side still builds and runs;
# its figures are not quoted (a release build of swift-nio would cost CI minutes).
step "peers benchmark (Benchmarks/: debug build, --quick smoke run)"
(cd Benchmarks && swift build --product runloop-peers && .build/debug/runloop-peers --quick)

# The OTLP export (Integrations/OTLP, with swift-otel): one debug build, then its test
# against the receiver on the official protocol definitions (the venv ensure-deps.sh made).
step "OTLP export (Integrations/OTLP: debug build, export test)"
(cd Integrations/OTLP && swift build --build-tests \
  && swift test --disable-xctest --skip-build 2>&1 | tee -a "$log")

step "format"
lint=$(swift format lint --strict --recursive Sources Tests Docs/Snippets Docs/Tutorial \
  Docs/RunLoopGuide.docc/Resources/Tutorial fuzz Package.swift Benchmarks/Sources \
  Benchmarks/Package.swift Integrations/OTLP/Sources Integrations/OTLP/Tests \
  Integrations/OTLP/Package.swift 2>&1)
if [ -n "$lint" ]; then
  echo "$lint"
  exit 1
fi
# One closing line for both runs: tests passed, tests failed.
passed=$(grep -oE 'Test run with [0-9]+ tests? in [0-9]+ suites? passed' "$log" | awk '{s += $4} END {print s + 0}')
failed=$(grep -cE '^✘ Test .* failed' "$log" || true)
echo "all checks passed"
echo "$passed passed, $failed failed"
