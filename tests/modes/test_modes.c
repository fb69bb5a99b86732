/* tests/modes/test_modes.c: strict and hardened modes (issue 18, DESIGN.md
 * §9). Strict fails closed on what it does not know (unknown params in
 * either mode, fallback steps in ft_jit unless allowed). Hardened guards
 * at run time in the interpreter and in compiled code: NaN/Inf in outputs
 * and (guard_each_step) where it first appears, indices that break
 * mode=PROMISE_IN_BOUNDS, loop budgets, the call boundary. Each firing is
 * on the context with what, where and the decision, and in an attached
 * ledger as a guard record; the results keep the bits strict mode gives. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

static ft_ctx *new_ctx(ft_mode mode, bool fail, bool each) {
  ft_ctx_options o = {.size = sizeof(ft_ctx_options), .mode = mode, .guard_fail = fail, .guard_each_step = each};
  ft_ctx *ctx = ft_ctx_new(&o);
  ck_assert_ptr_nonnull(ctx);
  return ctx;
}

static ft_jaxpr *parse(ft_ctx *ctx, const char *text) {
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "modes");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  return j;
}

static ft_array *f32s(ft_ctx *ctx, int rank, const int64_t *dims, const float *v) {
  ft_array *a = ft_array_from_data(ctx, FT_F32, rank, dims, v);
  ck_assert_ptr_nonnull(a);
  return a;
}

/* Runs j on in[] through the interpreter (jit false) or ft_jit; outputs in out. */
static ft_status run(ft_ctx *ctx, const ft_jaxpr *j, bool jit, int n_in, ft_array **in, int n_out,
                     ft_array **out) {
  if (!jit) return ft_eval(ctx, j, n_in, (const ft_array *const *)in, n_out, out);
  ft_fn *fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true});
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
  ft_status st = ft_call(fn, n_in, (const ft_array *const *)in, n_out, out);
  ft_fn_free(fn);
  return st;
}

static ft_guard_event guard(const ft_ctx *ctx, int i) {
  ft_guard_event g;
  ck_assert_int_eq(ft_ctx_get_guard(ctx, i, &g), FT_OK);
  return g;
}

/* ------------------------------------------------------------ strict */

/* An unknown param is refused in both modes: dropping it could change
 * what the program computes. */
START_TEST(unknown_param_refused_in_both_modes) {
  for (int m = 0; m < 2; m++) {
    ft_ctx *ctx = new_ctx(m ? FT_MODE_HARDENED : FT_MODE_STRICT, false, false);
    const char *t = "{ lambda ; a:f32[3]. let b:f32[3] = neg[foo=(1, 2)] a in (b,) }";
    ck_assert_ptr_null(ft_parse(ctx, t, strlen(t), "x"));
    ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "x:1:41: unknown param 'foo' of neg"));
    ft_ctx_free(ctx);
  }
}
END_TEST

/* ft_jit fails closed on an equation it would run through the interpreter,
 * naming it and its reason, unless allow_fallback (or interpret_all). */
static const char *CMAX = "{ lambda ; a:c64[3]. let\n    b:c64[] = reduce_max[axes=(0,)] a\n  in (b,) }\n";

START_TEST(jit_refuses_fallback_unless_allowed) {
  for (int m = 0; m < 2; m++) {
    ft_ctx *ctx = new_ctx(m ? FT_MODE_HARDENED : FT_MODE_STRICT, false, false);
    ft_jaxpr *j = parse(ctx, CMAX);
    ft_fn *fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true});
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_UNSUPPORTED);
    ck_assert_str_eq(ft_ctx_error(ctx),
                     "jit: 1 equation(s) would run as interpreter fallback steps, the first "
                     "equation 0 (reduce_max): a reduction of a dtype the kernels do not fold "
                     "(complex), which the interpreter refuses too (allow them with ft_jit_options.allow_fallback, or ftc "
                     "--allow-fallback)");
    fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true, .allow_fallback = true});
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
    ft_fn_free(fn);
    fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .interpret_all = true});
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
    ft_fn_free(fn);
    ft_jaxpr_free(j);
    ft_ctx_free(ctx);
  }
}
END_TEST

