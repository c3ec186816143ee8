// shac_cuda.cu: SHAC and the ∇Mimic options on the CUDA backend (algo_cuda.h). The algorithm of shac.c, step
// for step (see its header for the math), its per-sample formulas the same functions (algo/shac_math.h); here
// every step is a device operation on the legacy default stream:
//  1. rollout: per control step the actor (nn_cuda, the normalizer frozen) on the observations, k_act (squashed
//     Gaussian a = tanh(z + sigma eps) per world stream; correlated eps with shac.noise_correlation > 0, the
//     episode-end reset of its noise state in k_noise_reset), the fused env step (envs/env_cuda.h) recording the
//     engine tape and the pre/post-step states;
//  2. the target critic's values of the next observations and the loss coefficients (k_coef, one thread per
//     world), and, in one batched backward, the value terms' observation cotangents for every (t, w);
//  3. backward through time, t = H-1..0: env_cuda_step_backward (reward and bootstrap VJPs, the engine's
//     control-step backward, the act VJP; one warp per world), k_median (one block: non-finite count, the
//     median of |dL/da| over the worlds by selection, ∇Mimic (a)'s limit and clip count), k_clip, the actor's
//     recomputed forward and backward (input gradient), the normalizer backward and the observe VJP at the
//     pre-step state (env_cuda_pre_state_cotangent) for the cotangent carried to t-1;
//  then, as shac.c, the TD(lambda) targets of step 5 first (k_td, one thread per world; rollout data only) and,
//     with ∇Mimic (d) (nablamimic.zeroth_order_weight = beta > 0), the advantages: the target critic on the
//     rollout's normalized observations, then k_adv (one block: A = G - V_targ, its mean and std over the finite
//     samples in float64 by per-thread strided sums and the fixed tree, An = clip((A - mean) / (std + 1e-8),
//     -3, 3), metric advantage_abs_mean);
//  4. the actor update (Adam on the BPTT sum, or ∇Mimic (b): k_targets, with (d)'s sampled term when on, then
//     SHAC_REGRESSION_STEPS Adam steps),
//  5. critic minibatch passes on the TD(lambda) targets, k_polyak, normalizer update.
// Per-world task state and a critic observation as shac.c: the fused env step records the state blocks before and
// after the act (and the critic observation), env_cuda_step_backward / env_cuda_pre_state_cotangent carry the
// state's cotangent (cds) as the engine's; the critic, its target and its own normalizer read the critic
// observation.
// Scalars for the metrics accumulate in a device array (float64) and come back once, with the environment's
// episode statistics, at the end of the iteration.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo_cuda.h"
#include "algo/algo_cuda_util.cuh"
#include "algo/shac_math.h"
#include "envs/env_cuda.h"
#include "nn/nn_cuda.h"

// device scalars beyond the metrics
enum { D_CLOSS = M_COUNT, D_LIM, D_NSLOT };

// The device buffers, one allocation in this order, as X(name, type, count); a count of 0 leaves the pointer NULL.
// Time-major (H, N, ...) rollout arrays as shac.c's; the counts are expressions of create's locals.
#define SHAC_CUDA_BUFFERS(X)                                                                        \
  X(act_rng, uint64_t, n)                      /* per-world noise streams */                         \
  X(noise, double, s->rho > 0 ? n * a : 0)     /* (N, A) correlated noise state, rho > 0 only */     \
  X(obs, float, hn * o) X(nobs, float, hn * o) X(mu, float, hn * a) X(act, float, hn * a)            \
  X(cobs, float, s->priv ? hn * oc : 0) X(cnobs, float, s->priv ? hn * oc : 0) /* critic observations */ \
  X(pre_s, int32_t, hn * sw) X(post_s, int32_t, hn * sw) /* task state blocks, before / after the act */ \
  X(cds, float, n * sw)                        /* carried task-state cotangent (grad fields) */      \
  X(rew, float, hn) X(nxt_obs, float, hn * oc) X(nxt_nobs, float, hn * oc) X(nxt_val, float, hn)     \
  X(tgt, float, hn) X(coef_r, float, hn) X(coef_v, float, hn)                                        \
  X(term, uint8_t, hn) X(trunc, uint8_t, hn) X(nonfinite, uint8_t, n)                                \
  X(pre_q, float, hn * nq) X(pre_v, float, hn * nv) X(post_q, float, hn * nq) X(post_v, float, hn * nv) \
  X(post_u, float, hn * nub)                                                                         \
  X(dobs_boot, float, hn * oc) X(dx_boot, float, hn * oc) /* the value terms' cotangents */          \
  X(cq, float, n * nv) X(cv, float, n * nv)             /* carried pre-state cotangent */            \
  X(z, float, n * a) X(dact, float, n * a) X(gnorm, float, n)                                        \
  X(dx, float, n * o) X(dobs, float, n * om) X(xs, float, n * om) /* xs: aligned copy of an input */ \
  X(gsum, float, na)                                                                                 \
  X(gtarget, float, hn * a) X(ybuf, float, hn * a)                                                   \
  X(adv, float, s->beta > 0 ? hn : 0)          /* ∇Mimic (d): V_targ, then An */                     \
  X(cx, float, mbz * oc) X(cy, float, mbz) X(cdy, float, mbz) /* critic minibatch */                 \
  X(dpart, double, part)                       /* per-world / per-element partial sums */            \
  X(metrics, double, D_NSLOT)                                                                        \
  X(constr, long long, 2)                      /* adj_nconstraint sums at the start and end */
// The host mirror of the state (checkpoints; shac_state's arrays), as X(name, type, count)
#define SHAC_CUDA_MIRROR(X)                                                                      \
  X(h_actor, float, na) X(h_ema, float, na) X(h_am, float, na) X(h_av, float, na)                \
  X(h_critic, float, nc) X(h_targ, float, nc) X(h_cm, float, nc) X(h_cv, float, nc)              \
  X(h_nmean, double, o) X(h_nm2, double, o) X(h_rng, uint64_t, n)                                \
  X(h_cnmean, double, s->priv ? oc : 0) X(h_cnm2, double, s->priv ? oc : 0)                      \
  X(h_noise, double, s->rho > 0 ? n * a : 0)
