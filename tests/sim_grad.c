// sim_grad.c: the reference gradient check of the smooth-dynamics adjoint (float64). For random states of
// each model (constraints disabled), c' d x'/d u for u in {qpos (tangent), qvel, ctrl} from our reverse pass
// is compared with central differences of MuJoCo C's mj_step (our own loop: qpos perturbed with
// mj_integratePos, outputs differenced with mj_differentiatePos; mjd_transitionFD would reuse the nominal
// factor, see physics.md section 4). Also: a 16x4-substep hopper rollout against FD of the whole rollout,
// and the closed form dq/du = h^2 of a unit slider.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/grad_ref.h"
#include "tests/test.h"


static int load_keep_constraints = 0;  // 1: do not disable the constraint stage (and converge the solver)
static double conv_tol = 0;            // solver tolerance of the converged runs (0: until no improvement)
static double max_skipped = 0.25;      // fraction of states that may be skipped for changed decisions
static int expect_rows = 1;            // with load_keep_constraints: some state must have rows
static int normwise = 0;               // 1: errors are |g - fd| / |fd| over each block instead of per element

static mjModel* load(const char* name, int integrator, double timestep) {
  char path[1024], err[1024];
  if (sim_find_asset(name, path, sizeof(path))) {
    fprintf(stderr, "asset %s not found\n", name);
    return NULL;
  }
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = load_keep_constraints ? 0 : SIM_DSBL_CONSTRAINT;
  if (load_keep_constraints) {  // the adjoint differentiates the converged solution: converge both engines
    opt.iterations = 1000;
    opt.tolerance = conv_tol;
    opt.ls_iterations = 100;
  }
  opt.integrator = integrator;
  if (timestep > 0) opt.timestep = timestep;
  void* mj = NULL;
  if (sim_load_mjcf(path, &opt, &mj, err, sizeof(err))) {
    fprintf(stderr, "load %s: %s\n", name, err);
    return NULL;
  }
  return (mjModel*)mj;
}

// c' (x'(u + eps e) - x'(u - eps e)) / 2eps for every input coordinate (qpos tangent, qvel, all ctrls)
// returns 1 when some perturbed rollout took other discrete decisions than the nominal one (signature sig0)
static int ref_fd(Ref* r, const double* qpos, const double* qvel, const double* ctrl, const double* cq,
                  const double* cv, double eps, unsigned long long sig0, double* gq, double* gv, double* gu) {
  const mjModel* m = r->mj;
  int nq = m->nq, nv = m->nv, nu = m->nu, ntot = nv + nv + nu * r->nstep;
  double* q = malloc(sizeof(double) * nq);
  double* v = malloc(sizeof(double) * nv);
  double* u = malloc(sizeof(double) * nu * r->nstep);
  double* dq = malloc(sizeof(double) * nv);
  double* qp = malloc(sizeof(double) * nq * 2);
  double* vp = malloc(sizeof(double) * nv * 2);
  double* e = calloc(nv, sizeof(double));
  int changed = 0;
  for (int k = 0; k < ntot; k++) {
    for (int side = 0; side < 2; side++) {
      double s = side ? eps : -eps;
      mju_copy(q, qpos, nq);
      mju_copy(v, qvel, nv);
      mju_copy(u, ctrl, nu * r->nstep);
      if (k < nv) {
        mju_zero(e, nv);
        e[k] = 1;
        mj_integratePos(m, q, e, s);
      } else if (k < 2 * nv) {
        v[k - nv] += s;
      } else {
        u[k - 2 * nv] += s;
      }
      ref_rollout(r, q, v, u, qp + side * nq, vp + side * nv);
      changed |= r->sig != sig0;
    }
    mj_differentiatePos(m, dq, 2 * eps, qp, qp + nq);
    double g = 0;
    for (int i = 0; i < nv; i++) g += cq[i] * dq[i] + cv[i] * (vp[nv + i] - vp[i]) / (2 * eps);
    if (k < nv) gq[k] = g;
    else if (k < 2 * nv) gv[k - nv] = g;
    else gu[k - 2 * nv] = g;
  }
  free(q), free(v), free(u), free(dq), free(qp), free(vp), free(e);
  return changed;
}

