// shac.c: SHAC (Xu et al. 2022, NVlabs/DiffRL algorithms/shac.py) and its ∇Mimic options, on the CPU backend.
//
// One iteration (algo.horizon = H control steps, N worlds):
//  1. Rollout from the carried state with the engine tape on (EnvBatch.record): a_t = tanh(z + sigma * eps),
//     z = actor(norm(o_t)) before its output tanh (sigma = policy.init_noise_std, fixed; eps ~ N(0,1) per world
//     stream): DiffRL's squashed Gaussian, so actions stay inside the range and keep a gradient. With
//     shac.noise_correlation = rho > 0 the noise is temporally correlated (an AR(1) / discrete OU process per
//     world and action): e <- rho e + sqrt(1 - rho^2) eps (the same eps draws), a_t = tanh(z + sigma * e); e
//     starts at 0, is kept across iterations (and in checkpoints, "shac/action_noise") and is set to 0 when
//     the world's episode ends (terminated or truncated at that step). rho = 0: the independent eps above,
//     bitwise the behaviour before the option. The normalizer is frozen during the rollout and updated with the rollout's observations
//     after it. Per step we keep the pre-step state (qpos, qvel, ctrl), the post-step state before any
//     auto-reset (env's final_q* where a world ended), observations, actions, rewards and done flags.
//  2. Actor loss (DiffRL): -sum_w [sum over the window's episode segments of sum_t gamma^k r_t + gamma^(k+1)
//     V_targ(s_end)] / (H N), k counted from the segment start; V = 0 after a termination (non-finite resets
//     included), V_targ(final observation) at a time-out (truncation) and at the window's end.
//  3. Backward through time, t = H-1..0, per world: cotangent of the post-step state <- (future, unless the
//     world ended at t) + reward_vjp + bootstrap (target critic input gradient -> nn_norm_backward ->
//     observe_vjp); sim_control_step_backward -> pre-state cotangent and adj_ctrl; act_vjp -> dL/da_t;
//     [∇Mimic (a): per-world clip]; actor backward (recomputed forward) -> parameter gradient (accumulated) and
//     input gradient -> nn_norm_backward -> observe_vjp at the pre-state, added to the pre-state cotangent.
//     Non-finite cotangents of a world are zeroed (counted in the metric nonfinite_grads).
//  4. Actor update: Adam (shac.beta1/beta2, linear decay to 1e-5 over shac.lr_schedule_iterations, global norm
//     clip shac.actor_grad_norm) on the BPTT gradient, or [∇Mimic (b)] on the target-action regression loss.
//  5. Critic: TD(lambda) targets from the target critic (DiffRL's recursion, last step forced done),
//     shac.critic_iterations passes x shac.critic_minibatches minibatches (no shuffle) of MSE with Adam and
//     norm clip shac.critic_grad_norm; then target <- tau * target + (1 - tau) * critic (shac.target_tau).
//
// ∇Mimic options (each off at 0; configs/cartpole_nablamimic.yaml turns them on):
//  (a) nablamimic.action_grad_clip_k = k: at each step t, g_w = dL/da_t(w) is scaled to norm <= k * median_w
//      ||g_w|| (the median over the N worlds of that step). The clipped gradient is what flows further back.
//  (b) nablamimic.target_action_step = eta: target actions a*_t(w) = clamp(mu_t(w) - eta * g_w / (||g_w|| +
//      1e-8), -1, 1), mu = tanh(actor) the deterministic action of the rollout and g_w the (clipped) gradient of
//      the actor loss wrt a_t(w) (noise is additive, so dL/dmu = dL/da). The actor is then fitted to the fixed
//      targets: SHAC_REGRESSION_STEPS Adam steps on 0.5 * mean over (t, w) of ||tanh(actor(x_t)) - a*||^2
//      (full batch), instead of one step on the raw BPTT gradient. Worlds with g_w = 0 keep a* = mu.
//  (c) nablamimic.policy_ema_decay = d: Adam keeps an EMA of the actor parameters after every actor step;
//      evaluation (act_eval) and export ("shac/ema") use it.
//  (d) nablamimic.zeroth_order_weight = beta in (0, 1] (needs (b)): a
//      zeroth-order (likelihood-ratio, PPO-like) direction mixed into (b)'s targets, so that the regression can
//      follow returns the first-order gradient does not see (e.g. a hopper's lift-off). Before the actor
//      update: advantages A_t(w) = G_t(w) - V_targ(s_t(w)), G the TD(lambda) targets of step 5 (computed
//      first now; they depend on the rollout only) and V_targ the target critic (the function G bootstraps
//      from, so A is GAE(lambda) of V_targ); normalized over the H N batch (mean 0, std 1, eps 1e-8) and
//      clipped to [-3, 3]: An. Then
//        a*_t(w) = clamp(mu + eta [(1 - beta) (-g / (|g| + 1e-8)) + beta An (a - mu) / sigma_eff], -1, 1)
//      with a = tanh(z + sigma eps) the applied action, mu = tanh(z), sigma_eff = sigma sqrt(A): a - mu ~
//      (1 - mu^2) sigma eps, so |(a - mu) / sigma_eff| <~ 1 (its mean square is mean_j (1 - mu_j^2)^2 E eps^2),
//      the same scale as the unit first-order direction; E[An (a - mu)] follows the advantage's slope along the
//      action. g = 0 (or a non-finite world) leaves only the zeroth-order term; samples whose advantage is
//      not finite get An = 0 and are left out of the mean and std. Metric advantage_abs_mean: mean |A| before
//      the normalization (0 when off). At beta = 0 nothing of this runs (bitwise the previous behaviour).
//
// Per-world task state (env.h's field tables): the rollout records every field at each step, before the act
// (s_t) and after it (s'_t, before any auto-reset). Each VJP runs at its step's recorded state: reward and the
// bootstrap observation at s'_t, act_vjp at s_t (mapping the cotangent of s'_t to dL/da_t and that of s_t),
// the actor input's observation at s_t. The cotangent of the grad fields is carried back across steps with the
// engine's (cut where a world ended) and checked with it (env_cot_check).
// A task with a critic observation (EnvTaskInfo.critic) feeds the critic, the target critic and the critic's own
// normalizer ("shac/critic_obs_norm/*") from it; the bootstrap gradient goes through its VJP.
//
// The engine adjoint differentiates the whole step, constraint rows included (contacts, limits, friction
// loss), within the discrete regime of each evaluation (contact set and row states frozen). Position cotangents
// are in the engine's tangent space (nv; env.h): free-floating robots (nq != nv) train as the others do.
//
// The per-sample formulas are algo/shac_math.h's (shared with shac_cuda.cu); this file holds the CPU loops.
// Buffers are time-major, world-minor: (H, N, ...). Deterministic: fixed seeds, sequential loops, no threads.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/shac_math.h"
#include "nn/nn.h"
#include "sim/sim_adjoint.h"

