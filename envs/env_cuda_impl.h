// env_cuda_impl.h: internals shared by envs/env_cuda.cu (host API, statistics) and the per-task kernel files
// generated from envs/env_cuda_task.cuh (CUDA translation units only).
#ifndef ADJ_ENVS_ENV_CUDA_IMPL_H
#define ADJ_ENVS_ENV_CUDA_IMPL_H

#include <stdint.h>

#include "envs/env.h"
#include "envs/env_cuda.h"
#include "sim/cuda/sim_cuda.h"
#include "sim/sim_model.h"

#define ENV_CUDA_WPB 4  // warps (worlds) per block of the per-world kernels

// episode statistics on the device, copied to the host once per iteration
typedef struct {
  long long stats[2];  // finished episodes, non-finite resets
  double reward_total;
  double contacts, rows;  // overflow totals (filled by env_cuda_stats_begin)
  double recent_return[ENV_RECENT];
  int recent_len[ENV_RECENT];
} EnvCudaStats;

// device state and scratch of the batch (pointers into device memory), passed by value to kernels
typedef struct {
  int N, O, A, nub, fs, needs_kin, episode_steps;
  int Oc;             // the critic's observation size (O without a critic observation)
  int* t;             // (N)
  uint64_t* rng;      // (N)
  int* nan_seen;      // (N)
  float* obs;         // (N, O)
  float* cobs;        // (N, Oc) the critic's observation (obs itself without one)
  double* ep_return;  // (N)
  EnvCudaStats* stats;
  float* rew;           // (N) reward of the last step
  unsigned char* done;  // (N) the episode ended at the last step
  unsigned char* bad;   // (N) ... after a non-finite state
  double* fin_ret;      // (N) return of the episode that ended
  int* fin_len;         // (N)
  float* du;            // (N, nub) ctrl cotangent scratch of the backward
  // the task's fields (env.h): constants (by value), device copies of its data and per-world state
  double param[ENV_MAX_PARAMS];
  const void* data;
  void* st[ENV_MAX_STATE];  // field k: (N, st_words[k]) 4-byte words as EnvBatch.state
  int nst, st_words[ENV_MAX_STATE];
  int st_off[ENV_MAX_STATE], st_grad[ENV_MAX_STATE], sw, ngrad;  // a state block's layout (env_cuda.h), grad fields
  // task-shared state (env.h): device copies of its fields, and every world's report of the last step
  int nsh;
  void* sh[ENV_MAX_SHARED];
  int* report;  // (N)
} EnvDev;

// the task context of world w inside a kernel (E: the kernel's own copy)
#define ENV_CUDA_CTX(E, w) {(E).param, (E).data, (E).st, NULL, (w), (E).nsh ? (E).sh : NULL}
// field pointers into a state block (env_cuda.h) of E's layout; grad: the grad fields only (others NULL)
static __device__ __forceinline__ void env_cuda_block_fields(const EnvDev& E, const void* block, int grad,
                                                             void** f) {
  for (int k = 0; k < E.nst; k++)
    f[k] = grad && !E.st_grad[k] ? NULL : (void*)((int*)block + (size_t)E.N * E.st_off[k]);
}

struct EnvCuda;
// one task's launchers (defined in its generated kernel files)
typedef struct EnvCudaTask {
  const char* name;
  void (*step)(struct EnvCuda* e, const float* act, const EnvCudaRecord* rec, int record);
  void (*backward)(struct EnvCuda* e, const EnvCudaStepGrad* g);
  void (*pre_cot)(struct EnvCuda* e, const float* q, const float* v, const float* u, const void* st,
                  const float* obs_cot, float* cq, float* cv, float* cst);
} EnvCudaTask;
#define ENV_CUDA_SHARED_THREADS 1024  // the shared update's one block

struct EnvCuda {
  const EnvCudaTask* task;
  SimCuda* g;
  const SimModel* dm;  // device model
  const SimData* dd;   // device SimData struct
  SimData hd;          // its host copy (device pointers)
  int nq, nv, nu, nbody, ngeom;
  int adj;  // the model has gradients enabled (tape, cotangents)
  EnvDev E;
  void* block;               // the device allocation of E's arrays
  void* fields;              // the device allocation of the task's data and state
  EnvCudaStats* stats_host;  // pinned
  void* shared_host;         // pinned copy of the task-shared state (stats_begin -> stats_end), field after field
  size_t shared_off[ENV_MAX_SHARED], shared_bytes[ENV_MAX_SHARED];
  char err[512];             // the message of the last failed call (env_cuda_last_error)
};

#endif
