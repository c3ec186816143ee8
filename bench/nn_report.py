#!/usr/bin/env python3
"""Joins the JSON lines of nn_bench (ours, default and tuned mode) and nn_torch.py into markdown tables for
bench/RESULTS.md.

usage: nn_report.py FILE.json... [--tune-table TABLE.txt]
  Files may come in any order (nn_ours.json, nn_torch.json, nn_ours_tuned.json); records are told apart by
  "impl" (adjoint | torch) and "mode" (default | tuned; absent = default). The old form
  `nn_report.py OURS.json TORCH.json` still works (tuned columns then show "-").
Ratios are our time over PyTorch's: "/ best PyTorch" against the faster PyTorch mode (CUDA graph or eager), per
our mode. Ours is the faster of our own graph and eager modes (graph in practice).
The nn/ speed targets (our time over PyTorch's): <= 0.6 at batches 4096 and 65536, <= 0.9 at 262144.
GEMMs only (graph-captured): the cuBLASLt calls of our plans alone (train: on one stream in backward's order, and
with the weight-gradient GEMMs on the second stream as our backward runs them), PyTorch's addmm/mm chain alone.
"ours GEMMs / best PyTorch" is the floor our step cannot go below with those GEMMs: above the target, the target
is out of reach without faster GEMMs.
--tune-table: also lists the tuned GEMM shapes whose chosen algorithm differs most from the heuristic's first.
Other modes of our main table (nn_bench --fuse-out: "fuse_out", "tuned+fuse_out") get a table of their own; the
ablation (nn_bench --variants, every variant incl. "fuse_out") also gets its ratios to the best PyTorch time.
"""
import json
import os
import sys


def load(path):
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"nn_report: {path}:{i}: skipped, not JSON ({e})", file=sys.stderr)
    return out


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec)


def ours_time(r, what):
    if r is None:
        return None
    v = [r.get(f"{what}_graph_ms"), r.get(f"{what}_eager_ms")]
    v = [x for x in v if x is not None]
    return min(v) if v else None


def torch_best(t, what):
    if t is None:
        return None
    v = [x for x in (t.get(f"{what}_graph_ms"), t.get(f"{what}_eager_ms")) if x is not None]
    return min(v) if v else None