// The arrays, as X(name, type, count); a count of 0 leaves the pointer NULL. Rollout arrays are (H, N, ...)
// (hn = H N); counts are expressions of shac_create's locals (mx = max(hn, N), nu at least 1).
#define SHAC_BUFFERS(X)                                                                                  \
  X(act_rng, uint64_t, N)                   /* exploration noise stream per world */                     \
  X(noise, double, s->rho > 0 ? N * A : 0)  /* (N, A) correlated noise state e, rho > 0 only */          \
  X(obs, float, hn * O) X(nobs, float, hn * O) X(mu, float, hn * A) X(act, float, hn * A)                \
  X(cobs, float, priv ? hn * Oc : 0) X(cnobs, float, priv ? hn * Oc : 0) /* the critic's observations */ \
  X(rew, float, hn) X(nxt_obs, float, hn * Oc) X(nxt_nobs, float, hn * Oc) X(nxt_val, float, hn)         \
  X(pre_s, int32_t, hn * sw) X(post_s, int32_t, hn * sw) /* task state before / after the act */        \
  X(cds, float, N * sw)                     /* carried cotangent of the task state (grad fields) */     \
  X(tgt, float, hn) X(coef_r, float, hn) X(coef_v, float, hn) X(term, uint8_t, hn) X(trunc, uint8_t, hn) \
  X(pre_q, float, hn * nq) X(pre_v, float, hn * nv)                                                      \
  X(post_q, float, hn * nq) X(post_v, float, hn * nv) X(post_u, float, hn * nu)                          \
  X(cq, float, N * nv) X(cv, float, N * nv) /* carried cotangent of the pre-state of step t+1 */         \
  X(du, float, N * nu)                      /* reward's ctrl cotangent */                                \
  X(dact, float, N * A) X(dx, float, mx * Om) X(dobs, float, mx * Om) X(braw, float, mx * Om)            \
  X(ga, float, na) X(gsum, float, na)       /* actor gradient accumulator */                             \
  X(bx, float, mx * Om) X(by, float, mx * A1) X(bdy, float, mx * A1) /* batch scratch */                 \
  X(gtarget, float, hn * A)                 /* action gradients (∇Mimic b) */                            \
  X(adv, float, hn)                         /* normalized, clipped advantages (∇Mimic d) */              \
  X(gnorm, float, N) X(bidx, int, N)
#define SHAC_FIELD(name, type, count) type* name;

