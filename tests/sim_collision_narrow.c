// sim_collision_narrow.c: our kinematics + collision stages against MuJoCo C's mj_kinematics + mj_collision
// at many random states of our collision scenes, hopper, humanoid and G1: identical contact lists (same
// geom pairs, count and order; dim, exclude) and dist/pos/frame/friction/solref/solreffriction/solimp/
// includemargin within tolerance. Also: capacity overflow (nconmax override), disable flags, filterparent
// and midphase variants. Compiled twice: float64 (sim_collision_narrow, 1e-10 relative) and float32
// (sim_collision_narrow32: loose tolerances; states whose contact list or values differ are counted and
// must stay below a small fraction: the scenes deliberately contain degenerate poses (aligned boxes,
// parallel capsules, coincident centres, a capsule starting on its parent's box face) where float32
// rounding legitimately picks another branch).
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

#ifdef SIM_DOUBLE
#define PREC "f64"
#define RTOL 1e-10
#define ATOL 1e-12
#else
#define PREC "f32"
#define RTOL 2e-4
#define ATOL 2e-4
#endif

// tests/sim_lanes.c: one stage of one world with nlane threads as lanes
void sim_lanes_run_stage(const void* model, void* data, int w, int stage, int nlane);

static unsigned long long rng_state = 12345;
static double urand(void) {  // [0, 1)
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) {
  double u = urand() + 1e-300, v = urand();
  return sqrt(-2 * log(u)) * cos(2 * mjPI * v);
}
static void rand_quat(double q[4]) {
  for (int i = 0; i < 4; i++) q[i] = nrand();
  mju_normalize4(q);
}

typedef enum { GEN_SCATTER, GEN_JOINTS } GenKind;

// random state: GEN_SCATTER puts free bodies in a small volume (random or axis-aligned orientations, some
// coincident with another body); GEN_JOINTS perturbs a keyframe (or qpos0) and drops the root low
static void gen_state(const mjModel* m, GenKind kind, int key, double amp, double* qpos) {
  if (key >= 0) memcpy(qpos, m->key_qpos + (size_t)key * m->nq, sizeof(double) * m->nq);
  else memcpy(qpos, m->qpos0, sizeof(double) * m->nq);
  int nfree = 0;
  for (int j = 0; j < m->njnt; j++) {
    double* q = qpos + m->jnt_qposadr[j];
    switch (m->jnt_type[j]) {
      case mjJNT_FREE:
        if (kind == GEN_SCATTER) {
          double r = urand();
          if (r < 0.12 && nfree > 0) {  // near-coincident with an earlier free body: deep penetration
            int other = m->jnt_qposadr[j - 1 - (int)(urand() * nfree) % nfree];
            for (int i = 0; i < 3; i++) q[i] = qpos[other + i] + (urand() < 0.5 ? 0 : 0.02 * nrand());
          } else {
            q[0] = 0.35 * (2 * urand() - 1);
            q[1] = 0.35 * (2 * urand() - 1);
            q[2] = 0.4 * urand() - 0.05;
          }
          if (urand() < 0.25) {  // aligned: parallel capsules, face-face boxes
            double yaw = urand() < 0.5 ? 0 : mjPI / 2 * (int)(urand() * 4);
            q[3] = cos(yaw / 2), q[4] = 0, q[5] = 0, q[6] = sin(yaw / 2);
          } else {
            rand_quat(q + 3);
          }
        } else {
          q[2] = q[2] * (0.2 + urand()) ;
          q[0] += 0.1 * nrand();
          q[1] += 0.1 * nrand();
          double dq[4], axis[3] = {nrand(), nrand(), nrand()};
          mju_normalize3(axis);
          double ang = urand() < 0.3 ? mjPI * urand() : 0.3 * nrand();
          mju_axisAngle2Quat(dq, axis, ang);
          double qn[4];
          mju_mulQuat(qn, dq, q + 3);
          memcpy(q + 3, qn, sizeof(qn));
        }
        nfree++;
        break;
      case mjJNT_BALL: {
        double dq[4], axis[3] = {nrand(), nrand(), nrand()}, qn[4];
        mju_normalize3(axis);
        mju_axisAngle2Quat(dq, axis, amp * nrand());
        mju_mulQuat(qn, dq, q);
        memcpy(q, qn, sizeof(qn));
        break;
      }
      default:
        if (kind == GEN_SCATTER && m->jnt_limited[j]) {
          double lo = m->jnt_range[2 * j], hi = m->jnt_range[2 * j + 1], w = hi - lo;
          q[0] = lo - 0.1 * w + 1.2 * w * urand();
        } else if (kind == GEN_SCATTER) {
          q[0] = mjPI * (2 * urand() - 1);
        } else {
          q[0] += amp * nrand();
        }
    }
  }
}

