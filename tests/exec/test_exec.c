/* tests/exec/test_exec.c: the generic executor (src/runtime/exec.h): random
 * DAGs run every chunk once with dependencies respected on 1..8 threads;
 * independent tasks really run at the same time; the buffer plan is valid
 * on random DAGs and its memory really holds up under concurrent runs;
 * failures stop a call cleanly and leave the executor usable; many user
 * threads share one executor; steady-state runs allocate nothing; idle
 * workers sleep; FTZ/DAZ are off on every thread; a wave's chunks start
 * longest first; a wave that ran faster alone runs alone. */
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <xmmintrin.h>

#include "exec_util.h"

static const int POOL_SIZES[] = {1, 2, 3, 4, 8};
static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

/* ------------------------------------------------------------ random DAGs */
typedef struct dag_run {
  const xt_dag *d;
  int64_t *extent, *grain;
  atomic_int *done_chunks;  /* per task */
  atomic_int *hits;         /* per (task, chunk): runs */
  int64_t *hit_at;          /* first item index of each task in hits */
  atomic_int violations;
} dag_run;

typedef struct dag_task { dag_run *r; int t; } dag_task;

static ft_status dag_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  dag_task *dt = u;
  dag_run *r = dt->r;
  int t = dt->t;
  for (int k = 0; k < r->d->n_deps[t]; k++) {
    int dep = r->d->deps[t][k];
    int64_t need = r->extent[dep] ? (r->extent[dep] + r->grain[dep] - 1) / r->grain[dep] : 0;
    if (atomic_load(&r->done_chunks[dep]) != need) atomic_fetch_add(&r->violations, 1);
  }
  int64_t g = r->grain[t];
  if (lo % g || hi - lo > g || hi <= lo || hi > r->extent[t] || (hi - lo < g && hi != r->extent[t]))
    atomic_fetch_add(&r->violations, 1);
  atomic_fetch_add(&r->hits[r->hit_at[t] + lo / g], 1);
  atomic_fetch_add(&r->done_chunks[t], 1);
  (void)c;
  return FT_OK;
}

START_TEST(random_dags_run_every_chunk_once_in_order) {
  for (int trial = 0; trial < 40; trial++) {
    uint64_t seed = 1000 + (uint64_t)trial;
    int n = 1 + (int)(xt_rng(&seed) % 60);
    xt_dag d = xt_dag_random(n, 4, seed);
    dag_run r = {.d = &d};
    r.extent = calloc((size_t)n, sizeof *r.extent);
    r.grain = calloc((size_t)n, sizeof *r.grain);
    r.hit_at = calloc((size_t)n, sizeof *r.hit_at);
    r.done_chunks = calloc((size_t)n, sizeof *r.done_chunks);
    ft_exec_task *tasks = calloc((size_t)n, sizeof *tasks);
    dag_task *dts = calloc((size_t)n, sizeof *dts);
    char (*names)[16] = calloc((size_t)n, sizeof *names);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
      r.extent[i] = (int64_t)(xt_rng(&seed) % 50);       /* 0 sometimes: no chunks */
      r.grain[i] = 1 + (int64_t)(xt_rng(&seed) % 9);
      r.hit_at[i] = total;
      total += (r.extent[i] + r.grain[i] - 1) / r.grain[i];
      dts[i] = (dag_task){&r, i};
      snprintf(names[i], sizeof names[i], "t%d", i);
      tasks[i] = (ft_exec_task){.name = names[i], .fn = dag_fn, .user = &dts[i], .extent = r.extent[i],
                                .grain = r.grain[i], .n_deps = d.n_deps[i], .deps = d.deps[i]};
    }
    r.hits = calloc((size_t)total + 1, sizeof *r.hits);
    for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
      ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
      ck_assert_ptr_nonnull(pool);
      ft_exec *x = ft_exec_new(C, n, tasks, &(ft_exec_options){.pool = pool});
      ck_assert_msg(x, "%s", ft_ctx_error(C));
      for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ft_exec_task_chunks(x, i), (r.extent[i] + r.grain[i] - 1) / r.grain[i]);
        for (int k = 0; k < d.n_deps[i]; k++)
          ck_assert_int_gt(ft_exec_task_wave(x, i), ft_exec_task_wave(x, d.deps[i][k]));
      }
      for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < n; i++) atomic_store(&r.done_chunks[i], 0);
        for (int64_t i = 0; i < total; i++) atomic_store(&r.hits[i], 0);
        ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
        ck_assert_int_eq(atomic_load(&r.violations), 0);
        for (int64_t i = 0; i < total; i++) ck_assert_int_eq(atomic_load(&r.hits[i]), 1);
      }
      ft_exec_free(x);
      ft_pool_free(pool);
    }
    free(r.extent), free(r.grain), free(r.hit_at), free(r.done_chunks), free(r.hits);
    free(tasks), free(dts), free(names);
    xt_dag_free(&d);
  }
}
END_TEST

