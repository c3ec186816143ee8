#!/usr/bin/env python3
"""onnx_mujoco_eval: an exported motion-tracking policy run by onnxruntime inside MuJoCo's own simulator.

Usage: onnx_mujoco_eval.py POLICY.onnx CLIPS [CLIPS ...] [--clip NAME]... [--model XML] [--max-steps N]
                           [--json FILE] [--per-step] [--jobs N] [--beside EVAL.json]

A consumer of `adjoint export --onnx` that knows nothing of the trainer: everything comes from the ONNX
model's metadata_props (g1_tracking's export hook) and the clips. CLIPS: a LAFAN1-style clip CSV (.csv or
.csv.gz: root x y z, quaternion x y z w, the joints in the model's qpos[7:] order, 30 fps), a directory with a
MANIFEST.tsv (every clip in its order), or an HDF5 motion library of `adjoint motion build` (.h5, needs h5py;
its reference is used as stored, as the task reads it); looked up on the asset search path (the path,
$ADJOINT_ASSETS, ./assets, ../shared/assets, then the same beside this repository). --clip NAME keeps the clips
of that name (the manifest's file name, e.g. walk1_subject1.csv). The model is the metadata's `model` (--model
replaces it).

Per clip, as the task (envs/g1_tracking.c) and `adjoint eval --motions` define it:
  reference  a CSV clip resampled to the control rate (linear joints and position, slerp for the root), body
             poses by MuJoCo's mj_kinematics, velocities by differences inside the clip (central, one-sided at
             the ends; angular: the rotation vector of q[k+1] q[k-1]^-1), in float64, as `adjoint motion build`
             makes the library (which stores it in float32);
  start      frame 0, the reference state: root pose and velocity of the reference, joints clipped to the soft
             limits (mid -+ soft_joint_limit_factor / 2 range), joint velocities of the reference, ctrl 0;
  step k     (k = 0 .. T-1) observation of the state and frame k (the metadata's observation_layout), action by
             onnxruntime, ctrl = clip(action_offset + action_scale * action, ctrlrange) per actuator, then
             control_dt / timestep MuJoCo steps; the state is compared with frame k;
  fall       the first step whose state meets a termination (the metadata's thresholds); fall time = its
             number (1-based) x control_dt; the clip stops there;
  MPKPE      mean over the steps up to the fall (or the end) of the mean distance of the tracked bodies
             (body_names) to the reference re-anchored to the robot's anchor (the reference anchor moved to the
             robot anchor's x, y, turned by the yaw of R_anchor R_ref_anchor^T), in mm;
  drift      mean over the same steps of the anchor's world distance to the reference anchor, in m.
A table on stdout; --json FILE, laid out as `adjoint eval --motions`'s eval.json (its clip and summary keys, less
the normalized return): {"policy", "model", "simulator", "dt", "max_steps", "clips": [{"name", "steps",
"duration_s", "fell", "fall_step", "fall_time_s", "mpkpe_mm", "anchor_drift_m"}], "summary": {"clips", "falls",
"mpkpe_mm", "anchor_drift_m"}} (fall_step 0 and fall_time_s null: no fall; summary: unweighted means over the
clips), written through a temporary file and a rename; --per-step adds each clip's series (entry 0: the
start state against frame 0, then one per step). --max-steps N cuts every clip to its first N steps. --jobs N
runs N clips at a time in separate processes (one onnxruntime thread each; the same results in the test).
--beside EVAL.json prints `adjoint eval --motions`' results for the same clips (by name) beside ours and adds
them to each clip of --json as "beside".
Exit 0; 2 bad input (a file, a clip line or a metadata key; the message names it); 1 a failed write.
"""
import argparse
import gzip
import json
import math
import os
import sys

import numpy as np

USAGE_ERROR = 2


class InputError(Exception):
    """Bad input: a message naming the file, line or key; exit 2."""


def find_asset(name):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cands = [name]
    roots = [os.environ.get("ADJOINT_ASSETS", ""), "assets", os.path.join("..", "shared", "assets"),
             os.path.join(here, "assets"), os.path.join(here, "..", "shared", "assets")]
    cands += [os.path.join(r, name) for r in roots if r]
    for c in cands:
        if os.path.exists(c):
            return c
    raise InputError(f"{name}: not found (searched ., $ADJOINT_ASSETS, ./assets, ../shared/assets)")


