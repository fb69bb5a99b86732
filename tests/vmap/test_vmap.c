/* tests/vmap/test_vmap.c: the defining property of vmap for every
 * primitive the interpreter runs — vmap(f)(xs) is bit-identical to f on
 * each slice, stacked — under several in_axes each (mapped at 0, at other
 * axes, negative, unmapped), plus out_axes, nested vmap, control flow and
 * the error cases. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

#define N FT_VMAP_NONE

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

/* A program and the in_axes configurations it is checked under: each is a
 * comma-separated list ("0,N", "-1,1"), configurations separated by ';'.
 * lo/hi bound the random integers (indices). */
typedef struct vcase {
  const char *name, *text, *axes;
  int64_t lo, hi;
} vcase;

#define UNARY(op) \
  {op, "{ lambda ; a:f32[3,4]. let b:f32[3,4] = " op " a in (b,) }", "0;1;-1", 0, 0}
#define BINARY(op) \
  {op, "{ lambda ; a:f32[3,4] b:f32[3,4]. let c:f32[3,4] = " op " a b in (c,) }", \
   "0,0;1,0;0,N;N,-1;-2,1", 0, 0}
#define IBINARY(op) \
  {op, "{ lambda ; a:i32[3,4] b:i32[3,4]. let c:i32[3,4] = " op " a b in (c,) }", \
   "0,0;1,0;0,N;N,-1", -40, 40}
#define COMPARE(op) \
  {op, "{ lambda ; a:f32[3,4] b:f32[4]. let c:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4) sharding=None] b\n d:bool[3,4] = " op " a c in (d,) }", \
   "0,0;1,N;N,0;-1,-1", 0, 0}