typedef struct {
  Cfg c;
  int N, O, A, H, nq, nv, nu, fs, nmb, mb;
  int Oc, priv;  // the critic's observation size; priv: the task's own critic observation (else Oc = O)
  // the task's state fields: nst fields of scount[k] 4-byte words a world, sw words in all; a step's block of a
  // recorded buffer holds field k as (N, scount[k]) at N soff[k]; cds likewise, grad fields only in dsp
  int nst, sw, soff[ENV_MAX_STATE], scount[ENV_MAX_STATE], sgrad[ENV_MAX_STATE];
  void* dsp[ENV_MAX_STATE];  // the cotangent fields in cds (NULL: not a grad field); the ctx's ds
  int ngrad;                 // grad fields (0: ctx's ds NULL)
  int regress;        // ∇Mimic (b) on
  double clip_k, eta, sigma, beta;  // beta: ∇Mimic (d)
  double rho, rho_c;                // shac.noise_correlation and sqrt(1 - rho^2)
  const SimModel* m;  // the env's model
  NnMlp* actor_lin;  // the actor without its output tanh (same parameters, copied each iteration): noise goes in
                     // before the tanh, a = tanh(z + sigma * eps), as DiffRL's squashed Gaussian
  NnMlp *actor, *critic, *targ;  // targ: the target critic's parameters (and its input gradient)
  NnNorm* norm;                  // NULL without obs normalization
  NnNorm* cnorm;                 // the critic's: its own with a critic observation, else norm
  NnAdam *adam_a, *adam_c;
  NnAdamConfig acfg;  // the actor's (for the learning-rate metric)
  int64_t na, nc;
  SimData* vd;  // scratch worlds for the task VJPs (states loaded from the buffers)
  SHAC_BUFFERS(SHAC_FIELD)
} Shac;

static void shac_destroy(void* p) {
  Shac* s = (Shac*)p;
  if (!s) return;
  nn_mlp_destroy(s->actor_lin), nn_mlp_destroy(s->actor), nn_mlp_destroy(s->critic), nn_mlp_destroy(s->targ);
  if (s->cnorm && s->cnorm != s->norm) nn_norm_destroy(s->cnorm);
  if (s->norm) nn_norm_destroy(s->norm);
  nn_adam_destroy(s->adam_a), nn_adam_destroy(s->adam_c);
  if (s->vd) sim_data_free(s->vd);
#define SHAC_FREE(name, type, count) free(s->name);
  SHAC_BUFFERS(SHAC_FREE)
#undef SHAC_FREE
  free(s);
}

static int shac_create(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen) {
  *out = NULL;
  Shac* s = (Shac*)calloc(1, sizeof(Shac));
  if (!s) return -1;
  s->c = *c;
  s->m = env->m;
  s->N = env->nworld, s->O = env->obs_dim, s->A = env->act_dim, s->H = (int)c->algo_horizon;
  s->nq = env->m->nq, s->nv = env->m->nv, s->nu = env->m->nu, s->fs = env->task->info.frame_skip;
  s->nmb = (int)c->shac_critic_minibatches;
  s->clip_k = c->nablamimic_action_grad_clip_k, s->eta = c->nablamimic_target_action_step;
  s->regress = s->eta > 0;
  s->sigma = c->policy_init_noise_std;
  s->beta = c->nablamimic_zeroth_order_weight;
  s->rho = c->shac_noise_correlation, s->rho_c = sqrt(1 - s->rho * s->rho);
  int64_t HN = (int64_t)s->H * s->N;
  if (s->beta > 0 && !s->regress) {
    snprintf(err, errlen, "shac: nablamimic.zeroth_order_weight > 0 needs nablamimic.target_action_step > 0");
    free(s);
    return -1;
  }
  s->Oc = env->critic_obs_dim, s->priv = env->task->info.critic != NULL;
  const EnvTaskInfo* ti = &env->task->info;
  s->nst = ti->nstate;
  for (int k = 0; k < s->nst; k++) {
    s->soff[k] = s->sw, s->scount[k] = ti->state[k].count, s->sgrad[k] = ti->state[k].grad && !ti->state[k].is_int;
    s->sw += s->scount[k], s->ngrad += s->sgrad[k];
  }
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
  int maxb = (int)HN;
  NnConfig ac, cc;
  algo_net_config(&ac, c, &c->policy_actor_hidden, s->O, s->A, NN_ACT_TANH);
  algo_net_config(&cc, c, &c->policy_critic_hidden, s->Oc, 1, NN_ACT_NONE);
  int rc = nn_mlp_create(&s->actor, &ac, maxb);
  NnConfig lc = ac;
  lc.out_act = NN_ACT_NONE;
  if (!rc) rc = nn_mlp_create(&s->actor_lin, &lc, s->N);
  if (!rc) rc = nn_mlp_create(&s->critic, &cc, maxb);
  if (!rc) rc = nn_mlp_create(&s->targ, &cc, maxb);
  if (!rc && c->policy_obs_norm) rc = nn_norm_create(&s->norm, s->O, 1e-8, c->policy_obs_clip);
  s->cnorm = s->norm;
  if (!rc && c->policy_obs_norm && s->priv) rc = nn_norm_create(&s->cnorm, s->Oc, 1e-8, c->policy_obs_clip);
  if (rc) {
    snprintf(err, errlen, "shac: network setup failed: %s", nn_strerror(rc));
    shac_destroy(s);
    return -1;
  }
  uint64_t seed = (uint64_t)c->run_seed;
  nn_mlp_init(s->actor, shac_seed(seed, 1));
  nn_mlp_init(s->critic, shac_seed(seed, 2));
  s->na = nn_mlp_param_count(s->actor), s->nc = nn_mlp_param_count(s->critic);
  memcpy(nn_mlp_params(s->targ), nn_mlp_params(s->critic), sizeof(float) * (size_t)s->nc);
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
  rc = nn_adam_create(&s->adam_a, &aa, s->na, nn_mlp_params(s->actor));
  if (!rc) rc = nn_adam_create(&s->adam_c, &ca, s->nc, nn_mlp_params(s->critic));
  if (!rc && sim_data_create(env->m, s->N, &s->vd)) rc = NN_ENOMEM;
  if (rc) {
    snprintf(err, errlen, "shac: setup failed: %s", nn_strerror(rc));
    shac_destroy(s);
    return -1;
  }
  size_t N = (size_t)s->N, O = (size_t)s->O, A = (size_t)s->A, hn = (size_t)HN;
  size_t nq = (size_t)s->nq, nv = (size_t)s->nv, nu = (size_t)(s->nu ? s->nu : 1);
  size_t mx = hn > N ? hn : N;
  size_t na = (size_t)s->na, A1 = A > 1 ? A : 1;
  size_t Oc = (size_t)s->Oc, Om = O > Oc ? O : Oc, sw = (size_t)s->sw;
  int priv = s->priv;
  int ok = 1;
#define SHAC_ALLOC(name, type, count) \
  if ((count) != 0 && !(s->name = (type*)calloc((count), sizeof(type)))) ok = 0;
  SHAC_BUFFERS(SHAC_ALLOC)
#undef SHAC_ALLOC
  if (!ok) {
    snprintf(err, errlen, "shac: out of memory");
    shac_destroy(s);
    return -1;
  }
  for (int w = 0; w < s->N; w++) s->act_rng[w] = shac_seed(shac_seed(seed, 4), (uint64_t)w);
  for (int k = 0; k < s->nst; k++) s->dsp[k] = s->sgrad[k] ? s->cds + N * (size_t)s->soff[k] : NULL;
  *out = s;
  return 0;
}

