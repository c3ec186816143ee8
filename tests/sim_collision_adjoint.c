// sim_collision_adjoint.c: the contact-geometry VJP (simc_adj_contact, sim/sim_adjoint_collision.c) against
// central differences of our own forward collision stage. For every primitive pair type, many random poses
// of the two geoms that produce contacts (planes tilted, capsules near-parallel and parallel, capsule ends,
// coincident sphere centres, spheres inside boxes, boxes face-on on planes and boxes, tilted boxes, edge-edge
// box contacts); for each contact random cotangents (dist, pos, frame) and random perturbations
// delta = (dp1, w1, dp2, w2) of the poses, rotations moved as R -> expm(eps [w]x) R (the matrix cotangent is
// paired with [w]x R). A perturbation whose + or - side changes the pair's contact count or the contact's
// witness is skipped and counted; so is one whose one-sided slopes disagree (a branch the witness does not
// encode flipped between the sides: a kink), also counted.
// Error of one comparison: |<g_bar, delta> - fd| / max(|fd|, 0.05 S), S = |g_eff| |delta| (Cauchy-Schwarz
// bound of the directional derivative, g_eff = position cotangents and frame torques).
// Sub-branches the witness does not name (box-box reference box, cut depth of the clipped vertex, edge-edge
// clamps; capsule-box first-point rule and second-point kind) are counted through the forward's tapes, and
// each must have been compared a minimum number of times. CADJ_VERBOSE=1 prints comparisons above the
// bounds, CADJ_KINK=<class index> the kinks of one class.
// Compiled twice: float64 (sim_collision_adjoint: eps 1e-6, per class median <= 1e-6, 99th percentile
// <= 1e-5, max <= 1e-4) and float32 (sim_collision_adjoint32: eps 3e-4 in float32 arithmetic, median <= 1e-3,
// 99th percentile <= 5e-2; the max is reported only: float32 differences of ill-conditioned poses are noise).
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_port.h"
#undef SIM_SFX
#ifdef SIM_DOUBLE
#define SIM_SFX(name) name##_cadj64
#else
#define SIM_SFX(name) name##_cadj32
#endif
#include "sim/sim_forward.c"
#include "sim/sim_common.h"
#include "tests/test.h"

#ifdef SIM_DOUBLE
#define PREC "float64"
#define EPS 1e-6
#define KINK_TOL 1e-2  // one-sided slopes this far apart (relative): a kink
#define KINK_FRAC 0.05  // at most this fraction of the comparisons
#define MED_TOL 1e-6
#define MAX_TOL 1e-4
#define P99_TOL 1e-5
#define MIN_SCALE 1.0  // minimum compared counts are this times the nominal ones
int sim_model_import_f64(const void* mjmodel, void** out, char* err, size_t errlen);
int sim_data_create_f64(const void* m, int nworld, void** out);
#define IMPORT sim_model_import_f64
#define CREATE sim_data_create_f64
#else
#define PREC "float32"
#define EPS 3e-4
#define KINK_TOL 0.1
#define KINK_FRAC 0.15  // float32: curvature of close poses at eps 3e-4
#define MED_TOL 1e-3
#define P99_TOL 5e-2
#define MAX_TOL 0.0  // not asserted: float32 FD of sensitive poses (near-parallel capsules) is noise
#define MIN_SCALE 0.5
int sim_model_import_f32(const void* mjmodel, void** out, char* err, size_t errlen);
int sim_data_create_f32(const void* m, int nworld, void** out);
#define IMPORT sim_model_import_f32
#define CREATE sim_data_create_f32
#endif

static const char* scene_xml =
    "<mujoco>"
    "  <worldbody>"
    "    <geom name='floor' type='plane' size='0 0 1'/>"
    "    <body name='s1'><freejoint/><geom type='sphere' size='0.1'/></body>"
    "    <body name='s2'><freejoint/><geom type='sphere' size='0.15' margin='0.01'/></body>"
    "    <body name='c1'><freejoint/><geom type='capsule' size='0.05 0.2'/></body>"
    "    <body name='c2'><freejoint/><geom type='capsule' size='0.08 0.15' margin='0.005'/></body>"
    "    <body name='b1'><freejoint/><geom type='box' size='0.1 0.15 0.2'/></body>"
    "    <body name='b2'><freejoint/><geom type='box' size='0.2 0.1 0.05' margin='0.005'/></body>"
    "  </worldbody>"
    "</mujoco>";
enum { G_FLOOR, G_S1, G_S2, G_C1, G_C2, G_B1, G_B2, NGEOM_SCENE };

