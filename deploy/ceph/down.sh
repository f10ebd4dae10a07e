#!/usr/bin/env bash
# Stop the cluster deploy/ceph/up.sh started, by the PIDs it recorded
# (never by process name), unmount, and remove $TC_DIR (TC_KEEP=1 keeps it).
set -uo pipefail
DIR=${TC_DIR:-/tmp/tessera-ceph}
[ -d "$DIR" ] || exit 0
# The RADOS gateway first (up.sh with TC_RGW=1), while the cluster is up.
if pid=$(cat "$DIR/rgw.pid" 2>/dev/null) && [ -n "$pid" ] &&
  tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | head -1 | grep -q 'radosgw$'; then
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
fi
for n in 1 2; do
  mountpoint -q "$DIR/mnt$n" 2>/dev/null && { fusermount -u -z "$DIR/mnt$n" 2>/dev/null || umount -l "$DIR/mnt$n"; }
done
stop_pid() { # pidfile
  local f=$1 pid
  pid=$(cat "$f" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  # Only signal a process that is still one of ours (uses our conf dir).
  if [ -r "/proc/$pid/environ" ] && tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -q '^ceph'; then
    kill -"${2:-TERM}" "$pid" 2>/dev/null
  fi
}
for f in "$DIR"/pids/*; do [ -e "$f" ] && stop_pid "$f" "${TC_SIG:-TERM}"; done
for _ in $(seq 100); do
  alive=0
  for f in "$DIR"/pids/*; do pid=$(cat "$f" 2>/dev/null); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 0.2
done
for f in "$DIR"/pids/*; do [ -e "$f" ] && stop_pid "$f" KILL; done
sleep 0.2
[ "${TC_KEEP:-0}" = 1 ] || rm -rf "$DIR"
echo "ceph-down: stopped" >&2
