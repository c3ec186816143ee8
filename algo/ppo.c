// ppo.c: PPO in the style of rsl_rl (the BeyondMimic baseline): Gaussian policy with a state-independent
// log-std, separate actor and critic MLPs, running observation normalization, GAE(lambda), advantage
// normalization over the batch, clipped surrogate and clipped value loss, entropy bonus, epochs x shuffled
// minibatches, one Adam over all parameters with a global gradient-norm clip, and the adaptive learning rate
// on the KL divergence (lr /= 1.5 when KL > 2 * desired, *= 1.5 when KL < desired / 2, within [1e-5, 1e-2]).
// Time-outs bootstrap: r += gamma * V(final observation). It needs no simulator gradient.
//
// Buffers are time-major, world-minor: (horizon, num_envs, ...). Everything runs in float32 except the
// per-sample loss terms (double). Deterministic: fixed seeds, sequential loops, no threads.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "nn/nn.h"

typedef struct {
  Cfg c;
  int N, O, A, T, mb, nmb, epochs;
  NnMlp *actor, *critic;
  NnNorm* norm;  // NULL without obs normalization
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
  uint8_t* done;
  float* log_std_old;  // (A) log-std during the rollout
  // scratch
  float *nobs, *fobs, *bobs, *bmu, *bval, *dmu, *dval, *tmp;
  int* perm;
  double* gls;   // (A) log-std gradient accumulator
  float* gls_f;  // (A)
} Ppo;

static const char* const kMetrics[] = {"loss_policy", "loss_value", "entropy", "kl",
                                       "learning_rate", "grad_norm", "clip_fraction", "action_std"};
enum { M_POLICY, M_VALUE, M_ENTROPY, M_KL, M_LR, M_GRADNORM, M_CLIPFRAC, M_STD, M_COUNT };

static uint64_t mix(uint64_t seed, uint64_t k) {
  uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (k + 1));
  return env_rng_next(&s);
}

static void ppo_destroy(void* p) {
  Ppo* s = (Ppo*)p;
  if (!s) return;
  nn_mlp_destroy(s->actor), nn_mlp_destroy(s->critic);
  if (s->norm) nn_norm_destroy(s->norm);
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
  algo_net_config(&cc, c, &c->policy_critic_hidden, s->O, 1, NN_ACT_NONE);
  int rc = nn_mlp_create(&s->actor, &ac, maxb);
  if (!rc) rc = nn_mlp_create(&s->critic, &cc, maxb);
  if (!rc && c->policy_obs_norm) rc = nn_norm_create(&s->norm, s->O, 1e-8, c->policy_obs_clip);
  if (rc) {
    snprintf(err, errlen, "ppo: network setup failed: %s", nn_strerror(rc));
    ppo_destroy(s);
    return -1;
  }
  uint64_t seed = (uint64_t)c->run_seed;
  nn_mlp_init(s->actor, mix(seed, 1));
  nn_mlp_init(s->critic, mix(seed, 2));
  s->na = nn_mlp_param_count(s->actor), s->nc = nn_mlp_param_count(s->critic);
  int64_t P = s->na + s->nc + s->A;
  size_t TN = (size_t)batch;
  int O = s->O, A = s->A;
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
  s->nobs = (float*)malloc(sizeof(float) * (size_t)s->N * (size_t)O);
  s->fobs = (float*)malloc(sizeof(float) * (size_t)s->N * (size_t)O);
  s->bobs = (float*)malloc(sizeof(float) * (size_t)maxb * (size_t)O);
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
      !s->gls_f) {
    snprintf(err, errlen, "ppo: out of memory");
    ppo_destroy(s);
    return -1;
  }
  for (int j = 0; j < A; j++) s->log_std[j] = (float)log(c->policy_init_noise_std);
  s->lr = c->ppo_learning_rate;
  s->rng = mix(seed, 3);
  for (int w = 0; w < s->N; w++) s->act_rng[w] = mix(mix(seed, 4), (uint64_t)w);
  *out = s;
  return 0;
}

// observations -> normalized copy (statistics updated first when `update`)
static void normalize(Ppo* s, const float* x, int n, float* y, int update) {
  if (!s->norm) {
    memcpy(y, x, sizeof(float) * (size_t)n * (size_t)s->O);
    return;
  }
  if (update) nn_norm_update(s->norm, x, n);
  nn_norm_apply(s->norm, x, n, y);
}

static const double kLog2Pi = 1.8378770664093453;

static double gauss_logp(const float* a, const float* mu, const float* log_std, int A) {
  double lp = 0;
  for (int j = 0; j < A; j++) {
    double sd = exp((double)log_std[j]), z = ((double)a[j] - (double)mu[j]) / sd;
    lp += -0.5 * z * z - (double)log_std[j] - 0.5 * kLog2Pi;
  }
  return lp;
}

