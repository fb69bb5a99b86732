/* tests/runtime/test_index.c: gather, the scatter family, reduce_window_*,
 * conv_general_dilated and top_k in the reference interpreter, with exact
 * expected values (hand-computed from the XLA/StableHLO semantics), each
 * written as JAX 0.10.2 prints it; and their tracing functions, checked
 * against JAX's printouts (fixtures/golden) by text and hash. */
#include <stdio.h>
#include <stdlib.h>

#include "rt_util.h"

/* Parses text, evaluates it on in[], frees the jaxpr. */
static ft_status run(const char *text, int n_in, ft_array **in, int n_out, ft_array **out) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse failed: %s", ft_ctx_error(C));
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out);
  ft_jaxpr_free(j);
  return st;
}

/* One output, success asserted. */
static ft_array *run1(const char *text, int n_in, ft_array **in) {
  ft_array *o = NULL;
  ft_status st = run(text, n_in, in, 1, &o);
  ck_assert_msg(st == FT_OK, "eval failed: %s\n%s", ft_ctx_error(C), text);
  return o;
}

static void check_f64s(const ft_array *a, int n, const double *want) {
  ck_assert_int_eq(ft_array_size(a), n);
  for (int i = 0; i < n; i++) {
    double g = ft_get_f64(a, i);
    ck_assert_msg((isnan(g) && isnan(want[i])) || bits64(g) == bits64(want[i]),
                  "element %d: got %a, want %a", i, g, want[i]);
  }
}

static void check_i64s(const ft_array *a, int n, const int64_t *want) {
  ck_assert_int_eq(ft_array_size(a), n);
  for (int i = 0; i < n; i++)
    ck_assert_msg(ft_get_i64(a, i) == want[i], "element %d: got %lld, want %lld", i,
                  (long long)ft_get_i64(a, i), (long long)want[i]);
}

#define F(...) ((const double[]){__VA_ARGS__})
#define I(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const int64_t[]){__VA_ARGS__})

static const char *GDN1 = "GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
                          "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())";
static const char *SDN1 = "ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
                          "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
                          "scatter_indices_batching_dims=())";

/* ------------------------------------------------------------------ gather */

/* x[idx] on a rank-1 operand of dtype `ty` with the given mode / fill. */
static ft_array *take1(const char *ty, const char *mode, const char *fill, ft_array *x, ft_array *ix) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ lambda ; a:%s[5] b:i32[4,1]. let\n"
           "    c:%s[4] = gather[dimension_numbers=%s fill_value=%s indices_are_sorted=False "
           "mode=GatherScatterMode.%s slice_sizes=(1,) unique_indices=False] a b\n"
           "  in (c,) }",
           ty, ty, GDN1, fill, mode);
  ft_array *in[2] = {x, ix};
  return run1(text, 2, in);
}

START_TEST(gather_modes) {
  float xv[5] = {10, 11, 12, 13, 14};
  int32_t iv[4] = {0, 4, -1, 7};
  ft_array *x = ARR(FT_F32, 1, D(5), xv), *ix = ARR(FT_I32, 2, D(4, 1), iv);
  ft_array *r = take1("f32", "CLIP", "None", x, ix);
  check_f64s(r, 4, F(10, 14, 10, 14));
  ft_array_free(r);
  r = take1("f32", "PROMISE_IN_BOUNDS", "None", x, ix); /* XLA clamps */
  check_f64s(r, 4, F(10, 14, 10, 14));
  ft_array_free(r);
  r = take1("f32", "FILL_OR_DROP", "None", x, ix);
  check_f64s(r, 4, F(10, 14, NAN, NAN));
  ft_array_free(r);
  r = take1("f32", "FILL_OR_DROP", "-1.5", x, ix);
  check_f64s(r, 4, F(10, 14, -1.5, -1.5));
  ft_array_free(r);
  ft_array_free(x);
  /* the None fill of integers and bool: min of signed, max of unsigned, True */
  int32_t xi[5] = {1, 2, 3, 4, 5};
  x = ARR(FT_I32, 1, D(5), xi);
  r = take1("i32", "FILL_OR_DROP", "None", x, ix);
  check_i64s(r, 4, I(1, 5, INT32_MIN, INT32_MIN));
  ft_array_free(r), ft_array_free(x);
  uint8_t xu[5] = {1, 2, 3, 4, 5};
  x = ARR(FT_U8, 1, D(5), xu);
  r = take1("u8", "FILL_OR_DROP", "None", x, ix);
  check_i64s(r, 4, I(1, 5, 255, 255));
  ft_array_free(r), ft_array_free(x);
  uint8_t xb[5] = {0, 0, 0, 0, 0};
  x = ARR(FT_BOOL, 1, D(5), xb);
  r = take1("bool", "FILL_OR_DROP", "None", x, ix);
  check_i64s(r, 4, I(0, 0, 1, 1));
  ft_array_free(r), ft_array_free(x);
  ft_array_free(ix);
}
END_TEST

