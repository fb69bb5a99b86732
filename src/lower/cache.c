/* src/lower/cache.c: the compile cache (DESIGN.md §6). The key is the
 * XXH3-128 of everything the object code depends on: the canonical hash of
 * the jaxpr, its input avals, the options, the host CPU name and features,
 * and the library, codegen and LLVM versions. In memory, a key maps to
 * loaded code (shared by every ft_fn of that key); on disk, to an object
 * file whose bytes are checked against a stored XXH3-128 before use, so a
 * corrupt, truncated or foreign file is rebuilt, never trusted. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <pthread.h>
#include <llvm/Config/llvm-config.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lower/lower.h"

static void put(XXH3_state_t *s, const void *p, size_t n) { XXH3_128bits_update(s, p, n); }
static void puts_(XXH3_state_t *s, const char *str) { put(s, str, strlen(str) + 1); }

static void put_aval(XXH3_state_t *s, const ft_aval *a) {
  int32_t h[2] = {(int32_t)a->dtype, a->rank};
  put(s, h, sizeof h);
  put(s, a->dims, sizeof(int64_t) * (size_t)a->rank);
}

/* The identity of the code that generated an object: the version string
 * alone does not change when the library is rebuilt from changed sources,
 * and a stale object from an older build can be wrong or crash. So the key
 * also covers the file that holds this code (the shared library, or the
 * executable that linked the static one): its size, mtime and inode. */
