// cfg.h: the trainer's configuration, described once as an X-macro table of keys.
//
// Each row is X(section, key, TYPE, default, range, flags, help); the dotted name is "section.key" (what a
// YAML file nests as `section: {key: value}` and an override writes as `section.key=value`). Defaults and
// ranges are strings parsed by the same code that validates user input, so a bad default fails a test.
//   TYPE: INT (int64), FLOAT (double), BOOL, ENUM (range = "a|b|c"), STR, INTLIST (up to CFG_LIST_MAX ints;
//         range applies to each element).
//   range: "[lo, hi]" with '(' / ')' for open ends, "" for none; "inf" allowed as a bound.
//   flags: CFG_H = hashed (determines the run: enters the config hash stored in checkpoints); 0 = does not
//          (run length, logging cadence, device, the run's name).
//
// Errors are one line, `FILE:LINE: key 'algo.horizn': unknown key`, or for overrides
// `override 'algo.horizon=x': key 'algo.horizon': 'x' is not an integer`; functions return CFG_EPARSE and the
// CLI exits 2.
#ifndef ADJ_ALGO_CFG_H
#define ADJ_ALGO_CFG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CFG_LIST_MAX 8
#define CFG_H 1

enum { CFG_OK = 0, CFG_EPARSE = -1, CFG_EIO = -2 };

// clang-format off
#define CFG_TABLE(X) \
  X(env, task, ENUM, "cartpole", "cartpole|hopper", CFG_H, "task (envs/<task>.c)") \
  X(env, num_envs, INT, "64", "[1, 1048576]", CFG_H, "parallel worlds") \
  X(env, episode_steps, INT, "0", "[0, 100000000]", CFG_H, "control steps per episode (0: the task's default)") \
  X(env, random_start_step, BOOL, "false", "", CFG_H, "start each world's first episode at a random step (decorrelates worlds)") \
  X(env, params, STR, "", "", CFG_H, "task constants over the task's defaults, \"name=value, ...\" (envs/<task>.c lists them)") \
  X(run, name, STR, "", "", 0, "run name (default: the config file's base name)") \
  X(run, seed, INT, "1", "[0, 9223372036854775807]", CFG_H, "seed of every random stream") \
  X(run, max_iterations, INT, "100", "[1, 1000000000]", 0, "total iterations of the run") \
  X(run, checkpoint_every, INT, "50", "[0, 1000000000]", 0, "checkpoint period in iterations (0: only at the end)") \
  X(run, eval_episodes, INT, "0", "[0, 1048576]", 0, "deterministic evaluation episodes at each checkpoint; the best is kept as best.h5 (0: off)") \
  X(run, device, ENUM, "cpu", "cpu|cuda", 0, "backend") \
  X(run, tensorboard, BOOL, "true", "", 0, "write TensorBoard event files") \
  X(policy, actor_hidden, INTLIST, "[64, 64]", "[1, 65536]", CFG_H, "actor hidden widths") \
  X(policy, critic_hidden, INTLIST, "[64, 64]", "[1, 65536]", CFG_H, "critic hidden widths") \
  X(policy, activation, ENUM, "elu", "elu|relu|tanh|silu", CFG_H, "hidden activation") \
  X(policy, layer_norm, BOOL, "false", "", CFG_H, "LayerNorm after each hidden activation") \
  X(policy, obs_norm, BOOL, "true", "", CFG_H, "running observation normalization") \
  X(policy, obs_clip, FLOAT, "5.0", "[0, inf)", CFG_H, "normalized observation clip (0: none)") \
  X(policy, init_noise_std, FLOAT, "1.0", "(0, 100]", CFG_H, "initial action std (state-independent log-std)") \
  X(algo, name, ENUM, "ppo", "ppo|shac|nablamimic", CFG_H, "algorithm") \
  X(algo, horizon, INT, "24", "[1, 100000]", CFG_H, "rollout length per iteration (SHAC: the gradient horizon h)") \
  X(algo, gamma, FLOAT, "0.99", "[0, 1]", CFG_H, "discount") \
  X(algo, lambda, FLOAT, "0.95", "[0, 1]", CFG_H, "GAE / TD(lambda)") \
  X(algo, max_grad_norm, FLOAT, "1.0", "[0, inf)", CFG_H, "gradient norm clip (0: none)") \
  X(ppo, learning_rate, FLOAT, "1e-3", "(0, 1]", CFG_H, "initial Adam learning rate") \
  X(ppo, schedule, ENUM, "adaptive", "adaptive|fixed", CFG_H, "learning rate schedule (adaptive: on KL)") \
  X(ppo, desired_kl, FLOAT, "0.01", "(0, inf)", CFG_H, "KL target of the adaptive schedule") \
  X(ppo, clip, FLOAT, "0.2", "(0, 10]", CFG_H, "ratio (and value) clip") \
  X(ppo, epochs, INT, "5", "[1, 1000]", CFG_H, "passes over the rollout per iteration") \
  X(ppo, minibatches, INT, "4", "[1, 100000]", CFG_H, "minibatches per epoch") \
  X(ppo, entropy_coef, FLOAT, "0.01", "[0, inf)", CFG_H, "entropy bonus") \
  X(ppo, value_coef, FLOAT, "1.0", "[0, inf)", CFG_H, "value loss weight") \
  X(ppo, clip_value_loss, BOOL, "true", "", CFG_H, "clipped value loss") \
  X(shac, actor_lr, FLOAT, "2e-3", "(0, 1]", CFG_H, "actor Adam learning rate") \
  X(shac, critic_lr, FLOAT, "2e-3", "(0, 1]", CFG_H, "critic Adam learning rate") \
  X(shac, lr_schedule, ENUM, "linear", "linear|constant", CFG_H, "learning rate schedule (linear: to 1e-5)") \
  X(shac, lr_schedule_iterations, INT, "2000", "[1, 1000000000]", CFG_H, "iterations of the linear decay") \
  X(shac, beta1, FLOAT, "0.7", "[0, 1)", CFG_H, "Adam beta1") \
  X(shac, beta2, FLOAT, "0.95", "[0, 1)", CFG_H, "Adam beta2") \
  X(shac, critic_iterations, INT, "16", "[1, 10000]", CFG_H, "critic passes per iteration") \
  X(shac, critic_minibatches, INT, "4", "[1, 100000]", CFG_H, "critic minibatches per pass") \
  X(shac, target_tau, FLOAT, "0.2", "[0, 1]", CFG_H, "target critic polyak: targ = tau*targ + (1-tau)*critic") \
  X(shac, actor_grad_norm, FLOAT, "1.0", "[0, inf)", CFG_H, "actor gradient norm clip (0: none)") \
  X(shac, critic_grad_norm, FLOAT, "1.0", "[0, inf)", CFG_H, "critic gradient norm clip (0: none)") \
  X(shac, noise_correlation, FLOAT, "0", "[0, 1)", CFG_H, "rho: exploration noise e <- rho e + sqrt(1 - rho^2) eps per world and action (stationary std init_noise_std; reset to 0 when a world's episode ends; 0: independent eps per step)") \
  X(nablamimic, action_grad_clip_k, FLOAT, "0", "[0, inf)", CFG_H, "clip per-world action gradients at k x batch median (0: off)") \
  X(nablamimic, target_action_step, FLOAT, "0", "[0, inf)", CFG_H, "target-action regression step eta (0: off)") \
  X(nablamimic, policy_ema_decay, FLOAT, "0", "[0, 1)", CFG_H, "policy parameter EMA decay (0: off)") \
  X(nablamimic, zeroth_order_weight, FLOAT, "0", "[0, 1]", CFG_H, "beta: weight of a likelihood-ratio (advantage x noise) direction in the target actions, 1 - beta on the first-order one (0: off; needs target_action_step > 0)")
