// sim_adjoint_collision_box.c: VJPs of the box pairs (plane-box, sphere-box, capsule-box, box-box), branch
// frozen. Included from sim_adjoint_collision.c (helpers and the g_bar layout are there).
//
// Capsule-box and box-box take branches their witness does not pin down (the capsule-box search's edge and
// second-point rule; box-box's incident face, clipped-polygon construction and edge-edge clamps). Their VJPs
// rerun the forward (simc_capsule_box_rec / simc_box_box_rec) at the same state with a tape that records
// those discrete decisions (so they are the forward's own), then recompute the continuous values along the
// recorded construction and differentiate them by hand.

// ---- plane : box ----

// plane-box corner (witness = corner bits x 1, y 2, z 4): corner = mat2 v, dist = n.(pos2 - pos1) + n.corner,
// pos = corner + pos2 - n dist/2, n = plane z
SIM_FN void simc_adj_pair_plane_box(const sim_real* pos1, const sim_real* mat1, const sim_real* pos2,
                                    const sim_real* mat2, const sim_real* size2, int witness, sim_real dist_bar,
                                    const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  sim_real n[3] = {mat1[2], mat1[5], mat1[8]}, zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  sim_real v[3], corner[3], dif[3], cbar[3] = {0, 0, 0};
  v[0] = (witness & 1) ? size2[0] : -size2[0];
  v[1] = (witness & 2) ? size2[1] : -size2[1];
  v[2] = (witness & 4) ? size2[2] : -size2[2];
  simu_mulMatVec3(corner, mat2, v);
  simu_sub3(dif, pos2, pos1);
  sim_real dist = simu_dot3(dif, n) + simu_dot3(n, corner);
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  // pos = corner + pos2 - n dist/2
  simc_adj_acc3(cbar, pos_bar, 1);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, pos_bar, 1);
  simc_adj_acc3(nbar, pos_bar, -dist / 2);
  sim_real db = dist_bar - simu_dot3(n, pos_bar) / 2;
  // dist = n.(pos2 - pos1) + n.corner
  simc_adj_acc3(nbar, dif, db);
  simc_adj_acc3(nbar, corner, db);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, n, db);
  simc_adj_acc3(g_bar + SIMC_ADJ_P1, n, -db);
  simc_adj_acc3(cbar, n, db);
  simc_adj_zcol(g_bar + SIMC_ADJ_M1, nbar);
  // corner = mat2 v (v constant)
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) g_bar[SIMC_ADJ_M2 + 3 * r + c] += cbar[r] * v[c];
}

// ---- sphere : box ----

// Sphere-box at sphere centre c (radius r1) against box (pos2, mat2, size2), sphere-box witness sbw
// (1 + code: outside, axis states a_i = code / 3^i % 3: 0 free, 1 at -size, 2 at +size; 100 + k: centre
// inside, pushed out through face k). Local quantities in the box frame: center = mat2' (c - pos2),
//   outside: q = clamp(center), t = (q - center)/|q - center|, normal = mat2 t, pl = (q + center + r1 t)/2,
//            dist = |q - center| - r1;
//   inside:  normal = mat2 e (e = +-unit of face k, into the box), closest = |+-size_k - center_k|,
//            pl = center + e (r1 - closest)/2, dist = -closest - r1;
// pos = mat2 pl + pos2.
typedef struct {
  sim_real tmp[3], center[3], clamped[3], t[3], pl[3], normal[3], dist, sigma;
  int inside, face, freeax[3];
} SimcSphereBox;