// Adam (PyTorch semantics) over one segment
static void adam_segment(float* p, const float* g, float* m, float* v, int64_t n, double lr, double bc1, double bc2,
                         float scale) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  float step = (float)(lr / bc1), sbc2 = (float)sqrt(bc2);
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i] * scale;
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    p[i] -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
  }
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
  nn_mlp_forward(s->actor, s->bobs, mb, s->bmu);
  nn_mlp_forward(s->critic, s->bobs, mb, s->bval);
  double kl = 0, lsurr = 0, lval = 0, clipped = 0;
  for (int j = 0; j < A; j++) gls[j] = 0;
  for (int k = 0; k < mb; k++) {
    size_t i = (size_t)idx[k];
    const float* a = s->act + i * A;
    const float* muo = s->mu + i * A;
    const float* mun = s->bmu + (size_t)k * A;
    double lp = gauss_logp(a, mun, s->log_std, A);
    for (int j = 0; j < A; j++) {
      double so = exp((double)s->log_std_old[j]), sn = exp((double)s->log_std[j]);
      double dm = (double)muo[j] - (double)mun[j];
      kl += log(sn / so) + (so * so + dm * dm) / (2 * sn * sn) - 0.5;
    }
    double r = exp(lp - (double)s->logp[i]), adv = s->adv[i];
    double rc = r < 1 - clip ? 1 - clip : (r > 1 + clip ? 1 + clip : r);
    double s1 = -adv * r, s2 = -adv * rc;
    lsurr += s1 > s2 ? s1 : s2;
    clipped += fabs(r - 1) > clip;
    double dl_dr = (s1 >= s2) ? -adv : (r > 1 - clip && r < 1 + clip ? -adv : 0);
    double dl_dlp = dl_dr * r / mb;
    for (int j = 0; j < A; j++) {
      double sd2 = exp(2 * (double)s->log_std[j]), z = (double)a[j] - (double)mun[j];
      s->dmu[(size_t)k * A + j] = (float)(dl_dlp * z / sd2);
      gls[j] += dl_dlp * (z * z / sd2 - 1);
    }
    // value loss
    double v = s->bval[k], vo = s->val[i], R = s->ret[i], dv;
    if (s->c.ppo_clip_value_loss) {
      double dvc = v - vo;
      int inside = dvc > -clip && dvc < clip;
      double vc = vo + (dvc < -clip ? -clip : (dvc > clip ? clip : dvc));
      double l1 = (v - R) * (v - R), l2 = (vc - R) * (vc - R);
      lval += l1 > l2 ? l1 : l2;
      dv = l1 >= l2 ? 2 * (v - R) : (inside ? 2 * (vc - R) : 0);
    } else {
      lval += (v - R) * (v - R);
      dv = 2 * (v - R);
    }
    s->dval[k] = (float)(vcoef * dv / mb);
  }
  kl /= mb, lsurr /= mb, lval /= mb;
  double entropy = 0;
  for (int j = 0; j < A; j++) entropy += 0.5 + 0.5 * kLog2Pi + (double)s->log_std[j];
  for (int j = 0; j < A; j++) s->gls_f[j] = (float)(gls[j] - ent_coef);
  MbLoss L;
  L.surr = lsurr, L.value = lval, L.entropy = entropy, L.kl = kl, L.clip_frac = clipped / mb;
  L.loss = lsurr + vcoef * lval - ent_coef * entropy;
  return L;
}

