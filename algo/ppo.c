// ppo.c: PPO in the style of rsl_rl (the BeyondMimic baseline): Gaussian policy with a state-independent
// log-std, separate actor and critic MLPs, running observation normalization, GAE(lambda), advantage
// normalization over the batch, clipped surrogate and clipped value loss, entropy bonus, epochs x shuffled
// minibatches, one Adam over all parameters with a global gradient-norm clip, and the adaptive learning rate
// on the KL divergence (lr /= 1.5 when KL > 2 * desired, *= 1.5 when KL < desired / 2, within [1e-5, 1e-2]).
// Time-outs bootstrap: r += gamma * V(final observation). It needs no simulator gradient. A task with a critic
// observation (EnvTaskInfo.critic) feeds the critic from it, through its own normalizer ("ppo/critic_obs_norm/*").
//
// The per-sample formulas are algo/ppo_math.h's (shared with ppo_cuda.cu); this file holds the CPU loops.
// Buffers are time-major, world-minor: (horizon, num_envs, ...). Everything runs in float32 except the
// per-sample loss terms (double). Deterministic: fixed seeds, sequential loops, no threads.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/ppo_math.h"
#include "nn/nn.h"

typedef struct {
  Cfg c;
  int N, O, A, T, mb, nmb, epochs;
  int Oc, priv;  // the critic's observation size; priv: the task's own critic observation (else Oc = O)
  NnMlp *actor, *critic;
  NnNorm* norm;   // NULL without obs normalization
  NnNorm* cnorm;  // the critic's: its own with a critic observation, else norm
  float* log_std;  // (A)
  int64_t na, nc;  // actor / critic parameter counts
  // Adam over [actor | critic | log_std]
  float *m, *v;  // (na + nc + A)
  int64_t adam_step;
  double lr;
  uint64_t rng;       // minibatch shuffles
  uint64_t* act_rng;  // (N) action noise per world
  // rollout (T, N, ...)
  float *obs, *act, *mu, *logp, *val, *rew, *ret, *adv;
  float* cobs;  // (T, N, Oc) the critic's normalized observations (priv only)
  uint8_t* done;
  float* log_std_old;  // (A) log-std during the rollout
  // scratch
  float *nobs, *fobs, *bobs, *bmu, *bval, *dmu, *dval, *tmp;
  float* bcobs;  // (maxb, Oc) the critic's minibatch inputs (priv only)
  int* perm;
  double* gls;   // (A) log-std gradient accumulator
  float* gls_f;  // (A)
} Ppo;

static void ppo_destroy(void* p) {
  Ppo* s = (Ppo*)p;
  if (!s) return;
  nn_mlp_destroy(s->actor), nn_mlp_destroy(s->critic);
  if (s->cnorm && s->cnorm != s->norm) nn_norm_destroy(s->cnorm);
  if (s->norm) nn_norm_destroy(s->norm);
  free(s->cobs), free(s->bcobs);
  free(s->log_std), free(s->m), free(s->v), free(s->act_rng);
  free(s->obs), free(s->act), free(s->mu), free(s->logp), free(s->val), free(s->rew), free(s->ret), free(s->adv);
  free(s->done), free(s->log_std_old);
  free(s->nobs), free(s->fobs), free(s->bobs), free(s->bmu), free(s->bval), free(s->dmu), free(s->dval), free(s->tmp);
  free(s->perm), free(s->gls), free(s->gls_f);
  free(s);
}

