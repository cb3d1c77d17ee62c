#!/usr/bin/env bash
# Installs the Debian packages the project needs when they are missing: libsystemd-dev (the
# journald sink links libsystemd), pkg-config, systemd (for systemd-journald in tests),
# systemd-journal-remote (the test that ships a trace with systemd-journal-upload to
# systemd-journal-remote), librsvg2-bin (rsvg-convert, to look at timelines as PNG), tmux
# (the demo's countdown and top tests drive a terminal), and libuv1-dev and libglib2.0-dev
# (the peers that the Benchmarks package measures; it takes sd-event from libsystemd-dev),
# spin (the model checker scripts/check-models.sh runs on Models/), logrotate (the log
# rotation tests rotate the demo's JSON log with it), strace (scripts/fault-inject.sh
# injects system-call failures with it) and prometheus (the test that lets a real
# Prometheus scrape the demo's metrics endpoint); and, for the OTLP export test of
# Integrations/OTLP, a Python venv with opentelemetry-proto from PyPI (the receiver's protocol
# definitions), at ~/.cache/swift-runloop/otlp-venv.
# Does nothing when all are present.
set -euo pipefail

missing=()
dpkg -s libsystemd-dev >/dev/null 2>&1 || missing+=(libsystemd-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ -x /lib/systemd/systemd-journald ] || missing+=(systemd)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
dpkg -s libuv1-dev >/dev/null 2>&1 || missing+=(libuv1-dev)
dpkg -s libglib2.0-dev >/dev/null 2>&1 || missing+=(libglib2.0-dev)
[ -x /lib/systemd/systemd-journal-remote ] || missing+=(systemd-journal-remote)
command -v rsvg-convert >/dev/null 2>&1 || missing+=(librsvg2-bin)
command -v spin >/dev/null 2>&1 || missing+=(spin)
[ -x /usr/sbin/logrotate ] || missing+=(logrotate)
command -v strace >/dev/null 2>&1 || missing+=(strace)
[ -x /usr/bin/prometheus ] || missing+=(prometheus)

# The OTLP receiver's venv (Integrations/OTLP/receiver): its pinned requirements, once.
ensure_otlp_venv() {
  local venv="$HOME/.cache/swift-runloop/otlp-venv"
  local requirements
  requirements="$(dirname "$0")/../Integrations/OTLP/receiver/requirements.txt"
  if ! "$venv/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' \
    2>/dev/null; then
    echo "ensure-deps: creating $venv (opentelemetry-proto)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$requirements"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  ensure_otlp_venv
  exit 0
fi

echo "ensure-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  apt_get=(apt-get)
elif command -v sudo >/dev/null 2>&1; then
  apt_get=(sudo apt-get)
else
  echo "ensure-deps: need root to install ${missing[*]}; install them and run again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${apt_get[@]}" update -qq
"${apt_get[@]}" install -y -qq "${missing[@]}" >/dev/null
ensure_otlp_venv
