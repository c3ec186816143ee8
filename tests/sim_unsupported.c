// sim_unsupported: a model with unsupported collision geoms is refused, and the message names each
// offending element and its type (and no visual-only geom).
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

int main(void) {
  char err[4096] = "";
  void* mj = NULL;
  int rc = sim_load_mjcf("test/unsupported_cylinder.xml", NULL, &mj, err, sizeof(err));
  TEST_CHECK(rc == 0, "load failed: %s", err);
  if (rc) return test_report("sim_unsupported");
  int n = sim_check_model(mj, err, sizeof(err));
  TEST_CHECK(n == 2, "expected 2 offending elements, got %d:\n%s", n, err);
  TEST_CHECK(strstr(err, "geom 'can_body' (cylinder)") != NULL, "message lacks the cylinder: %s", err);
  TEST_CHECK(strstr(err, "geom 'egg' (ellipsoid)") != NULL, "message lacks the ellipsoid: %s", err);
  TEST_CHECK(strstr(err, "visual_only") == NULL, "visual-only geom reported: %s", err);
  SimModel* m = NULL;
  rc = sim_model_import(mj, &m, err, sizeof(err));
  TEST_CHECK(rc == SIM_ERR_UNSUPPORTED && m == NULL, "import accepted an unsupported model (rc %d)", rc);
  sim_free_mjmodel(mj);
  // a missing file is an I/O error naming the file
  rc = sim_load_mjcf("test/no_such_model.xml", NULL, &mj, err, sizeof(err));
  TEST_CHECK(rc == SIM_ERR_IO && strstr(err, "no_such_model.xml"), "missing file: rc %d msg %s", rc, err);
  return test_report("sim_unsupported");
}