#define SHAC_FIELD(name, type, count) type* name;

typedef struct {
  Cfg c;
  int N, O, A, H, nq, nv, nu, nub, fs, nmb, mb, regress;
  int Oc, priv, sw;  // the critic's observation size, the task's own critic observation, state block words
  double clip_k, eta, sigma, beta;  // beta: ∇Mimic (d)
  double rho, rho_c;  // shac.noise_correlation and sqrt(1 - rho^2) (shac.c's)
  EnvCuda* E;
  NnCudaMlp *actor_lin, *actor, *critic, *targ;  // actor_lin: the actor without its output tanh (shac.c)
  NnCudaNorm* norm;
  NnCudaNorm* cnorm;  // the critic's: its own with a critic observation, else norm
  NnCudaAdam *adam_a, *adam_c;
  NnAdamConfig acfg;
  int64_t na, nc;
  int64_t asteps;    // the actor Adam's steps (host count, for the learning-rate metric)
  int norm_started;  // the normalizer has statistics (shac.c's first-iteration update done)
  cudaEvent_t ev[4];
  char* err;  // the message buffer of the API call in progress (its caller's; NULL: none)
  size_t errlen;
  SHAC_CUDA_MIRROR(SHAC_FIELD)
  int64_t h_astep, h_cstep;
  double h_ncount, h_cncount;
  double* h_metrics;  // pinned (D_NSLOT)
  void* block;        // the device buffers
  SHAC_CUDA_BUFFERS(SHAC_FIELD)
} ShacCuda;

// ---- kernels ----
// step 1's actions per world (shac_act), the world's stream kept in a register
static __global__ void k_act(const float* __restrict__ z, int N, int A, double sigma, double rho, double rho_c,
                             uint64_t* rng, double* noise, float* mu, float* act) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  uint64_t r = rng[w];
  size_t i = (size_t)w * A;
  shac_act(z + i, A, sigma, rho, rho_c, &r, noise ? noise + i : NULL, mu + i, act + i);
  rng[w] = r;
}

// the correlated noise state of the worlds whose episode ended at this step (terminated or truncated) to 0
static __global__ void k_noise_reset(int N, int A, const uint8_t* __restrict__ term, const uint8_t* __restrict__ trunc,
                                     double* noise) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w < N) shac_noise_end(term[w] | trunc[w], A, noise + (size_t)w * A);
}

// step 2 per world (shac_coef): the loss coefficients and the world's part of the actor loss
static __global__ void k_coef(int N, int H, double gamma, const float* __restrict__ rew,
                              const uint8_t* __restrict__ term, const uint8_t* __restrict__ trunc, float* nxt_val,
                              float* coef_r, float* coef_v, double* loss_w) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  double loss = 0;
  shac_coef(w, N, H, gamma, 1.0 / ((double)H * N), rew, term, trunc, nxt_val, coef_r, coef_v, &loss);
  loss_w[w] = loss;
}

// one block: non-finite count, median of |dL/da| over the worlds, the clip limit and the clip count
static __global__ void k_median(const float* __restrict__ gnorm, const uint8_t* __restrict__ nonfinite, int N,
                                double clip_k, double* M) {
  __shared__ int sh[AC_RED_THREADS];
  int nf = 0;
  for (int w = threadIdx.x; w < N; w += AC_RED_THREADS) nf += nonfinite[w];
  nf = ac_block_sum(nf, sh);
  float hi = ac_block_select(gnorm, N, N / 2, sh);
  float lo = (N % 2) ? hi : ac_block_select(gnorm, N, N / 2 - 1, sh);
  double med = shac_median(N, lo, hi), lim = shac_clip_limit(clip_k, med);
  int nc = 0;
  if (clip_k > 0)
    for (int w = threadIdx.x; w < N; w += AC_RED_THREADS) nc += gnorm[w] > lim;
  nc = ac_block_sum(nc, sh);
  if (threadIdx.x == 0) {
    M[M_NONFINITE] += nf;
    M[M_AGMED] += med;
    M[M_AGCLIP] += nc;
    M[D_LIM] = lim;
  }
}

// ∇Mimic (a) per world (shac_clip): the clip at the limit, dL/da kept for the targets, then through tanh(z + noise)
static __global__ void k_clip(float* dact, const float* __restrict__ gnorm, const float* __restrict__ act, int N, int A,
                              int clip, const double* __restrict__ M, float* gtarget) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  size_t i = (size_t)w * A;
  shac_clip(dact + i, gnorm[w], act + i, A, clip, M[D_LIM], gtarget + i);
}

// ∇Mimic (d) (shac.c's shac_advantages), one block over the n = H N samples: v holds V_targ(s_t) and gets
// A = tgt - v (float, as shac.c), then An = clip((A - mean) / (std + 1e-8), -3, 3) with the mean and (population)
// std over the finite A (float64: per-thread strided sums, then ac_block_sum's fixed tree); non-finite A: An = 0.
// M[M_ADV] = mean |A| over the finite ones (0 if none). Each thread reads back only the elements it wrote.
static __global__ void k_adv(const float* __restrict__ tgt, float* v, long long n, double* M) {
  __shared__ double sh[AC_RED_THREADS];
  double sum = 0, sabs = 0, cnt = 0, var = 0;
  for (long long i = threadIdx.x; i < n; i += AC_RED_THREADS) {
    float a = shac_adv_raw(tgt[i], v[i]);
    v[i] = a;
    if (!isfinite(a)) continue;
    sum += a, sabs += fabs((double)a), cnt += 1;
  }
  sum = ac_block_sum(sum, sh);
  sabs = ac_block_sum(sabs, sh);
  cnt = ac_block_sum(cnt, sh);
  double mean = shac_adv_mean(sum, cnt);
  for (long long i = threadIdx.x; i < n; i += AC_RED_THREADS)
    if (isfinite(v[i])) var += shac_sq_dev(v[i], mean);
  var = ac_block_sum(var, sh);
  double sd = shac_adv_std(var, cnt);
  for (long long i = threadIdx.x; i < n; i += AC_RED_THREADS) v[i] = shac_adv_norm(v[i], mean, sd);
  if (threadIdx.x == 0) M[M_ADV] = cnt > 0 ? sabs / cnt : 0;
}