START_TEST(gather_slices_and_batching) {
  float xv[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  int32_t iv[4] = {1, 1, 2, 3};
  ft_array *x = ARR(FT_F32, 2, D(3, 4), xv), *ix = ARR(FT_I32, 2, D(2, 2), iv);
  ft_array *in[2] = {x, ix};
  /* slices of size (1, 2) at (1, 1) and (2, 3): the second start clamps to
   * column 2 (4 - 2) unless FILL_OR_DROP, which fills the whole slice */
  const char *fmt = "{ lambda ; a:f32[3,4] b:i32[2,2]. let\n"
                    "    c:f32[2,2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), "
                    "collapsed_slice_dims=(0,), start_index_map=(0, 1), operand_batching_dims=(), "
                    "start_indices_batching_dims=()) fill_value=None indices_are_sorted=False "
                    "mode=GatherScatterMode.%s slice_sizes=(1, 2) unique_indices=False] a b\n"
                    "  in (c,) }";
  char text[1024];
  snprintf(text, sizeof text, fmt, "CLIP");
  ft_array *r = run1(text, 2, in);
  check_f64s(r, 4, F(5, 6, 10, 11));
  ft_array_free(r);
  snprintf(text, sizeof text, fmt, "FILL_OR_DROP");
  r = run1(text, 2, in);
  check_f64s(r, 4, F(5, 6, NAN, NAN));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix);
  /* batching dims: row k of the operand is indexed by row k of the indices
   * (jnp.take_along_axis): out[k] = x[k, idx[k]] */
  float bv[6] = {0, 1, 2, 3, 4, 5};
  int32_t bi[2] = {2, 0};
  x = ARR(FT_F32, 2, D(2, 3), bv), ix = ARR(FT_I32, 2, D(2, 1), bi);
  in[0] = x, in[1] = ix;
  r = run1("{ lambda ; a:f32[2,3] b:i32[2,1]. let\n"
           "    c:f32[2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), "
           "collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,), "
           "start_indices_batching_dims=(0,)) fill_value=None indices_are_sorted=False "
           "mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 1) unique_indices=False] a b\n"
           "  in (c,) }",
           2, in);
  check_f64s(r, 2, F(2, 3));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix);
}
END_TEST

/* ----------------------------------------------------------------- scatter */

/* x.at[idx] <prim> updates, on rank-1 operands of dtype ty. */
static ft_array *scatter1(const char *prim, const char *ty, const char *mode, ft_array *x,
                          ft_array *ix, ft_array *u) {
  char text[2048];
  int n = (int)x->aval.dims[0], m = (int)u->aval.dims[0];
  snprintf(text, sizeof text,
           "{ lambda ; a:%s[%d] b:i32[%d,1] c:%s[%d]. let\n"
           "    d:%s[%d] = %s[dimension_numbers=%s indices_are_sorted=False "
           "mode=GatherScatterMode.%s unique_indices=False update_consts=() update_jaxpr=None] a b c\n"
           "  in (d,) }",
           ty, n, m, ty, m, ty, n, prim, SDN1, mode);
  ft_array *in[3] = {x, ix, u};
  return run1(text, 3, in);
}

START_TEST(scatter_modes_and_duplicates) {
  float zero[4] = {0, 0, 0, 0}, uv[5] = {1, 2, 3, 100, 200};
  int32_t iv[5] = {1, 1, 3, -1, 4};
  ft_array *x = ARR(FT_F32, 1, D(4), zero), *ix = ARR(FT_I32, 2, D(5, 1), iv),
           *u = ARR(FT_F32, 1, D(5), uv);
  /* FILL_OR_DROP and PROMISE_IN_BOUNDS drop out-of-range updates; CLIP
   * clamps them onto the ends; duplicates accumulate */
  ft_array *r = scatter1("scatter-add", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 4, F(0, 3, 0, 3));
  ft_array_free(r);
  r = scatter1("scatter-add", "f32", "PROMISE_IN_BOUNDS", x, ix, u);
  check_f64s(r, 4, F(0, 3, 0, 3));
  ft_array_free(r);
  r = scatter1("scatter-add", "f32", "CLIP", x, ix, u);
  check_f64s(r, 4, F(100, 3, 0, 203));
  ft_array_free(r);
  /* scatter: the last write wins */
  r = scatter1("scatter", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 4, F(0, 2, 0, 3));
  ft_array_free(r);
  r = scatter1("scatter", "f32", "CLIP", x, ix, u);
  check_f64s(r, 4, F(100, 2, 0, 200));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix), ft_array_free(u);

  /* scatter-add accumulates in update order, rounding each step to f32:
   * (1e8 + 1) - 1e8 is 0, (1e8 - 1e8) + 1 is 1 */
  float one[1] = {0}, u1[3] = {1e8f, 1, -1e8f}, u2[3] = {1e8f, -1e8f, 1};
  int32_t i0[3] = {0, 0, 0};
  x = ARR(FT_F32, 1, D(1), one), ix = ARR(FT_I32, 2, D(3, 1), i0);
  u = ARR(FT_F32, 1, D(3), u1);
  r = scatter1("scatter-add", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 1, F(0));
  ft_array_free(r), ft_array_free(u);
  u = ARR(FT_F32, 1, D(3), u2);
  r = scatter1("scatter-add", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 1, F(1));
  ft_array_free(r), ft_array_free(u), ft_array_free(x), ft_array_free(ix);
}
END_TEST

