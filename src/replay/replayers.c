/* src/replay/replayers.c: the replayers FrankenTrace provides for the records
 * it writes itself (builtins.c registers them). They live here rather than
 * next to the parser and the transforms because they need only the public
 * API, and gathering them keeps the knowledge of each record's layout (what
 * observe.c and src/transforms/pipeline.c write) in one folder.
 *
 * Each runs on a private context with the caller's options, so replaying
 * records nothing (even when the caller's context has a ledger attached),
 * and copies a failure's message back to the caller's context.
 *
 *   parse             source text -> canonical text (ft_parse, ft_jaxpr_print)
 *   trace             a trace cannot be recomputed: it needs the user's C
 *                     function. replay.c hands this replayer the record's
 *                     stored outputs, and it checks that they reproduce
 *                     themselves: the text parses and prints to the same
 *                     bytes, each constant's .npy reads and writes back the same.
 *   transform ops     canonical text + params -> canonical text: the text is
 *                     parsed, the transform re-run with the recorded params
 *                     and the result printed.
 *   call "interp"     program text, constants and arguments (.npy) -> results
 *   call "jit"        (.npy) through ft_eval: reexec, bit for bit (the JIT's
 *                     results equal the interpreter's on the program it runs).
 *   compile "jit"     program text + constants + plan options -> plan text and
 *                     cache key, re-planned without generating code.
 *   optimize          canonical text + tier -> canonical text: the e-graph
 *     "saturate"      re-run like a transform (its limits are iterations and
 *                     nodes first, so the rewrite is reproducible). */
#include <string.h>

#include "replay/replay.h"
#include "lower/lower.h"

/* A private context with ctx's options. */
static ft_ctx *private_ctx(ft_ctx *ctx) {
  ft_ctx_options o = ctx ? ctx->opts : (ft_ctx_options)FT_CTX_OPTIONS_INIT;
  ft_ctx *p = ft_ctx_new(&o);
  if (!p) ft_set_error(ctx, FT_ERR_NOMEM, "replay: out of memory");
  return p;
}

/* Frees p, first copying its failure (st) to ctx. */
static ft_status finish(ft_ctx *ctx, ft_ctx *p, ft_status st) {
  if (st && p) ft_set_error(ctx, st, "%s", ft_ctx_error(p)[0] ? ft_ctx_error(p) : "failed");
  ft_ctx_free(p);
  return st;
}

static ft_status want_counts(ft_ctx *p, const char *op, int n_in, int want_in, int n_out,
                             int want_out) {
  if ((want_in >= 0 && n_in != want_in) || (want_out >= 0 && n_out != want_out))
    return ft_set_error(p, FT_ERR_INVALID_ARG, "%s: the record has %d inputs and %d outputs; "
                        "expected %d and %d", op, n_in, n_out, want_in, want_out);
  return FT_OK;
}

static ft_jaxpr *parse_blob(ft_ctx *p, const ft_ledger_blob *b, const char *what) {
  return ft_parse(p, b->data, b->len, what);
}

/* Prints j into out (the ledger frees out->data). */
static ft_status print_into(ft_ctx *p, const ft_jaxpr *j, ft_ledger_buf *out) {
  char *s = ft_jaxpr_print(p, j);
  if (!s) return ft_set_error(p, FT_ERR_NOMEM, "out of memory printing the result");
  out->data = s;
  out->len = strlen(s);
  return FT_OK;
}

/* text -> canonical text, the check shared by parse and trace. */
static ft_status reprint(ft_ctx *p, const ft_ledger_blob *in, ft_ledger_buf *out, const char *what) {
  ft_jaxpr *j = parse_blob(p, in, what);
  ft_status st = j ? print_into(p, j, out) : ft_ctx_status(p);
  ft_jaxpr_free(j);
  return st;
}

ft_status ft_lreplay_parse(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                           const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  (void)user, (void)params_json;
  ft_ctx *p = private_ctx(ctx);
  if (!p) return FT_ERR_NOMEM;
  ft_status st = want_counts(p, op, n_in, 1, n_out, 1);
  if (!st) st = reprint(p, &in[0], out, "parse input");
  return finish(ctx, p, st);
}

/* ---- arrays as .npy bytes (observe.c writes them) ---- */

