// env.h: the task interface and the batched environment. envs/README.md: how to add a task.
//
// A task is one file, envs/<task>.c, of per-world SIM_FN functions, host C and device code: the CUDA build
// compiles every task of envs/tasks.list next to the engine (envs/env_cuda.h; CMake generates the translation
// units, as C++) and fuses act -> step -> reward -> observe -> auto-reset into one kernel per control step and
// world, so a CUDA iteration needs no host round trip. So keep the per-world functions in the common C/C++
// subset, and the host table (ENV_TASK_HOST, names) under #ifndef __CUDACC__ as cartpole.c does.
//
// What a task owns besides the engine's model and world is declared once, in field tables (X-macros, as
// sim/sim_model.h declares the engine's fields), and handed to every per-world function as an EnvTaskCtx:
//   <TASK>_PARAMS(P)   P(name, default, lo, hi)     numeric constants, config key env.params "name=value";
//                                                   read as ENV_P(c, name) (double)
//   <TASK>_STRINGS(S)  S(name, default)             string constants (e.g. a data file path), same config key;
//                                                   host only: they reach the worlds through the task data
//   <TASK>_STATE(X)    X(type, name, count, grad)   per-world state (type sim_real or int32_t, count elements a
//                                                   world), e.g. a clip id, a phase, the last action; read and
//                                                   written as ENV_S(c, name)[i]; grad 1: gradients flow through
//                                                   it (its cotangent is ENV_DS(c, name), see the VJPs)
// and ENV_TASK_FIELDS(<TASK>_PARAMS, <TASK>_STATE) (one task per translation unit) makes the enums behind the
// accessors. A task may also keep state shared by all worlds (e.g. a start sampler's failure statistics):
//   <TASK>_SHARED(G)   G(type, name)                task-shared arrays (type double or int32_t), one for the
//                                                   whole batch, sized at create by EnvTaskInfo.shared_size
//                                                   from the constants and the task data; read as
//                                                   ENV_G(c, name)[i] (per-world functions only read them)
// declared by ENV_TASK_SHARED(<TASK>_SHARED) and written only by the task's shared update, once per control
// step after every world's termination and before the auto-resets (see ENV_TASK_SHARED_FNS below). The read-only task data (e.g. a motion library) is one flat blob that EnvTaskInfo.load_data builds
// at create from the constants and strings (offsets, never pointers, inside it: it is uploaded to the GPU once
// as it is); tasks read it as c->data. The tables drive allocation, resets (state is zeroed, then <task>_reset
// runs), the GPU mirror (envs/env_cuda.cu) and checkpoints ("env/task/<name>" per state field).
//
// Per world (c: the task's constants, data and this world's state):
//   void     <task>_reset(const SimModel*, SimWorld*, const EnvTaskCtx* c, uint64_t* rng, int lane, int nlane)
//   void     <task>_act(const SimModel*, SimWorld*, const EnvTaskCtx* c, const sim_real* act /*(act_dim)*/,
//                       int lane, int nlane)                                          // before the step
//   sim_real <task>_reward(const SimModel*, const SimWorld*, const EnvTaskCtx* c, const sim_real* act)  // after it
//   int      <task>_terminated(const SimModel*, const SimWorld*, const EnvTaskCtx* c)  // early termination
//   void     <task>_observe(const SimModel*, const SimWorld*, const EnvTaskCtx* c, sim_real* obs /*(obs_dim)*/,
//                           int lane, int nlane)
// and their adjoints (vector-Jacobian products, accumulated into the given cotangents; SHAC uses them). Every
// position cotangent is in the engine's tangent space: dqpos has nv elements, ordered as qvel (a free joint:
// world-frame translation, then the rotation vector in the body frame, as the engine's position integration
// q (+) v dt uses them; a ball joint: its rotation vector). The engine's integration adjoint maps it through
// quaternions; a task never differentiates raw quaternion components (env_vjp_rot_* below help):
//   void     <task>_observe_vjp(m, d, c, const sim_real* dobs, sim_real* dqpos /*(nv)*/, sim_real* dqvel /*(nv)*/)
//   void     <task>_reward_vjp(m, d, c, const sim_real* act, sim_real dr, sim_real* dqpos /*(nv)*/,
//                              sim_real* dqvel /*(nv)*/, sim_real* dctrl /*(nu)*/)
//   void     <task>_act_vjp(m, d, c, const sim_real* act, const sim_real* dctrl, sim_real* dact /*(act_dim)*/)
// State that gradients flow through (grad 1, e.g. the last action feeding an action-rate penalty and the
// observation) is updated in <task>_act from the action (s' = f(s, a)) and read by reward and observe: their
// VJPs add into ENV_DS(c, name) (the cotangent of s' when c->ds is set), and act_vjp maps it in place: on entry
// ENV_DS holds the cotangent of s', on return that of s (dact gets the action's part). act_vjp runs with c->s
// at the state before the act (s), reward and observe VJPs with c->s at the state they read. c->ds is NULL where
// no cotangent is carried. SHAC records every state field (int and sim_real) at each step of its rollout, runs
// each VJP at the recorded state of its step and carries the cotangent of the grad fields across steps as it
// carries the engine's (cut where a world reset), so act must be the only per-world function writing state
// besides reset.
// A task may give the critic its own observation (e.g. privileged terms the actor does not see): after its
// per-world functions, ENV_TASK_CRITIC(task) over
//   void     <task>_observe_critic(m, d, c, sim_real* obs /*(critic_obs_dim)*/, int lane, int nlane)
//   void     <task>_observe_critic_vjp(m, d, c, const sim_real* dobs, sim_real* dqpos /*(nv)*/,
//                                      sim_real* dqvel /*(nv)*/)           // adds into ENV_DS as observe_vjp
// and ENV_TASK_CRITIC_INFO(task, critic_obs_dim) in its EnvTaskInfo. The trainers' critics (and their own
// normalizers) read it, SHAC's bootstrap gradient goes through its VJP; without it the critic reads the
// actor's observation.
// ENV_TASK_HOST(task, info) at the end of the task file builds the host-side EnvTask table from them;
// ENV_TASK_HOST_STATS(task, nstat, names, info) also takes <task>_episode_stats (per-episode statistics, e.g.
// the hopper's forward speed, evaluated at an episode's final state; `adjoint eval` reports them).
//
// EnvBatch (env.c) runs nworld worlds of one task on the CPU backend (float32 engine, sim_real = float): it
// applies actions, steps the engine frame_skip times, computes rewards, terminations (early, time-out, and
// non-finite state: the engine resets such a world and counts it in d->nan_count), keeps episode statistics
// and auto-resets finished worlds. All per-world state is world-major.
#ifndef ADJ_ENVS_ENV_H
#define ADJ_ENVS_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"
#include "sim/sim_math.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- per-world random numbers (splitmix64; SIM_FN so tasks can draw on the device) ----
SIM_FN uint64_t env_rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
SIM_FN double env_rng_uniform(uint64_t* s) { return (double)(env_rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
// standard normal (Box-Muller, one draw per call; computed in double on both backends)
SIM_FN double env_rng_normal(uint64_t* s) {
  double u1 = env_rng_uniform(s), u2 = env_rng_uniform(s);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// ---- the task's fields (header): what its per-world functions see beside the engine ----
#define ENV_MAX_PARAMS 48   // numeric constants of a task
#define ENV_MAX_STRS 4      // string constants of a task
#define ENV_STR_MAX 256     // bytes of one string constant, NUL included
#define ENV_MAX_STATE 16    // per-world state fields of a task

typedef struct EnvTaskCtx {
  const double* p;   // numeric constants in table order (ENV_P)
  const void* data;  // read-only task data (the blob load_data built; the device copy on the GPU), NULL: none
  void* const* s;    // per-world state fields in table order, field-major (nworld, count) each (ENV_S)
  void* const* ds;   // their cotangents (grad fields only; others NULL), same layout; NULL: none carried
  int w;             // this world's row in s and ds
  void* const* g;    // task-shared state in table order (ENV_G); NULL: none (e.g. inside a VJP)
} EnvTaskCtx;

#define ENV_P(c, name) ((c)->p[ENVP_##name])
#define ENV_S(c, name) ((ENVST_##name*)(c)->s[ENVS_##name] + (size_t)(c)->w * ENVSN_##name)
#define ENV_DS(c, name) ((c)->ds ? (sim_real*)(c)->ds[ENVS_##name] + (size_t)(c)->w * ENVSN_##name : (sim_real*)0)

#define ENV_PENUM_(name, def, lo, hi) ENVP_##name,
#define ENV_SENUM_(type, name, count, grad) ENVS_##name,
#define ENV_SDECL_(type, name, count, grad) \
  typedef type ENVST_##name;                \
  enum { ENVSN_##name = (count) };
// the enums behind ENV_P / ENV_S of one task (one task per translation unit)
#define ENV_TASK_FIELDS(PARAMS, STATE)  \
  enum { PARAMS(ENV_PENUM_) ENVP_COUNT }; \
  enum { STATE(ENV_SENUM_) ENVS_COUNT };  \
  STATE(ENV_SDECL_)
#define ENV_NO_FIELDS(X)  // an empty table

// ---- task-shared state: ENV_TASK_SHARED(<TASK>_SHARED) after ENV_TASK_FIELDS, ENV_G(c, name) ----
#define ENV_MAX_SHARED 8  // task-shared fields of a task
#define ENV_G(c, name) ((ENVGT_##name*)(c)->g[ENVG_##name])
#define ENV_GENUM_(type, name) ENVG_##name,
#define ENV_GDECL_(type, name) typedef type ENVGT_##name;
#define ENV_TASK_SHARED(SHARED)            \
  enum { SHARED(ENV_GENUM_) ENVG_COUNT }; \
  SHARED(ENV_GDECL_)
// the one-block barrier of a shared update (CUDA: every thread of the block; CPU: one lane, nothing to wait for)
#ifdef __CUDA_ARCH__
#define ENV_BLOCK_SYNC() __syncthreads()
#else
#define ENV_BLOCK_SYNC() ((void)0)
#endif

// host descriptions of the fields (EnvTaskInfo), made from the same tables by ENV_TASK_TABLES
typedef struct { const char* name; double def, lo, hi; } EnvParamDesc;
typedef struct { const char* name; const char* def; } EnvStrDesc;
typedef struct { const char* name; int is_int; int count; int grad; } EnvStateDesc;  // is_int: int32_t, else sim_real
typedef struct { const char* name; int is_int; } EnvSharedDesc;  // is_int: int32_t, else double
#define ENV_PDESC_(name, def, lo, hi) {#name, def, lo, hi},
#define ENV_SDESC_(name, def) {#name, def},
#define ENV_XDESC_(type, name, count, grad) {#name, sizeof(type) == sizeof(int32_t) && (type)0.5 == 0, count, grad},
// static tables task_params_, task_strs_, task_state_ (and their counts in EnvTaskInfo: ENV_TASK_TABLE_INFO)
#define ENV_TASK_TABLES(task, PARAMS, STRINGS, STATE)                                         \
  static const EnvParamDesc task##_params_[ENVP_COUNT + 1] = {PARAMS(ENV_PDESC_){NULL, 0, 0, 0}}; \
  static const EnvStrDesc task##_strs_[] = {STRINGS(ENV_SDESC_){NULL, NULL}};                 \
  static const EnvStateDesc task##_state_[ENVS_COUNT + 1] = {STATE(ENV_XDESC_){NULL, 0, 0, 0}};
#define ENV_GDESC_(type, name) {#name, sizeof(type) == sizeof(int32_t)},
// the static table task_shared_ of a task with shared state (ENV_TASK_SHARED_INFO puts it in EnvTaskInfo)
#define ENV_TASK_SHARED_TABLE(task, SHARED) \
  static const EnvSharedDesc task##_shared_[ENVG_COUNT + 1] = {SHARED(ENV_GDESC_){NULL, 0}};
#define ENV_TASK_TABLE_INFO(task)                                                                            \
  .nparam = ENVP_COUNT, .params = task##_params_,                                                            \
  .nstr = (int)(sizeof(task##_strs_) / sizeof(task##_strs_[0])) - 1, .strs = task##_strs_, \
  .nstate = ENVS_COUNT, .state = task##_state_

// ---- tangent-space VJPs of an orientation R (body -> world, row-major) of a free or ball joint, whose tangent
// w is the rotation vector in the body frame (R' = R exp([w]x), the engine's quaternion integration) ----
// y = R x (x fixed in the body, y in the world; e.g. the torso's up axis): wbar += x cross (R^T ybar)
SIM_FN void env_vjp_rot_to_world(const sim_real R[9], const sim_real x[3], const sim_real ybar[3], sim_real wbar[3]) {
  sim_real b[3];  // R^T ybar
  for (int i = 0; i < 3; i++) b[i] = R[i] * ybar[0] + R[3 + i] * ybar[1] + R[6 + i] * ybar[2];
  wbar[0] += x[1] * b[2] - x[2] * b[1];
  wbar[1] += x[2] * b[0] - x[0] * b[2];
  wbar[2] += x[0] * b[1] - x[1] * b[0];
}
// y = R^T u (u fixed in the world, y in the body; e.g. the projected gravity): wbar += ybar cross y
SIM_FN void env_vjp_rot_to_body(const sim_real y[3], const sim_real ybar[3], sim_real wbar[3]) {
  wbar[0] += ybar[1] * y[2] - ybar[2] * y[1];
  wbar[1] += ybar[2] * y[0] - ybar[0] * y[2];
  wbar[2] += ybar[0] * y[1] - ybar[1] * y[0];
}

// ---- world-frame rotation cotangents: th is the cotangent of a rotation vector d applied on the left of a
// body's orientation (R -> exp([d]x) R, d in the world frame), as env_vjp_body_kin takes them ----
// M = A^T B (e.g. a body's orientation in an anchor's frame), Mbar its cotangent: B's rotation cotangent is +s,
// A's is -s, s = vee(G - G^T) with G = A Mbar B^T (written to s)
SIM_FN void env_vjp_rel_rot(const sim_real A[9], const sim_real Mbar[9], const sim_real B[9], sim_real s[3]) {
  sim_real T[9], G[9];  // T = Mbar B^T, G = A T
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      T[3 * i + j] = Mbar[3 * i] * B[3 * j] + Mbar[3 * i + 1] * B[3 * j + 1] + Mbar[3 * i + 2] * B[3 * j + 2];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) G[3 * i + j] = A[3 * i] * T[j] + A[3 * i + 1] * T[3 + j] + A[3 * i + 2] * T[6 + j];
  s[0] = G[7] - G[5], s[1] = G[2] - G[6], s[2] = G[3] - G[1];
}
// psi = atan2(R10, R00), the yaw of R (z-y-x Euler angles): th += psibar * dpsi/dd
SIM_FN void env_vjp_yaw(const sim_real R[9], sim_real psibar, sim_real th[3]) {
  sim_real c = R[0], s = R[3], n = c * c + s * s;
  if (!(n > 0)) return;
  th[0] -= psibar * c * R[6] / n;
  th[1] -= psibar * s * R[6] / n;
  th[2] += psibar;
}

SIM_FN void env_cross(sim_real r[3], const sim_real a[3], const sim_real b[3]) {
  r[0] = a[1] * b[2] - a[2] * b[1], r[1] = a[2] * b[0] - a[0] * b[2], r[2] = a[0] * b[1] - a[1] * b[0];
}

// ---- body frames, velocities and the VJP of body poses and velocities, for a tree of hinges under at most one
// free joint (at most one joint a body; the free joint's qvel: world linear velocity of the body origin, then the
// angular velocity in the body frame). The frames are the task's own (env_tree_frames), evaluated at the qpos
// it is given: a gradient pass hands a VJP a stored state whose kinematics arrays the world does not hold. ----
typedef struct EnvFrames {
  sim_real *xpos, *xquat, *xmat;  // (nbody, 3 / 4 / 9)
  sim_real *xanchor, *xaxis;      // (njnt, 3)
} EnvFrames;
// MuJoCo's mj_kinematics1 for such a tree (in sim_real: within rounding of the engine's kinematics stage)
SIM_FN void env_tree_frames(const SimModel* m, const sim_real* qpos, const EnvFrames* f) {
  const sim_real one[4] = {1, 0, 0, 0};
  for (int i = 0; i < 3; i++) f->xpos[i] = 0;
  for (int i = 0; i < 4; i++) f->xquat[i] = one[i];
  for (int i = 0; i < 9; i++) f->xmat[i] = (sim_real)(i % 4 == 0);
  for (int b = 1; b < m->nbody; b++) {
    int j = m->body_jntadr[b], pb = m->body_parentid[b];
    sim_real *p = f->xpos + 3 * b, *q = f->xquat + 4 * b;
    if (m->body_jntnum[b] == 1 && m->jnt_type[j] == SIM_JNT_FREE) {
      const sim_real* qj = qpos + m->jnt_qposadr[j];
      for (int i = 0; i < 3; i++) p[i] = f->xanchor[3 * j + i] = qj[i], f->xaxis[3 * j + i] = m->jnt_axis[3 * j + i];
      for (int i = 0; i < 4; i++) q[i] = qj[3 + i];
    } else {
      sim_real t[3];
      simu_rotVecQuat(t, m->body_pos + 3 * b, f->xquat + 4 * pb);
      for (int i = 0; i < 3; i++) p[i] = f->xpos[3 * pb + i] + t[i];
      simu_mulQuat(q, f->xquat + 4 * pb, m->body_quat + 4 * b);
      if (m->body_jntnum[b] == 1) {  // a hinge: turn about its axis, keeping its anchor
        sim_real *xa = f->xanchor + 3 * j, ql[4];
        simu_rotVecQuat(f->xaxis + 3 * j, m->jnt_axis + 3 * j, q);
        simu_rotVecQuat(t, m->jnt_pos + 3 * j, q);
        for (int i = 0; i < 3; i++) xa[i] = p[i] + t[i];
        simu_axisAngle2Quat(ql, m->jnt_axis + 3 * j, qpos[m->jnt_qposadr[j]] - m->qpos0[m->jnt_qposadr[j]]);
        simu_mulQuat(q, q, ql);
        simu_rotVecQuat(t, m->jnt_pos + 3 * j, q);
        for (int i = 0; i < 3; i++) p[i] = xa[i] - t[i];
      }
    }
    simu_normalize4(q);
    simu_quat2Mat(f->xmat + 9 * b, q);
  }
}
// Twists (nbody, 6) at the world origin: (angular velocity, velocity of the body-fixed point at the world
// origin), world frame; a body origin's velocity is tw[3..5] + tw[0..2] x xpos.
SIM_FN void env_body_twists(const SimModel* m, const EnvFrames* fr, const sim_real* qvel, sim_real* tw) {
  for (int k = 0; k < 6; k++) tw[k] = 0;
  for (int b = 1; b < m->nbody; b++) {
    sim_real* t = tw + 6 * b;
    const sim_real* tp = tw + 6 * m->body_parentid[b];
    for (int k = 0; k < 6; k++) t[k] = tp[k];
    if (m->body_jntnum[b] < 1) continue;
    int j = m->body_jntadr[b];
    const sim_real* qd = qvel + m->jnt_dofadr[j];
    sim_real a[3], x[3], s = 1;  // the joint's angular velocity a (times s) about the point x
    if (m->jnt_type[j] == SIM_JNT_FREE) {
      const sim_real* R = fr->xmat + 9 * b;
      for (int i = 0; i < 3; i++)
        a[i] = R[3 * i] * qd[3] + R[3 * i + 1] * qd[4] + R[3 * i + 2] * qd[5], x[i] = fr->xpos[3 * b + i];
      for (int i = 0; i < 3; i++) t[3 + i] += qd[i];
    } else {
      for (int i = 0; i < 3; i++) a[i] = fr->xaxis[3 * j + i], x[i] = fr->xanchor[3 * j + i];
      s = qd[0];
    }
    sim_real xa[3];
    env_cross(xa, x, a);
    for (int i = 0; i < 3; i++) t[i] += s * a[i], t[3 + i] += s * xa[i];
  }
}
// Row of g per body: the caller writes the cotangents of [xpos (3), orientation (3, world-frame rotation
// vector), origin velocity (3), angular velocity (3)] (zeros for bodies it does not read); the rest is scratch.
#define ENV_KIN_G 18
// Adds the tangent-space VJP into dqpos and dqvel (nv each) at the frames fr and velocity qvel; tw:
// env_body_twists there; g is consumed.
// A dof with motion axis S = (a, x cross a) moves the subtree below it rigidly: a pose gradient S . (Theta, P)
// with P = sum pbar, Theta = sum (thbar + x_b cross pbar); the subtree's twists turn by S x (t_b - t_parent), a
// gradient S . (sum t_b x* tbar_b - t_parent x* sum tbar_b) (x*: the spatial force cross product).
SIM_FN void env_vjp_body_kin(const SimModel* m, const EnvFrames* fr, const sim_real* qvel, const sim_real* tw,
                             sim_real* g, sim_real* dqpos, sim_real* dqvel) {
  for (int b = 1; b < m->nbody; b++) {  // a body's own terms: [Theta, P, tbar (n, f), t x* tbar]
    sim_real* r = g + ENV_KIN_G * b;
    const sim_real *p = fr->xpos + 3 * b, *w = tw + 6 * b, *u = tw + 6 * b + 3;
    sim_real P[3], T[3], n[3], f[3];
    for (int i = 0; i < 3; i++) f[i] = r[6 + i];
    env_cross(P, f, w);  // P = pbar + vbar x w (the origin's velocity turns with the body)
    for (int i = 0; i < 3; i++) P[i] += r[i];
    env_cross(T, p, P);  // Theta = thbar + x x P
    for (int i = 0; i < 3; i++) T[i] += r[3 + i];
    env_cross(n, p, f);  // the twist's angular cotangent: wbar + x x vbar
    for (int i = 0; i < 3; i++) n[i] += r[9 + i];
    for (int i = 0; i < 3; i++) r[i] = T[i], r[3 + i] = P[i], r[6 + i] = n[i], r[9 + i] = f[i];
    r[12] = w[1] * n[2] - w[2] * n[1] + u[1] * f[2] - u[2] * f[1];
    r[13] = w[2] * n[0] - w[0] * n[2] + u[2] * f[0] - u[0] * f[2];
    r[14] = w[0] * n[1] - w[1] * n[0] + u[0] * f[1] - u[1] * f[0];
    r[15] = w[1] * f[2] - w[2] * f[1], r[16] = w[2] * f[0] - w[0] * f[2], r[17] = w[0] * f[1] - w[1] * f[0];
  }
  for (int b = m->nbody - 1; b >= 1; b--) {  // children first: row b holds its subtree's sums
    sim_real* r = g + ENV_KIN_G * b;
    int pb = m->body_parentid[b];
    if (m->body_jntnum[b] >= 1) {
      int j = m->body_jntadr[b], v = m->jnt_dofadr[j];
      const sim_real *n = r + 6, *f = r + 9, *tp = tw + 6 * pb;
      sim_real x[3], Q[6];  // Q = sum t_b x* tbar_b - t_parent x* sum tbar_b
      if (m->jnt_type[j] == SIM_JNT_FREE) {  // the rotation sits below the translation: t_parent = (0, v_lin)
        const sim_real* vl = qvel + v;
        for (int i = 0; i < 3; i++) x[i] = fr->xpos[3 * b + i];
        Q[0] = r[12] - (vl[1] * f[2] - vl[2] * f[1]), Q[1] = r[13] - (vl[2] * f[0] - vl[0] * f[2]);
        Q[2] = r[14] - (vl[0] * f[1] - vl[1] * f[0]);
        for (int i = 0; i < 3; i++) {
          Q[3 + i] = r[15 + i];
          dqpos[v + i] += r[3 + i] + r[15 + i];  // translations move the whole subtree (t_parent = 0)
          dqvel[v + i] += f[i];
        }
      } else {
        for (int i = 0; i < 3; i++) x[i] = fr->xanchor[3 * j + i];
        Q[0] = r[12] - (tp[1] * n[2] - tp[2] * n[1] + tp[4] * f[2] - tp[5] * f[1]);
        Q[1] = r[13] - (tp[2] * n[0] - tp[0] * n[2] + tp[5] * f[0] - tp[3] * f[2]);
        Q[2] = r[14] - (tp[0] * n[1] - tp[1] * n[0] + tp[3] * f[1] - tp[4] * f[0]);
        Q[3] = r[15] - (tp[1] * f[2] - tp[2] * f[1]), Q[4] = r[16] - (tp[2] * f[0] - tp[0] * f[2]);
        Q[5] = r[17] - (tp[0] * f[1] - tp[1] * f[0]);
      }
      // S . F for S = (a, x cross a), F = (n, f): a . (n + f cross x)
      sim_real fq[3], fv[3];
      for (int i = 0; i < 3; i++) fq[i] = r[i] + Q[i], fv[i] = n[i];
      const sim_real Pf[3] = {r[3] + Q[3], r[4] + Q[4], r[5] + Q[5]};
      fq[0] += Pf[1] * x[2] - Pf[2] * x[1], fq[1] += Pf[2] * x[0] - Pf[0] * x[2], fq[2] += Pf[0] * x[1] - Pf[1] * x[0];
      fv[0] += f[1] * x[2] - f[2] * x[1], fv[1] += f[2] * x[0] - f[0] * x[2], fv[2] += f[0] * x[1] - f[1] * x[0];
      if (m->jnt_type[j] == SIM_JNT_FREE) {  // rotation dofs: the body-frame axes R e_k
        const sim_real* R = fr->xmat + 9 * b;
        for (int k = 0; k < 3; k++) {
          dqpos[v + 3 + k] += R[k] * fq[0] + R[3 + k] * fq[1] + R[6 + k] * fq[2];
          dqvel[v + 3 + k] += R[k] * fv[0] + R[3 + k] * fv[1] + R[6 + k] * fv[2];
        }
      } else {
        const sim_real* a = fr->xaxis + 3 * j;
        dqpos[v] += a[0] * fq[0] + a[1] * fq[1] + a[2] * fq[2];
        dqvel[v] += a[0] * fv[0] + a[1] * fv[1] + a[2] * fv[2];
      }
    }
    if (pb > 0)
      for (int i = 0; i < ENV_KIN_G; i++) g[ENV_KIN_G * pb + i] += r[i];
  }
}

// SHAC's per-world check of one step's cotangents (CPU and CUDA): world w's dL/da (A), engine cotangents (cq, cv:
// nv) and task-state cotangents (field k: ds[k], (nworld, count[k]), row w; NULL fields skipped; ds NULL: none)
// are all zeroed when one of them is non-finite (returns 1); *norm = |dL/da| after it (float of float64 norm)
SIM_FN int env_cot_check(float* da, int A, sim_real* cq, sim_real* cv, int nv, void* const* ds, const int* count,
                         int nfield, int w, float* norm) {
  int fin = 1;
  for (int j = 0; j < A; j++) fin &= isfinite(da[j]) != 0;
  for (int k = 0; k < nv; k++) fin &= isfinite(cq[k]) && isfinite(cv[k]);
  for (int f = 0; ds && f < nfield; f++)
    for (int k = 0; ds[f] && k < count[f]; k++) fin &= isfinite(((sim_real*)ds[f])[(size_t)w * count[f] + k]) != 0;
  if (!fin) {
    for (int j = 0; j < A; j++) da[j] = 0;
    for (int k = 0; k < nv; k++) cq[k] = 0, cv[k] = 0;
    for (int f = 0; ds && f < nfield; f++)
      for (int k = 0; ds[f] && k < count[f]; k++) ((sim_real*)ds[f])[(size_t)w * count[f] + k] = 0;
  }
  double n2 = 0;
  for (int j = 0; j < A; j++) n2 += (double)da[j] * da[j];
  *norm = (float)sqrt(n2);
  return !fin;
}

typedef struct EnvTaskInfo {
  const char* name;
  const char* model;      // MJCF, found through the asset search path
  int disable_add;        // SimLoadOptions.disable_add (e.g. SIM_DSBL_CONSTRAINT until the solver lands)
  int obs_dim, act_dim;   // obs_dim: at the default constants (see obs_dim_of)
  int episode_steps;      // time limit in control steps
  int frame_skip;         // physics steps per control step
  int needs_kinematics;   // reward/observe read xpos/xmat: run kinematics after the step
  const char* const* obs_names;  // observation element names (for exports and logs), of the largest observation
                                 // (quad_stand lists its critic observation's, which extends the actor's)
  const char* const* act_names;  // (act_dim)
  // the field tables (ENV_TASK_TABLE_INFO): constants settable per run (config key env.params,
  // "name=value, ..."), numbers within [lo, hi] and strings; per-world state
  int nparam;                   // <= ENV_MAX_PARAMS
  const EnvParamDesc* params;   // (nparam)
  int nstr;                     // <= ENV_MAX_STRS
  const EnvStrDesc* strs;       // (nstr)
  int nstate;                   // <= ENV_MAX_STATE
  const EnvStateDesc* state;    // (nstate)
  // optional (NULL: obs_dim): the observation size under the constants p, for a task whose observation grows
  // with one of them (the hopper's clock); obs_names covers the largest. env_create_params resolves it once:
  // every reader takes EnvBatch.obs_dim (or env_task_obs_dim without a batch), never obs_dim
  int (*obs_dim_of)(const double* p);
  // optional (NULL: none): model load options under the constants p, applied before the model is compiled into
  // the engine (e.g. the hopper's gear_scale); the MuJoCo model kept beside it gets the same. Returns 0, or
  // non-zero with a message naming the bad constant
  int (*load_options)(const double* p, SimLoadOptions* opt, char* err, size_t errlen);
  // optional (NULL: no task data): builds the read-only task data from the constants p and strings s (e.g.
  // loads a motion library from a file named by a string constant) into one malloc'd blob *data of *bytes
  // (position-independent: offsets, no pointers). Returns 0, or non-zero with a message naming the culprit
  int (*load_data)(const SimModel* m, const double* p, const char* const* s, void** data, size_t* bytes, char* err,
                   size_t errlen);
  // optional (ENV_TASK_CRITIC_INFO; 0 / NULL: the critic reads the actor's observation): the critic's own
  // observation, its size and the host table of its functions
  int critic_obs_dim;
  const struct EnvTaskCritic* critic;
  // optional (NULL: none): evaluation on the task's reference motions (`adjoint eval --motions`, the trainer's
  // run.eval_motions), for a task that tracks clips
  const struct EnvTaskEval* eval;
  // optional (ENV_TASK_SHARED_INFO; 0 / NULL: none): task-shared state, its table, the element counts of its
  // fields under the constants p and the task data (called once, after load_data: count[k] >= 1; 0, or non-zero
  // with a message), and the host table of its functions
  int nshared;                  // <= ENV_MAX_SHARED
  const EnvSharedDesc* shared;  // (nshared)
  int (*shared_size)(const double* p, const void* data, int* count, char* err, size_t errlen);
  const struct EnvTaskSharedFns* shared_fns;
  // optional (0 / NULL: none): the task's own per-iteration metrics, read from its shared state (the trainer
  // logs them after the algorithm's: metrics.csv columns and TensorBoard task/<name>)
  int nmetric;                      // <= ENV_MAX_TASK_METRICS
  const char* const* metric_names;  // (nmetric)
  void (*metrics)(const double* p, const void* data, void* const* shared, double* out /*(nmetric)*/);
  // optional (NULL: never): 1 when the worlds need per-world parameters (sim_params_enable) under the constants
  // p, e.g. domain randomisation that the task's reset writes into the world's prm_* arrays
  int (*uses_params)(const double* p);
  // optional (NULL: none): what a deployment of the task's policy needs beyond the generic export (`adjoint export`
  // writes it into the ONNX metadata_props and the blob's sidecar): put(ctx, key, value) per pair, under the
  // constants p on the compiled model m (no task data); values are text, lists as JSON. A key the export writes
  // itself (e.g. action_scale, default_joint_pos) takes the task's value. Returns 0, or non-zero with a message
  int (*export_meta)(const SimModel* m, const double* p, void (*put)(void* ctx, const char* key, const char* value),
                     void* ctx, char* err, size_t errlen);
} EnvTaskInfo;
#define ENV_MAX_TASK_METRICS 8

// host-side table of a motion-tracking task's evaluation (algo/motion_eval.h runs it): one clip per world, from
// its first frame at the reference state, on the nominal model
typedef struct EnvTaskEval {
  // env.params appended to the run's for evaluation: the evaluation start mode (a world plays its clip once,
  // no re-draw at the clip's end) and the nominal model (no reset noise, pushes, observation noise or
  // randomisation); the motion data is the run's string constant `motion` unless replaced
  const char* params;
  const char* motion_key;  // the string constant naming the motion data (e.g. "motion")
  int (*nclip)(const void* data);
  const char* (*clip_name)(const void* data, int clip);  // NULL-free: a name for every clip
  int (*clip_steps)(const void* data, int clip);         // control steps of a full-clip episode
  // puts world w (just reset) at clip's first frame, exactly at the reference state
  void (*start)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, int clip);
  // after a control step: out[0] the normalized tracking score in [0, 1] (the tracking terms' weighted sum over
  // the sum of their weights), out[1] the mean distance of the tracked bodies to the reference re-anchored to
  // the robot (m), out[2] the anchor's world distance to the reference anchor (m)
  void (*step)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, double out[3]);
  // the reference's qpos (nq) at the frame the last step was scored against (the first frame before any step)
  void (*ref_qpos)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* qpos);
} EnvTaskEval;

// host-side table of a task's critic observation (ENV_TASK_CRITIC)
typedef struct EnvTaskCritic {
  void (*observe)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* obs);
  void (*observe_vjp)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* dobs,
                      sim_real* dqpos, sim_real* dqvel);
} EnvTaskCritic;

