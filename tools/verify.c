// verify.c: `adjoint verify MODEL.xml` compares our engine with MuJoCo C (float64) at states sampled from
// MuJoCo rollouts under random controls. See `adjoint verify --help`.
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_common.h"
#include "sim/sim_model.h"
#include "tools/cli.h"
#include "tools/verify.h"

static const char* kUsage =
    "usage: adjoint verify MODEL.xml [options]\n"
    "Compares our engine with MuJoCo 3.12 C (float64) at states drawn from MuJoCo rollouts under random\n"
    "controls (from the model's first keyframe if it has one).\n"
    "Gradient block (on by default): on up to 32 of the states (evenly spaced), c' dx'/du of one step, for a\n"
    "random c and u = qpos (tangent), qvel, ctrl: our adjoint against central differences (eps 1e-6) of MuJoCo\n"
    "C steps, both engines running the converged solver. States where a +-eps perturbation changes the contacts\n"
    "or constraint rows, or crosses a ctrl clamp, are skipped and counted (JSON: compared + skipped).\n"
    "  --states N          states to compare (default 64)\n"
    "  --seed S            random seed (default 0)\n"
    "  --precision P       float32 (default) or float64 (CPU only)\n"
    "  --backend B         cpu (default) or cuda\n"
    "  --no-contact        disable contacts in both engines\n"
    "  --no-constraint     disable all constraints in both engines\n"
    "  --converged         solver run to convergence in both engines (iterations 1000, tolerance 0,\n"
    "                      ls_iterations 100)\n"
    "  --no-grad           skip the gradient block\n"
    "  --json              print exactly one JSON object on stdout (notes go to stderr)\n"
    "Exit codes: 0 compared, 1 an error is not finite (NaN or inf states or results) or stdout failed,\n"
    "2 bad input (flags, a model that does not load or uses what the engine does not implement).\n";

