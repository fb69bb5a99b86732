/* src/ledger/ledger.h: the internal header of the trace-transform ledger
 * (DESIGN.md §8, docs/ledger.md). Sections follow the files:
 *   record.c   the record API other parts call, canonical JSON records
 *   writer.c   open/close, content-addressed objects, crash-safe appends
 *   io.c       file helpers with an injectable write path, hashes, hex
 *   parity.c   Reed-Solomon stripes through ISA-L, parity file format
 *   scan.c     reading a ledger back: verify, recover, repair
 * This is the ledger's storage, which depends on src/ir and libraries only;
 * replay, reexec, diff, export and the context observer are a layer above
 * every stage: src/replay/replay.h (docs/architecture.md, "Layers").
 *
 * On disk (docs/ledger.md has the details):
 *   DIR/log.jsonl               one canonical JSON record per line
 *   DIR/objects/ab/cdef...      content-addressed blobs, named by XXH3-128 hex
 *   DIR/parity/log.par          header + one entry per complete log stripe
 *   DIR/parity/log.tail         header + the entry of the last, growing stripe
 *   DIR/parity/obj/<hex>        header + entries of one object */
#ifndef FT_LEDGER_H
#define FT_LEDGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ir/ir.h"

/* ============================================================== record.c */

/* One blob a record consumes or produces. Give data (the ledger hashes it and,
 * policy permitting, stores it) or only hash (16 bytes, XXH3-128 canonical,
 * as ft_jaxpr_hash writes it) when the bytes are not at hand. */
typedef struct ft_ledger_obj {
  const char *name;      /* role, e.g. "jaxpr" or "x0"; may be NULL */
  const void *data;
  size_t len;
  const uint8_t *hash;   /* used when data is NULL */
} ft_ledger_obj;

/* One rewrite/rule that fired: name, count and, optionally, a proof text. */
typedef struct ft_ledger_rule {
  const char *name;
  int64_t count;
  const char *proof;     /* may be NULL */
} ft_ledger_rule;

/* An event to record. Zero-initialize and fill what applies. */
typedef struct ft_ledger_event {
  ft_ledger_kind kind;
  const char *op;                /* e.g. "grad", "parse", "saturate", "jit", "interp" */
  const char *params_json;       /* a JSON object as text; NULL means {} */
  json_t *params;                /* or a jansson object (borrowed); wins over params_json */
  const ft_ledger_obj *inputs;
  int n_inputs;
  const ft_ledger_obj *outputs;
  int n_outputs;
  const ft_ledger_rule *fired;   /* rules used, in the order given */
  int n_fired;
  const char *fired_json;        /* or any JSON value as text; wins over fired */
  int64_t time_ns;               /* wall time of the step; 0: not recorded */
} ft_ledger_event;

/* True when ctx has a ledger: lets callers skip building an event (e.g.
 * printing IR) when nothing would be recorded. */
static inline bool ft_ledger_active(const ft_ctx *ctx) { return ctx && ctx->ledger; }
/* The call logging level of ctx's ledger (NONE without a ledger). */
ft_ledger_calls ft_ledger_call_level(const ft_ctx *ctx);

/* Appends ev to ctx's ledger (FT_OK at once when there is none, or for a call
 * when call logging is off). The mode is ctx's. On failure the ledger is as it
 * was before the call (earlier records are never touched) and the status and
 * message are set on ctx. */
ft_status ft_ledger_record(ft_ctx *ctx, const ft_ledger_event *ev);

/* Seals rec: sets seq and prev, then sum = XXH3-128 of the canonical text
 * without sum. Returns the canonical line text (malloc'd, no newline). */
char *ft_ledger_seal(json_t *rec, int64_t seq, const char prev_hex[33], char sum_hex[33]);
/* Canonical text of a JSON value (sorted keys, compact); malloc'd. */
char *ft_ledger_canon(const json_t *v);

/* Why a log line is not a valid record (NULL: it is). Checks that the line
 * parses, is canonical, has every field with the right type, and that its sum
 * matches. On success *out receives the parsed record (caller decrefs). */
const char *ft_ledger_check_line(const char *line, size_t len, json_t **out);

ft_ledger_kind ft_ledger_kind_from_name(const char *name); /* NUM_KINDS if unknown */

/* ================================================================== io.c */

/* Test hook (SQLite style): the nth write from now (1 = the next) through
 * ft_lio_pwrite writes half its bytes and then fails with err (ENOSPC, EIO).
 * nth 0 disables. Process-wide; for tests only. */
