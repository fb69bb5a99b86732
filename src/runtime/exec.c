/* src/runtime/exec.c: the dependency-wave executor. A DAG of tasks, each
 * cut into chunks whose boundaries come from the task's extent and grain
 * only; a task's wave is its depth in the DAG. A call runs the waves in
 * order: the chunks of one wave go to the pool's threads through one atomic
 * counter (who runs a chunk never changes what it computes), and the wave
 * ends when all its chunks have. A wave's chunks are claimed longest first,
 * and a wave runs on the caller alone when its cost is small or when it ran
 * faster alone lately (share_wave). Per-call state lives in frames taken
 * from a free list, so a steady-state call allocates nothing. */
#include <limits.h>
#include <stdatomic.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "ir/json.h"
#include "runtime/exec.h"

enum { MSG_LEN = 512, MAX_ITEMS = 1 << 24 };

struct ft_exec_call {
  ft_exec_frame *f;
  int tid;
  ft_ctx *ctx;         /* options.frame_ctx: this (frame, thread)'s own context */
  bool has_msg;
  char msg[MSG_LEN];
};

struct ft_exec_frame {
  ft_exec *x;
  void *arena, *scratch, *user;
  ft_exec_call *calls; /* one per pool participant */
  /* the wave in flight: items [lo, hi), claimed through next */
  int64_t lo, hi;
  atomic_int_fast64_t next;
  atomic_int failed;
  pthread_mutex_t fail_mu;
  int fail_task;
  ft_status fail_st;
  char fail_msg[MSG_LEN];
  ft_exec_profile *prof;
  ft_exec_frame *next_free, *next_all;
};

/* The measured wall time of one wave run by the caller alone and shared
 * with the pool (ns, exponential means of the recent runs; 0: not yet
 * measured), and how often the wave ran. Read and written by concurrent
 * calls with relaxed atomics: an estimate, never a result. */
typedef struct wave_clock {
  atomic_uint_fast64_t alone, shared, runs;
} wave_clock;

struct ft_exec {
  int n;
  char **names;
  ft_exec_task_fn *fn;
  void **user;
  int64_t *extent, *grain, *chunks;
  uint64_t *bytes, *cost;
  int *wave;
  int n_waves;
  int64_t *wave_start;  /* n_waves + 1 item offsets */
  bool *wave_small;     /* run on the caller alone (known small cost) */
  wave_clock *clock;    /* per wave: its measured times alone and shared */
  int64_t n_items;
  int32_t *it_task, *it_chunk;
  ft_exec_options opt;
  int n_threads;
  pthread_mutex_t mu;
  pthread_cond_t freed;
  ft_exec_frame *free_frames, *all_frames;
  int n_frames;
};

