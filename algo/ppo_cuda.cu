// ppo_cuda.cu: PPO on the CUDA backend (algo_cuda.h); the algorithm of ppo.c (see its header), step for step,
// as device operations on the legacy default stream:
//  rollout: per control step the normalizer update and apply, actor and critic inference, k_act (Gaussian
//    action and log-probability per world stream), the fused env step (envs/env_cuda.h), time-out bootstrap
//    (critic on the pre-reset observations, added where truncated);
//  returns: k_gae (one thread per world), advantage normalization (fixed-tree mean and variance);
//  update: epochs x minibatches over a permutation drawn on the host from ppo/rng (Fisher-Yates as ppo.c; it
//    depends on no device value, so it goes up once per iteration and nothing comes back), k_gather, forward
//    passes, k_loss (per sample, float64 partials), k_loss_sum (one block: fixed-tree sums, the adaptive
//    learning rate on the KL, kept on the device), backward passes, one Adam over [actor | critic | log_std]
//    with the global norm clip (k_sumsq, k_adam_scalars, k_adam).
// The learning rate and the metric sums live on the device and come back once at the end of the iteration.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo_cuda.h"
#include "algo/algo_cuda_util.cuh"
#include "envs/env_cuda.h"
#include "nn/nn_cuda.h"

// clang-format off
static const char* const kMetrics[] = {"loss_policy", "loss_value", "entropy", "kl",
                                       "learning_rate", "grad_norm", "clip_fraction", "action_std"};
// clang-format on
enum { M_POLICY, M_VALUE, M_ENTROPY, M_KL, M_LR, M_GRADNORM, M_CLIPFRAC, M_STD, M_COUNT };
// device scalars beyond the metric sums
enum { D_LR = M_COUNT, D_MEAN, D_VAR, D_GN, D_NSLOT };
#define PPO_SUMSQ_BLOCKS 256
#define PPO_LOG2PI 1.8378770664093453

typedef struct {
  Cfg c;
  int N, O, A, T, mb, nmb, epochs, maxb;
  EnvCuda* E;
  NnCudaMlp *actor, *critic;
  NnCudaNorm* norm;
  int64_t na, nc, P;
  int64_t adam_step;  // host count (the bias corrections go to the kernels as arguments)
  uint64_t rng;       // minibatch shuffles (host: the permutation needs no device value)
  int* h_perm;        // pinned (epochs, T N)
  cudaEvent_t ev[4];
  // host mirror (checkpoints)
  float *h_actor, *h_critic, *h_logstd, *h_m, *h_v;
  double h_lr, h_ncount, *h_nmean, *h_nm2;
  uint64_t* h_rng;
  double* h_metrics;  // pinned (D_NSLOT + A)
  // device
  void* block;
  uint64_t* act_rng;                                     // (N)
  float *log_std, *log_std_old, *m, *v;                  // (A), (A), (P), (P)
  float *obs, *act, *mu, *logp, *val, *rew, *ret, *adv;  // (T, N, ...)
  uint8_t *done, *term, *trunc;                          // (T N), (N), (N)
  float *fobs, *bnobs, *bvalN, *xs, *yN;                 // (N, O), (N, O), (N), (N, O), (N, max(A, 1))
  float *bobs, *bmu, *bval, *dmu, *dval, *gls_f;         // (mb, ...), gls_f (A)
  int* perm;                                             // (epochs, T N)
  double *part, *sq;                                     // (max((4 + A) mb, T N)), (PPO_SUMSQ_BLOCKS)
  double* S;                                             // (D_NSLOT)
} PpoCuda;

static uint64_t mix(uint64_t seed, uint64_t k) {  // ppo.c's
  uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (k + 1));
  return env_rng_next(&s);
}

// ---- kernels ----
static __device__ double gauss_logp(const float* a, const float* mu, const float* log_std, int A) {
  double lp = 0;
  for (int j = 0; j < A; j++) {
    double sd = exp((double)log_std[j]), z = ((double)a[j] - (double)mu[j]) / sd;
    lp += -0.5 * z * z - (double)log_std[j] - 0.5 * PPO_LOG2PI;
  }
  return lp;
}

static __global__ void k_act(const float* __restrict__ mu, const float* __restrict__ log_std, int N, int A,
                             uint64_t* rng, float* act, float* logp) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  uint64_t r = rng[w];
  const float* m = mu + (size_t)w * A;
  float* a = act + (size_t)w * A;
  for (int j = 0; j < A; j++) a[j] = m[j] + (float)(exp((double)log_std[j]) * env_rng_normal(&r));
  logp[w] = (float)gauss_logp(a, m, log_std, A);
  rng[w] = r;
}

