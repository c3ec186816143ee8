// eval.c: `adjoint eval RUN_DIR|CHECKPOINT`: deterministic policy (mean action), one episode per world;
// prints mean/std of return and episode length, then the fraction of episodes that terminated early and the
// task's per-episode statistics (EnvTask.stat_names, e.g. the hopper's forward_speed).
// With --motions (a motion-tracking task): every clip of the motion data instead (tools/eval_motions.c).
// Exit codes: 0, 2 bad input, 1 runtime failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "algo/cfg.h"
#include "algo/ckpt.h"
#include "algo/trainer.h"
#include "tools/cli.h"
#include "tools/eval_motions.h"
#include "tools/train_eval.h"

static const char* kEvalUsage =
    "usage: adjoint eval RUN_DIR|CHECKPOINT.h5 [--episodes N] [--draw K] [--device cpu|cuda]\n"
    "  RUN_DIR uses its latest ckpt_*.h5; the config is the one the trainer stored in the checkpoint, else the\n"
    "  run directory's config.yaml (so a checkpoint copied on its own evaluates too).\n"
    "  --episodes N   episodes (one per world, in parallel; default 16)\n"
    "  --draw K       reset draws (default 0; the trainer chose best.h5 on draw 1: report another)\n"
    "  --device D     backend (cpu for now)\n"
    "usage: adjoint eval RUN_DIR|CHECKPOINT.h5 --motions FILE [--clip NAME]... [--max-steps N] [--out DIR]\n"
    "                    [--save-trajectory FILE.h5] [--device cpu|cuda]\n"
    "  a motion-tracking task (g1_tracking) on its reference clips: one world per clip, each from its first frame\n"
    "  at the reference state, deterministic policy, nominal model (no observation noise, pushes, reset noise or\n"
    "  randomisation), the clip played once. Per clip: the fall (time of the first termination), the normalized\n"
    "  return (mean over the clip's control steps of the tracking terms' weighted sum over the sum of weights, 0\n"
    "  after a fall), MPKPE (mean distance of the tracked bodies to the reference re-anchored to the robot's\n"
    "  anchor, over the steps until the fall or the end, mm) and the anchor drift (world distance to the reference\n"
    "  anchor, same steps, m); means over clips unweighted. A table on stdout; eval.json and eval.csv in DIR.\n"
    "  --motions FILE      an HDF5 motion library, a clip directory (with MANIFEST.tsv) or one clip CSV, as the\n"
    "                      task's `motion` constant takes it (asset search path)\n"
    "  --clip NAME         only this clip (repeatable; names as the library lists them, e.g. walk1_subject1.csv)\n"
    "  --max-steps N       score at most N control steps of each clip (0: the full clip)\n"
    "  --out DIR           where eval.json and eval.csv go (default: the run directory, or the checkpoint's)\n"
    "  --save-trajectory F HDF5: per clip <clip>/qpos and <clip>/ref_qpos (steps + 1, nq): the robot's qpos at the\n"
    "                      start and after each control step, and the reference's at the frame that step was\n"
    "                      scored against; <clip>/fall_step (0: none); dt. tools/render_trajectory.py renders it\n"
    "  --device cuda       the physics of every clip's world on the GPU (the policy and the scoring on the host;\n"
    "                      a fallen world is reset there, so its trajectory after the fall shows the reset world)\n";

int eval_main(int argc, char** argv) {
  const char* target = NULL;
  const char* device = "cpu";
  int episodes = 16, draw = 0, max_steps = 0, nclips = 0;
  const char *motions = NULL, *out_dir = NULL, *trajectory = NULL;
  const char* clips[EVAL_MAX_CLIPS];
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
    } else if (!strcmp(a, "--motions")) {
      if (!(motions = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--clip")) {
      if (nclips == EVAL_MAX_CLIPS) {
        fprintf(stderr, "adjoint eval: --clip given more than %d times\n", EVAL_MAX_CLIPS);
        return 2;
      }
      if (!(clips[nclips++] = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--max-steps")) {
      if (cli_int(argc, argv, &i, 0, 1 << 30, &max_steps)) return 2;
    } else if (!strcmp(a, "--out")) {
      if (!(out_dir = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--save-trajectory")) {
      if (!(trajectory = cli_value(argc, argv, &i))) return 2;
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
  if (!motions && (nclips || max_steps || out_dir || trajectory)) {
    fprintf(stderr, "adjoint eval: --clip, --max-steps, --out and --save-trajectory need --motions\n");
    return 2;
  }
  if (strcmp(device, "cpu") && !motions) {
    fprintf(stderr, "adjoint eval: --device %s: evaluation runs on the CPU backend for now (--motions: cpu|cuda)\n",
            device);
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
  if (motions) {
    EvalMotionsOptions mo = {ckpt, &c, motions, clips, nclips, max_steps, out_dir ? out_dir : dir, trajectory, device};
    return eval_motions_run(&mo);
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