// host-side table of one task (per-world calls; c from env_task_ctx)
typedef struct EnvTask {
  EnvTaskInfo info;
  void (*reset)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, uint64_t* rng);
  void (*act)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* act);
  sim_real (*reward)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* act);
  int (*terminated)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c);
  void (*observe)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* obs);
  void (*observe_vjp)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* dobs,
                      sim_real* dqpos, sim_real* dqvel);
  void (*reward_vjp)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* act, sim_real dr,
                     sim_real* dqpos, sim_real* dqvel, sim_real* dctrl);
  void (*act_vjp)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* act,
                  const sim_real* dctrl, sim_real* dact);
  // optional per-episode statistics (ENV_TASK_HOST_STATS; 0 / NULL without), evaluated at an episode's final
  // state (before the auto-reset: the state its last reward saw) and reported by `adjoint eval`
  int nstat;                      // <= ENV_MAX_STATS
  const char* const* stat_names;  // (nstat), e.g. the hopper's "forward_speed"
  void (*episode_stats)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* out /*(nstat)*/);
} EnvTask;
#define ENV_MAX_STATS 8

#define ENV_TASK_HOST_FNS_(task)                                                                              \
  static void task##_host_reset(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, uint64_t* rng) {   \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_reset(m, &wd, c, rng, 0, 1);                                                                       \
  }                                                                                                           \
  static void task##_host_act(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, const sim_real* a) { \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_act(m, &wd, c, a, 0, 1);                                                                           \
  }                                                                                                           \
  static sim_real task##_host_reward(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,               \
                                     const sim_real* a) {                                                     \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    return task##_reward(m, &wd, c, a);                                                                       \
  }                                                                                                           \
  static int task##_host_terminated(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c) {              \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    return task##_terminated(m, &wd, c);                                                                      \
  }                                                                                                           \
  static void task##_host_observe(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* o) {   \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe(m, &wd, c, o, 0, 1);                                                                       \
  }                                                                                                           \
  static void task##_host_observe_vjp(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,              \
                                      const sim_real* g, sim_real* dq, sim_real* dv) {                        \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe_vjp(m, &wd, c, g, dq, dv);                                                                 \
  }                                                                                                           \
  static void task##_host_reward_vjp(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,               \
                                     const sim_real* a, sim_real dr, sim_real* dq, sim_real* dv, sim_real* dc) { \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_reward_vjp(m, &wd, c, a, dr, dq, dv, dc);                                                          \
  }                                                                                                           \
  static void task##_host_act_vjp(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,                  \
                                  const sim_real* a, const sim_real* dc, sim_real* da) {                      \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_act_vjp(m, &wd, c, a, dc, da);                                                                     \
  }

