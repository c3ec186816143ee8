// sim_collision.c: collision stage (MuJoCo 3.12 mj_collision for plane, sphere, capsule and box geoms).
// The candidate pairs and their mixed contact parameters are model constants (sim_collision_import.c);
// per step: bounding-sphere test, narrow phase into per-pair slots (lane-parallel over pairs), then a
// compaction in pair order that completes each contact (mj_setContact: parameters, exclude, frame). With
// per-world overrides (sim_param_fields.h) a dynamic pair's friction is mixed from the world's geom frictions.
// Writes ncon, ncon_overflow and contact_* (sim_collision.h).
#include "sim_model.h"
#include "sim_math.h"
#include "sim_math_geo.h"

// The narrow phase runs at sim_geo precision (sim_math_geo.h): in the float64 build its functions are simply
// simc_*; the float32 build adds a double instance (simcg_*, sim_collision_geo.c) and rounds the contacts to
// float when they leave it (SIMC_GP is the instance's prefix). The float instance stays for the float VJPs and for
// the branch check of simc_collide_pair.
#include "sim_collision_primitive.c"
#include "sim_collision_box.c"
#ifdef SIM_DOUBLE
#define SIMC_GP simc_
typedef SimPreContact SimPreContactG;
#else
#include "sim_collision_geo.c"
#define SIMC_GP simcg_
#endif

// mju_makeFrame: rows (normal, tangent1, tangent2); tangent hint used when |hint|^2 >= 0.25
SIM_FN void simc_make_frame(sim_real frame[9]) {
  sim_real tmp[3];
  simu_normalize3(frame);  // MuJoCo errors if |normal| < 0.5: every collision function gives unit normals
  if (simu_dot3(frame + 3, frame + 3) < (sim_real)0.25) {
    simu_zero3(frame + 3);
    if (frame[1] < (sim_real)0.5 && frame[1] > (sim_real)-0.5) frame[4] = 1;
    else frame[5] = 1;
  }
  simu_scl3(tmp, frame, simu_dot3(frame, frame + 3));
  simu_sub3(frame + 3, frame + 3, tmp);
  simu_normalize3(frame + 3);
  simu_cross(frame + 6, frame, frame + 3);
}

// mj_filterSphere: 1 = the pair cannot touch (bounding spheres, or plane half-space)
SIM_FN int simc_filter_sphere(const SimModel* m, const SimWorld* d, int g1, int g2, sim_geo margin) {
  sim_geo r1 = m->geom_rbound[g1], r2 = m->geom_rbound[g2];
  const sim_geo* p1 = SIM_GEO(d, geom_xpos) + 3 * g1;
  const sim_geo* p2 = SIM_GEO(d, geom_xpos) + 3 * g2;
  if (r1 > 0 && r2 > 0) {
    sim_geo dif[3] = {p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]};
    sim_geo bound = r1 + r2 + margin;
    return dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2] > bound * bound;
  }
  if (m->geom_type[g1] == SIM_GEOM_PLANE && r2 > 0) {
    const sim_geo* mat = SIM_GEO(d, geom_xmat) + 9 * g1;
    sim_geo n[3] = {mat[2], mat[5], mat[8]}, dif[3];
    simg_sub3(dif, p2, p1);
    if (simg_dot3(dif, n) > margin + r2) return 1;
  }
  if (m->geom_type[g2] == SIM_GEOM_PLANE && r1 > 0) {
    const sim_geo* mat = SIM_GEO(d, geom_xmat) + 9 * g2;
    sim_geo n[3] = {mat[2], mat[5], mat[8]}, dif[3];
    simg_sub3(dif, p1, p2);
    if (simg_dot3(dif, n) > margin + r1) return 1;
  }
  return 0;
}