// done = terminated | truncated; time-outs bootstrap: r += gamma V(final observation)
static __global__ void k_boot(int N, double gamma, const uint8_t* __restrict__ term, const uint8_t* __restrict__ trunc,
                              const float* __restrict__ bval, float* rew, uint8_t* done) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  done[w] = term[w] | trunc[w];
  if (trunc[w]) rew[w] += (float)(gamma * (double)bval[w]);
}

static __global__ void k_gae(int N, int T, double gamma, double lam, const float* __restrict__ last_v,
                             const float* __restrict__ rew, const float* __restrict__ val,
                             const uint8_t* __restrict__ done, float* adv, float* ret) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  double a = 0, next_v = last_v[w];
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

static __global__ void k_to_double(const float* __restrict__ x, long long n, const double* __restrict__ center,
                                   double* out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double d = (double)x[i] - (center ? *center : 0.0);
  out[i] = center ? d * d : d;
}

static __global__ void k_advnorm(float* adv, long long n, const double* __restrict__ S) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double mean = S[D_MEAN], sd = n > 1 ? sqrt(S[D_VAR] / (double)(n - 1)) : 0;
  adv[i] = (float)(((double)adv[i] - mean) / (sd + 1e-8));
}

static __global__ void k_gather(const float* __restrict__ x, const int* __restrict__ idx, int mb, int O, float* out) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)mb * O) return;
  int k = (int)(t / O), j = (int)(t - (long long)k * O);
  out[t] = x[(size_t)idx[k] * O + j];
}

// per sample of the minibatch: the PPO loss terms (float64 partials, rows q = 0 kl, 1 surrogate, 2 clipped,
// 3 value, 4 + j log-std gradient) and the cotangents of the network outputs
static __global__ void k_loss(const int* __restrict__ idx, int mb, int A, const float* __restrict__ act,
                              const float* __restrict__ mu_old, const float* __restrict__ logp_old,
                              const float* __restrict__ adv_, const float* __restrict__ val_old,
                              const float* __restrict__ ret_, const float* __restrict__ bmu,
                              const float* __restrict__ bval, const float* __restrict__ log_std,
                              const float* __restrict__ log_std_old, double clip, double vcoef, int clip_value,
                              float* dmu, float* dval, double* part) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= mb) return;
  size_t i = (size_t)idx[k];
  const float* a = act + i * A;
  const float* muo = mu_old + i * A;
  const float* mun = bmu + (size_t)k * A;
  double lp = gauss_logp(a, mun, log_std, A), kl = 0;
  for (int j = 0; j < A; j++) {
    double so = exp((double)log_std_old[j]), sn = exp((double)log_std[j]);
    double dm = (double)muo[j] - (double)mun[j];
    kl += log(sn / so) + (so * so + dm * dm) / (2 * sn * sn) - 0.5;
  }
  double r = exp(lp - (double)logp_old[i]), adv = adv_[i];
  double rc = r < 1 - clip ? 1 - clip : (r > 1 + clip ? 1 + clip : r);
  double s1 = -adv * r, s2 = -adv * rc;
  part[k] = kl;
  part[(size_t)mb + k] = s1 > s2 ? s1 : s2;
  part[2 * (size_t)mb + k] = fabs(r - 1) > clip;
  double dl_dr = (s1 >= s2) ? -adv : (r > 1 - clip && r < 1 + clip ? -adv : 0);
  double dl_dlp = dl_dr * r / mb;
  for (int j = 0; j < A; j++) {
    double sd2 = exp(2 * (double)log_std[j]), z = (double)a[j] - (double)mun[j];
    dmu[(size_t)k * A + j] = (float)(dl_dlp * z / sd2);
    part[(size_t)(4 + j) * mb + k] = dl_dlp * (z * z / sd2 - 1);
  }
  double v = bval[k], vo = val_old[i], R = ret_[i], dv, lv;
  if (clip_value) {
    double dvc = v - vo;
    int inside = dvc > -clip && dvc < clip;
    double vc = vo + (dvc < -clip ? -clip : (dvc > clip ? clip : dvc));
    double l1 = (v - R) * (v - R), l2 = (vc - R) * (vc - R);
    lv = l1 > l2 ? l1 : l2;
    dv = l1 >= l2 ? 2 * (v - R) : (inside ? 2 * (vc - R) : 0);
  } else {
    lv = (v - R) * (v - R);
    dv = 2 * (v - R);
  }
  part[3 * (size_t)mb + k] = lv;
  dval[k] = (float)(vcoef * dv / mb);
}