// the actor's (nm = s->norm, dim O) or the critic's (s->cnorm, Oc) normalizer; NULL: the identity
static void normalize(const NnNorm* nm, int dim, const float* x, int n, float* y) {
  if (nm) nn_norm_apply(nm, x, n, y);
  else memcpy(y, x, sizeof(float) * (size_t)n * (size_t)dim);
}
static void normalize_backward(const NnNorm* nm, int dim, const float* x, const float* dy, int n, float* dx) {
  if (nm) nn_norm_backward(nm, x, dy, n, dx);
  else memcpy(dx, dy, sizeof(float) * (size_t)n * (size_t)dim);
}

// the task state of step t in a recorded buffer (pre_s or post_s): field pointers sp
static void state_at(const Shac* s, int32_t* buf, int t, void** sp) {
  for (int k = 0; k < s->nst; k++) sp[k] = buf + ((size_t)t * s->sw + s->soff[k]) * (size_t)s->N;
}
// world w's task state (fields src, as EnvBatch.state) into step t of a recorded buffer
static void record_state(const Shac* s, int32_t* buf, int t, void* const* src, int w) {
  for (int k = 0; k < s->nst; k++) {
    size_t n = (size_t)s->scount[k];
    memcpy(buf + ((size_t)t * s->sw + s->soff[k]) * (size_t)s->N + (size_t)w * n, (int32_t*)src[k] + (size_t)w * n,
           4 * n);
  }
}


// the scratch worlds at a stored state: q (N, nq), v (N, nv), u (N, nu)
static void load_states(Shac* s, const float* q, const float* v, const float* u) {
  size_t N = (size_t)s->N;
  memcpy(s->vd->qpos, q, sizeof(float) * N * (size_t)s->nq);
  memcpy(s->vd->qvel, v, sizeof(float) * N * (size_t)s->nv);
  if (s->nu) memcpy(s->vd->ctrl, u, sizeof(float) * N * (size_t)s->nu);
}

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

// the task context of world w at the recorded state sp, with the carried state cotangent
#define ctx(env, sp, w) (&(EnvTaskCtx){(env)->param, (env)->data, (sp), s->ngrad ? s->dsp : NULL, (w), NULL})

