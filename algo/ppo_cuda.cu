// ppo_cuda.cu: PPO on the CUDA backend (algo_cuda.h); the algorithm of ppo.c (see its header), step for step,
// with its per-sample formulas (algo/ppo_math.h), as device operations on the legacy default stream:
//  rollout: per control step the normalizer update and apply, actor and critic inference, k_act (Gaussian
//    action and log-probability per world stream), the fused env step (envs/env_cuda.h), time-out bootstrap
//    (critic on the pre-reset observations, added where truncated);
//  returns: k_gae (one thread per world), advantage normalization (fixed-tree mean and variance);
//  update: epochs x minibatches over a permutation drawn on the host from ppo/rng (Fisher-Yates as ppo.c; it
//    depends on no device value, so it goes up once per iteration and nothing comes back), k_gather, forward
//    passes, k_loss (per sample, float64 partials), k_loss_sum (one block: fixed-tree sums, the adaptive
//    learning rate on the KL, kept on the device), backward passes, one Adam over [actor | critic | log_std]
//    with the global norm clip (k_sumsq, k_adam_scalars, k_adam).
// A task's critic observation (ppo.c) goes to the critic through its own normalizer, recorded per step (cobs).
// The learning rate and the metric sums live on the device and come back once at the end of the iteration.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo_cuda.h"
#include "algo/algo_cuda_util.cuh"
#include "algo/ppo_math.h"
#include "envs/env_cuda.h"
#include "nn/nn_cuda.h"

// device scalars beyond the metric sums
enum { D_LR = M_COUNT, D_MEAN, D_VAR, D_GN, D_NSLOT };
#define PPO_SUMSQ_BLOCKS 256

// The device buffers, one allocation in this order, as X(name, type, count) (counts: expressions of create's
// locals); time-major (T, N, ...) rollout arrays as ppo.c's
#define PPO_CUDA_BUFFERS(X)                                                                          \
  X(act_rng, uint64_t, n)                                           /* per-world action streams */   \
  X(log_std, float, a) X(log_std_old, float, a) X(m, float, P) X(v, float, P) /* Adam: (P) */        \
  X(obs, float, TN * o) X(act, float, TN * a) X(mu, float, TN * a) X(logp, float, TN)                \
  X(val, float, TN) X(rew, float, TN) X(ret, float, TN) X(adv, float, TN)                            \
  X(done, uint8_t, TN) X(term, uint8_t, n) X(trunc, uint8_t, n)                                      \
  X(cobs, float, s->priv ? TN * oc : 0) X(bcobs, float, s->priv ? mb * oc : 0) /* the critic's */    \
  X(fobs, float, n * om) X(bnobs, float, n * om) X(bvalN, float, n) X(xs, float, n * om)             \
  X(yN, float, n * a)                                               /* aligned inference output */   \
  X(bobs, float, mb * o) X(bmu, float, mb * a) X(bval, float, mb) X(dmu, float, mb * a)              \
  X(dval, float, mb) X(gls_f, float, a)                             /* minibatch */                  \
  X(perm, int, (size_t)s->epochs * TN)                              /* the iteration's epochs */     \
  X(part, double, part) X(sq, double, PPO_SUMSQ_BLOCKS) X(S, double, D_NSLOT)
#define PPO_CUDA_MIRROR(X)                                                                    \
  X(h_actor, float, na) X(h_critic, float, nc) X(h_logstd, float, a) X(h_m, float, P)         \
  X(h_v, float, P) X(h_nmean, double, o) X(h_nm2, double, o) X(h_rng, uint64_t, n)          \
  X(h_cnmean, double, s->priv ? oc : 0) X(h_cnm2, double, s->priv ? oc : 0)
#define PPO_FIELD(name, type, count) type* name;

