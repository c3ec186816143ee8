// sim_grad_params.c: per-world parameter overrides (sim_param_*, sim.h) and the parameter cotangents of the
// backward (adj_body_mass, adj_body_ipos, adj_geom_friction; sim_adjoint.h).
//
// gradient (float64 only): for random states of hopper, the G1 scene, humanoid, a free-box stack and the
//   implicitfast free-body model, with random per-world masses, COM offsets and frictions (no friction ties),
//   c' dx'/d(param) of one step from our backward against central differences of MuJoCo C's own mj_step with
//   the same values written into mjModel (converged solver in both engines; subtree masses recomputed,
//   invweight0 kept; MuJoCo's shortcuts that assume the compiled COM off: simple bodies, sameframe, mid-phase;
//   states whose perturbations change the contacts or row states are skipped). The forward with those
//   overrides must match MuJoCo's too. tie: an exact friction tie sends the cotangent to the contact's first
//   geom, which equals MuJoCo's one-sided difference in it.
// identity: overrides equal to the model's values give the same bits as overrides off (a recorded rollout
//   with contacts and its backward, parameter cotangents included, except the COM cotangents of MuJoCo's simple
//   bodies: overrides off lack the mass-matrix coupling a COM offset adds there, sim_adjoint.h).
// worlds: a world with a doubled body mass differs, the default worlds equal the no-override run bitwise.
// lanes: a control step and its backward with random overrides run by 1, 5 and 32 lanes give the same bits.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/grad_ref.h"
#include "tests/test.h"

// tests/sim_lanes.c: the control step (or its backward) of world w run by nlane threads
void sim_lanes_run_control(const void* model, void* data, int w, int nsub, int record, int backward, int nlane);

// converged solver in both engines (the adjoint differentiates the converged solution), constraints kept
static mjModel* load(const char* name) {
  char path[1024], err[1024];
  if (sim_find_asset(name, path, sizeof(path))) {
    fprintf(stderr, "asset %s not found\n", name);
    return NULL;
  }
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.iterations = 1000;
  opt.tolerance = 0;
  opt.ls_iterations = 100;
  void* mj = NULL;
  if (sim_load_mjcf(path, &opt, &mj, err, sizeof(err))) {
    fprintf(stderr, "load %s: %s\n", name, err);
    return NULL;
  }
  return (mjModel*)mj;
}

static SimModel* import(const mjModel* mj, const char* name) {
  SimModel* m = NULL;
  char err[1024];
  int rc = sim_model_import(mj, &m, err, sizeof(err));
  TEST_CHECK(rc == 0, "import %s: %s", name, err);
  return rc ? NULL : m;
}

// a check's model: loaded (converged solver), imported, and the random stream seeded by the check's name;
// NULL after a failed check (nothing left to free)
static SimModel* open_model(const char* name, mjModel** mj) {
  *mj = load(name);
  TEST_CHECK(*mj != NULL, "load %s", name);
  if (!*mj) return NULL;
  SimModel* m = import(*mj, name);
  if (!m) {
    mj_deleteModel(*mj);
    return NULL;
  }
  seed(name);
  return m;
}

// open_model and a second import of the same model (two engines to compare); 0 after a failed check
static int open_two(const char* name, mjModel** mj, SimModel** m0, SimModel** m1) {
  *m0 = open_model(name, mj);
  if (!*m0) return 0;
  *m1 = import(*mj, name);
  if (!*m1) {
    sim_model_free(*m0);
    mj_deleteModel(*mj);
    return 0;
  }
  return 1;
}


// ---- MuJoCo reference with a world's parameters written into mjModel ----

// subtree masses from body_mass as sim_param_set derives them (and MuJoCo's mj_setConst); body_invweight0,
// dof_invweight0 and meaninertia stay as compiled, as the engine keeps them
static void ref_subtreemass(mjModel* mj) {
  for (int i = 0; i < mj->nbody; i++) mj->body_subtreemass[i] = mj->body_mass[i];
  for (int i = mj->nbody - 1; i > 0; i--) mj->body_subtreemass[mj->body_parentid[i]] += mj->body_subtreemass[i];
}

// a COM override moves the mass, not the geoms: no shortcut may assume the compiled COM offset (the engine
// keeps the shortcuts only while a world's offset equals the compiled one; same values either way)
static void ref_frames(mjModel* mj) {
  for (int b = 0; b < mj->nbody; b++)
    if (mj->body_sameframe[b] == mjSAMEFRAME_BODY) mj->body_sameframe[b] = mjSAMEFRAME_BODYROT;
  for (int g = 0; g < mj->ngeom; g++)
    if (mj->geom_sameframe[g] == mjSAMEFRAME_INERTIA) mj->geom_sameframe[g] = mjSAMEFRAME_INERTIAROT;
}