/* A fallback inside a control-flow body is named through its parent. */
START_TEST(jit_refuses_nested_fallback) {
  ft_ctx *ctx = new_ctx(FT_MODE_STRICT, false, false);
  const char *t =
      "{ lambda ; a:c64[3]. let\n"
      "    b:c64[] = pjit[\n"
      "      name=f\n"
      "      jaxpr={ lambda ; c:c64[3]. let d:c64[] = reduce_max[axes=(0,)] c in (d,) }\n"
      "    ] a\n"
      "  in (b,) }\n";
  ft_jaxpr *j = parse(ctx, t);
  ck_assert_ptr_null(ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true}));
  ck_assert_msg(strstr(ft_ctx_error(ctx), "the first equation 0 (jit), sub-jaxpr 0: equation 0 "
                                          "(reduce_max)") != NULL, "%s", ft_ctx_error(ctx));
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}
END_TEST

/* ---------------------------------------------------------- NaN / Inf */

/* log of [1, 0, -1, 4]: -inf and NaN in the output. */
static const char *LOG = "{ lambda ; a:f32[4]. let b:f32[4] = log a in (b,) }";
static const float LOG_IN[4] = {1.0f, 0.0f, -1.0f, 4.0f};

/* Strict: no guard; hardened: one NONFINITE guard naming the output, the
 * count and the first index, the result kept and bit-identical to strict's,
 * in both engines. */
START_TEST(nonfinite_output_reported_and_kept) {
  int64_t d4 = 4;
  for (int jit = 0; jit < 2; jit++) {
    ft_ctx *s = new_ctx(FT_MODE_STRICT, false, false), *h = new_ctx(FT_MODE_HARDENED, false, false);
    ft_jaxpr *js = parse(s, LOG), *jh = parse(h, LOG);
    ft_array *in_s = f32s(s, 1, &d4, LOG_IN), *in_h = f32s(h, 1, &d4, LOG_IN), *os = NULL, *oh = NULL;
    ck_assert_int_eq(run(s, js, jit, 1, &in_s, 1, &os), FT_OK);
    ck_assert_int_eq(ft_ctx_num_guards(s), 0);
    ck_assert_int_eq(run(h, jh, jit, 1, &in_h, 1, &oh), FT_OK);
    ck_assert(ft_array_equal_bits(os, oh));
    ck_assert_int_eq(ft_ctx_num_guards(h), 1);
    ft_guard_event g = guard(h, 0);
    ck_assert_int_eq(g.kind, FT_GUARD_NONFINITE);
    ck_assert_int_eq(g.decision, FT_GUARD_CONTINUED);
    ck_assert_str_eq(g.engine, jit ? "jit" : "interp");
    ck_assert_int_eq(g.eqn, -1);
    ck_assert_int_eq(g.output, 0);
    ck_assert_str_eq(g.message, "NaN/Inf in output 0 (f32[4]): 2 element(s), the first at flat "
                                "index 1; the result is kept");
    ck_assert_int_eq(ft_ctx_get_guard(h, 1, &g), FT_ERR_INVALID_ARG);
    ft_ctx_clear_guards(h);
    ck_assert_int_eq(ft_ctx_num_guards(h), 0);
    ft_array_free(in_s), ft_array_free(in_h), ft_array_free(os), ft_array_free(oh);
    ft_jaxpr_free(js), ft_jaxpr_free(jh);
    ft_ctx_free(s), ft_ctx_free(h);
  }
}
END_TEST

