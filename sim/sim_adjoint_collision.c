// sim_adjoint_collision.c: reverse mode (VJP) of the contact geometry, one contact at a time, with the
// discrete branch that produced it frozen (contact_witness, sim_collision.h). Each VJP recomputes its pair's
// narrow phase from d->geom_xpos / d->geom_xmat (the forward state of this evaluation), then runs the chain
// backwards by hand: contact frame (simc_make_frame) -> (normal, tangent hint), then the primitive's
// (dist, pos, normal, tangent) as a function of (pos1, mat1, pos2, mat2) with sizes and margins constant.
//
// Matrix cotangents are plain derivatives w.r.t. every entry of the full 3x3 that the forward formula reads
// (the kinematics adjoint projects them onto rotations: simu_adj_frame_torque). Everything here is one lane
// per contact, plain loops, writing nothing but the caller's g_bar. Divisions follow the forward's own
// guards: where the forward divides by a norm or a determinant, the VJP divides by the same quantity.
//
// Cotangent layout of one pair (g_bar, 24): pos1 (3), mat1 (9, row-major), pos2 (3), mat2 (9).
// Included from sim_adjoint.c (so it sits in the engine's one translation unit, after sim_collision.c).
#include "sim_model.h"
#include "sim_math.h"

#define SIMC_ADJ_P1 0
#define SIMC_ADJ_M1 3
#define SIMC_ADJ_P2 12
#define SIMC_ADJ_M2 15

// ---- small reverse-mode helpers ----

// r += s a
SIM_FN void simc_adj_acc3(sim_real r[3], const sim_real a[3], sim_real s) {
  r[0] += s * a[0];
  r[1] += s * a[1];
  r[2] += s * a[2];
}

// cotangent of the z column (mat[2], mat[5], mat[8]) of a row-major matrix
SIM_FN void simc_adj_zcol(sim_real mbar[9], const sim_real abar[3]) {
  mbar[2] += abar[0];
  mbar[5] += abar[1];
  mbar[8] += abar[2];
}

// x = v/|v| (unit x, norm = |v| > 0): vbar += (xbar - x (x.xbar)) / norm
SIM_FN void simc_adj_normalize(sim_real vbar[3], const sim_real x[3], sim_real norm, const sim_real xbar[3]) {
  sim_real s = simu_dot3(x, xbar), inv = 1 / norm;
  for (int i = 0; i < 3; i++) vbar[i] += (xbar[i] - x[i] * s) * inv;
}

// r = a x b: abar += b x rbar, bbar += rbar x a
SIM_FN void simc_adj_cross(sim_real abar[3], sim_real bbar[3], const sim_real a[3], const sim_real b[3],
                           const sim_real rbar[3]) {
  sim_real t[3];
  simu_cross(t, b, rbar);
  simu_add3(abar, abar, t);
  simu_cross(t, rbar, a);
  simu_add3(bbar, bbar, t);
}

// r = M a (row-major): Mbar += rbar a', abar += M' rbar
SIM_FN void simc_adj_matvec(sim_real Mbar[9], sim_real abar[3], const sim_real M[9], const sim_real a[3],
                            const sim_real rbar[3]) {
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) Mbar[3 * r + c] += rbar[r] * a[c];
  sim_real t[3];
  simu_mulMatTVec3(t, M, rbar);
  simu_add3(abar, abar, t);
}

// r = M' a (row-major): Mbar += a rbar', abar += M rbar
SIM_FN void simc_adj_mattvec(sim_real Mbar[9], sim_real abar[3], const sim_real M[9], const sim_real a[3],
                             const sim_real rbar[3]) {
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) Mbar[3 * r + c] += a[r] * rbar[c];
  sim_real t[3];
  simu_mulMatVec3(t, M, rbar);
  simu_add3(abar, abar, t);
}

// ---- contact frame (mju_makeFrame) ----