// The reference mjModel: the same MJCF compiled without MuJoCo's simple-body optimization (mjsBody.simple = 0;
// its mass-matrix pattern drops the coupling a COM offset creates in a simple body's block), with the compiled
// model's invweight0 and meaninertia (model constants in the engine) and the loader's options
static mjModel* ref_model(const char* name, const mjModel* mj0) {
  char path[1024], err[1024];
  if (sim_find_asset(name, path, sizeof(path))) return NULL;
  mjSpec* spec = mj_parseXML(path, NULL, err, sizeof(err));
  if (!spec) return NULL;
  for (mjsElement* e = mjs_firstElement(spec, mjOBJ_BODY); e; e = mjs_nextElement(spec, e)) mjs_asBody(e)->simple = 0;
  mjModel* mj = mj_compile(spec, NULL);
  mj_deleteSpec(spec);
  if (!mj) return NULL;
  if (mj->nbody != mj0->nbody || mj->nv != mj0->nv || mj->ngeom != mj0->ngeom || mj->ntendon != mj0->ntendon) {
    mj_deleteModel(mj);
    return NULL;
  }
  mj->opt = mj0->opt;
  // MuJoCo's mid-phase culls with bounding boxes in the bodies' compiled inertial frames (stale once a COM
  // moves); the engine's candidate pairs never cull
  mj->opt.disableflags |= mjDSBL_MIDPHASE;
  mj->stat.meaninertia = mj0->stat.meaninertia;
  mju_copy(mj->body_invweight0, mj0->body_invweight0, 2 * mj0->nbody);
  mju_copy(mj->dof_invweight0, mj0->dof_invweight0, mj0->nv);
  mju_copy(mj->tendon_invweight0, mj0->tendon_invweight0, mj0->ntendon);
  return mj;
}

// random parameters around the model's: masses x [0.8, 1.2], COM offsets + 1 cm noise, every friction
// component x [0.6, 1.4] (distinct values: a tie of the max mixing has no derivative for FD to check)
static double ipos_noise = 0.01;  // 0: the COM offsets stay the model's (simple bodies keep a diagonal block)
static void random_params(const mjModel* mj, double* mass, double* ipos, double* fric) {
  mass[0] = 0;
  ipos[0] = ipos[1] = ipos[2] = 0;
  for (int b = 1; b < mj->nbody; b++) {
    mass[b] = mj->body_mass[b] * (0.8 + 0.4 * urand());
    for (int k = 0; k < 3; k++) ipos[3 * b + k] = mj->body_ipos[3 * b + k] + ipos_noise * nrand();
  }
  for (int k = 0; k < 3 * mj->ngeom; k++) fric[k] = mj->geom_friction[k] * (0.6 + 0.8 * urand());
}

#ifdef SIM_DOUBLE
// c' dx'/d(mass, ipos, friction) of one step with random overrides: ours vs MuJoCo FD. Returns 0 if skipped.
typedef struct {
  double med[3], mx[3];
  int nfric;  // friction elements with a nonzero FD (geoms in frictional contact)
} ParamErr;

