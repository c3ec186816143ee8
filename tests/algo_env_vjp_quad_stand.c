// algo_env_vjp_quad_stand: the free-base task (float64 build of envs/quad_stand.c, nq 15 != nv 14) on its
// model through the float64 engine (solver converged, so that the adjoint's fixed-point gradient is the
// derivative of what the forward computes):
//   - observation, critic observation, reward and the state update (last_action, prev_action) against their
//   formulas at random states (the gravity direction is the rotated world -z, u_z the rotated body z);
//   - observe / observe_critic / reward / act VJPs against central differences in the engine's tangent space:
//     positions perturbed as q (+) eps e_k through the engine's own position integration (sim_integratePos:
//     the free joint's quaternion via its rotation vector), never raw quaternion components; the task state
//     through ENV_DS: the VJPs at s' = act(s, a) accumulate its cotangent, act_vjp maps it to dact and to the
//     cotangent of s, checked against central differences in s;
//   - one BPTT rollout (5 control steps x 4 substeps from a settled crouch, four feet in contact): the
//     gradient of L = sum_t r_t + g . obs_T with respect to every action and the initial state (tangent qpos,
//     qvel, and the task state), from the task VJPs and the engine adjoint as SHAC chains them (the state's
//     cotangent carried across steps), against central differences of L.
// Errors: |vjp - fd| / max(|fd|, 1e-6 max_k |fd_k|) per partial; medians <= 1e-6.
#define SIM_DOUBLE
#include "sim/sim_forward.c"  // sim_integratePos: q (+) v dt as the engine integrates
#include "envs/quad_stand.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_adjoint.h"
#include "tests/fd_errors.h"
#include "tests/test.h"

#define NQ 15
#define NV 14
#define NU 8
#define NO 34   // observation
#define NOC 37  // critic observation
#define NS (2 * NU)  // task state: last_action, prev_action
#define K 5   // control steps of the rollout
#define FS 4  // substeps per control step (the task's frame_skip)

static double P[ENVP_COUNT];
static EnvTaskCtx C;
static double ST[NS], DST[NS];  // one world's task state (last_action, prev_action) and its cotangent
static void* SP[2] = {ST, ST + NU};
static void* DSP[2] = {DST, DST + NU};

static double urand(uint64_t* s, double lo, double hi) { return lo + (hi - lo) * env_rng_uniform(s); }

// f(world) = dr * reward + g . obs (+ gc . critic obs) at the world's state (ctrl and task state as set)
static double f_eval(const SimModel* m, SimWorld* d, const double* g, double dr, const double* gc) {
  double obs[NOC], f = dr * quad_stand_reward(m, d, &C, NULL);
  quad_stand_observe(m, d, &C, obs, 0, 1);
  for (int i = 0; i < NO; i++) f += g[i] * obs[i];
  if (gc) {
    quad_stand_observe_critic(m, d, &C, obs, 0, 1);
    for (int i = 0; i < NOC; i++) f += gc[i] * obs[i];
  }
  return f;
}
// the act from task state s0 (copied into ST first)
static void act_from(const SimModel* m, SimWorld* d, const double* s0, const double* a) {
  memcpy(ST, s0, sizeof(ST));
  quad_stand_act(m, d, &C, a, 0, 1);
}

typedef struct {
  double qpos[NQ], qvel[NV], ctrl[NU], warm[NV], time, st[NS];
} State;
static void save(const SimWorld* d, State* s) {
  memcpy(s->st, ST, sizeof(ST));
  memcpy(s->qpos, d->qpos, sizeof(s->qpos)), memcpy(s->qvel, d->qvel, sizeof(s->qvel));
  memcpy(s->ctrl, d->ctrl, sizeof(s->ctrl)), memcpy(s->warm, d->qacc_warmstart, sizeof(s->warm));
  s->time = d->time[0];
}
static void load(SimWorld* d, const State* s) {
  memcpy(ST, s->st, sizeof(ST));
  memcpy(d->qpos, s->qpos, sizeof(s->qpos)), memcpy(d->qvel, s->qvel, sizeof(s->qvel));
  memcpy(d->ctrl, s->ctrl, sizeof(s->ctrl)), memcpy(d->qacc_warmstart, s->warm, sizeof(s->warm));
  d->time[0] = s->time;
}