# ---- clips ----
def read_clip(path, njoint):
    """Rows of a LAFAN1-style CSV as MuJoCo qpos rows (quaternion w, x, y, z, normalised)."""
    opener = gzip.open if path.endswith(".gz") else open
    rows = []
    try:
        with opener(path, "rt") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    v = [float(x) for x in line.replace(",", " ").split()]
                except ValueError:
                    raise InputError(f"{path}:{lineno}: not a row of numbers") from None
                if len(v) != 7 + njoint or not all(math.isfinite(x) for x in v):
                    raise InputError(f"{path}:{lineno}: {len(v)} values (want {7 + njoint} finite numbers)")
                qx, qy, qz, qw = v[3:7]
                n = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
                if not n > 1e-9:
                    raise InputError(f"{path}:{lineno}: root quaternion has zero norm")
                rows.append(v[0:3] + [qw / n, qx / n, qy / n, qz / n] + v[7:])
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    except (EOFError, gzip.BadGzipFile) as e:
        raise InputError(f"{path}: {e}") from None
    if len(rows) < 2:
        raise InputError(f"{path}: {len(rows)} frames (at least 2)")
    return np.array(rows)


def is_library(path):
    return path.endswith(".h5") or path.endswith(".hdf5")


def clip_paths(arg):
    """(name, path) of each clip an argument names: a clip file, a directory's MANIFEST.tsv clips, or every clip of
    a motion library (path None: read by library_refs)."""
    path = find_asset(arg)
    if is_library(path):
        return [(name, None, path) for name in library_clips(path)[0]]
    if not os.path.isdir(path):
        name = os.path.basename(path)
        return [(name[:-3] if name.endswith(".gz") else name, path, None)]
    man = os.path.join(path, "MANIFEST.tsv")
    if not os.path.exists(man):
        raise InputError(f"{path}: a directory without MANIFEST.tsv")
    out = []
    with open(man) as f:
        for lineno, line in enumerate(f, 1):
            if lineno == 1 or not line.strip():
                continue
            name = line.split("\t")[0].strip()
            p = os.path.join(path, name)
            out.append((name, p + ".gz" if os.path.exists(p + ".gz") else p, None))
    return out


def slerp(q0, q1, t):
    b = q1.copy()
    c = float(np.dot(q0, b))
    if c < 0:
        b, c = -b, -c
    if c > 1 - 1e-12:
        w0, w1 = 1 - t, t
    else:
        th = math.acos(c)
        s = math.sin(th)
        w0, w1 = math.sin((1 - t) * th) / s, math.sin(t * th) / s
    o = w0 * q0 + w1 * b
    return o / np.linalg.norm(o)


def resample(q, fps_in, fps):
    """Frames at k / fps within the clip's duration: linear, slerp for the root quaternion."""
    n_in = q.shape[0]
    n = int(math.floor((n_in - 1) / fps_in * fps + 1e-9)) + 1
    out = np.empty((n, q.shape[1]))
    for k in range(n):
        s = k * fps_in / fps
        i = min(max(int(math.floor(s)), 0), n_in - 2)
        a = s - i
        out[k] = q[i] + a * (q[i + 1] - q[i])
        out[k, 3:7] = slerp(q[i, 3:7], q[i + 1, 3:7], a)
    return out


def world_ang_vel(q0, q1, dt):
    """Rotation vectors of q1 q0^-1 over dt (the shorter rotation), world frame; quaternions (..., 4) w, x, y, z."""
    w0, v0 = q0[..., :1], -q0[..., 1:]  # q0^-1
    w1, v1 = q1[..., :1], q1[..., 1:]
    w = w1 * w0 - np.sum(v1 * v0, axis=-1, keepdims=True)
    v = w1 * v0 + w0 * v1 + np.cross(v1, v0)
    sign = np.where(w < 0, -1.0, 1.0)
    w, v = w * sign, v * sign
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    k = np.divide(2 * np.arctan2(s, w), s * dt, out=np.zeros_like(s), where=s > 0)
    return v * k