// random state around qpos0 (tangent noise), random velocity, ctrl inside its range (ctrl_spread > 1: also
// outside it, so that ctrl clamps are exercised)
static double ctrl_spread = 0.8;
static int settle_steps = 0;  // > 0: MuJoCo steps from the random state under its first controls (contacts form)

static void random_state(const mjModel* m, double qscale, double vscale, double* qpos, double* qvel, double* ctrl,
                         int nstep) {
  grad_random_state(m, qscale, vscale, ctrl_spread, settle_steps, nstep, qpos, qvel, ctrl);
}

// world 0 from (qpos, qvel) through nstep recorded control steps of nsub substeps under ctrl (nstep x nu), its
// tape emptied first; the first failing control step's code, else 0
static int record_rollout(const SimModel* m, SimData* d, const double* qpos, const double* qvel, const double* ctrl,
                          int nsub, int nstep) {
  int nq = m->nq, nv = m->nv, nu = m->nu, rc = 0;
  sim_tape_clear(m, d);
  sim_reset(m, d, 0, -1);
  for (int i = 0; i < nq; i++) d->qpos[i] = qpos[i];
  for (int i = 0; i < nv; i++) d->qvel[i] = qvel[i];
  for (int t = 0; t < nstep && rc == 0; t++) {
    for (int a = 0; a < nu; a++) d->ctrl[a] = ctrl[t * nu + a];
    rc = sim_control_step(m, d, nsub, 1);
  }
  return rc;
}