// ---- random numbers ----
static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static double unif(double a, double b) { return a + (b - a) * urand(); }
static double nrand(void) {
  double u = urand() + 1e-300, v = urand();
  return sqrt(-2 * log(u)) * cos(2 * mjPI * v);
}
static void rand_unit(double v[3]) {
  do {
    for (int i = 0; i < 3; i++) v[i] = nrand();
  } while (mju_normalize3(v) < 1e-6);
}

// ---- rotations (double, row-major) ----
static void eye3(double R[9]) {
  for (int i = 0; i < 9; i++) R[i] = i % 4 == 0;
}
static void matmul3(double C[9], const double A[9], const double B[9]) {
  double t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) t[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  memcpy(C, t, sizeof(t));
}
static double det3(const double R[9]) {
  return R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
}
static void rot_axis_angle(double R[9], const double axis[3], double ang) {
  double q[4], a[3] = {axis[0], axis[1], axis[2]};
  mju_normalize3(a);
  mju_axisAngle2Quat(q, a, ang);
  mju_quat2Mat(R, q);
}
static void rand_rot(double R[9]) {
  double q[4];
  for (int i = 0; i < 4; i++) q[i] = nrand();
  mju_normalize4(q);
  mju_quat2Mat(R, q);
}
// a signed axis permutation (exact entries), det +1
static void rand_perm(double R[9]) {
  static const int perms[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
  const int* p = perms[(int)(urand() * 6) % 6];
  double s[3];
  for (int i = 0; i < 3; i++) s[i] = urand() < 0.5 ? -1 : 1;
  memset(R, 0, sizeof(double) * 9);
  for (int i = 0; i < 3; i++) R[3 * i + p[i]] = s[i];
  double det = det3(R);
  if (det < 0)
    for (int j = 0; j < 3; j++) R[j] = -R[j];
}
// expm(t [w]x) (Rodrigues)
static void rot_exp(double E[9], const double w[3], double t) {
  double n = mju_norm3(w);
  if (n * fabs(t) < 1e-300) {
    eye3(E);
    return;
  }
  rot_axis_angle(E, w, n * t);
}
// R relative to a base: random, aligned (signed permutation), near-aligned (small tilt), face yaw, equal
static void rel_rot(double R[9], const double base[9], int* kind) {
  double P[9], T[9], tmp[9], ax[3];
  double r = urand();
  if (r < 0.35) {
    rand_rot(R);
    *kind = 0;
    return;
  }
  rand_perm(P);
  matmul3(tmp, base, P);
  if (r < 0.5) {
    memcpy(R, tmp, sizeof(tmp));
    *kind = 1;
  } else if (r < 0.7) {  // tilt by 10^U(-3, -0.5) about a random axis
    rand_unit(ax);
    rot_axis_angle(T, ax, pow(10, unif(-3, -0.5)));
    matmul3(R, tmp, T);
    *kind = 2;
  } else if (r < 0.9) {  // yaw about one of the (permuted) axes, plus sometimes a small tilt
    double e[3] = {0, 0, 0};
    e[(int)(urand() * 3) % 3] = 1;
    rot_axis_angle(T, e, unif(-mjPI, mjPI));
    matmul3(R, tmp, T);
    if (urand() < 0.3) {
      rand_unit(ax);
      rot_axis_angle(T, ax, unif(0.01, 0.2));
      memcpy(tmp, R, sizeof(tmp));
      matmul3(R, tmp, T);
    }
    *kind = 3;
  } else {
    memcpy(R, base, sizeof(double) * 9);
    *kind = 4;
  }
}

// ---- comparison classes ----
enum { K_PLANE_SPH, K_PLANE_CAP, K_PLANE_BOX, K_SPHSPH, K_SPHSPH_COINC, K_SPHCAP, K_SPHCAP_END, K_CAPCAP,
       K_CAPCAP_CLAMP, K_CAPCAP_PAR, K_SPHBOX_OUT, K_SPHBOX_IN, K_CAPBOX, K_CAPBOX_SECOND, K_BOXBOX_FACE,
       K_BOXBOX_EDGE, K_N };
static const char* kname[K_N] = {"plane-sphere", "plane-capsule", "plane-box", "sphere-sphere",
                                 "sphere-sphere coincident", "sphere-capsule interior", "sphere-capsule end",
                                 "capsule-capsule free", "capsule-capsule clamped", "capsule-capsule parallel",
                                 "sphere-box outside", "sphere-box inside", "capsule-box first",
                                 "capsule-box second", "box-box face", "box-box edge"};
// nominal minimum of compared perturbations per class (float64)
static const int kmin[K_N] = {300, 300, 300, 300, 30, 300, 300, 300, 300, 30, 300, 50, 300, 100, 300, 100};

typedef struct {
  long compared, skip_branch, skip_kink, skip_degen;
  double* err;
  long nerr, caperr;
} KStat;
static KStat kst[K_N];
static int kactive[K_N];  // classes of the pair types under test

static void mark_active(int t1, int t2) {
  int lo, hi;
  if (t1 == SIM_GEOM_PLANE) lo = hi = t2 == SIM_GEOM_SPHERE ? K_PLANE_SPH : (t2 == SIM_GEOM_CAPSULE ? K_PLANE_CAP : K_PLANE_BOX);
  else if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_SPHERE) lo = K_SPHSPH, hi = K_SPHSPH_COINC;
  else if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_CAPSULE) lo = K_SPHCAP, hi = K_SPHCAP_END;
  else if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_CAPSULE) lo = K_CAPCAP, hi = K_CAPCAP_PAR;
  else if (t1 == SIM_GEOM_SPHERE) lo = K_SPHBOX_OUT, hi = K_SPHBOX_IN;
  else if (t1 == SIM_GEOM_CAPSULE) lo = K_CAPBOX, hi = K_CAPBOX_SECOND;
  else lo = K_BOXBOX_FACE, hi = K_BOXBOX_EDGE;
  for (int k = lo; k <= hi; k++) kactive[k] = 1;
}

