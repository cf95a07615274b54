#!/usr/bin/env bash
# Smoke test in a real terminal: start the dashboard in tmux at 80x24 on a sample log,
# check all nine signal labels and an alert rule id are on screen, open help (?), quit (q).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG="${1:-sample_logs/gap-jump.log}"
RULE="${2:-out-of-range}"
SOCK="grpo-smoke-$$"
PY="${PYTHON:-.venv/bin/python}"
t() { tmux -L "$SOCK" "$@"; }
cleanup() { t kill-server 2>/dev/null || true; }
trap cleanup EXIT
t new-session -d -s app -x 80 -y 24 "exec env -u NO_COLOR $PY -m grpo_tui '$LOG'"
t set -sg escape-time 0
wait_for() {  # wait_for TEXT [seconds]
  local end=$((SECONDS + ${2:-15}))
  until t capture-pane -p -t app | grep -qF -- "$1"; do
    if ((SECONDS > end)); then echo "FAIL: '$1' not on screen"; t capture-pane -p -t app; exit 1; fi
    sleep 0.1
  done
}
wait_for "zero-std group"
for label in "reward" "answer length" "cut share" "log-prob gap" "KL to engine" \
             "gradient norm" "clip fraction" "rollout time" "zero-std group"; do
  wait_for "$label" 2
done
wait_for "$RULE" 5
t send-keys -t app '?'
wait_for "grpo-tui keys" 5
t send-keys -t app Escape
sleep 0.3
t send-keys -t app q
end=$((SECONDS + 10))
while t has-session -t app 2>/dev/null && t list-panes -t app -F '#{pane_dead}' | grep -q 0; do
  if ((SECONDS > end)); then echo "FAIL: app did not quit"; exit 1; fi
  sleep 0.1
done
echo "OK: tmux smoke passed ($LOG)"