def reference(mujoco, model, qpos, fps):
    """The reference at the control rate: joint pos / vel, body world poses and velocities (float64)."""
    d = mujoco.MjData(model)
    n, nb = qpos.shape[0], model.nbody
    pos, quat = np.empty((n, nb, 3)), np.empty((n, nb, 4))
    for k in range(n):
        d.qpos[:] = qpos[k]
        mujoco.mj_kinematics(model, d)
        pos[k], quat[k] = d.xpos, d.xquat
    a, b = np.maximum(np.arange(n) - 1, 0), np.minimum(np.arange(n) + 1, n - 1)
    h = ((b - a) / fps)[:, None]
    lin = (pos[b] - pos[a]) / h[:, :, None]
    jv = (qpos[b, 7:] - qpos[a, 7:]) / h
    ang = world_ang_vel(quat[a], quat[b], h[:, :, None])
    return {"qpos": qpos, "joint_pos": qpos[:, 7:], "joint_vel": jv, "body_pos_w": pos, "body_quat_w": quat,
            "body_lin_vel_w": lin, "body_ang_vel_w": ang}


# ---- an HDF5 motion library (`adjoint motion build`, motion/README.md): the reference as the task reads it ----
def h5_open(path):
    try:
        import h5py
    except ImportError:
        raise InputError(f"{path}: reading a motion library needs h5py (.venv/bin/pip install h5py); "
                         "give the clip CSVs instead") from None
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not a readable HDF5 file ({e})") from None


def library_clips(path):
    with h5_open(path) as f:
        try:
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["clip_names"][()]]
            return names, f["clip_start"][()], f["clip_len"][()]
        except KeyError as e:
            raise InputError(f"{path}: dataset {e} missing (not a motion library)") from None


def library_ref(model, path, name, fps, max_frames=None):
    """Clip `name` of the library as the reference dict of reference(); bodies indexed by model body id (the
    library leaves the world body out)."""
    names, start, length = library_clips(path)
    c = names.index(name)
    a, n = int(start[c]), int(length[c])
    if max_frames is not None:
        n = min(n, max_frames)
    with h5_open(path) as f:
        lib_fps = float(f["fps"][()])
        if abs(lib_fps - fps) > 1e-6 * fps:
            raise InputError(f"{path}: {lib_fps} fps, the policy's control rate is {fps} Hz")
        bodies = [b.decode() if isinstance(b, bytes) else str(b) for b in f["body_names"][()]]
        want = [model.body(i).name for i in range(1, model.nbody)]
        if bodies != want:
            raise InputError(f"{path}: body_names are not the model's bodies 1..{model.nbody - 1}")
        ref = {"qpos": f["qpos"][a:a + n].astype(np.float64)}
        for k in ("joint_pos", "joint_vel"):
            ref[k] = f[k][a:a + n].astype(np.float64)
        for k, w in (("body_pos_w", [0, 0, 0]), ("body_quat_w", [1, 0, 0, 0]), ("body_lin_vel_w", [0, 0, 0]),
                     ("body_ang_vel_w", [0, 0, 0])):
            v = f[k][a:a + n].astype(np.float64)
            world = np.broadcast_to(np.array(w, dtype=np.float64), (n, 1, len(w)))
            ref[k] = np.concatenate([world, v], axis=1)
    return ref


# ---- the exported policy and what its metadata says ----
def meta_json(meta, key, path):
    if key not in meta:
        raise InputError(f"{path}: metadata key '{key}' missing (export with a task that provides it: g1_tracking)")
    try:
        return json.loads(meta[key])
    except ValueError:
        raise InputError(f"{path}: metadata key '{key}' is not JSON: {meta[key][:60]}") from None


