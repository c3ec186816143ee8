// trainer_nonfinite: a run whose networks turn non-finite stops with TRAIN_ERUN (the CLI's exit 1), names the
// array and the last checkpoint, and leaves that checkpoint the last good one (it validates; nothing newer is
// written). The CPU trainer on cartpole PPO, with an algorithm whose iteration 3 poisons one actor weight (the
// task bounds keep a config from doing this itself). Includes algo/trainer.c to put that algorithm in.
#define algo_find_device test_algo_find_device
#include "algo/trainer.c"
#undef algo_find_device

#include <dirent.h>

#include "tests/test.h"

const AlgoOps* algo_find_device(const char* name, const char* device, char* err, size_t errlen);

static AlgoOps poisoned;
static const AlgoOps* real;
static int calls;

static int poisoned_iterate(void* s, EnvBatch* env, double* metrics, AlgoTimes* times, char* err, size_t errlen) {
  int rc = real->iterate(s, env, metrics, times, err, errlen);
  if (rc || ++calls != 3) return rc;
  CkTensor t[64];
  int n = real->state(s, t, 64, 0);
  for (int i = 0; i < n; i++)
    if (strstr(t[i].name, "actor") && t[i].dtype == CK_F32) {
      ((float*)t[i].data)[0] = NAN;
      break;
    }
  return 0;
}

const AlgoOps* test_algo_find_device(const char* name, const char* device, char* err, size_t errlen) {
  real = algo_find_device(name, device, err, errlen);
  if (!real) return NULL;
  poisoned = *real;
  poisoned.iterate = poisoned_iterate;
  return &poisoned;
}

int main(void) {
  char err[8192], dir[] = "/tmp/adj_trainer_nonfinite_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  TrainOptions o;
  memset(&o, 0, sizeof(o));
  TEST_CHECK(cfg_defaults(&o.cfg, err, sizeof(err)) == 0, "defaults: %s", err);
  const char* over[] = {"env.task=cartpole", "algo.name=ppo", "env.num_envs=8", "algo.horizon=8",
                        "run.max_iterations=6", "run.checkpoint_every=2", "run.tensorboard=false",
                        "policy.actor_hidden=[8]", "policy.critic_hidden=[8]"};
  for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++)
    TEST_CHECK(cfg_override(&o.cfg, over[i], err, sizeof(err)) == 0, "%s: %s", over[i], err);
  snprintf(o.run_dir, sizeof(o.run_dir), "%s/run", dir);
  o.quiet = 1, o.command = "trainer_nonfinite";
  int rc = trainer_run(&o, err, sizeof(err));
  printf("trainer_run: %d: %s\n", rc, err);
  TEST_CHECK(rc == TRAIN_ERUN, "stopped with TRAIN_ERUN (%d)", rc);
  TEST_CHECK(strstr(err, "iteration 3") && strstr(err, "not finite") && strstr(err, "actor") &&
                 strstr(err, "ckpt_000002.h5"),
             "the message names the iteration, the array, the reason and the last checkpoint");
  char last[4200];
  TEST_CHECK(trainer_latest_checkpoint(o.run_dir, last, sizeof(last)) == 0 && strstr(last, "ckpt_000002.h5"),
             "nothing newer than ckpt_000002.h5 was written (%s)", last);
  // the last checkpoint is the last good one: it evaluates
  EvalResult r;
  TEST_CHECK(trainer_eval(last, &o.cfg, 4, 0, &r, err, sizeof(err)) == 0 && isfinite(r.return_mean),
             "ckpt_000002.h5 evaluates (%s)", err);
  char cmd[4200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  return test_report("trainer_nonfinite");
}
