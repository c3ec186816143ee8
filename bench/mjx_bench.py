# MJX (JAX, float32) on the benchmark's own start states: one control step of NSUB substeps from every state,
# after one untimed control step, as `adjoint bench sim` times it (median of REPS after the compile run).
#   python3 bench/mjx_bench.py MODEL.xml STATES_FILE [NSUB=4] [REPS=20] [--json OUT.json]
# STATES_FILE: `adjoint bench sim ... --write-states FILE` (bench/bench_states.py). Needs jax and the mujoco-mjx
# wheel of the same MuJoCo version (3.12); on a machine without them it says so and exits 77.
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_states import read_states  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
json_out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
if json_out:
    args.remove(json_out)
if len(args) < 2:
    sys.exit(__doc__ or "usage: mjx_bench.py MODEL.xml STATES_FILE [NSUB] [REPS] [--json OUT]")
path, states = args[0], args[1]
nsub = int(args[2]) if len(args) > 2 else 4
nrep = int(args[3]) if len(args) > 3 else 20
try:
    import jax
    import mujoco
    from mujoco import mjx
except ImportError as e:
    print(f"MJX: not available ({e})")
    sys.exit(77)

qpos, qvel, ctrl = read_states(states)
m = mujoco.MjModel.from_xml_path(path)
if qpos.shape[1] != m.nq or qvel.shape[1] != m.nv or ctrl.shape[1] != m.nu:
    sys.exit(f"{states}: sizes {qpos.shape[1]}/{qvel.shape[1]}/{ctrl.shape[1]} do not match the model's "
             f"nq {m.nq} nv {m.nv} nu {m.nu}")
n = qpos.shape[0]
mx = mjx.put_model(m)
dx = mjx.put_data(m, mujoco.MjData(m))
batch = jax.vmap(lambda q, v, u: dx.replace(qpos=q, qvel=v, ctrl=u))(
    jax.numpy.asarray(qpos, dtype=jax.numpy.float32), jax.numpy.asarray(qvel, dtype=jax.numpy.float32),
    jax.numpy.asarray(ctrl, dtype=jax.numpy.float32))


@jax.jit
def control_step(b):
    def body(b, _):
        return jax.vmap(mjx.step, in_axes=(None, 0))(mx, b), None
    return jax.lax.scan(body, b, None, length=nsub)[0]


t0 = time.time()
start = jax.block_until_ready(control_step(batch))  # the untimed step (and the compile): contacts, warm start
tc = time.time() - t0
jax.block_until_ready(control_step(start))  # warm-up
ts = []
for _ in range(nrep):
    t0 = time.time()
    jax.block_until_ready(control_step(start))
    ts.append(time.time() - t0)
ms = sorted(ts)[len(ts) // 2] * 1e3
print(f"MJX {mujoco.__version__} jax {jax.__version__} {jax.devices()[0].device_kind} "
      f"model={os.path.basename(path)} nworld={n}: compile+first {tc:.1f} s, control step ({nsub} substeps) "
      f"{ms:.3f} ms = {n * nsub / (ms * 1e-3):.3e} steps/s (median of {nrep})")
if json_out:
    with open(json_out + ".tmp", "w") as f:
        json.dump({"engine": "mjx", "what": "forward", "model": path, "nworld": n, "nsub": nsub, "ms": ms,
                   "steps_per_s": n * nsub / (ms * 1e-3), "mujoco": mujoco.__version__, "jax": jax.__version__,
                   "device": jax.devices()[0].device_kind}, f)
    os.replace(json_out + ".tmp", json_out)
