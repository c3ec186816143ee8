// env_cuda.cu: the batched environment on the CUDA backend (env_cuda.h): host API, device state, episode
// statistics. The per-world kernels of each task live in translation units that CMake generates from
// env_cuda_task.cuh (envs/CMakeLists.txt): env_cuda_tasks.h lists the tasks (ENV_CUDA_TASK_LIST).
//
// k_env_stats (one block, after each step) keeps the statistics in world order as env.c does: a block scan
// places the finished episodes, only the last ENV_RECENT of a step enter the ring, the reward sum is a
// fixed-shape tree. No atomics: every result is independent of scheduling.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "env_cuda_tasks.h"  // ENV_CUDA_TASK_LIST(X): the tasks compiled for the device
#include "envs/env_cuda_impl.h"

#define STATS_THREADS 1024  // the statistics kernel's one block
#define FULL_MASK 0xffffffffu

extern "C" const char* env_cuda_last_error(const EnvCuda* e) { return e->err; }

// the one CUDA check (common/cuda_check.cuh) inside the API functions of EnvCuda* e: the message goes to e->err
#define CU(call) ADJ_CUDA_CHECK(call, e->err, sizeof(e->err), -1)

// ---- the task table (launchers defined in the generated env_cuda_{step,grad}_<task>.cu) ----
#define ENV_CUDA_DECL(task)                                                                                      \
  void env_cuda_step_##task(EnvCuda* e, const float* act, const EnvCudaRecord* rec, int record);                 \
  void env_cuda_backward_##task(EnvCuda* e, const EnvCudaStepGrad* g);                                           \
  void env_cuda_pre_cot_##task(EnvCuda* e, const float* q, const float* v, const float* u, const void* st,      \
                               const float* obs_cot, float* cq, float* cv, float* cst);
ENV_CUDA_TASK_LIST(ENV_CUDA_DECL)
#undef ENV_CUDA_DECL
#define ENV_CUDA_ROW(task) {#task, env_cuda_step_##task, env_cuda_backward_##task, env_cuda_pre_cot_##task},
static const EnvCudaTask kTasks[] = {ENV_CUDA_TASK_LIST(ENV_CUDA_ROW)};
#undef ENV_CUDA_ROW

// ---- kernels ----
// block-wide exclusive scan of v (blockDim.x = STATS_THREADS); *total = the block's sum
static __device__ int block_scan_excl(int v, int* sh, int* total) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  int x = v;
  for (int o = 1; o < 32; o <<= 1) {
    int y = __shfl_up_sync(FULL_MASK, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) sh[wid] = x;
  __syncthreads();
  if (wid == 0) {
    int s = lane < nw ? sh[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      int y = __shfl_up_sync(FULL_MASK, s, o);
      if (lane >= o) s += y;
    }
    sh[lane] = s;
  }
  __syncthreads();
  int res = (wid ? sh[wid - 1] : 0) + x - v;
  *total = sh[nw - 1];
  __syncthreads();
  return res;
}

// statistics of the last step, in world order as env.c keeps them
static __global__ void k_env_stats(EnvDev E) {
  __shared__ int sh[32];
  __shared__ double rs[STATS_THREADS];
  const int N = E.N, tid = threadIdx.x;
  EnvCudaStats* S = E.stats;
  // the reward sum: per-thread strided sums, then a fixed tree
  double acc = 0;
  int ndone = 0, nbad = 0;
  for (int w = tid; w < N; w += STATS_THREADS) {
    acc += (double)E.rew[w];
    ndone += E.done[w];
    nbad += E.bad[w];
  }
  rs[tid] = acc;
  __syncthreads();
  for (int o = STATS_THREADS / 2; o > 0; o >>= 1) {
    if (tid < o) rs[tid] += rs[tid + o];
    __syncthreads();
  }
  int tot, totbad;
  block_scan_excl(ndone, sh, &tot);
  block_scan_excl(nbad, sh, &totbad);
  long long s0 = S->stats[0];
  // the finished episodes in world order; only the last ENV_RECENT land in the ring
  int base = 0;
  for (int c = 0; c < N; c += STATS_THREADS) {
    int w = c + tid;
    int f = w < N ? E.done[w] : 0, chunk;
    int pos = base + block_scan_excl(f, sh, &chunk);
    if (f && pos >= tot - ENV_RECENT) {
      int slot = (int)((s0 + pos) % ENV_RECENT);
      S->recent_return[slot] = E.fin_ret[w];
      S->recent_len[slot] = E.fin_len[w];
    }
    base += chunk;
  }
  if (tid == 0) {
    S->reward_total += rs[0];
    S->stats[0] = s0 + tot;
    S->stats[1] += totbad;
  }
}