typedef struct {
  Cfg c;
  int N, O, A, T, mb, nmb, epochs, maxb;
  int Oc, priv;  // the critic's observation size; priv: the task's own critic observation (else Oc = O)
  EnvCuda* E;
  NnCudaMlp *actor, *critic;
  NnCudaNorm* norm;
  NnCudaNorm* cnorm;  // the critic's: its own with a critic observation, else norm
  int64_t na, nc, P;
  int64_t adam_step;  // host count (the bias corrections go to the kernels as arguments)
  uint64_t rng;       // minibatch shuffles (host: the permutation needs no device value)
  int* h_perm;        // pinned (epochs, T N)
  cudaEvent_t ev[4];
  char* err;  // the message buffer of the API call in progress (its caller's; NULL: none)
  size_t errlen;
  PPO_CUDA_MIRROR(PPO_FIELD)  // host mirror (checkpoints)
  double h_lr, h_ncount, h_cncount;
  double* h_metrics;  // pinned (D_NSLOT + A)
  void* block;        // the device buffers
  PPO_CUDA_BUFFERS(PPO_FIELD)
} PpoCuda;

// ---- kernels ----
// one world's Gaussian action and its log-probability (ppo_act)
static __global__ void k_act(const float* __restrict__ mu, const float* __restrict__ log_std, int N, int A,
                             uint64_t* rng, float* act, float* logp) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  uint64_t r = rng[w];
  ppo_act(mu + (size_t)w * A, log_std, A, &r, act + (size_t)w * A, &logp[w]);
  rng[w] = r;
}

// done = terminated | truncated; time-outs bootstrap: r += gamma V(final observation)
static __global__ void k_boot(int N, double gamma, const uint8_t* __restrict__ term, const uint8_t* __restrict__ trunc,
                              const float* __restrict__ bval, float* rew, uint8_t* done) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= N) return;
  done[w] = term[w] | trunc[w];
  if (trunc[w]) ppo_bootstrap(&rew[w], gamma, bval[w]);
}

// GAE(lambda) per world (ppo_gae)
static __global__ void k_gae(int N, int T, double gamma, double lam, const float* __restrict__ last_v,
                             const float* __restrict__ rew, const float* __restrict__ val,
                             const uint8_t* __restrict__ done, float* adv, float* ret) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w < N) ppo_gae(w, N, T, gamma, lam, last_v[w], rew, val, done, adv, ret);
}

static __global__ void k_to_double(const float* __restrict__ x, long long n, const double* __restrict__ center,
                                   double* out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = center ? ppo_adv_sq_dev(x[i], *center) : (double)x[i];
}

static __global__ void k_advnorm(float* adv, long long n, const double* __restrict__ S) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  adv[i] = ppo_adv_norm(adv[i], S[D_MEAN], ppo_adv_std(S[D_VAR], n));
}

static __global__ void k_gather(const float* __restrict__ x, const int* __restrict__ idx, int mb, int O, float* out) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)mb * O) return;
  int k = (int)(t / O), j = (int)(t - (long long)k * O);
  out[t] = x[(size_t)idx[k] * O + j];
}

// per sample of the minibatch (ppo_sample_loss): the PPO loss terms as float64 partials (rows q = 0 kl,
// 1 surrogate, 2 clipped, 3 value, 4 + j log-std gradient) and the cotangents of the network outputs
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
  PpoLossSums L = {0, 0, 0, 0};
  double* gls = part + (size_t)4 * mb + k;
  for (int j = 0; j < A; j++) gls[(size_t)j * mb] = 0;
  ppo_sample_loss(act + i * A, mu_old + i * A, bmu + (size_t)k * A, logp_old[i], adv_[i], val_old[i], ret_[i],
                  bval[k], log_std, log_std_old, A, mb, clip, vcoef, clip_value, &L, gls, (size_t)mb,
                  dmu + (size_t)k * A, &dval[k]);
  part[k] = L.kl, part[(size_t)mb + k] = L.surr, part[2 * (size_t)mb + k] = L.clipped;
  part[3 * (size_t)mb + k] = L.value;
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
        gls_f[q - 4] = ppo_log_std_grad(s, ent_coef);
    }
  }
  if (threadIdx.x) return;
  double kl = q4[0] / mb, surr = q4[1] / mb, clipf = q4[2] / mb, lval = q4[3] / mb;
  double entropy = ppo_entropy(log_std, A);
  if (adaptive) S[D_LR] = ppo_adapt_lr(S[D_LR], kl, desired_kl);
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
  S[D_GN] = ppo_clip_scale(gn, maxn);
  S[M_GRADNORM] += gn;
}