/* guard_fail: the same guard fails the call, no output is returned. */
START_TEST(nonfinite_output_fails_with_guard_fail) {
  int64_t d4 = 4;
  for (int jit = 0; jit < 2; jit++) {
    ft_ctx *h = new_ctx(FT_MODE_HARDENED, true, false);
    ft_jaxpr *j = parse(h, LOG);
    ft_array *in = f32s(h, 1, &d4, LOG_IN), *o = NULL;
    ck_assert_int_eq(run(h, j, jit, 1, &in, 1, &o), FT_ERR_RUNTIME);
    ck_assert_ptr_null(o);
    ck_assert_str_eq(ft_ctx_error(h), "hardened: NaN/Inf in output 0 (f32[4]): 2 element(s), the "
                                      "first at flat index 1; the call fails (guard_fail)");
    ck_assert_int_eq(guard(h, 0).decision, FT_GUARD_FAILED);
    /* finite inputs: no guard, the call succeeds */
    const float ok[4] = {1, 2, 3, 4};
    ft_array *in2 = f32s(h, 1, &d4, ok);
    ft_ctx_clear_guards(h);
    ck_assert_int_eq(run(h, j, jit, 1, &in2, 1, &o), FT_OK);
    ck_assert_int_eq(ft_ctx_num_guards(h), 0);
    ft_array_free(o), ft_array_free(in), ft_array_free(in2);
    ft_jaxpr_free(j);
    ft_ctx_free(h);
  }
}
END_TEST

/* guard_each_step: where NaN/Inf first appears. log's result (a kernel's
 * output that feeds a GEMM step in the JIT) is where; the dot_general after
 * it had NaN inputs, so it does not fire; the output guard fires too. */
static const char *STEPS =
    "{ lambda ; a:f32[2,2]. let\n"
    "    b:f32[2,2] = log a\n"
    "    c:f32[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] b b\n"
    "  in (c,) }";

START_TEST(nonfinite_each_step_names_the_equation) {
  int64_t d[2] = {2, 2};
  const float v[4] = {1.0f, -1.0f, 2.0f, 3.0f};
  ft_array *ref = NULL;
  for (int jit = 0; jit < 2; jit++) {
    ft_ctx *h = new_ctx(FT_MODE_HARDENED, false, true);
    ft_jaxpr *j = parse(h, STEPS);
    ft_array *in = f32s(h, 2, d, v), *o = NULL;
    ck_assert_int_eq(run(h, j, jit, 1, &in, 1, &o), FT_OK);
    ck_assert_int_eq(ft_ctx_num_guards(h), 2);
    ft_guard_event g = guard(h, 0);
    ck_assert_int_eq(g.kind, FT_GUARD_NONFINITE);
    ck_assert_int_eq(g.eqn, 0);
    ck_assert_str_eq(g.prim, "log");
    ck_assert_int_eq(g.output, 0);
    ck_assert_str_eq(g.engine, jit ? "jit" : "interp");
    ck_assert_str_eq(g.message, "NaN/Inf appears in result 0 (f32[2,2]) of equation 0 (log): 1 "
                                "element(s), the first at flat index 1; its inputs had none; the "
                                "result is kept");
    ck_assert_int_eq(guard(h, 1).eqn, -1);
    if (!jit) ref = o;
    else ck_assert(ft_array_equal_bits(ref, o)), ft_array_free(o);
    ft_array_free(in);
    ft_jaxpr_free(j);
    ft_ctx_free(h);
  }
  ft_array_free(ref);
}
END_TEST

/* --------------------------------------------------------- index bounds */

typedef struct idx_case {
  int scatter;
} idx_case;

/* gather x[idx] (x f32[5], idx i32[3,1]) or scatter-add of u into x at idx. */
static int trace_index(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  const idx_case *c = user;
  (void)t, (void)max_out;
  if (!c->scatter) {
    ft_gather_dims d = {.n_collapsed = 1, .collapsed_slice_dims = {0}, .n_start = 1,
                        .start_index_map = {0}};
    int64_t ss[1] = {1};
    out[0] = ft_gather(in[0], in[1], &d, ss, FT_GATHER_PROMISE_IN_BOUNDS, NULL);
  } else {
    ft_scatter_dims d = {.n_inserted = 1, .inserted_window_dims = {0}, .n_scatter = 1,
                         .scatter_dims_to_operand_dims = {0}};
    out[0] = ft_scatter_add(in[0], in[1], in[2], &d, FT_GATHER_PROMISE_IN_BOUNDS);
  }
  return 1;
}

