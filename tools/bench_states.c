// bench_states.c: start states of `adjoint bench sim` (bench_states.h). Compiled for float64: the floor
// placement uses the engine's float64 kinematics.
#define _POSIX_C_SOURCE 200809L
#include "tools/bench_states.h"

#include <math.h>
#include <mujoco/mujoco.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(ADJ_HAVE_MOTION)
#include "motion/motion.h"
#endif
#include "envs/env.h"
#include "sim/sim.h"

static double uniform(uint64_t* s) { return env_rng_uniform(s); }  // the tasks' splitmix64 draws

void bench_states_free(BenchStates* s) {
  free(s->qpos);
  free(s->qvel);
  free(s->ctrl);
  memset(s, 0, sizeof(*s));
}

static int alloc_states(const mjModel* m, int n, BenchStates* s, char* err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->n = n, s->nq = m->nq, s->nv = m->nv, s->nu = m->nu;
  s->qpos = (double*)calloc((size_t)n * m->nq, sizeof(double));
  s->qvel = (double*)calloc((size_t)n * m->nv, sizeof(double));
  s->ctrl = (double*)calloc((size_t)n * (m->nu ? m->nu : 1), sizeof(double));
  if (!s->qpos || !s->qvel || !s->ctrl) {
    bench_states_free(s);
    snprintf(err, errlen, "out of memory for %d states", n);
    return -1;
  }
  return 0;
}

int bench_states_keyframe(const void* mjmodel, int n, BenchStates* out, char* err, size_t errlen) {
  const mjModel* m = (const mjModel*)mjmodel;
  if (alloc_states(m, n, out, err, errlen)) return -1;
  for (int w = 0; w < n; w++) {
    memcpy(out->qpos + (size_t)w * m->nq, m->nkey ? m->key_qpos : m->qpos0, sizeof(double) * m->nq);
    if (m->nkey) {
      memcpy(out->qvel + (size_t)w * m->nv, m->key_qvel, sizeof(double) * m->nv);
      memcpy(out->ctrl + (size_t)w * m->nu, m->key_ctrl, sizeof(double) * m->nu);
    }
  }
  snprintf(out->source, sizeof(out->source), "%s, identical worlds", m->nkey ? "keyframe 0" : "qpos0");
  return 0;
}

// Lowest point of a collision geom along world z (sphere, capsule, box, ellipsoid; others by their rbound).
static double geom_bottom(const SimModel* m, const SimWorld* d, int g) {
  const double* p = d->geom_xpos + 3 * g;
  const double* R = d->geom_xmat + 9 * g;  // row-major: world z of local axis i is R[6 + i]
  const double* s = m->geom_size + 3 * g;
  switch (m->geom_type[g]) {
    case SIM_GEOM_SPHERE: return p[2] - s[0];
    case SIM_GEOM_CAPSULE: return p[2] - fabs(R[8]) * s[1] - s[0];
    case SIM_GEOM_BOX: return p[2] - fabs(R[6]) * s[0] - fabs(R[7]) * s[1] - fabs(R[8]) * s[2];
    case SIM_GEOM_ELLIPSOID:
      return p[2] - sqrt(R[6] * R[6] * s[0] * s[0] + R[7] * R[7] * s[1] * s[1] + R[8] * R[8] * s[2] * s[2]);
    default: return p[2] - m->geom_rbound[g];
  }
}

// Moves each state's root (qpos[2]) so that its lowest collision point is at the floor's height.
static int place_on_floor(const mjModel* mm, BenchStates* s, char* err, size_t errlen) {
  SimModel* m = NULL;
  if (sim_model_import(mm, &m, err, errlen)) return -1;
  double floor_z = -INFINITY;
  for (int g = 0; g < mm->ngeom; g++)
    if (mm->geom_type[g] == mjGEOM_PLANE && mm->geom_bodyid[g] == 0) floor_z = fmax(floor_z, mm->geom_pos[3 * g + 2]);
  if (floor_z == -INFINITY) {
    sim_model_free(m);
    snprintf(err, errlen, "the model has no floor plane on the world body");
    return -1;
  }
  const int chunk = 256;
  SimData* d = NULL;
  if (sim_data_create(m, chunk, &d)) {
    sim_model_free(m);
    snprintf(err, errlen, "out of memory (floor placement)");
    return -1;
  }
  for (int w0 = 0; w0 < s->n; w0 += chunk) {
    int nw = s->n - w0 < chunk ? s->n - w0 : chunk;
    for (int w = 0; w < chunk; w++)
      memcpy(d->qpos + (size_t)w * m->nq, s->qpos + (size_t)(w0 + (w < nw ? w : 0)) * m->nq, sizeof(double) * m->nq);
    sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
    for (int w = 0; w < nw; w++) {
      SimWorld wd;
      sim_world(m, d, w, &wd);
      double low = INFINITY;
      for (int g = 0; g < m->ngeom; g++)
        if ((mm->geom_contype[g] || mm->geom_conaffinity[g]) && mm->geom_bodyid[g] != 0)
          low = fmin(low, geom_bottom(m, &wd, g));
      s->qpos[(size_t)(w0 + w) * m->nq + 2] += floor_z - low;
    }
  }
  sim_data_free(d);
  sim_model_free(m);
  return 0;
}