START_TEST(bad_graphs_are_rejected) {
  int d0[] = {1}, d1[] = {0}, bad[] = {7};
  ft_exec_task t[2] = {
      {.name = "a", .fn = dag_fn, .extent = 1, .n_deps = 1, .deps = d0},
      {.name = "b", .fn = dag_fn, .extent = 1, .n_deps = 1, .deps = d1}};
  ck_assert_ptr_null(ft_exec_new(C, 2, t, NULL));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "cycle"));
  t[0].deps = bad;
  ck_assert_ptr_null(ft_exec_new(C, 2, t, NULL));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "bad dependency 7"));
  t[0].n_deps = 0, t[1].grain = -1;
  ck_assert_ptr_null(ft_exec_new(C, 2, t, NULL));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "task 1 ('b')"));
  ft_ctx_clear_error(C);
}
END_TEST

START_TEST(grain_depends_on_the_shape_only) {
  ck_assert_int_eq(ft_exec_grain(0, 1), 1);
  ck_assert_int_eq(ft_exec_grain(1, 1000000), 1);
  ck_assert_int_eq(ft_exec_grain(1000, 1), 1000);            /* one chunk */
  ck_assert_int_eq(ft_exec_grain(1000000, 1), 32259);        /* 31 chunks */
  ck_assert_int_eq(ft_exec_grain(64, 1 << 20), 1);           /* 64 chunks of 1 row */
  ck_assert_int_eq(ft_exec_grain(100000000, 16), 390625);    /* capped at 256 chunks */
}
END_TEST

/* ----------------------------------------------------------- concurrency */
/* Two tasks of one wave wait (up to 5 s) for each other to start: they only
 * both see the other when they run at the same time. */
typedef struct rendezvous { atomic_int arrived; atomic_int met; } rendezvous;

static ft_status meet_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  rendezvous *rv = u;
  atomic_fetch_add(&rv->arrived, 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (atomic_load(&rv->arrived) >= 2) {
      atomic_fetch_add(&rv->met, 1);
      break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (t1.tv_sec - t0.tv_sec > 5) break;
  }
  return FT_OK;
}

START_TEST(independent_branches_run_concurrently) {
  ft_pool *pool = ft_pool_new(2);
  rendezvous rv;
  atomic_init(&rv.arrived, 0), atomic_init(&rv.met, 0);
  ft_exec_task t[2] = {{.name = "left", .fn = meet_fn, .user = &rv, .extent = 1},
                       {.name = "right", .fn = meet_fn, .user = &rv, .extent = 1}};
  ft_exec *x = ft_exec_new(C, 2, t, &(ft_exec_options){.pool = pool});
  ck_assert_int_eq(ft_exec_num_waves(x), 1);
  ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  ck_assert_int_eq(atomic_load(&rv.met), 2);
  ft_exec_free(x);
  ft_pool_free(pool);
}
END_TEST

/* A wave of known small cost runs on the caller alone; unknown cost or
 * no_small_waves lets the workers in. */
static atomic_int off_caller;
static ft_status where_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  if (ft_exec_call_thread(c) != 0) atomic_fetch_add(&off_caller, 1);
  /* long enough that a woken worker gets some chunks */
  struct timespec ts = {0, 200 * 1000};
  nanosleep(&ts, NULL);
  return FT_OK;
}

START_TEST(small_waves_stay_on_the_caller) {
  ft_pool *pool = ft_pool_new(2);
  ft_exec_task t = {.name = "small", .fn = where_fn, .extent = 64, .grain = 1, .cost = 64};
  ft_exec *x = ft_exec_new(C, 1, &t, &(ft_exec_options){.pool = pool});
  atomic_store(&off_caller, 0);
  ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  ck_assert_int_eq(atomic_load(&off_caller), 0);
  ft_exec_free(x);
  x = ft_exec_new(C, 1, &t, &(ft_exec_options){.pool = pool, .no_small_waves = true});
  ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  ck_assert_int_gt(atomic_load(&off_caller), 0);
  ft_exec_free(x);
  ft_pool_free(pool);
}
END_TEST