// sums over worlds of per-world int counters: out[k] (k < nc) = sum_w src_k[w]; one block, fixed tree
static __global__ void k_count_sum(const int* a, const int* b, int N, long long* out_a, long long* out_b, double* da,
                                   double* db) {
  __shared__ long long sa[256], sb[256];
  long long x = 0, y = 0;
  for (int w = threadIdx.x; w < N; w += 256) {
    x += a[w];
    if (b) y += b[w];
  }
  sa[threadIdx.x] = x, sb[threadIdx.x] = y;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sa[threadIdx.x] += sa[threadIdx.x + o], sb[threadIdx.x] += sb[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (out_a) *out_a = sa[0];
    if (out_b) *out_b = sb[0];
    if (da) *da = (double)sa[0];
    if (db) *db = (double)sb[0];
  }
}

// ---- host API ----
static size_t al256(size_t n) { return (n + 255) & ~(size_t)255; }

extern "C" int env_cuda_create(EnvCuda** out, const EnvBatch* host, char* err, size_t errlen) {
  *out = NULL;
  const char* name = host->task->info.name;
  const EnvCudaTask* tk = NULL;
  for (size_t i = 0; i < sizeof(kTasks) / sizeof(kTasks[0]); i++)
    if (!strcmp(kTasks[i].name, name)) tk = &kTasks[i];
  if (!tk) {
    snprintf(err, errlen, "task %s: not in the CUDA build (envs/%s.c is compiled into envs/env_cuda.cu by CMake)", name,
             name);
    return -1;
  }
  if (sizeof(sim_real) != sizeof(float)) return -1;
  EnvCuda* e = (EnvCuda*)calloc(1, sizeof(EnvCuda));
  if (!e) return -1;
  e->task = tk;
  const SimModel* m = host->m;
  int N = host->nworld;
  e->nq = m->nq, e->nv = m->nv, e->nu = m->nu, e->nbody = m->nbody, e->ngeom = m->ngeom, e->adj = m->adj;
  EnvDev* E = &e->E;
  E->N = N, E->O = host->obs_dim, E->A = host->act_dim, E->nub = m->nu ? m->nu : 1;
  E->Oc = host->critic_obs_dim;
  const int priv = host->task->info.critic != NULL;
  E->fs = host->task->info.frame_skip, E->needs_kin = host->task->info.needs_kinematics;
  E->episode_steps = host->episode_steps;
  int rc = simcuda_create(m, N, &e->g);
  if (rc) {
    snprintf(err, errlen, "CUDA engine: %s", simcuda_last_error());
    env_cuda_destroy(e);
    return -1;
  }
  e->dm = simcuda_model(e->g), e->dd = simcuda_data(e->g);
  size_t n = (size_t)N, sz = 0, off[16];
  int k = 0;
  // clang-format off
  off[k++] = sz, sz += al256(4 * n);                    // t
  off[k++] = sz, sz += al256(8 * n);                    // rng
  off[k++] = sz, sz += al256(4 * n);                    // nan_seen
  off[k++] = sz, sz += al256(4 * n * E->O);             // obs
  off[k++] = sz, sz += al256(8 * n);                    // ep_return
  off[k++] = sz, sz += al256(sizeof(EnvCudaStats));     // stats
  off[k++] = sz, sz += al256(4 * n);                    // rew
  off[k++] = sz, sz += al256(n);                        // done
  off[k++] = sz, sz += al256(n);                        // bad
  off[k++] = sz, sz += al256(8 * n);                    // fin_ret
  off[k++] = sz, sz += al256(4 * n);                    // fin_len
  off[k++] = sz, sz += al256(4 * n * E->nub);           // du
  off[k++] = sz, sz += al256(priv ? 4 * n * E->Oc : 0); // cobs
  // clang-format on
  if (cudaMalloc(&e->block, sz) != cudaSuccess || cudaMemset(e->block, 0, sz) != cudaSuccess ||
      cudaMallocHost((void**)&e->stats_host, sizeof(EnvCudaStats)) != cudaSuccess ||
      cudaMemcpy(&e->hd, e->dd, sizeof(SimData), cudaMemcpyDeviceToHost) != cudaSuccess) {
    snprintf(err, errlen, "CUDA environment: allocation failed: %s", cudaGetErrorString(cudaGetLastError()));
    env_cuda_destroy(e);
    return -1;
  }
  char* b = (char*)e->block;
  k = 0;
  E->t = (int*)(b + off[k++]);
  E->rng = (uint64_t*)(b + off[k++]);
  E->nan_seen = (int*)(b + off[k++]);
  E->obs = (float*)(b + off[k++]);
  E->ep_return = (double*)(b + off[k++]);
  E->stats = (EnvCudaStats*)(b + off[k++]);
  E->rew = (float*)(b + off[k++]);
  E->done = (unsigned char*)(b + off[k++]);
  E->bad = (unsigned char*)(b + off[k++]);
  E->fin_ret = (double*)(b + off[k++]);
  E->fin_len = (int*)(b + off[k++]);
  E->du = (float*)(b + off[k++]);
  E->cobs = priv ? (float*)(b + off[k++]) : E->obs;
  // the task's fields: constants by value, data uploaded once here, per-world state mirrored by upload/download
  const EnvTaskInfo* ti = &host->task->info;
  memcpy(E->param, host->param, sizeof(E->param));
  size_t fsz = al256(host->data_bytes), foff[ENV_MAX_STATE], goff[ENV_MAX_SHARED], shsz = 0;
  E->nst = ti->nstate;
  for (int f = 0; f < ti->nstate; f++) {
    E->st_words[f] = ti->state[f].count;
    E->st_off[f] = E->sw, E->sw += ti->state[f].count;
    E->st_grad[f] = ti->state[f].grad && !ti->state[f].is_int, E->ngrad += E->st_grad[f];
    foff[f] = fsz, fsz += al256(env_state_row_bytes(host->task, f) * n);
  }
  E->nsh = ti->nshared;  // task-shared state and the per-world reports (env.h)
  for (int k = 0; k < ti->nshared; k++) {
    goff[k] = fsz, fsz += al256(env_shared_bytes(host, k));
    e->shared_off[k] = shsz, e->shared_bytes[k] = env_shared_bytes(host, k), shsz += al256(e->shared_bytes[k]);
  }
  size_t roff = fsz;
  if (ti->nshared) fsz += al256(4 * n);
  if (fsz && (cudaMalloc(&e->fields, fsz) != cudaSuccess || cudaMemset(e->fields, 0, fsz) != cudaSuccess ||
              (host->data_bytes &&
               cudaMemcpy(e->fields, host->data, host->data_bytes, cudaMemcpyHostToDevice) != cudaSuccess))) {
    snprintf(err, errlen, "CUDA environment: task fields: %s", cudaGetErrorString(cudaGetLastError()));
    env_cuda_destroy(e);
    return -1;
  }
  E->data = host->data_bytes ? e->fields : NULL;
  for (int f = 0; f < ti->nstate; f++) E->st[f] = (char*)e->fields + foff[f];
  for (int k = 0; k < ti->nshared; k++) E->sh[k] = (char*)e->fields + goff[k];
  E->report = ti->nshared ? (int*)((char*)e->fields + roff) : NULL;
  if (shsz && cudaMallocHost(&e->shared_host, shsz) != cudaSuccess) {
    snprintf(err, errlen, "CUDA environment: pinned shared state: %s", cudaGetErrorString(cudaGetLastError()));
    env_cuda_destroy(e);
    return -1;
  }
  if (env_cuda_upload(e, host)) {
    snprintf(err, errlen, "CUDA environment: %s", e->err);
    env_cuda_destroy(e);
    return -1;
  }
  *out = e;
  return 0;
}

