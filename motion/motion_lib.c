// motion_lib.c: building the motion library (motion_lib.h): clips resampled to the control rate, qpos-space
// velocities, body world poses by the engine's float64 forward kinematics, body velocities by differences.
// Compiled with SIM_DOUBLE (the float64 engine's names).
#include "motion/motion_lib.h"

#include <math.h>
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

void motion_lib_free(MotionLib* lib) {
  if (!lib) return;
  free(lib->clip_name);
  free(lib->clip_start);
  free(lib->clip_len);
  free(lib->joint_name);
  free(lib->body_name);
  free(lib->qpos);
  free(lib->qvel);
  free(lib->joint_pos);
  free(lib->joint_vel);
  free(lib->body_pos_w);
  free(lib->body_quat_w);
  free(lib->body_lin_vel_w);
  free(lib->body_ang_vel_w);
  memset(lib, 0, sizeof(*lib));
}

int motion_lib_body(const MotionLib* lib, const char* name) {
  for (int b = 0; b < lib->nbody; b++)
    if (!strcmp(lib->body_name[b], name)) return b;
  return -1;
}

int motion_lib_joint(const MotionLib* lib, const char* name) {
  for (int j = 0; j < lib->njoint; j++)
    if (!strcmp(lib->joint_name[j], name)) return j;
  return -1;
}

// Allocates every array of lib for its sizes (set before); zeroed.
int motion_lib_alloc(MotionLib* lib) {
  const size_t nf = (size_t)lib->nframe, nc = (size_t)lib->nclip, nb = (size_t)lib->nbody;
  lib->clip_name = calloc(nc ? nc : 1, sizeof(*lib->clip_name));
  lib->clip_start = calloc(nc ? nc : 1, sizeof(int));
  lib->clip_len = calloc(nc ? nc : 1, sizeof(int));
  lib->joint_name = calloc(lib->njoint ? lib->njoint : 1, sizeof(*lib->joint_name));
  lib->body_name = calloc(nb ? nb : 1, sizeof(*lib->body_name));
  lib->qpos = calloc(nf * lib->nq + 1, sizeof(double));
  lib->qvel = calloc(nf * lib->nv + 1, sizeof(double));
  lib->joint_pos = calloc(nf * lib->njoint + 1, sizeof(double));
  lib->joint_vel = calloc(nf * lib->njoint + 1, sizeof(double));
  lib->body_pos_w = calloc(nf * nb * 3 + 1, sizeof(double));
  lib->body_quat_w = calloc(nf * nb * 4 + 1, sizeof(double));
  lib->body_lin_vel_w = calloc(nf * nb * 3 + 1, sizeof(double));
  lib->body_ang_vel_w = calloc(nf * nb * 3 + 1, sizeof(double));
  if (!lib->clip_name || !lib->clip_start || !lib->clip_len || !lib->joint_name || !lib->body_name || !lib->qpos ||
      !lib->qvel || !lib->joint_pos || !lib->joint_vel || !lib->body_pos_w || !lib->body_quat_w ||
      !lib->body_lin_vel_w || !lib->body_ang_vel_w)
    return MOTION_ERR_ALLOC;
  return MOTION_OK;
}

// World-frame angular velocity taking unit q0 to unit q1 in dt: the rotation vector of q1 (x) q0^-1 over dt,
// the shorter rotation (q and -q are the same rotation).
static void world_ang_vel(const double q0[4], const double q1[4], double dt, double w[3]) {
  // q1 * conj(q0)
  double a = q1[0] * q0[0] + q1[1] * q0[1] + q1[2] * q0[2] + q1[3] * q0[3];
  double x = -q1[0] * q0[1] + q1[1] * q0[0] - q1[2] * q0[3] + q1[3] * q0[2];
  double y = -q1[0] * q0[2] + q1[1] * q0[3] + q1[2] * q0[0] - q1[3] * q0[1];
  double z = -q1[0] * q0[3] - q1[1] * q0[2] + q1[2] * q0[1] + q1[3] * q0[0];
  if (a < 0) a = -a, x = -x, y = -y, z = -z;
  double s = sqrt(x * x + y * y + z * z);
  if (s == 0) {
    w[0] = w[1] = w[2] = 0;
    return;
  }
  double k = 2 * atan2(s, a) / (s * dt);
  w[0] = x * k, w[1] = y * k, w[2] = z * k;
}