#define ENV_TASK_HOST_ROWS_(task)                                                                             \
  task##_host_reset, task##_host_act, task##_host_reward, task##_host_terminated, task##_host_observe,        \
      task##_host_observe_vjp, task##_host_reward_vjp, task##_host_act_vjp
#define ENV_TASK_HOST(task, ...)                                                                              \
  ENV_TASK_HOST_FNS_(task)                                                                                    \
  const EnvTask env_task_##task = {__VA_ARGS__, ENV_TASK_HOST_ROWS_(task), 0, NULL, NULL};
// ENV_TASK_HOST with per-episode statistics (EnvTask.nstat/stat_names/episode_stats) from
//   void <task>_episode_stats(const SimModel*, const SimWorld*, const EnvTaskCtx*, sim_real* out /*(nstat)*/)
#define ENV_TASK_HOST_STATS(task, nstat_, names_, ...)                                                        \
  ENV_TASK_HOST_FNS_(task)                                                                                    \
  static void task##_host_episode_stats(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,            \
                                        sim_real* o) {                                                        \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_episode_stats(m, &wd, c, o);                                                                       \
  }                                                                                                           \
  const EnvTask env_task_##task = {__VA_ARGS__, ENV_TASK_HOST_ROWS_(task), nstat_, names_,                    \
                                   task##_host_episode_stats};