// PyTorch Adam over the three segments (ppo.c's adam_segment), lr from the device, bias corrections given
static __global__ void k_adam(float* pa, const float* __restrict__ ga, long long na, float* pc,
                              const float* __restrict__ gc, long long nc, float* pl, const float* __restrict__ gl,
                              int A, float* m, float* v, const double* __restrict__ S, double bc1, double bc2) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= na + nc + A) return;
  float step = (float)(S[D_LR] / bc1), sbc2 = (float)sqrt(bc2), scale = (float)S[D_GN];
  float* p;
  float g;
  if (i < na)
    p = pa + i, g = ga[i];
  else if (i < na + nc)
    p = pc + (i - na), g = gc[i - na];
  else
    p = pl + (i - na - nc), g = gl[i - na - nc];
  ppo_adam(p, g, &m[i], &v[i], step, sbc2, scale);
}

static __global__ void k_std(const float* __restrict__ log_std, int A, double* S) {
  S[M_STD] = ppo_action_std(log_std, A);
}

// ---- host ----
static void ppo_cuda_destroy(void* p) {
  PpoCuda* s = (PpoCuda*)p;
  if (!s) return;
  env_cuda_destroy(s->E);
  nn_cuda_mlp_destroy(s->actor), nn_cuda_mlp_destroy(s->critic);
  if (s->cnorm != s->norm) nn_cuda_norm_destroy(s->cnorm);
  nn_cuda_norm_destroy(s->norm);
  for (int i = 0; i < 4; i++)
    if (s->ev[i]) cudaEventDestroy(s->ev[i]);
  cudaFree(s->block);
  if (s->h_metrics) cudaFreeHost(s->h_metrics);
  if (s->h_perm) cudaFreeHost(s->h_perm);
#define PPO_FREE(name, type, count) free(s->name);
  PPO_CUDA_MIRROR(PPO_FREE)
#undef PPO_FREE
  free(s);
}

static int mirror_download(PpoCuda* s);