// Body linear and angular velocities of frames [start, start + len) by differences within the clip.
static void body_velocities(MotionLib* lib, int start, int len) {
  const int nb = lib->nbody;
  const double dt = 1 / lib->fps;
  for (int k = 0; k < len; k++) {
    int a = k > 0 ? k - 1 : 0, b = k < len - 1 ? k + 1 : len - 1;
    size_t fa = (size_t)(start + a) * nb, fb = (size_t)(start + b) * nb, f = (size_t)(start + k) * nb;
    for (int i = 0; i < nb; i++) {
      double* v = lib->body_lin_vel_w + 3 * (f + i);
      double* w = lib->body_ang_vel_w + 3 * (f + i);
      if (b == a) {  // a single-frame clip: at rest
        v[0] = v[1] = v[2] = w[0] = w[1] = w[2] = 0;
        continue;
      }
      double h = (b - a) * dt;
      for (int j = 0; j < 3; j++) v[j] = (lib->body_pos_w[3 * (fb + i) + j] - lib->body_pos_w[3 * (fa + i) + j]) / h;
      world_ang_vel(lib->body_quat_w + 4 * (fa + i), lib->body_quat_w + 4 * (fb + i), h, w);
    }
  }
}

// The model must be one free joint (the root, qpos[0:7]) followed by hinges, one dof each.
static int check_model(const mjModel* m, const char* path, int nq, char* err, size_t errlen) {
  if (m->njnt < 1 || m->jnt_type[0] != mjJNT_FREE || m->jnt_qposadr[0] != 0) {
    snprintf(err, errlen, "%s: the model's first joint is not a free joint at qpos[0]", path);
    return MOTION_ERR_ARG;
  }
  for (int j = 1; j < m->njnt; j++)
    if (m->jnt_type[j] != mjJNT_HINGE) {
      snprintf(err, errlen, "%s: joint %d is not a hinge (the clips hold a free root and hinge angles)", path, j);
      return MOTION_ERR_ARG;
    }
  if (m->nq != nq || m->nv != nq - 1) {
    snprintf(err, errlen, "%s: model nq %d, the clips have nq %d (7 + %d joints)", path, (int)m->nq, nq, nq - 7);
    return MOTION_ERR_ARG;
  }
  return MOTION_OK;
}

static void copy_name(char* dst, const mjModel* m, int type, int id, const char* fallback) {
  const char* n = mj_id2name(m, type, id);
  if (n && n[0] && strlen(n) < MOTION_NAME_MAX)
    snprintf(dst, MOTION_NAME_MAX, "%s", n);
  else  // unnamed (or longer than the file's name field): the id keeps names unique
    snprintf(dst, MOTION_NAME_MAX, "%s%d", fallback, id);
}

// Body poses of every frame by the engine's kinematics stage, chunk frames at a time (one world each).
static int body_poses(const mjModel* mm, MotionLib* lib, const char* path, char* err, size_t errlen) {
  SimModel* m = NULL;
  char serr[2048] = "";
  if (sim_model_import(mm, &m, serr, sizeof(serr))) {
    snprintf(err, errlen, "%s: %s", path, serr);
    return MOTION_ERR_ARG;
  }
  const int chunk = 256, nq = lib->nq, nb = lib->nbody;
  SimData* d = NULL;
  if (sim_data_create(m, chunk, &d)) {
    sim_model_free(m);
    snprintf(err, errlen, "%s: out of memory (kinematics)", path);
    return MOTION_ERR_ALLOC;
  }
  for (int f0 = 0; f0 < lib->nframe; f0 += chunk) {
    int n = lib->nframe - f0 < chunk ? lib->nframe - f0 : chunk;
    for (int w = 0; w < chunk; w++)  // spare worlds repeat the chunk's first frame
      memcpy(d->qpos + (size_t)w * nq, lib->qpos + (size_t)(f0 + (w < n ? w : 0)) * nq, sizeof(double) * nq);
    sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
    for (int w = 0; w < n; w++) {
      SimWorld wd;
      sim_world(m, d, w, &wd);
      memcpy(lib->body_pos_w + (size_t)(f0 + w) * nb * 3, wd.xpos + 3, sizeof(double) * 3 * nb);
      memcpy(lib->body_quat_w + (size_t)(f0 + w) * nb * 4, wd.xquat + 4, sizeof(double) * 4 * nb);
    }
  }
  sim_data_free(d);
  sim_model_free(m);
  return MOTION_OK;
}

