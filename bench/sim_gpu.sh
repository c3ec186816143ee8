#!/bin/bash
# sim_gpu.sh OUT: the engine-speed table on the GPU machine in one go (bench/README.md says what is measured).
#   G1 (g1/scene_flat.xml, all 502 pairs) from LAFAN1 states at 1024 / 4096 / 8192 worlds: forward control
#   step (4 x 5 ms), recorded forward + backward, counts, per-stage times; MuJoCo C (all cores) and our CPU
#   engine (float32) on the same 4096 states; the humanoid from MuJoCo rollout states at 8192 worlds likewise;
#   MJX on the same states where jax and the mujoco-mjx wheel import (staged by ../shared/device/stage.sh
#   --peers); NCU=1 adds an Nsight Compute summary (occupancy, active threads per warp, stall reasons) of the
#   staged launch's constraint kernel and one backward kernel at 4096 G1 worlds; NCU_SOURCE=1 adds, for the
#   constraint kernel, the full set with source lines (build with -DADJ_CUDA_LINEINFO=ON) and bench/ncu_source.py's
#   tables: stall samples and executed instructions per file, per function and per line, and the kernel's code size.
# Writes OUT/*.log (what each command printed), OUT/*.json (bench sim --json), OUT/*.states (start states for
# MJX) and OUT/summary.txt. Environment: ADJ (default build/adjoint; built here if missing), REPS (default 20),
# CPU_REPS (default 5), MJX_REPS (default 10), MJX_TIMEOUT (s per MJX run, default 240), NCU=1, DIV (divides
# every world count: DIV=64 is a quick dry run on a machine without a GPU).
# Needs the LAFAN1 clips on the asset path (../shared/device/stage.sh --motions; --peers for MJX's wheels) and
# zlib's headers when building (the LAFAN1 reader in motion/).
# Budget on an H200 with ~90 ms G1 control steps at 4096 worlds: about 3 minutes plus MJX's compiles.
set -u
out=${1:?usage: bench/sim_gpu.sh OUT}
mkdir -p "$out"
adj=${ADJ:-build/adjoint}
reps=${REPS:-20}
cpu_reps=${CPU_REPS:-5}
mjx_reps=${MJX_REPS:-10}
mjx_timeout=${MJX_TIMEOUT:-240}
assets=${ADJOINT_ASSETS:-../shared/assets}
div=${DIV:-1}
w1k=$((1024 / div)) w4k=$((4096 / div)) w8k=$((8192 / div))
if [ ! -x "$adj" ]; then
  echo "building $adj" | tee "$out/build.log"
  { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build build -j"$(nproc)" --target adjoint; } >>"$out/build.log" 2>&1 || { echo "build failed: $out/build.log"; exit 1; }
fi
{ date -u; git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null;
  echo "cpu cores: $(nproc)"; } >"$out/machine.txt"
run() {  # name, then bench sim arguments
  local name=$1
  shift
  echo "== $name: $adj bench sim $*" | tee -a "$out/summary.txt"
  "$adj" bench sim "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1
  local rc=$?
  grep -E "^(states|ours|MuJoCo)|per world-substep|per stage" "$out/$name.log" | tee -a "$out/summary.txt"
  [ $rc -eq 0 ] || echo "   (exit $rc, see $name.log)" | tee -a "$out/summary.txt"
}
g1=g1/scene_flat.xml
hum=humanoid/humanoid.xml
# G1 at 4096 first, with the CPU engines on the same states and the states written for MJX
run g1_4096 $g1 --states lafan1 --nworld $w4k --grad 4 --reps "$reps" --stages --cpu-nworld $w4k \
  --cpu-reps "$cpu_reps" --write-states "$out/g1_4096.states"
run g1_1024 $g1 --states lafan1 --nworld $w1k --grad 4 --reps "$reps" --stages --no-cpu --no-mujoco
run g1_8192 $g1 --states lafan1 --nworld $w8k --grad 4 --reps "$reps" --stages --no-cpu --no-mujoco
run humanoid_8192 $hum --states rollout --nworld $w8k --grad 4 --reps "$reps" --stages --cpu-nworld $w8k \
  --cpu-reps "$cpu_reps" --write-states "$out/humanoid_8192.states"
# MJX on the same states (its own untimed control step first, as ours)
if python3 -c "import jax, mujoco.mjx" >/dev/null 2>&1; then
  for spec in "g1_4096 $g1" "humanoid_8192 $hum"; do
    set -- $spec
    echo "== mjx_$1" | tee -a "$out/summary.txt"
    timeout "$mjx_timeout" python3 bench/mjx_bench.py "$assets/$2" "$out/$1.states" 4 "$mjx_reps" \
      --json "$out/mjx_$1.json" >"$out/mjx_$1.log" 2>&1 || echo "   (MJX failed or timed out, see mjx_$1.log)"
    grep "^MJX" "$out/mjx_$1.log" | tee -a "$out/summary.txt"
  done
else
  echo "== MJX: jax or mujoco.mjx not importable here: skipped" | tee -a "$out/summary.txt"
fi
# Nsight Compute: the staged launch's constraint kernel (its 9th launch: the first timed warm-up, after the untimed
# and the counting control steps) and the first backward smooth kernel, 4096 G1 worlds; stall reasons as warps
# stalled per issued instruction
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  for spec in "k_sub_constraint 8" "k_bwd_smooth 0"; do
    set -- $spec
    echo "== ncu $1 (4096 G1 worlds)" | tee -a "$out/summary.txt"
    ncu --kernel-name "$1" --launch-skip "$2" --launch-count 1 \
      --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      "$adj" bench sim $g1 --states lafan1 --nworld $w4k --grad 4 --reps 2 --no-cpu --no-mujoco >"$out/ncu_$1.log" 2>&1 ||
      echo "   (ncu failed, see ncu_$1.log)"
    grep -E "Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Active Threads Per Warp|Warp Cycles Per Issued|Executed Ipc A|Duration|DRAM Throughput" \
      "$out/ncu_$1.log" | tee -a "$out/summary.txt"
    # the five largest stall reasons
    grep -E "issue_stalled_.*ratio" "$out/ncu_$1.log" | awk '{print $NF, $1}' | sort -gr | head -5 | tee -a "$out/summary.txt"
  done
fi
# Nsight Compute with source lines: where the constraint kernel's stall samples and instructions fall (the report
# is tens of MB: left in OUT as a file to open in the Nsight Compute GUI)
if [ "${NCU_SOURCE:-0}" = 1 ] && command -v ncu >/dev/null; then
  echo "== ncu k_sub_constraint, source lines (4096 G1 worlds)" | tee -a "$out/summary.txt"
  ncu --clock-control none --kernel-name k_sub_constraint --launch-skip 8 --launch-count 1 --set full \
    --import-source yes -f -o "$out/ncu_constraint" \
    "$adj" bench sim $g1 --states lafan1 --nworld $w4k --grad 4 --reps 2 --no-cpu --no-mujoco \
    >"$out/ncu_source.log" 2>&1 || echo "   (ncu failed, see ncu_source.log)"
  ncu -i "$out/ncu_constraint.ncu-rep" --page source --csv --print-source=cuda,sass >"$out/ncu_source.csv" &&
    python3 bench/ncu_source.py "$out/ncu_source.csv" --top 30 | tee -a "$out/summary.txt"
fi
echo "logs in $out"