static int ppo_create(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen) {
  *out = NULL;
  Ppo* s = (Ppo*)calloc(1, sizeof(Ppo));
  if (!s) return -1;
  s->c = *c;
  s->N = env->nworld, s->O = env->obs_dim, s->A = env->act_dim;
  s->Oc = env->critic_obs_dim, s->priv = env->task->info.critic != NULL;
  s->T = (int)c->algo_horizon, s->epochs = (int)c->ppo_epochs, s->nmb = (int)c->ppo_minibatches;
  int64_t batch = (int64_t)s->T * s->N;
  if (batch % s->nmb) {
    snprintf(err, errlen, "ppo: horizon x num_envs (%lld) is not divisible by ppo.minibatches (%d)", (long long)batch,
             s->nmb);
    free(s);
    return -1;
  }
  if (batch > (1 << 30)) {
    snprintf(err, errlen, "ppo: rollout batch too large");
    free(s);
    return -1;
  }
  s->mb = (int)(batch / s->nmb);
  int maxb = s->mb > s->N ? s->mb : s->N;
  NnConfig ac, cc;
  algo_net_config(&ac, c, &c->policy_actor_hidden, s->O, s->A, NN_ACT_NONE);
  algo_net_config(&cc, c, &c->policy_critic_hidden, s->Oc, 1, NN_ACT_NONE);
  int rc = nn_mlp_create(&s->actor, &ac, maxb);
  if (!rc) rc = nn_mlp_create(&s->critic, &cc, maxb);
  if (!rc && c->policy_obs_norm) rc = nn_norm_create(&s->norm, s->O, 1e-8, c->policy_obs_clip);
  s->cnorm = s->norm;
  if (!rc && c->policy_obs_norm && s->priv) rc = nn_norm_create(&s->cnorm, s->Oc, 1e-8, c->policy_obs_clip);
  if (rc) {
    snprintf(err, errlen, "ppo: network setup failed: %s", nn_strerror(rc));
    ppo_destroy(s);
    return -1;
  }
  uint64_t seed = (uint64_t)c->run_seed;
  nn_mlp_init(s->actor, ppo_seed(seed, 1));
  nn_mlp_init(s->critic, ppo_seed(seed, 2));
  s->na = nn_mlp_param_count(s->actor), s->nc = nn_mlp_param_count(s->critic);
  int64_t P = s->na + s->nc + s->A;
  size_t TN = (size_t)batch;
  int O = s->O, A = s->A, Om = s->Oc > O ? s->Oc : O;
  s->log_std = (float*)malloc(sizeof(float) * (size_t)A);
  s->log_std_old = (float*)malloc(sizeof(float) * (size_t)A);
  s->m = (float*)calloc((size_t)P, sizeof(float));
  s->v = (float*)calloc((size_t)P, sizeof(float));
  s->act_rng = (uint64_t*)malloc(sizeof(uint64_t) * (size_t)s->N);
  s->obs = (float*)malloc(sizeof(float) * TN * (size_t)O);
  s->act = (float*)malloc(sizeof(float) * TN * (size_t)A);
  s->mu = (float*)malloc(sizeof(float) * TN * (size_t)A);
  s->logp = (float*)malloc(sizeof(float) * TN);
  s->val = (float*)malloc(sizeof(float) * TN);
  s->rew = (float*)malloc(sizeof(float) * TN);
  s->ret = (float*)malloc(sizeof(float) * TN);
  s->adv = (float*)malloc(sizeof(float) * TN);
  s->done = (uint8_t*)malloc(TN);
  s->nobs = (float*)malloc(sizeof(float) * (size_t)s->N * (size_t)Om);
  s->fobs = (float*)malloc(sizeof(float) * (size_t)s->N * (size_t)Om);
  s->bobs = (float*)malloc(sizeof(float) * (size_t)maxb * (size_t)Om);
  int priv_nomem = 0;
  if (s->priv) {
    s->cobs = (float*)malloc(sizeof(float) * TN * (size_t)s->Oc);
    s->bcobs = (float*)malloc(sizeof(float) * (size_t)maxb * (size_t)s->Oc);
    priv_nomem = !s->cobs || !s->bcobs;
  }
  s->bmu = (float*)malloc(sizeof(float) * (size_t)maxb * (size_t)A);
  s->bval = (float*)malloc(sizeof(float) * (size_t)maxb);
  s->dmu = (float*)malloc(sizeof(float) * (size_t)maxb * (size_t)A);
  s->dval = (float*)malloc(sizeof(float) * (size_t)maxb);
  s->tmp = (float*)malloc(sizeof(float) * (size_t)maxb);
  s->perm = (int*)malloc(sizeof(int) * TN);
  s->gls = (double*)calloc((size_t)A, sizeof(double));
  s->gls_f = (float*)calloc((size_t)A, sizeof(float));
  if (!s->log_std || !s->log_std_old || !s->m || !s->v || !s->act_rng || !s->obs || !s->act || !s->mu || !s->logp ||
      !s->val || !s->rew || !s->ret || !s->adv || !s->done || !s->nobs || !s->fobs || !s->bobs || !s->bmu ||
      !s->bval || !s->dmu || !s->dval || !s->tmp || !s->perm || !s->gls ||
      !s->gls_f || priv_nomem) {
    snprintf(err, errlen, "ppo: out of memory");
    ppo_destroy(s);
    return -1;
  }
  for (int j = 0; j < A; j++) s->log_std[j] = (float)log(c->policy_init_noise_std);
  s->lr = c->ppo_learning_rate;
  s->rng = ppo_seed(seed, 3);
  for (int w = 0; w < s->N; w++) s->act_rng[w] = ppo_seed(ppo_seed(seed, 4), (uint64_t)w);
  *out = s;
  return 0;
}

