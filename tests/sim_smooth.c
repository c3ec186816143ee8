// sim_smooth: the smooth pipeline, stage by stage, against MuJoCo 3.12 C (float64) at random states, with
// constraints disabled. Outputs are poisoned (NaN) before each stage, so an element a stage fails to write
// fails the test. Built twice: float64 (tight tolerance) and float32 (the GPU's arithmetic). Also: each imported
// model's descendant counts (dof_ndesc) against the walk up dof_parentid.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

#ifdef SIM_DOUBLE
#define TOL 1e-11
#define PREC "float64"
#else
#define TOL 2e-5
#define PREC "float32"
#endif

static const char* kModels[] = {
    "cartpole/cartpole.xml", "hopper/hopper.xml",       "humanoid/humanoid.xml",   "g1/scene_flat.xml",
    "test/walker_planar.xml", "test/humanoid_ball.xml", "test/chain_free.xml",     "test/freebody_mixed.xml",
};

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {  // xorshift64
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

// relative error of one field over all its elements: |got - ref| / max(|ref|, 1e-12)
static double field_err(const sim_real* got, const double* ref, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; i++) {
    double g = (double)got[i];
    if (g != g) return INFINITY;
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  return sqrt(num) / fmax(sqrt(den), 1e-12);
}

#define CHECK_FIELD(stage, field, n)                                                              \
  do {                                                                                            \
    double e_ = field_err(d->field, md->field, (n));                                              \
    TEST_CHECK(e_ <= TOL, "%s %s stage %s: %s relative error %.3e > %.1e", model, PREC, stage,    \
               #field, e_, TOL);                                                                  \
  } while (0)

// random state: keyframe or qpos0 plus noise (quaternions renormalized), random qvel and ctrl
static void random_state(const mjModel* m, mjData* md) {
  mj_resetData(m, md);
  if (m->nkey) mj_resetDataKeyframe(m, md, 0);
  for (int j = 0; j < m->njnt; j++) {
    int a = m->jnt_qposadr[j], t = m->jnt_type[j];
    int nq = t == mjJNT_FREE ? 7 : t == mjJNT_BALL ? 4 : 1;
    for (int k = 0; k < nq; k++) md->qpos[a + k] += 0.3 * (urand() - 0.5);
    if (t == mjJNT_FREE) mju_normalize4(md->qpos + a + 3);
    if (t == mjJNT_BALL) mju_normalize4(md->qpos + a);
  }
  for (int i = 0; i < m->nv; i++) md->qvel[i] = 2 * (urand() - 0.5);
  for (int i = 0; i < m->nu; i++) {
    double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
    md->ctrl[i] = m->actuator_ctrllimited[i] ? lo + (hi - lo) * urand() : 2 * (urand() - 0.5);
  }
#ifndef SIM_DOUBLE
  // both engines start from the same float32-representable state
  for (int i = 0; i < m->nq; i++) md->qpos[i] = (float)md->qpos[i];
  for (int i = 0; i < m->nv; i++) md->qvel[i] = (float)md->qvel[i];
  for (int i = 0; i < m->nu; i++) md->ctrl[i] = (float)md->ctrl[i];
#endif
}

static void load_state(const SimModel* m, SimData* d, const mjData* md) {
  for (int i = 0; i < m->nq; i++) d->qpos[i] = (sim_real)md->qpos[i];
  for (int i = 0; i < m->nv; i++) d->qvel[i] = (sim_real)md->qvel[i], d->qacc_warmstart[i] = 0, d->qfrc_applied[i] = 0;
  for (int i = 0; i < m->nu; i++) d->ctrl[i] = (sim_real)md->ctrl[i];
  d->time[0] = 0;
}

static void test_model(const char* model, int nstate) {
  char err[4096];
  void* mjv = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = mjDSBL_CONSTRAINT;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) {
    TEST_CHECK(0, "%s: %s", model, err);
    return;
  }
  mjModel* mm = (mjModel*)mjv;
  SimModel* m = NULL;
  SimData* d = NULL;
  if (sim_model_import(mm, &m, err, sizeof(err)) || sim_data_create(m, 1, &d)) {
    TEST_CHECK(0, "%s: import failed: %s", model, err);
    sim_free_mjmodel(mm);
    return;
  }
  mjData* md = mj_makeData(mm);
  for (int s = 0; s < nstate; s++) {
    random_state(mm, md);
    mj_forward(mm, md);
    load_state(m, d, md);
    sim_poison(m, d);
    const int nb = mm->nbody, nj = mm->njnt, ng = mm->ngeom, nv = mm->nv, nt = mm->ntendon, nu = mm->nu;
    sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
    CHECK_FIELD("kinematics", xpos, 3 * nb);
    CHECK_FIELD("kinematics", xquat, 4 * nb);
    CHECK_FIELD("kinematics", xmat, 9 * nb);
    CHECK_FIELD("kinematics", xipos, 3 * nb);
    CHECK_FIELD("kinematics", ximat, 9 * nb);
    CHECK_FIELD("kinematics", xanchor, 3 * nj);
    CHECK_FIELD("kinematics", xaxis, 3 * nj);
    CHECK_FIELD("kinematics", geom_xpos, 3 * ng);
    CHECK_FIELD("kinematics", geom_xmat, 9 * ng);
    sim_run_stage(m, d, SIM_STAGE_COMPOS);
    CHECK_FIELD("compos", subtree_com, 3 * nb);
    CHECK_FIELD("compos", cinert, 10 * nb);
    CHECK_FIELD("compos", cdof, 6 * nv);
    sim_run_stage(m, d, SIM_STAGE_TENDON);
    CHECK_FIELD("tendon", ten_length, nt);
    CHECK_FIELD("tendon", actuator_length, nu);
    sim_run_stage(m, d, SIM_STAGE_CRB);
    CHECK_FIELD("crb", crb, 10 * nb);
    CHECK_FIELD("crb", M, mm->nC);
    sim_run_stage(m, d, SIM_STAGE_FACTOR);
    CHECK_FIELD("factor", qLD, mm->nC);
    CHECK_FIELD("factor", qLDiagInv, nv);
    sim_run_stage(m, d, SIM_STAGE_COLLISION);
    sim_run_stage(m, d, SIM_STAGE_VELOCITY);
    CHECK_FIELD("velocity", ten_velocity, nt);
    CHECK_FIELD("velocity", actuator_velocity, nu);
    CHECK_FIELD("velocity", cvel, 6 * nb);
    CHECK_FIELD("velocity", cdof_dot, 6 * nv);
    sim_run_stage(m, d, SIM_STAGE_PASSIVE);
    CHECK_FIELD("passive", qfrc_spring, nv);
    CHECK_FIELD("passive", qfrc_damper, nv);
    CHECK_FIELD("passive", qfrc_passive, nv);
    sim_run_stage(m, d, SIM_STAGE_RNE);
    CHECK_FIELD("rne", qfrc_bias, nv);
    sim_run_stage(m, d, SIM_STAGE_ACTUATION);
    CHECK_FIELD("actuation", actuator_force, nu);
    CHECK_FIELD("actuation", qfrc_actuator, nv);
    sim_run_stage(m, d, SIM_STAGE_ACCELERATION);
    CHECK_FIELD("acceleration", qfrc_smooth, nv);
    CHECK_FIELD("acceleration", qacc_smooth, nv);
    sim_run_stage(m, d, SIM_STAGE_CONSTRAINT);
    CHECK_FIELD("constraint", qacc, nv);
  }
  mj_deleteData(md);
  sim_data_free(d);
  sim_model_free(m);
  sim_free_mjmodel(mm);
}

// one full step from random states: qpos, qvel, qacc_warmstart after mj_step; qDeriv for implicitfast
static void test_step(const char* model, int nstate) {
  char err[4096];
  void* mjv = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = mjDSBL_CONSTRAINT;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) return;
  mjModel* mm = (mjModel*)mjv;
  SimModel* m = NULL;
  SimData* d = NULL;
  if (sim_model_import(mm, &m, err, sizeof(err)) || sim_data_create(m, 1, &d)) {
    sim_free_mjmodel(mm);
    return;
  }
  mjData* md = mj_makeData(mm);
  double* qD = (double*)malloc(sizeof(double) * (mm->nC + 1));
  for (int s = 0; s < nstate; s++) {
    random_state(mm, md);
    load_state(m, d, md);
    sim_poison(m, d);
    mj_step(mm, md);
    sim_step(m, d);
    CHECK_FIELD("step", qpos, mm->nq);
    CHECK_FIELD("step", qvel, mm->nv);
    CHECK_FIELD("step", qacc_warmstart, mm->nv);
    if (mm->opt.integrator == mjINT_IMPLICITFAST) {
      // MuJoCo's qDeriv gathered onto M's lower-triangular pattern (what implicitfast uses)
      for (int k = 0; k < mm->nC; k++) qD[k] = md->qDeriv[mm->mapD2M[k]];
      double e = field_err(d->qDeriv, qD, mm->nC);
      TEST_CHECK(e <= TOL, "%s %s step: qDeriv relative error %.3e", model, PREC, e);
    }
  }
  free(qD);
  mj_deleteData(md);
  sim_data_free(d);
  sim_model_free(m);
  sim_free_mjmodel(mm);
}

