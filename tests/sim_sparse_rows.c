// sim_sparse_rows: the constraint rows' dof masks (m->sparse_rows, efc_dofmask) change no bit. With the masks,
// every product of a Jacobian row (J v, J' f, the Hessian's J' D J entries, the reference velocity, the
// adjoint's J lambda and J' vel-bar) visits only the row's nonzero dofs; without them (the path of models with
// more than 64 dofs) every dof. Both runs of each model start from the same perturbed keyframe and take the
// same controls: recorded control steps (states, accelerations, row forces and states bitwise equal), then
// their backward (input cotangents bitwise equal). Each mask must also hold exactly the nonzero entries of its
// row. Compiled in both precisions.
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/test.h"

#define NW 4
#define NSUB 4
#define NSTEP 3

static unsigned long long rng;
static double urand(void) {  // [-1, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (2.0 / 9007199254740992.0) - 1;
}

typedef struct Run {
  SimModel* m;
  SimData* d;
} Run;

static int run_open(void* mj, int sparse, Run* r, char* err, size_t errlen) {
  r->m = NULL;
  r->d = NULL;
  if (sim_model_import(mj, &r->m, err, errlen)) return 1;
  r->m->sparse_rows = sparse;
  if (sim_adjoint_enable(r->m, NSTEP * NSUB) || sim_data_create(r->m, NW, &r->d)) {
    snprintf(err, errlen, "adjoint or data setup failed");
    return 1;
  }
  return 0;
}

static void run_close(Run* r) {
  sim_data_free(r->d);
  sim_model_free(r->m);
}

#define SAME(field, n) (memcmp(a->field, b->field, sizeof(*a->field) * (size_t)NW * (size_t)(n)) == 0)

// rows of every world: each mask bit set exactly where J is nonzero, no bit at or past nv
static int masks_exact(const SimModel* m, const SimData* d) {
  int nv = m->nv;
  for (int w = 0; w < NW; w++)
    for (int r = 0; r < d->nefc[w]; r++) {
      size_t row = (size_t)w * m->nefcmax + r;
      const sim_real* J = d->efc_J + row * nv;
      sim_dofmask mk = d->efc_dofmask[row];
      for (int j = 0; j < nv; j++)
        if ((int)((mk >> j) & 1) != (J[j] != 0)) return 0;
      if (nv < 64 && (mk >> nv) != 0) return 0;
    }
  return 1;
}

static void check(const char* name, int need_contacts) {
  char err[4096];
  void* mj = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  if (sim_load_mjcf(name, &opt, &mj, err, sizeof(err))) {
    TEST_CHECK(0, "load %s: %s", name, err);
    return;
  }
  Run run[2];
  for (int s = 0; s < 2; s++)
    if (run_open(mj, s == 0, &run[s], err, sizeof(err))) {
      TEST_CHECK(0, "setup %s: %s", name, err);
      sim_free_mjmodel(mj);
      return;
    }
  const SimModel* m = run[0].m;
  int nv = m->nv, nq = m->nq, nu = m->nu, ne = m->nefcmax;
  TEST_CHECK(m->sparse_rows == (nv <= SIM_DOFMASK_MAXNV), "%s: sparse_rows %d at nv %d", name, m->sparse_rows, nv);
  for (int s = 0; s < 2; s++) {
    SimData* d = run[s].d;
    rng = 0x9E3779B97F4A7C15ull;
    sim_reset(run[s].m, d, -1, m->nkey > 0 ? 0 : -1);
    for (int w = 0; w < NW; w++) {
      for (int i = 0; i < nv; i++) d->qvel[w * nv + i] += (sim_real)(0.5 * urand());
      for (int i = 0; i < nu; i++) d->ctrl[w * nu + i] += (sim_real)(0.3 * urand());
    }
    for (int k = 0; k < 2; k++) sim_control_step(run[s].m, d, NSUB, 0);
  }
  const SimData* a = run[0].d;
  const SimData* b = run[1].d;
  int fwd_same = 0, exact = 0, ncon = 0, quad = 0;
  for (int t = 0; t < NSTEP; t++) {
    for (int s = 0; s < 2; s++) {
      rng = 0x2545F4914F6CDD1Dull + (unsigned long long)t;
      for (int i = 0; i < NW * nu; i++) run[s].d->ctrl[i] = (sim_real)(0.5 * urand());
      sim_control_step(run[s].m, run[s].d, NSUB, 1);
    }
    fwd_same += SAME(qpos, nq) && SAME(qvel, nv) && SAME(qacc, nv) && SAME(qfrc_constraint, nv) && SAME(nefc, 1) &&
                SAME(efc_force, ne) && SAME(efc_state, ne) && SAME(efc_Jaref, ne);
    exact += masks_exact(m, a);
    for (int w = 0; w < NW; w++) {
      ncon += a->ncon[w];
      for (int r = 0; r < a->nefc[w]; r++) quad += a->efc_state[(size_t)w * ne + r] == SIM_CSTATE_QUADRATIC;
    }
  }
  TEST_CHECK(fwd_same == NSTEP, "%s: %d of %d control steps bitwise equal with and without row masks", name,
             fwd_same, NSTEP);
  TEST_CHECK(exact == NSTEP, "%s: row masks differ from J's nonzero pattern in %d of %d steps", name,
             NSTEP - exact, NSTEP);
  TEST_CHECK(quad > 0 && (ncon > 0 || !need_contacts), "%s: %d contacts, %d quadratic rows: the check is empty",
             name, ncon, quad);
  // the backward of the recorded steps from one cotangent of the final state
  for (int s = 0; s < 2; s++) {
    SimData* d = run[s].d;
    rng = 0xD1B54A32D192ED03ull;
    for (int i = 0; i < NW * nv; i++) {
      d->adj_qpos[i] = (sim_real)urand();
      d->adj_qvel[i] = (sim_real)urand();
    }
  }
  int bwd_same = 0;
  for (int t = NSTEP - 1; t >= 0; t--) {
    for (int s = 0; s < 2; s++) sim_control_step_backward(run[s].m, run[s].d, NSUB);
    bwd_same += SAME(adj_qpos, nv) && SAME(adj_qvel, nv) && SAME(adj_ctrl, nu);
  }
  TEST_CHECK(bwd_same == NSTEP, "%s: %d of %d backward control steps bitwise equal with and without row masks",
             name, bwd_same, NSTEP);
  printf("%s: nv %d, %d control steps x %d worlds, %d contacts, %d quadratic rows: forward %d/%d, backward %d/%d "
         "bitwise equal, masks exact %d/%d\n",
         name, nv, NSTEP, NW, ncon, quad, fwd_same, NSTEP, bwd_same, NSTEP, exact, NSTEP);
  for (int s = 0; s < 2; s++) run_close(&run[s]);
  sim_free_mjmodel(mj);
}

int main(void) {
  check("g1/scene_flat.xml", 1);
  check("humanoid/humanoid.xml", 1);
  check("assets/test/constraint_chain.xml", 0);  // joint and tendon limits, friction loss
  check("assets/test/rest_limits.xml", 0);       // joint limits at rest
  check("assets/test/rest_stack.xml", 1);        // several free bodies: islands
  return test_report("sim_sparse_rows");
}
