/* src/ledger/writer.c: opening a ledger and appending to it, crash-safely.
 *
 * An append writes, in this order: the objects (each to a tmp file renamed
 * into place, its parity file first), the record line at the end of
 * log.jsonl, one log.par entry per stripe the line completed, and log.tail
 * (tmp + rename) for the growing stripe. A kill at any point leaves complete
 * earlier records, at most one partial line after them, and parity that
 * covers a prefix of the log ending at a record boundary: 'recover' state,
 * never damage. A failed write is undone (truncate back) before returning. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger/ledger.h"

static const char zero_hex[33] = "00000000000000000000000000000000";

char *ft_ledger_object_path(const char *dir, const char *hex) {
  return ft_lio_path("%s/objects/%.2s/%s", dir, hex, hex + 2);
}

char *ft_ledger_objpar_path(const char *dir, const char *hex) {
  return ft_lio_path("%s/parity/obj/%s", dir, hex);
}

static ft_status io_error(ft_ctx *ctx, const char *what, const char *path) {
  int e = errno;
  return ft_set_error(ctx, FT_ERR_IO, "ledger: cannot %s %s: %s", what, path, strerror(e));
}

ft_status ft_ledger_put_object(ft_ledger *lg, ft_ctx *ctx, const void *data, size_t len,
                               char hex[33]) {
  uint8_t h[16];
  ft_lhash128(data, len, h);
  ft_lhex(h, hex);
  char *path = ft_ledger_object_path(lg->dir, hex);
  char *sub = ft_lio_path("%s/objects/%.2s", lg->dir, hex);
  char *ppath = ft_ledger_objpar_path(lg->dir, hex);
  ft_status st = FT_OK;
  bool sync = lg->opt.fsync == FT_LEDGER_FSYNC_EVERY;
  if (!path || !sub || !ppath) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  } else if (access(path, F_OK) != 0) {
    /* Parity first: an object without parity would look like damage. */
    size_t plen;
    uint8_t *par = ft_lpar_object_file(&lg->rs, lg->block, data, len, h, &plen);
    if (!par) st = ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
    else if (ft_lio_write_atomic(ppath, par, plen, sync)) st = io_error(ctx, "write", ppath);
    else if (ft_lio_mkdir(sub)) st = io_error(ctx, "create", sub);
    else if (ft_lio_write_atomic(path, data, len, sync)) st = io_error(ctx, "write", path);
    free(par);
  }
  free(path);
  free(sub);
  free(ppath);
  return st;
}

/* Writes log.tail for the growing stripe (the commit point of parity). */
/* Replaces log.tail atomically. The new tail is written to log.tail.tmp,
 * which then trades names with log.tail (renameat2 RENAME_EXCHANGE): the old
 * tail becomes the scratch file the next record overwrites in place. That
 * keeps every record from creating and deleting an inode, which on ext4
 * costs milliseconds and dominated the ledger's overhead on a training loop
 * (bench/ledger). log.tail is always one complete tail, as with a plain
 * rename; the scratch file is a crash leftover like any .tmp (recover and
 * close remove it; verify ignores it). Where the exchange is unsupported (or
 * log.tail does not exist yet) a plain rename does the same job. */
static int write_tail_at(ft_ledger *lg, const char *path, char *tmp) {
  uint64_t base = lg->stripe_index * (uint64_t)lg->k * lg->block;
  ft_lpar_header h = {(uint32_t)lg->k, (uint32_t)lg->m, (uint32_t)lg->block, FT_LPAR_TAIL, 0, {0}};
  ft_lpar_header_encode(&h, lg->tailbuf);
  ft_lpar_entry_build(&lg->rs, lg->block, lg->stripe_index, lg->log_len - base, lg->stripe,
                      lg->tailbuf + FT_LPAR_HEADER);
  bool sync = lg->opt.fsync == FT_LEDGER_FSYNC_EVERY;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  size_t n = FT_LPAR_HEADER + lg->entry_size;
  int r = fd >= 0 ? 0 : -1;
  if (!r) r = ft_lio_pwrite(fd, lg->tailbuf, n, 0);
  if (!r) r = ftruncate(fd, (off_t)n); /* a leftover of another size */
  if (!r && sync) r = ft_lio_fsync(fd);
  int e = errno;
  if (fd >= 0 && close(fd) < 0 && !r) r = -1, e = errno;
  if (!r && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE)) {
    r = errno == ENOENT || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP
            ? rename(tmp, path)
            : -1;
    e = errno;
  }
  if (!r && sync) {
    /* The exchange itself must reach the disk: sync the directory. */
    char *slash = strrchr(tmp, '/');
    *slash = 0;
    r = ft_lio_fsync_dir(tmp);
    e = errno;
    *slash = '/';
  }
  errno = e;
  return r;
}

