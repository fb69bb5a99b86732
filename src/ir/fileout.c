/* src/ir/fileout.c: writing an output file so that it is never left half
 * written. Every file the library or its tools produce (arrays, AOT
 * objects and headers, exports, compile-cache entries) goes to a temporary
 * file beside its destination, which is renamed over it only when complete:
 * a full disk, a write error or a crash leaves the destination as it was
 * (absent, or its previous content) and no temporary behind. The ledger has
 * its own writer (src/ledger/io.c) because it also syncs. Test builds can
 * make the n-th write, close or rename fail (ft__file_fault). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "ir.h"

static atomic_long op_count;   /* writes, closes and renames since start */
static atomic_long fault_at;   /* the op that fails (0: none) */
static atomic_int fault_errno;

void ft__file_fault(long nth, int err) {
  atomic_store(&fault_errno, err);
  atomic_store(&fault_at, nth > 0 ? atomic_load(&op_count) + nth : 0);
}

/* Counts one operation; true when it is the one armed to fail. */
static bool faulted(void) {
  long n = atomic_fetch_add(&op_count, 1) + 1, at = atomic_load(&fault_at);
  if (!at || n != at) return false;
  errno = atomic_load(&fault_errno);
  return true;
}

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    if (faulted()) return -1;
    size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
    ssize_t w = write(fd, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

char *ft__file_tmp_name(const char *path) {
  static atomic_ulong serial;
  unsigned long k = atomic_fetch_add(&serial, 1);
  size_t n = strlen(path) + 64;
  char *t = malloc(n);
  if (t) snprintf(t, n, "%s.tmp.%ld.%lu", path, (long)getpid(), k);
  return t;
}

ft_status ft__file_commit(ft_ctx *ctx, const char *what, const char *tmp, const char *path) {
  if (faulted() || rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    return ft_set_error(ctx, FT_ERR_IO, "%s: cannot write '%s': rename failed: %s (the file was "
                        "not changed)", what, path, strerror(e));
  }
  return FT_OK;
}

ft_status ft_file_write(ft_ctx *ctx, const char *what, const char *path, const void *data,
                        size_t len) {
  if (!path || (len && !data)) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: NULL argument", what);
  char *tmp = ft__file_tmp_name(path);
  if (!tmp) return ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", what);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return ft_set_error(ctx, FT_ERR_IO, "%s: cannot create '%s': %s", what, path, strerror(e));
  }
  int r = write_all(fd, data, len), e = errno;
  if (!r && faulted()) r = -1, e = errno; /* an injected close failure */
  if (close(fd) && !r) r = -1, e = errno;
  if (r) {
    unlink(tmp);
    free(tmp);
    return ft_set_error(ctx, FT_ERR_IO, "%s: cannot write '%s': %s (the file was not changed)",
                        what, path, strerror(e));
  }
  ft_status st = ft__file_commit(ctx, what, tmp, path);
  free(tmp);
  return st;
}