// VJP of simc_make_frame: frame = F(normal, hint). Recomputes the forward's branch (hint used when
// |hint|^2 >= 0.25, else the default y or z axis by |x_y| < 0.5; y projection norm below MINVAL gives the
// constant (1,0,0)). Adds to nbar (normal) and tbar (hint; untouched when the default is used).
SIM_FN void simc_adj_make_frame(const sim_real normal[3], const sim_real hint[3], const sim_real frame_bar[9],
                                sim_real nbar[3], sim_real tbar[3]) {
  // forward, keeping intermediates: x = n/|n|, y0 = hint or default, y1 = y0 - x (x.y0), y = y1/|y1|, z = x X y
  sim_real x[3], y0[3], y[3], tmp[3];
  simu_copy3(x, normal);
  sim_real nn = simu_normalize3(x);
  int use_hint = simu_dot3(hint, hint) >= (sim_real)0.25;
  if (use_hint) {
    simu_copy3(y0, hint);
  } else {
    simu_zero3(y0);
    if (x[1] < (sim_real)0.5 && x[1] > (sim_real)-0.5) y0[1] = 1;
    else y0[2] = 1;
  }
  sim_real s = simu_dot3(x, y0);
  simu_scl3(tmp, x, s);
  simu_sub3(y, y0, tmp);
  sim_real ny = simu_normalize3(y);

  // reverse
  sim_real xbar[3], ybar[3], y1bar[3] = {0, 0, 0};
  simu_copy3(xbar, frame_bar);
  simu_copy3(ybar, frame_bar + 3);
  simc_adj_cross(xbar, ybar, x, y, frame_bar + 6);      // z = x X y
  if (ny >= (sim_real)SIM_MINVAL) simc_adj_normalize(y1bar, y, ny, ybar);  // else y constant
  sim_real xy1 = simu_dot3(x, y1bar);                  // y1 = y0 - x (x.y0)
  simc_adj_acc3(xbar, y1bar, -s);
  simc_adj_acc3(xbar, y0, -xy1);
  if (use_hint) {
    simc_adj_acc3(tbar, y1bar, 1);
    simc_adj_acc3(tbar, x, -xy1);
  }
  if (nn >= (sim_real)SIM_MINVAL) simc_adj_normalize(nbar, x, nn, xbar);
}

// ---- plane ----

// plane-sphere at sphere centre c (radius r): dist = n.(c - p1) - r, pos = c - n (dist/2 + r), n = plane z.
// Adds to p1bar, m1bar (plane) and cbar (centre).
SIM_FN void simc_adj_plane_sphere(const sim_real* pos1, const sim_real* mat1, const sim_real* c, sim_real r,
                                  sim_real dist_bar, const sim_real pos_bar[3], const sim_real nbar_in[3],
                                  sim_real* p1bar, sim_real* m1bar, sim_real* cbar) {
  sim_real n[3] = {mat1[2], mat1[5], mat1[8]}, dif[3], nbar[3];
  simu_sub3(dif, c, pos1);
  sim_real dist = simu_dot3(dif, n) - r;
  // pos = c - n (dist/2 + r)
  simu_copy3(nbar, nbar_in);
  simc_adj_acc3(nbar, pos_bar, -(dist / 2 + r));
  sim_real db = dist_bar - simu_dot3(n, pos_bar) / 2;
  simc_adj_acc3(cbar, pos_bar, 1);
  // dist = n.(c - p1) - r
  simc_adj_acc3(cbar, n, db);
  simc_adj_acc3(p1bar, n, -db);
  simc_adj_acc3(nbar, dif, db);
  simc_adj_zcol(m1bar, nbar);
}

SIM_FN void simc_adj_pair_plane_sphere(const sim_real* pos1, const sim_real* mat1, const sim_real* pos2,
                                       sim_real radius, sim_real dist_bar, const sim_real pos_bar[3],
                                       const sim_real frame_bar[9], sim_real g_bar[24]) {
  sim_real n[3] = {mat1[2], mat1[5], mat1[8]}, zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  simc_adj_plane_sphere(pos1, mat1, pos2, radius, dist_bar, pos_bar, nbar, g_bar + SIMC_ADJ_P1, g_bar + SIMC_ADJ_M1,
                        g_bar + SIMC_ADJ_P2);
}

