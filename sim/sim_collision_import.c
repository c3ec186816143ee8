// sim_collision_import.c: model constants of the collision stage, from the compiled mjModel (host code,
// compiled per precision): the filtered candidate pairs in MuJoCo's contact order, their mixed contact
// parameters and the contact capacity.
//
// MuJoCo 3.12 (engine_collision_driver.c) decides at every step which geom pairs reach the narrow phase:
// broadphase body pairs (body filters, body bitmask; SAP culls far pairs), merged by signature with the
// explicit <pair>s, then <exclude>, geom bitmask, and the bounding-sphere test. Everything except the
// spatial tests (SAP, mid-phase OBBs, bounding spheres) depends only on the model, so we do it once here;
// the bounding-sphere test runs per step in sim_collision.c. SAP and the mid-phase OBB tests are
// conservative (they only drop pairs that cannot touch), so the contact set and order are unchanged.
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct {
  int g1, g2, ipair;  // g1, g2 swapped so that type(g1) <= type(g2)
} Cand;

typedef struct {
  Cand* c;
  int n, cap;
} CandList;

static int push(CandList* l, int g1, int g2, int ipair, const mjModel* m) {
  if (m->geom_type[g1] > m->geom_type[g2]) {
    int t = g1;
    g1 = g2;
    g2 = t;
  }
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    Cand* c = (Cand*)realloc(l->c, sizeof(Cand) * (size_t)cap);
    if (!c) return -1;
    l->c = c;
    l->cap = cap;
  }
  l->c[l->n].g1 = g1;
  l->c[l->n].g2 = g2;
  l->c[l->n].ipair = ipair;
  l->n++;
  return 0;
}

// max contacts per pair type (mj_maxContact for the primitive pairs; capsule-box can give at most 2)
static int max_contact(int t1, int t2) {
  if (t1 > t2) {
    int t = t1;
    t1 = t2;
    t2 = t;
  }
  if (t1 == mjGEOM_PLANE) {
    if (t2 == mjGEOM_SPHERE) return 1;
    if (t2 == mjGEOM_CAPSULE) return 2;
    if (t2 == mjGEOM_BOX) return 4;
    return 0;
  }
  if (t1 == mjGEOM_SPHERE) return (t2 == mjGEOM_SPHERE || t2 == mjGEOM_CAPSULE || t2 == mjGEOM_BOX) ? 1 : 0;
  if (t1 == mjGEOM_CAPSULE) return t2 == mjGEOM_CAPSULE ? 2 : (t2 == mjGEOM_BOX ? 2 : 0);
  if (t1 == mjGEOM_BOX && t2 == mjGEOM_BOX) return 8;
  return 0;
}

// the pair has a collision function (mjCOLLISIONFUNC non-NULL; planes never collide with planes)
static int has_func(const mjModel* m, int g1, int g2) {
  return max_contact(m->geom_type[g1], m->geom_type[g2]) > 0;
}

static int bitmask_ok(int ct1, int ca1, int ct2, int ca2) { return (ct1 & ca2) || (ct2 & ca1); }

// body-level contype/conaffinity: OR over the body's geoms (add_pair in mj_broadphase)
static void body_mask(const mjModel* m, int b, int* ct, int* ca) {
  *ct = *ca = 0;
  for (int g = m->body_geomadr[b]; g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
    *ct |= m->geom_contype[g];
    *ca |= m->geom_conaffinity[g];
  }
}

// filterBodyPair (3.12, no sleep): 1 = discard
static int filter_body_pair(const mjModel* m, int b1, int b2) {
  int w1 = m->body_weldid[b1], w2 = m->body_weldid[b2];
  int p1 = m->body_weldid[m->body_parentid[w1]], p2 = m->body_weldid[m->body_parentid[w2]];
  if (w1 == w2) return 1;
  if (m->body_dofnum[w1] == 0 && m->body_dofnum[w2] == 0) return 1;
  int filterparent = !(m->opt.disableflags & mjDSBL_FILTERPARENT);
  if (filterparent && w1 != 0 && w2 != 0 && (w1 == p2 || w2 == p1)) return 1;
  return 0;
}

// body pair (b1 < b2) is ever produced by mj_broadphase (up to SAP's spatial culling)
static int broadphase_pair(const mjModel* m, int b1, int b2) {
  int ct1, ca1, ct2, ca2;
  body_mask(m, b1, &ct1, &ca1);
  body_mask(m, b2, &ct2, &ca2);
  if (!(ct1 || ca1) || !(ct2 || ca2)) return 0;  // canCollide
  if (b1 == 0 && m->body_geomnum[0] == 0) return 0;  // world only through the always-colliding list
  if (filter_body_pair(m, b1, b2)) return 0;
  return bitmask_ok(ct1, ca1, ct2, ca2);
}