// one block: the minibatch's sums, entropy, log-std gradient, adaptive learning rate, metric sums
static __global__ void k_loss_sum(const double* __restrict__ part, int mb, int A, const float* __restrict__ log_std,
                                  double ent_coef, int adaptive, double desired_kl, float* gls_f, double* S) {
  __shared__ double sh[AC_RED_THREADS];
  __shared__ double q4[4];
  for (int q = 0; q < 4 + A; q++) {
    double s = 0;
    for (int k = threadIdx.x; k < mb; k += AC_RED_THREADS) s += part[(size_t)q * mb + k];
    s = ac_block_sum(s, sh);
    if (threadIdx.x == 0) {
      if (q < 4)
        q4[q] = s;
      else
        gls_f[q - 4] = (float)(s - ent_coef);
    }
  }
  if (threadIdx.x) return;
  double kl = q4[0] / mb, surr = q4[1] / mb, clipf = q4[2] / mb, lval = q4[3] / mb, entropy = 0;
  for (int j = 0; j < A; j++) entropy += 0.5 + 0.5 * PPO_LOG2PI + (double)log_std[j];
  if (adaptive) {
    double lr = S[D_LR];
    if (kl > 2 * desired_kl)
      lr = fmax(1e-5, lr / 1.5);
    else if (kl < desired_kl / 2 && kl > 0)
      lr = fmin(1e-2, lr * 1.5);
    S[D_LR] = lr;
  }
  S[M_POLICY] += surr, S[M_VALUE] += lval, S[M_ENTROPY] += entropy, S[M_KL] += kl, S[M_CLIPFRAC] += clipf;
}

// sum of squares of [ga (na) | gc (nc) | gl (A)] per block of a fixed grid
static __global__ void k_sumsq(const float* __restrict__ ga, long long na, const float* __restrict__ gc, long long nc,
                               const float* __restrict__ gl, int A, double* part) {
  __shared__ double sh[AC_THREADS];
  long long P = na + nc + A;
  double s = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < P; i += (long long)gridDim.x * blockDim.x) {
    double g = i < na ? ga[i] : (i < na + nc ? gc[i - na] : gl[i - na - nc]);
    s += g * g;
  }
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int o = AC_THREADS / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

// the global norm clip's scale (ppo.c: maxn / (gn + 1e-6) where gn > maxn) into S[D_GN], gn into the metric
static __global__ void k_adam_scalars(const double* __restrict__ part, double maxn, double* S) {
  double n2 = 0;
  for (int i = 0; i < PPO_SUMSQ_BLOCKS; i++) n2 += part[i];
  double gn = sqrt(n2);
  S[D_GN] = (maxn > 0 && gn > maxn) ? (double)(float)(maxn / (gn + 1e-6)) : 1.0;
  S[M_GRADNORM] += gn;
}

// PyTorch Adam over the three segments (ppo.c's adam_segment), lr from the device, bias corrections given
static __global__ void k_adam(float* pa, const float* __restrict__ ga, long long na, float* pc,
                              const float* __restrict__ gc, long long nc, float* pl, const float* __restrict__ gl,
                              int A, float* m, float* v, const double* __restrict__ S, double bc1, double bc2) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= na + nc + A) return;
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  float step = (float)(S[D_LR] / bc1), sbc2 = (float)sqrt(bc2), scale = (float)S[D_GN];
  float* p;
  float g;
  if (i < na)
    p = pa + i, g = ga[i];
  else if (i < na + nc)
    p = pc + (i - na), g = gc[i - na];
  else
    p = pl + (i - na - nc), g = gl[i - na - nc];
  float gi = g * scale;
  m[i] = b1 * m[i] + (1 - b1) * gi;
  v[i] = b2 * v[i] + (1 - b2) * gi * gi;
  *p -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
}

static __global__ void k_std(const float* __restrict__ log_std, int A, double* S) {
  double sd = 0;
  for (int j = 0; j < A; j++) sd += exp((double)log_std[j]);
  S[M_STD] = sd / A;
}