// dof_ndesc: dof i lies on the chain of parents from dof `last` exactly where i <= last <= i + dof_ndesc[i] (a
// subtree's dofs follow its root contiguously; sim_dof_subtree_end and sim_adj_contacts' chain test rely on it).
// Also on models whose simple bodies' rows of M omit ancestors, where M's pattern does not give the descendants.
static void test_dof_tables(const char* model) {
  char err[4096];
  void* mjv = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  SimModel* m = NULL;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err)) || sim_model_import(mjv, &m, err, sizeof(err))) {
    TEST_CHECK(0, "%s: %s", model, err);
    if (mjv) sim_free_mjmodel(mjv);
    return;
  }
  int bad = 0;
  for (int last = 0; last < m->nv; last++)
    for (int i = 0; i < m->nv; i++) {
      int j = last;
      while (j > i) j = m->dof_parentid[j];
      bad += (j == i) != (i <= last && last <= i + m->dof_ndesc[i]);
    }
  TEST_CHECK(bad == 0, "%s: dof_ndesc disagrees with the parent walk at %d (i, last) pairs", model, bad);
  sim_model_free(m);
  sim_free_mjmodel(mjv);
}

int main(void) {
  int n = (int)(sizeof(kModels) / sizeof(kModels[0]));
  for (int i = 0; i < n; i++) {
    test_model(kModels[i], 8);
    test_step(kModels[i], 8);
    test_dof_tables(kModels[i]);
  }
  const char* free_bodies[] = {"test/collision_free.xml", "test/constraint_free.xml", "test/rest_round.xml",
                               "test/rest_stack.xml"};
  for (size_t i = 0; i < sizeof(free_bodies) / sizeof(free_bodies[0]); i++) test_dof_tables(free_bodies[i]);
  return test_report("sim_smooth_" PREC);
}
