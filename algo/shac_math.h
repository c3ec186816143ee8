// shac_math.h: the per-sample formulas of SHAC and its ∇Mimic options (the math of shac.c's header), written
// once as SIM_FN functions: shac.c's loops and shac_cuda.cu's kernels are thin wrappers around them.
//
// Sums over worlds or samples go through a caller-owned double accumulator (`*acc +=`): the CPU passes one
// running sum over the worlds in order, a CUDA thread a zeroed local whose value becomes its partial, summed by
// algo_cuda_util.cuh's fixed tree. Each backend thereby keeps the summation order it always had, and everything
// inside a sample is the same sequence of operations on both (contraction is off on both sides).
//
// Also here, so that they exist once: the metric list, the seed mixing and the checkpoint dataset table.
#ifndef ADJ_ALGO_SHAC_MATH_H
#define ADJ_ALGO_SHAC_MATH_H

#include <math.h>
#include <stdint.h>

#include "algo/algo_math.h"
#include "algo/ckpt.h"
#include "envs/env.h"  // SIM_FN, env_rng_next / env_rng_normal

#define SHAC_REGRESSION_STEPS 4  // Adam steps on the target-action regression per iteration (∇Mimic b)

// the metrics, in metrics.csv's column order (M_ADV: ∇Mimic (d) only, 0 when off)
#define SHAC_METRICS(X)                                                                                \
  X(M_ACTOR, "loss_actor") X(M_CRITIC, "loss_critic") X(M_GRADNORM, "grad_norm")                       \
  X(M_LR, "learning_rate") X(M_VALUE, "value_mean") X(M_AGMED, "action_grad_median")                   \
  X(M_AGCLIP, "action_grad_clip_fraction") X(M_REG, "loss_regression") X(M_NONFINITE, "nonfinite_grads") \
  X(M_CONSTR, "constraint_evals") X(M_ADV, "advantage_abs_mean")
enum { SHAC_METRICS(ALGO_METRIC_ID) M_COUNT };
static const char* const shac_metric_names[] = {SHAC_METRICS(ALGO_METRIC_NAME)};

// the k-th seed of a run (1: actor, 2: critic, 4: the per-world noise streams)
SIM_FN uint64_t shac_seed(uint64_t seed, uint64_t k) { return algo_seed(seed, 0xA24BAED4963EE407ULL, k); }

// One world's actions (step 1): mu = tanh(z), a = tanh(z + sigma eps), eps ~ N(0, 1) from the world's stream.
// With a noise state (shac.noise_correlation = rho > 0; NULL otherwise) eps is replaced by the AR(1) state
// e <- rho e + rho_c eps, rho_c = sqrt(1 - rho^2). z and act may be the same array.
SIM_FN void shac_act(const float* z, int A, double sigma, double rho, double rho_c, uint64_t* rng, double* noise,
                     float* mu, float* act) {
  for (int j = 0; j < A; j++) {
    double zz = z[j];
    mu[j] = (float)tanh(zz);
    if (sigma > 0) {
      double eps = env_rng_normal(rng);
      if (noise) {
        noise[j] = rho * noise[j] + rho_c * eps;
        eps = noise[j];
      }
      zz += sigma * eps;
    }
    act[j] = (float)tanh(zz);
  }
}

// the correlated noise state of a world whose episode ended at this step restarts at 0
SIM_FN void shac_noise_end(int done, int A, double* noise) {
  if (done)
    for (int j = 0; j < A; j++) noise[j] = 0;
}

// Step 2 for world w of the (H, N) window: V = 0 after a termination (nxt_val zeroed there), the loss
// coefficients coef_r = -gamma^k inv and, where the world's segment ends (done or the window's end) without a
// termination, coef_v = -gamma^(k+1) inv (k counted from the segment start, inv = 1 / (H N)); the world's
// loss terms are added to *loss in step order.
SIM_FN void shac_coef(int w, int N, int H, double gamma, double inv, const float* rew, const uint8_t* term,
                      const uint8_t* trunc, float* nxt_val, float* coef_r, float* coef_v, double* loss) {
  double g = 1;
  for (int t = 0; t < H; t++) {
    size_t i = (size_t)t * N + w;
    if (term[i]) nxt_val[i] = 0;
    int done = term[i] | trunc[i];
    coef_r[i] = (float)(-g * inv);
    *loss += -g * inv * rew[i];
    coef_v[i] = 0;
    if ((done || t == H - 1) && !term[i]) {
      coef_v[i] = (float)(-g * gamma * inv);
      *loss += -g * gamma * inv * nxt_val[i];
    }
    g *= gamma;
    if (done) g = 1;
  }
}