// host-side table of a task's shared-state functions (ENV_TASK_SHARED_FNS)
typedef struct EnvTaskSharedFns {
  int32_t (*report)(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, int ended);
  void (*update)(const SimModel* m, const EnvTaskCtx* c, const int32_t* report, int nworld);
} EnvTaskSharedFns;

// Task-shared state (ENV_TASK_SHARED above): after its per-world functions, ENV_TASK_SHARED_FNS(task) over
//   int32_t <task>_report(const SimModel*, const SimWorld*, const EnvTaskCtx* c, int ended)
//       every world, after its reward and termination, before any auto-reset (c: the world's state as the step
//       left it); ended: 0 running, 1 terminated (a failure: early termination, non-finite resets included),
//       2 time limit. Its value goes to the shared update
//   void    <task>_shared_update(const SimModel*, const EnvTaskCtx* c, const int32_t* report /*(nworld)*/,
//                                int nworld, int lane, int nlane)
//       once per control step (report: every world's value, in world order) and once at create (report NULL:
//       the derived arrays from zeroed state); c holds the constants, data and shared state (no world). The
//       CPU runs it with one lane, the GPU in one block (lane = thread, nlane = the block's threads): phases
//       end with ENV_BLOCK_SYNC(), and a result must not depend on nlane (fixed-order loops, no atomics), so
//       that both give the same bits. Resets then read the new state.
// and ENV_TASK_SHARED_INFO(task, size_fn) in its EnvTaskInfo (with ENV_TASK_SHARED_TABLE in the host part).
#define ENV_TASK_SHARED_INFO(task, size_fn) \
  .nshared = ENVG_COUNT, .shared = task##_shared_, .shared_size = (size_fn), .shared_fns = &task##_sharedfns_

