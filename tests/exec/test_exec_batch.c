/* tests/exec/test_exec_batch.c: batched LAPACK routines and batched FFTs
 * split over their batch on the executor's threads (issues 20 and 26;
 * docs/executor.md, "Routines split over their batch").
 *
 * A linalg routine step with leading batch dims runs its members in chunks
 * (ft_routine_split_of), each chunk with a scratch slot of its own; an fft
 * step runs its rows in the FFT chunks both engines use
 * (ft_fft_chunk_rows). The checks:
 *  - the split itself: exact chunk counts of the routine's task, so a
 *    routine that silently stopped splitting fails here;
 *  - bits: every output equals ft_eval's byte for byte (no NaN latitude)
 *    on pools of 1, 2, 3, 4 and 8 threads (the executor made to share even
 *    small waves), and through the public ft_jit/ft_call with contexts of
 *    1, 2 and 8 threads;
 *  - the partition does not matter: the rule body run member range by
 *    member range, in reverse order and in uneven pieces, equals the whole
 *    call; FFT chunks run in reverse order equal the whole run;
 *  - exact FFT chunk sizes for fixed geometries (the 64-byte rounding). */
#include <cblas.h>
#include <stdio.h>

#include "exec_util.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "runtime/lapack.h"
#include "runtime/runtime.h"

static const int POOL_SIZES[] = {1, 2, 3, 4, 8};
static const int JIT_THREADS[] = {1, 2, 8};
static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static uint64_t seed_state = 2026;
static double drand(void) { return (double)(xt_rng(&seed_state) >> 11) * 0x1p-53 * 2 - 1; }

static const struct batch_case {
  const char *name, *text;
  int64_t chunks; /* of the routine's task */
} CASES[] = {
    {"cholesky f32[512,16,16]",
     "{ lambda ; a:f32[512,16,16]. let b:f32[512,16,16] = cholesky a in (b,) }", 64},
    {"lu f64[512,16,16]",
     "{ lambda ; a:f64[512,16,16]. let b:f64[512,16,16] c:i32[512,16] d:i32[512,16] = lu a in (b, c, d) }",
     64},
    {"triangular_solve f32, two batch dims [4,32]",
     "{ lambda ; a:f32[4,32,16,16] b:f32[4,32,16,4]. let\n"
     "    c:f32[4,32,16,4] = triangular_solve[conjugate_a=False left_side=True lower=True "
     "transpose_a=False unit_diagonal=False] a b\n"
     "  in (c,) }",
     16},
    {"triangular_solve c64 conjugate_a (a scratch copy per chunk)",
     "{ lambda ; a:c64[256,8,8] b:c64[256,8,8]. let\n"
     "    c:c64[256,8,8] = triangular_solve[conjugate_a=True left_side=False lower=False "
     "transpose_a=False unit_diagonal=False] a b\n"
     "  in (c,) }",
     4},
    {"eigh f64[24,32,32]",
     "{ lambda ; a:f64[24,32,32]. let\n"
     "    b:f64[24,32,32] c:f64[24,32] = eigh[algorithm=None lower=True sort_eigenvalues=True "
     "subset_by_index=None] a\n"
     "  in (b, c) }",
     24},
    {"svd f32[16,24,20]",
     "{ lambda ; a:f32[16,24,20]. let\n"
     "    b:f32[16,20] c:f32[16,24,20] d:f32[16,20,20] = svd[algorithm=None compute_uv=True "
     "full_matrices=False subset_by_index=None] a\n"
     "  in (b, c, d) }",
     4},
    {"qr f32[40,12,12]",
     "{ lambda ; a:f32[40,12,12]. let\n"
     "    b:f32[40,12,12] c:f32[40,12,12] = qr[full_matrices=False pivoting=False use_magma=None] a\n"
     "  in (b, c) }",
     3},
    {"eig f64[200,8,8]",
     "{ lambda ; a:f64[200,8,8]. let\n"
     "    b:c128[200,8] c:c128[200,8,8] = eig[compute_left_eigenvectors=False "
     "compute_right_eigenvectors=True enable_eigvec_derivs=False implementation=None] a\n"
     "  in (b, c) }",
     4},
    {"tridiagonal_solve f32[256,16]",
     "{ lambda ; a:f32[256,16] b:f32[256,16] c:f32[256,16] d:f32[256,16,4]. let\n"
     "    e:f32[256,16,4] = tridiagonal_solve[perturb_singular=False] a b c d\n"
     "  in (e,) }",
     2},
    /* fft: 128 rows of 512 per chunk, the last chunk 44 rows (its own plan) */
    {"fft c64[300,512]",
     "{ lambda ; a:c64[300,512]. let b:c64[300,512] = fft[fft_lengths=(512,) fft_type=0] a in (b,) }",
     3},
    /* rfft: 262 rows rounded up to 264 so every chunk starts 64-byte aligned */
    {"rfft f32[600,250]",
     "{ lambda ; a:f32[600,250]. let b:c64[600,126] = fft[fft_lengths=(250,) fft_type=2] a in (b,) }",
     3},
    /* irfft destroys its input: each chunk copies its rows to the scratch */
    {"irfft c64[600,126]",
     "{ lambda ; a:c64[600,126]. let b:f32[600,250] = fft[fft_lengths=(250,) fft_type=3] a in (b,) }",
     3},
    {"ifft2 c128[40,64,64]",
     "{ lambda ; a:c128[40,64,64]. let b:c128[40,64,64] = fft[fft_lengths=(64, 64) fft_type=1] a in (b,) }",
     3},
};

