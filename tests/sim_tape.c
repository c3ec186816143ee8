// sim_tape: the backward of a recorded Euler / implicitfast substep replays its forward from the tape: the
// contacts, constraint rows, row forces and states, qacc and the integrator's acceleration it rebuilds are the
// forward's bit for bit, and it runs no collision detection and no Newton iteration or line search (their
// scratch arrays, poisoned before the backward, are untouched). Compiled in both precisions; G1 (implicitfast,
// contacts), the humanoid (Euler, contacts and limits) and a chain with joint and tendon limits and friction
// loss (Euler), from perturbed keyframes after a few control steps, 6 worlds each.
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/test.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [-1, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (2.0 / 9007199254740992.0) - 1;
}

#define NW 6
#define POISON_I (-12345)

// the intermediates the backward reads, one world: contacts, rows, solution
typedef struct Snap {
  int ncon, nefc;
  sim_real *con_r, *efc_r, *vec;
  int *con_i, *efc_i;
} Snap;

static size_t con_nr(const SimModel* m) { return (size_t)m->nconmax * 25; }
static size_t efc_nr(const SimModel* m) { return (size_t)m->nefcmax * (m->nv + 13); }

static void snap_alloc(const SimModel* m, Snap* s) {
  s->con_r = calloc(con_nr(m), sizeof(sim_real));
  s->efc_r = calloc(efc_nr(m), sizeof(sim_real));
  s->vec = calloc((size_t)3 * m->nv, sizeof(sim_real));
  s->con_i = calloc((size_t)m->nconmax * 7, sizeof(int));
  s->efc_i = calloc((size_t)m->nefcmax * 3, sizeof(int));
}
static void snap_free(Snap* s) {
  free(s->con_r), free(s->efc_r), free(s->vec), free(s->con_i), free(s->efc_i);
}

// copies n elements of width wd of world w's field into dst (advancing it)
#define TAKE(dst, field, n, wd)                                                        \
  do {                                                                                 \
    memcpy(dst, d->field + (size_t)w * (wd) * (cap), sizeof(*dst) * (size_t)(n) * (wd)); \
    dst += (size_t)(n) * (wd);                                                         \
  } while (0)

static void snap_take(const SimModel* m, const SimData* d, int w, Snap* s) {
  memset(s->con_r, 0, sizeof(sim_real) * con_nr(m));
  memset(s->efc_r, 0, sizeof(sim_real) * efc_nr(m));
  memset(s->con_i, 0, sizeof(int) * m->nconmax * 7);
  memset(s->efc_i, 0, sizeof(int) * m->nefcmax * 3);
  int nv = m->nv, nc = s->ncon = d->ncon[w], ne = s->nefc = d->nefc[w];
  sim_real* r = s->con_r;
  int* i = s->con_i;
  size_t cap = m->nconmax;
  TAKE(r, contact_dist, nc, 1); TAKE(r, contact_pos, nc, 3); TAKE(r, contact_frame, nc, 9);
  TAKE(r, contact_friction, nc, 5); TAKE(r, contact_solref, nc, 2); TAKE(r, contact_solimp, nc, 5);
  TAKE(i, contact_geom, nc, 2); TAKE(i, contact_dim, nc, 1); TAKE(i, contact_exclude, nc, 1);
  TAKE(i, contact_pair, nc, 1); TAKE(i, contact_witness, nc, 1);
  cap = m->nefcmax;
  r = s->efc_r;
  i = s->efc_i;
  TAKE(r, efc_J, ne, nv); TAKE(r, efc_pos, ne, 1); TAKE(r, efc_margin, ne, 1); TAKE(r, efc_R, ne, 1);
  TAKE(r, efc_D, ne, 1); TAKE(r, efc_KBIP, ne, 4); TAKE(r, efc_aref, ne, 1); TAKE(r, efc_vel, ne, 1);
  TAKE(r, efc_force, ne, 1); TAKE(r, efc_Jaref, ne, 1);
  TAKE(i, efc_type, ne, 1); TAKE(i, efc_id, ne, 1); TAKE(i, efc_state, ne, 1);
  cap = nv;
  r = s->vec;
  TAKE(r, qacc, nv, 1); TAKE(r, qfrc_constraint, nv, 1); TAKE(r, qacc_int, nv, 1);
}

