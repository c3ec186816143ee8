# Reader of the start-state files that `adjoint bench sim --write-states FILE` writes:
# a text line "ADJSTATES 1 n nq nv nu", then qpos (n, nq), qvel (n, nv), ctrl (n, nu) as little-endian float64.
import numpy as np


def read_states(path):
    with open(path, "rb") as f:
        head = f.readline().split()
        if len(head) != 6 or head[0] != b"ADJSTATES" or head[1] != b"1":
            raise ValueError(f"{path}: not an ADJSTATES 1 file")
        n, nq, nv, nu = (int(x) for x in head[2:])
        data = np.fromfile(f, dtype="<f8")
    if data.size != n * (nq + nv + nu):
        raise ValueError(f"{path}: {data.size} values, header says {n * (nq + nv + nu)}")
    qpos = data[: n * nq].reshape(n, nq)
    qvel = data[n * nq : n * (nq + nv)].reshape(n, nv)
    ctrl = data[n * (nq + nv) :].reshape(n, nu)
    return qpos, qvel, ctrl