// plane-capsule: end sphere c = pos2 + e halflen axis (e = +1 witness 0, -1 witness 1), hint = axis (z of mat2)
SIM_FN void simc_adj_pair_plane_capsule(const sim_real* pos1, const sim_real* mat1, const sim_real* pos2,
                                        const sim_real* mat2, const sim_real* size2, int witness,
                                        sim_real dist_bar, const sim_real pos_bar[3], const sim_real frame_bar[9],
                                        sim_real g_bar[24]) {
  sim_real n[3] = {mat1[2], mat1[5], mat1[8]}, axis[3] = {mat2[2], mat2[5], mat2[8]};
  sim_real nbar[3] = {0, 0, 0}, abar[3] = {0, 0, 0}, cbar[3] = {0, 0, 0}, c[3], seg[3];
  sim_real e = witness ? -1 : 1;
  simu_scl3(seg, axis, size2[1]);
  if (witness) simu_sub3(c, pos2, seg);
  else simu_add3(c, pos2, seg);
  simc_adj_make_frame(n, axis, frame_bar, nbar, abar);
  simc_adj_plane_sphere(pos1, mat1, c, size2[0], dist_bar, pos_bar, nbar, g_bar + SIMC_ADJ_P1, g_bar + SIMC_ADJ_M1,
                        cbar);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, cbar, 1);
  simc_adj_acc3(abar, cbar, e * size2[1]);
  simc_adj_zcol(g_bar + SIMC_ADJ_M2, abar);
}

// ---- sphere and capsule ----

// sphere-sphere between centres c1, c2 (witness ss: 0 normal along c2 - c1, 1 coincident: normal from
// z1 X z2 of mat1, mat2). Takes the normal's cotangent (after the frame VJP); adds to c1bar, c2bar, m1bar, m2bar.
SIM_FN void simc_adj_sphere_sphere(const sim_real* c1, const sim_real* mat1, sim_real r1, const sim_real* c2,
                                   const sim_real* mat2, sim_real r2, int ss, sim_real dist_bar,
                                   const sim_real pos_bar[3], const sim_real nbar_in[3], sim_real* c1bar,
                                   sim_real* m1bar, sim_real* c2bar, sim_real* m2bar) {
  // forward: q = c2 - c1, len = |q|, dist = len - r1 - r2, n = q/len (or normalize(z1 X z2)),
  // pos = c1 + n (r1 + dist/2)
  sim_real q[3], n[3], nbar[3];
  simu_sub3(q, c2, c1);
  simu_copy3(n, q);
  sim_real len = simu_normalize3(n);
  sim_real dist = len - r1 - r2;
  sim_real a1[3] = {mat1[2], mat1[5], mat1[8]}, a2[3] = {mat2[2], mat2[5], mat2[8]}, cr[3];
  sim_real lcr = 0;
  if (ss) {
    simu_cross(cr, a1, a2);
    simu_copy3(n, cr);
    lcr = simu_normalize3(n);
  }
  // reverse of pos
  simu_copy3(nbar, nbar_in);
  simc_adj_acc3(nbar, pos_bar, r1 + dist / 2);
  sim_real db = dist_bar + simu_dot3(n, pos_bar) / 2;
  simc_adj_acc3(c1bar, pos_bar, 1);
  sim_real qbar[3] = {0, 0, 0};
  if (!ss) {
    // dist = |q| - r1 - r2 and n = q/|q| (len >= MINVAL on this branch)
    simc_adj_acc3(qbar, n, db);
    simc_adj_normalize(qbar, n, len, nbar);
  } else {
    // coincident centres: dist through |q| only where it is differentiable (q != 0), n = normalize(z1 X z2)
    if (len > 0) simc_adj_acc3(qbar, q, db / len);
    if (lcr >= (sim_real)SIM_MINVAL) {
      sim_real crbar[3] = {0, 0, 0}, a1bar[3] = {0, 0, 0}, a2bar[3] = {0, 0, 0};
      simc_adj_normalize(crbar, n, lcr, nbar);
      simc_adj_cross(a1bar, a2bar, a1, a2, crbar);
      simc_adj_zcol(m1bar, a1bar);
      simc_adj_zcol(m2bar, a2bar);
    }
  }
  simc_adj_acc3(c2bar, qbar, 1);
  simc_adj_acc3(c1bar, qbar, -1);
}