struct ft_exec_profile {
  const ft_exec *x;
  bool have_last;
  uint64_t t0;
  uint64_t *start, *dur; /* per item of the last run, ns (dur UINT64_MAX: not run) */
  int16_t *tid;
  int64_t *runs;
  uint64_t *total, *min, *max, *busy;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t ft_exec_grain(int64_t extent, int64_t work) {
  if (extent <= 1) return 1;
  if (work < 1) work = 1;
  double total = (double)extent * (double)work;
  int64_t chunks = (int64_t)((total + FT_EXEC_CHUNK_WORK - 1) / FT_EXEC_CHUNK_WORK);
  if (chunks > FT_EXEC_MAX_CHUNKS) chunks = FT_EXEC_MAX_CHUNKS;
  if (chunks > extent) chunks = extent;
  if (chunks < 1) chunks = 1;
  return (extent + chunks - 1) / chunks;
}

/* --------------------------------------------------------------- building */
/* Waves by depth (Kahn's algorithm): FT_OK, FT_ERR_INVALID_ARG on a cycle,
 * FT_ERR_NOMEM. */
static ft_status compute_waves(ft_exec *x, const ft_exec_task *t) {
  int n = x->n;
  int *indeg = calloc((size_t)n + 1, sizeof *indeg);
  int *nsucc = calloc((size_t)n + 1, sizeof *nsucc);
  int *queue = malloc(((size_t)n + 1) * sizeof *queue);
  int *sstart = NULL, *succ = NULL;
  ft_status ok = FT_ERR_NOMEM;
  if (!indeg || !nsucc || !queue) goto done;
  int64_t ne = 0;
  for (int i = 0; i < n; i++) {
    indeg[i] = t[i].n_deps;
    for (int k = 0; k < t[i].n_deps; k++) nsucc[t[i].deps[k]]++, ne++;
  }
  sstart = malloc(((size_t)n + 1) * sizeof *sstart);
  succ = malloc(((size_t)ne + 1) * sizeof *succ);
  if (!sstart || !succ) goto done;
  sstart[0] = 0;
  for (int i = 0; i < n; i++) sstart[i + 1] = sstart[i] + nsucc[i], nsucc[i] = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < t[i].n_deps; k++) {
      int d = t[i].deps[k];
      succ[sstart[d] + nsucc[d]++] = i;
    }
  int qh = 0, qt = 0;
  for (int i = 0; i < n; i++) {
    x->wave[i] = 0;
    if (!indeg[i]) queue[qt++] = i;
  }
  while (qh < qt) {
    int i = queue[qh++];
    for (int k = sstart[i]; k < sstart[i + 1]; k++) {
      int s = succ[k];
      if (x->wave[s] < x->wave[i] + 1) x->wave[s] = x->wave[i] + 1;
      if (--indeg[s] == 0) queue[qt++] = s;
    }
  }
  ok = qt == n ? FT_OK : FT_ERR_INVALID_ARG;
done:
  free(indeg), free(nsucc), free(queue), free(sstart), free(succ);
  return ok;
}

/* One chunk's estimated work: its share of the task's cost (unknown cost:
 * the largest, so such chunks start first). */
typedef struct item_key {
  uint64_t work;
  int32_t task, chunk;
} item_key;

static uint64_t chunk_work(const ft_exec *x, int t, int64_t c) {
  if (!x->cost[t]) return UINT64_MAX;
  int64_t lo = c * x->grain[t], hi = lo + x->grain[t] < x->extent[t] ? lo + x->grain[t] : x->extent[t];
  return (uint64_t)((double)x->cost[t] * (double)(hi - lo) / (double)x->extent[t]);
}

static int cmp_item(const void *a, const void *b) {
  const item_key *p = a, *q = b;
  if (p->work != q->work) return p->work > q->work ? -1 : 1;
  if (p->task != q->task) return p->task < q->task ? -1 : 1;
  return (p->chunk > q->chunk) - (p->chunk < q->chunk);
}

/* Longest chunks first within each wave (ties: task, then chunk). The
 * threads claim a wave's chunks in this order, so the last ones claimed are
 * the shortest and both threads reach the barrier at about the same time
 * (in task order a GEMM's 170 us blocks could come last, after small
 * kernels, and one thread ran the tail alone). The order is a function of
 * the tasks alone, and who runs a chunk never changes what it computes. */
static bool order_longest_first(ft_exec *x) {
  int64_t widest = 0;
  for (int w = 0; w < x->n_waves; w++)
    if (x->wave_start[w + 1] - x->wave_start[w] > widest) widest = x->wave_start[w + 1] - x->wave_start[w];
  item_key *k = malloc(((size_t)widest + 1) * sizeof *k);
  if (!k) return false;
  for (int w = 0; w < x->n_waves; w++) {
    int64_t lo = x->wave_start[w], n = x->wave_start[w + 1] - lo;
    for (int64_t i = 0; i < n; i++)
      k[i] = (item_key){chunk_work(x, x->it_task[lo + i], x->it_chunk[lo + i]), x->it_task[lo + i],
                        x->it_chunk[lo + i]};
    qsort(k, (size_t)n, sizeof *k, cmp_item);
    for (int64_t i = 0; i < n; i++) x->it_task[lo + i] = k[i].task, x->it_chunk[lo + i] = k[i].chunk;
  }
  free(k);
  return true;
}

/* The items (task, chunk) of every wave, in wave order, then longest chunk
 * first (order_longest_first). */