// observations -> normalized copy (statistics updated first when `update`), with the actor's (nm = s->norm,
// dim O) or the critic's (s->cnorm, Oc) normalizer
static void normalize(NnNorm* nm, int dim, const float* x, int n, float* y, int update) {
  if (!nm) {
    memcpy(y, x, sizeof(float) * (size_t)n * (size_t)dim);
    return;
  }
  if (update) nn_norm_update(nm, x, n);
  nn_norm_apply(nm, x, n, y);
}

// Adam (PyTorch semantics) over one segment
static void adam_segment(float* p, const float* g, float* m, float* v, int64_t n, double lr, double bc1, double bc2,
                         float scale) {
  float step = (float)(lr / bc1), sbc2 = (float)sqrt(bc2);
  for (int64_t i = 0; i < n; i++) ppo_adam(&p[i], g[i], &m[i], &v[i], step, sbc2, scale);
}

typedef struct {
  double loss, surr, value, entropy, kl, clip_frac;
} MbLoss;

// Forward passes and the PPO loss on the minibatch idx (mb rollout indices): loss = surrogate + value_coef *
// value loss - entropy_coef * entropy. Fills the cotangents of the network outputs (s->dmu, s->dval) and the
// log-std gradient (s->gls_f); the networks keep what their backward passes need.
static MbLoss ppo_minibatch(Ppo* s, const int* idx, int mb) {
  int O = s->O, A = s->A;
  double clip = s->c.ppo_clip, ent_coef = s->c.ppo_entropy_coef, vcoef = s->c.ppo_value_coef;
  double* gls = s->gls;
  for (int k = 0; k < mb; k++) memcpy(s->bobs + (size_t)k * O, s->obs + (size_t)idx[k] * O, sizeof(float) * O);
  int Oc = s->Oc;
  for (int k = 0; k < mb && s->priv; k++)
    memcpy(s->bcobs + (size_t)k * Oc, s->cobs + (size_t)idx[k] * Oc, sizeof(float) * Oc);
  nn_mlp_forward(s->actor, s->bobs, mb, s->bmu);
  nn_mlp_forward(s->critic, s->priv ? s->bcobs : s->bobs, mb, s->bval);
  PpoLossSums S = {0, 0, 0, 0};
  for (int j = 0; j < A; j++) gls[j] = 0;
  for (int k = 0; k < mb; k++) {
    size_t i = (size_t)idx[k];
    ppo_sample_loss(s->act + i * A, s->mu + i * A, s->bmu + (size_t)k * A, s->logp[i], s->adv[i], s->val[i],
                    s->ret[i], s->bval[k], s->log_std, s->log_std_old, A, mb, clip, vcoef,
                    (int)s->c.ppo_clip_value_loss, &S, gls, 1, s->dmu + (size_t)k * A, &s->dval[k]);
  }
  double kl = S.kl / mb, lsurr = S.surr / mb, lval = S.value / mb, clipped = S.clipped;
  double entropy = ppo_entropy(s->log_std, A);
  for (int j = 0; j < A; j++) s->gls_f[j] = ppo_log_std_grad(gls[j], ent_coef);
  MbLoss L;
  L.surr = lsurr, L.value = lval, L.entropy = entropy, L.kl = kl, L.clip_frac = clipped / mb;
  L.loss = lsurr + vcoef * lval - ent_coef * entropy;
  return L;
}