// ∇Mimic (b), and (d) when adv is non-NULL (beta > 0), per sample (shac_action_target); sz = shac_zo_scale()
static __global__ void k_targets(float* g, const float* __restrict__ mu, const float* __restrict__ act,
                                 const float* __restrict__ adv, long long n, int A, double eta, double beta,
                                 double sz) {
  long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  shac_action_target(g + r * A, mu + r * A, act + r * A, A, eta, beta, sz, adv != NULL, adv ? adv[r] : 0);
}

// the target-action regression's gradient in place of y, part = 0.5 (y - target)^2 (shac_reg_grad)
static __global__ void k_reg_grad(float* y, const float* __restrict__ tg, long long n, double HN, double* part) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) part[i] = shac_reg_grad(&y[i], tg[i], HN);
}

// critic minibatch (shac_mse_grad): dy = 2 (y - target) / mb, part = (y - target)^2
static __global__ void k_mse(const float* __restrict__ y, const float* __restrict__ tg, int mb, float* dy,
                             double* part) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < mb) part[k] = shac_mse_grad(y[k], tg[k], mb, &dy[k]);
}

// TD(lambda) targets per world (shac_td) and the world's sum of targets
static __global__ void k_td(int N, int H, double gamma, double lam, const float* __restrict__ rew,
                            const float* __restrict__ nxt_val, const uint8_t* __restrict__ term,
                            const uint8_t* __restrict__ trunc, float* tgt, double* vsum_w) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  double vs = 0;
  shac_td(w, N, H, gamma, lam, rew, nxt_val, term, trunc, tgt, &vs);
  vsum_w[w] = vs;
}

static __global__ void k_polyak(float* tp, const float* __restrict__ cp, long long n, float tau) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tp[i] = shac_polyak(tp[i], cp[i], tau);
}

static __global__ void k_scalar_add(double* dst, const double* __restrict__ src, double scale) { *dst += scale * *src; }
static __global__ void k_scalar_set(double* dst, const double* __restrict__ src, double scale) { *dst = scale * *src; }
static __global__ void k_constr(double* dst, const long long* c) { *dst = (double)(c[1] - c[0]); }

// ---- host ----
static int mirror_download(ShacCuda* s);
static void shac_cuda_destroy(void* p) {
  ShacCuda* s = (ShacCuda*)p;
  if (!s) return;
  env_cuda_destroy(s->E);
  nn_cuda_mlp_destroy(s->actor_lin), nn_cuda_mlp_destroy(s->actor), nn_cuda_mlp_destroy(s->critic);
  nn_cuda_mlp_destroy(s->targ);
  if (s->cnorm != s->norm) nn_cuda_norm_destroy(s->cnorm);
  nn_cuda_norm_destroy(s->norm);
  nn_cuda_adam_destroy(s->adam_a), nn_cuda_adam_destroy(s->adam_c);
  for (int i = 0; i < 4; i++)
    if (s->ev[i]) cudaEventDestroy(s->ev[i]);
  cudaFree(s->block);
  if (s->h_metrics) cudaFreeHost(s->h_metrics);
#define SHAC_FREE(name, type, count) free(s->name);
  SHAC_CUDA_MIRROR(SHAC_FREE)
#undef SHAC_FREE
  free(s);
}

