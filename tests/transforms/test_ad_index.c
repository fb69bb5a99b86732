/* tests/transforms/test_ad_index.c: derivatives of the index primitives
 * (src/transforms/ad_index.c): gather, scatter, scatter-add, scatter-mul,
 * scatter-min/max, top_k, cummax/cummin.
 *  - transposes: <A x, y> == <x, A^T y> (1e-12 relative) for gather and
 *    scatter-add in several dimension-number configurations (1-D take,
 *    row gather, batching dims, CLIP and FILL_OR_DROP with out-of-range
 *    indices, duplicate indices), scatter-mul (in the operand) and
 *    scatter (duplicates, overlapping windows);
 *  - gradients: ft_grad against f64 central differences (h = 1e-6,
 *    |g - fd| <= 1e-6 max(1, |fd|)) on random inputs without ties, and
 *    ft_jvp against <grad, v> (1e-12 relative);
 *  - hessians (jacfwd of jacrev, so JVP and vmap of what the rules emit)
 *    against central differences of the gradient;
 *  - exact values: the winning update of a scatter, the tie rule of
 *    cummax, fill_value 0 in the tangent of a FILL_OR_DROP gather;
 *  - JAX's gradients of 17 programs (fixtures/ad_index/cases.txt, made by
 *    tools/oracle/gen_ad_index.py), to 1e-12 relative, and the JIT's run
 *    of each gradient bit for bit equal to the interpreter's;
 *  - errors (scatter-mul updates without unique_indices, scatter_apply)
 *    and the coverage strings. */
#include "ad_util.h"

#define GDN(off, col, map, obd, ibd)                                                         \
  "GatherDimensionNumbers(offset_dims=" off ", collapsed_slice_dims=" col                     \
  ", start_index_map=" map ", operand_batching_dims=" obd ", start_indices_batching_dims=" ibd \
  ")"
#define SDN(uwd, iwd, sdo, obd, sbd)                                                             \
  "ScatterDimensionNumbers(update_window_dims=" uwd ", inserted_window_dims=" iwd                 \
  ", scatter_dims_to_operand_dims=" sdo ", operand_batching_dims=" obd                             \
  ", scatter_indices_batching_dims=" sbd ")"
#define GATHER(dn, ss, mode, fill)                                                                 \
  "gather[dimension_numbers=" dn " fill_value=" fill " indices_are_sorted=False mode=GatherScatterMode." \
  mode " slice_sizes=" ss " unique_indices=False]"
#define SCATTER(prim, dn, mode, uniq)                                                           \
  prim "[dimension_numbers=" dn " indices_are_sorted=False mode=GatherScatterMode." mode \
  " unique_indices=" uniq "]"

/* The dimension numbers used below. */
#define G_TAKE GDN("()", "(0,)", "(0,)", "()", "()")
#define G_ROWS GDN("(1,)", "(0,)", "(0,)", "()", "()")
#define G_BATCH GDN("()", "(1,)", "(1,)", "(0,)", "(0,)")
#define G_WIN GDN("(1,)", "()", "(0,)", "()", "()")
#define G_2D GDN("(1,)", "(0,)", "(0, 1)", "()", "()")
#define S_TAKE SDN("()", "(0,)", "(0,)", "()", "()")
#define S_ROWS SDN("(1,)", "(0,)", "(0,)", "()", "()")
#define S_BATCH SDN("()", "(1,)", "(1,)", "(0,)", "(0,)")
#define S_WIN SDN("(1,)", "()", "(0,)", "()", "()")

static const int64_t I_DUP[] = {1, 3, 1, 1}, I_ROWS[] = {2, 0, 2}, I_BATCH[] = {0, 3, 3, 1, 2, 0},
                     I_OOB[] = {-2, 4, 9}, I_2D[] = {0, 1, 3, 4, 2, -1}, I_UNIQ[] = {4, 0, 2},
                     I_BATCH_OOB[] = {0, 3, 5, 1, -1, 1};

/* An i32 array of the given shape from values. */
static ft_array *idx_array(int rank, const int64_t *dims, const int64_t *v) {
  ft_aval av = {.dtype = FT_I32, .rank = rank};
  for (int i = 0; i < rank; i++) av.dims[i] = dims[i];
  return arr(&av, 0, 0, v, (int)ft_aval_size(&av));
}