static const vcase cases[] = {
    UNARY("neg"), UNARY("sign"), UNARY("floor"), UNARY("ceil"),
    {"round", "{ lambda ; a:f32[3,4]. let b:f32[3,4] = round[rounding_method=1] a in (b,) }", "0;1", 0, 0},
    {"is_finite", "{ lambda ; a:f32[3,4]. let b:bool[3,4] = is_finite a in (b,) }", "0;2", 0, 0},
    UNARY("exp"), UNARY("exp2"), UNARY("log"), UNARY("log1p"),
    UNARY("expm1"), UNARY("tanh"), UNARY("logistic"), UNARY("sin"), UNARY("cos"), UNARY("tan"),
    UNARY("asin"), UNARY("acos"), UNARY("atan"), UNARY("sinh"), UNARY("cosh"), UNARY("asinh"),
    UNARY("acosh"), UNARY("atanh"), UNARY("sqrt"), UNARY("rsqrt"), UNARY("cbrt"),
    UNARY("square"), UNARY("abs"), UNARY("erf"), UNARY("erfc"), UNARY("erf_inv"),
    UNARY("copy"), UNARY("copy_p"), UNARY("stop_gradient"),
    {"integer_pow", "{ lambda ; a:f32[3,4]. let b:f32[3,4] = integer_pow[y=3] a in (b,) }", "0;-1", 0, 0},
    {"reduce_precision", "{ lambda ; a:f32[3,4]. let b:f32[3,4] = reduce_precision[exponent_bits=5 mantissa_bits=10] a in (b,) }", "1", 0, 0},
    {"not", "{ lambda ; a:i32[3,4]. let b:i32[3,4] = not a in (b,) }", "0;1", -9, 9},
    BINARY("add"), BINARY("add_any"), BINARY("sub"), BINARY("mul"), BINARY("div"),
    BINARY("rem"), BINARY("pow"), BINARY("max"), BINARY("min"), BINARY("atan2"),
    BINARY("nextafter"), IBINARY("and"), IBINARY("or"), IBINARY("xor"),
    {"shift_left", "{ lambda ; a:i32[3,4] b:i32[3,4]. let c:i32[3,4] = shift_left a b in (c,) }", "0,0;1,N;N,0", 0, 31},
    {"shift_right_logical", "{ lambda ; a:i32[3,4] b:i32[3,4]. let c:i32[3,4] = shift_right_logical a b in (c,) }", "0,1;N,0", 0, 31},
    {"shift_right_arithmetic", "{ lambda ; a:i32[3,4] b:i32[3,4]. let c:i32[3,4] = shift_right_arithmetic a b in (c,) }", "1,1;0,N", 0, 31},
    {"add_scalar", "{ lambda ; a:f32[] b:f32[3]. let c:f32[3] = add a b in (c,) }", "0,0;0,N;N,0;0,-1", 0, 0},
    {"mul_literal", "{ lambda ; a:f32[3]. let c:f32[3] = mul a 2.5:f32[] in (c,) }", "0", 0, 0},
    COMPARE("eq"), COMPARE("ne"), COMPARE("lt"), COMPARE("le"), COMPARE("gt"), COMPARE("ge"),
    {"select_n", "{ lambda ; p:bool[3] a:f32[3] b:f32[3]. let c:f32[3] = select_n p a b in (c,) }", "0,0,0;0,N,N;N,0,N;N,N,0", 0, 0},
    {"select_n_scalar", "{ lambda ; p:bool[] a:f32[3] b:f32[3]. let c:f32[3] = select_n p a b in (c,) }", "0,0,0;0,N,N;N,0,N;0,1,N", 0, 0},
    {"select_n_i32", "{ lambda ; p:i32[2] a:f32[2] b:f32[2] c:f32[2]. let d:f32[2] = select_n p a b c in (d,) }", "0,N,0,1;N,0,N,N", 0, 2},
    /* unmapped scalar cases (a literal too) next to a mapped predicate or case:
     * select_n's cases cannot stay scalars (JAX's vmap of jnp.where(x > 0, x, 0.)) */
    {"select_n_literal_case", "{ lambda ; a:f32[]. let b:bool[] = gt a 0.0:f32[]\n c:f32[] = select_n b 0.0:f32[] a in (c,) }", "0", 0, 0},
    {"select_n_scalars", "{ lambda ; p:bool[] a:f32[] b:f32[]. let c:f32[] = select_n p a b in (c,) }", "0,0,0;0,N,N;N,0,N;N,N,0;0,N,0;0,0,N", 0, 0},
    {"select_n_mapped_scalar_pred", "{ lambda ; p:bool[] a:f32[3] b:f32[3]. let c:f32[3] = select_n p a b in (c,) }", "0,N,N;0,N,1;0,1,0", 0, 0},
    {"clamp", "{ lambda ; lo:f32[] x:f32[3] hi:f32[]. let y:f32[3] = clamp lo x hi in (y,) }", "0,0,0;N,0,N;0,N,N;N,N,0", 0, 0},
    {"clamp_scalars", "{ lambda ; lo:f32[] x:f32[] hi:f32[]. let y:f32[] = clamp lo x hi in (y,) }", "0,N,N;N,0,N;N,N,0;0,N,0", 0, 0},
    {"clamp_literal_operand", "{ lambda ; lo:f32[]. let y:f32[] = clamp lo 0.5:f32[] 2.0:f32[] in (y,) }", "0", 0, 0},
    {"clamp_arrays", "{ lambda ; lo:f32[3] x:f32[3] hi:f32[3]. let y:f32[3] = clamp lo x hi in (y,) }", "0,0,0;N,0,N;0,N,N", 0, 0},
    {"convert", "{ lambda ; a:f32[3,4]. let b:i32[3,4] = convert_element_type[new_dtype=int32 weak_type=False] a in (b,) }", "0;1", 0, 0},
    {"bitcast", "{ lambda ; a:f32[3,4]. let b:i32[3,4] = bitcast_convert_type[new_dtype=int32] a in (b,) }", "0;1;-1", 0, 0},
    {"broadcast_in_dim", "{ lambda ; a:f32[3]. let b:f32[2,3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3, 4) sharding=None] a in (b,) }", "0", 0, 0},
    {"broadcast_in_dim_size1", "{ lambda ; a:f32[3,1]. let b:f32[3,5] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(3, 5) sharding=None] a in (b,) }", "0;1;2", 0, 0},
    {"reshape", "{ lambda ; a:f32[3,4]. let b:f32[2,6] = reshape[dimensions=None new_sizes=(2, 6) sharding=None] a in (b,) }", "0;1;2", 0, 0},
    {"transpose", "{ lambda ; a:f32[2,3,4]. let b:f32[4,2,3] = transpose[permutation=(2, 0, 1)] a in (b,) }", "0;1;3;-2", 0, 0},
    {"squeeze", "{ lambda ; a:f32[1,3,1]. let b:f32[3] = squeeze[dimensions=(0, 2)] a in (b,) }", "0;1;2;3", 0, 0},
    {"expand_dims", "{ lambda ; a:f32[3]. let b:f32[1,3,1] = expand_dims[dimensions=(0, 2)] a in (b,) }", "0;1", 0, 0},
    {"rev", "{ lambda ; a:f32[3,4]. let b:f32[3,4] = rev[dimensions=(1,)] a in (b,) }", "0;1;2", 0, 0},
    {"slice", "{ lambda ; a:f32[5,6]. let b:f32[3,3] = slice[limit_indices=(4, 6) start_indices=(1, 0) strides=(1, 2)] a in (b,) }", "0;1;2", 0, 0},
    {"slice_nostride", "{ lambda ; a:f32[5,6]. let b:f32[2,4] = slice[limit_indices=(3, 5) start_indices=(1, 1) strides=None] a in (b,) }", "0;2", 0, 0},
    {"dynamic_slice", "{ lambda ; a:f32[5,4] b:i32[] c:i32[]. let j:f32[2,2] = dynamic_slice[slice_sizes=(2, 2)] a b c in (j,) }", "0,N,N;1,N,N;2,N,N;0,0,N;N,0,0;1,N,0", -2, 6},
    {"dynamic_update_slice", "{ lambda ; a:f32[5,4] u:f32[2,2] b:i32[] c:i32[]. let j:f32[5,4] = dynamic_update_slice a u b c in (j,) }", "0,N,N,N;N,0,N,N;1,-1,N,N;0,N,0,N;N,N,N,0", -2, 6},
    {"concatenate", "{ lambda ; a:f32[3,2] b:f32[3,4]. let c:f32[3,6] = concatenate[dimension=1] a b in (c,) }", "0,0;1,N;N,2;2,0", 0, 0},
    {"pad", "{ lambda ; a:f32[3,4] v:f32[]. let b:f32[8,3] = pad[padding_config=((1, 2, 1), (0, -1, 0))] a v in (b,) }", "0,N;1,N;2,N;0,0;N,0;2,0", 0, 0},
    {"split", "{ lambda ; a:f32[3,4]. let b:f32[3,1] c:f32[3,3] = split[axis=1 sizes=(1, 3)] a in (b, c) }", "0;1;2", 0, 0},
    {"reduce_sum", "{ lambda ; a:f32[3,40]. let b:f32[3] = reduce_sum[axes=(1,) out_sharding=None] a in (b,) }", "0;1;2", 0, 0},
    {"reduce_sum_all", "{ lambda ; a:f32[5,7]. let b:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a in (b,) }", "0;1;2", 0, 0},
    {"reduce_max", "{ lambda ; a:f32[3,4]. let b:f32[4] = reduce_max[axes=(0,)] a in (b,) }", "0;1;2", 0, 0},
    {"reduce_min", "{ lambda ; a:f32[3,4]. let b:f32[3] = reduce_min[axes=(1,)] a in (b,) }", "0;2", 0, 0},
    {"reduce_prod", "{ lambda ; a:f32[3,4]. let b:f32[] = reduce_prod[axes=(0, 1)] a in (b,) }", "1", 0, 0},
    {"reduce_and", "{ lambda ; a:bool[3,4]. let b:bool[3] = reduce_and[axes=(1,)] a in (b,) }", "0;1", 0, 0},
    {"reduce_or", "{ lambda ; a:bool[3,4]. let b:bool[4] = reduce_or[axes=(0,)] a in (b,) }", "0;2", 0, 0},
    {"reduce_sum_i32", "{ lambda ; a:i32[3,4]. let b:i32[3] = reduce_sum[axes=(1,) out_sharding=None] a in (b,) }", "0;1", -100, 100},
    {"argmax", "{ lambda ; a:f32[3,4]. let b:i32[3] = argmax[axes=(1,) index_dtype=int32] a in (b,) }", "0;1;2", 0, 0},
    {"argmin", "{ lambda ; a:f32[3,4]. let b:i32[4] = argmin[axes=(0,) index_dtype=int32] a in (b,) }", "0;1;2", 0, 0},
    {"cumsum", "{ lambda ; a:f32[3,5]. let b:f32[3,5] = cumsum[axis=1 reverse=False] a in (b,) }", "0;1;2", 0, 0},
    {"cumprod", "{ lambda ; a:f32[3,5]. let b:f32[3,5] = cumprod[axis=0 reverse=True] a in (b,) }", "0;1", 0, 0},
    {"cummax", "{ lambda ; a:f32[3,5]. let b:f32[3,5] = cummax[axis=1 reverse=False] a in (b,) }", "1;2", 0, 0},
    {"cummin", "{ lambda ; a:f32[3,5]. let b:f32[3,5] = cummin[axis=1 reverse=True] a in (b,) }", "0", 0, 0},
    {"cumlogsumexp", "{ lambda ; a:f32[3,5]. let b:f32[3,5] = cumlogsumexp[axis=1 reverse=False] a in (b,) }", "0;2", 0, 0},
    {"matmul", "{ lambda ; a:f32[33,17] b:f32[17,9]. let c:f32[33,9] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b in (c,) }", "0,0;0,N;N,0;1,2;2,N;N,1", 0, 0},
    {"matmul_f64", "{ lambda ; a:f64[7,5] b:f64[5,3]. let c:f64[7,3] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float64] a b in (c,) }", "0,N;N,1;1,0", 0, 0},
    {"dot_vec", "{ lambda ; a:f32[3] b:f32[4,3]. let c:f32[4] = dot_general[dimension_numbers=(([0], [1]), ([], [])) preferred_element_type=float32] a b in (c,) }", "0,N;N,0;0,1", 0, 0},
    {"dot_batch", "{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b in (c,) }", "0,0;1,N;N,3;3,1", 0, 0},
    {"dot_i32", "{ lambda ; a:i32[3,4] b:i32[4,5]. let c:i32[3,5] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=int32] a b in (c,) }", "0,N;N,0;1,N;N,2;0,0", -9, 9},
    {"dot_i32_batch", "{ lambda ; a:i32[2,3,4] b:i32[2,4]. let c:i32[2,3] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=int32] a b in (c,) }", "1,N;N,1;3,0;2,N", -9, 9},
    {"iota", "{ lambda ; a:i32[3]. let b:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None]\n c:i32[3] = add a b in (c,) }", "0", -5, 5},
    {"sort", "{ lambda ; a:f32[3,6]. let b:f32[3,6] = sort[dimension=1 is_stable=True num_keys=1] a in (b,) }", "0;1;2", 0, 0},
    {"sort_multi", "{ lambda ; a:f32[6] b:i32[6] c:f32[6]. let d:f32[6] e:i32[6] f:f32[6] = sort[dimension=0 is_stable=True num_keys=1] a b c in (d, e, f) }", "0,0,0;0,N,N;N,0,1;1,N,0", -3, 3},
    {"fft_c2c", "{ lambda ; a:c64[3,8]. let b:c64[3,8] = fft[fft_lengths=(8,) fft_type=0] a in (b,) }", "0;1;2", 0, 0},
    {"fft_rfft", "{ lambda ; a:f32[8]. let b:c64[5] = fft[fft_lengths=(8,) fft_type=2] a in (b,) }", "0;1", 0, 0},
};