/* An index past the end under PROMISE_IN_BOUNDS: hardened reports it (the
 * equation, the count, the first index, the axis and range, the decision)
 * and keeps the defined result, bit-identical to strict's; in-range
 * indices fire nothing. Both engines, gather and scatter-add. */
START_TEST(promise_in_bounds_checked) {
  int64_t d5 = 5, d31[2] = {3, 1};
  const float x[5] = {10, 11, 12, 13, 14}, u[3] = {1, 2, 3};
  const int32_t bad[3] = {1, 7, -2}, good[3] = {0, 4, 2};
  for (int sc = 0; sc < 2; sc++)
    for (int jit = 0; jit < 2; jit++) {
      ft_ctx *s = new_ctx(FT_MODE_STRICT, false, false), *h = new_ctx(FT_MODE_HARDENED, false, false);
      ft_aval av[3] = {{.dtype = FT_F32, .rank = 1, .dims = {5}},
                       {.dtype = FT_I32, .rank = 2, .dims = {3, 1}},
                       {.dtype = FT_F32, .rank = 1, .dims = {3}}};
      idx_case c = {.scatter = sc};
      ft_jaxpr *j = ft_trace(s, trace_index, &c, sc ? 3 : 2, av);
      ck_assert_msg(j != NULL, "%s", ft_ctx_error(s));
      for (int good_idx = 0; good_idx < 2; good_idx++) {
        ft_array *in[3] = {f32s(s, 1, &d5, x),
                           ft_array_from_data(s, FT_I32, 2, d31, good_idx ? good : bad),
                           f32s(s, 1, (int64_t[]){3}, u)};
        ft_array *os = NULL, *oh = NULL;
        ck_assert_int_eq(run(s, j, jit, sc ? 3 : 2, in, 1, &os), FT_OK);
        ck_assert_int_eq(run(h, j, jit, sc ? 3 : 2, in, 1, &oh), FT_OK);
        ck_assert(ft_array_equal_bits(os, oh));
        ck_assert_int_eq(ft_ctx_num_guards(s), 0);
        if (good_idx) {
          ck_assert_int_eq(ft_ctx_num_guards(h), 0);
        } else {
          ck_assert_int_eq(ft_ctx_num_guards(h), 1);
          ft_guard_event g = guard(h, 0);
          ck_assert_int_eq(g.kind, FT_GUARD_INDEX);
          ck_assert_int_eq(g.decision, FT_GUARD_CONTINUED);
          ck_assert_str_eq(g.engine, jit ? "jit" : "interp");
          ck_assert_str_eq(g.prim, sc ? "scatter-add" : "gather");
          ck_assert_int_eq(g.eqn, 0);
          char want[256];
          snprintf(want, sizeof want,
                   "%s with mode=PROMISE_IN_BOUNDS: 2 index(es) out of bounds, the first 7 on "
                   "operand axis 0 (valid: 0..4); %s; the result is kept",
                   sc ? "scatter-add" : "gather",
                   sc ? "the update window was dropped, as FILL_OR_DROP does"
                      : "clamped into the operand, as CLIP does");
          ck_assert_str_eq(g.message, want);
          /* gather clamps: x[4] for 7, x[0] for -2; scatter-add drops both */
          const float *r = ft_array_data(oh);
          if (!sc) ck_assert(r[0] == 11 && r[1] == 14 && r[2] == 10);
          else ck_assert(r[0] == 10 && r[1] == 12 && r[2] == 12 && r[3] == 13 && r[4] == 14);
        }
        ft_ctx_clear_guards(h);
        for (int k = 0; k < 3; k++) ft_array_free(in[k]);
        ft_array_free(os), ft_array_free(oh);
      }
      ft_jaxpr_free(j);
      ft_ctx_free(s), ft_ctx_free(h);
    }
}
END_TEST

/* -------------------------------------------------------------- loops */