class Policy:
    def __init__(self, path, threads=0):
        import onnx
        import onnxruntime as ort
        try:
            model = onnx.load(path)
        except Exception as e:  # noqa: BLE001 (any load failure is bad input)
            raise InputError(f"{path}: not an ONNX model ({e})") from None
        self.path = path
        self.meta = {p.key: p.value for p in model.metadata_props}
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads  # 0: onnxruntime's default; 1 in each of several processes
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.input = self.sess.get_inputs()[0].name
        m = self.meta
        for k in ("obs_dim", "act_dim", "control_dt", "residual", "action_offset", "anchor_body_name",
                  "root_body_name", "model"):
            if k not in m:
                raise InputError(f"{path}: metadata key '{k}' missing (export with a task that provides it: "
                                 "g1_tracking)")
        self.obs_dim, self.act_dim = int(m["obs_dim"]), int(m["act_dim"])
        self.dt = float(m["control_dt"])
        self.joint_names = meta_json(m, "joint_names", path)             # actuator order
        self.action_scale = np.array(meta_json(m, "action_scale", path), dtype=np.float64)
        self.default_pos = np.array(meta_json(m, "default_joint_pos", path), dtype=np.float64)
        self.layout = meta_json(m, "observation_layout", path)
        self.obs_joints = meta_json(m, "observation_joint_names", path)  # joint terms' order
        self.body_names = meta_json(m, "body_names", path)
        self.term = meta_json(m, "termination", path)
        self.soft = float(m.get("soft_joint_limit_factor", "1"))
        self.offset = m["action_offset"]
        if self.offset not in ("reference_joint_pos", "default_joint_pos"):
            raise InputError(f"{path}: metadata action_offset '{self.offset}' (this consumer knows "
                             "reference_joint_pos and default_joint_pos)")
        if (m["residual"] == "1") != (self.offset == "reference_joint_pos"):
            raise InputError(f"{path}: metadata residual {m['residual']} with action_offset {self.offset}")
        if not (len(self.joint_names) == self.act_dim == self.action_scale.size == self.default_pos.size):
            raise InputError(f"{path}: joint_names, action_scale, default_joint_pos do not have act_dim entries")
        if sum(int(s) for _, s in self.layout) != self.obs_dim:
            raise InputError(f"{path}: observation_layout sizes add up to {sum(int(s) for _, s in self.layout)}, "
                             f"not obs_dim {self.obs_dim}")

    def __call__(self, obs):
        return self.sess.run(None, {self.input: obs.astype(np.float32)[None]})[0][0].astype(np.float64)