/* Parses "0,N,-1" into axes (N = none); returns the count. */
static int parse_axes(const char *s, int *axes) {
  int n = 0;
  while (*s && *s != ';') {
    if (*s == ',') s++;
    if (*s == 'N') axes[n++] = N, s++;
    else axes[n++] = (int)strtol(s, (char **)&s, 10);
  }
  return n;
}

START_TEST(test_primitive) {
  const vcase *c = &cases[_i];
  const char *cfg = c->axes;
  int k = 0;
  while (cfg && *cfg) {
    int axes[16];
    parse_axes(cfg, axes);
    for (int64_t B = 1; B <= 3; B += 2) {
      int64_t n = vt_check(C, c->text, axes, NULL, B, 1234 + (uint64_t)k * 77 + (uint64_t)B,
                           c->lo, c->hi);
      ck_assert_msg(n > 0, "%s: nothing compared", c->name);
    }
    cfg = strchr(cfg, ';');
    if (cfg) cfg++;
    k++;
  }
}
END_TEST

/* out_axes: every position, negative ones, and none for unmapped outputs. */
START_TEST(test_out_axes) {
  const char *t = "{ lambda ; a:f32[3,4] b:f32[2]. let c:f32[3,4] = sin a\n d:f32[2] = cos b in (c, d) }";
  int in[2] = {1, N};
  int outs[][2] = {{0, N}, {1, 0}, {2, 1}, {-1, -1}, {-3, -2}};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
    ck_assert_int_eq(vt_check(C, t, in, outs[i], 3, 7 + i, 0, 0), 3 * (12 + 2));
}
END_TEST

