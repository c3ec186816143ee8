# bench_sim_check.py ADJOINT: `adjoint bench sim` on a few humanoid rollout states on the CPU engines: the JSON
# report holds both engines' forward times, no overflow, and contact / row counts of our float32 engine within
# 10 % of MuJoCo C's on the same states; bad options exit 2.
import json
import os
import subprocess
import sys
import tempfile

adj = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bench.json")
    states = os.path.join(tmp, "states.bin")
    r = subprocess.run([adj, "bench", "sim", "humanoid/humanoid.xml", "--states", "rollout", "--nworld", "16",
                        "--threads", "2", "--cpu-reps", "1", "--reps", "1", "--grad", "4", "--no-cuda", "--json", out,
                        "--write-states", states], capture_output=True, text=True)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.returncode
    rep = json.load(open(out))
    assert rep["nsub"] == 4 and rep["nworld"] == 16, rep
    res = {(x["engine"], x["what"]): x for x in rep["results"]}
    ours, mj = res[("ours_cpu_f32", "forward")], res[("mujoco_c", "forward")]
    assert ("ours_cpu_f32", "forward_gradient") in res, res.keys()
    for x in (ours, mj):
        assert x["ms"] > 0 and x["ncon_overflow"] == 0 and x["nefc_overflow"] == 0, x
    for k in ("ncon_mean", "nefc_mean"):
        assert abs(ours[k] - mj[k]) <= 0.1 * max(1.0, mj[k]), (k, ours[k], mj[k])
    assert mj["ncon_mean"] > 0, "rollout states without contacts"
    size = os.path.getsize(states)
    with open(states, "rb") as f:
        head = f.readline().split()
    n, nq, nv, nu = (int(v) for v in head[2:])
    assert head[:2] == [b"ADJSTATES", b"1"] and n == 16 and size == len(b" ".join(head)) + 1 + 8 * n * (nq + nv + nu)
    for bad in (["--states", "bogus"], ["--nworld", "0"], ["--bogus"]):
        r = subprocess.run([adj, "bench", "sim", "humanoid/humanoid.xml"] + bad, capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr, (bad, r.returncode, r.stderr)
    r = subprocess.run([adj, "bench", "sim", "humanoid/humanoid.xml", "--states", "lafan1", "--nworld", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "free joint" in r.stderr, (r.returncode, r.stderr)
print("bench_sim_check: passed")
