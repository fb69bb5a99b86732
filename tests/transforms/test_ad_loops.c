/* tests/transforms/test_ad_loops.c: reverse mode through loops and
 * jax.checkpoint (issue 19).
 *  - ft_grad of every f64 loop program JAX printed (fixtures/loops/
 *    x64_loop_*_f64.jaxpr, from tools/oracle/gen_loops.py: sequence
 *    models, integrators, fixed-step optimizers, buffer writes, pytree
 *    carries with integer counters and flags, cond/switch in bodies,
 *    nested scans, checkpoint) against f64 central differences, and
 *    ft_jvp against <grad, v> (ad_util.h's grad_check_at); JAX's own
 *    values are checked by tests/conformance;
 *  - the backward pass is O(T): grad of a 10-step and of a 1000-step RNN
 *    have the same number of equations (sub-jaxprs included);
 *  - a carry initialized with zeros (an input that is not differentiated)
 *    transposes as linear;
 *  - remat2 policies: what the known side saves and what the backward
 *    pass recomputes, for None, dots_saveable and everything_saveable; an
 *    unsupported policy is refused naming it;
 *  - while_loop: reverse mode refused with JAX's words. */
#include <dirent.h>

#include "ad_util.h"

/* JAX refuses reverse mode through these too; lotka_volterra's printout
 * uses JAX 0.12's new `stack` primitive, not in the table yet (issue 17;
 * tests/conformance/conf_known.c lists it). */
static const char *const NO_GRAD[] = {"while_", "fori_dynamic_bounds", "lotka_volterra"};

static bool grad_defined(const char *name) {
  for (size_t k = 0; k < sizeof NO_GRAD / sizeof NO_GRAD[0]; k++)
    if (strstr(name, NO_GRAD[k])) return false;
  return true;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = 0;
  fclose(f);
  return b;
}

START_TEST(grad_of_jax_loop_programs) {
  char dir[1024], path[2048];
  snprintf(dir, sizeof dir, "%s/loops", FT_FIXTURES);
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  struct dirent *de;
  int checked = 0;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    size_t len = strlen(n);
    /* forward programs only: x64_loop_<name>_f64.jaxpr */
    if (strncmp(n, "x64_loop_", 9) || len < 10 || strcmp(n + len - 10, "_f64.jaxpr")) continue;
    if (!grad_defined(n)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, n);
    char *text = slurp(path);
    ft_jaxpr *j = P(text);
    if (j->n_const) { /* closed-over arrays come as values in the .npys; conformance runs them */
      ft_jaxpr_free(j), free(text);
      continue;
    }
    ft_array *in[16];
    int nin = ft_jaxpr_num_inputs(j);
    ck_assert_int_le(nin, 16);
    for (int i = 0; i < nin; i++) { /* floats in [0.5, 1.5): logs and quotients stay defined */
      ft_aval av;
      ft_jaxpr_input_aval(j, i, &av);
      in[i] = arr(&av, 0.5, 1.5, NULL, 0); /* integer operands (indices) are 0 */
    }
    grad_check_at(j, in, n);
    free_arrays(nin, in);
    ft_jaxpr_free(j);
    free(text);
    checked++;
  }
  closedir(d);
  ck_assert_int_ge(checked, 40);
}
END_TEST

/* Equations of j and of every sub-jaxpr, recursively. */
static int count_eqns(const ft_jaxpr *j) {
  int n = j->n_eqn;
  for (int q = 0; q < j->n_eqn; q++) {
    const ft_eqn *e = &j->eqns[q];
    const ft_prim_info *pi = ft_prim_get(e->prim);
    for (int k = 0; k < pi->n_params; k++) {
      const ft_pval *v = &e->params[k];
      if (v->tag == FT_PV_JAXPR && v->u.jaxpr) n += count_eqns(v->u.jaxpr);
      if (v->tag == FT_PV_TUPLE)
        for (int i = 0; i < v->n; i++)
          if (v->u.items[i].tag == FT_PV_JAXPR) n += count_eqns(v->u.items[i].u.jaxpr);
    }
  }
  return n;
}