/* Nothing mapped: axis_size gives the batch; every output is broadcast. */
START_TEST(test_axis_size_only) {
  ft_jaxpr *j = vt_parse(C, "{ lambda ; a:f32[2]. let b:f32[2] = exp a in (b,) }");
  int in[1] = {N}, out[1] = {1};
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), in, ft_jaxpr_num_outputs(j), out, 4);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  ft_aval av;
  ck_assert_int_eq(ft_jaxpr_output_aval(v, 0, &av), FT_OK);
  ck_assert_int_eq(av.rank, 2);
  ck_assert_int_eq(av.dims[0], 2);
  ck_assert_int_eq(av.dims[1], 4);
  ft_jaxpr_free(v);
  ck_assert_int_eq(vt_check(C, "{ lambda ; a:f32[2]. let b:f32[2] = exp a in (b,) }", in, out,
                            4, 3, 0, 0), 8);
  ck_assert_ptr_null(ft_vmap(C, j, ft_jaxpr_num_inputs(j), in, ft_jaxpr_num_outputs(j), out, -1));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "axis_size must be >= 0"));
  ft_aval b = {.dtype = FT_F32, .rank = 1, .dims = {2}};
  ck_assert_ptr_null(ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in, ft_jaxpr_num_outputs(j), out, ft_jaxpr_num_inputs(j), &b));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "no input is mapped"));
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(test_errors) {
  ft_jaxpr *j = vt_parse(C, "{ lambda ; a:f32[3,4] b:f32[5]. let c:f32[3,4] = sin a\n d:f32[5] = cos b in (c, d) }");
  struct {
    int in[2], out[2];
    const char *msg;
  } bad[] = {
      {{3, N}, {0, N}, "in_axes[0] = 3 is out of range"},
      {{-4, N}, {0, N}, "in_axes[0] = -4 is out of range"},
      {{N, 2}, {0, 0}, "in_axes[1] = 2 is out of range"},
      {{0, N}, {3, N}, "out_axes[0] = 3 is out of range"},
      {{0, N}, {-4, N}, "out_axes[0] = -4 is out of range"},
      {{0, N}, {N, N}, "output 0 depends on a mapped input"},
  };
  /* a while whose predicate is batched already (JAX's vmap printout) fails
   * closed instead of building an ill-typed loop */
  ft_jaxpr *w = vt_parse(C, "{ lambda ; a:i32[3]. let\n"
                            "  c:i32[3] d:i32[3] = while[body_jaxpr={ lambda ; e:i32[3] f:i32[3]. let\n"
                            "      g:i32[3] = add e 1:i32[] in (g, f) } body_nconsts=0\n"
                            "    cond_jaxpr={ lambda ; h:i32[3] i:i32[3]. let k:bool[3] = lt h i in (k,) }\n"
                            "    cond_nconsts=0] a a in (c,) }");
  int w0[1] = {0}, wo[1] = {0};
  ck_assert_ptr_null(ft_vmap(C, w, ft_jaxpr_num_inputs(w), w0, ft_jaxpr_num_outputs(w), wo, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "the predicate is batched already"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(w);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ft_ctx_clear_error(C);
    ck_assert_ptr_null(ft_vmap(C, j, ft_jaxpr_num_inputs(j), bad[i].in, ft_jaxpr_num_outputs(j), bad[i].out, 2));
    ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
    ck_assert_msg(strstr(ft_ctx_error(C), bad[i].msg), "case %zu: %s", i, ft_ctx_error(C));
  }
  /* sizes from the batched arguments' avals, as jax.vmap(f)(*args) */
  ft_aval a7 = {.dtype = FT_F32, .rank = 3, .dims = {7, 3, 4}};
  ft_aval a4 = {.dtype = FT_F32, .rank = 3, .dims = {3, 4, 7}};
  ft_aval b7 = {.dtype = FT_F32, .rank = 2, .dims = {7, 5}};
  ft_aval b6 = {.dtype = FT_F32, .rank = 2, .dims = {5, 6}};
  ft_aval b5 = {.dtype = FT_F32, .rank = 1, .dims = {5}};
  ft_aval ok[2] = {a7, b7}, incons[2] = {a7, b6}, wrong[2] = {a4, b7}, unm[2] = {a7, b7};
  int in00[2] = {0, 0}, in0m1[2] = {0, -1}, in0N[2] = {0, N};
  ft_jaxpr *v = ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in00, 0, NULL, ft_jaxpr_num_inputs(j), ok);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(v);
  ck_assert_ptr_null(ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in0m1, 0, NULL, ft_jaxpr_num_inputs(j), incons));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_msg(strstr(ft_ctx_error(C), "inconsistent sizes for the mapped axis: input 0 has "
                                        "size 7 along axis 0, input 1 has size 6 along axis 1"),
                "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in00, 0, NULL, ft_jaxpr_num_inputs(j), wrong));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_ptr_null(ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in0N, 0, NULL, ft_jaxpr_num_inputs(j), unm));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "unmapped input 1 is f32[7,5], expected f32[5]"));
  unm[1] = b5;
  v = ft_vmap_avals(C, j, ft_jaxpr_num_inputs(j), in0N, ft_jaxpr_num_outputs(j), (int[]){N, N}, ft_jaxpr_num_inputs(j), unm);
  ck_assert_ptr_null(v);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "out_axes"));
  ck_assert_ptr_null(ft_vmap(C, NULL, 0, NULL, 0, NULL, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ft_jaxpr_free(j);
}
END_TEST

/* vmap of vmap: the inner batch at axis 1 of the outer one's inputs. */
START_TEST(test_nested) {
  ft_jaxpr *j = vt_parse(C, "{ lambda ; a:f32[4,3] b:f32[3,5]. let c:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b\n d:f32[4] = reduce_sum[axes=(1,) out_sharding=None] c in (c, d) }");
  int in1[2] = {0, N};
  ft_jaxpr *v1 = ft_vmap(C, j, ft_jaxpr_num_inputs(j), in1, 0, NULL, 2); /* a:[2,4,3] */
  ck_assert_msg(v1 != NULL, "%s", ft_ctx_error(C));
  int in2[2] = {1, 0};
  uint64_t seed = 99;
  ft_aval a = {.dtype = FT_F32, .rank = 4, .dims = {2, 3, 4, 3}};
  ft_aval b = {.dtype = FT_F32, .rank = 3, .dims = {3, 3, 5}};
  ft_array *xs[2] = {vt_random(C, &a, &seed, 0, 0), vt_random(C, &b, &seed, 0, 0)};
  ck_assert_int_eq(vt_check_j(C, v1, in2, NULL, 3, xs), 3 * (2 * 4 * 5 + 2 * 4));
  /* and vmap(vmap(f)) equals looping twice: compare against f directly */
  ft_array_free(xs[0]);
  ft_array_free(xs[1]);
  ft_jaxpr_free(v1);
  ft_jaxpr_free(j);
}
END_TEST

/* cond: an unmapped index keeps the cond; a mapped one selects. */
static const char *COND =
    "{ lambda ; p:i32[] x:f32[3] y:f32[]. let\n"
    "    z:f32[3] w:f32[] = cond[\n"
    "      branches=(\n"
    "        { lambda ; a:f32[3] b:f32[]. let c:f32[3] = sin a in (c, b) }\n"
    "        { lambda ; a:f32[3] b:f32[]. let c:f32[3] = mul a b\n d:f32[] = neg b in (c, d) }\n"
    "        { lambda ; a:f32[3] b:f32[]. let c:f32[3] = cos a in (c, 1.0:f32[]) }\n"
    "      )\n"
    "    ] p x y\n"
    "  in (z, w) }";

START_TEST(test_cond) {
  const char *cfgs[] = {"N,0,N", "N,0,0", "N,N,0", "0,N,N", "0,0,N", "0,1,0"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    int axes[3];
    parse_axes(cfgs[i], axes);
    ck_assert_int_gt(vt_check(C, COND, axes, NULL, 5, 31 + i, -1, 3), 0);
  }
  /* the mapped index becomes select_n, no cond left */
  ft_jaxpr *j = vt_parse(C, COND);
  int axes[3] = {0, N, N};
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), axes, 0, NULL, 4);
  char *p = ft_jaxpr_print(C, v);
  ck_assert_ptr_null(strstr(p, "cond["));
  ck_assert_ptr_nonnull(strstr(p, "select_n"));
  ft_free(p);
  ft_jaxpr_free(v);
  int axes2[3] = {N, 0, N};
  v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), axes2, 0, NULL, 4);
  p = ft_jaxpr_print(C, v);
  ck_assert_ptr_nonnull(strstr(p, "cond["));
  ft_free(p);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
}
END_TEST

