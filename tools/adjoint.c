// adjoint: the command-line entry point. Subcommands dispatch to their own files; only tools/ may exit.
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/verify.h"
#include "nn/nn_bench.h"
#ifdef ADJ_HAVE_TRAIN
#include "tools/train_eval.h"
#endif

int bench_sim_main(int argc, char** argv);
#ifdef ADJ_HAVE_MOTION_LIB
int motion_main(int argc, char** argv);  // tools/motion_cli.c
#endif
#ifdef ADJ_HAVE_EXPORT
int export_main(int argc, char** argv);  // tools/export.c
#endif

static const char* kUsage =
    "usage: adjoint COMMAND [args]\n"
    "  verify MODEL.xml [options]   compare the engine with MuJoCo 3.12 C (float64)\n"
    "  bench nn [options]           MLP library benchmark (GPU)\n"
    "  train CONFIG.yaml [options]  train a policy (PPO now; SHAC later); --resume RUN_DIR continues a run\n"
    "  eval RUN_DIR|CHECKPOINT      evaluate a trained policy (deterministic)\n"
    "  export CHECKPOINT --onnx F --blob F  the policy for deployment (ONNX model, embedded blob)\n"
    "  bench sim MODEL.xml [opts]   physics steps/s, CUDA beside MuJoCo C\n"
    "  motion build|info            reference-motion library (HDF5) from LAFAN1 clips; its summary\n"
    "  help                         this message\n"
    "Run 'adjoint COMMAND --help' for a command's options.\n";

static int dispatch(int argc, char** argv) {
  if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "verify")) return verify_main(argc - 1, argv + 1);
#ifdef ADJ_HAVE_TRAIN
  if (!strcmp(cmd, "train")) return train_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "eval")) return eval_main(argc - 1, argv + 1);
#endif
#ifdef ADJ_HAVE_EXPORT
  if (!strcmp(cmd, "export")) return export_main(argc - 1, argv + 1);
#endif
#ifdef ADJ_HAVE_MOTION_LIB
  if (!strcmp(cmd, "motion")) return motion_main(argc - 1, argv + 1);
#endif
  if (!strcmp(cmd, "bench")) {
    if (argc >= 3 && !strcmp(argv[2], "nn")) return nn_bench_main(argc - 2, argv + 2);
    if (argc >= 3 && !strcmp(argv[2], "sim")) return bench_sim_main(argc - 2, argv + 2);
    fprintf(stderr, "adjoint bench: unknown benchmark '%s' (available: nn, sim)\n", argc >= 3 ? argv[2] : "");
    return 2;
  }
  fprintf(stderr, "adjoint: unknown command '%s'\n%s", cmd, kUsage);
  return 2;
}

int main(int argc, char** argv) {
  int rc = dispatch(argc, argv);
  // a result that did not reach stdout (a full disk, a closed pipe, /dev/full) is a failure: exit 1
  errno = 0;
  if (fflush(stdout) || ferror(stdout)) {
    fprintf(stderr, "adjoint: cannot write to standard output: %s\n", errno ? strerror(errno) : "write error");
    if (rc == 0) rc = 1;
  }
  return rc;
}