// one narrow-phase instance (prefix N: simc_ or simcg_) on the frames and sizes of geoms 1 and 2
#define SIMC_CAT_(a, b) a##b
#define SIMC_CAT(a, b) SIMC_CAT_(a, b)
#define SIMC_DISPATCH(N, con, mg, t1, t2, p1, m1, s1, p2, m2, s2)                                             \
  if (t1 == SIM_GEOM_PLANE) {                                                                                 \
    if (t2 == SIM_GEOM_SPHERE) return SIMC_CAT(N, plane_sphere)(con, mg, p1, m1, p2, s2[0]);                  \
    if (t2 == SIM_GEOM_CAPSULE) return SIMC_CAT(N, plane_capsule)(con, mg, p1, m1, p2, m2, s2);               \
    if (t2 == SIM_GEOM_BOX) return SIMC_CAT(N, plane_box)(con, mg, p1, m1, p2, m2, s2);                       \
  } else if (t1 == SIM_GEOM_SPHERE) {                                                                         \
    if (t2 == SIM_GEOM_SPHERE) return SIMC_CAT(N, sphere_sphere)(con, mg, p1, m1, s1[0], p2, m2, s2[0]);      \
    if (t2 == SIM_GEOM_CAPSULE) return SIMC_CAT(N, sphere_capsule)(con, mg, p1, m1, s1[0], p2, m2, s2);       \
    if (t2 == SIM_GEOM_BOX) return SIMC_CAT(N, sphere_box)(con, mg, p1, s1[0], p2, m2, s2);                   \
  } else if (t1 == SIM_GEOM_CAPSULE) {                                                                        \
    if (t2 == SIM_GEOM_CAPSULE) return SIMC_CAT(N, capsule_capsule)(con, mg, p1, m1, s1, p2, m2, s2);         \
    if (t2 == SIM_GEOM_BOX) return SIMC_CAT(N, capsule_box)(con, mg, p1, m1, s1, p2, m2, s2);                 \
  } else if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX) {                                                      \
    return SIMC_CAT(N, box_box)(con, mg, p1, m1, s1, p2, m2, s2);                                             \
  }                                                                                                           \
  return 0;

// pair p at sim_geo precision: the double frames and sizes (the float64 build's only evaluation)
SIM_FN int simc_pair_geo(const SimModel* m, const SimWorld* d, int p, sim_geo margin, SimPreContactG* con) {
  int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p], t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  const sim_geo *pos1 = SIM_GEO(d, geom_xpos) + 3 * g1, *mat1 = SIM_GEO(d, geom_xmat) + 9 * g1;
  const sim_geo *pos2 = SIM_GEO(d, geom_xpos) + 3 * g2, *mat2 = SIM_GEO(d, geom_xmat) + 9 * g2;
  const sim_geo *size1 = SIM_GEO(m, geom_size) + 3 * g1, *size2 = SIM_GEO(m, geom_size) + 3 * g2;
  SIMC_DISPATCH(SIMC_GP, con, margin, t1, t2, pos1, mat1, size1, pos2, mat2, size2)
}

#ifndef SIM_DOUBLE
// pair p as the float VJPs see it: the float instance on the float frames, sizes and margin
SIM_FN int simc_pair_real(const SimModel* m, const SimWorld* d, int p, SimPreContact* con) {
  int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p], t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  sim_real margin = m->pair_margin[p] + m->pair_gap[p];
  const sim_real *pos1 = d->geom_xpos + 3 * g1, *mat1 = d->geom_xmat + 9 * g1, *size1 = m->geom_size + 3 * g1;
  const sim_real *pos2 = d->geom_xpos + 3 * g2, *mat2 = d->geom_xmat + 9 * g2, *size2 = m->geom_size + 3 * g2;
  SIMC_DISPATCH(simc_, con, margin, t1, t2, pos1, mat1, size1, pos2, mat2, size2)
}
#endif

