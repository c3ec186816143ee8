#!/usr/bin/env bash
# quickstart.sh run|test: installs what is still missing (Debian packages, the project venv with MuJoCo
# 3.12.0), builds, then runs the main job (run) or the whole test suite (test). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-run}
case "$what" in run | test) ;; *) echo "usage: tools/quickstart.sh run|test" >&2; exit 2 ;; esac

pkgs="build-essential cmake pkg-config python3 python3-venv libyaml-dev libhdf5-dev zlib1g-dev"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "quickstart: installing$missing"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# onnx + onnxruntime: test-only (nn_export_onnx runs the exported policy in a real ONNX consumer); h5py reads
# trajectories (tools/render_trajectory.py, tests/eval_motions_check.py), matplotlib draws tools/eval_plot.py's plots
if ! .venv/bin/python -c 'import mujoco, numpy, onnx, onnxruntime, h5py, matplotlib, sys; sys.exit(mujoco.__version__ != "3.12.0")' 2>/dev/null; then
  echo "quickstart: installing mujoco==3.12.0, h5py, matplotlib (and test-only onnx, onnxruntime) into .venv"
  .venv/bin/pip install -q mujoco==3.12.0 numpy onnx onnxruntime h5py matplotlib
fi

# CUDA is optional: where nvcc exists the CUDA backend is compiled too (GPU tests skip without a device)
[ -x /usr/local/cuda/bin/nvcc ] && case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH=$PATH:/usr/local/cuda/bin ;; esac
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${CI:+-DADJ_WERROR=ON} >/dev/null
cmake --build build -j"$jobs"

if [ "$what" = run ]; then
  # the main job on its embedded default: SHAC with the ∇Mimic options on cartpole swing-up (CPU), then the
  # deterministic evaluation of the trained policy
  run_dir=logs/quickstart-$(date -u +%Y%m%d-%H%M%S)
  ./build/adjoint train --run-dir "$run_dir"
  ./build/adjoint eval "$run_dir" --episodes 8
else
  ctest --test-dir build --output-on-failure -j"$jobs"
fi
