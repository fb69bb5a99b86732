/* tests/exec/test_exec_blas.c: OpenBLAS and FFTW under the executor give
 * the same bits on 1, 2, 3, 4 and 8 threads as one serial call on the main
 * thread (MACHINE-FACTS.md: OpenBLAS's bits change with its own thread
 * count and with how a product is split, FFTW's with its planner flags; the
 * project pins OpenBLAS to one thread, splits every product into row blocks
 * fixed by its shape, and plans FFTW with FFTW_ESTIMATE). Also through the
 * project's own paths: ft_eval of dot_general and fft programs inside
 * tasks, each on its thread's context; and compiled programs whose GEMMs
 * split into blocks run on several threads. meson runs this binary twice:
 * with the environment's OpenBLAS kernels and with OPENBLAS_CORETYPE=Haswell,
 * whose kernels give different bits for a split product than for a whole
 * one (so there a GEMM split differently from ft_gemm would be caught). */
#include <fftw3.h> /* before cblas.h: OpenBLAS pulls in complex.h */
#include <cblas.h>
#include <stdio.h>

#include "exec_util.h"
#include "lower/lower.h"
#include "runtime/runtime.h"

static const int POOL_SIZES[] = {1, 2, 3, 4, 8};
static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

/* ------------------------------------------------------------------ GEMM */
/* Shapes include those where OpenBLAS's bits depend on its thread count. */
static const int64_t SHAPES[][4] = {/* M, N, K, f64 */
    {33, 33, 33, 0},    {127, 509, 781, 1}, {256, 256, 256, 0}, {64, 64, 4096, 0},
    {200, 100, 300, 1}, {512, 64, 64, 0},   {129, 257, 65, 0},  {96, 96, 96, 1}};
enum { NG = sizeof SHAPES / sizeof SHAPES[0] };

typedef struct gemm_job {
  int64_t m, n, k;
  bool f64;
  void *a, *b, *c;
} gemm_job;

static void gemm_run(const gemm_job *g) {
  if (g->f64) ft_gemm_f64(g->m, g->n, g->k, g->a, g->k, g->b, g->n, g->c, g->n);
  else ft_gemm_f32(g->m, g->n, g->k, g->a, g->k, g->b, g->n, g->c, g->n);
}

static ft_status gemm_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  gemm_run(u);
  return FT_OK;
}

/* ------------------------------------------------------------------- FFT */
static const int FFT_N[] = {1000, 4096, 12288, 65536};
enum { NF = sizeof FFT_N / sizeof FFT_N[0], FFT_BATCH = 3 };

typedef struct fft_job {
  fftwf_plan plan;
  int n;
  fftwf_complex *in[FFT_BATCH], *out[FFT_BATCH];
} fft_job;

static ft_status fft_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  fft_job *f = u;
  for (int64_t b = lo; b < hi; b++) fftwf_execute_dft(f->plan, f->in[b], f->out[b]);
  return FT_OK;
}

static uint64_t seed_state = 42;
static float frand(void) { return (float)((double)(xt_rng(&seed_state) >> 11) * 0x1p-53 * 2 - 1); }