// gradient of c'x' over nstep control steps of nsub substeps: ours vs MuJoCo FD. Returns the max error.
static double check_model(const char* name, int integrator, double timestep, int nsub, int nstep, int nstate, double qscale,
                          double vscale, double tol_med, double tol_max) {
  mjModel* mj = load(name, integrator, timestep);
  TEST_CHECK(mj != NULL, "load %s", name);
  if (!mj) return INFINITY;
  SimModel* m = NULL;
  char err[1024];
  int rc = sim_model_import(mj, &m, err, sizeof(err));
  TEST_CHECK(rc == 0, "import %s: %s", name, err);
  if (rc) return INFINITY;
  sim_adjoint_enable(m, nsub * nstep);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  int nq = mj->nq, nv = mj->nv, nu = mj->nu;
  Ref r = {mj, mj_makeData(mj), nsub, nstep, 0};
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu * nstep + 1));
  double *cq = malloc(sizeof(double) * nv), *cv = malloc(sizeof(double) * nv);
  double *gq = malloc(sizeof(double) * nv), *gv = malloc(sizeof(double) * nv);
  double* gu = malloc(sizeof(double) * (nu * nstep + 1));
  double *fq = malloc(sizeof(double) * nv), *fv = malloc(sizeof(double) * nv);
  double* fu = malloc(sizeof(double) * (nu * nstep + 1));
  double *qref = malloc(sizeof(double) * nq), *vref = malloc(sizeof(double) * nv);
  double worst = 0;
  int skipped = 0, withrows = 0;
  seed(name);  // each check draws its own states, whatever ran before it
  const char* intname[] = {"Euler", "RK4", "implicit", "implicitfast"};
  for (int st = 0; st < nstate; st++) {
    random_state(mj, qscale, vscale, qpos, qvel, ctrl, nstep);
    for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
    // ours: forward with the tape, then backward
    rc = record_rollout(m, d, qpos, qvel, ctrl, nsub, nstep);
    TEST_CHECK(rc == 0, "control step");
    ref_rollout(&r, qpos, qvel, ctrl, qref, vref);
    unsigned long long sig0 = r.sig;
    double fwd = 0;
    for (int i = 0; i < nq; i++) fwd = fmax(fwd, fabs(d->qpos[i] - qref[i]));
    for (int i = 0; i < nv; i++) fwd = fmax(fwd, fabs(d->qvel[i] - vref[i]) / fmax(1, fabs(vref[i])));
    TEST_CHECK(fwd < (SIM_EPS_REAL < 1e-10 ? 1e-8 : 1e-3), "%s forward differs from MuJoCo by %g", name, fwd);
    for (int i = 0; i < nv; i++) d->adj_qpos[i] = cq[i], d->adj_qvel[i] = cv[i];
    for (int t = nstep - 1; t >= 0; t--) {
      rc = sim_control_step_backward(m, d, nsub);
      TEST_CHECK(rc == 0, "backward");
      for (int a = 0; a < nu; a++) gu[t * nu + a] = d->adj_ctrl[a];
    }
    for (int i = 0; i < nv; i++) gq[i] = d->adj_qpos[i], gv[i] = d->adj_qvel[i];
    if (!load_keep_constraints)
      TEST_CHECK(d->adj_nconstraint[0] == 0, "%s: %d evaluations had constraint rows", name, d->adj_nconstraint[0]);
    withrows += d->adj_nconstraint[0] > 0;
    if (ref_fd(&r, qpos, qvel, ctrl, cq, cv, 1e-6, sig0, fq, fv, fu)) {
      printf("%-22s state %d: skipped (a perturbation changes the contacts or row states)\n", name, st);
      skipped++;
      continue;
    }
    double med[3], mx[3];
    rel_errors(gq, fq, nv, normwise, &med[0], &mx[0]);
    rel_errors(gv, fv, nv, normwise, &med[1], &mx[1]);
    rel_errors(gu, fu, nu * nstep, normwise, &med[2], &mx[2]);
    printf("%-22s %-12s %2dx%d state %d: rel err qpos med %.1e max %.1e | qvel med %.1e max %.1e | ctrl med %.1e max %.1e\n",
           name, intname[mj->opt.integrator], nstep, nsub, st, med[0], mx[0], med[1], mx[1], med[2], mx[2]);
    const char* blk[] = {"qpos", "qvel", "ctrl"};
    for (int b = 0; b < 3; b++) {
      if (b == 2 && nu == 0) continue;
      TEST_CHECK(med[b] <= tol_med && mx[b] <= tol_max, "%s %s: median %g max %g (tol %g, %g)", name, blk[b], med[b],
                 mx[b], tol_med, tol_max);
      worst = fmax(worst, mx[b]);
    }
    if (getenv("GRAD_VERBOSE")) {
      for (int i = 0; i < nv; i++) printf("  q[%d] %.10e %.10e | v %.10e %.10e\n", i, gq[i], fq[i], gv[i], fv[i]);
      for (int i = 0; i < nu * nstep; i++) printf("  u[%d] %.10e %.10e\n", i, gu[i], fu[i]);
    }
  }
  if (load_keep_constraints) {
    printf("%-22s %d states, %d with constraint rows, %d skipped\n", name, nstate, withrows, skipped);
    TEST_CHECK(skipped <= max_skipped * nstate && skipped < nstate, "%s: %d of %d states skipped", name, skipped,
               nstate);
    TEST_CHECK(withrows > 0 || !expect_rows, "%s: no state had constraint rows", name);
  }
  free(qpos), free(qvel), free(ctrl), free(cq), free(cv), free(gq), free(gv), free(gu), free(fq), free(fv), free(fu);
  free(qref), free(vref);
  mj_deleteData(r.md);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
  return worst;
}

// load (above) and sim_model_import, each failure a failed check; iterations > 0 replaces the solver's. 0: both made
static int load_model(const char* name, int integrator, double timestep, int iterations, mjModel** mj_out,
                      SimModel** m_out) {
  mjModel* mj = load(name, integrator, timestep);
  TEST_CHECK(mj != NULL, "load %s", name);
  if (!mj) return 1;
  if (iterations > 0) mj->opt.iterations = iterations;
  char err[1024];
  if (sim_model_import(mj, m_out, err, sizeof(err))) {
    TEST_CHECK(0, "import %s: %s", name, err);
    mj_deleteModel(mj);
    return 1;
  }
  *mj_out = mj;
  return 0;
}

