// sim_math.h: small vector, quaternion and spatial-algebra helpers (MuJoCo's mju_* semantics), SIM_FN so
// they compile for both backends. Quaternions are (w, x, y, z); 3x3 matrices are row-major.
#ifndef ADJ_SIM_MATH_H
#define ADJ_SIM_MATH_H

#include "sim_port.h"

// MuJoCo's mju_isBad: NaN or beyond mjMAXVAL
SIM_FN int simu_isbad(sim_real x) { return !(x == x) || x > (sim_real)SIM_MAXVAL || x < -(sim_real)SIM_MAXVAL; }

SIM_FN void simu_zero(sim_real* x, int n) { for (int i = 0; i < n; i++) x[i] = 0; }
SIM_FN void simu_copy(sim_real* x, const sim_real* y, int n) { for (int i = 0; i < n; i++) x[i] = y[i]; }
SIM_FN sim_real simu_dot(const sim_real* a, const sim_real* b, int n) {
  sim_real s = 0;
  for (int i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

// dst[i] = src[i] for i < n, across lanes: a lane loads up to eight of its entries before it stores them, where a
// loop that stores each entry right after its load (and may alias it, as far as the compiler knows) waits out the
// load's latency once per entry. The tape (G1, 4096 worlds: ~2.7 k floats of geometry a substep each) outgrows L2.
SIM_FN void sim_copy_lanes(sim_real* dst, const sim_real* src, int n, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int base = lane; base < n; base += 8 * nlane) {
    sim_real v[8];
    for (int u = 0; u < 8; u++) {
      int i = base + u * nlane;
      v[u] = i < n ? src[i] : 0;
    }
    for (int u = 0; u < 8; u++) {
      int i = base + u * nlane;
      if (i < n) dst[i] = v[u];
    }
  }
}

#define SIMV_T sim_real
#define SIMV(name) simu_##name
#define SIMV_SQRT sim_sqrt
#define SIMV_SIN sim_sin
#define SIMV_COS sim_cos
#define SIMV_FABS sim_fabs
#include "sim_math_vec.inc"
#undef SIMV_T
#undef SIMV
#undef SIMV_SQRT
#undef SIMV_SIN
#undef SIMV_COS
#undef SIMV_FABS

SIM_FN sim_real simu_norm3(const sim_real a[3]) { return sim_sqrt(simu_dot3(a, a)); }

// R = A B (3x3)
SIM_FN void simu_mulMatMat3(sim_real R[9], const sim_real A[9], const sim_real B[9]) {
  sim_real t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) t[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  for (int i = 0; i < 9; i++) R[i] = t[i];
}

SIM_FN void simu_negQuat(sim_real r[4], const sim_real q[4]) { r[0] = q[0]; r[1] = -q[1]; r[2] = -q[2]; r[3] = -q[3]; }

// mju_quat2Vel(res, quat, dt)
SIM_FN void simu_quat2Vel(sim_real r[3], const sim_real q[4], sim_real dt) {
  sim_real axis[3] = {q[1], q[2], q[3]};
  sim_real sin_a_2 = simu_normalize3(axis);
  sim_real speed = 2 * sim_atan2(sin_a_2, q[0]);
  if (speed > (sim_real)SIM_PI) speed -= 2 * (sim_real)SIM_PI;
  speed /= dt;
  simu_scl3(r, axis, speed);
}

// mju_subQuat: 3D velocity taking qb to qa in unit time
SIM_FN void simu_subQuat(sim_real r[3], const sim_real qa[4], const sim_real qb[4]) {
  sim_real qneg[4], qdif[4];
  simu_negQuat(qneg, qb);
  simu_mulQuat(qdif, qneg, qa);
  simu_quat2Vel(r, qdif, 1);
}

// mju_quatIntegrate: q <- normalize(q) * axisAngle(v/|v|, scale*|v|); the product is not renormalized
SIM_FN void simu_quatIntegrate(sim_real q[4], const sim_real v[3], sim_real scale) {
  sim_real tmp[3] = {v[0], v[1], v[2]}, qrot[4];
  sim_real angle = scale * simu_normalize3(tmp);
  simu_axisAngle2Quat(qrot, tmp, angle);
  simu_normalize4(q);
  simu_mulQuat(q, q, qrot);
}

// ---- spatial algebra: 6-vectors are [angular; linear] ----

// mju_mulInertVec: res = cinert * vec, cinert = (I xx yy zz xy xz yz, m*d (3), m)
SIM_FN void simu_mulInertVec(sim_real r[6], const sim_real i[10], const sim_real v[6]) {
  r[0] = i[0] * v[0] + i[3] * v[1] + i[4] * v[2] - i[8] * v[4] + i[7] * v[5];
  r[1] = i[3] * v[0] + i[1] * v[1] + i[5] * v[2] + i[8] * v[3] - i[6] * v[5];
  r[2] = i[4] * v[0] + i[5] * v[1] + i[2] * v[2] - i[7] * v[3] + i[6] * v[4];
  r[3] = i[8] * v[1] - i[7] * v[2] + i[9] * v[3];
  r[4] = i[6] * v[2] - i[8] * v[0] + i[9] * v[4];
  r[5] = i[7] * v[0] - i[6] * v[1] + i[9] * v[5];
}

// motion cross product: [w;v] x [a;b] = [w x a; w x b + v x a]
SIM_FN void simu_crossMotion(sim_real r[6], const sim_real vel[6], const sim_real v[6]) {
  r[0] = -vel[2] * v[1] + vel[1] * v[2];
  r[1] = vel[2] * v[0] - vel[0] * v[2];
  r[2] = -vel[1] * v[0] + vel[0] * v[1];
  r[3] = -vel[2] * v[4] + vel[1] * v[5];
  r[4] = vel[2] * v[3] - vel[0] * v[5];
  r[5] = -vel[1] * v[3] + vel[0] * v[4];
  r[3] += -vel[5] * v[1] + vel[4] * v[2];
  r[4] += vel[5] * v[0] - vel[3] * v[2];
  r[5] += -vel[4] * v[0] + vel[3] * v[1];
}

// force cross product: [w;v] x* [t;f] = [w x t + v x f; w x f]
SIM_FN void simu_crossForce(sim_real r[6], const sim_real vel[6], const sim_real f[6]) {
  r[0] = -vel[2] * f[1] + vel[1] * f[2];
  r[1] = vel[2] * f[0] - vel[0] * f[2];
  r[2] = -vel[1] * f[0] + vel[0] * f[1];
  r[3] = -vel[2] * f[4] + vel[1] * f[5];
  r[4] = vel[2] * f[3] - vel[0] * f[5];
  r[5] = -vel[1] * f[3] + vel[0] * f[4];
  r[0] += -vel[5] * f[4] + vel[4] * f[5];
  r[1] += vel[5] * f[3] - vel[3] * f[5];
  r[2] += -vel[4] * f[3] + vel[3] * f[4];
}

#endif
