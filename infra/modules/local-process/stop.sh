#!/usr/bin/env bash
# Stop the process group recorded in $PID_FILE: SIGTERM, then SIGKILL after $GRACE_S seconds.
# Env: NAME PID_FILE READY_FILE MATCH GRACE_S.
set -u
pid=$(cat "$PID_FILE" 2>/dev/null || true)

alive() { # any live (non-zombie) member of the process group?
  local p
  for p in $(pgrep -g "$pid" 2>/dev/null); do
    grep -q '^State:.*zombie' "/proc/$p/status" 2>/dev/null || return 0
  done
  return 1
}

leader_is_other() { # the pid was reused by a process that is not ours
  local cmdline
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) # empty for a zombie or a dead pid
  [ -n "$cmdline" ] && [[ "$cmdline" != *"$MATCH"* ]]
}

if [ -z "$pid" ] || ! alive; then
  echo "$NAME: not running"
elif leader_is_other; then
  echo "$NAME: pid $pid is not ours any more (no '$MATCH' in its command line); left alone"
else
  kill -TERM -- "-$pid" 2>/dev/null
  end=$((SECONDS + GRACE_S))
  while alive && ((SECONDS < end)); do sleep 0.2; done
  if alive; then
    echo "$NAME: still running after ${GRACE_S}s, sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  echo "$NAME: stopped (pid $pid)"
fi
rm -f "$PID_FILE" "$READY_FILE"