/* One equation `y = EQN ARGS` over inputs INS (the indices i first). */
static void lin1(const char *ins, const char *yty, const char *eqn, const char *args, int nnl,
                 ft_array *const *nl) {
  char text[4096];
  snprintf(text, sizeof text, "{ lambda ; %s. let\n    y:%s = %s %s\n  in (y,) }", ins, yty, eqn, args);
  lincheck_with(text, nnl, nl);
}

START_TEST(gather_transpose) {
  ft_array *i;
  i = idx_array(2, (int64_t[]){4, 1}, I_DUP); /* 1-D take, duplicates */
  lin1("i:i32[4,1] a:f64[5]", "f64[4]", GATHER(G_TAKE, "(1,)", "PROMISE_IN_BOUNDS", "None"), "a i", 1, &i);
  lin1("i:i32[4,1] a:f64[5]", "f64[4]", GATHER(G_TAKE, "(1,)", "CLIP", "None"), "a i", 1, &i);
  ft_array_free(i);
  i = idx_array(2, (int64_t[]){3, 1}, I_ROWS); /* rows of a matrix */
  lin1("i:i32[3,1] a:f64[4,3]", "f64[3,3]", GATHER(G_ROWS, "(1, 3)", "PROMISE_IN_BOUNDS", "None"), "a i", 1, &i);
  ft_array_free(i);
  i = idx_array(3, (int64_t[]){2, 3, 1}, I_BATCH); /* operand_batching_dims */
  lin1("i:i32[2,3,1] a:f64[2,4]", "f64[2,3]", GATHER(G_BATCH, "(1, 1)", "FILL_OR_DROP", "0.0"), "a i", 1, &i);
  lin1("i:i32[2,3,1] a:f64[2,4]", "f64[2,3]", GATHER(G_BATCH, "(1, 1)", "CLIP", "None"), "a i", 1, &i);
  ft_array_free(i);
  i = idx_array(2, (int64_t[]){3, 1}, I_OOB); /* windows of 3, starts out of range */
  lin1("i:i32[3,1] a:f64[6]", "f64[3,3]", GATHER(G_WIN, "(3,)", "CLIP", "None"), "a i", 1, &i);
  lin1("i:i32[3,1] a:f64[6]", "f64[3,3]", GATHER(G_WIN, "(3,)", "FILL_OR_DROP", "0.0"), "a i", 1, &i);
  ft_array_free(i);
  i = idx_array(2, (int64_t[]){3, 2}, I_2D); /* two index components, two out of range */
  lin1("i:i32[3,2] a:f64[4,5]", "f64[3,2]", GATHER(G_2D, "(1, 2)", "FILL_OR_DROP", "0.0"), "a i", 1, &i);
  lin1("i:i32[3,2] a:f64[4,5]", "f64[3,2]", GATHER(G_2D, "(1, 2)", "CLIP", "None"), "a i", 1, &i);
  ft_array_free(i);
}
END_TEST

