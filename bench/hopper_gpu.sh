#!/bin/bash
# hopper_gpu.sh OUT NAME=CONFIG[,key=value...] ...: the hopper measurement on a GPU (target: a mean forward
# speed >= 1.5 m/s with >= 90% of the evaluation episodes not terminated within 5 minutes of training). Trains
# every NAME at once with `--device cuda` (CONFIG a file of configs/, the rest dotted overrides or
# num_envs=N), each for LIMIT s of wall time (default 300), checkpointing every EVERY iterations (default
# 100); then evaluates, for each run, the checkpoints whose training wall time (metrics.csv `elapsed`) is
# within the limit, at most NEVAL of them spread over the run plus the last one (`adjoint eval --episodes 16`:
# deterministic policy, EMA weights where kept, on the CPU, in parallel). Runs sharing the GPU only slow each
# other down, so a figure within the limit here is within it alone too. Writes OUT/<name>/ (the runs),
# OUT/evals.csv (name, iteration, elapsed s, return, terminated fraction, forward speed m/s) and prints it.
# A run with run.eval_episodes > 0 (the trainer's own evaluation of each checkpoint, its evals.csv) also gets a
# row NAME_best: the checkpoint the trainer rated best (highest return on its draw 1) among those within the
# limit, evaluated here on adjoint eval's default draws (independent of the selection).
# COMPACT=1 packs metrics, configs and logs into OUT/runs.tgz and removes the run folders (fewer files to
# copy back from the GPU machine); KEEP="NAME ..." first copies each named run's best checkpoint within the limit to
# OUT/NAME_best.h5 where it has one, else its last evaluated checkpoint to OUT/NAME_last.h5.
set -u
out=$1
shift
adj=${ADJ:-build/adjoint}
limit=${LIMIT:-300}
every=${EVERY:-100}
neval=${NEVAL:-6}
device=${DEVICE:-cuda}  # cpu: a dry run without a GPU
mkdir -p "$out"
pids=""
for spec in "$@"; do
  name=${spec%%=*}
  rest=${spec#*=}
  cfg=${rest%%,*}
  args=""
  [ "$cfg" != "$rest" ] && args=$(echo "${rest#*,}" | tr ',' ' ')
  extra=""
  for a in $args; do
    case $a in num_envs=*) extra="$extra --num-envs ${a#num_envs=}" ;; *) extra="$extra $a" ;; esac
  done
  # shellcheck disable=SC2086
  timeout -s TERM $((limit + 5)) $adj train "configs/$cfg" --device "$device" --run-dir "$out/$name" \
    run.checkpoint_every=$every --max-iterations 1000000 --quiet $extra >"$out/train_$name.log" 2>&1 &
  pids="$pids $!"
done
wait $pids
echo "name,iteration,elapsed_s,return,terminated,forward_speed" >"$out/evals.csv"
jobs=""
for spec in "$@"; do
  name=${spec%%=*}
  dir=$out/$name
  [ -f "$dir/metrics.csv" ] || continue
  # checkpoints within the limit, NEVAL spread over them plus the last
  cks=$(for ck in "$dir"/ckpt_*.h5; do
    it=$(basename "$ck" .h5 | sed 's/ckpt_0*//')
    el=$(awk -F, -v it="$it" 'NR==1{for(i=1;i<=NF;i++) if($i=="elapsed") c=i} NR>1 && $1==it {print $c}' "$dir/metrics.csv")
    [ -n "$el" ] && awk -v e="$el" -v l="$limit" 'BEGIN{exit !(e <= l)}' && echo "$it:$el"
  done | awk -v n="$neval" '{a[NR]=$0} END{for(i=1;i<=NR;i++) if(i==NR || (i-1)%int((NR+n-1)/n)==0) print a[i]}')
  last=""
  for c in $cks; do last=$c; done
  [ -n "$last" ] && printf "%s/ckpt_%06d.h5 last\n" "$dir" "${last%%:*}" >"$out/.last_$name"
  if [ -f "$dir/evals.csv" ]; then  # the trainer's pick within the limit (evals.csv: iteration, env_steps, elapsed, return)
    best=$(awk -F, -v l="$limit" 'NR>1 && $3 <= l && (b == "" || $4 > r) {b = $1; r = $4; e = $3} END {if (b != "") print b ":" e}' "$dir/evals.csv")
    if [ -n "$best" ]; then
      printf "%s/ckpt_%06d.h5 best\n" "$dir" "${best%%:*}" >"$out/.last_$name"
      cks="$cks best$best"
    fi
  fi
  for c in $cks; do
    it=${c%%:*}
    el=${c#*:}
    row=$name
    case $it in best*) it=${it#best} row=${name}_best ;; esac
    ck=$(printf "%s/ckpt_%06d.h5" "$dir" "$it")
    (r=$($adj eval "$ck" --episodes 16 2>&1)
     ret=$(echo "$r" | sed -n 's/.*return \([-0-9.e+]*\).*/\1/p' | head -n1)
     term=$(echo "$r" | sed -n 's/.*terminated [0-9]*\/[0-9]* (\([0-9.]*\)).*/\1/p' | head -n1)
     spd=$(echo "$r" | sed -n 's/.*forward_speed \([-0-9.e+]*\).*/\1/p' | head -n1)
     echo "$row,$it,$el,$ret,$term,$spd" >>"$out/evals.csv") &
    jobs="$jobs $!"
  done
done
wait $jobs
for spec in "$@"; do
  name=${spec%%=*}
  [ -f "$out/$name/metrics.csv" ] || continue
  awk -F, -v p="$name" 'NR==1{for(i=1;i<=NF;i++){if($i=="time_iteration") c=i; if($i=="elapsed") e=i}} NR>2{print $c; last=$e; n=$1}
    END{}' "$out/$name/metrics.csv" | sort -g |
    awk -v p="$name" '{a[NR]=$1} END{printf "%s: median time_iteration %.4f s over %d iterations\n", p, a[int((NR+1)/2)], NR}'
done | tee "$out/timing.txt"
echo "== evals (name, iteration, elapsed s, return, terminated fraction, forward speed)"
(head -n1 "$out/evals.csv"; tail -n +2 "$out/evals.csv" | sort -t, -k1,1 -k2,2n)
if [ "${COMPACT:-0}" = 1 ]; then
  (cd "$out" && tar czf runs.tgz --exclude='*.h5' --exclude='events*' ./*/metrics.csv ./*/evals.csv ./*/config.yaml \
    ./train_*.log 2>/dev/null)
  for spec in "$@"; do
    name=${spec%%=*}
    case " ${KEEP:-} " in
      *" $name "*) [ -f "$out/.last_$name" ] && read -r ck kind <"$out/.last_$name" && cp "$ck" "$out/${name}_$kind.h5" ;;
    esac
    rm -rf "${out:?}/$name" "$out/train_$name.log" "$out/.last_$name"
  done
fi
