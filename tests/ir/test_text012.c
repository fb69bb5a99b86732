/* tests/ir/test_text012.c: corners of JAX 0.12's text that earlier
 * printouts did not have (issue 16): FlatTree leaf counts of scan's
 * ft_in/ft_out under nested RightsOnly filters, the float0 literal
 * `(b'',):float0[]` and float0 .npy files, and the order in which shared
 * sub-jaxprs are named. Expected texts and bytes are JAX 0.12.0.1's. */
#include <check.h>
#include <string.h>

#include "ir/ir.h"

static ft_ctx *ctx;
static void setup(void) { ctx = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(ctx); }

static int64_t leaves(const char *s) {
  ft_pval v = {.tag = FT_PV_OPAQUE, .s = (char *)s};
  return ft_flattree_leaves(&v);
}

/* RightsOnly(t)'s leaves are the payloads of t's Right leaves
 * (jax/_src/flattree.py FTFiltered); a nested RightsOnly filters those
 * payloads again. */
START_TEST(flattree_nested_rights_only) {
  ck_assert_int_eq(leaves("RightsOnly(Right(None))"), 1);
  ck_assert_int_eq(leaves("RightsOnly(Left(None))"), 0);
  ck_assert_int_eq(leaves("RightsOnly(RightsOnly(Right(Left(None))))"), 0);
  ck_assert_int_eq(leaves("RightsOnly(RightsOnly(Right(Right(None))))"), 1);
  ck_assert_int_eq(leaves("RightsOnly(RightsOnly(Left(None)))"), 0);
  ck_assert_int_eq(leaves("(RightsOnly(Right(None)), RightsOnly(RightsOnly(Right(Left(None)))))"), 1);
  ck_assert_int_eq(leaves("RightsOnly((Right(None), Left(None), Right(None)))"), 2);
  ck_assert_int_eq(leaves("RightsOnly(Pytree(vals=[Right(None), Left(None)], tree=PyTreeDef([*, *])))"), 1);
  ck_assert_int_eq(leaves("Pytree(vals=[None, None], tree=PyTreeDef(([*], [*])))"), 2);
  ck_assert_int_eq(leaves("((None, None), (Static(3), None))"), 3);
  ck_assert_int_eq(leaves("RightsOnly(Right(None)"), -1);
  ck_assert_int_eq(leaves("RightsOnly(Sideways(None))"), -1); /* a filtered leaf is an Either */
}
END_TEST

/* JAX's jvp of a bool-flag scan (fixtures/loops/loop_bool_flag_carry_f32):
 * ft_out's ys group is (Right(None),) plus a doubly filtered Right(Left):
 * one ys leaf, which is what the body returns. */
static const char BOOL_FLAG_JVP[] =
    "let jaxpr = { lambda ; a:bool[] b:f32[] c:f32[] d:f32[] e:f32[]. let\n"
    "    f:f32[] = mul b d\n"
    "    g:f32[] = mul c d\n"
    "    h:f32[] = mul b e\n"
    "    i:f32[] = add_any g h\n"
    "    j:f32[] = select_n a f b\n"
    "    k:f32[] = select_n a i c\n"
    "    l:bool[] = not a\n"
    "  in (l, j, k, a) } in\n"
    "{ lambda ; m:f32[3] n:f32[3]. let\n"
    "    _:bool[] o:f32[] p:f32[] q:bool[3] = scan[\n"
    "      ft_in=(((), ()), ((None, None), (RightsOnly(Left(None)), RightsOnly(Right(None)))), ((None,), (RightsOnly(Right(None)),)))\n"
    "      ft_out=(((None, None), (RightsOnly(Left(None)), RightsOnly(Right(None)))), ((RightsOnly(Right(None)),), (RightsOnly(RightsOnly(Right(Left(None)))),)))\n"
    "      jaxpr=jaxpr\n"
    "      length=3\n"
    "      reverse=False\n"
    "      unroll=1\n"
    "    ] True:bool[] 1.0:f32[] 0.0:f32[] m n\n"
    "  in (o, p, q) }";

/* How JAX prints it: a body of fewer than 11 equations used once is inline. */
static const char BOOL_FLAG_JVP_PRINTED[] =
    "{ lambda ; a:f32[3] b:f32[3]. let\n"
    "    _:bool[] c:f32[] d:f32[] e:bool[3] = scan[\n"
    "      ft_in=(((), ()), ((None, None), (RightsOnly(Left(None)), RightsOnly(Right(None)))), ((None,), (RightsOnly(Right(None)),)))\n"
    "      ft_out=(((None, None), (RightsOnly(Left(None)), RightsOnly(Right(None)))), ((RightsOnly(Right(None)),), (RightsOnly(RightsOnly(Right(Left(None)))),)))\n"
    "      jaxpr={ lambda ; f:bool[] g:f32[] h:f32[] i:f32[] j:f32[]. let\n"
    "          k:f32[] = mul g i\n"
    "          l:f32[] = mul h i\n"
    "          m:f32[] = mul g j\n"
    "          n:f32[] = add_any l m\n"
    "          o:f32[] = select_n f k g\n"
    "          p:f32[] = select_n f n h\n"
    "          q:bool[] = not f\n"
    "        in (q, o, p, f) }\n"
    "      length=3\n"
    "      reverse=False\n"
    "      unroll=1\n"
    "    ] True:bool[] 1.0:f32[] 0.0:f32[] a b\n"
    "  in (c, d, e) }";

