/* tests/shape/test_verify.c: ft_jaxpr_verify on hand-built jaxprs: a good
 * one passes; each bad one (use before definition, redefinition, wrong
 * declared aval, wrong param kind, wrong arity, a sub-jaxpr using an outer
 * var, ...) fails with a message naming the equation path and the problem. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "shape_util.h"

static ft_ctx *C;
static ft_jaxpr *J;
static ft_jb B;

static void setup(void) {
  C = ft_ctx_new(NULL);
  J = ft_jaxpr_new(NULL);
  ft_jb_init(&B, J);
}
static void teardown(void) {
  ft_jaxpr_free(J);
  ft_ctx_free(C);
}

static ft_var *V(const char *aval) {
  ft_aval a = AV(aval);
  return ft_var_new(J->arena, &a);
}

static void eqn(ft_prim p, int n_in, ft_var *const *in, int n_out, ft_var *const *out, const char *params) {
  ck_assert_ptr_nonnull(ft_jb_add(&B, p, n_in, in, n_out, out, PARAMS(J->arena, p, params)));
}

static void vars(int n_in, ft_var *const *in, int n_out, ft_var *const *out) {
  ck_assert(ft_jaxpr_set_vars(J, 0, NULL, n_in, in, n_out, out));
}

static void expect_error(ft_status st, const char *msg) {
  ft_status got = ft_jaxpr_verify(C, J);
  ck_assert_msg(got == st, "status %d, want %d: %s", got, st, ft_ctx_error(C));
  ck_assert_str_eq(ft_ctx_error(C), msg);
}

/* { a:f32[3] b:f32[3]. c = add a b; d = exp c; e = reduce_sum[axes=(0,)] d } */
START_TEST(good) {
  ft_var *a = V("f32[3]"), *b = V("f32[3]"), *c = V("f32[3]"), *d = V("f32[3]"), *e = V("f32[]");
  eqn(FT_P_ADD, 2, (ft_var *[]){a, b}, 1, &c, "");
  eqn(FT_P_EXP, 1, &c, 1, &d, "");
  eqn(FT_P_REDUCE_SUM, 1, &d, 1, &e, "axes=(0,)");
  ft_var *lit = ft_lit_new_float(J->arena, FT_F32, 2.0);
  vars(2, (ft_var *[]){a, b}, 2, (ft_var *[]){e, lit});
  ck_assert_int_eq(ft_jaxpr_verify(C, J), FT_OK);
}
END_TEST

START_TEST(use_before_def) {
  ft_var *a = V("f32[3]"), *c = V("f32[3]"), *d = V("f32[3]");
  eqn(FT_P_EXP, 1, &c, 1, &d, "");
  eqn(FT_P_NEG, 1, &a, 1, &c, "");
  vars(1, &a, 1, &d);
  expect_error(FT_ERR_TYPE, "eqn 0 (exp): operand 0 (f32[3]) is used before it is defined");
}
END_TEST

START_TEST(redefinition) {
  ft_var *a = V("f32[3]"), *c = V("f32[3]");
  eqn(FT_P_NEG, 1, &a, 1, &c, "");
  eqn(FT_P_EXP, 1, &a, 1, &c, "");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 1 (exp): output 0 (f32[3]) is already defined (each var is defined once)");
}
END_TEST

START_TEST(input_defined_twice) {
  ft_var *a = V("f32[3]");
  vars(2, (ft_var *[]){a, a}, 1, &a);
  expect_error(FT_ERR_TYPE, "invar 1 (f32[3]) is already defined (each var is defined once)");
}
END_TEST

START_TEST(output_redefines_input) {
  ft_var *a = V("f32[3]");
  eqn(FT_P_NEG, 1, &a, 1, &a, "");
  vars(1, &a, 1, &a);
  expect_error(FT_ERR_TYPE, "eqn 0 (neg): output 0 (f32[3]) is already defined (each var is defined once)");
}
END_TEST

START_TEST(wrong_declared_aval) {
  ft_var *a = V("f32[3]"), *b = V("f32[3]"), *c = V("f32[4]");
  eqn(FT_P_ADD, 2, (ft_var *[]){a, b}, 1, &c, "");
  vars(2, (ft_var *[]){a, b}, 1, &c);
  expect_error(FT_ERR_SHAPE, "eqn 0 (add): declared output 0 is f32[4] but the shape rule gives f32[3]");
}
END_TEST

START_TEST(wrong_declared_dtype) {
  ft_var *a = V("f32[3]"), *c = V("i32[3]");
  eqn(FT_P_EXP, 1, &a, 1, &c, "");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (exp): declared output 0 is i32[3] but the shape rule gives f32[3]");
}
END_TEST