static int check_state(const mjModel* mj0, SimModel* m, SimData* d, Ref* r, const char* name, int st,
                       const double* qpos, const double* qvel, const double* ctrl, ParamErr* pe) {
  int nq = mj0->nq, nv = mj0->nv, nu = mj0->nu, nb = mj0->nbody, ng = mj0->ngeom;
  mjModel* mj = r->mj;
  double *cq = malloc(sizeof(double) * nv), *cv = malloc(sizeof(double) * nv);
  double *qn = malloc(sizeof(double) * nq), *vn = malloc(sizeof(double) * nv);
  double *qp = malloc(sizeof(double) * 2 * nq), *vp = malloc(sizeof(double) * 2 * nv);
  double* dq = malloc(sizeof(double) * nv);
  int np = nb + 3 * nb + ng;  // mass, ipos, friction component 0
  double *got = malloc(sizeof(double) * np), *fd = malloc(sizeof(double) * np);
  for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
  // ours: one recorded step, backward
  sim_tape_clear(m, d);
  for (int i = 0; i < nq; i++) d->qpos[i] = qpos[i];
  for (int i = 0; i < nv; i++) d->qvel[i] = qvel[i], d->qacc_warmstart[i] = 0;
  for (int i = 0; i < nu; i++) d->ctrl[i] = ctrl[i];
  TEST_CHECK(sim_control_step(m, d, 1, 1) == 0, "control step");
  ref_rollout(r, qpos, qvel, ctrl, qn, vn);
  unsigned long long sig0 = r->sig;
  int ncon = r->md->ncon;
  TEST_CHECK(ncon == d->ncon[0], "%s state %d: %d contacts, MuJoCo %d", name, st, d->ncon[0], ncon);
  double fwd = 0;
  for (int i = 0; i < nq; i++) fwd = fmax(fwd, fabs(d->qpos[i] - qn[i]));
  for (int i = 0; i < nv; i++) fwd = fmax(fwd, fabs(d->qvel[i] - vn[i]) / fmax(1, fabs(vn[i])));
  TEST_CHECK(fwd < 1e-8, "%s state %d: forward with overrides differs from MuJoCo by %g", name, st, fwd);
  for (int i = 0; i < nv; i++) d->adj_qpos[i] = cq[i], d->adj_qvel[i] = cv[i];
  TEST_CHECK(sim_control_step_backward(m, d, 1) == 0, "backward");
  for (int b = 0; b < nb; b++) got[b] = d->adj_body_mass[b];
  for (int k = 0; k < 3 * nb; k++) got[nb + k] = d->adj_body_ipos[k];
  for (int g = 0; g < ng; g++) {
    got[4 * nb + g] = d->adj_geom_friction[3 * g];
    TEST_CHECK(d->adj_geom_friction[3 * g + 1] == 0 && d->adj_geom_friction[3 * g + 2] == 0,
               "%s: torsional/rolling friction cotangent of geom %d", name, g);
  }
  // MuJoCo: central differences in each parameter of the world's values written into mjModel
  int changed = 0;
  for (int k = 0; k < np && !changed; k++) {
    mjtNum* prm = k < nb ? mj->body_mass + k : k < 4 * nb ? mj->body_ipos + (k - nb) : mj->geom_friction + 3 * (k - 4 * nb);
    if (k == 0 || (k >= nb && k < nb + 3)) {  // the world body: fixed (sim_param_set refuses other values)
      got[k] = fd[k] = 0;
      continue;
    }
    // steps: relative 1e-4 for masses (a small mass cotangent sits ~1e-6 below the block's largest, where a
    // 1e-6 step leaves ~1e-10 of rounding noise), 1 um for COM offsets, relative 1e-6 for frictions
    double save = *prm, eps = (k < nb ? 1e-4 * fmax(save, 1e-2) : k < 4 * nb ? 1e-6 : 1e-6 * fmax(save, 1e-2));
    for (int side = 0; side < 2; side++) {
      *prm = save + (side ? eps : -eps);
      if (k < nb) ref_subtreemass(mj);
      ref_rollout(r, qpos, qvel, ctrl, qp + side * nq, vp + side * nv);
      changed |= r->sig != sig0;
    }
    *prm = save;
    if (k < nb) ref_subtreemass(mj);
    mj_differentiatePos(mj, dq, 2 * eps, qp, qp + nq);
    double g = 0;
    for (int i = 0; i < nv; i++) g += cq[i] * dq[i] + cv[i] * (vp[nv + i] - vp[i]) / (2 * eps);
    fd[k] = g;
  }
  int ok = !changed;
  if (ok) {
    rel_errors(got, fd, nb, 0, &pe->med[0], &pe->mx[0]);
    rel_errors(got + nb, fd + nb, 3 * nb, 0, &pe->med[1], &pe->mx[1]);
    // friction: over the geoms that supply a contact's friction (ours exactly 0 for the others, where the FD
    // is rounding noise: mj_differentiatePos of two equal quaternions, ~1e-17 / eps)
    double *gg = malloc(sizeof(double) * (ng + 1)), *gf = malloc(sizeof(double) * (ng + 1)), scale = 0;
    for (int k = 0; k < np; k++) scale = fmax(scale, fabs(fd[k]));
    pe->nfric = 0;
    for (int g = 0; g < ng; g++)
      if (fabs(fd[4 * nb + g]) > 1e-8 * scale || got[4 * nb + g] != 0) {
        gg[pe->nfric] = got[4 * nb + g];
        gf[pe->nfric++] = fd[4 * nb + g];
      }
    rel_errors(gg, gf, pe->nfric, 0, &pe->med[2], &pe->mx[2]);
    free(gg), free(gf);
    printf("%-14s state %d: %2d contacts | rel err body_mass med %.1e max %.1e | body_ipos med %.1e max %.1e | "
           "geom_friction (%d nonzero) med %.1e max %.1e\n",
           name, st, ncon, pe->med[0], pe->mx[0], pe->med[1], pe->mx[1], pe->nfric, pe->med[2], pe->mx[2]);
    if (getenv("GRAD_VERBOSE"))
      for (int k = 0; k < np; k++) printf("  [%d] %.10e %.10e\n", k, got[k], fd[k]);
  } else {
    printf("%-14s state %d: skipped (a perturbation changes the contacts or row states)\n", name, st);
  }
  free(cq), free(cv), free(qn), free(vn), free(qp), free(vp), free(dq), free(got), free(fd);
  return ok;
}

