// bench_sim.c: `adjoint bench sim MODEL`: one control step from realistic start states, timed on our CUDA
// backend (float32), our CPU engine (float32) and MuJoCo C (float64) in the same run, with the contact, row,
// Newton-iteration and line-search counts beside every time (bench/README.md says what is measured).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mujoco/mujoco.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tools/bench_states.h"
#include "tools/cli.h"
#if defined(ADJ_HAVE_CUDA)
#include "sim/cuda/sim_cuda.h"
#endif

static const char* kUsage =
    "usage: adjoint bench sim MODEL.xml [--states key|lafan1|rollout] [--seed S] [--nworld N] [--grad NSUB]\n"
    "         [--reps R] [--cpu-nworld C] [--cpu-reps R] [--threads T] [--no-cuda] [--no-cpu] [--no-mujoco]\n"
    "         [--stages] [--nconmax C] [--nefcmax R] [--no-constraint] [--no-contact] [--steps S]\n"
    "         [--launch fused|staged|staged-shared] [--streams G] [--carveout C] [--write-states FILE] [--json FILE]\n"
    "One control step of NSUB substeps (default 4) from N start states (--states: the keyframe in every world\n"
    "(default); LAFAN1 frames every 0.5 s of the 40 clips on a free-base robot, placed on the floor; states of\n"
    "MuJoCo rollouts under random controls), after one untimed control step from them in each engine.\n"
    "Timed: our CUDA backend (CUDA events, median of R, default 20, after warm-up; uploads excluded): the plain\n"
    "step kernel, and with --grad the recorded control step + the backward of a fixed random cotangent on the\n"
    "final (qpos, qvel); our CPU engine (float32) and MuJoCo C (float64) on the first C states (default\n"
    "min(N, 1024)), T threads (default all cores), median of R (default 5). Beside each: mean and max per\n"
    "world-substep of contacts, rows, Newton iterations and line-search evaluations, and overflow counts.\n"
    "--stages: per-stage times of the forward substep (CUDA with --grad: also the staged launch's kernels, forward\n"
    "and backward, and their world clocks: each launch's span, its worlds' latencies, busy warps per SM).\n"
    "--write-states: the start states for\n"
    "bench/mjx_bench.py. --steps S: also S consecutive CUDA steps from the keyframe (steps/s). --launch: the\n"
    "CUDA steps as one kernel each (fused) or one kernel per group of stages (staged-shared, the default: the\n"
    "solver's dense scratch in shared memory where it fits; staged: in global memory). --streams G: the staged\n"
    "launch's control steps in G groups of worlds, each on a stream of its own (default 0: one per 1024 worlds, up\n"
    "to 4; the same results). --carveout C: the staged kernels' shared-memory carve-out, simcuda_set_carveout's\n"
    "mode (0 the driver's; 1 each kernel's least; 2 one for all; 3, the default, the backward's as 1; 4 the\n"
    "backward's as 1, one for the substep's; the same results).\n";

static int g_staged = 2;  // --launch: simcuda_set_staged's mode
static int g_streams = 0;  // --streams: simcuda_set_streams's count (0: by the batch's size)
static int g_carveout = 3;  // --carveout: simcuda_set_carveout's mode (3: SIMCUDA_DEFAULT_CARVEOUT)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return v[n / 2];
}

// ---- per world-substep counts: contacts, rows, Newton iterations, line-search evaluations ----
enum { C_NCON, C_NEFC, C_NITER, C_NLS, C_N };
static const char* kCountName[C_N] = {"ncon", "nefc", "newton_iter", "ls_eval"};
typedef struct {
  double sum[C_N];
  int max[C_N];
  long n;
  long ncon_overflow, nefc_overflow;
} Counts;
static void counts_add(Counts* c, const int v[C_N]) {
  for (int k = 0; k < C_N; k++) c->sum[k] += v[k], c->max[k] = v[k] > c->max[k] ? v[k] : c->max[k];
  c->n++;
}
static void counts_merge(Counts* a, const Counts* b) {
  for (int k = 0; k < C_N; k++) a->sum[k] += b->sum[k], a->max[k] = b->max[k] > a->max[k] ? b->max[k] : a->max[k];
  a->n += b->n, a->ncon_overflow += b->ncon_overflow, a->nefc_overflow += b->nefc_overflow;
}
static void counts_print(const Counts* c) {
  printf("    per world-substep (mean / max):");
  for (int k = 0; k < C_N; k++) printf(" %s %.2f / %d%s", kCountName[k], c->n ? c->sum[k] / c->n : 0, c->max[k], k < C_N - 1 ? "," : "");
  printf("; overflow: contacts %ld, rows %ld\n", c->ncon_overflow, c->nefc_overflow);
}

// ---- JSON report (a flat list of result objects) ----
static char* g_json = NULL;
static size_t g_json_len = 0, g_json_cap = 0;
static int g_json_nres = 0;  // result objects written (comma placement)
static void json_add(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[2048];
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (g_json_len + (size_t)n + 1 > g_json_cap) {
    g_json_cap = 2 * (g_json_cap + (size_t)n + 1024);
    g_json = (char*)realloc(g_json, g_json_cap);
  }
  memcpy(g_json + g_json_len, tmp, (size_t)n + 1);
  g_json_len += (size_t)n;
}
static void json_result(const char* engine, const char* what, int nworld, int nthread, double ms, int nsub,
                        const Counts* c) {
  json_add("%s{\"engine\": \"%s\", \"what\": \"%s\", \"nworld\": %d, \"threads\": %d, \"ms\": %.6g, "
           "\"steps_per_s\": %.6g",
           g_json_nres++ ? ",\n  " : "\n  ", engine, what, nworld, nthread, ms, ms > 0 ? nworld * nsub / (ms * 1e-3) : 0);
  if (c) {
    for (int k = 0; k < C_N; k++)
      json_add(", \"%s_mean\": %.4f, \"%s_max\": %d", kCountName[k], c->n ? c->sum[k] / c->n : 0, kCountName[k],
               c->max[k]);
    json_add(", \"ncon_overflow\": %ld, \"nefc_overflow\": %ld", c->ncon_overflow, c->nefc_overflow);
  }
  json_add("}");
}