static void kstat_add(int k, double e) {
  KStat* s = kst + k;
  if (s->nerr == s->caperr) {
    s->caperr = s->caperr ? 2 * s->caperr : 1024;
    s->err = realloc(s->err, sizeof(double) * s->caperr);
  }
  s->err[s->nerr++] = e;
  s->compared++;
}
static int cmpd(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int classify(int t1, int t2, int w) {
  if (t1 == SIM_GEOM_PLANE) return t2 == SIM_GEOM_SPHERE ? K_PLANE_SPH : (t2 == SIM_GEOM_CAPSULE ? K_PLANE_CAP : K_PLANE_BOX);
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_SPHERE) return w % 10 ? K_SPHSPH_COINC : K_SPHSPH;
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_CAPSULE) return w >= 10 ? K_SPHCAP_END : K_SPHCAP;
  if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_CAPSULE) return w >= 100 ? K_CAPCAP_PAR : (w >= 10 ? K_CAPCAP_CLAMP : K_CAPCAP);
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_BOX) return w >= 100 ? K_SPHBOX_IN : K_SPHBOX_OUT;
  if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_BOX) return w >= 100000 ? K_CAPBOX_SECOND : K_CAPBOX;
  return w >= 1000 ? K_BOXBOX_EDGE : K_BOXBOX_FACE;
}

// sub-branches of the recorded (tape) constructions, counted over compared perturbations
enum { S_BB_REF1, S_BB_REF2, S_BB_CUT0, S_BB_CUT1, S_BB_CUT2, S_BB_EDGE_FREE, S_BB_EDGE_CLAMP, S_CB_END, S_CB_EDGE,
       S_CB_SP0, S_CB_SP1, S_CB_SP2, S_CB_SP3, S_CB_SP4, S_N };
static const char* sname[S_N] = {"box-box face, reference box 1", "box-box face, reference box 2",
                                 "box-box face, incident corner", "box-box face, one cut", "box-box face, two cuts",
                                 "box-box edge, free params", "box-box edge, clamped param",
                                 "capsule-box, end on a face", "capsule-box, edge solve", "capsule-box 2nd: const",
                                 "capsule-box 2nd: 1 +- s", "capsule-box 2nd: 2 size/|a|",
                                 "capsule-box 2nd: size(1+-x1)/|a|", "capsule-box 2nd: face exit"};
static const int smin[S_N] = {300, 300, 300, 300, 100, 100, 30, 300, 300, 20, 20, 20, 20, 100};
static long scount[S_N];

// ---- scene state ----
static SimModel* M;
static SimWorld W;

static void set_pose(int g, const double p[3], const double R[9]) {
  for (int i = 0; i < 3; i++) W.geom_xpos[3 * g + i] = (sim_real)p[i];
  for (int i = 0; i < 9; i++) W.geom_xmat[9 * g + i] = (sim_real)R[i];
#ifndef SIM_DOUBLE
  // the forward narrow phase reads the double frames (sim/sim_math_geo.h): the same, stored pose
  for (int i = 0; i < 3; i++) W.geo_geom_xpos[3 * g + i] = W.geom_xpos[3 * g + i];
  for (int i = 0; i < 9; i++) W.geo_geom_xmat[9 * g + i] = W.geom_xmat[9 * g + i];
#endif
}
static void get_pose(int g, double p[3], double R[9]) {
  for (int i = 0; i < 3; i++) p[i] = W.geom_xpos[3 * g + i];
  for (int i = 0; i < 9; i++) R[i] = W.geom_xmat[9 * g + i];
}