/* Reads "float0[3,4]", the form observe.c gives float0 arrays. */
static ft_array *read_float0(ft_ctx *p, const ft_ledger_blob *b) {
  const char *s = b->data;
  int64_t dims[FT_MAX_RANK];
  int rank = 0;
  size_t i = 6;
  bool ok = b->len >= 6 && !memcmp(s, "float0", 6);
  if (ok && i < b->len && s[i] == '[') {
    for (i++; ok && i < b->len && s[i] != ']';) {
      int64_t v = 0;
      size_t st = i;
      while (i < b->len && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
      ok = i > st && rank < FT_MAX_RANK;
      if (ok) dims[rank++] = v;
      if (i < b->len && s[i] == ',') i++;
    }
    ok = ok && i + 1 == b->len;
  } else {
    ok = ok && i == b->len;
  }
  if (!ok) {
    ft_set_error(p, FT_ERR_IO, "reexec: a stored array is neither .npy nor a float0 aval");
    return NULL;
  }
  return ft_array_new(p, FT_FLOAT0, rank, dims);
}

static ft_array *read_array(ft_ctx *p, const ft_ledger_blob *b, const char *name) {
  if (b->len >= 6 && !memcmp(b->data, "float0", 6)) return read_float0(p, b);
  return ft_npy_read_mem(p, b->data, b->len, name);
}

static ft_status write_array(ft_ctx *p, const ft_array *a, ft_ledger_buf *out) {
  ft_aval av = ft_array_aval(a);
  if (av.dtype == FT_FLOAT0) {
    char s[160];
    ft_aval_str(&av, s, sizeof s);
    out->data = strdup(s);
    out->len = strlen(s);
    return out->data ? FT_OK : ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  }
  return ft_npy_write_mem(p, a, &out->data, &out->len);
}

ft_status ft_lreplay_trace(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                           const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  (void)user, (void)params_json;
  ft_ctx *p = private_ctx(ctx);
  if (!p) return FT_ERR_NOMEM;
  ft_status st = want_counts(p, op, n_in, n_out, n_out, -1);
  if (!st && n_in < 1) st = ft_set_error(p, FT_ERR_INVALID_ARG, "trace: the record has no output");
  if (!st) st = reprint(p, &in[0], out, "traced jaxpr");
  for (int i = 1; !st && i < n_in; i++) {
    ft_array *a = read_array(p, &in[i], "traced constant");
    st = a ? write_array(p, a, &out[i]) : ft_ctx_status(p);
    ft_array_free(a);
  }
  return finish(ctx, p, st);
}

/* ---- transforms (the ops and params src/transforms records) ---- */

/* An int array param of n entries (null = FT_VMAP_NONE); NULL param: all
 * entries def. FT_ERR_INVALID_ARG when malformed. */
static ft_status int_list(ft_ctx *p, const json_t *a, int n, int def, int *out, const char *key) {
  if (!a || json_is_null(a)) {
    for (int i = 0; i < n; i++) out[i] = def;
    return FT_OK;
  }
  if (!json_is_array(a) || (n >= 0 && (int)json_array_size(a) != n))
    return ft_set_error(p, FT_ERR_INVALID_ARG, "params: '%s' is not a list of %d entries", key, n);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    if (json_is_null(v)) out[i] = FT_VMAP_NONE;
    else if (json_is_integer(v)) out[i] = (int)json_integer_value(v);
    else return ft_set_error(p, FT_ERR_INVALID_ARG, "params: '%s' holds a non-integer", key);
  }
  return FT_OK;
}