static int shac_cuda_create(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen) {
  *out = NULL;
  ShacCuda* s = (ShacCuda*)calloc(1, sizeof(ShacCuda));
  if (!s) return -1;
  s->c = *c;
  s->N = env->nworld, s->O = env->obs_dim, s->A = env->act_dim, s->H = (int)c->algo_horizon;
  s->nq = env->m->nq, s->nv = env->m->nv, s->nu = env->m->nu, s->nub = s->nu ? s->nu : 1;
  s->fs = env->task->info.frame_skip;
  s->nmb = (int)c->shac_critic_minibatches;
  s->clip_k = c->nablamimic_action_grad_clip_k, s->eta = c->nablamimic_target_action_step;
  s->regress = s->eta > 0;
  s->sigma = c->policy_init_noise_std;
  s->beta = c->nablamimic_zeroth_order_weight;
  s->rho = c->shac_noise_correlation, s->rho_c = sqrt(1 - s->rho * s->rho);
  int64_t HN = (int64_t)s->H * s->N;
  if (s->beta > 0 && !s->regress) {  // shac.c's check
    snprintf(err, errlen, "shac: nablamimic.zeroth_order_weight > 0 needs nablamimic.target_action_step > 0");
    free(s);
    return -1;
  }
  s->Oc = env->critic_obs_dim, s->priv = env->task->info.critic != NULL;
  if (HN % s->nmb || HN > (1 << 28)) {
    snprintf(err, errlen, "shac: horizon x num_envs (%lld) must be divisible by shac.critic_minibatches (%d)",
             (long long)HN, s->nmb);
    free(s);
    return -1;
  }
  s->mb = (int)(HN / s->nmb);
  if (env_enable_gradients(env, s->H * s->fs)) {
    snprintf(err, errlen, "shac: cannot enable the engine's gradients");
    free(s);
    return -1;
  }
  if (env_cuda_create(&s->E, env, err, errlen)) {
    free(s);
    return -1;
  }
  env_cuda_set_staged(s->E, !strcmp(c->run_cuda_launch, "staged") ? 2 : 0);
  env_cuda_set_streams(s->E, (int)c->run_cuda_streams);
  int maxb = (int)HN, N = s->N, O = s->O, A = s->A;
  s->sw = env_cuda_state_words(s->E);
  NnConfig ac, cc;
  algo_net_config(&ac, c, &c->policy_actor_hidden, O, A, NN_ACT_TANH);
  algo_net_config(&cc, c, &c->policy_critic_hidden, s->Oc, 1, NN_ACT_NONE);
  NnConfig lc = ac;
  lc.out_act = NN_ACT_NONE;
  int rc = nn_cuda_mlp_create(&s->actor, &ac, maxb > N ? maxb : N, 0, NULL);
  if (!rc) rc = nn_cuda_mlp_create(&s->actor_lin, &lc, N, 0, NULL);
  if (!rc) rc = nn_cuda_mlp_create(&s->critic, &cc, maxb, 0, NULL);
  if (!rc) rc = nn_cuda_mlp_create(&s->targ, &cc, maxb, 0, NULL);
  if (!rc && c->policy_obs_norm) rc = nn_cuda_norm_create(&s->norm, O, 1e-8, c->policy_obs_clip, maxb, NULL);
  s->cnorm = s->norm;
  if (!rc && c->policy_obs_norm && s->priv)
    rc = nn_cuda_norm_create(&s->cnorm, s->Oc, 1e-8, c->policy_obs_clip, maxb, NULL);
  uint64_t seed = (uint64_t)c->run_seed;
  if (!rc) rc = nn_cuda_mlp_init(s->actor, shac_seed(seed, 1));
  if (!rc) rc = nn_cuda_mlp_init(s->critic, shac_seed(seed, 2));
  if (rc) {
    snprintf(err, errlen, "shac (cuda): network setup failed: %s", nn_strerror(rc));
    shac_cuda_destroy(s);
    return -1;
  }
  s->na = nn_cuda_mlp_param_count(s->actor), s->nc = nn_cuda_mlp_param_count(s->critic);
  int linear = !strcmp(c->shac_lr_schedule, "linear");
  int64_t iters = c->shac_lr_schedule_iterations;
  NnAdamConfig aa;
  memset(&aa, 0, sizeof(aa));
  aa.lr = c->shac_actor_lr, aa.beta1 = c->shac_beta1, aa.beta2 = c->shac_beta2, aa.eps = 1e-8;
  aa.max_grad_norm = c->shac_actor_grad_norm;
  aa.schedule = linear ? NN_LR_LINEAR : NN_LR_CONSTANT, aa.lr_end = 1e-5;
  aa.total_steps = iters * (s->regress ? SHAC_REGRESSION_STEPS : 1);
  aa.ema_decay = c->nablamimic_policy_ema_decay;
  s->acfg = aa;
  NnAdamConfig ca = aa;
  ca.lr = c->shac_critic_lr, ca.max_grad_norm = c->shac_critic_grad_norm, ca.ema_decay = 0;
  ca.total_steps = iters * c->shac_critic_iterations * s->nmb;
  rc = nn_cuda_adam_create(&s->adam_a, &aa, s->na, nn_cuda_mlp_params(s->actor), NULL);
  if (!rc) rc = nn_cuda_adam_create(&s->adam_c, &ca, s->nc, nn_cuda_mlp_params(s->critic), NULL);
  // every batch size planned now (no planning inside the iterations)
  if (!rc) rc = nn_cuda_mlp_prepare(s->actor_lin, N);
  if (!rc) rc = nn_cuda_mlp_prepare(s->actor, N);
  if (!rc && s->regress) rc = nn_cuda_mlp_prepare(s->actor, maxb);
  if (!rc) rc = nn_cuda_mlp_prepare(s->critic, s->mb);
  if (!rc) rc = nn_cuda_mlp_prepare(s->targ, maxb);
  if (rc) {
    snprintf(err, errlen, "shac (cuda): setup failed: %s", nn_strerror(rc));
    shac_cuda_destroy(s);
    return -1;
  }
  // device buffers: one allocation (SHAC_CUDA_BUFFERS), and the host mirror
  size_t hn = (size_t)HN, n = (size_t)N, nq = (size_t)s->nq, nv = (size_t)s->nv, nub = (size_t)s->nub;
  size_t a = (size_t)A, o = (size_t)O, mbz = (size_t)s->mb, na = (size_t)s->na, nc = (size_t)s->nc;
  size_t oc = (size_t)s->Oc, om = o > oc ? o : oc, sw = (size_t)s->sw;
  size_t part = hn * a > n ? hn * a : n;
  part = part > mbz ? part : mbz;
  size_t sz = 0;
#define SHAC_SIZE(name, type, count) sz += ac_al(sizeof(type) * (count));
  SHAC_CUDA_BUFFERS(SHAC_SIZE)
#undef SHAC_SIZE
  int ok = cudaMalloc(&s->block, sz) == cudaSuccess && cudaMemset(s->block, 0, sz) == cudaSuccess;
  for (int i = 0; i < 4 && ok; i++) ok = cudaEventCreate(&s->ev[i]) == cudaSuccess;
  ok = ok && cudaMallocHost((void**)&s->h_metrics, 8 * D_NSLOT) == cudaSuccess;
  if (!ok) {
    snprintf(err, errlen, "shac (cuda): out of device memory (%zu bytes)", sz);
    shac_cuda_destroy(s);
    return -1;
  }
  size_t at = 0;
#define SHAC_TAKE(name, type, count) \
  s->name = (count) != 0 ? (type*)((char*)s->block + at) : NULL, at += ac_al(sizeof(type) * (count));
  SHAC_CUDA_BUFFERS(SHAC_TAKE)
#undef SHAC_TAKE
#define SHAC_HOST(name, type, count) \
  if ((count) != 0 && !(s->name = (type*)calloc((count), sizeof(type)))) ok = 0;
  SHAC_CUDA_MIRROR(SHAC_HOST)
#undef SHAC_HOST
  if (!ok) {
    snprintf(err, errlen, "shac (cuda): out of memory");
    shac_cuda_destroy(s);
    return -1;
  }
  for (int w = 0; w < N; w++) s->h_rng[w] = shac_seed(shac_seed(seed, 4), (uint64_t)w);
  // the target critic starts as the critic; the noise streams as shac.c's
  if (cudaMemcpy(nn_cuda_mlp_params(s->targ), nn_cuda_mlp_params(s->critic), 4 * nc, cudaMemcpyDeviceToDevice) ||
      cudaMemcpy(s->act_rng, s->h_rng, 8 * n, cudaMemcpyHostToDevice)) {
    snprintf(err, errlen, "shac (cuda): %s", cudaGetErrorString(cudaGetLastError()));
    shac_cuda_destroy(s);
    return -1;
  }
  s->err = err, s->errlen = errlen;
  if (mirror_download(s)) {
    shac_cuda_destroy(s);
    return -1;
  }
  *out = s;
  return 0;
}