// the geoms not under test far from each other and above (or, for non-plane pairs, away from) the floor
static void park_others(int a, int b) {
  double I[9], p[3], n[3], pf[3], Rf[9];
  eye3(I);
  if (a != G_FLOOR) {
    double fp[3] = {0, 0, -1000};
    set_pose(G_FLOOR, fp, I);
  }
  get_pose(G_FLOOR, pf, Rf);
  n[0] = Rf[2], n[1] = Rf[5], n[2] = Rf[8];
  for (int g = 1; g < NGEOM_SCENE; g++) {
    if (g == a || g == b) continue;
    for (int i = 0; i < 3; i++) p[i] = pf[i] + n[i] * (50 + 10 * g);
    p[0] += 10 * g;
    set_pose(g, p, I);
  }
}

static int find_pair(int a, int b) {
  for (int p = 0; p < M->npair; p++)
    if (M->pair_geom1[p] == a && M->pair_geom2[p] == b) return p;
  return -1;
}

// the contacts of pair p after the collision stage: count, first index
static int pair_contacts(int p, int* first) {
  int n = 0;
  *first = -1;
  for (int c = 0; c < W.ncon[0]; c++)
    if (W.contact_pair[c] == p) {
      if (n == 0) *first = c;
      n++;
    }
  return n;
}

static double contact_value(int c, double db, const double* pb, const double* fb) {
  double f = db * W.contact_dist[c];
  for (int i = 0; i < 3; i++) f += pb[i] * W.contact_pos[3 * c + i];
  for (int i = 0; i < 9; i++) f += fb[i] * W.contact_frame[9 * c + i];
  return f;
}

// evaluates f at the perturbed poses (sign s of eps): 0 if the pair's count or the contact's witness changed
static int eval_side(int a, int b, int p, int kidx, int witness, int ncon0, const double P[2][3], const double R[2][9],
                     const double dp[2][3], const double w[2][3], double t, double db, const double* pb,
                     const double* fb, double* f) {
  int g[2] = {a, b};
  for (int j = 0; j < 2; j++) {
    double pp[3], E[9], RR[9];
    for (int i = 0; i < 3; i++) pp[i] = P[j][i] + t * dp[j][i];
    rot_exp(E, w[j], t);
    matmul3(RR, E, R[j]);
    set_pose(g[j], pp, RR);
  }
  sim_collision(M, &W, 0, 1);
  int first, n = pair_contacts(p, &first);
  if (n != ncon0) return 0;
  int c = first + kidx;
  if (W.contact_witness[c] != witness) return 0;
  *f = contact_value(c, db, pb, fb);
  return 1;
}

