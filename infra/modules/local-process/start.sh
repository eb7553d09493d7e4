#!/usr/bin/env bash
# Start "$@" in its own session, detached from Terraform, then wait until it serves.
# Env: NAME RUN_DIR PID_FILE LOG_FILE READY_FILE HEALTH_URL READY_AFTER (seconds), READY_CMD (a
# quoted command line that succeeds once the process serves; empty = GET $HEALTH_URL answers 2xx).
set -u
mkdir -p "$RUN_DIR"

serving() {
  if [ -n "${READY_CMD:-}" ]; then
    eval "$READY_CMD" >/dev/null 2>&1
  else
    curl -fsS -o /dev/null --max-time 2 "$HEALTH_URL" 2>/dev/null
  fi
}

if serving; then
  echo "$NAME: $HEALTH_URL already answers: another process holds its port; stop it or pick another port" >&2
  exit 1
fi
rm -f "$PID_FILE" "$READY_FILE"
# local-exec's shell holds fds 3-5 (Terraform's output pipes): close them, or the caller waits forever.
setsid nohup "$@" >"$LOG_FILE" 2>&1 </dev/null 3>&- 4>&- 5>&- &
pid=$!
echo "$pid" >"$PID_FILE"
echo "$NAME: started (pid $pid), waiting for $HEALTH_URL"

# Interrupted while waiting (Ctrl-C reaches this shell with Terraform): the process is not created
# as far as Terraform knows, so it must not outlive this script. stop.sh gives it a grace period
# (a SIGKILLed `llm serve` would orphan vLLM's engine). A SIGKILL cannot be trapped: then the pid
# file stays, and `voicemesh down` finds the process by it.
trap 'echo "$NAME: interrupted, stopping it" >&2; MATCH="" GRACE_S=10 bash "$(dirname "$0")/stop.sh" >&2; exit 130' INT TERM HUP

deadline=$((SECONDS + READY_AFTER))
while ((SECONDS < deadline)); do
  if serving; then
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
  sleep 0.2
done
echo "$NAME: not ready after ${READY_AFTER}s; stopping it. Last lines of $LOG_FILE:" >&2
tail -n 30 "$LOG_FILE" >&2
kill -KILL -- "-$pid" 2>/dev/null
rm -f "$PID_FILE"
exit 1