class Tracker:
    """The task's rules on MuJoCo's model, from the policy's metadata."""

    def __init__(self, mujoco, model, pol):
        self.mj, self.m, self.pol = mujoco, model, pol
        name = lambda t, s: mujoco.mj_name2id(model, t, s)  # noqa: E731
        J, B = mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_BODY

        def jid(s):
            j = name(J, s)
            if j < 0:
                raise InputError(f"{pol.path}: metadata joint '{s}' is not a joint of the model")
            return j

        def bid(s):
            b = name(B, s)
            if b < 0:
                raise InputError(f"{pol.path}: metadata body '{s}' is not a body of the model")
            return b

        act_j = [jid(s) for s in pol.joint_names]
        self.act_id = []  # the model's actuator driving each exported joint (actuator order of the export)
        for j, s in zip(act_j, pol.joint_names):
            a = [i for i in range(model.nu) if model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
                 and model.actuator_trnid[i, 0] == j]
            if len(a) != 1:
                raise InputError(f"{pol.path}: joint '{s}' is driven by {len(a)} actuators of the model (want 1)")
            self.act_id.append(a[0])
        self.act_id = np.array(self.act_id)
        self.act_qadr = model.jnt_qposadr[act_j]
        ob_j = [jid(s) for s in pol.obs_joints]
        self.ob_qadr, self.ob_dadr = model.jnt_qposadr[ob_j], model.jnt_dofadr[ob_j]
        default_by_joint = dict(zip(act_j, pol.default_pos))
        self.ob_default = np.array([default_by_joint.get(j, 0.0) for j in ob_j])
        self.anchor, self.root = bid(pol.meta["anchor_body_name"]), bid(pol.meta["root_body_name"])
        if model.body_jntnum[self.root] != 1 or model.jnt_type[model.body_jntadr[self.root]] != 0:
            raise InputError(f"{pol.path}: root body '{pol.meta['root_body_name']}' is not the free-joint body")
        self.bodies = np.array([bid(s) for s in pol.body_names])
        self.ee = np.array([bid(s) for s in pol.term["ee_body_names"]])
        self.nsub = int(round(pol.dt / model.opt.timestep))
        if abs(self.nsub * model.opt.timestep - pol.dt) > 1e-9 * pol.dt:
            raise InputError(f"{pol.path}: control_dt {pol.dt} is not a multiple of the model's timestep "
                             f"{model.opt.timestep}")
        # soft joint limits of the hinges (qpos[7:] order), for the start state
        lo, hi = model.jnt_range[1:, 0], model.jnt_range[1:, 1]
        mid, half = 0.5 * (lo + hi), 0.5 * pol.soft * (hi - lo)
        self.soft_lo, self.soft_hi = mid - half, mid + half

    def start(self, d, ref):
        """The task's start at frame 0 without noise."""
        mj, m = self.mj, self.m
        mj.mj_resetData(m, d)
        r = self.root
        d.qpos[0:3] = ref["body_pos_w"][0, r]
        d.qpos[3:7] = ref["body_quat_w"][0, r] / np.linalg.norm(ref["body_quat_w"][0, r])
        R = np.empty(9)
        mj.mju_quat2Mat(R, d.qpos[3:7])
        d.qvel[0:3] = ref["body_lin_vel_w"][0, r]
        d.qvel[3:6] = R.reshape(3, 3).T @ ref["body_ang_vel_w"][0, r]
        d.qpos[7:] = np.clip(ref["joint_pos"][0], self.soft_lo, self.soft_hi)
        d.qvel[6:] = ref["joint_vel"][0]
        d.ctrl[:] = 0
        mj.mj_forward(m, d)

    def observe(self, d, ref, f, last_action):
        """The observation_layout's terms for the state in d (its kinematics current) and reference frame f."""
        pa, Ra = d.xpos[self.anchor], d.xmat[self.anchor].reshape(3, 3)
        pra = ref["body_pos_w"][f, self.anchor]
        Rra = np.empty(9)
        self.mj.mju_quat2Mat(Rra, ref["body_quat_w"][f, self.anchor])
        M = Ra.T @ Rra.reshape(3, 3)
        Rp = d.xmat[self.root].reshape(3, 3)
        hinge = self.ob_qadr - 7  # the joints' columns in the clip (qpos[7:] order)
        terms = {
            "command_joint_pos": lambda: ref["joint_pos"][f, hinge],
            "command_joint_vel": lambda: ref["joint_vel"][f, hinge],
            "motion_anchor_pos_b": lambda: Ra.T @ (pra - pa),
            "motion_anchor_ori_b": lambda: M[:, :2].reshape(-1),
            "base_lin_vel": lambda: Rp.T @ d.qvel[0:3],
            "base_ang_vel": lambda: d.qvel[3:6].copy(),
            "joint_pos_rel": lambda: d.qpos[self.ob_qadr] - self.ob_default,
            "joint_vel_rel": lambda: d.qvel[self.ob_dadr].copy(),
            "last_action": lambda: np.asarray(last_action, dtype=np.float64),
        }
        parts = []
        for name, size in self.pol.layout:
            if name not in terms:
                raise InputError(f"{self.pol.path}: observation term '{name}' is not known to this consumer")
            v = np.asarray(terms[name](), dtype=np.float64).reshape(-1)
            if v.size != int(size):
                raise InputError(f"{self.pol.path}: observation term '{name}' has {v.size} values here, "
                                 f"{size} in the metadata")
            parts.append(v)
        return np.concatenate(parts)

    def control(self, d, ref, f, action):
        """ctrl = clip(offset + scale * action, ctrlrange) per actuator (a NaN action counts as 0)."""
        a = np.where(np.isnan(action), 0.0, action)
        base = ref["qpos"][f, self.act_qadr] if self.pol.offset == "reference_joint_pos" else self.pol.default_pos
        target = base + self.pol.action_scale * a
        rng = self.m.actuator_ctrlrange[self.act_id]
        lim = self.m.actuator_ctrllimited[self.act_id].astype(bool)
        d.ctrl[self.act_id] = np.where(lim, np.clip(target, rng[:, 0], rng[:, 1]), target)
        return a

    def compare(self, d, ref, f):
        """(terminated, MPKPE in m, anchor drift in m) of the state in d against frame f."""
        t = self.pol.term
        pa, Ra = d.xpos[self.anchor], d.xmat[self.anchor].reshape(3, 3)
        pra = ref["body_pos_w"][f, self.anchor]
        Rra = np.empty(9)
        self.mj.mju_quat2Mat(Rra, ref["body_quat_w"][f, self.anchor])
        Rra = Rra.reshape(3, 3)
        fell = not abs(pra[2] - pa[2]) <= t["anchor_z"]
        fell |= not abs(-Rra[2, 2] + Ra[2, 2]) <= t["anchor_ori"]
        for b in self.ee:
            fell |= not abs(ref["body_pos_w"][f, b, 2] - d.xpos[b, 2]) <= t["ee_z"]
        Rd = Ra @ Rra.T
        psi = math.atan2(Rd[1, 0], Rd[0, 0])
        c, s = math.cos(psi), math.sin(psi)
        off = ref["body_pos_w"][f, self.bodies] - pra
        rel = np.stack([pa[0] + c * off[:, 0] - s * off[:, 1], pa[1] + s * off[:, 0] + c * off[:, 1],
                        pra[2] + off[:, 2]], axis=1)
        mpkpe = float(np.linalg.norm(rel - d.xpos[self.bodies], axis=1).mean())
        return bool(fell), mpkpe, float(np.linalg.norm(pra - pa))