/* while: lanes stop at different steps (x doubles until it exceeds n). */
static const char *WHILE =
    "{ lambda ; n:f32[] x:f32[2] k:i32[]. let\n"
    "    y:f32[2] m:i32[] = while[\n"
    "      body_jaxpr={ lambda ; s:f32[] a:f32[2] c:i32[]. let\n"
    "          b:f32[2] = mul a s\n"
    "          d:i32[] = add c 1:i32[]\n"
    "        in (b, d) }\n"
    "      body_nconsts=1\n"
    "      cond_jaxpr={ lambda ; t:f32[] a:f32[2] c:i32[]. let\n"
    "          e:f32[] = reduce_max[axes=(0,)] a\n"
    "          f:bool[] = lt e t\n"
    "          g:bool[] = lt c 20:i32[]\n"
    "          h:bool[] = and f g\n"
    "        in (h,) }\n"
    "      cond_nconsts=1\n"
    "    ] n 2.0:f32[] x k\n"
    "  in (y, m) }";

START_TEST(test_while) {
  /* inputs: threshold n, start x (abs values > 0 matter), counter k */
  ft_jaxpr *j = vt_parse(C, WHILE);
  const char *cfgs[] = {"0,N,N", "N,0,N", "N,N,0", "0,1,0", "N,N,N"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    int axes[3];
    parse_axes(cfgs[i], axes);
    int64_t B = 5;
    float nv[5] = {1.0f, 10.0f, 100.0f, 3.0f, 1000.0f};
    float xv[10] = {0.5f, 0.25f, 1.0f, 0.1f, 2.0f, 3.0f, 0.01f, 0.02f, 0.3f, 0.2f};
    int32_t kv[5] = {0, 5, 18, 3, 19};
    ft_array *xs[3];
    int64_t d1[1] = {B}, d2[2] = {B, 2}, d2t[2] = {2, B};
    xs[0] = axes[0] == N ? ft_array_from_data(C, FT_F32, 0, NULL, &nv[2])
                         : ft_array_from_data(C, FT_F32, 1, d1, nv);
    xs[1] = axes[1] == N ? ft_array_from_data(C, FT_F32, 1, (int64_t[]){2}, xv)
                         : ft_array_from_data(C, FT_F32, 2, axes[1] == 0 ? d2 : d2t, xv);
    xs[2] = axes[2] == N ? ft_array_from_data(C, FT_I32, 0, NULL, &kv[1])
                         : ft_array_from_data(C, FT_I32, 1, d1, kv);
    ck_assert_int_gt(vt_check_j(C, j, axes, NULL, B, xs), 0);
    for (int k = 0; k < 3; k++) ft_array_free(xs[k]);
  }
  ft_jaxpr_free(j);
}
END_TEST

