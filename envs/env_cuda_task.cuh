// env_cuda_task.cuh: the per-world kernels of one task, templated on a traits struct of the task's SIM_FN
// functions. CMake generates two translation units per task from this header (envs/CMakeLists.txt):
//   env_cuda_step_<task>.cu:  #include this, #include "envs/<task>.c", ENV_CUDA_TRAITS(task) ENV_CUDA_STEP(task)
//   env_cuda_grad_<task>.cu:  ... ENV_CUDA_TRAITS(task) ENV_CUDA_GRAD(task)
// so that each kernel (each inlines the whole engine) compiles in parallel with the others.
//
// k_env_step (one warp per world): act -> control step (recorded on the tape when asked) -> kinematics if the
// task needs it -> non-finite check -> reward -> termination -> time limit -> observation -> auto-reset, as
// env_step (env.c) does per world; the task state before and after the act and the critic observation (when the
// task has one: EnvCritic, env.h) are recorded when asked. k_env_backward (one warp per world): reward and
// next-(critic-)observation VJPs at the post-step state and the state after the act, the engine's control-step
// backward, the act VJP at the pre-step state and the state before the act, the non-finite check
// (env_cot_check); the task state's cotangent is carried in place as SHAC's CPU loop carries it (shac.c).
// k_env_pre_cot (one thread per world): the observe VJP at a stored state added to the engine's cotangent.
// A task with shared state (EnvShared, env.h) defers the auto-reset: k_env_step stores every world's report,
// k_env_shared (one block) runs the task's shared update, k_env_reset resets the worlds that ended, as env_step
// orders them on the CPU.
#ifndef ADJ_ENVS_ENV_CUDA_TASK_CUH
#define ADJ_ENVS_ENV_CUDA_TASK_CUH

#include <cuda_runtime.h>
#include <float.h>
#include <string.h>

#include "sim/sim_forward.c"  // the per-world engine first (as sim_cuda.cu)
#include "envs/env_cuda_impl.h"
#include "sim/cuda/sim_cuda_launch.h"  // the engine's staged launch

#define ENV_FULL_MASK 0xffffffffu

// world w's task state (E's fields) into a state block (env_cuda.h), lanes striding
static __device__ __forceinline__ void env_cuda_record_state(const EnvDev& E, int w, void* block, int lane) {
  for (int k = 0; k < E.nst; k++) {
    const int n = E.st_words[k];
    int* dst = (int*)block + (size_t)E.N * E.st_off[k] + (size_t)w * n;
    const int* src = (const int*)E.st[k] + (size_t)w * n;
    for (int i = lane; i < n; i += 32) dst[i] = src[i];
  }
}

// a world's observation (and critic observation) not finite: zeroed (it is stored and normalized), returns 1 on
// every lane of the warp
template <class T>
__device__ int env_cuda_nonfinite_obs(const EnvDev& E, float* o, float* oc, int lane) {
  int nf = 0;
  for (int i = lane; i < E.O; i += 32) nf |= !isfinite(o[i]);
  if (T::Critic::on)
    for (int i = lane; i < E.Oc; i += 32) nf |= !isfinite(oc[i]);
  if (!__any_sync(ENV_FULL_MASK, nf)) return 0;
  for (int i = lane; i < E.O; i += 32) o[i] = 0;
  if (T::Critic::on)
    for (int i = lane; i < E.Oc; i += 32) oc[i] = 0;
  __syncwarp();
  return 1;
}

// world w's view (SimWorld), one per warp in shared memory, written by the lanes together: as a local variable
// it was a 1.4 KB table in every lane's local memory. Lane 0 may repoint a few fields while the other lanes wait.
#define ENV_CUDA_VIEW(d, w, lane)                         \
  __shared__ SimWorld env_view_[ENV_CUDA_WPB];            \
  SimWorld& wd = env_view_[threadIdx.x / 32];             \
  sim_world_lanes((d), (w), &wd, (lane), 32);             \
  __syncwarp()

template <class T>
__device__ void env_cuda_reset(const SimModel* m, SimWorld* wd, const EnvDev& E, const EnvTaskCtx* c, int w,
                               int lane);

