#!/bin/sh
# A training run killed with SIGKILL (checkpoints every iteration, so the kill can land inside a write)
# leaves its latest complete checkpoint loadable: eval reads it and --resume continues from it.
set -eu
adj=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$adj" train configs/cartpole_ppo.yaml run.checkpoint_every=1 env.num_envs=16 --run-dir "$dir/r" \
  --max-iterations 100000 --quiet >"$dir/log" 2>&1 &
pid=$!
n=0
for _ in $(seq 1 600); do
  n=$(ls "$dir/r" 2>/dev/null | grep -c '^ckpt_[0-9]*\.h5$' || true)
  [ "$n" -ge 3 ] && break
  sleep 0.05
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
[ "$n" -ge 3 ] || { echo "no checkpoints written"; cat "$dir/log"; exit 1; }
latest=$(ls "$dir/r" | grep '^ckpt_[0-9]*\.h5$' | sort | tail -n 1)
echo "killed after $latest"
"$adj" eval "$dir/r" --episodes 1
it=$(echo "$latest" | sed 's/^ckpt_0*\([0-9]*\)\.h5$/\1/')
"$adj" train --resume "$dir/r" --max-iterations $((it + 1)) --quiet
ls "$dir/r" | grep -q "^ckpt_0*$((it + 1))\.h5$"
echo "resumed to iteration $((it + 1))"