// Steps 1-3: rollout from the carried state, actor loss (returned) and its gradient: s->gsum (BPTT, unless the
// target-action regression is on), s->gtarget (dL/da per step and world, clipped), s->mu, s->nobs, s->tgt inputs.
static double shac_rollout_grad(Shac* s, EnvBatch* env, double* metrics, AlgoTimes* tm) {
  const SimModel* m = s->m;
  const EnvTask* tk = env->task;
  int N = s->N, O = s->O, A = s->A, H = s->H, nq = s->nq, nv = s->nv, nu = s->nu;
  int nub = nu ? nu : 1;
  size_t HN = (size_t)H * N;
  double gamma = s->c.algo_gamma;
  float* actor_p = nn_mlp_params(s->actor);
  memcpy(nn_mlp_params(s->actor_lin), actor_p, sizeof(float) * (size_t)s->na);
  double t0 = algo_now();
  for (int k = 0; k < M_COUNT; k++) metrics[k] = 0;
  if (s->norm && nn_norm_count(s->norm) == 0) nn_norm_update(s->norm, env->obs, N);  // first iteration
  if (s->priv && s->cnorm && nn_norm_count(s->cnorm) == 0) nn_norm_update(s->cnorm, env->cobs, N);
  int Oc = s->Oc;
  void* sp[ENV_MAX_STATE];
  long long constr0 = 0;
  for (int w = 0; w < N; w++) constr0 += env->d->adj_nconstraint[w];

  // ---- 1. rollout (tape on) ----
  sim_tape_clear(m, env->d);
  tm->networks += algo_now() - t0;
  for (int t = 0; t < H; t++) {
    size_t base = (size_t)t * N;
    t0 = algo_now();
    float* ob = s->obs + base * O;
    float* nob = s->nobs + base * O;
    float* mu = s->mu + base * A;
    float* ac = s->act + base * A;
    memcpy(ob, env->obs, sizeof(float) * N * O);
    if (s->priv) memcpy(s->cobs + base * Oc, env->cobs, sizeof(float) * N * Oc);
    for (int w = 0; w < N && s->nst; w++) record_state(s, s->pre_s, t, env->state, w);
    normalize(s->norm, O, ob, N, nob);
    nn_mlp_infer(s->actor_lin, actor_p, nob, N, ac);  // pre-tanh z
    for (int w = 0; w < N; w++) {
      size_t i = (size_t)w * A;
      shac_act(ac + i, A, s->sigma, s->rho, s->rho_c, &s->act_rng[w], s->noise ? s->noise + i : NULL, mu + i, ac + i);
    }
    memcpy(s->pre_q + base * nq, env->d->qpos, sizeof(float) * N * nq);
    memcpy(s->pre_v + base * nv, env->d->qvel, sizeof(float) * N * nv);
    tm->networks += algo_now() - t0;
    t0 = algo_now();
    env->record = 1;
    env_step(env, ac);
    env->record = 0;
    tm->sim += algo_now() - t0;
    t0 = algo_now();
    for (int w = 0; w < N; w++) {
      size_t i = base + w;
      s->rew[i] = env->reward[w];
      s->term[i] = env->terminated[w], s->trunc[i] = env->truncated[w];
      int done = s->term[i] | s->trunc[i];
      if (s->noise) shac_noise_end(done, A, s->noise + (size_t)w * A);
      memcpy(s->post_q + i * nq, done ? env->final_qpos + (size_t)w * nq : env->d->qpos + (size_t)w * nq,
             sizeof(float) * nq);
      memcpy(s->post_v + i * nv, done ? env->final_qvel + (size_t)w * nv : env->d->qvel + (size_t)w * nv,
             sizeof(float) * nv);
      if (nu)
        memcpy(s->post_u + i * nub, done ? env->final_ctrl + (size_t)w * nu : env->d->ctrl + (size_t)w * nu,
               sizeof(float) * nu);
      memcpy(s->nxt_obs + i * Oc, done ? env->final_cobs + (size_t)w * Oc : env->cobs + (size_t)w * Oc,
             sizeof(float) * Oc);
      if (s->nst) record_state(s, s->post_s, t, done ? env->final_state : env->state, w);
    }
    tm->sim += algo_now() - t0;
  }

  // ---- 2. values of the next states, loss coefficients ----
  t0 = algo_now();
  normalize(s->cnorm, Oc, s->nxt_obs, (int)HN, s->nxt_nobs);
  if (s->priv) normalize(s->cnorm, Oc, s->cobs, (int)HN, s->cnobs);  // the critic's inputs (step 5, (d))
  nn_mlp_infer(s->targ, nn_mlp_params(s->targ), s->nxt_nobs, (int)HN, s->nxt_val);
  double loss = 0, inv = 1.0 / (double)HN;
  for (int w = 0; w < N; w++)
    shac_coef(w, N, H, gamma, inv, s->rew, s->term, s->trunc, s->nxt_val, s->coef_r, s->coef_v, &loss);
  metrics[M_ACTOR] = loss;
  tm->networks += algo_now() - t0;

  // ---- 3. backward through time ----
  t0 = algo_now();
  memset(s->cq, 0, sizeof(float) * N * nv);
  memset(s->cv, 0, sizeof(float) * N * nv);
  if (s->sw) memset(s->cds, 0, sizeof(float) * N * (size_t)s->sw);
  memset(s->gsum, 0, sizeof(float) * (size_t)s->na);
  int nonfinite = 0;
  double agmed = 0, agclip = 0;
  float* adj_q = env->d->adj_qpos;
  float* adj_v = env->d->adj_qvel;
  for (int t = H - 1; t >= 0; t--) {
    size_t base = (size_t)t * N;
    const float* ac = s->act + base * A;
    // cotangent of the post-step state: the future (unless the world ended here) ...
    for (int w = 0; w < N; w++) {
      int done = s->term[base + w] | s->trunc[base + w];
      for (int k = 0; k < nv; k++) {
        adj_q[(size_t)w * nv + k] = done ? 0 : s->cq[(size_t)w * nv + k];
        adj_v[(size_t)w * nv + k] = done ? 0 : s->cv[(size_t)w * nv + k];
      }
      for (int f = 0; done && f < s->nst; f++)  // the carried state cotangent likewise
        if (s->dsp[f]) memset((float*)s->dsp[f] + (size_t)w * s->scount[f], 0, sizeof(float) * s->scount[f]);
    }
    state_at(s, s->post_s, t, sp);  // reward and bootstrap at the state after the act
    // ... + the reward ...
    load_states(s, s->post_q + base * nq, s->post_v + base * nv, s->post_u + base * nub);
    memset(s->du, 0, sizeof(float) * N * nub);
    for (int w = 0; w < N; w++)
      tk->reward_vjp(m, s->vd, w, ctx(env, sp, w), ac + (size_t)w * A, s->coef_r[base + w], adj_q + (size_t)w * nv,
                     adj_v + (size_t)w * nv, s->du + (size_t)w * nub);
    // ... + the bootstrap value (target critic -> normalizer -> observation)
    int nb = 0;
    for (int w = 0; w < N; w++)
      if (s->coef_v[base + w] != 0) {
        memcpy(s->bx + (size_t)nb * Oc, s->nxt_nobs + (base + w) * Oc, sizeof(float) * Oc);
        memcpy(s->braw + (size_t)nb * Oc, s->nxt_obs + (base + w) * Oc, sizeof(float) * Oc);
        s->bdy[nb] = s->coef_v[base + w];
        s->bidx[nb++] = w;
      }
    if (nb) {
      nn_mlp_forward(s->targ, s->bx, nb, s->by);
      nn_mlp_backward(s->targ, s->bdy, s->dx);
      normalize_backward(s->cnorm, Oc, s->braw, s->dx, nb, s->dobs);
      for (int k = 0; k < nb; k++) {
        int w = s->bidx[k];
        if (s->priv)
          tk->info.critic->observe_vjp(m, s->vd, w, ctx(env, sp, w), s->dobs + (size_t)k * Oc,
                                       adj_q + (size_t)w * nv, adj_v + (size_t)w * nv);
        else
          tk->observe_vjp(m, s->vd, w, ctx(env, sp, w), s->dobs + (size_t)k * O, adj_q + (size_t)w * nv,
                          adj_v + (size_t)w * nv);
      }
    }
    // the step: post-state cotangent -> pre-state cotangent and ctrl cotangent
    sim_control_step_backward(m, env->d, s->fs);
    // the action: ctrl -> action (the ctrl of step t, at the pre-step state)
    load_states(s, s->pre_q + base * nq, s->pre_v + base * nv, s->post_u + base * nub);
    state_at(s, s->pre_s, t, sp);  // the act (and the actor's observation) at the state before it
    for (int w = 0; w < N; w++) {
      float* du = s->du + (size_t)w * nub;
      for (int k = 0; k < nu; k++) du[k] += env->d->adj_ctrl[(size_t)w * nu + k];
      float* da = s->dact + (size_t)w * A;
      for (int j = 0; j < A; j++) da[j] = 0;
      tk->act_vjp(m, s->vd, w, ctx(env, sp, w), ac + (size_t)w * A, du, da);
      nonfinite += env_cot_check(da, A, adj_q + (size_t)w * nv, adj_v + (size_t)w * nv, nv, s->dsp, s->scount,
                                 s->nst, w, &s->gnorm[w]);
    }
    // ∇Mimic (a): per-world clip at k x the median norm over the worlds of this step
    memcpy(s->by, s->gnorm, sizeof(float) * N);
    qsort(s->by, (size_t)N, sizeof(float), cmp_float);
    double med = shac_median(N, s->by[(N - 1) / 2], s->by[N / 2]);
    agmed += med;
    double lim = shac_clip_limit(s->clip_k, med);
    for (int w = 0; w < N; w++) {  // the clip, dL/da kept for the targets, then through tanh(z + noise)
      size_t i = (size_t)w * A;
      agclip += shac_clip(s->dact + i, s->gnorm[w], ac + i, A, s->clip_k > 0, lim, s->gtarget + base * A + i);
    }
    // the policy: recomputed forward, backward with the input gradient
    nn_mlp_forward(s->actor_lin, s->nobs + base * O, N, s->by);
    nn_mlp_backward(s->actor_lin, s->dact, s->dx);
    if (!s->regress) {
      const float* g = nn_mlp_grads(s->actor_lin);
      for (int64_t i = 0; i < s->na; i++) s->gsum[i] += g[i];
    }
    normalize_backward(s->norm, O, s->obs + base * O, s->dx, N, s->dobs);
    memcpy(s->cq, adj_q, sizeof(float) * N * nv);
    memcpy(s->cv, adj_v, sizeof(float) * N * nv);
    for (int w = 0; w < N; w++)
      tk->observe_vjp(m, s->vd, w, ctx(env, sp, w), s->dobs + (size_t)w * O, s->cq + (size_t)w * nv,
                      s->cv + (size_t)w * nv);
  }
  metrics[M_AGMED] = agmed / H;
  metrics[M_AGCLIP] = agclip / (double)HN;
  metrics[M_NONFINITE] = nonfinite;
  long long constr1 = 0;
  for (int w = 0; w < N; w++) constr1 += env->d->adj_nconstraint[w];
  metrics[M_CONSTR] = (double)(constr1 - constr0);
  tm->backward += algo_now() - t0;

  return loss;
}