typedef struct {
  uint64_t s;
} Rng;
static uint64_t rng_next(Rng* r) {  // splitmix64
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double rng_uniform(Rng* r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static double rng_normal(Rng* r) {
  double u = rng_uniform(r), v = rng_uniform(r);
  return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
typedef struct {
  double median, max;
} Stat;
static Stat stats(double* v, int n) {
  Stat s = {0, 0};
  if (n <= 0) return s;
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  s.median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.max = v[n - 1];
  for (int i = 0; i < n; i++)
    if (isnan(v[i])) s.max = s.median = NAN;
  return s;
}

static double relerr(const double* a, const double* ref, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; i++) {
    double d = a[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return sqrt(num) / fmax(sqrt(den), 1e-12);
}

// same contact set: equal counts and the same multiset of geom pairs (order-insensitive)
static int cmp_pair(const void* a, const void* b) {
  const int *x = (const int*)a, *y = (const int*)b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}
static int contacts_equal(int n1, int* g1, int n2, int* g2, int cap) {
  if (n1 != n2) return 0;
  int n = n1 < cap ? n1 : cap;
  qsort(g1, (size_t)n, 2 * sizeof(int), cmp_pair);
  qsort(g2, (size_t)n, 2 * sizeof(int), cmp_pair);
  for (int i = 0; i < 2 * n; i++)
    if (g1[i] != g2[i]) return 0;
  return 1;
}

static double round_prec(double x, int f32) { return f32 ? (double)(float)x : x; }

static int mj_data_bad(const mjData* d) {
  return d->warning[mjWARN_BADQPOS].number || d->warning[mjWARN_BADQVEL].number ||
         d->warning[mjWARN_BADQACC].number;
}

// random controls within ctrlrange (standard normal for unlimited actuators)
static void random_ctrl(const mjModel* m, mjData* d, Rng* rng) {
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_ctrllimited[i]) {
      double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
      d->ctrl[i] = lo + (hi - lo) * rng_uniform(rng);
    } else {
      d->ctrl[i] = rng_normal(rng);
    }
  }
}

// ---- gradient block: c' dx'/du of one step, ours against MuJoCo central differences ----
#define GRAD_EPS 1e-6
#define GRAD_MAX_STATES 32  // (kUsage says so) FD costs 2 (2 nv + nu) converged MuJoCo steps per state
enum { GRAD_COMPARED = 0, GRAD_SKIP_DECISION = 1, GRAD_SKIP_CLAMP = 2 };

// discrete decisions of one MuJoCo step: contacts (geom pairs, in order) and constraint rows (type, state)
typedef struct {
  int ncon, nefc;
  int *geom, *type, *state;
} Decisions;

static void decisions_save(const mjData* d, Decisions* s) {
  s->ncon = d->ncon;
  s->nefc = d->nefc;
  s->geom = (int*)realloc(s->geom, sizeof(int) * (2 * (size_t)d->ncon + 1));
  s->type = (int*)realloc(s->type, sizeof(int) * ((size_t)d->nefc + 1));
  s->state = (int*)realloc(s->state, sizeof(int) * ((size_t)d->nefc + 1));
  for (int c = 0; c < d->ncon; c++) s->geom[2 * c] = d->contact[c].geom[0], s->geom[2 * c + 1] = d->contact[c].geom[1];
  if (d->nefc > 0) {  // MuJoCo leaves efc_* NULL without rows: no memcpy from NULL, even of 0 bytes
    memcpy(s->type, d->efc_type, sizeof(int) * d->nefc);
    memcpy(s->state, d->efc_state, sizeof(int) * d->nefc);
  }
}

static int decisions_equal(const mjData* d, const Decisions* s) {
  if (d->ncon != s->ncon || d->nefc != s->nefc) return 0;
  for (int c = 0; c < d->ncon; c++)
    if (d->contact[c].geom[0] != s->geom[2 * c] || d->contact[c].geom[1] != s->geom[2 * c + 1]) return 0;
  return d->nefc == 0 ||
         (!memcmp(d->efc_type, s->type, sizeof(int) * d->nefc) && !memcmp(d->efc_state, s->state, sizeof(int) * d->nefc));
}

typedef struct {
  const mjModel* m;
  mjData* d;
  double *e, *qp, *vp, *dq;  // scratch: unit tangent (nv), outputs of both sides (2 nq, 2 nv), qpos difference (nv)
  Decisions nominal;
} GradRef;

// one MuJoCo step from state s of b, input coordinate k (qpos tangent, qvel, ctrl; -1: none) moved by h
static void ref_step(GradRef* r, const VerifyBatch* b, int s, int k, double h) {
  const mjModel* m = r->m;
  mjData* d = r->d;
  int nq = m->nq, nv = m->nv, nu = m->nu;
  mj_resetData(m, d);
  memcpy(d->qpos, b->qpos + (size_t)s * nq, sizeof(double) * nq);
  memcpy(d->qvel, b->qvel + (size_t)s * nv, sizeof(double) * nv);
  memcpy(d->ctrl, b->ctrl + (size_t)s * nu, sizeof(double) * nu);
  memcpy(d->qacc_warmstart, b->warm + (size_t)s * nv, sizeof(double) * nv);
  if (k >= 0 && k < nv) {
    memset(r->e, 0, sizeof(double) * nv);
    r->e[k] = 1;
    mj_integratePos(m, d->qpos, r->e, h);
  } else if (k >= nv && k < 2 * nv) {
    d->qvel[k - nv] += h;
  } else if (k >= 2 * nv) {
    d->ctrl[k - 2 * nv] += h;
  }
  mj_step(m, d);
}

// a control whose clamp to ctrlrange switches on or off within +-h: the derivative has a kink there
static int ctrl_clamp_crossed(const mjModel* m, const double* ctrl, double h) {
  if (m->opt.disableflags & mjDSBL_CLAMPCTRL) return 0;
  for (int i = 0; i < m->nu; i++) {
    if (!m->actuator_ctrllimited[i]) continue;
    double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1], x = ctrl[i];
    int in = x >= lo && x <= hi;
    if ((x - h >= lo && x - h <= hi) != in || (x + h >= lo && x + h <= hi) != in) return 1;
  }
  return 0;
}

// g = c' dx'/d(qpos tangent, qvel, ctrl) (2 nv + nu) by central differences of MuJoCo steps from state s.
// Returns GRAD_COMPARED, or why the state is skipped (a perturbation changes a discrete decision).
static int ref_grad(GradRef* r, const VerifyBatch* b, int s, double* g) {
  const mjModel* m = r->m;
  int nq = m->nq, nv = m->nv;
  if (ctrl_clamp_crossed(m, b->ctrl + (size_t)s * m->nu, GRAD_EPS)) return GRAD_SKIP_CLAMP;
  ref_step(r, b, s, -1, 0);
  decisions_save(r->d, &r->nominal);
  const double *cq = b->cot_qpos + (size_t)s * nv, *cv = b->cot_qvel + (size_t)s * nv;
  for (int k = 0; k < 2 * nv + m->nu; k++) {
    for (int side = 0; side < 2; side++) {
      ref_step(r, b, s, k, side ? GRAD_EPS : -GRAD_EPS);
      if (!decisions_equal(r->d, &r->nominal)) return GRAD_SKIP_DECISION;
      memcpy(r->qp + side * nq, r->d->qpos, sizeof(double) * nq);
      memcpy(r->vp + side * nv, r->d->qvel, sizeof(double) * nv);
    }
    mj_differentiatePos(m, r->dq, 2 * GRAD_EPS, r->qp, r->qp + nq);
    double acc = 0;
    for (int i = 0; i < nv; i++) acc += cq[i] * r->dq[i] + cv[i] * (r->vp[nv + i] - r->vp[i]) / (2 * GRAD_EPS);
    g[k] = acc;
  }
  return GRAD_COMPARED;
}

typedef struct {
  Stat qpos, qvel, ctrl;
  int compared, skipped, skipped_clamp;
  int nconstraint;  // compared states whose adjoint met constraint rows it does not differentiate
} GradResult;

// the gradient states: up to GRAD_MAX_STATES of the n states, evenly spaced; c drawn from rng
static VerifyBatch grad_batch(const mjModel* m, const VerifyBatch* all, Rng* rng, int f32, double** mem) {
  int nq = m->nq, nv = m->nv, nu = m->nu, n = all->n < GRAD_MAX_STATES ? all->n : GRAD_MAX_STATES;
  VerifyBatch g = {0};
  g.n = n;
  double* p = *mem = (double*)calloc((size_t)n * (nq + 7 * nv + 2 * nu) + 1, sizeof(double));
  g.qpos = p, p += (size_t)n * nq;
  g.qvel = p, p += (size_t)n * nv;
  g.ctrl = p, p += (size_t)n * nu;
  g.warm = p, p += (size_t)n * nv;
  double *cq = p, *cv = p + (size_t)n * nv;
  g.cot_qpos = cq, g.cot_qvel = cv, p += (size_t)2 * n * nv;
  g.grad_qpos = p, p += (size_t)n * nv;
  g.grad_qvel = p, p += (size_t)n * nv;
  g.grad_ctrl = p;
  g.grad_nconstraint = (int*)calloc((size_t)n + 1, sizeof(int));
  for (int i = 0; i < n; i++) {
    int s = (int)((long long)i * all->n / n);
    memcpy(g.qpos + (size_t)i * nq, all->qpos + (size_t)s * nq, sizeof(double) * nq);
    memcpy(g.qvel + (size_t)i * nv, all->qvel + (size_t)s * nv, sizeof(double) * nv);
    memcpy(g.ctrl + (size_t)i * nu, all->ctrl + (size_t)s * nu, sizeof(double) * nu);
    memcpy(g.warm + (size_t)i * nv, all->warm + (size_t)s * nv, sizeof(double) * nv);
    // c over the tangent of (qpos', qvel'), in the engine's precision so that both use the same c
    for (int k = 0; k < nv; k++) cq[(size_t)i * nv + k] = round_prec(rng_normal(rng), f32);
    for (int k = 0; k < nv; k++) cv[(size_t)i * nv + k] = round_prec(rng_normal(rng), f32);
  }
  return g;
}

// per-state relative errors of our gradients against the reference FD, over the compared states
static void grad_compare(const mjModel* m, VerifyBatch* g, GradResult* res) {
  int nv = m->nv, nu = m->nu, n = g->n;
  GradRef r = {0};
  r.m = m;
  r.d = mj_makeData(m);
  r.e = (double*)malloc(sizeof(double) * (size_t)(6 * nv + 2 * m->nq + nu + 1));
  r.qp = r.e + nv, r.vp = r.qp + 2 * m->nq, r.dq = r.vp + 2 * nv;
  double* ref = r.dq + nv;  // 2 nv + nu
  double* e = (double*)malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
  int c = 0;
  for (int s = 0; s < n; s++) {
    int why = ref_grad(&r, g, s, ref);
    if (why != GRAD_COMPARED) {
      res->skipped++;
      res->skipped_clamp += why == GRAD_SKIP_CLAMP;
      continue;
    }
    e[c] = relerr(g->grad_qpos + (size_t)s * nv, ref, nv);
    e[n + c] = relerr(g->grad_qvel + (size_t)s * nv, ref + nv, nv);
    e[2 * n + c] = nu ? relerr(g->grad_ctrl + (size_t)s * nu, ref + 2 * nv, nu) : 0;
    res->nconstraint += g->grad_nconstraint[s] > 0;
    c++;
  }
  res->compared = c;
  res->qpos = stats(e, c);
  res->qvel = stats(e + n, c);
  res->ctrl = stats(e + 2 * n, c);
  free(e);
  free(r.e);
  free(r.nominal.geom), free(r.nominal.type), free(r.nominal.state);
  mj_deleteData(r.d);
}

// the gradient block. Both engines run the converged solver: mconv is the user's model when it already does
// (--converged), else NULL and a copy is loaded with opt's other settings. Returns 0 or 2 with a message in err.
static int grad_block(const char* model, SimLoadOptions opt, mjModel* mconv, const VerifyBatch* all, Rng* rng, int f32,
                      int cuda, GradResult* res, char* err, size_t errlen) {
  if (all->n == 0) return 0;
  fprintf(stderr, "note: gradient block: both engines run the converged solver (iterations 1000, tolerance 0)\n");
  mjModel* m = mconv;
  if (!m) {
    opt.iterations = 1000;
    opt.tolerance = 0;
    opt.ls_iterations = 100;
    void* mjv = NULL;
    if (sim_load_mjcf(model, &opt, &mjv, err, errlen)) return 2;
    m = (mjModel*)mjv;
  }
  double* mem = NULL;
  VerifyBatch g = grad_batch(m, all, rng, f32, &mem);
  int rc = f32 ? verify_grad_f32(m, &g, cuda, err, errlen) : verify_grad_f64(m, &g, cuda, err, errlen);
  if (!rc) grad_compare(m, &g, res);
  if (res->nconstraint)
    fprintf(stderr, "note: gradient block: in %d of %d compared states the adjoint met constraint rows it does not "
            "differentiate\n", res->nconstraint, res->compared);
  free(mem);
  free(g.grad_nconstraint);
  if (m != mconv) sim_free_mjmodel(m);
  return rc ? 2 : 0;
}

static void print_grad(const GradResult* gr) {
  printf("gradient c' dx'/du of one step (converged solver), c random, vs MuJoCo C float64 central differences\n"
         "(eps %g), relative error per state: |ours - ref| / max(|ref|, 1e-12)\n", GRAD_EPS);
  printf("  %-12s %12s %12s\n", "input u", "median", "max");
  printf("  %-12s %12.3e %12.3e\n", "qpos", gr->qpos.median, gr->qpos.max);
  printf("  %-12s %12.3e %12.3e\n", "qvel", gr->qvel.median, gr->qvel.max);
  printf("  %-12s %12.3e %12.3e\n", "ctrl", gr->ctrl.median, gr->ctrl.max);
  printf("gradient: %d states compared, %d skipped (%d: contacts or constraint rows changed under +-eps, %d: a ctrl "
         "clamp crossed)\n", gr->compared, gr->skipped, gr->skipped - gr->skipped_clamp, gr->skipped_clamp);
}

int verify_main(int argc, char** argv) {
  const char* model = NULL;
  int nstate = 64, f32 = 1, cuda = 0, json = 0, nocontact = 0, noconstraint = 0, converged = 0, grad = 1;
  unsigned long long seed = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kUsage, stdout);
      return 0;
    } else if (!strcmp(a, "--states")) {
      if (cli_int(argc, argv, &i, 1, 1 << 20, &nstate)) return 2;
    } else if (!strcmp(a, "--seed")) {
      if (cli_u64(argc, argv, &i, &seed)) return 2;
    } else if (!strcmp(a, "--precision")) {
      const char* v = cli_value(argc, argv, &i);
      if (!v || (strcmp(v, "float32") && strcmp(v, "float64"))) {
        fprintf(stderr, "adjoint verify: --precision must be float32 or float64\n");
        return 2;
      }
      f32 = !strcmp(v, "float32");
    } else if (!strcmp(a, "--backend")) {
      const char* v = cli_value(argc, argv, &i);
      if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda"))) {
        fprintf(stderr, "adjoint verify: --backend must be cpu or cuda\n");
        return 2;
      }
      cuda = !strcmp(v, "cuda");
    } else if (!strcmp(a, "--no-contact")) {
      nocontact = 1;
    } else if (!strcmp(a, "--no-constraint")) {
      noconstraint = 1;
    } else if (!strcmp(a, "--converged")) {
      converged = 1;
    } else if (!strcmp(a, "--no-grad")) {
      grad = 0;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "adjoint verify: unknown option '%s' (see --help)\n", a);
      return 2;
    } else if (!model) {
      model = a;
    } else {
      fprintf(stderr, "adjoint verify: more than one model given ('%s', '%s')\n", model, a);
      return 2;
    }
  }
  if (!model) {
    fputs(kUsage, stderr);
    return 2;
  }
  if (cuda && !f32) {
    fprintf(stderr, "adjoint verify: the CUDA backend is float32: use --precision float32\n");
    return 2;
  }

  SimLoadOptions opt;
  sim_load_options_default(&opt);
  if (nocontact) opt.disable_add |= mjDSBL_CONTACT;
  if (noconstraint) opt.disable_add |= mjDSBL_CONSTRAINT;
  if (converged) {
    opt.iterations = 1000;
    opt.tolerance = 0;
    opt.ls_iterations = 100;
  }
  void* mjv = NULL;
  char err[8192];
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) {
    fprintf(stderr, "adjoint verify: %s\n", err);
    return 2;
  }
  mjModel* m = (mjModel*)mjv;
  if (sim_check_model(m, err, sizeof(err))) {
    fprintf(stderr, "adjoint verify: %s: unsupported model:\n%s", model, err);
    sim_free_mjmodel(m);
    return 2;
  }
  if (m->nsensor) fprintf(stderr, "note: %d sensors are not computed by this engine\n", (int)m->nsensor);

  int nq = m->nq, nv = m->nv, nu = m->nu, n = nstate;
  VerifyBatch b = {0};
  b.n = n;
  double* mem = (double*)calloc((size_t)n * (3 * nq + 8 * nv + nu), sizeof(double));
  double *ref_qacc, *ref_qpos, *ref_qvel, *ref_qfrc;
  // contacts: ours and MuJoCo's geom pairs per state (first con_cap)
  b.con_cap = 256;
  b.ncon = (int*)calloc((size_t)n, sizeof(int));
  b.con_geom = (int*)calloc((size_t)n * b.con_cap * 2, sizeof(int));
  int* ref_ncon = (int*)calloc((size_t)n, sizeof(int));
  int* ref_geom = (int*)calloc((size_t)n * b.con_cap * 2, sizeof(int));
  {
    double* p = mem;
    b.qpos = p, p += (size_t)n * nq;
    b.qvel = p, p += (size_t)n * nv;
    b.ctrl = p, p += (size_t)n * nu;
    b.warm = p, p += (size_t)n * nv;
    b.qacc = p, p += (size_t)n * nv;
    b.qpos_next = p, p += (size_t)n * nq;
    b.qvel_next = p, p += (size_t)n * nv;
    ref_qacc = p, p += (size_t)n * nv;
    ref_qpos = p, p += (size_t)n * nq;
    ref_qvel = p, p += (size_t)n * nv;
    b.qfrc_constraint = p, p += (size_t)n * nv;
    ref_qfrc = p;
  }

  // sample states from several rollouts, after a burn-in, controls redrawn every step
  Rng rng = {seed * 0x2545F4914F6CDD1Dull + 1};
  mjData* d = mj_makeData(m);
  int nroll = n < 4 ? n : (n + 15) / 16 < 4 ? 4 : (n + 15) / 16;
  int per = (n + nroll - 1) / nroll;
  int stride = per >= 30 ? 10 : 300 / per;
  int burn = 100, got = 0;
  for (int r = 0; r < nroll && got < n; r++) {
    mj_resetData(m, d);
    if (m->nkey > 0) mj_resetDataKeyframe(m, d, 0);
    if (nu == 0)  // no controls to randomize the rollouts: randomize the initial velocity instead
      for (int i = 0; i < nv; i++) d->qvel[i] += 0.1 * rng_normal(&rng);
    for (int t = 0; t < burn + per * stride && got < n; t++) {
      random_ctrl(m, d, &rng);
      if (t >= burn && (t - burn) % stride == 0 && !mj_data_bad(d)) {
        for (int i = 0; i < nq; i++) b.qpos[got * nq + i] = round_prec(d->qpos[i], f32);
        for (int i = 0; i < nv; i++) {
          b.qvel[got * nv + i] = round_prec(d->qvel[i], f32);
          b.warm[got * nv + i] = round_prec(d->qacc_warmstart[i], f32);
        }
        for (int i = 0; i < nu; i++) b.ctrl[got * nu + i] = round_prec(d->ctrl[i], f32);
        got++;
      }
      mj_step(m, d);
    }
  }
  n = b.n = got;

  // reference: MuJoCo C float64 from each sampled state
  for (int s = 0; s < n; s++) {
    mj_resetData(m, d);
    memcpy(d->qpos, b.qpos + s * nq, sizeof(double) * nq);
    memcpy(d->qvel, b.qvel + s * nv, sizeof(double) * nv);
    memcpy(d->ctrl, b.ctrl + s * nu, sizeof(double) * nu);
    memcpy(d->qacc_warmstart, b.warm + s * nv, sizeof(double) * nv);
    mj_forward(m, d);
    memcpy(ref_qacc + s * nv, d->qacc, sizeof(double) * nv);
    memcpy(ref_qfrc + s * nv, d->qfrc_constraint, sizeof(double) * nv);
    ref_ncon[s] = d->ncon;
    for (int c = 0; c < d->ncon && c < b.con_cap; c++) {
      ref_geom[(s * b.con_cap + c) * 2] = d->contact[c].geom[0];
      ref_geom[(s * b.con_cap + c) * 2 + 1] = d->contact[c].geom[1];
    }
    mj_step(m, d);
    memcpy(ref_qpos + s * nq, d->qpos, sizeof(double) * nq);
    memcpy(ref_qvel + s * nv, d->qvel, sizeof(double) * nv);
  }
  mj_deleteData(d);

  int rc = -1;
  if (n == 0)  // MuJoCo itself never reached a finite state: nothing to compare (not an allocation failure)
    snprintf(err, sizeof(err), "no state to compare: every MuJoCo rollout of the model turned non-finite");
  else
    rc = f32 ? verify_engine_f32(m, &b, cuda, err, sizeof(err)) : verify_engine_f64(m, &b, cuda, err, sizeof(err));
  GradResult gr = {0};
  if (!rc && grad)
    rc = grad_block(model, opt, converged ? m : NULL, &b, &rng, f32, cuda, &gr, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "adjoint verify: %s: %s\n", model, err);
    free(mem);
    free(b.ncon);
    free(b.con_geom);
    free(ref_ncon);
    free(ref_geom);
    sim_free_mjmodel(m);
    return 2;
  }

  // per-state relative errors; quaternions compared after sign alignment
  double* e = (double*)malloc(sizeof(double) * 4 * (size_t)(n > 0 ? n : 1));
  int nmatch = 0;
  for (int s = 0; s < n; s++) {
    double* q = b.qpos_next + s * nq;
    const double* qr = ref_qpos + s * nq;
    for (int j = 0; j < m->njnt; j++) {
      int t = m->jnt_type[j];
      if (t != mjJNT_FREE && t != mjJNT_BALL) continue;
      int a = m->jnt_qposadr[j] + (t == mjJNT_FREE ? 3 : 0);
      double dot = q[a] * qr[a] + q[a + 1] * qr[a + 1] + q[a + 2] * qr[a + 2] + q[a + 3] * qr[a + 3];
      if (dot < 0)
        for (int k = 0; k < 4; k++) q[a + k] = -q[a + k];
    }
    e[s] = relerr(b.qacc + s * nv, ref_qacc + s * nv, nv);
    e[n + s] = relerr(q, qr, nq);
    e[2 * n + s] = relerr(b.qvel_next + s * nv, ref_qvel + s * nv, nv);
    e[3 * n + s] = relerr(b.qfrc_constraint + s * nv, ref_qfrc + s * nv, nv);
    nmatch += contacts_equal(b.ncon[s], b.con_geom + (size_t)s * b.con_cap * 2, ref_ncon[s],
                             ref_geom + (size_t)s * b.con_cap * 2, b.con_cap);
  }
  Stat sa = stats(e, n), sp = stats(e + n, n), sv = stats(e + 2 * n, n), sf = stats(e + 3 * n, n);
  double cmatch = n > 0 ? (double)nmatch / n : 1;
  if (b.ncon_overflow || b.nefc_overflow)
    fprintf(stderr, "note: capacity overflow over %d states: %lld contacts, %lld constraint rows dropped\n", n,
            b.ncon_overflow, b.nefc_overflow);
  const char* prec = f32 ? "float32" : "float64";
  const char* be = cuda ? "cuda" : "cpu";
  if (json) {  // JSON has no NaN or inf: a non-finite error prints as null (and the exit status says so below)
    char jb[14][32];
    double jv[14] = {sa.median, sa.max, sp.median, sp.max, sv.median, sv.max, sf.median, sf.max,
                     gr.qpos.median, gr.qpos.max, gr.qvel.median, gr.qvel.max, gr.ctrl.median, gr.ctrl.max};
    for (int i = 0; i < 14; i++)
      if (isfinite(jv[i]))
        snprintf(jb[i], sizeof(jb[i]), "%.6e", jv[i]);
      else
        snprintf(jb[i], sizeof(jb[i]), "null");
    printf("{\"model\": \"%s\", \"precision\": \"%s\", \"backend\": \"%s\", \"states\": %d, "
           "\"converged\": %s, "
           "\"model_info\": {\"nq\": %d, \"nv\": %d, \"nu\": %d, \"ngeom\": %d, \"npair\": %d}, "
           "\"forward\": {\"qacc\": {\"median\": %s, \"max\": %s}, \"qpos_next\": {\"median\": %s, \"max\": %s}, "
           "\"qvel_next\": {\"median\": %s, \"max\": %s}, \"qfrc_constraint\": {\"median\": %s, \"max\": %s}, "
           "\"contacts_match\": %.6f}, \"overflow\": {\"contacts\": %lld, \"rows\": %lld}, ",
           model, prec, be, n, converged ? "true" : "false", nq, nv, nu, (int)m->ngeom, b.npair, jb[0], jb[1],
           jb[2], jb[3], jb[4], jb[5], jb[6], jb[7], cmatch, b.ncon_overflow, b.nefc_overflow);
    if (grad)
      printf("\"gradient\": {\"qpos\": {\"median\": %s, \"max\": %s}, \"qvel\": {\"median\": %s, \"max\": %s}, "
             "\"ctrl\": {\"median\": %s, \"max\": %s}, \"skipped\": %d, \"skipped_clamp\": %d, "
             "\"compared\": %d}}\n",
             jb[8], jb[9], jb[10], jb[11], jb[12], jb[13], gr.skipped, gr.skipped_clamp, gr.compared);
    else
      printf("\"gradient\": null}\n");
  } else {
    printf("adjoint verify: %s  (precision %s, backend %s, %d states, seed %llu%s)\n", model, prec, be, n, seed,
           converged ? ", converged solver" : "");
    printf("model: nq %d  nv %d  nu %d  ngeom %d  npair %d\n", nq, nv, nu, (int)m->ngeom, b.npair);
    printf("relative error vs MuJoCo 3.12 C float64, per state: |ours - ref| / max(|ref|, 1e-12)\n");
    printf("  %-12s %12s %12s\n", "quantity", "median", "max");
    printf("  %-12s %12.3e %12.3e\n", "qacc", sa.median, sa.max);
    printf("  %-12s %12.3e %12.3e\n", "qpos_next", sp.median, sp.max);
    printf("  %-12s %12.3e %12.3e\n", "qvel_next", sv.median, sv.max);
    printf("  %-12s %12.3e %12.3e\n", "qfrc_constr", sf.median, sf.max);
    printf("contacts match MuJoCo's (same geom pairs and count) in %.1f%% of states\n", 100 * cmatch);
    if (b.ncon_overflow || b.nefc_overflow)
      printf("overflow: %lld contacts, %lld constraint rows dropped\n", b.ncon_overflow, b.nefc_overflow);
    if (grad) print_grad(&gr);
  }
  // a non-finite error is no agreement (a model the engine or MuJoCo cannot step finitely): exit 1
  int nonfinite = 0;
  for (int i = 0; i < 4 * n; i++) nonfinite += !isfinite(e[i]);
  if (grad)
    nonfinite += !isfinite(gr.qpos.max) + !isfinite(gr.qvel.max) + !isfinite(gr.ctrl.max) +
                 !isfinite(gr.qpos.median) + !isfinite(gr.qvel.median) + !isfinite(gr.ctrl.median);
  if (nonfinite)
    fprintf(stderr, "adjoint verify: %s: %d error values are not finite (NaN or inf states or results)\n", model,
            nonfinite);
  free(e);
  free(mem);
  free(b.ncon);
  free(b.con_geom);
  free(ref_ncon);
  free(ref_geom);
  sim_free_mjmodel(m);
  return nonfinite ? 1 : 0;
}