static const char *COUNT =
    "{ lambda ; a:i32[] b:i32[]. let\n"
    "    c:i32[] _:i32[] = while[\n"
    "      body_jaxpr={ lambda ; d:i32[] e:i32[]. let f:i32[] = add d 1:i32[] in (f, e) }\n"
    "      body_nconsts=0\n"
    "      cond_jaxpr={ lambda ; g:i32[] h:i32[]. let i:bool[] = lt g h in (i,) }\n"
    "      cond_nconsts=0\n"
    "    ] a b\n"
    "  in (c,) }";

/* A loop stopped by its budget fails the call with FT_ERR_LIMIT in both
 * modes; hardened also records a LOOP guard naming the loop's equation. */
START_TEST(loop_budget_guard) {
  for (int jit = 0; jit < 2; jit++)
    for (int m = 0; m < 2; m++) {
      ft_ctx *ctx = new_ctx(m ? FT_MODE_HARDENED : FT_MODE_STRICT, false, false);
      ft_ctx_set_loop_limits(ctx, &(ft_loop_limits){.size = sizeof(ft_loop_limits), .max_iterations = 100});
      ft_jaxpr *j = parse(ctx, COUNT);
      ft_array *in[2] = {ft_array_new(ctx, FT_I32, 0, NULL), ft_array_new(ctx, FT_I32, 0, NULL)}, *o = NULL;
      *(int32_t *)ft_array_data_mut(in[1]) = 1000;
      ck_assert_int_eq(run(ctx, j, jit, 2, in, 1, &o), FT_ERR_LIMIT);
      ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "while: stopped at the loop limit of 100 iterations"));
      ck_assert_int_eq(ft_ctx_num_guards(ctx), m);
      if (m) {
        ft_guard_event g = guard(ctx, 0);
        ck_assert_int_eq(g.kind, FT_GUARD_LOOP);
        ck_assert_int_eq(g.decision, FT_GUARD_FAILED);
        ck_assert_int_eq(g.eqn, 0);
        ck_assert_str_eq(g.prim, "while");
        ck_assert_str_eq(g.engine, jit ? "jit" : "interp");
        ck_assert_str_eq(g.message, "loop budget: while: stopped at the loop limit of 100 "
                                    "iterations; the call fails");
      }
      ft_array_free(in[0]), ft_array_free(in[1]);
      ft_jaxpr_free(j);
      ft_ctx_free(ctx);
    }
}
END_TEST

/* --------------------------------------------------------- call boundary */

/* A wrong input aval fails in both modes; hardened records a CALL guard.
 * An output aliasing an input (ft_call_into) is refused in hardened mode. */
START_TEST(call_boundary_guard) {
  int64_t d3 = 3, d4 = 4;
  for (int jit = 0; jit < 2; jit++) {
    ft_ctx *h = new_ctx(FT_MODE_HARDENED, false, false);
    ft_jaxpr *j = parse(h, LOG);
    const float v[4] = {1, 2, 3, 4};
    ft_array *wrong = f32s(h, 1, &d3, v), *o = NULL;
    ck_assert_int_eq(run(h, j, jit, 1, &wrong, 1, &o), FT_ERR_SHAPE);
    ck_assert_str_eq(ft_ctx_error(h), "call boundary: input 0: expected f32[4], got f32[3]");
    ck_assert_int_eq(ft_ctx_num_guards(h), 1);
    ft_guard_event g = guard(h, 0);
    ck_assert_int_eq(g.kind, FT_GUARD_CALL);
    ck_assert_int_eq(g.decision, FT_GUARD_FAILED);
    ck_assert_str_eq(g.message, "call boundary: input 0: expected f32[4], got f32[3]; the call fails");
    if (jit) {
      ft_fn *fn = ft_jit(h, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true});
      ck_assert_ptr_nonnull(fn);
      ft_array *x = f32s(h, 1, &d4, v);
      ck_assert_int_eq(ft_call_into(fn, 1, (const ft_array *const *)&x, 1, &x), FT_ERR_INVALID_ARG);
      ck_assert_str_eq(ft_ctx_error(h), "call boundary: output 0 shares memory with argument 0");
      ck_assert_int_eq(ft_ctx_num_guards(h), 2);
      ck_assert_int_eq(guard(h, 1).output, 0);
      /* a separate output is fine, and gives log's bits */
      ft_array *y = ft_array_new(h, FT_F32, 1, &d4), *ref = NULL;
      ck_assert_int_eq(ft_call_into(fn, 1, (const ft_array *const *)&x, 1, &y), FT_OK);
      ck_assert_int_eq(ft_eval(h, j, 1, (const ft_array *const *)&x, 1, &ref), FT_OK);
      ck_assert(ft_array_equal_bits(ref, y));
      ft_array_free(x), ft_array_free(y), ft_array_free(ref);
      ft_fn_free(fn);
    }
    ft_array_free(wrong);
    ft_jaxpr_free(j);
    ft_ctx_free(h);
  }
}
END_TEST

