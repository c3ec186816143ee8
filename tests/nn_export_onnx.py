#!/usr/bin/env python3
"""nn_export_onnx: the exported ONNX models run in a real consumer.

Usage: nn_export_onnx.py PATH/TO/nn_export_ref

Runs the C helper nn_export_ref (writes ONNX models at opsets 13 and 17, blobs, 1000 reference observations and
the nn library's actions for several networks), then for every model: onnx.checker.check_model (full check, with
shape inference), graph interface (input "obs" [batch, obs_dim] with dim_param "batch", first output "actions"),
metadata_props (an extra pair replaces the built-in pair of its key; the blob's JSON sidecar holds the same pairs),
and onnxruntime's actions vs the library's (max abs <= 1e-5), at batch 1000, 1 and 7. The blob
is parsed independently with numpy from the layout in nn/nn_blob_format.md and evaluated in float64.
Exit 0 pass, 1 fail, 77 skipped (only when onnx / onnxruntime / numpy are not installed).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # test-only dependencies: `.venv/bin/pip install onnx onnxruntime`
    print(f"nn_export_onnx: skipped: {e} (install with .venv/bin/pip install onnx onnxruntime)")
    sys.exit(77)

TOL = 1e-5
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg)


def blob_forward(path, obs):
    """Independent reader of the blob format (nn/nn_blob_format.md), evaluated in float64."""
    raw = open(path, "rb").read()
    magic, version, hdr, total, crc, O, A, L, flags, maxw, clip, eps, nf, _ = struct.unpack_from("<8sIIIIIIIIIfdII", raw, 0)
    assert magic == b"ADJBLOB\0" and version == 1 and hdr == 64 and total == len(raw)
    import zlib
    assert zlib.crc32(raw[:20] + b"\0\0\0\0" + raw[24:]) == crc, "crc"
    layers = [struct.unpack_from("<IIIIff", raw, hdr + 24 * l) for l in range(L)]
    data = np.frombuffer(raw, dtype="<f4", offset=hdr + 24 * L).astype(np.float64)
    assert data.size == nf
    k = 0
    x = obs.astype(np.float64)
    if flags & 1:
        mean, var, inv_std = data[0:O], data[O:2 * O], data[2 * O:3 * O]
        k = 3 * O
        assert np.allclose(inv_std, 1 / np.sqrt(var.astype(np.float64) + eps), rtol=1e-6, atol=0)
        x = (x - mean) * inv_std
        if flags & 2:
            x = np.clip(x, -clip, clip)
    scale, offset = data[k:k + A], data[k + A:k + 2 * A]
    k += 2 * A
    acts = {0: lambda z: z, 1: lambda z: np.where(z > 0, z, np.expm1(np.minimum(z, 0))),
            2: lambda z: z / (1 + np.exp(-z)), 3: lambda z: np.maximum(z, 0), 4: np.tanh}
    for (n_in, n_out, act, ln, ln_eps, out_scale) in layers:
        W = data[k:k + n_in * n_out].reshape(n_out, n_in)
        k += n_in * n_out
        b = data[k:k + n_out]
        k += n_out
        x = out_scale * acts[act](x @ W.T + b)
        if ln:
            g, be = data[k:k + n_out], data[k + n_out:k + 2 * n_out]
            k += 2 * n_out
            mu = x.mean(axis=1, keepdims=True)
            v = ((x - mu) ** 2).mean(axis=1, keepdims=True)
            x = (x - mu) / np.sqrt(v + ln_eps) * g + be
    assert k == nf
    return x * scale + offset


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    ref_exe = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="nn_export_onnx_") as d:
        r = subprocess.run([ref_exe, d], capture_output=True, text=True)
        if r.returncode != 0:
            print("nn_export_ref failed:", r.returncode, r.stdout, r.stderr)
            return 1
        cases = [l.split() for l in open(os.path.join(d, "manifest.txt")).read().splitlines() if l.strip()]
        check(len(cases) >= 6, f"manifest lists {len(cases)} cases")
        worst = 0.0
        for name, n, O, A, ln in cases:
            n, O, A, ln = int(n), int(O), int(A), int(ln)
            obs = np.fromfile(os.path.join(d, f"{name}_obs.bin"), dtype="<f4").reshape(n, O)
            act = np.fromfile(os.path.join(d, f"{name}_act.bin"), dtype="<f4").reshape(n, A)
            for opset in (13, 17):
                path = os.path.join(d, f"{name}_op{opset}.onnx")
                tag = f"{name} opset {opset}"
                model = onnx.load(path)
                try:
                    onnx.checker.check_model(model, full_check=True)
                except Exception as e:  # noqa: BLE001 (report any checker error as a failure)
                    check(False, f"{tag}: check_model: {e}")
                    continue
                check([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset],
                      f"{tag}: opset_import {model.opset_import}")
                g = model.graph
                check(len(g.input) == 1 and g.input[0].name == "obs", f"{tag}: inputs {[i.name for i in g.input]}")
                dims = g.input[0].type.tensor_type.shape.dim
                check(g.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT, f"{tag}: input type")
                check(len(dims) == 2 and dims[0].dim_param == "batch" and dims[1].dim_value == O, f"{tag}: input dims")
                check(g.output[0].name == "actions", f"{tag}: first output {g.output[0].name}")
                odims = g.output[0].type.tensor_type.shape.dim
                check(len(odims) == 2 and odims[0].dim_param == "batch" and odims[1].dim_value == A, f"{tag}: output dims")
                ops = [nd.op_type for nd in g.node]
                check(("LayerNormalization" in ops) == (ln == 1 and opset >= 17), f"{tag}: ops {ops}")
                check("Gemm" in ops, f"{tag}: no Gemm")
                meta = {p.key: p.value for p in model.metadata_props}
                check(meta.get("obs_dim") == str(O) and meta.get("act_dim") == str(A), f"{tag}: dims metadata")
                on = json.loads(meta["observation_names"])
                check(len(on) == O and (O != 5 or on[4] == 'pole_"omega"'), f"{tag}: observation_names {on}")
                check(len(json.loads(meta["action_names"])) == A, f"{tag}: action_names")
                check(json.loads(meta["joint_names"])[0] == "joint_a0", f"{tag}: joint_names")
                check(np.allclose(json.loads(meta["kp"]), 20 + np.arange(A)), f"{tag}: kp")
                check(np.allclose(json.loads(meta["kd"]), 0.5 + 0.1 * np.arange(A)), f"{tag}: kd")
                check(np.allclose(json.loads(meta["default_joint_pos"]), 0.1 * np.arange(A)), f"{tag}: default_joint_pos")
                check(len(json.loads(meta["action_scale"])) == A and len(json.loads(meta["action_offset"])) == A,
                      f"{tag}: action scale/offset")
                check(float(meta.get("control_dt", "nan")) == 0.02, f"{tag}: control_dt")
                check(meta.get("test_case") == name, f"{tag}: extra metadata")
                keys = [p.key for p in model.metadata_props]
                check(meta.get("ema") == "replaced" and len(keys) == len(set(keys)),
                      f"{tag}: an extra pair replaces the built-in one of its key ({keys.count('ema')} 'ema')")
                side = json.load(open(os.path.join(d, f"{name}_blob.bin.json")))
                check(side == meta, f"{tag}: the blob's JSON sidecar differs from metadata_props")
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                out = sess.run(None, {"obs": obs})[0]
                check(out.shape == (n, A) and out.dtype == np.float32, f"{tag}: output {out.shape} {out.dtype}")
                err = float(np.max(np.abs(out.astype(np.float64) - act)))
                worst = max(worst, err)
                print(f"{tag:28s} onnxruntime vs library: max abs {err:.3g} over {n} x {A} (|act| max {np.abs(act).max():.3g})")
                check(err <= TOL, f"{tag}: max abs {err:.3g} > {TOL}")
                for b in (1, 7):
                    o2 = sess.run(None, {"obs": obs[:b]})[0]
                    e2 = float(np.max(np.abs(o2.astype(np.float64) - act[:b])))
                    check(o2.shape == (b, A) and e2 <= TOL, f"{tag}: batch {b}: {o2.shape} max abs {e2:.3g}")
            berr = float(np.max(np.abs(blob_forward(os.path.join(d, f"{name}_blob.bin"), obs) - act)))
            print(f"{name + ' blob (numpy f64)':28s} vs library: max abs {berr:.3g}")
            check(berr <= 1e-4, f"{name}: numpy blob reader max abs {berr:.3g}")
        print(f"worst onnxruntime max abs error: {worst:.3g}")
    if failures:
        print(f"nn_export_onnx: {len(failures)} checks failed")
        return 1
    print("nn_export_onnx: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