// PART 0: the whole step in one kernel; with the engine's staged launch (simcuda_set_staged) PART 1 runs up to
// the act, the engine's kernels the control step, PART 2 the rest
template <class T, int PART>
__global__ void k_env_step(const SimModel* m, const SimData* d, EnvDev E, const float* act, EnvCudaRecord rec,
                           int record) {
  int w = blockIdx.x * ENV_CUDA_WPB + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (w >= d->nworld) return;  // per warp: whole warps leave
  ENV_CUDA_VIEW(d, w, lane);
  const int nq = m->nq, nv = m->nv, nu = m->nu, O = E.O, nub = E.nub;
  const float* a = act + (size_t)w * E.A;
  const EnvTaskCtx c = ENV_CUDA_CTX(E, w);
  if (PART != 2) {
    if (rec.pre_qpos)
      for (int i = lane; i < nq; i += 32) rec.pre_qpos[(size_t)w * nq + i] = wd.qpos[i];
    if (rec.pre_qvel)
      for (int i = lane; i < nv; i += 32) rec.pre_qvel[(size_t)w * nv + i] = wd.qvel[i];
    if (rec.pre_state) env_cuda_record_state(E, w, rec.pre_state, lane);
    __syncwarp();
    T::act(m, &wd, &c, a, lane, 32);
  }
  if (PART == 0) sim_control_step_world(m, &wd, E.fs, record, lane, 32);
  if (PART == 1) return;
  if (E.needs_kin) sim_kinematics(m, &wd, lane, 32);
  __syncwarp();  // every lane's writes of the step visible to lane 0's reward
  // the engine reset this world after a non-finite state: the episode ends there, value 0
  int bad = wd.nan_count[0] != E.nan_seen[w];
  int tt = E.t[w] + 1;
  double ret0 = E.ep_return[w];
  sim_real r = 0;
  int term = 0;
  if (lane == 0) {
    r = bad ? 0 : T::reward(m, &wd, &c, a);
    if (!isfinite(r)) r = 0, bad = 1;  // a non-finite reward (NaN or +-inf) ends the episode too
    term = bad || T::terminated(m, &wd, &c);
  }
  __syncwarp();
  r = __shfl_sync(ENV_FULL_MASK, r, 0);
  term = __shfl_sync(ENV_FULL_MASK, term, 0);
  bad = __shfl_sync(ENV_FULL_MASK, bad, 0);
  int trunc = !term && tt >= E.episode_steps;
  if (T::Shared::on && lane == 0) E.report[w] = T::Shared::report(m, &wd, &c, term ? 1 : trunc ? 2 : 0);
  float* o = E.obs + (size_t)w * O;
  float* oc = E.cobs + (size_t)w * E.Oc;
  T::observe(m, &wd, &c, o, lane, 32);
  if (T::Critic::on) T::Critic::observe(m, &wd, &c, oc, lane, 32);
  __syncwarp();
  if (!bad && env_cuda_nonfinite_obs<T>(E, o, oc, lane)) {  // ... and so does a non-finite observation
    r = 0, bad = 1, term = 1;
    if (T::Shared::on && lane == 0) E.report[w] = T::Shared::report(m, &wd, &c, 1);
  }
  if (term) trunc = 0;
  double ret = ret0 + (double)r;
  if (lane == 0) {
    E.nan_seen[w] = wd.nan_count[0];
    E.t[w] = tt;
    E.ep_return[w] = ret;
    E.rew[w] = r;
    E.done[w] = (unsigned char)(term || trunc);
    E.bad[w] = (unsigned char)bad;
    if (rec.reward) rec.reward[w] = r;
    if (rec.terminated) rec.terminated[w] = (uint8_t)term;
    if (rec.truncated) rec.truncated[w] = (uint8_t)trunc;
  }
  if (rec.next_obs)
    for (int i = lane; i < O; i += 32) rec.next_obs[(size_t)w * O + i] = o[i];
  if (rec.next_cobs)
    for (int i = lane; i < E.Oc; i += 32) rec.next_cobs[(size_t)w * E.Oc + i] = oc[i];
  if (rec.post_state) env_cuda_record_state(E, w, rec.post_state, lane);
  if (rec.post_qpos)
    for (int i = lane; i < nq; i += 32) rec.post_qpos[(size_t)w * nq + i] = wd.qpos[i];
  if (rec.post_qvel)
    for (int i = lane; i < nv; i += 32) rec.post_qvel[(size_t)w * nv + i] = wd.qvel[i];
  if (rec.post_ctrl)
    for (int i = lane; i < nu; i += 32) rec.post_ctrl[(size_t)w * nub + i] = wd.ctrl[i];
  __syncwarp();
  if (term || trunc) {  // warp-uniform
    if (lane == 0) E.fin_ret[w] = ret, E.fin_len[w] = tt;
    if (!T::Shared::on) env_cuda_reset<T>(m, &wd, E, &c, w, lane);  // else after the shared update (k_env_reset)
  }
}