// Step 5's TD(lambda) targets s->tgt (DiffRL's recursion, last step forced done) from the rollout's rewards,
// done flags and target-critic values; metric value_mean.
static void shac_td_targets(Shac* s, double* metrics) {
  int N = s->N, H = s->H;
  double gamma = s->c.algo_gamma, lam = s->c.algo_lambda;
  double vsum = 0;
  for (int w = 0; w < N; w++) shac_td(w, N, H, gamma, lam, s->rew, s->nxt_val, s->term, s->trunc, s->tgt, &vsum);
  metrics[M_VALUE] = vsum / (double)((size_t)H * N);
}

// ∇Mimic (d): s->adv = clip((A - mean) / (std + 1e-8), -3, 3) with A = s->tgt - V_targ(s->nobs) over the H N
// batch (non-finite A: 0, left out of the statistics); metric advantage_abs_mean = mean |A|.
static void shac_advantages(Shac* s, double* metrics) {
  size_t HN = (size_t)s->H * s->N;
  float* v = s->adv;
  nn_mlp_infer(s->targ, nn_mlp_params(s->targ), s->priv ? s->cnobs : s->nobs, (int)HN, v);
  double sum = 0, sabs = 0, n = 0;
  for (size_t i = 0; i < HN; i++) {
    v[i] = shac_adv_raw(s->tgt[i], v[i]);
    if (!isfinite(v[i])) continue;
    sum += v[i], sabs += fabs((double)v[i]), n += 1;
  }
  double mean = shac_adv_mean(sum, n), var = 0;
  for (size_t i = 0; i < HN; i++)
    if (isfinite(v[i])) var += shac_sq_dev(v[i], mean);
  double sd = shac_adv_std(var, n);
  for (size_t i = 0; i < HN; i++) v[i] = shac_adv_norm(v[i], mean, sd);
  metrics[M_ADV] = n > 0 ? sabs / n : 0;
}

