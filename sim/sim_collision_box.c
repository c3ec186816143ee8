// sim_collision_box.c: raw narrow-phase functions for sphere-box, capsule-box and box-box (MuJoCo 3.12
// engine_collision_box.c semantics: the 3.2.7 sphere-box, the legacy capsule-box search, and the 3.12
// SAT + Sutherland-Hodgman box-box). Pure SIM_FN functions of positions, matrices and sizes; witness codes
// in sim_collision.h. Included from sim_collision.c (after sim_collision_primitive.c).

#include "sim_collision_box_eps.h"  // tolerances of the instance's arithmetic
#define SIMC_BOX_EDGEBIAS 1e-6
#define SIMC_BOX_MAXVERT 12

// ---- sphere : box ----
SIM_FN int simc_sphere_box(SimPreContact* con, sim_real margin, const sim_real* pos1, sim_real r1,
                           const sim_real* pos2, const sim_real* mat2, const sim_real* size2) {
  sim_real tmp[3], center[3], clamped[3], deepest[3], pos[3];
  simu_sub3(tmp, pos1, pos2);
  simu_mulMatTVec3(center, mat2, tmp);
  int code = 0, pw = 1;
  for (int i = 0; i < 3; i++, pw *= 3) {
    clamped[i] = center[i];
    if (size2[i] > 0) {
      if (center[i] < -size2[i]) clamped[i] = -size2[i], code += pw;
      else if (center[i] > size2[i]) clamped[i] = size2[i], code += 2 * pw;
    }
  }
  simu_copy3(deepest, center);
  simu_sub3(tmp, clamped, center);
  sim_real dist = simu_normalize3(tmp);
  if (dist - r1 > margin) return 0;

  if (dist <= (sim_real)SIM_MINVAL) {
    // centre inside: push out through the nearest face (first wins: -x, +x, -y, +y, -z, +z)
    sim_real closest = (size2[0] + size2[1] + size2[2]) * 2;
    int k = 0;
    for (int i = 0; i < 6; i++) {
      sim_real f = sim_fabs((i % 2 ? 1 : -1) * size2[i / 2] - center[i / 2]);
      if (closest > f) {
        closest = f;
        k = i;
      }
    }
    sim_real nearest[3] = {0, 0, 0};
    nearest[k / 2] = (k % 2) ? -1 : 1;
    simu_copy3(pos, center);
    simu_addscl3(pos, pos, nearest, (r1 - closest) / 2);
    simu_mulMatVec3(con[0].normal, mat2, nearest);
    dist = -closest;
    con[0].witness = 100 + k;
  } else {
    simu_addscl3(deepest, deepest, tmp, r1);
    simu_zero3(pos);
    simu_addscl3(pos, pos, clamped, (sim_real)0.5);
    simu_addscl3(pos, pos, deepest, (sim_real)0.5);
    simu_mulMatVec3(con[0].normal, mat2, tmp);
    con[0].witness = 1 + code;
  }
  simu_mulMatVec3(tmp, mat2, pos);
  simu_add3(con[0].pos, tmp, pos2);
  con[0].dist = dist - r1;
  simu_zero3(con[0].tangent);
  return 1;
}

// ---- capsule : box ----
// Discrete decisions of one capsule-box evaluation, recorded for the VJP (sim_adjoint_collision_box.c) when
// a tape is passed. Segment parameters are functions of the box-frame capsule centre pos and halfaxis:
//   first point:  bestsegmentpos = +-1 (cltype < 0) or the edge solve's x2 (kind x2kind, edge cledge at
//                 edge centre corner edge_corner), with the box-edge parameter x1 of kind x1kind;
//   second point: secondpos + bestsegmentpos, secondpos = sp_mul * raw, raw of kind sp_kind:
//                 0 constant sp_c, 1: 1 + sp_c bestsegmentpos, 2: 2 size[k]/|halfaxis[k]|,
//                 3: size[k] (1 + sp_c x1)/|halfaxis[k]|, 4: (sp_c - tmp1[k])/halfaxis[k] sp_in
//                 (tmp1 = pos - sp_in halfaxis), with k = sp_axis.
// Edge-solve kinds (ma, mb, mc, u, v of the forward): x2kind 0 const (+-1), 1 (ma v - mb u)/det,
// 2 (v - mb)/mc, 3 (v + mb)/mc; x1kind 0 const, 1 (mc u - mb v)/det, 2 (u - mb)/ma, 3 (u + mb)/ma.
#ifndef SIMC_GEO_INSTANCE  // the double instance records into the same (sim_real) tapes
typedef struct {
  int cltype, cledge, edge_corner, x1kind, x2kind;
  int sp_kind, sp_axis;
  sim_real sp_c, sp_in, sp_mul;
} SimcCapBoxTape;
#endif