/* ------------------------------------------------------------ buffer plan */
START_TEST(bufplan_small_exact) {
  /* a [0,1] 100B, b [1,2] 100B in place of a, c [2,3] 64B, d [0,3] 32B */
  ft_bufplan_buf b[4] = {
      {.size = 100, .first = 0, .last = 1, .inplace_of = -1},
      {.size = 100, .first = 1, .last = 2, .inplace_of = 0},
      {.size = 64, .first = 2, .last = 3, .inplace_of = -1},
      {.size = 32, .first = 0, .last = 3, .inplace_of = -1}};
  ft_bufplan_stats st;
  ck_assert_int_eq(ft_bufplan_solve(C, 4, b, &st), FT_OK);
  ck_assert(b[1].inplace);
  ck_assert_uint_eq(b[0].offset, 0);
  ck_assert_uint_eq(b[1].offset, 0);
  /* the a/b block [0,128) lives [0,2]; then d (64 B, born first) and c */
  ck_assert_uint_eq(b[3].offset, 128);
  ck_assert_uint_eq(b[2].offset, 192);
  ck_assert_uint_eq(st.peak, 256);
  ck_assert_uint_eq(st.sum, 128 + 128 + 64 + 64);
  ck_assert_uint_eq(st.lower_bound, 256);
  ck_assert_int_eq(st.n_inplace, 1);
  char why[256];
  ck_assert_msg(ft_bufplan_validate(4, b, st.peak, why, sizeof why), "%s", why);
  /* reuse after death: e [4,5] fits at 0 */
  ft_bufplan_buf e[2] = {{.size = 256, .first = 0, .last = 3, .inplace_of = -1},
                         {.size = 200, .first = 4, .last = 5, .inplace_of = -1}};
  ck_assert_int_eq(ft_bufplan_solve(C, 2, e, &st), FT_OK);
  ck_assert_uint_eq(e[1].offset, 0);
  ck_assert_uint_eq(st.peak, 256);
  /* the validator catches overlap, misalignment and overflow */
  e[1].first = 3;
  ck_assert(!ft_bufplan_validate(2, e, 256, why, sizeof why));
  ck_assert_ptr_nonnull(strstr(why, "overlap"));
  e[1].first = 4, e[1].offset = 8;
  ck_assert(!ft_bufplan_validate(2, e, 512, why, sizeof why));
  ck_assert_ptr_nonnull(strstr(why, "aligned"));
  e[1].offset = 64;
  ck_assert(!ft_bufplan_validate(2, e, 256, why, sizeof why));
  ck_assert_ptr_nonnull(strstr(why, "outside"));
  /* an in-place offer whose source outlives the taker's birth is refused */
  ft_bufplan_buf f[2] = {{.size = 64, .first = 0, .last = 3, .inplace_of = -1},
                         {.size = 64, .first = 1, .last = 4, .inplace_of = 0}};
  ck_assert_int_eq(ft_bufplan_solve(C, 2, f, &st), FT_OK);
  ck_assert(!f[1].inplace);
  ck_assert_uint_eq(st.peak, 128);
}
END_TEST

/* Random DAGs where each task produces one buffer of random size: the plan
 * is made over the waves (a buffer lives from its producer's wave to its
 * last reader's), in-place is offered where a task is the only reader of a
 * dependency in the wave that dependency dies in. Then the executor runs
 * the DAG for real in the planned arena: every task checks the contents of
 * its inputs and writes a pattern of its own, chunk by chunk. */
typedef struct mem_run {
  const xt_dag *d;
  const ft_bufplan_buf *b;
  const int *elems;        /* u32 elements of each buffer */
  const int *inplace_src;  /* the dep whose chunk is read just before it is overwritten, or -1 */
  atomic_int bad;
} mem_run;

static uint32_t pat(int t, int64_t i) { return (uint32_t)(t * 2654435761u) ^ (uint32_t)(i * 40503u); }

static ft_status mem_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  dag_task *dt = u;
  mem_run *r = (mem_run *)dt->r;
  int t = dt->t;
  char *arena = ft_exec_call_arena(c);
  uint32_t *out = (uint32_t *)(arena + r->b[t].offset);
  for (int k = 0; k < r->d->n_deps[t]; k++) {
    int dep = r->d->deps[t][k];
    const uint32_t *in = (const uint32_t *)(arena + r->b[dep].offset);
    if (dep == r->inplace_src[t]) continue; /* checked element by element below */
    for (int64_t i = 0; i < r->elems[dep]; i++)
      if (in[i] != pat(dep, i)) {
        atomic_fetch_add(&r->bad, 1);
        break;
      }
  }
  int src = r->inplace_src[t];
  const uint32_t *sin = src >= 0 ? (const uint32_t *)(arena + r->b[src].offset) : NULL;
  for (int64_t i = lo; i < hi; i++) {
    if (sin && i < r->elems[src] && sin[i] != pat(src, i)) atomic_fetch_add(&r->bad, 1);
    out[i] = pat(t, i);
  }
  return FT_OK;
}