SIM_FN void simc_sphere_box_eval(SimcSphereBox* e, const sim_real* c, sim_real r1, const sim_real* pos2,
                                 const sim_real* mat2, const sim_real* size2, int sbw) {
  simu_sub3(e->tmp, c, pos2);
  simu_mulMatTVec3(e->center, mat2, e->tmp);
  e->inside = sbw >= 100;
  if (!e->inside) {
    int code = sbw - 1;
    sim_real d[3];
    for (int i = 0; i < 3; i++, code /= 3) {
      int ai = code % 3;
      e->freeax[i] = ai == 0;
      e->clamped[i] = ai == 0 ? e->center[i] : (ai == 1 ? -size2[i] : size2[i]);
      d[i] = e->clamped[i] - e->center[i];
    }
    simu_copy3(e->t, d);
    e->dist = simu_normalize3(e->t);
    for (int i = 0; i < 3; i++) e->pl[i] = (sim_real)0.5 * e->clamped[i] + (sim_real)0.5 * (e->center[i] + r1 * e->t[i]);
    simu_mulMatVec3(e->normal, mat2, e->t);
  } else {
    int k = sbw - 100, j = k / 2;
    e->face = k;
    sim_real s = (k % 2 ? 1 : -1) * size2[j] - e->center[j];
    e->sigma = s >= 0 ? 1 : -1;  // closest = sigma (s)
    sim_real closest = sim_fabs(s);
    simu_zero3(e->t);
    e->t[j] = (k % 2) ? -1 : 1;  // nearest
    for (int i = 0; i < 3; i++) e->pl[i] = e->center[i] + e->t[i] * ((r1 - closest) / 2);
    simu_mulMatVec3(e->normal, mat2, e->t);
    e->dist = closest;
  }
}

// reverse of simc_sphere_box_eval (e from it): adds to cbar (centre), p2bar, m2bar
SIM_FN void simc_adj_sphere_box(const SimcSphereBox* e, sim_real r1, const sim_real* mat2, sim_real dist_bar,
                                const sim_real pos_bar[3], const sim_real nbar[3], sim_real* cbar, sim_real* p2bar,
                                sim_real* m2bar) {
  sim_real plbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0}, centerbar[3] = {0, 0, 0};
  // normal = mat2 t (t constant when inside); pos = mat2 pl + pos2
  simc_adj_matvec(m2bar, tbar, mat2, e->t, nbar);
  simc_adj_matvec(m2bar, plbar, mat2, e->pl, pos_bar);
  simc_adj_acc3(p2bar, pos_bar, 1);
  if (!e->inside) {
    // pl = (clamped + center + r1 t)/2, dist_out = |d| - r1, t = d/|d|, d = clamped - center
    sim_real dbar[3] = {0, 0, 0};
    simc_adj_acc3(tbar, plbar, (sim_real)0.5 * r1);
    simc_adj_acc3(dbar, e->t, dist_bar);
    if (e->dist > (sim_real)SIM_MINVAL) simc_adj_normalize(dbar, e->t, e->dist, tbar);
    for (int i = 0; i < 3; i++) {
      centerbar[i] += (sim_real)0.5 * plbar[i];
      if (e->freeax[i]) centerbar[i] += (sim_real)0.5 * plbar[i];  // clamped_i = center_i (and d_i = 0)
      else centerbar[i] -= dbar[i];                                 // d_i = +-size_i - center_i
    }
  } else {
    // pl = center + e (r1 - closest)/2, dist_out = -closest - r1, closest = sigma (+-size_j - center_j)
    int j = e->face / 2;
    simc_adj_acc3(centerbar, plbar, 1);
    sim_real closest_bar = -simu_dot3(e->t, plbar) / 2 - dist_bar;
    centerbar[j] -= e->sigma * closest_bar;
  }
  // center = mat2' (c - pos2)
  sim_real tmpbar[3] = {0, 0, 0};
  simc_adj_mattvec(m2bar, tmpbar, mat2, e->tmp, centerbar);
  simc_adj_acc3(cbar, tmpbar, 1);
  simc_adj_acc3(p2bar, tmpbar, -1);
}

SIM_FN void simc_adj_pair_sphere_box(const sim_real* pos1, sim_real r1, const sim_real* pos2, const sim_real* mat2,
                                     const sim_real* size2, int witness, sim_real dist_bar,
                                     const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  SimcSphereBox e;
  simc_sphere_box_eval(&e, pos1, r1, pos2, mat2, size2, witness);
  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  simc_adj_make_frame(e.normal, zero, frame_bar, nbar, tbar);
  simc_adj_sphere_box(&e, r1, mat2, dist_bar, pos_bar, nbar, g_bar + SIMC_ADJ_P1, g_bar + SIMC_ADJ_P2,
                      g_bar + SIMC_ADJ_M2);
}

// ---- capsule : box ----