// branch coverage over all matched contacts (witness codes, sim_collision.h)
enum { COV_BOXBOX_FACE, COV_BOXBOX_EDGE, COV_SPHBOX_OUT, COV_SPHBOX_IN, COV_CAPBOX_ONE, COV_CAPBOX_SECOND,
       COV_CAPCAP, COV_CAPCAP_PARALLEL, COV_SPHSPH, COV_SPHCAP, COV_PLANE_SPH, COV_PLANE_CAP, COV_PLANE_BOX,
       COV_GAP, COV_EXPLICIT, COV_N };
static const char* cov_name[COV_N] = {"box-box face", "box-box edge", "sphere-box outside", "sphere-box inside",
                                      "capsule-box first", "capsule-box second", "capsule-capsule",
                                      "capsule-capsule parallel", "sphere-sphere", "sphere-capsule", "plane-sphere",
                                      "plane-capsule", "plane-box", "in gap (exclude 1)", "explicit pair"};
static long coverage[COV_N];

static void tally(const SimModel* m, const SimWorld* wd, int i) {
  int t1 = m->geom_type[wd->contact_geom[2 * i]], t2 = m->geom_type[wd->contact_geom[2 * i + 1]];
  int w = wd->contact_witness[i];
  if (t1 == SIM_GEOM_BOX) coverage[w >= 1000 ? COV_BOXBOX_EDGE : COV_BOXBOX_FACE]++;
  else if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_BOX) coverage[w >= 100 ? COV_SPHBOX_IN : COV_SPHBOX_OUT]++;
  else if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_BOX) coverage[w >= 100000 ? COV_CAPBOX_SECOND : COV_CAPBOX_ONE]++;
  else if (t1 == SIM_GEOM_CAPSULE) coverage[w >= 100 ? COV_CAPCAP_PARALLEL : COV_CAPCAP]++;
  else if (t1 == SIM_GEOM_SPHERE) coverage[t2 == SIM_GEOM_SPHERE ? COV_SPHSPH : COV_SPHCAP]++;
  else coverage[t2 == SIM_GEOM_SPHERE ? COV_PLANE_SPH : (t2 == SIM_GEOM_CAPSULE ? COV_PLANE_CAP : COV_PLANE_BOX)]++;
  if (wd->contact_exclude[i]) coverage[COV_GAP]++;
  if (m->pair_ipair[wd->contact_pair[i]] >= 0) coverage[COV_EXPLICIT]++;
}

typedef struct {
  double dist, pos, frame, param;  // max relative errors
  long ncon, nstate, nstate_mismatch, nthreshold, nfail;
  int maxcon, nconmax;  // largest contact count seen, capacity
} Stats;

// contact i of MuJoCo's list: is it within float32 rounding of a detection decision?
static int near_threshold(const mjModel* M, const mjContact* c) {
  double mg = c->includemargin;
  (void)M;
  return fabs(c->dist) < 1e-3 || fabs(c->dist - mg) < 2e-3;
}

static void relerr(double* worst, double got, double ref) {
  double e = fabs(got - ref) / (ATOL / RTOL + fabs(ref));
  if (!(e <= *worst)) *worst = e != e ? INFINITY : fmax(*worst, e);
}

