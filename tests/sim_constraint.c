// sim_constraint: the constraint stage (rows, impedance, reference, islands, warm start, Newton solver)
// against MuJoCo 3.12 C (float64) at states from MuJoCo rollouts. Contacts are MuJoCo's own (d->contact
// copied into our contact arrays), so this tests the constraint stage independently of the collision stage.
// Each model runs with its own solver settings (iterates must match: the G1 stops at 10 iterations) and with
// a converged setting (iterations 1000, tolerance 0, ls_iterations 100).
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

static const char* kModels[] = {
    "cartpole/cartpole.xml",       "hopper/hopper.xml",          "humanoid/humanoid.xml", "g1/scene_flat.xml",
    "test/constraint_chain.xml",   "test/constraint_free.xml",   "test/constraint_long.xml",
};
#define NSTATE 12

// sim_constraint_lanes.c: the same engine with nlane pthreads as lanes
void sim_lanes_run_stage(const void* model, void* data, int w, int stage, int nlane);
#define ROW_TOL 1e-11  // rows: relative to the row's scale
#define SOL_TOL 1e-8   // qacc, qfrc_constraint after the solve (relative, whole vector)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static double vec_err(const sim_real* got, const double* ref, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; i++) {
    double g = (double)got[i];
    if (g != g) return INFINITY;
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  return sqrt(num) / fmax(sqrt(den), 1e-12);
}

// our contact arrays from MuJoCo's contact list
static void copy_contacts(const SimModel* m, SimData* d, const mjData* md) {
  int n = md->ncon < m->nconmax ? md->ncon : m->nconmax;
  d->ncon[0] = n;
  for (int i = 0; i < n; i++) {
    const mjContact* c = md->contact + i;
    d->contact_dist[i] = c->dist;
    for (int k = 0; k < 3; k++) d->contact_pos[3 * i + k] = c->pos[k];
    for (int k = 0; k < 9; k++) d->contact_frame[9 * i + k] = c->frame[k];
    d->contact_geom[2 * i] = c->geom[0];
    d->contact_geom[2 * i + 1] = c->geom[1];
    d->contact_dim[i] = c->dim;
    d->contact_exclude[i] = c->exclude;
    for (int k = 0; k < 5; k++) d->contact_friction[5 * i + k] = c->friction[k];
    for (int k = 0; k < 2; k++) d->contact_solref[2 * i + k] = c->solref[k];
    for (int k = 0; k < 2; k++) d->contact_solreffriction[2 * i + k] = c->solreffriction[k];
    for (int k = 0; k < 5; k++) d->contact_solimp[5 * i + k] = c->solimp[k];
    d->contact_includemargin[i] = c->includemargin;
  }
}

// runs our pipeline up to the constraint stage with MuJoCo's contacts
static void our_forward(const SimModel* m, SimData* d, const mjData* md) {
  for (int i = 0; i < m->nq; i++) d->qpos[i] = md->qpos[i];
  for (int i = 0; i < m->nv; i++) {
    d->qvel[i] = md->qvel[i];
    d->qacc_warmstart[i] = md->qacc_warmstart[i];
    d->qfrc_applied[i] = 0;
  }
  for (int i = 0; i < m->nu; i++) d->ctrl[i] = md->ctrl[i];
  sim_poison(m, d);
  for (int s = SIM_STAGE_KINEMATICS; s <= SIM_STAGE_ACCELERATION; s++)
    if (s != SIM_STAGE_COLLISION) sim_run_stage(m, d, s);
  copy_contacts(m, d, md);
  sim_run_stage(m, d, SIM_STAGE_CONSTRAINT);
}