def tune_table(path, top=15):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("adjoint-nn-tune"):
                continue
            d = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
            rows.append(d)
    out = [f"Tune table `{os.path.basename(path)}`: {len(rows)} GEMM shapes"]
    changed = [d for d in rows if "cand" in d and not d["cand"].startswith("0/")]
    out[0] += f", {len(changed)} with another algorithm than the heuristic's first"
    timed = [d for d in changed if float(d.get("ms", 0)) > 0 and float(d.get("ms0", 0)) > 0]
    if timed:
        s, s0 = sum(float(d["ms"]) for d in timed), sum(float(d["ms0"]) for d in timed)
        out[0] += f" (their isolated times: {s:.3f} ms tuned vs {s0:.3f} ms heuristic's first, {s / s0:.2f}x)"
    out[0] += "."
    if timed:
        timed.sort(key=lambda d: float(d["ms0"]) - float(d["ms"]), reverse=True)
        out += ["", f"Largest gains (top {min(top, len(timed))}; m x n x k, count = strided batch):", "",
                "| prec | op | m | n | k | count | epilogue | heuristic's first (ms) | tuned (ms) | speed-up | candidate | split-K |",
                "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
        for d in timed[:top]:
            ms, ms0 = float(d["ms"]), float(d["ms0"])
            out.append(f"| {d['prec']} | {d['op']} | {d['m']} | {d['n']} | {d['k']} | {d['count']} | {d['epi']} | "
                       f"{ms0:.4f} | {ms:.4f} | {ms0 / ms:.2f}x | {d['cand']} | {d['splitk']} |")
    return out


def main():
    args, table = [], None
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--tune-table":
            table = next(it, None)
        else:
            args.append(a)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    recs = []
    for p in args:
        if os.path.exists(p):
            recs += load(p)
        else:
            print(f"nn_report: {p}: missing, skipped", file=sys.stderr)
    key = lambda r: (r["net"], r["precision"], r["batch"])
    torch = {key(r): r for r in recs if r.get("impl") == "torch" and r.get("kind") == "time"}
    ours = {"default": {}, "tuned": {}}
    for r in recs:
        if r.get("impl") == "adjoint" and r.get("kind") == "time":
            ours.setdefault(r.get("mode", "default"), {})[key(r)] = r
    keys = sorted(set(ours["default"]) | set(ours["tuned"]),
                  key=lambda k: (k[0] != "actor", k[1] != "fp32", k[2]))
    out = ["| net | precision | batch | what | ours default (ms) | ours tuned (ms) | PyTorch graph (ms) | PyTorch eager (ms) "
           "| default / best PyTorch | tuned / best PyTorch | target | met (default / tuned) |",
           "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    floor = ["| net | precision | batch | what | ours default | ours tuned | ours 2 streams (tuned, else default) | PyTorch "
             "| ours GEMMs / best PyTorch step | PyTorch GEMMs / its step | ours step / ours GEMMs |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        t = torch.get(k)
        d, u = ours["default"].get(k), ours["tuned"].get(k)
        target = 0.9 if k[2] >= 262144 else 0.6
        for what in ("train", "fwd"):
            od, ou = ours_time(d, what), ours_time(u, what)
            tg = t.get(f"{what}_graph_ms") if t else None
            te = t.get(f"{what}_eager_ms") if t else None
            best = min(x for x in (tg, te) if x is not None) if t else None
            rd = od / best if od is not None and best else None
            ru = ou / best if ou is not None and best else None
            met = " / ".join("-" if x is None else ("yes" if x <= target else "no") for x in (rd, ru))
            label = "train step" if what == "train" else "forward"
            out.append(f"| {k[0]} | {k[1]} | {k[2]} | {label} | {fmt(od)} | {fmt(ou)} | {fmt(tg)} | {fmt(te)} | "
                       f"{'-' if rd is None else f'**{rd:.2f}**'} | {'-' if ru is None else f'**{ru:.2f}**'} | {target} | {met} |")
            # GEMMs only
            gd = d.get(f"gemm_{what}_graph_ms") if d else None
            gu = u.get(f"gemm_{what}_graph_ms") if u else None
            g2 = None
            if what == "train":
                g2 = (u or d or {}).get("gemm_train_2s_graph_ms")
            gt = t.get(f"gemm_{what}_graph_ms") if t else None
            ours_g = [x for x in (gd, gu, g2) if x is not None]
            fl = min(ours_g) / best if ours_g and best else None
            tshare = gt / best if gt is not None and best else None
            ostep = [x for x in (od, ou) if x is not None]
            over = min(ostep) / min(ours_g) if ostep and ours_g else None
            floor.append(f"| {k[0]} | {k[1]} | {k[2]} | {label} | {fmt(gd)} | {fmt(gu)} | {fmt(g2)} | {fmt(gt)} | "
                         f"{fmt(fl, '.2f')} | {fmt(tshare, '.2f')} | {fmt(over, '.2f')} |")
    print("\n".join(out))
    other = [m for m in ours if m not in ("default", "tuned") and ours[m]]
    if other:
        print("\nOther modes of ours (graph or eager, the faster; ratio to the best PyTorch mode):\n")
        print("| mode | net | precision | batch | what | ours (ms) | best PyTorch (ms) | ours / best PyTorch | target | met |")
        print("|---|---|---|---:|---|---:|---:|---:|---:|---|")
        for m in other:
            for k in sorted(ours[m], key=lambda k: (k[0] != "actor", k[1] != "fp32", k[2])):
                target = 0.9 if k[2] >= 262144 else 0.6
                for what in ("train", "fwd"):
                    o, best = ours_time(ours[m][k], what), torch_best(torch.get(k), what)
                    ratio = o / best if o is not None and best else None
                    met = "-" if ratio is None else ("yes" if ratio <= target else "no")
                    label = "train step" if what == "train" else "forward"
                    print(f"| {m} | {k[0]} | {k[1]} | {k[2]} | {label} | {fmt(o)} | {fmt(best)} | "
                          f"{'-' if ratio is None else f'**{ratio:.2f}**'} | {target} | {met} |")
    print("\nGEMMs only (graph-captured, ms; train = forward + backward GEMMs, no elementwise kernels, no optimizer; "
          "\"2 streams\": weight-gradient GEMMs overlapped as in our backward; ratios use the faster of our modes):\n")
    print("\n".join(floor))
    var = [r for r in recs if r.get("impl") == "adjoint" and r.get("kind") == "variant"]
    if var:
        names = []
        for r in var:
            if r["variant"] not in names:
                names.append(r["variant"])
        rows = {}
        for r in var:
            rows.setdefault(key(r), {})[r["variant"]] = r
        print("\nAblation (graph mode, ms, train step / forward):\n")
        print("| net | precision | batch | " + " | ".join(names) + " |")
        print("|---|---|---:|" + "---:|" * len(names))
        for k in sorted(rows, key=lambda k: (k[0] != "actor", k[1] != "fp32", k[2])):
            cells = []
            for n in names:
                r = rows[k].get(n)
                cells.append("-" if r is None else f"{r['train_graph_ms']:.3f} / {r['fwd_graph_ms']:.3f}")
            print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
        if any(k in torch for k in rows):
            print("\nAblation / best PyTorch (train step / forward; target 0.6 at 4096 and 65536, 0.9 at 262144):\n")
            print("| net | precision | batch | " + " | ".join(names) + " |")
            print("|---|---|---:|" + "---:|" * len(names))
            for k in sorted(rows, key=lambda k: (k[0] != "actor", k[1] != "fp32", k[2])):
                t = torch.get(k)
                cells = []
                for n in names:
                    r = rows[k].get(n)
                    bt, bf = torch_best(t, "train"), torch_best(t, "fwd")
                    if r is None or not bt or not bf:
                        cells.append("-")
                    else:
                        cells.append(f"{r['train_graph_ms'] / bt:.2f} / {r['fwd_graph_ms'] / bf:.2f}")
                print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
    acc = [r for r in recs if r.get("impl") == "adjoint" and r.get("kind") == "tf32_accuracy"]
    if acc:
        print("\nTF32 accuracy of `nn/` against its own fp32 mode (same parameters and data, relative L2 error):\n")
        print("| mode | net | batch | output | parameter gradients |")
        print("|---|---|---:|---:|---:|")
        for r in acc:
            print(f"| {r.get('mode', 'default')} | {r['net']} | {r['batch']} | {r['out_rel']:.2e} | {r['grad_rel']:.2e} |")
    summ = [r for r in recs if r.get("impl") == "adjoint" and r.get("kind") == "tune_summary"]
    for r in summ:
        print(f"\nTuner (one nn_bench process): {r['entries']} GEMM shapes in the table, {r['timed']} of them timed by "
              f"that process, {r['changed']} not the heuristic's first.")
    if table:
        if os.path.exists(table):
            print("\n" + "\n".join(tune_table(table)))
        else:
            print(f"nn_report: {table}: missing, skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