#ifdef SIM_DOUBLE
// lanes: the control step and its backward run by nlane threads (tests/sim_lanes.c) equal one lane
void sim_lanes_run_control(const void* model, void* data, int w, int nsub, int record, int backward, int nlane);

static void check_lanes(const char* name, int integrator, double timestep, int nsub) {
  mjModel* mj = NULL;
  SimModel* m = NULL;
  if (load_model(name, integrator, timestep, 0, &mj, &m)) return;
  sim_adjoint_enable(m, nsub);
  SimData* d = NULL;
  sim_data_create(m, 3, &d);  // world 0: one lane; 1: 5 lanes; 2: 32 lanes
  int nq = mj->nq, nv = mj->nv, nu = mj->nu;
  double* qpos = malloc(sizeof(double) * nq);
  double* qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu + 1));
  double* cq = malloc(sizeof(double) * nv);
  double* cv = malloc(sizeof(double) * nv);
  random_state(mj, 0.3, 1.0, qpos, qvel, ctrl, 1);
  for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
  int lanes[3] = {1, 5, 32};
  for (int w = 0; w < 3; w++) {
    for (int i = 0; i < nq; i++) d->qpos[w * nq + i] = qpos[i];
    for (int i = 0; i < nv; i++) d->qvel[w * nv + i] = qvel[i];
    for (int i = 0; i < nu; i++) d->ctrl[w * nu + i] = ctrl[i];
    sim_lanes_run_control(m, d, w, nsub, 1, 0, lanes[w]);
    for (int i = 0; i < nv; i++) d->adj_qpos[w * nv + i] = cq[i], d->adj_qvel[w * nv + i] = cv[i];
    sim_lanes_run_control(m, d, w, nsub, 0, 1, lanes[w]);
  }
  int ok = 1;
  for (int w = 1; w < 3; w++) {
    int fwd = !memcmp(d->qpos, d->qpos + w * nq, sizeof(double) * nq) &&
              !memcmp(d->qvel, d->qvel + w * nv, sizeof(double) * nv);
    int bwd = !memcmp(d->adj_qpos, d->adj_qpos + w * nv, sizeof(double) * nv) &&
              !memcmp(d->adj_qvel, d->adj_qvel + w * nv, sizeof(double) * nv) &&
              !memcmp(d->adj_ctrl, d->adj_ctrl + w * nu, sizeof(double) * nu);
    TEST_CHECK(fwd, "%s: %d lanes: forward differs from one lane", name, lanes[w]);
    TEST_CHECK(bwd, "%s: %d lanes: backward differs from one lane", name, lanes[w]);
    ok &= fwd && bwd;
  }
  printf("%-22s lanes 1/5/32: %s\n", name, ok ? "bit-identical" : "DIFFERENT");
  free(qpos), free(qvel), free(ctrl), free(cq), free(cv);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
}