static int ppo_cuda_create(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen) {
  *out = NULL;
  PpoCuda* s = (PpoCuda*)calloc(1, sizeof(PpoCuda));
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
  env_cuda_set_staged(s->E, !strcmp(c->run_cuda_launch, "staged") ? 2 : 0);
  env_cuda_set_streams(s->E, (int)c->run_cuda_streams);
  int N = s->N, O = s->O, A = s->A;
  NnConfig ac, cc;
  algo_net_config(&ac, c, &c->policy_actor_hidden, O, A, NN_ACT_NONE);
  algo_net_config(&cc, c, &c->policy_critic_hidden, s->Oc, 1, NN_ACT_NONE);
  int rc = nn_cuda_mlp_create(&s->actor, &ac, s->maxb, 0, NULL);
  if (!rc) rc = nn_cuda_mlp_create(&s->critic, &cc, s->maxb, 0, NULL);
  if (!rc && c->policy_obs_norm) rc = nn_cuda_norm_create(&s->norm, O, 1e-8, c->policy_obs_clip, s->maxb, NULL);
  s->cnorm = s->norm;
  if (!rc && c->policy_obs_norm && s->priv)
    rc = nn_cuda_norm_create(&s->cnorm, s->Oc, 1e-8, c->policy_obs_clip, s->maxb, NULL);
  uint64_t seed = (uint64_t)c->run_seed;
  if (!rc) rc = nn_cuda_mlp_init(s->actor, ppo_seed(seed, 1));
  if (!rc) rc = nn_cuda_mlp_init(s->critic, ppo_seed(seed, 2));
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
  size_t na = (size_t)s->na, nc = (size_t)s->nc, oc = (size_t)s->Oc, om = o > oc ? o : oc;
  size_t part = (4 + a) * mb > TN ? (4 + a) * mb : TN;
  size_t sz = 0;
#define PPO_SIZE(name, type, count) sz += ac_al(sizeof(type) * (count));
  PPO_CUDA_BUFFERS(PPO_SIZE)
#undef PPO_SIZE
  int ok = cudaMalloc(&s->block, sz) == cudaSuccess && cudaMemset(s->block, 0, sz) == cudaSuccess;
  for (int i = 0; i < 4 && ok; i++) ok = cudaEventCreate(&s->ev[i]) == cudaSuccess;
  ok = ok && cudaMallocHost((void**)&s->h_metrics, 8 * D_NSLOT) == cudaSuccess;
  ok = ok && cudaMallocHost((void**)&s->h_perm, 4 * (size_t)s->epochs * TN) == cudaSuccess;
  if (!ok) {
    snprintf(err, errlen, "ppo (cuda): out of device memory (%zu bytes)", sz);
    ppo_cuda_destroy(s);
    return -1;
  }
  size_t at = 0;
#define PPO_TAKE(name, type, count) \
  s->name = (count) != 0 ? (type*)((char*)s->block + at) : NULL, at += ac_al(sizeof(type) * (count));
  PPO_CUDA_BUFFERS(PPO_TAKE)
#undef PPO_TAKE
#define PPO_HOST(name, type, count) \
  if ((count) != 0 && !(s->name = (type*)calloc((count), sizeof(type)))) ok = 0;
  PPO_CUDA_MIRROR(PPO_HOST)
#undef PPO_HOST
  if (!ok) {
    snprintf(err, errlen, "ppo (cuda): out of memory");
    ppo_cuda_destroy(s);
    return -1;
  }
  for (int j = 0; j < A; j++) s->h_logstd[j] = (float)log(c->policy_init_noise_std);
  s->h_lr = c->ppo_learning_rate;
  s->rng = ppo_seed(seed, 3);
  for (int w = 0; w < N; w++) s->h_rng[w] = ppo_seed(ppo_seed(seed, 4), (uint64_t)w);
  if (cudaMemcpy(s->log_std, s->h_logstd, 4 * a, cudaMemcpyHostToDevice) ||
      cudaMemcpy(s->act_rng, s->h_rng, 8 * n, cudaMemcpyHostToDevice) ||
      cudaMemcpy(s->S + D_LR, &s->h_lr, 8, cudaMemcpyHostToDevice)) {
    snprintf(err, errlen, "ppo (cuda): %s", cudaGetErrorString(cudaGetLastError()));
    ppo_cuda_destroy(s);
    return -1;
  }
  s->err = err, s->errlen = errlen;
  if (mirror_download(s)) {
    ppo_cuda_destroy(s);
    return -1;
  }
  *out = s;
  return 0;
}

