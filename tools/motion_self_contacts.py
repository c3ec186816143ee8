#!/usr/bin/env python3
"""motion_self_contacts.py LIBRARY.h5 [--model g1/scene_flat.xml] [--step 10]: what the G1 tracking task's
penalties charge for the reference motion itself.

Puts every STEP-th frame of each clip of a motion library (`adjoint motion build`) into MuJoCo 3.12's model
(mj_forward, qvel 0) and counts, as envs/g1_tracking.c does, the contacts between two bodies of the pelvis
subtree (at most 10 a frame) and the soft joint-limit violation (limits mid -+ 0.45 range). Prints per clip the
frames with a self-contact, the mean count, the frames over a soft limit and the mean violation, and what the
task's default weights (-10 each, times the 0.02 s control step) charge a step that tracks the reference
exactly: to set against the six tracking terms' maximum, 0.1 a step. Then the most frequent body pairs.
"""
import argparse
import collections
import os
import sys

import h5py
import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_mujoco_eval import InputError, find_asset  # noqa: E402  the asset search path, written once


def asset(path):
    try:
        return find_asset(path)
    except InputError as e:
        print(f"motion_self_contacts: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--model", default="g1/scene_flat.xml")
    ap.add_argument("--step", type=int, default=10)
    a = ap.parse_args()
    m = mujoco.MjModel.from_xml_path(asset(a.model))
    d = mujoco.MjData(m)
    root = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "pelvis")
    hinge = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    rng = m.jnt_range[hinge]
    mid, half = rng.mean(1), 0.45 * (rng[:, 1] - rng[:, 0])
    lo, hi = mid - half, mid + half
    adr = m.jnt_qposadr[hinge]
    pairs = collections.Counter()
    tot = np.zeros(5)  # frames, frames with contact, contacts, frames over a limit, violation
    with h5py.File(a.library, "r") as f:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["clip_names"][...]]
        start, length, qpos = f["clip_start"][...], f["clip_len"][...], f["qpos"]
        print(f"{'clip':30s} frames  contact%  mean  limit%  viol(rad)  penalty/step")
        for c, name in enumerate(names):
            q = np.asarray(qpos[start[c]:start[c] + length[c]][::a.step], dtype=np.float64)
            s = np.zeros(5)
            for row in q:
                d.qpos[:] = row
                d.qvel[:] = 0
                mujoco.mj_forward(m, d)
                n = 0
                for con in d.contact[:d.ncon]:
                    b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
                    if not con.exclude and m.body_rootid[b1] == root and m.body_rootid[b2] == root:
                        n += 1
                        pairs[tuple(sorted((m.body(b1).name, m.body(b2).name)))] += 1
                n = min(n, 10)
                v = (np.maximum(lo - row[adr], 0) + np.maximum(row[adr] - hi, 0)).sum()
                s += [1, n > 0, n, v > 0, v]
            F = s[0]
            print(f"{name:30s} {int(F):6d} {100 * s[1] / F:8.1f} {s[2] / F:5.2f} {100 * s[3] / F:6.1f} "
                  f"{s[4] / F:9.4f} {-0.2 * (s[2] + s[4]) / F:12.4f}")
            tot += s
    F = tot[0]
    print(f"all {int(F)} frames: self-contact in {100 * tot[1] / F:.1f} % (mean {tot[2] / F:.3f}, "
          f"{-0.2 * tot[2] / F:.4f} a step), over a soft limit in {100 * tot[3] / F:.1f} % (mean "
          f"{tot[4] / F:.4f} rad, {-0.2 * tot[4] / F:.4f} a step)")
    print("pairs (frames):", ", ".join(f"{p[0]}-{p[1]} {n}" for p, n in pairs.most_common(8)))


if __name__ == "__main__":
    main()