static int ppo_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm) {
  Ppo* s = (Ppo*)p;
  int N = s->N, O = s->O, A = s->A, T = s->T;
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
    normalize(s, env->obs, N, ob, 1);
    nn_mlp_infer(s->actor, actor_p, ob, N, mu);
    nn_mlp_infer(s->critic, critic_p, ob, N, s->val + base);
    for (int w = 0; w < N; w++) {
      for (int j = 0; j < A; j++)
        ac[(size_t)w * A + j] =
            mu[(size_t)w * A + j] + (float)(exp((double)s->log_std[j]) * env_rng_normal(&s->act_rng[w]));
      s->logp[base + w] = (float)gauss_logp(ac + (size_t)w * A, mu + (size_t)w * A, s->log_std, A);
    }
    tm->networks += algo_now() - t0;
    t0 = algo_now();
    env_step(env, ac);
    tm->sim += algo_now() - t0;
    t0 = algo_now();
    int ntrunc = 0;
    for (int w = 0; w < N; w++) {
      s->rew[base + w] = env->reward[w];
      s->done[base + w] = env->terminated[w] | env->truncated[w];
      if (env->truncated[w]) memcpy(s->fobs + (size_t)ntrunc++ * O, env->final_obs + (size_t)w * O, sizeof(float) * O);
    }
    if (ntrunc) {  // bootstrap time-outs from the value of the final observation
      normalize(s, s->fobs, ntrunc, s->bobs, 0);
      nn_mlp_infer(s->critic, critic_p, s->bobs, ntrunc, s->bval);
      for (int w = 0, k = 0; w < N; w++)
        if (env->truncated[w]) s->rew[base + w] += (float)(gamma * (double)s->bval[k++]);
    }
    tm->networks += algo_now() - t0;
  }

  // ---- returns: GAE(lambda), then advantages normalized over the batch ----
  t0 = algo_now();
  normalize(s, env->obs, N, s->nobs, 0);
  nn_mlp_infer(s->critic, critic_p, s->nobs, N, s->tmp);
  for (int w = 0; w < N; w++) {
    double a = 0, next_v = s->tmp[w];
    for (int t = T - 1; t >= 0; t--) {
      size_t i = (size_t)t * N + w;
      double nonterm = s->done[i] ? 0.0 : 1.0;
      double delta = (double)s->rew[i] + gamma * next_v * nonterm - (double)s->val[i];
      a = delta + gamma * lam * nonterm * a;
      s->adv[i] = (float)a;
      s->ret[i] = (float)(a + (double)s->val[i]);
      next_v = s->val[i];
    }
  }
  size_t TN = (size_t)T * N;
  double mean = 0, var = 0;
  for (size_t i = 0; i < TN; i++) mean += s->adv[i];
  mean /= (double)TN;
  for (size_t i = 0; i < TN; i++) var += ((double)s->adv[i] - mean) * ((double)s->adv[i] - mean);
  double sd = TN > 1 ? sqrt(var / (double)(TN - 1)) : 0;
  for (size_t i = 0; i < TN; i++) s->adv[i] = (float)(((double)s->adv[i] - mean) / (sd + 1e-8));
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
    for (size_t i = 0; i < TN; i++) s->perm[i] = (int)i;
    for (size_t i = TN - 1; i > 0; i--) {  // Fisher-Yates
      size_t j = (size_t)(env_rng_next(&s->rng) % (uint64_t)(i + 1));
      int x = s->perm[i];
      s->perm[i] = s->perm[j], s->perm[j] = x;
    }
    tm->networks += algo_now() - t0;
    for (int b = 0; b < s->nmb; b++) {
      t0 = algo_now();
      const int* idx = s->perm + (size_t)b * mb;
      MbLoss L = ppo_minibatch(s, idx, mb);
      double kl = L.kl;
      if (adaptive) {
        if (kl > 2 * s->c.ppo_desired_kl) s->lr = fmax(1e-5, s->lr / 1.5);
        else if (kl < s->c.ppo_desired_kl / 2 && kl > 0) s->lr = fmin(1e-2, s->lr * 1.5);
      }
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
      float scale = (maxn > 0 && gn > maxn) ? (float)(maxn / (gn + 1e-6)) : 1.0f;
      s->adam_step++;
      double bc1 = 1 - pow(0.9, (double)s->adam_step), bc2 = 1 - pow(0.999, (double)s->adam_step);
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
  double sd_mean = 0;
  for (int j = 0; j < A; j++) sd_mean += exp((double)s->log_std[j]);
  metrics[M_STD] = sd_mean / A;
  return 0;
}

static int ppo_state(void* p, CkTensor* t, int max, int policy_only) {
  Ppo* s = (Ppo*)p;
  int n = 0;
  n = ckpt_add(t, n, max, "ppo/actor", CK_F32, nn_mlp_params(s->actor), s->na, 0);
  n = ckpt_add(t, n, max, "ppo/critic", CK_F32, nn_mlp_params(s->critic), s->nc, 0);
  n = ckpt_add(t, n, max, "ppo/log_std", CK_F32, s->log_std, s->A, 0);
  if (s->norm) {
    NnTensorRef r[3];
    nn_norm_state(s->norm, r, 3);
    n = ckpt_add(t, n, max, "ppo/obs_norm/count", CK_F64, r[0].data, 1, 0);
    n = ckpt_add(t, n, max, "ppo/obs_norm/mean", CK_F64, r[1].data, s->O, 0);
    n = ckpt_add(t, n, max, "ppo/obs_norm/m2", CK_F64, r[2].data, s->O, 0);
  }
  if (policy_only) return n;
  int64_t P = s->na + s->nc + s->A;
  n = ckpt_add(t, n, max, "ppo/adam/m", CK_F32, s->m, P, 0);
  n = ckpt_add(t, n, max, "ppo/adam/v", CK_F32, s->v, P, 0);
  n = ckpt_add(t, n, max, "ppo/adam/step", CK_I64, &s->adam_step, 1, 0);
  n = ckpt_add(t, n, max, "ppo/learning_rate", CK_F64, &s->lr, 1, 0);
  n = ckpt_add(t, n, max, "ppo/rng", CK_I64, &s->rng, 1, 0);
  n = ckpt_add(t, n, max, "ppo/action_rng", CK_I64, s->act_rng, s->N, 0);
  return n;
}

static int ppo_act_eval(void* p, const float* obs, int n, float* act) {
  Ppo* s = (Ppo*)p;
  if (n > s->N) return -1;
  normalize(s, obs, n, s->nobs, 0);
  return nn_mlp_infer(s->actor, nn_mlp_params(s->actor), s->nobs, n, act);
}

const AlgoOps algo_ppo = {"ppo", ppo_create, ppo_destroy, ppo_iterate, ppo_state, ppo_act_eval, kMetrics, M_COUNT,
                          NULL, NULL};