extern "C" void env_cuda_destroy(EnvCuda* e) {
  if (!e) return;
  simcuda_free(e->g);
  cudaFree(e->block);
  cudaFree(e->fields);
  if (e->stats_host) cudaFreeHost(e->stats_host);
  if (e->shared_host) cudaFreeHost(e->shared_host);
  free(e);
}

extern "C" int env_cuda_upload(EnvCuda* e, const EnvBatch* h) {
  const EnvDev* E = &e->E;
  size_t n = (size_t)E->N;
  if (simcuda_upload(e->g, h->d)) {
    snprintf(e->err, sizeof(e->err), "%s", simcuda_last_error());
    return -1;
  }
  CU(cudaMemcpy(E->t, h->t, 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(E->rng, h->rng, 8 * n, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(E->nan_seen, h->nan_seen, 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(E->obs, h->obs, 4 * n * E->O, cudaMemcpyHostToDevice));
  if (E->cobs != E->obs) CU(cudaMemcpy(E->cobs, h->cobs, 4 * n * E->Oc, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(E->ep_return, h->ep_return, 8 * n, cudaMemcpyHostToDevice));
  for (int f = 0; f < E->nst; f++)
    CU(cudaMemcpy(E->st[f], h->state[f], 4 * n * E->st_words[f], cudaMemcpyHostToDevice));
  for (int k = 0; k < E->nsh; k++)
    CU(cudaMemcpy(E->sh[k], h->shared[k], e->shared_bytes[k], cudaMemcpyHostToDevice));
  EnvCudaStats* s = e->stats_host;
  memset(s, 0, sizeof(*s));
  s->stats[0] = h->stats[0], s->stats[1] = h->stats[1];
  s->reward_total = h->reward_total;
  memcpy(s->recent_return, h->recent_return, sizeof(s->recent_return));
  memcpy(s->recent_len, h->recent_len, sizeof(s->recent_len));
  for (int w = 0; w < E->N; w++) s->contacts += h->d->ncon_overflow[w], s->rows += h->d->nefc_overflow[w];
  CU(cudaMemcpy(E->stats, s, sizeof(*s), cudaMemcpyHostToDevice));
  return 0;
}

extern "C" int env_cuda_download(EnvCuda* e, EnvBatch* h) {
  const EnvDev* E = &e->E;
  size_t n = (size_t)E->N;
  if (simcuda_download(e->g, h->d)) {
    snprintf(e->err, sizeof(e->err), "%s", simcuda_last_error());
    return -1;
  }
  CU(cudaMemcpy(h->t, E->t, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(h->rng, E->rng, 8 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(h->nan_seen, E->nan_seen, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(h->obs, E->obs, 4 * n * E->O, cudaMemcpyDeviceToHost));
  if (E->cobs != E->obs) CU(cudaMemcpy(h->cobs, E->cobs, 4 * n * E->Oc, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(h->ep_return, E->ep_return, 8 * n, cudaMemcpyDeviceToHost));
  for (int f = 0; f < E->nst; f++)
    CU(cudaMemcpy(h->state[f], E->st[f], 4 * n * E->st_words[f], cudaMemcpyDeviceToHost));
  for (int k = 0; k < E->nsh; k++)
    CU(cudaMemcpy(h->shared[k], E->sh[k], e->shared_bytes[k], cudaMemcpyDeviceToHost));
  EnvCudaStats* s = e->stats_host;
  CU(cudaMemcpy(s, E->stats, sizeof(*s), cudaMemcpyDeviceToHost));
  h->stats[0] = s->stats[0], h->stats[1] = s->stats[1];
  h->reward_total = s->reward_total;
  memcpy(h->recent_return, s->recent_return, sizeof(s->recent_return));
  memcpy(h->recent_len, s->recent_len, sizeof(s->recent_len));
  return 0;
}

extern "C" float* env_cuda_obs(EnvCuda* e) { return e->E.obs; }
extern "C" float* env_cuda_critic_obs(EnvCuda* e) { return e->E.cobs; }
extern "C" int env_cuda_state_words(const EnvCuda* e) { return e->E.sw; }
extern "C" int env_cuda_set_staged(EnvCuda* e, int staged) { return simcuda_set_staged(e->g, staged); }
extern "C" int env_cuda_set_streams(EnvCuda* e, int nstream) { return simcuda_set_streams(e->g, nstream); }
extern "C" int env_cuda_nworld(const EnvCuda* e) { return e->E.N; }

// as sim_tape_clear: empty tapes, parameter cotangents zeroed
extern "C" int env_cuda_tape_clear(EnvCuda* e) {
  if (!e->adj) return 0;
  size_t n = (size_t)e->E.N;
  CU(cudaMemsetAsync(e->hd.tape_n, 0, sizeof(int) * n, 0));
  CU(cudaMemsetAsync(e->hd.adj_body_mass, 0, sizeof(float) * n * e->nbody, 0));
  CU(cudaMemsetAsync(e->hd.adj_body_ipos, 0, sizeof(float) * n * 3 * e->nbody, 0));
  if (e->ngeom) CU(cudaMemsetAsync(e->hd.adj_geom_friction, 0, sizeof(float) * n * 3 * e->ngeom, 0));
  return 0;
}

extern "C" int env_cuda_step(EnvCuda* e, const float* act, const EnvCudaRecord* rec, int record_tape) {
  if (record_tape && !e->adj) {
    snprintf(e->err, sizeof(e->err), "env_cuda_step: gradients not enabled (env_enable_gradients before create)");
    return -1;
  }
  e->task->step(e, act, rec, record_tape);
  CU(cudaGetLastError());
  k_env_stats<<<1, STATS_THREADS>>>(e->E);
  CU(cudaGetLastError());
  return 0;
}

extern "C" int env_cuda_step_backward(EnvCuda* e, const EnvCudaStepGrad* g) {
  if (!e->adj) {
    snprintf(e->err, sizeof(e->err), "env_cuda_step_backward: gradients not enabled");
    return -1;
  }
  e->task->backward(e, g);
  CU(cudaGetLastError());
  return 0;
}

extern "C" int env_cuda_pre_state_cotangent(EnvCuda* e, const float* q, const float* v, const float* u,
                                            const void* st, const float* obs_cot, float* cq, float* cv, float* cst) {
  e->task->pre_cot(e, q, v, u, st, obs_cot, cq, cv, cst);
  CU(cudaGetLastError());
  return 0;
}

extern "C" int env_cuda_constraint_evals(EnvCuda* e, long long* out_dev) {
  if (!e->adj) {
    CU(cudaMemsetAsync(out_dev, 0, sizeof(long long), 0));
    return 0;
  }
  k_count_sum<<<1, 256>>>(e->hd.adj_nconstraint, NULL, e->E.N, out_dev, NULL, NULL, NULL);
  CU(cudaGetLastError());
  return 0;
}

extern "C" int env_cuda_stats_begin(EnvCuda* e) {
  EnvCudaStats* S = e->E.stats;
  k_count_sum<<<1, 256>>>(e->hd.ncon_overflow, e->hd.nefc_overflow, e->E.N, NULL, NULL, &S->contacts, &S->rows);
  CU(cudaGetLastError());
  CU(cudaMemcpyAsync(e->stats_host, S, sizeof(EnvCudaStats), cudaMemcpyDeviceToHost, 0));
  for (int k = 0; k < e->E.nsh; k++)  // the task-shared state, for the host mirror's task metrics
    CU(cudaMemcpyAsync((char*)e->shared_host + e->shared_off[k], e->E.sh[k], e->shared_bytes[k],
                       cudaMemcpyDeviceToHost, 0));
  return 0;
}

extern "C" void env_cuda_stats_end(EnvCuda* e, EnvBatch* h, double* contacts, double* rows) {
  const EnvCudaStats* s = e->stats_host;
  if (h) {
    h->stats[0] = s->stats[0], h->stats[1] = s->stats[1];
    h->reward_total = s->reward_total;
    memcpy(h->recent_return, s->recent_return, sizeof(s->recent_return));
    memcpy(h->recent_len, s->recent_len, sizeof(s->recent_len));
    for (int k = 0; k < e->E.nsh; k++)
      memcpy(h->shared[k], (const char*)e->shared_host + e->shared_off[k], e->shared_bytes[k]);
  }
  if (contacts) *contacts = s->contacts;
  if (rows) *rows = s->rows;
}
