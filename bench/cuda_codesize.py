#!/usr/bin/env python3
"""cuda_codesize.py CUBIN KERNEL [--top N] [--root DIR]: where a kernel's code lies, by source function and line.

CUBIN is built with -lineinfo (e.g. `nvcc ... -lineinfo -cubin sim/cuda/sim_cuda_step.cu -o step.cubin` with the
flags bench/cuda_resources.sh uses); KERNEL is a substring of the kernel's name (k_sub_constraint). Needs readelf,
no GPU: the DWARF line table maps every SASS address of the kernel's text section to a source line, each line's
bytes are the distance to the next address, and each line belongs to the enclosing SIM_FN / __global__ / static
function (bench/ncu_source.py's rule, source files under --root). Inlined code counts where it is written, so a
helper inlined at many call sites shows its total.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_source import function_map, locate  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cubin")
    ap.add_argument("kernel")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--root", default=".")
    a = ap.parse_args()
    sections = subprocess.run(["readelf", "-SW", a.cubin], capture_output=True, text=True).stdout
    size = None
    for ln in sections.splitlines():
        f = ln.split("]", 1)[-1].split()
        if len(f) > 4 and f[0].startswith(".text.") and a.kernel in f[0]:
            size = int(f[4], 16)
            break
    if size is None:
        sys.exit("cuda_codesize: no text section of a kernel named *%s* in %s" % (a.kernel, a.cubin))
    out = subprocess.run(["readelf", "--debug-dump=decodedline", a.cubin], capture_output=True, text=True).stdout
    # one sequence per text section, its addresses from 0; the kernel's is the one that ends at its size
    seqs, cur, path = [], None, None
    for ln in out.splitlines():
        m = re.match(r"^(/\S+):$", ln)
        if m:
            path = m.group(1)
            continue
        m = re.match(r"^(\S+)\s+(\d+)\s+(0x[0-9a-f]+|\d+)\b", ln)
        if not m:
            continue
        addr = int(m.group(3), 0)
        if cur is None or (addr == 0 and cur and cur[-1][2] > 0):
            cur = []
            seqs.append(cur)
        cur.append((path or m.group(1), int(m.group(2)), addr))
    if not seqs:
        sys.exit("cuda_codesize: no line table in %s (built without -lineinfo?)" % a.cubin)
    seq = min(seqs, key=lambda s: abs(size - max(x[2] for x in s)))
    seq.sort(key=lambda x: x[2])
    ends = [x[2] for x in seq[1:]] + [size]
    by_fn, by_line, maps = collections.Counter(), collections.Counter(), {}
    for (p, ln, addr), end in zip(seq, ends):
        p = os.path.normpath(p)
        if p not in maps:
            maps[p] = function_map(locate(p, a.root))
        base = os.path.basename(p)
        by_fn["%s:%s" % (base, maps[p].get(ln, "?"))] += end - addr
        by_line["%s:%d" % (base, ln)] += end - addr
    tot = sum(by_fn.values()) or 1
    print("%s: %d bytes of code (%d instructions)" % (a.kernel, size, size // 16))
    print("\n%-9s %-6s %s" % ("bytes", "share", "function"))
    for k, v in by_fn.most_common(a.top):
        print("%9d %5.1f%%  %s" % (v, 100 * v / tot, k))
    print("\n%-9s %-6s %s" % ("bytes", "share", "line"))
    for k, v in by_line.most_common(a.top):
        print("%9d %5.1f%%  %s" % (v, 100 * v / tot, k))


if __name__ == "__main__":
    main()