// dynamic geom pair duplicating an explicit pair of the same signature
static int merged_dup(const mjModel* m, unsigned sig, int g1, int g2) {
  for (int k = 0; k < m->npair; k++)
    if ((unsigned)m->pair_signature[k] == sig &&
        ((m->pair_geom1[k] == g1 && m->pair_geom2[k] == g2) || (m->pair_geom1[k] == g2 && m->pair_geom2[k] == g1)))
      return 1;
  return 0;
}

static int dynamic_ok(const mjModel* m, unsigned sig, int g1, int g2) {
  if (merged_dup(m, sig, g1, g2)) return 0;
  if (!bitmask_ok(m->geom_contype[g1], m->geom_conaffinity[g1], m->geom_contype[g2], m->geom_conaffinity[g2]))
    return 0;
  return has_func(m, g1, g2);
}

// contactcompare of the mid-phase sort: by (geom1, geom2) after the type swap
static int cand_cmp(const Cand* a, const Cand* b) {
  if (a->g1 != b->g1) return a->g1 < b->g1 ? -1 : 1;
  if (a->g2 != b->g2) return a->g2 < b->g2 ? -1 : 1;
  return 0;
}

// builds the candidate list in MuJoCo's contact order; returns 0 or -1 (allocation)
static int build_pairs(const mjModel* m, CandList* out) {
  CandList l = {NULL, 0, 0};
  int nb = m->nbody, pairadr = 0, err = 0;
  int midphase = !(m->opt.disableflags & mjDSBL_MIDPHASE);
  for (int b1 = 0; b1 < nb && !err; b1++) {
    for (int b2 = b1 + 1; b2 < nb && !err; b2++) {
      if (!broadphase_pair(m, b1, b2)) continue;
      unsigned sig = ((unsigned)b1 << 16) + (unsigned)b2;
      // explicit pairs up to this signature
      for (; pairadr < m->npair && (unsigned)m->pair_signature[pairadr] <= sig; pairadr++)
        if (has_func(m, m->pair_geom1[pairadr], m->pair_geom2[pairadr]))
          err |= push(&l, m->pair_geom1[pairadr], m->pair_geom2[pairadr], pairadr, m);
      // exclusion: MuJoCo's forward scan of exclude_signature
      int ex = 0;
      while (ex < m->nexclude && (unsigned)m->exclude_signature[ex] < sig) ex++;
      if (ex < m->nexclude && (unsigned)m->exclude_signature[ex] == sig) continue;
      int a1 = m->body_geomadr[b1], n1 = m->body_geomnum[b1];
      int a2 = m->body_geomadr[b2], n2 = m->body_geomnum[b2];
      if (n1 == 1 && n2 == 1) {
        if (dynamic_ok(m, sig, a1, a2)) err |= push(&l, a1, a2, -1, m);
      } else if (midphase && m->body_bvhadr[b1] >= 0 && m->body_bvhadr[b2] >= 0) {
        // mj_collideTree: contacts stably sorted by (geom1, geom2) after the type swap
        int start = l.n;
        for (int g1 = a1; g1 < a1 + n1; g1++)
          for (int g2 = a2; g2 < a2 + n2; g2++)
            if (dynamic_ok(m, sig, g1, g2)) err |= push(&l, g1, g2, -1, m);
        for (int i = start + 1; i < l.n; i++)  // insertion sort (keys are distinct)
          for (int j = i; j > start && cand_cmp(&l.c[j - 1], &l.c[j]) > 0; j--) {
            Cand t = l.c[j];
            l.c[j] = l.c[j - 1];
            l.c[j - 1] = t;
          }
      } else {
        for (int g1 = a1; g1 < a1 + n1; g1++)
          for (int g2 = a2; g2 < a2 + n2; g2++)
            if (dynamic_ok(m, sig, g1, g2)) err |= push(&l, g1, g2, -1, m);
      }
    }
  }
  for (; pairadr < m->npair && !err; pairadr++)
    if (has_func(m, m->pair_geom1[pairadr], m->pair_geom2[pairadr]))
      err |= push(&l, m->pair_geom1[pairadr], m->pair_geom2[pairadr], pairadr, m);
  if (err) {
    free(l.c);
    return -1;
  }
  *out = l;
  return 0;
}