// the actor's (nm = s->norm, dim O) or the critic's (s->cnorm, Oc) normalizer; NULL: the identity
static int normalize(ShacCuda* s, NnCudaNorm* nm, int dim, const float* x, int n, float* y) {
  if (nm)
    AC_NN(nn_cuda_norm_apply(nm, x, n, y));
  else
    AC_CK(cudaMemcpyAsync(y, x, sizeof(float) * (size_t)n * dim, cudaMemcpyDeviceToDevice, 0));
  return 0;
}
static int normalize_backward(ShacCuda* s, NnCudaNorm* nm, int dim, const float* x, const float* dy, int n,
                              float* dx) {
  if (nm)
    AC_NN(nn_cuda_norm_backward(nm, x, dy, n, dx));
  else
    AC_CK(cudaMemcpyAsync(dx, dy, sizeof(float) * (size_t)n * dim, cudaMemcpyDeviceToDevice, 0));
  return 0;
}

// steps 1-3 (shac.c's shac_rollout_grad): rollout, loss, backward through time; scalars into s->metrics
static int rollout_grad(ShacCuda* s) {
  const int N = s->N, O = s->O, A = s->A, H = s->H, nq = s->nq, nv = s->nv, nub = s->nub, Oc = s->Oc, sw = s->sw;
  const size_t HN = (size_t)H * N;
  double* M = s->metrics;
  AC_CK(cudaMemsetAsync(M, 0, 8 * D_NSLOT, 0));
  AC_CK(cudaMemcpyAsync(nn_cuda_mlp_params(s->actor_lin), nn_cuda_mlp_params(s->actor), 4 * (size_t)s->na,
                        cudaMemcpyDeviceToDevice, 0));
  if (s->norm && !s->norm_started) AC_NN(nn_cuda_norm_update(s->norm, env_cuda_obs(s->E), N));  // first iteration
  if (s->priv && s->cnorm && !s->norm_started) AC_NN(nn_cuda_norm_update(s->cnorm, env_cuda_critic_obs(s->E), N));
  s->norm_started = 1;
  AC_ENV(env_cuda_constraint_evals(s->E, s->constr));
  AC_ENV(env_cuda_tape_clear(s->E));
  AC_CK(cudaEventRecord(s->ev[0], 0));
  // ---- 1. rollout (tape on) ----
  const float* actor_lin_p = nn_cuda_mlp_params(s->actor_lin);
  for (int t = 0; t < H; t++) {
    size_t base = (size_t)t * N;
    float* ob = s->obs + base * O;
    float* nob = s->nobs + base * O;
    AC_CK(cudaMemcpyAsync(ob, env_cuda_obs(s->E), sizeof(float) * N * O, cudaMemcpyDeviceToDevice, 0));
    if (s->priv)
      AC_CK(cudaMemcpyAsync(s->cobs + base * Oc, env_cuda_critic_obs(s->E), sizeof(float) * N * Oc,
                            cudaMemcpyDeviceToDevice, 0));
    if (normalize(s, s->norm, O, ob, N, nob)) return -1;
    AC_NN(nn_cuda_mlp_infer(s->actor_lin, actor_lin_p, ac_aligned(nob, (long long)N * O, s->xs), N, s->z));
    k_act<<<ac_blocks(N), AC_THREADS>>>(s->z, N, A, s->sigma, s->rho, s->rho_c, s->act_rng, s->noise,
                                        s->mu + base * A, s->act + base * A);
    AC_LAUNCHED();
    EnvCudaRecord rec;
    rec.pre_qpos = s->pre_q + base * nq, rec.pre_qvel = s->pre_v + base * nv;
    rec.post_qpos = s->post_q + base * nq, rec.post_qvel = s->post_v + base * nv;
    rec.post_ctrl = s->post_u + base * nub;
    rec.next_obs = NULL, rec.next_cobs = s->nxt_obs + base * Oc, rec.reward = s->rew + base;
    rec.pre_state = sw ? s->pre_s + base * sw : NULL, rec.post_state = sw ? s->post_s + base * sw : NULL;
    rec.terminated = s->term + base, rec.truncated = s->trunc + base;
    AC_ENV(env_cuda_step(s->E, s->act + base * A, &rec, 1));
    if (s->rho > 0) {  // shac.c: the noise state of a world whose episode ended at this step restarts at 0
      k_noise_reset<<<ac_blocks(N), AC_THREADS>>>(N, A, s->term + base, s->trunc + base, s->noise);
      AC_LAUNCHED();
    }
  }
  AC_CK(cudaEventRecord(s->ev[1], 0));
  // ---- 2. values of the next states, loss coefficients, the value terms' observation cotangents ----
  if (normalize(s, s->cnorm, Oc, s->nxt_obs, (int)HN, s->nxt_nobs)) return -1;
  if (s->priv && normalize(s, s->cnorm, Oc, s->cobs, (int)HN, s->cnobs)) return -1;  // the critic's inputs
  AC_NN(nn_cuda_mlp_forward(s->targ, s->nxt_nobs, (int)HN, s->nxt_val));
  k_coef<<<ac_blocks(N), AC_THREADS>>>(N, H, s->c.algo_gamma, s->rew, s->term, s->trunc, s->nxt_val, s->coef_r,
                                       s->coef_v, s->dpart);
  AC_LAUNCHED();
  AC_CK(ac_sum(s->dpart, N, 1.0, 0, M + M_ACTOR));
  AC_NN(nn_cuda_mlp_backward(s->targ, s->coef_v, s->dx_boot));  // rows with coef_v = 0 give 0 (and are skipped)
  if (normalize_backward(s, s->cnorm, Oc, s->nxt_obs, s->dx_boot, (int)HN, s->dobs_boot)) return -1;
  // ---- 3. backward through time ----
  AC_CK(cudaMemsetAsync(s->cq, 0, 4 * (size_t)N * nv, 0));
  AC_CK(cudaMemsetAsync(s->cv, 0, 4 * (size_t)N * nv, 0));
  if (sw) AC_CK(cudaMemsetAsync(s->cds, 0, 4 * (size_t)N * sw, 0));
  AC_CK(cudaMemsetAsync(s->gsum, 0, 4 * (size_t)s->na, 0));
  for (int t = H - 1; t >= 0; t--) {
    size_t base = (size_t)t * N;
    EnvCudaStepGrad g;
    g.pre_qpos = s->pre_q + base * nq, g.pre_qvel = s->pre_v + base * nv;
    g.post_qpos = s->post_q + base * nq, g.post_qvel = s->post_v + base * nv, g.post_ctrl = s->post_u + base * nub;
    g.act = s->act + base * A, g.terminated = s->term + base, g.truncated = s->trunc + base;
    g.reward_cot = s->coef_r + base, g.value_mask = s->coef_v + base, g.next_obs_cot = s->dobs_boot + base * Oc;
    g.pre_state = sw ? s->pre_s + base * sw : NULL, g.post_state = sw ? s->post_s + base * sw : NULL;
    g.cot_state = sw ? s->cds : NULL;
    g.cot_qpos = s->cq, g.cot_qvel = s->cv;
    g.act_cot = s->dact, g.act_cot_norm = s->gnorm, g.nonfinite = s->nonfinite;
    AC_ENV(env_cuda_step_backward(s->E, &g));
    // ∇Mimic (a): per-world clip at k x the median norm over the worlds of this step
    k_median<<<1, AC_RED_THREADS>>>(s->gnorm, s->nonfinite, N, s->clip_k, M);
    AC_LAUNCHED();
    k_clip<<<ac_blocks(N), AC_THREADS>>>(s->dact, s->gnorm, s->act + base * A, N, A, s->clip_k > 0, M,
                                         s->gtarget + base * A);
    AC_LAUNCHED();
    // the policy: recomputed forward, backward with the input gradient
    AC_NN(nn_cuda_mlp_forward(s->actor_lin, ac_aligned(s->nobs + base * O, (long long)N * O, s->xs), N, s->z));
    AC_NN(nn_cuda_mlp_backward(s->actor_lin, s->dact, s->dx));
    if (!s->regress) {
      ac_k_add<<<ac_blocks(s->na), AC_THREADS>>>(s->gsum, nn_cuda_mlp_grads(s->actor_lin), s->na);
      AC_LAUNCHED();
    }
    if (normalize_backward(s, s->norm, O, s->obs + base * O, s->dx, N, s->dobs)) return -1;
    AC_ENV(env_cuda_pre_state_cotangent(s->E, s->pre_q + base * nq, s->pre_v + base * nv, s->post_u + base * nub,
                                        sw ? s->pre_s + base * sw : NULL, s->dobs, s->cq, s->cv,
                                        sw ? s->cds : NULL));
  }
  AC_ENV(env_cuda_constraint_evals(s->E, s->constr + 1));
  k_constr<<<1, 1>>>(M + M_CONSTR, s->constr);
  AC_LAUNCHED();
  AC_CK(cudaEventRecord(s->ev[2], 0));
  return 0;
}