#if !defined(ADJ_HAVE_MOTION)
int bench_states_lafan1(const void* mjmodel, int n, uint64_t seed, BenchStates* out, char* err, size_t errlen) {
  snprintf(err, errlen, "LAFAN1 states: built without zlib (motion/ left out); install zlib's headers and rebuild");
  return -1;
}
#else
int bench_states_lafan1(const void* mjmodel, int n, uint64_t seed, BenchStates* out, char* err, size_t errlen) {
  const mjModel* m = (const mjModel*)mjmodel;
  int njoint = m->nq - 7;
  if (m->njnt < 1 || m->jnt_type[0] != mjJNT_FREE || m->nv != m->nq - 1 || njoint != MOTION_G1_NJOINT) {
    snprintf(err, errlen, "LAFAN1 states need a free joint followed by %d hinges (the G1); model has nq %d",
             MOTION_G1_NJOINT, (int)m->nq);
    return -1;
  }
  for (int a = 0; a < m->nu; a++)
    if (m->actuator_trntype[a] != mjTRN_JOINT || m->jnt_type[m->actuator_trnid[2 * a]] == mjJNT_FREE) {
      snprintf(err, errlen, "LAFAN1 states: actuator %d does not drive a hinge", a);
      return -1;
    }
  char manifest[4096];
  if (sim_find_asset("lafan1_g1/MANIFEST.tsv", manifest, sizeof(manifest))) {
    snprintf(err, errlen, "lafan1_g1/MANIFEST.tsv not found on the asset path ($ADJOINT_ASSETS, ./assets, "
                          "../shared/assets)");
    return -1;
  }
  *strrchr(manifest, '/') = '\0';
  MotionSet set;
  if (motion_read_dir(manifest, njoint, MOTION_LAFAN1_FPS, &set, err, errlen)) return -1;
  // the pool: every 0.5 s (15 frames) of every clip, in manifest order
  const int every = (int)lround(0.5 * MOTION_LAFAN1_FPS);
  int npool = 0;
  for (int c = 0; c < set.nclip; c++) npool += (set.clip[c].nframe + every - 1) / every;
  if (n > npool) {
    snprintf(err, errlen, "%d states asked, the LAFAN1 pool has %d frames (every 0.5 s of %d clips)", n, npool,
             set.nclip);
    motion_set_free(&set);
    return -1;
  }
  int* pool = (int*)malloc(sizeof(int) * 2 * npool);
  int k = 0;
  for (int c = 0; c < set.nclip; c++)
    for (int f = 0; f < set.clip[c].nframe; f += every) pool[2 * k] = c, pool[2 * k + 1] = f, k++;
  uint64_t rng = seed;
  for (int i = 0; i < n; i++) {  // partial Fisher-Yates: the first n of a seeded permutation
    int j = i + (int)(uniform(&rng) * (npool - i));
    int t0 = pool[2 * i], t1 = pool[2 * i + 1];
    pool[2 * i] = pool[2 * j], pool[2 * i + 1] = pool[2 * j + 1], pool[2 * j] = t0, pool[2 * j + 1] = t1;
  }
  if (alloc_states(m, n, out, err, errlen)) {
    free(pool);
    motion_set_free(&set);
    return -1;
  }
  const int nq = m->nq, nv = m->nv;
  for (int w = 0; w < n; w++) {
    const MotionClip* c = &set.clip[pool[2 * w]];
    int f = pool[2 * w + 1];
    int a = f > 0 ? f - 1 : 0, b = f < c->nframe - 1 ? f + 1 : c->nframe - 1;
    double* q = out->qpos + (size_t)w * nq;
    memcpy(q, c->qpos + (size_t)f * nq, sizeof(double) * nq);
    if (b > a)
      motion_diff_pos(nq, c->qpos + (size_t)a * nq, c->qpos + (size_t)b * nq, (b - a) / c->fps,
                      out->qvel + (size_t)w * nv);
    for (int u = 0; u < m->nu; u++) out->ctrl[(size_t)w * m->nu + u] = q[m->jnt_qposadr[m->actuator_trnid[2 * u]]];
  }
  snprintf(out->source, sizeof(out->source), "LAFAN1: %d of %d frames (every 0.5 s of %d clips), seed %llu", n,
           npool, set.nclip, (unsigned long long)seed);
  free(pool);
  motion_set_free(&set);
  if (place_on_floor(m, out, err, errlen)) {
    bench_states_free(out);
    return -1;
  }
  return 0;
}
#endif