static char build_ident[160];
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static void build_ident_init(void) {
  Dl_info info;
  struct stat st;
  if (dladdr((void *)&ft_cache_key_make, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
    snprintf(build_ident, sizeof build_ident, "%lld:%lld.%09ld:%llu", (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
  else
    snprintf(build_ident, sizeof build_ident, "unknown-build:%s %s", __DATE__, __TIME__);
}

static void key_make(const ft_jaxpr *j, int opt_level, const ft_plan_options *po, bool with_build,
                     ft_cache_key *key) {
  XXH3_state_t *s = XXH3_createState();
  uint8_t h[16];
  ft_jaxpr_hash(j, h);
  if (s) {
    XXH3_128bits_reset(s);
    puts_(s, "frankentrace-jit");
    int32_t v[6] = {FT_CODEGEN_VERSION, LLVM_VERSION_MAJOR, opt_level <= 0 ? 2 : opt_level,
                    po->no_fusion, po->no_compile, j->const_data != NULL};
    put(s, v, sizeof v);
    puts_(s, ft_version());
    if (with_build) {
      pthread_once(&build_once, build_ident_init);
      puts_(s, build_ident);
    }
    puts_(s, ft_jit_host_triple());
    puts_(s, ft_jit_host_cpu());
    puts_(s, ft_jit_host_features());
    put(s, h, sizeof h);
    for (int k = 0; k < j->n_const; k++) put_aval(s, &j->constvars[k]->aval);
    for (int k = 0; k < j->n_in; k++) put_aval(s, &j->invars[k]->aval);
    XXH128_hash_t r = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, r);
    memcpy(key->h, c.digest, 16);
  } else {
    memcpy(key->h, h, 16); /* no memory: degrade to the jaxpr hash alone, never hit */
    key->h[0] ^= 0xff;
  }
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) key->hex[2 * i] = hx[key->h[i] >> 4], key->hex[2 * i + 1] = hx[key->h[i] & 15];
  key->hex[32] = 0;
}

void ft_cache_key_make(const ft_jaxpr *j, int opt_level, const ft_plan_options *po,
                       ft_cache_key *key) {
  key_make(j, opt_level, po, true, key);
}

/* The same key without the build identity: what a ledger's compile record
 * names, so that any program linked with the same library version (ftc,
 * ftledger, a user's binary) recomputes it. */
void ft_cache_key_make_portable(const ft_jaxpr *j, int opt_level, const ft_plan_options *po,
                                ft_cache_key *key) {
  key_make(j, opt_level, po, false, key);
}

/* --------------------------------------------------------------- memory */
typedef struct mem_entry {
  uint8_t h[16];
  ft_jit_code *code;
} mem_entry;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static mem_entry *mem;
static int mem_n, mem_cap;

ft_jit_code *ft_cache_mem_get(const ft_cache_key *key) {
  ft_jit_code *c = NULL;
  pthread_mutex_lock(&mem_mu);
  for (int i = 0; i < mem_n; i++)
    if (!memcmp(mem[i].h, key->h, 16)) {
      c = mem[i].code;
      ft_jit_code_retain(c);
      break;
    }
  pthread_mutex_unlock(&mem_mu);
  return c;
}

void ft_cache_mem_put(const ft_cache_key *key, ft_jit_code *c) {
  pthread_mutex_lock(&mem_mu);
  for (int i = 0; i < mem_n; i++)
    if (!memcmp(mem[i].h, key->h, 16)) {
      pthread_mutex_unlock(&mem_mu);
      return;
    }
  if (mem_n == mem_cap) {
    int nc = mem_cap ? mem_cap * 2 : 16;
    mem_entry *nm = realloc(mem, sizeof *nm * (size_t)nc);
    if (!nm) {
      pthread_mutex_unlock(&mem_mu);
      return;
    }
    mem = nm;
    mem_cap = nc;
  }
  memcpy(mem[mem_n].h, key->h, 16);
  mem[mem_n].code = c;
  ft_jit_code_retain(c);
  mem_n++;
  pthread_mutex_unlock(&mem_mu);
}

void ft_cache_mem_clear(void) {
  pthread_mutex_lock(&mem_mu);
  for (int i = 0; i < mem_n; i++) ft_jit_code_release(mem[i].code);
  free(mem);
  mem = NULL;
  mem_n = mem_cap = 0;
  pthread_mutex_unlock(&mem_mu);
}

/* ----------------------------------------------------------------- disk */
/* File layout: "FTJITOB1" | key (16 bytes) | u64 length | XXH3-128 of the
 * object (16 bytes, canonical) | object bytes. */
static const char MAGIC[8] = {'F', 'T', 'J', 'I', 'T', 'O', 'B', '1'};
enum { HDR = 8 + 16 + 8 + 16 };

bool ft_cache_disk_enabled(void) {
  const char *c = getenv("FT_CACHE");
  return !(c && (!strcmp(c, "off") || !strcmp(c, "0")));
}

bool ft_cache_dir(const char *opts_dir, char *buf, size_t n) {
  const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME"), *env = getenv("FT_CACHE_DIR");
  int w;
  if (!ft_cache_disk_enabled()) return false;
  if (opts_dir && *opts_dir) w = snprintf(buf, n, "%s", opts_dir);
  else if (env && *env) w = snprintf(buf, n, "%s", env);
  else if (x && *x) w = snprintf(buf, n, "%s/frankentrace", x);
  else if (home && *home) w = snprintf(buf, n, "%s/.cache/frankentrace", home);
  else return false;
  return w > 0 && (size_t)w < n;
}

static void path_of(const char *dir, const ft_cache_key *key, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s.ftobj", dir, key->hex);
}

static void hash_of(const void *obj, size_t len, uint8_t out[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(obj, len));
  memcpy(out, c.digest, 16);
}

int ft_cache_disk_get(const char *dir, const ft_cache_key *key, void **obj, size_t *len) {
  char path[4200];
  path_of(dir, key, path, sizeof path);
  *obj = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t hdr[HDR];
  int res = -1;
  void *data = NULL;
  if (fread(hdr, 1, HDR, f) != HDR || memcmp(hdr, MAGIC, 8) || memcmp(hdr + 8, key->h, 16))
    goto done;
  uint64_t n;
  memcpy(&n, hdr + 24, 8);
  if (n == 0 || n > ((uint64_t)1 << 32)) goto done;
  data = malloc((size_t)n);
  if (!data) {
    res = 0;
    goto done;
  }
  if (fread(data, 1, (size_t)n, f) != n || fgetc(f) != EOF) goto done;
  uint8_t h[16];
  hash_of(data, (size_t)n, h);
  if (memcmp(h, hdr + 32, 16)) goto done;
  *obj = data;
  *len = (size_t)n;
  data = NULL;
  res = 1;
  utimensat(AT_FDCWD, path, NULL, 0);  /* recently used: evicted last (ft_cache_disk_trim) */
done:
  fclose(f);
  free(data);
  if (res < 0) unlink(path); /* never trusted; rebuilt by the caller */
  return res;
}

/* mkdir -p */
static bool make_dirs(const char *dir) {
  char tmp[4096];
  size_t n = strlen(dir);
  if (n >= sizeof tmp) return false;
  memcpy(tmp, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (tmp[i] != '/' && tmp[i] != 0) continue;
    char c = tmp[i];
    tmp[i] = 0;
    if (mkdir(tmp, 0755) && errno != EEXIST) return false;
    tmp[i] = c;
  }
  return true;
}

void ft_cache_disk_put(const char *dir, const ft_cache_key *key, const void *obj, size_t len) {
  if (!make_dirs(dir)) return;
  char path[4200];
  path_of(dir, key, path, sizeof path);
  /* unique per thread too: two compiles of one key may race */
  char *tmp = ft__file_tmp_name(path);
  FILE *f = tmp ? fopen(tmp, "wb") : NULL;
  if (!f) {
    free(tmp);
    return;
  }
  uint8_t hdr[HDR];
  uint64_t n = len;
  memcpy(hdr, MAGIC, 8);
  memcpy(hdr + 8, key->h, 16);
  memcpy(hdr + 24, &n, 8);
  hash_of(obj, len, hdr + 32);
  bool ok = fwrite(hdr, 1, HDR, f) == HDR && fwrite(obj, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path)) unlink(tmp);
  free(tmp);
  ft_cache_disk_trim(dir, ft_cache_max_bytes());
}

int64_t ft_cache_max_bytes(void) {
  const char *v = getenv("FT_CACHE_MAX");
  if (!v || !*v) return (int64_t)256 << 20;
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  double mul = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' || *end == 'm' ? 1048576.0
             : *end == 'G' || *end == 'g' ? 1073741824.0 : 1.0;
  if (mul > 1) end++;
  if (end == v || *end || errno || !(d >= 0) || d * mul > 9e18) return (int64_t)256 << 20;
  return (int64_t)(d * mul);
}

/* One cache file, for the scan below. */
typedef struct entry { char name[80]; int64_t bytes; struct timespec mtime; } entry;

static int by_age(const void *a, const void *b) {
  const struct timespec *x = &((const entry *)a)->mtime, *y = &((const entry *)b)->mtime;
  if (x->tv_sec != y->tv_sec) return x->tv_sec < y->tv_sec ? -1 : 1;
  if (x->tv_nsec != y->tv_nsec) return x->tv_nsec < y->tv_nsec ? -1 : 1;
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The cache's files (NAME.ftobj, written by ft_cache_disk_put) in dir, oldest
 * first; *n_out of them. NULL with *n_out 0 when there are none or dir
 * cannot be read; ok_out says which (false: errno is set). */
static entry *scan(const char *dir, int64_t *n_out, bool *ok_out) {
  *n_out = 0;
  DIR *d = opendir(dir);
  *ok_out = d || errno == ENOENT;
  if (!d) return NULL;
  entry *e = NULL;
  int64_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 7 || l >= sizeof e->name || strcmp(de->d_name + l - 6, ".ftobj")) continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      entry *ne = realloc(e, sizeof *e * (size_t)(cap = cap ? 2 * cap : 64));
      if (!ne) break;
      e = ne;
    }
    memcpy(e[n].name, de->d_name, l + 1);
    e[n].bytes = st.st_size;
    e[n].mtime = st.st_mtim;
    n++;
  }
  closedir(d);
  if (e) qsort(e, (size_t)n, sizeof *e, by_age);
  *n_out = n;
  return e;
}