// clang-format on

typedef struct {
  int n;
  int v[CFG_LIST_MAX];
} CfgIntList;

#define CFG_CTYPE_INT int64_t
#define CFG_CTYPE_FLOAT double
#define CFG_CTYPE_BOOL int
#define CFG_CTYPE_ENUM char
#define CFG_CTYPE_STR char
#define CFG_CTYPE_INTLIST CfgIntList
#define CFG_DIM_INT
#define CFG_DIM_FLOAT
#define CFG_DIM_BOOL
#define CFG_DIM_ENUM [32]
#define CFG_DIM_STR [256]
#define CFG_DIM_INTLIST

typedef struct Cfg {
#define X(sec, key, type, def, range, flags, help) CFG_CTYPE_##type sec##_##key CFG_DIM_##type;
  CFG_TABLE(X)
#undef X
} Cfg;

typedef enum { CFG_T_INT, CFG_T_FLOAT, CFG_T_BOOL, CFG_T_ENUM, CFG_T_STR, CFG_T_INTLIST } CfgType;

typedef struct {
  const char* name;   // dotted
  CfgType type;
  const char* def;
  const char* range;
  int flags;
  const char* help;
  size_t offset;
} CfgKey;

int cfg_key_count(void);
const CfgKey* cfg_key(int i);
const CfgKey* cfg_find(const char* dotted);

// All keys at their defaults (returns CFG_EPARSE only if a default violates its own range: a bug).
int cfg_defaults(Cfg* c, char* err, size_t errlen);
// Reads a YAML file over c (keys not in the file keep their values).
int cfg_load_yaml(Cfg* c, const char* path, char* err, size_t errlen);
// the same from YAML text in memory; name stands for the file in messages and gives the default run name
int cfg_load_yaml_text(Cfg* c, const char* text, const char* name, char* err, size_t errlen);
// One `section.key=value` override.
int cfg_override(Cfg* c, const char* assignment, char* err, size_t errlen);
// Writes the resolved config as YAML (every key; hashed_only: only the keys that determine the run).
int cfg_write_yaml(const Cfg* c, FILE* f, int hashed_only);
int cfg_save(const Cfg* c, const char* path, char* err, size_t errlen);  // atomic (temp + rename)
// FNV-1a 64 of the hashed-keys YAML text: equal for configs that determine the same run.
uint64_t cfg_hash(const Cfg* c);
// Prints every key with type, default, range and help (for --help).
void cfg_print_keys(FILE* f);

#ifdef __cplusplus
}
#endif
#endif