// The closest capsule-segment point to the box (box faces, then the 12 edges), plus a second point along
// the segment chosen by the legacy orientation rules; each point is collided as a sphere with the box.
// tape: 0 in the forward; the VJP passes one to learn the branch taken.
SIM_FN int simc_capsule_box_rec(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                const sim_real* size2, SimcCapBoxTape* tape) {
  sim_real tmp1[3], tmp2[3], tmp3[3], halfaxis[3], axis[3], dif[3], pos[3];
  sim_real halflength = size1[1], bestdist, bestdistmax, bestsegmentpos, secondpos, dist;
  sim_real bestboxpos = 0, mul = 0, e1, e2, dp = 0, de = 0;
  sim_real ma, mb, mc, u, v, det, x1, x2, idet;
  int s1, s2, i, j, c1, c2, cltype = -4, clface = 0, clcorner = 0, cledge = 0, axisdir, n;
  int ax1 = 0, ax2 = 0, ax = 0;
  int k1, k2, bk1 = 0, bk2 = 0, bi = 0;                     // edge-solve kinds (tape)
  int sp_kind = 0, sp_axis = 0;
  sim_real sp_c = 0, sp_in = 0, sp_mul = 1;

  secondpos = -4;
  simu_sub3(tmp1, pos1, pos2);
  simu_mulMatTVec3(pos, mat2, tmp1);  // capsule centre in the box frame
  tmp1[0] = mat1[2];
  tmp1[1] = mat1[5];
  tmp1[2] = mat1[8];
  simu_mulMatTVec3(axis, mat2, tmp1);
  simu_scl3(halfaxis, axis, halflength);

  axisdir = 0;
  if (halfaxis[0] > 0) axisdir += 1;
  if (halfaxis[1] > 0) axisdir += 2;
  if (halfaxis[2] > 0) axisdir += 4;

  bestdistmax = margin + 2 * (size1[0] + halflength + size2[0] + size2[1] + size2[2]);
  bestdist = bestdistmax;
  bestsegmentpos = 0;

  // segment ends against the faces
  for (i = -1; i <= 1; i += 2) {
    simu_copy3(tmp1, pos);
    simu_addscl3(tmp1, tmp1, halfaxis, (sim_real)i);
    simu_copy3(tmp2, tmp1);
    for (c1 = 0, j = 0, c2 = -1; j < 3; j++) {
      if (tmp1[j] < -size2[j]) {
        c1++;
        c2 = j;
        tmp1[j] = -size2[j];
      } else if (tmp1[j] > size2[j]) {
        c1++;
        c2 = j;
        tmp1[j] = size2[j];
      }
    }
    if (c1 > 1) continue;
    simu_sub3(tmp1, tmp1, tmp2);
    dist = simu_dot3(tmp1, tmp1);
    if (dist < bestdist) {
      bestdist = dist;
      bestsegmentpos = (sim_real)i;
      cltype = -2 + i;
      clface = c2;
    }
  }

  // segment against the 12 edges
  for (j = 0; j < 3; j++) {
    for (i = 0; i < 8; i++) {
      if ((i & (1 << j)) != 0) continue;
      tmp3[0] = ((i & 1) ? 1 : -1) * size2[0];
      tmp3[1] = ((i & 2) ? 1 : -1) * size2[1];
      tmp3[2] = ((i & 4) ? 1 : -1) * size2[2];
      tmp3[j] = 0;
      simu_sub3(dif, tmp3, pos);
      ma = size2[j] * size2[j];
      mb = -size2[j] * halfaxis[j];
      mc = size1[1] * size1[1];
      u = -size2[j] * dif[j];
      v = simu_dot3(halfaxis, dif);
      det = ma * mc - mb * mb;
      if (sim_fabs(det) < (sim_real)SIM_MINVAL) continue;
      idet = 1 / det;
      x1 = (mc * u - mb * v) * idet;
      x2 = (ma * v - mb * u) * idet;
      s1 = s2 = 1;
      k1 = k2 = 1;
      if (x1 > 1) {
        x1 = 1;
        s1 = 2;
        x2 = (v - mb) * (1 / mc);
        k1 = 0, k2 = 2;
      } else if (x1 < -1) {
        x1 = -1;
        s1 = 0;
        x2 = (v + mb) * (1 / mc);
        k1 = 0, k2 = 3;
      }
      if (x2 > 1) {
        x2 = 1;
        s2 = 2;
        x1 = (u - mb) * (1 / ma);
        k1 = 2, k2 = 0;
        if (x1 > 1) x1 = 1, s1 = 2, k1 = 0;
        else if (x1 < -1) x1 = -1, s1 = 0, k1 = 0;
      } else if (x2 < -1) {
        x2 = -1;
        s2 = 0;
        x1 = (u + mb) * (1 / ma);
        k1 = 3, k2 = 0;
        if (x1 > 1) x1 = 1, s1 = 2, k1 = 0;
        else if (x1 < -1) x1 = -1, s1 = 0, k1 = 0;
      }
      simu_sub3(dif, tmp3, pos);
      simu_addscl3(dif, dif, halfaxis, -x2);
      dif[j] += size2[j] * x1;
      tmp1[2] = simu_dot3(dif, dif);
      c1 = s1 * 3 + s2;
      if (tmp1[2] < bestdist - (sim_real)SIM_MINVAL) {
        bestdist = tmp1[2];
        bestsegmentpos = x2;
        bestboxpos = x1;
        c2 = c1 / 6;
        clcorner = i + (1 << j) * c2;
        cledge = j;
        cltype = c1;
        bk1 = k1, bk2 = k2, bi = i;
      }
    }
  }

  if (cltype == -4) return 0;

  if (cltype >= 0 && cltype / 3 != 1) {  // closest to a corner of the box
    c1 = axisdir ^ clcorner;
    if (c1 == 0 || c1 == 7) goto skip;
    if (c1 == 1 || c1 == 2 || c1 == 4) {
      mul = 1;
      de = 1 - bestsegmentpos;
      dp = 1 + bestsegmentpos;
    }
    if (c1 == 3 || c1 == 5 || c1 == 6) {
      mul = -1;
      c1 = 7 - c1;
      dp = 1 - bestsegmentpos;
      de = 1 + bestsegmentpos;
    }
    if (c1 == 1) ax = 0, ax1 = 1, ax2 = 2;
    if (c1 == 2) ax = 1, ax1 = 2, ax2 = 0;
    if (c1 == 4) ax = 2, ax1 = 0, ax2 = 1;
    if (axis[ax] * axis[ax] > (sim_real)0.5) {  // second point along the edge of the box
      secondpos = de;
      sp_kind = 1, sp_c = -mul;  // de = 1 - mul bestsegmentpos
      e1 = 2 * size2[ax] / sim_fabs(halfaxis[ax]);
      if (e1 < secondpos) secondpos = e1, sp_kind = 2, sp_axis = ax;
      secondpos *= mul;
      sp_mul = mul;
    } else {  // second point along a face of the box
      secondpos = dp;
      sp_kind = 1, sp_c = mul;  // dp = 1 + mul bestsegmentpos
      e1 = 2 * size2[ax1] / sim_fabs(halfaxis[ax1]);
      if (e1 < secondpos) secondpos = e1, sp_kind = 2, sp_axis = ax1;
      e1 = 2 * size2[ax2] / sim_fabs(halfaxis[ax2]);
      if (e1 < secondpos) secondpos = e1, sp_kind = 2, sp_axis = ax2;
      secondpos *= -mul;
      sp_mul = -mul;
    }
  } else if (cltype >= 0 && cltype / 3 == 1) {  // on an edge of the box
    c1 = axisdir ^ clcorner;
    c1 &= 7 - (1 << cledge);
    if (c1 != 1 && c1 != 2 && c1 != 4) goto skip;
    if (cledge == 0) ax1 = 1, ax2 = 2;
    if (cledge == 1) ax1 = 2, ax2 = 0;
    if (cledge == 2) ax1 = 0, ax2 = 1;
    ax = cledge;
    if (sim_fabs(axis[ax1]) > sim_fabs(axis[ax2])) ax1 = ax2;
    ax2 = 3 - ax - ax1;
    if (c1 & (1 << ax2)) {
      mul = 1;
      secondpos = 1 - bestsegmentpos;
    } else {
      mul = -1;
      secondpos = 1 + bestsegmentpos;
    }
    sp_kind = 1, sp_c = -mul;
    e1 = 2 * size2[ax2] / sim_fabs(halfaxis[ax2]);
    if (e1 < secondpos) secondpos = e1, sp_kind = 2, sp_axis = ax2;
    sim_real e2sign;
    if (((axisdir & (1 << ax)) != 0) == ((c1 & (1 << ax2)) != 0)) e2 = 1 - bestboxpos, e2sign = -1;
    else e2 = 1 + bestboxpos, e2sign = 1;
    e1 = size2[ax] * e2 / sim_fabs(halfaxis[ax]);
    if (e1 < secondpos) secondpos = e1, sp_kind = 3, sp_axis = ax, sp_c = e2sign;
    secondpos *= mul;
    sp_mul = mul;
  } else if (cltype < 0) {  // a capsule end is closest to a face
    if (clface == -1) goto skip;  // end inside the box: no second point
    mul = cltype == -3 ? 1 : -1;
    secondpos = 2;
    sp_kind = 0, sp_c = 2, sp_in = mul;
    simu_copy3(tmp1, pos);
    simu_addscl3(tmp1, tmp1, halfaxis, -mul);
    for (i = 0; i < 3; i++) {
      if (i != clface) {
        e1 = (size2[i] - tmp1[i]) / halfaxis[i] * mul;
        if (e1 > 0 && e1 < secondpos) secondpos = e1, sp_kind = 4, sp_axis = i, sp_c = size2[i];
        e1 = (-size2[i] - tmp1[i]) / halfaxis[i] * mul;
        if (e1 > 0 && e1 < secondpos) secondpos = e1, sp_kind = 4, sp_axis = i, sp_c = -size2[i];
      }
    }
    secondpos *= mul;
    sp_mul = mul;
  }

skip:
  if (tape) {
    tape->cltype = cltype, tape->cledge = cledge, tape->edge_corner = bi, tape->x1kind = bk1, tape->x2kind = bk2;
    tape->sp_kind = sp_kind, tape->sp_axis = sp_axis, tape->sp_c = sp_c, tape->sp_in = sp_in, tape->sp_mul = sp_mul;
  }
  // sphere at the first point (box frame -> world), then at the second
  simu_copy3(tmp1, pos);
  simu_addscl3(tmp1, tmp1, halfaxis, bestsegmentpos);
  simu_mulMatVec3(tmp2, mat2, tmp1);
  simu_add3(tmp2, tmp2, pos2);
  n = simc_sphere_box(con, margin, tmp2, size1[0], pos2, mat2, size2);
  if (n) con[0].witness += 1000 * (cltype + 4);
  if (secondpos > -3) {
    simu_copy3(tmp1, pos);
    simu_addscl3(tmp1, tmp1, halfaxis, secondpos + bestsegmentpos);
    simu_mulMatVec3(tmp2, mat2, tmp1);
    simu_add3(tmp2, tmp2, pos2);
    int n2 = simc_sphere_box(con + n, margin, tmp2, size1[0], pos2, mat2, size2);
    if (n2) con[n].witness += 1000 * (cltype + 4) + 100000;
    n += n2;
  }
  return n;
}