// mj_contactParam for geoms g1, g2 (no flex); adhesion is refused by sim_check_model
static void contact_param(const mjModel* m, int g1, int g2, int* condim, double solref[2], double solimp[5],
                          double friction[5]) {
  double fri[3];
  int p1 = m->geom_priority[g1], p2 = m->geom_priority[g2];
  const mjtNum *sr1 = m->geom_solref + mjNREF * g1, *sr2 = m->geom_solref + mjNREF * g2;
  const mjtNum *si1 = m->geom_solimp + mjNIMP * g1, *si2 = m->geom_solimp + mjNIMP * g2;
  const mjtNum *f1 = m->geom_friction + 3 * g1, *f2 = m->geom_friction + 3 * g2;
  if (p1 != p2) {
    int g = p1 > p2 ? g1 : g2;
    *condim = m->geom_condim[g];
    for (int i = 0; i < 2; i++) solref[i] = m->geom_solref[mjNREF * g + i];
    for (int i = 0; i < 5; i++) solimp[i] = m->geom_solimp[mjNIMP * g + i];
    for (int i = 0; i < 3; i++) fri[i] = m->geom_friction[3 * g + i];
  } else {
    *condim = m->geom_condim[g1] > m->geom_condim[g2] ? m->geom_condim[g1] : m->geom_condim[g2];
    double s1 = m->geom_solmix[g1], s2 = m->geom_solmix[g2], mix;
    if (s1 >= mjMINVAL && s2 >= mjMINVAL) mix = s1 / (s1 + s2);
    else if (s1 < mjMINVAL && s2 < mjMINVAL) mix = 0.5;
    else if (s1 < mjMINVAL) mix = 0.0;
    else mix = 1.0;
    if (sr1[0] > 0 && sr2[0] > 0)
      for (int i = 0; i < 2; i++) solref[i] = mix * sr1[i] + (1 - mix) * sr2[i];
    else
      for (int i = 0; i < 2; i++) solref[i] = sr1[i] < sr2[i] ? sr1[i] : sr2[i];
    for (int i = 0; i < 5; i++) solimp[i] = mix * si1[i] + (1 - mix) * si2[i];
    for (int i = 0; i < 3; i++) fri[i] = f1[i] > f2[i] ? f1[i] : f2[i];
  }
  friction[0] = fri[0];
  friction[1] = fri[0];
  friction[2] = fri[1];
  friction[3] = fri[2];
  friction[4] = fri[2];
}

// sizes (before the model's arrays are allocated)
void sim_collision_sizes(const void* mjmodel, SimModel* m) {
  const mjModel* mj = (const mjModel*)mjmodel;
  CandList l = {NULL, 0, 0};
  m->npair = 0;
  m->nconslot = 0;
  m->nconmax = 0;
  if (build_pairs(mj, &l)) return;  // allocation failure: no pairs (the fill below sees npair = 0)
  int slots = 0;
  for (int i = 0; i < l.n; i++) slots += max_contact(mj->geom_type[l.c[i].g1], mj->geom_type[l.c[i].g2]);
  m->npair = l.n;
  m->nconslot = slots;
  m->nconmax = slots;
  free(l.c);
}

// arrays (after allocation)
void sim_collision_fill(const void* mjmodel, SimModel* m) {
  const mjModel* mj = (const mjModel*)mjmodel;
  CandList l = {NULL, 0, 0};
  if (build_pairs(mj, &l) || l.n != m->npair) {
    free(l.c);
    m->npair = 0;
    return;
  }
  int adr = 0;
  for (int p = 0; p < l.n; p++) {
    int g1 = l.c[p].g1, g2 = l.c[p].g2, ip = l.c[p].ipair, condim;
    double solref[2], solimp[5], friction[5], solreffriction[2] = {0, 0}, margin, gap;
    if (ip >= 0) {
      condim = mj->pair_dim[ip];
      for (int i = 0; i < 2; i++) solref[i] = mj->pair_solref[mjNREF * ip + i];
      for (int i = 0; i < 5; i++) solimp[i] = mj->pair_solimp[mjNIMP * ip + i];
      for (int i = 0; i < 5; i++) friction[i] = mj->pair_friction[5 * ip + i];
      if (mj->pair_solreffriction[mjNREF * ip] || mj->pair_solreffriction[mjNREF * ip + 1])
        for (int i = 0; i < 2; i++) solreffriction[i] = mj->pair_solreffriction[mjNREF * ip + i];
      margin = mj->pair_margin[ip];
      gap = mj->pair_gap[ip];
    } else {
      contact_param(mj, g1, g2, &condim, solref, solimp, friction);
      margin = mj->geom_margin[g1] + mj->geom_margin[g2];
      gap = mj->geom_gap[g1] + mj->geom_gap[g2];
    }
    m->pair_geom1[p] = g1;
    m->pair_geom2[p] = g2;
    m->pair_ipair[p] = ip;
    m->pair_maxcon[p] = max_contact(mj->geom_type[g1], mj->geom_type[g2]);
    m->pair_conadr[p] = adr;
    adr += m->pair_maxcon[p];
    m->pair_dim[p] = condim;
    for (int i = 0; i < 5; i++) m->pair_friction[5 * p + i] = (sim_real)(friction[i] < mjMINMU ? mjMINMU : friction[i]);
    for (int i = 0; i < 2; i++) m->pair_solref[2 * p + i] = (sim_real)solref[i];
    for (int i = 0; i < 2; i++) m->pair_solreffriction[2 * p + i] = (sim_real)solreffriction[i];
    for (int i = 0; i < 5; i++) m->pair_solimp[5 * p + i] = (sim_real)solimp[i];
    m->pair_margin[p] = (sim_real)margin;
    m->pair_gap[p] = (sim_real)gap;
  }
  free(l.c);
}