// The solver adjoint's taped Newton factor (tape_hfac, one tree) against the factor it builds afresh: nstep
// recorded control steps, their backward twice, the second time with every entry's factor marked absent. A solver
// stopped by its iteration limit (iterations) often ends on a step that changed rows' states, where the forward
// must bring its factor up to the final states before taping it; the two backward passes must give the same bits.
static void check_hfac(const char* name, int iterations, int nsub, int nstep) {
  mjModel* mj = NULL;
  SimModel* m = NULL;
  if (load_model(name, -1, 0, iterations, &mj, &m)) return;
  int ntape = nsub * nstep;
  sim_adjoint_enable(m, ntape);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  int nq = mj->nq, nv = mj->nv, nu = mj->nu;
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu * nstep + 1));
  double *cq = malloc(sizeof(double) * nv), *cv = malloc(sizeof(double) * nv);
  double* g[2];
  for (int p = 0; p < 2; p++) g[p] = malloc(sizeof(double) * (2 * nv + nu * nstep));
  seed(name);
  random_state(mj, 0.2, 1.0, qpos, qvel, ctrl, nstep);
  for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
  int taped = 0, rows = 0;
  for (int pass = 0; pass < 2; pass++) {
    TEST_CHECK(record_rollout(m, d, qpos, qvel, ctrl, nsub, nstep) == 0, "%s: control step", name);
    for (int k = 0; k < ntape; k++) {
      if (pass == 0) taped += d->tape_hok[k] != 0;
      if (pass == 1) d->tape_hok[k] = 0;
    }
    for (int i = 0; i < nv; i++) d->adj_qpos[i] = cq[i], d->adj_qvel[i] = cv[i];
    d->adj_nconstraint[0] = 0;
    for (int t = nstep - 1; t >= 0; t--) {
      sim_control_step_backward(m, d, nsub);
      for (int a = 0; a < nu; a++) g[pass][2 * nv + t * nu + a] = d->adj_ctrl[a];
    }
    for (int i = 0; i < nv; i++) g[pass][i] = d->adj_qpos[i], g[pass][nv + i] = d->adj_qvel[i];
    if (pass == 0) rows = d->adj_nconstraint[0];
  }
  int same = !memcmp(g[0], g[1], sizeof(double) * (2 * nv + nu * nstep));
  printf("%-22s taped factor, %d iterations: %d of %d substeps taped (%d with rows), gradient %s\n", name,
         iterations, taped, ntape, rows, same ? "bit-identical to a fresh factor's" : "DIFFERENT");
  TEST_CHECK(taped > 0 && taped == rows, "%s: %d substeps taped their factor, %d had rows", name, taped, rows);
  TEST_CHECK(same, "%s: the taped factor's gradient differs from a fresh factor's", name);
  free(qpos), free(qvel), free(ctrl), free(cq), free(cv), free(g[0]), free(g[1]);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
}

#endif

