#!/usr/bin/env python3
"""Joins the JSON lines of nn_bench (ours) and nn_torch.py into the markdown table of bench/RESULTS.md.

usage: nn_report.py OURS.json TORCH.json
Ratios are our time over PyTorch's: "best" against the faster PyTorch mode (CUDA graph or eager), "eager"
against plain eager PyTorch. Ours is the faster of our own graph and eager modes (graph in practice).
Targets from issue 5: <= 0.6 at batches 4096 and 65536, <= 0.9 at 262144.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    ours, torch = load(sys.argv[1]), load(sys.argv[2])
    tkey = {(r["net"], r["precision"], r["batch"]): r for r in torch if r["kind"] == "time"}
    out = []
    out.append("| net | precision | batch | what | ours (ms) | PyTorch graph (ms) | PyTorch eager (ms) "
               "| ratio vs best PyTorch | ratio vs eager | target | met |")
    out.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in ours:
        if r["kind"] != "time":
            continue
        t = tkey.get((r["net"], r["precision"], r["batch"]))
        if not t:
            continue
        target = 0.9 if r["batch"] >= 262144 else 0.6
        for what in ("train", "fwd"):
            o = min(r[f"{what}_graph_ms"], r[f"{what}_eager_ms"])
            tg, te = t[f"{what}_graph_ms"], t[f"{what}_eager_ms"]
            rb, re = o / min(tg, te), o / te
            out.append(f"| {r['net']} | {r['precision']} | {r['batch']} | {'train step' if what == 'train' else 'forward'} "
                       f"| {o:.3f} | {tg:.3f} | {te:.3f} | {rb:.2f} | {re:.2f} | {target} | "
                       f"{'yes' if rb <= target else ('vs eager only' if re <= target else 'no')} |")
    acc = [r for r in ours if r["kind"] == "tf32_accuracy"]
    if acc:
        out.append("")
        out.append("TF32 accuracy of `nn/` against its own fp32 mode (same parameters and data, relative L2 error):")
        out.append("")
        out.append("| net | batch | output | parameter gradients |")
        out.append("|---|---:|---:|---:|")
        for r in acc:
            out.append(f"| {r['net']} | {r['batch']} | {r['out_rel']:.2e} | {r['grad_rel']:.2e} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
