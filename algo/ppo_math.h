// ppo_math.h: the per-sample formulas of PPO (the math of ppo.c's header), written once as SIM_FN functions:
// ppo.c's loops and ppo_cuda.cu's kernels are thin wrappers around them.
//
// Sums over samples go through caller-owned double accumulators (`+=`): the CPU passes one running sum over
// the minibatch in order, a CUDA thread zeroed locals whose values become its partials, summed by
// algo_cuda_util.cuh's fixed tree. Each backend thereby keeps the summation order it always had; everything
// inside a sample is the same sequence of operations on both (contraction is off on both sides).
//
// Also here, so that they exist once: the metric list, the seed mixing, the minibatch permutation, the Adam
// bias corrections and the checkpoint dataset table.
#ifndef ADJ_ALGO_PPO_MATH_H
#define ADJ_ALGO_PPO_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo_math.h"
#include "algo/ckpt.h"
#include "envs/env.h"  // SIM_FN, env_rng_next / env_rng_normal

#define PPO_LOG2PI 1.8378770664093453

// the metrics, in metrics.csv's column order
#define PPO_METRICS(X)                                                                                 \
  X(M_POLICY, "loss_policy") X(M_VALUE, "loss_value") X(M_ENTROPY, "entropy") X(M_KL, "kl")            \
  X(M_LR, "learning_rate") X(M_GRADNORM, "grad_norm") X(M_CLIPFRAC, "clip_fraction") X(M_STD, "action_std")
enum { PPO_METRICS(ALGO_METRIC_ID) M_COUNT };
static const char* const ppo_metric_names[] = {PPO_METRICS(ALGO_METRIC_NAME)};

// the k-th seed of a run (1: actor, 2: critic, 3: minibatch shuffles, 4: the per-world action streams)
SIM_FN uint64_t ppo_seed(uint64_t seed, uint64_t k) { return algo_seed(seed, 0xD1B54A32D192ED03ULL, k); }

// log N(a; mu, exp(log_std)^2) of one sample's A actions
SIM_FN double ppo_gauss_logp(const float* a, const float* mu, const float* log_std, int A) {
  double lp = 0;
  for (int j = 0; j < A; j++) {
    double sd = exp((double)log_std[j]), z = ((double)a[j] - (double)mu[j]) / sd;
    lp += -0.5 * z * z - (double)log_std[j] - 0.5 * PPO_LOG2PI;
  }
  return lp;
}

// one world's Gaussian action a = mu + exp(log_std) eps (eps from the world's stream) and its log-probability
SIM_FN void ppo_act(const float* mu, const float* log_std, int A, uint64_t* rng, float* act, float* logp) {
  for (int j = 0; j < A; j++) act[j] = mu[j] + (float)(exp((double)log_std[j]) * env_rng_normal(rng));
  *logp = (float)ppo_gauss_logp(act, mu, log_std, A);
}

// a time-out bootstraps from the value of its final observation: r += gamma V
SIM_FN void ppo_bootstrap(float* rew, double gamma, float v) { *rew += (float)(gamma * (double)v); }

// GAE(lambda) of world w over the (T, N) rollout from the value last_v after it: advantages and returns
SIM_FN void ppo_gae(int w, int N, int T, double gamma, double lam, float last_v, const float* rew,
                    const float* val, const uint8_t* done, float* adv, float* ret) {
  double a = 0, next_v = last_v;
  for (int t = T - 1; t >= 0; t--) {
    size_t i = (size_t)t * N + w;
    double nonterm = done[i] ? 0.0 : 1.0;
    double delta = (double)rew[i] + gamma * next_v * nonterm - (double)val[i];
    a = delta + gamma * lam * nonterm * a;
    adv[i] = (float)a;
    ret[i] = (float)(a + (double)val[i]);
    next_v = val[i];
  }
}

// advantage normalization over the batch of n: the sample std from the sum of squared deviations, then
// (a - mean) / (std + 1e-8)
SIM_FN double ppo_adv_sq_dev(float a, double mean) { return ((double)a - mean) * ((double)a - mean); }
SIM_FN double ppo_adv_std(double var, long long n) { return n > 1 ? sqrt(var / (double)(n - 1)) : 0; }
SIM_FN float ppo_adv_norm(float a, double mean, double sd) { return (float)(((double)a - mean) / (sd + 1e-8)); }