// compares rows and the solve at one state; returns the solve's qacc error
static double compare_state(const char* tag, const mjModel* mm, const mjData* md, const SimModel* m,
                            const SimData* d) {
  int nv = mm->nv, nefc = md->nefc;
  TEST_CHECK(d->nefc[0] == nefc, "%s: nefc %d, MuJoCo %d", tag, d->nefc[0], nefc);
  if (d->nefc[0] != nefc) return INFINITY;
  for (int r = 0; r < nefc; r++) {
    TEST_CHECK(d->efc_type[r] == md->efc_type[r] && d->efc_id[r] == md->efc_id[r], "%s row %d: type/id %d/%d, MuJoCo %d/%d",
               tag, r, d->efc_type[r], d->efc_id[r], md->efc_type[r], md->efc_id[r]);
    double jscale = 0;
    for (int j = 0; j < nv; j++) jscale = fmax(jscale, fabs(md->efc_J[r * nv + j]));
    double je = 0;
    for (int j = 0; j < nv; j++) je = fmax(je, fabs(d->efc_J[r * nv + j] - md->efc_J[r * nv + j]));
    TEST_CHECK(je <= ROW_TOL * fmax(jscale, 1), "%s row %d: J off by %.3e", tag, r, je);
    const struct {
      const char* name;
      const sim_real* got;
      const double* ref;
      int w;
    } f[] = {{"pos", d->efc_pos, md->efc_pos, 1},    {"margin", d->efc_margin, md->efc_margin, 1},
             {"D", d->efc_D, md->efc_D, 1},          {"R", d->efc_R, md->efc_R, 1},
             {"aref", d->efc_aref, md->efc_aref, 1}, {"KBIP", d->efc_KBIP, md->efc_KBIP, 4},
             {"diagA", d->efc_diagA, md->efc_diagA, 1}, {"frictionloss", d->efc_frictionloss, md->efc_frictionloss, 1}};
    for (int k = 0; k < (int)(sizeof(f) / sizeof(f[0])); k++)
      for (int q = 0; q < f[k].w; q++) {
        double g = f[k].got[r * f[k].w + q], ref = f[k].ref[r * f[k].w + q];
        TEST_CHECK(fabs(g - ref) <= ROW_TOL * fmax(fabs(ref), 1), "%s row %d: %s[%d] %.17g, MuJoCo %.17g", tag, r,
                   f[k].name, q, g, ref);
      }
  }
  int niter = 0;
  for (int i = 0; i < md->nisland || i < 1; i++) niter += md->solver_niter[i];
  if (nefc) {
    TEST_CHECK(d->nisland[0] == md->nisland, "%s: nisland %d, MuJoCo %d", tag, d->nisland[0], md->nisland);
    // with tolerance 0 the solve ends when the line search finds no improvement: rounding decides when
    if (mm->opt.tolerance > 0)
    {
      TEST_CHECK(d->solver_niter[0] == niter, "%s: solver_niter %d, MuJoCo %d", tag, d->solver_niter[0], niter);
      int nls = 0;  // line-search evaluations of the Newton iterations, as mjSolverStat.neval counts them
      for (int i = 0; i < md->nisland || i < 1; i++)
        for (int k = 0; k < md->solver_niter[i] && k < mjNSOLVER; k++) nls += md->solver[i * mjNSOLVER + k].neval;
      TEST_CHECK(d->solver_nls[0] == nls, "%s: solver_nls %d, MuJoCo %d", tag, d->solver_nls[0], nls);
    }
  }
  double ea = vec_err(d->qacc, md->qacc, nv), ef = vec_err(d->qfrc_constraint, md->qfrc_constraint, nv);
  double eforce = nefc ? vec_err(d->efc_force, md->efc_force, nefc) : 0;
  TEST_CHECK(ea <= SOL_TOL, "%s: qacc relative error %.3e", tag, ea);
  TEST_CHECK(ef <= SOL_TOL * 10, "%s: qfrc_constraint relative error %.3e", tag, ef);
  TEST_CHECK(eforce <= SOL_TOL * 10, "%s: efc_force relative error %.3e", tag, eforce);
  return ea;
}

// the constraint stage with several lanes equals the single-lane result bit for bit
static void check_lanes(const char* tag, const SimModel* m, SimData* d, int nlane) {
  int nv = m->nv, nefc = d->nefc[0], niter = d->solver_niter[0];
  double* ref = (double*)malloc(sizeof(double) * (size_t)(2 * nv + nefc + 1));
  for (int i = 0; i < nv; i++) ref[i] = d->qacc[i], ref[nv + i] = d->qfrc_constraint[i];
  for (int r = 0; r < nefc; r++) ref[2 * nv + r] = d->efc_force[r];
  for (int i = 0; i < nv; i++) d->qacc[i] = NAN, d->qfrc_constraint[i] = NAN;
  sim_lanes_run_stage(m, d, 0, SIM_STAGE_CONSTRAINT, nlane);
  int same = d->nefc[0] == nefc && d->solver_niter[0] == niter;
  for (int i = 0; i < nv && same; i++) same = d->qacc[i] == ref[i] && d->qfrc_constraint[i] == ref[nv + i];
  for (int r = 0; r < nefc && same; r++) same = d->efc_force[r] == ref[2 * nv + r];
  TEST_CHECK(same, "%s: %d lanes differ from one lane (nefc %d/%d, niter %d/%d)", tag, nlane, d->nefc[0], nefc,
             d->solver_niter[0], niter);
  free(ref);
}