SIM_FN int simc_capsule_box(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                            const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                            const sim_real* size2) {
  return simc_capsule_box_rec(con, margin, pos1, mat1, size1, pos2, mat2, size2, (SimcCapBoxTape*)0);
}

// ---- box : box ----

// Discrete decisions of one box-box evaluation, recorded for the VJP when a tape is passed.
// Face: the incident face (binc, side tinc), the reference side sgn, and the clipped polygon's construction:
// vertex q after clip stage s (0..3) is src[s][q] = (p, -1), a copy of vertex p before the stage, or (p, p1),
// the cut of edge p -> p1 by the stage's plane; accept[k] is the final-polygon vertex of contact k.
// Edge: the axis flip, the supporting edge centres c1 (box-1 frame) and cc (box-2 frame) of the chosen sign
// candidate, and which of the three clips of the closest-point parameters left their argument free.
#ifndef SIMC_GEO_INSTANCE
typedef struct {
  int nvert[5];
  signed char src[4][SIMC_BOX_MAXVERT][2];
  signed char accept[8];
  int binc;
  sim_real sgn, tinc;
  sim_real flip, c1[3], cc[3];
  int denom_ok, s0free, tfree, sfree;
} SimcBoxTape;
#endif

// clips polygon *cur (nin vertices) against sign*v[coord] <= limit (Sutherland-Hodgman, z interpolated);
// leaves *cur untouched when every vertex is inside, else writes *spare and swaps; returns the count.
// src: 0, or where each output vertex came from (SimcBoxTape.src)
SIM_FN int simc_clip_half_plane(int nin, sim_real (**cur)[3], sim_real (**spare)[3], int coord, sim_real sign,
                                sim_real limit, signed char (*src)[2]) {
  sim_real (*in)[3] = *cur;
  sim_real dd[SIMC_BOX_MAXVERT];
  int all_inside = 1;
  for (int k = 0; k < nin; k++) {
    dd[k] = sign * in[k][coord] - limit;
    all_inside &= dd[k] <= 0;
  }
  if (all_inside) {
    if (src)
      for (int k = 0; k < nin; k++) src[k][0] = (signed char)k, src[k][1] = -1;
    return nin;
  }
  sim_real (*out)[3] = *spare;
  int nout = 0;
  for (int k = 0; k < nin; k++) {
    const sim_real* p = in[k];
    int k1 = k + 1 == nin ? 0 : k + 1;
    sim_real dp = dd[k], dq = dd[k1];
    if (dp <= 0 && nout < SIMC_BOX_MAXVERT) {
      if (src) src[nout][0] = (signed char)k, src[nout][1] = -1;
      simu_copy3(out[nout++], p);
    }
    if (((dp < 0 && dq > 0) || (dp > 0 && dq < 0)) && nout < SIMC_BOX_MAXVERT) {
      const sim_real* q = in[k1];
      sim_real t = dp / (dp - dq);
      out[nout][0] = p[0] + t * (q[0] - p[0]);
      out[nout][1] = p[1] + t * (q[1] - p[1]);
      out[nout][2] = p[2] + t * (q[2] - p[2]);
      if (src) src[nout][0] = (signed char)k, src[nout][1] = (signed char)k1;
      nout++;
    }
  }
  *cur = out;
  *spare = in;
  return nout;
}

