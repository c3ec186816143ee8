// motion_cli.c: `adjoint motion build` (clips -> HDF5 motion library) and `adjoint motion info`.
#define _DEFAULT_SOURCE  // lstat, realpath (outpath.h)
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "motion/motion_lib.h"
#include "motion/motion_sampler.h"
#include "sim/sim_common.h"
#include "tools/outpath.h"

#define MOTION_DEFAULT_DIR "lafan1_g1"
#define MOTION_DEFAULT_MODEL "g1/scene_flat.xml"

static const char* kUsage =
    "usage: adjoint motion build [CLIPS_DIR] -o FILE.h5 [--fps 50] [--model g1/scene_flat.xml]\n"
    "       adjoint motion info FILE.h5\n"
    "build: every clip listed in CLIPS_DIR/MANIFEST.tsv (30 fps CSV: root xyz, quaternion xyzw, joint angles in\n"
    "  qpos order) resampled to --fps, with the model's body world poses by the engine's float64 kinematics\n"
    "  and velocities by differences, written as one HDF5 file (layout: motion/README.md). CLIPS_DIR defaults\n"
    "  to lafan1_g1 and the model to g1/scene_flat.xml, both found on the asset search path (., $ADJOINT_ASSETS,\n"
    "  ./assets, ../shared/assets).\n"
    "info: the file's clips, frames, durations and bodies (every value checked).\n";

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// a clip of n frames lasts (n - 1) / fps
static double duration(const MotionLib* lib) {
  double s = 0;
  for (int c = 0; c < lib->nclip; c++) s += (lib->clip_len[c] - 1) / lib->fps;
  return s;
}

// input errors exit 2; out of memory and failed writes 1
static int exit_code(int rc) { return rc == MOTION_ERR_ALLOC ? 1 : 2; }

static int motion_build(int argc, char** argv) {
  const char *dir = NULL, *out = NULL, *model = MOTION_DEFAULT_MODEL;
  double fps = 50;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kUsage, stdout);
      return 0;
    }
    if (!strcmp(a, "-o") || !strcmp(a, "--fps") || !strcmp(a, "--model")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "adjoint motion build: option %s needs a value\n", a);
        return 2;
      }
      const char* v = argv[++i];
      if (!strcmp(a, "-o")) {
        out = v;
      } else if (!strcmp(a, "--model")) {
        model = v;
      } else {
        char* end;
        fps = strtod(v, &end);
        if (end == v || *end || !(fps > 0 && fps <= 1000)) {
          fprintf(stderr, "adjoint motion build: option --fps: '%s' is not a frame rate in (0, 1000]\n", v);
          return 2;
        }
      }
    } else if (a[0] == '-') {
      fprintf(stderr, "adjoint motion build: unknown option '%s'\n%s", a, kUsage);
      return 2;
    } else if (!dir) {
      dir = a;
    } else {
      fprintf(stderr, "adjoint motion build: more than one clip directory ('%s', '%s')\n", dir, a);
      return 2;
    }
  }
  if (!out) {
    fprintf(stderr, "adjoint motion build: -o FILE.h5 is required\n%s", kUsage);
    return 2;
  }
  // the clip directory: as given, else on the asset path
  char manifest[4096 + 16], clipdir[4096], modelpath[4096], err[4096];
  snprintf(manifest, sizeof(manifest), "%s/MANIFEST.tsv", dir ? dir : MOTION_DEFAULT_DIR);
  if (sim_find_asset(manifest, clipdir, sizeof(clipdir))) {
    fprintf(stderr, "adjoint motion build: %s: not found (searched ., $ADJOINT_ASSETS, ./assets, ../shared/assets)\n",
            manifest);
    return 2;
  }
  snprintf(manifest, sizeof(manifest), "%s", clipdir);
  *strrchr(clipdir, '/') = '\0';
  if (sim_find_asset(model, modelpath, sizeof(modelpath))) {
    fprintf(stderr, "adjoint motion build: %s: model not found (searched ., $ADJOINT_ASSETS, ./assets, "
                    "../shared/assets)\n", model);
    return 2;
  }
  const char* inputs[2] = {manifest, modelpath};
  if (outpath_check("adjoint motion build", "-o", out, inputs, 2, NULL, 0)) return 2;
  // the joint count from the model (a free joint, then hinges: njoint = nq - 7)
  void* mm = NULL;
  if (sim_load_mjcf(modelpath, NULL, &mm, err, sizeof(err))) {
    fprintf(stderr, "adjoint motion build: %s\n", err);
    return 2;
  }
  int nq = ((const mjModel*)mm)->nq;
  sim_free_mjmodel(mm);
  if (nq < 7) {
    fprintf(stderr, "adjoint motion build: %s: nq %d, a free-base robot has at least 7\n", modelpath, nq);
    return 2;
  }
  double t0 = now_s();
  MotionSet set;
  int rc = motion_read_dir(clipdir, nq - 7, MOTION_LAFAN1_FPS, &set, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint motion build: %s\n", err);
    return exit_code(rc);
  }
  double t1 = now_s();
  MotionLib lib;
  rc = motion_lib_build(&set, modelpath, fps, &lib, err, sizeof(err));
  motion_set_free(&set);
  if (rc) {
    fprintf(stderr, "adjoint motion build: %s\n", err);
    return exit_code(rc);
  }
  double t2 = now_s();
  rc = motion_lib_write(&lib, out, err, sizeof(err));
  double t3 = now_s();
  if (rc) {
    fprintf(stderr, "adjoint motion build: %s\n", err);
    motion_lib_free(&lib);
    return rc == MOTION_ERR_ARG ? 2 : 1;
  }
  struct stat st;
  double mb = stat(out, &st) ? 0 : st.st_size / 1e6;
  printf("%s: %d clips, %d frames (%.1f s at %g fps), %d bodies, %d joints; %.1f MB\n", out, lib.nclip, lib.nframe,
         duration(&lib), lib.fps, lib.nbody, lib.njoint, mb);
  printf("time: read clips %.2f s, build %.2f s, write %.2f s, total %.2f s\n", t1 - t0, t2 - t1, t3 - t2, t3 - t0);
  motion_lib_free(&lib);
  return 0;
}