static int snap_equal(const SimModel* m, const Snap* a, const Snap* b) {
  return a->ncon == b->ncon && a->nefc == b->nefc &&
         !memcmp(a->con_r, b->con_r, sizeof(sim_real) * con_nr(m)) &&
         !memcmp(a->efc_r, b->efc_r, sizeof(sim_real) * efc_nr(m)) &&
         !memcmp(a->vec, b->vec, sizeof(sim_real) * 3 * m->nv) &&
         !memcmp(a->con_i, b->con_i, sizeof(int) * m->nconmax * 7) &&
         !memcmp(a->efc_i, b->efc_i, sizeof(int) * m->nefcmax * 3);
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
  SimModel* m = NULL;
  SimData* d = NULL;
  if (sim_model_import(mj, &m, err, sizeof(err)) || sim_adjoint_enable(m, 1) || sim_data_create(m, NW, &d)) {
    TEST_CHECK(0, "setup %s: %s", name, err);
    sim_free_mjmodel(mj);
    return;
  }
  int nv = m->nv;
  sim_reset(m, d, -1, m->nkey > 0 ? 0 : -1);
  for (int w = 0; w < NW; w++) {
    for (int i = 0; i < nv; i++) d->qvel[w * nv + i] += (sim_real)(0.5 * urand());
    for (int i = 0; i < m->nu; i++) d->ctrl[w * m->nu + i] += (sim_real)(0.3 * urand());
  }
  for (int k = 0; k < 3; k++) sim_control_step(m, d, 4, 0);
  sim_tape_clear(m, d);
  sim_control_step(m, d, 1, 1);
  Snap fwd[NW], bwd;
  int ncon = 0, nefc = 0, quad = 0, active = 0;
  for (int w = 0; w < NW; w++) {
    snap_alloc(m, &fwd[w]);
    snap_take(m, d, w, &fwd[w]);
    ncon += d->ncon[w], nefc += d->nefc[w];
    for (int r = 0; r < d->nefc[w]; r++) {
      int st = d->efc_state[(size_t)w * m->nefcmax + r];
      quad += st == SIM_CSTATE_QUADRATIC;
      active += st != SIM_CSTATE_SATISFIED;
    }
  }
  // poison what the backward must rebuild, and the narrow phase's and the line search's scratch
  size_t nw = NW, nc = nw * m->nconmax, ne = nw * m->nefcmax;
#define POISON(field, n) \
  for (size_t k = 0; k < (n); k++) d->field[k] = (sim_real)NAN;
#define POISON_INT(field, n) \
  for (size_t k = 0; k < (n); k++) d->field[k] = POISON_I;
  POISON(contact_dist, nc) POISON(contact_pos, 3 * nc) POISON(contact_frame, 9 * nc) POISON(contact_friction, 5 * nc)
  POISON(contact_solref, 2 * nc) POISON(contact_solimp, 5 * nc) POISON_INT(contact_geom, 2 * nc)
  POISON_INT(contact_dim, nc) POISON_INT(contact_exclude, nc) POISON_INT(contact_pair, nc)
  POISON_INT(contact_witness, nc) POISON(efc_J, ne * nv) POISON(efc_pos, ne) POISON(efc_margin, ne) POISON(efc_R, ne)
  POISON(efc_D, ne) POISON(efc_KBIP, 4 * ne) POISON(efc_aref, ne) POISON(efc_vel, ne) POISON(efc_force, ne)
  POISON(efc_Jaref, ne) POISON_INT(efc_type, ne) POISON_INT(efc_id, ne) POISON_INT(efc_state, ne)
  POISON(qacc, nw * nv) POISON(qfrc_constraint, nw * nv) POISON(qacc_int, nw * nv)
  POISON_INT(ncon, nw) POISON_INT(nefc, nw)
#undef POISON
#undef POISON_INT
  for (size_t k = 0; k < nw * m->nconslot * 10; k++) d->col_slot[k] = (sim_real)NAN;
  for (size_t k = 0; k < nw * m->npair; k++) d->col_pair_ncon[k] = d->col_pair_adr[k] = POISON_I;
  for (size_t k = 0; k < nw * m->nefcmax; k++) {
    d->efc_Jv[k] = (sim_real)NAN;
    d->map_iefc2efc[k] = POISON_I;
    for (int j = 0; j < 3; j++) d->efc_quad[3 * k + j] = (sim_real)NAN;
  }
  for (size_t k = 0; k < nw * nv; k++) d->sol_search[k] = d->sol_Mv[k] = (sim_real)NAN;
  for (size_t k = 0; k < nw * nv; k++) d->adj_qpos[k] = (sim_real)urand(), d->adj_qvel[k] = (sim_real)urand();
  TEST_CHECK(sim_control_step_backward(m, d, 1) == SIM_OK, "%s: backward refused", name);
  snap_alloc(m, &bwd);
  int same = 0, untouched = 1, finite = 1;
  for (int w = 0; w < NW; w++) {
    snap_take(m, d, w, &bwd);
    int eq = snap_equal(m, &fwd[w], &bwd);
    same += eq;
    TEST_CHECK(eq, "%s world %d: the backward's contacts / rows / solution differ from the forward's (ncon %d/%d, "
               "nefc %d/%d)", name, w, bwd.ncon, fwd[w].ncon, bwd.nefc, fwd[w].nefc);
    snap_free(&fwd[w]);
  }
  snap_free(&bwd);
  for (size_t k = 0; k < nw * m->nconslot * 10; k++) untouched &= d->col_slot[k] != d->col_slot[k];
  for (size_t k = 0; k < nw * m->npair; k++) untouched &= d->col_pair_ncon[k] == POISON_I && d->col_pair_adr[k] == POISON_I;
  for (size_t k = 0; k < nw * m->nefcmax; k++) {
    untouched &= d->efc_Jv[k] != d->efc_Jv[k] && d->map_iefc2efc[k] == POISON_I;
    for (int j = 0; j < 3; j++) untouched &= d->efc_quad[3 * k + j] != d->efc_quad[3 * k + j];
  }
  for (size_t k = 0; k < nw * nv; k++) untouched &= d->sol_search[k] != d->sol_search[k] && d->sol_Mv[k] != d->sol_Mv[k];
  for (size_t k = 0; k < nw * nv; k++) finite &= d->adj_qpos[k] == d->adj_qpos[k] && d->adj_qvel[k] == d->adj_qvel[k];
  TEST_CHECK(untouched, "%s: the backward ran collision detection or the Newton solver", name);
  TEST_CHECK(finite, "%s: non-finite cotangents", name);
  TEST_CHECK((ncon > 0 || !need_contacts) && active > 0, "%s: no contacts (%d) or no active rows (%d): the check is empty",
             name, ncon, active);
  printf("%s: %d worlds, %d contacts, %d rows (%d active, %d quadratic): %d/%d replays bit-identical, scratch %s\n",
         name, NW, ncon, nefc, active, quad, same, NW, untouched ? "untouched" : "WRITTEN");
  sim_data_free(d);
  sim_model_free(m);
  sim_free_mjmodel(mj);
}

int main(void) {
  check("g1/scene_flat.xml", 1);
  check("humanoid/humanoid.xml", 1);
  check("assets/test/constraint_chain.xml", 0);
  return test_report("sim_tape");
}