// a segment-segment parameter from (ma, mb, mc, u, v) by kind (SimcCapBoxTape): x1 (is_x1) or x2
SIM_FN sim_real simc_segparam(const SimcCapcapScalars* s, int is_x1, int kind, sim_real cst) {
  if (kind == 0) return cst;
  if (is_x1) {
    if (kind == 1) return (s->mc * s->u - s->mb * s->v) / s->det;
    return kind == 2 ? (s->u - s->mb) / s->ma : (s->u + s->mb) / s->ma;
  }
  if (kind == 1) return (s->ma * s->v - s->mb * s->u) / s->det;
  return kind == 2 ? (s->v - s->mb) / s->mc : (s->v + s->mb) / s->mc;
}

// its cotangent map: sb (ma, mb, mc, u, v) += dx/d(.) xbar
SIM_FN void simc_adj_segparam(const SimcCapcapScalars* s, int is_x1, int kind, sim_real xbar, sim_real sb[5]) {
  if (kind == 0) return;
  sim_real x = simc_segparam(s, is_x1, kind, 0);
  if (kind == 1) {
    // x = N/det, det = ma mc - mb^2; N = mc u - mb v (x1) or ma v - mb u (x2)
    sim_real nb = xbar / s->det, detbar = -nb * x;
    if (is_x1) {
      sb[2] += nb * s->u, sb[3] += nb * s->mc, sb[1] -= nb * s->v, sb[4] -= nb * s->mb;
    } else {
      sb[0] += nb * s->v, sb[4] += nb * s->ma, sb[1] -= nb * s->u, sb[3] -= nb * s->mb;
    }
    sb[0] += detbar * s->mc, sb[2] += detbar * s->ma, sb[1] -= 2 * s->mb * detbar;
    return;
  }
  // x = (w -+ mb)/den, (w, den) = (u, ma) for x1, (v, mc) for x2; kind 2: -mb, 3: +mb
  sim_real sg = kind == 2 ? -1 : 1;
  sim_real den = is_x1 ? s->ma : s->mc, nb = xbar / den;
  sb[is_x1 ? 3 : 4] += nb;
  sb[1] += sg * nb;
  sb[is_x1 ? 0 : 2] -= nb * x;
}