// nstate random states of `name` with random overrides in world 0; bounds on the per-state medians and maxima
static void check_grad(const char* name, int nstate, double qscale, double vscale, int settle, int expect_fric) {
  mjModel* mj0;
  SimModel* m = open_model(name, &mj0);  // the compiled model: the engine imports it unchanged
  if (!m) return;
  sim_adjoint_enable(m, 1);
  sim_params_enable(m);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  int nq = mj0->nq, nv = mj0->nv, nu = mj0->nu, nb = mj0->nbody, ng = mj0->ngeom;
  double *mass = malloc(sizeof(double) * nb), *ipos = malloc(sizeof(double) * 3 * nb);
  double* fric = malloc(sizeof(double) * (3 * ng + 1));
  random_params(mj0, mass, ipos, fric);
  TEST_CHECK(sim_param_set(m, d, 0, SIM_PARAM_BODY_MASS, mass) == 0, "set mass");
  TEST_CHECK(sim_param_set(m, d, 0, SIM_PARAM_BODY_IPOS, ipos) == 0, "set ipos");
  TEST_CHECK(sim_param_set(m, d, 0, SIM_PARAM_GEOM_FRICTION, fric) == 0, "set friction");
  // the reference: the same values in MuJoCo's model (compiled without simple bodies)
  Ref r = {ref_model(name, mj0), NULL, 1, 1, 0};
  TEST_CHECK(r.mj != NULL, "%s: reference model", name);
  if (!r.mj) {
    free(mass), free(ipos), free(fric);
    sim_data_free(d);
    sim_model_free(m);
    mj_deleteModel(mj0);
    return;
  }
  mju_copy(r.mj->body_mass, mass, nb);
  mju_copy(r.mj->body_ipos, ipos, 3 * nb);
  mju_copy(r.mj->geom_friction, fric, 3 * ng);
  ref_subtreemass(r.mj);
  ref_frames(r.mj);
  r.md = mj_makeData(r.mj);
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu + 1));
  double med[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
  int compared = 0, fricstates = 0;
  for (int st = 0; st < nstate; st++) {
    grad_random_state(r.mj, qscale, vscale, 0.8, settle, 1, qpos, qvel, ctrl);
    ParamErr pe;
    if (!check_state(mj0, m, d, &r, name, st, qpos, qvel, ctrl, &pe)) continue;
    compared++;
    fricstates += pe.nfric > 0;
    for (int b = 0; b < 3; b++) {
      if (b == 2 && pe.nfric == 0) continue;
      med[b] = fmax(med[b], pe.med[b]);
      mx[b] = fmax(mx[b], pe.mx[b]);
    }
  }
  printf("%-14s %d of %d states compared (%d with friction): worst median / max: body_mass %.1e / %.1e, "
         "body_ipos %.1e / %.1e, geom_friction %.1e / %.1e\n",
         name, compared, nstate, fricstates, med[0], mx[0], med[1], mx[1], med[2], mx[2]);
  TEST_CHECK(compared * 4 >= nstate * 3, "%s: %d of %d states skipped", name, nstate - compared, nstate);
  TEST_CHECK(!expect_fric || fricstates > 0, "%s: no state with frictional contacts", name);
  const char* blk[3] = {"body_mass", "body_ipos", "geom_friction"};
  for (int b = 0; b < 3; b++)
    TEST_CHECK(med[b] <= 1e-6 && mx[b] <= 1e-3, "%s %s: median %g max %g (bounds 1e-6, 1e-3)", name, blk[b], med[b],
               mx[b]);
  free(qpos), free(qvel), free(ctrl), free(mass), free(ipos), free(fric);
  mj_deleteData(r.md);
  mj_deleteModel(r.mj);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj0);
}

