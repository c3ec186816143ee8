// sim_grad_stages.c: per-stage VJPs of the adjoint against central differences of our own float64 forward
// stages (they localize a bug to a stage; sim_grad checks the composition against MuJoCo):
//   position: random cotangents on every position-stage output (xpos, xmat, xipos, ximat, xanchor, xaxis,
//             geom_xpos, geom_xmat, subtree_com, cinert, cdof, ten/actuator length, M) -> qpos tangent
//   velocity: cotangents on cvel, cdof_dot, qfrc_bias, qfrc_passive, ten/actuator velocity -> qpos, qvel
// The engine is included here (symbols suffixed _st) so the test can call the per-stage SIM_FN functions;
// models are imported with the float64 library (same struct layout).
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_port.h"
#undef SIM_SFX
#define SIM_SFX(name) name##_st
#include "sim/sim_forward.c"
#include "sim/sim_common.h"
#include "tests/test.h"

int sim_model_import_f64(const void* mjmodel, void** out, char* err, size_t errlen);
int sim_data_create_f64(const void* m, int nworld, void** out);

static unsigned long long rs = 88172645463325252ull;
static double nrand(void) {
  rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
  double u = (double)(rs >> 11) / 9007199254740992.0 + 1e-12;
  rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
  double v = (double)(rs >> 11) / 9007199254740992.0;
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

// (field, cotangent) pairs of one pipeline, by name
typedef struct {
  sim_real* val;
  sim_real* adj;
  sim_real* cot;  // the random cotangent (kept; the VJP consumes adj)
  int n;
} Pair;

static double dotp(Pair* p, int np) {
  double s = 0;
  for (int k = 0; k < np; k++)
    for (int i = 0; i < p[k].n; i++) s += (double)p[k].cot[i] * p[k].val[i];
  return s;
}

// max |got - ref| over max |ref| (the scale of the block)
static double scaled_err(const double* got, const double* ref, int n) {
  double e = 0, sc = 1e-300;
  for (int i = 0; i < n; i++) e = fmax(e, fabs(got[i] - ref[i])), sc = fmax(sc, fabs(ref[i]));
  return e / sc;
}

static void run_position(const SimModel* m, SimWorld* d) {
  sim_kinematics(m, d, 0, 1);
  sim_comPos(m, d, 0, 1);
  sim_tendon_transmission(m, d, 0, 1);
  sim_crb(m, d, 0, 1);
}
static void run_velocity(const SimModel* m, SimWorld* d) {
  run_position(m, d);
  sim_tendon_actuator_velocity(m, d, 0, 1);
  sim_comVel(m, d, 0, 1);
  sim_passive(m, d, 0, 1);
  sim_rne(m, d, 0, 1);
}

static void check(const char* name) {
  char path[1024], err[1024];
  if (sim_find_asset(name, path, sizeof(path))) {
    TEST_CHECK(0, "asset %s", name);
    return;
  }
  mjModel* mj = mj_loadXML(path, 0, err, sizeof(err));
  TEST_CHECK(mj != NULL, "load %s: %s", name, err);
  if (!mj) return;
  mj->opt.disableflags |= mjDSBL_CONSTRAINT;
  SimModel* m = NULL;
  SimData* dd = NULL;
  if (sim_model_import_f64(mj, (void**)&m, err, sizeof(err))) {
    TEST_CHECK(0, "import %s: %s", name, err);
    mj_deleteModel(mj);
    return;
  }
  m->adj = 1;
  sim_data_create_f64(m, 1, (void**)&dd);
  SimWorld w, *d = &w;
  sim_world(m, dd, 0, d);
  int nq = m->nq, nv = m->nv;
  double* q0 = malloc(sizeof(double) * nq);
  double* v0 = malloc(sizeof(double) * nv);
  double* e = calloc((size_t)nv, sizeof(double));
  for (int i = 0; i < nq; i++) d->qpos[i] = m->qpos0[i];
  for (int i = 0; i < nv; i++) e[i] = 0.3 * nrand(), d->qvel[i] = nrand();
  sim_integratePos(m, d->qpos, e, 1, 0, 1);
  for (int i = 0; i < nq; i++) q0[i] = d->qpos[i];
  for (int i = 0; i < nv; i++) v0[i] = d->qvel[i];
  double eps = 1e-6;

  // ---- position pipeline ----
  Pair P[] = {{d->xpos, d->adj_xpos, 0, 3 * m->nbody},        {d->xmat, d->adj_xmat, 0, 9 * m->nbody},
              {d->xipos, d->adj_xipos, 0, 3 * m->nbody},      {d->ximat, d->adj_ximat, 0, 9 * m->nbody},
              {d->xanchor, d->adj_xanchor, 0, 3 * m->njnt},   {d->xaxis, d->adj_xaxis, 0, 3 * m->njnt},
              {d->geom_xpos, d->adj_geom_xpos, 0, 3 * m->ngeom}, {d->geom_xmat, d->adj_geom_xmat, 0, 9 * m->ngeom},
              {d->subtree_com, d->adj_subtree_com, 0, 3 * m->nbody}, {d->cinert, d->adj_cinert, 0, 10 * m->nbody},
              {d->cdof, d->adj_cdof, 0, 6 * nv},              {d->ten_length, d->adj_ten_length, 0, m->ntendon},
              {d->actuator_length, d->adj_actuator_length, 0, m->nu}, {d->M, d->adj_M, 0, m->nM}};
  int np = sizeof(P) / sizeof(P[0]);
  for (int k = 0; k < np; k++) {
    P[k].cot = malloc(sizeof(sim_real) * (P[k].n + 1));
    for (int i = 0; i < P[k].n; i++) P[k].cot[i] = nrand();
    for (int i = 0; i < 3 && k <= 2; i++) P[k].cot[i] = 0;  // world body: constant
  }
  run_position(m, d);
  sim_adj_zero_eval(m, d, 0, 1);
  for (int k = 0; k < np; k++) memcpy(P[k].adj, P[k].cot, sizeof(sim_real) * P[k].n);
  sim_adj_crb(m, d, 0, 1);
  sim_adj_tendon_transmission(m, d, 0, 1);
  sim_adj_comPos(m, d, 0, 1);
  sim_adj_kinematics(m, d, 0, 1);
  double* g = malloc(sizeof(double) * nv);
  double* fd = malloc(sizeof(double) * nv);
  for (int i = 0; i < nv; i++) g[i] = d->adj_dq[i];
  for (int i = 0; i < nv; i++) {
    double f[2];
    for (int s = 0; s < 2; s++) {
      for (int k = 0; k < nq; k++) d->qpos[k] = q0[k];
      for (int k = 0; k < nv; k++) e[k] = k == i;
      sim_integratePos(m, d->qpos, e, s ? eps : -eps, 0, 1);
      run_position(m, d);
      f[s] = dotp(P, np);
    }
    fd[i] = (f[1] - f[0]) / (2 * eps);
  }
  test_close("position-stage VJP (qpos)", g, fd, nv, 1e-6, 1e-6);
  printf("%-24s position stages: max err / scale %.1e\n", name, scaled_err(g, fd, nv));
  for (int k = 0; k < np; k++) free(P[k].cot);

  // ---- velocity pipeline ----
  for (int k = 0; k < nq; k++) d->qpos[k] = q0[k];
  Pair V[] = {{d->cvel, d->adj_cvel, 0, 6 * m->nbody}, {d->cdof_dot, d->adj_cdof_dot, 0, 6 * nv},
              {d->qfrc_bias, d->adj_qfrc_smooth, 0, nv}, {d->qfrc_passive, d->adj_qacc, 0, nv},
              {d->ten_velocity, d->adj_ten_velocity, 0, m->ntendon},
              {d->actuator_velocity, d->adj_actuator_velocity, 0, m->nu}};
  int nvp = sizeof(V) / sizeof(V[0]);
  for (int k = 0; k < nvp; k++) {
    V[k].cot = malloc(sizeof(sim_real) * (V[k].n + 1));
    for (int i = 0; i < V[k].n; i++) V[k].cot[i] = nrand();
    for (int i = 0; i < 6 && k == 0; i++) V[k].cot[i] = 0;  // world cvel
  }
  run_velocity(m, d);
  sim_adj_zero_eval(m, d, 0, 1);
  for (int k = 0; k < nvp; k++) memcpy(V[k].adj, V[k].cot, sizeof(sim_real) * V[k].n);
  // qfrc_bias and qfrc_passive cotangents live in adj_qfrc_smooth / adj_qacc here (scratch for the test)
  sim_real* bbar = malloc(sizeof(sim_real) * nv);
  sim_real* pbar = malloc(sizeof(sim_real) * nv);
  memcpy(bbar, V[2].cot, sizeof(sim_real) * nv);
  memcpy(pbar, V[3].cot, sizeof(sim_real) * nv);
  sim_adj_rne(m, d, bbar, 0, 1);
  sim_adj_passive(m, d, pbar, 0, 1);
  sim_adj_comVel(m, d, 0, 1);
  sim_adj_tendon_actuator_velocity(m, d, 0, 1);
  sim_adj_crb(m, d, 0, 1);
  sim_adj_tendon_transmission(m, d, 0, 1);
  sim_adj_comPos(m, d, 0, 1);
  sim_adj_kinematics(m, d, 0, 1);
  double* gv = malloc(sizeof(double) * nv);
  double* fdv = malloc(sizeof(double) * nv);
  for (int i = 0; i < nv; i++) g[i] = d->adj_dq[i], gv[i] = d->adj_dv[i];
  for (int i = 0; i < 2 * nv; i++) {
    double f[2];
    for (int s = 0; s < 2; s++) {
      for (int k = 0; k < nq; k++) d->qpos[k] = q0[k];
      for (int k = 0; k < nv; k++) d->qvel[k] = v0[k];
      if (i < nv) {
        for (int k = 0; k < nv; k++) e[k] = k == i;
        sim_integratePos(m, d->qpos, e, s ? eps : -eps, 0, 1);
      } else {
        d->qvel[i - nv] += s ? eps : -eps;
      }
      run_velocity(m, d);
      f[s] = dotp(V, nvp);
    }
    if (i < nv) fd[i] = (f[1] - f[0]) / (2 * eps);
    else fdv[i - nv] = (f[1] - f[0]) / (2 * eps);
  }
  test_close("velocity-stage VJP (qpos)", g, fd, nv, 1e-6, 1e-6);
  test_close("velocity-stage VJP (qvel)", gv, fdv, nv, 1e-6, 1e-6);
  printf("%-24s velocity stages: max err / scale qpos %.1e qvel %.1e\n", name, scaled_err(g, fd, nv),
         scaled_err(gv, fdv, nv));
  for (int k = 0; k < nvp; k++) free(V[k].cot);
  free(bbar), free(pbar), free(g), free(fd), free(gv), free(fdv), free(q0), free(v0), free(e);
  free(dd->buffer), free(dd), free(m->buffer), free(m);
  mj_deleteModel(mj);
}

int main(void) {
  check("assets/test/grad_chain.xml");
  check("assets/test/grad_freebody.xml");
  check("hopper/hopper.xml");
  check("humanoid/humanoid.xml");
  check("g1/g1.xml");
  return test_report("sim_grad_stages");
}