// ---- host ----
static void ppo_cuda_destroy(void* p) {
  PpoCuda* s = (PpoCuda*)p;
  if (!s) return;
  env_cuda_destroy(s->E);
  nn_cuda_mlp_destroy(s->actor), nn_cuda_mlp_destroy(s->critic);
  nn_cuda_norm_destroy(s->norm);
  for (int i = 0; i < 4; i++)
    if (s->ev[i]) cudaEventDestroy(s->ev[i]);
  cudaFree(s->block);
  if (s->h_metrics) cudaFreeHost(s->h_metrics);
  if (s->h_perm) cudaFreeHost(s->h_perm);
  free(s->h_actor), free(s->h_critic), free(s->h_logstd), free(s->h_m), free(s->h_v);
  free(s->h_nmean), free(s->h_nm2), free(s->h_rng);
  free(s);
}

static int mirror_download(PpoCuda* s);

static int ppo_cuda_create(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen) {
  *out = NULL;
  if (algo_ppo.n_metrics != M_COUNT) {
    snprintf(err, errlen, "ppo (cuda): metric list differs from ppo.c's");
    return -1;
  }
  for (int i = 0; i < M_COUNT; i++)
    if (strcmp(algo_ppo.metric_names[i], kMetrics[i])) {
      snprintf(err, errlen, "ppo (cuda): metric %d differs from ppo.c's", i);
      return -1;
    }
  PpoCuda* s = (PpoCuda*)calloc(1, sizeof(PpoCuda));
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
  if (batch > (1 << 30) || (int64_t)s->epochs * batch > (1 << 30)) {
    snprintf(err, errlen, "ppo: rollout batch too large");
    free(s);
    return -1;
  }
  s->mb = (int)(batch / s->nmb);
  s->maxb = s->mb > s->N ? s->mb : s->N;
  if (env_cuda_create(&s->E, env, err, errlen)) {
    free(s);
    return -1;
  }
  int N = s->N, O = s->O, A = s->A;
  NnConfig ac, cc;
  algo_net_config(&ac, c, &c->policy_actor_hidden, O, A, NN_ACT_NONE);
  algo_net_config(&cc, c, &c->policy_critic_hidden, O, 1, NN_ACT_NONE);
  int rc = nn_cuda_mlp_create(&s->actor, &ac, s->maxb, 0, NULL);
  if (!rc) rc = nn_cuda_mlp_create(&s->critic, &cc, s->maxb, 0, NULL);
  if (!rc && c->policy_obs_norm) rc = nn_cuda_norm_create(&s->norm, O, 1e-8, c->policy_obs_clip, s->maxb, NULL);
  uint64_t seed = (uint64_t)c->run_seed;
  if (!rc) rc = nn_cuda_mlp_init(s->actor, mix(seed, 1));
  if (!rc) rc = nn_cuda_mlp_init(s->critic, mix(seed, 2));
  if (!rc) rc = nn_cuda_mlp_prepare(s->actor, N);
  if (!rc) rc = nn_cuda_mlp_prepare(s->actor, s->mb);
  if (!rc) rc = nn_cuda_mlp_prepare(s->critic, N);
  if (!rc) rc = nn_cuda_mlp_prepare(s->critic, s->mb);
  if (rc) {
    snprintf(err, errlen, "ppo (cuda): network setup failed: %s", nn_strerror(rc));
    ppo_cuda_destroy(s);
    return -1;
  }
  s->na = nn_cuda_mlp_param_count(s->actor), s->nc = nn_cuda_mlp_param_count(s->critic);
  s->P = s->na + s->nc + A;
  size_t TN = (size_t)batch, n = (size_t)N, o = (size_t)O, a = (size_t)A, mb = (size_t)s->mb, P = (size_t)s->P;
  size_t part = (4 + a) * mb > TN ? (4 + a) * mb : TN;
  size_t sz = 0, off[64];
  int k = 0;
  // clang-format off
#define SLOT(bytes) (off[k++] = sz, sz += ac_al(bytes))
  SLOT(8 * n);                                                   // act_rng
  SLOT(4 * a), SLOT(4 * a), SLOT(4 * P), SLOT(4 * P);            // log_std log_std_old m v
  SLOT(4 * TN * o), SLOT(4 * TN * a), SLOT(4 * TN * a), SLOT(4 * TN);  // obs act mu logp
  SLOT(4 * TN), SLOT(4 * TN), SLOT(4 * TN), SLOT(4 * TN);        // val rew ret adv
  SLOT(TN), SLOT(n), SLOT(n);                                    // done term trunc
  SLOT(4 * n * o), SLOT(4 * n * o), SLOT(4 * n), SLOT(4 * n * o), SLOT(4 * n * a);  // fobs bnobs bvalN xs yN
  SLOT(4 * mb * o), SLOT(4 * mb * a), SLOT(4 * mb), SLOT(4 * mb * a), SLOT(4 * mb), SLOT(4 * a);  // minibatch
  SLOT(4 * (size_t)s->epochs * TN);                              // perm
  SLOT(8 * part), SLOT(8 * PPO_SUMSQ_BLOCKS), SLOT(8 * D_NSLOT);  // part sq S
#undef SLOT
  // clang-format on
  int ok = cudaMalloc(&s->block, sz) == cudaSuccess && cudaMemset(s->block, 0, sz) == cudaSuccess;
  for (int i = 0; i < 4 && ok; i++) ok = cudaEventCreate(&s->ev[i]) == cudaSuccess;
  ok = ok && cudaMallocHost((void**)&s->h_metrics, 8 * D_NSLOT) == cudaSuccess;
  ok = ok && cudaMallocHost((void**)&s->h_perm, 4 * (size_t)s->epochs * TN) == cudaSuccess;
  if (!ok) {
    snprintf(err, errlen, "ppo (cuda): out of device memory (%zu bytes)", sz);
    ppo_cuda_destroy(s);
    return -1;
  }
  char* b = (char*)s->block;
  k = 0;
#define TAKE(p, type) (p = (type*)(b + off[k++]))
  TAKE(s->act_rng, uint64_t);
  TAKE(s->log_std, float), TAKE(s->log_std_old, float), TAKE(s->m, float), TAKE(s->v, float);
  TAKE(s->obs, float), TAKE(s->act, float), TAKE(s->mu, float), TAKE(s->logp, float);
  TAKE(s->val, float), TAKE(s->rew, float), TAKE(s->ret, float), TAKE(s->adv, float);
  TAKE(s->done, uint8_t), TAKE(s->term, uint8_t), TAKE(s->trunc, uint8_t);
  TAKE(s->fobs, float), TAKE(s->bnobs, float), TAKE(s->bvalN, float), TAKE(s->xs, float), TAKE(s->yN, float);
  TAKE(s->bobs, float), TAKE(s->bmu, float), TAKE(s->bval, float), TAKE(s->dmu, float), TAKE(s->dval, float);
  TAKE(s->gls_f, float);
  TAKE(s->perm, int);
  TAKE(s->part, double), TAKE(s->sq, double), TAKE(s->S, double);
#undef TAKE
  s->h_actor = (float*)calloc((size_t)s->na, 4), s->h_critic = (float*)calloc((size_t)s->nc, 4);
  s->h_logstd = (float*)calloc(a, 4), s->h_m = (float*)calloc(P, 4), s->h_v = (float*)calloc(P, 4);
  s->h_nmean = (double*)calloc(o, 8), s->h_nm2 = (double*)calloc(o, 8);
  s->h_rng = (uint64_t*)calloc(n, 8);
  if (!s->h_actor || !s->h_critic || !s->h_logstd || !s->h_m || !s->h_v || !s->h_nmean || !s->h_nm2 || !s->h_rng) {
    snprintf(err, errlen, "ppo (cuda): out of memory");
    ppo_cuda_destroy(s);
    return -1;
  }
  for (int j = 0; j < A; j++) s->h_logstd[j] = (float)log(c->policy_init_noise_std);
  s->h_lr = c->ppo_learning_rate;
  s->rng = mix(seed, 3);
  for (int w = 0; w < N; w++) s->h_rng[w] = mix(mix(seed, 4), (uint64_t)w);
  if (cudaMemcpy(s->log_std, s->h_logstd, 4 * a, cudaMemcpyHostToDevice) ||
      cudaMemcpy(s->act_rng, s->h_rng, 8 * n, cudaMemcpyHostToDevice) ||
      cudaMemcpy(s->S + D_LR, &s->h_lr, 8, cudaMemcpyHostToDevice) || mirror_download(s)) {
    snprintf(err, errlen, "ppo (cuda): %s", cudaGetErrorString(cudaGetLastError()));
    ppo_cuda_destroy(s);
    return -1;
  }
  *out = s;
  return 0;
}

