// sim_load.c: MJCF loading through MuJoCo's compiler, the asset search path, and the check that refuses
// every element this engine does not implement (listing each by name and type).
#include <mujoco/mujoco.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim_common.h"
#include "sim_model.h"

void sim_load_options_default(SimLoadOptions* o) {
  o->integrator = -1;
  o->timestep = -1;
  o->iterations = -1;
  o->ls_iterations = -1;
  o->tolerance = -1;
  o->disable_add = 0;
  o->enable_add = 0;
  o->gear_scale = -1;
  o->nconmax = 0;
  o->nefcmax = 0;
}

static int file_exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int sim_find_asset(const char* name, char* path, size_t pathlen) {
  if (file_exists(name)) {
    snprintf(path, pathlen, "%s", name);
    return SIM_OK;
  }
  if (name[0] == '/') return SIM_ERR_IO;
  const char* env = getenv("ADJOINT_ASSETS");
  const char* dirs[3] = {env && env[0] ? env : NULL, "assets", "../shared/assets"};
  for (int i = 0; i < 3; i++) {
    if (!dirs[i]) continue;
    snprintf(path, pathlen, "%s/%s", dirs[i], name);
    if (file_exists(path)) return SIM_OK;
  }
  return SIM_ERR_IO;
}

int sim_load_mjcf(const char* name, const SimLoadOptions* opt, void** out, char* err, size_t errlen) {
  char path[4096], mjerr[1024] = "";
  *out = NULL;
  if (sim_find_asset(name, path, sizeof(path))) {
    snprintf(err, errlen, "%s: file not found (searched ., $ADJOINT_ASSETS, ./assets, ../shared/assets)", name);
    return SIM_ERR_IO;
  }
  mjModel* m = mj_loadXML(path, NULL, mjerr, sizeof(mjerr));
  if (!m) {
    snprintf(err, errlen, "%s: %s", path, mjerr);
    return SIM_ERR_MJCF;
  }
  if (opt) {
    if (opt->integrator >= 0) m->opt.integrator = opt->integrator;
    if (opt->timestep > 0) m->opt.timestep = opt->timestep;
    if (opt->iterations >= 0) m->opt.iterations = opt->iterations;
    if (opt->ls_iterations >= 0) m->opt.ls_iterations = opt->ls_iterations;
    if (opt->tolerance >= 0) m->opt.tolerance = opt->tolerance;
    m->opt.disableflags |= opt->disable_add;
    m->opt.enableflags |= opt->enable_add;
    if (opt->gear_scale > 0)  // all six components (the transmission scales them alike)
      for (int i = 0; i < 6 * m->nu; i++) m->actuator_gear[i] *= opt->gear_scale;
  }
  *out = m;
  return SIM_OK;
}

void sim_free_mjmodel(void* m) {
  if (m) mj_deleteModel((mjModel*)m);
}

// ---- model check ----
typedef struct {
  char* buf;
  size_t len, used;
  int count;
} Msg;

static void add(Msg* msg, const char* fmt, ...) {
  msg->count++;
  if (!msg->buf || msg->used + 1 >= msg->len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg->buf + msg->used, msg->len - msg->used, fmt, ap);
  va_end(ap);
  if (n > 0) msg->used = msg->used + (size_t)n < msg->len ? msg->used + (size_t)n : msg->len - 1;
}

static const char* name_of(const mjModel* m, mjtObj type, int id, char* buf, size_t len) {
  const char* n = mj_id2name(m, type, id);
  if (n && n[0]) return n;
  snprintf(buf, len, "#%d", id);
  return buf;
}

static const char* geom_type_name(int t) {
  static const char* names[] = {"plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"};
  return (t >= 0 && t < 9) ? names[t] : "unknown";
}