START_TEST(shape_mismatch) {
  ft_var *a = V("f32[3]"), *b = V("f32[4]"), *x = V("f32[3]"), *y = V("f32[3]"), *z = V("f32[3]"),
         *c = V("f32[3]");
  eqn(FT_P_NEG, 1, &a, 1, &x, "");
  eqn(FT_P_NEG, 1, &x, 1, &y, "");
  eqn(FT_P_NEG, 1, &y, 1, &z, "");
  eqn(FT_P_ADD, 2, (ft_var *[]){z, b}, 1, &c, "");
  vars(2, (ft_var *[]){a, b}, 1, &c);
  expect_error(FT_ERR_SHAPE, "eqn 3 (add): operand shapes f32[3] and f32[4] do not match");
}
END_TEST

/* Each dim fits int64 but the element count overflows it (issue 18): the
 * verifier refuses the binder instead of letting ft_aval_size wrap. */
START_TEST(element_count_overflow) {
  ft_aval huge = {.dtype = FT_F32, .rank = 2, .dims = {INT64_C(4611686018427387904), 4}};
  ft_var *a = ft_var_new(J->arena, &huge), *c = ft_var_new(J->arena, &huge);
  eqn(FT_P_NEG, 1, &a, 1, &c, "");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_SHAPE,
               "invar 0 (f32[4611686018427387904,4]) has a negative dimension or more than 2^56 elements");
}
END_TEST

START_TEST(element_count_overflow_inside) {
  ft_aval huge = {.dtype = FT_F32, .rank = 3, .dims = {0, INT64_C(1) << 40, INT64_C(1) << 40}};
  ft_var *a = V("f32[]"), *c = ft_var_new(J->arena, &huge);
  eqn(FT_P_BROADCAST_IN_DIM, 1, &a, 1, &c,
      "broadcast_dimensions=() shape=(0, 1099511627776, 1099511627776) sharding=None");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_SHAPE, "eqn 0 (broadcast_in_dim): result 0 would be "
               "f32[0,1099511627776,1099511627776], more than 2^56 elements");
}
END_TEST

START_TEST(wrong_param_kind) {
  ft_var *a = V("f32[3]"), *c = V("f32[]");
  eqn(FT_P_REDUCE_SUM, 1, &a, 1, &c, "axes=0");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (reduce_sum): param axes must be a tuple of ints");
}
END_TEST

START_TEST(missing_param) {
  ft_var *a = V("f32[3]"), *c = V("f32[]");
  eqn(FT_P_REDUCE_SUM, 1, &a, 1, &c, "");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (reduce_sum): missing required param axes");
}
END_TEST

START_TEST(wrong_arity) {
  ft_var *a = V("f32[3]"), *b = V("f32[3]"), *c = V("f32[3]");
  eqn(FT_P_NEG, 2, (ft_var *[]){a, b}, 1, &c, "");
  vars(2, (ft_var *[]){a, b}, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (neg): expects 1 operand, got 2");
}
END_TEST

START_TEST(wrong_output_count) {
  ft_var *a = V("f32[6]"), *b = V("f32[3]"), *c = V("f32[3]");
  eqn(FT_P_SPLIT, 1, &a, 1, &b, "axis=0 sizes=(3, 3)");
  vars(1, &a, 2, (ft_var *[]){b, c});
  expect_error(FT_ERR_TYPE, "eqn 0 (split): declares 1 outputs but the shape rule gives 2");
}
END_TEST

START_TEST(literal_must_be_scalar) {
  ft_var *a = V("f32[3]"), *c = V("f32[3]");
  ft_var *lit = ft_lit_new_float(J->arena, FT_F32, 1.0);
  lit->aval = AV("f32[3]");
  eqn(FT_P_ADD, 2, (ft_var *[]){a, lit}, 1, &c, "");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (add): operand 1 is a literal of non-scalar aval f32[3]");
}
END_TEST

START_TEST(undefined_output) {
  ft_var *a = V("f32[3]"), *c = V("f32[3]");
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "output 0 (f32[3]) is used before it is defined");
}
END_TEST

