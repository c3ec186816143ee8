// train.c: `adjoint train` (new run or --resume) on top of algo/trainer.c. Exit codes: 0 done, 2 bad input
// (flags, config, checkpoint), 1 runtime failure.
#define _GNU_SOURCE  // strdup; lstat, realpath (tools/outpath.h)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo/cfg.h"
#include "algo/trainer.h"
#include "tools/cli.h"
#include "tools/outpath.h"
#include "tools/train_eval.h"

extern const char adj_train_default_yaml[];  // configs/cartpole_nablamimic.yaml, embedded at build time

static const char* kTrainUsage =
    "usage: adjoint train [CONFIG.yaml] [section.key=value ...] [options]\n"
    "       without CONFIG: the embedded default (configs/cartpole_nablamimic.yaml as built)\n"
    "       adjoint train --resume RUN_DIR [--max-iterations N]\n"
    "options:\n"
    "  --seed N            run.seed\n"
    "  --device cpu|cuda   run.device: cuda runs rollout, gradients and networks on the GPU (algo/algo_cuda.h)\n"
    "  --num-envs N        env.num_envs\n"
    "  --run-dir DIR       run directory (default logs/<config name>-<UTC timestamp>)\n"
    "  --max-iterations N  run.max_iterations: the run's total (may be raised on --resume)\n"
    "  --resume RUN_DIR    continue bit-identically from the run's latest checkpoint; the config, overrides,\n"
    "                      seed and num-envs come from RUN_DIR/config.yaml\n"
    "  --quiet             no per-iteration output\n"
    "  --help              this message and the config keys\n"
    "The run directory receives config.yaml (resolved), metrics.csv, TensorBoard events and ckpt_%06d.h5.\n";

static int usage_error(const char* msg, const char* arg) {
  fprintf(stderr, "adjoint train: %s%s%s\n(see adjoint train --help)\n", msg, arg ? " " : "", arg ? arg : "");
  return 2;
}

int train_main(int argc, char** argv) {
  const char* config = NULL;
  const char* resume = NULL;
  const char* run_dir = NULL;
  const char* device = NULL;
  const char** overrides = (const char**)calloc((size_t)argc, sizeof(char*));
  int noverride = 0, quiet = 0, seed_set = 0, envs_set = 0, iters_set = 0;
  unsigned long long seed = 0;
  int num_envs = 0, max_iter = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kTrainUsage, stdout);
      printf("config keys (YAML `section: {key: value}` or override `section.key=value`):\n");
      cfg_print_keys(stdout);
      free(overrides);
      return 0;
    }
    int rc = 0;
    if (!strcmp(a, "--seed")) rc = cli_u64(argc, argv, &i, &seed), seed_set = 1;
    else if (!strcmp(a, "--num-envs")) rc = cli_int(argc, argv, &i, 1, TRAINER_MAX_ENVS, &num_envs), envs_set = 1;
    else if (!strcmp(a, "--max-iterations")) rc = cli_int(argc, argv, &i, 1, 1000000000, &max_iter), iters_set = 1;
    else if (!strcmp(a, "--run-dir")) rc = !(run_dir = cli_value(argc, argv, &i)) ? 2 : 0;
    else if (!strcmp(a, "--resume")) rc = !(resume = cli_value(argc, argv, &i)) ? 2 : 0;
    else if (!strcmp(a, "--device")) {
      rc = !(device = cli_value(argc, argv, &i)) ? 2 : 0;
      if (!rc && strcmp(device, "cpu") && strcmp(device, "cuda")) {
        fprintf(stderr, "adjoint train: option --device: '%s' is not cpu or cuda\n", device);
        rc = 2;
      }
    } else if (!strcmp(a, "--quiet")) quiet = 1;
    else if (a[0] == '-' && a[1] == '-') rc = usage_error("unknown option", a);
    else if (strchr(a, '=')) overrides[noverride++] = a;
    else if (!config) config = a;
    else rc = usage_error("unexpected argument", a);
    if (rc) {
      free(overrides);
      return 2;
    }
  }
  TrainOptions o;
  memset(&o, 0, sizeof(o));
  char err[2048];
  if (resume) {
    if (config || noverride || seed_set || envs_set || run_dir) {
      free(overrides);
      return usage_error("with --resume, the config, overrides, --seed, --num-envs and --run-dir come from the run "
                         "directory; give only --max-iterations (and --device)", NULL);
    }
    snprintf(o.run_dir, sizeof(o.run_dir), "%s", resume);
    char path[4200];
    snprintf(path, sizeof(path), "%s/config.yaml", resume);
    if (cfg_defaults(&o.cfg, err, sizeof(err)) || cfg_load_yaml(&o.cfg, path, err, sizeof(err))) {
      fprintf(stderr, "adjoint train: %s\n", err);
      free(overrides);
      return 2;
    }
    o.resume = 1;
  } else {
    int bad = cfg_defaults(&o.cfg, err, sizeof(err));
    if (!bad && config) bad = cfg_load_yaml(&o.cfg, config, err, sizeof(err));
    if (!bad && !config) {
      fprintf(stderr, "adjoint train: no CONFIG given: the embedded default (cartpole_nablamimic.yaml)\n");
      bad = cfg_load_yaml_text(&o.cfg, adj_train_default_yaml, "cartpole_nablamimic.yaml", err, sizeof(err));
    }
    if (bad) {
      fprintf(stderr, "adjoint train: %s\n", err);
      free(overrides);
      return 2;
    }
    for (int i = 0; i < noverride; i++)
      if (cfg_override(&o.cfg, overrides[i], err, sizeof(err))) {
        fprintf(stderr, "adjoint train: %s\n", err);
        free(overrides);
        return 2;
      }
    if (seed_set) {
      if (seed > 9223372036854775807ULL) {
        free(overrides);
        return usage_error("--seed too large", NULL);
      }
      o.cfg.run_seed = (int64_t)seed;
    }
    if (envs_set) o.cfg.env_num_envs = num_envs;
    if (run_dir) {
      snprintf(o.run_dir, sizeof(o.run_dir), "%s", run_dir);
    } else {
      char stamp[64];
      time_t t = time(NULL);
      struct tm tmv;
      gmtime_r(&t, &tmv);
      strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tmv);
      snprintf(o.run_dir, sizeof(o.run_dir), "logs/%s-%s", o.cfg.run_name[0] ? o.cfg.run_name : "run", stamp);
    }
  }
  free(overrides);
  if (config && !resume) {  // the run directory's config.yaml is an output: it must not be the input config
    char out[4200];
    snprintf(out, sizeof(out), "%s/config.yaml", o.run_dir);
    const char* in[1] = {config};
    if (outpath_check("adjoint train", "the run directory's", out, in, 1, NULL, 0)) return 2;
  }
  if (device) snprintf(o.cfg.run_device, sizeof(o.cfg.run_device), "%s", device);
  if (iters_set) o.cfg.run_max_iterations = max_iter;
  o.progress_tty = isatty(fileno(stderr));
  o.quiet = quiet;
  char cmd[4096] = "";
  for (int i = 0; i < argc; i++) {
    size_t u = strlen(cmd);
    snprintf(cmd + u, sizeof(cmd) - u, "%s%s", i ? " " : "adjoint ", argv[i]);
  }
  o.command = cmd;
  if (!quiet) fprintf(stderr, "run directory %s\n", o.run_dir);
  int rc = trainer_run(&o, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint train: %s\n", err);
    return rc == TRAIN_EUSER ? 2 : 1;
  }
  return 0;
}