// random poses for pair (a, b); returns 0 if the generator wants another try
static void gen_pose(int a, int b, double P[2][3], double R[2][9]) {
  int t1 = M->geom_type[a], t2 = M->geom_type[b], kind;
  double rb1 = M->geom_rbound[a], rb2 = M->geom_rbound[b], dir[3];
  const sim_real* s2 = M->geom_size + 3 * b;
  double base[9];
  if (urand() < 0.3) rand_perm(base);
  else rand_rot(base);
  if (t1 == SIM_GEOM_PLANE) {
    if (urand() < 0.4) eye3(R[0]);
    else rand_rot(R[0]);
    for (int i = 0; i < 3; i++) P[0][i] = 0.3 * nrand();
    rel_rot(R[1], R[0], &kind);
    double n[3] = {R[0][2], R[0][5], R[0][8]}, u[3] = {R[0][0], R[0][3], R[0][6]}, v[3] = {R[0][1], R[0][4], R[0][7]};
    // height of the geom centre: a fraction of its support extent along n
    double ext;
    if (t2 == SIM_GEOM_SPHERE) ext = s2[0];
    else if (t2 == SIM_GEOM_CAPSULE) ext = s2[0] + s2[1] * fabs(n[0] * R[1][2] + n[1] * R[1][5] + n[2] * R[1][8]);
    else {
      ext = 0;
      for (int k = 0; k < 3; k++) ext += s2[k] * fabs(n[0] * R[1][k] + n[1] * R[1][3 + k] + n[2] * R[1][6 + k]);
    }
    double h = ext * unif(-0.3, 1.02);
    double x = unif(-1, 1), y = unif(-1, 1);
    for (int i = 0; i < 3; i++) P[1][i] = P[0][i] + x * u[i] + y * v[i] + h * n[i];
    return;
  }
  memcpy(R[0], base, sizeof(base));
  rel_rot(R[1], R[0], &kind);
  for (int i = 0; i < 3; i++) P[0][i] = 0.3 * nrand();
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_SPHERE && urand() < 0.15) {  // coincident centres
    memcpy(P[1], P[0], sizeof(double) * 3);
    return;
  }
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_BOX && urand() < 0.25) {  // centre inside the box
    double c[3], off[3];
    for (int k = 0; k < 3; k++) c[k] = s2[k] * unif(-0.95, 0.95);
    mju_mulMatVec3(off, R[1], c);
    for (int i = 0; i < 3; i++) P[1][i] = P[0][i] - off[i];
    return;
  }
  if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX && urand() < 0.3) {
    // edge i of box 1 across edge j of box 2, supporting edges offset by (s, t) along them (beyond their
    // ends sometimes: clamped closest points), slightly penetrating along n = u1 x d
    const sim_real* s1 = M->geom_size + 3 * a;
    int i = (int)(urand() * 3) % 3, j = (int)(urand() * 3) % 3;
    double u1[3] = {R[0][i], R[0][3 + i], R[0][6 + i]}, n0[3], d[3], n[3], T[9], F[9], Rot[9];
    rand_unit(n0);
    mju_addToScl3(n0, u1, -mju_dot3(n0, u1));
    mju_normalize3(n0);
    rot_axis_angle(T, n0, unif(mjPI / 6, mjPI / 2));
    mju_mulMatVec(d, T, u1, 3, 3);
    mju_cross(n, u1, d);
    mju_normalize3(n);
    // a frame with column j = d, turned about d by a random angle
    double o1[3], o2[3];
    mju_cross(o1, d, n);
    memcpy(o2, n, sizeof(n));
    for (int r = 0; r < 3; r++) F[3 * r + j] = d[r], F[3 * r + (j + 1) % 3] = o1[r], F[3 * r + (j + 2) % 3] = o2[r];
    rot_axis_angle(T, d, unif(-mjPI, mjPI));
    matmul3(Rot, T, F);
    memcpy(R[1], Rot, sizeof(Rot));
    double c1[3] = {0, 0, 0}, cc[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
      double col1[3] = {R[0][k], R[0][3 + k], R[0][6 + k]}, col2[3] = {R[1][k], R[1][3 + k], R[1][6 + k]};
      if (k != i) mju_addToScl3(c1, col1, (mju_dot3(n, col1) >= 0 ? 1 : -1) * s1[k]);
      if (k != j) mju_addToScl3(cc, col2, (mju_dot3(n, col2) >= 0 ? -1 : 1) * s2[k]);
    }
    double so = s1[i] * unif(-1.3, 1.3), to = s2[j] * unif(-1.3, 1.3), g = unif(-0.02, 0.003);
    if (urand() < 0.5) so = s1[i] * (urand() < 0.5 ? -1 : 1) * unif(0.97, 1.05), g = unif(-0.003, 0.001);
    for (int r = 0; r < 3; r++) P[1][r] = P[0][r] + c1[r] - cc[r] + so * u1[r] - to * d[r] + g * n[r];
    return;
  }
  if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX && urand() < 0.4) {
    // box 2 resting on a face of box 1 (face-on, or tilted, or turned on an edge), sideways offset
    const sim_real* s1 = M->geom_size + 3 * a;
    int f = (int)(urand() * 3) % 3, sg = urand() < 0.5 ? -1 : 1;
    double n[3] = {sg * R[0][f], sg * R[0][3 + f], sg * R[0][6 + f]};
    double ext = 0;
    for (int k = 0; k < 3; k++) ext += s2[k] * fabs(n[0] * R[1][k] + n[1] * R[1][3 + k] + n[2] * R[1][6 + k]);
    double h = (s1[f] + ext) * unif(0.93, 1.005);
    for (int i = 0; i < 3; i++) P[1][i] = P[0][i] + h * n[i];
    for (int k = 0; k < 3; k++) {
      if (k == f) continue;
      double o = s1[k] * unif(-1.2, 1.2);
      for (int i = 0; i < 3; i++) P[1][i] += o * R[0][3 * i + k];
    }
    return;
  }
  if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_CAPSULE) {
    // closest points at chosen segment parameters, offset perpendicular to both axes
    const sim_real* s1 = M->geom_size + 3 * a;
    double A1[3] = {R[0][2] * s1[1], R[0][5] * s1[1], R[0][8] * s1[1]};
    double A2[3] = {R[1][2] * s2[1], R[1][5] * s2[1], R[1][8] * s2[1]}, perp[3], rd[3];
    mju_cross(perp, A1, A2);
    if (mju_normalize3(perp) < 1e-9) {
      rand_unit(rd);
      double a1[3] = {R[0][2], R[0][5], R[0][8]};
      mju_addToScl3(rd, a1, -mju_dot3(rd, a1));
      mju_normalize3(rd);
      memcpy(perp, rd, sizeof(rd));
    }
    double x1 = unif(-1.4, 1.4), x2 = unif(-1.4, 1.4), d = (s1[0] + s2[0]) * unif(0.2, 1.0);
    for (int i = 0; i < 3; i++) P[1][i] = P[0][i] + A1[i] * x1 - A2[i] * x2 + perp[i] * d;
    return;
  }
  rand_unit(dir);
  double d = (rb1 + rb2) * pow(urand(), 0.7);
  for (int i = 0; i < 3; i++) P[1][i] = P[0][i] + dir[i] * d;
}