/* Operand k's values: uniform in [-1, 1], with a + 2n on the diagonals of
 * square trailing matrices (diagonally dominant: cholesky finds them
 * positive definite, triangular solves and gtsv stay finite). */
static ft_array *make_input(const ft_aval *a) {
  ft_array *x = ft_array_alloc(C, a);
  ck_assert_ptr_nonnull(x);
  bool cpx = ft_dtype_is_complex(a->dtype);
  int64_t n = ft_array_size(x), r = a->rank >= 2 ? a->dims[a->rank - 2] : 0,
          c = a->rank >= 1 ? a->dims[a->rank - 1] : 1;
  for (int64_t i = 0; i < n; i++) {
    double v = drand();
    if (a->rank >= 2 && r == c && (i % (r * c)) / c == i % c) v += 2.0 * (double)c;
    if (cpx) ft_set_c128(x, i, v, drand());
    else ft_set_f64(x, i, v);
  }
  return x;
}

static bool same_bytes(const ft_array *a, const ft_array *b) {
  return ft_aval_eq(&a->aval, &b->aval) && a->nbytes == b->nbytes &&
         (a->nbytes == 0 || !memcmp(a->data, b->data, a->nbytes));
}

static int routine_task_of(ft_exec *x) {
  for (int t = 0; t < ft_exec_num_tasks(x); t++)
    if (!strncmp(ft_exec_task_name(x, t), "routine ", 8)) return t;
  return -1;
}

typedef struct loaded {
  ft_jaxpr *j;
  int n_in, n_out;
  ft_array *in[4], *want[4];
} loaded;

static void load(loaded *L, const struct batch_case *bc) {
  memset(L, 0, sizeof *L);
  L->j = ft_parse(C, bc->text, strlen(bc->text), bc->name);
  ck_assert_msg(L->j, "%s: %s", bc->name, ft_ctx_error(C));
  L->n_in = ft_jaxpr_num_inputs(L->j), L->n_out = ft_jaxpr_num_outputs(L->j);
  for (int k = 0; k < L->n_in; k++) {
    ft_aval a;
    ft_jaxpr_input_aval(L->j, k, &a);
    L->in[k] = make_input(&a);
  }
  ck_assert_msg(ft_eval(C, L->j, L->n_in, (const ft_array *const *)L->in, L->n_out, L->want) == FT_OK,
                "%s: %s", bc->name, ft_ctx_error(C));
}

static void unload(loaded *L) {
  for (int k = 0; k < L->n_in; k++) ft_array_free(L->in[k]);
  for (int k = 0; k < L->n_out; k++) ft_array_free(L->want[k]);
  ft_jaxpr_free(L->j);
}