START_TEST(bufplan_random_dags_valid_and_real) {
  for (int trial = 0; trial < 60; trial++) {
    uint64_t seed = 77 + (uint64_t)trial;
    int n = 1 + (int)(xt_rng(&seed) % 50);
    xt_dag d = xt_dag_random(n, 3, seed);
    int *elems = calloc((size_t)n, sizeof *elems);
    ft_exec_task *tasks = calloc((size_t)n, sizeof *tasks);
    dag_task *dts = calloc((size_t)n, sizeof *dts);
    mem_run r = {.d = &d};
    for (int i = 0; i < n; i++) {
      elems[i] = 1 + (int)(xt_rng(&seed) % 300);
      dts[i] = (dag_task){(dag_run *)&r, i};
      tasks[i] = (ft_exec_task){.name = "m", .fn = mem_fn, .user = &dts[i], .extent = elems[i],
                                .grain = 1 + (int64_t)(xt_rng(&seed) % 64),
                                .n_deps = d.n_deps[i], .deps = d.deps[i]};
    }
    ft_exec *x0 = ft_exec_new(C, n, tasks, NULL);
    ck_assert_ptr_nonnull(x0);
    /* liveness over waves */
    ft_bufplan_buf *b = calloc((size_t)n, sizeof *b);
    int *src = malloc(sizeof *src * (size_t)n);
    for (int i = 0; i < n; i++) {
      int w = ft_exec_task_wave(x0, i);
      b[i] = (ft_bufplan_buf){.size = (size_t)elems[i] * 4, .align = (size_t)4 << (i % 5),
                              .first = w, .last = w, .inplace_of = -1};
      src[i] = -1;
    }
    for (int i = 0; i < n; i++)
      for (int k = 0; k < d.n_deps[i]; k++) {
        int dep = d.deps[i][k], w = ft_exec_task_wave(x0, i);
        if (w > b[dep].last) b[dep].last = w;
      }
    for (int i = 0; i < n; i++) { /* offer in place: i is dep's only reader in dep's last wave */
      int w = ft_exec_task_wave(x0, i);
      for (int k = 0; k < d.n_deps[i] && b[i].inplace_of < 0; k++) {
        int dep = d.deps[i][k];
        if (b[dep].last != w || elems[dep] > elems[i]) continue;
        bool alone = true;
        for (int o = 0; o < n && alone; o++)
          if (o != i && ft_exec_task_wave(x0, o) == w)
            for (int q = 0; q < d.n_deps[o]; q++) alone &= d.deps[o][q] != dep;
        int uses = 0;
        for (int q = 0; q < d.n_deps[i]; q++) uses += d.deps[i][q] == dep;
        if (alone && uses == 1) b[i].inplace_of = dep;
      }
    }
    ft_bufplan_stats st;
    ck_assert_int_eq(ft_bufplan_solve(C, n, b, &st), FT_OK);
    char why[256];
    ck_assert_msg(ft_bufplan_validate(n, b, st.peak, why, sizeof why), "trial %d: %s", trial, why);
    ck_assert_uint_le(st.lower_bound, st.peak);
    size_t slack = 0; /* alignment padding the greedy placement may add */
    for (int i = 0; i < n; i++) slack += b[i].align;
    ck_assert_uint_le(st.peak, st.sum + slack);
    for (int i = 0; i < n; i++) src[i] = b[i].inplace ? b[i].inplace_of : -1;
    r.b = b, r.elems = elems, r.inplace_src = src;
    ft_exec_free(x0);
    for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
      ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
      ft_exec *x = ft_exec_new(C, n, tasks, &(ft_exec_options){.pool = pool, .arena_bytes = st.peak});
      for (int rep = 0; rep < 3; rep++) ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
      ck_assert_msg(atomic_load(&r.bad) == 0, "trial %d threads %d", trial, POOL_SIZES[ps]);
      ft_exec_free(x);
      ft_pool_free(pool);
    }
    free(elems), free(tasks), free(dts), free(b), free(src);
    xt_dag_free(&d);
  }
}
END_TEST

/* ---------------------------------------------------------------- faults */
typedef struct fault_run {
  int fail_task;           /* -1: none */
  int64_t fail_chunk_lo;
  atomic_int ran[8];
} fault_run;

typedef struct fault_task { fault_run *r; int t; } fault_task;

static ft_status fault_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  fault_task *ft = u;
  atomic_fetch_add(&ft->r->ran[ft->t], 1);
  if (ft->t == ft->r->fail_task && lo == ft->r->fail_chunk_lo)
    return ft_exec_fail(c, FT_ERR_INTERNAL, "injected fault at [%lld, %lld)", (long long)lo,
                        (long long)hi);
  if (ft->t == 5 && ft->r->fail_task == 5) return FT_ERR_NOMEM; /* no message */
  return FT_OK;
}