#ifndef __CUDACC__
#define ENV_TASK_SHARED_FNS(task)                                                                             \
  static int32_t task##_host_report(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, int ended) {   \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    return task##_report(m, &wd, c, ended);                                                                   \
  }                                                                                                           \
  static void task##_host_shared_update(const SimModel* m, const EnvTaskCtx* c, const int32_t* r, int n) {    \
    task##_shared_update(m, c, r, n, 0, 1);                                                                   \
  }                                                                                                           \
  static const EnvTaskSharedFns task##_sharedfns_ = {task##_host_report, task##_host_shared_update};

// ENV_TASK_CRITIC(task) on the host: the table task_critic_ over <task>_observe_critic(_vjp)
#define ENV_TASK_CRITIC(task)                                                                                 \
  static void task##_host_observe_critic(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,           \
                                         sim_real* o) {                                                       \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe_critic(m, &wd, c, o, 0, 1);                                                                \
  }                                                                                                           \
  static void task##_host_observe_critic_vjp(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c,       \
                                             const sim_real* g, sim_real* dq, sim_real* dv) {                 \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe_critic_vjp(m, &wd, c, g, dq, dv);                                                          \
  }                                                                                                           \
  static const EnvTaskCritic task##_critic_ = {task##_host_observe_critic, task##_host_observe_critic_vjp};