/* scan: carry and xs batched or not; ys stacked. */
static const char *SCAN =
    "{ lambda ; w:f32[] c0:f32[2] xs:f32[4,2]. let\n"
    "    c:f32[2] ys:f32[4,2] = scan[\n"
    "      jaxpr={ lambda ; a:f32[] b:f32[2] x:f32[2]. let\n"
    "          d:f32[2] = mul b a\n"
    "          e:f32[2] = add d x\n"
    "          f:f32[2] = sin e\n"
    "        in (e, f) }\n"
    "      length=4\n"
    "      linear=(False, False, False)\n"
    "      num_carry=1\n"
    "      num_consts=1\n"
    "      reverse=False\n"
    "      unroll=1\n"
    "      _split_transpose=False\n"
    "    ] w c0 xs\n"
    "  in (c, ys) }";

START_TEST(test_scan) {
  const char *cfgs[] = {"N,N,0", "N,N,1", "N,N,2", "0,N,N", "N,0,N", "0,1,-1"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    int axes[3];
    parse_axes(cfgs[i], axes);
    ck_assert_int_gt(vt_check(C, SCAN, axes, NULL, 3, 41 + i, 0, 0), 0);
  }
}
END_TEST

static const char *JIT =
    "{ lambda ; a:f32[3] b:f32[3]. let\n"
    "    c:f32[3] d:f32[3] = jit[\n"
    "      name=f\n"
    "      jaxpr={ lambda ; x:f32[3] y:f32[3]. let z:f32[3] = mul x y\n w:f32[3] = exp y in (z, w) }\n"
    "    ] a b\n"
    "  in (c, d) }";

