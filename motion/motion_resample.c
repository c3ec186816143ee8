// motion_resample.c: resampling (linear + slerp) and tangent-space velocities (mj_differentiatePos's conventions).
#include <math.h>

#define MOTION_PI 3.14159265358979323846
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "motion/motion.h"

void motion_slerp(const double q0[4], const double q1[4], double t, double out[4]) {
  double b[4] = {q1[0], q1[1], q1[2], q1[3]};
  double c = q0[0] * b[0] + q0[1] * b[1] + q0[2] * b[2] + q0[3] * b[3];
  if (c < 0) {  // q and -q are the same rotation: take the shorter arc
    for (int i = 0; i < 4; i++) b[i] = -b[i];
    c = -c;
  }
  double w0, w1;
  if (c > 1 - 1e-12) {  // nearly equal: sin(theta) ~ 0, the chord is the arc to rounding
    w0 = 1 - t, w1 = t;
  } else {
    double theta = acos(c), s = sin(theta);
    w0 = sin((1 - t) * theta) / s, w1 = sin(t * theta) / s;
  }
  double n = 0;
  for (int i = 0; i < 4; i++) out[i] = w0 * q0[i] + w1 * b[i], n += out[i] * out[i];
  n = sqrt(n);
  for (int i = 0; i < 4; i++) out[i] /= n;
}

int motion_resample(const MotionClip* in, double fps, MotionClip* out, char* err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (!(fps > 0) || in->nframe < 1) {
    snprintf(err, errlen, "%s: cannot resample %d frames to %g fps", in->name, in->nframe, fps);
    return MOTION_ERR_ARG;
  }
  const int nq = in->nq;
  double duration = (in->nframe - 1) / in->fps;
  // frames k / fps within [0, duration]; the small slack keeps an exact end frame that rounding would drop
  int n = (int)floor(duration * fps + 1e-9) + 1;
  double* q = (double*)malloc((size_t)n * nq * sizeof(double));
  if (!q) {
    snprintf(err, errlen, "%s: out of memory", in->name);
    return MOTION_ERR_ALLOC;
  }
  for (int k = 0; k < n; k++) {
    double s = k * in->fps / fps;  // position in source frames
    int i = (int)floor(s);
    if (i > in->nframe - 2) i = in->nframe - 2;
    if (i < 0) i = 0;
    double a = s - i;
    const double* q0 = in->qpos + (size_t)i * nq;
    const double* q1 = in->nframe > 1 ? q0 + nq : q0;
    double* o = q + (size_t)k * nq;
    for (int j = 0; j < nq; j++) o[j] = q0[j] + a * (q1[j] - q0[j]);
    motion_slerp(q0 + 3, q1 + 3, a, o + 3);
  }
  snprintf(out->name, sizeof(out->name), "%s", in->name);
  out->nframe = n;
  out->nq = nq;
  out->fps = fps;
  out->qpos = q;
  return MOTION_OK;
}

// rotation vector of conj(qb) * qa over dt (mju_subQuat / mju_quat2Vel): the body-frame angular velocity
static void sub_quat(const double qa[4], const double qb[4], double dt, double v[3]) {
  double w = qb[0] * qa[0] + qb[1] * qa[1] + qb[2] * qa[2] + qb[3] * qa[3];
  double x = qb[0] * qa[1] - qb[1] * qa[0] - qb[2] * qa[3] + qb[3] * qa[2];
  double y = qb[0] * qa[2] + qb[1] * qa[3] - qb[2] * qa[0] - qb[3] * qa[1];
  double z = qb[0] * qa[3] - qb[1] * qa[2] + qb[2] * qa[1] - qb[3] * qa[0];
  double s = sqrt(x * x + y * y + z * z);
  if (s == 0) {
    v[0] = v[1] = v[2] = 0;
    return;
  }
  double angle = 2 * atan2(s, w);
  if (angle > MOTION_PI) angle -= 2 * MOTION_PI;  // the shorter rotation
  double k = angle / (s * dt);
  v[0] = x * k, v[1] = y * k, v[2] = z * k;
}

void motion_diff_pos(int nq, const double* qa, const double* qb, double dt, double* v) {
  for (int i = 0; i < 3; i++) v[i] = (qb[i] - qa[i]) / dt;
  sub_quat(qb + 3, qa + 3, dt, v + 3);
  for (int j = 7; j < nq; j++) v[j - 1] = (qb[j] - qa[j]) / dt;
}

void motion_qvel(const MotionClip* c, double* qvel) {
  const int nq = c->nq, nv = nq - 1, n = c->nframe;
  if (n < 2) {
    if (n == 1) memset(qvel, 0, nv * sizeof(double));
    return;
  }
  double dt = 1 / c->fps;
  for (int k = 0; k < n; k++) {
    int a = k > 0 ? k - 1 : 0, b = k < n - 1 ? k + 1 : n - 1;
    motion_diff_pos(nq, c->qpos + (size_t)a * nq, c->qpos + (size_t)b * nq, (b - a) * dt, qvel + (size_t)k * nv);
  }
}