static int seen_type[8];  // rows seen per efc_type, over all models (coverage)

// mode 0: the model's solver settings; 1: converged; 2: islands disabled (monolithic solve and scale);
// 3: warm start disabled (the solve starts from qacc_smooth)
static void run_model(const char* name, int mode) {
  int converged = mode == 1;
  char path[1024], err[4096];
  if (sim_find_asset(name, path, sizeof(path))) {
    TEST_CHECK(0, "%s: not found on the asset path", name);
    return;
  }
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  if (converged) {
    opt.iterations = 1000;
    opt.tolerance = 0;
    opt.ls_iterations = 100;
  }
  if (mode == 2) opt.disable_add |= SIM_DSBL_ISLAND;
  if (mode == 3) opt.disable_add |= SIM_DSBL_WARMSTART;
  void* mjv = NULL;
  if (sim_load_mjcf(path, &opt, &mjv, err, sizeof(err))) {
    TEST_CHECK(0, "%s: %s", name, err);
    return;
  }
  mjModel* mm = (mjModel*)mjv;
  SimModel* m0 = NULL;
  if (sim_model_import(mm, &m0, err, sizeof(err))) {
    TEST_CHECK(0, "%s: import: %s", name, err);
    sim_free_mjmodel(mm);
    return;
  }
  // contact capacity of our own for MuJoCo's contacts (the collision stage may not size it yet)
  SimModel m = *m0;
  if (m.nconmax < 64) {
    m.nefcmax += 4 * (64 - m.nconmax);
    m.nconmax = 64;
  }
  SimData* d = NULL;
  sim_data_create(&m, 1, &d);
  mjData* roll = mj_makeData(mm);
  mjData* md = mj_makeData(mm);
  mj_resetData(mm, roll);
  if (mm->nkey) mj_resetDataKeyframe(mm, roll, 0);
  for (int i = 0; i < mm->nv; i++) roll->qvel[i] += 0.2 * (urand() - 0.5);
  double worst = 0;
  int got = 0, withrows = 0;
  for (int t = 0; t < 40 + NSTATE * 25 && got < NSTATE; t++) {
    for (int i = 0; i < mm->nu; i++) {
      double lo = mm->actuator_ctrlrange[2 * i], hi = mm->actuator_ctrlrange[2 * i + 1];
      roll->ctrl[i] = mm->actuator_ctrllimited[i] ? lo + (hi - lo) * urand() : 2 * (urand() - 0.5);
    }
    if (t >= 40 && (t - 40) % 25 == 0) {
      mj_resetData(mm, md);
      memcpy(md->qpos, roll->qpos, sizeof(double) * mm->nq);
      memcpy(md->qvel, roll->qvel, sizeof(double) * mm->nv);
      memcpy(md->ctrl, roll->ctrl, sizeof(double) * mm->nu);
      memcpy(md->qacc_warmstart, roll->qacc_warmstart, sizeof(double) * mm->nv);
      mj_forward(mm, md);
      our_forward(&m, d, md);
      char tag[256];
      snprintf(tag, sizeof(tag), "%s%s state %d (nefc %d ncon %d)", name,
               mode == 1 ? " converged" : mode == 2 ? " no-island" : mode == 3 ? " no-warmstart" : "", got, md->nefc,
               md->ncon);
      for (int r = 0; r < md->nefc; r++) seen_type[md->efc_type[r] & 7]++;
      double e = compare_state(tag, mm, md, &m, d);
      // converged solves (long bracketed line searches) on the first states too
      if (mode != 1 || got < 2) check_lanes(tag, &m, d, got % 2 ? 3 : 8);
      if (mode == 0 && got == 1) check_lanes(tag, &m, d, 32);  // the warp forms (sim_lanes.c), once a model
      worst = fmax(worst, e);
      withrows += md->nefc > 0;
      got++;
    }
    mj_step(mm, roll);
  }
  printf("%-28s %-10s states %2d (with rows %2d)  qacc max rel err %.3e\n", name,
         mode == 1 ? "converged" : mode == 2 ? "no-island" : mode == 3 ? "no-warm" : "model", got, withrows, worst);
  mj_deleteData(md);
  mj_deleteData(roll);
  sim_data_free(d);
  sim_model_free(m0);
  sim_free_mjmodel(mm);
}

