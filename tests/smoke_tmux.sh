#!/usr/bin/env bash
# Smoke test of the real binary in a real terminal: start the explorer in tmux, send keys,
# check the screen. Usage: tests/smoke_tmux.sh [BINARY]   (default target/debug/tokscope)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/tokscope}
# Neither the user's configuration nor what their last session showed.
state_dir=$(mktemp -d)
export TOKSCOPE_CONFIG="$state_dir/config.toml" TOKSCOPE_STATE="$state_dir/state.json"
session="tokscope-smoke-$$"
# A server of its own, kept up between the test's sessions by one that only waits: a server
# exits with its last session, and a session started while it exits fails ("server exited
# unexpectedly").
socket="tokscope-smoke-$$"
tmux() { command tmux -L "$socket" "$@"; }
tmux new-session -d -s keep-alive "sleep 3600"
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
trap 'tmux kill-server 2>/dev/null || true; rm -rf "$state_dir"' EXIT
tmux new-session -d -s "$session" -x 120 -y 40 "$bin; echo EXITED-\$?; sleep 5"
expect "rollouts 13/13"
expect "VERDICT"
tmux send-keys -t "$session" '?'
expect "keys —"
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
tmux kill-session -t "$session" 2>/dev/null || true

# Signals: TERM restores the terminal (echo and canonical mode back), exits 143, and `demo`
# removes its temporary store.
tmux new-session -d -s "$session" -x 120 -y 40 \
    "$bin demo --pace 0.2; echo EXITED-\$?; stty -a | grep -o ' echo ' ; sleep 5"
expect "● LIVE"
pid=$(pgrep -f "^$bin demo" | head -1)
demo_dir="${TMPDIR:-/tmp}/tokscope-demo-$pid"
[ -d "$demo_dir" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "smoke: no $demo_dir"; }
kill -TERM "$pid"
expect "EXITED-143"
expect " echo"
sleep 0.5
[ ! -e "$demo_dir" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "smoke: $demo_dir left behind"; }
tmux kill-session -t "$session" 2>/dev/null || true

# Replay watches the store too: R leaves replay for the store as it is now, live.
tmux new-session -d -s "$session" -x 120 -y 40 "$bin replay; echo EXITED-\$?; sleep 5"
expect "REPLAY call 1/"
tmux send-keys -t "$session" R
expect "● LIVE"
tmux send-keys -t "$session" q
expect "EXITED-0"
tmux kill-session -t "$session" 2>/dev/null || true

# A lost terminal (with SIGHUP ignored, as under nohup): the explorer ends instead of spinning.
tmux new-session -d -s "$session" -x 120 -y 40 "sh -c \"trap '' HUP; exec $bin\""
expect "VERDICT"
pid=$(pgrep -f "^$bin\$" | head -1)
tmux kill-session -t "$session"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    failed=$((failed + 1)); echo "smoke: explorer still running after its terminal closed"; kill -9 "$pid"
else
    passed=$((passed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