START_TEST(a_failing_task_stops_the_call_cleanly) {
  /* 0 -> {1, 2} -> 3 -> 4; task 1 has 8 chunks; 5 is independent. */
  int d1[] = {0}, d3[] = {1, 2}, d4[] = {3};
  fault_run r = {.fail_task = -1};
  fault_task ft[6];
  for (int i = 0; i < 6; i++) ft[i] = (fault_task){&r, i};
  ft_exec_task t[6] = {
      {.name = "load", .fn = fault_fn, .user = &ft[0], .extent = 1},
      {.name = "left branch", .fn = fault_fn, .user = &ft[1], .extent = 64, .grain = 8, .n_deps = 1, .deps = d1},
      {.name = "right", .fn = fault_fn, .user = &ft[2], .extent = 1, .n_deps = 1, .deps = d1},
      {.name = "join", .fn = fault_fn, .user = &ft[3], .extent = 1, .n_deps = 2, .deps = d3},
      {.name = "store", .fn = fault_fn, .user = &ft[4], .extent = 1, .n_deps = 1, .deps = d4},
      {.name = "side", .fn = fault_fn, .user = &ft[5], .extent = 1}};
  for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
    ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
    ft_exec *x = ft_exec_new(C, 6, t, &(ft_exec_options){.pool = pool, .arena_bytes = 1 << 16,
                                                          .frame_ctx = true});
    for (int rep = 0; rep < 3; rep++) {
      for (int i = 0; i < 6; i++) atomic_store(&r.ran[i], 0);
      r.fail_task = 1, r.fail_chunk_lo = 24;
      ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_ERR_INTERNAL);
      ck_assert_str_eq(ft_ctx_error(C), "executor: task 'left branch' (#1, wave 1) failed: "
                                        "injected fault at [24, 32)");
      ck_assert_int_eq(atomic_load(&r.ran[3]), 0); /* later waves never start */
      ck_assert_int_eq(atomic_load(&r.ran[4]), 0);
      ck_assert_int_le(atomic_load(&r.ran[1]), 8);
      ft_ctx_clear_error(C);
      /* two failures: the lower-numbered task is reported, whatever the timing */
      r.fail_task = 5;
      ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_ERR_NOMEM);
      ck_assert_str_eq(ft_ctx_error(C), "executor: task 'side' (#5, wave 0) failed: no message");
      ft_ctx_clear_error(C);
      /* and the executor is as good as new */
      r.fail_task = -1;
      for (int i = 0; i < 6; i++) atomic_store(&r.ran[i], 0);
      ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
      ck_assert_int_eq(atomic_load(&r.ran[1]), 8);
      ck_assert_int_eq(atomic_load(&r.ran[4]), 1);
    }
    ft_exec_free(x);
    ft_pool_free(pool);
  }
}
END_TEST

/* ------------------------------------------------- many user threads */
/* task 0: arena[i] = in[i] * 3 (chunks); task 1: arena2[i] = arena[i] + 1;
 * task 2: out[i] = arena2[n-1-i] (chunks). user = this call's in/out. */
enum { MU_N = 4096 };
typedef struct mu_call { const int32_t *in; int32_t *out; } mu_call;

static ft_status mu0(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  mu_call *m = ft_exec_call_user(c);
  int32_t *a = ft_exec_call_arena(c);
  for (int64_t i = lo; i < hi; i++) a[i] = m->in[i] * 3;
  return FT_OK;
}
static ft_status mu1(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  int32_t *a = ft_exec_call_arena(c);
  for (int64_t i = lo; i < hi; i++) a[MU_N + i] = a[i] + 1;
  return FT_OK;
}
static ft_status mu2(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  mu_call *m = ft_exec_call_user(c);
  int32_t *a = ft_exec_call_arena(c);
  for (int64_t i = lo; i < hi; i++) m->out[i] = a[MU_N + MU_N - 1 - i];
  return FT_OK;
}

typedef struct mu_thread { ft_exec *x; int id; int bad; } mu_thread;

static void *mu_main(void *arg) {
  mu_thread *th = arg;
  ft_ctx *ctx = ft_ctx_new(NULL);
  int32_t *in = malloc(sizeof(int32_t) * MU_N), *out = malloc(sizeof(int32_t) * MU_N);
  for (int rep = 0; rep < 40; rep++) {
    for (int i = 0; i < MU_N; i++) in[i] = th->id * 100000 + rep * 1000 + i;
    mu_call m = {in, out};
    if (ft_exec_run(th->x, ctx, &m, NULL) != FT_OK) th->bad++;
    for (int i = 0; i < MU_N; i++)
      if (out[i] != in[MU_N - 1 - i] * 3 + 1) {
        th->bad++;
        break;
      }
  }
  free(in), free(out);
  ft_ctx_free(ctx);
  return NULL;
}

