#!/usr/bin/env python3
"""Runs `adjoint verify ... --json` and checks its figures against bounds.

usage: verify_check.py ADJOINT [KEY.STAT<=VALUE | KEY>=VALUE ...] -- VERIFY_ARGS...
Exit 0 if every bound holds, 1 otherwise (the failing figures are printed).
"""
import json
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    exe, argv = argv[0], argv[1:]
    sep = argv.index("--")
    bounds, args = argv[:sep], argv[sep + 1:]
    out = subprocess.run([exe, "verify", *args, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return 1
    lines = [l for l in out.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        print("stdout is not exactly one JSON line:\n" + out.stdout, file=sys.stderr)
        return 1
    res = json.loads(lines[0])
    ok = True
    for b in bounds:
        op = ">=" if ">=" in b else "<="
        key, val = b.split(op)
        node = res
        for part in key.split("."):
            node = node[part]
        good = node <= float(val) if op == "<=" else node >= float(val)
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {args[0]} {key} = {node:.3e} (bound {op} {val})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
