#!/usr/bin/env python3
"""eval_plot.py: PNG plots of `adjoint eval --motions` results (matplotlib, installed into .venv by the quick start).

  eval_plot.py clips EVAL.json -o clips.png
      per-clip bars: normalized return (a fallen clip's bar red, its fall time written on it), MPKPE beside.
  eval_plot.py curve RUN_DIR -o curve.png [--motions FILE --adjoint build/adjoint [--max-steps N] [--clip NAME]...]
      falls and normalized return against training wall time (s): the trainer's own rows (RUN_DIR/motion_evals.csv,
      run.eval_motions) when present, else `adjoint eval CKPT --motions FILE` of every RUN_DIR/ckpt_*.h5, placed at
      the training time metrics.csv gives its iteration (evaluations are not in it).
"""
import argparse
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_clips(a):
    ev = json.load(open(a.eval_json))
    clips = ev["clips"]
    names = [c["name"].split(".")[0] for c in clips]
    ret = [c["normalized_return"] for c in clips]
    mp = [c["mpkpe_mm"] for c in clips]
    colors = ["tab:red" if c["fell"] else "tab:blue" for c in clips]
    fig, ax = plt.subplots(1, 2, figsize=(12, max(3, 0.28 * len(clips) + 1.5)), sharey=True)
    y = range(len(clips))
    ax[0].barh(y, ret, color=colors)
    for i, c in enumerate(clips):
        if c["fell"]:
            ax[0].text(c["normalized_return"] + 0.01, i, "fell at %.1f s" % c["fall_time_s"], va="center", fontsize=7)
    ax[0].set_xlim(0, 1)
    ax[0].set_xlabel("normalized return (red: fell)")
    ax[0].set_yticks(list(y))
    ax[0].set_yticklabels(names, fontsize=7)
    ax[0].invert_yaxis()
    ax[1].barh(y, mp, color="tab:gray")
    ax[1].set_xlabel("MPKPE (mm, until the fall)")
    s = ev["summary"]
    fig.suptitle("%s (iteration %s): falls %d/%d, normalized return %.3f, MPKPE %.1f mm" %
                 (os.path.basename(ev["checkpoint"]), ev.get("iteration", "?"), s["falls"], s["clips"],
                  s["normalized_return"], s["mpkpe_mm"]), fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)


def curve_from_checkpoints(a):
    """(elapsed, falls, clips, normalized return) of adjoint eval --motions on every checkpoint of the run."""
    elapsed = {}
    for row in csv.DictReader(open(os.path.join(a.run_dir, "metrics.csv"))):
        elapsed[int(row["iteration"])] = float(row["elapsed"])
    pts = []
    for ck in sorted(glob.glob(os.path.join(a.run_dir, "ckpt_*.h5"))):
        it = int(re.search(r"ckpt_(\d+)\.h5$", ck).group(1))
        out = tempfile.mkdtemp()
        cmd = [a.adjoint, "eval", ck, "--motions", a.motions, "--out", out]
        if a.max_steps:
            cmd += ["--max-steps", str(a.max_steps)]
        for c in a.clip or []:
            cmd += ["--clip", c]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            sys.exit("eval_plot: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
        s = json.load(open(os.path.join(out, "eval.json")))["summary"]
        pts.append((elapsed.get(it, float("nan")), s["falls"], s["clips"], s["normalized_return"]))
    return pts


def plot_curve(a):
    logged = os.path.join(a.run_dir, "motion_evals.csv")
    if os.path.isfile(logged) and not a.motions:
        pts = [(float(r["elapsed"]), int(r["falls"]), int(r["clips"]), float(r["normalized_return"]))
               for r in csv.DictReader(open(logged))]
    elif a.motions:
        pts = curve_from_checkpoints(a)
    else:
        sys.exit("eval_plot: %s has no motion_evals.csv (run.eval_motions): give --motions FILE to evaluate its "
                 "checkpoints" % a.run_dir)
    if not pts:
        sys.exit("eval_plot: no evaluations in %s" % a.run_dir)
    t, falls, n, ret = zip(*pts)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, ret, "o-", color="tab:blue", label="normalized return")
    ax.set_xlabel("training wall time (s, evaluations excluded)")
    ax.set_ylabel("normalized return", color="tab:blue")
    ax.set_ylim(0, 1)
    ax2 = ax.twinx()
    ax2.plot(t, falls, "s--", color="tab:red", label="falls")
    ax2.set_ylabel("falls (of %d clips)" % max(n), color="tab:red")
    ax2.set_ylim(-0.05 * max(n), 1.05 * max(n))
    ax.set_title(os.path.basename(os.path.normpath(a.run_dir)), fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("clips", help="per-clip bars from eval.json")
    c.add_argument("eval_json")
    c.add_argument("-o", "--out", required=True)
    r = sub.add_parser("curve", help="falls and normalized return against training time")
    r.add_argument("run_dir")
    r.add_argument("-o", "--out", required=True)
    r.add_argument("--motions", help="evaluate every checkpoint on this motion data (else motion_evals.csv)")
    r.add_argument("--adjoint", default="build/adjoint")
    r.add_argument("--max-steps", type=int, default=0)
    r.add_argument("--clip", action="append")
    a = ap.parse_args()
    plot_clips(a) if a.what == "clips" else plot_curve(a)
    print("eval_plot: wrote", a.out)


if __name__ == "__main__":
    main()