// the normal of sphere-sphere (needed before the frame VJP)
SIM_FN void simc_adj_sphere_normal(sim_real n[3], const sim_real* c1, const sim_real* mat1, const sim_real* c2,
                                   const sim_real* mat2, int ss) {
  if (ss) {
    sim_real a1[3] = {mat1[2], mat1[5], mat1[8]}, a2[3] = {mat2[2], mat2[5], mat2[8]};
    simu_cross(n, a1, a2);
  } else {
    simu_sub3(n, c2, c1);
  }
  simu_normalize3(n);
}

SIM_FN void simc_adj_pair_sphere_sphere(const sim_real* pos1, const sim_real* mat1, sim_real r1,
                                        const sim_real* pos2, const sim_real* mat2, sim_real r2, int witness,
                                        sim_real dist_bar, const sim_real pos_bar[3], const sim_real frame_bar[9],
                                        sim_real g_bar[24]) {
  sim_real n[3], zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  simc_adj_sphere_normal(n, pos1, mat1, pos2, mat2, witness % 10);
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  simc_adj_sphere_sphere(pos1, mat1, r1, pos2, mat2, r2, witness % 10, dist_bar, pos_bar, nbar, g_bar + SIMC_ADJ_P1,
                         g_bar + SIMC_ADJ_M1, g_bar + SIMC_ADJ_P2, g_bar + SIMC_ADJ_M2);
}

// sphere-capsule: capsule point c = pos2 + axis x, x = axis.(pos1 - pos2) (clamp 0) or +-halflen (1, 2)
SIM_FN void simc_adj_pair_sphere_capsule(const sim_real* pos1, const sim_real* mat1, sim_real r1,
                                         const sim_real* pos2, const sim_real* mat2, const sim_real* size2,
                                         int witness, sim_real dist_bar, const sim_real pos_bar[3],
                                         const sim_real frame_bar[9], sim_real g_bar[24]) {
  int clamp = witness / 10, ss = witness % 10;
  sim_real len = size2[1];
  sim_real axis[3] = {mat2[2], mat2[5], mat2[8]};
  sim_real vec[3] = {pos1[0] - pos2[0], pos1[1] - pos2[1], pos1[2] - pos2[2]};
  sim_real x = clamp == 1 ? len : (clamp == 2 ? -len : simu_dot3(axis, vec));
  sim_real c[3], n[3];
  simu_scl3(c, axis, x);
  simu_add3(c, c, pos2);
  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0}, cbar[3] = {0, 0, 0}, abar[3] = {0, 0, 0};
  simc_adj_sphere_normal(n, pos1, mat1, c, mat2, ss);
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  sim_real* p1bar = g_bar + SIMC_ADJ_P1;
  sim_real* p2bar = g_bar + SIMC_ADJ_P2;
  simc_adj_sphere_sphere(pos1, mat1, r1, c, mat2, size2[0], ss, dist_bar, pos_bar, nbar, p1bar, g_bar + SIMC_ADJ_M1,
                         cbar, g_bar + SIMC_ADJ_M2);
  // c = pos2 + axis x
  simc_adj_acc3(p2bar, cbar, 1);
  simc_adj_acc3(abar, cbar, x);
  if (clamp == 0) {  // x = axis.(pos1 - pos2)
    sim_real xbar = simu_dot3(axis, cbar);
    simc_adj_acc3(abar, vec, xbar);
    simc_adj_acc3(p1bar, axis, xbar);
    simc_adj_acc3(p2bar, axis, -xbar);
  }
  simc_adj_zcol(g_bar + SIMC_ADJ_M2, abar);
}