START_TEST(batched_routines_split_and_keep_the_interpreters_bits) {
  for (size_t ci = 0; ci < FT_COUNTOF(CASES); ci++) {
    const struct batch_case *bc = &CASES[ci];
    loaded L;
    load(&L, bc);
    ft_array *got[4];
    for (int k = 0; k < L.n_out; k++) got[k] = ft_array_alloc(C, &L.want[k]->aval);
    ft_program *p;
    ft_jit_code *code;
    ck_assert_msg(ft_exec_compile(C, L.j, &p, &code) == FT_OK, "%s: %s", bc->name, ft_ctx_error(C));
    ck_assert_msg(p->n_fallback == 0, "%s: %d fallback steps", bc->name, p->n_fallback);
    for (size_t ps = 0; ps < FT_COUNTOF(POOL_SIZES); ps++) {
      ft_pool *pool = ft_pool_new(POOL_SIZES[ps]);
      ft_prog_exec *pe = ft_prog_exec_new(C, p, pool, &(ft_prog_exec_options){.no_small_waves = true});
      ck_assert_msg(pe, "%s: %s", bc->name, ft_ctx_error(C));
      ft_exec *x = ft_prog_exec_executor(pe);
      int rt = routine_task_of(x);
      ck_assert_msg(rt >= 0, "%s: no routine task", bc->name);
      ck_assert_msg(ft_exec_task_chunks(x, rt) == bc->chunks, "%s: %lld chunks, expected %lld",
                    bc->name, (long long)ft_exec_task_chunks(x, rt), (long long)bc->chunks);
      for (int rep = 0; rep < 3; rep++) {
        for (int k = 0; k < L.n_out; k++) memset(got[k]->data, 0xA5, got[k]->nbytes);
        ck_assert_msg(ft_prog_exec_run(pe, C, (const ft_array *const *)L.in, got, NULL) == FT_OK,
                      "%s: %s", bc->name, ft_ctx_error(C));
        for (int k = 0; k < L.n_out; k++)
          ck_assert_msg(same_bytes(got[k], L.want[k]), "%s: result %d differs from ft_eval on %d threads",
                        bc->name, k, POOL_SIZES[ps]);
      }
      ft_prog_exec_free(pe);
      ft_pool_free(pool);
    }
    ck_assert_int_eq(openblas_get_num_threads(), 1);
    if (code) ft_jit_code_release(code);
    ft_program_free(p);
    for (int k = 0; k < L.n_out; k++) ft_array_free(got[k]);
    unload(&L);
  }
}
END_TEST

/* The public path: ft_jit on contexts asking for 1, 2 and 8 threads. */
START_TEST(ft_call_on_1_2_8_threads_gives_ft_evals_bits) {
  for (size_t ci = 0; ci < FT_COUNTOF(CASES); ci++) {
    const struct batch_case *bc = &CASES[ci];
    loaded L;
    load(&L, bc);
    for (size_t t = 0; t < FT_COUNTOF(JIT_THREADS); t++) {
      ft_ctx *ct = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = JIT_THREADS[t]});
      ft_fn *fn = ft_jit(ct, L.j, NULL);
      ck_assert_msg(fn, "%s: %s", bc->name, ft_ctx_error(ct));
      for (int rep = 0; rep < 2; rep++) {
        ft_array *got[4] = {0};
        ck_assert_msg(ft_call(fn, L.n_in, (const ft_array *const *)L.in, L.n_out, got) == FT_OK, "%s: %s",
                      bc->name, ft_ctx_error(ct));
        for (int k = 0; k < L.n_out; k++) {
          ck_assert_msg(same_bytes(got[k], L.want[k]), "%s: result %d differs from ft_eval (ft_call, %d threads)",
                        bc->name, k, JIT_THREADS[t]);
          ft_array_free(got[k]);
        }
      }
      ft_fn_free(fn);
      ft_ctx_free(ct);
    }
    unload(&L);
  }
}
END_TEST

/* ft_linalg_run_members over a partition of the batch, pieces in reverse
 * order (one member at a time, then uneven pieces), against the whole call
 * of the same rule body: each member is computed on its own. */
