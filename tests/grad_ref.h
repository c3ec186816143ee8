// grad_ref.h: helpers of the tests that compare our adjoint with central differences of MuJoCo C
// (tests/sim_grad.c, tests/sim_grad_params.c): a seeded random stream, the signature of a step's discrete
// decisions (to skip states whose perturbations change them), and the error measure. Static functions of a
// header, included once per test binary.
#ifndef ADJ_TESTS_GRAD_REF_H
#define ADJ_TESTS_GRAD_REF_H
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdlib.h>

// xorshift64 stream; seed() per check, so that each check draws its own numbers whatever ran before it
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [0, 1)
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void) {  // standard normal (Box-Muller)
  double u = urand() + 1e-12, v = urand();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static void seed(const char* name) {
  rng_state = 0x9E3779B97F4A7C15ull;
  for (const char* c = name; *c; c++) rng_state = (rng_state ^ (unsigned char)*c) * 1099511628211ull;
}

// FNV-1a over the discrete decisions of a step (contact count and geom pairs, row count, types and states),
// chained from h (SIG_START for the first step)
#define SIG_START 14695981039346656037ull
static unsigned long long sig_step(const mjData* d, unsigned long long h) {
#define MIX(v) h = (h ^ (unsigned long long)(unsigned)(v)) * 1099511628211ull
  MIX(d->ncon);
  for (int c = 0; c < d->ncon; c++) MIX(d->contact[c].geom[0]), MIX(d->contact[c].geom[1]);
  MIX(d->nefc);
  for (int r = 0; r < d->nefc; r++) MIX(d->efc_type[r]), MIX(d->efc_state[r]);
#undef MIX
  return h;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// relative error per element against FD, floored at 1e-6 of the block's largest |fd|: median and max
// (normwise: both are the block's |got - ref| / |ref|)
static void rel_errors(const double* got, const double* ref, int n, int normwise, double* med, double* mx) {
  if (normwise) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
    *med = *mx = den > 0 ? sqrt(num / den) : sqrt(num);
    return;
  }
  double scale = 0;
  for (int i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
  double* r = (double*)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  *mx = 0;
  for (int i = 0; i < n; i++) {
    r[i] = fabs(got[i] - ref[i]) / fmax(fabs(ref[i]), 1e-6 * scale + 1e-300);
    if (!(r[i] == r[i])) r[i] = INFINITY;
    *mx = fmax(*mx, r[i]);
  }
  qsort(r, (size_t)n, sizeof(double), cmp_double);
  *med = n ? (n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2])) : 0;
  free(r);
}

#endif