static int ppo_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm, char* err, size_t errlen) {
  Ppo* s = (Ppo*)p;
  int N = s->N, O = s->O, A = s->A, T = s->T, Oc = s->Oc;
  double gamma = s->c.algo_gamma, lam = s->c.algo_lambda;
  float* actor_p = nn_mlp_params(s->actor);
  float* critic_p = nn_mlp_params(s->critic);
  memcpy(s->log_std_old, s->log_std, sizeof(float) * (size_t)A);
  double t0;

  // ---- rollout ----
  for (int t = 0; t < T; t++) {
    size_t base = (size_t)t * (size_t)N;
    float* ob = s->obs + base * (size_t)O;
    float* mu = s->mu + base * (size_t)A;
    float* ac = s->act + base * (size_t)A;
    t0 = algo_now();
    normalize(s->norm, O, env->obs, N, ob, 1);
    float* cob = s->priv ? s->cobs + base * (size_t)Oc : ob;  // the critic's input
    if (s->priv) normalize(s->cnorm, Oc, env->cobs, N, cob, 1);
    nn_mlp_infer(s->actor, actor_p, ob, N, mu);
    nn_mlp_infer(s->critic, critic_p, cob, N, s->val + base);
    for (int w = 0; w < N; w++)
      ppo_act(mu + (size_t)w * A, s->log_std, A, &s->act_rng[w], ac + (size_t)w * A, &s->logp[base + w]);
    tm->networks += algo_now() - t0;
    t0 = algo_now();
    env_step(env, ac);
    tm->sim += algo_now() - t0;
    t0 = algo_now();
    int ntrunc = 0;
    for (int w = 0; w < N; w++) {
      s->rew[base + w] = env->reward[w];
      s->done[base + w] = env->terminated[w] | env->truncated[w];
      if (env->truncated[w])
        memcpy(s->fobs + (size_t)ntrunc++ * Oc, env->final_cobs + (size_t)w * Oc, sizeof(float) * Oc);
    }
    if (ntrunc) {  // bootstrap time-outs from the value of the final observation
      normalize(s->cnorm, Oc, s->fobs, ntrunc, s->bobs, 0);
      nn_mlp_infer(s->critic, critic_p, s->bobs, ntrunc, s->bval);
      for (int w = 0, k = 0; w < N; w++)
        if (env->truncated[w]) ppo_bootstrap(&s->rew[base + w], gamma, s->bval[k++]);
    }
    tm->networks += algo_now() - t0;
  }

  // ---- returns: GAE(lambda), then advantages normalized over the batch ----
  t0 = algo_now();
  normalize(s->cnorm, Oc, env->cobs, N, s->nobs, 0);
  nn_mlp_infer(s->critic, critic_p, s->nobs, N, s->tmp);
  for (int w = 0; w < N; w++) ppo_gae(w, N, T, gamma, lam, s->tmp[w], s->rew, s->val, s->done, s->adv, s->ret);
  size_t TN = (size_t)T * N;
  double mean = 0, var = 0;
  for (size_t i = 0; i < TN; i++) mean += s->adv[i];
  mean /= (double)TN;
  for (size_t i = 0; i < TN; i++) var += ppo_adv_sq_dev(s->adv[i], mean);
  double sd = ppo_adv_std(var, (long long)TN);
  for (size_t i = 0; i < TN; i++) s->adv[i] = ppo_adv_norm(s->adv[i], mean, sd);
  tm->networks += algo_now() - t0;

  // ---- update ----
  int adaptive = !strcmp(s->c.ppo_schedule, "adaptive");
  double sum[M_COUNT] = {0};
  int nupd = 0, mb = s->mb;
  float* ga = nn_mlp_grads(s->actor);
  float* gc = nn_mlp_grads(s->critic);
  float* gls_f = s->gls_f;
  for (int ep = 0; ep < s->epochs; ep++) {
    t0 = algo_now();
    ppo_permutation(s->perm, TN, &s->rng);
    tm->networks += algo_now() - t0;
    for (int b = 0; b < s->nmb; b++) {
      t0 = algo_now();
      const int* idx = s->perm + (size_t)b * mb;
      MbLoss L = ppo_minibatch(s, idx, mb);
      double kl = L.kl;
      if (adaptive) s->lr = ppo_adapt_lr(s->lr, kl, s->c.ppo_desired_kl);
      tm->networks += algo_now() - t0;
      t0 = algo_now();
      nn_mlp_backward(s->actor, s->dmu, NULL);
      nn_mlp_backward(s->critic, s->dval, NULL);
      tm->backward += algo_now() - t0;
      t0 = algo_now();
      // one Adam step over all parameters with the global norm clip
      double n2 = 0;
      for (int64_t i = 0; i < s->na; i++) n2 += (double)ga[i] * ga[i];
      for (int64_t i = 0; i < s->nc; i++) n2 += (double)gc[i] * gc[i];
      for (int j = 0; j < A; j++) n2 += (double)gls_f[j] * gls_f[j];
      double gn = sqrt(n2), maxn = s->c.algo_max_grad_norm;
      float scale = ppo_clip_scale(gn, maxn);
      s->adam_step++;
      double bc1, bc2;
      ppo_adam_bias(s->adam_step, &bc1, &bc2);
      adam_segment(actor_p, ga, s->m, s->v, s->na, s->lr, bc1, bc2, scale);
      adam_segment(critic_p, gc, s->m + s->na, s->v + s->na, s->nc, s->lr, bc1, bc2, scale);
      adam_segment(s->log_std, gls_f, s->m + s->na + s->nc, s->v + s->na + s->nc, A, s->lr, bc1, bc2, scale);
      tm->networks += algo_now() - t0;
      sum[M_POLICY] += L.surr, sum[M_VALUE] += L.value, sum[M_ENTROPY] += L.entropy, sum[M_KL] += kl;
      sum[M_GRADNORM] += gn, sum[M_CLIPFRAC] += L.clip_frac;
      nupd++;
    }
  }
  for (int k = 0; k < M_COUNT; k++) metrics[k] = sum[k] / (nupd ? nupd : 1);
  metrics[M_LR] = s->lr;
  metrics[M_STD] = ppo_action_std(s->log_std, A);
  return 0;
}