// parameter hooks: d(c'x')/d body_mass and d/d body_ipos (one control step) against FD of MuJoCo with the
// perturbed model (mj_setConst recomputes the derived constants: subtree masses, sameframe flags)
static void check_params(const char* name, int nsub) {
  mjModel* mj = NULL;
  SimModel* m = NULL;
  if (load_model(name, -1, 0, 0, &mj, &m)) return;
  sim_adjoint_enable(m, nsub);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  int nq = mj->nq, nv = mj->nv, nu = mj->nu, nb = mj->nbody;
  Ref r = {mj, mj_makeData(mj), nsub, 1, 0};
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double *ctrl = malloc(sizeof(double) * (nu + 1)), *cq = malloc(sizeof(double) * nv), *cv = malloc(sizeof(double) * nv);
  double *qp = malloc(sizeof(double) * 2 * nq), *vp = malloc(sizeof(double) * 2 * nv), *dq = malloc(sizeof(double) * nv);
  double *gm = calloc((size_t)nb, sizeof(double)), *fm = calloc((size_t)nb, sizeof(double));
  double *gi = calloc((size_t)3 * nb, sizeof(double)), *fi = calloc((size_t)3 * nb, sizeof(double));
  random_state(mj, 0.3, 1.0, qpos, qvel, ctrl, 1);
  for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
  sim_tape_clear(m, d);
  for (int i = 0; i < nq; i++) d->qpos[i] = qpos[i];
  for (int i = 0; i < nv; i++) d->qvel[i] = qvel[i];
  for (int i = 0; i < nu; i++) d->ctrl[i] = ctrl[i];
  sim_control_step(m, d, nsub, 1);
  for (int i = 0; i < nv; i++) d->adj_qpos[i] = cq[i], d->adj_qvel[i] = cv[i];
  sim_control_step_backward(m, d, nsub);
  for (int b = 0; b < nb; b++) gm[b] = d->adj_body_mass[b];
  for (int k = 0; k < 3 * nb; k++) gi[k] = d->adj_body_ipos[k];
  for (int k = 0; k < 4 * nb; k++) {
    mjtNum* prm = k < nb ? mj->body_mass + k : mj->body_ipos + (k - nb);
    double eps = k < nb ? 1e-6 : 1e-5, save = *prm, g = 0;
    if (k == 0 || (k >= nb && k < nb + 3)) {  // world body
      if (k < nb) fm[k] = gm[k] = 0;
      else fi[k - nb] = gi[k - nb] = 0;
      continue;
    }
    for (int side = 0; side < 2; side++) {
      *prm = save + (side ? eps : -eps);
      mj_setConst(mj, r.md);
      ref_rollout(&r, qpos, qvel, ctrl, qp + side * nq, vp + side * nv);
    }
    *prm = save;
    mj_setConst(mj, r.md);
    mj_differentiatePos(mj, dq, 2 * eps, qp, qp + nq);
    for (int i = 0; i < nv; i++) g += cq[i] * dq[i] + cv[i] * (vp[nv + i] - vp[i]) / (2 * eps);
    if (k < nb) fm[k] = g;
    else fi[k - nb] = g;
  }
  double med[2], mx[2];
  rel_errors(gm, fm, nb, normwise, &med[0], &mx[0]);
  rel_errors(gi, fi, 3 * nb, normwise, &med[1], &mx[1]);
  printf("%-22s params: rel err body_mass med %.1e max %.1e | body_ipos med %.1e max %.1e\n", name, med[0], mx[0],
         med[1], mx[1]);
  if (getenv("GRAD_VERBOSE"))
    for (int b = 0; b < nb; b++) printf("  mass[%d] %.10e %.10e\n", b, gm[b], fm[b]);
#ifdef SIM_DOUBLE
  TEST_CHECK(med[0] < 1e-5 && mx[0] < 1e-3, "%s body_mass gradient", name);
  TEST_CHECK(med[1] < 1e-5 && mx[1] < 1e-3, "%s body_ipos gradient", name);
#endif
  free(qpos), free(qvel), free(ctrl), free(cq), free(cv), free(qp), free(vp), free(dq), free(gm), free(fm), free(gi), free(fi);
  mj_deleteData(r.md);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
}

// unit slider under a unit motor, Euler, no damping: dq'/du = h^2, dv'/du = h exactly
static void check_slider(void) {
  mjModel* mj = load("assets/test/grad_slider.xml", -1, 0);
  TEST_CHECK(mj != NULL, "load slider");
  if (!mj) return;
  SimModel* m = NULL;
  char err[256];
  sim_model_import(mj, &m, err, sizeof(err));
  sim_adjoint_enable(m, 1);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  double h = mj->opt.timestep;
  d->qpos[0] = 0.3, d->qvel[0] = -0.2, d->ctrl[0] = 0.7;
  sim_control_step(m, d, 1, 1);
  d->adj_qpos[0] = 1, d->adj_qvel[0] = 0;
  sim_control_step_backward(m, d, 1);
  double dq = d->adj_ctrl[0];
  d->adj_qpos[0] = 0, d->adj_qvel[0] = 1;
  sim_control_step(m, d, 0, 0);
  sim_tape_clear(m, d);
  d->qpos[0] = 0.3, d->qvel[0] = -0.2;
  sim_control_step(m, d, 1, 1);
  d->adj_qpos[0] = 0, d->adj_qvel[0] = 1;
  sim_control_step_backward(m, d, 1);
  double dv = d->adj_ctrl[0];
  printf("slider: dq/du %.17g (h^2 %.17g), dv/du %.17g (h %.17g)\n", dq, h * h, dv, h);
  double tol = SIM_EPS_REAL < 1e-10 ? 1e-12 : 1e-9;
  TEST_CHECK(fabs(dq - h * h) <= tol && fabs(dv - h) <= tol * 100, "slider closed form");
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
}

