#!/usr/bin/env python3
"""export_g1_check: a G1 tracking policy's ONNX export in MuJoCo's own simulator (tools/onnx_mujoco_eval.py).

Usage: export_g1_check.py ADJOINT G1_OBS_DUMP

Trains a tiny g1_tracking checkpoint on the CPU (the ∇Mimic preset, 8 worlds, one clip, 2 iterations), exports it
(--onnx and --blob), then
  (a) the metadata read back with onnx against MuJoCo's compiled model: joints in actuator order, kp and kd of the
      position actuators, effort limits, armature, control dt; the action scale against the task's formula
      0.25 effort / kp; the default pose against mjlab's knees-bent keyframe; observation layout against the
      observation names and MuJoCo's hinge order; the blob's FILE.json equal to the ONNX metadata;
  (b) the consumer's start state and its observations against the task's own (g1_obs_dump: the float32 engine's
      state, observation and the trainer's action at the start and after 3 steps of the trainer's policy):
      observations within float32 rounding, onnxruntime's action on the task's observation within 1e-5 of the
      trainer's, the consumer's position targets equal the task's (both clamped to ctrlrange);
  (c) a 50-step run of one clip: exit 0, MPKPE and drift finite, 0 mm at the start state, the reported means
      equal the per-step series, an eval.json's figures printed and stored beside them (--beside); with h5py, the consumer's reference against `adjoint motion build`'s library
      (float32) and runs on both, one process or two (--jobs 2) alike; bad clips, a missing policy and an
      unknown --clip exit 2 naming them.
Exit 0 pass, 1 fail, 77 skipped (onnx / onnxruntime / mujoco missing, or the G1 model / LAFAN1 clips absent).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import mujoco
    import numpy as np
    import onnx
except ImportError as e:
    print(f"export_g1_check: skipped: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import onnx_mujoco_eval as ome  # noqa: E402

CLIP = "lafan1_g1/walk1_subject1.csv.gz"
failures = []
ncheck = 0


def check(cond, msg):
    global ncheck
    ncheck += 1
    if not cond:
        failures.append(msg)
        print("FAIL", msg)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


# mjlab's G1 knees-bent keyframe (the task's default pose), by joint name
def default_pose(j):
    table = {"hip_pitch": -0.312, "knee": 0.669, "ankle_pitch": -0.363, "elbow": 0.6, "shoulder_pitch": 0.2}
    for k, v in table.items():
        if k in j:
            return v
    return {"left_shoulder_roll_joint": 0.2, "right_shoulder_roll_joint": -0.2}.get(j, 0.0)


def check_metadata(meta, model, side):
    A = model.nu
    J = mujoco.mjtObj.mjOBJ_JOINT
    act_joint = [mujoco.mj_id2name(model, J, model.actuator_trnid[i, 0]) for i in range(A)]
    names = json.loads(meta["joint_names"])
    check(names == act_joint, f"joint_names {names[:3]}... are not the actuators' joints in actuator order")
    check(json.loads(meta["action_names"]) == [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, i)
                                                for i in range(A)], "action_names")
    kp, kd = np.array(json.loads(meta["kp"])), np.array(json.loads(meta["kd"]))
    e_kp = float(np.abs(kp - model.actuator_gainprm[:, 0]).max())
    e_kd = float(np.abs(kd + model.actuator_biasprm[:, 2]).max())
    check(e_kp <= 1e-12 and e_kd <= 1e-12, f"kp / kd vs MuJoCo's actuators: {e_kp:g} {e_kd:g}")
    check(np.all(kp > 0) and np.all(kd > 0), "kp / kd positive")
    check(np.allclose(json.loads(meta["effort_limit"]), model.actuator_forcerange[:, 1], rtol=0, atol=1e-12),
          "effort_limit vs forcerange")
    dof = model.jnt_dofadr[model.actuator_trnid[:, 0]]
    check(np.allclose(json.loads(meta["joint_armature"]), model.dof_armature[dof], rtol=0, atol=1e-15),
          "joint_armature vs dof_armature")
    scale = np.array(json.loads(meta["action_scale"]))
    want = 0.25 * model.actuator_forcerange[:, 1] / model.actuator_gainprm[:, 0]
    e_sc = float(np.abs(scale / want - 1).max())
    check(e_sc <= 1e-6, f"action_scale vs 0.25 effort / kp: relative {e_sc:g}")
    dp = np.array(json.loads(meta["default_joint_pos"]))
    e_dp = float(np.abs(dp - [default_pose(j) for j in act_joint]).max())
    check(e_dp <= 1e-9, f"default_joint_pos vs the knees-bent keyframe: {e_dp:g}")
    check(abs(float(meta["control_dt"]) - 4 * model.opt.timestep) <= 1e-12, f"control_dt {meta['control_dt']}")
    check(meta["residual"] == "1" and meta["action_offset"] == "reference_joint_pos", "residual / action_offset")
    check(meta["normalizer"] == "in_graph" and "obs_mean" in meta, "normalizer in the graph")
    layout = json.loads(meta["observation_layout"])
    obs_names = json.loads(meta["observation_names"])
    check(sum(s for _, s in layout) == int(meta["obs_dim"]) == len(obs_names) == 160, "layout sizes")
    k = 0
    for term, size in layout:
        check(all(n.split("/")[0] == term for n in obs_names[k:k + size]), f"layout term {term} vs observation_names")
        k += size
    hinges = [mujoco.mj_id2name(model, J, j) for j in range(model.njnt) if model.jnt_type[j] == 3]
    check(json.loads(meta["observation_joint_names"]) == hinges, "observation_joint_names vs MuJoCo's hinge order")
    check(meta["anchor_body_name"] == "torso_link" and len(json.loads(meta["body_names"])) == 14, "tracked bodies")
    check(json.loads(meta["termination"])["anchor_z"] == 0.25, "termination thresholds")
    check(side == meta, f"the blob's FILE.json differs from the ONNX metadata in "
          f"{sorted(set(side.items()) ^ set(meta.items()))[:3]}")
    print(f"(a) metadata: {len(meta)} keys; kp / kd vs MuJoCo max abs {e_kp:.2g} / {e_kd:.2g}; action_scale vs "
          f"0.25 effort / kp: relative {e_sc:.2g}; default pose {e_dp:.2g}")


def check_observations(dump, onnx_path):
    pol = ome.Policy(onnx_path)
    model = mujoco.MjModel.from_xml_path(ome.find_asset(pol.meta["model"]))
    tr = ome.Tracker(mujoco, model, pol)
    steps = dump["steps"]
    q = ome.resample(ome.read_clip(ome.find_asset(CLIP), model.nq - 7), 30.0, 1 / pol.dt)[:len(steps) + 2]
    ref = ome.reference(mujoco, model, q, 1 / pol.dt)
    d = mujoco.MjData(model)
    tr.start(d, ref)
    s0 = steps[0]
    e_q = float(np.abs(d.qpos - s0["qpos"]).max())
    e_v = float(np.abs(d.qvel - s0["qvel"]).max())
    check(e_q <= 1e-5 and e_v <= 1e-4, f"start state vs the task's: qpos {e_q:g}, qvel {e_v:g}")
    own = tr.observe(d, ref, 0, np.zeros(pol.act_dim))
    e_own = float(np.abs(own - s0["obs"]).max())
    check(e_own <= 1e-4, f"the consumer's first observation vs the task's: max abs {e_own:g}")
    a_own = pol(own)
    e_aown = float(np.abs(a_own - s0["action"]).max())
    worst_o = worst_a = worst_c = 0.0
    for k, s in enumerate(steps):
        d.qpos[:], d.qvel[:] = s["qpos"], s["qvel"]
        mujoco.mj_kinematics(model, d)
        o = tr.observe(d, ref, s["frame"], np.array(s["last_action"]))
        tol = 2e-5 * (1 + np.abs(np.array(s["obs"])))
        e = np.abs(o - s["obs"])
        worst_o = max(worst_o, float(e.max()))
        check(np.all(e <= tol), f"step {k}: observation vs the task's: max abs {e.max():g} at "
              f"{pol.meta and json.loads(pol.meta['observation_names'])[int(e.argmax())]}")
        a = pol(np.array(s["obs"]))
        ea = float(np.abs(a - s["action"]).max())
        worst_a = max(worst_a, ea)
        check(ea <= 1e-5, f"step {k}: onnxruntime vs the trainer's action: {ea:g}")
        if k + 1 < len(steps):  # the targets this step's action sets, as the task set them
            tr.control(d, ref, s["frame"], np.array(s["action"]))
            rng = model.actuator_ctrlrange
            ec = float(np.abs(d.ctrl - np.clip(steps[k + 1]["ctrl"], rng[:, 0], rng[:, 1])).max())
            worst_c = max(worst_c, ec)
            check(ec <= 1e-5, f"step {k}: position targets vs the task's: {ec:g}")
    check(any(np.abs(np.array(s["obs"][58:61])).max() > 1e-4 for s in steps[1:]),
          "the later steps move the anchor off the reference (the comparison is not of zeros)")
    print(f"(b) start state vs the task's: qpos {e_q:.2g}, qvel {e_v:.2g}; first observation built by the consumer "
          f"{e_own:.2g} (its action {e_aown:.2g}); {len(steps)} task states: observations max abs {worst_o:.2g}, "
          f"onnxruntime vs trainer actions {worst_a:.2g}, targets {worst_c:.2g}")


def check_library(adj, tmp, tool, pth):
    """The consumer's reference from the CSV against `adjoint motion build`'s library read with h5py (skipped
    without h5py), and the consumer run on both."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        print("(c) motion library input: skipped (no h5py)")
        return
    import gzip
    clips = os.path.join(tmp, "clips")
    os.makedirs(clips)
    with gzip.open(ome.find_asset(CLIP), "rt") as f:
        rows = [next(f) for _ in range(75)]
    with open(os.path.join(clips, "walk.csv"), "w") as f:
        f.writelines(rows)
    with open(os.path.join(clips, "MANIFEST.tsv"), "w") as f:
        f.write("file\tframes\nwalk.csv\t75\n")
    lib = os.path.join(tmp, "lib.h5")
    rc, out = run([adj, "motion", "build", clips, "-o", lib])
    check(rc == 0, f"motion build exit {rc}: {out}")
    if rc:
        return
    model = mujoco.MjModel.from_xml_path(ome.find_asset("g1/scene_flat.xml"))
    a = ome.reference(mujoco, model, ome.resample(ome.read_clip(os.path.join(clips, "walk.csv"), 29), 30.0, 50.0),
                      50.0)
    b = ome.library_ref(model, lib, "walk.csv", 50.0)
    worst = {k: float(np.abs(a[k] - b[k]).max() / (1 + np.abs(a[k]).max())) for k in a}
    check(all(v <= 1e-6 for v in worst.values()) and a["qpos"].shape == b["qpos"].shape,
          f"reference vs the motion library: {worst}")
    res = [os.path.join(tmp, f"lib{k}.json") for k in range(2)]
    for src, r in zip((lib, clips), res):
        rc, out = run([sys.executable, tool, pth, src, "--max-steps", "20", "--json", r])
        check(rc == 0, f"onnx_mujoco_eval on {src}: exit {rc}: {out}")
    par = os.path.join(tmp, "jobs.json")
    rc, out = run([sys.executable, tool, pth, lib, clips, "--max-steps", "20", "--json", par, "--jobs", "2"])
    check(rc == 0, f"onnx_mujoco_eval --jobs 2: exit {rc}: {out}")
    if not failures:
        x, y = (json.load(open(r))["clips"][0] for r in res)
        check(x["name"] == y["name"] == "walk.csv" and x["fall_step"] == y["fall_step"]
              and abs(x["mpkpe_mm"] - y["mpkpe_mm"]) <= 0.1, f"library vs CSV run: {x} {y}")
        check(json.load(open(par))["clips"] == [x, y], "--jobs 2 gives the results of one process")
    print(f"(c) the consumer's reference vs `adjoint motion build`'s library ({a['qpos'].shape[0]} frames): "
          f"relative max {max(worst.values()):.2g} ({max(worst, key=worst.get)})")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    adj, dumper = sys.argv[1:]
    try:
        ome.find_asset(CLIP), ome.find_asset("g1/scene_flat.xml")
    except ome.InputError as e:
        print(f"export_g1_check: skipped: {e}")
        return 77
    tmp = tempfile.mkdtemp(prefix="adjoint_export_g1_")
    try:
        rc, out = run([adj, "train", "configs/g1_tracking_nablamimic.yaml", "--device", "cpu", "--num-envs", "8",
                       "--max-iterations", "2", "--quiet", "--run-dir", os.path.join(tmp, "run"),
                       "run.eval_episodes=0", "algo.horizon=8", f"env.params=residual=1, motion={CLIP}"])
        check(rc == 0, f"train exit {rc}: {out[-500:]}")
        ckpt = os.path.join(tmp, "run", "ckpt_000002.h5")
        pth, blob = os.path.join(tmp, "policy.onnx"), os.path.join(tmp, "policy.bin")
        rc, out = run([adj, "export", ckpt, "--onnx", pth, "--blob", blob])
        check(rc == 0, f"export exit {rc}: {out}")
        if rc:
            return 1
        model_onnx = onnx.load(pth)
        onnx.checker.check_model(model_onnx, full_check=True)
        keys = [p.key for p in model_onnx.metadata_props]
        check(len(keys) == len(set(keys)), "duplicate metadata keys")
        meta = {p.key: p.value for p in model_onnx.metadata_props}
        model = mujoco.MjModel.from_xml_path(ome.find_asset("g1/scene_flat.xml"))
        check_metadata(meta, model, json.load(open(blob + ".json")))

        dump = os.path.join(tmp, "dump.json")
        rc, out = run([dumper, ckpt, CLIP, "3", dump])
        check(rc == 0, f"g1_obs_dump exit {rc}: {out}")
        if rc == 0:
            check_observations(json.load(open(dump)), pth)

        res = os.path.join(tmp, "eval.json")
        tool = os.path.join(HERE, "..", "tools", "onnx_mujoco_eval.py")
        other = os.path.join(tmp, "other_eval.json")  # an eval.json of adjoint eval --motions, made up
        with open(other, "w") as f:
            json.dump({"clips": [{"name": "walk1_subject1.csv", "fall_step": 7, "fall_time_s": 0.14,
                                  "mpkpe_mm": 12.5, "anchor_drift_m": 0.25}]}, f)
        rc, out = run([sys.executable, tool, pth, CLIP, "--max-steps", "50", "--per-step", "--json", res,
                       "--beside", other])
        check(" 0.14 " in out and "| 12.5 " in out and "| 0.250" in out, f"--beside table: {out[-300:]}")
        check(rc == 0, f"onnx_mujoco_eval exit {rc}: {out}")
        if rc == 0:
            c = json.load(open(res))["clips"][0]
            mp, dr = c["per_step"]["mpkpe_mm"], c["per_step"]["anchor_drift_m"]
            n = c["fall_step"] or 50
            check(c["name"] == "walk1_subject1.csv" and c["steps"] == 50, f"clip {c['name']} steps {c['steps']}")
            check(len(mp) == n + 1 and np.all(np.isfinite(mp)) and np.all(np.isfinite(dr)), "finite per-step series")
            check(mp[0] <= 1e-6 and dr[0] <= 1e-9, f"MPKPE at the start state {mp[0]:g} mm, drift {dr[0]:g} m")
            check(abs(c["mpkpe_mm"] - np.mean(mp[1:])) <= 1e-9 * (1 + c["mpkpe_mm"]), "MPKPE is the steps' mean")
            check(abs(c["anchor_drift_m"] - np.mean(dr[1:])) <= 1e-12, "drift is the steps' mean")
            check(c["beside"] == {"fall_step": 7, "fall_time_s": 0.14, "mpkpe_mm": 12.5, "anchor_drift_m": 0.25},
                  f"--beside in the JSON: {c.get('beside')}")
            check((c["fall_time_s"] is None) == (c["fall_step"] == 0) == (not c["fell"]),
                  "fall_time_s null exactly without a fall")
            print(f"(c) 50 steps of {c['name']}: fall_step {c['fall_step']}, MPKPE {c['mpkpe_mm']:.1f} mm (start "
                  f"{mp[0]:.2g} mm), drift {c['anchor_drift_m']:.3f} m")

        check_library(adj, tmp, tool, pth)

        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("0 0 0.8 0 0 0 1 " + " ".join(["0"] * 29) + "\n" + "0 0 x\n")
        for args, what in (([pth, bad], f"{bad}:2"), ([os.path.join(tmp, "none.onnx"), CLIP], "none.onnx"),
                           ([pth, CLIP, "--clip", "nosuch.csv"], "--clip nosuch.csv")):
            rc, out = run([sys.executable, tool] + args)
            check(rc == 2 and what in out, f"bad input {what}: exit {rc}: {out.strip()[-200:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"export_g1_check: {ncheck - len(failures)} of {ncheck} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