// the rollout's loss from state s0 under actions a (K, NU); g: the final observation's weights
static double rollout(const SimModel* m, SimData* dd, SimWorld* d, const State* s0, const double* a,
                      const double* g, int record, State* post) {
  load(d, s0);
  C.ds = NULL;
  double L = 0;
  for (int t = 0; t < K; t++) {
    quad_stand_act(m, d, &C, a + t * NU, 0, 1);
    sim_control_step(m, dd, FS, record);
    L += quad_stand_reward(m, d, &C, a + t * NU);
    if (post) save(d, &post[t]);
  }
  double obs[NO];
  quad_stand_observe(m, d, &C, obs, 0, 1);
  for (int i = 0; i < NO; i++) L += g[i] * obs[i];
  return L;
}

int main(void) {
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.iterations = 1000, opt.tolerance = 0, opt.ls_iterations = 100;  // converged (see the header)
  void* mj = NULL;
  char msg[2048];
  if (sim_load_mjcf("quadruped/quadruped.xml", &opt, &mj, msg, sizeof(msg))) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  SimModel* m = NULL;
  SimData* dd = NULL;
  TEST_CHECK(sim_model_import(mj, &m, msg, sizeof(msg)) == 0, "import: %s", msg);
  TEST_CHECK(m->nq == NQ && m->nv == NV && m->nu == NU && m->nkey == 1, "model sizes nq %d nv %d nu %d nkey %d", m->nq,
             m->nv, m->nu, m->nkey);
  TEST_CHECK(sim_adjoint_enable(m, K * FS) == 0, "adjoint");
  TEST_CHECK(sim_data_create(m, 1, &dd) == 0, "data");
  const EnvTaskInfo* info = &env_task_quad_stand.info;
  TEST_CHECK(info->nparam == ENVP_COUNT && info->obs_dim == NO && info->act_dim == NU && info->frame_skip == FS &&
                 info->nstate == 2 && info->state[0].count == NU && info->state[0].grad && info->state[1].grad &&
                 info->critic_obs_dim == NOC && info->critic,
             "task info");
  for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
  TEST_CHECK(P[ENVP_action_rate_weight] > 0, "the action-rate penalty is on by default");
  P[ENVP_action_rate_weight] = 0.5;  // larger than the default, so that its gradient is well above the others' noise
  C.p = P, C.s = SP, C.ds = NULL;
  SimWorld d;
  sim_world(m, dd, 0, &d);
  uint64_t rng = 77;

  // ---- forward formulas and per-function VJPs at random states ----
  static double errs[200000];
  int ne = 0;
  double worst = 0;
  for (int k = 0; k < 60; k++) {
    sim_reset(m, dd, 0, -1);
    quad_stand_reset(m, &d, &C, &rng, 0, 1);
    double axis[3] = {urand(&rng, -1, 1), urand(&rng, -1, 1), urand(&rng, -1, 1)}, rv[NV] = {0};
    for (int i = 0; i < 3; i++) rv[3 + i] = axis[i] * (k < 10 ? 0.05 : 0.8);  // small and large tilts
    sim_integratePos(m, d.qpos, rv, 1, 0, 1);
    d.qpos[2] = urand(&rng, 0.2, 0.5);  // both sides of height_cap 0.4
    for (int i = 0; i < NV; i++) d.qvel[i] = urand(&rng, -2, 2);
    double a[NU], s0[NS];
    for (int i = 0; i < NU; i++) a[i] = urand(&rng, -1.3, 1.3);
    for (int i = 0; i < NS; i++) s0[i] = urand(&rng, -1, 1);
    C.ds = NULL;
    act_from(m, &d, s0, a);
    double R[9], obs[NO], cobs[NOC];
    simu_quat2Mat(R, d.qpos + 3);
    quad_stand_observe(m, &d, &C, obs, 0, 1);
    quad_stand_observe_critic(m, &d, &C, cobs, 0, 1);
    int same = 1;
    for (int i = 0; i < NO; i++) same &= cobs[i] == obs[i];
    TEST_CHECK(same && cobs[NO] == d.qpos[0] && cobs[NO + 1] == d.qpos[1] && cobs[NO + 2] == R[8],
               "critic observation: the observation, then x, y, u_z");
    double r2 = 0;
    for (int i = 0; i < NU; i++) {
      double ac = fmax(-1, fmin(1, a[i]));
      TEST_CHECK(ST[i] == ac && ST[NU + i] == s0[i] && obs[26 + i] == ac, "state update and observation %d", i);
      r2 += (ac - s0[i]) * (ac - s0[i]);
    }
    // gravity in the torso frame: R^T (0, 0, -1) = -(third row of R)
    TEST_CHECK(fabs(obs[1] + R[6]) < 1e-15 && fabs(obs[2] + R[7]) < 1e-15 && fabs(obs[3] + R[8]) < 1e-15 &&
                   obs[0] == d.qpos[2] && obs[4] == d.qpos[7] && obs[12] == d.qvel[0] && obs[25] == d.qvel[13],
               "observation layout");
    double v2 = 0, u2 = 0;
    for (int i = 0; i < 6; i++) v2 += d.qvel[i] * d.qvel[i];
    for (int i = 0; i < NU; i++) {
      double ci = m->key_ctrl[i] + 1.5 * fmax(-1, fmin(1, a[i]));
      TEST_CHECK(fabs(d.ctrl[i] - ci) < 1e-15, "act %d", i);
      u2 += (ci - m->key_ctrl[i]) * (ci - m->key_ctrl[i]);
    }
    double rref = 1 + 10 * (fmin(d.qpos[2], 0.4) - 0.3) + (R[8] - 1) - 0.05 * v2 - 0.01 * u2 - 0.5 * r2;
    TEST_CHECK(fabs(quad_stand_reward(m, &d, &C, a) - rref) < 1e-12, "reward %g vs %g",
               quad_stand_reward(m, &d, &C, a), rref);
    // VJPs
    double g[NO], gc[NOC], dr = urand(&rng, 0.5, 1.5);
    for (int i = 0; i < NO; i++) g[i] = urand(&rng, -1, 1);
    for (int i = 0; i < NOC; i++) gc[i] = urand(&rng, -1, 1);
    double dq[NV] = {0}, dv[NV] = {0}, dc[NU] = {0}, da[NU] = {0};
    memset(DST, 0, sizeof(DST));
    C.ds = DSP;  // the cotangent of s' ...
    quad_stand_observe_vjp(m, &d, &C, g, dq, dv);
    quad_stand_observe_critic_vjp(m, &d, &C, gc, dq, dv);
    quad_stand_reward_vjp(m, &d, &C, a, dr, dq, dv, dc);
    double sp[NS];
    memcpy(sp, ST, sizeof(sp));
    memcpy(ST, s0, sizeof(ST));  // ... mapped by act_vjp at s to dact and the cotangent of s
    quad_stand_act_vjp(m, &d, &C, a, dc, da);
    memcpy(ST, sp, sizeof(ST));
    C.ds = NULL;
    double fq[NV], fv[NV], fa[NU], fs[NS];
    const double eps = 1e-6;
    double q0[NQ], v0[NV];
    memcpy(q0, d.qpos, sizeof(q0)), memcpy(v0, d.qvel, sizeof(v0));
    for (int j = 0; j < NV; j++) {  // positions along the tangent space, through the engine's integration
      double f[2];
      for (int s = 0; s < 2; s++) {
        double e[NV] = {0};
        e[j] = 1;
        memcpy(d.qpos, q0, sizeof(q0));
        sim_integratePos(m, d.qpos, e, s ? eps : -eps, 0, 1);
        f[s] = f_eval(m, &d, g, dr, gc);
      }
      memcpy(d.qpos, q0, sizeof(q0));
      fq[j] = (f[1] - f[0]) / (2 * eps);
      double f2[2];
      for (int s = 0; s < 2; s++) {
        d.qvel[j] = v0[j] + (s ? eps : -eps);
        f2[s] = f_eval(m, &d, g, dr, gc);
      }
      d.qvel[j] = v0[j];
      fv[j] = (f2[1] - f2[0]) / (2 * eps);
    }
    for (int j = 0; j < NU; j++) {  // actions through act (the clip, the state) and the reward's ctrl term
      double f[2], aj = a[j];
      for (int s = 0; s < 2; s++) {
        a[j] = aj + (s ? eps : -eps);
        act_from(m, &d, s0, a);
        f[s] = f_eval(m, &d, g, dr, gc);
      }
      a[j] = aj;
      act_from(m, &d, s0, a);
      fa[j] = (f[1] - f[0]) / (2 * eps);
    }
    for (int j = 0; j < NS; j++) {  // the state before the act
      double f[2], sj = s0[j];
      for (int s = 0; s < 2; s++) {
        s0[j] = sj + (s ? eps : -eps);
        act_from(m, &d, s0, a);
        f[s] = f_eval(m, &d, g, dr, gc);
      }
      s0[j] = sj;
      act_from(m, &d, s0, a);
      fs[j] = (f[1] - f[0]) / (2 * eps);
    }
    for (int j = NU; j < NS; j++)  // prev_action is overwritten by the act: no gradient
      TEST_CHECK(fs[j] == 0 && DST[j] == 0, "prev_action's cotangent %g (fd %g)", DST[j], fs[j]);
    fd_rel_errors(dq, fq, NV, 0, errs, &ne, &worst);
    fd_rel_errors(dv, fv, NV, 0, errs, &ne, &worst);
    fd_rel_errors(da, fa, NU, 0, errs, &ne, &worst);
    fd_rel_errors(DST, fs, NU, 0, errs, &ne, &worst);
  }
  int n_step = ne;
  double med_step = fd_median(errs, ne);
  TEST_CHECK(med_step <= 1e-6 && worst <= 1e-4, "task VJPs vs tangent-space FD: median %.3g max %.3g over %d",
             med_step, worst, n_step);

  // ---- one BPTT rollout from a settled crouch ----
  sim_reset(m, dd, 0, -1);
  quad_stand_reset(m, &d, &C, &rng, 0, 1);
  for (int i = 0; i < 60; i++) sim_control_step(m, dd, FS, 0);  // settle onto the four feet
  int ncon = dd->ncon[0];
  TEST_CHECK(ncon == 4, "settled crouch: %d contacts (want the four feet)", ncon);
  for (int i = 0; i < NS; i++) ST[i] = urand(&rng, -0.3, 0.3);  // a task state from earlier steps
  State s0;
  save(&d, &s0);
  double a[K * NU], g[NO];
  for (int i = 0; i < K * NU; i++) a[i] = urand(&rng, -0.3, 0.3);
  for (int i = 0; i < NO; i++) g[i] = urand(&rng, -1, 1);
  State post[K], pre[K];
  sim_tape_clear(m, dd);
  // the forward, recording; the pre-step states for the act VJP
  load(&d, &s0);
  for (int t = 0; t < K; t++) {
    save(&d, &pre[t]);
    quad_stand_act(m, &d, &C, a + t * NU, 0, 1);
    sim_control_step(m, dd, FS, 1);
    save(&d, &post[t]);
  }
  double* aq = dd->adj_qpos;
  double* av = dd->adj_qvel;
  // the final observation's cotangent, then backward through the steps; the task state's cotangent carried
  memset(aq, 0, sizeof(double) * NV), memset(av, 0, sizeof(double) * NV);
  memset(DST, 0, sizeof(DST));
  C.ds = DSP;
  quad_stand_observe_vjp(m, &d, &C, g, aq, av);
  double ga[K * NU];
  for (int t = K - 1; t >= 0; t--) {
    double du[NU] = {0};
    load(&d, &post[t]);
    quad_stand_reward_vjp(m, &d, &C, a + t * NU, 1, aq, av, du);
    load(&d, &pre[t]);  // the backward keeps the world's state; it recomputes from the tape
    sim_control_step_backward(m, dd, FS);
    for (int i = 0; i < NU; i++) du[i] += dd->adj_ctrl[i];
    for (int i = 0; i < NU; i++) ga[t * NU + i] = 0;
    quad_stand_act_vjp(m, &d, &C, a + t * NU, du, ga + t * NU);
  }
  C.ds = NULL;
  double gq[NV], gv[NV], gs[NS];
  memcpy(gq, aq, sizeof(gq)), memcpy(gv, av, sizeof(gv)), memcpy(gs, DST, sizeof(gs));
  // central differences of the rollout
  const double eps = 1e-6;
  double fa[K * NU], fq[NV], fv[NV], fs[NS];
  for (int j = 0; j < NS; j++) {
    double f[2];
    for (int s = 0; s < 2; s++) {
      State sp = s0;
      sp.st[j] += s ? eps : -eps;
      f[s] = rollout(m, dd, &d, &sp, a, g, 0, NULL);
    }
    fs[j] = (f[1] - f[0]) / (2 * eps);
  }
  for (int j = 0; j < K * NU; j++) {
    double f[2], aj = a[j];
    for (int s = 0; s < 2; s++) {
      a[j] = aj + (s ? eps : -eps);
      f[s] = rollout(m, dd, &d, &s0, a, g, 0, NULL);
    }
    a[j] = aj;
    fa[j] = (f[1] - f[0]) / (2 * eps);
  }
  for (int j = 0; j < NV; j++) {
    double f[2], f2[2];
    for (int s = 0; s < 2; s++) {
      State sp = s0;
      double e[NV] = {0};
      e[j] = 1;
      sim_integratePos(m, sp.qpos, e, s ? eps : -eps, 0, 1);
      f[s] = rollout(m, dd, &d, &sp, a, g, 0, NULL);
      sp = s0;
      sp.qvel[j] += s ? eps : -eps;
      f2[s] = rollout(m, dd, &d, &sp, a, g, 0, NULL);
    }
    fq[j] = (f[1] - f[0]) / (2 * eps), fv[j] = (f2[1] - f2[0]) / (2 * eps);
  }
  ne = 0;
  double worst_r = 0;
  fd_rel_errors(ga, fa, K * NU, 0, errs, &ne, &worst_r);
  fd_rel_errors(gq, fq, NV, 0, errs, &ne, &worst_r);
  fd_rel_errors(gv, fv, NV, 0, errs, &ne, &worst_r);
  fd_rel_errors(gs, fs, NU, 0, errs, &ne, &worst_r);  // last_action of the initial state (prev_action: 0, checked)
  for (int j = NU; j < NS; j++) TEST_CHECK(gs[j] == 0 && fs[j] == 0, "initial prev_action: %g (fd %g)", gs[j], fs[j]);
  double med_r = fd_median(errs, ne);
  TEST_CHECK(med_r <= 1e-6 && worst_r <= 1e-3, "BPTT rollout vs tangent-space FD: median %.3g max %.3g over %d",
             med_r, worst_r, ne);
  int nz = 0;
  for (int j = 0; j < K * NU; j++) nz += fabs(fa[j]) > 1e-3;
  TEST_CHECK(nz >= K * NU / 2, "the rollout's action gradient is mostly nonzero (%d of %d)", nz, K * NU);
  printf("quad_stand: task VJPs vs tangent-space central differences: median %.3g max %.3g (%d partials); "
         "%d-step BPTT rollout (%d contacts): median %.3g max %.3g (%d partials)\n",
         med_step, worst, n_step, K, ncon, med_r, worst_r, ne);
  sim_data_free(dd);
  sim_model_free(m);
  sim_free_mjmodel(mj);
  return test_report("algo_env_vjp_quad_stand");
}