SIM_FN void simc_adj_pair_capsule_box(sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                      const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                      const sim_real* size2, int witness, sim_real dist_bar,
                                      const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  // the forward's branch at this state
  SimPreContact con[2];
  SimcCapBoxTape tp;
  int n = simc_capsule_box_rec(con, margin, pos1, mat1, size1, pos2, mat2, size2, &tp);
  int found = 0;
  for (int k = 0; k < n; k++) found |= con[k].witness == witness;
  if (!found) return;  // not this state's contact: no cotangent
  int second = witness >= 100000;

  // box-frame capsule centre and half axis: pos = mat2' (pos1 - pos2), ha = h mat2' z1
  sim_real h = size1[1], tmp[3], pos[3], z1[3] = {mat1[2], mat1[5], mat1[8]}, axis[3], ha[3];
  simu_sub3(tmp, pos1, pos2);
  simu_mulMatTVec3(pos, mat2, tmp);
  simu_mulMatTVec3(axis, mat2, z1);
  simu_scl3(ha, axis, h);

  // first point's segment parameter: +-1 (end against a face) or the edge solve's x2
  SimcCapcapScalars s = {0, 0, 0, 0, 0, 1};
  sim_real dif[3] = {0, 0, 0}, bsp, x1 = 0;
  int j = tp.cledge;
  if (tp.cltype < 0) {
    bsp = tp.cltype == -3 ? -1 : 1;
  } else {
    sim_real tmp3[3];
    int i = tp.edge_corner;
    tmp3[0] = ((i & 1) ? 1 : -1) * size2[0];
    tmp3[1] = ((i & 2) ? 1 : -1) * size2[1];
    tmp3[2] = ((i & 4) ? 1 : -1) * size2[2];
    tmp3[j] = 0;
    simu_sub3(dif, tmp3, pos);
    s.ma = size2[j] * size2[j];
    s.mb = -size2[j] * ha[j];
    s.mc = h * h;
    s.u = -size2[j] * dif[j];
    s.v = simu_dot3(ha, dif);
    s.det = s.ma * s.mc - s.mb * s.mb;
    int s1 = tp.cltype / 3, s2 = tp.cltype % 3;
    bsp = simc_segparam(&s, 0, tp.x2kind, s2 == 2 ? 1 : -1);
    x1 = simc_segparam(&s, 1, tp.x1kind, s1 == 2 ? 1 : -1);
  }
  // second point: lambda = bsp + sp_mul raw
  sim_real raw = 0, lam = bsp;
  int k = tp.sp_axis;
  if (second) {
    switch (tp.sp_kind) {
      case 0: raw = tp.sp_c; break;
      case 1: raw = 1 + tp.sp_c * bsp; break;
      case 2: raw = 2 * size2[k] / sim_fabs(ha[k]); break;
      case 3: raw = size2[k] * (1 + tp.sp_c * x1) / sim_fabs(ha[k]); break;
      default: raw = (tp.sp_c - (pos[k] - tp.sp_in * ha[k])) / ha[k] * tp.sp_in; break;
    }
    lam = bsp + tp.sp_mul * raw;
  }
  // sphere centre: pt = pos + ha lambda (box frame), c = mat2 pt + pos2
  sim_real pt[3], c[3];
  for (int i = 0; i < 3; i++) pt[i] = pos[i] + ha[i] * lam;
  simu_mulMatVec3(c, mat2, pt);
  simu_add3(c, c, pos2);

  SimcSphereBox e;
  simc_sphere_box_eval(&e, c, size1[0], pos2, mat2, size2, witness % 1000);
  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0}, cbar[3] = {0, 0, 0};
  sim_real* p1bar = g_bar + SIMC_ADJ_P1;
  sim_real* m1bar = g_bar + SIMC_ADJ_M1;
  sim_real* p2bar = g_bar + SIMC_ADJ_P2;
  sim_real* m2bar = g_bar + SIMC_ADJ_M2;
  simc_adj_make_frame(e.normal, zero, frame_bar, nbar, tbar);
  simc_adj_sphere_box(&e, size1[0], mat2, dist_bar, pos_bar, nbar, cbar, p2bar, m2bar);

  // reverse: c = mat2 pt + pos2, pt = pos + ha lambda
  sim_real ptbar[3] = {0, 0, 0}, posbar[3] = {0, 0, 0}, habar[3] = {0, 0, 0};
  simc_adj_matvec(m2bar, ptbar, mat2, pt, cbar);
  simc_adj_acc3(p2bar, cbar, 1);
  simc_adj_acc3(posbar, ptbar, 1);
  simc_adj_acc3(habar, ptbar, lam);
  sim_real lambar = simu_dot3(ha, ptbar), bspbar = lambar, x1bar = 0;
  if (second) {
    sim_real rawbar = tp.sp_mul * lambar;
    switch (tp.sp_kind) {
      case 0: break;
      case 1: bspbar += tp.sp_c * rawbar; break;  // raw = 1 + sp_c bsp
      case 2: habar[k] -= raw / ha[k] * rawbar; break;  // raw = 2 size_k / |ha_k|
      case 3:  // raw = size_k (1 + sp_c x1) / |ha_k|
        x1bar += size2[k] * tp.sp_c / sim_fabs(ha[k]) * rawbar;
        habar[k] -= raw / ha[k] * rawbar;
        break;
      default:  // raw = sp_in (sp_c - pos_k)/ha_k + 1
        posbar[k] -= tp.sp_in / ha[k] * rawbar;
        habar[k] -= tp.sp_in * (tp.sp_c - pos[k]) / (ha[k] * ha[k]) * rawbar;
        break;
    }
  }
  if (tp.cltype >= 0) {
    // edge solve: ma, mc constant; mb = -size_j ha_j, u = -size_j dif_j, v = ha.dif, dif = tmp3 - pos
    sim_real sb[5] = {0, 0, 0, 0, 0}, difbar[3] = {0, 0, 0};
    simc_adj_segparam(&s, 0, tp.x2kind, bspbar, sb);
    simc_adj_segparam(&s, 1, tp.x1kind, x1bar, sb);
    habar[j] -= size2[j] * sb[1];
    difbar[j] -= size2[j] * sb[3];
    simc_adj_acc3(habar, dif, sb[4]);
    simc_adj_acc3(difbar, ha, sb[4]);
    simc_adj_acc3(posbar, difbar, -1);
  }
  // ha = h mat2' z1, pos = mat2' (pos1 - pos2)
  sim_real axisbar[3], z1bar[3] = {0, 0, 0}, tmpbar[3] = {0, 0, 0};
  simu_scl3(axisbar, habar, h);
  simc_adj_mattvec(m2bar, z1bar, mat2, z1, axisbar);
  simc_adj_zcol(m1bar, z1bar);
  simc_adj_mattvec(m2bar, tmpbar, mat2, tmp, posbar);
  simc_adj_acc3(p1bar, tmpbar, 1);
  simc_adj_acc3(p2bar, tmpbar, -1);
}