static int int_param(const json_t *params, const char *key, int def) {
  const json_t *v = json_object_get(params, key);
  return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

static ft_jaxpr *run_grad(ft_ctx *p, const char *op, const json_t *params, const ft_jaxpr *j) {
  const json_t *a = json_object_get(params, "argnums");
  int n = a ? (int)json_array_size(a) : 0;
  int *argnums = malloc(sizeof(int) * (size_t)(n + 1));
  ft_jaxpr *r = NULL;
  if (!argnums) ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  else if (!int_list(p, a, n, 0, argnums, "argnums")) {
    bool aux = json_is_true(json_object_get(params, "has_aux"));
    r = !strcmp(op, "grad") ? ft_grad(p, j, n, argnums, aux) : ft_value_and_grad(p, j, n, argnums, aux);
  }
  free(argnums);
  return r;
}

static ft_jaxpr *run_linearize(ft_ctx *p, const json_t *params, const ft_jaxpr *j) {
  const char *part = json_string_value(json_object_get(params, "part"));
  if (!part || (strcmp(part, "primal") && strcmp(part, "tangent"))) {
    ft_set_error(p, FT_ERR_INVALID_ARG, "params: linearize needs part \"primal\" or \"tangent\"");
    return NULL;
  }
  ft_jaxpr *pr = NULL, *t = NULL;
  if (ft_linearize(p, j, &pr, &t, NULL)) return NULL;
  bool primal = !strcmp(part, "primal");
  ft_jaxpr_free(primal ? t : pr);
  return primal ? pr : t;
}

static ft_jaxpr *run_vmap(ft_ctx *p, const json_t *params, const ft_jaxpr *j) {
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  int *ax = malloc(sizeof(int) * (size_t)(n_in + n_out + 1));
  const json_t *size = json_object_get(params, "axis_size");
  ft_jaxpr *r = NULL;
  if (!ax) ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  else if (!json_is_integer(size)) ft_set_error(p, FT_ERR_INVALID_ARG, "params: vmap needs axis_size");
  else if (!int_list(p, json_object_get(params, "in_axes"), n_in, 0, ax, "in_axes") &&
           !int_list(p, json_object_get(params, "out_axes"), n_out, 0, ax + n_in, "out_axes"))
    r = ft_vmap(p, j, n_in, ax, n_out, ax + n_in, json_integer_value(size));
  free(ax);
  return r;
}

/* Re-runs transform op on j with params. NULL with the error on p. */
static ft_jaxpr *run_transform(ft_ctx *p, const char *op, const json_t *params, const ft_jaxpr *j) {
  if (!strcmp(op, "jvp")) return ft_jvp(p, j);
  if (!strcmp(op, "dce")) return ft_dce(p, j);
  if (!strcmp(op, "inline")) return ft_inline(p, j);
  if (!strcmp(op, "vjp")) return ft_vjp_jaxpr(p, j);
  if (!strcmp(op, "grad") || !strcmp(op, "value_and_grad")) return run_grad(p, op, params, j);
  if (!strcmp(op, "linearize")) return run_linearize(p, params, j);
  if (!strcmp(op, "transpose")) return ft_linear_transpose(p, j, int_param(params, "n_nonlinear", 0));
  if (!strcmp(op, "vmap")) return run_vmap(p, params, j);
  if (!strcmp(op, "saturate")) {
    const char *tier = json_string_value(json_object_get(params, "tier"));
    if (!tier || (strcmp(tier, "exact") && strcmp(tier, "algebraic"))) {
      ft_set_error(p, FT_ERR_INVALID_ARG, "saturate: params name no tier (exact or algebraic)");
      return NULL;
    }
    return ft_optimize(p, j, strcmp(tier, "exact") ? FT_OPT_ALGEBRAIC : FT_OPT_EXACT, NULL);
  }
  /* jac.c records {"argnum":k}; older records wrote "{}", meaning argnum 0. */
  int argnum = int_param(params, "argnum", 0);
  if (!strcmp(op, "jacfwd")) return ft_jacfwd(p, j, argnum);
  if (!strcmp(op, "jacrev")) return ft_jacrev(p, j, argnum);
  if (!strcmp(op, "hessian")) return ft_hessian(p, j, argnum);
  ft_set_error(p, FT_ERR_UNSUPPORTED, "no replayer for transform '%s'", op);
  return NULL;
}

ft_status ft_lreplay_transform(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                               const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  (void)user;
  ft_ctx *p = private_ctx(ctx);
  if (!p) return FT_ERR_NOMEM;
  json_error_t err;
  json_t *params = json_loads(params_json ? params_json : "{}", 0, &err);
  ft_status st = want_counts(p, op, n_in, 1, n_out, 1);
  if (!st && !json_is_object(params))
    st = ft_set_error(p, FT_ERR_INVALID_ARG, "%s: params are not a JSON object", op);
  ft_jaxpr *j = st ? NULL : parse_blob(p, &in[0], "transform input");
  ft_jaxpr *r = j ? run_transform(p, op, params, j) : NULL;
  if (!st) st = r ? print_into(p, r, out) : ft_ctx_status(p) ? ft_ctx_status(p) : FT_ERR_INTERNAL;
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
  json_decref(params);
  return finish(ctx, p, st);
}

/* ---- calls ---- */

ft_status ft_lreplay_interp(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                            const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  (void)user, (void)params_json;
  ft_ctx *p = private_ctx(ctx);
  if (!p) return FT_ERR_NOMEM;
  ft_status st = n_in < 1 ? ft_set_error(p, FT_ERR_INVALID_ARG, "%s: the record has no program", op)
                          : FT_OK;
  ft_jaxpr *j = st ? NULL : parse_blob(p, &in[0], "program");
  ft_array **arr = calloc((size_t)(n_in + n_out) + 1, sizeof *arr);
  if (!st && !j) st = ft_ctx_status(p);
  if (!st && !arr) st = ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  for (int i = 1; !st && i < n_in; i++) {
    char name[32];
    snprintf(name, sizeof name, "input %d", i);
    if (!(arr[i - 1] = read_array(p, &in[i], name))) st = ft_ctx_status(p);
  }
  ft_array **res = arr ? arr + n_in : NULL;
  if (!st) st = ft_eval(p, j, n_in - 1, (const ft_array *const *)arr, n_out, res);
  for (int k = 0; !st && k < n_out; k++) st = write_array(p, res[k], &out[k]);
  for (int i = 0; arr && i < n_in + n_out; i++) ft_array_free(arr[i]);
  free(arr);
  ft_jaxpr_free(j);
  return finish(ctx, p, st);
}

/* ---- compilations ---- */

/* Gives the parsed j the values of its constants (the record's inputs
 * 1..n), as the traced program that was compiled carried them. */
static ft_status attach_consts(ft_ctx *p, ft_jaxpr *j, const ft_ledger_blob *in, int n) {
  if (n == 0) return FT_OK;
  if (n != j->n_const)
    return ft_set_error(p, FT_ERR_INVALID_ARG, "jit: %d constants recorded for %d constvars", n,
                        j->n_const);
  void **data = ft_arena_alloc(j->arena, sizeof(void *) * (size_t)n);
  if (!data) return ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    ft_array *a = read_array(p, &in[i], "constant");
    if (!a) return ft_ctx_status(p);
    ft_aval av = ft_array_aval(a);
    bool ok = ft_aval_eq(&av, &j->constvars[i]->aval);
    size_t nb = ft_array_nbytes(a);
    if (ok && (data[i] = ft_arena_alloc(j->arena, nb ? nb : 1))) memcpy(data[i], ft_array_data(a), nb);
    ft_array_free(a);
    if (!ok) return ft_set_error(p, FT_ERR_SHAPE, "jit: constant %d does not fit its constvar", i);
    if (!data[i]) return ft_set_error(p, FT_ERR_NOMEM, "out of memory");
  }
  j->const_data = data;
  return FT_OK;
}