static double mat_pair(const double* Mbar, const double w[3], const double R[9]) {
  // <Mbar, [w]x R>
  double WR[9], Wx[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0}, s = 0;
  matmul3(WR, Wx, R);
  for (int i = 0; i < 9; i++) s += Mbar[i] * WR[i];
  return s;
}
static void mat_torque(double t[3], const double* Mbar, const double R[9]) {
  // t with <Mbar, [w]x R> = t.w
  for (int e = 0; e < 3; e++) {
    double w[3] = {0, 0, 0};
    w[e] = 1;
    t[e] = mat_pair(Mbar, w, R);
  }
}

// poses where the forward itself is discontinuous (frame or normal from a vanishing vector, the default
// tangent's |n_y| = 0.5 switch): not differentiable, skipped and counted
static int degenerate(int a, int b, int c) {
  const sim_real* x = W.contact_frame + 9 * c;
  const sim_real* R1 = W.geom_xmat + 9 * a;
  const sim_real* R2 = W.geom_xmat + 9 * b;
  int t1 = M->geom_type[a], t2 = M->geom_type[b];
  double z1[3] = {R1[2], R1[5], R1[8]}, z2[3] = {R2[2], R2[5], R2[8]}, cr[3];
  mju_cross(cr, z1, z2);
  if (t1 == SIM_GEOM_PLANE && t2 == SIM_GEOM_CAPSULE) return mju_norm3(cr) < 1e-4;  // hint along the normal
  if (fabs(fabs((double)x[1]) - 0.5) < 1e-4) return 1;
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_SPHERE && W.contact_witness[c] % 10) return mju_norm3(cr) < 1e-4;
  if (t1 == SIM_GEOM_SPHERE && t2 == SIM_GEOM_CAPSULE && W.contact_witness[c] % 10) return mju_norm3(cr) < 1e-4;
  if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_CAPSULE && W.contact_witness[c] % 10) return mju_norm3(cr) < 1e-4;
  return 0;
}

// number of cuts on the construction path of vertex q after stage st (SimcBoxTape.src)
static int cut_depth(const SimcBoxTape* tp, int st, int q) {
  if (st == 0) return 0;
  int p0 = tp->src[st - 1][q][0], p1 = tp->src[st - 1][q][1];
  if (p1 < 0) return cut_depth(tp, st - 1, p0);
  int d0 = cut_depth(tp, st - 1, p0), d1 = cut_depth(tp, st - 1, p1);
  return 1 + (d0 > d1 ? d0 : d1);
}

// sub-branch bits of contact c (recomputed at the base state through the forward's tapes)
static void sub_branches(int a, int b, int c, int sb[4], int* nsb) {
  int p = W.contact_pair[c], w = W.contact_witness[c];
  int t1 = M->geom_type[a], t2 = M->geom_type[b];
  sim_real margin = M->pair_margin[p] + M->pair_gap[p];
  const sim_real *p1 = W.geom_xpos + 3 * a, *m1 = W.geom_xmat + 9 * a, *s1 = M->geom_size + 3 * a;
  const sim_real *p2 = W.geom_xpos + 3 * b, *m2 = W.geom_xmat + 9 * b, *s2 = M->geom_size + 3 * b;
  SimPreContact con[8];
  *nsb = 0;
  if (t1 == SIM_GEOM_BOX && t2 == SIM_GEOM_BOX) {
    SimcBoxTape tp;
    simc_box_box_rec(con, margin, p1, m1, s1, p2, m2, s2, &tp);
    if (w >= 1000) {
      sb[(*nsb)++] = tp.s0free && tp.tfree && tp.sfree ? S_BB_EDGE_FREE : S_BB_EDGE_CLAMP;
    } else {
      sb[(*nsb)++] = w / 100 < 3 ? S_BB_REF1 : S_BB_REF2;
      int d = cut_depth(&tp, 4, tp.accept[w % 100]);
      sb[(*nsb)++] = d == 0 ? S_BB_CUT0 : (d == 1 ? S_BB_CUT1 : S_BB_CUT2);
    }
  } else if (t1 == SIM_GEOM_CAPSULE && t2 == SIM_GEOM_BOX) {
    SimcCapBoxTape tp;
    simc_capsule_box_rec(con, margin, p1, m1, s1, p2, m2, s2, &tp);
    sb[(*nsb)++] = tp.cltype < 0 ? S_CB_END : S_CB_EDGE;
    if (w >= 100000) sb[(*nsb)++] = S_CB_SP0 + tp.sp_kind;
  }
}