// the minibatch's loss sums: mean KL(old || new) x mb, clipped surrogate, clipped-ratio count, value loss
typedef struct {
  double kl, surr, clipped, value;
} PpoLossSums;

// One sample of a minibatch of mb: the PPO loss terms added to *L, its log-std gradient terms to
// gls[j * gstride] (j < A), the cotangents of the actor's mean (dmu, A) and of the value (*dval), for the loss
// surrogate + vcoef value loss (minibatch means). a: the rollout's action, muo / logp_old / val_old / ret its
// mean, log-probability, value and return, adv its normalized advantage; mun and v the networks' outputs now.
SIM_FN void ppo_sample_loss(const float* a, const float* muo, const float* mun, float logp_old, float adv_,
                            float val_old, float ret, float v_new, const float* log_std, const float* log_std_old,
                            int A, int mb, double clip, double vcoef, int clip_value, PpoLossSums* L, double* gls,
                            size_t gstride, float* dmu, float* dval) {
  double lp = ppo_gauss_logp(a, mun, log_std, A);
  for (int j = 0; j < A; j++) {
    double so = exp((double)log_std_old[j]), sn = exp((double)log_std[j]);
    double dm = (double)muo[j] - (double)mun[j];
    L->kl += log(sn / so) + (so * so + dm * dm) / (2 * sn * sn) - 0.5;
  }
  double r = exp(lp - (double)logp_old), adv = adv_;
  double rc = r < 1 - clip ? 1 - clip : (r > 1 + clip ? 1 + clip : r);
  double s1 = -adv * r, s2 = -adv * rc;
  L->surr += s1 > s2 ? s1 : s2;
  L->clipped += fabs(r - 1) > clip;
  double dl_dr = (s1 >= s2) ? -adv : (r > 1 - clip && r < 1 + clip ? -adv : 0);
  double dl_dlp = dl_dr * r / mb;
  for (int j = 0; j < A; j++) {
    double sd2 = exp(2 * (double)log_std[j]), z = (double)a[j] - (double)mun[j];
    dmu[j] = (float)(dl_dlp * z / sd2);
    gls[(size_t)j * gstride] += dl_dlp * (z * z / sd2 - 1);
  }
  double v = v_new, vo = val_old, R = ret, dv;
  if (clip_value) {
    double dvc = v - vo;
    int inside = dvc > -clip && dvc < clip;
    double vc = vo + (dvc < -clip ? -clip : (dvc > clip ? clip : dvc));
    double l1 = (v - R) * (v - R), l2 = (vc - R) * (vc - R);
    L->value += l1 > l2 ? l1 : l2;
    dv = l1 >= l2 ? 2 * (v - R) : (inside ? 2 * (vc - R) : 0);
  } else {
    L->value += (v - R) * (v - R);
    dv = 2 * (v - R);
  }
  *dval = (float)(vcoef * dv / mb);
}

// the policy's entropy (Gaussian, state-independent std), the log-std gradient with the entropy bonus
SIM_FN double ppo_entropy(const float* log_std, int A) {
  double e = 0;
  for (int j = 0; j < A; j++) e += 0.5 + 0.5 * PPO_LOG2PI + (double)log_std[j];
  return e;
}
SIM_FN float ppo_log_std_grad(double gls, double ent_coef) { return (float)(gls - ent_coef); }

// the adaptive learning rate on the minibatch's KL: /1.5 above 2 x desired, x1.5 below desired / 2
SIM_FN double ppo_adapt_lr(double lr, double kl, double desired) {
  if (kl > 2 * desired)
    lr = fmax(1e-5, lr / 1.5);
  else if (kl < desired / 2 && kl > 0)
    lr = fmin(1e-2, lr * 1.5);
  return lr;
}