// ∇Mimic (b) (and (d) when beta > 0): s->gtarget (the action gradients g) is overwritten with the targets
//   a* = clamp(mu - eta g / (|g| + 1e-8), -1, 1)                                       (beta = 0)
//   a* = clamp(mu + eta [(1 - beta) (-g / (|g| + 1e-8)) + beta An (a - mu) / sigma_eff], -1, 1)  (beta > 0)
// sigma_eff = sigma sqrt(A); g = 0 drops the first-order term.
static void shac_action_targets(Shac* s) {
  int A = s->A;
  size_t HN = (size_t)s->H * s->N;
  float* tg = s->gtarget;
  double sz = shac_zo_scale(s->eta, s->beta, s->sigma, A);
  int zo = s->beta > 0;
  for (size_t i = 0; i < HN; i++)
    shac_action_target(tg + i * A, s->mu + i * A, s->act + i * A, A, s->eta, s->beta, sz, zo, zo ? s->adv[i] : 0);
}

static int shac_iterate(void* p, EnvBatch* env, double* metrics, AlgoTimes* tm, char* err, size_t errlen) {
  Shac* s = (Shac*)p;
  int N = s->N, A = s->A, H = s->H, Oc = s->Oc;
  size_t HN = (size_t)H * N;
  float* actor_p = nn_mlp_params(s->actor);
  const float* cin = s->priv ? s->cnobs : s->nobs;  // the critic's normalized inputs
  shac_rollout_grad(s, env, metrics, tm);
  double t0;

  // TD(lambda) targets for the critic (step 5) and, with ∇Mimic (d), the actor's advantages: rollout data only
  t0 = algo_now();
  shac_td_targets(s, metrics);
  if (s->beta > 0) shac_advantages(s, metrics);
  tm->networks += algo_now() - t0;

  // ---- 4. actor update ----
  t0 = algo_now();
  if (!s->regress) {
    nn_adam_step(s->adam_a, actor_p, s->gsum);
    metrics[M_GRADNORM] = nn_adam_last_grad_norm(s->adam_a);
  } else {
    // ∇Mimic (b) (+ (d)): fixed targets, then regression steps
    shac_action_targets(s);
    float* tg = s->gtarget;
    float* y = s->mu;  // the rollout means are no longer needed
    double gn = 0;
    for (int k = 0; k < SHAC_REGRESSION_STEPS; k++) {
      nn_mlp_forward(s->actor, s->nobs, (int)HN, y);
      double l = 0;
      for (size_t i = 0; i < HN * (size_t)A; i++) l += shac_reg_grad(&y[i], tg[i], (double)HN);
      if (k == 0) metrics[M_REG] = l / (double)HN;
      nn_mlp_backward(s->actor, y, NULL);
      nn_adam_step(s->adam_a, actor_p, nn_mlp_grads(s->actor));
      gn += nn_adam_last_grad_norm(s->adam_a);
    }
    metrics[M_GRADNORM] = gn / SHAC_REGRESSION_STEPS;
  }
  metrics[M_LR] = nn_adam_lr(&s->acfg, nn_adam_steps(s->adam_a));
  tm->networks += algo_now() - t0;

  // ---- 5. critic: minibatch passes on the TD(lambda) targets (computed above), target update ----
  t0 = algo_now();
  float* cp = nn_mlp_params(s->critic);
  double closs = 0;
  int mb = s->mb;
  for (int it = 0; it < s->c.shac_critic_iterations; it++) {
    double l = 0;
    for (int b = 0; b < s->nmb; b++) {
      size_t off = (size_t)b * mb;
      nn_mlp_forward(s->critic, cin + off * Oc, mb, s->by);
      for (int k = 0; k < mb; k++) l += shac_mse_grad(s->by[k], s->tgt[off + k], mb, &s->bdy[k]);
      nn_mlp_backward(s->critic, s->bdy, NULL);
      nn_adam_step(s->adam_c, cp, nn_mlp_grads(s->critic));
    }
    closs = l / (double)HN;
  }
  metrics[M_CRITIC] = closs;
  float* tp = nn_mlp_params(s->targ);
  float tau = (float)s->c.shac_target_tau;
  for (int64_t i = 0; i < s->nc; i++) tp[i] = shac_polyak(tp[i], cp[i], tau);
  // normalizer: the rollout's observations (frozen during the iteration, as DiffRL)
  if (s->norm) nn_norm_update(s->norm, s->obs, (int)HN);
  if (s->priv && s->cnorm) nn_norm_update(s->cnorm, s->cobs, (int)HN);
  tm->networks += algo_now() - t0;
  return 0;
}

