#!/usr/bin/env bash
# Start "$@" in its own session, detached from Terraform, then wait until $HEALTH_URL answers.
# Env: NAME RUN_DIR PID_FILE LOG_FILE READY_FILE HEALTH_URL READY_AFTER (seconds).
set -u
mkdir -p "$RUN_DIR"
if curl -fsS -o /dev/null --max-time 2 "$HEALTH_URL" 2>/dev/null; then
  echo "$NAME: $HEALTH_URL already answers: another process holds its port; stop it or pick another port" >&2
  exit 1
fi
rm -f "$PID_FILE" "$READY_FILE"
# local-exec's shell holds fds 3-5 (Terraform's output pipes): close them, or the caller waits forever.
setsid nohup "$@" >"$LOG_FILE" 2>&1 </dev/null 3>&- 4>&- 5>&- &
pid=$!
echo "$pid" >"$PID_FILE"
echo "$NAME: started (pid $pid), waiting for $HEALTH_URL"

deadline=$((SECONDS + READY_AFTER))
while ((SECONDS < deadline)); do
  if curl -fsS -o /dev/null --max-time 2 "$HEALTH_URL" 2>/dev/null; then
    touch "$READY_FILE"
    echo "$NAME: ready"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null || grep -q '^State:.*zombie' "/proc/$pid/status" 2>/dev/null; then
    echo "$NAME: the process exited before it was ready; last lines of $LOG_FILE:" >&2
    tail -n 30 "$LOG_FILE" >&2
    rm -f "$PID_FILE"
    exit 1
  fi
  sleep 0.5
done
echo "$NAME: not ready after ${READY_AFTER}s; stopping it. Last lines of $LOG_FILE:" >&2
tail -n 30 "$LOG_FILE" >&2
kill -KILL -- "-$pid" 2>/dev/null
rm -f "$PID_FILE"
exit 1