#ifdef SIM_DOUBLE
#define TOLS(med, max) med, max
#define TOLS_ROWS(med, max) med, max
#else  // float32 engine against float64 MuJoCo differences: loose, reports the float32 figures
#define TOLS(med, max) 3e-4, 5e-2
#define TOLS_ROWS(med, max) 1e-3, 1e-2  // with constraint rows: normwise per block (as adjoint verify)
#endif

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
#define RUN(tag, ...) \
  if (!only || strstr(tag, only)) __VA_ARGS__;
  RUN("slider", check_slider());
  RUN("chain_euler", check_model("assets/test/grad_chain.xml", -1, 0, 1, 1, 3, 0.3, 1.0, TOLS(1e-6, 1e-3)));
  RUN("chain_implicitfast", check_model("assets/test/grad_chain.xml", 3, 0, 1, 1, 3, 0.3, 1.0, TOLS(1e-6, 1e-3)));
  RUN("chain_rk4", check_model("assets/test/grad_chain.xml", 1, 2e-4, 1, 1, 3, 0.3, 1.0, TOLS(1e-6, 1e-3)));
  ctrl_spread = 2.0;  // about half the limited controls clamped
  RUN("chain_clamp", check_model("assets/test/grad_chain.xml", -1, 0, 1, 1, 4, 0.3, 1.0, TOLS(1e-6, 1e-3)));
  ctrl_spread = 0.8;
  RUN("freebody", check_model("assets/test/grad_freebody.xml", -1, 0, 1, 1, 3, 0.3, 2.0, TOLS(1e-6, 1e-3)));
  RUN("cartpole", check_model("cartpole/cartpole.xml", -1, 0, 1, 1, 3, 0.3, 1.0, TOLS(1e-6, 1e-3)));
  RUN("hopper", check_model("hopper/hopper.xml", -1, 0, 1, 1, 3, 0.2, 1.0, TOLS(1e-6, 1e-3)));
  RUN("humanoid", check_model("humanoid/humanoid.xml", -1, 0, 1, 1, 3, 0.2, 1.0, TOLS(1e-6, 1e-3)));
  RUN("g1", check_model("g1/g1.xml", -1, 0, 1, 1, 3, 0.2, 1.0, TOLS(1e-6, 1e-3)));
#ifdef SIM_DOUBLE
  RUN("lanes", check_lanes("assets/test/grad_chain.xml", -1, 0, 2));
  RUN("lanes", check_lanes("assets/test/grad_chain.xml", 1, 2e-4, 1));
  RUN("lanes", check_lanes("assets/test/grad_freebody.xml", -1, 0, 2));
  RUN("lanes", check_lanes("g1/g1.xml", -1, 0, 1));
#endif
  RUN("params", check_params("hopper/hopper.xml", 1));
  RUN("params", check_params("assets/test/grad_chain.xml", 2));
  // constraint stage on, no rows (no floor, no limits): the gradient must still match, the counter stay 0
  load_keep_constraints = 1;
  expect_rows = 0;
  RUN("constraint_stage", check_model("assets/test/grad_freebody.xml", -1, 0, 2, 2, 2, 0.05, 0.5, TOLS(1e-6, 1e-3)));
  expect_rows = 1;
  // constraint rows through the solver adjoint (contacts, limits): converged solver in both engines; states
  // whose perturbations change the contacts or row states are skipped (at most a quarter)
#ifndef SIM_DOUBLE
  normwise = 1;