// Exact ties of the max mixing (hopper: every geom has friction 0.9): the cotangent goes to the contact's first
// geom, as MuJoCo's mju_max(f1, f2) returns f1 (here the floor plane, geom 0), the other geom gets none. The max
// has no derivative there; raising the first geom's friction is the direction that moves the contact's, so
// ours must equal MuJoCo's one-sided difference (f1 + eps, converged solver) in that geom.
static void check_tie(const char* name, int settle) {
  mjModel* mj0;
  SimModel* m = open_model(name, &mj0);
  if (!m) return;
  sim_adjoint_enable(m, 1);
  SimData* d = NULL;
  sim_data_create(m, 1, &d);
  int nq = mj0->nq, nv = mj0->nv, nu = mj0->nu;
  Ref r = {mj0, mj_makeData(mj0), 1, 1, 0};
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv), *ctrl = malloc(sizeof(double) * (nu + 1));
  double *cq = malloc(sizeof(double) * nv), *cv = malloc(sizeof(double) * nv), *dq = malloc(sizeof(double) * nv);
  double *qp = malloc(sizeof(double) * 2 * nq), *vp = malloc(sizeof(double) * 2 * nv);
  int checked = 0;
  double worst = 0;
  for (int st = 0; st < 8 && checked < 3; st++) {
    grad_random_state(mj0, 0.1, 0.5, 0.8, settle, 1, qpos, qvel, ctrl);
    for (int i = 0; i < nv; i++) cq[i] = nrand(), cv[i] = nrand();
    sim_tape_clear(m, d);
    for (int i = 0; i < nq; i++) d->qpos[i] = qpos[i];
    for (int i = 0; i < nv; i++) d->qvel[i] = qvel[i], d->qacc_warmstart[i] = 0;
    for (int i = 0; i < nu; i++) d->ctrl[i] = ctrl[i];
    sim_control_step(m, d, 1, 1);
    for (int i = 0; i < nv; i++) d->adj_qpos[i] = cq[i], d->adj_qvel[i] = cv[i];
    sim_control_step_backward(m, d, 1);
    int ties = 0, g1 = -1;
    for (int c = 0; c < d->ncon[0]; c++) {
      int a = d->contact_geom[2 * c], b = d->contact_geom[2 * c + 1];
      if (d->contact_dim[c] < 3 || mj0->geom_friction[3 * a] != mj0->geom_friction[3 * b]) continue;
      ties++;
      g1 = a;
      TEST_CHECK(d->adj_geom_friction[3 * b] == 0 || b == g1, "%s: tie: geom %d (second) got a cotangent", name, b);
    }
    if (!ties || d->adj_geom_friction[3 * g1] == 0) continue;
    ref_rollout(&r, qpos, qvel, ctrl, qp, vp);
    unsigned long long sig0 = r.sig;
    double save = mj0->geom_friction[3 * g1], eps = 1e-7 * save;
    mj0->geom_friction[3 * g1] = save + eps;
    ref_rollout(&r, qpos, qvel, ctrl, qp + nq, vp + nv);
    mj0->geom_friction[3 * g1] = save;
    if (r.sig != sig0) continue;
    mj_differentiatePos(mj0, dq, eps, qp, qp + nq);
    double fd = 0;
    for (int i = 0; i < nv; i++) fd += cq[i] * dq[i] + cv[i] * (vp[nv + i] - vp[i]) / eps;
    double got = d->adj_geom_friction[3 * g1], e = fabs(got - fd) / fmax(fabs(fd), 1e-12);
    printf("%-14s tie state %d: %d tied contacts, geom %d: ours %.9e, one-sided FD %.9e (rel %.1e)\n", name, st,
           ties, g1, got, fd, e);
    worst = fmax(worst, e);
    checked++;
  }
  TEST_CHECK(checked > 0, "%s: no state with a tied frictional contact", name);
  TEST_CHECK(worst < 1e-5, "%s: tie: ours vs one-sided FD %g", name, worst);
  free(qpos), free(qvel), free(ctrl), free(cq), free(cv), free(dq), free(qp), free(vp);
  mj_deleteData(r.md);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj0);
}
#endif

// ---- our engine alone: bits ----

// state of world w from doubles
static void set_state(const SimModel* m, SimData* d, int w, const double* qpos, const double* qvel, const double* ctrl) {
  for (int i = 0; i < m->nq; i++) d->qpos[w * m->nq + i] = (sim_real)qpos[i];
  for (int i = 0; i < m->nv; i++) d->qvel[w * m->nv + i] = (sim_real)qvel[i];
  for (int i = 0; i < m->nu; i++) d->ctrl[w * m->nu + i] = (sim_real)ctrl[i];
}

// world w of a and world v of b hold the same bits in n values of field f
#define SAME(a, w, b, v, f, n) (!memcmp((a)->f + (size_t)(w) * (n), (b)->f + (size_t)(v) * (n), sizeof(sim_real) * (size_t)(n)))