// Step 5's TD(lambda) targets of world w (DiffRL's recursion, the window's last step forced done); the targets
// are added to *vsum (metric value_mean)
SIM_FN void shac_td(int w, int N, int H, double gamma, double lam, const float* rew, const float* nxt_val,
                    const uint8_t* term, const uint8_t* trunc, float* tgt, double* vsum) {
  double Ai = 0, Bi = 0, lm = 1;
  for (int t = H - 1; t >= 0; t--) {
    size_t i = (size_t)t * N + w;
    double d = (term[i] | trunc[i] | (t == H - 1)) ? 1 : 0;
    double r = rew[i], v = nxt_val[i];
    lm = lm * lam * (1 - d) + d;
    if (lam < 1) Ai = (1 - d) * (lam * gamma * Ai + gamma * v + (1 - lm) / (1 - lam) * r);
    Bi = gamma * (v * d + Bi * (1 - d)) + r;
    tgt[i] = (float)(lam < 1 ? (1 - lam) * Ai + lm * Bi : Bi);
    *vsum += tgt[i];
  }
}

// The median of n values from its middle order statistics lo = x_(n/2 - 1) and hi = x_(n/2) (0-based; n odd:
// hi alone), and ∇Mimic (a)'s clip limit k x median
SIM_FN double shac_median(int n, float lo, float hi) { return (n % 2) ? (double)hi : 0.5 * ((double)lo + hi); }
SIM_FN double shac_clip_limit(double k, double median) { return k * median; }

// ∇Mimic (a) for one world: dL/da (dact, norm gnorm) scaled to norm lim when clip is on and gnorm > lim, kept
// in gtarget (the targets' gradient), then taken through the squashing tanh: dact <- dL/da (1 - a^2).
// Returns 1 when the world was clipped.
SIM_FN int shac_clip(float* dact, float gnorm, const float* act, int A, int clip, double lim, float* gtarget) {
  int scale = clip && gnorm > lim;
  float sc = scale ? (float)(lim / gnorm) : 1.0f;
  for (int j = 0; j < A; j++) {
    float d = dact[j];
    if (scale) d *= sc;
    gtarget[j] = d;
    dact[j] = d * (1 - act[j] * act[j]);
  }
  return scale;
}

// ∇Mimic (d)'s advantage of one sample, A = G - V_targ (float, as stored), and its statistics over the batch's
// finite samples: mean, population std (cnt: the number of finite samples), the normalized, clipped An
// (non-finite A: 0)
SIM_FN float shac_adv_raw(float tgt, float v) { return (float)((double)tgt - (double)v); }
SIM_FN double shac_adv_mean(double sum, double cnt) { return cnt > 0 ? sum / cnt : 0; }
SIM_FN double shac_sq_dev(float a, double mean) { return ((double)a - mean) * ((double)a - mean); }
SIM_FN double shac_adv_std(double var, double cnt) { return cnt > 0 ? sqrt(var / cnt) : 0; }
SIM_FN float shac_adv_norm(float a, double mean, double sd) {
  if (!isfinite(a)) return 0;
  double z = ((double)a - mean) / (sd + 1e-8);
  return (float)(z > 3 ? 3 : (z < -3 ? -3 : z));
}

// ∇Mimic (b), and (d) when zo (beta > 0): the action gradient g of one sample (A) becomes its target action
//   a* = clamp(mu - eta g / (|g| + 1e-8), -1, 1)                                              (zo = 0)
//   a* = clamp(mu + eta [(1 - beta) (-g / (|g| + 1e-8)) + beta An (a - mu) / sigma_eff], -1, 1) (zo = 1)
// with sz = shac_zo_scale(): eta beta / sigma_eff, sigma_eff = sigma sqrt(A). g = 0 drops the first-order term;
// without zo the sampled term is not even added (and eta (1 - 0) is eta exactly): (b)'s bits.
SIM_FN double shac_zo_scale(double eta, double beta, double sigma, int A) {
  return beta > 0 ? eta * beta / (sigma * sqrt((double)A)) : 0;
}
SIM_FN void shac_action_target(float* g, const float* mu, const float* act, int A, double eta, double beta,
                               double sz, int zo, float adv) {
  double n2 = 0;
  for (int j = 0; j < A; j++) n2 += (double)g[j] * g[j];
  double sc = n2 > 0 ? eta * (1 - beta) / (sqrt(n2) + 1e-8) : 0;
  double za = zo ? sz * (double)adv : 0;
  for (int j = 0; j < A; j++) {
    double a = (double)mu[j] - sc * (double)g[j];
    if (zo) a += za * ((double)act[j] - (double)mu[j]);
    g[j] = (float)(a > 1 ? 1 : (a < -1 ? -1 : a));
  }
}