START_TEST(scatter_combiners) {
  float xv[4] = {2, 0.0f, -1, 5};
  float uv[4] = {3, -0.0f, NAN, 4};
  int32_t iv[4] = {0, 1, 2, 3};
  ft_array *x = ARR(FT_F32, 1, D(4), xv), *ix = ARR(FT_I32, 2, D(4, 1), iv),
           *u = ARR(FT_F32, 1, D(4), uv);
  ft_array *r = scatter1("scatter-mul", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 4, F(6, -0.0, NAN, 20));
  ft_array_free(r);
  /* XLA's min/max: NaN wins, -0 < +0 */
  r = scatter1("scatter-min", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 4, F(2, -0.0, NAN, 4));
  ft_array_free(r);
  r = scatter1("scatter-max", "f32", "FILL_OR_DROP", x, ix, u);
  check_f64s(r, 4, F(3, 0.0, NAN, 5));
  ft_array_free(r), ft_array_free(x), ft_array_free(u);
  /* integers wrap; unsigned compare as unsigned */
  int8_t x8[4] = {127, -128, 5, 0}, u8[4] = {1, -1, 7, -3};
  x = ARR(FT_I8, 1, D(4), x8), u = ARR(FT_I8, 1, D(4), u8);
  r = scatter1("scatter-add", "i8", "FILL_OR_DROP", x, ix, u);
  check_i64s(r, 4, I(-128, 127, 12, -3));
  ft_array_free(r);
  r = scatter1("scatter-mul", "i8", "FILL_OR_DROP", x, ix, u);
  check_i64s(r, 4, I(127, -128, 35, 0));
  ft_array_free(r);
  r = scatter1("scatter-min", "i8", "FILL_OR_DROP", x, ix, u);
  check_i64s(r, 4, I(1, -128, 5, -3));
  ft_array_free(r), ft_array_free(x), ft_array_free(u);
  uint32_t xu[4] = {1, 0xffffffffu, 5, 0}, uu[4] = {0x80000000u, 1, 2, 3};
  x = ARR(FT_U32, 1, D(4), xu), u = ARR(FT_U32, 1, D(4), uu);
  r = scatter1("scatter-max", "u32", "FILL_OR_DROP", x, ix, u);
  check_i64s(r, 4, I(0x80000000, 0xffffffff, 5, 3));
  ft_array_free(r), ft_array_free(x), ft_array_free(u), ft_array_free(ix);
}
END_TEST

START_TEST(scatter_windows_batching_apply) {
  /* rows: updates [2,3] into x[3,3] at rows 0 and 2 */
  float z9[9] = {0}, rows[6] = {1, 2, 3, 4, 5, 6};
  int32_t ri[2] = {0, 2};
  ft_array *x = ARR(FT_F32, 2, D(3, 3), z9), *ix = ARR(FT_I32, 2, D(2, 1), ri),
           *u = ARR(FT_F32, 2, D(2, 3), rows);
  ft_array *in[3] = {x, ix, u};
  ft_array *r = run1("{ lambda ; a:f32[3,3] b:i32[2,1] c:f32[2,3]. let\n"
                     "    d:f32[3,3] = scatter-add[dimension_numbers=ScatterDimensionNumbers("
                     "update_window_dims=(1,), inserted_window_dims=(0,), "
                     "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
                     "scatter_indices_batching_dims=()) indices_are_sorted=True "
                     "mode=GatherScatterMode.FILL_OR_DROP unique_indices=True update_consts=() "
                     "update_jaxpr=None] a b c\n  in (d,) }",
                     3, in);
  check_f64s(r, 9, F(1, 2, 3, 0, 0, 0, 4, 5, 6));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix), ft_array_free(u);

  /* a window of 2 starting at 3 of 4: dropped whole (FILL_OR_DROP), or
   * clamped to start 2 (CLIP) */
  float x4[4] = {0, 0, 0, 0}, w2[2] = {7, 8};
  int32_t s3[1] = {3};
  x = ARR(FT_F32, 1, D(4), x4), ix = ARR(FT_I32, 2, D(1, 1), s3), u = ARR(FT_F32, 2, D(1, 2), w2);
  in[0] = x, in[1] = ix, in[2] = u;
  const char *fmt = "{ lambda ; a:f32[4] b:i32[1,1] c:f32[1,2]. let\n"
                    "    d:f32[4] = scatter[dimension_numbers=ScatterDimensionNumbers("
                    "update_window_dims=(1,), inserted_window_dims=(), "
                    "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
                    "scatter_indices_batching_dims=()) indices_are_sorted=False "
                    "mode=GatherScatterMode.%s unique_indices=False update_consts=() "
                    "update_jaxpr=None] a b c\n  in (d,) }";
  char text[1024];
  snprintf(text, sizeof text, fmt, "FILL_OR_DROP");
  r = run1(text, 3, in);
  check_f64s(r, 4, F(0, 0, 0, 0));
  ft_array_free(r);
  snprintf(text, sizeof text, fmt, "CLIP");
  r = run1(text, 3, in);
  check_f64s(r, 4, F(0, 0, 7, 8));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix), ft_array_free(u);

  /* batching dims: x[k, idx[k]] = u[k] */
  float z6[6] = {0}, uv[2] = {5, 6};
  int32_t bi[2] = {2, 0};
  x = ARR(FT_F32, 2, D(2, 3), z6), ix = ARR(FT_I32, 2, D(2, 1), bi), u = ARR(FT_F32, 1, D(2), uv);
  in[0] = x, in[1] = ix, in[2] = u;
  r = run1("{ lambda ; a:f32[2,3] b:i32[2,1] c:f32[2]. let\n"
           "    d:f32[2,3] = scatter[dimension_numbers=ScatterDimensionNumbers("
           "update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,), "
           "operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)) "
           "indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP unique_indices=False "
           "update_consts=() update_jaxpr=None] a b c\n  in (d,) }",
           3, in);
  check_f64s(r, 6, F(0, 0, 5, 6, 0, 0));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix), ft_array_free(u);

  /* lax.scatter_apply: scatter with a user update_jaxpr (here x * 2), once
   * per update, so a duplicated index doubles twice */
  float xa[3] = {1, 2, 3}, ua[3] = {0, 0, 0};
  int32_t ia[3] = {1, 1, 2};
  x = ARR(FT_F32, 1, D(3), xa), ix = ARR(FT_I32, 2, D(3, 1), ia), u = ARR(FT_F32, 1, D(3), ua);
  in[0] = x, in[1] = ix, in[2] = u;
  char t2[2048];
  snprintf(t2, sizeof t2,
           "{ lambda ; a:f32[3] b:i32[3,1] c:f32[3]. let\n"
           "    d:f32[3] = scatter[dimension_numbers=%s indices_are_sorted=False "
           "mode=GatherScatterMode.FILL_OR_DROP unique_indices=False update_consts=() "
           "update_jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = mul e 2.0:f32[] in (g,) }] a b c\n"
           "  in (d,) }",
           SDN1);
  r = run1(t2, 3, in);
  check_f64s(r, 3, F(1, 8, 6));
  ft_array_free(r), ft_array_free(x), ft_array_free(ix), ft_array_free(u);
}
END_TEST

