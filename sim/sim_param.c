// sim_param.c: per-world parameter overrides (host API of sim.h; the arrays are in sim_param_fields.h).
// Compiled once per precision. Values cross the API in double, as the model's constants come from mjModel:
// the float32 build keeps the COM offsets and masses in double too (the geometry is computed in double there,
// and sim_param_get returns what was set) and rounds them for the arithmetic, and the derived subtree masses
// are summed in double from the given masses, as MuJoCo's compiler sums them, so values equal to the model's
// reproduce its constants bit for bit.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int sim_params_enable(SimModel* m) {
  if (!m || m->on_device) return SIM_ERR_ARG;
  if (m->prm) return SIM_OK;
  int rc = sim_model_full_mass_pattern(m);  // simple bodies' rows: a COM override couples their dofs
  if (rc) return rc;
  m->prm = 1;
  return SIM_OK;
}

int sim_param_size(const SimModel* m, int param) {
  switch (param) {
    case SIM_PARAM_BODY_MASS: return m->nbody;
    case SIM_PARAM_BODY_IPOS: return 3 * m->nbody;
    case SIM_PARAM_GEOM_FRICTION: return 3 * m->ngeom;
    default: return SIM_ERR_ARG;
  }
}

// world w's copy of the model's values (w valid, overrides enabled)
static void reset_world(const SimModel* m, SimData* d, int w) {
  size_t nb = (size_t)m->nbody, ng = (size_t)m->ngeom;
  memcpy(d->prm_body_mass + w * nb, m->body_mass, sizeof(sim_real) * nb);
  memcpy(d->prm_body_subtreemass + w * nb, m->body_subtreemass, sizeof(sim_real) * nb);
  memcpy(d->prm_body_ipos + w * 3 * nb, m->body_ipos, sizeof(sim_real) * 3 * nb);
  memcpy(d->prm_geom_friction + w * 3 * ng, m->geom_friction, sizeof(sim_real) * 3 * ng);
#ifndef SIM_DOUBLE
  memcpy(d->geo_prm_body_ipos + w * 3 * nb, m->geo_body_ipos, sizeof(double) * 3 * nb);
  memcpy(d->prm_body_mass_f64 + w * nb, m->body_mass_f64, sizeof(double) * nb);
#endif
}

int sim_param_reset(const SimModel* m, SimData* d, int w) {
  if (!m || !d || !m->prm || w >= d->nworld) return SIM_ERR_ARG;
  for (int i = 0; i < d->nworld; i++)
    if (w < 0 || i == w) reset_world(m, d, i);
  return SIM_OK;
}

// the values a world may take: finite; masses and frictions >= 0; the world body (0) keeps mass 0 at the origin
static int check_values(const SimModel* m, int param, const double* v) {
  int n = sim_param_size(m, param);
  for (int k = 0; k < n; k++) {
    if (!isfinite(v[k])) return SIM_ERR_ARG;
    if (param != SIM_PARAM_BODY_IPOS && v[k] < 0) return SIM_ERR_ARG;
  }
  if (param == SIM_PARAM_BODY_MASS && v[0] != 0) return SIM_ERR_ARG;
  if (param == SIM_PARAM_BODY_IPOS && (v[0] != 0 || v[1] != 0 || v[2] != 0)) return SIM_ERR_ARG;
  return SIM_OK;
}

// world w <- values v of param; acc: (nbody) double scratch for the subtree sums
static void set_world(const SimModel* m, SimData* d, int w, int param, const double* v, double* acc) {
  size_t nb = (size_t)m->nbody, ng = (size_t)m->ngeom;
  if (param == SIM_PARAM_BODY_MASS) {
    // subtree masses as MuJoCo's set0: own mass, then each body (decreasing id) into its parent
    for (size_t i = 0; i < nb; i++) acc[i] = v[i];
    for (size_t i = nb; i-- > 1;) acc[m->body_parentid[i]] += acc[i];
    for (size_t i = 0; i < nb; i++) {
      d->prm_body_mass[w * nb + i] = (sim_real)v[i];
      d->prm_body_subtreemass[w * nb + i] = (sim_real)acc[i];
    }
#ifndef SIM_DOUBLE
    memcpy(d->prm_body_mass_f64 + w * nb, v, sizeof(double) * nb);
#endif
  } else if (param == SIM_PARAM_BODY_IPOS) {
    for (size_t k = 0; k < 3 * nb; k++) d->prm_body_ipos[w * 3 * nb + k] = (sim_real)v[k];
#ifndef SIM_DOUBLE
    memcpy(d->geo_prm_body_ipos + w * 3 * nb, v, sizeof(double) * 3 * nb);
#endif
  } else {
    for (size_t k = 0; k < 3 * ng; k++) d->prm_geom_friction[w * 3 * ng + k] = (sim_real)v[k];
  }
}

int sim_param_set(const SimModel* m, SimData* d, int w, int param, const double* values) {
  if (!m || !d || !values || !m->prm || w >= d->nworld || sim_param_size(m, param) < 0) return SIM_ERR_ARG;
  if (check_values(m, param, values)) return SIM_ERR_ARG;
  double* acc = (double*)malloc(sizeof(double) * (size_t)(m->nbody > 0 ? m->nbody : 1));
  if (!acc) return SIM_ERR_ALLOC;
  for (int i = 0; i < d->nworld; i++)
    if (w < 0 || i == w) set_world(m, d, i, param, values, acc);
  free(acc);
  return SIM_OK;
}

int sim_param_get(const SimModel* m, const SimData* d, int w, int param, double* values) {
  int n = m && values ? sim_param_size(m, param) : -1;
  if (n < 0 || (m->prm && (!d || w < 0 || w >= d->nworld))) return SIM_ERR_ARG;
  size_t off = m->prm ? (size_t)w * (size_t)n : 0;  // each param's per-world block is n values
#ifndef SIM_DOUBLE
  if (param == SIM_PARAM_BODY_IPOS) {  // the double values the kinematics uses
    memcpy(values, m->prm ? d->geo_prm_body_ipos + off : m->geo_body_ipos, sizeof(double) * (size_t)n);
    return SIM_OK;
  }
  if (param == SIM_PARAM_BODY_MASS) {  // the double values the subtree masses are summed from
    memcpy(values, m->prm ? d->prm_body_mass_f64 + off : m->body_mass_f64, sizeof(double) * (size_t)n);
    return SIM_OK;
  }
#endif
  const sim_real* src = param == SIM_PARAM_BODY_MASS ? (m->prm ? d->prm_body_mass : m->body_mass)
                        : param == SIM_PARAM_BODY_IPOS ? (m->prm ? d->prm_body_ipos : m->body_ipos)
                                                       : (m->prm ? d->prm_geom_friction : m->geom_friction);
  for (int k = 0; k < n; k++) values[k] = (double)src[off + (size_t)k];
  return SIM_OK;
}