static bool build_items(ft_exec *x) {
  x->n_waves = 0;
  for (int i = 0; i < x->n; i++)
    if (x->wave[i] + 1 > x->n_waves) x->n_waves = x->wave[i] + 1;
  x->wave_start = calloc((size_t)x->n_waves + 2, sizeof *x->wave_start);
  x->wave_small = calloc((size_t)x->n_waves + 1, sizeof *x->wave_small);
  x->clock = calloc((size_t)x->n_waves + 1, sizeof *x->clock);
  uint64_t *cost = calloc((size_t)x->n_waves + 1, sizeof *cost);
  if (!x->wave_start || !x->wave_small || !x->clock || !cost) {
    free(cost);
    return false;
  }
  for (int w = 0; w < x->n_waves; w++) x->wave_small[w] = true;
  for (int i = 0; i < x->n; i++) {
    int w = x->wave[i];
    if (!x->cost[i]) x->wave_small[w] = false;
    cost[w] += x->cost[i];
  }
  for (int w = 0; w < x->n_waves; w++)
    if (cost[w] >= FT_EXEC_CHUNK_WORK) x->wave_small[w] = false;
  free(cost);
  for (int i = 0; i < x->n; i++) x->wave_start[x->wave[i] + 1] += x->chunks[i];
  for (int w = 0; w < x->n_waves; w++) x->wave_start[w + 1] += x->wave_start[w];
  x->n_items = x->wave_start[x->n_waves];
  x->it_task = malloc(((size_t)x->n_items + 1) * sizeof *x->it_task);
  x->it_chunk = malloc(((size_t)x->n_items + 1) * sizeof *x->it_chunk);
  int64_t *fill = calloc((size_t)x->n_waves + 1, sizeof *fill);
  bool ok = x->it_task && x->it_chunk && fill;
  for (int i = 0; ok && i < x->n; i++)
    for (int64_t c = 0; c < x->chunks[i]; c++) {
      int64_t at = x->wave_start[x->wave[i]] + fill[x->wave[i]]++;
      x->it_task[at] = i;
      x->it_chunk[at] = (int32_t)c;
    }
  free(fill);
  return ok && order_longest_first(x);
}

ft_exec *ft_exec_new(ft_ctx *ctx, int n, const ft_exec_task *tasks, const ft_exec_options *opts) {
  if (n < 0 || (n && !tasks)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: bad task list");
    return NULL;
  }
  ft_exec *x = calloc(1, sizeof *x);
  if (!x) goto nomem;
  x->n = n;
  if (opts) x->opt = *opts;
  if (x->opt.max_frames <= 0) x->opt.max_frames = 8;
  x->n_threads = ft_pool_size(x->opt.pool);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->freed, NULL);
  size_t m = (size_t)n + 1;
  x->names = calloc(m, sizeof *x->names);
  x->fn = calloc(m, sizeof *x->fn);
  x->user = calloc(m, sizeof *x->user);
  x->extent = calloc(m, sizeof *x->extent);
  x->grain = calloc(m, sizeof *x->grain);
  x->chunks = calloc(m, sizeof *x->chunks);
  x->bytes = calloc(m, sizeof *x->bytes);
  x->cost = calloc(m, sizeof *x->cost);
  x->wave = calloc(m, sizeof *x->wave);
  if (!x->names || !x->fn || !x->user || !x->extent || !x->grain || !x->chunks || !x->bytes ||
      !x->cost || !x->wave)
    goto nomem;
  int64_t items = 0;
  for (int i = 0; i < n; i++) {
    const ft_exec_task *t = &tasks[i];
    if (!t->fn || t->extent < 0 || t->grain < 0 || t->n_deps < 0 || (t->n_deps && !t->deps)) {
      ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: task %d ('%s'): bad function, extent, "
                   "grain or dependency list", i, t->name ? t->name : "");
      goto fail;
    }
    for (int k = 0; k < t->n_deps; k++)
      if (t->deps[k] < 0 || t->deps[k] >= n || t->deps[k] == i) {
        ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: task %d ('%s'): bad dependency %d", i,
                     t->name ? t->name : "", t->deps[k]);
        goto fail;
      }
    if (!(x->names[i] = strdup(t->name ? t->name : ""))) goto nomem;
    x->fn[i] = t->fn;
    x->user[i] = t->user;
    x->extent[i] = t->extent;
    x->grain[i] = t->grain > 0 ? t->grain : (t->extent > 0 ? t->extent : 1);
    x->chunks[i] = t->extent > 0 ? (t->extent + x->grain[i] - 1) / x->grain[i] : 0;
    x->bytes[i] = t->bytes;
    x->cost[i] = t->cost;
    items += x->chunks[i];
    if (items > MAX_ITEMS) {
      ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: more than %d chunks in all (task %d "
                   "'%s' has %lld): use a larger grain", MAX_ITEMS, i, x->names[i],
                   (long long)x->chunks[i]);
      goto fail;
    }
  }
  ft_status wst = compute_waves(x, tasks);
  if (wst == FT_ERR_NOMEM) goto nomem;
  if (wst) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: the task graph has a cycle");
    goto fail;
  }
  if (!build_items(x)) goto nomem;
  return x;