ft_status ft_lreplay_jit_plan(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                              const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  (void)user;
  ft_ctx *p = private_ctx(ctx);
  if (!p) return FT_ERR_NOMEM;
  json_error_t err;
  json_t *params = json_loads(params_json ? params_json : "{}", 0, &err);
  ft_status st = want_counts(p, op, n_in, -1, n_out, 1);
  if (!st && n_in < 1) st = ft_set_error(p, FT_ERR_INVALID_ARG, "%s: the record has no program", op);
  if (!st && !json_is_object(params))
    st = ft_set_error(p, FT_ERR_INVALID_ARG, "%s: params are not a JSON object", op);
  ft_jaxpr *j = st ? NULL : parse_blob(p, &in[0], "compiled program");
  if (!st && !j) st = ft_ctx_status(p);
  if (!st) st = attach_consts(p, j, in + 1, n_in - 1);
  if (!st) {
    ft_jit_options o = {.size = sizeof o,
                        .opt_level = int_param(params, "opt_level", 0),
                        .no_fusion = json_is_true(json_object_get(params, "no_fusion")),
                        .interpret_all = json_is_true(json_object_get(params, "interpret_all")),
                        .no_optimize = json_is_true(json_object_get(params, "no_optimize"))};
    char *text = ft_jit_plan_record(p, j, &o);
    if (text) out[0] = (ft_ledger_buf){.data = text, .len = strlen(text)};
    else st = ft_ctx_status(p) ? ft_ctx_status(p) : FT_ERR_INTERNAL;
  }
  ft_jaxpr_free(j);
  json_decref(params);
  return finish(ctx, p, st);
}
