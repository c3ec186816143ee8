// sim_fingerprint MODEL.xml ...: a bitwise fingerprint of CPU rollouts (float64 and float32 engines) and of the
// backward of a few recorded control steps after them (`grad`), one line per model. Not a test: a change meant to keep the engine's results bit for bit (a loop reordered for the
// GPU's lanes, a layout change) is checked by building this at both commits and comparing the outputs, e.g.
//   sim_fingerprint $(find ../shared/assets assets -name '*.xml' | sort) > after.txt
// Options: --worlds N (default 3), --steps N (default 150).
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t sim_fingerprint_f64(const mjModel* mm, int nworld, int nstep, long* niter, char* err, size_t errlen);
uint64_t sim_fingerprint_f32(const mjModel* mm, int nworld, int nstep, long* niter, char* err, size_t errlen);
uint64_t sim_fingerprint_grad_f64(const mjModel* mm, int nworld, int nstep, char* err, size_t errlen);
uint64_t sim_fingerprint_grad_f32(const mjModel* mm, int nworld, int nstep, char* err, size_t errlen);

int main(int argc, char** argv) {
  int nworld = 3, nstep = 150, nmodel = 0;
  for (int a = 1; a < argc; a++) {
    if (a + 1 < argc && !strcmp(argv[a], "--worlds")) nworld = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "--steps")) nstep = atoi(argv[++a]);
    else argv[++nmodel] = argv[a];
  }
  if (nmodel == 0 || nworld < 1 || nstep < 1) {
    fprintf(stderr, "usage: sim_fingerprint [--worlds N] [--steps N] MODEL.xml ...\n");
    return 2;
  }
  int bad = 0;
  for (int k = 1; k <= nmodel; k++) {
    char err[512] = "";
    mjModel* mm = mj_loadXML(argv[k], 0, err, sizeof err);
    if (!mm) {
      printf("%s: not loaded: %s\n", argv[k], err);
      bad = 1;
      continue;
    }
    long i64 = 0, i32 = 0;
    uint64_t h64 = sim_fingerprint_f64(mm, nworld, nstep, &i64, err, sizeof err);
    uint64_t h32 = h64 ? sim_fingerprint_f32(mm, nworld, nstep, &i32, err, sizeof err) : 0;
    uint64_t g64 = h32 ? sim_fingerprint_grad_f64(mm, nworld, nstep, err, sizeof err) : 0;
    uint64_t g32 = g64 ? sim_fingerprint_grad_f32(mm, nworld, nstep, err, sizeof err) : 0;
    if (h64 && h32 && g64 && g32)
      printf("%s float64 %016llx (%ld Newton iterations) float32 %016llx (%ld) grad %016llx %016llx\n", argv[k],
             (unsigned long long)h64, i64, (unsigned long long)h32, i32, (unsigned long long)g64,
             (unsigned long long)g32);
    else
      printf("%s: not imported: %s\n", argv[k], err);
    mj_deleteModel(mm);
  }
  if (fflush(stdout) != 0) return 1;
  return bad;
}