int sim_check_model(const void* mjmodel, char* out, size_t outlen) {
  const mjModel* m = (const mjModel*)mjmodel;
  Msg msg = {out, outlen, 0, 0};
  char nb[64];
  if (out && outlen) out[0] = 0;

  for (int g = 0; g < m->ngeom; g++) {
    int t = m->geom_type[g];
    int collides = m->geom_contype[g] || m->geom_conaffinity[g];
    const char* n = name_of(m, mjOBJ_GEOM, g, nb, sizeof(nb));
    if (collides && !(t == mjGEOM_PLANE || t == mjGEOM_SPHERE || t == mjGEOM_CAPSULE || t == mjGEOM_BOX))
      add(&msg, "geom '%s' (%s): collision geom type not supported (plane, sphere, capsule, box only; "
                "set contype=conaffinity=0 for visual geoms)\n", n, geom_type_name(t));
    if (collides && m->geom_condim[g] != 1 && m->geom_condim[g] != 3)
      add(&msg, "geom '%s' (%s): condim %d not supported (1 or 3)\n", n, geom_type_name(t), m->geom_condim[g]);
    if (collides && m->geom_adhesion && m->geom_adhesion[g] != 0)
      add(&msg, "geom '%s' (%s): adhesion not supported\n", n, geom_type_name(t));
  }
  for (int i = 0; i < m->npair; i++) {
    if (m->pair_dim[i] != 1 && m->pair_dim[i] != 3)
      add(&msg, "pair '%s' (contact pair): condim %d not supported (1 or 3)\n",
          name_of(m, mjOBJ_PAIR, i, nb, sizeof(nb)), m->pair_dim[i]);
  }
  for (int i = 0; i < m->neq; i++) {
    static const char* eqn[] = {"connect", "weld", "joint", "tendon", "flex", "flexvert", "flexstrain"};
    int t = m->eq_type[i];
    add(&msg, "equality '%s' (%s): equality constraints not supported\n", name_of(m, mjOBJ_EQUALITY, i, nb, sizeof(nb)),
        (t >= 0 && t < 7) ? eqn[t] : "equality");
  }
  for (int i = 0; i < m->ntendon; i++) {
    const char* n = name_of(m, mjOBJ_TENDON, i, nb, sizeof(nb));
    int adr = m->tendon_adr[i];
    if (m->tendon_num[i] < 1 || m->wrap_type[adr] != mjWRAP_JOINT)
      add(&msg, "tendon '%s' (spatial): spatial tendons not supported (fixed tendons only)\n", n);
    else
      for (int k = 0; k < m->tendon_num[i]; k++) {
        int j = m->wrap_objid[adr + k];
        if (m->jnt_type[j] != mjJNT_HINGE && m->jnt_type[j] != mjJNT_SLIDE)
          add(&msg, "tendon '%s' (fixed): wraps a ball or free joint\n", n);
      }
    if (m->tendon_armature[i] != 0) add(&msg, "tendon '%s' (fixed): tendon armature not supported\n", n);
    if (m->tendon_actfrclimited[i]) add(&msg, "tendon '%s' (fixed): actuatorfrcrange not supported\n", n);
  }
  if (m->nflex) add(&msg, "model has %d flex objects: flex not supported\n", (int)m->nflex);
  if (m->nplugin) add(&msg, "model has %d plugin instances: plugins not supported\n", (int)m->nplugin);
  if (m->nmocap) add(&msg, "model has %d mocap bodies: mocap not supported\n", (int)m->nmocap);
  if (m->nu != m->nactuator)
    add(&msg, "model has multi-input actuators (nu %d != nactuator %d): not supported\n", (int)m->nu, (int)m->nactuator);
  for (int i = 0; i < m->nactuator; i++) {
    const char* n = name_of(m, mjOBJ_ACTUATOR, i, nb, sizeof(nb));
    int trn = m->actuator_trntype[i];
    if (trn == mjTRN_JOINT) {
      int j = m->actuator_trnid[2 * i];
      if (m->jnt_type[j] != mjJNT_HINGE && m->jnt_type[j] != mjJNT_SLIDE)
        add(&msg, "actuator '%s' (joint): transmission on a ball or free joint not supported\n", n);
    } else if (trn != mjTRN_TENDON) {
      add(&msg, "actuator '%s': transmission type %d not supported (joint, tendon only)\n", n, trn);
    }
    if (m->actuator_dyntype[i] != mjDYN_NONE)
      add(&msg, "actuator '%s': activation dynamics (dyntype %d) not supported\n", n, m->actuator_dyntype[i]);
    if (m->actuator_gaintype[i] != mjGAIN_FIXED && m->actuator_gaintype[i] != mjGAIN_AFFINE)
      add(&msg, "actuator '%s': gain type %d not supported (fixed, affine)\n", n, m->actuator_gaintype[i]);
    if (m->actuator_biastype[i] != mjBIAS_NONE && m->actuator_biastype[i] != mjBIAS_AFFINE)
      add(&msg, "actuator '%s': bias type %d not supported (none, affine)\n", n, m->actuator_biastype[i]);
    if (m->actuator_delay && m->actuator_delay[i] != 0) add(&msg, "actuator '%s': delay not supported\n", n);
    if (m->actuator_plugin[i] >= 0) add(&msg, "actuator '%s': plugin actuator not supported\n", n);
    for (int k = 3; k < mjNGAIN; k++)
      if (m->actuator_gaintype[i] == mjGAIN_AFFINE && m->actuator_gainprm[mjNGAIN * i + k] != 0) {
        add(&msg, "actuator '%s': gainprm[%d] nonzero not supported\n", n, k);
        break;
      }
  }
  for (int b = 0; b < m->nbody; b++)
    if (m->body_gravcomp[b] != 0)
      add(&msg, "body '%s': gravcomp not supported\n", name_of(m, mjOBJ_BODY, b, nb, sizeof(nb)));
  if (m->opt.integrator == mjINT_IMPLICIT)
    add(&msg, "option integrator 'implicit' not supported (Euler, RK4, implicitfast)\n");
  if (m->opt.cone == mjCONE_ELLIPTIC) add(&msg, "option cone 'elliptic' not supported (pyramidal)\n");
  if (m->opt.solver != mjSOL_NEWTON) add(&msg, "option solver %d not supported (Newton)\n", m->opt.solver);
  if (m->opt.density > 0 || m->opt.viscosity > 0) add(&msg, "option density/viscosity: fluid forces not supported\n");
  if (m->opt.noslip_iterations > 0) add(&msg, "option noslip_iterations: noslip not supported\n");
  if (m->opt.enableflags & mjENBL_OVERRIDE) add(&msg, "option flag override not supported\n");
  if (m->opt.enableflags & mjENBL_SLEEP) add(&msg, "option flag sleep not supported\n");
  if (m->opt.enableflags & mjENBL_DIAGEXACT) add(&msg, "option flag diagexact not supported\n");
  // sensors are accepted; the engine does not compute them (callers note this once on stderr)
  return msg.count;
}

int sim_model_has_constraints(const void* mjmodel) {
  const mjModel* m = (const mjModel*)mjmodel;
  int dis = m->opt.disableflags;
  if (dis & mjDSBL_CONSTRAINT) return 0;
  if (!(dis & mjDSBL_LIMIT)) {
    for (int j = 0; j < m->njnt; j++)
      if (m->jnt_limited[j]) return 1;
    for (int t = 0; t < m->ntendon; t++)
      if (m->tendon_limited[t]) return 1;
  }
  if (!(dis & mjDSBL_FRICTIONLOSS)) {
    for (int i = 0; i < m->nv; i++)
      if (m->dof_frictionloss[i] > 0) return 1;
    for (int t = 0; t < m->ntendon; t++)
      if (m->tendon_frictionloss[t] > 0) return 1;
  }
  if (!(dis & mjDSBL_CONTACT)) {
    if (m->npair) return 1;
    for (int g = 0; g < m->ngeom; g++)
      if (m->geom_contype[g] || m->geom_conaffinity[g]) return 1;
  }
  return 0;
}