// Narrow phase of candidate pair p into con[] (at most pair_maxcon[p] contacts); returns the count.
// Float32 build: the contacts' discrete branches (count, order, witness codes) are those of the float narrow
// phase on the float state, because the float VJPs (sim_adjoint_collision*.c) rebuild each contact from its
// witness in float arithmetic, or rerun the float narrow phase (capsule-box, box-box) to find it: a branch
// taken in double near a degeneracy (nearly parallel capsules or box edges, a box resting flat on another)
// can be one that float arithmetic cannot rebuild (a float determinant that vanishes) or does not find.
// So the double contacts are kept when the float narrow phase takes the same branches (all but a few per
// thousand near-degenerate contacts) and the float contacts replace them otherwise.
SIM_FN int simc_collide_pair(const SimModel* m, const SimWorld* d, int p, SimPreContactG* con) {
  int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p];
  sim_geo margin = (sim_geo)m->pair_margin[p] + m->pair_gap[p];
  if (simc_filter_sphere(m, d, g1, g2, margin)) return 0;
  int n = simc_pair_geo(m, d, p, margin, con);
#ifndef SIM_DOUBLE
  SimPreContact c[8];
  int nf = simc_pair_real(m, d, p, c);
  int same = nf == n;
  for (int k = 0; k < n && same; k++) same = c[k].witness == con[k].witness;
  if (!same) {
    for (int k = 0; k < nf; k++) {
      con[k].dist = c[k].dist;
      for (int i = 0; i < 3; i++) {
        con[k].pos[i] = c[k].pos[i];
        con[k].normal[i] = c[k].normal[i];
        con[k].tangent[i] = c[k].tangent[i];
      }
      con[k].witness = c[k].witness;
    }
    n = nf;
  }
#endif
  return n;
}

// The geom whose friction component k (0 sliding, 1 torsional, 2 rolling) a dynamic pair p takes from the
// geom frictions gf (ngeom, 3), as mj_contactParam mixes them: the higher priority geom's, else the larger
// (mju_max(f1, f2): f1 when f1 >= f2, so an exact tie takes geom1 = contact_geom[0], the type-ordered first
// geom, as MuJoCo's c->geom[0]). The gradient of a tie goes to that geom (sim_adjoint_constraint.c).
SIM_FN int simc_friction_src(const SimModel* m, const sim_real* gf, int p, int k) {
  int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p];
  int p1 = m->geom_priority[g1], p2 = m->geom_priority[g2];
  if (p1 != p2) return p1 > p2 ? g1 : g2;
  return gf[3 * g1 + k] >= gf[3 * g2 + k] ? g1 : g2;
}

// contact friction (5) of dynamic pair p from the world's geom frictions gf: mixed, unpacked (sliding twice,
// torsional, rolling twice) and clamped to >= mjMINMU (mj_setContact), as the import does for the model's
SIM_FN void simc_mix_friction(const SimModel* m, const sim_real* gf, int p, sim_real fr[5]) {
  sim_real f[3];
  for (int k = 0; k < 3; k++) {
    f[k] = gf[3 * simc_friction_src(m, gf, p, k) + k];
    if (f[k] < (sim_real)SIM_MINMU) f[k] = (sim_real)SIM_MINMU;
  }
  fr[0] = fr[1] = f[0];
  fr[2] = f[1];
  fr[3] = fr[4] = f[2];
}