// observations -> normalized copy (statistics updated first when `update`), with the actor's (nm = s->norm,
// dim O) or the critic's (s->cnorm, Oc) normalizer
static int normalize(PpoCuda* s, NnCudaNorm* nm, int dim, const float* x, int n, float* y, int update) {
  if (!nm) {
    AC_CK(cudaMemcpyAsync(y, x, sizeof(float) * (size_t)n * dim, cudaMemcpyDeviceToDevice, 0));
    return 0;
  }
  if (update) AC_NN(nn_cuda_norm_update(nm, x, n));
  AC_NN(nn_cuda_norm_apply(nm, x, n, y));
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

static int ppo_cuda_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm, char* err, size_t errlen) {
  PpoCuda* s = (PpoCuda*)p;
  s->err = err, s->errlen = errlen;
  const int N = s->N, O = s->O, A = s->A, T = s->T, Oc = s->Oc;
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
    ppo_permutation(pm, (size_t)TN, &s->rng);
  }
  AC_CK(cudaMemcpyAsync(s->perm, s->h_perm, 4 * (size_t)s->epochs * TN, cudaMemcpyHostToDevice, 0));
  AC_CK(cudaEventRecord(s->ev[0], 0));
  // ---- rollout ----
  for (int t = 0; t < T; t++) {
    size_t base = (size_t)t * N;
    float* ob = s->obs + base * O;
    if (normalize(s, s->norm, O, env_cuda_obs(s->E), N, ob, 1)) return -1;
    const float* x = ac_aligned(ob, (long long)N * O, s->xs);
    if (infer_to(s, s->actor, actor_p, x, (long long)A, s->mu + base * A)) return -1;
    if (s->priv) {  // the critic's own observation
      float* cob = s->cobs + base * Oc;
      if (normalize(s, s->cnorm, Oc, env_cuda_critic_obs(s->E), N, cob, 1)) return -1;
      x = ac_aligned(cob, (long long)N * Oc, s->xs);
    }
    if (infer_to(s, s->critic, critic_p, x, 1, s->val + base)) return -1;
    k_act<<<ac_blocks(N), AC_THREADS>>>(s->mu + base * A, s->log_std, N, A, s->act_rng, s->act + base * A,
                                        s->logp + base);
    AC_LAUNCHED();
    EnvCudaRecord rec;
    memset(&rec, 0, sizeof(rec));
    rec.next_cobs = s->fobs, rec.reward = s->rew + base, rec.terminated = s->term, rec.truncated = s->trunc;
    AC_ENV(env_cuda_step(s->E, s->act + base * A, &rec, 0));
    // bootstrap time-outs from the value of the final observation
    if (normalize(s, s->cnorm, Oc, s->fobs, N, s->bnobs, 0)) return -1;
    AC_NN(nn_cuda_mlp_infer(s->critic, critic_p, s->bnobs, N, s->bvalN));
    k_boot<<<ac_blocks(N), AC_THREADS>>>(N, gamma, s->term, s->trunc, s->bvalN, s->rew + base, s->done + base);
    AC_LAUNCHED();
  }
  AC_CK(cudaEventRecord(s->ev[1], 0));
  // ---- returns: GAE(lambda), then advantages normalized over the batch ----
  if (normalize(s, s->cnorm, Oc, env_cuda_critic_obs(s->E), N, s->bnobs, 0)) return -1;
  AC_NN(nn_cuda_mlp_infer(s->critic, critic_p, s->bnobs, N, s->bvalN));
  k_gae<<<ac_blocks(N), AC_THREADS>>>(N, T, gamma, lam, s->bvalN, s->rew, s->val, s->done, s->adv, s->ret);
  AC_LAUNCHED();
  k_to_double<<<ac_blocks(TN), AC_THREADS>>>(s->adv, TN, NULL, s->part);
  AC_LAUNCHED();
  AC_CK(ac_sum(s->part, TN, 1.0 / (double)TN, 0, S + D_MEAN));
  k_to_double<<<ac_blocks(TN), AC_THREADS>>>(s->adv, TN, S + D_MEAN, s->part);
  AC_LAUNCHED();
  AC_CK(ac_sum(s->part, TN, 1.0, 0, S + D_VAR));
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
      if (s->priv) {
        k_gather<<<ac_blocks((long long)mb * Oc), AC_THREADS>>>(s->cobs, idx, mb, Oc, s->bcobs);
        AC_LAUNCHED();
      }
      AC_NN(nn_cuda_mlp_forward(s->actor, s->bobs, mb, s->bmu));
      AC_NN(nn_cuda_mlp_forward(s->critic, s->priv ? s->bcobs : s->bobs, mb, s->bval));
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
      double bc1, bc2;
      ppo_adam_bias(s->adam_step, &bc1, &bc2);
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
  AC_ENV(env_cuda_stats_begin(s->E));
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
  PpoStateRefs r;
  memset(&r, 0, sizeof(r));
  r.na = s->na, r.nc = s->nc, r.A = s->A, r.O = s->O, r.N = s->N, r.P = s->P, r.Oc = s->Oc;
  if (s->priv && s->cnorm) r.cnorm_count = &s->h_cncount, r.cnorm_mean = s->h_cnmean, r.cnorm_m2 = s->h_cnm2;
  r.actor = s->h_actor, r.critic = s->h_critic, r.log_std = s->h_logstd;
  if (s->norm) r.norm_count = &s->h_ncount, r.norm_mean = s->h_nmean, r.norm_m2 = s->h_nm2;
  r.adam_m = s->h_m, r.adam_v = s->h_v, r.adam_step = &s->adam_step, r.lr = &s->h_lr, r.rng = &s->rng;
  r.act_rng = s->h_rng;
  return ppo_state_add(&r, t, max, policy_only);
}