START_TEST(many_user_threads_share_one_executor) {
  int d1[] = {0}, d2[] = {1};
  ft_exec_task t[3] = {{.name = "scale", .fn = mu0, .extent = MU_N, .grain = 512},
                       {.name = "inc", .fn = mu1, .extent = MU_N, .grain = 1024, .n_deps = 1, .deps = d1},
                       {.name = "reverse", .fn = mu2, .extent = MU_N, .grain = 256, .n_deps = 1, .deps = d2}};
  int pools[] = {1, 2, 4};
  for (size_t ps = 0; ps < FT_COUNTOF(pools); ps++) {
    ft_pool *pool = ft_pool_new(pools[ps]);
    /* 3 frames for 8 threads: the others wait for a frame */
    ft_exec *x = ft_exec_new(C, 3, t, &(ft_exec_options){.pool = pool, .arena_bytes = 8 * MU_N,
                                                          .max_frames = 3});
    pthread_t th[8];
    mu_thread mt[8];
    for (int i = 0; i < 8; i++) {
      mt[i] = (mu_thread){x, i, 0};
      ck_assert_int_eq(pthread_create(&th[i], NULL, mu_main, &mt[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
      pthread_join(th[i], NULL);
      ck_assert_int_eq(mt[i].bad, 0);
    }
    ft_exec_free(x);
    ft_pool_free(pool);
  }
}
END_TEST

/* ------------------------------------------------- allocation, idleness */
START_TEST(steady_state_runs_do_not_allocate) {
  int d1[] = {0}, d2[] = {1};
  ft_exec_task t[3] = {{.name = "scale", .fn = mu0, .extent = MU_N, .grain = 512},
                       {.name = "inc", .fn = mu1, .extent = MU_N, .grain = 1024, .n_deps = 1, .deps = d1},
                       {.name = "reverse", .fn = mu2, .extent = MU_N, .grain = 256, .n_deps = 1, .deps = d2}};
  int32_t *in = calloc(MU_N, sizeof *in), *out = calloc(MU_N, sizeof *out);
  mu_call m = {in, out};
  for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
    ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
    ft_exec *x = ft_exec_new(C, 3, t, &(ft_exec_options){.pool = pool, .arena_bytes = 8 * MU_N});
    ft_exec_profile *prof = ft_exec_profile_new(x);
    ck_assert_int_eq(ft_exec_run(x, C, &m, NULL), FT_OK); /* makes the frame */
    atomic_store(&xt_allocs, 0);
    atomic_store(&xt_counting, true);
    int fails = 0; /* no ck_assert while counting: Check allocates to record it */
    for (int rep = 0; rep < 200; rep++) fails += ft_exec_run(x, C, &m, rep % 2 ? prof : NULL) != FT_OK;
    atomic_store(&xt_counting, false);
    ck_assert_int_eq(fails, 0);
    ck_assert_int_eq(atomic_load(&xt_allocs), 0);
    /* the counter itself works */
    atomic_store(&xt_counting, true);
    void *volatile probe = malloc(16); /* volatile: gcc elides malloc+free pairs */
    free(probe);
    atomic_store(&xt_counting, false);
    ck_assert_int_eq(atomic_load(&xt_allocs), 1);
    ft_exec_profile_free(prof);
    ft_exec_free(x);
    ft_pool_free(pool);
  }
  free(in), free(out);
}
END_TEST

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void spin_job(void *arg, int tid) { (void)arg, (void)tid; }

START_TEST(idle_workers_sleep) {
  ft_pool *pool = ft_pool_new(4);
  ck_assert(ft_pool_try_run(pool, 4, spin_job, NULL));
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL); /* past the short spin */
  double c0 = cpu_seconds();
  ts.tv_nsec = 300 * 1000 * 1000;
  nanosleep(&ts, NULL);
  double used = cpu_seconds() - c0;
  ck_assert_msg(used < 0.05, "idle pool used %.3f s of CPU in 0.3 s", used);
  ft_pool_free(pool);
}
END_TEST

/* ------------------------------------------------------------ FTZ / DAZ */
static atomic_int ftz_seen;
static ft_status ftz_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  volatile float tiny = 1e-39f; /* subnormal */
  float *out = u;
  for (int64_t i = lo; i < hi; i++) out[i] = tiny * 0.5f;
  if (_mm_getcsr() & 0x8040) atomic_fetch_add(&ftz_seen, 1);
  return FT_OK;
}

START_TEST(ftz_and_daz_are_off_on_every_thread) {
  float out[64];
  ft_exec_task t = {.name = "tiny", .fn = ftz_fn, .user = out, .extent = 64, .grain = 1};
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040); /* the caller turns FTZ and DAZ on */
  for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
    ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
    ft_exec *x = ft_exec_new(C, 1, &t, &(ft_exec_options){.pool = pool});
    atomic_store(&ftz_seen, 0);
    ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
    ck_assert_uint_eq(_mm_getcsr() & 0x8040, 0x8040); /* restored for the caller */
    ck_assert_int_eq(atomic_load(&ftz_seen), 0);
    for (int i = 0; i < 64; i++) ck_assert_float_eq(out[i], 5e-40f);
    ft_exec_free(x);
    ft_pool_free(pool);
  }
  _mm_setcsr(saved);
}
END_TEST

