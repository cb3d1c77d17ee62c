#!/bin/sh
# Makes sure a systemd-journald answers on /run/systemd/journal/socket, for the tests of the
# journald sink. On a machine booted with systemd this does nothing; in a container without
# systemd it starts /lib/systemd/systemd-journald in the background and waits (up to about
# 10 s) until the socket accepts datagrams. Exit status 0 when a journal answers.
set -eu

SOCKET=/run/systemd/journal/socket
JOURNALD=${JOURNALD:-/lib/systemd/systemd-journald}

answers() {
  # Sends one harmless datagram; fails when the socket is absent or nobody listens.
  [ -S "$SOCKET" ] || return 1
  python3 - "$SOCKET" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
s.send(b"MESSAGE=ensure-journald probe\nPRIORITY=7\nSYSLOG_IDENTIFIER=ensure-journald\n")
PY
}

if answers; then
  exit 0
fi

if [ ! -x "$JOURNALD" ]; then
  echo "ensure-journald: $JOURNALD not found; install systemd" >&2
  exit 1
fi

mkdir -p /run/systemd/journal /var/log/journal
# A stale socket from a journald that died would make journald fail to bind; remove it.
rm -f "$SOCKET" /run/systemd/journal/stdout /run/systemd/journal/dev-log
nohup "$JOURNALD" >/tmp/ensure-journald.log 2>&1 </dev/null &
echo "ensure-journald: started $JOURNALD (pid $!)" >&2

i=0
while [ $i -lt 100 ]; do
  if answers; then
    exit 0
  fi
  i=$((i + 1))
  sleep 0.1
done
echo "ensure-journald: journald did not answer on $SOCKET; see /tmp/ensure-journald.log" >&2
exit 1