// ---- box : box ----

// rot = mat1' mat2: mat1bar += mat2 rotbar', mat2bar += mat1 rotbar
SIM_FN void simc_adj_rot12(sim_real* m1bar, sim_real* m2bar, const sim_real* mat1, const sim_real* mat2,
                           const sim_real rotbar[9]) {
  for (int k = 0; k < 3; k++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) {
        m1bar[3 * k + r] += rotbar[3 * r + c] * mat2[3 * k + c];
        m2bar[3 * k + c] += mat1[3 * k + r] * rotbar[3 * r + c];
      }
}

// face contact kidx of reference face code (0..5): the accepted clipped vertex vv (reference-face frame:
// in-plane x, y and height z) is rebuilt from the incident face's corners through the recorded cuts.
SIM_FN void simc_adj_box_face(const SimcBoxTape* tp, int code, int kidx, const sim_real* pos1, const sim_real* mat1,
                              const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                              const sim_real* size2, const sim_real rot[9], const sim_real pos21[3],
                              const sim_real pos12[3], sim_real dist_bar, const sim_real pos_bar[3],
                              const sim_real frame_bar[9], sim_real g_bar[24]) {
  int ref1 = code < 3, a = ref1 ? code : code - 3;
  const sim_real* sizeref = ref1 ? size1 : size2;
  const sim_real* sizeinc = ref1 ? size2 : size1;
  const sim_real* matref = ref1 ? mat1 : mat2;
  const sim_real* posoi = ref1 ? pos21 : pos12;
  sim_real rinc[9];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) rinc[3 * r + c] = ref1 ? rot[3 * r + c] : rot[3 * c + r];
  sim_real sgn = tp->sgn, tinc = tp->tinc;
  int binc = tp->binc, ax = (a + 1) % 3, ay = (a + 2) % 3, bu = (binc + 1) % 3, bv = (binc + 2) % 3;
  int cidx[3] = {ax, ay, a};

  // forward along the recorded construction
  sim_real poly[5][SIMC_BOX_MAXVERT][3], cx[3], du[3], dv[3];
  for (int r = 0; r < 3; r++) {
    int c = cidx[r];
    cx[r] = posoi[c] + tinc * sizeinc[binc] * rinc[3 * c + binc];
    du[r] = sizeinc[bu] * rinc[3 * c + bu];
    dv[r] = sizeinc[bv] * rinc[3 * c + bv];
  }
  cx[2] = sgn * cx[2] - sizeref[a];
  du[2] *= sgn;
  dv[2] *= sgn;
  const sim_real corner_sign[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
  for (int k = 0; k < 4; k++)
    for (int r = 0; r < 3; r++) poly[0][k][r] = cx[r] + corner_sign[k][0] * du[r] + corner_sign[k][1] * dv[r];
  for (int st = 0; st < 4; st++) {
    int coord = st / 2;
    sim_real sign = (st % 2) ? -1 : 1, limit = coord ? sizeref[ay] : sizeref[ax];
    for (int q = 0; q < tp->nvert[st + 1]; q++) {
      int p0 = tp->src[st][q][0], p1 = tp->src[st][q][1];
      const sim_real* P = poly[st][p0];
      if (p1 < 0) {
        simu_copy3(poly[st + 1][q], P);
      } else {
        const sim_real* Q = poly[st][p1];
        sim_real dp = sign * P[coord] - limit, dq = sign * Q[coord] - limit, t = dp / (dp - dq);
        for (int r = 0; r < 3; r++) poly[st + 1][q][r] = P[r] + t * (Q[r] - P[r]);
      }
    }
  }
  int vi = tp->accept[kidx];
  const sim_real* vv = poly[4][vi];
  sim_real posc[3], normal[3], nsign = ref1 ? sgn : -sgn;
  posc[ax] = vv[0];
  posc[ay] = vv[1];
  posc[a] = sgn * (sizeref[a] + (sim_real)0.5 * vv[2]);
  for (int r = 0; r < 3; r++) normal[r] = nsign * matref[3 * r + a];

  // reverse: frame, then pos = matref posc + posref, dist = vv_z, normal = nsign matref column a
  sim_real* mrefbar = g_bar + (ref1 ? SIMC_ADJ_M1 : SIMC_ADJ_M2);
  sim_real* prefbar = g_bar + (ref1 ? SIMC_ADJ_P1 : SIMC_ADJ_P2);
  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0}, poscbar[3] = {0, 0, 0};
  simc_adj_make_frame(normal, zero, frame_bar, nbar, tbar);
  for (int r = 0; r < 3; r++) mrefbar[3 * r + a] += nsign * nbar[r];
  simc_adj_matvec(mrefbar, poscbar, matref, posc, pos_bar);
  simc_adj_acc3(prefbar, pos_bar, 1);
  sim_real bar[2][SIMC_BOX_MAXVERT][3];  // cotangents of the vertices after (cur) and before (prev) a stage
  sim_real (*bcur)[3] = bar[0];
  sim_real (*bprev)[3] = bar[1];
  for (int q = 0; q < tp->nvert[4]; q++) simu_zero3(bcur[q]);
  bcur[vi][0] = poscbar[ax];
  bcur[vi][1] = poscbar[ay];
  bcur[vi][2] = (sim_real)0.5 * sgn * poscbar[a] + dist_bar;
  for (int st = 3; st >= 0; st--) {
    int coord = st / 2;
    sim_real sign = (st % 2) ? -1 : 1, limit = coord ? sizeref[ay] : sizeref[ax];
    for (int q = 0; q < tp->nvert[st]; q++) simu_zero3(bprev[q]);
    for (int q = 0; q < tp->nvert[st + 1]; q++) {
      int p0 = tp->src[st][q][0], p1 = tp->src[st][q][1];
      if (p1 < 0) {
        simc_adj_acc3(bprev[p0], bcur[q], 1);
      } else {
        // v = P + t (Q - P), t = dp/(dp - dq), dp = sign P_coord - limit, dq = sign Q_coord - limit
        const sim_real* P = poly[st][p0];
        const sim_real* Q = poly[st][p1];
        sim_real dp = sign * P[coord] - limit, dq = sign * Q[coord] - limit, den = dp - dq, t = dp / den;
        sim_real tb = bcur[q][0] * (Q[0] - P[0]) + bcur[q][1] * (Q[1] - P[1]) + bcur[q][2] * (Q[2] - P[2]);
        simc_adj_acc3(bprev[p0], bcur[q], 1 - t);
        simc_adj_acc3(bprev[p1], bcur[q], t);
        bprev[p0][coord] += sign * tb * (-dq / den / den);
        bprev[p1][coord] += sign * tb * (dp / den / den);
      }
    }
    sim_real (*sw)[3] = bcur;
    bcur = bprev;
    bprev = sw;
  }
  // corners: poly0_k = cx + su_k du + sv_k dv
  sim_real cxbar[3] = {0, 0, 0}, dubar[3] = {0, 0, 0}, dvbar[3] = {0, 0, 0};
  for (int k = 0; k < 4; k++) {
    simc_adj_acc3(cxbar, bcur[k], 1);
    simc_adj_acc3(dubar, bcur[k], corner_sign[k][0]);
    simc_adj_acc3(dvbar, bcur[k], corner_sign[k][1]);
  }
  cxbar[2] *= sgn;
  dubar[2] *= sgn;
  dvbar[2] *= sgn;
  sim_real rincbar[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, posoibar[3] = {0, 0, 0};
  for (int r = 0; r < 3; r++) {
    int c = cidx[r];
    posoibar[c] += cxbar[r];
    rincbar[3 * c + binc] += tinc * sizeinc[binc] * cxbar[r];
    rincbar[3 * c + bu] += sizeinc[bu] * dubar[r];
    rincbar[3 * c + bv] += sizeinc[bv] * dvbar[r];
  }
  sim_real rotbar[9];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) rotbar[3 * r + c] = ref1 ? rincbar[3 * r + c] : rincbar[3 * c + r];
  simc_adj_rot12(g_bar + SIMC_ADJ_M1, g_bar + SIMC_ADJ_M2, mat1, mat2, rotbar);
  // posoi: pos21 = mat1' (pos2 - pos1) or pos12 = mat2' (pos1 - pos2)
  sim_real dif[3], difbar[3] = {0, 0, 0};
  if (ref1) {
    simu_sub3(dif, pos2, pos1);
    simc_adj_mattvec(g_bar + SIMC_ADJ_M1, difbar, mat1, dif, posoibar);
    simc_adj_acc3(g_bar + SIMC_ADJ_P2, difbar, 1);
    simc_adj_acc3(g_bar + SIMC_ADJ_P1, difbar, -1);
  } else {
    simu_sub3(dif, pos1, pos2);
    simc_adj_mattvec(g_bar + SIMC_ADJ_M2, difbar, mat2, dif, posoibar);
    simc_adj_acc3(g_bar + SIMC_ADJ_P1, difbar, 1);
    simc_adj_acc3(g_bar + SIMC_ADJ_P2, difbar, -1);
  }
}