// TD(lambda) targets for the critic (step 5) and, with ∇Mimic (d), the actor's advantages (rollout data only;
// shac.c's order: before the actor update)
static int td_advantages(ShacCuda* s) {
  const int N = s->N, H = s->H;
  const long long HN = (long long)H * N;
  double* M = s->metrics;
  k_td<<<ac_blocks(N), AC_THREADS>>>(N, H, s->c.algo_gamma, s->c.algo_lambda, s->rew, s->nxt_val, s->term, s->trunc,
                                     s->tgt, s->dpart);
  AC_LAUNCHED();
  AC_CK(ac_sum(s->dpart, N, 1.0 / (double)HN, 0, M + M_VALUE));
  if (s->beta > 0) {
    AC_NN(nn_cuda_mlp_forward(s->targ, s->priv ? s->cnobs : s->nobs, (int)HN, s->adv));  // V_targ(s_t)
    k_adv<<<1, AC_RED_THREADS>>>(s->tgt, s->adv, HN, M);
    AC_LAUNCHED();
  }
  return 0;
}

// ∇Mimic (b) (+ (d) when beta > 0): the action gradients in s->gtarget become the target actions
static int action_targets(ShacCuda* s) {
  const long long HN = (long long)s->H * s->N;
  double sz = shac_zo_scale(s->eta, s->beta, s->sigma, s->A);
  // s->adv is NULL unless beta > 0
  k_targets<<<ac_blocks(HN), AC_THREADS>>>(s->gtarget, s->mu, s->act, s->adv, HN, s->A, s->eta, s->beta, sz);
  AC_LAUNCHED();
  return 0;
}