START_TEST(test_jit) {
  const char *cfgs[] = {"0,0", "0,N", "N,0", "1,N"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    int axes[2];
    parse_axes(cfgs[i], axes);
    int outs[2] = {0, axes[1] == N ? N : 0};
    ck_assert_int_gt(vt_check(C, JIT, axes, outs, 3, 51 + i, 0, 0), 0);
  }
}
END_TEST

/* Programs JAX printed (fixtures), vmapped as a whole. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static const char *fixtures[] = {"mlp_loss", "layer_norm", "logsumexp_softmax", "softmax_xent",
                                 "rnn_scan", "newton_while", "cond_switch3", "grad_mlp_loss",
                                 "logreg_loss", "fori_loop_dynamic", "scan_cumsum", "dynamic_slice",
                                 "pad_negative_interior", "transpose_3d", "matmul_f32"};

START_TEST(test_fixture) {
  char path[512];
  snprintf(path, sizeof path, "%s/golden/%s.jaxpr", FT_FIXTURES, fixtures[_i]);
  char *text = slurp(path);
  ft_jaxpr *j = vt_parse(C, text);
  int n = ft_jaxpr_num_inputs(j);
  int axes[16];
  for (int i = 0; i < n; i++) axes[i] = (i % 2 == 0) ? 0 : N;
  uint64_t seed = 5 + (uint64_t)_i;
  ft_array *xs[16];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    if (axes[i] != N) av = vt_insert(&av, 0, 3);
    xs[i] = vt_random(C, &av, &seed, 0, 2);
  }
  ck_assert_int_gt(vt_check_j(C, j, axes, NULL, 3, xs), 0);
  for (int i = 0; i < n; i++) ft_array_free(xs[i]);
  ft_jaxpr_free(j);
  free(text);
}
END_TEST

/* Primitives the interpreter does not run yet: the batched program is
 * well-formed and has the batched shapes. */
