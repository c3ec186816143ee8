#!/usr/bin/env python3
"""export_check: a trained checkpoint's exports against the framework's own inference (the hopper policy's export check).

Usage: export_check.py ADJOINT CHECKPOINT.h5
       export_check.py ADJOINT --train CONFIG [key=value ...]   (trains 2 iterations on the CPU first)

For the checkpoint: `adjoint export CKPT --onnx --blob --check` (the CLI evaluates 1000 random observations with
the trainer's rebuilt policy and with the blob routine, nn/nn_blob_infer.c, and fails above 1e-6), then
  - onnx.checker full check; onnxruntime's actions on those observations vs the trainer's: max abs <= 1e-5;
  - the blob read independently (tests/nn_export_onnx.py's float64 reader) vs the trainer's: <= 1e-5;
  - a truncated copy and a copy with bytes overwritten mid-file: export exits 2 with a message naming the file,
    and an output file that already existed is left as it was.
Prints the figures. Exit 0 pass, 1 fail, 77 skipped (onnx / onnxruntime / numpy not installed).
"""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print(f"export_check: skipped: {e} (install with .venv/bin/pip install onnx onnxruntime)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the independent float64 blob reader, the 1e-5 tolerance and the failure log of the nn export test
from nn_export_onnx import TOL as ONNX_TOL, blob_forward, check, failures  # noqa: E402


def read_check(path):
    raw = open(path, "rb").read()
    assert raw[:8] == b"ADJCHK1\n", "bad magic"
    n, O, A, _ = np.frombuffer(raw, "<i4", 4, 8)
    f = np.frombuffer(raw, "<f4", offset=24)
    assert f.size == n * (O + 2 * A), "bad size"
    return f[:n * O].reshape(n, O), f[n * O:n * (O + A)].reshape(n, A), f[n * (O + A):].reshape(n, A)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    adj = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="adjoint_export_check_")
    try:
        if sys.argv[2] == "--train":
            rc, out = run([adj, "train", sys.argv[3], "--device", "cpu", "--num-envs", "8", "--max-iterations", "2",
                           "--quiet", "--run-dir", os.path.join(tmp, "run")] + sys.argv[4:])
            check(rc == 0, f"train exit {rc}: {out}")
            ckpt = os.path.join(tmp, "run", "ckpt_000002.h5")
        else:
            ckpt = sys.argv[2]
        onnx_path, blob, chk = (os.path.join(tmp, n) for n in ("policy.onnx", "policy.bin", "check.bin"))
        rc, out = run([adj, "export", ckpt, "--onnx", onnx_path, "--blob", blob, "--check", chk])
        print(out.strip())
        check(rc == 0, f"export --check exit {rc}")
        if rc != 0:
            return 1
        obs, ref, bact = read_check(chk)
        print(f"export_check: {obs.shape[0]} observations of {obs.shape[1]}, {ref.shape[1]} actions; "
              f"trainer's actions in [{ref.min():.3f}, {ref.max():.3f}]")

        model = onnx.load(onnx_path)
        onnx.checker.check_model(model, full_check=True)
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {sess.get_inputs()[0].name: obs})[0]
        d_onnx = float(np.abs(got.astype(np.float64) - ref).max())
        d_blob = float(np.abs(bact.astype(np.float64) - ref).max())
        d_indep = float(np.abs(blob_forward(blob, obs) - ref).max())
        print(f"onnx.checker (full): ok; onnxruntime {ort.__version__} vs the trainer's policy: max abs {d_onnx:.3g}")
        print(f"blob routine vs the trainer's policy: max abs {d_blob:.3g}; independent float64 blob reader: "
              f"{d_indep:.3g}")
        check(d_onnx <= ONNX_TOL, f"onnxruntime vs trainer {d_onnx:g} > {ONNX_TOL:g}")
        check(d_blob <= 1e-6, f"blob routine vs trainer {d_blob:g} > 1e-6")
        check(d_indep <= ONNX_TOL, f"independent blob reader vs trainer {d_indep:g} > {ONNX_TOL:g}")

        data = open(ckpt, "rb").read()
        bad = {"truncated": data[:len(data) // 2],
               "overwritten": data[:len(data) // 3] + b"\xa5" * 4096 + data[len(data) // 3 + 4096:]}
        for label, content in bad.items():
            path = os.path.join(tmp, f"{label}.h5")
            open(path, "wb").write(content)
            keep = os.path.join(tmp, "keep.bin")
            open(keep, "wb").write(b"old")
            rc, out = run([adj, "export", path, "--blob", keep, "--onnx", keep + ".onnx"])
            first = out.strip().splitlines()[0] if out.strip() else ""
            print(f"{label} checkpoint: exit {rc}: {first}")
            check(rc == 2, f"{label}: exit {rc}, expected 2")
            check(first.startswith("adjoint export: ") and path in first, f"{label}: message does not name the file")
            check(open(keep, "rb").read() == b"old", f"{label}: existing output modified")
            check(not os.path.exists(keep + ".onnx"), f"{label}: an ONNX file was written")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("export_check: " + ("all checks passed" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
