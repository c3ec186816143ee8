"""eval_motions_check.py ADJOINT: `adjoint eval --motions` against MuJoCo's own kinematics.

Two LAFAN1 clips cut to 3 s and 2 s (a clip directory written here from the assets), G1 tracking checkpoints
of two short training iterations (CPU) with the trainer's motion evaluation on (run.eval_motions=2, every
iteration, 40 steps a clip): its rows equal `adjoint eval CKPT --motions DIR --max-steps 40` of the same
checkpoints. Then `adjoint eval --motions DIR --save-trajectory` of the last one:
  - the trajectory's first row: the robot at the clip's first frame (the CSV's first row), the reference too;
  - per clip, from the saved robot and reference qpos through MuJoCo C's mj_kinematics (float64): MPKPE (the 14
    bodies against the reference re-anchored to the robot's torso: its x, y, the reference height, turned by
    the yaw between the anchors) and the anchor drift, averaged over the steps up to the fall, equal to
    eval.json's; the fall at the first step where the task's termination holds (torso height or tilt, ankle or
    wrist height), none before it; the normalized return in [0, fall_step / steps];
  - tools/render_trajectory.py draws two frames of it (PNG, headless EGL; not run where no context can be made);
  - eval.csv agrees with eval.json; one clip alone (--clip, --max-steps) gives the same fall and values as
    beside the other (a world does not depend on the others);
  - bad input exits 2: a missing motion file, a malformed clip, an unknown --clip, a clip named twice, --motions
    on cartpole (and run.eval_motions on cartpole), --out that is not a directory, --device cuda without
    a CUDA build or device.
With --gpu: only `--device cuda` against `--device cpu` on both clips (50 steps): the same falls, the values
within 1e-3 (normalized return) and 1e-2 (MPKPE, drift) relative; 77 without a CUDA device or backend.
ADJ_GPU_TEST_SMALL=1 (tests/gpu_test_size.h): 20 steps instead of 50.
Skipped (77) without the clips or the G1 model.
"""
import csv
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile


ADJ = sys.argv[1]
GPU = "--gpu" in sys.argv[2:]  # only --device cuda against --device cpu (ctest label gpu; 77 without a device)
BODIES = ["pelvis", "left_hip_roll_link", "left_knee_link", "left_ankle_roll_link", "right_hip_roll_link",
          "right_knee_link", "right_ankle_roll_link", "torso_link", "left_shoulder_roll_link", "left_elbow_link",
          "left_wrist_yaw_link", "right_shoulder_roll_link", "right_elbow_link", "right_wrist_yaw_link"]
EE = ["left_ankle_roll_link", "right_ankle_roll_link", "left_wrist_yaw_link", "right_wrist_yaw_link"]
CLIPS = [("walk1_subject1.csv", 90), ("dance1_subject1.csv", 60)]  # name, 30 fps rows kept

checks = fails = 0


def check(ok, what):
    global checks, fails
    checks += 1
    if not ok:
        fails += 1
        print("FAIL:", what)


def asset_dir(*files):
    for d in [os.environ.get("ADJOINT_ASSETS", ""), "assets", "../shared/assets"]:
        if d and all(os.path.isfile(os.path.join(d, f)) for f in files):
            return d
    return None