START_TEST(test_structural) {
  const char *t[] = {
      "{ lambda ; a:f32[3,5]. let b:f32[3,2] c:i32[3,2] = top_k[k=2] a in (b, c) }",
      "{ lambda ; a:f32[6]. let b:f32[3] c:i32[3] = top_k[axis=0 k=3] a in (b, c) }",
  };
  const ft_aval want[] = {{.dtype = FT_F32, .rank = 3, .dims = {4, 3, 2}},
                          {.dtype = FT_F32, .rank = 2, .dims = {4, 3}}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ft_jaxpr *j = vt_parse(C, t[i]);
    for (int ax = 0; ax < 2; ax++) {
      int in[1] = {ax};
      ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), in, 0, NULL, 4);
      ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
      ft_aval o;
      ft_jaxpr_output_aval(v, 0, &o);
      ck_assert_int_eq(o.rank, want[i].rank);
      for (int k = 0; k < o.rank; k++) ck_assert_int_eq(o.dims[k], want[i].dims[k]);
      ft_jaxpr_free(v);
    }
    ft_jaxpr_free(j);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("vmap");
  TCase *tc = tcase_create("vmap");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_primitive, 0, (int)(sizeof cases / sizeof cases[0]));
  tcase_add_test(tc, test_out_axes);
  tcase_add_test(tc, test_axis_size_only);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_nested);
  tcase_add_test(tc, test_cond);
  tcase_add_test(tc, test_while);
  tcase_add_test(tc, test_scan);
  tcase_add_test(tc, test_jit);
  tcase_add_loop_test(tc, test_fixture, 0, (int)(sizeof fixtures / sizeof fixtures[0]));
  tcase_add_test(tc, test_structural);
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
