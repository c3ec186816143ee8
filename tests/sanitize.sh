#!/bin/bash
# sanitize.sh [BUILD_DIR] [ctest args...]: the CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# Configures BUILD_DIR (default build-asan) with -DADJ_SANITIZE=ON -DADJ_CUDA=OFF, builds everything and runs
# ctest there; any ASan error or UB report fails its test (halt_on_error, -fno-sanitize-recover). Leak checking
# is off: MuJoCo, HDF5 and libyaml are not instrumented and keep process-lifetime allocations.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-asan}
shift || true
# clang: MuJoCo's mjsan.h (included under ASan) does not compile with gcc; warnings are not errors here
# (clang warns where gcc, which CI uses with -Werror, does not)
# -O1 with line tables: ASan's recommended level, and much quicker to compile than the release build.
# TARGETS (default: everything) limits what is built; pass ctest -L / -R to run only what was built.
CC=${CC:-clang} cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=-O1 -gline-tables-only" \
  -DADJ_WERROR=OFF -DADJ_CUDA=OFF -DADJ_SANITIZE=ON >/dev/null
# shellcheck disable=SC2086
cmake --build "$B" -j"${JOBS:-2}" ${TARGETS:+--target $TARGETS}
# exitcode 86: a sanitizer report is never mistaken for a command's own exit 1 or 2 (robust_cli, fuzz.py)
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
ctest --test-dir "$B" --output-on-failure "$@"
