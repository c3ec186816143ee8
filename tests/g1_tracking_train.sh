#!/bin/bash
# g1_tracking_train.sh ADJOINT: the G1 tracking task through the trainer on the CPU, small (8 worlds, one clip,
# an 8-step horizon, 2 iterations) with the ∇Mimic and the PPO presets: each run exits 0, its gradients stay
# finite and nonzero through the foot contacts (SHAC: nonfinite_grads 0, action-gradient median > 0,
# constraint evaluations > 0), and `adjoint eval` reads its checkpoint; the adaptive sampler's metrics, and a
# stopped and resumed run's metrics equal to an uninterrupted one's. Skipped (77) without the clips or the G1.
set -u
A=$1
source "$(dirname "$0")/expect.sh"
if ! asset_dir lafan1_g1/walk1_subject1.csv.gz g1/scene_flat.xml >/dev/null; then
  echo "g1_tracking_train: LAFAN1 clips or G1 model not on the asset path: skipped"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P="env.params=residual=1, motion=lafan1_g1/walk1_subject1.csv.gz"
# the value of column NAME in row ROW (1 = the first iteration) of a metrics.csv
col() { awk -F, -v name="$2" -v row="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } NR == row + 1 { print $c }' "$1"; }
expect 0 "iteration 2/2" "$A" train configs/g1_tracking_nablamimic.yaml --device cpu --num-envs 8 --max-iterations 2 \
  --run-dir "$T/nm" run.eval_episodes=0 algo.horizon=8 "$P"
for r in 1 2; do
  check "nablamimic iteration $r: no non-finite gradient" test "$(col "$T/nm/metrics.csv" nonfinite_grads $r)" = 0
  check "nablamimic iteration $r: action gradients nonzero" \
    awk "BEGIN { exit !($(col "$T/nm/metrics.csv" action_grad_median $r) > 0) }"
  check "nablamimic iteration $r: evaluations with constraint rows" \
    awk "BEGIN { exit !($(col "$T/nm/metrics.csv" constraint_evals $r) > 0) }"
done
expect 0 "episodes 2 " "$A" eval "$T/nm" --episodes 2
# the adaptive sampler's metrics are logged, and a run stopped at iteration 1 and resumed to 2 writes the same
# metrics bit for bit (columns before env_steps_per_s: the sampler's shared state and the worlds' randomised
# parameters come back from the checkpoint)
check "sampler metrics logged" awk "BEGIN { exit !($(col "$T/nm/metrics.csv" sampler_entropy 2) > 0.9) }"
expect 0 "iteration 1/1" "$A" train configs/g1_tracking_nablamimic.yaml --device cpu --num-envs 8 --max-iterations 1 \
  --run-dir "$T/nr" run.eval_episodes=0 algo.horizon=8 "$P"
expect 0 "iteration 2/2" "$A" train --resume "$T/nr" --max-iterations 2
upto() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "env_steps_per_s") c = i - 1 } { s = $1; for (i = 2; i <= c; i++) s = s "," $i; print s }' "$1"; }
check "resumed run: metrics bitwise equal" cmp <(upto "$T/nm/metrics.csv") <(upto "$T/nr/metrics.csv")
expect 0 "iteration 2/2" "$A" train configs/g1_tracking_ppo.yaml --device cpu --num-envs 8 --max-iterations 2 \
  --run-dir "$T/ppo" run.eval_episodes=0 algo.horizon=8 "$P"
expect 0 "episodes 2 " "$A" eval "$T/ppo" --episodes 2
echo "g1_tracking_train: $((n - fails)) of $n checks passed"
[ "$fails" = 0 ]
