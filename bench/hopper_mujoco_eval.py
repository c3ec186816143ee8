#!/usr/bin/env python3
"""hopper_mujoco_eval.py POLICY.onnx [--episodes N] [--seed S]: an exported hopper policy run by onnxruntime in
MuJoCo 3.12's own simulator (the `mujoco` Python package, float64), outside this framework.

The task is re-implemented here from envs/hopper.c's header (observation, action, termination, reset), so this
is an independent check of both the export and our engine's evaluation: the figures should agree with
`adjoint eval CKPT` statistically (not step by step: float32 engine vs float64, different reset draws).
env.params from the ONNX metadata (`env_params`) are applied where they change the physics or the termination:
gear_scale, max_angle, min_height; others only shape the reward and are ignored.
Prints: terminated count and causes, forward speed mean +- std, median episode length.
"""
import argparse
import json
import os
import sys

import numpy as np

try:
    import mujoco
    import onnxruntime as ort
except ImportError as e:
    sys.exit(f"hopper_mujoco_eval: {e} (install with .venv/bin/pip install mujoco==3.12.0 onnxruntime)")


def asset(path):
    for root in (os.environ.get("ADJOINT_ASSETS"), "assets", "../shared/assets"):
        if root and os.path.exists(os.path.join(root, path)):
            return os.path.join(root, path)
    sys.exit(f"hopper_mujoco_eval: {path} not found under $ADJOINT_ASSETS, ./assets or ../shared/assets")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sess = ort.InferenceSession(a.onnx, providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    if meta.get("task") != "hopper":
        sys.exit(f"hopper_mujoco_eval: {a.onnx}: task {meta.get('task')!r}, not hopper")
    params = dict(kv.split("=") for kv in meta.get("env_params", "").replace(";", ",").split(",") if "=" in kv)
    params = {k.strip(): float(v) for k, v in params.items()}
    gear, max_angle, min_height = params.get("gear_scale", 1.0), params.get("max_angle", 0.2), params.get("min_height", 0.6)
    if json.loads(meta["observation_names"])[:2] != ["rootz", "rooty"] or int(meta["obs_dim"]) != 13:
        sys.exit(f"hopper_mujoco_eval: {a.onnx}: expected the 13 default hopper observations")

    m = mujoco.MjModel.from_xml_path(asset("hopper/hopper.xml"))
    m.actuator_gear[:, 0] *= gear
    frame_skip = int(round(float(meta["control_dt"]) / m.opt.timestep))
    q0 = m.qpos0.copy()
    for j in range(m.njnt):  # envs/hopper.c: qpos0 clamped into each limited joint's range
        if m.jnt_limited[j]:
            q0[m.jnt_qposadr[j]] = np.clip(q0[m.jnt_qposadr[j]], *m.jnt_range[j])
    rng = np.random.default_rng(a.seed)
    causes, speeds, lengths = {}, [], []
    for _ in range(a.episodes):
        d = mujoco.MjData(m)
        d.qpos[:] = q0 + rng.uniform(-0.005, 0.005, m.nq)
        d.qpos[0] = q0[0]
        d.qvel[:] = rng.uniform(-0.005, 0.005, m.nv)
        cause, t = "none", 0
        while t < 1000 and cause == "none":
            obs = np.concatenate([d.qpos[1:], 10 * np.tanh(d.qvel / 10)]).astype(np.float32)[None]
            d.ctrl[:] = np.clip(sess.run(None, {"obs": obs})[0][0], -1, 1)
            for _ in range(frame_skip):
                mujoco.mj_step(m, d)
            t += 1
            if 1 + d.qpos[1] <= min_height:
                cause = "height"
            elif abs(d.qpos[2]) >= max_angle:
                cause = "pitch"
            elif np.any(np.abs(d.qpos[2:]) >= 100) or np.any(np.abs(d.qvel) >= 100):
                cause = "range"
        causes[cause] = causes.get(cause, 0) + 1
        speeds.append(d.qpos[0] / (t * m.opt.timestep * frame_skip))
        lengths.append(t)
    term = a.episodes - causes.pop("none", 0)
    print(f"{a.onnx}: MuJoCo {mujoco.__version__}, gear x{gear:g}, {a.episodes} episodes: terminated {term}/{a.episodes}"
          f" {causes or ''}  forward_speed {np.mean(speeds):.4f} +- {np.std(speeds):.4f}  median length {np.median(lengths):.0f}")


if __name__ == "__main__":
    main()
