// sim_collision_primitive.c: raw narrow-phase functions for plane, sphere and capsule pairs (MuJoCo 3.12
// engine_collision_primitive.c semantics), as pure SIM_FN functions of positions, rotation matrices
// (row-major 3x3, columns = geom axes) and sizes. Each returns the number of contacts written to con[] and
// tags each contact with a witness code (sim_collision.h) naming the discrete branch taken.
// `margin` is the detection distance (MuJoCo passes margin + gap). Included from sim_collision.c.

// one contact before its parameters are attached (MuJoCo's mjPreContact + branch witness)
typedef struct {
  sim_real dist;
  sim_real pos[3];
  sim_real normal[3];   // from geom1 to geom2
  sim_real tangent[3];  // first frame axis hint (zero: default frame)
  int witness;
} SimPreContact;

SIM_FN sim_real simc_clip(sim_real x, sim_real lo, sim_real hi) { return x < lo ? lo : (x > hi ? hi : x); }

// ---- plane ----

SIM_FN int simc_plane_sphere(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                             const sim_real* pos2, sim_real radius) {
  con[0].normal[0] = mat1[2];
  con[0].normal[1] = mat1[5];
  con[0].normal[2] = mat1[8];
  sim_real tmp[3] = {pos2[0] - pos1[0], pos2[1] - pos1[1], pos2[2] - pos1[2]};
  sim_real cdist = simu_dot3(tmp, con[0].normal);
  if (cdist > margin + radius) return 0;
  con[0].dist = cdist - radius;
  simu_scl3(tmp, con[0].normal, -con[0].dist / 2 - radius);
  simu_add3(con[0].pos, pos2, tmp);
  simu_zero3(con[0].tangent);
  con[0].witness = 0;
  return 1;
}

// two end spheres, +axis end first; frame tangent = capsule axis
SIM_FN int simc_plane_capsule(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                              const sim_real* pos2, const sim_real* mat2, const sim_real* size2) {
  sim_real axis[3] = {mat2[2], mat2[5], mat2[8]};
  sim_real segment[3] = {size2[1] * axis[0], size2[1] * axis[1], size2[1] * axis[2]};
  sim_real endpoint[3];
  simu_add3(endpoint, pos2, segment);
  int n1 = simc_plane_sphere(con, margin, pos1, mat1, endpoint, size2[0]);
  simu_sub3(endpoint, pos2, segment);
  int n2 = simc_plane_sphere(con + n1, margin, pos1, mat1, endpoint, size2[0]);
  if (n1) simu_copy3(con[0].tangent, axis);
  if (n2) {
    simu_copy3(con[n1].tangent, axis);
    con[n1].witness = 1;
  }
  return n1 + n2;
}

// corners in bit order (x 1, y 2, z 4); the first 4 at or below the plane within margin
SIM_FN int simc_plane_box(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                          const sim_real* pos2, const sim_real* mat2, const sim_real* size2) {
  sim_real norm[3] = {mat1[2], mat1[5], mat1[8]};
  sim_real dif[3] = {pos2[0] - pos1[0], pos2[1] - pos1[1], pos2[2] - pos1[2]};
  sim_real dist = simu_dot3(dif, norm);
  int cnt = 0;
  for (int i = 0; i < 8; i++) {
    sim_real vec[3], corner[3];
    vec[0] = (i & 1) ? size2[0] : -size2[0];
    vec[1] = (i & 2) ? size2[1] : -size2[1];
    vec[2] = (i & 4) ? size2[2] : -size2[2];
    simu_mulMatVec3(corner, mat2, vec);
    sim_real ldist = simu_dot3(norm, corner);
    if (dist + ldist > margin || ldist > 0) continue;
    con[cnt].dist = dist + ldist;
    simu_copy3(con[cnt].normal, norm);
    simu_add3(corner, corner, pos2);
    simu_scl3(vec, norm, -con[cnt].dist / 2);
    simu_add3(con[cnt].pos, corner, vec);
    simu_zero3(con[cnt].tangent);
    con[cnt].witness = i;
    if (++cnt >= 4) return 4;
  }
  return cnt;
}

// ---- sphere and capsule ----

// sphere-sphere with explicit centres and radii (mat1, mat2 only for coincident centres)
SIM_FN int simc_sphere_sphere(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                              sim_real r1, const sim_real* pos2, const sim_real* mat2, sim_real r2) {
  sim_real dif[3] = {pos1[0] - pos2[0], pos1[1] - pos2[1], pos1[2] - pos2[2]};
  sim_real cdist_sqr = simu_dot3(dif, dif);
  sim_real min_dist = margin + r1 + r2;
  if (cdist_sqr > min_dist * min_dist) return 0;
  con[0].dist = sim_sqrt(cdist_sqr) - r1 - r2;
  simu_sub3(con[0].normal, pos2, pos1);
  sim_real len = simu_normalize3(con[0].normal);
  con[0].witness = 0;
  if (len < (sim_real)SIM_MINVAL) {
    sim_real a1[3] = {mat1[2], mat1[5], mat1[8]};
    sim_real a2[3] = {mat2[2], mat2[5], mat2[8]};
    simu_cross(con[0].normal, a1, a2);
    simu_normalize3(con[0].normal);
    con[0].witness = 1;
  }
  simu_scl3(con[0].pos, con[0].normal, r1 + con[0].dist / 2);
  simu_add3(con[0].pos, con[0].pos, pos1);
  simu_zero3(con[0].tangent);
  return 1;
}