// world w's auto-reset: engine state, task state zeroed then the task's reset, its observation
template <class T>
__device__ void env_cuda_reset(const SimModel* m, SimWorld* wd, const EnvDev& E, const EnvTaskCtx* c, int w,
                               int lane) {
  float* o = E.obs + (size_t)w * E.O;
  float* oc = E.cobs + (size_t)w * E.Oc;
  sim_reset_world(m, wd, -1, lane, 32);
  for (int k = 0; k < E.nst; k++)  // the task's state starts at zero, then its reset
    for (int i = lane; i < E.st_words[k]; i += 32) ((int*)E.st[k])[(size_t)w * E.st_words[k] + i] = 0;
  __syncwarp();
  T::reset(m, wd, c, &E.rng[w], lane, 32);
  if (lane == 0) E.t[w] = 0, E.ep_return[w] = 0;
  if (E.needs_kin) sim_kinematics(m, wd, lane, 32);
  T::observe(m, wd, c, o, lane, 32);
  if (T::Critic::on) T::Critic::observe(m, wd, c, oc, lane, 32);
  __syncwarp();
  if (env_cuda_nonfinite_obs<T>(E, o, oc, lane) && lane == 0) E.bad[w] += 1;  // counted, as env.c does
}

// a task with shared state: its update in one block after every world's step (the reports in world order), ...
template <class T>
__global__ void k_env_shared(const SimModel* m, EnvDev E) {
  const EnvTaskCtx c = {E.param, E.data, NULL, NULL, 0, E.sh};
  T::Shared::update(m, &c, E.report, E.N, (int)threadIdx.x, (int)blockDim.x);
}

// ... then the auto-resets of the worlds whose episode ended (one warp per world), reading the new shared state
template <class T>
__global__ void k_env_reset(const SimModel* m, const SimData* d, EnvDev E) {
  int w = blockIdx.x * ENV_CUDA_WPB + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (w >= d->nworld || !E.done[w]) return;  // per warp
  ENV_CUDA_VIEW(d, w, lane);
  const EnvTaskCtx c = ENV_CUDA_CTX(E, w);
  env_cuda_reset<T>(m, &wd, E, &c, w, lane);
}

// PART 0: one kernel; with the engine's staged launch PART 1 runs up to the step's backward, the engine's kernels
// that backward, PART 2 the rest
template <class T, int PART>
__global__ void k_env_backward(const SimModel* m, const SimData* d, EnvDev E, EnvCudaStepGrad g) {
  int w = blockIdx.x * ENV_CUDA_WPB + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (w >= d->nworld) return;
  ENV_CUDA_VIEW(d, w, lane);
  const int nq = m->nq, nv = m->nv, nu = m->nu, nub = E.nub, A = E.A, O = E.O;
  const int done = g.terminated[w] | g.truncated[w];
  // the task state after the act (reward, next observation) and before it (act), the carried cotangent
  void *sp[ENV_MAX_STATE], *s0[ENV_MAX_STATE], *dsp[ENV_MAX_STATE];
  if (E.nst) env_cuda_block_fields(E, g.post_state, 0, sp), env_cuda_block_fields(E, g.pre_state, 0, s0);
  if (E.ngrad) env_cuda_block_fields(E, g.cot_state, 1, dsp);
  void* const* ds = E.ngrad ? dsp : NULL;
  EnvTaskCtx c = {E.param, E.data, sp, ds, w, NULL};
  const float* a = g.act + (size_t)w * A;
  float* du = E.du + (size_t)w * nub;
  if (PART != 2) {
    // cotangent of the post-step state: the future (unless the world ended here) ...
    for (int i = lane; i < nv; i += 32) {
      wd.adj_qpos[i] = done ? 0 : g.cot_qpos[(size_t)w * nv + i];
      wd.adj_qvel[i] = done ? 0 : g.cot_qvel[(size_t)w * nv + i];
    }
    __syncwarp();
    if (lane == 0) {
      sim_real *q0 = wd.qpos, *v0 = wd.qvel, *u0 = wd.ctrl;
      for (int k = 0; k < nub; k++) du[k] = 0;
      for (int f = 0; done && ds && f < E.nst; f++)  // the carried state cotangent is cut where the world ended
        for (int i = 0; ds[f] && i < E.st_words[f]; i++) ((float*)ds[f])[(size_t)w * E.st_words[f] + i] = 0;
      // ... + the reward and the next observation's value, at the post-step state (lane 0's own view)
      wd.qpos = (sim_real*)g.post_qpos + (size_t)w * nq;
      wd.qvel = (sim_real*)g.post_qvel + (size_t)w * nv;
      wd.ctrl = (sim_real*)g.post_ctrl + (size_t)w * nub;
      T::reward_vjp(m, &wd, &c, a, g.reward_cot[w], wd.adj_qpos, wd.adj_qvel, du);
      if (g.value_mask && g.value_mask[w] != 0) {
        if (T::Critic::on)
          T::Critic::observe_vjp(m, &wd, &c, g.next_obs_cot + (size_t)w * E.Oc, wd.adj_qpos, wd.adj_qvel);
        else
          T::observe_vjp(m, &wd, &c, g.next_obs_cot + (size_t)w * O, wd.adj_qpos, wd.adj_qvel);
      }
      wd.qpos = q0, wd.qvel = v0, wd.ctrl = u0;
    }
    __syncwarp();
  }
  // the step: post-state cotangent -> pre-state cotangent and ctrl cotangent
  if (PART == 0) sim_control_step_backward_world(m, &wd, E.fs, lane, 32);
  if (PART == 1) return;
  __syncwarp();
  if (lane == 0) {
    // the action: ctrl -> action, at the pre-step state with the step's ctrl
    for (int k = 0; k < nu; k++) du[k] += wd.adj_ctrl[k];
    float* da = g.act_cot + (size_t)w * A;
    for (int j = 0; j < A; j++) da[j] = 0;
    wd.qpos = (sim_real*)g.pre_qpos + (size_t)w * nq;
    wd.qvel = (sim_real*)g.pre_qvel + (size_t)w * nv;
    wd.ctrl = (sim_real*)g.post_ctrl + (size_t)w * nub;
    c.s = s0;
    T::act_vjp(m, &wd, &c, a, du, da);
    sim_world(m, d, w, &wd);
    g.nonfinite[w] = (uint8_t)env_cot_check(da, A, wd.adj_qpos, wd.adj_qvel, nv, ds, E.st_words, E.nst, w,
                                            &g.act_cot_norm[w]);
  }
}