/* ----------------------------------------------------------- reduce_window */

static ft_array *rw1(const char *prim, const char *ty, ft_array *x, int n_out, const char *params) {
  char text[1024];
  snprintf(text, sizeof text, "{ lambda ; a:%s[%d]. let\n    b:%s[%d] = %s[%s] a\n  in (b,) }", ty,
           (int)x->aval.dims[0], ty, n_out, prim, params);
  return run1(text, 1, &x);
}

START_TEST(reduce_window_cases) {
  /* 2x2 max pool, stride 2, on 0..15 */
  float xv[16];
  for (int i = 0; i < 16; i++) xv[i] = (float)i;
  ft_array *x = ARR(FT_F32, 4, D(1, 4, 4, 1), xv);
  ft_array *r = run1("{ lambda ; a:f32[1,4,4,1]. let\n"
                     "    b:f32[1,2,2,1] = reduce_window_max[base_dilation=(1, 1, 1, 1) "
                     "padding=((0, 0), (0, 0), (0, 0), (0, 0)) window_dilation=(1, 1, 1, 1) "
                     "window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] a\n  in (b,) }",
                     1, &x);
  check_f64s(r, 4, F(5, 7, 13, 15));
  ft_array_free(r), ft_array_free(x);

  float v4[4] = {1, 2, 3, 4};
  x = ARR(FT_F32, 1, D(4), v4);
  /* SAME padding: pads read as the identity */
  r = rw1("reduce_window_sum", "f32", x, 4,
          "base_dilation=(1,) padding=((1, 1),) window_dilation=(1,) window_dimensions=(3,) "
          "window_strides=(1,)");
  check_f64s(r, 4, F(3, 6, 9, 7));
  ft_array_free(r);
  /* negative padding crops */
  r = rw1("reduce_window_sum", "f32", x, 3,
          "base_dilation=(1,) padding=((-1, 0),) window_dilation=(1,) window_dimensions=(1,) "
          "window_strides=(1,)");
  check_f64s(r, 3, F(2, 3, 4));
  ft_array_free(r);
  /* base dilation 2: {1, _, 2, _, 3, _, 4}, windows of 2 */
  r = rw1("reduce_window_sum", "f32", x, 6,
          "base_dilation=(2,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_f64s(r, 6, F(1, 2, 2, 3, 3, 4));
  ft_array_free(r);
  /* window dilation 2: x[i] + x[i+2] */
  r = rw1("reduce_window_sum", "f32", x, 2,
          "base_dilation=(1,) padding=((0, 0),) window_dilation=(2,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_f64s(r, 2, F(4, 6));
  ft_array_free(r);
  /* a window entirely in the padding gives the identity */
  r = rw1("reduce_window_max", "f32", x, 5,
          "base_dilation=(1,) padding=((2, 0),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_f64s(r, 5, F(-INFINITY, 1, 2, 3, 4));
  ft_array_free(r);
  r = rw1("reduce_window_min", "f32", x, 3,
          "base_dilation=(1,) padding=((0, 2),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(2,)");
  check_f64s(r, 3, F(1, 3, INFINITY));
  ft_array_free(r), ft_array_free(x);
  /* NaN wins in max/min */
  float vn[3] = {1, NAN, 3};
  x = ARR(FT_F32, 1, D(3), vn);
  r = rw1("reduce_window_min", "f32", x, 2,
          "base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_f64s(r, 2, F(NAN, NAN));
  ft_array_free(r), ft_array_free(x);
  /* the sum order is sequential in the window: ((0 + 1e8) + 1) - 1e8 = 0
   * (a pairwise tree would give 1) */
  float vs[3] = {1e8f, 1, -1e8f};
  x = ARR(FT_F32, 1, D(3), vs);
  r = rw1("reduce_window_sum", "f32", x, 1,
          "base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(3,) "
          "window_strides=(1,)");
  check_f64s(r, 1, F(0));
  ft_array_free(r), ft_array_free(x);
  /* integers: the pad of max is the dtype's minimum; sums wrap */
  int8_t v8[3] = {100, 100, -5};
  x = ARR(FT_I8, 1, D(3), v8);
  r = rw1("reduce_window_max", "i8", x, 5,
          "base_dilation=(1,) padding=((1, 1),) window_dilation=(1,) window_dimensions=(1,) "
          "window_strides=(1,)");
  check_i64s(r, 5, I(-128, 100, 100, -5, -128));
  ft_array_free(r);
  r = rw1("reduce_window_sum", "i8", x, 2,
          "base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_i64s(r, 2, I(-56, 95));
  ft_array_free(r);
  r = rw1("reduce_window_min", "i8", x, 3,
          "base_dilation=(1,) padding=((0, 1),) window_dilation=(1,) window_dimensions=(2,) "
          "window_strides=(1,)");
  check_i64s(r, 3, I(100, -5, -5));
  ft_array_free(r), ft_array_free(x);
}
END_TEST

/* ------------------------------------------------------------------- conv */

/* A 1-D convolution of lhs [n,c,w] and rhs [o,i,k] with extra params. */
static ft_array *conv1(ft_array *l, ft_array *r, const char *out, const char *params) {
  char text[2048];
  const ft_aval *la = &l->aval, *ra = &r->aval;
  snprintf(text, sizeof text,
           "{ lambda ; a:%s[%d,%d,%d] b:%s[%d,%d,%d]. let\n"
           "    c:%s = conv_general_dilated[dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), "
           "rhs_spec=(0, 1, 2), out_spec=(0, 1, 2)) out_sharding=None precision=None %s] a b\n"
           "  in (c,) }",
           ft_dtype_name(la->dtype), (int)la->dims[0], (int)la->dims[1], (int)la->dims[2],
           ft_dtype_name(ra->dtype), (int)ra->dims[0], (int)ra->dims[1], (int)ra->dims[2], out, params);
  ft_array *in[2] = {l, r};
  return run1(text, 2, in);
}

#define P1(strides, pad, ld, rd, fg, bg)                                                        \
  "batch_group_count=" bg " feature_group_count=" fg " lhs_dilation=(" ld ",) padding=(" pad ",) " \
  "preferred_element_type=None rhs_dilation=(" rd ",) window_strides=(" strides ",)"

START_TEST(conv_cases) {
  float xv[5] = {1, 2, 3, 4, 5}, kv[2] = {1, 10};
  ft_array *x = ARR(FT_F32, 3, D(1, 1, 5), xv), *k = ARR(FT_F32, 3, D(1, 1, 2), kv);
  /* a cross-correlation: out[i] = x[i] + 10 x[i+1] */
  ft_array *r = conv1(x, k, "f32[1,1,4]", P1("1", "(0, 0)", "1", "1", "1", "1"));
  check_f64s(r, 4, F(21, 32, 43, 54));
  ft_array_free(r);
  r = conv1(x, k, "f32[1,1,2]", P1("2", "(0, 0)", "1", "1", "1", "1"));
  check_f64s(r, 2, F(21, 43));
  ft_array_free(r);
  r = conv1(x, k, "f32[1,1,6]", P1("1", "(1, 1)", "1", "1", "1", "1"));
  check_f64s(r, 6, F(10, 21, 32, 43, 54, 5));
  ft_array_free(r);
  r = conv1(x, k, "f32[1,1,3]", P1("1", "(-1, 0)", "1", "1", "1", "1"));
  check_f64s(r, 3, F(32, 43, 54));
  ft_array_free(r);
  /* rhs (atrous) dilation: x[i] + 10 x[i+2] */
  r = conv1(x, k, "f32[1,1,3]", P1("1", "(0, 0)", "1", "2", "1", "1"));
  check_f64s(r, 3, F(31, 42, 53));
  ft_array_free(r);
  /* lhs dilation: {1, 0, 2, 0, 3, 0, 4, 0, 5} */
  r = conv1(x, k, "f32[1,1,8]", P1("1", "(0, 0)", "2", "1", "1", "1"));
  check_f64s(r, 8, F(1, 20, 2, 30, 3, 40, 4, 50));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);

  /* feature groups (depthwise): channel c uses kernel c */
  float x2[6] = {1, 2, 3, 4, 5, 6}, k2[2] = {2, 3};
  x = ARR(FT_F32, 3, D(1, 2, 3), x2), k = ARR(FT_F32, 3, D(2, 1, 1), k2);
  r = conv1(x, k, "f32[1,2,3]", P1("1", "(0, 0)", "1", "1", "2", "1"));
  check_f64s(r, 6, F(2, 4, 6, 12, 15, 18));
  ft_array_free(r), ft_array_free(x);
  /* batch groups: output feature o reads batch group o */
  x = ARR(FT_F32, 3, D(2, 1, 3), x2);
  r = conv1(x, k, "f32[1,2,3]", P1("1", "(0, 0)", "1", "1", "1", "2"));
  check_f64s(r, 6, F(2, 4, 6, 12, 15, 18));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);
  /* a grouped convolution with two input features per group: group g sums
   * channels 2g, 2g+1 */
  float x4[4] = {1, 2, 3, 4}, k4[4] = {1, 10, 100, 1000};
  x = ARR(FT_F32, 3, D(1, 4, 1), x4), k = ARR(FT_F32, 3, D(2, 2, 1), k4);
  r = conv1(x, k, "f32[1,2,1]", P1("1", "(0, 0)", "1", "1", "2", "1"));
  check_f64s(r, 2, F(21, 4300));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);

  /* sum order: input features outermost, sequential from +0.0 */
  float xs[3] = {1e8f, 1, -1e8f}, ones[3] = {1, 1, 1};
  x = ARR(FT_F32, 3, D(1, 3, 1), xs), k = ARR(FT_F32, 3, D(1, 3, 1), ones);
  r = conv1(x, k, "f32[1,1,1]", P1("1", "(0, 0)", "1", "1", "1", "1"));
  check_f64s(r, 1, F(0));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);

  /* integers, and int8 into a preferred int32 */
  int8_t xi[2] = {100, 100}, ki[2] = {100, 100};
  x = ARR(FT_I8, 3, D(1, 1, 2), xi), k = ARR(FT_I8, 3, D(1, 1, 2), ki);
  r = conv1(x, k, "i32[1,1,1]",
            "batch_group_count=1 feature_group_count=1 lhs_dilation=(1,) padding=((0, 0),) "
            "preferred_element_type=int32 rhs_dilation=(1,) window_strides=(1,)");
  check_i64s(r, 1, I(20000));
  ft_array_free(r);
  r = conv1(x, k, "i8[1,1,1]", P1("1", "(0, 0)", "1", "1", "1", "1"));
  check_i64s(r, 1, I((int8_t)(uint8_t)(20000 & 0xff)));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);

  /* NHWC / HWIO dimension numbers */
  float xh[4] = {1, 2, 3, 4}, kh[4] = {1, 2, 3, 4};
  x = ARR(FT_F32, 4, D(1, 2, 2, 1), xh), k = ARR(FT_F32, 4, D(2, 2, 1, 1), kh);
  ft_array *in[2] = {x, k};
  r = run1("{ lambda ; a:f32[1,2,2,1] b:f32[2,2,1,1]. let\n"
           "    c:f32[1,1,1,1] = conv_general_dilated[batch_group_count=1 "
           "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), "
           "out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) out_sharding=None "
           "padding=((0, 0), (0, 0)) precision=None preferred_element_type=None "
           "rhs_dilation=(1, 1) window_strides=(1, 1)] a b\n  in (c,) }",
           2, in);
  check_f64s(r, 1, F(30));
  ft_array_free(r), ft_array_free(x), ft_array_free(k);
}
END_TEST

