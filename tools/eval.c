// eval.c: `adjoint eval RUN_DIR|CHECKPOINT`: deterministic policy (mean action), one episode per world;
// prints mean/std of return and episode length, then the fraction of episodes that terminated early and the
// task's per-episode statistics (EnvTask.stat_names, e.g. the hopper's forward_speed).
// Exit codes: 0, 2 bad input, 1 runtime failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "algo/cfg.h"
#include "algo/ckpt.h"
#include "algo/trainer.h"
#include "tools/cli.h"
#include "tools/train_eval.h"

static const char* kEvalUsage =
    "usage: adjoint eval RUN_DIR|CHECKPOINT.h5 [--episodes N] [--draw K] [--device cpu|cuda]\n"
    "  RUN_DIR uses its latest ckpt_*.h5; the config is the one the trainer stored in the checkpoint, else the\n"
    "  run directory's config.yaml (so a checkpoint copied on its own evaluates too).\n"
    "  --episodes N   episodes (one per world, in parallel; default 16)\n"
    "  --draw K       reset draws (default 0; the trainer chose best.h5 on draw 1: report another)\n"
    "  --device D     backend (cpu for now)\n";

int eval_main(int argc, char** argv) {
  const char* target = NULL;
  const char* device = "cpu";
  int episodes = 16, draw = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kEvalUsage, stdout);
      return 0;
    }
    if (!strcmp(a, "--episodes")) {
      if (cli_int(argc, argv, &i, 1, 1 << 20, &episodes)) return 2;
    } else if (!strcmp(a, "--draw")) {
      if (cli_int(argc, argv, &i, 0, 1 << 30, &draw)) return 2;
    } else if (!strcmp(a, "--device")) {
      if (!(device = cli_value(argc, argv, &i))) return 2;
      if (strcmp(device, "cpu") && strcmp(device, "cuda")) {
        fprintf(stderr, "adjoint eval: option --device: '%s' is not cpu or cuda\n", device);
        return 2;
      }
    } else if (a[0] == '-') {
      fprintf(stderr, "adjoint eval: unknown option %s\n(see adjoint eval --help)\n", a);
      return 2;
    } else if (!target) {
      target = a;
    } else {
      fprintf(stderr, "adjoint eval: unexpected argument %s\n", a);
      return 2;
    }
  }
  if (!target) {
    fprintf(stderr, "adjoint eval: missing RUN_DIR or CHECKPOINT\n%s", kEvalUsage);
    return 2;
  }
  if (strcmp(device, "cpu")) {
    fprintf(stderr, "adjoint eval: --device %s: evaluation runs on the CPU backend for now\n", device);
    return 2;
  }
  char ckpt[4200], dir[4200], config[4300];
  struct stat st;
  if (stat(target, &st)) {
    fprintf(stderr, "adjoint eval: %s: no such file or directory\n", target);
    return 2;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(dir, sizeof(dir), "%s", target);
    if (trainer_latest_checkpoint(dir, ckpt, sizeof(ckpt))) {
      fprintf(stderr, "adjoint eval: %s: no checkpoint (ckpt_*.h5)\n", dir);
      return 2;
    }
  } else {
    snprintf(ckpt, sizeof(ckpt), "%s", target);
    snprintf(dir, sizeof(dir), "%s", target);
    char* slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof(dir), ".");
  }
  EvalResult r;
  char err[2048];
  Cfg c;
  int rc = trainer_checkpoint_config(ckpt, &c, err, sizeof(err));
  if (rc == CKPT_EMISSING) {
    snprintf(config, sizeof(config), "%s/config.yaml", dir);
    if (cfg_defaults(&c, err, sizeof(err)) || cfg_load_yaml(&c, config, err, sizeof(err))) {
      fprintf(stderr, "adjoint eval: %s has no stored config and %s\n", ckpt, err);
      return 2;
    }
  } else if (rc) {
    fprintf(stderr, "adjoint eval: %s\n", err);
    return 2;
  }
  rc = trainer_eval(ckpt, &c, episodes, draw, &r, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint eval: %s\n", err);
    return rc == TRAIN_EUSER ? 2 : 1;
  }
  printf("checkpoint %s\n", ckpt);
  printf("episodes %d  return %.4f +- %.4f  episode_length %.1f +- %.1f  nan_resets %lld\n", r.episodes, r.return_mean,
         r.return_std, r.length_mean, r.length_std, r.nan_resets);
  // a second line (the first keeps its format): early terminations, then the task's episode statistics
  printf("terminated %d/%d (%.4f)", r.terminated, r.episodes, r.episodes ? (double)r.terminated / r.episodes : 0.0);
  for (int i = 0; i < r.nstat; i++) printf("  %s %.4f +- %.4f", r.stat_names[i], r.stat_mean[i], r.stat_std[i]);
  printf("\n");
  return 0;
}