static int shac_cuda_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm, char* err, size_t errlen) {
  ShacCuda* s = (ShacCuda*)p;
  s->err = err, s->errlen = errlen;
  const int N = s->N, A = s->A, H = s->H, Oc = s->Oc;
  const long long HN = (long long)H * N;
  double* M = s->metrics;
  float* actor_p = nn_cuda_mlp_params(s->actor);
  const float* cin = s->priv ? s->cnobs : s->nobs;  // the critic's normalized inputs
  if (rollout_grad(s)) return -1;
  if (td_advantages(s)) return -1;
  // ---- 4. actor update ----
  if (!s->regress) {
    AC_NN(nn_cuda_adam_step(s->adam_a, actor_p, s->gsum));
    s->asteps++;
    k_scalar_set<<<1, 1>>>(M + M_GRADNORM, nn_cuda_adam_grad_norm_dev(s->adam_a), 1.0);
    AC_LAUNCHED();
  } else {
    // ∇Mimic (b) (+ (d)): fixed targets, then regression steps (full batch)
    if (action_targets(s)) return -1;
    for (int k = 0; k < SHAC_REGRESSION_STEPS; k++) {
      AC_NN(nn_cuda_mlp_forward(s->actor, s->nobs, (int)HN, s->ybuf));
      k_reg_grad<<<ac_blocks(HN * A), AC_THREADS>>>(s->ybuf, s->gtarget, HN * A, (double)HN, s->dpart);
      AC_LAUNCHED();
      if (k == 0) AC_CK(ac_sum(s->dpart, HN * A, 1.0 / (double)HN, 0, M + M_REG));
      AC_NN(nn_cuda_mlp_backward(s->actor, s->ybuf, NULL));
      AC_NN(nn_cuda_adam_step(s->adam_a, actor_p, nn_cuda_mlp_grads(s->actor)));
      s->asteps++;
      k_scalar_add<<<1, 1>>>(M + M_GRADNORM, nn_cuda_adam_grad_norm_dev(s->adam_a), 1.0 / SHAC_REGRESSION_STEPS);
      AC_LAUNCHED();
    }
  }
  // ---- 5. critic: minibatch passes on the TD(lambda) targets (computed above), target update ----
  float* cp = nn_cuda_mlp_params(s->critic);
  const int mb = s->mb;
  const int iters = (int)s->c.shac_critic_iterations;
  for (int it = 0; it < iters; it++) {
    for (int b = 0; b < s->nmb; b++) {
      size_t off = (size_t)b * mb;
      AC_NN(nn_cuda_mlp_forward(s->critic, ac_aligned(cin + off * Oc, (long long)mb * Oc, s->cx), mb, s->cy));
      k_mse<<<ac_blocks(mb), AC_THREADS>>>(s->cy, s->tgt + off, mb, s->cdy, s->dpart);
      AC_LAUNCHED();
      if (it == iters - 1) AC_CK(ac_sum(s->dpart, mb, 1.0, b > 0, M + D_CLOSS));  // the last pass's loss
      AC_NN(nn_cuda_mlp_backward(s->critic, s->cdy, NULL));
      AC_NN(nn_cuda_adam_step(s->adam_c, cp, nn_cuda_mlp_grads(s->critic)));
    }
  }
  k_scalar_set<<<1, 1>>>(M + M_CRITIC, M + D_CLOSS, 1.0 / (double)HN);
  AC_LAUNCHED();
  k_polyak<<<ac_blocks(s->nc), AC_THREADS>>>(nn_cuda_mlp_params(s->targ), cp, s->nc, (float)s->c.shac_target_tau);
  AC_LAUNCHED();
  // normalizer: the rollout's observations (frozen during the iteration, as DiffRL)
  if (s->norm) AC_NN(nn_cuda_norm_update(s->norm, s->obs, (int)HN));
  if (s->priv && s->cnorm) AC_NN(nn_cuda_norm_update(s->cnorm, s->cobs, (int)HN));
  AC_CK(cudaEventRecord(s->ev[3], 0));
  // ---- the logged scalars, once ----
  AC_ENV(env_cuda_stats_begin(s->E));
  AC_CK(cudaMemcpyAsync(s->h_metrics, M, 8 * D_NSLOT, cudaMemcpyDeviceToHost, 0));
  AC_CK(cudaStreamSynchronize(0));
  env_cuda_stats_end(s->E, env, NULL, NULL);
  for (int k = 0; k < M_COUNT; k++) metrics[k] = s->h_metrics[k];
  metrics[M_AGMED] /= H;
  metrics[M_AGCLIP] /= (double)HN;
  metrics[M_LR] = nn_adam_lr(&s->acfg, s->asteps);
  tm->sim += ac_elapsed(s->ev[0], s->ev[1]);
  tm->backward += ac_elapsed(s->ev[1], s->ev[2]);
  tm->networks += ac_elapsed(s->ev[2], s->ev[3]);
  return 0;
}

static int shac_cuda_state(void* p, CkTensor* t, int max, int policy_only) {
  ShacCuda* s = (ShacCuda*)p;
  ShacStateRefs r;
  memset(&r, 0, sizeof(r));
  r.na = s->na, r.nc = s->nc, r.N = s->N, r.O = s->O, r.A = s->A, r.Oc = s->Oc;
  if (s->priv && s->cnorm) r.cnorm_count = &s->h_cncount, r.cnorm_mean = s->h_cnmean, r.cnorm_m2 = s->h_cnm2;
  r.actor = s->h_actor, r.ema = s->acfg.ema_decay > 0 ? s->h_ema : NULL, r.critic = s->h_critic, r.targ = s->h_targ;
  if (s->norm) r.norm_count = &s->h_ncount, r.norm_mean = s->h_nmean, r.norm_m2 = s->h_nm2;
  r.adam_a_m = s->h_am, r.adam_a_v = s->h_av, r.adam_a_step = &s->h_astep;
  r.adam_c_m = s->h_cm, r.adam_c_v = s->h_cv, r.adam_c_step = &s->h_cstep;
  r.act_rng = s->h_rng, r.noise = s->h_noise;
  return shac_state_add(&r, t, max, policy_only);
}

// the algorithm's device state -> host mirror (create fills the mirror once, so that sync(0) of a fresh run
// uploads what the device already holds)
static int mirror_download(ShacCuda* s) {
  AC_NN(nn_cuda_mlp_get_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_get_params(s->critic, s->h_critic));
  AC_NN(nn_cuda_mlp_get_params(s->targ, s->h_targ));
  AC_NN(nn_cuda_adam_download(s->adam_a, s->h_am, s->h_av, s->acfg.ema_decay > 0 ? s->h_ema : NULL, &s->h_astep, NULL));
  AC_NN(nn_cuda_adam_download(s->adam_c, s->h_cm, s->h_cv, NULL, &s->h_cstep, NULL));
  if (s->norm) AC_NN(nn_cuda_norm_download(s->norm, &s->h_ncount, s->h_nmean, s->h_nm2));
  if (s->priv && s->cnorm) AC_NN(nn_cuda_norm_download(s->cnorm, &s->h_cncount, s->h_cnmean, s->h_cnm2));
  AC_CK(cudaMemcpy(s->h_rng, s->act_rng, 8 * (size_t)s->N, cudaMemcpyDeviceToHost));
  if (s->h_noise) AC_CK(cudaMemcpy(s->h_noise, s->noise, 8 * (size_t)s->N * s->A, cudaMemcpyDeviceToHost));
  return 0;
}

