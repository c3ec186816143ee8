// shac_grad_fd.h: the central-difference harness of SHAC's BPTT gradient tests (algo_shac_grad*.c; include after
// algo/shac.c): a snapshot of everything a rollout reads (engine state, env counters and streams, observations,
// the critic's, the task state, the action noise streams) and the actor loss re-evaluated from it at
// p0 + eps u.
#ifndef ADJ_TESTS_SHAC_GRAD_FD_H
#define ADJ_TESTS_SHAC_GRAD_FD_H

#include <time.h>

#include "tests/test.h"

double algo_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  float *qpos, *qvel, *ctrl, *warm, *time, *obs, *cobs;
  int32_t *t, *nan_seen;
  uint64_t *rng, *act_rng;
  int32_t* st[ENV_MAX_STATE];
} Snap;

// save (save = 1: allocates) or restore the snapshot
static void snap(Snap* z, EnvBatch* e, Shac* s, int save) {
  const SimModel* m = e->m;
  SimData* d = e->d;
  size_t N = (size_t)e->nworld;
#define S(field, src, n)                            \
  if (save) {                                       \
    z->field = malloc(sizeof(*z->field) * (n));     \
    memcpy(z->field, src, sizeof(*z->field) * (n)); \
  } else                                            \
    memcpy(src, z->field, sizeof(*z->field) * (n));
  S(qpos, d->qpos, N * m->nq) S(qvel, d->qvel, N * m->nv) S(ctrl, d->ctrl, N * m->nu)
  S(warm, d->qacc_warmstart, N * m->nv) S(time, d->time, N) S(obs, e->obs, N * e->obs_dim)
  S(cobs, e->cobs, N * e->critic_obs_dim) S(t, e->t, N) S(nan_seen, e->nan_seen, N) S(rng, e->rng, N)
  S(act_rng, s->act_rng, N)
  for (int k = 0; k < e->task->info.nstate; k++) {
    int32_t* f = (int32_t*)e->state[k];
    S(st[k], f, N * e->task->info.state[k].count)
  }
#undef S
}

// the actor loss from the snapshot with the actor at p0 + eps u; g (non-NULL): its BPTT gradient
static double loss_at(Shac* s, EnvBatch* e, Snap* z, const float* p0, const double* u, double eps, float* g) {
  float* p = nn_mlp_params(s->actor);
  for (int64_t i = 0; i < s->na; i++) p[i] = (float)((double)p0[i] + eps * u[i]);
  snap(z, e, s, 0);
  double metrics[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  double L = shac_rollout_grad(s, e, metrics, &tm);
  if (g) memcpy(g, s->gsum, sizeof(float) * (size_t)s->na);
  TEST_CHECK(metrics[M_NONFINITE] == 0, "non-finite gradients: %g", metrics[M_NONFINITE]);
  return L;
}

// the harness's start, after the warm-up rollouts: a random but fixed target critic (a non-zero input gradient),
// the actor's parameters p0, the snapshot, a zero direction u (p0 and u allocated here)
static void fd_start(Shac* s, EnvBatch* e, Snap* z, float** p0, double** u) {
  nn_mlp_init(s->targ, 99);
  *p0 = malloc(sizeof(float) * (size_t)s->na);
  *u = calloc((size_t)s->na, sizeof(double));
  memcpy(*p0, nn_mlp_params(s->actor), sizeof(float) * (size_t)s->na);
  snap(z, e, s, 1);
}

// the unit direction dir of the check: the gradient g's own (dir 0, |g| = gn), else a normal draw from r
static void fd_direction(const float* g, double gn, int dir, uint64_t* r, double* u, int64_t n) {
  double un = 0;
  for (int64_t i = 0; i < n; i++) {
    u[i] = dir == 0 ? g[i] / gn : env_rng_normal(r);
    un += u[i] * u[i];
  }
  un = sqrt(un);
  for (int64_t i = 0; i < n; i++) u[i] /= un;
}

#endif