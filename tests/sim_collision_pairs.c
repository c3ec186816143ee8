// sim_collision_pairs.c: candidate pairs at import. G1 (scene_flat.xml) must give exactly the 502 pairs of
// /work/shared/assets/g1/candidate_pairs_502.txt (that list is sorted by geom ids; ours is in contact order,
// so both are compared as sorted unordered geom pairs), with type(geom1) <= type(geom2), slot windows that
// tile nconslot, and nconmax = nconslot. The contact order itself is checked against MuJoCo in
// sim_collision_narrow.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

typedef struct {
  int a, b;
} Pair;

static int pair_cmp(const void* x, const void* y) {
  const Pair *p = (const Pair*)x, *q = (const Pair*)y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  return p->b < q->b ? -1 : (p->b > q->b);
}

static int import(const char* file, mjModel** M, SimModel** m) {
  char err[2048];
  void* mj;
  SimLoadOptions o;
  sim_load_options_default(&o);
  o.disable_add = mjDSBL_CONSTRAINT;  // the importer refuses constraint models until the solver lands
  if (sim_load_mjcf(file, &o, &mj, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  if (sim_model_import(mj, m, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    sim_free_mjmodel(mj);
    return -1;
  }
  *M = (mjModel*)mj;
  return 0;
}

static void check_layout(const char* name, const mjModel* M, const SimModel* m) {
  int adr = 0, ok = 1;
  for (int p = 0; p < m->npair; p++) {
    ok &= M->geom_type[m->pair_geom1[p]] <= M->geom_type[m->pair_geom2[p]];
    ok &= m->pair_conadr[p] == adr;
    adr += m->pair_maxcon[p];
  }
  TEST_CHECK(ok, "%s: pair geom order or slot layout wrong", name);
  TEST_CHECK(adr == m->nconslot && m->nconmax == m->nconslot, "%s: nconslot %d nconmax %d, slots %d", name,
             m->nconslot, m->nconmax, adr);
}

int main(void) {
  mjModel* M;
  SimModel* m;
  if (import("g1/scene_flat.xml", &M, &m)) {
    TEST_CHECK(0, "cannot import g1/scene_flat.xml");
    return test_report("sim_collision_pairs");
  }
  TEST_CHECK(m->npair == 502, "G1: npair %d, expected 502", m->npair);
  check_layout("G1", M, m);
  printf("G1: npair %d, nconmax %d\n", m->npair, m->nconmax);

  // reference list: "pair   N: name1 (body1) -- name2 (body2)"
  char path[4096], line[512];
  Pair ref[600], ours[600];
  int nref = 0;
  FILE* f = NULL;
  if (sim_find_asset("g1/candidate_pairs_502.txt", path, sizeof(path)) == SIM_OK) f = fopen(path, "r");
  TEST_CHECK(f != NULL, "cannot open g1/candidate_pairs_502.txt");
  while (f && fgets(line, sizeof(line), f) && nref < 600) {
    char n1[128], n2[128], b1[128], b2[128];
    int k;
    if (sscanf(line, " pair %d: %127s (%127[^)]) -- %127s (%127[^)])", &k, n1, b1, n2, b2) != 5) continue;
    int g1 = mj_name2id(M, mjOBJ_GEOM, n1), g2 = mj_name2id(M, mjOBJ_GEOM, n2);
    TEST_CHECK(g1 >= 0 && g2 >= 0, "unknown geom in '%s'", line);
    ref[nref].a = g1 < g2 ? g1 : g2;
    ref[nref].b = g1 < g2 ? g2 : g1;
    nref++;
  }
  if (f) fclose(f);
  TEST_CHECK(nref == 502, "reference list has %d pairs", nref);
  int n = m->npair < 600 ? m->npair : 600;
  for (int p = 0; p < n; p++) {
    int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p];
    ours[p].a = g1 < g2 ? g1 : g2;
    ours[p].b = g1 < g2 ? g2 : g1;
  }
  qsort(ours, (size_t)n, sizeof(Pair), pair_cmp);
  qsort(ref, (size_t)nref, sizeof(Pair), pair_cmp);
  int same = n == nref;
  for (int i = 0; same && i < n; i++) same = ours[i].a == ref[i].a && ours[i].b == ref[i].b;
  TEST_CHECK(same, "G1 candidate pairs differ from candidate_pairs_502.txt");
  sim_model_free(m);
  mj_deleteModel(M);

  // our scenes and the other models: layout invariants; explicit pairs present once
  const char* files[] = {"test/collision_free.xml", "test/collision_chain.xml", "hopper/hopper.xml",
                         "humanoid/humanoid.xml"};
  for (int i = 0; i < 4; i++) {
    if (import(files[i], &M, &m)) {
      TEST_CHECK(0, "cannot import %s", files[i]);
      continue;
    }
    check_layout(files[i], M, m);
    int nexplicit = 0;
    for (int p = 0; p < m->npair; p++) nexplicit += m->pair_ipair[p] >= 0;
    TEST_CHECK(nexplicit == M->npair, "%s: %d explicit pairs, model has %d", files[i], nexplicit, (int)M->npair);
    printf("%s: npair %d (explicit %d), nconmax %d\n", files[i], m->npair, nexplicit, m->nconmax);
    sim_model_free(m);
    mj_deleteModel(M);
  }
  return test_report("sim_collision_pairs");
}