static int shac_state(void* p, CkTensor* t, int max, int policy_only) {
  Shac* s = (Shac*)p;
  ShacStateRefs r;
  memset(&r, 0, sizeof(r));
  r.na = s->na, r.nc = s->nc, r.N = s->N, r.O = s->O, r.A = s->A, r.Oc = s->Oc;
  r.actor = nn_mlp_params(s->actor), r.ema = nn_adam_ema(s->adam_a);
  r.critic = nn_mlp_params(s->critic), r.targ = nn_mlp_params(s->targ);
  if (s->norm) {
    NnTensorRef nr[3];
    nn_norm_state(s->norm, nr, 3);
    r.norm_count = (double*)nr[0].data, r.norm_mean = (double*)nr[1].data, r.norm_m2 = (double*)nr[2].data;
  }
  if (s->priv && s->cnorm) {
    NnTensorRef nr[3];
    nn_norm_state(s->cnorm, nr, 3);
    r.cnorm_count = (double*)nr[0].data, r.cnorm_mean = (double*)nr[1].data, r.cnorm_m2 = (double*)nr[2].data;
  }
  NnTensorRef ar[4];
  nn_adam_state(s->adam_a, ar, 4);
  r.adam_a_m = (float*)ar[0].data, r.adam_a_v = (float*)ar[1].data, r.adam_a_step = (int64_t*)ar[2].data;
  nn_adam_state(s->adam_c, ar, 4);
  r.adam_c_m = (float*)ar[0].data, r.adam_c_v = (float*)ar[1].data, r.adam_c_step = (int64_t*)ar[2].data;
  r.act_rng = s->act_rng, r.noise = s->noise;
  return shac_state_add(&r, t, max, policy_only);
}

// deterministic action tanh(actor(norm(obs))), with the EMA parameters when ∇Mimic (c) is on
static int shac_act_eval(void* p, const float* obs, int n, float* act) {
  Shac* s = (Shac*)p;
  if (n > s->N) return -1;
  normalize(s->norm, s->O, obs, n, s->bx);
  float* ema = nn_adam_ema(s->adam_a);
  return nn_mlp_infer(s->actor, ema ? ema : nn_mlp_params(s->actor), s->bx, n, act);
}

const AlgoOps algo_shac = {"shac", shac_create, shac_destroy, shac_iterate, shac_state, shac_act_eval,
                           shac_metric_names, M_COUNT, NULL, NULL};