START_TEST(blas_and_fftw_are_thread_count_independent) {
  gemm_job g[NG];
  size_t gbytes[NG];
  void *gref[NG];
  for (int i = 0; i < NG; i++) {
    g[i] = (gemm_job){SHAPES[i][0], SHAPES[i][1], SHAPES[i][2], SHAPES[i][3] != 0, 0, 0, 0};
    size_t es = g[i].f64 ? 8 : 4;
    g[i].a = malloc(es * (size_t)(g[i].m * g[i].k));
    g[i].b = malloc(es * (size_t)(g[i].k * g[i].n));
    gbytes[i] = es * (size_t)(g[i].m * g[i].n);
    g[i].c = malloc(gbytes[i]);
    for (int64_t q = 0; q < g[i].m * g[i].k; q++)
      if (g[i].f64) ((double *)g[i].a)[q] = frand(); else ((float *)g[i].a)[q] = frand();
    for (int64_t q = 0; q < g[i].k * g[i].n; q++)
      if (g[i].f64) ((double *)g[i].b)[q] = frand(); else ((float *)g[i].b)[q] = frand();
    gemm_run(&g[i]); /* the serial reference, on this thread */
    gref[i] = malloc(gbytes[i]);
    memcpy(gref[i], g[i].c, gbytes[i]);
  }
  ck_assert_int_eq(openblas_get_num_threads(), 1); /* ft_gemm pinned it */

  fft_job f[NF];
  fftwf_complex *fref[NF][FFT_BATCH];
  for (int i = 0; i < NF; i++) {
    f[i].n = FFT_N[i];
    for (int b = 0; b < FFT_BATCH; b++) {
      f[i].in[b] = fftwf_malloc(sizeof(fftwf_complex) * (size_t)f[i].n);
      f[i].out[b] = fftwf_malloc(sizeof(fftwf_complex) * (size_t)f[i].n);
      fref[i][b] = fftwf_malloc(sizeof(fftwf_complex) * (size_t)f[i].n);
    }
    f[i].plan = fftwf_plan_dft_1d(f[i].n, f[i].in[0], f[i].out[0], FFTW_FORWARD, FFTW_ESTIMATE);
    ck_assert_ptr_nonnull(f[i].plan);
    for (int b = 0; b < FFT_BATCH; b++) {
      for (int q = 0; q < f[i].n; q++) f[i].in[b][q][0] = frand(), f[i].in[b][q][1] = frand();
      fftwf_execute_dft(f[i].plan, f[i].in[b], fref[i][b]);
    }
  }

  /* the DAG: GEMMs 0..3 independent, 4..7 each after one of them; the FFT
   * batches beside them, each chunked by batch element */
  ft_exec_task t[NG + NF];
  int deps[NG];
  for (int i = 0; i < NG; i++) {
    deps[i] = i - 4;
    t[i] = (ft_exec_task){.name = "gemm", .fn = gemm_fn, .user = &g[i], .extent = 1,
                          .n_deps = i >= 4, .deps = &deps[i]};
  }
  for (int i = 0; i < NF; i++)
    t[NG + i] = (ft_exec_task){.name = "fft", .fn = fft_fn, .user = &f[i], .extent = FFT_BATCH, .grain = 1};
  for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
    ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
    ft_exec *x = ft_exec_new(C, NG + NF, t, &(ft_exec_options){.pool = pool});
    ck_assert_ptr_nonnull(x);
    for (int rep = 0; rep < 3; rep++) {
      for (int i = 0; i < NG; i++) memset(g[i].c, 0xFF, gbytes[i]);
      for (int i = 0; i < NF; i++)
        for (int b = 0; b < FFT_BATCH; b++) memset(f[i].out[b], 0xFF, sizeof(fftwf_complex) * (size_t)f[i].n);
      ck_assert_int_eq(ft_exec_run(x, C, NULL, NULL), FT_OK);
      for (int i = 0; i < NG; i++)
        ck_assert_msg(!memcmp(g[i].c, gref[i], gbytes[i]), "gemm %d differs on %d threads", i,
                      POOL_SIZES[ps]);
      for (int i = 0; i < NF; i++)
        for (int b = 0; b < FFT_BATCH; b++)
          ck_assert_msg(!memcmp(f[i].out[b], fref[i][b], sizeof(fftwf_complex) * (size_t)f[i].n),
                        "fft %d differs on %d threads", FFT_N[i], POOL_SIZES[ps]);
    }
    ck_assert_int_eq(openblas_get_num_threads(), 1);
    ft_exec_free(x);
    ft_pool_free(pool);
  }
  for (int i = 0; i < NG; i++) free(g[i].a), free(g[i].b), free(g[i].c), free(gref[i]);
  for (int i = 0; i < NF; i++) {
    fftwf_destroy_plan(f[i].plan);
    for (int b = 0; b < FFT_BATCH; b++) fftwf_free(f[i].in[b]), fftwf_free(f[i].out[b]), fftwf_free(fref[i][b]);
  }
}
END_TEST

/* ------------------------------------------------- GEMMs split in blocks */
/* The row blocks come from the shape alone (interp_linalg.c): at least 64
 * rows and about 2^23 multiply-adds each, evened out to multiples of 16. */
