// sim_collision.c: collision stage (MuJoCo 3.12 mj_collision for plane, sphere, capsule and box geoms).
// The candidate pairs and their mixed contact parameters are model constants (sim_collision_import.c);
// per step: bounding-sphere test, narrow phase into per-pair slots (lane-parallel over pairs), then a
// compaction in pair order that completes each contact (mj_setContact: parameters, exclude, frame).
// Writes ncon, ncon_overflow and contact_* (sim_collision.h).
#include "sim_model.h"
#include "sim_math.h"

#include "sim_collision_primitive.c"
#include "sim_collision_box.c"

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
SIM_FN int simc_filter_sphere(const SimModel* m, const SimWorld* d, int g1, int g2, sim_real margin) {
  sim_real r1 = m->geom_rbound[g1], r2 = m->geom_rbound[g2];
  const sim_real* p1 = d->geom_xpos + 3 * g1;
  const sim_real* p2 = d->geom_xpos + 3 * g2;
  if (r1 > 0 && r2 > 0) {
    sim_real dif[3] = {p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]};
    sim_real bound = r1 + r2 + margin;
    return dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2] > bound * bound;
  }
  if (m->geom_type[g1] == SIM_GEOM_PLANE && r2 > 0) {
    const sim_real* mat = d->geom_xmat + 9 * g1;
    sim_real n[3] = {mat[2], mat[5], mat[8]}, dif[3];
    simu_sub3(dif, p2, p1);
    if (simu_dot3(dif, n) > margin + r2) return 1;
  }
  if (m->geom_type[g2] == SIM_GEOM_PLANE && r1 > 0) {
    const sim_real* mat = d->geom_xmat + 9 * g2;
    sim_real n[3] = {mat[2], mat[5], mat[8]}, dif[3];
    simu_sub3(dif, p1, p2);
    if (simu_dot3(dif, n) > margin + r1) return 1;
  }
  return 0;
}

// narrow phase of candidate pair p into con[] (at most pair_maxcon[p] contacts); returns the count
SIM_FN int simc_collide_pair(const SimModel* m, const SimWorld* d, int p, SimPreContact* con) {
  int g1 = m->pair_geom1[p], g2 = m->pair_geom2[p];
  sim_real margin = m->pair_margin[p] + m->pair_gap[p];
  if (simc_filter_sphere(m, d, g1, g2, margin)) return 0;
  const sim_real *pos1 = d->geom_xpos + 3 * g1, *mat1 = d->geom_xmat + 9 * g1, *size1 = m->geom_size + 3 * g1;
  const sim_real *pos2 = d->geom_xpos + 3 * g2, *mat2 = d->geom_xmat + 9 * g2, *size2 = m->geom_size + 3 * g2;
  int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  if (t1 == SIM_GEOM_PLANE) {
    if (t2 == SIM_GEOM_SPHERE) return simc_plane_sphere(con, margin, pos1, mat1, pos2, size2[0]);
    if (t2 == SIM_GEOM_CAPSULE) return simc_plane_capsule(con, margin, pos1, mat1, pos2, mat2, size2);
    if (t2 == SIM_GEOM_BOX) return simc_plane_box(con, margin, pos1, mat1, pos2, mat2, size2);
  } else if (t1 == SIM_GEOM_SPHERE) {
    if (t2 == SIM_GEOM_SPHERE) return simc_sphere_sphere(con, margin, pos1, mat1, size1[0], pos2, mat2, size2[0]);
    if (t2 == SIM_GEOM_CAPSULE) return simc_sphere_capsule(con, margin, pos1, mat1, size1[0], pos2, mat2, size2);
    if (t2 == SIM_GEOM_BOX) return simc_sphere_box(con, margin, pos1, size1[0], pos2, mat2, size2);
  } else if (t1 == SIM_GEOM_CAPSULE) {
    if (t2 == SIM_GEOM_CAPSULE) return simc_capsule_capsule(con, margin, pos1, mat1, size1, pos2, mat2, size2);
    if (t2 == SIM_GEOM_BOX) return simc_capsule_box(con, margin, pos1, mat1, size1, pos2, mat2, size2);
  } else if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX) {
    return simc_box_box(con, margin, pos1, mat1, size1, pos2, mat2, size2);
  }
  return 0;
}

SIM_FN void sim_collision(const SimModel* m, SimWorld* d, int lane, int nlane) {
  // mj_collision returns early when constraints or contacts are disabled (uniform over the lanes)
  if ((m->disableflags & (SIM_DSBL_CONSTRAINT | SIM_DSBL_CONTACT)) || m->npair == 0) {
    if (lane == 0) d->ncon[0] = 0;
    SIM_SYNC();
    return;
  }

  // narrow phase: each pair into its own slot window
  for (int p = lane; p < m->npair; p += nlane) {
    SimPreContact con[8];
    int n = simc_collide_pair(m, d, p, con);
    int adr = m->pair_conadr[p];
    for (int k = 0; k < n; k++) {
      sim_real* s = d->col_slot + 10 * (adr + k);
      s[0] = con[k].dist;
      for (int i = 0; i < 3; i++) {
        s[1 + i] = con[k].pos[i];
        s[4 + i] = con[k].normal[i];
        s[7 + i] = con[k].tangent[i];
      }
      d->col_slot_witness[adr + k] = con[k].witness;
    }
    d->col_pair_ncon[p] = n;
  }
  SIM_SYNC();

  // contact addresses in pair order; the later pairs beyond capacity are dropped
  if (lane == 0) {
    int total = 0;
    for (int p = 0; p < m->npair; p++) {
      d->col_pair_adr[p] = total;
      total += d->col_pair_ncon[p];
    }
    int ncon = total < m->nconmax ? total : m->nconmax;
    d->ncon[0] = ncon;
    d->ncon_overflow[0] += total - ncon;
  }
  SIM_SYNC();

  // mj_setContact
  for (int p = lane; p < m->npair; p += nlane) {
    int n = d->col_pair_ncon[p], adr = d->col_pair_adr[p], slot = m->pair_conadr[p];
    for (int k = 0; k < n && adr + k < m->nconmax; k++) {
      int c = adr + k;
      const sim_real* s = d->col_slot + 10 * (slot + k);
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
      for (int i = 0; i < 5; i++) d->contact_friction[5 * c + i] = m->pair_friction[5 * p + i];
      for (int i = 0; i < 2; i++) {
        d->contact_solref[2 * c + i] = m->pair_solref[2 * p + i];
        d->contact_solreffriction[2 * c + i] = m->pair_solreffriction[2 * p + i];
      }
      for (int i = 0; i < 5; i++) d->contact_solimp[5 * c + i] = m->pair_solimp[5 * p + i];
      d->contact_pair[c] = p;
      d->contact_witness[c] = d->col_slot_witness[slot + k];
    }
  }
  SIM_SYNC();
}