/* A sub-jaxpr (jit) whose equation uses the outer invar a: closed scoping. */
START_TEST(sub_jaxpr_uses_outer_var) {
  ft_var *a = V("f32[3]"), *c = V("f32[3]");
  ft_jaxpr *sub = ft_jaxpr_new(J->arena);
  ft_jb sb;
  ft_jb_init(&sb, sub);
  ft_var *x = V("f32[3]"), *y = V("f32[3]");
  ck_assert_ptr_nonnull(ft_jb_add(&sb, FT_P_SIN, 1, &a, 1, &y, NULL));
  ck_assert(ft_jaxpr_set_vars(sub, 0, NULL, 1, &x, 1, &y));
  ft_pval *ps = PARAMS(J->arena, FT_P_JIT, "name=f");
  ps[ft_prim_param_index(FT_P_JIT, "jaxpr")] = ft_pv_jaxpr(sub);
  ck_assert_ptr_nonnull(ft_jb_add(&B, FT_P_JIT, 1, &a, 1, &c, ps));
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (jit): jaxpr: eqn 0 (sin): operand 0 (f32[3]) is defined in another "
               "jaxpr; sub-jaxprs are closed and may use only their own vars");
}
END_TEST

/* Errors deep inside control flow name the path: cond branch 1, eqn 0. */
START_TEST(nested_error_path) {
  ft_var *ix = V("i32[]"), *a = V("f32[3]"), *c = V("f32[3]");
  ft_jaxpr *br[2];
  for (int k = 0; k < 2; k++) {
    br[k] = ft_jaxpr_new(J->arena);
    ft_jb sb;
    ft_jb_init(&sb, br[k]);
    ft_var *x = V("f32[3]"), *y = V("f32[3]"), *q = V(k ? "f32[4]" : "f32[3]");
    ft_var *lit = ft_lit_new_float(J->arena, FT_F32, 1.0);
    if (k) {
      ck_assert_ptr_nonnull(ft_jb_add(&sb, FT_P_BROADCAST_IN_DIM, 1, &lit, 1, &q,
                                      PARAMS(J->arena, FT_P_BROADCAST_IN_DIM, "shape=(4,) broadcast_dimensions=()")));
      ck_assert_ptr_nonnull(ft_jb_add(&sb, FT_P_ADD, 2, (ft_var *[]){x, q}, 1, &y, NULL));
    } else {
      ck_assert_ptr_nonnull(ft_jb_add(&sb, FT_P_ADD, 2, (ft_var *[]){x, lit}, 1, &y, NULL));
    }
    ck_assert(ft_jaxpr_set_vars(br[k], 0, NULL, 1, &x, 1, &y));
  }
  ft_pval *ps = ft_params_default(J->arena, FT_P_COND);
  ft_pval t = ft_pv_tuple(J->arena, 2);
  t.u.items[0] = ft_pv_jaxpr(br[0]);
  t.u.items[1] = ft_pv_jaxpr(br[1]);
  ps[ft_prim_param_index(FT_P_COND, "branches")] = t;
  ck_assert_ptr_nonnull(ft_jb_add(&B, FT_P_COND, 2, (ft_var *[]){ix, a}, 1, &c, ps));
  vars(2, (ft_var *[]){ix, a}, 1, &c);
  expect_error(FT_ERR_SHAPE, "eqn 0 (cond): branch 1: eqn 1 (add): operand shapes f32[3] and f32[4] do not match");
}
END_TEST

/* A while whose cond returns f32[]: the rule's error, with the path. */
START_TEST(while_cond_not_bool) {
  ft_var *a = V("f32[]"), *c = V("f32[]");
  ft_jaxpr *cj = ft_jaxpr_new(J->arena), *bj = ft_jaxpr_new(J->arena);
  ft_var *x = V("f32[]"), *y = V("f32[]"), *z = V("f32[]");
  ft_jb sb;
  ft_jb_init(&sb, bj);
  ck_assert_ptr_nonnull(ft_jb_add(&sb, FT_P_NEG, 1, &y, 1, &z, NULL));
  ck_assert(ft_jaxpr_set_vars(cj, 0, NULL, 1, &x, 1, &x));
  ck_assert(ft_jaxpr_set_vars(bj, 0, NULL, 1, &y, 1, &z));
  ft_pval *ps = PARAMS(J->arena, FT_P_WHILE, "cond_nconsts=0 body_nconsts=0");
  ps[ft_prim_param_index(FT_P_WHILE, "cond_jaxpr")] = ft_pv_jaxpr(cj);
  ps[ft_prim_param_index(FT_P_WHILE, "body_jaxpr")] = ft_pv_jaxpr(bj);
  ck_assert_ptr_nonnull(ft_jb_add(&B, FT_P_WHILE, 1, &a, 1, &c, ps));
  vars(1, &a, 1, &c);
  expect_error(FT_ERR_TYPE, "eqn 0 (while): cond_jaxpr must return one bool[], got 1 outputs, the first f32[]");
}
END_TEST