// compares world w of ours with md; returns 0 if identical within tolerance
static int compare_world(const char* name, int state, const mjModel* M, const mjData* md, const SimModel* m,
                         const SimWorld* wd, Stats* st, int verbose) {
  int n = wd->ncon[0], bad = 0;
  st->nstate++;
  if (n != md->ncon) bad = 1;
  for (int i = 0; i < n && i < md->ncon && !bad; i++) {
    const mjContact* c = md->contact + i;
    if (wd->contact_geom[2 * i] != c->geom[0] || wd->contact_geom[2 * i + 1] != c->geom[1] ||
        wd->contact_dim[i] != c->dim || wd->contact_exclude[i] != c->exclude)
      bad = 1;
  }
  if (bad) {
    st->nstate_mismatch++;
    int thr = 0;
    for (int i = 0; i < md->ncon; i++) thr |= near_threshold(M, md->contact + i);
    for (int i = 0; i < n; i++) thr |= fabs(wd->contact_dist[i]) < 1e-3 || fabs(wd->contact_dist[i] - wd->contact_includemargin[i]) < 2e-3;
    st->nthreshold += thr;
#ifdef SIM_DOUBLE
    thr = 0;  // float64 must match exactly
#endif
    if (verbose) {
      fprintf(stderr, "%s state %d: contact lists differ (ours %d, MuJoCo %d)\n", name, state, n, md->ncon);
      for (int i = 0; i < (n > md->ncon ? n : md->ncon); i++) {
        if (i < md->ncon)
          fprintf(stderr, "  mj  %2d: %2d %2d dim %d ex %d dist %+.6g\n", i, md->contact[i].geom[0],
                  md->contact[i].geom[1], md->contact[i].dim, md->contact[i].exclude, md->contact[i].dist);
        if (i < n)
          fprintf(stderr, "  sim %2d: %2d %2d dim %d ex %d dist %+.6g w %d\n", i, wd->contact_geom[2 * i],
                  wd->contact_geom[2 * i + 1], wd->contact_dim[i], wd->contact_exclude[i],
                  (double)wd->contact_dist[i], wd->contact_witness[i]);
      }
      return 1;
    }
    return 1;
  }
  st->ncon += n;
  double e_dist = 0, e_pos = 0, e_frame = 0, e_param = 0;
  for (int i = 0; i < n; i++) {
    const mjContact* c = md->contact + i;
    relerr(&e_dist, wd->contact_dist[i], c->dist);
    for (int k = 0; k < 3; k++) relerr(&e_pos, wd->contact_pos[3 * i + k], c->pos[k]);
    for (int k = 0; k < 9; k++) relerr(&e_frame, wd->contact_frame[9 * i + k], c->frame[k]);
    for (int k = 0; k < 5; k++) relerr(&e_param, wd->contact_friction[5 * i + k], c->friction[k]);
    for (int k = 0; k < 2; k++) relerr(&e_param, wd->contact_solref[2 * i + k], c->solref[k]);
    for (int k = 0; k < 2; k++) relerr(&e_param, wd->contact_solreffriction[2 * i + k], c->solreffriction[k]);
    for (int k = 0; k < 5; k++) relerr(&e_param, wd->contact_solimp[5 * i + k], c->solimp[k]);
    relerr(&e_param, wd->contact_includemargin[i], c->includemargin);
  }
  double worst = fmax(fmax(e_dist, e_pos), fmax(e_frame, e_param));
  if (worst <= RTOL) {  // maxima over the states that match (the others are counted as failures)
    for (int i = 0; i < n; i++) tally(m, wd, i);
    st->dist = fmax(st->dist, e_dist);
    st->pos = fmax(st->pos, e_pos);
    st->frame = fmax(st->frame, e_frame);
    st->param = fmax(st->param, e_param);
  } else {
    if (!verbose) return 1;
    fprintf(stderr, "%s state %d: values off (rel err dist %.3g pos %.3g frame %.3g param %.3g)\n", name, state,
            e_dist, e_pos, e_frame, e_param);
    for (int i = 0; i < n; i++) {
      const mjContact* c = md->contact + i;
      fprintf(stderr, "  %2d g %d %d w %d dist %.17g / %.17g  n %.6g %.6g %.6g / %.6g %.6g %.6g  t1 %.6g %.6g %.6g / %.6g %.6g %.6g\n", i,
              c->geom[0], c->geom[1], wd->contact_witness[i], (double)wd->contact_dist[i], c->dist,
              (double)wd->contact_frame[9 * i], (double)wd->contact_frame[9 * i + 1], (double)wd->contact_frame[9 * i + 2],
              c->frame[0], c->frame[1], c->frame[2], (double)wd->contact_frame[9 * i + 3],
              (double)wd->contact_frame[9 * i + 4], (double)wd->contact_frame[9 * i + 5], c->frame[3], c->frame[4], c->frame[5]);
    }
    return 1;
  }
  return 0;
}