def run_clip(tr, ref, max_steps=None, per_step=False):
    mj, m, pol = tr.mj, tr.m, tr.pol
    d = mj.MjData(m)
    tr.start(d, ref)
    T = ref["qpos"].shape[0]
    if max_steps is not None:
        T = min(T, max_steps)
    last = np.zeros(pol.act_dim)
    series = {"mpkpe_mm": [], "anchor_drift_m": []}
    if per_step:
        _, mp, dr = tr.compare(d, ref, 0)
        series["mpkpe_mm"].append(1000 * mp)
        series["anchor_drift_m"].append(dr)
    fall, mps, drs = 0, [], []
    for k in range(T):
        obs = tr.observe(d, ref, k, last)
        last = tr.control(d, ref, k, pol(obs))
        for _ in range(tr.nsub):
            mj.mj_step(m, d)
        mj.mj_kinematics(m, d)
        fell, mp, dr = tr.compare(d, ref, k)
        mps.append(mp), drs.append(dr)
        if per_step:
            series["mpkpe_mm"].append(1000 * mp)
            series["anchor_drift_m"].append(dr)
        if fell or not np.all(np.isfinite(d.qpos)):
            fall = k + 1
            break
    out = {"steps": T, "duration_s": T * pol.dt, "fell": fall > 0, "fall_step": fall,
           "fall_time_s": fall * pol.dt if fall else None, "mpkpe_mm": 1000 * float(np.mean(mps)),
           "anchor_drift_m": float(np.mean(drs))}
    if per_step:
        out["per_step"] = series
    return out


_WORKER = {}  # per process: the policy and the task's rules, made once for a job's settings


