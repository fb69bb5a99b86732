/* src/ledger/io.c: the ledger's file helpers. Every byte the ledger writes
 * goes through ft_lio_pwrite, so tests can make the n-th write fail (disk
 * full, EIO) or tear writes into small pieces, and check that nothing earlier
 * is damaged. Also the hash and hex helpers (XXH3-128). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "ledger/ledger.h"

/* Process-wide test hooks and the write counter: atomic, since ledgers
 * are written from many threads (each under its own ledger's lock). */
static atomic_long fault_nth;   /* the write (counted from arming) that fails; 0: none */
static atomic_int fault_err;
static atomic_size_t fault_chunk;
static atomic_long write_count;
static atomic_bool no_sync;

void ft_ledger_fault_nosync(bool on) { atomic_store(&no_sync, on); }

int ft_lio_fsync(int fd) { return atomic_load(&no_sync) ? 0 : fsync(fd); }

void ft_ledger_fault_inject(long nth, int err) {
  atomic_store(&fault_err, err);
  atomic_store(&fault_nth, nth > 0 ? atomic_load(&write_count) + nth : 0);
}

void ft_ledger_fault_chunk(size_t chunk) { atomic_store(&fault_chunk, chunk); }

long ft_ledger_write_count(void) { return atomic_load(&write_count); }

/* One write() loop, without the fault hook. */
static int pwrite_loop(int fd, const uint8_t *p, size_t len, uint64_t off) {
  while (len) {
    size_t n = len, chunk = atomic_load(&fault_chunk);
    if (chunk && n > chunk) n = chunk;
    ssize_t w = pwrite(fd, p, n, (off_t)off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    off += (uint64_t)w;
    len -= (size_t)w;
  }
  return 0;
}

int ft_lio_pwrite(int fd, const void *buf, size_t len, uint64_t off) {
  long n = atomic_fetch_add(&write_count, 1) + 1, armed = n;
  if (atomic_compare_exchange_strong(&fault_nth, &armed, 0)) {
    /* A realistic failure: part of the data reaches the file first. */
    pwrite_loop(fd, buf, len / 2, off);
    int e = atomic_load(&fault_err);
    errno = e ? e : EIO;
    return -1;
  }
  return pwrite_loop(fd, buf, len, off);
}

int ft_lio_read_file(const char *path, uint8_t **data, size_t *len) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  size_t cap = (size_t)st.st_size, n = 0;
  uint8_t *buf = malloc(cap + 1);
  if (!buf) {
    close(fd);
    errno = ENOMEM;
    return -1;
  }
  for (;;) {
    if (n == cap) {
      /* The file grew while we read (a live writer): read what is there. */
      uint8_t *nb = realloc(buf, cap * 2 + 4097);
      if (!nb) { free(buf); close(fd); errno = ENOMEM; return -1; }
      buf = nb;
      cap = cap * 2 + 4096;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(buf);
      close(fd);
      errno = e;
      return -1;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = 0;
  *data = buf;
  *len = n;
  return 0;
}

int ft_lio_fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = ft_lio_fsync(fd);
  close(fd);
  return r;
}

int ft_lio_write_atomic(const char *path, const void *data, size_t len, bool sync) {
  char *tmp = ft_lio_path("%s.tmp", path);
  if (!tmp) { errno = ENOMEM; return -1; }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int r = fd < 0 ? -1 : 0;
  if (!r) r = ft_lio_pwrite(fd, data, len, 0);
  if (!r && sync) r = ft_lio_fsync(fd);
  int e = errno;
  if (fd >= 0 && close(fd) < 0 && !r) { r = -1; e = errno; }
  if (!r) r = rename(tmp, path);
  if (r) {
    e = errno;
    unlink(tmp);
  } else if (sync) {
    /* The rename itself must reach the disk: sync the directory. */
    char *slash = strrchr(tmp, '/');
    if (slash) {
      *slash = 0;
      r = ft_lio_fsync_dir(tmp);
      e = errno;
    }
  }
  free(tmp);
  errno = e;
  return r;
}

int ft_lio_mkdir(const char *path) {
  if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
  return -1;
}

char *ft_lio_path(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

void ft_lhash128(const void *data, size_t len, uint8_t out[16]) {
  XXH128_hash_t h = XXH3_128bits(data, len);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  memcpy(out, c.digest, 16);
}

void ft_lhex(const uint8_t h[16], char out[33]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = digits[h[i] >> 4];
    out[2 * i + 1] = digits[h[i] & 15];
  }
  out[32] = 0;
}

void ft_lhash_hex(const void *data, size_t len, char out[33]) {
  uint8_t h[16];
  ft_lhash128(data, len, h);
  ft_lhex(h, out);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool ft_lunhex(const char *s, uint8_t out[16]) {
  for (int i = 0; i < 16; i++) {
    int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return s[32] == 0;
}

bool ft_lis_hex32(const char *s) {
  uint8_t tmp[16];
  return s && strlen(s) == 32 && ft_lunhex(s, tmp);
}
