#!/usr/bin/env bash
# One command on the GPU machine: build nn/ (alone, through a minimal top level in /tmp that uses the project's
# flags, so that the rest of the tree need not build), run the nn_* tests (GPU ones included; the determinism
# test twice, comparing the state hashes of the two processes; the tuned-mode test twice, the second process
# loading the tune table the first saved), then nn_bench in tuned mode (tunes every shape, saves the table),
# nn_bench in default mode with the ablation (its "tuned" column loads that table), bench/nn_torch.py, and
# print the joined tables for bench/RESULTS.md. A failing step is reported and the later ones still run.
#   usage: bench/nn_bench.sh [OUTDIR [profile]]      (from the repository root; ~5 minutes on an H200)
# Outputs in OUTDIR: gpu.txt, ctest.log, nn_cuda_vs_cpu.log, nn_cuda_tune_{1,2}.log, nn_tune_test_table.txt,
#   nn_ours_tuned.json/.log, nn_tune_table.txt, nn_ours.json/.log, nn_torch.json/.log, nn_report.md
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/nn_bench_out}
mkdir -p "$out"
top=/tmp/nn-top
mkdir -p "$top"
cat > "$top/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.24)
project(adjoint_nn LANGUAGES C)
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_BUILD_TYPE Release)
set(ADJ_C_FLAGS -Wall -Wextra -Wno-unused-parameter -Wno-unused-function -ffp-contract=off -fno-fast-math -Werror)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
set(ADJ_HAVE_CUDA ON)
set(ADJ_CUDA_FLAGS --fmad=false -Xcompiler=-Wall,-Wno-unused-function -Werror=all-warnings)
enable_testing()
include($repo/cmake/adj_test.cmake)
add_subdirectory($repo/nn nn)
EOT
build=$repo/build-nn-bench
section() { printf '\n==== %s\n' "$*"; }
section "build ($build)"
cmake -S "$top" -B "$build" -DCMAKE_CUDA_ARCHITECTURES=90 > /tmp/nn_cmake.log || { cat /tmp/nn_cmake.log; exit 1; }
cmake --build "$build" -j"$(nproc)" > /tmp/nn_build.log 2>&1 || { tail -40 /tmp/nn_build.log; exit 1; }
echo "built"
if [ "${2:-}" = profile ]; then  # per-GEMM candidate timings (development aid)
  "$build/nn/nn_bench" --profile > "$out/profile.txt"; grep -E "==|elementwise" "$out/profile.txt"; exit 0
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"

section "tests: ctest -R nn_"
ctest --test-dir "$build" -R nn_ --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -14
section "nn_cuda_vs_cpu"
"$build/nn/nn_cuda_vs_cpu" 2>&1 | tee "$out/nn_cuda_vs_cpu.log" | tail -12
section "determinism across two processes (default mode)"
h1=$("$build/nn/nn_cuda_determinism" | grep hash)
h2=$("$build/nn/nn_cuda_determinism" | grep hash)
echo "$h1"
if [ -n "$h1" ] && [ "$h1" = "$h2" ]; then echo "determinism across two processes: identical hashes"
else echo "determinism across processes: DIFFERENT or missing: ${h2:-none}"; fi

section "tuned mode across two processes (1: tunes + saves the table, 2: loads it, frozen)"
tt=$out/nn_tune_test_table.txt
rm -f "$tt"
"$build/nn/nn_cuda_tune" "$tt" > "$out/nn_cuda_tune_1.log" 2>&1; rc1=$?
"$build/nn/nn_cuda_tune" "$tt" > "$out/nn_cuda_tune_2.log" 2>&1; rc2=$?
grep -vE "^(nn_cuda_tune B=)" "$out/nn_cuda_tune_1.log" | tail -12
t1=$(grep "state hash" "$out/nn_cuda_tune_1.log"); t2=$(grep "state hash" "$out/nn_cuda_tune_2.log")
echo "$t1"
echo "exit codes: $rc1 $rc2 (0 = all checks passed)"
if [ -n "$t1" ] && [ "$t1" = "$t2" ]; then echo "tuned mode across two processes: identical hashes"
else echo "tuned mode across processes: DIFFERENT or missing: ${t2:-none}"; tail -5 "$out/nn_cuda_tune_2.log"; fi

section "ours, tuned mode: nn_bench --all --tune --tune-save nn_tune_table.txt"
"$build/nn/nn_bench" --all --tune --tune-save "$out/nn_tune_table.txt" --json "$out/nn_ours_tuned.json" 2>&1 |
  tee "$out/nn_ours_tuned.log" || echo "nn_bench --tune FAILED (exit ${PIPESTATUS[0]}); continuing"

section "ours, default mode + ablation: nn_bench --all --variants [--tune-load nn_tune_table.txt]"
load=()
if [ -s "$out/nn_tune_table.txt" ]; then load=(--tune-load "$out/nn_tune_table.txt"); else echo "(no tune table: the tuned variant tunes itself)"; fi
"$build/nn/nn_bench" --all --variants ${load[@]+"${load[@]}"} --json "$out/nn_ours.json" 2>&1 | tee "$out/nn_ours.log" ||
  echo "nn_bench FAILED (exit ${PIPESTATUS[0]}); continuing"
if [ -n "${NN_BENCH_EXTRA:-}" ]; then  # development: also time without cuBLASLt split-K, and per-GEMM profile
  "$build/nn/nn_bench" --all --no-splitk --json "$out/nn_ours_nosplitk.json" | sed -n 1,14p
  "$build/nn/nn_bench" --profile > "$out/profile.txt"
fi

section "PyTorch: bench/nn_torch.py"
python3 "$repo/bench/nn_torch.py" --json "$out/nn_torch.json" 2>&1 | tee "$out/nn_torch.log" ||
  echo "nn_torch.py FAILED (exit ${PIPESTATUS[0]}); continuing"

section "report (also in $out/nn_report.md)"
python3 "$repo/bench/nn_report.py" "$out/nn_ours.json" "$out/nn_torch.json" "$out/nn_ours_tuned.json" \
  --tune-table "$out/nn_tune_table.txt" | tee "$out/nn_report.md"