// observations -> normalized copy (statistics updated first when `update`)
static int normalize(PpoCuda* s, const float* x, int n, float* y, int update) {
  if (!s->norm) {
    AC_CK(cudaMemcpyAsync(y, x, sizeof(float) * (size_t)n * s->O, cudaMemcpyDeviceToDevice, 0));
    return 0;
  }
  if (update) AC_NN(nn_cuda_norm_update(s->norm, x, n));
  AC_NN(nn_cuda_norm_apply(s->norm, x, n, y));
  return 0;
}

// y (N, width) = net(x) for the N worlds, through the aligned scratch where y is not 16-byte aligned
static int infer_to(PpoCuda* s, NnCudaMlp* net, const float* params, const float* x, long long width, float* y) {
  if (((uintptr_t)y & 15) == 0) {
    AC_NN(nn_cuda_mlp_infer(net, params, x, s->N, y));
    return 0;
  }
  AC_NN(nn_cuda_mlp_infer(net, params, x, s->N, s->yN));
  AC_CK(cudaMemcpyAsync(y, s->yN, sizeof(float) * (size_t)s->N * width, cudaMemcpyDeviceToDevice, 0));
  return 0;
}

static int ppo_cuda_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm) {
  PpoCuda* s = (PpoCuda*)p;
  const int N = s->N, O = s->O, A = s->A, T = s->T;
  const double gamma = s->c.algo_gamma, lam = s->c.algo_lambda;
  const long long TN = (long long)T * N;
  float* actor_p = nn_cuda_mlp_params(s->actor);
  float* critic_p = nn_cuda_mlp_params(s->critic);
  double* S = s->S;
  // metric sums to zero (the learning rate slot stays)
  AC_CK(cudaMemsetAsync(S, 0, 8 * M_COUNT, 0));
  AC_CK(cudaMemcpyAsync(s->log_std_old, s->log_std, 4 * (size_t)A, cudaMemcpyDeviceToDevice, 0));
  // the permutations of this iteration's epochs (ppo.c's Fisher-Yates on ppo/rng), up once
  for (int ep = 0; ep < s->epochs; ep++) {
    int* pm = s->h_perm + (size_t)ep * TN;
    for (long long i = 0; i < TN; i++) pm[i] = (int)i;
    for (size_t i = (size_t)TN - 1; i > 0; i--) {
      size_t j = (size_t)(env_rng_next(&s->rng) % (uint64_t)(i + 1));
      int x = pm[i];
      pm[i] = pm[j], pm[j] = x;
    }
  }
  AC_CK(cudaMemcpyAsync(s->perm, s->h_perm, 4 * (size_t)s->epochs * TN, cudaMemcpyHostToDevice, 0));
  AC_CK(cudaEventRecord(s->ev[0], 0));
  // ---- rollout ----
  for (int t = 0; t < T; t++) {
    size_t base = (size_t)t * N;
    float* ob = s->obs + base * O;
    if (normalize(s, env_cuda_obs(s->E), N, ob, 1)) return -1;
    const float* x = ac_aligned(ob, (long long)N * O, s->xs);
    if (infer_to(s, s->actor, actor_p, x, (long long)A, s->mu + base * A)) return -1;
    if (infer_to(s, s->critic, critic_p, x, 1, s->val + base)) return -1;
    k_act<<<ac_blocks(N), AC_THREADS>>>(s->mu + base * A, s->log_std, N, A, s->act_rng, s->act + base * A,
                                        s->logp + base);
    AC_LAUNCHED();
    EnvCudaRecord rec;
    memset(&rec, 0, sizeof(rec));
    rec.next_obs = s->fobs, rec.reward = s->rew + base, rec.terminated = s->term, rec.truncated = s->trunc;
    if (env_cuda_step(s->E, s->act + base * A, &rec, 0)) {
      fprintf(stderr, "ppo (cuda): %s\n", env_cuda_last_error());
      return -1;
    }
    // bootstrap time-outs from the value of the final observation
    if (normalize(s, s->fobs, N, s->bnobs, 0)) return -1;
    AC_NN(nn_cuda_mlp_infer(s->critic, critic_p, s->bnobs, N, s->bvalN));
    k_boot<<<ac_blocks(N), AC_THREADS>>>(N, gamma, s->term, s->trunc, s->bvalN, s->rew + base, s->done + base);
    AC_LAUNCHED();
  }
  AC_CK(cudaEventRecord(s->ev[1], 0));
  // ---- returns: GAE(lambda), then advantages normalized over the batch ----
  if (normalize(s, env_cuda_obs(s->E), N, s->bnobs, 0)) return -1;
  AC_NN(nn_cuda_mlp_infer(s->critic, critic_p, s->bnobs, N, s->bvalN));
  k_gae<<<ac_blocks(N), AC_THREADS>>>(N, T, gamma, lam, s->bvalN, s->rew, s->val, s->done, s->adv, s->ret);
  AC_LAUNCHED();
  k_to_double<<<ac_blocks(TN), AC_THREADS>>>(s->adv, TN, NULL, s->part);
  AC_LAUNCHED();
  if (ac_sum(s->part, TN, 1.0 / (double)TN, 0, S + D_MEAN)) return -1;
  k_to_double<<<ac_blocks(TN), AC_THREADS>>>(s->adv, TN, S + D_MEAN, s->part);
  AC_LAUNCHED();
  if (ac_sum(s->part, TN, 1.0, 0, S + D_VAR)) return -1;
  k_advnorm<<<ac_blocks(TN), AC_THREADS>>>(s->adv, TN, S);
  AC_LAUNCHED();
  AC_CK(cudaEventRecord(s->ev[2], 0));
  // ---- update ----
  const int adaptive = !strcmp(s->c.ppo_schedule, "adaptive"), mb = s->mb;
  float* ga = nn_cuda_mlp_grads(s->actor);
  float* gc = nn_cuda_mlp_grads(s->critic);
  int nupd = 0;
  for (int ep = 0; ep < s->epochs; ep++) {
    for (int b = 0; b < s->nmb; b++) {
      const int* idx = s->perm + (size_t)ep * TN + (size_t)b * mb;
      k_gather<<<ac_blocks((long long)mb * O), AC_THREADS>>>(s->obs, idx, mb, O, s->bobs);
      AC_LAUNCHED();
      AC_NN(nn_cuda_mlp_forward(s->actor, s->bobs, mb, s->bmu));
      AC_NN(nn_cuda_mlp_forward(s->critic, s->bobs, mb, s->bval));
      k_loss<<<ac_blocks(mb), AC_THREADS>>>(idx, mb, A, s->act, s->mu, s->logp, s->adv, s->val, s->ret, s->bmu, s->bval,
                                            s->log_std, s->log_std_old, s->c.ppo_clip, s->c.ppo_value_coef,
                                            s->c.ppo_clip_value_loss, s->dmu, s->dval, s->part);
      AC_LAUNCHED();
      k_loss_sum<<<1, AC_RED_THREADS>>>(s->part, mb, A, s->log_std, s->c.ppo_entropy_coef, adaptive,
                                        s->c.ppo_desired_kl, s->gls_f, S);
      AC_LAUNCHED();
      AC_NN(nn_cuda_mlp_backward(s->actor, s->dmu, NULL));
      AC_NN(nn_cuda_mlp_backward(s->critic, s->dval, NULL));
      // one Adam step over all parameters with the global norm clip
      k_sumsq<<<PPO_SUMSQ_BLOCKS, AC_THREADS>>>(ga, s->na, gc, s->nc, s->gls_f, A, s->sq);
      AC_LAUNCHED();
      k_adam_scalars<<<1, 1>>>(s->sq, s->c.algo_max_grad_norm, S);
      AC_LAUNCHED();
      s->adam_step++;
      double bc1 = 1 - pow(0.9, (double)s->adam_step), bc2 = 1 - pow(0.999, (double)s->adam_step);
      k_adam<<<ac_blocks(s->P), AC_THREADS>>>(actor_p, ga, s->na, critic_p, gc, s->nc, s->log_std, s->gls_f, A, s->m,
                                              s->v, S, bc1, bc2);
      AC_LAUNCHED();
      nupd++;
    }
  }
  k_std<<<1, 1>>>(s->log_std, A, S);
  AC_LAUNCHED();
  AC_CK(cudaEventRecord(s->ev[3], 0));
  // ---- the logged scalars, once ----
  if (env_cuda_stats_begin(s->E)) {
    fprintf(stderr, "ppo (cuda): %s\n", env_cuda_last_error());
    return -1;
  }
  AC_CK(cudaMemcpyAsync(s->h_metrics, S, 8 * D_NSLOT, cudaMemcpyDeviceToHost, 0));
  AC_CK(cudaStreamSynchronize(0));
  env_cuda_stats_end(s->E, env, NULL, NULL);
  for (int k = 0; k < M_COUNT; k++) metrics[k] = s->h_metrics[k] / (nupd ? nupd : 1);
  metrics[M_LR] = s->h_metrics[D_LR];
  metrics[M_STD] = s->h_metrics[M_STD];
  tm->sim += ac_elapsed(s->ev[0], s->ev[1]);
  tm->networks += ac_elapsed(s->ev[1], s->ev[2]);
  tm->backward += ac_elapsed(s->ev[2], s->ev[3]);
  return 0;
}