// edge-edge contact of edge axis code (6..14): closest points of the supporting edges (box-1 frame),
// p1 = c1 + s e_i, p2 = c2 + t d2 (c2 = rot cc + pos21, d2 = rot column j), with the recorded clamps;
// dist = (p2 - p1).axis, pos = mat1 (p1 + p2)/2 + pos1, normal = mat1 axis, axis = flip normalize(raw).
SIM_FN void simc_adj_box_edge(const SimcBoxTape* tp, int code, const sim_real* pos1, const sim_real* mat1,
                              const sim_real* size1, const sim_real* pos2, const sim_real* size2,
                              const sim_real rot[9], const sim_real pos21[3], sim_real dist_bar,
                              const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24],
                              sim_real rotbar[9], sim_real pos21bar[3]) {
  int i = (code - 6) / 3, j = (code - 6) % 3, i1 = (i + 1) % 3, i2 = (i + 2) % 3;
  sim_real raw[3], au[3], axis[3], d2[3], c2[3], e[3];
  raw[i] = 0;
  raw[i1] = -rot[3 * i2 + j];
  raw[i2] = rot[3 * i1 + j];
  simu_copy3(au, raw);
  sim_real nr = simu_normalize3(au);
  simu_scl3(axis, au, tp->flip);
  for (int r = 0; r < 3; r++) d2[r] = rot[3 * r + j];
  sim_real b = d2[i], denom = 1 - b * b;
  simu_mulMatVec3(c2, rot, tp->cc);
  simu_add3(c2, c2, pos21);
  simu_sub3(e, c2, tp->c1);
  sim_real d1e = e[i], d2e = simu_dot3(d2, e);
  sim_real s0 = tp->denom_ok ? (d1e - b * d2e) / denom : 0;
  sim_real sc = tp->s0free ? s0 : simc_clip(s0, -size1[i], size1[i]);
  sim_real t0 = b * sc - d2e;
  sim_real t = tp->tfree ? t0 : simc_clip(t0, -size2[j], size2[j]);
  sim_real s1r = d1e + b * t;
  sim_real s = tp->sfree ? s1r : simc_clip(s1r, -size1[i], size1[i]);
  sim_real p1[3], p2[3], gp[3], mid[3], normal[3];
  simu_copy3(p1, tp->c1);
  p1[i] += s;
  simu_copy3(p2, c2);
  simc_adj_acc3(p2, d2, t);
  simu_sub3(gp, p2, p1);
  for (int r = 0; r < 3; r++) mid[r] = (sim_real)0.5 * (p1[r] + p2[r]);
  simu_mulMatVec3(normal, mat1, axis);

  // reverse
  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar3[3] = {0, 0, 0}, axisbar[3] = {0, 0, 0}, midbar[3] = {0, 0, 0};
  simc_adj_make_frame(normal, zero, frame_bar, nbar, tbar3);
  simc_adj_matvec(g_bar + SIMC_ADJ_M1, axisbar, mat1, axis, nbar);
  simc_adj_matvec(g_bar + SIMC_ADJ_M1, midbar, mat1, mid, pos_bar);
  simc_adj_acc3(g_bar + SIMC_ADJ_P1, pos_bar, 1);
  simc_adj_acc3(axisbar, gp, dist_bar);
  sim_real p1bar[3], p2bar[3];
  for (int r = 0; r < 3; r++) {
    p1bar[r] = (sim_real)0.5 * midbar[r] - dist_bar * axis[r];
    p2bar[r] = (sim_real)0.5 * midbar[r] + dist_bar * axis[r];
  }
  sim_real c2bar[3] = {0, 0, 0}, d2bar[3] = {0, 0, 0}, ebar[3] = {0, 0, 0};
  simc_adj_acc3(c2bar, p2bar, 1);
  sim_real tb = simu_dot3(d2, p2bar), sbar = p1bar[i];
  simc_adj_acc3(d2bar, p2bar, t);
  sim_real d1ebar = 0, d2ebar = 0, bbar = 0, scbar = 0;
  if (tp->sfree) d1ebar += sbar, bbar += t * sbar, tb += b * sbar;  // s = d1e + b t
  if (tp->tfree) bbar += sc * tb, scbar += b * tb, d2ebar -= tb;    // t = b sc - d2e
  if (tp->s0free && tp->denom_ok) {                                 // sc = (d1e - b d2e)/denom
    sim_real nb = scbar / denom;
    d1ebar += nb;
    bbar -= d2e * nb;
    d2ebar -= b * nb;
    bbar += 2 * b * s0 * nb;  // denom = 1 - b^2: denom-bar = -s0 nb
  }
  ebar[i] += d1ebar;
  simc_adj_acc3(ebar, d2, d2ebar);
  simc_adj_acc3(d2bar, e, d2ebar);
  d2bar[i] += bbar;
  simc_adj_acc3(c2bar, ebar, 1);
  // c2 = rot cc + pos21, d2 = rot column j
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < 3; c++) rotbar[3 * r + c] += c2bar[r] * tp->cc[c];
    rotbar[3 * r + j] += d2bar[r];
  }
  simc_adj_acc3(pos21bar, c2bar, 1);
  // axis = flip raw/|raw|, raw_i1 = -rot[i2][j], raw_i2 = rot[i1][j]
  sim_real aubar[3], rawbar[3] = {0, 0, 0};
  simu_scl3(aubar, axisbar, tp->flip);
  simc_adj_normalize(rawbar, au, nr, aubar);
  rotbar[3 * i2 + j] -= rawbar[i1];
  rotbar[3 * i1 + j] += rawbar[i2];
  (void)pos2;
}