template <class T>
__global__ void k_env_pre_cot(const SimModel* m, const SimData* d, EnvDev E, const float* q, const float* v,
                              const float* u, const void* st, const float* obs_cot, float* cq, float* cv,
                              float* cst) {
  int w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= E.N) return;
  SimWorld wd;
  sim_world(m, d, w, &wd);
  const int nq = m->nq, nv = m->nv;
  for (int i = 0; i < nv; i++) cq[(size_t)w * nv + i] = wd.adj_qpos[i], cv[(size_t)w * nv + i] = wd.adj_qvel[i];
  if (!obs_cot) return;
  wd.qpos = (sim_real*)q + (size_t)w * nq;
  wd.qvel = (sim_real*)v + (size_t)w * nv;
  wd.ctrl = (sim_real*)u + (size_t)w * E.nub;
  void *sp[ENV_MAX_STATE], *dsp[ENV_MAX_STATE];
  if (E.nst) env_cuda_block_fields(E, st, 0, sp);
  if (E.ngrad && cst) env_cuda_block_fields(E, cst, 1, dsp);
  const EnvTaskCtx c = {E.param, E.data, sp, E.ngrad && cst ? dsp : NULL, w, NULL};
  T::observe_vjp(m, &wd, &c, obs_cot + (size_t)w * E.O, cq + (size_t)w * nv, cv + (size_t)w * nv);
}

static unsigned env_warp_blocks(int N) { return (unsigned)((N + ENV_CUDA_WPB - 1) / ENV_CUDA_WPB); }