START_TEST(gemm_row_blocks_come_from_the_shape) {
  static const int64_t CASES[][5] = {/* m, n, k, rows, blocks */
      {33, 33, 33, 33, 1},       {300, 150, 200, 160, 2},  {784, 512, 128, 112, 7},
      {128, 512, 784, 64, 2},    {1100, 256, 256, 128, 9}, {4096, 64, 64, 2048, 2},
      {1000, 1000, 1000, 64, 16}, {100, 1000, 1000, 64, 2}, {64, 4096, 4096, 64, 1},
      {0, 5, 5, 1, 1},           {100000, 1, 1, 100000, 1}};
  for (size_t i = 0; i < FT_COUNTOF(CASES); i++) {
    const int64_t *c = CASES[i];
    ck_assert_msg(ft_gemm_block_rows(c[0], c[1], c[2]) == c[3] &&
                      ft_gemm_blocks(c[0], c[1], c[2]) == c[4],
                  "%lldx%lldx%lld: %lld rows, %lld blocks", (long long)c[0], (long long)c[1],
                  (long long)c[2], (long long)ft_gemm_block_rows(c[0], c[1], c[2]),
                  (long long)ft_gemm_blocks(c[0], c[1], c[2]));
  }
  /* never more than FT_GEMM_MAX_BLOCKS */
  ck_assert_int_eq(ft_gemm_blocks(1 << 20, 4096, 4096), FT_GEMM_MAX_BLOCKS);
}
END_TEST

/* ft_gemm equals its blocks computed one by one, in any order. */
START_TEST(gemm_equals_its_blocks_in_any_order) {
  int64_t m = 1100, n = 256, k = 256, nb = ft_gemm_blocks(m, n, k);
  ck_assert_int_eq(nb, 9);
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c1 = malloc(sizeof(float) * (size_t)(m * n)), *c2 = malloc(sizeof(float) * (size_t)(m * n));
  double *ad = malloc(sizeof(double) * (size_t)(m * k)), *bd = malloc(sizeof(double) * (size_t)(k * n));
  double *d1 = malloc(sizeof(double) * (size_t)(m * n)), *d2 = malloc(sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++) ad[i] = a[i] = frand();
  for (int64_t i = 0; i < k * n; i++) bd[i] = b[i] = frand();
  ft_gemm_f32(m, n, k, a, k, b, n, c1, n);
  ft_gemm_f64(m, n, k, ad, k, bd, n, d1, n);
  memset(c2, 0xFF, sizeof(float) * (size_t)(m * n));
  memset(d2, 0xFF, sizeof(double) * (size_t)(m * n));
  for (int64_t blk = nb - 1; blk >= 0; blk--) {
    ft_gemm_f32_block(m, n, k, a, k, b, n, c2, n, blk);
    ft_gemm_f64_block(m, n, k, ad, k, bd, n, d2, n, blk);
  }
  ck_assert(!memcmp(c1, c2, sizeof(float) * (size_t)(m * n)));
  ck_assert(!memcmp(d1, d2, sizeof(double) * (size_t)(m * n)));
  /* k == 0: each block zeroes its own rows */
  memset(c2, 0xFF, sizeof(float) * (size_t)(m * n));
  for (int64_t blk = 0; blk < ft_gemm_blocks(m, n, 0); blk++)
    ft_gemm_f32_block(m, n, 0, a, k, b, n, c2, n, blk);
  for (int64_t i = 0; i < m * n; i++) ck_assert(c2[i] == 0.0f);
  free(a), free(b), free(c1), free(c2), free(ad), free(bd), free(d1), free(d2);
}
END_TEST

/* Compiled programs whose GEMMs split into row blocks, with operands that
 * need packing (a transposed left operand is packed by the blocks, a
 * transposed right operand by a task of its own), batch dimensions and
 * f64: the executor's bits equal ft_eval's on 1, 2, 3, 4 and 8 threads. */