// capsule-capsule segment parameters (x1, x2) of the frozen branch, with their cotangent map.
// Inputs of the parameters: the scalars ma = A1.A1, mb = -A1.A2, mc = A2.A2, u = -A1.dif, v = A2.dif
// (A = halflen * axis, dif = pos1 - pos2). Branch (c1, c2) as in the witness (0 free, 1 at +1, 2 at -1);
// parallel ends: k = 0..3 (x1 = +1, x1 = -1, x2 = +1, x2 = -1, the other clipped).
typedef struct {
  sim_real ma, mb, mc, u, v, det;
} SimcCapcapScalars;

// forward of (x1, x2) for the non-parallel branch (c1, c2)
SIM_FN void simc_capcap_params(const SimcCapcapScalars* s, int c1, int c2, sim_real* x1, sim_real* x2) {
  if (c2 == 0) {
    if (c1 == 0) {
      *x1 = (s->mc * s->u - s->mb * s->v) / s->det;
      *x2 = (s->ma * s->v - s->mb * s->u) / s->det;
    } else if (c1 == 1) {
      *x1 = 1;
      *x2 = (s->v - s->mb) / s->mc;
    } else {
      *x1 = -1;
      *x2 = (s->v + s->mb) / s->mc;
    }
  } else {
    *x2 = c2 == 1 ? 1 : -1;
    sim_real t = c2 == 1 ? (s->u - s->mb) / s->ma : (s->u + s->mb) / s->ma;
    *x1 = c1 == 0 ? t : (c1 == 1 ? 1 : -1);
  }
}

// cotangents of (ma, mb, mc, u, v) from (x1bar, x2bar) on the non-parallel branch (c1, c2)
SIM_FN void simc_capcap_params_adj(const SimcCapcapScalars* s, int c1, int c2, sim_real x1bar, sim_real x2bar,
                                   sim_real sb[5]) {
  sim_real ma = s->ma, mb = s->mb, mc = s->mc, u = s->u, v = s->v, det = s->det;
  if (c2 == 0 && c1 == 0) {
    // x1 = (mc u - mb v)/det, x2 = (ma v - mb u)/det, det = ma mc - mb^2
    sim_real x1 = (mc * u - mb * v) / det, x2 = (ma * v - mb * u) / det;
    sim_real n1 = x1bar / det, n2 = x2bar / det;
    sim_real detbar = -(n1 * x1 + n2 * x2);
    sb[0] += n2 * v + detbar * mc;
    sb[1] += -n1 * v - n2 * u - 2 * mb * detbar;
    sb[2] += n1 * u + detbar * ma;
    sb[3] += n1 * mc - n2 * mb;
    sb[4] += -n1 * mb + n2 * ma;
  } else if (c2 == 0) {
    // x2 = (v -+ mb)/mc
    sim_real sg = c1 == 1 ? -1 : 1;
    sim_real x2 = (v + sg * mb) / mc;
    sim_real n2 = x2bar / mc;
    sb[4] += n2;
    sb[1] += sg * n2;
    sb[2] += -n2 * x2;
  } else if (c1 == 0) {
    // x1 = (u -+ mb)/ma
    sim_real sg = c2 == 1 ? -1 : 1;
    sim_real x1 = (u + sg * mb) / ma;
    sim_real n1 = x1bar / ma;
    sb[3] += n1;
    sb[1] += sg * n1;
    sb[0] += -n1 * x1;
  }
}