static int ppo_state(void* p, CkTensor* t, int max, int policy_only) {
  Ppo* s = (Ppo*)p;
  PpoStateRefs r;
  memset(&r, 0, sizeof(r));
  r.na = s->na, r.nc = s->nc, r.A = s->A, r.O = s->O, r.N = s->N, r.P = s->na + s->nc + s->A;
  r.actor = nn_mlp_params(s->actor), r.critic = nn_mlp_params(s->critic), r.log_std = s->log_std;
  if (s->norm) {
    NnTensorRef nr[3];
    nn_norm_state(s->norm, nr, 3);
    r.norm_count = (double*)nr[0].data, r.norm_mean = (double*)nr[1].data, r.norm_m2 = (double*)nr[2].data;
  }
  r.Oc = s->Oc;
  if (s->priv && s->cnorm) {
    NnTensorRef nr[3];
    nn_norm_state(s->cnorm, nr, 3);
    r.cnorm_count = (double*)nr[0].data, r.cnorm_mean = (double*)nr[1].data, r.cnorm_m2 = (double*)nr[2].data;
  }
  r.adam_m = s->m, r.adam_v = s->v, r.adam_step = &s->adam_step, r.lr = &s->lr, r.rng = &s->rng;
  r.act_rng = s->act_rng;
  return ppo_state_add(&r, t, max, policy_only);
}

static int ppo_act_eval(void* p, const float* obs, int n, float* act) {
  Ppo* s = (Ppo*)p;
  if (n > s->N) return -1;
  normalize(s->norm, s->O, obs, n, s->nobs, 0);
  return nn_mlp_infer(s->actor, nn_mlp_params(s->actor), s->nobs, n, act);
}

const AlgoOps algo_ppo = {"ppo",        ppo_create,       ppo_destroy, ppo_iterate, ppo_state, ppo_act_eval,
                          ppo_metric_names, M_COUNT, NULL, NULL};