def eval_clip(arg):
    """One clip's result dict (or {"error": message}); arg = ((policy, model, max_steps, per_step, threads), clip)."""
    job, (name, path, lib) = arg
    policy, model_path, max_steps, per_step, threads = job
    try:
        if job not in _WORKER:
            import mujoco
            pol = Policy(policy, threads)
            _WORKER[job] = (Tracker(mujoco, mujoco.MjModel.from_xml_path(model_path), pol), 1 / pol.dt)
        tr, fps = _WORKER[job]
        if lib:
            ref = library_ref(tr.m, lib, name, fps, max_steps)
        else:
            q = resample(read_clip(path, tr.m.nq - 7), 30.0, fps)
            if max_steps is not None:  # the frames the steps use, and the next (central differences)
                q = q[:max_steps + 1]
            ref = reference(tr.mj, tr.m, q, fps)
        return {"name": name, **run_clip(tr, ref, max_steps, per_step)}
    except InputError as e:
        return {"error": str(e)}


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("policy")
    ap.add_argument("clips", nargs="+")
    ap.add_argument("--model")
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--clip", action="append", help="only this clip (repeatable), by its listed name")
    ap.add_argument("--json")
    ap.add_argument("--per-step", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="clips run in parallel processes")
    ap.add_argument("--beside", help="an eval.json of `adjoint eval --motions` to print beside these results")
    args = ap.parse_args(argv)
    import mujoco
    try:
        if not os.path.isfile(args.policy):
            raise InputError(f"{args.policy}: no such file")
        if args.max_steps is not None and args.max_steps < 1:
            raise InputError(f"--max-steps {args.max_steps}: at least 1")
        if args.jobs < 1:
            raise InputError(f"--jobs {args.jobs}: at least 1")
        theirs = {}
        if args.beside:
            try:
                theirs = {c["name"]: c for c in json.load(open(args.beside))["clips"]}
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise InputError(f"--beside {args.beside}: not an eval.json with clips ({e})") from None
        pol = Policy(args.policy)
        model_path = find_asset(args.model or pol.meta["model"])
        try:
            model = mujoco.MjModel.from_xml_path(model_path)
        except Exception as e:  # noqa: BLE001 (MuJoCo's compiler message)
            raise InputError(f"{model_path}: {e}") from None
        tr = Tracker(mujoco, model, pol)
        fps = 1 / pol.dt
        clips = [c for a in args.clips for c in clip_paths(a)]
        if args.clip:
            have = {c[0] for c in clips}
            for want in args.clip:
                if want not in have:
                    raise InputError(f"--clip {want}: no such clip in {' '.join(args.clips)}")
            clips = [c for c in clips if c[0] in args.clip]
        results = []
        print(f"policy {args.policy} ({pol.meta.get('task', '?')}, {pol.meta.get('algo', '?')}), model {model_path}, "
              f"{len(clips)} clips, MuJoCo {mujoco.__version__}")
        print(f"{'clip':32s} {'steps':>6s} {'fall (s)':>9s} {'MPKPE (mm)':>11s} {'drift (m)':>10s}")
        job = (args.policy, model_path, args.max_steps, args.per_step, 1 if args.jobs > 1 else 0)
        if args.jobs > 1:  # clips in parallel processes (spawned: no onnxruntime thread pool crosses a fork)
            import multiprocessing
            pool = multiprocessing.get_context("spawn").Pool(min(args.jobs, len(clips)))
            rows = pool.imap(eval_clip, [(job, c) for c in clips])
        else:
            _WORKER[job] = (tr, fps)
            rows = (eval_clip((job, c)) for c in clips)
        for r in rows:
            if "error" in r:
                raise InputError(r["error"])
            results.append(r)
            fall = f"{r['fall_time_s']:.2f}" if r["fall_time_s"] is not None else "-"
            print(f"{r['name']:32s} {r['steps']:6d} {fall:>9s} {r['mpkpe_mm']:11.1f} {r['anchor_drift_m']:10.3f}",
                  flush=True)
        if args.jobs > 1:
            pool.close()
    except InputError as e:
        print(f"onnx_mujoco_eval: {e}", file=sys.stderr)
        return USAGE_ERROR
    falls = sum(1 for r in results if r["fall_step"])
    mean = {"clips": len(results), "falls": falls, "mpkpe_mm": float(np.mean([r["mpkpe_mm"] for r in results])),
            "anchor_drift_m": float(np.mean([r["anchor_drift_m"] for r in results]))}
    summary = {"policy": args.policy, "model": model_path, "simulator": f"mujoco {mujoco.__version__}",
               "dt": pol.dt, "max_steps": args.max_steps or 0, "clips": results, "summary": mean}
    print(f"{len(results)} clips: {falls} falls, mean MPKPE {mean['mpkpe_mm']:.1f} mm, "
          f"mean anchor drift {mean['anchor_drift_m']:.3f} m")
    if args.beside:
        summary["beside"] = args.beside
        print(f"beside {args.beside} (MuJoCo here | adjoint eval there):")
        print(f"{'clip':32s} {'fall (s)':>15s} {'MPKPE (mm)':>15s} {'drift (m)':>15s}")
        for r in results:
            o = theirs.get(r["name"])
            r["beside"] = {k: o.get(k) for k in ("fall_step", "fall_time_s", "mpkpe_mm", "anchor_drift_m")} if o else None
            f = lambda c: "-" if not c or c.get("fall_time_s") is None else f"{c['fall_time_s']:.2f}"  # noqa: E731
            g = lambda c, k, p: "?" if not c or not isinstance(c.get(k), (int, float)) else f"{c[k]:.{p}f}"  # noqa: E731
            print(f"{r['name']:32s} {f(r):>7s} | {f(o) if o else '?':<5s} {g(r, 'mpkpe_mm', 1):>7s} | "
                  f"{g(o, 'mpkpe_mm', 1):<5s} {g(r, 'anchor_drift_m', 3):>7s} | {g(o, 'anchor_drift_m', 3)}")
    if args.json:
        try:
            write_atomic(args.json, json.dumps(summary, indent=1) + "\n")
        except OSError as e:
            print(f"onnx_mujoco_eval: {args.json}: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