// mj_setContact: contact c of pair p from its narrow-phase slot s (dist, pos, normal, tangent hint) and the
// branch that produced it. The backward rebuilds taped contacts through this function (sim_adjoint.c), so
// they are the forward's bit for bit.
SIM_FN void simc_set_contact(const SimModel* m, SimWorld* d, int c, int p, const sim_real* s, int witness) {
  sim_real* frame = d->contact_frame + 9 * c;
  d->contact_dist[c] = s[0];
  for (int i = 0; i < 3; i++) {
    d->contact_pos[3 * c + i] = s[1 + i];
    frame[i] = s[4 + i];
    frame[3 + i] = s[7 + i];
  }
  simc_make_frame(frame);
  d->contact_geom[2 * c] = m->pair_geom1[p];
  d->contact_geom[2 * c + 1] = m->pair_geom2[p];
  d->contact_dim[c] = m->pair_dim[p];
  d->contact_includemargin[c] = m->pair_margin[p];
  d->contact_exclude[c] = s[0] >= m->pair_margin[p];
  if (m->prm && m->pair_ipair[p] < 0) {  // the world's geom frictions (explicit pairs keep their own)
    simc_mix_friction(m, d->prm_geom_friction, p, d->contact_friction + 5 * c);
  } else {
    for (int i = 0; i < 5; i++) d->contact_friction[5 * c + i] = m->pair_friction[5 * p + i];
  }
  for (int i = 0; i < 2; i++) {
    d->contact_solref[2 * c + i] = m->pair_solref[2 * p + i];
    d->contact_solreffriction[2 * c + i] = m->pair_solreffriction[2 * p + i];
  }
  for (int i = 0; i < 5; i++) d->contact_solimp[5 * c + i] = m->pair_solimp[5 * p + i];
  d->contact_pair[c] = p;
  d->contact_witness[c] = witness;
}

SIM_FN_STAGE void sim_collision(const SimModel* m, SimWorld* d, int lane, int nlane) {
  // mj_collision returns early when constraints or contacts are disabled (uniform over the lanes)
  if ((m->disableflags & (SIM_DSBL_CONSTRAINT | SIM_DSBL_CONTACT)) || m->npair == 0) {
    if (lane == 0) d->ncon[0] = 0;
    SIM_SYNC();
    return;
  }

  // narrow phase: each pair into its own slot window
  SIM_NO_UNROLL
  for (int p = lane; p < m->npair; p += nlane) {
    SimPreContactG con[8];
    int n = simc_collide_pair(m, d, p, con);
    int adr = m->pair_conadr[p];
    for (int k = 0; k < n; k++) {
      sim_real* s = d->col_slot + 10 * (adr + k);
      s[0] = (sim_real)con[k].dist;
      for (int i = 0; i < 3; i++) {
        s[1 + i] = (sim_real)con[k].pos[i];
        s[4 + i] = (sim_real)con[k].normal[i];
        s[7 + i] = (sim_real)con[k].tangent[i];
      }
      d->col_slot_witness[adr + k] = con[k].witness;
    }
    d->col_pair_ncon[p] = n;
  }
  SIM_SYNC();

  // contact addresses in pair order (an exclusive prefix sum over the pairs); the later pairs beyond capacity
  // are dropped. Each lane sums one contiguous chunk of pairs and parks the sum at its chunk's first address;
  // every lane then adds the chunk sums before its own and writes its chunk's addresses.
  int npair = m->npair, chunk = (npair + nlane - 1) / nlane;
  int p0 = lane * chunk, p1 = SIM_MIN(npair, p0 + chunk), own = 0;
  for (int p = p0; p < p1; p++) own += d->col_pair_ncon[p];
  if (p0 < npair) d->col_pair_adr[p0] = own;
  SIM_SYNC();
  int base = 0, total = 0;
  for (int q = 0; q * chunk < npair; q++) {
    int s = d->col_pair_adr[q * chunk];
    if (q < lane) base += s;
    total += s;
  }
  SIM_SYNC();  // every lane has read the chunk sums
  for (int p = p0; p < p1; p++) {
    d->col_pair_adr[p] = base;
    base += d->col_pair_ncon[p];
  }
  if (lane == 0) {
    int ncon = total < m->nconmax ? total : m->nconmax;
    d->ncon[0] = ncon;
    d->ncon_overflow[0] += total - ncon;
  }
  SIM_SYNC();

  // mj_setContact
  SIM_NO_UNROLL
  for (int p = lane; p < m->npair; p += nlane) {
    int n = d->col_pair_ncon[p], adr = d->col_pair_adr[p], slot = m->pair_conadr[p];
    for (int k = 0; k < n && adr + k < m->nconmax; k++)
      simc_set_contact(m, d, adr + k, p, d->col_slot + 10 * (slot + k), d->col_slot_witness[slot + k]);
  }
  SIM_SYNC();
}