SIM_FN void simc_adj_pair_box_box(sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                  const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                  const sim_real* size2, int witness, sim_real dist_bar, const sim_real pos_bar[3],
                                  const sim_real frame_bar[9], sim_real g_bar[24]) {
  SimPreContact con[8];
  SimcBoxTape tp;
  int n = simc_box_box_rec(con, margin, pos1, mat1, size1, pos2, mat2, size2, &tp);
  int found = 0;
  for (int k = 0; k < n; k++) found |= con[k].witness == witness;
  if (!found) return;  // not this state's contact: no cotangent
  sim_real rot[9], pos21[3], pos12[3], tmp[3];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) rot[3 * r + c] = mat1[r] * mat2[c] + mat1[3 + r] * mat2[3 + c] + mat1[6 + r] * mat2[6 + c];
  simu_sub3(tmp, pos2, pos1);
  simu_mulMatTVec3(pos21, mat1, tmp);
  simu_sub3(tmp, pos1, pos2);
  simu_mulMatTVec3(pos12, mat2, tmp);
  if (witness < 1000) {
    simc_adj_box_face(&tp, witness / 100, witness % 100, pos1, mat1, size1, pos2, mat2, size2, rot, pos21, pos12,
                      dist_bar, pos_bar, frame_bar, g_bar);
    return;
  }
  sim_real rotbar[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, pos21bar[3] = {0, 0, 0}, difbar[3] = {0, 0, 0};
  simc_adj_box_edge(&tp, 6 + (witness - 1000) / 4, pos1, mat1, size1, pos2, size2, rot, pos21, dist_bar, pos_bar,
                    frame_bar, g_bar, rotbar, pos21bar);
  simc_adj_rot12(g_bar + SIMC_ADJ_M1, g_bar + SIMC_ADJ_M2, mat1, mat2, rotbar);
  // pos21 = mat1' (pos2 - pos1)
  simu_sub3(tmp, pos2, pos1);
  simc_adj_mattvec(g_bar + SIMC_ADJ_M1, difbar, mat1, tmp, pos21bar);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, difbar, 1);
  simc_adj_acc3(g_bar + SIMC_ADJ_P1, difbar, -1);
}