SIM_FN void simc_adj_pair_capsule_capsule(const sim_real* pos1, const sim_real* mat1, const sim_real* size1,
                                          const sim_real* pos2, const sim_real* mat2, const sim_real* size2,
                                          int witness, sim_real dist_bar, const sim_real pos_bar[3],
                                          const sim_real frame_bar[9], sim_real g_bar[24]) {
  sim_real h1 = size1[1], h2 = size2[1];
  sim_real A1[3] = {mat1[2] * h1, mat1[5] * h1, mat1[8] * h1};
  sim_real A2[3] = {mat2[2] * h2, mat2[5] * h2, mat2[8] * h2};
  sim_real dif[3] = {pos1[0] - pos2[0], pos1[1] - pos2[1], pos1[2] - pos2[2]};
  SimcCapcapScalars s;
  s.ma = simu_dot3(A1, A1);
  s.mb = -simu_dot3(A1, A2);
  s.mc = simu_dot3(A2, A2);
  s.u = -simu_dot3(A1, dif);
  s.v = simu_dot3(A2, dif);
  s.det = s.ma * s.mc - s.mb * s.mb;
  int ss = witness % 10;
  sim_real x1, x2;
  // clip states of the parallel branch: which parameter is computed (free: 0/1 = clipped), which fixed
  int par = witness >= 100, k = (witness / 10) % 10, c1 = 0, c2 = 0, fixed1 = 0, clipped = 0;
  if (!par) {
    c1 = (witness / 10) / 3;
    c2 = (witness / 10) % 3;
    simc_capcap_params(&s, c1, c2, &x1, &x2);
  } else {
    // as the forward: k 0/1 fix x1 = +-1 and clip x2 = (v -+ mb)/mc; k 2/3 fix x2 = +-1, clip x1 = (u -+ mb)/ma
    fixed1 = k < 2;
    sim_real e = (k % 2) ? -1 : 1;
    if (fixed1) {
      x1 = e;
      sim_real t = k == 0 ? (s.v - s.mb) / s.mc : (s.v + s.mb) / s.mc;
      x2 = simc_clip(t, -1, 1);
      clipped = t != x2;
    } else {
      x2 = e;
      sim_real t = k == 2 ? (s.u - s.mb) / s.ma : (s.u + s.mb) / s.ma;
      x1 = simc_clip(t, -1, 1);
      clipped = t != x1;
    }
  }
  sim_real c1p[3], c2p[3], n[3];
  simu_scl3(c1p, A1, x1);
  simu_add3(c1p, c1p, pos1);
  simu_scl3(c2p, A2, x2);
  simu_add3(c2p, c2p, pos2);

  sim_real zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  sim_real c1bar[3] = {0, 0, 0}, c2bar[3] = {0, 0, 0}, A1bar[3] = {0, 0, 0}, A2bar[3] = {0, 0, 0};
  sim_real* p1bar = g_bar + SIMC_ADJ_P1;
  sim_real* p2bar = g_bar + SIMC_ADJ_P2;
  simc_adj_sphere_normal(n, c1p, mat1, c2p, mat2, ss);
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  simc_adj_sphere_sphere(c1p, mat1, size1[0], c2p, mat2, size2[0], ss, dist_bar, pos_bar, nbar, c1bar,
                         g_bar + SIMC_ADJ_M1, c2bar, g_bar + SIMC_ADJ_M2);
  // c1p = pos1 + A1 x1, c2p = pos2 + A2 x2
  simc_adj_acc3(p1bar, c1bar, 1);
  simc_adj_acc3(p2bar, c2bar, 1);
  simc_adj_acc3(A1bar, c1bar, x1);
  simc_adj_acc3(A2bar, c2bar, x2);
  sim_real x1bar = simu_dot3(A1, c1bar), x2bar = simu_dot3(A2, c2bar);
  sim_real sb[5] = {0, 0, 0, 0, 0};  // ma, mb, mc, u, v
  if (!par) {
    simc_capcap_params_adj(&s, c1, c2, x1bar, x2bar, sb);
  } else if (!clipped) {
    if (fixed1) {  // x2 = (v -+ mb)/mc
      sim_real sg = k == 0 ? -1 : 1, n2 = x2bar / s.mc;
      sb[4] += n2;
      sb[1] += sg * n2;
      sb[2] += -n2 * x2;
    } else {  // x1 = (u -+ mb)/ma
      sim_real sg = k == 2 ? -1 : 1, n1 = x1bar / s.ma;
      sb[3] += n1;
      sb[1] += sg * n1;
      sb[0] += -n1 * x1;
    }
  }
  // ma = A1.A1, mb = -A1.A2, mc = A2.A2, u = -A1.dif, v = A2.dif
  sim_real difbar[3] = {0, 0, 0};
  simc_adj_acc3(A1bar, A1, 2 * sb[0]);
  simc_adj_acc3(A1bar, A2, -sb[1]);
  simc_adj_acc3(A2bar, A1, -sb[1]);
  simc_adj_acc3(A2bar, A2, 2 * sb[2]);
  simc_adj_acc3(A1bar, dif, -sb[3]);
  simc_adj_acc3(difbar, A1, -sb[3]);
  simc_adj_acc3(A2bar, dif, sb[4]);
  simc_adj_acc3(difbar, A2, sb[4]);
  simc_adj_acc3(p1bar, difbar, 1);
  simc_adj_acc3(p2bar, difbar, -1);
  sim_real a1bar[3], a2bar[3];
  simu_scl3(a1bar, A1bar, h1);
  simu_scl3(a2bar, A2bar, h2);
  simc_adj_zcol(g_bar + SIMC_ADJ_M1, a1bar);
  simc_adj_zcol(g_bar + SIMC_ADJ_M2, a2bar);
}