typedef struct {
  const char* file;
  GenKind kind;
  const char* key;  // keyframe name or NULL
  double amp;       // joint noise (GEN_JOINTS)
  int nstate;
  int disable;      // extra mjDSBL_* flags for this run (both engines)
  double f32_allow; // float32: fraction of states allowed to differ (degenerate poses)
  int lanes_check;  // also run the stage with 5 and 32 threads as lanes
} Case;

// loads the model with constraints disabled (the importer refuses constraint models until the solver lands),
// imports it, then clears the flag on both so that both run their collision stage
static int load(const Case* cs, int nconmax, mjModel** M, SimModel** m, int* key) {
  char err[2048];
  void* mj = NULL;
  SimLoadOptions o;
  sim_load_options_default(&o);
  o.disable_add = mjDSBL_CONSTRAINT | cs->disable;
  if (sim_load_mjcf(cs->file, &o, &mj, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  if (sim_model_import_caps(mj, nconmax, 0, m, err, sizeof(err))) {
    fprintf(stderr, "%s: %s\n", cs->file, err);
    sim_free_mjmodel(mj);
    return -1;
  }
  *M = (mjModel*)mj;
  (*M)->opt.disableflags &= ~mjDSBL_CONSTRAINT;
  (*m)->disableflags &= ~SIM_DSBL_CONSTRAINT;
  *key = cs->key ? mj_name2id(*M, mjOBJ_KEY, cs->key) : -1;
  return 0;
}

// runs ours (all states as one batch of worlds) and MuJoCo state by state; returns the failure count
static int run_case(const Case* cs, Stats* st) {
  mjModel* M;
  SimModel* m;
  int key;
  if (load(cs, 0, &M, &m, &key)) {
    TEST_CHECK(0, "cannot load %s", cs->file);
    return 1;
  }
  int ns = cs->nstate, fails = 0, batch = ns < 25 ? ns : 25;  // worlds per batch (SimData is large)
  SimData* d;
  TEST_CHECK(sim_data_create(m, batch, &d) == SIM_OK, "alloc");
  double* qpos = (double*)malloc(sizeof(double) * M->nq);
  mjData* md = mj_makeData(M);
  for (int w0 = 0; w0 < ns; w0 += batch) {
    int nb = ns - w0 < batch ? ns - w0 : batch;
    for (int w = 0; w < nb; w++) {
      gen_state(M, cs->kind, key, cs->amp, qpos);
      for (int i = 0; i < M->nq; i++) d->qpos[(size_t)w * m->nq + i] = (sim_real)qpos[i];
    }
    sim_poison(m, d);
    sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
    sim_run_stage(m, d, SIM_STAGE_COLLISION);
    // lane-parallel narrow phase + compaction (5 and 32 lanes) equals the single-lane result bit for bit
    if (cs->lanes_check && w0 == 0) {
      SimData* dl;
      TEST_CHECK(sim_data_create(m, batch, &dl) == SIM_OK, "alloc");
      memcpy(dl->buffer, d->buffer, d->nbuffer);
      int nl[2] = {5, 32}, lanes_bad = 0;  // 5: lanes not dividing npair
      for (int w = 0; w < nb && w < 8; w++) {
        SimWorld a, b;
        sim_world(m, d, w, &a);
        sim_world(m, dl, w, &b);
        for (int k = 0; k < 2; k++) {
          sim_lanes_run_stage(m, dl, w, SIM_STAGE_COLLISION, nl[k]);
          int n = a.ncon[0], same = n == b.ncon[0] && a.ncon_overflow[0] == b.ncon_overflow[0];
#define SAME(f, width) same = same && !memcmp(a.f, b.f, sizeof(*a.f) * (size_t)(width) * (size_t)n);
          SAME(contact_dist, 1) SAME(contact_pos, 3) SAME(contact_frame, 9) SAME(contact_geom, 2)
          SAME(contact_dim, 1) SAME(contact_exclude, 1) SAME(contact_friction, 5) SAME(contact_solref, 2)
          SAME(contact_solreffriction, 2) SAME(contact_solimp, 5) SAME(contact_includemargin, 1)
          SAME(contact_pair, 1) SAME(contact_witness, 1)
#undef SAME
          lanes_bad += !same;
        }
      }
      TEST_CHECK(lanes_bad == 0, "%s: %d lane-parallel collision runs differ from the single-lane one", cs->file,
                 lanes_bad);
      sim_data_free(dl);
    }
    for (int w = 0; w < nb; w++) {
      // MuJoCo from our (possibly float32-rounded) state
      for (int i = 0; i < M->nq; i++) md->qpos[i] = (double)d->qpos[(size_t)w * m->nq + i];
      mj_kinematics(M, md);
      mj_collision(M, md);
      SimWorld wd;
      sim_world(m, d, w, &wd);
      if (compare_world(cs->file, w0 + w, M, md, m, &wd, st, fails < 2)) fails++;
      TEST_CHECK(wd.ncon_overflow[0] == 0, "%s: overflow %d", cs->file, wd.ncon_overflow[0]);
      if (wd.ncon[0] > st->maxcon) st->maxcon = wd.ncon[0];
    }
#ifdef SIM_DOUBLE
    if (fails > 3) break;
#endif
  }
  st->nfail = fails;
#ifdef SIM_DOUBLE
  TEST_CHECK(fails == 0, "%s (%s): %d states differ from MuJoCo", cs->file, PREC, fails);
#else
  TEST_CHECK(fails <= cs->f32_allow * ns, "%s (%s): %d of %d states differ from MuJoCo (allowed %.0f%%)", cs->file,
             PREC, fails, ns, 100 * cs->f32_allow);
#endif
  st->nconmax = m->nconmax;
  mj_deleteData(md);
  free(qpos);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(M);
  return fails;
}

// nconmax override: the first nconmax contacts (in MuJoCo's order) survive, the rest are counted
static void check_overflow(void) {
  Case cs = {"test/collision_free.xml", GEN_SCATTER, NULL, 0, 1, 0, 0, 0};
  mjModel* M;
  SimModel* m;
  int key;
  int rc = load(&cs, 3, &M, &m, &key);
  if (rc) {
    TEST_CHECK(0, "load");
    return;
  }
  TEST_CHECK(m->nconmax == 3, "override nconmax %d", m->nconmax);
  SimData* d;
  sim_data_create(m, 1, &d);
  mjData* md = mj_makeData(M);
  double* qpos = (double*)malloc(sizeof(double) * M->nq);
  int tested = 0;
  for (int tries = 0; tries < 50 && !tested; tries++) {
    gen_state(M, GEN_SCATTER, -1, 0, qpos);
    for (int i = 0; i < M->nq; i++) d->qpos[i] = (sim_real)qpos[i], md->qpos[i] = (double)d->qpos[i];
    mj_kinematics(M, md);
    mj_collision(M, md);
    if (md->ncon <= 4) continue;
    tested = 1;
    d->ncon_overflow[0] = 0;
    sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
    sim_run_stage(m, d, SIM_STAGE_COLLISION);
    TEST_CHECK(d->ncon[0] == 3, "ncon %d with nconmax 3", d->ncon[0]);
    TEST_CHECK(d->ncon_overflow[0] == md->ncon - 3, "overflow %d, expected %d", d->ncon_overflow[0], md->ncon - 3);
    for (int i = 0; i < 3; i++)
      TEST_CHECK(d->contact_geom[2 * i] == md->contact[i].geom[0] && d->contact_geom[2 * i + 1] == md->contact[i].geom[1] &&
                     fabs((double)d->contact_dist[i] - md->contact[i].dist) < 1e-4,
                 "overflow: contact %d differs", i);
    // disable flags: no contacts, as mj_collision
    m->disableflags |= SIM_DSBL_CONTACT;
    sim_run_stage(m, d, SIM_STAGE_COLLISION);
    TEST_CHECK(d->ncon[0] == 0, "mjDSBL_CONTACT: ncon %d", d->ncon[0]);
    m->disableflags = (m->disableflags & ~SIM_DSBL_CONTACT) | SIM_DSBL_CONSTRAINT;
    sim_run_stage(m, d, SIM_STAGE_COLLISION);
    TEST_CHECK(d->ncon[0] == 0, "mjDSBL_CONSTRAINT: ncon %d", d->ncon[0]);
  }
  TEST_CHECK(tested, "no state with more than 4 contacts");
  free(qpos);
  mj_deleteData(md);
  sim_data_free(d);
  sim_model_free(m);
  mj_deleteModel(M);
}

int main(void) {
  static const Case cases[] = {
      // float32: the generator's axis-aligned boxes and capsules are exact ties of the narrow phase (two equal
      // face separations) on the correctly rounded float frames; the float32 build keeps the float narrow
      // phase's branch there (its VJPs rebuild it, sim_collision.c) where MuJoCo's double rounding may pick
      // the other face: ~9.5% of these states (1000-state runs), vs ~3% with the former float kinematics
      {"test/collision_free.xml", GEN_SCATTER, NULL, 0, 400, 0, 0.2, 1},
      {"test/collision_free.xml", GEN_SCATTER, NULL, 0, 100, mjDSBL_MIDPHASE, 0.2, 0},
      {"test/collision_chain.xml", GEN_SCATTER, NULL, 0, 300, 0, 0.05, 0},
      // parent-child pairs touch exactly at the joints (capsule ends on box faces): float32 only reported
      {"test/collision_chain.xml", GEN_SCATTER, NULL, 0, 100, mjDSBL_FILTERPARENT, 1.0, 0},
      {"hopper/hopper.xml", GEN_JOINTS, NULL, 0.6, 200, 0, 0.01, 0},
      {"humanoid/humanoid.xml", GEN_JOINTS, NULL, 0.5, 200, 0, 0.01, 0},
      {"humanoid/humanoid.xml", GEN_JOINTS, "prone", 0.5, 100, 0, 0.01, 0},
      {"g1/scene_flat.xml", GEN_JOINTS, "home", 0.6, 300, 0, 0.01, 1},
  };
  int ncase = (int)(sizeof(cases) / sizeof(cases[0]));
  for (int c = 0; c < ncase; c++) {
    Stats st;
    memset(&st, 0, sizeof(st));
    run_case(&cases[c], &st);
    printf("%-24s dsbl %5d: %4ld states, %5ld contacts matched; %ld states differ (%ld lists, %ld of them near a "
           "threshold); max rel err dist %.1e pos %.1e frame %.1e params %.1e; max ncon %d of nconmax %d\n",
           cases[c].file, cases[c].disable, st.nstate, st.ncon, st.nfail, st.nstate_mismatch, st.nthreshold, st.dist,
           st.pos, st.frame, st.param, st.maxcon, st.nconmax);
  }
  printf("branch coverage (matched contacts):");
  for (int k = 0; k < COV_N; k++) {
    printf("%s %s %ld", k ? "," : "", cov_name[k], coverage[k]);
    TEST_CHECK(coverage[k] > 0, "no matched contact of kind '%s'", cov_name[k]);
  }
  printf("\n");
  check_overflow();
  return test_report("sim_collision_narrow_" PREC);
}