static void run_partition(const ft_eqn *e, ft_array *const *in, ft_array *const *out, void *scratch,
                          const int64_t *cuts, int n_cuts) {
  for (int c = n_cuts - 1; c > 0; c--)
    ck_assert_msg(ft_linalg_run_members(C, e, in, out, scratch, cuts[c - 1], cuts[c]) == FT_OK, "%s",
                  ft_ctx_error(C));
}

START_TEST(any_partition_of_the_members_gives_the_whole_calls_bits) {
  for (size_t ci = 0; ci < FT_COUNTOF(CASES); ci++) {
    const struct batch_case *bc = &CASES[ci];
    loaded L;
    load(&L, bc);
    const ft_eqn *e = &L.j->eqns[0];
    if (e->prim == FT_P_FFT) {
      unload(&L);
      continue;
    }
    int64_t m = ft_linalg_members(e);
    ck_assert_msg(m > 1, "%s: %lld members", bc->name, (long long)m);
    size_t sb = ft_rule_scratch(e);
    void *scratch = sb ? aligned_alloc(64, (sb + 63) & ~(size_t)63) : NULL;
    ft_array *whole[4], *part[4];
    for (int k = 0; k < L.n_out; k++) {
      whole[k] = ft_array_alloc(C, &L.want[k]->aval);
      part[k] = ft_array_alloc(C, &L.want[k]->aval);
    }
    ck_assert_int_eq(ft_rule_into_for(e->prim)(C, e, L.in, whole, scratch), FT_OK);
    for (int k = 0; k < L.n_out; k++) ck_assert_msg(same_bytes(whole[k], L.want[k]), "%s", bc->name);
    int64_t *ones = malloc(sizeof *ones * (size_t)(m + 1));
    for (int64_t i = 0; i <= m; i++) ones[i] = i;
    int64_t uneven[] = {0, 1, 4, m / 3, m / 3 + 1, m - 1, m};
    for (int way = 0; way < 2; way++) {
      for (int k = 0; k < L.n_out; k++) memset(part[k]->data, 0x5A, part[k]->nbytes);
      if (way == 0) run_partition(e, L.in, part, scratch, ones, (int)m + 1);
      else run_partition(e, L.in, part, scratch, uneven, (int)FT_COUNTOF(uneven));
      for (int k = 0; k < L.n_out; k++)
        ck_assert_msg(same_bytes(part[k], whole[k]), "%s: result %d differs when split (%s)", bc->name, k,
                      way ? "uneven pieces" : "one member at a time");
    }
    /* a bad range fails closed */
    ck_assert_int_eq(ft_linalg_run_members(C, e, L.in, part, scratch, 0, m + 1), FT_ERR_INTERNAL);
    free(ones);
    free(scratch);
    for (int k = 0; k < L.n_out; k++) ft_array_free(whole[k]), ft_array_free(part[k]);
    unload(&L);
  }
}
END_TEST