#endif
#define ENV_TASK_CRITIC_INFO(task, dim) .critic_obs_dim = (dim), .critic = &task##_critic_

const EnvTask* env_find_task(const char* name);  // NULL if unknown
const char* env_task_names(void);                // "cartpole|...": the tasks of envs/tasks.list

#define ENV_RECENT 100  // finished episodes kept for the statistics

typedef struct EnvBatch {
  const EnvTask* task;
  void* mjmodel;  // mjModel* (kept for the engine's lifetime)
  SimModel* m;
  SimData* d;
  int nworld, obs_dim, act_dim, episode_steps;
  // the task's fields (env.h, field tables)
  double param[ENV_MAX_PARAMS];         // numeric constants: defaults, then env.params
  char str[ENV_MAX_STRS][ENV_STR_MAX];  // string constants
  const char* strp[ENV_MAX_STRS];       // str as pointers (load_data's s)
  void* data;                           // read-only task data (load_data's blob; NULL: none)
  size_t data_bytes;
  int data_shared;                      // 1: data belongs to another batch (env_create_like)
  void* shared[ENV_MAX_SHARED];         // task-shared state (checkpointed): field k holds shared_count[k]
  int shared_count[ENV_MAX_SHARED];     // elements (double or int32_t, EnvTaskInfo.shared[k])
  int32_t* report;                      // (nworld) the last step's <task>_report values (tasks with shared state)
  // carried state (checkpointed), world-major
  void* state[ENV_MAX_STATE];  // per-world task state, field-major: field k is (nworld, state[k].count)
  int32_t* t;           // (nworld) control steps into the running episode
  uint64_t* rng;        // (nworld) reset-noise streams
  int32_t* nan_seen;    // (nworld) d->nan_count at the last check
  sim_real* obs;        // (nworld, obs_dim) observation now (after any auto-reset)
  int critic_obs_dim;   // the critic's observation size: the task's critic_obs_dim, or obs_dim without one
  sim_real* cobs;       // (nworld, critic_obs_dim) the critic's observation now: obs itself without one
  double* ep_return;    // (nworld) return of the running episode
  int64_t stats[2];     // finished episodes, non-finite resets
  double recent_return[ENV_RECENT];  // ring of finished episodes
  int32_t recent_len[ENV_RECENT];
  // outputs of the last env_step
  sim_real* reward;       // (nworld)
  uint8_t* terminated;    // (nworld) early termination (value 0 after it), non-finite resets included
  uint8_t* truncated;     // (nworld) time limit (bootstrap from final_obs)
  sim_real* final_obs;    // (nworld, obs_dim) observation before the auto-reset (where terminated|truncated)
  sim_real* final_cobs;   // (nworld, critic_obs_dim) the critic's, likewise (final_obs without one)
  void* final_state[ENV_MAX_STATE];  // the task state before the auto-reset (where terminated|truncated), as state
  sim_real* final_qpos;   // (nworld, nq) engine state before the auto-reset (where terminated|truncated): the
  sim_real* final_qvel;   // (nworld, nv) state the reward and final_obs were computed at (SHAC's VJPs need it)
  sim_real* final_ctrl;   // (nworld, nu)
  sim_real* final_stats;  // (nworld, task->nstat) episode statistics where terminated|truncated (NaN after a
                          // non-finite reset); NULL when the task has none
  int64_t nan_last;       // non-finite resets during the last env_step
  double reward_total;    // sum of all rewards so far (for per-iteration means; not part of the run's state)
  int record;             // 1: env_step records the engine tape (sim_control_step(record)); needs env_enable_gradients
  int hold;               // 1: a finished world is not reset (evaluation: it keeps stepping from its final state)
} EnvBatch;