static int ppo_cuda_state(void* p, CkTensor* t, int max, int policy_only) {
  PpoCuda* s = (PpoCuda*)p;
  int n = 0;
  n = ckpt_add(t, n, max, "ppo/actor", CK_F32, s->h_actor, s->na, 0);
  n = ckpt_add(t, n, max, "ppo/critic", CK_F32, s->h_critic, s->nc, 0);
  n = ckpt_add(t, n, max, "ppo/log_std", CK_F32, s->h_logstd, s->A, 0);
  if (s->norm) {
    n = ckpt_add(t, n, max, "ppo/obs_norm/count", CK_F64, &s->h_ncount, 1, 0);
    n = ckpt_add(t, n, max, "ppo/obs_norm/mean", CK_F64, s->h_nmean, s->O, 0);
    n = ckpt_add(t, n, max, "ppo/obs_norm/m2", CK_F64, s->h_nm2, s->O, 0);
  }
  if (policy_only) return n;
  n = ckpt_add(t, n, max, "ppo/adam/m", CK_F32, s->h_m, s->P, 0);
  n = ckpt_add(t, n, max, "ppo/adam/v", CK_F32, s->h_v, s->P, 0);
  n = ckpt_add(t, n, max, "ppo/adam/step", CK_I64, &s->adam_step, 1, 0);
  n = ckpt_add(t, n, max, "ppo/learning_rate", CK_F64, &s->h_lr, 1, 0);
  n = ckpt_add(t, n, max, "ppo/rng", CK_I64, &s->rng, 1, 0);
  n = ckpt_add(t, n, max, "ppo/action_rng", CK_I64, s->h_rng, s->N, 0);
  return n;
}

