// outpath.h: which paths a command may write. An output is written (temp + rename) only where nothing exists
// yet or a regular file does that is none of the command's inputs and no other output of it: renaming over a
// device, FIFO or socket would replace it with a regular file, over a symlink would drop the link, and over an
// input would destroy it. Paths are compared after resolving their directory (a/../b, ./b and links to
// directories name the same file) and, where the file exists, by device and inode. Needs _DEFAULT_SOURCE (or
// _GNU_SOURCE) defined before the first include (lstat, realpath, S_ISSOCK).
#ifndef ADJ_OUTPATH_H
#define ADJ_OUTPATH_H
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// canonical name of path: realpath of its directory + '/' + its last component (the file need not exist)
static inline void outpath_canon(const char* path, char* out, size_t outlen) {
  char dir[4096], real[4096];
  const char* slash = strrchr(path, '/');
  const char* base = slash ? slash + 1 : path;
  size_t dn = slash ? (slash > path ? (size_t)(slash - path) : 1) : 0;  // "/x": the root
  if (dn >= sizeof(dir)) dn = sizeof(dir) - 1;
  if (dn) memcpy(dir, path, dn);
  else dir[dn++] = '.';
  dir[dn] = 0;
  size_t pn = strlen(path), rn, bn = strlen(base);
  if (realpath(dir, real) && (rn = strlen(real)) + 1 + bn < outlen) {
    memcpy(out, real, rn);
    out[rn] = '/';
    memcpy(out + rn + 1, base, bn + 1);
  } else if (outlen) {  // unresolvable directory: the path as given
    if (pn >= outlen) pn = outlen - 1;
    memcpy(out, path, pn);
    out[pn] = 0;
  }
}

static inline int outpath_same(const char* a, const char* b) {
  struct stat sa, sb;
  if (!stat(a, &sa) && !stat(b, &sb)) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char ca[4096 + 256], cb[4096 + 256];
  outpath_canon(a, ca, sizeof(ca));
  outpath_canon(b, cb, sizeof(cb));
  return !strcmp(ca, cb);
}

// 0 when `path` (given with option `flag`) may be written; else 2 after a message naming it. inputs / outputs:
// the command's other paths (NULL entries are skipped); outputs are those given before this one.
static inline int outpath_check(const char* cmd, const char* flag, const char* path, const char* const* inputs,
                                int ninputs, const char* const* outputs, int noutputs) {
  struct stat st;
  if (!*path) return fprintf(stderr, "%s: %s: empty path\n", cmd, flag), 2;
  if (!lstat(path, &st)) {
    const char* what = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISREG(st.st_mode)  ? NULL
                                              : "not a regular file";
    if (what) {
      fprintf(stderr, "%s: %s %s: is %s; outputs are written only as new or regular files\n", cmd, flag, path, what);
      return 2;
    }
  }
  for (int i = 0; i < ninputs; i++)
    if (inputs[i] && outpath_same(path, inputs[i])) {
      fprintf(stderr, "%s: %s %s: is the input %s; it would be overwritten\n", cmd, flag, path, inputs[i]);
      return 2;
    }
  for (int i = 0; i < noutputs; i++)
    if (outputs[i] && outpath_same(path, outputs[i])) {
      fprintf(stderr, "%s: %s %s: is also another output of this command\n", cmd, flag, path);
      return 2;
    }
  return 0;
}
#endif
