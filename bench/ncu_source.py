#!/usr/bin/env python3
"""ncu_source.py SOURCE_CSV [--top N] [--root DIR]: where a kernel's time goes, by function and by source line.

SOURCE_CSV is Nsight Compute's source page of one profiled kernel with CUDA lines and SASS interleaved:
    ncu -i REPORT.ncu-rep --page source --csv --print-source=cuda,sass > SOURCE_CSV
(the report taken with --import-source yes, or --set full, from a build with -lineinfo: cmake -DADJ_CUDA_LINEINFO=ON).
Prints the total warp stall samples and executed warp instructions, then their shares per source file, per function
(the enclosing SIM_FN / __global__ / static function of each line, found in the source files under --root, default
the current directory) and the N source lines with most samples, with the average active threads per executed
instruction. The kernel's code size (SASS instructions per file) comes last.
"""
import argparse
import collections
import csv
import os
import re
import sys

FN_START = re.compile(r"^(SIM_FN_STAGE|SIM_FN_INLINE|SIM_FN|__global__|static)\b")
FN_NAME = re.compile(r"\b(\w+)\s*\(")


def function_map(path):
    """line number -> name of the function whose definition last started at or above it"""
    names = {}
    cur = "?"
    try:
        with open(path, errors="replace") as f:
            for i, line in enumerate(f, 1):
                if FN_START.match(line):
                    m = FN_NAME.search(line)
                    if m:
                        cur = m.group(1)
                names[i] = cur
    except OSError:
        pass
    return names


def locate(path, root):
    """the profiled file's path, or the same relative path under root (the profile may come from another machine)"""
    if os.path.exists(path):
        return path
    parts = path.replace("\\", "/").split("/")
    for k in range(len(parts)):
        cand = os.path.join(root, *parts[k:])
        if os.path.exists(cand):
            return cand
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--root", default=".")
    a = ap.parse_args()
    lines = []  # (file, line, samples, warp instructions, thread instructions, text)
    sass = collections.Counter()
    fname, cols = None, None
    with open(a.csv, newline="") as f:
        for r in csv.reader(f):
            if not r:
                continue
            if r[0] == "File Path":
                fname = r[1]
                continue
            if r[0] == "Function Name":
                continue
            if r[0] == "Line No":
                cols = (r.index("Warp Stall Sampling (All Samples)"), r.index("Instructions Executed"),
                        r.index("Thread Instructions Executed"))
                continue
            if cols is None or fname is None:
                continue
            if r[0] == "":
                if len(r) > 2 and r[2].startswith("0x"):
                    sass[os.path.basename(fname)] += 1
                continue
            try:
                vals = [int((r[c] or "0").replace(",", "")) for c in cols]
            except (ValueError, IndexError):
                continue
            lines.append((fname, int(r[0]), vals[0], vals[1], vals[2], r[1]))
    if not lines:
        sys.exit("ncu_source: no source lines with metrics in %s (was it --print-source=cuda,sass?)" % a.csv)
    tot_s = sum(x[2] for x in lines) or 1
    tot_i = sum(x[3] for x in lines) or 1
    print("warp stall samples %d, executed warp instructions %d" % (tot_s, tot_i))
    maps = {}
    by_file, by_fn = collections.Counter(), collections.Counter()
    ins_file, ins_fn = collections.Counter(), collections.Counter()
    for path, ln, s, i, _, _ in lines:
        if path not in maps:
            maps[path] = function_map(locate(path, a.root))
        base = os.path.basename(path)
        fn = "%s:%s" % (base, maps[path].get(ln, "?"))
        by_file[base] += s
        ins_file[base] += i
        by_fn[fn] += s
        ins_fn[fn] += i
    print("\n%-8s %-8s %s" % ("samples", "instr", "file"))
    for k, v in by_file.most_common(20):
        print("%6.2f%%  %6.2f%%  %s" % (100 * v / tot_s, 100 * ins_file[k] / tot_i, k))
    print("\n%-8s %-8s %s" % ("samples", "instr", "function"))
    for k, v in by_fn.most_common(a.top):
        print("%6.2f%%  %6.2f%%  %s" % (100 * v / tot_s, 100 * ins_fn[k] / tot_i, k))
    print("\n%-8s %-8s %-7s %s" % ("samples", "instr", "threads", "line"))
    for path, ln, s, i, t, text in sorted(lines, key=lambda x: -x[2])[:a.top]:
        print("%6.2f%%  %6.2f%%  %5.1f  %s:%d  %s" % (100 * s / tot_s, 100 * i / tot_i, t / i if i else 0,
                                                   os.path.basename(path), ln, text.strip()[:80]))
    print("\ncode size, SASS instructions per file (%d in all):" % sum(sass.values()))
    for k, v in sass.most_common(12):
        print("%8d  %s" % (v, k))


if __name__ == "__main__":
    main()