static void test_pair(int a, int b, int ntrial) {
  int p = find_pair(a, b);
  TEST_CHECK(p >= 0, "pair %d %d is a candidate", a, b);
  if (p < 0) return;
  int t1 = M->geom_type[a], t2 = M->geom_type[b];
  mark_active(t1, t2);
  for (int trial = 0; trial < ntrial; trial++) {
    double P[2][3], R[2][9];
    park_others(a, b);
    gen_pose(a, b, P, R);
    set_pose(a, P[0], R[0]);
    set_pose(b, P[1], R[1]);
    // poses as stored (rounded in float32): the base of the perturbations
    get_pose(a, P[0], R[0]);
    get_pose(b, P[1], R[1]);
    sim_collision(M, &W, 0, 1);
    int first, n = pair_contacts(p, &first);
    if (n == 0) continue;
    // the contacts' values and VJPs at the base state
    int wit[8];
    double f0[8][4], gbar[8][24], db[8], pb[8][3], fb[8][9];
    for (int k = 0; k < n; k++) {
      int c = first + k;
      wit[k] = W.contact_witness[c];
      db[k] = nrand();
      for (int i = 0; i < 3; i++) pb[k][i] = nrand();
      for (int i = 0; i < 9; i++) fb[k][i] = nrand();
      sim_real sdb = (sim_real)db[k], spb[3], sfb[9], g[24];
      for (int i = 0; i < 3; i++) spb[i] = (sim_real)pb[k][i];
      for (int i = 0; i < 9; i++) sfb[i] = (sim_real)fb[k][i];
      simc_adj_contact(M, &W, c, sdb, spb, sfb, g);
      for (int i = 0; i < 24; i++) gbar[k][i] = g[i];
      f0[k][0] = contact_value(c, db[k], pb[k], fb[k]);
    }
    for (int k = 0; k < n; k++) {
      int cls = classify(t1, t2, wit[k]);
      if (degenerate(a, b, first + k)) {
        kst[cls].skip_degen++;
        continue;
      }
      int sb[4], nsb;
      sub_branches(a, b, first + k, sb, &nsb);
      for (int rep = 0; rep < 3; rep++) {
        double dp[2][3], w[2][3];
        double r = urand();
        int mode = r < 0.5 ? 0 : (r < 0.75 ? 1 : 2);  // all, rotations only, positions only
        if (cls == K_SPHSPH_COINC) mode = 1;
        if (cls == K_CAPCAP_PAR) mode = 2;
        for (int j = 0; j < 2; j++)
          for (int i = 0; i < 3; i++) {
            dp[j][i] = mode == 1 ? 0 : nrand();
            w[j][i] = mode == 2 ? 0 : nrand();
          }
        double fp = 0, fm = 0;
        int okp = eval_side(a, b, p, k, wit[k], n, P, R, dp, w, EPS, db[k], pb[k], fb[k], &fp);
        int okm = eval_side(a, b, p, k, wit[k], n, P, R, dp, w, -EPS, db[k], pb[k], fb[k], &fm);
        if (!okp || !okm) {
          kst[cls].skip_branch++;
          continue;
        }
        double fd = (fp - fm) / (2 * EPS);
        double dplus = (fp - f0[k][0]) / EPS, dminus = (f0[k][0] - fm) / EPS;
        const double* g = gbar[k];
        double an = 0, t1v[3], t2v[3], geff = 0, dn = 0;
        for (int i = 0; i < 3; i++) an += g[SIMC_ADJ_P1 + i] * dp[0][i] + g[SIMC_ADJ_P2 + i] * dp[1][i];
        an += mat_pair(g + SIMC_ADJ_M1, w[0], R[0]) + mat_pair(g + SIMC_ADJ_M2, w[1], R[1]);
        mat_torque(t1v, g + SIMC_ADJ_M1, R[0]);
        mat_torque(t2v, g + SIMC_ADJ_M2, R[1]);
        for (int i = 0; i < 3; i++) {
          geff += g[SIMC_ADJ_P1 + i] * g[SIMC_ADJ_P1 + i] + g[SIMC_ADJ_P2 + i] * g[SIMC_ADJ_P2 + i] +
                  t1v[i] * t1v[i] + t2v[i] * t2v[i];
          dn += dp[0][i] * dp[0][i] + dp[1][i] * dp[1][i] + w[0][i] * w[0][i] + w[1][i] * w[1][i];
        }
        double S = sqrt(geff * dn) + 1e-300;
        double den = fmax(fabs(fd), 0.05 * S);
        if (fabs(dplus - dminus) > KINK_TOL * fmax(fmax(fabs(dplus), fabs(dminus)), 0.05 * S)) {
          kst[cls].skip_kink++;
          if (getenv("CADJ_KINK") && cls == atoi(getenv("CADJ_KINK")))
            fprintf(stderr, "kink %s w %d mode %d: f0 %.9g fp %.9g fm %.9g D+ %.6g D- %.6g an %.6g S %.3g\n", kname[cls], wit[k], mode, f0[k][0], fp, fm, dplus, dminus, an, S);
          continue;
        }
        double e = fabs(an - fd) / den;
        if (!(e == e)) e = INFINITY;
        kstat_add(cls, e);
        for (int q = 0; q < nsb; q++) scount[sb[q]]++;
        if (e > (MAX_TOL ? MAX_TOL : P99_TOL) && getenv("CADJ_VERBOSE"))
          fprintf(stderr, "%s w %d mode %d: an %.10g fd %.10g S %.3g err %.3g\n", kname[cls], wit[k], mode, an, fd,
                  S, e);
      }
    }
  }
}