static ft_jaxpr *rnn_of_length(int T) {
  char text[4096];
  snprintf(text, sizeof text,
           "{ lambda ; w:f64[3,3] b:f64[3] xs:f64[%d,3]. let\n"
           "    z:f64[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 0.0:f64[]\n"
           "    n:i32[] hf:f64[3] hs:f64[%d] = scan[\n"
           "      jaxpr={ lambda ; a:f64[3,3] c:f64[3] i:i32[] h:f64[3] x:f64[3]. let\n"
           "          i2:i32[] = add i 1:i32[]\n"
           "          e:f64[3] = dot_general[dimension_numbers=(([0], [0]), ([], [])) "
           "preferred_element_type=float64] h a\n"
           "          f:f64[3] = add e x\n          g:f64[3] = add f c\n          k:f64[3] = tanh g\n"
           "          s:f64[] = reduce_sum[axes=(0,) out_sharding=None] k\n"
           "        in (i2, k, s) }\n"
           "      length=%d\n      num_carry=2\n      num_consts=2\n      reverse=False\n      unroll=1\n"
           "    ] w b 0:i32[] z xs\n"
           "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] hs\n"
           "    t:f64[] = reduce_sum[axes=(0,) out_sharding=None] hf\n"
           "    y:f64[] = add s t\n"
           "  in (y,) }",
           T, T, T);
  return P(text);
}

START_TEST(backward_pass_is_linear_in_T) {
  ft_jaxpr *j10 = rnn_of_length(10), *j1000 = rnn_of_length(1000);
  int arg[3] = {0, 1, 2};
  ft_jaxpr *g10 = ft_grad(C, j10, 3, arg, false), *g1000 = ft_grad(C, j1000, 3, arg, false);
  ck_assert_msg(g10 && g1000, "%s", ft_ctx_error(C));
  int n10 = count_eqns(g10), n1000 = count_eqns(g1000);
  ck_assert_int_eq(n10, n1000);
  ck_assert_int_le(n10, 60);
  /* and the 10-step gradient is right */
  ft_array *in[3];
  inputs(j10, in, -0.8, 0.8, NULL, NULL);
  grad_check_at(j10, in, "rnn T=10");
  free_arrays(3, in);
  ft_jaxpr_free(g10), ft_jaxpr_free(g1000), ft_jaxpr_free(j10), ft_jaxpr_free(j1000);
}
END_TEST

START_TEST(zero_initialized_carry) {
  /* argnums=0 only: the tangent of v0 is an instantiated zero carry */
  ft_jaxpr *j = P("{ lambda ; a:f64[2] b:f64[2]. let\n"
                  "    c:f64[2] d:f64[2] = scan[\n"
                  "      jaxpr={ lambda ; x:f64[2] v:f64[2]. let\n"
                  "          e:f64[2] = mul x v\n          f:f64[2] = sin e\n"
                  "          g:f64[2] = add v f\n          h:f64[2] = mul 0.5:f64[] g\n"
                  "          k:f64[2] = add x h\n"
                  "        in (k, g) }\n"
                  "      length=6\n      num_carry=2\n      num_consts=0\n      reverse=False\n      unroll=1\n"
                  "    ] a b\n"
                  "    s:f64[2] = mul c d\n"
                  "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] s\n"
                  "  in (y,) }");
  int a0 = 0;
  ft_jaxpr *g = ft_grad(C, j, 1, &a0, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_array *in[2];
  inputs(j, in, 0.2, 1.0, NULL, NULL);
  ft_array *gr[1];
  run(g, 2, in, gr);
  for (int e = 0; e < 2; e++) {
    const double h = 1e-6;
    double x0 = ft_get_f64(in[0], e);
    ft_set_f64(in[0], e, x0 + h);
    double fp = scalar(j, 2, in);
    ft_set_f64(in[0], e, x0 - h);
    double fm = scalar(j, 2, in);
    ft_set_f64(in[0], e, x0);
    double fd = (fp - fm) / (2 * h);
    ck_assert_msg(fabs(ft_get_f64(gr[0], e) - fd) <= 1e-6 * fmax(1, fabs(fd)), "%g vs %g",
                  ft_get_f64(gr[0], e), fd);
  }
  free_arrays(1, gr), free_arrays(2, in);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------------- remat2 */

static ft_jaxpr *ck_program(const char *policy) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ lambda ; a:f64[3,3] b:f64[2,3]. let\n"
           "    c:f64[2,3] = remat2[\n      differentiated=False\n"
           "      jaxpr={ lambda ; d:f64[3,3] e:f64[2,3]. let\n"
           "          f:f64[2,3] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
           "preferred_element_type=float64] e d\n"
           "          g:f64[2,3] = tanh f\n          h:f64[2,3] = sin g\n"
           "        in (h,) }\n"
           "      policy=%s\n      prevent_cse=True\n    ] a b\n"
           "    i:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] c\n"
           "  in (i,) }",
           policy);
  return P(text);
}