static int mirror_download(PpoCuda* s) {
  AC_NN(nn_cuda_mlp_get_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_get_params(s->critic, s->h_critic));
  if (s->norm) AC_NN(nn_cuda_norm_download(s->norm, &s->h_ncount, s->h_nmean, s->h_nm2));
  if (s->priv && s->cnorm) AC_NN(nn_cuda_norm_download(s->cnorm, &s->h_cncount, s->h_cnmean, s->h_cnm2));
  AC_CK(cudaMemcpy(s->h_logstd, s->log_std, 4 * (size_t)s->A, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_m, s->m, 4 * (size_t)s->P, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_v, s->v, 4 * (size_t)s->P, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(&s->h_lr, s->S + D_LR, 8, cudaMemcpyDeviceToHost));
  AC_CK(cudaMemcpy(s->h_rng, s->act_rng, 8 * (size_t)s->N, cudaMemcpyDeviceToHost));
  return 0;
}

static int ppo_cuda_sync(void* p, EnvBatch* env, int to_host, char* err, size_t errlen) {
  PpoCuda* s = (PpoCuda*)p;
  s->err = err, s->errlen = errlen;
  if (to_host) {
    if (mirror_download(s)) return -1;
    AC_ENV(env_cuda_download(s->E, env));
    return 0;
  }
  AC_NN(nn_cuda_mlp_set_params(s->actor, s->h_actor));
  AC_NN(nn_cuda_mlp_set_params(s->critic, s->h_critic));
  if (s->norm) AC_NN(nn_cuda_norm_upload(s->norm, s->h_ncount, s->h_nmean, s->h_nm2));
  if (s->priv && s->cnorm) AC_NN(nn_cuda_norm_upload(s->cnorm, s->h_cncount, s->h_cnmean, s->h_cnm2));
  AC_CK(cudaMemcpy(s->log_std, s->h_logstd, 4 * (size_t)s->A, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->m, s->h_m, 4 * (size_t)s->P, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->v, s->h_v, 4 * (size_t)s->P, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->S + D_LR, &s->h_lr, 8, cudaMemcpyHostToDevice));
  AC_CK(cudaMemcpy(s->act_rng, s->h_rng, 8 * (size_t)s->N, cudaMemcpyHostToDevice));
  AC_ENV(env_cuda_upload(s->E, env));
  return 0;
}

static void ppo_cuda_overflow(void* p, double* contacts, double* rows) {
  PpoCuda* s = (PpoCuda*)p;
  env_cuda_stats_end(s->E, NULL, contacts, rows);
}

static int ppo_cuda_act_eval(void* p, const float* obs, int n, float* act) {
  PpoCuda* s = (PpoCuda*)p;
  s->err = NULL, s->errlen = 0;
  if (n > s->N) return -1;
  AC_CK(cudaMemcpy(s->fobs, obs, sizeof(float) * (size_t)n * s->O, cudaMemcpyHostToDevice));
  if (normalize(s, s->norm, s->O, s->fobs, n, s->xs, 0)) return -1;
  AC_NN(nn_cuda_mlp_infer(s->actor, nn_cuda_mlp_params(s->actor), s->xs, n, s->yN));
  AC_CK(cudaMemcpy(act, s->yN, sizeof(float) * (size_t)n * s->A, cudaMemcpyDeviceToHost));
  return 0;
}

extern "C" const AlgoOps algo_ppo_cuda = {"ppo",          ppo_cuda_create,   ppo_cuda_destroy, ppo_cuda_iterate,
                                          ppo_cuda_state, ppo_cuda_act_eval, ppo_metric_names,         M_COUNT,
                                          ppo_cuda_sync,  ppo_cuda_overflow};