// separating-axis test over 3 + 3 face axes and 9 edge crosses, then either one edge-edge contact or the
// incident face clipped against the reference face (at most 8 contacts). tape: 0 in the forward.
SIM_FN int simc_box_box_rec(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                            const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                            const sim_real* size2, SimcBoxTape* tape) {
  sim_real rot[9], rotabs[9], pos21[3], pos12[3], tmp[3];
  simu_sub3(tmp, pos2, pos1);
  simu_mulMatTVec3(pos21, mat1, tmp);
  simu_sub3(tmp, pos1, pos2);
  simu_mulMatTVec3(pos12, mat2, tmp);
  // rot = mat1' mat2 (box2 axes in box1 frame, as columns)
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) rot[3 * r + c] = mat1[r] * mat2[c] + mat1[3 + r] * mat2[3 + c] + mat1[6 + r] * mat2[6 + c];
  for (int i = 0; i < 9; i++) rotabs[i] = sim_fabs(rot[i]);

  sim_real septol = margin + (sim_real)SIMC_BOX_SEPEPS * (size1[0] + size1[1] + size1[2] + size2[0] + size2[1] + size2[2]);
  sim_real sep_best = -(sim_real)SIM_MAXVAL, sep_face;
  int code = -1;

  for (int i = 0; i < 3; i++) {
    sim_real radius2 = rotabs[3 * i + 0] * size2[0] + rotabs[3 * i + 1] * size2[1] + rotabs[3 * i + 2] * size2[2];
    sim_real sep = sim_fabs(pos21[i]) - size1[i] - radius2;
    if (sep > septol) return 0;
    if (sep > sep_best) {
      sep_best = sep;
      code = i;
    }
  }
  for (int j = 0; j < 3; j++) {
    sim_real radius1 = rotabs[0 + j] * size1[0] + rotabs[3 + j] * size1[1] + rotabs[6 + j] * size1[2];
    sim_real sep = sim_fabs(pos12[j]) - size2[j] - radius1;
    if (sep > septol) return 0;
    if (sep > sep_best) {
      sep_best = sep;
      code = 3 + j;
    }
  }
  sep_face = sep_best;
  int code_face = code;

  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
      sim_real ax1 = -rot[3 * i2 + j];
      sim_real ax2 = rot[3 * i1 + j];
      sim_real norm2 = ax1 * ax1 + ax2 * ax2;
      if (norm2 < (sim_real)SIMC_BOX_PAREPS) continue;
      sim_real inv = 1 / sim_sqrt(norm2);
      ax1 *= inv;
      ax2 *= inv;
      sim_real radius1 = size1[i1] * sim_fabs(ax1) + size1[i2] * sim_fabs(ax2);
      int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      sim_real a2_1 = ax1 * rot[3 * i1 + j1] + ax2 * rot[3 * i2 + j1];
      sim_real a2_2 = ax1 * rot[3 * i1 + j2] + ax2 * rot[3 * i2 + j2];
      sim_real radius2 = size2[j1] * sim_fabs(a2_1) + size2[j2] * sim_fabs(a2_2);
      sim_real sep = sim_fabs(ax1 * pos21[i1] + ax2 * pos21[i2]) - radius1 - radius2;
      if (sep > septol) return 0;
      if (sep - (sim_real)SIMC_BOX_EDGEBIAS * sim_fabs(sep) > sep_best && sep > sep_face) {
        sep_best = sep;
        code = 6 + 3 * i + j;
      }
    }
  }
  if (code < 0) return 0;

  // an edge axis within ~8 degrees of the best face axis yields to it unless 5% deeper
  if (code >= 6) {
    int i = (code - 6) / 3, j = (code - 6) % 3;
    int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    sim_real axis[3];
    axis[i] = 0;
    axis[i1] = -rot[3 * i2 + j];
    axis[i2] = rot[3 * i1 + j];
    simu_normalize3(axis);
    sim_real face_dot;
    if (code_face < 3) {
      face_dot = sim_fabs(axis[code_face]);
    } else {
      int f = code_face - 3;
      face_dot = sim_fabs(axis[0] * rot[0 + f] + axis[1] * rot[3 + f] + axis[2] * rot[6 + f]);
    }
    if (face_dot > (sim_real)0.99 && sep_best < sep_face + (sim_real)0.05 * sim_fabs(sep_face) + (sim_real)SIM_MINVAL) {
      code = code_face;
      sep_best = sep_face;
    }
  }

  // edge-edge: one contact at the midpoint of the closest points of the supporting edges
  if (code >= 6) {
    int i = (code - 6) / 3, j = (code - 6) % 3;
    int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
    sim_real axis[3];
    axis[i] = 0;
    axis[i1] = -rot[3 * i2 + j];
    axis[i2] = rot[3 * i1 + j];
    simu_normalize3(axis);
    sim_real flip = 1;
    if (simu_dot3(axis, pos21) < 0) {
      axis[0] = -axis[0];
      axis[1] = -axis[1];
      axis[2] = -axis[2];
      flip = -1;
    }
    sim_real a2[3];
    for (int c = 0; c < 3; c++) a2[c] = axis[0] * rot[0 + c] + axis[1] * rot[3 + c] + axis[2] * rot[6 + c];
    const sim_real ambig = (sim_real)SIMC_BOX_SGNEPS;
    int amb1 = -1, amb2 = -1;
    if (sim_fabs(axis[i1]) < ambig) amb1 = i1;
    else if (sim_fabs(axis[i2]) < ambig) amb1 = i2;
    if (sim_fabs(a2[j1]) < ambig) amb2 = j1;
    else if (sim_fabs(a2[j2]) < ambig) amb2 = j2;

    sim_real d2[3] = {rot[0 + j], rot[3 + j], rot[6 + j]};
    sim_real b = d2[i];
    sim_real denom = 1 - b * b;
    sim_real w1[3] = {0, 0, 0}, w2[3] = {0, 0, 0};
    sim_real best_d2 = (sim_real)SIM_MAXVAL;
    int best_v = 0;
    for (int v1 = 0; v1 < (amb1 >= 0 ? 2 : 1); v1++) {
      for (int v2 = 0; v2 < (amb2 >= 0 ? 2 : 1); v2++) {
        sim_real c1[3], cc[3], c2[3], e[3], p1[3], p2[3], gp[3];
        c1[i] = 0;
        c1[i1] = axis[i1] >= 0 ? size1[i1] : -size1[i1];
        c1[i2] = axis[i2] >= 0 ? size1[i2] : -size1[i2];
        if (amb1 >= 0 && v1) c1[amb1] = -c1[amb1];
        cc[j] = 0;
        cc[j1] = a2[j1] >= 0 ? -size2[j1] : size2[j1];
        cc[j2] = a2[j2] >= 0 ? -size2[j2] : size2[j2];
        if (amb2 >= 0 && v2) cc[amb2] = -cc[amb2];
        simu_mulMatVec3(c2, rot, cc);
        simu_add3(c2, c2, pos21);
        simu_sub3(e, c2, c1);
        sim_real d1e = e[i];
        sim_real d2e = simu_dot3(d2, e);
        sim_real s0 = denom < (sim_real)SIM_MINVAL ? 0 : (d1e - b * d2e) / denom;
        sim_real s = simc_clip(s0, -size1[i], size1[i]);
        sim_real t0 = b * s - d2e;
        sim_real t = simc_clip(t0, -size2[j], size2[j]);
        sim_real s1r = d1e + b * t;
        int s0free = s == s0, tfree = t == t0;
        s = simc_clip(s1r, -size1[i], size1[i]);
        simu_copy3(p1, c1);
        p1[i] += s;
        simu_copy3(p2, c2);
        simu_addscl3(p2, p2, d2, t);
        simu_sub3(gp, p2, p1);
        sim_real gap2 = simu_dot3(gp, gp);
        if (gap2 < best_d2) {
          best_d2 = gap2;
          simu_copy3(w1, p1);
          simu_copy3(w2, p2);
          best_v = 2 * v1 + v2;
          if (tape) {
            for (int k = 0; k < 3; k++) tape->c1[k] = c1[k], tape->cc[k] = cc[k];
            tape->flip = flip;
            tape->denom_ok = denom >= (sim_real)SIM_MINVAL;
            tape->s0free = s0free, tape->tfree = tfree, tape->sfree = s == s1r;
          }
        }
      }
    }
    sim_real gp[3];
    simu_sub3(gp, w2, w1);
    sim_real dist = simu_dot3(gp, axis);
    if (dist > septol) return 0;
    sim_real mid[3] = {(sim_real)0.5 * (w1[0] + w2[0]), (sim_real)0.5 * (w1[1] + w2[1]), (sim_real)0.5 * (w1[2] + w2[2])};
    con[0].dist = dist;
    simu_mulMatVec3(tmp, mat1, mid);
    simu_add3(con[0].pos, tmp, pos1);
    simu_mulMatVec3(con[0].normal, mat1, axis);
    simu_zero3(con[0].tangent);
    con[0].witness = 1000 + 4 * (code - 6) + best_v;
    return 1;
  }

  // face: reference box owns the winning face, the other box's most opposed face is clipped against it
  int ref1 = code < 3;
  int a = ref1 ? code : code - 3;
  const sim_real* sizeref = ref1 ? size1 : size2;
  const sim_real* sizeinc = ref1 ? size2 : size1;
  const sim_real* posref = ref1 ? pos1 : pos2;
  const sim_real* matref = ref1 ? mat1 : mat2;
  const sim_real* posoi = ref1 ? pos21 : pos12;
  sim_real rinc[9];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) rinc[3 * r + c] = ref1 ? rot[3 * r + c] : rot[3 * c + r];
  sim_real sgn = posoi[a] >= 0 ? 1 : -1;
  int binc = 0;
  for (int k = 1; k < 3; k++)
    if (sim_fabs(rinc[3 * a + k]) > sim_fabs(rinc[3 * a + binc])) binc = k;
  sim_real tinc = sgn * rinc[3 * a + binc] > 0 ? -1 : 1;

  int ax = (a + 1) % 3, ay = (a + 2) % 3;
  int bu = (binc + 1) % 3, bv = (binc + 2) % 3;
  sim_real poly[2][SIMC_BOX_MAXVERT][3];
  sim_real cx[3], du[3], dv[3];
  for (int r = 0; r < 3; r++) {
    int c = r == 0 ? ax : (r == 1 ? ay : a);
    cx[r] = posoi[c] + tinc * sizeinc[binc] * rinc[3 * c + binc];
    du[r] = sizeinc[bu] * rinc[3 * c + bu];
    dv[r] = sizeinc[bv] * rinc[3 * c + bv];
  }
  cx[2] = sgn * cx[2] - sizeref[a];
  du[2] *= sgn;
  dv[2] *= sgn;
  const sim_real corner_sign[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
  for (int k = 0; k < 4; k++) {
    sim_real su = corner_sign[k][0], sv = corner_sign[k][1];
    poly[0][k][0] = cx[0] + su * du[0] + sv * dv[0];
    poly[0][k][1] = cx[1] + su * du[1] + sv * dv[1];
    poly[0][k][2] = cx[2] + su * du[2] + sv * dv[2];
  }
  int nvert = 4;
  sim_real (*cur)[3] = poly[0];
  sim_real (*spare)[3] = poly[1];
  if (tape) tape->binc = binc, tape->sgn = sgn, tape->tinc = tinc, tape->nvert[0] = 4;
  nvert = simc_clip_half_plane(nvert, &cur, &spare, 0, 1, sizeref[ax], tape ? tape->src[0] : 0);
  if (tape) tape->nvert[1] = nvert;
  nvert = simc_clip_half_plane(nvert, &cur, &spare, 0, -1, sizeref[ax], tape ? tape->src[1] : 0);
  if (tape) tape->nvert[2] = nvert;
  nvert = simc_clip_half_plane(nvert, &cur, &spare, 1, 1, sizeref[ay], tape ? tape->src[2] : 0);
  if (tape) tape->nvert[3] = nvert;
  nvert = simc_clip_half_plane(nvert, &cur, &spare, 1, -1, sizeref[ay], tape ? tape->src[3] : 0);
  if (tape) tape->nvert[4] = nvert;

  sim_real accepted[SIMC_BOX_MAXVERT][3];
  int naccept = 0;
  sim_real dupe2 = (sim_real)SIMC_BOX_DUPEPS * (sizeref[ax] * sizeref[ax] + sizeref[ay] * sizeref[ay]);
  for (int k = 0; k < nvert; k++) {
    if (cur[k][2] > margin) continue;
    int dupe = 0;
    for (int q = 0; q < naccept; q++) {
      sim_real dx = accepted[q][0] - cur[k][0];
      sim_real dy = accepted[q][1] - cur[k][1];
      if (dx * dx + dy * dy < dupe2) {
        dupe = 1;
        break;
      }
    }
    if (!dupe && naccept < 8) {
      if (tape) tape->accept[naccept] = (signed char)k;
      simu_copy3(accepted[naccept++], cur[k]);
    }
  }
  if (naccept == 0) return 0;

  sim_real normal[3];
  sim_real nsign = ref1 ? sgn : -sgn;
  normal[0] = nsign * matref[3 * 0 + a];
  normal[1] = nsign * matref[3 * 1 + a];
  normal[2] = nsign * matref[3 * 2 + a];
  for (int k = 0; k < naccept; k++) {
    const sim_real* vv = accepted[k];
    sim_real posc[3];
    posc[ax] = vv[0];
    posc[ay] = vv[1];
    posc[a] = sgn * (sizeref[a] + (sim_real)0.5 * vv[2]);
    con[k].dist = vv[2];
    simu_mulMatVec3(tmp, matref, posc);
    simu_add3(con[k].pos, tmp, posref);
    simu_copy3(con[k].normal, normal);
    simu_zero3(con[k].tangent);
    con[k].witness = 100 * code + k;
  }
  return naccept;
}

SIM_FN int simc_box_box(SimPreContact* con, sim_real margin, const sim_real* pos1, const sim_real* mat1,
                        const sim_real* size1, const sim_real* pos2, const sim_real* mat2, const sim_real* size2) {
  return simc_box_box_rec(con, margin, pos1, mat1, size1, pos2, mat2, size2, (SimcBoxTape*)0);
}