#include "sim_adjoint_collision_box.c"

// VJP of contact c's geometry with its discrete branch frozen (contact_witness[c]); recomputes the pair's
// narrow phase from d->geom_xpos / d->geom_xmat (the forward state of this evaluation).
// in:  dist_bar, pos_bar[3], frame_bar[9]: cotangents of contact_dist[c], contact_pos[c], contact_frame[c]
//      (frame rows as stored: normal, tangent1, tangent2)
// out: g_bar[24], overwritten: cotangents of geom_xpos[g1] (3), geom_xmat[g1] (9, row-major), geom_xpos[g2] (3),
//      geom_xmat[g2] (9), with g1 = contact_geom[2c], g2 = contact_geom[2c+1]
SIM_FN void simc_adj_contact(const SimModel* m, const SimWorld* d, int c, sim_real dist_bar,
                             const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  for (int i = 0; i < 24; i++) g_bar[i] = 0;
  int g1 = d->contact_geom[2 * c], g2 = d->contact_geom[2 * c + 1], w = d->contact_witness[c];
  int p = d->contact_pair[c];
  sim_real margin = m->pair_margin[p] + m->pair_gap[p];
  const sim_real *pos1 = d->geom_xpos + 3 * g1, *mat1 = d->geom_xmat + 9 * g1, *size1 = m->geom_size + 3 * g1;
  const sim_real *pos2 = d->geom_xpos + 3 * g2, *mat2 = d->geom_xmat + 9 * g2, *size2 = m->geom_size + 3 * g2;
  int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  if (t1 == SIM_GEOM_PLANE) {
    if (t2 == SIM_GEOM_SPHERE)
      simc_adj_pair_plane_sphere(pos1, mat1, pos2, size2[0], dist_bar, pos_bar, frame_bar, g_bar);
    else if (t2 == SIM_GEOM_CAPSULE)
      simc_adj_pair_plane_capsule(pos1, mat1, pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
    else if (t2 == SIM_GEOM_BOX)
      simc_adj_pair_plane_box(pos1, mat1, pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
  } else if (t1 == SIM_GEOM_SPHERE) {
    if (t2 == SIM_GEOM_SPHERE)
      simc_adj_pair_sphere_sphere(pos1, mat1, size1[0], pos2, mat2, size2[0], w, dist_bar, pos_bar, frame_bar, g_bar);
    else if (t2 == SIM_GEOM_CAPSULE)
      simc_adj_pair_sphere_capsule(pos1, mat1, size1[0], pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
    else if (t2 == SIM_GEOM_BOX)
      simc_adj_pair_sphere_box(pos1, size1[0], pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
  } else if (t1 == SIM_GEOM_CAPSULE) {
    if (t2 == SIM_GEOM_CAPSULE)
      simc_adj_pair_capsule_capsule(pos1, mat1, size1, pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
    else if (t2 == SIM_GEOM_BOX)
      simc_adj_pair_capsule_box(margin, pos1, mat1, size1, pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
  } else if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX) {
    simc_adj_pair_box_box(margin, pos1, mat1, size1, pos2, mat2, size2, w, dist_bar, pos_bar, frame_bar, g_bar);
  }
}