static const struct split_case {
  const char *name, *text;
  int64_t chunks;  /* of the GEMM task: batch x row blocks */
  int extra_tasks; /* packing tasks */
} SPLIT[] = {
    {"plain", "{ lambda ; a:f32[300,200] b:f32[200,150]. let\n"
              "    c:f32[300,150] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
              "  in (c,) }", 2, 0},
    {"lhs transposed", "{ lambda ; a:f32[200,300] b:f32[200,150]. let\n"
                       "    c:f32[300,150] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b\n"
                       "  in (c,) }", 2, 0},
    {"rhs transposed", "{ lambda ; a:f32[300,200] b:f32[150,200]. let\n"
                       "    c:f32[300,150] = dot_general[dimension_numbers=(([1], [1]), ([], []))] a b\n"
                       "  in (c,) }", 2, 1},
    {"nine blocks, then tanh", "{ lambda ; a:f32[1100,256] b:f32[256,256]. let\n"
                               "    c:f32[1100,256] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
                               "    d:f32[1100,256] = tanh c\n"
                               "  in (d,) }", 9, 0},
    {"f32 lhs transposed, odd sizes (4x4 transposes, tail columns, short tiles)",
     "{ lambda ; a:f32[203,301] b:f32[203,150]. let\n"
     "    c:f32[301,150] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b\n"
     "  in (c,) }", 2, 0},
    {"f32 rhs transposed, odd sizes",
     "{ lambda ; a:f32[301,203] b:f32[151,203]. let\n"
     "    c:f32[301,151] = dot_general[dimension_numbers=(([1], [1]), ([], []))] a b\n"
     "  in (c,) }", 2, 1},
    {"batched f64, both transposed",
     "{ lambda ; a:f64[2,200,300] b:f64[2,150,200]. let\n"
     "    c:f64[2,300,150] = dot_general[dimension_numbers=(([1], [2]), ([0], [0]))] a b\n"
     "  in (c,) }", 4, 1},
};

static int gemm_task_of(ft_exec *x) {
  for (int t = 0; t < ft_exec_num_tasks(x); t++)
    if (!strncmp(ft_exec_task_name(x, t), "gemm ", 5)) return t;
  return -1;
}

START_TEST(split_gemms_in_programs_are_bitwise_on_every_thread_count) {
  for (size_t ci = 0; ci < FT_COUNTOF(SPLIT); ci++) {
    const struct split_case *sc = &SPLIT[ci];
    ft_jaxpr *j = ft_parse(C, sc->text, strlen(sc->text), sc->name);
    ck_assert_msg(j, "%s: %s", sc->name, ft_ctx_error(C));
    ft_array *in[2], *want[1] = {0}, *got[1];
    for (int k = 0; k < 2; k++) {
      ft_aval a;
      ft_jaxpr_input_aval(j, k, &a);
      in[k] = ft_array_alloc(C, &a);
      for (int64_t i = 0; i < ft_array_size(in[k]); i++) ft_set_f64(in[k], i, frand());
    }
    ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, want), FT_OK);
    got[0] = ft_array_alloc(C, &want[0]->aval);
    ft_program *p;
    ft_jit_code *code;
    ck_assert_msg(ft_exec_compile(C, j, &p, &code) == FT_OK, "%s: %s", sc->name, ft_ctx_error(C));
    ck_assert_int_eq(p->n_gemm, 1);
    for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
      ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
      ft_prog_exec *pe = ft_prog_exec_new(C, p, pool, &(ft_prog_exec_options){.no_small_waves = true});
      ck_assert_msg(pe, "%s: %s", sc->name, ft_ctx_error(C));
      ft_exec *x = ft_prog_exec_executor(pe);
      ck_assert_int_eq(ft_exec_num_tasks(x), p->n_steps + sc->extra_tasks);
      int gt = gemm_task_of(x);
      ck_assert_int_ge(gt, 0);
      ck_assert_int_eq(ft_exec_task_chunks(x, gt), sc->chunks);
      for (int rep = 0; rep < 3; rep++) {
        memset(got[0]->data, 0xA5, got[0]->nbytes);
        ck_assert_msg(ft_prog_exec_run(pe, C, (const ft_array *const *)in, got, NULL) == FT_OK, "%s", ft_ctx_error(C));
        ck_assert_msg(xt_same_bits(got[0], want[0]), "%s differs on %d threads", sc->name,
                      POOL_SIZES[ps]);
      }
      ft_prog_exec_free(pe);
      ft_pool_free(pool);
    }
    ck_assert_int_eq(openblas_get_num_threads(), 1);
    if (code) ft_jit_code_release(code);
    ft_program_free(p);
    ft_array_free(in[0]), ft_array_free(in[1]), ft_array_free(want[0]), ft_array_free(got[0]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* ---------------------------------------- the project's own dot and fft */
typedef struct eval_job {
  ft_jaxpr *j;
  ft_array *in[8];
  int n_in, n_out;
  ft_array *want[8], *got[8];
} eval_job;

static ft_status eval_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  eval_job *e = u;
  ft_ctx *ctx = ft_exec_call_ctx(c);
  for (int k = 0; k < e->n_out; k++) ft_array_free(e->got[k]), e->got[k] = NULL;
  ft_status st = ft_eval(ctx, e->j, e->n_in, (const ft_array *const *)e->in, e->n_out, e->got);
  if (st) {
    ft_exec_fail(c, st, "%s", ft_ctx_error(ctx));
    ft_ctx_clear_error(ctx);
  }
  return st;
}