START_TEST(scatter_transpose) {
  ft_array *i, *nl[2];
  i = idx_array(2, (int64_t[]){4, 1}, I_DUP);
  lin1("i:i32[4,1] a:f64[5] u:f64[4]", "f64[5]", SCATTER("scatter-add", S_TAKE, "FILL_OR_DROP", "False"),
       "a i u", 1, &i);
  lin1("i:i32[4,1] a:f64[5] u:f64[4]", "f64[5]", SCATTER("scatter", S_TAKE, "FILL_OR_DROP", "False"),
       "a i u", 1, &i);
  nl[0] = i;
  nl[1] = arr(&(ft_aval){.dtype = FT_F64, .rank = 1, .dims = {4}}, -2, 2, NULL, 0);
  lin1("i:i32[4,1] u:f64[4] a:f64[5]", "f64[5]", SCATTER("scatter-mul", S_TAKE, "FILL_OR_DROP", "False"),
       "a i u", 2, nl);
  ft_array_free(nl[1]), ft_array_free(i);
  i = idx_array(2, (int64_t[]){3, 1}, I_ROWS);
  lin1("i:i32[3,1] a:f64[4,3] u:f64[3,3]", "f64[4,3]",
       SCATTER("scatter-add", S_ROWS, "PROMISE_IN_BOUNDS", "False"), "a i u", 1, &i);
  lin1("i:i32[3,1] a:f64[4,3] u:f64[3,3]", "f64[4,3]", SCATTER("scatter", S_ROWS, "CLIP", "False"), "a i u",
       1, &i);
  ft_array_free(i);
  i = idx_array(3, (int64_t[]){2, 3, 1}, I_BATCH);
  lin1("i:i32[2,3,1] a:f64[2,4] u:f64[2,3]", "f64[2,4]", SCATTER("scatter-add", S_BATCH, "CLIP", "False"),
       "a i u", 1, &i);
  lin1("i:i32[2,3,1] a:f64[2,4] u:f64[2,3]", "f64[2,4]", SCATTER("scatter", S_BATCH, "FILL_OR_DROP", "False"),
       "a i u", 1, &i);
  ft_array_free(i);
  i = idx_array(2, (int64_t[]){3, 1}, I_OOB); /* overlapping windows, out of range */
  lin1("i:i32[3,1] a:f64[6] u:f64[3,3]", "f64[6]", SCATTER("scatter-add", S_WIN, "CLIP", "False"), "a i u", 1,
       &i);
  lin1("i:i32[3,1] a:f64[6] u:f64[3,3]", "f64[6]", SCATTER("scatter-add", S_WIN, "FILL_OR_DROP", "False"),
       "a i u", 1, &i);
  lin1("i:i32[3,1] a:f64[6] u:f64[3,3]", "f64[6]", SCATTER("scatter", S_WIN, "CLIP", "False"), "a i u", 1, &i);
  lin1("i:i32[3,1] a:f64[6] u:f64[3,3]", "f64[6]", SCATTER("scatter", S_WIN, "PROMISE_IN_BOUNDS", "False"),
       "a i u", 1, &i);
  ft_array_free(i);
}
END_TEST

/* sum(w * y) around a body defining y:yty from inputs ins (w is appended);
 * its gradient is checked at random floats and the given indices. */
static void gcheck(const char *ins, const char *body, const char *yty, const int64_t *const *idx,
                   const int *n_idx) {
  char text[8192];
  int r = 0;
  for (const char *p = strchr(yty, '['); p && *p != ']'; p++) r += *p == '[' || *p == ',';
  char axes[64] = "";
  for (int k = 0, q = 0; k < r; k++) q += snprintf(axes + q, sizeof axes - (size_t)q, k ? ", %d" : "%d", k);
  if (r == 1) strcat(axes, ",");
  snprintf(text, sizeof text,
           "{ lambda ; %s w:%s. let\n%s\n    zz:%s = mul y w\n"
           "    out:f64[] = reduce_sum[axes=(%s) out_sharding=None] zz\n  in (out,) }",
           ins, yty, body, yty, axes);
  ft_jaxpr *j = P(text);
  ft_array *in[16];
  inputs(j, in, -2, 2, idx, n_idx);
  grad_check_at(j, in, text);
  free_arrays(ft_jaxpr_num_inputs(j), in);
  ft_jaxpr_free(j);
}

#define IDX(...) (const int64_t *const[]){__VA_ARGS__}
#define NIDX(...) (const int[]){__VA_ARGS__}