nomem:
  ft_set_error(ctx, FT_ERR_NOMEM, "executor: out of memory");
fail:
  ft_exec_free(x);
  return NULL;
}

static void frame_free(ft_exec_frame *f, int n_threads) {
  if (!f) return;
  if (f->calls)
    for (int t = 0; t < n_threads; t++) ft_ctx_free(f->calls[t].ctx);
  free(f->calls);
  free(f->arena);
  free(f->scratch);
  pthread_mutex_destroy(&f->fail_mu);
  free(f);
}

void ft_exec_free(ft_exec *x) {
  if (!x) return;
  for (ft_exec_frame *f = x->all_frames, *nx; f; f = nx) {
    nx = f->next_all;
    frame_free(f, x->n_threads);
  }
  if (x->names)
    for (int i = 0; i < x->n; i++) free(x->names[i]);
  free(x->names), free(x->fn), free(x->user), free(x->extent), free(x->grain);
  free(x->chunks), free(x->bytes), free(x->cost), free(x->wave), free(x->wave_start);
  free(x->wave_small);
  free(x->clock);
  free(x->it_task), free(x->it_chunk);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->freed);
  free(x);
}

int ft_exec_num_tasks(const ft_exec *x) { return x->n; }
int ft_exec_num_waves(const ft_exec *x) { return x->n_waves; }
int ft_exec_task_wave(const ft_exec *x, int task) { return x->wave[task]; }
int64_t ft_exec_task_chunks(const ft_exec *x, int task) { return x->chunks[task]; }
const char *ft_exec_task_name(const ft_exec *x, int task) { return x->names[task]; }

/* ----------------------------------------------------------------- frames */
static ft_exec_frame *frame_new(ft_exec *x, ft_ctx *ctx) {
  ft_exec_frame *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  pthread_mutex_init(&f->fail_mu, NULL);
  f->x = x;
  size_t ab = (x->opt.arena_bytes + 63) / 64 * 64;
  f->arena = aligned_alloc(64, ab ? ab : 64);
  f->scratch = calloc(x->opt.scratch_bytes ? x->opt.scratch_bytes : 1, 1);
  f->calls = calloc((size_t)x->n_threads, sizeof *f->calls);
  if (!f->arena || !f->scratch || !f->calls) goto fail;
  for (int t = 0; t < x->n_threads; t++) {
    f->calls[t].f = f;
    f->calls[t].tid = t;
    if (x->opt.frame_ctx && !(f->calls[t].ctx = ft_ctx_new(ctx ? &ctx->opts : NULL))) goto fail;
  }
  return f;
fail:
  frame_free(f, x->n_threads);
  return NULL;
}

/* Loops run on a frame's per-thread contexts obey the caller's limits and
 * cancel flag: set at every acquire, since a frame serves one call at a time. */
static ft_exec_frame *bind_limits(ft_exec *x, ft_exec_frame *f, const ft_ctx *ctx) {
  for (int t = 0; f && t < x->n_threads; t++)
    if (f->calls[t].ctx) f->calls[t].ctx->limits_from = ctx;
  return f;
}

