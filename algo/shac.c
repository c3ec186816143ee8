// shac.c: SHAC (Xu et al. 2022, NVlabs/DiffRL algorithms/shac.py) and its ∇Mimic variant.
//
// ============================== SKELETON: NOT IMPLEMENTED YET ==============================================
// SHAC needs the simulator's gradient (the engine's adjoint is being written). Until it lands, algo_find()
// refuses algo.name = shac / nablamimic with "not available yet" and `adjoint train` exits 2. The config keys
// are defined and validated now (algo/cfg.h: algo.horizon, algo.gamma, algo.lambda, algo.max_grad_norm,
// shac.actor_lr, shac.critic_lr, shac.lr_schedule, shac.lr_schedule_iterations, shac.beta1/beta2,
// shac.critic_iterations, shac.critic_minibatches, shac.target_tau, shac.actor_grad_norm, shac.critic_grad_norm,
// nablamimic.action_grad_clip_k, nablamimic.target_action_step, nablamimic.policy_ema_decay).
//
// Plan (plugs into algo.h's AlgoOps like ppo.c):
//  iterate:
//   1. Rollout of h = algo.horizon steps from the carried state (gradient cut at the start): a = tanh(actor(
//      norm(obs))) (+ Gaussian noise, rsample), with the normalizer frozen from the rollout's start; keep the
//      per-step SimData states (world-major) and the policy activations for the backward pass.
//   2. Actor loss -sum_i [sum_t gamma^t r_t + gamma^h V_targ(s_h)] / (h N); terms added at episode ends; V = 0 on
//      termination / non-finite state; the pre-reset observation's value at time-outs.
//   3. Backward through time: task reward_vjp/observe_vjp/act_vjp (envs/env.h) + engine step adjoint + actor
//      backward; ∇Mimic: per-world action-gradient clip at k x batch median (nablamimic.action_grad_clip_k),
//      target-action regression a* = a - eta * dL/da (nablamimic.target_action_step) and a policy EMA
//      (nablamimic.policy_ema_decay, nn's Adam ema_decay).
//   4. Actor Adam step (betas shac.beta1/beta2, linear LR decay to 1e-5 over shac.lr_schedule_iterations, grad
//      norm clip shac.actor_grad_norm).
//   5. TD(lambda) targets with the target critic (shac.py's recursion), critic_iterations x critic_minibatches
//      MSE passes (no shuffle), grad clip shac.critic_grad_norm; target critic polyak with shac.target_tau.
//  state: "shac/actor", "shac/critic", "shac/critic_target", Adam moments and steps, "shac/obs_norm/*",
//         "shac/ema", RNG streams.
// ============================================================================================================
#include "algo/algo.h"