// a recorded rollout of nstep control steps x nsub and its backward, every world from the same state and with
// the same output cotangents; the results stay in d (state, cotangents), adj_ctrl of each step summed into
// ctrl_bar (nworld*nu)
static void rollout(const SimModel* m, SimData* d, const double* qpos, const double* qvel, const double* ctrl,
                    int nsub, int nstep, sim_real* ctrl_bar) {
  sim_tape_clear(m, d);
  for (int w = 0; w < d->nworld; w++) {
    set_state(m, d, w, qpos, qvel, ctrl);
    for (int i = 0; i < m->nv; i++) d->qacc_warmstart[w * m->nv + i] = 0;
  }
  for (int t = 0; t < nstep; t++) sim_control_step(m, d, nsub, 1);
  for (size_t k = 0; k < (size_t)d->nworld * m->nv; k++) {  // the same output cotangents in every world
    d->adj_qpos[k] = (sim_real)(0.5 - (double)(k % m->nv % 7) / 7);
    d->adj_qvel[k] = (sim_real)((double)(k % m->nv % 5) / 5 - 0.3);
  }
  for (size_t k = 0; k < (size_t)d->nworld * m->nu; k++) ctrl_bar[k] = 0;
  for (int t = nstep - 1; t >= 0; t--) {
    sim_control_step_backward(m, d, nsub);
    for (size_t k = 0; k < (size_t)d->nworld * m->nu; k++) ctrl_bar[k] += d->adj_ctrl[k];
  }
}

// overrides equal to the model's values (from sim_param_get on the model, and from sim_param_reset) give the
// bits of overrides off: forward state and every cotangent of a recorded rollout with contacts
static void check_identity(const char* name, int settle) {
  mjModel* mj;
  SimModel *m0, *m1;
  if (!open_two(name, &mj, &m0, &m1)) return;
  int nsub = 2, nstep = 3, nb = m0->nbody, ng = m0->ngeom, nq = m0->nq, nv = m0->nv, nu = m0->nu;
  sim_adjoint_enable(m0, nsub * nstep);
  sim_adjoint_enable(m1, nsub * nstep);
  sim_params_enable(m1);
  SimData *d0 = NULL, *d1 = NULL;
  sim_data_create(m0, 1, &d0);
  sim_data_create(m1, 2, &d1);  // world 0: sim_data_create's defaults; world 1: set from the model's values
  double* v = malloc(sizeof(double) * (3 * (nb + ng) + 1));
  for (int p = 0; p < 3; p++) {
    TEST_CHECK(sim_param_get(m0, NULL, 0, p, v) == 0, "get from a model without overrides");
    TEST_CHECK(sim_param_set(m1, d1, 1, p, v) == 0, "set the model's values");
  }
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu + 1));
  grad_random_state(mj, 0.1, 0.5, 0.8, settle, 1, qpos, qvel, ctrl);
  sim_real *u0 = malloc(sizeof(sim_real) * (nu + 1)), *u1 = malloc(sizeof(sim_real) * (2 * nu + 1));
  rollout(m0, d0, qpos, qvel, ctrl, nsub, nstep, u0);
  rollout(m1, d1, qpos, qvel, ctrl, nsub, nstep, u1);
  long long rows = 0;
  int ok = 1, nsimple = 0;
  double dsimple = 0;  // largest |COM cotangent| difference of a simple body (overrides off lack its coupling)
  for (int w = 0; w < 2; w++) {
    rows += d1->adj_nconstraint[w];
    int ipos_same = 1;
    for (int b = 0; b < nb; b++) {
      const sim_real *a = d0->adj_body_ipos + 3 * b, *c = d1->adj_body_ipos + (size_t)(w * nb + b) * 3;
      if (mj->body_simple[b] && mj->body_dofnum[b] > 0) {
        nsimple += w == 0;
        for (int k = 0; k < 3; k++) dsimple = fmax(dsimple, fabs((double)a[k] - c[k]));
      } else {
        ipos_same &= !memcmp(a, c, 3 * sizeof(sim_real));
      }
    }
    int same = SAME(d0, 0, d1, w, qpos, nq) && SAME(d0, 0, d1, w, qvel, nv) && SAME(d0, 0, d1, w, adj_qpos, nv) &&
               SAME(d0, 0, d1, w, adj_qvel, nv) && !memcmp(u0, u1 + w * nu, sizeof(sim_real) * nu) &&
               SAME(d0, 0, d1, w, adj_body_mass, nb) && ipos_same && SAME(d0, 0, d1, w, adj_geom_friction, 3 * ng);
    TEST_CHECK(same, "%s: world %d with the model's values as overrides differs from overrides off", name, w);
    if (!same && getenv("GRAD_VERBOSE"))
      printf("  qpos %d qvel %d adj_qpos %d adj_qvel %d ctrl %d mass %d ipos %d fric %d\n", SAME(d0, 0, d1, w, qpos, nq),
             SAME(d0, 0, d1, w, qvel, nv), SAME(d0, 0, d1, w, adj_qpos, nv), SAME(d0, 0, d1, w, adj_qvel, nv),
             !memcmp(u0, u1 + w * nu, sizeof(sim_real) * nu), SAME(d0, 0, d1, w, adj_body_mass, nb),
             ipos_same, SAME(d0, 0, d1, w, adj_geom_friction, 3 * ng));
    ok &= same;
  }
  double fsum = 0;
  for (int k = 0; k < 3 * ng; k++) fsum += fabs((double)d0->adj_geom_friction[k]);
  printf("%-14s identity: overrides = model values vs off, %d x %d substeps + backward (%lld evaluations with "
         "rows, |friction cotangent| %.3e): %s",
         name, nstep, nsub, rows, fsum, ok ? "bit-identical" : "DIFFERENT");
  if (nsimple)
    printf(" (COM cotangents of the %d simple bodies excluded: with overrides they include the mass-matrix "
           "coupling, up to %.3e)", nsimple, dsimple);
  printf("\n");
  TEST_CHECK(rows > 0, "%s: no constraint rows", name);
  free(v), free(qpos), free(qvel), free(ctrl), free(u0), free(u1);
  sim_data_free(d0), sim_data_free(d1);
  sim_model_free(m0), sim_model_free(m1);
  mj_deleteModel(mj);
}