ft_exec_frame *ft_exec_acquire(ft_exec *x, ft_ctx *ctx) {
  pthread_mutex_lock(&x->mu);
  while (!x->free_frames && x->n_frames >= x->opt.max_frames) pthread_cond_wait(&x->freed, &x->mu);
  ft_exec_frame *f = x->free_frames;
  if (f) {
    x->free_frames = f->next_free;
    pthread_mutex_unlock(&x->mu);
    return bind_limits(x, f, ctx);
  }
  x->n_frames++; /* reserve the slot, build outside the lock */
  pthread_mutex_unlock(&x->mu);
  f = frame_new(x, ctx);
  pthread_mutex_lock(&x->mu);
  if (f) {
    f->next_all = x->all_frames;
    x->all_frames = f;
  } else {
    x->n_frames--;
    pthread_cond_signal(&x->freed);
  }
  pthread_mutex_unlock(&x->mu);
  if (!f)
    ft_set_error(ctx, FT_ERR_NOMEM, "executor: out of memory for a call frame (arena %zu bytes)",
                 x->opt.arena_bytes);
  return bind_limits(x, f, ctx);
}

void ft_exec_release(ft_exec *x, ft_exec_frame *f) {
  if (!f) return;
  pthread_mutex_lock(&x->mu);
  f->next_free = x->free_frames;
  x->free_frames = f;
  pthread_cond_signal(&x->freed);
  pthread_mutex_unlock(&x->mu);
}

ft_status ft_exec_reserve(ft_exec *x, ft_ctx *ctx, int n) {
  if (n > x->opt.max_frames) n = x->opt.max_frames;
  ft_exec_frame *got[64];
  if (n > 64) n = 64;
  int k = 0;
  ft_status st = FT_OK;
  for (; k < n; k++)
    if (!(got[k] = ft_exec_acquire(x, ctx))) {
      st = FT_ERR_NOMEM;
      break;
    }
  while (k > 0) ft_exec_release(x, got[--k]);
  return st;
}

void *ft_exec_frame_arena(ft_exec_frame *f) { return f->arena; }
void *ft_exec_frame_scratch(ft_exec_frame *f) { return f->scratch; }

/* ---------------------------------------------------------------- running */
void *ft_exec_call_user(const ft_exec_call *c) { return c->f->user; }
void *ft_exec_call_arena(const ft_exec_call *c) { return c->f->arena; }
void *ft_exec_call_scratch(const ft_exec_call *c) { return c->f->scratch; }
int ft_exec_call_thread(const ft_exec_call *c) { return c->tid; }
ft_ctx *ft_exec_call_ctx(const ft_exec_call *c) { return c->ctx; }

ft_status ft_exec_fail(ft_exec_call *c, ft_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  c->has_msg = true;
  return st;
}

/* Keeps the failure of the lowest-numbered task, so that which failure is
 * reported does not depend on timing when several fail. */
static void record_failure(ft_exec_frame *f, ft_exec_call *c, int task, ft_status st) {
  pthread_mutex_lock(&f->fail_mu);
  if (task < f->fail_task) {
    f->fail_task = task;
    f->fail_st = st;
    snprintf(f->fail_msg, sizeof f->fail_msg, "%s", c->has_msg ? c->msg : "");
  }
  pthread_mutex_unlock(&f->fail_mu);
  atomic_store_explicit(&f->failed, 1, memory_order_relaxed);
}

static void run_item(ft_exec_frame *f, ft_exec_call *c, int64_t i) {
  const ft_exec *x = f->x;
  int t = x->it_task[i];
  int64_t lo = (int64_t)x->it_chunk[i] * x->grain[t];
  int64_t hi = lo + x->grain[t] < x->extent[t] ? lo + x->grain[t] : x->extent[t];
  ft_exec_profile *p = f->prof;
  uint64_t t0 = p ? now_ns() : 0;
  c->has_msg = false;
  ft_status st = x->fn[t](c, x->user[t], lo, hi);
  if (p) {
    uint64_t t1 = now_ns();
    p->start[i] = t0 - p->t0;
    p->dur[i] = t1 - t0;
    p->tid[i] = (int16_t)c->tid;
  }
  if (st != FT_OK) record_failure(f, c, t, st);
}