static ft_array *vec3(float a, float b, float c) {
  int64_t n = 3;
  ft_array *x = ft_array_new(ctx, FT_F32, 1, &n);
  float *p = ft_array_data_mut(x);
  p[0] = a, p[1] = b, p[2] = c;
  return x;
}

START_TEST(scan_nested_rights_only_parses_prints_runs) {
  ft_jaxpr *j = ft_parse(ctx, BOOL_FLAG_JVP, strlen(BOOL_FLAG_JVP), "bool_flag_jvp");
  ck_assert_msg(j, "%s", ft_ctx_error(ctx));
  char *s = ft_jaxpr_print(ctx, j);
  ck_assert_str_eq(s, BOOL_FLAG_JVP_PRINTED);
  free(s);
  /* carry (flag, y, dy): y *= x where the flag is False (select_n's
   * second case is for True: keep y), the flag flips each step */
  ft_array *in[2] = {vec3(2, 3, 5), vec3(1, 10, 100)}, *out[3] = {0};
  ck_assert_int_eq(ft_eval(ctx, j, 2, (const ft_array *const *)in, 3, out), FT_OK);
  ck_assert_float_eq(*(const float *)ft_array_data(out[0]), 3.0f);  /* kept, 1*3, kept */
  ck_assert_float_eq(*(const float *)ft_array_data(out[1]), 10.0f); /* d(1*x1) = dx1 */
  const bool *q = ft_array_data(out[2]);
  ck_assert(q[0] && !q[1] && q[2]);
  for (int k = 0; k < 3; k++) ft_array_free(out[k]);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(j);
}
END_TEST

/* JAX's jvp of jnp.less (fixtures/sweep/sweep_jnp_less_f32.jvp.jaxpr): the
 * tangent of a bool output is float0 zeros, broadcast from the float0
 * scalar literal. */
static const char LESS_JVP[] =
    "{ lambda ; a:f32[3,4] b:f32[3,4] c:f32[3,4] d:f32[3,4]. let\n"
    "    e:bool[3,4] = lt a b\n"
    "    f:float0[3,4] = broadcast_in_dim (b'',):float0[]\n"
    "  in (e, f) }";

START_TEST(float0_literal) {
  ft_jaxpr *j = ft_parse(ctx, LESS_JVP, strlen(LESS_JVP), "less_jvp");
  ck_assert_msg(j, "%s", ft_ctx_error(ctx));
  char *s = ft_jaxpr_print(ctx, j);
  ck_assert_str_eq(s, LESS_JVP);
  free(s);
  int64_t d[2] = {3, 4};
  ft_array *in[4], *out[2] = {0};
  for (int k = 0; k < 4; k++) {
    in[k] = ft_array_new(ctx, FT_F32, 2, d);
    float *p = ft_array_data_mut(in[k]);
    for (int i = 0; i < 12; i++) p[i] = (float)(k ? i % 5 : i % 3);
  }
  ck_assert_int_eq(ft_eval(ctx, j, 4, (const ft_array *const *)in, 2, out), FT_OK);
  ft_aval av = ft_array_aval(out[1]);
  ck_assert_int_eq(av.dtype, FT_FLOAT0);
  ck_assert_int_eq(av.rank, 2);
  ck_assert_int_eq(av.dims[0], 3);
  ck_assert_int_eq(av.dims[1], 4);
  const bool *e = ft_array_data(out[0]);
  for (int i = 0; i < 12; i++) ck_assert_int_eq(e[i], i % 3 < i % 5);
  /* strict: a float0 result is a routine step with nothing to compute */
  ft_fn *fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_disk_cache = true});
  ck_assert_msg(fn, "%s", ft_ctx_error(ctx));
  ft_array *jo[2] = {0};
  ck_assert_int_eq(ft_call(fn, 4, (const ft_array *const *)in, 2, jo), FT_OK);
  ck_assert_int_eq(ft_array_aval(jo[1]).dtype, FT_FLOAT0);
  ck_assert_int_eq(memcmp(ft_array_data(jo[0]), e, 12), 0);
  for (int k = 0; k < 2; k++) ft_array_free(out[k]), ft_array_free(jo[k]);
  for (int k = 0; k < 4; k++) ft_array_free(in[k]);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  /* the literal belongs to float0 alone, and float0 has no other literal */
  const char *bad[] = {"{ lambda ; . let a:f32[] = neg (b'',):f32[] in (a,) }",
                       "{ lambda ; . let a:float0[2] = broadcast_in_dim[broadcast_dimensions=() "
                       "shape=(2,) sharding=None] 0.0:float0[] in (a,) }"};
  const char *why[] = {"(b'',) is a float0 literal, not f32", "a float0 literal must be (b'',)"};
  for (int k = 0; k < 2; k++) {
    ck_assert_ptr_null(ft_parse(ctx, bad[k], strlen(bad[k]), "bad"));
    ck_assert_msg(strstr(ft_ctx_error(ctx), why[k]), "%s", ft_ctx_error(ctx));
  }
}
END_TEST

