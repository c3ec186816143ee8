// env_nonfinite: a reward of +inf, -inf or NaN, or a non-finite observation, in one world ends that world's
// episode as the engine's non-finite state does (reward 0, terminated, counted, the observation zeroed, then the
// auto-reset), leaves the other worlds untouched, and keeps PPO's arrays finite while it trains on such worlds;
// a non-finite observation of a freshly reset world is zeroed and counted too. Through a test task on the
// cartpole model whose worlds 0-3 turn non-finite every second control step, world 3 also right after a reset.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/ckpt.h"
#include "envs/env.h"
#include "tests/test.h"

#define NF_P(P) P(period, 2, 1, 100)
#define NF_S(S)
#define NF_X(X) X(int32_t, steps, 1, 0)
ENV_TASK_FIELDS(NF_P, NF_X)

enum { N = 5 };  // world 0: reward +inf, 1: -inf, 2: NaN, 3: a NaN observation, 4: always finite

static int nf_hazard(const EnvTaskCtx* c) {
  int k = ENV_S(c, steps)[0];
  return c->w < 4 && (k > 0 || c->w == 3) && k % (int)ENV_P(c, period) == 0;
}
static void nf_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane, int nlane) {
  d->qpos[1] = (sim_real)(0.1 * (env_rng_uniform(rng) - 0.5));
}
static void nf_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* a, int lane, int nlane) {
  ENV_S(c, steps)[0] += 1;
  d->ctrl[0] = a[0] > 1 ? 1 : (a[0] < -1 ? -1 : a[0]);
}
static sim_real nf_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a) {
  static const double bad[4] = {INFINITY, -INFINITY, NAN, 0};
  return nf_hazard(c) ? (sim_real)bad[c->w] : (sim_real)(1 - d->qpos[1] * d->qpos[1]);
}
static int nf_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) { return 0; }
static void nf_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* o, int lane, int nlane) {
  o[0] = d->qpos[0], o[1] = d->qpos[1], o[2] = d->qvel[0], o[3] = d->qvel[1];
  if (c->w == 3 && nf_hazard(c)) o[2] = (sim_real)NAN;
}
static void nf_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* g,
                           sim_real* dq, sim_real* dv) {}
static void nf_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a, sim_real dr,
                          sim_real* dq, sim_real* dv, sim_real* dc) {}
static void nf_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a,
                       const sim_real* dc, sim_real* da) {}
static const char* const nf_obs_names[4] = {"x", "theta", "xdot", "thetadot"};
static const char* const nf_act_names[1] = {"force"};
ENV_TASK_TABLES(nf, NF_P, NF_S, NF_X)
ENV_TASK_HOST(nf, {.name = "nonfinite_test", .model = "cartpole/cartpole.xml", .obs_dim = 4, .act_dim = 1,
                   .episode_steps = 50, .frame_skip = 1, .obs_names = nf_obs_names, .act_names = nf_act_names,
                   ENV_TASK_TABLE_INFO(nf)})


int main(void) {
  char err[1024];
  EnvBatch* e = NULL;
  TEST_CHECK(env_create_task(&e, &env_task_nf, "", N, 0, 3, err, sizeof(err)) == 0, "create: %s", err);
  if (!e) return test_report("env_nonfinite");
  TEST_CHECK(e->stats[1] == 1 && e->obs[3 * 4 + 2] == 0, "world 3's first observation zeroed and counted (%lld)",
             (long long)e->stats[1]);
  sim_real act[N] = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f};
  env_step(e, act);  // step 1: every world finite
  for (int w = 0; w < N; w++)
    TEST_CHECK(!e->terminated[w] && isfinite(e->reward[w]) && e->reward[w] > 0, "step 1, world %d: finite", w);
  TEST_CHECK(e->stats[1] == 1 && e->nan_last == 0, "no non-finite reset in step 1 (%lld)", (long long)e->stats[1]);
  env_step(e, act);  // step 2: worlds 0-3 turn non-finite
  for (int w = 0; w < 4; w++) {
    TEST_CHECK(e->terminated[w] && !e->truncated[w] && e->reward[w] == 0, "world %d: ended with reward 0 (%g)", w,
               (double)e->reward[w]);
    int fin = 1;
    for (int i = 0; i < 4; i++) fin &= e->final_obs[w * 4 + i] == e->final_obs[w * 4 + i];
    TEST_CHECK(fin, "world %d: the stored final observation is finite (zeroed where it was not)", w);
    int fresh = 1;  // the auto-reset restarted the world: its observation is the reset state's
    for (int i = 0; i < 4; i++) fresh &= isfinite(e->obs[w * 4 + i]);
    TEST_CHECK(fresh && e->t[w] == 0, "world %d: reset (t %d)", w, e->t[w]);
  }
  TEST_CHECK(!e->terminated[4] && e->reward[4] > 0 && e->t[4] == 2, "world 4 untouched");
  TEST_CHECK(e->stats[1] == 6 && e->nan_last == 5 && e->stats[0] == 4,
             "4 non-finite steps and world 3's reset observation counted (%lld, %lld)", (long long)e->stats[1],
             (long long)e->nan_last);
  double ret, len;
  env_recent_stats(e, &ret, &len);
  TEST_CHECK(isfinite(ret) && len == 2, "recent return finite (%g), length 2 (%g)", ret, len);
  env_destroy(e);

  // PPO on worlds that turn non-finite every second step: its networks, optimizer and normalizer stay finite
  Cfg cfg;
  cfg_defaults(&cfg, err, sizeof(err));
  cfg.algo_horizon = 8, cfg.env_num_envs = N, cfg.ppo_minibatches = 1;
  cfg.policy_actor_hidden.n = 1, cfg.policy_actor_hidden.v[0] = 8;
  cfg.policy_critic_hidden = cfg.policy_actor_hidden;
  e = NULL;
  TEST_CHECK(env_create_task(&e, &env_task_nf, "", N, 0, 3, err, sizeof(err)) == 0, "create: %s", err);
  void* p = NULL;
  TEST_CHECK(e && algo_ppo.create(&p, &cfg, e, err, sizeof(err)) == 0, "ppo create: %s", err);
  if (p) {
    double metrics[ALGO_MAX_METRICS];
    for (int it = 0; it < 4; it++) {
      AlgoTimes tm = {0, 0, 0};
      TEST_CHECK(algo_ppo.iterate(p, e, metrics, &tm, err, sizeof(err)) == 0, "iteration %d: %s", it, err);
      for (int i = 0; i < algo_ppo.n_metrics; i++)
        TEST_CHECK(isfinite(metrics[i]), "iteration %d: metric %s = %g", it, algo_ppo.metric_names[i], metrics[i]);
    }
    CkTensor t[64];
    int n = algo_ppo.state(p, t, 64, 0);
    char msg[512];
    TEST_CHECK(n > 0 && !ckpt_validate("ppo", t, n, msg, sizeof(msg)), "PPO state valid: %s", n > 0 ? msg : "");
    // 32 steps: worlds 0-3 every second one (64), world 3's reset observations (16) and its first one
    TEST_CHECK(e->stats[1] == 64 + 16 + 1, "non-finite resets counted: %lld (want 81)", (long long)e->stats[1]);
    algo_ppo.destroy(p);
  }
  env_destroy(e);
  return test_report("env_nonfinite");
}