static void wave_job(void *arg, int tid) {
  ft_exec_frame *f = arg;
  ft_exec_call *c = &f->calls[tid];
  for (;;) {
    if (atomic_load_explicit(&f->failed, memory_order_relaxed)) break;
    int64_t i = f->lo + atomic_fetch_add_explicit(&f->next, 1, memory_order_relaxed);
    if (i >= f->hi) break;
    run_item(f, c, i);
  }
}

/* Folds the last run's chunk times into the per-task totals. */
static void profile_finish(const ft_exec *x, ft_exec_profile *p) {
  p->have_last = true;
  memset(p->busy, 0, sizeof *p->busy * ((size_t)x->n + 1));
  for (int64_t i = 0; i < x->n_items; i++)
    if (p->dur[i] != UINT64_MAX) p->busy[x->it_task[i]] += p->dur[i];
  for (int t = 0; t < x->n; t++) {
    uint64_t b = p->busy[t];
    if (p->runs[t] == 0 || b < p->min[t]) p->min[t] = b;
    if (b > p->max[t]) p->max[t] = b;
    p->total[t] += b;
    p->runs[t]++;
  }
}

/* Whether wave w shares its chunks with the pool this time. Each wave keeps
 * its measured times alone and shared, and takes the faster way; every
 * PROBE-th run takes the other way, so a change of load (a job ending on
 * the other CPU) is seen within PROBE runs. On a busy 2-vCPU VM a worker
 * that shares its CPU with another job runs its chunks at half speed, and
 * a wave of two 550 us GEMM blocks then takes longer shared than alone
 * (the caller waits at the barrier): the harness's mlp_step ran 6.9 ms on
 * 2 threads against 6.3 ms on 1. The first WARMUP runs alternate (shared
 * first), so that both ways are measured warm: a first run pays cold
 * caches and page faults, and a cold shared time kept a 16M-element loop
 * on the caller alone until the next probe. Only who runs a chunk changes:
 * the chunks and their results do not. */
enum { PROBE = 16, WARMUP = 6 };

static bool share_wave(ft_exec *x, int w) {
  if (x->opt.no_small_waves) return true; /* tests: always let the workers in */
  wave_clock *k = &x->clock[w];
  uint64_t runs = atomic_fetch_add_explicit(&k->runs, 1, memory_order_relaxed);
  if (runs < WARMUP) return runs % 2 == 0;
  uint64_t alone = atomic_load_explicit(&k->alone, memory_order_relaxed);
  uint64_t shared = atomic_load_explicit(&k->shared, memory_order_relaxed);
  if (!shared) return true;
  if (!alone) return false;
  bool best = shared <= alone;
  return runs % PROBE == PROBE - 1 ? !best : best;
}

/* A wave's time one way: down at once, up by an eighth of the difference.
 * Interference (another process's threads spinning for a while, a page
 * fault) only makes a run slower, so a fast run is the better estimate;
 * a lasting change of load still moves it up within a few runs of that
 * way. An average (the earlier 3/4 old + 1/4 new) kept a disturbed or cold
 * measurement for dozens of runs: the MLP step took ~100 calls to reach
 * 3.1 ms from 4.6. */
static void note_time(atomic_uint_fast64_t *m, uint64_t ns) {
  uint64_t old = atomic_load_explicit(m, memory_order_relaxed);
  if (!ns) ns = 1;
  atomic_store_explicit(m, !old || ns < old ? ns : (7 * old + ns) / 8, memory_order_relaxed);
}

/* Runs wave w of several chunks, shared with the pool or alone (share_wave),
 * and records how long it took that way. */
static void run_timed(ft_exec *x, ft_exec_frame *f, int w, int want) {
  bool share = share_wave(x, w);
  uint64_t t0 = now_ns();
  if (!share || !ft_pool_try_run(x->opt.pool, want, wave_job, f)) {
    share = false;
    wave_job(f, 0);
  }
  note_time(share ? &x->clock[w].shared : &x->clock[w].alone, now_ns() - t0);
}