// one Adam over all parameters (PyTorch semantics): the global norm clip's gradient scale, the bias
// corrections of step k (1-based), and one element's update with step = lr / bc1 and sbc2 = sqrt(bc2) (float)
SIM_FN float ppo_clip_scale(double gn, double maxn) {
  return (maxn > 0 && gn > maxn) ? (float)(maxn / (gn + 1e-6)) : 1.0f;
}
SIM_FN void ppo_adam_bias(int64_t k, double* bc1, double* bc2) {
  *bc1 = 1 - pow(0.9, (double)k), *bc2 = 1 - pow(0.999, (double)k);
}
SIM_FN void ppo_adam(float* p, float g, float* m, float* v, float step, float sbc2, float scale) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  float gi = g * scale;
  *m = b1 * *m + (1 - b1) * gi;
  *v = b2 * *v + (1 - b2) * gi * gi;
  *p -= step * *m / (sqrtf(*v) / sbc2 + eps);
}

// metric action_std: the mean of exp(log_std)
SIM_FN double ppo_action_std(const float* log_std, int A) {
  double sd = 0;
  for (int j = 0; j < A; j++) sd += exp((double)log_std[j]);
  return sd / A;
}

// an epoch's minibatch order: Fisher-Yates on the run's shuffle stream (host)
static inline void ppo_permutation(int* perm, size_t n, uint64_t* rng) {
  for (size_t i = 0; i < n; i++) perm[i] = (int)i;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)(env_rng_next(rng) % (uint64_t)(i + 1));
    int x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
}

// The checkpoint datasets (names, types, shapes: old checkpoints must keep loading), in order, as
// X(name, type, field of PpoStateRefs, rows, when); the first group is the policy (`policy_only`). The
// arrays are where a checkpoint is written from and loaded into (the CPU's live arrays, the CUDA host mirror).
typedef struct {
  int64_t na, nc, A, O, N, P;  // P = na + nc + A (the one Adam's parameters)
  int64_t Oc;                  // the critic's observation size
  float *actor, *critic, *log_std, *adam_m, *adam_v;
  double *norm_count, *norm_mean, *norm_m2;  // NULL without obs normalization
  double *cnorm_count, *cnorm_mean, *cnorm_m2;  // the critic's own; NULL without a critic observation
  int64_t* adam_step;
  double* lr;
  uint64_t *rng, *act_rng;
} PpoStateRefs;
#define PPO_POLICY_STATE(X)                                              \
  X("ppo/actor", CK_F32, actor, r->na, 1)                                \
  X("ppo/critic", CK_F32, critic, r->nc, 1)                              \
  X("ppo/log_std", CK_F32, log_std, r->A, 1)                             \
  X("ppo/obs_norm/count", CK_F64, norm_count, 1, r->norm_count != NULL)  \
  X("ppo/obs_norm/mean", CK_F64, norm_mean, r->O, r->norm_count != NULL) \
  X("ppo/obs_norm/m2", CK_F64, norm_m2, r->O, r->norm_count != NULL)  \
  X("ppo/critic_obs_norm/count", CK_F64, cnorm_count, 1, r->cnorm_count != NULL)  \
  X("ppo/critic_obs_norm/mean", CK_F64, cnorm_mean, r->Oc, r->cnorm_count != NULL) \
  X("ppo/critic_obs_norm/m2", CK_F64, cnorm_m2, r->Oc, r->cnorm_count != NULL)
#define PPO_TRAINING_STATE(X)                        \
  X("ppo/adam/m", CK_F32, adam_m, r->P, 1)           \
  X("ppo/adam/v", CK_F32, adam_v, r->P, 1)           \
  X("ppo/adam/step", CK_I64, adam_step, 1, 1)        \
  X("ppo/learning_rate", CK_F64, lr, 1, 1)           \
  X("ppo/rng", CK_I64, rng, 1, 1)                    \
  X("ppo/action_rng", CK_I64, act_rng, r->N, 1)

// the state datasets of r for AlgoOps.state
static inline int ppo_state_add(const PpoStateRefs* r, CkTensor* t, int max, int policy_only) {
  int n = 0;
#define PPO_STATE_ADD(name, type, field, rows, when) \
  if (when) n = ckpt_add(t, n, max, name, type, r->field, rows, 0);
  PPO_POLICY_STATE(PPO_STATE_ADD)
  if (policy_only) return n;
  PPO_TRAINING_STATE(PPO_STATE_ADD)
#undef PPO_STATE_ADD
  return n;
}

#endif
