#!/bin/bash
# gpu_sanitize.sh [BUILD_DIR]: the GPU tests (ctest label gpu) under compute-sanitizer's memcheck and racecheck,
# for a machine with an NVIDIA GPU and the CUDA toolkit. Each test executable runs once per tool; the sanitizer's
# --error-exitcode makes any finding fail it. The sanitizers slow kernels 10-100x, so the tests run at their
# reduced size (ADJ_GPU_TEST_SMALL=1, tests/gpu_test_size.h; ADJ_GPU_TEST_SMALL=0 runs the full size): TESTS (a
# ctest -R regex) picks tests, TIMEOUT (seconds, default 1800) bounds each run. KERNELS (a compute-sanitizer kernel
# filter, e.g. kns=k_: every kernel of ours is named k_*) limits the checks to the kernels it names, so that
# cuBLASLt's GEMMs, which dominate racecheck's time in the nn and algo tests, run uninstrumented; KERNELS_EXCLUDE
# (e.g. kns=k_env) leaves out the kernels it names, so that a test's kernels can be checked in two runs, each in
# its own time limit (racecheck checks each launch on its own: the two runs together check every launch once).
# NN_CUDA_TUNE_FP32=1 (tests/nn_cuda_tune.c) leaves out its TF32 runs. Prints one line
# per test and tool with its time; exits 1 if any failed. ALGO_CUDA_GRAD_CASE=i (tests/algo_cuda_grad.c) runs one of
# algo_cuda_grad's five checks.
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
CS=${COMPUTE_SANITIZER:-compute-sanitizer}
command -v "$CS" >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
# line-buffered output (the tests print as they go): a run cut by TIMEOUT still shows how far its test got
SB=""; command -v stdbuf >/dev/null && SB="stdbuf -oL"
export ADJOINT_ASSETS=${ADJOINT_ASSETS:-}
export ADJ_GPU_TEST_SMALL=${ADJ_GPU_TEST_SMALL:-1}
fail=0
# ctest -N -L gpu -V lists each test's command line
tests=$(ctest --test-dir "$B" -N -V -L gpu ${TESTS:+-R "$TESTS"} | sed -nE 's/^[0-9]+: Test command: (.*)$/\1/p')
[ -n "$tests" ] || { echo "gpu_sanitize: no gpu tests in $B (configure with CUDA)"; exit 1; }
while IFS= read -r cmd; do
  name=$(basename "${cmd%% *}" | tr -d '"')
  case $name in python*) name=$(set -- $cmd; basename "$(echo "$2" | tr -d '"')" .py) ;; esac  # the script, not python
  for tool in memcheck racecheck; do
    log=$B/gpu_sanitize_${name}_$tool.log
    t0=$SECONDS
    # ctest prints the command with its arguments quoted: eval keeps them as ctest runs them
    eval "timeout \"\${TIMEOUT:-1800}\" \$SB \"\$CS\" --tool $tool \${KERNELS:+--kernel-name \"\$KERNELS\"} \${KERNELS_EXCLUDE:+--kernel-name-exclude \"\$KERNELS_EXCLUDE\"} --error-exitcode 99 --print-limit 20 $cmd" >"$log" 2>&1
    rc=$?
    t=$((SECONDS - t0))
    case $rc in
      0) echo "PASS  $tool $name (${t} s)" ;;
      77) echo "SKIP  $tool $name (no device)" ;;
      *) echo "FAIL  $tool $name (exit $rc, ${t} s, $log)"; fail=1 ;;
    esac
  done
done <<<"$tests"
exit $fail