// The per-world context of world w (constants, data, state; no cotangents).
void env_task_ctx(const EnvBatch* e, int w, EnvTaskCtx* c);
// Bytes of one world's row of state field k of task tk (count * 4: sim_real is float here, or int32_t).
size_t env_state_row_bytes(const EnvTask* tk, int k);

// Loads the task's model (applying its disable flags) and makes nworld worlds, all reset with the seed.
int env_create(EnvBatch** out, const char* task, int nworld, int episode_steps /* 0: task default */, uint64_t seed,
               char* err, size_t errlen);
// The same with task constants: params = "name=value, name=value" over the task's defaults (NULL or "": all
// defaults); an unknown name, a bad number or one outside the constant's bounds is an error naming it
// ("env.params: ...").
int env_create_params(EnvBatch** out, const char* task, const char* params, int nworld, int episode_steps,
                      uint64_t seed, char* err, size_t errlen);
// The same for a task given by its table (e.g. one outside envs/tasks.list, in a test).
int env_create_task(EnvBatch** out, const EnvTask* tk, const char* params, int nworld, int episode_steps,
                    uint64_t seed, char* err, size_t errlen);
// A batch of nworld worlds of like's task with like's task data (shared, not copied: like must outlive it), e.g.
// evaluation worlds sized after the task data was read or beside the training worlds. params NULL: like's constants
// and strings; else the spec params, whose strings must equal like's (the data was loaded from them).
int env_create_like(EnvBatch** out, const EnvBatch* like, const char* params, int nworld, int episode_steps,
                    uint64_t seed, char* err, size_t errlen);