START_TEST(grad_gather_scatter) {
  gcheck("a:f64[5] i:i32[4,1]", "    y0:f64[4] = " GATHER(G_TAKE, "(1,)", "PROMISE_IN_BOUNDS", "None")
         " a i\n    y:f64[4] = sin y0", "f64[4]", IDX(I_DUP), NIDX(4));
  gcheck("a:f64[6] i:i32[3,1]", "    y0:f64[3,3] = " GATHER(G_WIN, "(3,)", "CLIP", "None")
         " a i\n    y:f64[3,3] = mul y0 y0", "f64[3,3]", IDX(I_OOB), NIDX(3));
  /* fill_value 1.5 where out of range: constant, so no derivative there */
  gcheck("a:f64[4,5] i:i32[3,2]", "    y0:f64[3,2] = " GATHER(G_2D, "(1, 2)", "FILL_OR_DROP", "1.5")
         " a i\n    y:f64[3,2] = tanh y0", "f64[3,2]", IDX(I_2D), NIDX(6));
  gcheck("a:f64[2,4] i:i32[2,3,1]", "    y0:f64[2,3] = " GATHER(G_BATCH, "(1, 1)", "FILL_OR_DROP", "0.0")
         " a i\n    y:f64[2,3] = exp y0", "f64[2,3]", IDX(I_BATCH), NIDX(6));
  gcheck("a:f64[5] i:i32[4,1] u:f64[4]", "    y0:f64[5] = " SCATTER("scatter-add", S_TAKE, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[5] = mul y0 y0", "f64[5]", IDX(I_DUP), NIDX(4));
  gcheck("a:f64[6] i:i32[3,1] u:f64[3,3]", "    y0:f64[6] = " SCATTER("scatter-add", S_WIN, "CLIP", "False")
         " a i u\n    y:f64[6] = sin y0", "f64[6]", IDX(I_OOB), NIDX(3));
  gcheck("a:f64[5] i:i32[4,1] u:f64[4]", "    y0:f64[5] = " SCATTER("scatter", S_TAKE, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[5] = sin y0", "f64[5]", IDX(I_DUP), NIDX(4));
  gcheck("a:f64[6] i:i32[3,1] u:f64[3,3]", "    y0:f64[6] = " SCATTER("scatter", S_WIN, "CLIP", "False")
         " a i u\n    y:f64[6] = sin y0", "f64[6]", IDX(I_OOB), NIDX(3));
  gcheck("a:f64[2,4] i:i32[2,3,1] u:f64[2,3]", "    y0:f64[2,4] = " SCATTER("scatter", S_BATCH, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[2,4] = sin y0", "f64[2,4]", IDX(I_BATCH_OOB), NIDX(6));
  gcheck("a:f64[4,3] i:i32[3,1] u:f64[3,3]", "    y0:f64[4,3] = " SCATTER("scatter", S_ROWS, "PROMISE_IN_BOUNDS", "True")
         " a i u\n    y:f64[4,3] = sin y0", "f64[4,3]", IDX((int64_t[]){2, 0, 3}), NIDX(3));
}
END_TEST

START_TEST(grad_scatter_combiners) {
  gcheck("a:f64[5] i:i32[3,1] u:f64[3]", "    y0:f64[5] = " SCATTER("scatter-mul", S_TAKE, "FILL_OR_DROP", "True")
         " a i u\n    y:f64[5] = sin y0", "f64[5]", IDX(I_UNIQ), NIDX(3));
  /* windows of 3 in 9, the last start clipped from 11 to 6: still unique */
  gcheck("a:f64[9] i:i32[3,1] u:f64[3,3]", "    y0:f64[9] = " SCATTER("scatter-mul", S_WIN, "CLIP", "True")
         " a i u\n    y:f64[9] = sin y0", "f64[9]", IDX((int64_t[]){0, 3, 11}), NIDX(3));
  gcheck("a:f64[5] i:i32[4,1] u:f64[4]", "    y0:f64[5] = " SCATTER("scatter-max", S_TAKE, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[5] = sin y0", "f64[5]", IDX(I_DUP), NIDX(4));
  gcheck("a:f64[5] i:i32[4,1] u:f64[4]", "    y0:f64[5] = " SCATTER("scatter-min", S_TAKE, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[5] = exp y0", "f64[5]", IDX(I_DUP), NIDX(4));
  gcheck("a:f64[6] i:i32[3,1] u:f64[3,3]", "    y0:f64[6] = " SCATTER("scatter-max", S_WIN, "FILL_OR_DROP", "False")
         " a i u\n    y:f64[6] = sin y0", "f64[6]", IDX((int64_t[]){2, 3, 7}), NIDX(3));
  gcheck("a:f64[2,4] i:i32[2,3,1] u:f64[2,3]", "    y0:f64[2,4] = " SCATTER("scatter-min", S_BATCH, "CLIP", "False")
         " a i u\n    y:f64[2,4] = sin y0", "f64[2,4]", IDX(I_BATCH_OOB), NIDX(6));
}
END_TEST

START_TEST(grad_top_k_cumext) {
  gcheck("a:f64[2,6]", "    y0:f64[2,3] k:i32[2,3] = top_k[axis=1 k=3] a\n    y:f64[2,3] = sin y0", "f64[2,3]",
         NULL, NULL);
  gcheck("a:f64[5,2]", "    y:f64[2,2] k:i32[2,2] = top_k[axis=0 k=2] a", "f64[2,2]", NULL, NULL);
  gcheck("a:f64[7]", "    y0:f64[7] k:i32[7] = top_k[axis=0 k=7] a\n    y:f64[7] = mul y0 y0", "f64[7]", NULL,
         NULL);
  gcheck("a:f64[3,6]", "    y0:f64[3,6] = cummax[axis=1 reverse=False] a\n    y:f64[3,6] = sin y0", "f64[3,6]",
         NULL, NULL);
  gcheck("a:f64[3,6]", "    y:f64[3,6] = cummax[axis=1 reverse=True] a", "f64[3,6]", NULL, NULL);
  gcheck("a:f64[5,2]", "    y:f64[5,2] = cummin[axis=0 reverse=False] a", "f64[5,2]", NULL, NULL);
  gcheck("a:f64[5,2]", "    y0:f64[5,2] = cummin[axis=0 reverse=True] a\n    y:f64[5,2] = exp y0", "f64[5,2]",
         NULL, NULL);
}
END_TEST

/* The gradient of j at inputs in w.r.t. input `arg` equals expect[]
 * (within tol, relative). */
static void grad_is(const char *text, ft_array **in, int arg, const double *expect, double tol) {
  ft_jaxpr *j = P(text), *g = ft_grad(C, j, 1, &arg, false);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  ft_array *o[1];
  run(g, ft_jaxpr_num_inputs(j), in, o);
  for (int64_t e = 0; e < ft_array_size(o[0]); e++)
    ck_assert_msg(fabs(ft_get_f64(o[0], e) - expect[e]) <= tol * fabs(expect[e]), "d/d input %d [%lld] = %.17g, expected %.17g\n%s", arg,
                  (long long)e, ft_get_f64(o[0], e), expect[e], text);
  ft_array_free(o[0]);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}

static ft_array *f64s(int n, const double *v) {
  return ft_array_from_data(C, FT_F64, 1, (int64_t[]){n}, v);
}

#define WSUM4(body) \
  "{ lambda ; a:f64[4] u:f64[3] i:i32[3,1]. let\n" body "\n" \
  "    w:f64[4] = iota[dimension=0 dtype=float64 shape=(4,) sharding=None]\n" \
  "    w1:f64[4] = add w 1.0:f64[]\n    z:f64[4] = mul y w1\n" \
  "    out:f64[] = reduce_sum[axes=(0,) out_sharding=None] z\n  in (out,) }"

START_TEST(exact_values) {
  /* scatter with duplicates: the last write wins, and so does its tangent */
  ft_array *in[3] = {f64s(4, (double[]){1, 2, 3, 4}), f64s(3, (double[]){5, 6, 7}),
                     idx_array(2, (int64_t[]){3, 1}, (int64_t[]){1, 1, 2})};
  const char *sc = WSUM4("    y:f64[4] = " SCATTER("scatter", S_TAKE, "FILL_OR_DROP", "False") " a i u");
  grad_is(sc, in, 0, (double[]){1, 0, 0, 4}, 0);
  grad_is(sc, in, 1, (double[]){0, 2, 3}, 0);
  /* scatter-max: the operand ties with the larger of two tied updates:
   * each of the three gets a third (JAX's rule; rounding within 1e-15) */
  ft_array_free(in[0]), ft_array_free(in[1]);
  in[0] = f64s(4, (double[]){1, 6, 3, 4});
  in[1] = f64s(3, (double[]){6, 6, 2});
  const char *mx = WSUM4("    y:f64[4] = " SCATTER("scatter-max", S_TAKE, "FILL_OR_DROP", "False") " a i u");
  grad_is(mx, in, 0, (double[]){1, 2.0 / 3.0, 3, 4}, 1e-15);
  grad_is(mx, in, 1, (double[]){2.0 / 3.0, 2.0 / 3.0, 0}, 1e-15);
  free_arrays(3, in);
  /* cummax ties: the later tied position in scan order takes the tangent */
  ft_array *x = f64s(4, (double[]){1, 3, 3, 2});
  const char *cm = "{ lambda ; a:f64[4]. let\n    y:f64[4] = cummax[axis=0 reverse=%s] a\n"
                   "    w:f64[4] = iota[dimension=0 dtype=float64 shape=(4,) sharding=None]\n"
                   "    w1:f64[4] = add w 1.0:f64[]\n    z:f64[4] = mul y w1\n"
                   "    out:f64[] = reduce_sum[axes=(0,) out_sharding=None] z\n  in (out,) }";
  char text[1024];
  snprintf(text, sizeof text, cm, "False");
  grad_is(text, &x, 0, (double[]){1, 2, 7, 0}, 0);
  ft_array_free(x);
  x = f64s(4, (double[]){2, 3, 3, 1});
  snprintf(text, sizeof text, cm, "True");
  grad_is(text, &x, 0, (double[]){0, 3, 3, 4}, 0);
  ft_array_free(x);
  /* a FILL_OR_DROP gather's tangent reads 0, not the fill value, out of range */
  ft_jaxpr *j = P("{ lambda ; a:f64[3] i:i32[2,1]. let\n    y:f64[2] = "
                  GATHER(G_TAKE, "(1,)", "FILL_OR_DROP", "nan") " a i\n  in (y,) }");
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  ft_array *fin[3] = {f64s(3, (double[]){1, 2, 3}), idx_array(2, (int64_t[]){2, 1}, (int64_t[]){2, 5}),
                      f64s(3, (double[]){10, 20, 30})};
  ft_array *fo[2];
  run(f, 3, fin, fo);
  ck_assert(isnan(ft_get_f64(fo[0], 1)));
  ck_assert_double_eq(ft_get_f64(fo[1], 0), 30);
  ck_assert_double_eq(ft_get_f64(fo[1], 1), 0);
  free_arrays(2, fo), free_arrays(3, fin);
  ft_jaxpr_free(f), ft_jaxpr_free(j);
}
END_TEST

/* hessian (jacfwd of jacrev: JVP and vmap of the rules' own output) of a
 * scalar program with one f64[n] input (then integer inputs), against
 * central differences of its gradient (h = 1e-5, 1e-6 relative). */
static void hcheck(const char *text, const int64_t *const *idx, const int *n_idx) {
  ft_jaxpr *j = P(text), *h = ft_hessian(C, j, 0);
  ck_assert_msg(h != NULL, "hessian: %s\n%s", ft_ctx_error(C), text);
  verify(h);
  int zero = 0, n = ft_jaxpr_num_inputs(j);
  ft_jaxpr *g = ft_grad(C, j, 1, &zero, false);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  ft_array *in[8], *ho[1], *gp[1], *gm[1];
  inputs(j, in, -2, 2, idx, n_idx);
  run(h, n, in, ho);
  int64_t m = ft_array_size(in[0]);
  for (int64_t e = 0; e < m; e++) {
    double x0 = ft_get_f64(in[0], e), hh = 1e-5;
    ft_set_f64(in[0], e, x0 + hh);
    run(g, n, in, gp);
    ft_set_f64(in[0], e, x0 - hh);
    run(g, n, in, gm);
    ft_set_f64(in[0], e, x0);
    for (int64_t r = 0; r < m; r++) {
      double fd = (ft_get_f64(gp[0], r) - ft_get_f64(gm[0], r)) / (2 * hh), an = ft_get_f64(ho[0], r * m + e);
      ck_assert_msg(fabs(an - fd) <= 1e-6 * fmax(1.0, fabs(fd)), "H[%lld,%lld] = %.12g, differences %.12g\n%s",
                    (long long)r, (long long)e, an, fd, text);
    }
    free_arrays(1, gp), free_arrays(1, gm);
  }
  free_arrays(1, ho), free_arrays(n, in);
  ft_jaxpr_free(g), ft_jaxpr_free(h), ft_jaxpr_free(j);
}

START_TEST(hessians) {
  hcheck("{ lambda ; a:f64[5] u:f64[4] i:i32[4,1]. let\n    y:f64[5] = "
         SCATTER("scatter", S_TAKE, "FILL_OR_DROP", "False") " a i u\n    z:f64[5] = sin y\n"
         "    g:f64[4] = " GATHER(G_TAKE, "(1,)", "CLIP", "None") " z i\n    q:f64[4] = mul g u\n"
         "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] q\n  in (s,) }",
         IDX((int64_t[]){1, 3, 1, 7}), NIDX(4));
  hcheck("{ lambda ; a:f64[6]. let\n    y:f64[6] = cummax[axis=0 reverse=False] a\n"
         "    v:f64[3] k:i32[3] = top_k[axis=0 k=3] a\n    z:f64[6] = sin y\n    q:f64[3] = mul v v\n"
         "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] z\n"
         "    s2:f64[] = reduce_sum[axes=(0,) out_sharding=None] q\n    s3:f64[] = add s s2\n  in (s3,) }",
         NULL, NULL);
  hcheck("{ lambda ; a:f64[5] u:f64[4] i:i32[4,1]. let\n    y:f64[5] = "
         SCATTER("scatter-max", S_TAKE, "FILL_OR_DROP", "False") " a i u\n    z:f64[5] = mul y y\n"
         "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] z\n  in (s,) }",
         IDX(I_DUP), NIDX(4));
}
END_TEST

/* ------------------------------------------------------------ JAX fixture */

typedef struct fx_array {
  ft_dtype dt;
  int rank;
  int64_t dims[FT_MAX_RANK];
  double *v;
  int64_t n;
} fx_array;

/* Parses "DTYPE RANK DIMS... VALUES..." (after the tag). */
static void fx_parse(const char *s, fx_array *a) {
  char dt[8];
  int used = 0;
  ck_assert_int_eq(sscanf(s, "%7s %d%n", dt, &a->rank, &used), 2);
  s += used;
  a->dt = !strcmp(dt, "f64") ? FT_F64 : FT_I32;
  a->n = 1;
  for (int i = 0; i < a->rank; i++) {
    long long d;
    ck_assert_int_eq(sscanf(s, "%lld%n", &d, &used), 1);
    s += used;
    a->dims[i] = d;
    a->n *= d;
  }
  a->v = malloc(sizeof(double) * (size_t)(a->n + 1));
  ck_assert_ptr_nonnull(a->v);
  for (int64_t i = 0; i < a->n; i++) {
    ck_assert_int_eq(sscanf(s, "%lf%n", &a->v[i], &used), 1);
    s += used;
  }
}

static ft_array *fx_to_array(const fx_array *a) {
  ft_array *r = ft_array_new(C, a->dt, a->rank, a->dims);
  ck_assert_ptr_nonnull(r);
  for (int64_t i = 0; i < a->n; i++) {
    if (a->dt == FT_F64) ft_set_f64(r, i, a->v[i]);
    else ft_set_i64(r, i, (int64_t)a->v[i]);
  }
  return r;
}

/* Runs one case: ft_grad of the parsed printout against JAX's gradients. */
static void fx_case(const char *name, const char *jtext, int na, const int *argn, int nin, fx_array *in,
                    fx_array *gr) {
  ft_jaxpr *j = P(jtext);
  ft_jaxpr *g = ft_grad(C, j, na, argn, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", name, ft_ctx_error(C));
  verify(g);
  ft_array *ins[16], *outs[16];
  for (int i = 0; i < nin; i++) ins[i] = fx_to_array(&in[i]);
  run(g, nin, ins, outs);
  for (int k = 0; k < na; k++) {
    ck_assert_int_eq(ft_array_size(outs[k]), gr[k].n);
    for (int64_t e = 0; e < gr[k].n; e++) {
      double got = ft_get_f64(outs[k], e), want = gr[k].v[e];
      ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%s: d/d input %d [%lld] = %.17g, JAX %.17g", name,
                    argn[k], (long long)e, got, want);
    }
  }
  /* the JIT runs the gradient bit for bit like the interpreter */
  ft_jit_options jo = {.size = sizeof(ft_jit_options), .no_cache = true};
  ft_fn *fn = ft_jit(C, g, &jo);
  ck_assert_msg(fn != NULL, "%s: jit: %s", name, ft_ctx_error(C));
  ft_array *jouts[16];
  ck_assert_msg(ft_call(fn, nin, (const ft_array *const *)ins, na, jouts) == FT_OK, "%s: call: %s", name, ft_ctx_error(C));
  for (int k = 0; k < na; k++)
    ck_assert_msg(!memcmp(jouts[k]->data, outs[k]->data, (size_t)gr[k].n * sizeof(double)), "%s: jit differs",
                  name);
  free_arrays(na, jouts);
  ft_fn_free(fn);
  free_arrays(nin, ins), free_arrays(na, outs);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}

START_TEST(jax_gradients) {
  char path[1024];
  snprintf(path, sizeof path, "%s/ad_index/cases.txt", FT_FIXTURES);
  FILE *fh = fopen(path, "r");
  ck_assert_msg(fh != NULL, "cannot open %s", path);
  static char line[1 << 16], jtext[1 << 16], name[128];
  int argn[8], na = 0, nin = 0, ngr = 0, cases = 0;
  fx_array in[16], gr[8];
  while (fgets(line, sizeof line, fh)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "case ", 5)) {
      snprintf(name, sizeof name, "%.100s", line + 5);
      na = nin = ngr = 0;
    } else if (!strncmp(line, "argnums", 7)) {
      int used = 0, off = 7;
      while (na < 8 && sscanf(line + off, "%d%n", &argn[na], &used) == 1) na++, off += used;
    } else if (!strncmp(line, "jaxpr ", 6)) {
      int nl = atoi(line + 6);
      size_t len = 0;
      jtext[0] = 0;
      for (int k = 0; k < nl; k++) {
        ck_assert_ptr_nonnull(fgets(line, sizeof line, fh));
        size_t m = strlen(line);
        ck_assert(len + m < sizeof jtext);
        memcpy(jtext + len, line, m + 1);
        len += m;
      }
    } else if (!strncmp(line, "in ", 3)) {
      ck_assert_int_lt(nin, 16);
      fx_parse(line + 3, &in[nin++]);
    } else if (!strncmp(line, "grad ", 5)) {
      ck_assert_int_lt(ngr, 8);
      fx_parse(line + 5, &gr[ngr++]);
    } else if (!strcmp(line, "end")) {
      ck_assert_int_eq(ngr, na);
      fx_case(name, jtext, na, argn, nin, in, gr);
      for (int i = 0; i < nin; i++) free(in[i].v);
      for (int i = 0; i < ngr; i++) free(gr[i].v);
      cases++;
    }
  }
  fclose(fh);
  ck_assert_int_eq(cases, 17);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(errors_and_coverage) {
  /* scatter-mul: the updates' derivative needs unique_indices, as in JAX */
  const char *t = "{ lambda ; a:f64[5] i:i32[4,1] u:f64[4]. let\n    y:f64[5] = "
                  SCATTER("scatter-mul", S_TAKE, "FILL_OR_DROP", "False") " a i u\n"
                  "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] y\n  in (s,) }";
  ft_jaxpr *j = P(t);
  int a2 = 2, a0 = 0;
  ck_assert_ptr_null(ft_grad(C, j, 1, &a2, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "scatter-mul") && strstr(ft_ctx_error(C), "unique_indices=True"), "%s",
                ft_ctx_error(C));
  ft_jaxpr *g = ft_grad(C, j, 1, &a0, false); /* the operand alone is fine */
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  /* scatter with a custom combiner (scatter_apply): no JVP, as in JAX */
  j = P("{ lambda ; a:f64[5] i:i32[4,1] u:f64[4]. let\n    y:f64[5] = scatter[dimension_numbers=" S_TAKE
        " indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP unique_indices=False update_consts=()"
        " update_jaxpr={ lambda ; p:f64[] q:f64[]. let r:f64[] = mul p q in (r,) }] a i u\n"
        "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] y\n  in (s,) }");
  ck_assert_ptr_null(ft_grad(C, j, 1, &a0, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "scatter_apply"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  /* scatter-mul is affine, not linear, in its updates: refused */
  j = P("{ lambda ; i:i32[3,1] a:f64[5] u:f64[3]. let\n    y:f64[5] = "
        SCATTER("scatter-mul", S_TAKE, "FILL_OR_DROP", "True") " a i u\n  in (y,) }");
  ck_assert_ptr_null(ft_linear_transpose(C, j, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "affine"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  ck_assert_str_eq(ft_transpose_rule_status(FT_P_SCATTER_MAX), "not linear");
  ck_assert_str_eq(ft_transpose_rule_status(FT_P_TOP_K), "not linear");
  static const ft_prim all[] = {FT_P_GATHER, FT_P_SCATTER, FT_P_SCATTER_ADD, FT_P_SCATTER_MUL, FT_P_SCATTER_MIN,
                                FT_P_SCATTER_MAX, FT_P_TOP_K, FT_P_CUMMAX, FT_P_CUMMIN};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ck_assert_ptr_null(ft_jvp_rule_status(all[k]));
  static const ft_prim lin[] = {FT_P_GATHER, FT_P_SCATTER, FT_P_SCATTER_ADD, FT_P_SCATTER_MUL};
  for (size_t k = 0; k < sizeof lin / sizeof lin[0]; k++) ck_assert_ptr_null(ft_transpose_rule_status(lin[k]));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ad_index");
  TCase *t = tcase_create("ad_index");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, gather_transpose);
  tcase_add_test(t, scatter_transpose);
  tcase_add_test(t, grad_gather_scatter);
  tcase_add_test(t, grad_scatter_combiners);
  tcase_add_test(t, grad_top_k_cumext);
  tcase_add_test(t, exact_values);
  tcase_add_test(t, hessians);
  tcase_add_test(t, jax_gradients);
  tcase_add_test(t, errors_and_coverage);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