static char *read_all(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, fp);
  b[got] = 0;
  fclose(fp);
  return b;
}

START_TEST(project_dot_and_fft_are_thread_count_independent) {
  static const char *const CASES[] = {"fft_c2c", "fft_2d", "x64_fft_c128", "dot_batched_einsum",
                                      "dot_precision", "mlp_loss"};
  enum { NE = sizeof CASES / sizeof CASES[0], COPIES = 3 };
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  eval_job e[NE * COPIES];
  memset(e, 0, sizeof e);
  int ne = 0;
  for (int i = 0; i < NE; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jaxpr", dir, CASES[i]);
    char *text = read_all(path);
    ck_assert_ptr_nonnull(text);
    ft_jaxpr *j = ft_parse(C, text, strlen(text), path);
    free(text);
    ck_assert_msg(j, "%s: %s", CASES[i], ft_ctx_error(C));
    for (int cp = 0; cp < COPIES; cp++) {
      eval_job *x = &e[ne++];
      x->j = cp == 0 ? j : NULL;
      for (int k = 0; k < 8; k++) {
        snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, CASES[i], k);
        if (!(x->in[k] = ft_npy_read(C, path))) break;
        x->n_in++;
      }
      ft_ctx_clear_error(C);
      x->n_out = ft_jaxpr_num_outputs(j);
      ck_assert_int_le(x->n_out, 8);
      if (cp == 0) ck_assert_int_eq(ft_eval(C, j, x->n_in, (const ft_array *const *)x->in, x->n_out, x->want), FT_OK);
    }
    for (int cp = 1; cp < COPIES; cp++) {
      e[ne - COPIES + cp].j = j;
      for (int k = 0; k < e[ne - COPIES].n_out; k++)
        e[ne - COPIES + cp].want[k] = ft_array_clone(C, e[ne - COPIES].want[k]);
    }
  }
  ft_exec_task t[NE * COPIES];
  for (int i = 0; i < ne; i++)
    t[i] = (ft_exec_task){.name = CASES[i / COPIES], .fn = eval_fn, .user = &e[i], .extent = 1};
  for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
    ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
    ft_exec *x = ft_exec_new(C, ne, t, &(ft_exec_options){.pool = pool, .frame_ctx = true});
    ck_assert_msg(ft_exec_run(x, C, NULL, NULL) == FT_OK, "%s", ft_ctx_error(C));
    for (int i = 0; i < ne; i++)
      for (int k = 0; k < e[i].n_out; k++)
        ck_assert_msg(e[i].got[k]->nbytes == e[i].want[k]->nbytes &&
                          !memcmp(e[i].got[k]->data, e[i].want[k]->data, e[i].want[k]->nbytes),
                      "%s output %d differs on %d threads", t[i].name, k, POOL_SIZES[ps]);
    ft_exec_free(x);
    ft_pool_free(pool);
  }
  for (int i = 0; i < ne; i++) {
    for (int k = 0; k < e[i].n_in; k++) ft_array_free(e[i].in[k]);
    for (int k = 0; k < e[i].n_out; k++) ft_array_free(e[i].want[k]), ft_array_free(e[i].got[k]);
    if (i % COPIES == 0) ft_jaxpr_free(e[i].j);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("exec_blas");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, blas_and_fftw_are_thread_count_independent);
  tcase_add_test(tc, project_dot_and_fft_are_thread_count_independent);
  tcase_add_test(tc, gemm_row_blocks_come_from_the_shape);
  tcase_add_test(tc, gemm_equals_its_blocks_in_any_order);
  tcase_add_test(tc, split_gemms_in_programs_are_bitwise_on_every_thread_count);
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