typedef struct {
  const mjModel* m;
  BenchStates* s;
  int w0, w1;
  uint64_t seed;
} RolloutJob;

static void* rollout_worker(void* arg) {
  RolloutJob* j = (RolloutJob*)arg;
  const mjModel* m = j->m;
  mjData* d = mj_makeData(m);
  for (int w = j->w0; w < j->w1 && d; w++) {
    uint64_t rng = j->seed ^ (0x5851F42D4C957F2Dull * (uint64_t)(w + 1));
    mj_resetData(m, d);
    if (m->nkey) mj_resetDataKeyframe(m, d, 0);
    int nstep = 40 + (int)(uniform(&rng) * 160);
    for (int k = 0; k < nstep; k++) {
      if (k % 4 == 0)
        for (int u = 0; u < m->nu; u++) {
          double lo = m->actuator_ctrllimited[u] ? m->actuator_ctrlrange[2 * u] : -1;
          double hi = m->actuator_ctrllimited[u] ? m->actuator_ctrlrange[2 * u + 1] : 1;
          d->ctrl[u] = lo + (hi - lo) * uniform(&rng);
        }
      mj_step(m, d);
    }
    memcpy(j->s->qpos + (size_t)w * m->nq, d->qpos, sizeof(double) * m->nq);
    memcpy(j->s->qvel + (size_t)w * m->nv, d->qvel, sizeof(double) * m->nv);
    memcpy(j->s->ctrl + (size_t)w * m->nu, d->ctrl, sizeof(double) * m->nu);
  }
  if (d) mj_deleteData(d);
  return NULL;
}

int bench_states_rollout(const void* mjmodel, int n, uint64_t seed, int nthread, BenchStates* out, char* err,
                         size_t errlen) {
  const mjModel* m = (const mjModel*)mjmodel;
  if (alloc_states(m, n, out, err, errlen)) return -1;
  if (nthread < 1) nthread = 1;
  pthread_t* th = (pthread_t*)malloc(sizeof(pthread_t) * nthread);
  RolloutJob* jobs = (RolloutJob*)malloc(sizeof(RolloutJob) * nthread);
  for (int t = 0; t < nthread; t++) {
    jobs[t] = (RolloutJob){m, out, (int)((long)n * t / nthread), (int)((long)n * (t + 1) / nthread), seed};
    pthread_create(&th[t], NULL, rollout_worker, &jobs[t]);
  }
  for (int t = 0; t < nthread; t++) pthread_join(th[t], NULL);
  free(th);
  free(jobs);
  snprintf(out->source, sizeof(out->source),
           "MuJoCo C rollouts under uniform random controls (40-199 steps from %s), seed %llu",
           m->nkey ? "keyframe 0" : "qpos0", (unsigned long long)seed);
  return 0;
}

int bench_states_write(const BenchStates* s, const char* path, char* err, size_t errlen) {
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot write", tmp);
    return -1;
  }
  fprintf(f, "ADJSTATES 1 %d %d %d %d\n", s->n, s->nq, s->nv, s->nu);
  size_t ok = fwrite(s->qpos, sizeof(double), (size_t)s->n * s->nq, f) == (size_t)s->n * s->nq;
  ok = ok && fwrite(s->qvel, sizeof(double), (size_t)s->n * s->nv, f) == (size_t)s->n * s->nv;
  ok = ok && fwrite(s->ctrl, sizeof(double), (size_t)s->n * s->nu, f) == (size_t)s->n * s->nu;
  if (fclose(f) || !ok || rename(tmp, path)) {
    remove(tmp);
    snprintf(err, errlen, "%s: write failed", path);
    return -1;
  }
  return 0;
}