SIM_FN int simc_sphere_capsule(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                               sim_real r1, const sim_real* pos2, const sim_real* mat2, const sim_real* size2) {
  sim_real len = size2[1];
  sim_real axis[3] = {mat2[2], mat2[5], mat2[8]};
  sim_real vec[3] = {pos1[0] - pos2[0], pos1[1] - pos2[1], pos1[2] - pos2[2]};
  sim_real x0 = simu_dot3(axis, vec);
  sim_real x = simc_clip(x0, -len, len);
  int clamp = x0 < -len ? 2 : (x0 > len ? 1 : 0);
  simu_scl3(vec, axis, x);
  simu_add3(vec, vec, pos2);
  int n = simc_sphere_sphere(con, margin, pos1, mat1, r1, vec, mat2, size2[0]);
  if (n) con[0].witness += 10 * clamp;
  return n;
}

SIM_FN int simc_capsule_capsule(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                const sim_real* size2) {
  sim_real axis1[3] = {mat1[2] * size1[1], mat1[5] * size1[1], mat1[8] * size1[1]};
  sim_real axis2[3] = {mat2[2] * size2[1], mat2[5] * size2[1], mat2[8] * size2[1]};
  sim_real dif[3] = {pos1[0] - pos2[0], pos1[1] - pos2[1], pos1[2] - pos2[2]};
  sim_real ma = simu_dot3(axis1, axis1);
  sim_real mb = -simu_dot3(axis1, axis2);
  sim_real mc = simu_dot3(axis2, axis2);
  sim_real u = -simu_dot3(axis1, dif);
  sim_real v = simu_dot3(axis2, dif);
  sim_real det = ma * mc - mb * mb;
  sim_real vec1[3], vec2[3];

  if (sim_fabs(det) >= (sim_real)SIM_MINVAL) {
    sim_real x1 = (mc * u - mb * v) / det;
    sim_real x2 = (ma * v - mb * u) / det;
    int c1 = 0, c2 = 0;
    if (x1 > 1) {
      x1 = 1, c1 = 1;
      x2 = (v - mb) / mc;
    } else if (x1 < -1) {
      x1 = -1, c1 = 2;
      x2 = (v + mb) / mc;
    }
    if (x2 > 1) {
      x2 = 1, c2 = 1;
      sim_real t = (u - mb) / ma;
      c1 = t > 1 ? 1 : (t < -1 ? 2 : 0);
      x1 = simc_clip(t, -1, 1);
    } else if (x2 < -1) {
      x2 = -1, c2 = 2;
      sim_real t = (u + mb) / ma;
      c1 = t > 1 ? 1 : (t < -1 ? 2 : 0);
      x1 = simc_clip(t, -1, 1);
    }
    simu_scl3(vec1, axis1, x1);
    simu_add3(vec1, vec1, pos1);
    simu_scl3(vec2, axis2, x2);
    simu_add3(vec2, vec2, pos2);
    int n = simc_sphere_sphere(con, margin, vec1, mat1, size1[0], vec2, mat2, size2[0]);
    if (n) con[0].witness += 10 * (3 * c1 + c2);
    return n;
  }

  // parallel axes: ends of segment 1, then ends of segment 2, until two contacts
  simu_add3(vec1, pos1, axis1);
  sim_real x2 = simc_clip((v - mb) / mc, -1, 1);
  simu_scl3(vec2, axis2, x2);
  simu_add3(vec2, vec2, pos2);
  int n1 = simc_sphere_sphere(con, margin, vec1, mat1, size1[0], vec2, mat2, size2[0]);
  if (n1) con[0].witness += 100;

  simu_sub3(vec1, pos1, axis1);
  x2 = simc_clip((v + mb) / mc, -1, 1);
  simu_scl3(vec2, axis2, x2);
  simu_add3(vec2, vec2, pos2);
  int n2 = simc_sphere_sphere(con + n1, margin, vec1, mat1, size1[0], vec2, mat2, size2[0]);
  if (n2) con[n1].witness += 110;
  if (n1 + n2 >= 2) return n1 + n2;

  simu_add3(vec2, pos2, axis2);
  sim_real x1 = simc_clip((u - mb) / ma, -1, 1);
  simu_scl3(vec1, axis1, x1);
  simu_add3(vec1, vec1, pos1);
  int n3 = simc_sphere_sphere(con + n1 + n2, margin, vec1, mat1, size1[0], vec2, mat2, size2[0]);
  if (n3) con[n1 + n2].witness += 120;
  if (n1 + n2 + n3 >= 2) return n1 + n2 + n3;

  simu_sub3(vec2, pos2, axis2);
  x1 = simc_clip((u + mb) / ma, -1, 1);
  simu_scl3(vec1, axis1, x1);
  simu_add3(vec1, vec1, pos1);
  int n4 = simc_sphere_sphere(con + n1 + n2 + n3, margin, vec1, mat1, size1[0], vec2, mat2, size2[0]);
  if (n4) con[n1 + n2 + n3].witness += 130;
  return n1 + n2 + n3 + n4;
}