// The observation size env_create_params gives task tk under the spec params (for readers without an EnvBatch,
// e.g. `adjoint export`); -1 and err on a bad spec.
int env_task_obs_dim(const EnvTask* tk, const char* params, char* err, size_t errlen);
// The task's numeric constants (p: ENV_MAX_PARAMS, in table order) under the spec params, as env_create_params
// resolves them; -1 and err on a bad spec.
int env_task_constants(const EnvTask* tk, const char* params, double* p, char* err, size_t errlen);
void env_destroy(EnvBatch* e);
// Re-creates the engine data with reverse-mode gradients (sim_adjoint_enable(ntape physics substeps per world)),
// keeping every world's state (qpos, qvel, ctrl, warm start, applied forces, time, counters). 0 or -1.
int env_enable_gradients(EnvBatch* e, int ntape);
// Sets each world's step counter to a uniform draw in [0, episode_steps) (its reset stream): the first episodes
// end at different times, so that synchronous worlds do not all see the same phase of an episode.
void env_randomize_episode_start(EnvBatch* e);
// Applies act (nworld, act_dim), steps, fills reward/terminated/truncated/final_obs, auto-resets, updates obs.
void env_step(EnvBatch* e, const sim_real* act);
// Mean return and length over the last min(finished, ENV_RECENT) episodes (NaN when none finished).
void env_recent_stats(const EnvBatch* e, double* mean_return, double* mean_length);
// Evaluation starts (the task's EnvTaskInfo.eval): world w reset, then put at clip[w]'s first frame (its
// eval->start), step counter and return zeroed, observations refreshed. 0, or -1 when the task has no eval table.
int env_eval_start(EnvBatch* e, const int* clip);
// The task's shared update with the reports report (nworld; NULL: initialise), as env_step runs it between the
// terminations and the resets (a no-op for a task without shared state).
void env_shared_update(EnvBatch* e, const int32_t* report);
// Bytes of shared field k (count x 8 for double, x 4 for int32_t).
size_t env_shared_bytes(const EnvBatch* e, int k);
// The task's metrics now (EnvTaskInfo.metrics; nothing for a task without): out has nmetric elements.
void env_task_metrics(const EnvBatch* e, double* out);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
// ENV_TASK_CRITIC(task) on the device: EnvCritic<EnvCriticTag_task> over the task's functions (the fused kernels
// of envs/env_cuda_task.cuh ask EnvCritic<...>::on); a task without one gets this empty primary template
template <class Tag>
struct EnvCritic {
  enum { on = 0 };
  static __device__ __forceinline__ void observe(const SimModel*, const SimWorld*, const EnvTaskCtx*, sim_real*, int,
                                                 int) {}
  static __device__ __forceinline__ void observe_vjp(const SimModel*, const SimWorld*, const EnvTaskCtx*,
                                                     const sim_real*, sim_real*, sim_real*) {}
};
// ENV_TASK_SHARED_FNS(task) on the device: EnvShared<EnvSharedTag_task> over the task's shared functions (the
// step launcher runs the update in one block between the step kernel and the resets); without: on = 0
template <class Tag>
struct EnvShared {
  enum { on = 0 };
  static __device__ __forceinline__ int32_t report(const SimModel*, const SimWorld*, const EnvTaskCtx*, int) {
    return -1;
  }
  static __device__ __forceinline__ void update(const SimModel*, const EnvTaskCtx*, const int32_t*, int, int, int) {}
};
#define ENV_TASK_SHARED_FNS(task)                                                                                   \
  struct EnvSharedTag_##task;                                                                                       \
  template <>                                                                                                       \
  struct EnvShared<EnvSharedTag_##task> {                                                                           \
    enum { on = 1 };                                                                                                \
    static __device__ __forceinline__ int32_t report(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,      \
                                                     int ended) {                                                   \
      return task##_report(m, d, c, ended);                                                                         \
    }                                                                                                               \
    static __device__ __forceinline__ void update(const SimModel* m, const EnvTaskCtx* c, const int32_t* r, int n,  \
                                                  int l, int nl) {                                                  \
      task##_shared_update(m, c, r, n, l, nl);                                                                      \
    }                                                                                                               \
  };
#define ENV_TASK_CRITIC(task)                                                                                       \
  struct EnvCriticTag_##task;                                                                                       \
  template <>                                                                                                       \
  struct EnvCritic<EnvCriticTag_##task> {                                                                           \
    enum { on = 1 };                                                                                                \
    static __device__ __forceinline__ void observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,       \
                                                   sim_real* o, int l, int n) {                                     \
      task##_observe_critic(m, d, c, o, l, n);                                                                      \
    }                                                                                                               \
    static __device__ __forceinline__ void observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,   \
                                                       const sim_real* g, sim_real* dq, sim_real* dv) {             \
      task##_observe_critic_vjp(m, d, c, g, dq, dv);                                                                \
    }                                                                                                               \
  };
#endif
#endif