/* np.save of a float0[3,4] array (jax.dtypes.float0), byte for byte. */
static const char FLOAT0_NPY[] =
    "\x93NUMPY\x01\x00v\x00{'descr': [('float0', '|V0')], 'fortran_order': False, 'shape': (3, 4), }"
    "                                            \n";

START_TEST(float0_npy) {
  ck_assert_int_eq(sizeof FLOAT0_NPY - 1, 128);
  ft_array *a = ft_npy_read_mem(ctx, FLOAT0_NPY, sizeof FLOAT0_NPY - 1, "f0.npy");
  ck_assert_msg(a, "%s", ft_ctx_error(ctx));
  ft_aval av = ft_array_aval(a);
  ck_assert_int_eq(av.dtype, FT_FLOAT0);
  ck_assert_int_eq(av.rank, 2);
  ck_assert_int_eq(av.dims[0] * 10 + av.dims[1], 34);
  void *buf = NULL;
  size_t len = 0;
  ck_assert_int_eq(ft_npy_write_mem(ctx, a, &buf, &len), FT_OK);
  ck_assert_int_eq(len, 128);
  ck_assert_int_eq(memcmp(buf, FLOAT0_NPY, len), 0);
  free(buf);
  ft_array_free(a);
  /* a float0 file with data, and other structured dtypes, are refused */
  char more[129];
  memcpy(more, FLOAT0_NPY, 128), more[128] = 0;
  ck_assert_ptr_null(ft_npy_read_mem(ctx, more, 129, "f0.npy"));
  ck_assert_msg(strstr(ft_ctx_error(ctx), "the data is 1 bytes, but the shape needs 0"), "%s", ft_ctx_error(ctx));
  char other[129];
  memcpy(other, FLOAT0_NPY, 129);
  memcpy(strstr(other + 10, "float0"), "floatX", 6); /* after the header length's NUL */
  ck_assert_ptr_null(ft_npy_read_mem(ctx, other, 128, "s.npy"));
  ck_assert_msg(strstr(ft_ctx_error(ctx), "structured dtypes are not supported"), "%s", ft_ctx_error(ctx));
}
END_TEST

/* jax.make_jaxpr of switch(e, [br, br], x) then a jit f called twice, as
 * JAX 0.12.0.1 prints it: the shared branch is hoisted before f, because
 * JAX counts jaxprs in the order it first meets them (a Counter filled
 * breadth-first), whether or not an equation names them. */
static const char HOIST_ORDER[] =
    "let jaxpr = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n"
    "let f = { lambda ; c:f32[]. let d:f32[] = cos c in (d,) } in\n"
    "{ lambda ; e:i32[] g:f32[]. let\n"
    "    h:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
    "    i:i32[] = clamp 0:i32[] h 1:i32[]\n"
    "    j:f32[] = cond[branches=(jaxpr jaxpr)] i g\n"
    "    k:f32[] = jit[name=f jaxpr=f] j\n"
    "    l:f32[] = jit[name=f jaxpr=f] k\n"
    "  in (l,) }";

START_TEST(hoisted_in_jax_counter_order) {
  ft_jaxpr *j = ft_parse(ctx, HOIST_ORDER, strlen(HOIST_ORDER), "hoist_order");
  ck_assert_msg(j, "%s", ft_ctx_error(ctx));
  char *s = ft_jaxpr_print(ctx, j);
  ck_assert_str_eq(s, HOIST_ORDER);
  free(s);
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *su = suite_create("text012");
  TCase *t = tcase_create("text012");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 60);
  tcase_add_test(t, flattree_nested_rights_only);
  tcase_add_test(t, scan_nested_rights_only_parses_prints_runs);
  tcase_add_test(t, float0_literal);
  tcase_add_test(t, float0_npy);
  tcase_add_test(t, hoisted_in_jax_counter_order);
  suite_add_tcase(su, t);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