ft_status ft_exec_run_frame(ft_exec *x, ft_exec_frame *f, ft_ctx *ctx, void *user,
                            ft_exec_profile *prof) {
  if (prof && prof->x != x)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "executor: the profile belongs to another executor");
  f->user = user;
  f->prof = prof;
  f->fail_task = INT_MAX;
  f->fail_st = FT_OK;
  atomic_store_explicit(&f->failed, 0, memory_order_relaxed);
  if (prof) {
    for (int64_t i = 0; i < x->n_items; i++) prof->dur[i] = UINT64_MAX;
    prof->t0 = now_ns();
  }
  unsigned csr = ft_fp_env_enter();
  for (int w = 0; w < x->n_waves; w++) {
    int64_t lo = x->wave_start[w], hi = x->wave_start[w + 1];
    if (lo == hi) continue;
    f->lo = lo;
    f->hi = hi;
    atomic_store_explicit(&f->next, 0, memory_order_relaxed);
    int64_t want = hi - lo < x->n_threads ? hi - lo : x->n_threads;
    /* A wave of one chunk or of little work, or a pool busy with another
     * call, runs here; so does a wave that lately ran faster alone. */
    if (want <= 1 || (x->wave_small[w] && !x->opt.no_small_waves)) wave_job(f, 0);
    else run_timed(x, f, w, (int)want);
    if (atomic_load_explicit(&f->failed, memory_order_relaxed)) break;
  }
  ft_fp_env_leave(csr);
  if (prof) profile_finish(x, prof);
  if (!atomic_load_explicit(&f->failed, memory_order_relaxed)) return FT_OK;
  int t = f->fail_task;
  return ft_set_error(ctx, f->fail_st, "executor: task '%s' (#%d, wave %d) failed: %s",
                      x->names[t], t, x->wave[t], f->fail_msg[0] ? f->fail_msg : "no message");
}

ft_status ft_exec_run(ft_exec *x, ft_ctx *ctx, void *user, ft_exec_profile *prof) {
  ft_exec_frame *f = ft_exec_acquire(x, ctx);
  if (!f) return FT_ERR_NOMEM;
  ft_status st = ft_exec_run_frame(x, f, ctx, user, prof);
  ft_exec_release(x, f);
  return st;
}

/* -------------------------------------------------------------- profiles */
ft_exec_profile *ft_exec_profile_new(const ft_exec *x) {
  ft_exec_profile *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->x = x;
  size_t ni = (size_t)x->n_items + 1, nt = (size_t)x->n + 1;
  p->start = calloc(ni, sizeof *p->start);
  p->dur = calloc(ni, sizeof *p->dur);
  p->tid = calloc(ni, sizeof *p->tid);
  p->runs = calloc(nt, sizeof *p->runs);
  p->total = calloc(nt, sizeof *p->total);
  p->min = calloc(nt, sizeof *p->min);
  p->max = calloc(nt, sizeof *p->max);
  p->busy = calloc(nt, sizeof *p->busy);
  if (!p->start || !p->dur || !p->tid || !p->runs || !p->total || !p->min || !p->max || !p->busy) {
    ft_exec_profile_free(p);
    return NULL;
  }
  return p;
}

void ft_exec_profile_free(ft_exec_profile *p) {
  if (!p) return;
  free(p->start), free(p->dur), free(p->tid), free(p->runs);
  free(p->total), free(p->min), free(p->max), free(p->busy);
  free(p);
}

void ft_exec_profile_reset(ft_exec_profile *p) {
  size_t nt = (size_t)p->x->n + 1;
  p->have_last = false;
  memset(p->runs, 0, nt * sizeof *p->runs);
  memset(p->total, 0, nt * sizeof *p->total);
  memset(p->min, 0, nt * sizeof *p->min);
  memset(p->max, 0, nt * sizeof *p->max);
}