def run(*args):
    p = subprocess.run([ADJ] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def oracle(model, q, r):
    """MPKPE (m), anchor drift (m), terminated of robot qpos q against reference qpos r (float64 kinematics)."""
    d = mujoco.MjData(model)
    out = []
    for x in (q, r):
        d.qpos[:] = x
        mujoco.mj_kinematics(model, d)
        out.append((d.xpos.copy(), d.xmat.copy().reshape(-1, 3, 3)))
    (p, R), (pr, Rr) = out
    a = model.body("torso_link").id
    Rd = R[a] @ Rr[a].T
    psi = np.arctan2(Rd[1, 0], Rd[0, 0])
    c, s = np.cos(psi), np.sin(psi)
    err = []
    for name in BODIES:
        b = model.body(name).id
        o = pr[b] - pr[a]
        rel = np.array([p[a][0] + c * o[0] - s * o[1], p[a][1] + s * o[0] + c * o[1], pr[a][2] + o[2]])
        err.append(np.linalg.norm(rel - p[b]))
    term = abs(pr[a][2] - p[a][2]) > 0.25 or abs(Rr[a][2, 2] - R[a][2, 2]) > 0.8
    term = term or any(abs(pr[model.body(n).id][2] - p[model.body(n).id][2]) > 0.25 for n in EE)
    return np.mean(err), np.linalg.norm(pr[a] - p[a]), term


def gpu_vs_cpu(rd, clips, tmp):
    """--device cuda against --device cpu (the float32 engine on both; the GPU's sin/cos differ, so close, not equal)."""
    res = {}
    steps = "20" if os.environ.get("ADJ_GPU_TEST_SMALL", "0") not in ("", "0") else "50"
    for dev in ("cuda", "cpu"):  # cuda first: skip early without a device
        o = os.path.join(tmp, dev)
        os.makedirs(o)
        rc, out = run("eval", rd, "--motions", clips, "--max-steps", steps, "--device", dev, "--out", o)
        if dev == "cuda" and rc == 2 and ("no CUDA device" in out or "no CUDA backend" in out):
            print("eval_motions_check --gpu: no CUDA device or backend: skipped")
            return 77
        check(rc == 0, "eval --device %s: exit %d: %s" % (dev, rc, out[-400:]))
        res[dev] = json.load(open(os.path.join(o, "eval.json")))["clips"] if rc == 0 else []
    for a, b in zip(res["cpu"], res["cuda"]):
        check(a["name"] == b["name"] and a["steps"] == b["steps"] and a["fall_step"] == b["fall_step"],
              "cpu %s / cuda %s" % (a, b))
        for k, tol in (("normalized_return", 1e-3), ("mpkpe_mm", 1e-2), ("anchor_drift_m", 1e-2)):
            check(abs(a[k] - b[k]) <= tol * max(1.0, abs(a[k])), "%s %s: cpu %g, cuda %g" % (a["name"], k, a[k], b[k]))
    check(len(res["cuda"]) == 2, "cuda clips %d" % len(res["cuda"]))
    print("eval_motions_check --gpu: %d passed, %d failed" % (checks - fails, fails))
    return 1 if fails else 0


def main():
    src = asset_dir("lafan1_g1/walk1_subject1.csv.gz", "lafan1_g1/dance1_subject1.csv.gz", "g1/scene_flat.xml")
    if not src:
        print("eval_motions_check: LAFAN1 clips or the G1 model not on the asset path: skipped")
        return 77
    tmp = tempfile.mkdtemp()
    clips = os.path.join(tmp, "clips")
    os.makedirs(clips)
    first = {}
    with open(os.path.join(clips, "MANIFEST.tsv"), "w") as man:
        man.write("file\tframes\n")
        for name, rows in CLIPS:
            with gzip.open(os.path.join(src, "lafan1_g1", name + ".gz"), "rt") as f:
                lines = [next(f) for _ in range(rows)]
            with open(os.path.join(clips, name), "w") as f:
                f.writelines(lines)
            man.write("%s\t%d\n" % (name, rows))
            v = [float(x) for x in lines[0].split(",")]
            first[name] = v[:3] + [v[6], v[3], v[4], v[5]] + v[7:]  # xyzw -> wxyz
    rd = os.path.join(tmp, "run")
    params = "env.params=residual=1, motion=" + clips
    periodic = [] if GPU else ["run.eval_motions=2", "run.eval_every=1", "run.eval_motion_steps=40"]
    rc, out = run("train", "configs/g1_tracking_nablamimic.yaml", "--device", "cpu", "--num-envs", "4",
                  "--max-iterations", "2", "--run-dir", rd, "run.eval_episodes=0", "algo.horizon=4", params, *periodic)
    check(rc == 0, "train: exit %d: %s" % (rc, out[-400:]))
    if GPU:  # needs neither MuJoCo's Python package, h5py nor numpy (a GPU machine may lack them)
        return gpu_vs_cpu(rd, clips, tmp)
    global h5py, mujoco, np
    import h5py
    import mujoco
    import numpy as np
    model = mujoco.MjModel.from_xml_path(os.path.join(src, "g1/scene_flat.xml"))
    # the trainer's periodic motion evaluation: the same numbers as adjoint eval of its checkpoints
    mrows = list(csv.DictReader(open(os.path.join(rd, "motion_evals.csv")))) if rc == 0 else []
    check([r["iteration"] for r in mrows] == ["1", "2"], "motion_evals.csv iterations %s" % [r["iteration"] for r in mrows])
    for r in mrows:
        o = os.path.join(tmp, "it" + r["iteration"])
        os.makedirs(o)
        rc, out = run("eval", os.path.join(rd, "ckpt_%06d.h5" % int(r["iteration"])), "--motions", clips,
                      "--max-steps", "40", "--out", o)
        e = json.load(open(os.path.join(o, "eval.json")))["summary"] if rc == 0 else {}
        check(rc == 0 and int(r["falls"]) == e["falls"] and int(r["clips"]) == 2 and
              abs(float(r["normalized_return"]) - e["normalized_return"]) < 1e-8 and
              abs(float(r["mpkpe_mm"]) - e["mpkpe_mm"]) < 1e-6 * e["mpkpe_mm"],
              "iteration %s: trainer %s, adjoint eval %s" % (r["iteration"], r, e))
    traj = os.path.join(tmp, "traj.h5")
    rc, out = run("eval", rd, "--motions", clips, "--save-trajectory", traj)
    check(rc == 0 and "mean over 2 clips" in out, "eval --motions: exit %d: %s" % (rc, out[-400:]))
    if rc:
        return 1
    ev = json.load(open(os.path.join(rd, "eval.json")))
    check([c["name"] for c in ev["clips"]] == [n for n, _ in CLIPS], "clip names %s" % [c["name"] for c in ev["clips"]])
    rows = list(csv.DictReader(open(os.path.join(rd, "eval.csv"))))
    h = h5py.File(traj, "r")
    check(h.attrs["format"] in (b"adjoint trajectory 1", "adjoint trajectory 1"), "trajectory format")
    check(abs(h["dt"][0] - 0.02) < 1e-6, "dt %s" % h["dt"][0])
    mp_all, dr_all = [], []
    for c, row in zip(ev["clips"], rows):
        name, T = c["name"], c["steps"]
        q, r = np.array(h[name + "/qpos"], dtype=np.float64), np.array(h[name + "/ref_qpos"], dtype=np.float64)
        # 30 fps rows resampled to 50 Hz: frames 0 .. floor((rows - 1) * 50 / 30)
        n30 = dict(CLIPS)[name]
        check(T == (n30 - 1) * 50 // 30 + 1, "%s: %d steps" % (name, T))
        check(q.shape == (T + 1, 36) and r.shape == (T + 1, 36), "%s: trajectory shapes %s %s" % (name, q.shape, r.shape))
        check(np.abs(r[0] - first[name]).max() < 1e-6, "%s: reference row 0 is not the clip's first frame" % name)
        check(np.abs(q[0] - r[0]).max() < 1e-6, "%s: robot row 0 off the reference by %g" % (name, np.abs(q[0] - r[0]).max()))
        fall = int(h[name + "/fall_step"][0])
        check(fall == c["fall_step"], "%s: fall_step %d in the file, %d in eval.json" % (name, fall, c["fall_step"]))
        scored = fall if fall else T
        mp, dr, first_term = [], [], 0
        for k in range(1, T + 1):
            e, d, term = oracle(model, q[k], r[k])
            if k <= scored:
                mp.append(e), dr.append(d)
            if term and not first_term:
                first_term = k
        check(first_term == fall, "%s: the task's termination first holds at step %d, eval says %d" % (name, first_term, fall))
        m_ref, d_ref = 1000 * np.mean(mp), np.mean(dr)
        check(abs(c["mpkpe_mm"] - m_ref) <= 1e-3 + 1e-4 * m_ref, "%s: MPKPE %.6f mm, MuJoCo %.6f" % (name, c["mpkpe_mm"], m_ref))
        check(abs(c["anchor_drift_m"] - d_ref) <= 1e-6 + 1e-4 * d_ref, "%s: drift %.8f m, MuJoCo %.8f" % (name, c["anchor_drift_m"], d_ref))
        check(0 <= c["normalized_return"] <= scored / T + 1e-9, "%s: normalized return %g" % (name, c["normalized_return"]))
        check(abs(float(row["mpkpe_mm"]) - c["mpkpe_mm"]) < 1e-6 * max(1, c["mpkpe_mm"]) and row["clip"] == name and
              (row["fall_time_s"] == "") == (fall == 0), "%s: eval.csv row %s" % (name, row))
        mp_all.append(c["mpkpe_mm"]), dr_all.append(c["anchor_drift_m"])
    # the render script on the trajectory (headless EGL; left out where no EGL context can be made)
    frames = os.path.join(tmp, "frames")
    p = subprocess.run([sys.executable, "tools/render_trajectory.py", traj, "--clip", CLIPS[0][0], "-o", frames,
                        "--max-frames", "2", "--width", "160", "--height", "120", "--offset", "1"],
                       capture_output=True, text=True)
    if p.returncode and ("EGL" in p.stderr or "OpenGL" in p.stderr or "gladLoadGL" in p.stderr):
        print("eval_motions_check: no headless OpenGL context here: the render script not run")
    elif shutil.which("ffmpeg") is None:
        from PIL import Image
        pngs = sorted(glob.glob(os.path.join(frames, "frame_*.png")))
        img = np.asarray(Image.open(pngs[0])) if pngs else np.zeros((1, 1, 3))
        check(p.returncode == 0 and len(pngs) == 2 and img.shape == (120, 160, 3) and img.std() > 5,
              "render_trajectory: exit %d, %d frames, std %.1f: %s" % (p.returncode, len(pngs), img.std(), p.stderr[-300:]))
    s = ev["summary"]
    check(abs(s["mpkpe_mm"] - np.mean(mp_all)) < 1e-6 * max(1, s["mpkpe_mm"]) and s["falls"] == sum(c["fell"] for c in ev["clips"]),
          "summary %s" % s)
    # one clip alone, cut: the same world as beside the other
    c1 = ev["clips"][1]
    cut = c1["fall_step"] + 5 if c1["fall_step"] else 20
    out2 = os.path.join(tmp, "one")
    os.makedirs(out2)
    rc, out = run("eval", rd, "--motions", clips, "--clip", c1["name"], "--max-steps", str(cut), "--out", out2)
    one = json.load(open(os.path.join(out2, "eval.json")))["clips"] if rc == 0 else []
    check(rc == 0 and len(one) == 1 and one[0]["steps"] == min(cut, c1["steps"]) and one[0]["fall_step"] == c1["fall_step"],
          "--clip --max-steps: exit %d %s" % (rc, one))
    if c1["fall_step"] and one:
        check(one[0]["mpkpe_mm"] == c1["mpkpe_mm"] and one[0]["anchor_drift_m"] == c1["anchor_drift_m"],
              "one clip alone: %s vs %s" % (one[0], c1))
    # bad input: exit 2 with a message naming the culprit
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "MANIFEST.tsv"), "w") as f:
        f.write("file\tframes\nbroken.csv\t2\n")
    with open(os.path.join(bad, "broken.csv"), "w") as f:
        f.write("0,0,0.8,0,0,0,1\nnot,a,number\n")
    rcp = os.path.join(tmp, "cartpole")
    rc, out = run("train", "configs/cartpole_ppo.yaml", "--num-envs", "4", "--max-iterations", "1", "--run-dir", rcp,
                  "algo.horizon=4", "run.eval_episodes=0")
    check(rc == 0, "cartpole train: %s" % out[-300:])
    for args, want in [((rd, "--motions", os.path.join(tmp, "missing.h5")), "missing.h5"),
                       ((rd, "--motions", bad), "broken.csv"),
                       ((rd, "--motions", clips, "--clip", "nope.csv"), "nope.csv"),
                       ((rd, "--motions", clips, "--clip", c1["name"], "--clip", c1["name"]), "twice"),
                       ((rcp, "--motions", clips), "cartpole"),
                       ((rd, "--motions", clips, "--out", traj), "not a directory"),
                       ((rd, "--clip", c1["name"]), "need --motions")]:
        rc, out = run("eval", *args)
        check(rc == 2 and want in out, "eval %s: exit %d (want 2 naming %s): %s" % (" ".join(args[1:]), rc, want, out[-300:]))
    # --device cuda: exit 2 naming it without a CUDA build or device (with one, tests/eval_motions_gpu.sh)
    rc, out = run("eval", rd, "--motions", clips, "--device", "cuda", "--max-steps", "5", "--out", out2)
    check(rc == 2 and "cuda" in out or rc == 0, "eval --device cuda: exit %d: %s" % (rc, out[-300:]))
    rc, out = run("train", "configs/cartpole_ppo.yaml", "--num-envs", "4", "--max-iterations", "1", "--run-dir",
                  os.path.join(tmp, "cp2"), "run.eval_motions=2")
    check(rc == 2 and "run.eval_motions" in out and "cartpole" in out, "train cartpole run.eval_motions=2: exit %d: %s" % (rc, out[-300:]))
    print("eval_motions_check: %d passed, %d failed" % (checks - fails, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
