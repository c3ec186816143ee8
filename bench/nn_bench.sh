#!/usr/bin/env bash
# One command on the GPU machine: build nn/ (alone, through a minimal top level in /tmp that uses the project's
# flags, so that the rest of the tree need not build), run the nn_* tests (GPU ones included; the determinism
# test twice, comparing the state hashes of the two processes), then `nn_bench --all` and bench/nn_torch.py,
# and print the joined table for bench/RESULTS.md.
#   usage: bench/nn_bench.sh [OUTDIR [profile]]      (from the repository root)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/nn_bench_out}
mkdir -p "$out"
top=/tmp/nn-top
mkdir -p "$top"
cat > "$top/CMakeLists.txt" <<EOF
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
EOF
build=$repo/build-nn-bench
cmake -S "$top" -B "$build" -DCMAKE_CUDA_ARCHITECTURES=90 > /tmp/nn_cmake.log || { cat /tmp/nn_cmake.log; exit 1; }
cmake --build "$build" -j"$(nproc)" > /tmp/nn_build.log 2>&1 || { tail -40 /tmp/nn_build.log; exit 1; }
if [ "${2:-}" = profile ]; then  # per-GEMM candidate timings (development aid)
  "$build/nn/nn_bench" --profile > "$out/profile.txt"; grep -E "==|elementwise" "$out/profile.txt"; exit 0
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
ctest --test-dir "$build" -R nn_ --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -12
"$build/nn/nn_cuda_vs_cpu" | tail -12
h1=$("$build/nn/nn_cuda_determinism" | grep hash)
h2=$("$build/nn/nn_cuda_determinism" | grep hash)
echo "$h1"
if [ "$h1" = "$h2" ]; then echo "determinism across two processes: identical hashes"; else echo "determinism across processes: DIFFERENT: $h2"; fi
"$build/nn/nn_bench" --all --variants --json "$out/nn_ours.json"
if [ -n "${NN_BENCH_EXTRA:-}" ]; then  # development: also time without cuBLASLt split-K, and per-GEMM profile
  "$build/nn/nn_bench" --all --no-splitk --json "$out/nn_ours_nosplitk.json" | sed -n 1,14p
  "$build/nn/nn_bench" --profile > "$out/profile.txt"
fi
python3 "$repo/bench/nn_torch.py" --json "$out/nn_torch.json"
python3 "$repo/bench/nn_report.py" "$out/nn_ours.json" "$out/nn_torch.json" | tee "$out/nn_report.md"