/* The two paths write_tail_at needs (malloc'd), or false: out of memory. */
static bool tail_paths(const ft_ledger *lg, char **path, char **tmp) {
  *path = ft_lio_path("%s/parity/log.tail", lg->dir);
  *tmp = ft_lio_path("%s/parity/log.tail.tmp", lg->dir);
  if (*path && *tmp) return true;
  free(*path), free(*tmp);
  *path = *tmp = NULL;
  return false;
}

/* Reloads the growing stripe from the log (after open or a rollback). */
static int load_stripe(ft_ledger *lg) {
  size_t sw = (size_t)lg->k * lg->block;
  uint64_t base = lg->stripe_index * (uint64_t)sw;
  memset(lg->stripe, 0, sw);
  if (lg->log_len < base || lg->log_len - base > sw) return -1;
  size_t n = (size_t)(lg->log_len - base);
  ssize_t r = n ? pread(lg->logfd, lg->stripe, n, (off_t)base) : 0;
  return r == (ssize_t)n ? 0 : -1;
}

static void rollback(ft_ledger *lg, uint64_t old_log, uint64_t old_par) {
  if (ftruncate(lg->logfd, (off_t)old_log) || ftruncate(lg->parfd, (off_t)old_par))
    lg->broken = true;
  lg->log_len = old_log;
  lg->par_len = old_par;
  lg->stripe_index = (old_par - FT_LPAR_HEADER) / lg->entry_size;
  if (load_stripe(lg)) lg->broken = true;
}

ft_status ft_ledger_append_line(ft_ledger *lg, ft_ctx *ctx, const char *line, size_t len) {
  uint64_t old_log = lg->log_len, old_par = lg->par_len;
  size_t sw = (size_t)lg->k * lg->block;
  bool sync = lg->opt.fsync == FT_LEDGER_FSYNC_EVERY;
  const char *what = "append to", *file = "log.jsonl";
  /* Everything this append allocates, before the first byte is written. */
  char *tail_path, *tail_tmp;
  if (!tail_paths(lg, &tail_path, &tail_tmp))
    return ft_set_error(ctx, FT_ERR_NOMEM, "ledger %s: out of memory (nothing was written)",
                        lg->dir);
  if (ft_lio_pwrite(lg->logfd, line, len, old_log) || (sync && ft_lio_fsync(lg->logfd))) goto fail;
  /* Feed the line through the stripe buffer; each full stripe gets its entry. */
  what = "write parity";
  file = "parity/log.par";
  for (size_t done = 0; done < len;) {
    uint64_t base = lg->stripe_index * (uint64_t)sw;
    size_t at = (size_t)(old_log + done - base), n = len - done;
    if (n > sw - at) n = sw - at;
    memcpy(lg->stripe + at, line + done, n);
    done += n;
    if (at + n == sw) {
      uint8_t *e = lg->tailbuf + FT_LPAR_HEADER;
      ft_lpar_entry_build(&lg->rs, lg->block, lg->stripe_index, sw, lg->stripe, e);
      if (ft_lio_pwrite(lg->parfd, e, lg->entry_size, lg->par_len)) goto fail;
      lg->par_len += lg->entry_size;
      lg->stripe_index++;
      memset(lg->stripe, 0, sw);
    }
  }
  if (sync && lg->par_len != old_par && ft_lio_fsync(lg->parfd)) goto fail;
  lg->log_len = old_log + len;
  file = "parity/log.tail";
  if (write_tail_at(lg, tail_path, tail_tmp)) goto fail;
  free(tail_path), free(tail_tmp);
  return FT_OK;
fail:;
  int e = errno;
  free(tail_path), free(tail_tmp);
  rollback(lg, old_log, old_par);
  return ft_set_error(ctx, FT_ERR_IO, "ledger %s: cannot %s %s: %s%s", lg->dir, what, file,
                      strerror(e), lg->broken ? " (and the rollback failed)" : "");
}