// the target-action regression (0.5 mean over (t, w) of |y - a*|^2): *y <- its gradient (y - a*) / HN;
// returns the element's 0.5 (y - a*)^2
SIM_FN double shac_reg_grad(float* y, float tg, double HN) {
  double e = (double)*y - (double)tg;
  *y = (float)(e / HN);
  return 0.5 * e * e;
}

// a critic minibatch's MSE: *dy = 2 (y - target) / mb; returns (y - target)^2
SIM_FN double shac_mse_grad(float y, float tg, int mb, float* dy) {
  double e = (double)y - (double)tg;
  *dy = (float)(2 * e / mb);
  return e * e;
}

// the target critic's soft update: tau target + (1 - tau) critic
SIM_FN float shac_polyak(float targ, float critic, float tau) { return tau * targ + (1 - tau) * critic; }

// The checkpoint datasets (names, types, shapes: old checkpoints must keep loading), in order, as
// X(name, type, field of ShacStateRefs, rows, cols, when): rows and cols are expressions of r (a
// const ShacStateRefs*); a dataset is listed where `when` holds. The first group is the policy
// (`policy_only`). The arrays are where a checkpoint is written from and loaded into (each backend's own:
// the CPU's live arrays, the CUDA backend's host mirror).
typedef struct {
  int64_t na, nc, N, O, A, Oc;  // Oc: the critic's observation size
  float *actor, *ema, *critic, *targ, *adam_a_m, *adam_a_v, *adam_c_m, *adam_c_v;  // ema: NULL when off
  int64_t *adam_a_step, *adam_c_step;
  double *norm_count, *norm_mean, *norm_m2;  // NULL without obs normalization
  double *cnorm_count, *cnorm_mean, *cnorm_m2;  // the critic's own; NULL without a critic observation
  uint64_t* act_rng;
  double* noise;  // NULL unless shac.noise_correlation > 0
} ShacStateRefs;
#define SHAC_POLICY_STATE(X)                                                   \
  X("shac/actor", CK_F32, actor, r->na, 0, 1)                                  \
  X("shac/obs_norm/count", CK_F64, norm_count, 1, 0, r->norm_count != NULL)    \
  X("shac/obs_norm/mean", CK_F64, norm_mean, r->O, 0, r->norm_count != NULL)   \
  X("shac/obs_norm/m2", CK_F64, norm_m2, r->O, 0, r->norm_count != NULL)       \
  X("shac/ema", CK_F32, ema, r->na, 0, r->ema != NULL)
#define SHAC_TRAINING_STATE(X)                                                 \
  X("shac/critic", CK_F32, critic, r->nc, 0, 1)                                \
  X("shac/critic_target", CK_F32, targ, r->nc, 0, 1)                           \
  X("shac/adam_actor/m", CK_F32, adam_a_m, r->na, 0, 1)                        \
  X("shac/adam_actor/v", CK_F32, adam_a_v, r->na, 0, 1)                        \
  X("shac/adam_actor/step", CK_I64, adam_a_step, 1, 0, 1)                      \
  X("shac/adam_critic/m", CK_F32, adam_c_m, r->nc, 0, 1)                       \
  X("shac/adam_critic/v", CK_F32, adam_c_v, r->nc, 0, 1)                       \
  X("shac/adam_critic/step", CK_I64, adam_c_step, 1, 0, 1)                     \
  X("shac/action_rng", CK_I64, act_rng, r->N, 0, 1)                            \
  X("shac/action_noise", CK_F64, noise, r->N, r->A, r->noise != NULL)        \
  X("shac/critic_obs_norm/count", CK_F64, cnorm_count, 1, 0, r->cnorm_count != NULL)  \
  X("shac/critic_obs_norm/mean", CK_F64, cnorm_mean, r->Oc, 0, r->cnorm_count != NULL) \
  X("shac/critic_obs_norm/m2", CK_F64, cnorm_m2, r->Oc, 0, r->cnorm_count != NULL)


// the state datasets of r for AlgoOps.state
static inline int shac_state_add(const ShacStateRefs* r, CkTensor* t, int max, int policy_only) {
  int n = 0;
#define SHAC_STATE_ADD(name, type, field, rows, cols, when) \
  if (when) n = ckpt_add(t, n, max, name, type, r->field, rows, cols);
  SHAC_POLICY_STATE(SHAC_STATE_ADD)
  if (policy_only) return n;
  SHAC_TRAINING_STATE(SHAC_STATE_ADD)
#undef SHAC_STATE_ADD
  return n;
}

#endif