static int mirror_download(PpoCuda* s) {
  AC_NN(nn_cuda_mlp_get_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_get_params(s->critic, s->h_critic));
  if (s->norm) AC_NN(nn_cuda_norm_download(s->norm, &s->h_ncount, s->h_nmean, s->h_nm2));
  AC_CK(cudaMemcpy(s->h_logstd, s->log_std, 4 * (size_t)s->A, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_m, s->m, 4 * (size_t)s->P, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_v, s->v, 4 * (size_t)s->P, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(&s->h_lr, s->S + D_LR, 8, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_rng, s->act_rng, 8 * (size_t)s->N, cudaMemcpyDeviceToHost));
  return 0;
}

static int ppo_cuda_sync(void* p, EnvBatch* env, int to_host) {
  PpoCuda* s = (PpoCuda*)p;
  if (to_host) {
    if (mirror_download(s)) return -1;
    if (env_cuda_download(s->E, env)) {
      fprintf(stderr, "ppo (cuda): %s\n", env_cuda_last_error());
      return -1;
    }
    return 0;
  }
  AC_NN(nn_cuda_mlp_set_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_set_params(s->critic, s->h_critic));
  if (s->norm) AC_NN(nn_cuda_norm_upload(s->norm, s->h_ncount, s->h_nmean, s->h_nm2));
  AC_CK(cudaMemcpy(s->log_std, s->h_logstd, 4 * (size_t)s->A, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->m, s->h_m, 4 * (size_t)s->P, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->v, s->h_v, 4 * (size_t)s->P, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->S + D_LR, &s->h_lr, 8, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->act_rng, s->h_rng, 8 * (size_t)s->N, cudaMemcpyHostToDevice));
  if (env_cuda_upload(s->E, env)) {
    fprintf(stderr, "ppo (cuda): %s\n", env_cuda_last_error());
    return -1;
  }
  return 0;
}

static void ppo_cuda_overflow(void* p, double* contacts, double* rows) {
  PpoCuda* s = (PpoCuda*)p;
  env_cuda_stats_end(s->E, NULL, contacts, rows);
}

static int ppo_cuda_act_eval(void* p, const float* obs, int n, float* act) {
  PpoCuda* s = (PpoCuda*)p;
  if (n > s->N) return -1;
  AC_CK(cudaMemcpy(s->fobs, obs, sizeof(float) * (size_t)n * s->O, cudaMemcpyHostToDevice));
  if (normalize(s, s->fobs, n, s->xs, 0)) return -1;
  AC_NN(nn_cuda_mlp_infer(s->actor, nn_cuda_mlp_params(s->actor), s->xs, n, s->yN));
  AC_CK(cudaMemcpy(act, s->yN, sizeof(float) * (size_t)n * s->A, cudaMemcpyDeviceToHost));
  return 0;
}

extern "C" const AlgoOps algo_ppo_cuda = {"ppo",          ppo_cuda_create,   ppo_cuda_destroy, ppo_cuda_iterate,
                                          ppo_cuda_state, ppo_cuda_act_eval, kMetrics,         M_COUNT,
                                          ppo_cuda_sync,  ppo_cuda_overflow};