void ft_cache_disk_trim(const char *dir, int64_t max_bytes) {
  int64_t n, total = 0;
  bool ok;
  entry *e = scan(dir, &n, &ok);
  for (int64_t i = 0; i < n; i++) total += e[i].bytes;
  for (int64_t i = 0; i < n && total > max_bytes; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, e[i].name);
    if (!unlink(path) || errno == ENOENT) total -= e[i].bytes;  /* another process may trim too */
  }
  free(e);
}

ft_status ft_jit_disk_cache_info(ft_ctx *ctx, const char *cache_dir, ft_disk_cache_info *out) {
  if (!out) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "disk_cache_info: out is NULL");
  memset(out, 0, sizeof *out);
  out->max_bytes = ft_cache_max_bytes();
  out->enabled = ft_cache_disk_enabled();
  if (!out->enabled) return FT_OK;
  if (!ft_cache_dir(cache_dir, out->dir, sizeof out->dir))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "disk cache: no directory (set FT_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  bool ok;
  entry *e = scan(out->dir, &out->entries, &ok);
  for (int64_t i = 0; i < out->entries; i++) out->bytes += e[i].bytes;
  free(e);
  if (!ok) return ft_set_error(ctx, FT_ERR_IO, "disk cache: cannot read '%s': %s", out->dir, strerror(errno));
  return FT_OK;
}

ft_status ft_jit_disk_cache_clear(ft_ctx *ctx, const char *cache_dir, int64_t *removed) {
  ft_disk_cache_info info;
  if (removed) *removed = 0;
  ft_status st = ft_jit_disk_cache_info(ctx, cache_dir, &info);
  if (st || !info.enabled) return st;
  int64_t n;
  bool ok;
  entry *e = scan(info.dir, &n, &ok);
  for (int64_t i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", info.dir, e[i].name);
    if (unlink(path) && errno != ENOENT) {
      int err = errno;
      free(e);
      return ft_set_error(ctx, FT_ERR_IO, "disk cache: cannot remove '%s': %s", path, strerror(err));
    }
    if (removed) ++*removed;
  }
  free(e);
  return FT_OK;
}