// four worlds, world 2 with body `body`'s mass doubled: it differs, the others equal the no-override run
static void check_worlds(const char* name, int body, int settle) {
  mjModel* mj;
  SimModel *m0, *m1;
  if (!open_two(name, &mj, &m0, &m1)) return;
  int nw = 4, nq = m0->nq, nv = m0->nv, nu = m0->nu, nb = m0->nbody;
  sim_params_enable(m1);
  SimData *d0 = NULL, *d1 = NULL;
  sim_data_create(m0, 1, &d0);
  sim_data_create(m1, nw, &d1);
  double* mass = malloc(sizeof(double) * nb);
  sim_param_get(m1, d1, 2, SIM_PARAM_BODY_MASS, mass);
  mass[body] *= 2;
  TEST_CHECK(sim_param_set(m1, d1, 2, SIM_PARAM_BODY_MASS, mass) == 0, "set world 2");
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu + 1));
  grad_random_state(mj, 0.1, 0.5, 0.8, settle, 1, qpos, qvel, ctrl);
  set_state(m0, d0, 0, qpos, qvel, ctrl);
  for (int w = 0; w < nw; w++) set_state(m1, d1, w, qpos, qvel, ctrl);
  for (int s = 0; s < 10; s++) {
    sim_step(m0, d0);
    sim_step(m1, d1);
  }
  int ok = 1;
  for (int w = 0; w < nw; w++) {
    int same = SAME(d0, 0, d1, w, qpos, nq) && SAME(d0, 0, d1, w, qvel, nv);
    TEST_CHECK(w == 2 ? !same : same, "%s: world %d %s the no-override run", name, w, same ? "equals" : "differs from");
    ok &= w == 2 ? !same : same;
  }
  double dv = 0;
  for (int i = 0; i < nv; i++) dv = fmax(dv, fabs((double)d1->qvel[2 * nv + i] - d0->qvel[i]));
  printf("%-14s worlds: body %d's mass doubled in world 2 (qvel moves by %.3e after 10 steps), worlds 0, 1, 3 "
         "%s the no-override run\n",
         name, body, dv, ok ? "bit-identical to" : "NOT as expected vs");
  // refused values leave the world unchanged
  mass[body] = -1;
  TEST_CHECK(sim_param_set(m1, d1, 1, SIM_PARAM_BODY_MASS, mass) == SIM_ERR_ARG, "negative mass refused");
  TEST_CHECK(sim_param_set(m0, d0, 0, SIM_PARAM_BODY_MASS, mass) == SIM_ERR_ARG, "overrides off: refused");
  TEST_CHECK(sim_param_set(m1, d1, nw, SIM_PARAM_BODY_MASS, mass) == SIM_ERR_ARG, "world out of range refused");
  TEST_CHECK(sim_param_size(m1, 7) == SIM_ERR_ARG, "unknown parameter refused");
  free(mass), free(qpos), free(qvel), free(ctrl);
  sim_data_free(d0), sim_data_free(d1);
  sim_model_free(m0), sim_model_free(m1);
  mj_deleteModel(mj);
}