START_TEST(thread_count_from_options_and_environment) {
  ft_ctx_options o = {.size = sizeof(ft_ctx_options), .num_threads = 3};
  ck_assert_int_eq(ft_pool_default_threads(&o), 3);
  setenv("FT_NUM_THREADS", "5", 1);
  ck_assert_int_eq(ft_pool_default_threads(NULL), 5);
  ck_assert_int_eq(ft_pool_default_threads(&o), 3);
  setenv("FT_NUM_THREADS", "junk", 1);
  ck_assert_int_ge(ft_pool_default_threads(NULL), 1);
  unsetenv("FT_NUM_THREADS");
  ft_pool *a = ft_pool_acquire_shared(2), *b = ft_pool_acquire_shared(2), *c = ft_pool_acquire_shared(3);
  ck_assert_ptr_eq(a, b);
  ck_assert_ptr_ne(a, c);
  ck_assert_int_eq(ft_pool_size(c), 3);
  ft_pool_release_shared(a), ft_pool_release_shared(b), ft_pool_release_shared(c);
}
END_TEST

/* ------------------------------------------------------------- profiling */
START_TEST(profile_json_and_stats) {
  int d1[] = {0}, d2[] = {1};
  ft_exec_task t[3] = {{.name = "scale \"x\"", .fn = mu0, .extent = MU_N, .grain = 512, .bytes = 8 * MU_N},
                       {.name = "inc", .fn = mu1, .extent = MU_N, .grain = 1024, .n_deps = 1, .deps = d1},
                       {.name = "reverse", .fn = mu2, .extent = MU_N, .grain = 256, .n_deps = 1, .deps = d2}};
  int32_t *in = calloc(MU_N, sizeof *in), *out = calloc(MU_N, sizeof *out);
  mu_call m = {in, out};
  ft_pool *pool = ft_pool_new(2);
  ft_exec *x = ft_exec_new(C, 3, t, &(ft_exec_options){.pool = pool, .arena_bytes = 8 * MU_N});
  ft_exec_profile *p = ft_exec_profile_new(x);
  ck_assert_ptr_null(ft_exec_profile_json(p));
  for (int i = 0; i < 5; i++) ck_assert_int_eq(ft_exec_run(x, C, &m, p), FT_OK);
  char *js = ft_exec_profile_json(p);
  ck_assert_ptr_nonnull(js);
  ck_assert_ptr_nonnull(strstr(js, "\"traceEvents\""));
  ck_assert_ptr_nonnull(strstr(js, "\"name\":\"scale \\\"x\\\"\""));
  /* 8 + 4 + 16 chunk events */
  int events = 0;
  for (const char *s = js; (s = strstr(s, "\"cat\":\"task\"")); s++) events++;
  ck_assert_int_eq(events, 28);
  ck_assert_ptr_nonnull(strstr(js, "\"wave\":2,\"chunk\":15,\"chunks\":16"));
  free(js);
  ft_exec_task_stats ts;
  ck_assert_int_eq(ft_exec_profile_task(p, 0, &ts), FT_OK);
  ck_assert_int_eq(ts.runs, 5);
  ck_assert_uint_eq(ts.bytes, 8 * MU_N);
  ck_assert(ts.min_ms <= ts.max_ms && ts.total_ms >= ts.max_ms);
  char *tab = ft_exec_stats_table(p);
  ck_assert_ptr_nonnull(strstr(tab, "reverse"));
  ck_assert_ptr_nonnull(strstr(tab, "3 tasks in 3 waves"));
  free(tab);
  ft_exec_profile_free(p);
  ft_exec_free(x);
  ft_pool_free(pool);
  free(in), free(out);
}
END_TEST

/* The chunks of a wave start longest first (estimated from the tasks'
 * costs; unknown cost first), ties by task then chunk: on one thread the
 * run order is exactly that. */
typedef struct order_log { atomic_int n; int task[16], lo[16]; } order_log;
typedef struct order_task { order_log *log; int t; } order_task;

static ft_status order_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  order_task *o = u;
  int at = atomic_fetch_add(&o->log->n, 1);
  if (at < 16) o->log->task[at] = o->t, o->log->lo[at] = (int)lo;
  return FT_OK;
}

