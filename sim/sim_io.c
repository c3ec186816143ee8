// sim_io.c: SimModel import from a compiled mjModel, and SimModel/SimData allocation (host memory).
// Compiled once per precision. Every array comes from the X-macro tables in sim_model.h: one buffer per
// model, one per batch of worlds.
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_ALIGN 64
static size_t align_up(size_t n) { return (n + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN; }

// The mass matrix's pattern tables, from M_rownnz / M_rowadr / M_colind. M_rowind: each stored entry's row.
// M_desc: each dof's descendants with their entry in its column, as sim_mulM_dofs sums them: the dofs that follow
// i while their row holds i at position rownnz(i) - 1 (a subtree is contiguous).
// M_fac: the updates of sim_factorI, row k's from M_fac_adr[k]: row k (start s, diag ancestors) changes entry e of
// the ancestor at its position p (row colind[s + p]) by mat[s + e] mat[s + p] / -D(k), for 0 <= e <= p < diag in the
// order p (p + 1) / 2 + e, where that row stores an entry e (it always does: the ancestor at position p has at least
// p + 1 entries of its own). Each as (address changed, s + e, s + p).
static int sim_M_fac_count(int nv, const int* rownnz, const int* rowadr, const int* colind) {
  int n = 0;
  for (int k = 0; k < nv; k++)
    for (int p = 0; p < rownnz[k] - 1; p++)
      for (int e = 0; e <= p; e++) n += e < rownnz[colind[rowadr[k] + p]];
  return n;
}
static void sim_M_tables_fill(SimModel* m) {
  for (int i = 0; i < m->nv; i++)
    for (int k = m->M_rowadr[i]; k < m->M_rowadr[i] + m->M_rownnz[i]; k++) m->M_rowind[k] = i;
  int q = 0;
  for (int i = 0; i < m->nv; i++) {
    int diag = m->M_rownnz[i] - 1;
    m->M_desc_adr[i] = q;
    for (int c = i + 1; c < m->nv; c++) {
      int cadr = m->M_rowadr[c];
      if (m->M_rownnz[c] <= diag + 1 || m->M_colind[cadr + diag] != i) break;
      m->M_desc[2 * q] = c;
      m->M_desc[2 * q + 1] = cadr + diag;
      q++;
    }
    m->M_desc_num[i] = q - m->M_desc_adr[i];
  }
  int t = 0;
  for (int k = 0; k < m->nv; k++) {
    int s = m->M_rowadr[k];
    m->M_fac_adr[k] = t;
    for (int p = 0; p < m->M_rownnz[k] - 1; p++)
      for (int e = 0; e <= p; e++) {
        int i = m->M_colind[s + p];
        if (e >= m->M_rownnz[i]) continue;
        m->M_fac[3 * t] = m->M_rowadr[i] + e;
        m->M_fac[3 * t + 1] = s + e;
        m->M_fac[3 * t + 2] = s + p;
        t++;
      }
    m->M_fac_num[k] = t - m->M_fac_adr[k];
  }
}

// allocates the model's arrays for the sizes already set in m
static int model_alloc(SimModel* m) {
  size_t total = 0;
#define X(type, name, count, width) total += align_up(sizeof(type) * (size_t)m->count * (width));
  SIM_MODEL_FIELDS
#undef X
  char* buf = (char*)calloc(1, total ? total : 1);
  if (!buf) return SIM_ERR_ALLOC;
  m->buffer = buf;
  m->nbuffer = total;
  size_t off = 0;
#define X(type, name, count, width)       \
  m->name = (type*)(buf + off);           \
  off += align_up(sizeof(type) * (size_t)m->count * (width));
  SIM_MODEL_FIELDS
#undef X
  return SIM_OK;
}

void sim_model_free(SimModel* m) {
  if (!m) return;
  free(m->buffer);
  free(m);
}

static void copy_real(sim_real* dst, const mjtNum* src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = (sim_real)src[i];
}

// actuator damping/armature inherited by joints and tendons (MuJoCo's mj_actuatorDamping/Armature)
static double actuator_inherit(const mjModel* m, int trntype, int id, int what, int k) {
  double s = 0;
  for (int a = 0; a < m->nactuator; a++) {
    if (m->actuator_trnid[2 * a] != id || m->actuator_trntype[a] != trntype) continue;
    double g = m->actuator_gear[6 * a];
    double v = what == 0 ? m->actuator_damping[a] : what == 1 ? m->actuator_dampingpoly[mjNPOLY * a + k]
                                                               : m->actuator_armature[a];
    s += v * (g * g);
  }
  return s;
}

int sim_model_import(const void* mjmodel, SimModel** out, char* err, size_t errlen) {
  return sim_model_import_caps(mjmodel, 0, 0, out, err, errlen);
}

int sim_model_import_caps(const void* mjmodel, int nconmax, int nefcmax, SimModel** out, char* err, size_t errlen) {
  const mjModel* mj = (const mjModel*)mjmodel;
  *out = NULL;
  if (sim_check_model(mj, err, errlen)) return SIM_ERR_UNSUPPORTED;
  SimModel* m = (SimModel*)calloc(1, sizeof(SimModel));
  if (!m) return SIM_ERR_ALLOC;

  m->nq = mj->nq;
  m->nv = mj->nv;
  m->nu = mj->nu;
  m->nbody = mj->nbody;
  m->njnt = mj->njnt;
  m->ngeom = mj->ngeom;
  m->ntendon = mj->ntendon;
  m->nwrap = mj->nwrap;
  m->nM = mj->nC;
  m->nMfac = sim_M_fac_count(mj->nv, mj->M_rownnz, mj->M_rowadr, mj->M_colind);
  m->nkey = mj->nkey;
  m->one = 1;
  m->nchild = mj->nbody > 1 ? mj->nbody - 1 : 1;
  int nmoment = 0;
  for (int a = 0; a < mj->nu; a++)
    nmoment += mj->actuator_trntype[a] == mjTRN_JOINT ? 1 : mj->tendon_num[mj->actuator_trnid[2 * a]];
  m->nmoment = nmoment;
  int* depth = (int*)calloc((size_t)mj->nbody, sizeof(int));
  int nlevel = 1;
  for (int i = 1; i < mj->nbody; i++) {
    depth[i] = depth[mj->body_parentid[i]] + 1;
    if (depth[i] + 1 > nlevel) nlevel = depth[i] + 1;
  }
  m->nlevel = nlevel;
  sim_collision_sizes(mj, m);
  if (nconmax > 0) m->nconmax = nconmax;  // the load option's capacity; rows follow it
  sim_constraint_sizes(mj, m);
  if (nefcmax > 0) m->nefcmax = nefcmax;
  if (model_alloc(m)) {
    free(depth);
    free(m);
    return SIM_ERR_ALLOC;
  }

  // options
  m->timestep = (sim_real)mj->opt.timestep;
  copy_real(m->gravity, mj->opt.gravity, 3);
  m->tolerance = (sim_real)mj->opt.tolerance;
  m->ls_tolerance = (sim_real)mj->opt.ls_tolerance;
  m->impratio = (sim_real)mj->opt.impratio;
  m->meaninertia = (sim_real)mj->stat.meaninertia;
  m->integrator = mj->opt.integrator;
  m->iterations = mj->opt.iterations;
  m->ls_iterations = mj->opt.ls_iterations;
  m->disableflags = mj->opt.disableflags;
  m->enableflags = mj->opt.enableflags;

  // bodies and the tree
  int nb = mj->nbody;
  for (int i = 0; i < nb; i++) {
    m->body_parentid[i] = mj->body_parentid[i];
    m->body_rootid[i] = mj->body_rootid[i];
    m->body_weldid[i] = mj->body_weldid[i];
    m->body_jntnum[i] = mj->body_jntnum[i];
    m->body_jntadr[i] = mj->body_jntadr[i];
    m->body_dofnum[i] = mj->body_dofnum[i];
    m->body_dofadr[i] = mj->body_dofadr[i];
    m->body_geomnum[i] = mj->body_geomnum[i];
    m->body_geomadr[i] = mj->body_geomadr[i];
    m->body_sameframe[i] = mj->body_sameframe[i];
  }
  copy_real(m->body_pos, mj->body_pos, 3 * nb);
  copy_real(m->body_quat, mj->body_quat, 4 * nb);
  copy_real(m->body_ipos, mj->body_ipos, 3 * nb);
  copy_real(m->body_iquat, mj->body_iquat, 4 * nb);
  copy_real(m->body_mass, mj->body_mass, nb);
  copy_real(m->body_subtreemass, mj->body_subtreemass, nb);
  copy_real(m->body_inertia, mj->body_inertia, 3 * nb);
  copy_real(m->body_invweight0, mj->body_invweight0, 2 * nb);
  int nc = 0;
  for (int p = 0; p < nb; p++) {
    m->body_childadr[p] = nc;
    for (int i = p + 1; i < nb; i++)
      if (mj->body_parentid[i] == p && i != 0) m->body_child[nc++] = i;
    m->body_childnum[p] = nc - m->body_childadr[p];
  }
  int nl = 0;
  for (int l = 0; l < nlevel; l++) {
    m->level_adr[l] = nl;
    for (int i = 0; i < nb; i++)
      if (depth[i] == l) m->level_body[nl++] = i;
    m->level_num[l] = nl - m->level_adr[l];
  }
  free(depth);

  // joints
  for (int j = 0; j < mj->njnt; j++) {
    m->jnt_type[j] = mj->jnt_type[j];
    m->jnt_qposadr[j] = mj->jnt_qposadr[j];
    m->jnt_dofadr[j] = mj->jnt_dofadr[j];
    m->jnt_bodyid[j] = mj->jnt_bodyid[j];
    m->jnt_limited[j] = mj->jnt_limited[j];
    m->jnt_actfrclimited[j] = mj->jnt_actfrclimited[j];
    int b = mj->jnt_bodyid[j], adr = mj->jnt_dofadr[j];
    m->jnt_freebody[j] = mj->jnt_type[j] == mjJNT_FREE && mj->body_jntnum[b] == 1 &&
                         mj->tree_dofnum[mj->dof_treeid[adr]] == 6 && mj->body_subtreemass[b] == mj->body_mass[b];
  }
  copy_real(m->jnt_pos, mj->jnt_pos, 3 * mj->njnt);
  copy_real(m->jnt_axis, mj->jnt_axis, 3 * mj->njnt);
  copy_real(m->jnt_stiffness, mj->jnt_stiffness, mj->njnt);
  copy_real(m->jnt_stiffnesspoly, mj->jnt_stiffnesspoly, SIM_NPOLY * mj->njnt);
  copy_real(m->jnt_range, mj->jnt_range, 2 * mj->njnt);
  copy_real(m->jnt_actfrcrange, mj->jnt_actfrcrange, 2 * mj->njnt);
  copy_real(m->jnt_margin, mj->jnt_margin, mj->njnt);
  copy_real(m->jnt_solref, mj->jnt_solref, mjNREF * mj->njnt);
  copy_real(m->jnt_solimp, mj->jnt_solimp, mjNIMP * mj->njnt);
  copy_real(m->qpos0, mj->qpos0, mj->nq);
  copy_real(m->qpos_spring, mj->qpos_spring, mj->nq);

  // dofs: actuator damping and armature folded in (constants of the model)
  for (int i = 0; i < mj->nv; i++) {
    int j = mj->dof_jntid[i];
    m->dof_bodyid[i] = mj->dof_bodyid[i];
    m->dof_jntid[i] = j;
    m->dof_parentid[i] = mj->dof_parentid[i];
    m->dof_armature[i] = (sim_real)(mj->dof_armature[i] + actuator_inherit(mj, mjTRN_JOINT, j, 2, 0));
    m->dof_damping[i] = (sim_real)(mj->dof_damping[i] + actuator_inherit(mj, mjTRN_JOINT, j, 0, 0));
    int polyzero = 1;
    for (int k = 0; k < SIM_NPOLY; k++) {
      double p = mj->dof_dampingpoly[mjNPOLY * i + k] + actuator_inherit(mj, mjTRN_JOINT, j, 1, k);
      m->dof_dampingpoly[SIM_NPOLY * i + k] = (sim_real)p;
      if (mj->dof_dampingpoly[mjNPOLY * i + k] != 0) polyzero = 0;
    }
    m->dof_hasdamp[i] = mj->dof_damping[i] > 0 || !polyzero || mj->jnt_actuatorid[j] != -1;
    m->dof_frictionloss[i] = (sim_real)mj->dof_frictionloss[i];
    m->dof_invweight0[i] = (sim_real)mj->dof_invweight0[i];
    m->M_rownnz[i] = mj->M_rownnz[i];
    m->M_rowadr[i] = mj->M_rowadr[i];
  }
  for (int k = 0; k < mj->nC; k++) m->M_colind[k] = mj->M_colind[k];
  sim_M_tables_fill(m);
  // dof depths and the dofs grouped by depth (ascending id within a depth): the lane-parallel LDL solve's
  // schedule. Parents precede their children, so one ascending pass gives the depths.
  for (int i = 0; i < mj->nv; i++) {
    int p = m->dof_parentid[i];
    m->dof_depth[i] = p < 0 ? 0 : m->dof_depth[p] + 1;
  }
  // descendant counts: one descending pass adds each dof's subtree to its parent's (a subtree is contiguous, so
  // dof i's descendants are i + 1 ... i + dof_ndesc[i]; MuJoCo's M rows of simple bodies omit ancestors, so M_desc
  // does not give them)
  for (int i = 0; i < mj->nv; i++) m->dof_ndesc[i] = 0;
  for (int i = mj->nv - 1; i >= 0; i--)
    if (m->dof_parentid[i] >= 0) m->dof_ndesc[m->dof_parentid[i]] += 1 + m->dof_ndesc[i];
  int ndl = 0;
  for (int l = 0; l < mj->nv; l++) {
    m->dof_level_adr[l] = ndl;
    for (int i = 0; i < mj->nv; i++)
      if (m->dof_depth[i] == l) m->dof_level_dof[ndl++] = i;
    m->dof_level_num[l] = ndl - m->dof_level_adr[l];
  }

  // geoms
  for (int g = 0; g < mj->ngeom; g++) {
    m->geom_type[g] = mj->geom_type[g];
    m->geom_contype[g] = mj->geom_contype[g];
    m->geom_conaffinity[g] = mj->geom_conaffinity[g];
    m->geom_condim[g] = mj->geom_condim[g];
    m->geom_bodyid[g] = mj->geom_bodyid[g];
    m->geom_sameframe[g] = mj->geom_sameframe[g];
    m->geom_priority[g] = mj->geom_priority[g];
  }
  int ng = mj->ngeom;
  copy_real(m->geom_pos, mj->geom_pos, 3 * ng);
  copy_real(m->geom_quat, mj->geom_quat, 4 * ng);
  copy_real(m->geom_size, mj->geom_size, 3 * ng);
  copy_real(m->geom_rbound, mj->geom_rbound, ng);
  copy_real(m->geom_friction, mj->geom_friction, 3 * ng);
  copy_real(m->geom_solmix, mj->geom_solmix, ng);
  copy_real(m->geom_solref, mj->geom_solref, mjNREF * ng);
  copy_real(m->geom_solimp, mj->geom_solimp, mjNIMP * ng);
  copy_real(m->geom_margin, mj->geom_margin, ng);
  copy_real(m->geom_gap, mj->geom_gap, ng);
#ifndef SIM_DOUBLE
  // float64 copies of the geometry's constants (sim_math_geo.h)
  memcpy(m->geo_body_pos, mj->body_pos, sizeof(double) * 3 * mj->nbody);
  memcpy(m->geo_body_quat, mj->body_quat, sizeof(double) * 4 * mj->nbody);
  memcpy(m->geo_body_ipos, mj->body_ipos, sizeof(double) * 3 * mj->nbody);
  memcpy(m->geo_body_iquat, mj->body_iquat, sizeof(double) * 4 * mj->nbody);
  memcpy(m->geo_jnt_pos, mj->jnt_pos, sizeof(double) * 3 * mj->njnt);
  memcpy(m->geo_jnt_axis, mj->jnt_axis, sizeof(double) * 3 * mj->njnt);
  memcpy(m->geo_jnt_range, mj->jnt_range, sizeof(double) * 2 * mj->njnt);
  memcpy(m->geo_qpos0, mj->qpos0, sizeof(double) * mj->nq);
  memcpy(m->geo_geom_pos, mj->geom_pos, sizeof(double) * 3 * ng);
  memcpy(m->geo_geom_quat, mj->geom_quat, sizeof(double) * 4 * ng);
  memcpy(m->geo_geom_size, mj->geom_size, sizeof(double) * 3 * ng);
  memcpy(m->body_mass_f64, mj->body_mass, sizeof(double) * mj->nbody);  // per-world overrides (sim_param.c)
#endif

  // fixed tendons
  for (int t = 0; t < mj->ntendon; t++) {
    m->tendon_adr[t] = mj->tendon_adr[t];
    m->tendon_num[t] = mj->tendon_num[t];
    m->tendon_limited[t] = mj->tendon_limited[t];
    m->tendon_damping[t] = (sim_real)(mj->tendon_damping[t] + actuator_inherit(mj, mjTRN_TENDON, t, 0, 0));
    for (int k = 0; k < SIM_NPOLY; k++)
      m->tendon_dampingpoly[SIM_NPOLY * t + k] =
          (sim_real)(mj->tendon_dampingpoly[mjNPOLY * t + k] + actuator_inherit(mj, mjTRN_TENDON, t, 1, k));
  }
  int nt = mj->ntendon;
  copy_real(m->tendon_stiffness, mj->tendon_stiffness, nt);
  copy_real(m->tendon_stiffnesspoly, mj->tendon_stiffnesspoly, SIM_NPOLY * nt);
  copy_real(m->tendon_lengthspring, mj->tendon_lengthspring, 2 * nt);
  copy_real(m->tendon_range, mj->tendon_range, 2 * nt);
  copy_real(m->tendon_margin, mj->tendon_margin, nt);
  copy_real(m->tendon_frictionloss, mj->tendon_frictionloss, nt);
  copy_real(m->tendon_invweight0, mj->tendon_invweight0, nt);
  copy_real(m->tendon_solref, mj->tendon_solref_lim, mjNREF * nt);
  copy_real(m->tendon_solimp, mj->tendon_solimp_lim, mjNIMP * nt);
  for (int w = 0; w < mj->nwrap; w++) {
    int j = mj->wrap_objid[w];
    m->wrap_dofadr[w] = j >= 0 ? mj->jnt_dofadr[j] : 0;
    m->wrap_qposadr[w] = j >= 0 ? mj->jnt_qposadr[j] : 0;
    m->wrap_prm[w] = (sim_real)mj->wrap_prm[w];
  }

  // actuators and their constant moments
  int mom = 0;
  for (int a = 0; a < mj->nu; a++) {
    int id = mj->actuator_trnid[2 * a];
    double gear = mj->actuator_gear[6 * a];
    m->actuator_trntype[a] = mj->actuator_trntype[a];
    m->actuator_trnid[a] = id;
    m->actuator_gaintype[a] = mj->actuator_gaintype[a];
    m->actuator_biastype[a] = mj->actuator_biastype[a];
    m->actuator_ctrllimited[a] = mj->actuator_ctrllimited[a];
    m->actuator_forcelimited[a] = mj->actuator_forcelimited[a];
    m->actuator_gear[a] = (sim_real)gear;
    copy_real(m->actuator_gainprm + 3 * a, mj->actuator_gainprm + mjNGAIN * a, 3);
    copy_real(m->actuator_biasprm + 3 * a, mj->actuator_biasprm + mjNBIAS * a, 3);
    copy_real(m->actuator_ctrlrange + 2 * a, mj->actuator_ctrlrange + 2 * a, 2);
    copy_real(m->actuator_forcerange + 2 * a, mj->actuator_forcerange + 2 * a, 2);
    m->actuator_momadr[a] = mom;
    if (mj->actuator_trntype[a] == mjTRN_JOINT) {
      m->moment_dof[mom] = mj->jnt_dofadr[id];
      m->moment_val[mom++] = (sim_real)gear;
    } else {
      for (int k = 0; k < mj->tendon_num[id]; k++) {
        int w = mj->tendon_adr[id] + k;
        m->moment_dof[mom] = mj->jnt_dofadr[mj->wrap_objid[w]];
        m->moment_val[mom++] = (sim_real)(gear * mj->wrap_prm[w]);
      }
    }
    m->actuator_momnum[a] = mom - m->actuator_momadr[a];
  }
  // the moment entries grouped by dof, in actuator order: qfrc_actuator is gathered per dof
  int nde = 0;
  for (int i = 0; i < mj->nv; i++) {
    m->dof_momadr[i] = nde;
    for (int a = 0; a < mj->nu; a++)
      for (int e = m->actuator_momadr[a]; e < m->actuator_momadr[a] + m->actuator_momnum[a]; e++)
        if (m->moment_dof[e] == i) {
          m->dof_moment[2 * nde] = e;
          m->dof_moment[2 * nde++ + 1] = a;
        }
    m->dof_momnum[i] = nde - m->dof_momadr[i];
  }

  // keyframes
  copy_real(m->key_qpos, mj->key_qpos, (size_t)mj->nkey * mj->nq);
  copy_real(m->key_qvel, mj->key_qvel, (size_t)mj->nkey * mj->nv);
  copy_real(m->key_ctrl, mj->key_ctrl, (size_t)mj->nkey * mj->nu);

  sim_collision_fill(mj, m);
  sim_constraint_fill(mj, m);

  *out = m;
  return SIM_OK;
}

// Widens the mass-matrix pattern so that every dof row lists all its ancestor dofs (increasing, diagonal
// last), as MuJoCo's layout without its simple-body shortcut (sim_param_fields.h); M_extra marks the entries
// added. The model's arrays move into a new buffer (nM grows); nothing changes when no row was short.
int sim_model_full_mass_pattern(SimModel* m) {
  int nv = m->nv, nM = 0, nMfac = 0, shorter = 0;
  for (int i = 0; i < nv; i++) {
    int n = 0;
    for (int j = i; j >= 0; j = m->dof_parentid[j]) n++;
    nM += n;
    nMfac += n * (n - 1) / 2;  // every row lists all its ancestors: row k's diag (diag + 1) / 2 updates all apply
    shorter |= n != m->M_rownnz[i];
  }
  if (!shorter) return SIM_OK;
  SimModel old = *m;
  m->nM = nM;
  m->nMfac = nMfac;
  if (model_alloc(m)) {
    *m = old;
    return SIM_ERR_ALLOC;
  }
#define X(type, name, count, width) \
  if (m->count == old.count) memcpy(m->name, old.name, sizeof(type) * (size_t)m->count * (width));
  SIM_MODEL_FIELDS
#undef X
  int adr = 0;
  for (int i = 0; i < nv; i++) {
    int n = 0;
    for (int j = i; j >= 0; j = m->dof_parentid[j]) n++;
    m->M_rowadr[i] = adr;
    m->M_rownnz[i] = n;
    int k = adr + n;  // ancestors from the diagonal down, written from the row's end
    for (int j = i; j >= 0; j = m->dof_parentid[j]) {
      k--;
      m->M_colind[k] = j;
      int stored = 0;  // was (i, j) in the compiled row?
      for (int q = old.M_rowadr[i]; q < old.M_rowadr[i] + old.M_rownnz[i]; q++) stored |= old.M_colind[q] == j;
      m->M_extra[k] = !stored;
    }
    adr += n;
  }
  sim_M_tables_fill(m);
  free(old.buffer);
  return SIM_OK;
}

int sim_data_create(const SimModel* m, int nworld, SimData** out) {
  *out = NULL;
  if (nworld < 1) return SIM_ERR_ARG;
  SimData* d = (SimData*)calloc(1, sizeof(SimData));
  if (!d) return SIM_ERR_ALLOC;
  size_t total = 0;
#define X(type, name, count, width) total += align_up(sizeof(type) * (size_t)nworld * (size_t)m->count * (width));
  SIM_DATA_FIELDS
#undef X
  char* buf = (char*)calloc(1, total ? total : 1);
  if (!buf) {
    free(d);
    return SIM_ERR_ALLOC;
  }
  size_t off = 0;
#define X(type, name, count, width) \
  d->name = (type*)(buf + off);     \
  off += align_up(sizeof(type) * (size_t)nworld * (size_t)m->count * (width));
  SIM_DATA_FIELDS
#undef X
  d->buffer = buf;
  d->nbuffer = total;
  d->nworld = nworld;
  sim_world_strides(m, d->world_stride);
  sim_reset(m, d, -1, -1);
  if (m->prm) sim_param_reset(m, d, -1);
  *out = d;
  return SIM_OK;
}

void sim_data_free(SimData* d) {
  if (!d) return;
  free(d->buffer);
  free(d);
}

void sim_poison(const SimModel* m, SimData* d) {
  size_t nw = (size_t)d->nworld;
  const sim_real nan = (sim_real)NAN;
#define X(type, name, count, width)                                                              \
  if (sizeof(type) == sizeof(sim_real) && strcmp(#name, "qpos") && strcmp(#name, "qvel") &&      \
      strcmp(#name, "ctrl") && strcmp(#name, "qacc_warmstart") && strcmp(#name, "time") &&       \
      strcmp(#name, "qfrc_applied") && strncmp(#name, "prm_", 4) && strcmp(#type, "int")) {      \
    sim_real* p = (sim_real*)(void*)d->name;                                                     \
    for (size_t k = 0; k < nw * (size_t)m->count * (width); k++) p[k] = nan;                     \
  }
  SIM_DATA_FIELDS
#undef X
}
