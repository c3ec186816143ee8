// ckpt_poke: damages a checkpoint as a valid HDF5 file for the robustness tests and the fuzzer (the bytes stay
// well-formed and checksummed, the values do not):
//   ckpt_poke FILE DATASET INDEX VALUE   element INDEX (flat) of DATASET := VALUE ("nan", "inf", "-inf", numbers)
//   ckpt_poke FILE DATASET --delete      unlinks DATASET
//   ckpt_poke FILE --list                dataset names with their element counts, one a line
// Exit 0, or 1 with a message.
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static herr_t list_one(hid_t obj, const char* name, const H5O_info_t* info, void* op) {
  (void)op;
  if (info->type != H5O_TYPE_DATASET) return 0;
  hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT), sp = H5Dget_space(ds);
  printf("%s %lld\n", name, (long long)H5Sget_simple_extent_npoints(sp));
  H5Sclose(sp), H5Dclose(ds);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && !strcmp(argv[2], "--list")) {
    hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return fprintf(stderr, "ckpt_poke: cannot open %s\n", argv[1]), 1;
    H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, list_one, NULL, H5O_INFO_BASIC);
    H5Fclose(f);
    return 0;
  }
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: ckpt_poke FILE DATASET INDEX VALUE | FILE DATASET --delete | FILE --list\n");
    return 1;
  }
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return fprintf(stderr, "ckpt_poke: cannot open %s\n", argv[1]), 1;
  int rc = 1;
  if (argc == 4 && !strcmp(argv[3], "--delete")) {
    rc = H5Ldelete(f, argv[2], H5P_DEFAULT) < 0;
  } else if (argc == 5) {
    hid_t ds = H5Dopen2(f, argv[2], H5P_DEFAULT);
    if (ds >= 0) {
      hid_t sp = H5Dget_space(ds);
      hssize_t n = H5Sget_simple_extent_npoints(sp);
      long long idx = atoll(argv[3]);
      double* buf = (double*)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
      // read and write through float64: the file type (float32, int64, ...) converts on each side
      if (buf && idx >= 0 && idx < n && H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        buf[idx] = strtod(argv[4], NULL);
        hid_t dx = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_type_conv_cb(dx, NULL, NULL);
        rc = H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dx, buf) < 0;
        H5Pclose(dx);
      }
      free(buf);
      H5Sclose(sp);
      H5Dclose(ds);
    }
  }
  if (H5Fclose(f) < 0) rc = 1;
  if (rc) fprintf(stderr, "ckpt_poke: %s: %s failed\n", argv[1], argv[2]);
  return rc;
}
