// algo_cuda.h: the algorithms on the CUDA backend (run.device: cuda): algo/shac_cuda.cu (SHAC and the ∇Mimic
// options) and algo/ppo_cuda.cu, built where nvcc exists (ADJ_HAVE_CUDA).
//
// Same algorithms, config keys, metric names and checkpoint tensor names as shac.c / ppo.c, with everything on
// the device: the environment (envs/env_cuda.h: fused per-world step kernels, auto-reset, the engine tape), the
// backward through time, the networks, optimizers and normalizer (nn/nn_cuda.h), returns and targets. Within an
// iteration nothing comes back to the host but the logged scalars, once at its end. Bitwise reproducible on
// one GPU: fixed seeds, no result-changing atomics (reductions are fixed-shape trees, the median of the action
// gradients a bit-by-bit selection with integer counts), so a fixed seed gives identical checkpoints. The
// results are not bitwise equal to the CPU path's (other summation orders, the GPU's libm); tests/algo_cuda_grad
// compares the two within float32 tolerance.
//
// The host EnvBatch passed to create is the mirror of the device state: `state` names host arrays, and `sync`
// copies between them and the device (the trainer calls sync(to_host = 1) before writing a checkpoint and
// sync(to_host = 0) once before the first iteration, after any resume read), so CUDA checkpoints are read by
// the CPU's `adjoint eval` and `adjoint export` unchanged.
//
// Time split (AlgoTimes, from CUDA events): sim = the rollout (physics and the per-step policy inference),
// backward = the backward through time (SHAC) or the minibatch updates (PPO), networks = the rest.
#ifndef ADJ_ALGO_ALGO_CUDA_H
#define ADJ_ALGO_ALGO_CUDA_H

#include "algo/algo.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const AlgoOps algo_shac_cuda;  // algo.name shac | nablamimic
extern const AlgoOps algo_ppo_cuda;

// Test hook (tests/algo_cuda_grad): steps 1-3 of one SHAC iteration (rollout from the carried state, actor
// loss, backward through time) without the updates. Downloads the actor loss, the BPTT gradient (na floats;
// zero with the target-action regression on) and the clipped per-step action gradients (H x N x A).
int algo_shac_cuda_rollout_grad(void* s, EnvBatch* env, double* loss, float* grad, float* action_grad);

#ifdef __cplusplus
}
#endif
#endif