/* ---------------------------------------------------------- the ledger */

/* Each guard is a ledger record of kind guard: op = what fired, params =
 * where and the decision; the ledger verifies clean afterwards. */
START_TEST(guards_are_ledger_records) {
  char dir[] = "/tmp/ft_modes_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/lg", dir);
  ft_ctx *h = new_ctx(FT_MODE_HARDENED, false, false);
  ft_ledger *lg = ft_ledger_open(h, path, &(ft_ledger_options){.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER,
                                                              .calls = FT_LEDGER_CALLS_HASHES});
  ck_assert_msg(lg != NULL, "%s", ft_ctx_error(h));
  ck_assert_int_eq(ft_ctx_attach_ledger(h, lg), FT_OK);
  ft_jaxpr *j = parse(h, LOG);
  int64_t d4 = 4;
  ft_array *in = f32s(h, 1, &d4, LOG_IN), *o = NULL;
  ck_assert_int_eq(run(h, j, true, 1, &in, 1, &o), FT_OK);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ledger_report r = {0};
  ck_assert_int_eq(ft_ledger_verify(h, path, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ft_ledger_report_free(&r);
  char *text = ft_ledger_export(h, path, FT_LEDGER_JSON);
  ck_assert_ptr_nonnull(text);
  json_t *recs = json_loads(text, 0, NULL);
  ck_assert_ptr_nonnull(recs);
  int n_guard = 0;
  size_t i;
  json_t *rec;
  json_array_foreach(recs, i, rec) {
    if (strcmp(json_string_value(json_object_get(rec, "kind")), "guard")) continue;
    n_guard++;
    json_t *p = json_object_get(rec, "params");
    ck_assert_str_eq(json_string_value(json_object_get(rec, "op")), "nonfinite");
    ck_assert_str_eq(json_string_value(json_object_get(rec, "mode")), "hardened");
    ck_assert_str_eq(json_string_value(json_object_get(p, "engine")), "jit");
    ck_assert_str_eq(json_string_value(json_object_get(p, "decision")), "continued");
    ck_assert_int_eq(json_integer_value(json_object_get(p, "output")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "eqn")), -1);
    ck_assert_int_eq(strlen(json_string_value(json_object_get(p, "program"))), 32);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(p, "message")), "NaN/Inf in output 0"));
  }
  ck_assert_int_eq(n_guard, 1);
  json_decref(recs);
  ft_free(text);
  ft_array_free(in), ft_array_free(o);
  ft_jaxpr_free(j);
  ft_ctx_free(h);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("modes");
  TCase *t = tcase_create("modes");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, unknown_param_refused_in_both_modes);
  tcase_add_test(t, jit_refuses_fallback_unless_allowed);
  tcase_add_test(t, jit_refuses_nested_fallback);
  tcase_add_test(t, nonfinite_output_reported_and_kept);
  tcase_add_test(t, nonfinite_output_fails_with_guard_fail);
  tcase_add_test(t, nonfinite_each_step_names_the_equation);
  tcase_add_test(t, promise_in_bounds_checked);
  tcase_add_test(t, loop_budget_guard);
  tcase_add_test(t, call_boundary_guard);
  tcase_add_test(t, guards_are_ledger_records);
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