static int motion_info(int argc, char** argv) {
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "adjoint motion info: expected one FILE.h5\n%s", kUsage);
    return 2;
  }
  MotionLib lib;
  char err[4096];
  int rc = motion_lib_read(argv[1], &lib, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint motion info: %s\n", err);
    return exit_code(rc);
  }
  printf("%s: %d clips, %d frames, %.1f s at %g fps; %d joints, %d bodies\n", argv[1], lib.nclip, lib.nframe,
         duration(&lib), lib.fps, lib.njoint, lib.nbody);
  printf("%-40s %8s %8s %10s\n", "clip", "start", "frames", "duration_s");
  for (int c = 0; c < lib.nclip; c++)
    printf("%-40s %8d %8d %10.2f\n", lib.clip_name[c], lib.clip_start[c], lib.clip_len[c],
           (lib.clip_len[c] - 1) / lib.fps);
  int* bin0 = (int*)malloc(sizeof(int) * (lib.nclip + 1));
  if (bin0) {  // the adaptive sampler's table at one control step per frame
    printf("adaptive sampling: %d bins of ~1 s over all clips\n",
           motion_sampler_table(lib.nclip, lib.clip_len, 1 / lib.fps, bin0, NULL));
    free(bin0);
  }
  printf("bodies:");
  for (int b = 0; b < lib.nbody; b++) printf(" %s", lib.body_name[b]);
  printf("\n");
  motion_lib_free(&lib);
  return 0;
}

int motion_main(int argc, char** argv) {
  if (argc >= 2 && !strcmp(argv[1], "build")) return motion_build(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "info")) return motion_info(argc - 1, argv + 1);
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(kUsage, stdout);
    return 0;
  }
  fprintf(stderr, "adjoint motion: unknown subcommand '%s' (available: build, info)\n%s", argc >= 2 ? argv[1] : "",
          kUsage);
  return 2;
}