/* Validated options with defaults filled in. */
static ft_status fill_options(ft_ctx *ctx, const ft_ledger_options *in, ft_ledger_options *o) {
  ft_status st = ft_opts_read(ctx, "ft_ledger_options", in, sizeof *o, o);
  if (st) return st;
  if (!o->call_byte_cap) o->call_byte_cap = FT_LEDGER_DEFAULT_CAP;
  if (!o->parity_k) o->parity_k = 8;
  if (!o->parity_m) o->parity_m = 2;
  if (!o->block_size) o->block_size = 4096;
  if (o->parity_k < 1 || o->parity_k > 64 || o->parity_m < 1 || o->parity_m > 16 ||
      o->block_size < 16 || o->block_size > (1 << 20) || o->block_size % 16 ||
      (unsigned)o->fsync > FT_LEDGER_FSYNC_NEVER || (unsigned)o->calls > FT_LEDGER_CALLS_BYTES)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "ledger: bad options: parity_k %d (1..64), parity_m %d (1..16), "
                        "block_size %d (16..1048576, a multiple of 16), fsync %d, calls %d",
                        o->parity_k, o->parity_m, o->block_size, (int)o->fsync, (int)o->calls);
  return FT_OK;
}

static ft_status set_params(ft_ctx *ctx, ft_ledger *lg, int k, int m, size_t block) {
  lg->k = k;
  lg->m = m;
  lg->block = block;
  lg->entry_size = ft_lpar_entry_size(k, m, block);
  lg->stripe = calloc((size_t)k, block);
  lg->tailbuf = malloc(FT_LPAR_HEADER + lg->entry_size);
  if (!lg->stripe || !lg->tailbuf || ft_rs_init(&lg->rs, k, m))
    return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  return FT_OK;
}

/* A brand-new ledger: the parity header, an empty tail, an empty log. */
static ft_status create_fresh(ft_ctx *ctx, ft_ledger *lg) {
  ft_status st = set_params(ctx, lg, lg->opt.parity_k, lg->opt.parity_m,
                            (size_t)lg->opt.block_size);
  if (st) return st;
  uint8_t hdr[FT_LPAR_HEADER];
  ft_lpar_header h = {(uint32_t)lg->k, (uint32_t)lg->m, (uint32_t)lg->block, FT_LPAR_LOG, 0, {0}};
  ft_lpar_header_encode(&h, hdr);
  char *path = ft_lio_path("%s/parity/log.par", lg->dir);
  bool sync = lg->opt.fsync != FT_LEDGER_FSYNC_NEVER;
  if (!path) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (ft_lio_write_atomic(path, hdr, sizeof hdr, sync)) st = io_error(ctx, "create", path);
  free(path);
  lg->par_len = FT_LPAR_HEADER;
  char *tp = NULL, *tt = NULL;
  if (!st && !tail_paths(lg, &tp, &tt)) st = ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (!st && write_tail_at(lg, tp, tt)) st = io_error(ctx, "create", "parity/log.tail");
  free(tp), free(tt);
  return st;
}

/* Checks one stripe's data (k*block bytes, zero-padded) and the entry's
 * parity blocks against the hashes in its entry. Returns the first block
 * that does not match (0..k-1 data, k.. parity), or -1. */
static int stripe_mismatch(const ft_ledger *lg, const uint8_t *data, const ft_lpar_entry *e) {
  for (int i = 0; i < lg->k + lg->m; i++) {
    const uint8_t *b = i < lg->k ? data + (size_t)i * lg->block
                                 : e->parity + (size_t)(i - lg->k) * lg->block;
    if (ft_lpar_block_hash(b, lg->block) != ft_lpar_entry_hash(e, i)) return i;
  }
  return -1;
}

/* The refusal to write to a damaged ledger: appending would rebuild the
 * growing stripe's parity from damaged bytes and make the damage permanent. */
