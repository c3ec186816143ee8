// grad_ref.h: helpers of the tests that compare our adjoint with central differences of MuJoCo C
// (tests/sim_grad.c, tests/sim_grad_params.c): a seeded random stream, random states, the signature of a step's
// discrete decisions (to skip states whose perturbations change them), MuJoCo reference rollouts, and the error
// measure. Static functions of a header, included once per test binary.
#ifndef ADJ_TESTS_GRAD_REF_H
#define ADJ_TESTS_GRAD_REF_H
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdlib.h>

// xorshift64 stream; seed() per check, so that each check draws its own numbers whatever ran before it
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [0, 1)
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void) {  // standard normal (Box-Muller)
  double u = urand() + 1e-12, v = urand();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static void seed(const char* name) {
  rng_state = 0x9E3779B97F4A7C15ull;
  for (const char* c = name; *c; c++) rng_state = (rng_state ^ (unsigned char)*c) * 1099511628211ull;
}

// random state around qpos0 (tangent noise qscale), random velocity (vscale) and nstep controls (nu each) around
// the middle of their range (spread 0.8 keeps them inside it; > 1 also crosses the clamps); settle > 0: MuJoCo
// steps from that state under the first controls (contacts form). Draws: tangent noise, velocity, controls.
static void grad_random_state(const mjModel* m, double qscale, double vscale, double spread, int settle, int nstep,
                              double* qpos, double* qvel, double* ctrl) {
  double* e = (double*)malloc(sizeof(double) * m->nv);
  mju_copy(qpos, m->qpos0, m->nq);
  for (int i = 0; i < m->nv; i++) e[i] = qscale * nrand();
  mj_integratePos(m, qpos, e, 1);
  for (int i = 0; i < m->nv; i++) qvel[i] = vscale * nrand();
  for (int t = 0; t < nstep; t++)
    for (int a = 0; a < m->nu; a++) {
      double lo = -1, hi = 1;
      if (m->actuator_ctrllimited[a]) lo = m->actuator_ctrlrange[2 * a], hi = m->actuator_ctrlrange[2 * a + 1];
      ctrl[t * m->nu + a] = lo + (hi - lo) * (0.5 + spread * (urand() - 0.5));
    }
  if (settle > 0) {
    mjData* d = mj_makeData(m);
    mju_copy(d->qpos, qpos, m->nq);
    mju_copy(d->qvel, qvel, m->nv);
    mju_copy(d->ctrl, ctrl, m->nu);
    for (int t = 0; t < settle; t++) mj_step(m, d);
    mju_copy(qpos, d->qpos, m->nq);
    mju_copy(qvel, d->qvel, m->nv);
    mj_deleteData(d);
  }
  free(e);
}

// FNV-1a over the discrete decisions of a step (contact count and geom pairs, row count, types and states),
// chained from h (SIG_START for the first step)
#define SIG_START 14695981039346656037ull
static unsigned long long sig_step(const mjData* d, unsigned long long h) {
#define MIX(v) h = (h ^ (unsigned long long)(unsigned)(v)) * 1099511628211ull
  MIX(d->ncon);
  for (int c = 0; c < d->ncon; c++) MIX(d->contact[c].geom[0]), MIX(d->contact[c].geom[1]);
  MIX(d->nefc);
  for (int r = 0; r < d->nefc; r++) MIX(d->efc_type[r]), MIX(d->efc_state[r]);
#undef MIX
  return h;
}

// a MuJoCo reference: its model and data, nstep control steps of nsub substeps per rollout
typedef struct {
  mjModel* mj;  // the tests that perturb model fields write through it
  mjData* md;
  int nsub, nstep;
  unsigned long long sig;  // discrete decisions of the last rollout (contacts, row types and states)
} Ref;

// MuJoCo rollout of nstep control steps of nsub substeps from (qpos, qvel, ctrl[nstep][nu])
static void ref_rollout(Ref* r, const double* qpos, const double* qvel, const double* ctrl, double* qpos_out,
                        double* qvel_out) {
  const mjModel* m = r->mj;
  mjData* d = r->md;
  mj_resetData(m, d);
  mju_copy(d->qpos, qpos, m->nq);
  mju_copy(d->qvel, qvel, m->nv);
  r->sig = SIG_START;
  for (int t = 0; t < r->nstep; t++) {
    mju_copy(d->ctrl, ctrl + t * m->nu, m->nu);
    for (int s = 0; s < r->nsub; s++) {
      mj_step(m, d);
      r->sig = sig_step(d, r->sig);
    }
  }
  mju_copy(qpos_out, d->qpos, m->nq);
  mju_copy(qvel_out, d->qvel, m->nv);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// relative error per element against FD, floored at 1e-6 of the block's largest |fd|: median and max
// (normwise: both are the block's |got - ref| / |ref|)
static void rel_errors(const double* got, const double* ref, int n, int normwise, double* med, double* mx) {
  if (normwise) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
    *med = *mx = den > 0 ? sqrt(num / den) : sqrt(num);
    return;
  }
  double scale = 0;
  for (int i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
  double* r = (double*)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  *mx = 0;
  for (int i = 0; i < n; i++) {
    r[i] = fabs(got[i] - ref[i]) / fmax(fabs(ref[i]), 1e-6 * scale + 1e-300);
    if (!(r[i] == r[i])) r[i] = INFINITY;
    *mx = fmax(*mx, r[i]);
  }
  qsort(r, (size_t)n, sizeof(double), cmp_double);
  *med = n ? (n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2])) : 0;
  free(r);
}

#endif
