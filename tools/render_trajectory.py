#!/usr/bin/env python3
"""render_trajectory.py: a video of a tracked clip from `adjoint eval --motions ... --save-trajectory FILE.h5`.

The robot (the trajectory's `<clip>/qpos`) is drawn as the model is; the reference (`<clip>/ref_qpos`, the frame
each step was scored against) as a second, translucent copy of the same model, added to the scene from its own
MjData (mjv_addGeoms), on top of the robot or shifted sideways (--offset). MuJoCo's own renderer, headless:
MUJOCO_GL=egl (with EGL_PLATFORM=surfaceless where no display exists, the default set here) or osmesa.

  MUJOCO_GL=egl .venv/bin/python tools/render_trajectory.py TRAJ.h5 --clip walk1_subject1.csv.gz -o walk1.mp4

Writes an MP4 through ffmpeg when it is on PATH, else PNG frames into the directory given by -o (its .mp4 suffix
dropped); -o NAME.gif writes an animated GIF through Pillow, ffmpeg or not. The videos of LAFAN1 clips stay out
of the repository (the clips' licence is CC BY-NC-ND).
"""
import argparse
import os
import shutil
import subprocess
import sys

os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] == "egl":
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")

import h5py  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_mujoco_eval import InputError, find_asset  # noqa: E402  the asset search path, written once


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trajectory", help="HDF5 written by adjoint eval --save-trajectory")
    ap.add_argument("--clip", help="clip name (default: the file's first)")
    ap.add_argument("-o", "--out", required=True, help="video.mp4 (PNG frames in a directory without ffmpeg), or video.gif")
    ap.add_argument("--model", help="MJCF (default: the file's model attribute on the asset search path)")
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--offset", type=float, default=0.0, help="reference drawn this far beside the robot (m, +y)")
    ap.add_argument("--alpha", type=float, default=0.35, help="the reference's opacity")
    ap.add_argument("--every", type=int, default=1, help="render every k-th control step (fps = 1 / (k dt))")
    ap.add_argument("--max-frames", type=int, default=0, help="stop after this many frames (0: the whole clip)")
    a = ap.parse_args()

    h = h5py.File(a.trajectory, "r")
    if text(h.attrs.get("format", "")) != "adjoint trajectory 1":
        sys.exit("render_trajectory: %s is not an adjoint trajectory file" % a.trajectory)
    clips = [c for c in text(h.attrs["clips"]).split("\n") if c]
    clip = a.clip or clips[0]
    key = clip[:50]  # dataset names keep 50 characters of a clip's name
    if key + "/qpos" not in h:
        sys.exit("render_trajectory: no clip %s in %s (clips: %s)" % (clip, a.trajectory, ", ".join(clips)))
    q, r = np.array(h[key + "/qpos"], np.float64), np.array(h[key + "/ref_qpos"], np.float64)
    fall = int(h[key + "/fall_step"][0])
    dt = float(h["dt"][0])
    try:
        model_path = find_asset(a.model or text(h.attrs["model"]))
    except InputError as e:
        print("render_trajectory: model %s" % e, file=sys.stderr)
        sys.exit(2)
    m = mujoco.MjModel.from_xml_path(model_path)
    if q.shape[1] != m.nq:
        sys.exit("render_trajectory: the trajectory has %d qpos columns, the model %d" % (q.shape[1], m.nq))
    m.vis.global_.offwidth = max(m.vis.global_.offwidth, a.width)
    m.vis.global_.offheight = max(m.vis.global_.offheight, a.height)
    d, dref = mujoco.MjData(m), mujoco.MjData(m)
    ren = mujoco.Renderer(m, a.height, a.width)
    opt, pert = mujoco.MjvOption(), mujoco.MjvPerturb()
    opt.geomgroup[:] = 1  # the G1's capsules and boxes sit in group 3 (its visual meshes are not shipped)
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.distance, cam.elevation, cam.azimuth = 3.5, -15.0, 135.0
    steps = range(0, len(q), max(1, a.every))
    if a.max_frames > 0:
        steps = list(steps)[:a.max_frames]
    fps = 1.0 / (dt * max(1, a.every))
    gif = a.out.endswith(".gif")
    ffmpeg = None if gif else shutil.which("ffmpeg")
    frames_dir, frames = None, []
    if ffmpeg:
        enc = subprocess.Popen([ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s",
                                "%dx%d" % (a.width, a.height), "-r", "%g" % fps, "-i", "-", "-pix_fmt", "yuv420p",
                                "-vcodec", "libx264", a.out], stdin=subprocess.PIPE)
    else:
        from PIL import Image  # a GIF or PNG frames
        if not gif:
            frames_dir = a.out[:-4] if a.out.endswith(".mp4") else a.out
            os.makedirs(frames_dir, exist_ok=True)
    for n, k in enumerate(steps):
        d.qpos[:], dref.qpos[:] = q[k], r[k]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_kinematics(m, dref)
        cam.lookat[:] = d.qpos[:3] + np.array([0.0, a.offset / 2, -0.1])
        ren.update_scene(d, camera=cam, scene_option=opt)
        scn = ren.scene
        n0 = scn.ngeom
        for g in range(n0):  # the robot: opaque
            if scn.geoms[g].category == mujoco.mjtCatBit.mjCAT_DYNAMIC:
                scn.geoms[g].rgba[:] = [0.75, 0.75, 0.72, 1.0]
        mujoco.mjv_addGeoms(m, dref, opt, pert, mujoco.mjtCatBit.mjCAT_DYNAMIC, scn)
        for g in range(n0, scn.ngeom):  # the reference: translucent, tinted, beside the robot
            geom = scn.geoms[g]
            geom.rgba[:] = [0.3, 0.6, 1.0, a.alpha]
            geom.pos[1] += a.offset
        img = ren.render()
        if gif:
            frames.append(Image.fromarray(img).convert("P", palette=Image.ADAPTIVE))
        elif ffmpeg:
            enc.stdin.write(img.tobytes())
        else:
            Image.fromarray(img).save(os.path.join(frames_dir, "frame_%06d.png" % n))
    ren.close()
    if gif:
        tmp = a.out + ".tmp.gif"  # written whole, then renamed
        frames[0].save(tmp, save_all=True, append_images=frames[1:], duration=int(round(1000 / fps)), loop=0)
        os.replace(tmp, a.out)
    elif ffmpeg:
        enc.stdin.close()
        if enc.wait():
            sys.exit("render_trajectory: ffmpeg failed")
    where = a.out if gif or ffmpeg else frames_dir + "/frame_*.png (no ffmpeg on PATH: PNG frames)"
    print("render_trajectory: %s, %d frames at %.0f fps, %s -> %s" %
          (clip, len(steps), fps, "fall at step %d (%.2f s)" % (fall, fall * dt) if fall else "no fall", where))


if __name__ == "__main__":
    main()