static ft_status damaged(ft_ctx *ctx, const ft_ledger *lg, uint64_t stripe, int blk,
                         const char *file) {
  if (blk < lg->k)
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: log.jsonl is damaged (bytes %llu..%llu do "
                        "not match their parity); not opened for writing; run 'ftledger "
                        "repair %s'", lg->dir,
                        (unsigned long long)((stripe * (uint64_t)lg->k + (uint64_t)blk) * lg->block),
                        (unsigned long long)((stripe * (uint64_t)lg->k + (uint64_t)blk + 1) * lg->block - 1),
                        lg->dir);
  return ft_set_error(ctx, FT_ERR_IO, "ledger %s: %s is damaged (stripe %llu, parity block %d); "
                      "not opened for writing; run 'ftledger repair %s'", lg->dir, file,
                      (unsigned long long)stripe, blk - lg->k, lg->dir);
}

/* Every complete stripe of log.jsonl against its log.par entry: a ledger
 * that does not verify block by block is never opened for writing. Objects
 * are not read here: they are immutable and an append never rewrites them. */
static ft_status check_complete_stripes(ft_ctx *ctx, ft_ledger *lg) {
  size_t sw = (size_t)lg->k * lg->block;
  uint8_t *entry = lg->tailbuf + FT_LPAR_HEADER;
  char *ppath = ft_lio_path("%s/parity/log.par", lg->dir);
  int pfd = ppath ? open(ppath, O_RDONLY | O_CLOEXEC) : -1;
  free(ppath);
  if (pfd < 0) return io_error(ctx, "open", "parity/log.par");
  ft_status st = FT_OK;
  for (uint64_t i = 0; !st && i < lg->stripe_index; i++) {
    ft_lpar_entry e;
    uint64_t eoff = FT_LPAR_HEADER + i * (uint64_t)lg->entry_size;
    if (pread(pfd, entry, lg->entry_size, (off_t)eoff) != (ssize_t)lg->entry_size ||
        pread(lg->logfd, lg->stripe, sw, (off_t)(i * sw)) != (ssize_t)sw) {
      st = io_error(ctx, "read", "log.jsonl and its parity");
    } else if (!ft_lpar_entry_decode(entry, lg->k, lg->m, lg->block, &e) || e.stripe != i ||
               e.covered != sw) {
      st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: parity/log.par is damaged (entry %llu); "
                        "not opened for writing; run 'ftledger repair %s'", lg->dir,
                        (unsigned long long)i, lg->dir);
    } else {
      int bad = stripe_mismatch(lg, lg->stripe, &e);
      if (bad >= 0) st = damaged(ctx, lg, i, bad, "parity/log.par");
    }
  }
  close(pfd);
  return st;
}

/* The ftledger command that mends a ledger not left as a clean close
 * leaves it: 'recover' for an interrupted write (a torn tail, parity behind
 * the log), 'repair' for damage, which recover refuses (a garbage line, a
 * flipped byte). The read-only scan decides, as recover itself would. */
static const char *mend_command(const char *dir) {
  ft_ctx *scratch = ft_ctx_new(NULL);
  ft_lscan s;
  const char *cmd = "recover";
  if (scratch && !ft_lscan_run(scratch, dir, &s) && s.corrupt) cmd = "repair";
  if (scratch) ft_lscan_free(&s);
  ft_ctx_free(scratch);
  return cmd;
}

/* The state of an existing ledger: parameters, parity position, last record.
 * Refuses anything that is not exactly how a clean close leaves it, and
 * anything whose log or parity blocks do not match their hashes. */
