#!/usr/bin/env bash
# Smoke test of the real binary in a real terminal: start the explorer in tmux, send keys,
# check the screen. Usage: tests/smoke_tmux.sh [BINARY]   (default target/debug/tokscope)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/tokscope}
session="tokscope-smoke-$$"
passed=0
failed=0
screen() { tmux capture-pane -t "$session" -p; }
expect() {  # expect TEXT: wait up to 5 s for TEXT on screen
    for _ in $(seq 50); do
        if screen | grep -qF -- "$1"; then passed=$((passed + 1)); return 0; fi
        sleep 0.1
    done
    failed=$((failed + 1))
    echo "smoke: expected '$1' on screen; got:"
    screen
}
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
tmux new-session -d -s "$session" -x 120 -y 40 "$bin; echo EXITED-\$?; sleep 5"
expect "rollouts 13/13"
expect "VERDICT"
tmux send-keys -t "$session" '?'
expect "keys — any key closes"
tmux send-keys -t "$session" Escape
tmux send-keys -t "$session" '/' 'mismatch' Enter
expect "rollouts 1/13"
tmux send-keys -t "$session" Tab G d
expect "DIVERGENCE"
expect "first difference at position"
tmux send-keys -t "$session" t
expect "WHAT-IF"
tmux resize-window -t "$session" -x 80 -y 24 2>/dev/null || true
expect "inspector"
tmux send-keys -t "$session" q
expect "EXITED-0"
tmux kill-session -t "$session" 2>/dev/null || true

# Live: the demo writes a store while the explorer watches it.
tmux new-session -d -s "$session" -x 120 -y 40 "$bin demo --pace 0.2; echo EXITED-\$?; sleep 5"
expect "● LIVE"
expect "in flight"
tmux send-keys -t "$session" Space
expect "PAUSED"
tmux send-keys -t "$session" Space
expect "● LIVE"
tmux send-keys -t "$session" R
expect "REPLAY"
tmux send-keys -t "$session" , ,
expect "REPLAY call"
tmux send-keys -t "$session" q
expect "EXITED-0"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
