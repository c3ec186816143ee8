// sim_math_geo.h: the geometry's precision (see sim_port.h): sim_geo (double) helpers for kinematics and the
// narrow phase, and SIM_GEO(s, name), the double view of a model constant or a frame.
//
// The float64 build computes everything in double already: there SIM_GEO(s, name) is s->name and each simg_*
// helper is its simu_* twin, so that build's arithmetic is unchanged. The float32 build (CPU and CUDA) reads
// the float64 copies m->geo_* / d->geo_* (sim_model.h) and runs the double helpers below, which are the simu_*
// code at type double (same operations, same order; sin/cos/sqrt in double). IEEE double arithmetic without
// contraction rounds identically on the CPU and the GPU, so the float32 CPU and CUDA builds still agree (up to
// libm's and CUDA's double sin/cos, whose rare last-bit differences almost never survive the rounding to float).
#ifndef ADJ_SIM_MATH_GEO_H
#define ADJ_SIM_MATH_GEO_H

#include "sim_math.h"

#ifdef SIM_DOUBLE

#define SIM_GEO(s, name) ((s)->name)
#define simg_copy3 simu_copy3
#define simg_zero3 simu_zero3
#define simg_dot3 simu_dot3
#define simg_add3 simu_add3
#define simg_sub3 simu_sub3
#define simg_scl3 simu_scl3
#define simg_addscl3 simu_addscl3
#define simg_cross simu_cross
#define simg_normalize3 simu_normalize3
#define simg_normalize4 simu_normalize4
#define simg_mulMatVec3 simu_mulMatVec3
#define simg_mulMatTVec3 simu_mulMatTVec3
#define simg_mulQuat simu_mulQuat
#define simg_axisAngle2Quat simu_axisAngle2Quat
#define simg_quat2Mat simu_quat2Mat
#define simg_rotVecQuat simu_rotVecQuat

#else

#define SIM_GEO(s, name) ((s)->geo_##name)

SIM_FN void simg_copy3(sim_geo r[3], const sim_geo a[3]) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; }
SIM_FN void simg_zero3(sim_geo r[3]) { r[0] = r[1] = r[2] = 0; }
SIM_FN sim_geo simg_dot3(const sim_geo a[3], const sim_geo b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
SIM_FN void simg_add3(sim_geo r[3], const sim_geo a[3], const sim_geo b[3]) {
  r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; r[2] = a[2] + b[2];
}
SIM_FN void simg_sub3(sim_geo r[3], const sim_geo a[3], const sim_geo b[3]) {
  r[0] = a[0] - b[0]; r[1] = a[1] - b[1]; r[2] = a[2] - b[2];
}
SIM_FN void simg_scl3(sim_geo r[3], const sim_geo a[3], sim_geo s) {
  r[0] = a[0] * s; r[1] = a[1] * s; r[2] = a[2] * s;
}
SIM_FN void simg_addscl3(sim_geo r[3], const sim_geo a[3], const sim_geo b[3], sim_geo s) {
  r[0] = a[0] + b[0] * s; r[1] = a[1] + b[1] * s; r[2] = a[2] + b[2] * s;
}
SIM_FN void simg_cross(sim_geo r[3], const sim_geo a[3], const sim_geo b[3]) {
  sim_geo t0 = a[1] * b[2] - a[2] * b[1];
  sim_geo t1 = a[2] * b[0] - a[0] * b[2];
  sim_geo t2 = a[0] * b[1] - a[1] * b[0];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
SIM_FN sim_geo simg_normalize3(sim_geo v[3]) {
  sim_geo norm = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (norm < SIM_MINVAL) {
    v[0] = 1; v[1] = 0; v[2] = 0;
  } else {
    sim_geo inv = 1 / norm;
    v[0] *= inv; v[1] *= inv; v[2] *= inv;
  }
  return norm;
}
SIM_FN sim_geo simg_normalize4(sim_geo q[4]) {
  sim_geo norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (norm < SIM_MINVAL) {
    q[0] = 1; q[1] = 0; q[2] = 0; q[3] = 0;
  } else if (fabs(norm - 1) > SIM_MINVAL) {
    sim_geo inv = 1 / norm;
    q[0] *= inv; q[1] *= inv; q[2] *= inv; q[3] *= inv;
  }
  return norm;
}
SIM_FN void simg_mulMatVec3(sim_geo r[3], const sim_geo M[9], const sim_geo a[3]) {
  sim_geo t0 = M[0] * a[0] + M[1] * a[1] + M[2] * a[2];
  sim_geo t1 = M[3] * a[0] + M[4] * a[1] + M[5] * a[2];
  sim_geo t2 = M[6] * a[0] + M[7] * a[1] + M[8] * a[2];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
SIM_FN void simg_mulMatTVec3(sim_geo r[3], const sim_geo M[9], const sim_geo a[3]) {
  sim_geo t0 = M[0] * a[0] + M[3] * a[1] + M[6] * a[2];
  sim_geo t1 = M[1] * a[0] + M[4] * a[1] + M[7] * a[2];
  sim_geo t2 = M[2] * a[0] + M[5] * a[1] + M[8] * a[2];
  r[0] = t0; r[1] = t1; r[2] = t2;
}
SIM_FN void simg_mulQuat(sim_geo r[4], const sim_geo a[4], const sim_geo b[4]) {
  sim_geo t0 = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  sim_geo t1 = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  sim_geo t2 = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  sim_geo t3 = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
  r[0] = t0; r[1] = t1; r[2] = t2; r[3] = t3;
}
SIM_FN void simg_axisAngle2Quat(sim_geo r[4], const sim_geo axis[3], sim_geo angle) {
  if (angle == 0) {
    r[0] = 1; r[1] = 0; r[2] = 0; r[3] = 0;
  } else {
    sim_geo s = sin(angle * 0.5);
    r[0] = cos(angle * 0.5);
    r[1] = axis[0] * s; r[2] = axis[1] * s; r[3] = axis[2] * s;
  }
}
SIM_FN void simg_quat2Mat(sim_geo r[9], const sim_geo q[4]) {
  if (q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
    r[0] = 1; r[1] = 0; r[2] = 0; r[3] = 0; r[4] = 1; r[5] = 0; r[6] = 0; r[7] = 0; r[8] = 1;
    return;
  }
  sim_geo q00 = q[0] * q[0], q01 = q[0] * q[1], q02 = q[0] * q[2], q03 = q[0] * q[3];
  sim_geo q11 = q[1] * q[1], q12 = q[1] * q[2], q13 = q[1] * q[3];
  sim_geo q22 = q[2] * q[2], q23 = q[2] * q[3], q33 = q[3] * q[3];
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
SIM_FN void simg_rotVecQuat(sim_geo r[3], const sim_geo v[3], const sim_geo q[4]) {
  if (q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
    simg_copy3(r, v);
  } else {
    sim_geo mat[9];
    simg_quat2Mat(mat, q);
    simg_mulMatVec3(r, mat, v);
  }
}

#endif

// a geometry result v (n values) into its double field g and its float field f (the same array in float64)
SIM_FN void simg_store(sim_real* f, sim_geo* g, const sim_geo* v, int n) {
  for (int k = 0; k < n; k++) {
    g[k] = v[k];
    f[k] = (sim_real)v[k];
  }
}

#endif