/* Operands without the batch dims in front (or none) are not split. */
START_TEST(unsplittable_equations_say_so) {
  const char *texts[] = {
      "{ lambda ; a:f32[16,16]. let b:f32[16,16] = cholesky a in (b,) }",
      "{ lambda ; a:f64[4,4] b:f64[4]. let c:f64[4,4] = cholesky_update a b in (c,) }",
      "{ lambda ; a:f32[3,4]. let b:f32[3,4] = sin a in (b,) }",
  };
  for (size_t i = 0; i < FT_COUNTOF(texts); i++) {
    ft_jaxpr *j = ft_parse(C, texts[i], strlen(texts[i]), "t");
    ck_assert_msg(j, "%s", ft_ctx_error(C));
    ck_assert_int_eq(ft_linalg_members(&j->eqns[0]), 0);
    ft_routine_split sp;
    ck_assert(!ft_routine_split_of(&j->eqns[0], &sp));
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Chunk rows from the geometry alone, rounded so chunks start 64 bytes
 * apart; the chunks in reverse order give the whole run's bits. */
START_TEST(fft_chunks_are_fixed_by_the_shape) {
  static const struct {
    const char *text;
    int rows;
  } G[] = {
      {"{ lambda ; a:c64[1024,1024]. let b:c64[1024,1024] = fft[fft_lengths=(1024,) fft_type=0] a in (b,) }", 64},
      {"{ lambda ; a:c64[300,512]. let b:c64[300,512] = fft[fft_lengths=(512,) fft_type=0] a in (b,) }", 128},
      {"{ lambda ; a:f32[600,250]. let b:c64[600,126] = fft[fft_lengths=(250,) fft_type=2] a in (b,) }", 264},
      /* odd rows of c64: 8 bytes per element, 8 rows make 64-byte offsets */
      {"{ lambda ; a:c64[5000,33]. let b:c64[5000,33] = fft[fft_lengths=(33,) fft_type=0] a in (b,) }", 1992},
      /* at most 256 chunks: 79 rows (not 64) for 20000 rows */
      {"{ lambda ; a:c64[20000,1024]. let b:c64[20000,1024] = fft[fft_lengths=(1024,) fft_type=0] a in (b,) }", 79},
      /* one transform: one chunk */
      {"{ lambda ; a:c64[1,4096]. let b:c64[1,4096] = fft[fft_lengths=(4096,) fft_type=0] a in (b,) }", 1},
  };
  for (size_t i = 0; i < FT_COUNTOF(G); i++) {
    ft_jaxpr *j = ft_parse(C, G[i].text, strlen(G[i].text), "fft");
    ck_assert_msg(j, "%s", ft_ctx_error(C));
    const ft_eqn *e = &j->eqns[0];
    ft_fft_geom g;
    ck_assert_int_eq(ft_fft_geometry(C, e, &e->in[0]->aval, &e->out[0]->aval, &g), FT_OK);
    int rows = ft_fft_chunk_rows(&g);
    ck_assert_msg(rows == G[i].rows, "%s: %d rows per chunk, expected %d", G[i].text, rows, G[i].rows);
    size_t in_row = g.in_bytes / (size_t)g.howmany, out_row = g.out_bytes / (size_t)g.howmany;
    ck_assert(rows == g.howmany || ((size_t)rows * in_row % 64 == 0 && (size_t)rows * out_row % 64 == 0));
    ck_assert_int_le((g.howmany + rows - 1) / rows, 256);
    ft_jaxpr_free(j);
  }
  /* the chunks of c64[300,512] in reverse order equal them in order */
  ft_jaxpr *j = ft_parse(C, G[1].text, strlen(G[1].text), "fft");
  const ft_eqn *e = &j->eqns[0];
  ft_fft_geom g;
  ck_assert_int_eq(ft_fft_geometry(C, e, &e->in[0]->aval, &e->out[0]->aval, &g), FT_OK);
  ft_array *in = make_input(&e->in[0]->aval), *a = ft_array_alloc(C, &e->out[0]->aval),
           *b = ft_array_alloc(C, &e->out[0]->aval);
  int rows = ft_fft_chunk_rows(&g), rem = g.howmany % rows;
  ft_fft_geom gm = ft_fft_rows_geom(&g, rows), gr = ft_fft_rows_geom(&g, rem);
  ck_assert_int_eq(rem, 44);
  void *pm = ft_fft_plan(&gm, in->data, a->data), *pr = ft_fft_plan(&gr, in->data, a->data);
  ck_assert(pm && pr);
  ft_fft_run_rows(&g, rows, pm, pr, in->data, a->data, 0, g.howmany);
  for (int64_t r0 = (g.howmany - 1) / rows * rows; r0 >= 0; r0 -= rows)
    ft_fft_run_rows(&g, rows, pm, pr, in->data, b->data, r0, r0 + rows < g.howmany ? r0 + rows : g.howmany);
  ck_assert(same_bytes(a, b));
  ft_fft_plan_free(&gm, pm), ft_fft_plan_free(&gr, pr);
  ft_array_free(in), ft_array_free(a), ft_array_free(b);
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("exec_batch");
  TCase *tc = tcase_create("batch");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, batched_routines_split_and_keep_the_interpreters_bits);
  tcase_add_test(tc, ft_call_on_1_2_8_threads_gives_ft_evals_bits);
  tcase_add_test(tc, any_partition_of_the_members_gives_the_whole_calls_bits);
  tcase_add_test(tc, unsplittable_equations_say_so);
  tcase_add_test(tc, fft_chunks_are_fixed_by_the_shape);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