// a row capacity too small for the model: whole constraints are dropped in order and counted, the solve
// uses the rows that fit, nothing outside the arrays is written (guard values around efc_J stay intact)
static void check_overflow(void) {
  char path[1024], err[4096];
  if (sim_find_asset("test/constraint_free.xml", path, sizeof(path))) return;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mjv = NULL;
  if (sim_load_mjcf(path, &opt, &mjv, err, sizeof(err))) return;
  mjModel* mm = (mjModel*)mjv;
  mjData* md = mj_makeData(mm);
  for (int t = 0; t < 400; t++) mj_step(mm, md);  // bodies resting on the floor: many contact rows
  mj_forward(mm, md);
  SimModel* m0 = NULL;
  int rc = sim_model_import_caps(mm, 0, 6, &m0, err, sizeof(err));
  TEST_CHECK(rc == 0, "overflow: import: %s", err);
  if (rc) return;
  SimModel m = *m0;
  if (m.nconmax < 64) m.nconmax = 64;
  SimData* d = NULL;
  sim_data_create(&m, 2, &d);  // world 1 follows world 0 in every array: its rows must stay untouched
  our_forward(&m, d, md);
  for (size_t k = 0; k < (size_t)m.nefcmax * m.nv; k++) d->efc_J[(size_t)m.nefcmax * m.nv + k] = 12345;
  // world 0 only, 32 lanes: the warp's enumeration places the rows that fit, then hands over to lane 0's
  sim_lanes_run_stage(&m, d, 0, SIM_STAGE_CONSTRAINT, 32);
  int ok = 1;
  for (size_t k = 0; k < (size_t)m.nefcmax * m.nv; k++) ok &= d->efc_J[(size_t)m.nefcmax * m.nv + k] == 12345;
  TEST_CHECK(ok, "overflow: world 1's rows were written");
  // the counter is cumulative: two constraint stages ran on world 0
  TEST_CHECK(d->nefc[0] <= 6 && d->nefc_overflow[0] == 2 * (md->nefc - d->nefc[0]) && md->nefc > 6,
             "overflow: nefc %d, dropped %d, MuJoCo nefc %d", d->nefc[0], d->nefc_overflow[0], md->nefc);
  int finite = 1;
  for (int i = 0; i < m.nv; i++) finite &= isfinite(d->qacc[i]);
  TEST_CHECK(finite, "overflow: qacc not finite");
  printf("overflow: capacity 6, MuJoCo nefc %d: kept %d rows, dropped %d per stage\n", md->nefc, d->nefc[0],
         d->nefc_overflow[0] / 2);
  sim_data_free(d);
  sim_model_free(m0);
  mj_deleteData(md);
  sim_free_mjmodel(mm);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
  for (int i = 0; i < (int)(sizeof(kModels) / sizeof(kModels[0])); i++) {
    if (only && !strstr(kModels[i], only)) continue;
    run_model(kModels[i], 0);
    run_model(kModels[i], 1);
    if (strstr(kModels[i], "constraint_free") || strstr(kModels[i], "humanoid")) run_model(kModels[i], 2);
    if (strstr(kModels[i], "hopper") || strstr(kModels[i], "constraint_chain")) run_model(kModels[i], 3);
  }
  if (!only) {
    // every row type occurs: dof and tendon friction loss, joint and tendon limits, both contact kinds
    const int types[] = {mjCNSTR_FRICTION_DOF, mjCNSTR_FRICTION_TENDON, mjCNSTR_LIMIT_JOINT, mjCNSTR_LIMIT_TENDON,
                         mjCNSTR_CONTACT_FRICTIONLESS, mjCNSTR_CONTACT_PYRAMIDAL};
    for (int k = 0; k < 6; k++) TEST_CHECK(seen_type[types[k]] > 0, "no row of type %d was tested", types[k]);
    check_overflow();
  }
  return test_report("sim_constraint");
}