START_TEST(chunks_of_a_wave_start_longest_first) {
  order_log log;
  atomic_init(&log.n, 0);
  order_task ot[4] = {{&log, 0}, {&log, 1}, {&log, 2}, {&log, 3}};
  /* per chunk: a 2 (cost 10 over 4), b 500, c unknown, d 200 then 100 */
  ft_exec_task t[4] = {
      {.name = "a", .fn = order_fn, .user = &ot[0], .extent = 4, .grain = 1, .cost = 10},
      {.name = "b", .fn = order_fn, .user = &ot[1], .extent = 2, .grain = 1, .cost = 1000},
      {.name = "c", .fn = order_fn, .user = &ot[2], .extent = 1, .grain = 1, .cost = 0},
      {.name = "d", .fn = order_fn, .user = &ot[3], .extent = 3, .grain = 2, .cost = 300}};
  ft_exec *x = ft_exec_new(C, 4, t, NULL);
  ck_assert_ptr_nonnull(x);
  ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  static const int want_task[9] = {2, 1, 1, 3, 3, 0, 0, 0, 0}, want_lo[9] = {0, 0, 1, 0, 2, 0, 1, 2, 3};
  ck_assert_int_eq(atomic_load(&log.n), 9);
  for (int i = 0; i < 9; i++) {
    ck_assert_int_eq(log.task[i], want_task[i]);
    ck_assert_int_eq(log.lo[i], want_lo[i]);
  }
  ft_exec_free(x);
}
END_TEST

/* A wave that ran slower shared than alone runs alone, apart from one probe
 * every 16 runs. Chunks on a worker take 100 ms here, on the caller 1 ms
 * (long enough for a woken worker to take one if the wave were shared);
 * a shared warm-up run waits (up to 10 s) until a worker has started a
 * chunk, so the shared time is measured with a worker in it. The 100 ms
 * against 8 x 1 ms alone leaves a margin of 12x, so a loaded machine that
 * stretches the alone runs does not flip the choice (at 20 ms it did). */
static atomic_int slow_off_caller, slow_first;
static ft_status slow_worker_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (ft_exec_call_thread(c) != 0) {
    atomic_fetch_add(&slow_off_caller, 1);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  } else if (atomic_load(&slow_first)) {
    do clock_gettime(CLOCK_MONOTONIC, &t1);
    while (!atomic_load(&slow_off_caller) && t1.tv_sec - t0.tv_sec < 10);
  } else {
    do clock_gettime(CLOCK_MONOTONIC, &t1);
    while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 1000000L);
  }
  return FT_OK;
}

START_TEST(waves_run_alone_when_that_was_faster) {
  ft_pool *pool = ft_pool_new(2);
  ft_exec_task t = {.name = "slow when shared", .fn = slow_worker_fn, .extent = 8, .grain = 1};
  ft_exec *x = ft_exec_new(C, 1, &t, &(ft_exec_options){.pool = pool});
  /* runs 0..5 (exec.c's WARMUP) alternate: 0, 2, 4 shared (each waits for
   * a worker's 20 ms chunk), 1, 3, 5 alone */
  for (int r = 0; r < 6; r++) {
    atomic_store(&slow_off_caller, 0);
    atomic_store(&slow_first, r % 2 == 0);
    ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
    if (r % 2 == 0) ck_assert_int_gt(atomic_load(&slow_off_caller), 0);
    else ck_assert_int_eq(atomic_load(&slow_off_caller), 0);
  }
  atomic_store(&slow_first, 0);
  atomic_store(&slow_off_caller, 0);
  for (int r = 6; r < 15; r++) ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  ck_assert_int_eq(atomic_load(&slow_off_caller), 0); /* runs 6..14: alone (15 probes) */
  ft_exec_free(x);
  /* no_small_waves: every run shared */
  x = ft_exec_new(C, 1, &t, &(ft_exec_options){.pool = pool, .no_small_waves = true});
  atomic_store(&slow_off_caller, 0);
  atomic_store(&slow_first, 1);
  for (int r = 0; r < 3; r++) ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
  ck_assert_int_gt(atomic_load(&slow_off_caller), 0);
  atomic_store(&slow_first, 0);
  ft_exec_free(x);
  ft_pool_free(pool);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("exec");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, random_dags_run_every_chunk_once_in_order);
  tcase_add_test(tc, bad_graphs_are_rejected);
  tcase_add_test(tc, grain_depends_on_the_shape_only);
  tcase_add_test(tc, independent_branches_run_concurrently);
  tcase_add_test(tc, small_waves_stay_on_the_caller);
  tcase_add_test(tc, chunks_of_a_wave_start_longest_first);
  tcase_add_test(tc, waves_run_alone_when_that_was_faster);
  tcase_add_test(tc, bufplan_small_exact);
  tcase_add_test(tc, bufplan_random_dags_valid_and_real);
  tcase_add_test(tc, a_failing_task_stops_the_call_cleanly);
  tcase_add_test(tc, many_user_threads_share_one_executor);
  tcase_add_test(tc, steady_state_runs_do_not_allocate);
  tcase_add_test(tc, idle_workers_sleep);
  tcase_add_test(tc, ftz_and_daz_are_off_on_every_thread);
  tcase_add_test(tc, thread_count_from_options_and_environment);
  tcase_add_test(tc, profile_json_and_stats);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