/* ------------------------------------------------------------------- top_k */

START_TEST(top_k_order) {
  /* XLA CPU's order: +NaN > +inf > ... > +0 > -0 > ... > -inf > -NaN; equal
   * values keep the lower index first */
  float xv[8] = {3, NAN, 5, 5, -NAN, -INFINITY, -0.0f, 0.0f};
  uint32_t nb = 0x7fc00000u, mb = 0xffc00000u;
  memcpy(&xv[1], &nb, 4);
  memcpy(&xv[4], &mb, 4);
  ft_array *x = ARR(FT_F32, 1, D(8), xv), *out[2] = {0};
  ck_assert_int_eq(run("{ lambda ; a:f32[8]. let b:f32[8] c:i32[8] = top_k[axis=0 k=8] a in (b, c) }",
                       1, &x, 2, out),
                   FT_OK);
  check_i64s(out[1], 8, I(1, 2, 3, 0, 7, 6, 5, 4));
  ck_assert_uint_eq(((uint32_t *)out[0]->data)[0], nb);
  ck_assert_uint_eq(((uint32_t *)out[0]->data)[7], mb);
  ck_assert_uint_eq(((uint32_t *)out[0]->data)[5], 0x80000000u);
  free_arrays(out, 2), ft_array_free(x);
  /* along axis 0 of a matrix; integers with ties */
  int32_t mv[6] = {1, 6, 3, 4, 3, 5};
  x = ARR(FT_I32, 2, D(3, 2), mv);
  ck_assert_int_eq(run("{ lambda ; a:i32[3,2]. let b:i32[2,2] c:i32[2,2] = top_k[axis=0 k=2] a in (b, c) }",
                       1, &x, 2, out),
                   FT_OK);
  check_i64s(out[0], 4, I(3, 6, 3, 5));
  check_i64s(out[1], 4, I(1, 0, 2, 2));
  free_arrays(out, 2), ft_array_free(x);
  /* u64 above INT64_MAX; k = 0 */
  uint64_t uv[3] = {1, UINT64_MAX, UINT64_C(1) << 63};
  x = ARR(FT_U64, 1, D(3), uv);
  ck_assert_int_eq(run("{ lambda ; a:u64[3]. let b:u64[2] c:i32[2] = top_k[k=2] a in (b, c) }", 1, &x,
                       2, out),
                   FT_OK);
  check_i64s(out[1], 2, I(1, 2));
  free_arrays(out, 2);
  ck_assert_int_eq(run("{ lambda ; a:u64[3]. let b:u64[0] c:i32[0] = top_k[k=0] a in (b, c) }", 1, &x,
                       2, out),
                   FT_OK);
  ck_assert_int_eq(ft_array_size(out[0]), 0);
  free_arrays(out, 2), ft_array_free(x);
}
END_TEST

