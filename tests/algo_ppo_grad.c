// algo_ppo_grad: PPO's minibatch loss gradient (clipped surrogate, clipped value loss, entropy; through the
// actor, critic and log-std) against central finite differences, on synthetic rollout data with ratios on both
// sides of the clip. Run twice: the critic on the actor's observation, and on a critic observation of its own
// (a task with EnvTaskInfo.critic: the critic's minibatch comes from the recorded critic observations).
#include "algo/ppo.c"

#include <stdio.h>

#include "tests/test.h"

// ppo_iterate is not run here: stubs for what it links against
double algo_now(void) { return 0; }
void env_step(EnvBatch* e, const sim_real* act) {}

static double loss_at(Ppo* s, const int* idx, int mb) { return ppo_minibatch(s, idx, mb).loss; }

static void run(int priv) {
  Cfg c;
  char err[512];
  cfg_defaults(&c, err, sizeof(err));
  c.algo_horizon = 8, c.ppo_minibatches = 2, c.env_num_envs = 4;
  c.policy_actor_hidden.n = 2, c.policy_actor_hidden.v[0] = 16, c.policy_actor_hidden.v[1] = 8;
  c.policy_critic_hidden = c.policy_actor_hidden;
  c.ppo_entropy_coef = 0.01, c.ppo_value_coef = 0.7;
  EnvBatch env;
  memset(&env, 0, sizeof(env));
  EnvTask tk;
  memset(&tk, 0, sizeof(tk));
  static const EnvTaskCritic critic = {NULL, NULL};  // only its presence matters to PPO
  if (priv) tk.info.critic = &critic, tk.info.critic_obs_dim = 7;
  env.task = &tk;
  env.nworld = 4, env.obs_dim = 5, env.act_dim = 2, env.critic_obs_dim = priv ? 7 : 5;
  void* p;
  TEST_CHECK(ppo_create(&p, &c, &env, err, sizeof(err)) == 0, "%s", err);
  Ppo* s = (Ppo*)p;
  TEST_CHECK(s->priv == priv && s->Oc == env.critic_obs_dim && (!priv || s->cnorm != s->norm), "critic observation");
  uint64_t rng = 77;
  int TN = 32, mb = 16;
  for (int j = 0; j < s->A; j++) s->log_std[j] = s->log_std_old[j] = (float)(-0.3 + 0.2 * j);
  float* ap = nn_mlp_params(s->actor);
  for (int i = 0; i < TN * s->O; i++) s->obs[i] = (float)(2 * env_rng_uniform(&rng) - 1);
  for (int i = 0; priv && i < TN * s->Oc; i++) s->cobs[i] = (float)(2 * env_rng_uniform(&rng) - 1);
  nn_mlp_infer(s->actor, ap, s->obs, TN, s->mu);
  for (int i = 0; i < TN; i++) {
    for (int j = 0; j < s->A; j++) s->act[i * s->A + j] = s->mu[i * s->A + j] + (float)(0.8 * env_rng_normal(&rng));
    // old log-probabilities off by up to +-0.5: ratios inside and outside [1 - clip, 1 + clip]
    s->logp[i] = (float)(ppo_gauss_logp(s->act + i * s->A, s->mu + i * s->A, s->log_std, s->A) +
                         (env_rng_uniform(&rng) - 0.5));
    s->val[i] = (float)(env_rng_normal(&rng));
    s->ret[i] = s->val[i] + (float)(0.6 * env_rng_normal(&rng));
    s->adv[i] = (float)env_rng_normal(&rng);
  }
  for (int i = 0; i < TN; i++) s->perm[i] = (TN - 1 - i) * 7 % TN;  // some permutation
  const int* idx = s->perm;
  MbLoss L = ppo_minibatch(s, idx, mb);
  nn_mlp_backward(s->actor, s->dmu, NULL);
  nn_mlp_backward(s->critic, s->dval, NULL);
  printf("loss %.6f surrogate %.6f value %.6f entropy %.6f clip fraction %.3f\n", L.loss, L.surr, L.value, L.entropy,
         L.clip_frac);
  TEST_CHECK(L.clip_frac > 0.05 && L.clip_frac < 0.95, "clip fraction %g: want both sides of the clip", L.clip_frac);
  int64_t na = s->na, nc = s->nc;
  float* ga = (float*)malloc(sizeof(float) * (size_t)na);
  float* gc = (float*)malloc(sizeof(float) * (size_t)nc);
  memcpy(ga, nn_mlp_grads(s->actor), sizeof(float) * (size_t)na);
  memcpy(gc, nn_mlp_grads(s->critic), sizeof(float) * (size_t)nc);
  float gl[2] = {s->gls_f[0], s->gls_f[1]};
  float* cp = nn_mlp_params(s->critic);
  // finite differences on every log-std, and on parameters spread over each network
  struct {
    float* p;
    const float* g;
    int64_t n;
    const char* name;
  } sets[3] = {{ap, ga, na, "actor"}, {cp, gc, nc, "critic"}, {s->log_std, gl, 2, "log_std"}};
  double worst = 0;
  int checked = 0;
  for (int k = 0; k < 3; k++) {
    int64_t stride = sets[k].n > 40 ? sets[k].n / 40 : 1;
    for (int64_t i = 0; i < sets[k].n; i += stride) {
      float keep = sets[k].p[i];
      double h = 2e-3;
      sets[k].p[i] = keep + (float)h;
      double lp = loss_at(s, idx, mb);
      sets[k].p[i] = keep - (float)h;
      double lm = loss_at(s, idx, mb);
      sets[k].p[i] = keep;
      double hh = ((double)(keep + (float)h) - (double)(keep - (float)h)) / 2;  // the step actually taken
      double fd = (lp - lm) / (2 * hh), an = sets[k].g[i];
      double err_i = fabs(fd - an);
      worst = fmax(worst, err_i / (1e-3 + fabs(fd)));
      TEST_CHECK(err_i <= 5e-4 + 2e-2 * fabs(fd), "%s[%lld]: analytic %.7g fd %.7g", sets[k].name, (long long)i, an, fd);
      checked++;
    }
  }
  printf("%s: %d parameters checked, worst relative error %.3g\n", priv ? "critic observation" : "shared observation",
         checked, worst);
  free(ga);
  free(gc);
  ppo_destroy(p);
}

int main(void) {
  run(0);
  run(1);
  return test_report("algo_ppo_grad");
}