int main(void) {
  char err[1024];
  mjVFS vfs;
  mj_defaultVFS(&vfs);
  mj_addBufferVFS(&vfs, "scene.xml", scene_xml, (int)strlen(scene_xml));
  mjModel* mj = mj_loadXML("scene.xml", &vfs, err, sizeof(err));
  mj_deleteVFS(&vfs);
  TEST_CHECK(mj != NULL, "load scene: %s", err);
  if (!mj) return test_report("sim_collision_adjoint");
  SimModel* m = NULL;
  SimData* dd = NULL;
  if (IMPORT(mj, (void**)&m, err, sizeof(err))) {
    TEST_CHECK(0, "import: %s", err);
    return test_report("sim_collision_adjoint");
  }
  CREATE(m, 1, (void**)&dd);
  M = m;
  sim_world(m, dd, 0, &W);

  int ntrial = 6000;
  static const int pairs[][2] = {{G_FLOOR, G_S2}, {G_FLOOR, G_C1}, {G_FLOOR, G_B1}, {G_S1, G_S2}, {G_S1, G_C2},
                                 {G_C1, G_C2},   {G_S2, G_B1},   {G_C2, G_B1},   {G_B1, G_B2}};
  int npairs = sizeof(pairs) / sizeof(pairs[0]);
  for (int i = 0; i < npairs; i++) test_pair(pairs[i][0], pairs[i][1], ntrial);

  printf("%s contact-geometry VJP vs central differences (eps %g):\n", PREC, EPS);
  printf("  %-26s %9s %9s %9s %9s %10s %10s %10s\n", "class", "compared", "skip-br", "skip-kink", "degen", "median",
         "p99", "max");
  for (int k = 0; k < K_N; k++) {
    KStat* s = kst + k;
    if (!kactive[k]) continue;
    if (s->nerr) qsort(s->err, s->nerr, sizeof(double), cmpd);
    double med = s->nerr ? s->err[s->nerr / 2] : 0, mx = s->nerr ? s->err[s->nerr - 1] : 0;
    double p99 = s->nerr ? s->err[(long)(0.99 * (s->nerr - 1))] : 0;
    printf("  %-26s %9ld %9ld %9ld %9ld %10.2e %10.2e %10.2e\n", kname[k], s->compared, s->skip_branch, s->skip_kink,
           s->skip_degen, med, p99, mx);
    TEST_CHECK(s->compared >= (long)(kmin[k] * MIN_SCALE), "%s: only %ld compared (need %d)", kname[k], s->compared,
               (int)(kmin[k] * MIN_SCALE));
    TEST_CHECK(med <= MED_TOL, "%s: median error %.3g > %.1g", kname[k], med, MED_TOL);
    TEST_CHECK(p99 <= P99_TOL, "%s: p99 error %.3g > %.1g", kname[k], p99, P99_TOL);
    TEST_CHECK(MAX_TOL == 0 || mx <= MAX_TOL, "%s: max error %.3g > %.1g", kname[k], mx, MAX_TOL);
    TEST_CHECK(s->skip_kink <= KINK_FRAC * s->compared + 1, "%s: %ld kinks over %ld compared", kname[k], s->skip_kink,
               s->compared);
    free(s->err);
  }
  printf("  sub-branches (compared perturbations):");
  for (int q = 0; q < S_N; q++) {
    printf("%s%s %ld", q % 3 ? ", " : "\n    ", sname[q], scount[q]);
    TEST_CHECK(scount[q] >= (long)(smin[q] * MIN_SCALE), "%s: only %ld compared (need %d)", sname[q], scount[q],
               (int)(smin[q] * MIN_SCALE));
  }
  printf("\n");
  free(dd->buffer), free(dd), free(m->buffer), free(m);
  mj_deleteModel(mj);
  return test_report("sim_collision_adjoint_" PREC);
}