/* ----------------------------------------------------------------- tracing */

/* Traced == parsed JAX text: same printout, same hash. */
static void same_program(ft_jaxpr *traced, const char *jax_text) {
  ck_assert_msg(traced != NULL, "trace failed: %s", ft_ctx_error(C));
  ft_jaxpr *want = ft_parse(C, jax_text, strlen(jax_text), "jax");
  ck_assert_msg(want != NULL, "parse failed: %s", ft_ctx_error(C));
  char *a = ft_jaxpr_print(C, traced), *b = ft_jaxpr_print(C, want);
  ck_assert_str_eq(a, b);
  char ha[33], hb[33];
  ft_jaxpr_hash_hex(traced, ha);
  ft_jaxpr_hash_hex(want, hb);
  ck_assert_str_eq(ha, hb);
  ft_free(a), ft_free(b);
  ft_jaxpr_free(want);
}

static int f_update_add(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  out[0] = ft_index_update_add(in[0], in[1], ft_weak_f(t, 1.0));
  out[1] = ft_index_update_set(in[0], in[1], ft_weak_f(t, 0.0));
  out[2] = ft_index_update_max(in[0], in[1], ft_weak_f(t, 0.5));
  out[3] = ft_take_clip(in[0], in[1], 0);
  return 4;
}