static ft_status load_existing(ft_ctx *ctx, ft_ledger *lg, const uint8_t *hdr, size_t par_size) {
  ft_lpar_header h;
  if (!ft_lpar_header_decode(hdr, FT_LPAR_HEADER, &h) || h.kind != FT_LPAR_LOG)
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: parity/log.par header is damaged; run "
                        "'ftledger repair %s'", lg->dir, lg->dir);
  ft_status st = set_params(ctx, lg, (int)h.k, (int)h.m, h.block);
  if (st) return st;
  size_t sw = (size_t)lg->k * lg->block;
  lg->par_len = par_size;
  lg->stripe_index = (par_size - FT_LPAR_HEADER) / lg->entry_size;
  uint8_t *tail = NULL;
  size_t tail_len = 0;
  char *tpath = ft_lio_path("%s/parity/log.tail", lg->dir);
  ft_lpar_header th;
  ft_lpar_entry te;
  bool ok = (par_size - FT_LPAR_HEADER) % lg->entry_size == 0 && tpath &&
            !ft_lio_read_file(tpath, &tail, &tail_len) &&
            tail_len == FT_LPAR_HEADER + lg->entry_size &&
            ft_lpar_header_decode(tail, tail_len, &th) && th.kind == FT_LPAR_TAIL &&
            ft_lpar_entry_decode(tail + FT_LPAR_HEADER, lg->k, lg->m, lg->block, &te) &&
            te.stripe == lg->stripe_index && lg->stripe_index * sw + te.covered == lg->log_len;
  free(tpath);
  if (!ok) {
    free(tail);
    const char *cmd = mend_command(lg->dir);
    if (!strcmp(cmd, "repair"))
      return ft_set_error(ctx, FT_ERR_IO, "ledger %s: not cleanly closed and damaged (the log "
                          "does not match its parity); not opened for writing; run 'ftledger "
                          "repair %s'", lg->dir, lg->dir);
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: not cleanly closed (torn tail or parity "
                        "behind the log); run 'ftledger recover %s' or open with auto_recover",
                        lg->dir, lg->dir);
  }
  st = check_complete_stripes(ctx, lg);
  if (!st && load_stripe(lg)) st = io_error(ctx, "read", "log.jsonl");
  if (!st) {
    /* The growing stripe: the one the next append re-protects. */
    int bad = stripe_mismatch(lg, lg->stripe, &te);
    if (bad >= 0) st = damaged(ctx, lg, lg->stripe_index, bad, "parity/log.tail");
  }
  free(tail);
  if (st) return st;
  if (lg->log_len == 0) {
    memcpy(lg->last_sum, zero_hex, 33);
    return FT_OK;
  }
  /* The last line gives the seq and the chain head. */
  size_t want = lg->log_len < (1u << 16) ? (size_t)lg->log_len : (1u << 16);
  char *buf = NULL;
  json_t *rec = NULL;
  for (;;) {
    free(buf);
    buf = malloc(want);
    if (!buf) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
    if (pread(lg->logfd, buf, want, (off_t)(lg->log_len - want)) != (ssize_t)want) {
      free(buf);
      return io_error(ctx, "read", "log.jsonl");
    }
    if (buf[want - 1] != '\n') {
      free(buf);
      return ft_set_error(ctx, FT_ERR_IO, "ledger %s: log.jsonl does not end with a record; "
                          "run 'ftledger verify %s'", lg->dir, lg->dir);
    }
    size_t start = want - 1;
    while (start > 0 && buf[start - 1] != '\n') start--;
    if (start > 0 || want == lg->log_len) {
      const char *why = ft_ledger_check_line(buf + start, want - 1 - start, &rec);
      if (why) {
        free(buf);
        return ft_set_error(ctx, FT_ERR_IO, "ledger %s: last record is damaged (%s); run "
                            "'ftledger verify %s'", lg->dir, why, lg->dir);
      }
      break;
    }
    want = want * 4 < lg->log_len ? want * 4 : (size_t)lg->log_len;
  }
  free(buf);
  lg->seq = json_integer_value(json_object_get(rec, "seq"));
  snprintf(lg->last_sum, 33, "%s", json_string_value(json_object_get(rec, "sum")));
  json_decref(rec);
  return FT_OK;
}