// a control step and its backward with random overrides, run by 1, 5 and 32 lanes: the same bits
static void check_lanes(const char* name, int settle) {
  mjModel* mj;
  SimModel* m = open_model(name, &mj);
  if (!m) return;
  int nsub = 2, nq = m->nq, nv = m->nv, nu = m->nu, nb = m->nbody, ng = m->ngeom;
  sim_adjoint_enable(m, nsub);
  sim_params_enable(m);
  SimData* d = NULL;
  sim_data_create(m, 3, &d);
  double *mass = malloc(sizeof(double) * nb), *ipos = malloc(sizeof(double) * 3 * nb);
  double* fric = malloc(sizeof(double) * (3 * ng + 1));
  random_params(mj, mass, ipos, fric);
  sim_param_set(m, d, -1, SIM_PARAM_BODY_MASS, mass);
  sim_param_set(m, d, -1, SIM_PARAM_BODY_IPOS, ipos);
  sim_param_set(m, d, -1, SIM_PARAM_GEOM_FRICTION, fric);
  double *qpos = malloc(sizeof(double) * nq), *qvel = malloc(sizeof(double) * nv);
  double* ctrl = malloc(sizeof(double) * (nu + 1));
  grad_random_state(mj, 0.1, 0.5, 0.8, settle, 1, qpos, qvel, ctrl);
  int lanes[3] = {1, 5, 32};
  for (int w = 0; w < 3; w++) {
    set_state(m, d, w, qpos, qvel, ctrl);
    sim_lanes_run_control(m, d, w, nsub, 1, 0, lanes[w]);
    for (int i = 0; i < nv; i++) d->adj_qpos[w * nv + i] = (sim_real)(0.3 - 0.1 * (i % 5)), d->adj_qvel[w * nv + i] = (sim_real)(0.05 * (i % 9) - 0.2);
    sim_lanes_run_control(m, d, w, nsub, 0, 1, lanes[w]);
  }
  int ok = 1;
  for (int w = 1; w < 3; w++) {
    int fwd = SAME(d, 0, d, w, qpos, nq) && SAME(d, 0, d, w, qvel, nv);
    int bwd = SAME(d, 0, d, w, adj_qpos, nv) && SAME(d, 0, d, w, adj_qvel, nv) && SAME(d, 0, d, w, adj_ctrl, nu) &&
              SAME(d, 0, d, w, adj_body_mass, nb) && SAME(d, 0, d, w, adj_body_ipos, 3 * nb) &&
              SAME(d, 0, d, w, adj_geom_friction, 3 * ng);
    TEST_CHECK(fwd, "%s: %d lanes: forward differs from one lane", name, lanes[w]);
    TEST_CHECK(bwd, "%s: %d lanes: backward differs from one lane", name, lanes[w]);
    ok &= fwd && bwd;
  }
  printf("%-14s lanes 1/5/32 with random overrides (%d evaluations with rows): %s\n", name, d->adj_nconstraint[0],
         ok ? "bit-identical" : "DIFFERENT");
  TEST_CHECK(d->adj_nconstraint[0] > 0, "%s: no constraint rows", name);
  free(mass), free(ipos), free(fric), free(qpos), free(qvel), free(ctrl);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(mj);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
#define RUN(tag, ...) \
  if (!only || strstr(tag, only)) __VA_ARGS__;
#ifdef SIM_DOUBLE
  RUN("grad_hopper", check_grad("hopper/hopper.xml", 6, 0.1, 0.5, 60, 1));
  RUN("grad_g1", check_grad("g1/scene_flat.xml", 3, 0.05, 0.3, 100, 1));
  RUN("grad_humanoid", check_grad("humanoid/humanoid.xml", 4, 0.1, 0.5, 0, 1));
  RUN("grad_rest_stack", check_grad("assets/test/rest_stack.xml", 4, 0.0, 0.05, 20, 1));
  ipos_noise = 0;  // simple bodies at their compiled COM: the coupling's cotangent from the zero entries
  RUN("grad_rest_stack", check_grad("assets/test/rest_stack.xml", 3, 0.0, 0.05, 20, 1));
  ipos_noise = 0.01;
  RUN("grad_freebody", check_grad("assets/test/grad_freebody.xml", 3, 0.3, 2.0, 0, 0));
  RUN("tie", check_tie("hopper/hopper.xml", 60));
#endif
  RUN("identity", check_identity("g1/scene_flat.xml", 100));
  RUN("identity", check_identity("assets/test/rest_stack.xml", 20));
  RUN("identity", check_identity("assets/test/collision_free.xml", 200));
  RUN("worlds", check_worlds("hopper/hopper.xml", 2, 0));
  RUN("worlds", check_worlds("g1/scene_flat.xml", 1, 100));
  RUN("lanes", check_lanes("g1/scene_flat.xml", 100));
  RUN("lanes", check_lanes("assets/test/rest_stack.xml", 20));
  return test_report(SIM_EPS_REAL < 1e-10 ? "sim_grad_params" : "sim_grad_params32");
}