#endif
  RUN("contact_hopper", check_model("hopper/hopper.xml", -1, 0, 1, 1, 8, 0.1, 0.5, TOLS_ROWS(1e-6, 1e-3)));
  RUN("contact_walker", check_model("assets/test/walker_planar.xml", -1, 0, 1, 1, 6, 0.1, 0.5, TOLS_ROWS(1e-6, 1e-3)));
  RUN("contact_free", check_model("assets/test/collision_free.xml", -1, 0, 1, 1, 6, 0.05, 0.3, TOLS_ROWS(1e-6, 1e-3)));
  settle_steps = 300;  // bodies that start apart: let them fall onto the floor and each other
  RUN("contact_chain", check_model("assets/test/collision_chain.xml", -1, 0, 1, 1, 6, 0.1, 0.5, TOLS_ROWS(1e-6, 1e-3)));
  RUN("contact_cfree", check_model("assets/test/constraint_free.xml", -1, 0, 1, 1, 6, 0.05, 0.3, TOLS_ROWS(1e-6, 1e-3)));
  settle_steps = 0;
  RUN("limit_chain", check_model("assets/test/constraint_chain.xml", -1, 0, 1, 1, 6, 0.3, 1.0, TOLS_ROWS(1e-6, 1e-3)));
  RUN("limit_grad_chain", check_model("assets/test/grad_chain.xml", -1, 0, 1, 1, 6, 0.5, 1.0, TOLS_ROWS(1e-6, 1e-3)));
  RUN("contact_humanoid_ball", check_model("assets/test/humanoid_ball.xml", -1, 0, 1, 1, 6, 0.1, 0.5, TOLS_ROWS(1e-6, 1e-3)));
  RUN("contact_humanoid", check_model("humanoid/humanoid.xml", -1, 0, 1, 1, 6, 0.1, 0.5, TOLS_ROWS(1e-6, 1e-3)));
  settle_steps = 100;  // G1 from qpos0 stands just above its floor: let the feet land
  RUN("contact_g1", check_model("g1/scene_flat.xml", -1, 0, 1, 1, 2, 0.05, 0.3, TOLS_ROWS(1e-6, 1e-3)));
#ifdef SIM_DOUBLE  // the solver adjoint run by 1, 5 and 32 lanes gives the same bits
  RUN("lanes_rows", check_lanes("g1/scene_flat.xml", -1, 0, 2));
  RUN("lanes_rows", check_lanes("assets/test/collision_free.xml", -1, 0, 2));
  RUN("lanes_rows", check_lanes("assets/test/constraint_chain.xml", -1, 0, 2));
  // free bodies whose mass-matrix rows skip ancestors (MuJoCo's simple bodies), nv <= 64: the warp forms
  RUN("lanes_rows", check_lanes("assets/test/rest_stack.xml", -1, 0, 2));
  RUN("hfac", check_hfac("g1/scene_flat.xml", 100, 4, 8));
  RUN("hfac", check_hfac("g1/scene_flat.xml", 2, 4, 8));
  RUN("hfac", check_hfac("hopper/hopper.xml", 2, 4, 8));
#endif
  settle_steps = 0;
  // 64 control steps of 4 substeps on the hopper through its contacts, vs FD of the whole rollout
  conv_tol = 1e-14;  // converged to float64 rounding; tolerance 0 gives the same figures at ~100x the time
  max_skipped = 0.75;
  normwise = 1;
#ifdef SIM_DOUBLE
  RUN("contact_rollout", check_model("hopper/hopper.xml", -1, 0, 4, 64, 4, 0.1, 0.5, 1e-4, 1e-4));
#else  // float32 through 256 substeps with contacts: reported, loosely bounded
  RUN("contact_rollout", check_model("hopper/hopper.xml", -1, 0, 4, 64, 4, 0.1, 0.5, 5e-2, 5e-2));
#endif
  normwise = 0;
  max_skipped = 0.25;
  conv_tol = 0;
  load_keep_constraints = 0;
  RUN("rollout", check_model("hopper/hopper.xml", -1, 0, 4, 16, 1, 0.2, 1.0, TOLS(1e-4, 1e-3)));
  RUN("rollout", check_model("g1/g1.xml", -1, 0, 4, 4, 1, 0.2, 1.0, TOLS(1e-4, 1e-3)));
  return test_report("sim_grad");
}