static ft_status open_once(ft_ctx *ctx, ft_ledger *lg) {
  char *objs = ft_lio_path("%s/objects", lg->dir), *par = ft_lio_path("%s/parity", lg->dir);
  char *obj = ft_lio_path("%s/parity/obj", lg->dir), *log = ft_lio_path("%s/log.jsonl", lg->dir);
  char *ppath = ft_lio_path("%s/parity/log.par", lg->dir);
  ft_status st = FT_OK;
  if (!objs || !par || !obj || !log || !ppath) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  else if (ft_lio_mkdir(lg->dir)) st = io_error(ctx, "create", lg->dir);
  else if (ft_lio_mkdir(objs) || ft_lio_mkdir(par) || ft_lio_mkdir(obj))
    st = io_error(ctx, "create directories in", lg->dir);
  else if ((lg->logfd = open(log, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
    st = io_error(ctx, "open", log);
  else if (flock(lg->logfd, LOCK_EX | LOCK_NB))
    st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: in use by another writer", lg->dir);
  struct stat ls, ps;
  if (!st && fstat(lg->logfd, &ls)) st = io_error(ctx, "stat", log);
  if (!st) {
    lg->log_len = (uint64_t)ls.st_size;
    uint8_t hdr[FT_LPAR_HEADER];
    int pfd = open(ppath, O_RDONLY | O_CLOEXEC);
    bool have = pfd >= 0 && !fstat(pfd, &ps) && ps.st_size >= FT_LPAR_HEADER &&
                pread(pfd, hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr;
    if (pfd >= 0) close(pfd);
    /* An empty log holds no records: (re)creating its parity loses nothing,
     * and finishes a creation that was interrupted. */
    if (lg->log_len == 0) st = create_fresh(ctx, lg);
    else if (!have)
      st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: parity/log.par is missing or short; run "
                        "'ftledger repair %s'", lg->dir, lg->dir);
    else st = load_existing(ctx, lg, hdr, (size_t)ps.st_size);
  }
  if (!st && (lg->parfd = open(ppath, O_RDWR | O_CLOEXEC)) < 0) st = io_error(ctx, "open", ppath);
  free(objs);
  free(par);
  free(obj);
  free(log);
  free(ppath);
  return st;
}

static void release(ft_ledger *lg) {
  pthread_mutex_destroy(&lg->lock);
  if (lg->logfd >= 0) close(lg->logfd);
  if (lg->parfd >= 0) close(lg->parfd);
  ft_rs_free(&lg->rs);
  free(lg->stripe);
  free(lg->tailbuf);
  free(lg->dir);
  free(lg);
}

ft_ledger *ft_ledger_open(ft_ctx *ctx, const char *dir, const ft_ledger_options *opts) {
  if (!dir || !*dir) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: no directory given");
    return NULL;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    ft_ledger *lg = calloc(1, sizeof *lg);
    pthread_mutexattr_t ma;
    bool locked = false;
    if (lg && !pthread_mutexattr_init(&ma)) {
      locked = !pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE) &&
               !pthread_mutex_init(&lg->lock, &ma);
      pthread_mutexattr_destroy(&ma);
    }
    if (!lg || !locked || !(lg->dir = strdup(dir))) {
      if (locked) pthread_mutex_destroy(&lg->lock);
      free(lg);
      ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
      return NULL;
    }
    lg->logfd = lg->parfd = -1;
    memcpy(lg->last_sum, zero_hex, 33);
    ft_status st = fill_options(ctx, opts, &lg->opt);
    if (!st) st = open_once(ctx, lg);
    if (!st) return lg;
    release(lg);
    if (attempt || st != FT_ERR_IO || !opts || !opts->auto_recover) return NULL;
    ft_ledger_report rep;
    st = ft_ledger_recover(ctx, dir, &rep);
    ft_ledger_report_free(&rep);
    if (st) return NULL;
  }
  return NULL;
}

ft_status ft_ledger_sync(ft_ledger *lg) {
  if (!lg) return FT_ERR_INVALID_ARG;
  /* syncfs covers the log, parity and every object written since. */
  if (syncfs(lg->logfd)) return FT_ERR_IO;
  return FT_OK;
}

ft_status ft_ledger_close(ft_ledger *lg) {
  if (!lg) return FT_OK;
  ft_status st = FT_OK;
  if (lg->opt.fsync != FT_LEDGER_FSYNC_NEVER && !lg->broken) st = ft_ledger_sync(lg);
  /* The scratch tail of write_tail (we still hold the writer's lock). */
  char *tmp = ft_lio_path("%s/parity/log.tail.tmp", lg->dir);
  if (tmp) unlink(tmp);
  free(tmp);
  pthread_mutex_lock(&lg->lock);
  if (lg->attached && lg->attached->ledger == lg) {
    lg->attached->ledger = NULL;
    lg->attached->on_event = NULL;
    lg->attached->on_free = NULL;
  }
  pthread_mutex_unlock(&lg->lock);
  release(lg);
  return st;
}

int64_t ft_ledger_num_records(const ft_ledger *lg) {
  if (!lg) return 0;
  pthread_mutex_t *l = (pthread_mutex_t *)&lg->lock;
  pthread_mutex_lock(l);
  int64_t n = lg->seq;
  pthread_mutex_unlock(l);
  return n;
}