static void cotangent(uint64_t seed, int w, int n, float* out) {  // fixed uniform [-1, 1) per world
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)w * 0xD1B54A32D192ED03ull + 1;
  for (int i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    out[i] = (float)((s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

// ---- MuJoCo C: one mjData per thread, start states restored per world ----
typedef struct {
  const mjModel* m;
  const BenchStates* s;
  int w0, w1, nsub, phase;  // phase 0: untimed step from the start state; 1: timed step; 2: counted step
  double *q1, *v1, *u1, *a1;  // state after the untimed step (all worlds)
  double busy;                // seconds spent stepping (restores excluded)
  Counts counts;
} MjJob;

static void* mj_worker(void* arg) {
  MjJob* j = (MjJob*)arg;
  const mjModel* m = j->m;
  mjData* d = mj_makeData(m);
  j->busy = 0;
  int nq = m->nq, nv = m->nv, nu = m->nu;
  for (int w = j->w0; w < j->w1 && d; w++) {
    mj_resetData(m, d);
    if (j->phase == 0) {
      memcpy(d->qpos, j->s->qpos + (size_t)w * nq, sizeof(double) * nq);
      memcpy(d->qvel, j->s->qvel + (size_t)w * nv, sizeof(double) * nv);
      memcpy(d->ctrl, j->s->ctrl + (size_t)w * nu, sizeof(double) * nu);
    } else {
      memcpy(d->qpos, j->q1 + (size_t)w * nq, sizeof(double) * nq);
      memcpy(d->qvel, j->v1 + (size_t)w * nv, sizeof(double) * nv);
      memcpy(d->ctrl, j->u1 + (size_t)w * nu, sizeof(double) * nu);
      memcpy(d->qacc_warmstart, j->a1 + (size_t)w * nv, sizeof(double) * nv);
    }
    double t0 = now_s();
    for (int k = 0; k < j->nsub; k++) {
      mj_step(m, d);
      if (j->phase == 2) {
        int niter = 0, nls = 0;
        for (int i = 0; i < (d->nisland > 0 ? d->nisland : 1) && i < mjNISLAND; i++) {
          niter += d->solver_niter[i];
          for (int it = 0; it < d->solver_niter[i] && it < mjNSOLVER; it++) nls += d->solver[i * mjNSOLVER + it].neval;
        }
        int v[C_N] = {d->ncon, d->nefc, niter, nls};
        counts_add(&j->counts, v);
      }
    }
    j->busy += now_s() - t0;
    if (j->phase == 0) {
      memcpy(j->q1 + (size_t)w * nq, d->qpos, sizeof(double) * nq);
      memcpy(j->v1 + (size_t)w * nv, d->qvel, sizeof(double) * nv);
      memcpy(j->u1 + (size_t)w * nu, d->ctrl, sizeof(double) * nu);
      memcpy(j->a1 + (size_t)w * nv, d->qacc_warmstart, sizeof(double) * nv);
    }
  }
  if (d) mj_deleteData(d);
  return NULL;
}

// runs one phase on nthread threads; returns the slowest thread's stepping time
static double mj_phase(MjJob* jobs, int nthread, int phase) {
  pthread_t* th = (pthread_t*)malloc(sizeof(pthread_t) * nthread);
  for (int t = 0; t < nthread; t++) jobs[t].phase = phase, pthread_create(&th[t], NULL, mj_worker, &jobs[t]);
  double slowest = 0;
  for (int t = 0; t < nthread; t++) pthread_join(th[t], NULL), slowest = fmax(slowest, jobs[t].busy);
  free(th);
  return slowest;
}

static void bench_mujoco(const mjModel* m, const BenchStates* s, int nw, int nsub, int nthread, int nrep) {
  double *q1 = (double*)malloc(sizeof(double) * nw * m->nq), *v1 = (double*)malloc(sizeof(double) * nw * m->nv);
  double *u1 = (double*)malloc(sizeof(double) * nw * (m->nu + 1)), *a1 = (double*)malloc(sizeof(double) * nw * m->nv);
  if (nthread > nw) nthread = nw;
  MjJob* jobs = (MjJob*)calloc(nthread, sizeof(MjJob));
  for (int t = 0; t < nthread; t++)
    jobs[t] = (MjJob){m, s, (int)((long)nw * t / nthread), (int)((long)nw * (t + 1) / nthread), nsub, 0,
                      q1, v1, u1, a1, 0, {{0}, {0}, 0, 0, 0}};
  mj_phase(jobs, nthread, 0);
  double* t = (double*)malloc(sizeof(double) * nrep);
  mj_phase(jobs, nthread, 1);  // warm-up
  for (int r = 0; r < nrep; r++) t[r] = mj_phase(jobs, nthread, 1);
  double ms = 1e3 * median(t, nrep);
  mj_phase(jobs, nthread, 2);
  Counts c = {{0}, {0}, 0, 0, 0};
  for (int k = 0; k < nthread; k++) counts_merge(&c, &jobs[k].counts);
  printf("MuJoCo C 3.12 (float64, %d threads, %d worlds): control step %.3f ms = %.3e steps/s\n", nthread, nw, ms,
         nw * nsub / (ms * 1e-3));
  counts_print(&c);
  json_result("mujoco_c", "forward", nw, nthread, ms, nsub, &c);
  free(t), free(jobs), free(q1), free(v1), free(u1), free(a1);
}

// ---- our CPU engine (float32): one SimData per thread ----
typedef struct {
  const SimModel* m;
  SimData* d;          // this thread's worlds
  float* start;        // per world: qpos, qvel, ctrl, qacc_warmstart, time after the untimed step
  int nsub, phase, grad;  // phase as MjJob; grad: recorded + backward
  uint64_t seed;
  int w0;
  double busy;
  Counts counts;
} CpuJob;

static int cpu_state_len(const SimModel* m) { return m->nq + 2 * m->nv + m->nu + 1; }

static void cpu_save(CpuJob* j) {
  const SimModel* m = j->m;
  SimData* d = j->d;
  int L = cpu_state_len(m);
  for (int w = 0; w < d->nworld; w++) {
    float* s = j->start + (size_t)w * L;
    memcpy(s, d->qpos + (size_t)w * m->nq, sizeof(float) * m->nq), s += m->nq;
    memcpy(s, d->qvel + (size_t)w * m->nv, sizeof(float) * m->nv), s += m->nv;
    memcpy(s, d->ctrl + (size_t)w * m->nu, sizeof(float) * m->nu), s += m->nu;
    memcpy(s, d->qacc_warmstart + (size_t)w * m->nv, sizeof(float) * m->nv), s += m->nv;
    s[0] = d->time[w];
  }
}
static void cpu_restore(CpuJob* j, SimData* d) {
  const SimModel* m = j->m;
  int L = cpu_state_len(m);
  for (int w = 0; w < d->nworld; w++) {
    const float* s = j->start + (size_t)w * L;
    memcpy(d->qpos + (size_t)w * m->nq, s, sizeof(float) * m->nq), s += m->nq;
    memcpy(d->qvel + (size_t)w * m->nv, s, sizeof(float) * m->nv), s += m->nv;
    memcpy(d->ctrl + (size_t)w * m->nu, s, sizeof(float) * m->nu), s += m->nu;
    memcpy(d->qacc_warmstart + (size_t)w * m->nv, s, sizeof(float) * m->nv), s += m->nv;
    d->time[w] = s[0];
  }
}

static void* cpu_worker(void* arg) {
  CpuJob* j = (CpuJob*)arg;
  const SimModel* m = j->m;
  SimData* d = j->d;
  cpu_restore(j, d);
  if (j->grad) {
    sim_tape_clear(m, d);
    for (int w = 0; w < d->nworld; w++) {
      cotangent(j->seed, j->w0 + w, m->nv, d->adj_qpos + (size_t)w * m->nv);
      cotangent(j->seed + 1, j->w0 + w, m->nv, d->adj_qvel + (size_t)w * m->nv);
    }
  }
  double t0 = now_s();
  if (j->grad) {
    sim_control_step(m, d, j->nsub, 1);
    sim_control_step_backward(m, d, j->nsub);
  } else {
    for (int k = 0; k < j->nsub; k++) {
      sim_step(m, d);
      if (j->phase == 2)
        for (int w = 0; w < d->nworld; w++) {
          int v[C_N] = {d->ncon[w], d->nefc[w], d->solver_niter[w], d->solver_nls[w]};
          counts_add(&j->counts, v);
        }
    }
  }
  j->busy = now_s() - t0;
  if (j->phase == 0) cpu_save(j);
  return NULL;
}

static double cpu_phase(CpuJob* jobs, int nthread, int phase) {
  pthread_t* th = (pthread_t*)malloc(sizeof(pthread_t) * nthread);
  for (int t = 0; t < nthread; t++) jobs[t].phase = phase, pthread_create(&th[t], NULL, cpu_worker, &jobs[t]);
  double slowest = 0;
  for (int t = 0; t < nthread; t++) pthread_join(th[t], NULL), slowest = fmax(slowest, jobs[t].busy);
  free(th);
  return slowest;
}

// Writes the start states (float64) into world w of a float32 SimData: qpos, qvel, ctrl; warm start zero.
static void set_start(const SimModel* m, SimData* d, int w, const BenchStates* s, int sw) {
  for (int i = 0; i < m->nq; i++) d->qpos[(size_t)w * m->nq + i] = (float)s->qpos[(size_t)sw * s->nq + i];
  for (int i = 0; i < m->nv; i++) d->qvel[(size_t)w * m->nv + i] = (float)s->qvel[(size_t)sw * s->nv + i];
  for (int i = 0; i < m->nu; i++) d->ctrl[(size_t)w * m->nu + i] = (float)s->ctrl[(size_t)sw * s->nu + i];
  for (int i = 0; i < m->nv; i++) d->qacc_warmstart[(size_t)w * m->nv + i] = 0;
  d->time[w] = 0;
}

static void stage_print(const char* engine, const double* ms, int nworld, int nsub) {
  // groups of SIM_STAGE_*: kinematics (kinematics, compos, tendon), inertia (crb, factor), collision,
  // smooth forces (velocity, passive, rne, actuation, acceleration), constraint (rows + solver), integrator
  double g[6] = {ms[0] + ms[1] + ms[2], ms[3] + ms[4], ms[5], ms[6] + ms[7] + ms[8] + ms[9] + ms[10], ms[11], ms[12]};
  const char* name[6] = {"kinematics", "inertia", "collision", "smooth_forces", "constraint", "integrator"};
  double tot = 0;
  for (int k = 0; k < 6; k++) tot += g[k];
  printf("    per stage, one control step (%d substeps, %d worlds), ms:", nsub, nworld);
  for (int k = 0; k < 6; k++) printf(" %s %.3f (%.0f%%)%s", name[k], g[k], 100 * g[k] / tot, k < 5 ? "," : "\n");
  json_add("%s{\"engine\": \"%s\", \"what\": \"stages\", \"nworld\": %d", g_json_nres++ ? ",\n  " : "\n  ", engine,
           nworld);
  for (int k = 0; k < 6; k++) json_add(", \"%s_ms\": %.6g", name[k], g[k]);
  json_add("}");
}

static int bench_cpu(SimModel* m, const BenchStates* s, int nw, int nsub, int nthread, int nrep, int grad,
                     int stages, uint64_t seed) {
  if (nthread > nw) nthread = nw;
  CpuJob* jobs = (CpuJob*)calloc(nthread, sizeof(CpuJob));
  int L = cpu_state_len(m);
  for (int t = 0; t < nthread; t++) {
    int w0 = (int)((long)nw * t / nthread), w1 = (int)((long)nw * (t + 1) / nthread);
    jobs[t] = (CpuJob){m, NULL, (float*)malloc(sizeof(float) * (size_t)(w1 - w0) * L), nsub, 0, 0, seed, w0, 0,
                       {{0}, {0}, 0, 0, 0}};
    if (sim_data_create(m, w1 - w0, &jobs[t].d) || !jobs[t].start) {
      fprintf(stderr, "adjoint bench sim: out of memory (CPU engine)\n");
      return 1;
    }
    for (int w = 0; w < w1 - w0; w++) set_start(m, jobs[t].d, w, s, w0 + w);
    cpu_save(&jobs[t]);
  }
  cpu_phase(jobs, nthread, 0);  // the untimed control step from the start states
  double* t = (double*)malloc(sizeof(double) * nrep);
  cpu_phase(jobs, nthread, 1);
  for (int r = 0; r < nrep; r++) t[r] = cpu_phase(jobs, nthread, 1);
  double ms = 1e3 * median(t, nrep);
  cpu_phase(jobs, nthread, 2);
  Counts c = {{0}, {0}, 0, 0, 0};
  for (int k = 0; k < nthread; k++) {
    counts_merge(&c, &jobs[k].counts);
    for (int w = 0; w < jobs[k].d->nworld; w++)
      c.ncon_overflow += jobs[k].d->ncon_overflow[w], c.nefc_overflow += jobs[k].d->nefc_overflow[w];
  }
  printf("ours, CPU (float32, %d threads, %d worlds): control step %.3f ms = %.3e steps/s\n", nthread, nw, ms,
         nw * nsub / (ms * 1e-3));
  counts_print(&c);
  json_result("ours_cpu_f32", "forward", nw, nthread, ms, nsub, &c);
  if (stages) {  // one thread's worlds, one stage at a time
    double acc[SIM_NSTAGE] = {0};
    CpuJob* j = &jobs[0];
    for (int r = 0; r < nrep; r++) {
      cpu_restore(j, j->d);
      for (int k = 0; k < nsub; k++)
        for (int st = 0; st < SIM_NSTAGE; st++) {
          double t0 = now_s();
          sim_run_stage(m, j->d, st);
          acc[st] += (now_s() - t0) * 1e3 / nrep;
        }
    }
    stage_print("ours_cpu_f32", acc, j->d->nworld, nsub);
  }
  if (grad) {
    // gradients: the same start states in SimData with a tape (sim_adjoint_enable re-sizes new SimData only)
    if (sim_adjoint_enable(m, nsub)) {
      fprintf(stderr, "adjoint bench sim: sim_adjoint_enable failed\n");
      return 1;
    }
    for (int k = 0; k < nthread; k++) {
      SimData* dg = NULL;
      if (sim_data_create(m, jobs[k].d->nworld, &dg)) {
        fprintf(stderr, "adjoint bench sim: out of memory (CPU gradient)\n");
        return 1;
      }
      sim_data_free(jobs[k].d);
      jobs[k].d = dg;
      jobs[k].grad = 1;
    }
    cpu_phase(jobs, nthread, 1);
    for (int r = 0; r < nrep; r++) t[r] = cpu_phase(jobs, nthread, 1);
    double msg = 1e3 * median(t, nrep);
    printf("ours, CPU (float32, %d threads, %d worlds): recorded control step + backward %.3f ms (%.2fx the "
           "forward)\n", nthread, nw, msg, msg / ms);
    json_result("ours_cpu_f32", "forward_gradient", nw, nthread, msg, nsub, NULL);
  }
  for (int k = 0; k < nthread; k++) sim_data_free(jobs[k].d), free(jobs[k].start);
  free(jobs), free(t);
  return 0;
}

#if defined(ADJ_HAVE_CUDA)
static void cuda_counts(const SimModel* m, const SimData* h, Counts* c) {
  for (int w = 0; w < h->nworld; w++) {
    int v[C_N] = {h->ncon[w], h->nefc[w], h->solver_niter[w], h->solver_nls[w]};
    counts_add(c, v);
  }
}

// Where each staged kernel's time goes, world by world (simcuda_world_clock): per kernel, the medians over the
// nsub launches of the launch's span (first world's start to last world's end), of the worlds' latency (mean,
// 90th percentile, max), of the warps busy per SM on average (the worlds' summed latency over span x SMs) and of
// the slowest world's share of the span. For the constraint kernel, its worlds' mean latency by rows (the last
// substep) and its slowest worlds.
static int world_clock_print(SimCuda* g, const SimData* start, int nworld, int nsub) {
  int nk = SIMCUDA_NKERNEL, nl = nsub * nk, nsm = 0;
  size_t cw = (size_t)SIMCUDA_CLOCK_WORDS * nworld;
  unsigned long long* rec = (unsigned long long*)malloc(sizeof(unsigned long long) * cw * nl);
  double* lat = (double*)malloc(sizeof(double) * nworld);
  double* st = (double*)malloc(sizeof(double) * 6 * nl);
  if (!rec || !lat || !st) {
    free(rec), free(lat), free(st);
    fprintf(stderr, "adjoint bench sim: out of memory\n");
    return 1;
  }
  if (simcuda_world_clock(g, start, nsub, rec)) {
    free(rec), free(lat), free(st);
    return -1;
  }
  double cyc = 0, ns = 0;  // the SMs' cycles per global-timer ns over all records: the clock, a check of the timer
  for (size_t i = 0; i < cw * nl; i += SIMCUDA_CLOCK_WORDS) {
    nsm = (int)fmax(nsm, (double)(rec[i + 3] & 0xffff) + 1);
    cyc += (double)rec[i + 2], ns += (double)(rec[i + 1] - rec[i]);
  }
  printf("    world clocks (one recorded control step + backward, %d SMs, %.2f GHz): per kernel, median over its %d "
         "launches: span us | world latency us mean / p90 / max | warps busy per SM | slowest world / span\n", nsm,
         ns > 0 ? cyc / ns : 0.0, nsub);
  json_add("%s{\"engine\": \"ours_cuda\", \"what\": \"world_clock\", \"nworld\": %d, \"sms\": %d",
           g_json_nres++ ? ",\n  " : "\n  ", nworld, nsm);
  for (int k = 0; k < nk; k++) {
    for (int s = 0; s < nsub; s++) {
      // launch order: the substeps' seven kernels, then the backward's three per substep
      int l = k < SIMCUDA_NSUB_KERNEL ? s * SIMCUDA_NSUB_KERNEL + k
                                      : nsub * SIMCUDA_NSUB_KERNEL + s * SIMCUDA_NBWD_KERNEL + (k - SIMCUDA_NSUB_KERNEL);
      const unsigned long long* r = rec + (size_t)l * cw;
      unsigned long long t0 = r[0], t1 = r[1];
      double sum = 0;
      for (int w = 0; w < nworld; w++) {
        const unsigned long long* c = r + (size_t)w * SIMCUDA_CLOCK_WORDS;
        t0 = c[0] < t0 ? c[0] : t0;
        t1 = c[1] > t1 ? c[1] : t1;
        lat[w] = (double)(c[1] - c[0]) * 1e-3;
        sum += lat[w];
      }
      qsort(lat, (size_t)nworld, sizeof(double), cmp_double);
      double span = (double)(t1 - t0) * 1e-3;
      double* o = st + 6 * (size_t)(k * nsub + s);
      o[0] = span, o[1] = sum / nworld, o[2] = lat[(int)(0.9 * (nworld - 1))], o[3] = lat[nworld - 1];
      o[4] = span > 0 ? sum / (span * nsm) : 0, o[5] = span > 0 ? lat[nworld - 1] / span : 0;
    }
    double med[6];
    for (int q = 0; q < 6; q++) {
      double v[64];
      for (int s = 0; s < nsub; s++) v[s] = st[6 * (size_t)(k * nsub + s) + q];
      med[q] = median(v, nsub);
    }
    printf("      %-10s %8.1f | %7.1f / %7.1f / %7.1f | %5.2f | %.2f\n", simcuda_kernel_name(k), med[0], med[1],
           med[2], med[3], med[4], med[5]);
    json_add(", \"%s\": [%.6g, %.6g, %.6g, %.6g, %.6g, %.6g]", simcuda_kernel_name(k), med[0], med[1], med[2],
             med[3], med[4], med[5]);
  }
  json_add("}");
  // the constraint kernel of the last substep: latency by rows, and the slowest worlds
  const unsigned long long* r = rec + (size_t)((nsub - 1) * SIMCUDA_NSUB_KERNEL + SIMCUDA_SUB_SOLVER) * cw;
  static const int edge[] = {0, 1, 17, 33, 65, 1 << 16};
  printf("      constraint, last substep, mean latency us (worlds) by rows:");
  for (int b = 0; b < 5; b++) {
    double sum = 0;
    int n = 0;
    for (int w = 0; w < nworld; w++) {
      const unsigned long long* c = r + (size_t)w * SIMCUDA_CLOCK_WORDS;
      int nefc = (int)((c[3] >> 32) & 0xffff);
      if (nefc >= edge[b] && nefc < edge[b + 1]) sum += (double)(c[1] - c[0]) * 1e-3, n++;
    }
    printf(" %d-%d %.1f (%d)%s", edge[b], b < 4 ? edge[b + 1] - 1 : 99999, n ? sum / n : 0.0, n, b < 4 ? "," : "\n");
  }
  printf("      its slowest worlds (latency us, SM, start us after the launch's, contacts, rows, Newton iterations):");
  unsigned long long t0 = r[0];
  for (int w = 0; w < nworld; w++) {
    const unsigned long long* c = r + (size_t)w * SIMCUDA_CLOCK_WORDS;
    t0 = c[0] < t0 ? c[0] : t0;
    lat[w] = (double)(c[1] - c[0]) * 1e-3;
  }
  for (int j = 0; j < 5 && j < nworld; j++) {  // the five slowest, by selection
    int best = 0;
    for (int w = 1; w < nworld; w++)
      if (lat[w] > lat[best]) best = w;
    const unsigned long long* c = r + (size_t)best * SIMCUDA_CLOCK_WORDS;
    printf(" [%.1f, %d, %.1f, %d, %d, %d]", lat[best], (int)(c[3] & 0xffff), (double)(c[0] - t0) * 1e-3,
           (int)((c[3] >> 16) & 0xffff), (int)((c[3] >> 32) & 0xffff), (int)((c[3] >> 48) & 0xffff));
    lat[best] = -1;
  }
  printf("\n");
  free(rec), free(lat), free(st);
  return 0;
}

static int bench_cuda(SimModel* m, const BenchStates* s, int nworld, int nsub, int nrep, int grad, int stages,
                      int nstep, uint64_t seed) {
  SimData *h = NULL, *probe = NULL;
  SimCuda* g = NULL;
  if (simcuda_device_count() <= 0) {
    printf("ours, CUDA: no device\n");
    return 0;
  }
  if (sim_data_create(m, nworld, &h) || sim_data_create(m, nworld, &probe) || simcuda_create(m, nworld, &g)) {
    fprintf(stderr, "adjoint bench sim: CUDA setup: %s\n", simcuda_last_error());
    return 1;
  }
  int staged = simcuda_set_staged(g, g_staged), nstream = simcuda_set_streams(g, g_streams);
  if (simcuda_set_carveout(g, g_carveout) < 0) goto fail;
  if (g_carveout) {
    printf("carve-out (mode %d; percent of the SM's shared memory, -1 the driver's):", g_carveout);
    for (int k = 0; k < SIMCUDA_NKERNEL; k++) printf(" %s %d", simcuda_kernel_name(k), simcuda_carveout(k));
    printf("\n");
  }
  if (nstep) {  // consecutive steps from the keyframe (steps/s of the plain step kernel)
    double ms = 0;
    sim_reset(m, h, -1, m->nkey ? 0 : -1);
    if (simcuda_upload(g, h) || simcuda_time_steps(g, nstep, 5, &ms)) goto fail;
    printf("ours, CUDA (%d steps from the keyframe): %.4f ms/step = %.3e steps/s\n", nstep, ms, nworld / (ms * 1e-3));
    json_result("ours_cuda", "consecutive_steps_from_keyframe", nworld, 0, ms, 1, NULL);
  }
  for (int w = 0; w < nworld; w++) set_start(m, h, w, s, w);
  // the untimed control step from the start states; its result is the timed runs' start
  if (simcuda_upload(g, h)) goto fail;
  for (int k = 0; k < nsub; k++)
    if (simcuda_step(g)) goto fail;
  if (simcuda_download(g, h)) goto fail;
  Counts c = {{0}, {0}, 0, 0, 0};
  if (simcuda_upload(g, h)) goto fail;
  for (int k = 0; k < nsub; k++) {
    if (simcuda_step(g) || simcuda_download(g, probe)) goto fail;
    cuda_counts(m, probe, &c);
  }
  for (int w = 0; w < nworld; w++)
    c.ncon_overflow += probe->ncon_overflow[w], c.nefc_overflow += probe->nefc_overflow[w];
  double t0 = 0;
  if (simcuda_time_control(g, h, nsub, 0, nrep, &t0)) goto fail;
  printf("ours, CUDA (float32, %d worlds, nconmax %d, nefcmax %d, %s launch, %d stream%s): control step (%d "
         "substeps) %.4f ms = %.3e steps/s\n", nworld, m->nconmax, m->nefcmax,
         staged == 2 ? "staged-shared" : staged ? "staged" : "fused", staged ? nstream : 1,
         staged && nstream > 1 ? "s" : "", nsub, t0, nworld * nsub / (t0 * 1e-3));
  counts_print(&c);
  json_result("ours_cuda", "forward", nworld, 0, t0, nsub, &c);
  if (stages) {
    double* acc = (double*)calloc((size_t)SIM_NSTAGE * nrep, sizeof(double));
    double med[SIM_NSTAGE];
    for (int r = -1; r < nrep; r++) {
      if (simcuda_upload(g, h) || simcuda_sync(g)) goto fail;
      for (int k = 0; k < nsub; k++)
        for (int st = 0; st < SIM_NSTAGE; st++) {
          double a = now_s();
          if (simcuda_stage(g, st) || simcuda_sync(g)) goto fail;
          if (r >= 0) acc[(size_t)st * nrep + r] += (now_s() - a) * 1e3;
        }
    }
    for (int st = 0; st < SIM_NSTAGE; st++) med[st] = median(acc + (size_t)st * nrep, nrep);
    stage_print("ours_cuda", med, nworld, nsub);
    printf("    (stages launched one by one and synchronised, host clock; the backward has no per-stage entry "
           "points)\n");
    free(acc);
  }
  simcuda_free(g);
  g = NULL;
  if (grad) {
    SimData* dg = NULL;
    double t1 = 0, t2 = 0;
    if (sim_adjoint_enable(m, nsub) || sim_data_create(m, nworld, &dg) || simcuda_create(m, nworld, &g)) goto fail;
    simcuda_set_staged(g, g_staged);
    simcuda_set_streams(g, g_streams);
    if (simcuda_set_carveout(g, g_carveout) < 0) goto fail;
    for (int w = 0; w < nworld; w++) {  // the same start (after the untimed step) and a fixed cotangent
      memcpy(dg->qpos + (size_t)w * m->nq, h->qpos + (size_t)w * m->nq, sizeof(float) * m->nq);
      memcpy(dg->qvel + (size_t)w * m->nv, h->qvel + (size_t)w * m->nv, sizeof(float) * m->nv);
      memcpy(dg->ctrl + (size_t)w * m->nu, h->ctrl + (size_t)w * m->nu, sizeof(float) * m->nu);
      memcpy(dg->qacc_warmstart + (size_t)w * m->nv, h->qacc_warmstart + (size_t)w * m->nv, sizeof(float) * m->nv);
      dg->time[w] = h->time[w];
      cotangent(seed, w, m->nv, dg->adj_qpos + (size_t)w * m->nv);
      cotangent(seed + 1, w, m->nv, dg->adj_qvel + (size_t)w * m->nv);
    }
    if (simcuda_time_control(g, dg, nsub, 1, nrep, &t1) || simcuda_time_control(g, dg, nsub, 2, nrep, &t2)) {
      sim_data_free(dg);
      goto fail;
    }
    printf("ours, CUDA (%d worlds): control step with gradients enabled, not recording %.4f ms | recorded "
           "forward + backward %.4f ms (%.2fx the forward)\n", nworld, t1, t2, t2 / t0);
    json_result("ours_cuda", "forward_gradients_enabled", nworld, 0, t1, nsub, NULL);
    json_result("ours_cuda", "forward_gradient", nworld, 0, t2, nsub, NULL);
    if (stages && simcuda_staged(g)) {  // the staged launch's kernels, timed by events between them
      double kms[SIMCUDA_NKERNEL], tot = 0;
      if (simcuda_time_kernels(g, dg, nsub, nrep, kms)) {
        sim_data_free(dg);
        goto fail;
      }
      for (int k = 0; k < SIMCUDA_NKERNEL; k++) tot += kms[k];
      printf("    per kernel (staged launch), recorded control step + backward, ms:");
      json_add("%s{\"engine\": \"ours_cuda\", \"what\": \"kernels\", \"nworld\": %d", g_json_nres++ ? ",\n  " : "\n  ",
               nworld);
      for (int k = 0; k < SIMCUDA_NKERNEL; k++) {
        printf(" %s %.3f (%.0f%%)%s", simcuda_kernel_name(k), kms[k], 100 * kms[k] / tot,
               k < SIMCUDA_NKERNEL - 1 ? "," : "\n");
        json_add(", \"%s_ms\": %.6g", simcuda_kernel_name(k), kms[k]);
      }
      json_add("}");
      int rc = nsub <= 64 ? world_clock_print(g, dg, nworld, nsub) : 0;
      if (rc) {
        sim_data_free(dg);
        if (rc > 0) return 1;
        goto fail;
      }
    }
    sim_data_free(dg);
    simcuda_free(g);
  }
  sim_data_free(h);
  sim_data_free(probe);
  return 0;
fail:
  fprintf(stderr, "adjoint bench sim: CUDA: %s\n", simcuda_last_error());
  return 1;
}
#endif

int bench_sim_main(int argc, char** argv) {
  const char *model = NULL, *states_kind = "key", *write_path = NULL, *json_path = NULL;
  int nworld = 4096, nstep = 0, nthread = (int)sysconf(_SC_NPROCESSORS_ONLN), nsub = 4, grad = 0, nrep = 20;
  int cpu_nworld = -1, cpu_nrep = 5, no_cuda = 0, no_cpu = 0, no_mujoco = 0, stages = 0;
  unsigned long long seed = 1;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    int bad = 0;
    if (!strcmp(a, "--help")) {
      fputs(kUsage, stdout);
      return 0;
    } else if (!strcmp(a, "--nworld")) {
      bad = cli_int(argc, argv, &i, 1, 1 << 24, &nworld);
    } else if (!strcmp(a, "--steps")) {
      bad = cli_int(argc, argv, &i, 1, 1 << 20, &nstep);
    } else if (!strcmp(a, "--threads")) {
      bad = cli_int(argc, argv, &i, 1, 4096, &nthread);
    } else if (!strcmp(a, "--grad")) {
      bad = cli_int(argc, argv, &i, 1, 64, &nsub);
      grad = 1;
    } else if (!strcmp(a, "--reps")) {
      bad = cli_int(argc, argv, &i, 1, 100000, &nrep);
    } else if (!strcmp(a, "--cpu-nworld")) {
      bad = cli_int(argc, argv, &i, 1, 1 << 24, &cpu_nworld);
    } else if (!strcmp(a, "--cpu-reps")) {
      bad = cli_int(argc, argv, &i, 1, 100000, &cpu_nrep);
    } else if (!strcmp(a, "--seed")) {
      bad = cli_u64(argc, argv, &i, &seed);
    } else if (!strcmp(a, "--states")) {
      states_kind = cli_value(argc, argv, &i);
      bad = !states_kind || (strcmp(states_kind, "key") && strcmp(states_kind, "lafan1") && strcmp(states_kind, "rollout"));
      if (bad && states_kind) fprintf(stderr, "adjoint bench sim: --states must be key, lafan1 or rollout\n");
    } else if (!strcmp(a, "--write-states")) {
      bad = !(write_path = cli_value(argc, argv, &i));
    } else if (!strcmp(a, "--json")) {
      bad = !(json_path = cli_value(argc, argv, &i));
    } else if (!strcmp(a, "--nconmax")) {
      int c = 0;
      bad = cli_int(argc, argv, &i, 1, 1 << 20, &c);
      opt.nconmax = c;
    } else if (!strcmp(a, "--nefcmax")) {
      int c = 0;
      bad = cli_int(argc, argv, &i, 1, 1 << 20, &c);
      opt.nefcmax = c;
    } else if (!strcmp(a, "--no-constraint")) {
      opt.disable_add |= mjDSBL_CONSTRAINT;
    } else if (!strcmp(a, "--no-contact")) {
      opt.disable_add |= mjDSBL_CONTACT;
    } else if (!strcmp(a, "--no-cuda")) {
      no_cuda = 1;
    } else if (!strcmp(a, "--no-cpu")) {
      no_cpu = 1;
    } else if (!strcmp(a, "--no-mujoco")) {
      no_mujoco = 1;
    } else if (!strcmp(a, "--launch")) {
      const char* v = cli_value(argc, argv, &i);
      bad = !v || (strcmp(v, "fused") && strcmp(v, "staged") && strcmp(v, "staged-shared"));
      if (bad && v) fprintf(stderr, "adjoint bench sim: --launch must be fused, staged or staged-shared\n");
      g_staged = bad ? 2 : !strcmp(v, "staged") ? 1 : !strcmp(v, "staged-shared") ? 2 : 0;
    } else if (!strcmp(a, "--streams")) {
      bad = cli_int(argc, argv, &i, 0, 8, &g_streams);
    } else if (!strcmp(a, "--carveout")) {
      bad = cli_int(argc, argv, &i, 0, 4, &g_carveout);
    } else if (!strcmp(a, "--stages")) {
      stages = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "adjoint bench sim: unknown option '%s'\n", a);
      return 2;
    } else {
      model = a;
    }
    if (bad) return 2;
  }
  if (!model) {
    fputs(kUsage, stderr);
    return 2;
  }
  char err[4096];
  void* mjv = NULL;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) {
    fprintf(stderr, "adjoint bench sim: %s\n", err);
    return 2;
  }
  const mjModel* mm = (const mjModel*)mjv;
  if (cpu_nworld < 0) cpu_nworld = nworld < 1024 ? nworld : 1024;
  int nstates = nworld > cpu_nworld ? nworld : cpu_nworld;
  BenchStates st;
  double ts = now_s();
  int rc = !strcmp(states_kind, "lafan1")    ? bench_states_lafan1(mjv, nstates, seed, &st, err, sizeof(err))
           : !strcmp(states_kind, "rollout") ? bench_states_rollout(mjv, nstates, seed, nthread, &st, err, sizeof(err))
                                             : bench_states_keyframe(mjv, nstates, &st, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint bench sim: %s\n", err);
    sim_free_mjmodel(mjv);
    return 2;
  }
  const char* cons = (mm->opt.disableflags & mjDSBL_CONSTRAINT) ? "off"
                     : (mm->opt.disableflags & mjDSBL_CONTACT)  ? "no contacts"
                                                                : "on";
  printf("model %s  nv %d  nworld %d  control step %d x %g ms  constraints %s\n", model, (int)mm->nv, nworld, nsub,
         mm->opt.timestep * 1e3, cons);
  printf("states: %s (built in %.1f s)\n", st.source, now_s() - ts);
  json_add("{\"model\": \"%s\", \"nv\": %d, \"nworld\": %d, \"nsub\": %d, \"timestep\": %g, \"constraints\": \"%s\", "
           "\"states\": \"%s\", \"seed\": %llu, \"cpu_cores\": %ld,\n \"results\": [",
           model, (int)mm->nv, nworld, nsub, mm->opt.timestep, cons, st.source, seed,
           sysconf(_SC_NPROCESSORS_ONLN));
  if (write_path) {
    if (bench_states_write(&st, write_path, err, sizeof(err))) {
      fprintf(stderr, "adjoint bench sim: %s\n", err);
      return 2;
    }
    printf("states written to %s (%d worlds)\n", write_path, st.n);
  }
  SimModel* m = NULL;
  if (sim_model_import_caps(mjv, opt.nconmax, opt.nefcmax, &m, err, sizeof(err))) {
    fprintf(stderr, "adjoint bench sim: %s\n", err);
    return 2;
  }
  rc = 0;
#if defined(ADJ_HAVE_CUDA)
  if (!no_cuda) rc = bench_cuda(m, &st, nworld, nsub, nrep, grad, stages, nstep, seed);
#else
  if (!no_cuda) printf("ours, CUDA: not built (ADJ_CUDA=OFF or no nvcc)\n");
#endif
  sim_model_free(m);
  m = NULL;
  if (!rc && !no_cpu) {  // a fresh import: the CUDA part may have enabled gradients on its copy
    if (sim_model_import_caps(mjv, opt.nconmax, opt.nefcmax, &m, err, sizeof(err))) {
      fprintf(stderr, "adjoint bench sim: %s\n", err);
      return 2;
    }
    rc = bench_cpu(m, &st, cpu_nworld, nsub, nthread, cpu_nrep, grad, stages, seed);
    sim_model_free(m);
  }
  if (!rc && !no_mujoco) bench_mujoco(mm, &st, cpu_nworld, nsub, nthread, cpu_nrep);
  json_add("]}\n");
  if (!rc && json_path) {
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", json_path);
    FILE* f = fopen(tmp, "w");
    if (!f || fputs(g_json, f) < 0 || fclose(f) || rename(tmp, json_path)) {
      fprintf(stderr, "adjoint bench sim: cannot write %s\n", json_path);
      rc = 2;
    }
  }
  free(g_json);
  g_json = NULL, g_json_len = g_json_cap = 0, g_json_nres = 0;
  bench_states_free(&st);
  sim_free_mjmodel(mjv);
  return rc;
}
