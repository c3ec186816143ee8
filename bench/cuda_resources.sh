#!/bin/bash
# bench/cuda_resources.sh BUILD_DIR [nvcc flags...]: what ptxas gives the engine's kernels, without a GPU.
# Compiles sim_cuda_step.cu, sim_cuda_bwd.cu and bench/cuda_stage_probe.cu (one kernel per stage) for sm_90 with
# the engine's flags (BUILD_DIR supplies the generated headers) plus the extra flags given (e.g.
# -DSIMCUDA_MIN_BLOCKS=3, -DSIM_CUDA_INLINE_ALL) and prints, per kernel, registers, stack frame, spill stores and
# loads and code size in instructions (16 bytes each), and the device functions that spill.
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR [nvcc flags...]}" && pwd); shift
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for tu in sim/cuda/sim_cuda_step.cu sim/cuda/sim_cuda_bwd.cu bench/cuda_stage_probe.cu; do
  t=$(basename "$tu" .cu)
  "$nvcc" -DADJ_HAVE_CUDA=1 -I"$build/generated" -I"$src" -O3 -DNDEBUG -arch=sm_90 --fmad=false -Xptxas -v \
    -cubin "$@" "$src/$tu" -o "$tmp/$t.cubin" > "$tmp/$t.log" 2>&1 || { cat "$tmp/$t.log"; exit 1; }
  readelf -sW "$tmp/$t.cubin" 2>/dev/null | awk '$4 == "FUNC" && $5 == "GLOBAL" {print $NF, $3}' > "$tmp/$t.size"
  python3 - "$tmp/$t.log" "$tmp/$t.size" "$t" <<'PY'
import re, sys
log, sizes, tu = open(sys.argv[1]).read(), dict(l.split() for l in open(sys.argv[2])), sys.argv[3]
def short(n):
    internal = re.match(r'^_ZN\d+_INTERNAL_\w+?_cu_[0-9a-f]+\d+(\w+?)E(PK|P|S|i|f|v)', n)
    return internal.group(1) if internal else re.sub(r'^_Z\d+', '', n).split('PK')[0]
pat = (r'Function properties for (\S+)\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill '
       r'loads(?:\nptxas info\s+: Used (\d+) registers)?')
for m in re.finditer(pat, log):
    name, stack, st, ld, regs = m.groups()
    if regs:
        code = int(sizes.get(name, '0'), 0) // 16
        print(f'{tu:22s} {short(name):28s} regs {regs:>3s}  stack {stack:>5s} B  spill {st:>4s}/{ld:<4s} B  code {code:>7d}')
    elif int(st) or int(ld):
        print(f'{tu:22s}   {short(name):26s}           spill {st:>4s}/{ld:<4s} B')
PY
done