/* The x.at[i] ops and jnp.take(mode="clip") of fixtures/golden/gather_scatter. */
static const char *GOLDEN_AT =
    "{ lambda ; a:f32[5] b:i32[4]. let\n"
    "    h:bool[4] = lt b 0:i32[]\n    i:i32[4] = add b 5:i32[]\n    j:i32[4] = select_n h b i\n"
    "    k:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] j\n"
    "    l:f32[4] = broadcast_in_dim 1.0:f32[]\n"
    "    m:f32[5] = scatter-add[\n"
    "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
    "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
    "      indices_are_sorted=False\n      mode=GatherScatterMode.FILL_OR_DROP\n"
    "      unique_indices=False\n      update_consts=()\n"
    "      update_jaxpr={ lambda ; n:f32[] o:f32[]. let p:f32[] = add n o in (p,) }\n"
    "    ] a k l\n"
    "    q:bool[4] = lt b 0:i32[]\n    r:i32[4] = add b 5:i32[]\n    s:i32[4] = select_n q b r\n"
    "    t:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] s\n"
    "    u:f32[4] = broadcast_in_dim 0.0:f32[]\n"
    "    v:f32[5] = scatter[\n"
    "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
    "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
    "      indices_are_sorted=False\n      mode=GatherScatterMode.FILL_OR_DROP\n"
    "      unique_indices=False\n      update_consts=()\n      update_jaxpr=None\n"
    "    ] a t u\n"
    "    w:bool[4] = lt b 0:i32[]\n    x:i32[4] = add b 5:i32[]\n    y:i32[4] = select_n w b x\n"
    "    z:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] y\n"
    "    ba:f32[4] = broadcast_in_dim 0.5:f32[]\n"
    "    bb:f32[5] = scatter-max[\n"
    "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
    "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
    "      indices_are_sorted=False\n      mode=GatherScatterMode.FILL_OR_DROP\n"
    "      unique_indices=False\n      update_consts=()\n"
    "      update_jaxpr={ lambda ; bc:f32[] bd:f32[]. let\n          be:f32[] = max bc bd\n"
    "        in (be,) }\n"
    "    ] a z ba\n"
    "    bg:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] b\n"
    "    bf:f32[4] = gather[\n"
    "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
    "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
    "      fill_value=None\n      indices_are_sorted=False\n      mode=GatherScatterMode.CLIP\n"
    "      slice_sizes=(1,)\n      unique_indices=False\n"
    "    ] a bg\n"
    "  in (m, v, bb, bf) }";

START_TEST(trace_matches_jax) {
  ft_aval av[2] = {AV(FT_F32, 1, D(5)), AV(FT_I32, 1, D(4))};
  ft_jaxpr *j = ft_trace(C, f_update_add, NULL, 2, av);
  same_program(j, GOLDEN_AT);
  /* and it runs: x = 0..4, i = {0, 4, -1, 2} */
  float xv[5] = {0, 1, 2, 3, 4};
  int32_t iv[4] = {0, 4, -1, 2};
  ft_array *in[2] = {ARR(FT_F32, 1, D(5), xv), ARR(FT_I32, 1, D(4), iv)}, *out[4] = {0};
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 4, out), FT_OK);
  check_f64s(out[0], 5, F(1, 1, 3, 3, 6)); /* -1 is 4: index 4 gets two */
  check_f64s(out[1], 5, F(0, 1, 0, 3, 0));
  check_f64s(out[2], 5, F(0.5, 1, 2, 3, 4));
  check_f64s(out[3], 4, F(0, 4, 0, 2)); /* clip: -1 -> 0 */
  free_arrays(out, 4), free_arrays(in, 2);
  ft_jaxpr_free(j);
}
END_TEST

static int f_windows(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_reduce_window(in[0], FT_WINDOW_MAX, D(1, 2, 2, 1), D(1, 2, 2, 1), NULL, NULL, NULL);
  out[1] = ft_reduce_window(in[0], FT_WINDOW_SUM, D(1, 3, 3, 1), NULL, D(0, 0, 1, 1, 1, 1, 0, 0), NULL,
                            NULL);
  return 2;
}

static int f_conv(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_conv(in[0], in[1], NULL);
  return 1;
}

START_TEST(trace_windows_and_conv) {
  ft_aval a1 = AV(FT_F32, 4, D(1, 4, 4, 1));
  ft_jaxpr *j = ft_trace(C, f_windows, NULL, 1, &a1);
  same_program(j, "{ lambda ; b:f32[1,4,4,1]. let\n"
                  "    d:f32[1,2,2,1] = reduce_window_max[\n      base_dilation=(1, 1, 1, 1)\n"
                  "      padding=((0, 0), (0, 0), (0, 0), (0, 0))\n      window_dilation=(1, 1, 1, 1)\n"
                  "      window_dimensions=(1, 2, 2, 1)\n      window_strides=(1, 2, 2, 1)\n    ] b\n"
                  "    e:f32[1,4,4,1] = reduce_window_sum[\n      base_dilation=(1, 1, 1, 1)\n"
                  "      padding=((0, 0), (1, 1), (1, 1), (0, 0))\n      window_dilation=(1, 1, 1, 1)\n"
                  "      window_dimensions=(1, 3, 3, 1)\n      window_strides=(1, 1, 1, 1)\n    ] b\n"
                  "  in (d, e) }");
  ft_jaxpr_free(j);
  ft_aval a2[2] = {AV(FT_F32, 4, D(1, 2, 5, 5)), AV(FT_F32, 4, D(3, 2, 2, 2))};
  j = ft_trace(C, f_conv, NULL, 2, a2);
  same_program(j, "{ lambda ; a:f32[1,2,5,5] b:f32[3,2,2,2]. let\n"
                  "    c:f32[1,3,4,4] = conv_general_dilated[\n      batch_group_count=1\n"
                  "      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), "
                  "out_spec=(0, 1, 2, 3))\n      feature_group_count=1\n      lhs_dilation=(1, 1)\n"
                  "      out_sharding=None\n      padding=((0, 0), (0, 0))\n      precision=None\n"
                  "      preferred_element_type=None\n      rhs_dilation=(1, 1)\n      window_strides=(1, 1)\n"
                  "    ] a b\n  in (c,) }");
  ft_jaxpr_free(j);
}
END_TEST