/* Counts primitive p in the bodies of the remat2 equations of g: in the
 * first (known side) when known, else in the last (backward pass). */
static int in_remat(const ft_jaxpr *g, bool known, ft_prim p, int *n_remat) {
  const ft_jaxpr *body = NULL;
  *n_remat = 0;
  for (int q = 0; q < g->n_eqn; q++) {
    if (g->eqns[q].prim != FT_P_REMAT2) continue;
    ++*n_remat;
    if (!known || !body) body = pget_jaxpr(FT_P_REMAT2, g->eqns[q].params, "jaxpr");
  }
  int n = 0;
  for (int q = 0; body && q < body->n_eqn; q++) n += body->eqns[q].prim == p;
  return n;
}

START_TEST(remat_policies) {
  int arg[2] = {0, 1}, nr;
  /* None: nothing saved; the backward pass recomputes dot and tanh */
  ft_jaxpr *j = ck_program("None");
  ft_jaxpr *g = ft_grad(C, j, 2, arg, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(in_remat(g, false, FT_P_DOT_GENERAL, &nr), 3); /* recompute + two transposes */
  ck_assert_int_eq(nr, 1);
  ck_assert_int_eq(in_remat(g, false, FT_P_TANH, &nr), 1);
  ft_array *in[2];
  inputs(j, in, -1, 1, NULL, NULL);
  grad_check_at(j, in, "checkpoint policy=None");
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  /* dots_saveable: the known side saves the dot; tanh is recomputed */
  j = ck_program("<function dots_saveable at 0xXXXXXXXXXXXX>");
  g = ft_grad(C, j, 2, arg, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(in_remat(g, true, FT_P_DOT_GENERAL, &nr), 1);
  ck_assert_int_eq(nr, 2);
  ck_assert_int_eq(in_remat(g, true, FT_P_TANH, &nr), 0);
  ck_assert_int_eq(in_remat(g, false, FT_P_DOT_GENERAL, &nr), 2);
  ck_assert_int_eq(in_remat(g, false, FT_P_TANH, &nr), 1);
  grad_check_at(j, in, "checkpoint dots_saveable");
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  /* everything_saveable: nothing recomputed */
  j = ck_program("<function everything_saveable at 0xXXXXXXXXXXXX>");
  g = ft_grad(C, j, 2, arg, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(in_remat(g, false, FT_P_TANH, &nr), 0);
  ck_assert_int_eq(in_remat(g, false, FT_P_SIN, &nr), 0);
  ck_assert_int_eq(in_remat(g, true, FT_P_TANH, &nr), 1);
  ck_assert_int_eq(nr, 2);
  grad_check_at(j, in, "checkpoint everything_saveable");
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  /* an unsupported policy is refused by name; forward mode still works */
  j = ck_program("<function save_only_these_names.<locals>.policy at 0xXXXXXXXXXXXX>");
  ck_assert_ptr_null(ft_grad(C, j, 2, arg, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "'save_only_these_names.<locals>.policy' is not supported"), "%s",
                ft_ctx_error(C));
  g = ft_jvp(C, j);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  free_arrays(2, in);
}
END_TEST

START_TEST(while_reverse_refused) {
  ft_jaxpr *j = P("{ lambda ; a:f64[]. let\n"
                  "    b:f64[] _:i32[] = while[\n      body_jaxpr={ lambda ; c:f64[] d:i32[]. let\n"
                  "          e:f64[] = sin c\n          f:i32[] = add d 1:i32[]\n        in (e, f) }\n"
                  "      body_nconsts=0\n      cond_jaxpr={ lambda ; g:f64[] h:i32[]. let\n"
                  "          i:bool[] = lt h 5:i32[]\n        in (i,) }\n      cond_nconsts=0\n"
                  "    ] a 0:i32[]\n  in (b,) }");
  ck_assert_ptr_null(ft_grad(C, j, 0, NULL, false));
  ck_assert_msg(strstr(ft_ctx_error(C), "Reverse-mode differentiation does not work for lax.while_loop or "
                                        "lax.fori_loop with dynamic start/stop values."),
                "%s", ft_ctx_error(C));
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(f), ft_jaxpr_free(j);
}
END_TEST

/* Residuals of a scan's reverse mode that are not stacked per step (issue
 * 19): s = c*c depends on the consts alone, so it is computed once before
 * the loop and enters the backward scan as a const; x is an xs row, so the
 * backward scan reads xs itself. h_T = h0 * prod_t (c^2 x_t); with c = 0.5
 * and rows 2, 0.5, 4, 1, d h_T / d h0 = 0.25^4 * 4 = 1/64 exactly. */
static const char INVARIANT_RES[] =
    "{ lambda ; c:f64[] h0:f64[3] xs:f64[4,3]. let\n"
    "    hT:f64[3] = scan[\n"
    "      jaxpr={ lambda ; k:f64[] h:f64[3] x:f64[3]. let\n"
    "          s:f64[] = mul k k\n"
    "          a:f64[3] = mul h s\n"
    "          d:f64[3] = mul a x\n"
    "        in (d,) }\n"
    "      length=4\n      num_carry=1\n      num_consts=1\n      reverse=False\n      unroll=1\n"
    "    ] c h0 xs\n"
    "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] hT\n"
    "  in (y,) }";

/* Whether any scan of j's top level has an output stacked over 4 steps
 * (xs and the gradient of xs are the only [4,3] arrays otherwise). */
static int stacked_outputs(const ft_jaxpr *j) {
  int n = 0;
  for (int q = 0; q < j->n_eqn; q++)
    if (j->eqns[q].prim == FT_P_SCAN)
      for (int k = 0; k < j->eqns[q].n_out; k++) {
        const ft_aval *av = &j->eqns[q].out[k]->aval;
        n += av->rank >= 1 && av->dims[0] == 4;
      }
  return n;
}

START_TEST(invariant_and_xs_residuals_not_stacked) {
  ft_jaxpr *j = P(INVARIANT_RES);
  int arg1[1] = {1};
  ft_jaxpr *g = ft_grad(C, j, 1, arg1, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  verify(g);
  ck_assert_int_eq(stacked_outputs(g), 0);
  int64_t d3 = 3, d43[2] = {4, 3};
  ft_array *in[3] = {ft_array_new(C, FT_F64, 0, NULL), ft_array_new(C, FT_F64, 1, &d3),
                     ft_array_new(C, FT_F64, 2, d43)};
  ft_set_f64(in[0], 0, 0.5);
  const double rows[4] = {2, 0.5, 4, 1};
  for (int i = 0; i < 3; i++) ft_set_f64(in[1], i, 1.0 + i);
  for (int i = 0; i < 12; i++) ft_set_f64(in[2], i, rows[i / 3]);
  ft_array *o[1];
  run(g, 3, in, o);
  for (int i = 0; i < 3; i++) ck_assert_double_eq(ft_get_f64(o[0], i), 1.0 / 64);
  ft_array_free(o[0]);
  /* differentiating c too: s varies with the tangent, h is stacked (one
   * [4,3] residual); the values against central differences */
  int all[3] = {0, 1, 2};
  ft_jaxpr *g3 = ft_grad(C, j, 3, all, false);
  ck_assert_msg(g3 != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(stacked_outputs(g3), 3); /* h and a (= h*s) stacked; the gradient of xs */
  ft_array *o3[3];
  run(g3, 3, in, o3);
  free_arrays(3, o3);
  grad_check_at(j, in, "invariant residuals");
  free_arrays(3, in);
  ft_jaxpr_free(g3), ft_jaxpr_free(g), ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ad_loops");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 240);
  tcase_add_test(t, grad_of_jax_loop_programs);
  tcase_add_test(t, backward_pass_is_linear_in_T);
  tcase_add_test(t, zero_initialized_carry);
  tcase_add_test(t, remat_policies);
  tcase_add_test(t, while_reverse_refused);
  tcase_add_test(t, invariant_and_xs_residuals_not_stacked);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