int motion_lib_build(const MotionSet* set, const char* model_path, double fps, MotionLib* out, char* err,
                     size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (!set || set->nclip < 1 || !(fps > 0) || !isfinite(fps)) {
    snprintf(err, errlen, "motion library: needs at least one clip and fps > 0 (got %d clips, fps %g)",
             set ? set->nclip : 0, fps);
    return MOTION_ERR_ARG;
  }
  const int nq = set->clip[0].nq;
  for (int c = 0; c < set->nclip; c++)
    if (set->clip[c].nq != nq || set->clip[c].nframe < 1) {
      snprintf(err, errlen, "%s: nq %d, %d frames (clip 0 has nq %d)", set->clip[c].name, set->clip[c].nq,
               set->clip[c].nframe, nq);
      return MOTION_ERR_ARG;
    }
  void* mmv = NULL;
  char serr[2048] = "";
  if (sim_load_mjcf(model_path, NULL, &mmv, serr, sizeof(serr))) {
    snprintf(err, errlen, "%s", serr);
    return MOTION_ERR_IO;
  }
  const mjModel* mm = (const mjModel*)mmv;
  int rc = check_model(mm, model_path, nq, err, errlen);
  if (rc) {
    sim_free_mjmodel(mmv);
    return rc;
  }
  // resample every clip (each is dropped as soon as it is copied)
  MotionClip* rs = calloc(set->nclip, sizeof(MotionClip));
  if (!rs) {
    sim_free_mjmodel(mmv);
    snprintf(err, errlen, "motion library: out of memory");
    return MOTION_ERR_ALLOC;
  }
  long total = 0;
  for (int c = 0; c < set->nclip && !rc; c++) {
    rc = motion_resample(&set->clip[c], fps, &rs[c], err, errlen);
    if (!rc) total += rs[c].nframe;
  }
  if (!rc && total > 0x7fffffffL / (4 * (mm->nbody + 1))) {
    snprintf(err, errlen, "motion library: %ld frames is too many", total);
    rc = MOTION_ERR_ARG;
  }
  if (!rc) {
    out->nclip = set->nclip, out->nframe = (int)total;
    out->nq = nq, out->nv = nq - 1, out->njoint = nq - 7;
    out->nbody = (int)mm->nbody - 1;
    out->fps = fps;
    if (motion_lib_alloc(out)) {
      snprintf(err, errlen, "motion library: out of memory for %ld frames", total);
      rc = MOTION_ERR_ALLOC;
    }
  }
  if (!rc) {
    int start = 0;
    for (int c = 0; c < set->nclip; c++) {
      snprintf(out->clip_name[c], sizeof(out->clip_name[c]), "%s", set->clip[c].name);
      out->clip_start[c] = start, out->clip_len[c] = rs[c].nframe;
      memcpy(out->qpos + (size_t)start * nq, rs[c].qpos, sizeof(double) * (size_t)rs[c].nframe * nq);
      motion_qvel(&rs[c], out->qvel + (size_t)start * out->nv);
      start += rs[c].nframe;
      motion_clip_free(&rs[c]);
    }
    for (int j = 0; j < out->njoint; j++) copy_name(out->joint_name[j], mm, mjOBJ_JOINT, j + 1, "joint");
    for (int b = 0; b < out->nbody; b++) copy_name(out->body_name[b], mm, mjOBJ_BODY, b + 1, "body");
    for (size_t f = 0; f < (size_t)total; f++) {
      memcpy(out->joint_pos + f * out->njoint, out->qpos + f * nq + 7, sizeof(double) * out->njoint);
      memcpy(out->joint_vel + f * out->njoint, out->qvel + f * out->nv + 6, sizeof(double) * out->njoint);
    }
    rc = body_poses(mm, out, model_path, err, errlen);
  }
  if (!rc)
    for (int c = 0; c < out->nclip; c++) body_velocities(out, out->clip_start[c], out->clip_len[c]);
  for (int c = 0; c < set->nclip; c++) motion_clip_free(&rs[c]);
  free(rs);
  sim_free_mjmodel(mmv);
  if (rc) motion_lib_free(out);
  return rc;
}