void ft_ledger_fault_inject(long nth, int err);
/* Test hook: split every write into pieces of at most chunk bytes (0: off),
 * so a kill -9 lands inside records more often. */
void ft_ledger_fault_chunk(size_t chunk);
/* Writes to the ledger files made so far (for tests choosing an nth). */
long ft_ledger_write_count(void);
/* Test hook: skip every fsync (speed; never in production). */
void ft_ledger_fault_nosync(bool on);

/* fsync, unless the test hook turned syncing off. */
int ft_lio_fsync(int fd);

/* pwrite of all of buf (retrying on EINTR and short writes); -1 + errno. */
int ft_lio_pwrite(int fd, const void *buf, size_t len, uint64_t off);
/* Reads a whole file into malloc'd memory (+1 NUL byte). -1 + errno. */
int ft_lio_read_file(const char *path, uint8_t **data, size_t *len);
/* Writes path atomically: path.tmp, optional fsync, rename, optional fsync of
 * the directory. On failure the old file is untouched and the tmp removed. */
int ft_lio_write_atomic(const char *path, const void *data, size_t len, bool sync);
int ft_lio_fsync_dir(const char *dir);
/* mkdir unless it exists. */
int ft_lio_mkdir(const char *path);
/* snprintf into a malloc'd string. */
char *ft_lio_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* XXH3-128 of data as 16 canonical (big-endian) bytes, and as hex. */
void ft_lhash128(const void *data, size_t len, uint8_t out[16]);
void ft_lhex(const uint8_t h[16], char out[33]);
void ft_lhash_hex(const void *data, size_t len, char out[33]);
/* Parses 32 lowercase hex digits. */
bool ft_lunhex(const char *s, uint8_t out[16]);
bool ft_lis_hex32(const char *s);

/* ============================================================== parity.c */

#define FT_LPAR_MAGIC "FTLPAR01"
#define FT_LPAR_HEADER 64
enum { FT_LPAR_LOG = 0, FT_LPAR_TAIL = 1, FT_LPAR_OBJ = 2 };

/* A Reed-Solomon code over k data + m parity blocks (Cauchy matrix, ISA-L). */
typedef struct ft_rs {
  int k, m;
  unsigned char *matrix;  /* (k+m) x k encoding matrix */
  unsigned char *tables;  /* ec_init_tables of the parity rows */
} ft_rs;

int ft_rs_init(ft_rs *rs, int k, int m);
void ft_rs_free(ft_rs *rs);
/* parity[i] (m blocks of len) from data[j] (k blocks of len). */
void ft_rs_encode(const ft_rs *rs, size_t len, uint8_t *const *data, uint8_t *const *parity);
/* Rebuilds the blocks marked in lost[0..k+m) (data then parity) from the
 * others, in place. Returns -1 when more than m are lost. */
int ft_rs_decode(const ft_rs *rs, size_t len, uint8_t *const *blocks, const bool *lost);

/* The fixed header of every parity file. */
typedef struct ft_lpar_header {
  uint32_t k, m, block, kind;
  uint64_t data_len;      /* objects: the object's length */
  uint8_t ident[16];      /* objects: the object's hash */
} ft_lpar_header;

void ft_lpar_header_encode(const ft_lpar_header *h, uint8_t out[FT_LPAR_HEADER]);
bool ft_lpar_header_decode(const uint8_t *in, size_t len, ft_lpar_header *h);

/* An entry: stripe index, bytes of data it covers, a 64-bit hash of each of
 * the k+m blocks, its own checksum, then m parity blocks. */
size_t ft_lpar_entry_size(int k, int m, size_t block);
/* Builds the entry of one stripe whose data (k*block bytes, zero-padded past
 * covered) is given. */
void ft_lpar_entry_build(const ft_rs *rs, size_t block, uint64_t stripe, uint64_t covered,
                         const uint8_t *data, uint8_t *entry);
typedef struct ft_lpar_entry {
  uint64_t stripe, covered;
  const uint8_t *hashes;  /* k+m little-endian u64 */
  const uint8_t *parity;  /* m blocks */
} ft_lpar_entry;
/* Checks an entry's own checksum (not its blocks). */
bool ft_lpar_entry_decode(const uint8_t *entry, int k, int m, size_t block, ft_lpar_entry *e);
uint64_t ft_lpar_block_hash(const uint8_t *block, size_t len);
uint64_t ft_lpar_entry_hash(const ft_lpar_entry *e, int i);
/* Builds a whole parity file for an immutable blob (objects). malloc'd. */
uint8_t *ft_lpar_object_file(const ft_rs *rs, size_t block, const uint8_t *data, size_t len,
                             const uint8_t hash[16], size_t *out_len);