ft_status ft_exec_profile_task(const ft_exec_profile *p, int task, ft_exec_task_stats *out) {
  if (!p || !out || task < 0 || task >= p->x->n) return FT_ERR_INVALID_ARG;
  out->runs = p->runs[task];
  out->total_ms = (double)p->total[task] * 1e-6;
  out->min_ms = (double)p->min[task] * 1e-6;
  out->max_ms = (double)p->max[task] * 1e-6;
  out->bytes = p->x->bytes[task];
  return FT_OK;
}

char *ft_exec_profile_json(const ft_exec_profile *p) {
  if (!p || !p->have_last) return NULL;
  const ft_exec *x = p->x;
  ft_buf b = {0};
  ft_buf_puts(&b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  ft_buf_puts(&b, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"ft executor\"}}");
  int max_tid = 0;
  for (int64_t i = 0; i < x->n_items; i++)
    if (p->dur[i] != UINT64_MAX && p->tid[i] > max_tid) max_tid = p->tid[i];
  for (int t = 0; t <= max_tid; t++)
    ft_buf_printf(&b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                  "\"args\":{\"name\":\"%s %d\"}}", t, t ? "worker" : "caller", t);
  ft_buf_printf(&b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                "\"args\":{\"name\":\"waves\"}}", FT_POOL_MAX_THREADS);
  for (int w = 0; w < x->n_waves; w++) {
    uint64_t s = UINT64_MAX, e = 0;
    for (int64_t i = x->wave_start[w]; i < x->wave_start[w + 1]; i++) {
      if (p->dur[i] == UINT64_MAX) continue;
      if (p->start[i] < s) s = p->start[i];
      if (p->start[i] + p->dur[i] > e) e = p->start[i] + p->dur[i];
    }
    if (s == UINT64_MAX) continue;
    ft_buf_printf(&b, ",\n{\"name\":\"wave %d\",\"cat\":\"wave\",\"ph\":\"X\",\"ts\":%.3f,"
                  "\"dur\":%.3f,\"pid\":1,\"tid\":%d,\"args\":{\"wave\":%d,\"chunks\":%lld}}", w,
                  (double)s * 1e-3, (double)(e - s) * 1e-3, FT_POOL_MAX_THREADS, w,
                  (long long)(x->wave_start[w + 1] - x->wave_start[w]));
  }
  for (int64_t i = 0; i < x->n_items; i++) {
    if (p->dur[i] == UINT64_MAX) continue;
    int t = x->it_task[i];
    ft_buf_puts(&b, ",\n{\"name\":");
    ft_json_str(&b, x->names[t]);
    ft_buf_printf(&b, ",\"cat\":\"task\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,"
                  "\"tid\":%d,\"args\":{\"task\":%d,\"wave\":%d,\"chunk\":%d,\"chunks\":%lld}}",
                  (double)p->start[i] * 1e-3, (double)p->dur[i] * 1e-3, p->tid[i], t, x->wave[t],
                  x->it_chunk[i], (long long)x->chunks[t]);
  }
  ft_buf_puts(&b, "\n]}\n");
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

char *ft_exec_stats_table(const ft_exec_profile *p) {
  if (!p) return NULL;
  const ft_exec *x = p->x;
  ft_buf b = {0};
  ft_buf_printf(&b, "%-5s %-32s %5s %7s %6s %10s %10s %10s %12s %9s\n", "task", "name", "wave",
                "chunks", "runs", "mean us", "min us", "max us", "bytes", "GB/s");
  double sum = 0;
  for (int t = 0; t < x->n; t++) {
    double mean = p->runs[t] ? (double)p->total[t] / (double)p->runs[t] : 0;
    sum += mean;
    double gbs = mean > 0 ? (double)x->bytes[t] / mean : 0;
    ft_buf_printf(&b, "%-5d %-32.32s %5d %7lld %6lld %10.2f %10.2f %10.2f %12llu %9.2f\n", t,
                  x->names[t], x->wave[t], (long long)x->chunks[t], (long long)p->runs[t],
                  mean * 1e-3, (double)p->min[t] * 1e-3, (double)p->max[t] * 1e-3,
                  (unsigned long long)x->bytes[t], gbs);
  }
  ft_buf_printf(&b, "%d tasks in %d waves; busy time per run %.2f us (all threads)\n", x->n,
                x->n_waves, sum * 1e-3);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}
