// motion_eval_cuda.cu: the physics of the motion evaluation (algo/motion_eval.h, --device cuda) on the CUDA
// environment (envs/env_cuda.h): one fused control step of every clip's world on the device, then the state
// after it (before the device's auto-reset) into the host batch, where the same per-step scoring as on the CPU
// (EnvTaskEval.step) reads it. The policy stays on the host (its observations come back with the state): a few
// small copies a step, nothing recorded on the engine tape.
// A world that terminated is reset on the device (the CUDA step has no hold): it is not scored after its fall,
// but its trajectory shows the reset world there, where the CPU path shows it going on from its fallen state.
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "envs/env_cuda.h"

struct MotionEvalCuda {
  EnvCuda* env;
  float *act, *qpos, *qvel, *obs;  // device
  void* state;                     // device: the task state block after the act
  uint8_t* term;                   // device
  int sw;                          // state words a world
};

extern "C" void motion_eval_cuda_close(void* p) {
  MotionEvalCuda* c = (MotionEvalCuda*)p;
  if (!c) return;
  env_cuda_destroy(c->env);
  cudaFree(c->act), cudaFree(c->qpos), cudaFree(c->qvel), cudaFree(c->obs), cudaFree(c->state), cudaFree(c->term);
  free(c);
}

static int open_impl(MotionEvalCuda* c, const EnvBatch* e, char* err, size_t errlen) {
  if (env_cuda_create(&c->env, e, err, errlen)) return -1;
  size_t n = (size_t)e->nworld;
  c->sw = env_cuda_state_words(c->env);
  ADJ_CUDA_CHECK(cudaMalloc((void**)&c->act, sizeof(float) * n * e->act_dim), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMalloc((void**)&c->qpos, sizeof(float) * n * e->m->nq), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMalloc((void**)&c->qvel, sizeof(float) * n * e->m->nv), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMalloc((void**)&c->obs, sizeof(float) * n * e->obs_dim), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMalloc((void**)&c->term, n), err, errlen, -1);
  if (c->sw) ADJ_CUDA_CHECK(cudaMalloc(&c->state, (size_t)4 * n * c->sw), err, errlen, -1);
  return 0;
}

// The device copy of e's worlds (just started at their clips). 0, or -1 with a message.
extern "C" int motion_eval_cuda_open(void** out, const EnvBatch* e, char* err, size_t errlen) {
  *out = NULL;
  MotionEvalCuda* c = (MotionEvalCuda*)calloc(1, sizeof(MotionEvalCuda));
  if (!c) return snprintf(err, errlen, "out of memory"), -1;
  if (open_impl(c, e, err, errlen)) {
    motion_eval_cuda_close(c);
    return -1;
  }
  *out = c;
  return 0;
}

// One control step from the host actions act (nworld, act_dim): e's qpos, qvel, task state, observation and
// terminated flags become the device's after the step (before any auto-reset). 0, or -1 with a message.
extern "C" int motion_eval_cuda_step(void* p, EnvBatch* e, const float* act, char* err, size_t errlen) {
  MotionEvalCuda* c = (MotionEvalCuda*)p;
  size_t n = (size_t)e->nworld, nq = (size_t)e->m->nq, nv = (size_t)e->m->nv;
  ADJ_CUDA_CHECK(cudaMemcpy(c->act, act, sizeof(float) * n * e->act_dim, cudaMemcpyHostToDevice), err, errlen, -1);
  EnvCudaRecord rec;
  memset(&rec, 0, sizeof(rec));
  rec.post_qpos = c->qpos, rec.post_qvel = c->qvel, rec.next_obs = c->obs, rec.post_state = c->state;
  rec.terminated = c->term;
  if (env_cuda_step(c->env, c->act, &rec, 0)) return snprintf(err, errlen, "%s", env_cuda_last_error(c->env)), -1;
  ADJ_CUDA_CHECK(cudaMemcpy(e->d->qpos, c->qpos, sizeof(float) * n * nq, cudaMemcpyDeviceToHost), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMemcpy(e->d->qvel, c->qvel, sizeof(float) * n * nv, cudaMemcpyDeviceToHost), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMemcpy(e->obs, c->obs, sizeof(float) * n * e->obs_dim, cudaMemcpyDeviceToHost), err, errlen, -1);
  ADJ_CUDA_CHECK(cudaMemcpy(e->terminated, c->term, n, cudaMemcpyDeviceToHost), err, errlen, -1);
  size_t at = 0;  // the block: field k as (N, count_k), after N x the words of the fields before it
  for (int k = 0; k < e->task->info.nstate; k++) {
    size_t bytes = n * env_state_row_bytes(e->task, k);
    ADJ_CUDA_CHECK(cudaMemcpy(e->state[k], (const char*)c->state + at, bytes, cudaMemcpyDeviceToHost), err, errlen,
                   -1);
    at += bytes;
  }
  return 0;
}