static int shac_cuda_sync(void* p, EnvBatch* env, int to_host, char* err, size_t errlen) {
  ShacCuda* s = (ShacCuda*)p;
  s->err = err, s->errlen = errlen;
  if (to_host) {
    if (mirror_download(s)) return -1;
    AC_ENV(env_cuda_download(s->E, env));
    return 0;
  }
  AC_NN(nn_cuda_mlp_set_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_set_params(s->critic, s->h_critic));
  AC_NN(nn_cuda_mlp_set_params(s->targ, s->h_targ));
  AC_NN(nn_cuda_adam_upload(s->adam_a, s->h_am, s->h_av, s->acfg.ema_decay > 0 ? s->h_ema : NULL, &s->h_astep));
  AC_NN(nn_cuda_adam_upload(s->adam_c, s->h_cm, s->h_cv, NULL, &s->h_cstep));
  if (s->norm) AC_NN(nn_cuda_norm_upload(s->norm, s->h_ncount, s->h_nmean, s->h_nm2));
  if (s->priv && s->cnorm) AC_NN(nn_cuda_norm_upload(s->cnorm, s->h_cncount, s->h_cnmean, s->h_cnm2));
  AC_CK(cudaMemcpy(s->act_rng, s->h_rng, 8 * (size_t)s->N, cudaMemcpyHostToDevice));
  if (s->h_noise) AC_CK(cudaMemcpy(s->noise, s->h_noise, 8 * (size_t)s->N * s->A, cudaMemcpyHostToDevice));
  AC_ENV(env_cuda_upload(s->E, env));
  s->asteps = s->h_astep;
  s->norm_started = !s->norm || s->h_ncount > 0;  // shac.c: the first iteration's update where count == 0
  return 0;
}

static void shac_cuda_overflow(void* p, double* contacts, double* rows) {
  ShacCuda* s = (ShacCuda*)p;
  env_cuda_stats_end(s->E, NULL, contacts, rows);
}

// deterministic action tanh(actor(norm(obs))), with the EMA parameters when ∇Mimic (c) is on
static int shac_cuda_act_eval(void* p, const float* obs, int n, float* act) {
  ShacCuda* s = (ShacCuda*)p;
  s->err = NULL, s->errlen = 0;
  if (n > s->N) return -1;
  AC_CK(cudaMemcpy(s->dobs, obs, sizeof(float) * (size_t)n * s->O, cudaMemcpyHostToDevice));
  if (normalize(s, s->norm, s->O, s->dobs, n, s->xs)) return -1;
  float* ema = nn_cuda_adam_ema(s->adam_a);
  AC_NN(nn_cuda_mlp_infer(s->actor, ema ? ema : nn_cuda_mlp_params(s->actor), s->xs, n, s->z));
  AC_CK(cudaMemcpy(act, s->z, sizeof(float) * (size_t)n * s->A, cudaMemcpyDeviceToHost));
  return 0;
}

extern "C" int algo_shac_cuda_rollout_grad(void* p, EnvBatch* env, double* loss, float* grad, float* action_grad) {
  ShacCuda* s = (ShacCuda*)p;
  s->err = NULL, s->errlen = 0;
  (void)env;
  if (rollout_grad(s)) return -1;
  AC_CK(cudaMemcpy(s->h_metrics, s->metrics, 8 * D_NSLOT, cudaMemcpyDeviceToHost));
  if (loss) *loss = s->h_metrics[M_ACTOR];
  if (grad) AC_CK(cudaMemcpy(grad, s->gsum, 4 * (size_t)s->na, cudaMemcpyDeviceToHost));
  if (action_grad) AC_CK(cudaMemcpy(action_grad, s->gtarget, 4 * (size_t)s->H * s->N * s->A, cudaMemcpyDeviceToHost));
  return 0;
}

// Test hook (tests/algo_cuda_grad.c declares it): after algo_shac_cuda_rollout_grad, the iteration's TD(lambda)
// targets, advantages (∇Mimic (d)) and target actions (∇Mimic (b)) as shac_cuda_iterate computes them, downloaded:
// targets (H N A), adv (H N, beta > 0 only), *adv_abs_mean (metric advantage_abs_mean). Needs ∇Mimic (b).
extern "C" int algo_shac_cuda_action_targets(void* p, float* targets, float* adv, double* adv_abs_mean);
extern "C" int algo_shac_cuda_action_targets(void* p, float* targets, float* adv, double* adv_abs_mean) {
  ShacCuda* s = (ShacCuda*)p;
  s->err = NULL, s->errlen = 0;
  if (!s->regress) return -1;
  if (td_advantages(s) || action_targets(s)) return -1;
  const size_t HN = (size_t)s->H * s->N;
  AC_CK(cudaMemcpy(s->h_metrics, s->metrics, 8 * D_NSLOT, cudaMemcpyDeviceToHost));
  if (adv_abs_mean) *adv_abs_mean = s->h_metrics[M_ADV];
  if (targets) AC_CK(cudaMemcpy(targets, s->gtarget, 4 * HN * s->A, cudaMemcpyDeviceToHost));
  if (adv && s->adv) AC_CK(cudaMemcpy(adv, s->adv, 4 * HN, cudaMemcpyDeviceToHost));
  return 0;
}

extern "C" const AlgoOps algo_shac_cuda = {"shac",          shac_cuda_create,   shac_cuda_destroy, shac_cuda_iterate,
                                           shac_cuda_state, shac_cuda_act_eval, shac_metric_names,          M_COUNT,
                                           shac_cuda_sync,  shac_cuda_overflow};