/* Block size used for an object of len bytes under a ledger block size. */
size_t ft_lpar_object_block(size_t len, int k, size_t block);

/* ============================================================== writer.c */

#define FT_LEDGER_DEFAULT_CAP ((size_t)1 << 20)

struct ft_ledger {
  /* Recursive: held by the observer across the record it appends. Guards
   * everything below, so threads sharing a context (concurrent logged
   * ft_calls) or attaching the ledger append and attach one at a time. */
  pthread_mutex_t lock;
  ft_ctx *attached;        /* the context whose ->ledger is this, or NULL */
  char *dir;
  int logfd, parfd;
  ft_ledger_options opt;
  int k, m;
  size_t block;
  ft_rs rs;
  int64_t seq;             /* seq of the last record */
  char last_sum[33];
  uint64_t log_len, par_len;
  uint8_t *stripe;         /* the data of the growing stripe, k*block bytes */
  uint64_t stripe_index;   /* == complete stripes in log.par */
  size_t entry_size;       /* bytes of one log.par entry */
  uint8_t *tailbuf;        /* scratch: header + one entry (the log.tail file) */
  bool broken;             /* a rollback failed: refuse further appends */
  /* observe.c: the canonical-text hash of the programs run lately, so a call
   * logged by hash does not print its program every time (a cache). */
  struct ft_lprog {
    const void *j, *eqns, *invars;
    uint64_t serial;
    int n_eqn, n_in, n_out;
    uint8_t hash[16];
    size_t len;
  } progs[8];
  unsigned progs_next;
};

/* Stores an object (content-addressed, with its parity) unless present. */
ft_status ft_ledger_put_object(ft_ledger *lg, ft_ctx *ctx, const void *data, size_t len, char hex_out[33]);
/* Path of the object with hash hex inside dir (malloc'd). */
char *ft_ledger_object_path(const char *dir, const char *hex);
char *ft_ledger_objpar_path(const char *dir, const char *hex);
/* Appends one sealed line; rolls everything back on failure. */
ft_status ft_ledger_append_line(ft_ledger *lg, ft_ctx *ctx, const char *line, size_t len);

/* ================================================================ scan.c */

/* A ledger read back into memory, with what verification found. */
typedef struct ft_lscan {
  char *dir;
  bool params_ok;          /* k, m, block known from a valid header */
  int k, m;
  size_t block;
  ft_rs rs;
  uint8_t *log;            /* log.jsonl bytes */
  size_t log_len;
  uint8_t *par;            /* log.par bytes */
  size_t par_len, n_entries, entry_size;
  bool par_header_ok, par_torn;
  uint8_t *tail;
  size_t tail_len;
  bool tail_ok, tail_stale;
  uint64_t covered;        /* log bytes protected by parity */
  size_t complete_len;     /* log bytes up to the end of the last complete line */
  json_t *records;         /* valid records, in order, until the first bad one */
  int64_t n_records;       /* complete lines that are valid records */
  int64_t first_bad_seq;
  json_t *problems;        /* array of {"file","offset","what","class"} */
  bool corrupt, torn, parity_behind;
  bool unborn;             /* creation was interrupted: empty log, no parity yet */
  int64_t n_objects;
} ft_lscan;

/* Reads and checks dir. FT_ERR_IO only when it is not a ledger at all. */
ft_status ft_lscan_run(ft_ctx *ctx, const char *dir, ft_lscan *s);
void ft_lscan_free(ft_lscan *s);
ft_ledger_health ft_lscan_health(const ft_lscan *s);
/* Loads just the valid records of dir (for show, export, replay, diff). */
ft_status ft_ledger_load_records(ft_ctx *ctx, const char *dir, json_t **records,
                                 ft_ledger_health *health);
/* Fills out from a JSON report (takes ownership of rep). */
void ft_ledger_report_fill(ft_ledger_report *out, json_t *rep);
/* Rebuilds the parity of log[from_stripe*k*B ..) from lg-less state: writes
 * log.par entries and log.tail. Used by recover and repair. */
int ft_lscan_rebuild_log_parity(ft_lscan *s, size_t from_stripe, bool sync);

#endif /* FT_LEDGER_H */