/* JAX's vmap of a while_loop whose predicate depends on the mapped values
 * prints cond_jaxpr returning bool[3] (JAX 0.10.2, verbatim): it verifies.
 * A batched predicate whose shape does not lead a carry's does not. */
START_TEST(while_batched_predicate) {
  static const char ok[] =
      "{ lambda ; a:f32[3,2]. let\n"
      "    b:i32[3] = broadcast_in_dim 0:i32[]\n"
      "    c:i32[3] d:f32[3,2] = while[\n"
      "      body_jaxpr={ lambda ; e:i32[3] f:f32[3,2]. let\n"
      "          g:i32[3] = add e 1:i32[]\n"
      "          h:f32[3,2] = mul f 2.0:f32[]\n"
      "        in (g, h) }\n"
      "      body_nconsts=0\n"
      "      cond_jaxpr={ lambda ; i:i32[3] j:f32[3,2]. let\n"
      "          k:f32[3,1] = slice[\n"
      "            limit_indices=(3, 1)\n"
      "            start_indices=(0, 0)\n"
      "            strides=None\n"
      "          ] j\n"
      "          l:f32[3] = squeeze[dimensions=(1,)] k\n"
      "          m:bool[3] = lt l 10.0:f32[]\n"
      "        in (m,) }\n"
      "      cond_nconsts=0\n"
      "    ] b a\n"
      "  in (c, d) }\n";
  ft_jaxpr *j = ft_parse(C, ok, sizeof ok - 1, "ok");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  static const char bad[] =
      "{ lambda ; a:i32[3] x:f32[2,3]. let\n"
      "    b:i32[3] y:f32[2,3] = while[\n"
      "      body_jaxpr={ lambda ; e:i32[3] f:f32[2,3]. let g:i32[3] = add e 1:i32[] in (g, f) }\n"
      "      body_nconsts=0\n"
      "      cond_jaxpr={ lambda ; i:i32[3] k:f32[2,3]. let m:bool[3] = lt i 5:i32[] in (m,) }\n"
      "      cond_nconsts=0\n"
      "    ] a x\n"
      "  in (b, y) }\n";
  ck_assert_ptr_null(ft_parse(C, bad, sizeof bad - 1, "bad"));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "bad: eqn 0 (while): cond_jaxpr returns the batched predicate bool[3] "
                                    "but carry 1 is f32[2,3] (a batched predicate's shape must lead "
                                    "every carry's)");
}
END_TEST

/* Every JAX 0.10.2 printout in fixtures/golden parses and verifies (with
 * hoisted `let f = {...} in` sub-jaxprs shared by several equations). */
START_TEST(golden_programs_verify) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/golden", FT_FIXTURES);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int n = 0;
  char *buf = malloc(1 << 20);
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 6, ".jaxpr")) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t k = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[k] = 0;
    ft_jaxpr *j = ft_parse(C, buf, k, e->d_name);
    ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
    ck_assert_msg(ft_jaxpr_verify(C, j) == FT_OK, "%s", ft_ctx_error(C));
    ft_jaxpr_free(j);
    n++;
  }
  free(buf);
  closedir(d);
  ck_assert_int_ge(n, 40);
}
END_TEST

START_TEST(null_jaxpr) {
  ck_assert_int_eq(ft_jaxpr_verify(C, NULL), FT_ERR_INVALID_ARG);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("verify");
  TCase *tc = tcase_create("verify");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, good);
  tcase_add_test(tc, use_before_def);
  tcase_add_test(tc, redefinition);
  tcase_add_test(tc, input_defined_twice);
  tcase_add_test(tc, output_redefines_input);
  tcase_add_test(tc, wrong_declared_aval);
  tcase_add_test(tc, wrong_declared_dtype);
  tcase_add_test(tc, shape_mismatch);
  tcase_add_test(tc, wrong_param_kind);
  tcase_add_test(tc, missing_param);
  tcase_add_test(tc, wrong_arity);
  tcase_add_test(tc, wrong_output_count);
  tcase_add_test(tc, literal_must_be_scalar);
  tcase_add_test(tc, undefined_output);
  tcase_add_test(tc, sub_jaxpr_uses_outer_var);
  tcase_add_test(tc, nested_error_path);
  tcase_add_test(tc, while_cond_not_bool);
  tcase_add_test(tc, while_batched_predicate);
  tcase_add_test(tc, null_jaxpr);
  tcase_add_test(tc, element_count_overflow);
  tcase_add_test(tc, element_count_overflow_inside);
  tcase_add_test(tc, golden_programs_verify);
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