// the traits struct EnvT_<task> over the task file's functions
#define ENV_CUDA_TRAITS(task)                                                                                         \
  struct EnvCriticTag_##task;                                                                                         \
  struct EnvSharedTag_##task;                                                                                         \
  struct EnvT_##task {                                                                                                \
    typedef EnvCritic<EnvCriticTag_##task> Critic; /* the task's critic observation, or the empty template */        \
    typedef EnvShared<EnvSharedTag_##task> Shared; /* the task's shared-state functions, or the empty template */    \
    static __device__ __forceinline__ void reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* r,    \
                                                 int l, int n) {                                                      \
      task##_reset(m, d, c, r, l, n);                                                                                 \
    }                                                                                                                 \
    static __device__ __forceinline__ void act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c,                   \
                                               const sim_real* a, int l, int n) {                                     \
      task##_act(m, d, c, a, l, n);                                                                                   \
    }                                                                                                                 \
    static __device__ __forceinline__ sim_real reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,      \
                                                      const sim_real* a) {                                            \
      return task##_reward(m, d, c, a);                                                                               \
    }                                                                                                                 \
    static __device__ __forceinline__ int terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) {     \
      return task##_terminated(m, d, c);                                                                              \
    }                                                                                                                 \
    static __device__ __forceinline__ void observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,         \
                                                   sim_real* o, int l, int n) {                                       \
      task##_observe(m, d, c, o, l, n);                                                                               \
    }                                                                                                                 \
    static __device__ __forceinline__ void observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,     \
                                                       const sim_real* g,                                             \
                                                       sim_real* dq, sim_real* dv) {                                  \
      task##_observe_vjp(m, d, c, g, dq, dv);                                                                         \
    }                                                                                                                 \
    static __device__ __forceinline__ void reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,      \
                                                      const sim_real* a,                                              \
                                                      sim_real dr, sim_real* dq, sim_real* dv, sim_real* dc) {        \
      task##_reward_vjp(m, d, c, a, dr, dq, dv, dc);                                                                  \
    }                                                                                                                 \
    static __device__ __forceinline__ void act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,         \
                                                   const sim_real* a,                                                 \
                                                   const sim_real* dc, sim_real* da) {                                \
      task##_act_vjp(m, d, c, a, dc, da);                                                                             \
    }                                                                                                                 \
  };

// env_cuda_step_<task>: the step launcher
#define ENV_CUDA_STEP(task)                                                                                      \
  void env_cuda_step_##task(EnvCuda* e, const float* act, const EnvCudaRecord* rec, int record) {                \
    EnvCudaRecord r;                                                                                             \
    if (rec)                                                                                                     \
      r = *rec;                                                                                                  \
    else                                                                                                         \
      memset(&r, 0, sizeof(r));                                                                                  \
    const unsigned nb = env_warp_blocks(e->E.N), nt = 32 * ENV_CUDA_WPB;                                        \
    const int st = simcuda_staged(e->g);                                                                         \
    if (st) {                                                                                                    \
      k_env_step<EnvT_##task, 1><<<nb, nt>>>(e->dm, e->dd, e->E, act, r, record);                                \
      simcuda_launch_control_step(e->dm, e->dd, e->E.N, e->E.fs, record, st, e->nv, simcuda_streams(e->g), NULL,  \
                                  NULL);                                                                         \
      k_env_step<EnvT_##task, 2><<<nb, nt>>>(e->dm, e->dd, e->E, act, r, record);                                \
    } else {                                                                                                     \
      k_env_step<EnvT_##task, 0><<<nb, nt>>>(e->dm, e->dd, e->E, act, r, record);                                \
    }                                                                                                            \
    if (EnvT_##task::Shared::on) {                                                                               \
      k_env_shared<EnvT_##task><<<1, ENV_CUDA_SHARED_THREADS>>>(e->dm, e->E);                                    \
      k_env_reset<EnvT_##task><<<env_warp_blocks(e->E.N), 32 * ENV_CUDA_WPB>>>(e->dm, e->dd, e->E);              \
    }                                                                                                            \
  }

// env_cuda_backward_<task>, env_cuda_pre_cot_<task>: the gradient launchers
#define ENV_CUDA_GRAD(task)                                                                                      \
  void env_cuda_backward_##task(EnvCuda* e, const EnvCudaStepGrad* g) {                                          \
    const unsigned nb = env_warp_blocks(e->E.N), nt = 32 * ENV_CUDA_WPB;                                        \
    const int st = simcuda_staged(e->g);                                                                         \
    if (st) {                                                                                                    \
      k_env_backward<EnvT_##task, 1><<<nb, nt>>>(e->dm, e->dd, e->E, *g);                                        \
      simcuda_launch_control_step_backward(e->dm, e->dd, e->E.N, e->E.fs, st, e->nv, simcuda_streams(e->g), NULL, \
                                           NULL);                                                                \
      k_env_backward<EnvT_##task, 2><<<nb, nt>>>(e->dm, e->dd, e->E, *g);                                        \
    } else {                                                                                                     \
      k_env_backward<EnvT_##task, 0><<<nb, nt>>>(e->dm, e->dd, e->E, *g);                                        \
    }                                                                                                            \
  }                                                                                                              \
  void env_cuda_pre_cot_##task(EnvCuda* e, const float* q, const float* v, const float* u, const void* st,      \
                               const float* obs_cot, float* cq, float* cv, float* cst) {                         \
    k_env_pre_cot<EnvT_##task>                                                                                   \
        <<<(unsigned)((e->E.N + 127) / 128), 128>>>(e->dm, e->dd, e->E, q, v, u, st, obs_cot, cq, cv, cst);      \
  }

#endif