typedef struct tcase_arg {
  int which;
} tcase_arg;

static int f_misc(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  int which = ((const tcase_arg *)user)->which;
  ft_gather_dims gd = {.n_collapsed = 1, .n_start = 1};
  switch (which) {
  case 0: out[0] = ft_take(in[0], in[1], -1); break; /* jnp.take default: fill */
  case 1: out[0] = ft_gather(in[0], in[1], NULL, NULL, FT_GATHER_CLIP, NULL); break;
  case 2: out[0] = ft_gather(in[0], in[1], &gd, D(1), (ft_gather_mode)7, NULL); break;
  case 3: out[0] = ft_take(in[0], ft_weak_f(t, 1.0), 0); break;
  default: {
    ft_conv_opts o = {.size = sizeof(ft_conv_opts), .feature_group_count = 3};
    out[0] = ft_conv(in[0], in[0], &o);
  }
  }
  return 1;
}

START_TEST(trace_take_and_misuse) {
  ft_aval av[2] = {AV(FT_F32, 1, D(5)), AV(FT_I32, 1, D(4))};
  tcase_arg arg = {0};
  ft_jaxpr *j = ft_trace(C, f_misc, &arg, 2, av);
  /* jnp.take(x, i, axis=-1): lax.gather binds the resolved fill value */
  same_program(j, "{ lambda ; a:f32[5] b:i32[4]. let\n"
                  "    d:bool[4] = lt b 0:i32[]\n    e:i32[4] = add b 5:i32[]\n"
                  "    f:i32[4] = select_n d b e\n"
                  "    g:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f\n"
                  "    c:f32[4] = gather[\n"
                  "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), "
                  "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), "
                  "start_indices_batching_dims=())\n"
                  "      fill_value=nan\n      indices_are_sorted=False\n"
                  "      mode=GatherScatterMode.FILL_OR_DROP\n      slice_sizes=(1,)\n"
                  "      unique_indices=False\n    ] a g\n  in (c,) }");
  float xv[5] = {0, 1, 2, 3, 4};
  int32_t iv[4] = {0, -1, 5, -6};
  ft_array *in[2] = {ARR(FT_F32, 1, D(5), xv), ARR(FT_I32, 1, D(4), iv)}, *out[1] = {0};
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, out), FT_OK);
  check_f64s(out[0], 4, F(0, 4, NAN, NAN));
  free_arrays(out, 1), free_arrays(in, 2);
  ft_jaxpr_free(j);
  const char *msgs[] = {NULL, "gather: dimension numbers or slice_sizes is NULL",
                        "gather: unknown mode 7", "take: indices must be an integer array",
                        "conv_general_dilated"};
  for (int w = 1; w <= 4; w++) {
    arg.which = w;
    ft_ctx_clear_error(C);
    ck_assert_ptr_null(ft_trace(C, f_misc, &arg, 2, av));
    ck_assert_msg(strstr(ft_ctx_error(C), msgs[w]) != NULL, "case %d: %s", w, ft_ctx_error(C));
  }
}
END_TEST

START_TEST(eval_errors) {
  /* a rule error names the equation; nothing leaks */
  float xv[3] = {1, 2, 3};
  ft_array *x = ARR(FT_F32, 1, D(3), xv), *out[2] = {0};
  char text[1024];
  snprintf(text, sizeof text,
           "{ lambda ; a:f32[3] b:i32[1,1]. let\n"
           "    c:f32[1] = gather[dimension_numbers=%s fill_value=None indices_are_sorted=False "
           "mode=GatherScatterMode.ONE_HOT slice_sizes=(1,) unique_indices=False] a b\n  in (c,) }",
           GDN1);
  int32_t iv[1] = {0};
  ft_array *in[2] = {x, ARR(FT_I32, 2, D(1, 1), iv)};
  ck_assert_int_eq(run(text, 2, in, 1, out), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "ONE_HOT"));
  ft_array_free(in[1]);
  ft_array_free(x);
  /* the coverage matrix shows a rule for each of them */
  static const ft_prim mine[] = {FT_P_TOP_K, FT_P_GATHER, FT_P_SCATTER, FT_P_SCATTER_ADD,
                                 FT_P_SCATTER_MUL, FT_P_SCATTER_MIN, FT_P_SCATTER_MAX,
                                 FT_P_REDUCE_WINDOW_SUM, FT_P_REDUCE_WINDOW_MAX,
                                 FT_P_REDUCE_WINDOW_MIN, FT_P_CONV_GENERAL_DILATED};
  for (size_t k = 0; k < FT_COUNTOF(mine); k++)
    ck_assert_msg(ft_eval_rule_status(mine[k]) == NULL, "no rule for %s", ft_prim_get(mine[k])->name);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("index");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, rt_setup, rt_teardown);
  tcase_add_test(t, gather_modes);
  tcase_add_test(t, gather_slices_and_batching);
  tcase_add_test(t, scatter_modes_and_duplicates);
  tcase_add_test(t, scatter_combiners);
  tcase_add_test(t, scatter_windows_batching_apply);
  tcase_add_test(t, reduce_window_cases);
  tcase_add_test(t, conv_cases);
  tcase_add_test(t, top_k_order);
  tcase_add_test(t, trace_matches_jax);
  tcase_add_test(t, trace_windows_and_conv);
  tcase_add_test(t, trace_take_and_misuse);
  tcase_add_test(t, eval_errors);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
