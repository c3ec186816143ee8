#!/bin/bash
# cartpole_gpu.sh OUT [PRESET...]: the cartpole measurement on a GPU (target: a deterministic eval return >= 800
# within 60 s of training). For each preset (default: shac nablamimic = configs/cartpole_<preset>.yaml) it
# trains with `--device cuda` for at most LIMIT s (default 60) of wall time, checkpointing every EVERY
# iterations (default 25), while a watcher evaluates the newest checkpoint with `adjoint eval --episodes 16`
# (deterministic policy, CPU) and stops the run at the first mean return >= TARGET (default 800). Writes
# OUT/<preset>/ (the run), OUT/evals.csv (preset, iteration, elapsed training wall time from metrics.csv, eval
# return) and prints a short table.
# CPU_ITERS > 0 (default 20) also times the CPU path of each preset on this machine (median time_iteration).
set -u
out=$1
shift
presets=${*:-shac nablamimic}
adj=${ADJ:-build-gpu/adjoint}
limit=${LIMIT:-60}
every=${EVERY:-25}
target=${TARGET:-800}
cpu_iters=${CPU_ITERS:-20}
device=${DEVICE:-cuda}  # cpu: a dry run of this script without a GPU
mkdir -p "$out"
echo "preset,iteration,elapsed_s,eval_return" >"$out/evals.csv"
for p in $presets; do
  dir=$out/$p
  $adj train configs/cartpole_$p.yaml --device $device --run-dir "$dir" run.checkpoint_every=$every \
    --max-iterations 1000000 --quiet >"$out/train_$p.log" 2>&1 &
  pid=$!
  t0=$(date +%s)
  last=""
  while kill -0 $pid 2>/dev/null; do
    if [ $(($(date +%s) - t0)) -gt $((limit + 10)) ]; then kill $pid; break; fi
    ck=$(ls "$dir"/ckpt_*.h5 2>/dev/null | sort | tail -n1)
    if [ -n "$ck" ] && [ "$ck" != "$last" ]; then
      last=$ck
      it=$(basename "$ck" .h5 | sed 's/ckpt_0*//')
      el=$(awk -F, -v it="$it" 'NR==1{for(i=1;i<=NF;i++) if($i=="elapsed") c=i} NR>1 && $1==it {print $c}' "$dir/metrics.csv")
      r=$($adj eval "$ck" --episodes 16 2>&1 | sed -n 's/.*return \([-0-9.]*\).*/\1/p' | head -n1)
      echo "$p,$it,$el,$r" | tee -a "$out/evals.csv"
      if [ -n "$r" ] && [ -n "$el" ] && awk -v r="$r" -v t="$target" -v e="$el" -v l="$limit" 'BEGIN{exit !(r >= t || e > l)}'; then
        kill $pid 2>/dev/null
        break
      fi
    fi
    sleep 0.2
  done
  wait $pid 2>/dev/null
  if [ "$cpu_iters" -gt 0 ]; then
    $adj train configs/cartpole_$p.yaml --device cpu --run-dir "$out/cpu_$p" --max-iterations $cpu_iters --quiet \
      >"$out/cpu_$p.log" 2>&1
    awk -F, -v p="$p" 'NR==1{for(i=1;i<=NF;i++){if($i=="time_iteration") c=i}} NR>2{print $c}' "$out/cpu_$p/metrics.csv" |
      sort -g | awk -v p="$p" '{a[NR]=$1} END{printf "cpu %s: median time_iteration %.4f s over %d iterations\n", p, a[int((NR+1)/2)], NR}' |
      tee -a "$out/cpu_timing.txt"
  fi
  awk -F, -v p="$p" 'NR==1{for(i=1;i<=NF;i++){if($i=="time_iteration") c=i}} NR>2{print $c}' "$dir/metrics.csv" |
    sort -g | awk -v p="$p" '{a[NR]=$1} END{printf "'"$device"' %s: median time_iteration %.4f s over %d iterations\n", p, a[int((NR+1)/2)], NR}' |
    tee -a "$out/cpu_timing.txt"
done
echo "== evals (preset, iteration, elapsed s, eval return)"
cat "$out/evals.csv"
