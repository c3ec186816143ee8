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

SIM_FN void simu_copy3(sim_real r[3], const sim_real a[3]) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; }
SIM_FN void simu_zero3(sim_real r[3]) { r[0] = r[1] = r[2] = 0; }
SIM_FN sim_real simu_dot3(const sim_real a[3], const sim_real b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
SIM_FN void simu_add3(sim_real r[3], const sim_real a[3], const sim_real b[3]) {
  r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; r[2] = a[2] + b[2];
}
SIM_FN void simu_sub3(sim_real r[3], const sim_real a[3], const sim_real b[3]) {
  r[0] = a[0] - b[0]; r[1] = a[1] - b[1]; r[2] = a[2] - b[2];
}
SIM_FN void simu_scl3(sim_real r[3], const sim_real a[3], sim_real s) {
  r[0] = a[0] * s; r[1] = a[1] * s; r[2] = a[2] * s;
}
SIM_FN void simu_addscl3(sim_real r[3], const sim_real a[3], const sim_real b[3], sim_real s) {
  r[0] = a[0] + b[0] * s; r[1] = a[1] + b[1] * s; r[2] = a[2] + b[2] * s;
}
SIM_FN void simu_cross(sim_real r[3], const sim_real a[3], const sim_real b[3]) {
  sim_real t0 = a[1] * b[2] - a[2] * b[1];
  sim_real t1 = a[2] * b[0] - a[0] * b[2];
  sim_real t2 = a[0] * b[1] - a[1] * b[0];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
SIM_FN sim_real simu_norm3(const sim_real a[3]) { return sim_sqrt(simu_dot3(a, a)); }

// normalize in place; returns the norm. Zero vectors become (1,0,0) as in mju_normalize3.
SIM_FN sim_real simu_normalize3(sim_real v[3]) {
  sim_real norm = sim_sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (norm < SIM_MINVAL) {
    v[0] = 1; v[1] = 0; v[2] = 0;
  } else {
    sim_real inv = 1 / norm;
    v[0] *= inv; v[1] *= inv; v[2] *= inv;
  }
  return norm;
}

// mju_normalize4: (1,0,0,0) below MINVAL; untouched if already unit within MINVAL.
SIM_FN sim_real simu_normalize4(sim_real q[4]) {
  sim_real norm = sim_sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (norm < SIM_MINVAL) {
    q[0] = 1; q[1] = 0; q[2] = 0; q[3] = 0;
  } else if (sim_fabs(norm - 1) > SIM_MINVAL) {
    sim_real inv = 1 / norm;
    q[0] *= inv; q[1] *= inv; q[2] *= inv; q[3] *= inv;
  }
  return norm;
}

// r = M a, M 3x3 row-major
SIM_FN void simu_mulMatVec3(sim_real r[3], const sim_real M[9], const sim_real a[3]) {
  sim_real t0 = M[0] * a[0] + M[1] * a[1] + M[2] * a[2];
  sim_real t1 = M[3] * a[0] + M[4] * a[1] + M[5] * a[2];
  sim_real t2 = M[6] * a[0] + M[7] * a[1] + M[8] * a[2];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
// r = M' a
SIM_FN void simu_mulMatTVec3(sim_real r[3], const sim_real M[9], const sim_real a[3]) {
  sim_real t0 = M[0] * a[0] + M[3] * a[1] + M[6] * a[2];
  sim_real t1 = M[1] * a[0] + M[4] * a[1] + M[7] * a[2];
  sim_real t2 = M[2] * a[0] + M[5] * a[1] + M[8] * a[2];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
// R = A B (3x3)
SIM_FN void simu_mulMatMat3(sim_real R[9], const sim_real A[9], const sim_real B[9]) {
  sim_real t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) t[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  for (int i = 0; i < 9; i++) R[i] = t[i];
}

SIM_FN void simu_mulQuat(sim_real r[4], const sim_real a[4], const sim_real b[4]) {
  sim_real t0 = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  sim_real t1 = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  sim_real t2 = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  sim_real t3 = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
  r[0] = t0; r[1] = t1; r[2] = t2; r[3] = t3;
}
SIM_FN void simu_negQuat(sim_real r[4], const sim_real q[4]) { r[0] = q[0]; r[1] = -q[1]; r[2] = -q[2]; r[3] = -q[3]; }

SIM_FN void simu_axisAngle2Quat(sim_real r[4], const sim_real axis[3], sim_real angle) {
  if (angle == 0) {
    r[0] = 1; r[1] = 0; r[2] = 0; r[3] = 0;
  } else {
    sim_real s = sim_sin(angle * (sim_real)0.5);
    r[0] = sim_cos(angle * (sim_real)0.5);
    r[1] = axis[0] * s; r[2] = axis[1] * s; r[3] = axis[2] * s;
  }
}

SIM_FN void simu_quat2Mat(sim_real r[9], const sim_real q[4]) {
  if (q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
    r[0] = 1; r[1] = 0; r[2] = 0; r[3] = 0; r[4] = 1; r[5] = 0; r[6] = 0; r[7] = 0; r[8] = 1;
    return;
  }
  sim_real q00 = q[0] * q[0], q01 = q[0] * q[1], q02 = q[0] * q[2], q03 = q[0] * q[3];
  sim_real q11 = q[1] * q[1], q12 = q[1] * q[2], q13 = q[1] * q[3];
  sim_real q22 = q[2] * q[2], q23 = q[2] * q[3], q33 = q[3] * q[3];
  r[0] = q00 + q11 - q22 - q33;
  r[4] = q00 - q11 + q22 - q33;
  r[8] = q00 - q11 - q22 + q33;
  r[1] = 2 * (q12 - q03);
  r[2] = 2 * (q13 + q02);
  r[3] = 2 * (q12 + q03);
  r[5] = 2 * (q23 - q01);
  r[6] = 2 * (q13 - q02);
  r[7] = 2 * (q23 + q01);
}

// rotate a vector by a quaternion (mju_rotVecQuat: identity shortcut, else via the matrix)
SIM_FN void simu_rotVecQuat(sim_real r[3], const sim_real v[3], const sim_real q[4]) {
  if (q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
    simu_copy3(r, v);
  } else {
    sim_real mat[9];
    simu_quat2Mat(mat, q);
    simu_mulMatVec3(r, mat, v);
  }
}

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
