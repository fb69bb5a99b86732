/* src/trace/trace.c: tracers, values, equation emission, constants and
 * ft_trace itself (the model is described in trace.h). */
#include <math.h>
#include <string.h>

#include "trace/trace.h"

/* ------------------------------------------------------------- errors */

static void fail_v(ft_tracer *t, ft_status st, const char *fmt, va_list ap) {
  ft_tracer *root = t->root;
  if (root->failed) return;
  root->failed = true;
  root->st = st;
  ft_set_errorv(root->ctx, st, fmt, ap);
  root->msg = strdup(ft_ctx_error(root->ctx));
}

void ft__fail(ft_tracer *t, ft_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(t, st, fmt, ap);
  va_end(ap);
}

bool ft__opts(ft_tracer *t, const char *what, const void *src, size_t known, void *dst) {
  ft_status st = ft_opts_read(t->root->ctx, what, src, known, dst);
  if (st == FT_OK) return true;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", ft_ctx_error(t->root->ctx));
  ft__fail(t, st, "%s", msg);
  return false;
}

bool ft_tracer_failed(const ft_tracer *t) { return !t || t->root->failed; }

void ft_tracer_fail(ft_tracer *t, const char *msg) {
  if (t) ft__fail(t, FT_ERR_INVALID_ARG, "%s", msg ? msg : "the traced function failed");
}

ft_tracer *ft__root_of(ft_tracer *t, const char *what, int n, ft_val *const *vals) {
  ft_tracer *root = t ? t->root : NULL;
  for (int i = 0; i < n && !root; i++)
    if (vals && vals[i]) root = vals[i]->t->root;
  if (!root) return NULL; /* nothing to report the error on */
  if (root->failed) return NULL;
  if (n && !vals) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: operand array is NULL", what);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (!vals[i]) {
      ft__fail(root, FT_ERR_INVALID_ARG, "%s: operand %d is NULL", what, i);
      return NULL;
    }
    if (vals[i]->t->root != root) {
      ft__fail(root, FT_ERR_INVALID_ARG, "%s: operand %d belongs to another ft_trace", what, i);
      return NULL;
    }
  }
  return root;
}

/* ------------------------------------------------------------- values */

ft_val *ft__val(ft_tracer *t, ft_var *v) {
  if (!v) {
    ft__fail(t, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  ft_val *x = ft_arena_alloc(t->j->arena, sizeof *x);
  if (!x) {
    ft__fail(t, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  x->t = t;
  x->v = v;
  return x;
}

ft_aval ft_val_aval(const ft_val *v) {
  if (!v) return (ft_aval){0};
  return v->v->aval;
}
ft_dtype ft_val_dtype(const ft_val *v) { return v ? v->v->aval.dtype : FT_F32; }
int ft_val_rank(const ft_val *v) { return v ? v->v->aval.rank : 0; }
ft_tracer *ft_val_tracer(const ft_val *v) { return v ? v->t : NULL; }

int64_t ft_val_dim(const ft_val *v, int axis) {
  if (!v) return -1;
  int r = v->v->aval.rank;
  if (axis < 0) axis += r;
  return axis >= 0 && axis < r ? v->v->aval.dims[axis] : -1;
}

/* Adds a capture of outer (a var of tr's parent) to tr. */
static ft_var *capture(ft_tracer *tr, ft_var *outer) {
  for (int i = 0; i < tr->n_cap; i++)
    if (tr->cap_outer[i] == outer) return tr->cap_inner[i];
  if (tr->n_cap == tr->cap_cap) {
    int cap = tr->cap_cap ? 2 * tr->cap_cap : 8;
    ft_var **o = realloc(tr->cap_outer, sizeof *o * (size_t)cap);
    if (o) tr->cap_outer = o;
    ft_var **in = realloc(tr->cap_inner, sizeof *in * (size_t)cap);
    if (in) tr->cap_inner = in;
    if (!o || !in) return NULL;
    tr->cap_cap = cap;
  }
  ft_var *inner = ft_var_new(tr->j->arena, &outer->aval);
  if (!inner) return NULL;
  tr->cap_outer[tr->n_cap] = outer;
  tr->cap_inner[tr->n_cap++] = inner;
  return inner;
}

ft_var *ft__lift(ft_tracer *tr, ft_val *v, const char *what) {
  if (v->v->kind == FT_LIT || v->t == tr) return v->v;
  if (!v->t->active) {
    ft__fail(tr, FT_ERR_INVALID_ARG, "%s: a value of a finished sub-trace (a branch or loop body) "
             "is used outside it; return it from the sub-trace instead", what);
    return NULL;
  }
  if (v->t->level >= tr->level) {
    ft__fail(tr, FT_ERR_INTERNAL, "%s: a value of an unrelated trace level", what);
    return NULL;
  }
  ft_var *outer = ft__lift(tr->parent, v, what);
  if (!outer) return NULL;
  ft_var *in = capture(tr, outer);
  if (!in) ft__fail(tr, FT_ERR_NOMEM, "out of memory while tracing");
  return in;
}

/* ------------------------------------------------------------- params */

ft_pval *ft__params(ft_tracer *root, ft_prim p) {
  ft_pval *ps = ft_params_default(root->j->arena, p);
  if (!ps) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  return ps;
}

void ft__set(ft_pval *ps, ft_prim p, const char *name, ft_pval v) {
  int i = ft_prim_param_index(p, name);
  if (ps && i >= 0) ps[i] = v;
}

ft_pval ft__ints(ft_tracer *root, int n, const int64_t *v) {
  ft_pval pv = ft_pv_ints(root->j->arena, n, v);
  if (pv.tag != FT_PV_TUPLE) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  return pv;
}

ft_pval ft__ints_i(ft_tracer *root, int n, const int *v) {
  int64_t w[FT_MAX_RANK * 4];
  if (n < 0 || n > (int)FT_COUNTOF(w)) n = 0;
  for (int i = 0; i < n; i++) w[i] = v[i];
  return ft__ints(root, n, w);
}

/* ------------------------------------------------------------- emission */

int ft__emit(ft_tracer *root, ft_prim p, int n_in, ft_val *const *in, const ft_pval *params,
             ft_val **out, int max_out) {
  const char *name = ft_prim_get(p)->name;
  if (!root || root->failed) return -1;
  ft_tracer *cur = root->cur;
  ft_var *vin[64], **vins = vin;
  ft_aval ain[64], *ains = ain;
  ft_aval *aout = malloc(sizeof(ft_aval) * (size_t)(max_out > 0 ? max_out : 1));
  ft_var **vout = malloc(sizeof(ft_var *) * (size_t)(max_out > 0 ? max_out : 1));
  if (n_in > 64) {
    vins = malloc(sizeof(ft_var *) * (size_t)n_in);
    ains = malloc(sizeof(ft_aval) * (size_t)n_in);
  }
  int n_out = -1;
  if (!aout || !vout || !vins || !ains) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int i = 0; i < n_in; i++) {
    if (!in[i]) {
      ft__fail(root, FT_ERR_INVALID_ARG, "%s: operand %d is NULL", name, i);
      goto done;
    }
    if (!(vins[i] = ft__lift(cur, in[i], name))) goto done;
    ains[i] = vins[i]->aval;
  }
  int n = 0;
  ft_status st = ft_infer(root->ctx, p, params, n_in, ains, &n, aout, max_out);
  if (st) {
    char msg[sizeof root->ctx->err];
    snprintf(msg, sizeof msg, "%s", ft_ctx_error(root->ctx));
    ft__fail(root, st, "%s", msg);
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (!(vout[i] = ft_var_new(root->j->arena, &aout[i]))) {
      ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
      goto done;
    }
  if (!ft_jb_add(&cur->jb, p, n_in, vins, n, vout, params)) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (!(out[i] = ft__val(cur, vout[i]))) goto done;
  n_out = n;
done:
  if (vins != vin) free(vins);
  if (ains != ain) free(ains);
  free(aout);
  free(vout);
  return n_out;
}

ft_val *ft__emit1(ft_tracer *root, ft_prim p, int n_in, ft_val *const *in, const ft_pval *params) {
  ft_val *out[1];
  return ft__emit(root, p, n_in, in, params, out, 1) == 1 ? out[0] : NULL;
}

/* ------------------------------------------------------------- literals */

/* x rounded to nearest-even at the precision of a binary float with `bits`
 * significant bits and minimum normal exponent emin (subnormals below it),
 * overflowing to infinity beyond max. */
static double round_to(double x, int bits, int emin, double max) {
  if (!isfinite(x) || x == 0) return x;
  int e;
  frexp(x, &e); /* x = m * 2^e, 0.5 <= |m| < 1 */
  if (e < emin) e = emin;
  double q = ldexp(1.0, e - bits);
  double r = nearbyint(x / q) * q;
  if (fabs(r) > max) return copysign(INFINITY, x);
  return r;
}

static double round_float(ft_dtype dt, double v) {
  switch (dt) {
  case FT_F16: return round_to(v, 11, -13, 65504.0);
  case FT_BF16: return round_to(v, 8, -125, 3.38953138925153547590470800371487866880e38);
  case FT_F32: case FT_C64: return (double)(float)v;
  default: return v;
  }
}

/* Wraps an integer value to the width of dt (two's complement). */
static int64_t wrap_signed(ft_dtype dt, int64_t v) {
  switch (dt) {
  case FT_I8: return (int8_t)v;
  case FT_I16: return (int16_t)v;
  case FT_I32: return (int32_t)v;
  default: return v;
  }
}
static uint64_t wrap_unsigned(ft_dtype dt, uint64_t v) {
  switch (dt) {
  case FT_U8: return (uint8_t)v;
  case FT_U16: return (uint16_t)v;
  case FT_U32: return (uint32_t)v;
  default: return v;
  }
}

/* A C-cast-like conversion of a double to an integer that never invokes UB. */
static int64_t double_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
static uint64_t double_to_u64(double v) {
  if (isnan(v) || v <= -1.0) return v <= -1.0 ? (uint64_t)double_to_i64(v) : 0;
  if (v >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)v;
}

static ft_var *lit_make(ft_arena *a, ft_dtype dt, double fv, int64_t iv, uint64_t uv, int src) {
  /* src: 0 float value, 1 signed int value, 2 unsigned int value */
  ft_var *x;
  if (dt == FT_BOOL) {
    bool b = src == 0 ? fv != 0 : src == 1 ? iv != 0 : uv != 0;
    x = ft_lit_new_bool(a, b);
  } else if (ft_dtype_is_inexact(dt)) {
    double v = src == 0 ? fv : src == 1 ? (double)iv : (double)uv;
    x = ft_lit_new_float(a, dt, round_float(dt, v));
  } else if (ft_dtype_is_unsigned(dt)) {
    uint64_t v = src == 0 ? double_to_u64(fv) : src == 1 ? (uint64_t)iv : uv;
    x = ft_lit_new_uint(a, dt, wrap_unsigned(dt, v));
  } else {
    int64_t v = src == 0 ? double_to_i64(fv) : src == 1 ? iv : (int64_t)uv;
    x = ft_lit_new_int(a, dt, wrap_signed(dt, v));
  }
  return x;
}

ft_var *ft__lit_convert(ft_arena *a, const ft_var *lit, ft_dtype dt, bool weak) {
  ft_dtype s = lit->aval.dtype;
  ft_var *x;
  if (ft_dtype_is_inexact(s)) x = lit_make(a, dt, lit->lit.f, 0, 0, 0);
  else if (ft_dtype_is_unsigned(s)) x = lit_make(a, dt, 0, 0, lit->lit.u, 2);
  else x = lit_make(a, dt, 0, lit->lit.i, 0, 1);
  if (x) x->aval.weak_type = weak;
  return x;
}

ft_val *ft__lit(ft_tracer *t, ft_dtype dt, double v, bool weak) {
  if (!t || t->root->failed) return NULL;
  if ((unsigned)dt >= FT_NUM_DTYPES || dt == FT_FLOAT0) {
    ft__fail(t, FT_ERR_INVALID_ARG, "ft_scalar: invalid dtype %d", (int)dt);
    return NULL;
  }
  if (ft_dtype_is_key(dt)) {
    ft__fail(t, FT_ERR_TYPE, "ft_scalar/ft_full: %s has no numeric value; make keys with "
             "ft_random_key or ft_random_wrap", ft_dtype_name(dt));
    return NULL;
  }
  ft_var *x = lit_make(t->j->arena, dt, v, 0, 0, 0);
  if (x) x->aval.weak_type = weak;
  return ft__val(t, x);
}

static ft_val *lit_int(ft_tracer *t, ft_dtype dt, int64_t v, bool weak) {
  if (!t || t->root->failed) return NULL;
  ft_var *x = lit_make(t->j->arena, dt, 0, v, 0, 1);
  if (x) x->aval.weak_type = weak;
  return ft__val(t, x);
}

ft_val *ft_const_f32(ft_tracer *t, float v) { return ft__lit(t, FT_F32, v, false); }
ft_val *ft_const_f64(ft_tracer *t, double v) { return ft__lit(t, FT_F64, v, false); }
ft_val *ft_const_i32(ft_tracer *t, int32_t v) { return lit_int(t, FT_I32, v, false); }
ft_val *ft_const_i64(ft_tracer *t, int64_t v) { return lit_int(t, FT_I64, v, false); }
ft_val *ft_const_bool(ft_tracer *t, bool v) { return lit_int(t, FT_BOOL, v, false); }
ft_val *ft_scalar(ft_tracer *t, ft_dtype dt, double v) { return ft__lit(t, dt, v, false); }
ft_val *ft_weak_f(ft_tracer *t, double v) { return ft__lit(t, FT_F32, v, true); }
ft_val *ft_weak_i(ft_tracer *t, int64_t v) { return lit_int(t, FT_I32, v, true); }

ft_val *ft_const_u32(ft_tracer *t, uint32_t v) {
  if (!t || t->root->failed) return NULL;
  return ft__val(t, lit_make(t->j->arena, FT_U32, 0, 0, v, 2));
}

/* ------------------------------------------------------------ constants */

/* Reads element 0 of data as a literal of dtype dt. */
static ft_var *lit_from_bytes(ft_arena *a, ft_dtype dt, const void *p) {
  switch (dt) {
  case FT_BOOL: return ft_lit_new_bool(a, *(const uint8_t *)p != 0);
  case FT_I8: return ft_lit_new_int(a, dt, *(const int8_t *)p);
  case FT_I16: { int16_t v; memcpy(&v, p, 2); return ft_lit_new_int(a, dt, v); }
  case FT_I32: { int32_t v; memcpy(&v, p, 4); return ft_lit_new_int(a, dt, v); }
  case FT_I64: { int64_t v; memcpy(&v, p, 8); return ft_lit_new_int(a, dt, v); }
  case FT_U8: return ft_lit_new_uint(a, dt, *(const uint8_t *)p);
  case FT_U16: { uint16_t v; memcpy(&v, p, 2); return ft_lit_new_uint(a, dt, v); }
  case FT_U32: { uint32_t v; memcpy(&v, p, 4); return ft_lit_new_uint(a, dt, v); }
  case FT_U64: { uint64_t v; memcpy(&v, p, 8); return ft_lit_new_uint(a, dt, v); }
  case FT_F32: { float v; memcpy(&v, p, 4); return ft_lit_new_float(a, dt, v); }
  case FT_F64: { double v; memcpy(&v, p, 8); return ft_lit_new_float(a, dt, v); }
  case FT_C64: {
    float v[2];
    memcpy(v, p, 8);
    ft_var *x = ft_lit_new_float(a, dt, v[0]);
    if (x) x->lit_im = v[1];
    return x;
  }
  case FT_C128: {
    double v[2];
    memcpy(v, p, 16);
    ft_var *x = ft_lit_new_float(a, dt, v[0]);
    if (x) x->lit_im = v[1];
    return x;
  }
  default: return NULL; /* f16/bf16 scalars: stored as constvars instead */
  }
}

ft_val *ft_constant(ft_tracer *t, ft_dtype dt, int rank, const int64_t *dims, const void *data) {
  if (!t || t->root->failed) return NULL;
  ft_tracer *root = t->root;
  if ((unsigned)dt >= FT_NUM_DTYPES || dt == FT_FLOAT0 || rank < 0 || rank > FT_MAX_RANK ||
      (rank && !dims) || !data) {
    ft__fail(root, FT_ERR_INVALID_ARG, "ft_constant: invalid dtype, rank, dims or data");
    return NULL;
  }
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) {
      ft__fail(root, FT_ERR_INVALID_ARG, "ft_constant: negative dimension %lld", (long long)dims[i]);
      return NULL;
    }
  ft_arena *a = root->j->arena;
  if (rank == 0) {
    ft_var *l = lit_from_bytes(a, dt, data);
    if (l) return ft__val(root, l);
  }
  ft_aval av = ft_aval_make(dt, rank, dims);
  if (!ft_aval_size_ok(&av)) {
    char b[256];
    ft__fail(root, FT_ERR_SHAPE, "ft_constant: shape %s has more than 2^56 elements",
             ft_aval_str(&av, b, sizeof b));
    return NULL;
  }
  size_t bytes = (size_t)ft_aval_size(&av) * ft_dtype_size(dt);
  void *copy = ft_arena_alloc(a, bytes ? bytes : 1);
  ft_var *v = ft_var_new(a, &av);
  if (root->n_const == root->const_cap) {
    int cap = root->const_cap ? 2 * root->const_cap : 8;
    ft_var **cv = realloc(root->constvars, sizeof *cv * (size_t)cap);
    if (cv) root->constvars = cv;
    void **cd = realloc(root->const_data, sizeof *cd * (size_t)cap);
    if (cd) root->const_data = cd;
    if (cv && cd) root->const_cap = cap;
  }
  if (!copy || !v || root->n_const == root->const_cap) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  memcpy(copy, data, bytes);
  root->constvars[root->n_const] = v;
  root->const_data[root->n_const++] = copy;
  return ft__val(root, v);
}

ft_val *ft_full(ft_tracer *t, ft_dtype dt, int rank, const int64_t *dims, double value) {
  ft_val *lit = ft__lit(t, dt, value, false);
  if (!lit || rank == 0) return lit;
  return ft_broadcast_in_dim(lit, rank, dims, NULL);
}

/* -------------------------------------------------------------- tracers */

/* A new tracer under parent (NULL: a root with its own jaxpr and arena). */
static ft_tracer *tracer_new(ft_ctx *ctx, ft_tracer *parent) {
  ft_tracer *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ctx = ctx;
  t->parent = parent;
  t->root = parent ? parent->root : t;
  t->level = parent ? parent->level + 1 : 0;
  t->j = ft_jaxpr_new(parent ? parent->root->j->arena : NULL);
  if (!t->j) {
    free(t);
    return NULL;
  }
  ft_jb_init(&t->jb, t->j);
  if (parent) {
    t->next_all = t->root->next_all;
    t->root->next_all = t;
  }
  return t;
}

static void tracer_free_one(ft_tracer *t) {
  free(t->cap_outer);
  free(t->cap_inner);
  free(t->msg);
  free(t->constvars);
  free(t->const_data);
  free(t);
}

static void tracer_free_all(ft_tracer *root) {
  for (ft_tracer *t = root->next_all, *n; t; t = n) {
    n = t->next_all;
    tracer_free_one(t);
  }
  tracer_free_one(root);
}

int ft__run(ft_tracer *t, ft_trace_fn fn, void *user, int n_args, ft_var *const *args,
            const char *what) {
  ft_tracer *root = t->root;
  ft_val **in = calloc((size_t)n_args + 1, sizeof *in);
  ft_val **out = calloc(FT_TRACE_MAX_OUT, sizeof *out);
  ft_var **ov = calloc(FT_TRACE_MAX_OUT, sizeof *ov);
  int n = -1;
  ft_tracer *saved = root->cur;
  if (!in || !out || !ov) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int i = 0; i < n_args; i++)
    if (!(in[i] = ft__val(t, args[i]))) goto done;
  root->cur = t;
  t->active = true;
  n = fn(t, in, out, FT_TRACE_MAX_OUT, user);
  if (!root->failed && n < 0)
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: the traced function returned %d (failure)", what, n);
  if (!root->failed && n > FT_TRACE_MAX_OUT)
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: the traced function returned %d outputs (at most %d)",
             what, n, FT_TRACE_MAX_OUT);
  for (int i = 0; !root->failed && i < n; i++) {
    if (!out[i]) ft__fail(root, FT_ERR_INVALID_ARG, "%s: output %d is NULL", what, i);
    else if (out[i]->t->root != root)
      ft__fail(root, FT_ERR_INVALID_ARG, "%s: output %d belongs to another ft_trace", what, i);
    else ov[i] = ft__lift(t, out[i], what);
  }
  t->active = false;
  root->cur = saved;
  if (root->failed) {
    n = -1;
    goto done;
  }
  if (!ft_jaxpr_set_vars(t->j, 0, NULL, 0, NULL, n, ov)) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    n = -1;
  }
done:
  free(in);
  free(out);
  free(ov);
  return n;
}

ft_tracer *ft__sub_new(ft_tracer *root, int n_args, const ft_aval *avals, ft_var **args) {
  ft_tracer *t = tracer_new(root->ctx, root->cur);
  if (!t) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  for (int i = 0; i < n_args; i++) {
    ft_aval a = avals[i];
    if (!(args[i] = ft_var_new(root->j->arena, &a))) {
      ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
      return NULL;
    }
  }
  return t;
}

ft_jaxpr *ft_trace(ft_ctx *ctx, ft_trace_fn fn, void *user, int n_in, const ft_aval *in_avals) {
  if (!ctx) return NULL;
  if (!fn || n_in < 0 || (n_in && !in_avals)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_trace: fn is NULL or n_in/in_avals invalid");
    return NULL;
  }
  for (int i = 0; i < n_in; i++) {
    const ft_aval *a = &in_avals[i];
    bool ok = (unsigned)a->dtype < FT_NUM_DTYPES && a->rank >= 0 && a->rank <= FT_MAX_RANK;
    for (int d = 0; ok && d < a->rank; d++) ok = a->dims[d] >= 0;
    if (ok && !ft_aval_size_ok(a)) {
      char b[256];
      ft_set_error(ctx, FT_ERR_SHAPE, "ft_trace: input %d (%s) has more than 2^56 elements", i,
                   ft_aval_str(a, b, sizeof b));
      return NULL;
    }
    if (!ok) {
      ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_trace: input %d has an invalid aval", i);
      return NULL;
    }
  }
  ft_tracer *root = tracer_new(ctx, NULL);
  if (!root) {
    ft_set_error(ctx, FT_ERR_NOMEM, "ft_trace: out of memory");
    return NULL;
  }
  ft_jaxpr *j = root->j;
  ft_var **args = calloc((size_t)n_in + 1, sizeof *args);
  if (!args) ft__fail(root, FT_ERR_NOMEM, "ft_trace: out of memory");
  for (int i = 0; args && i < n_in && !root->failed; i++) {
    ft_aval a = in_avals[i];
    a.weak_type = false;
    if (!(args[i] = ft_var_new(j->arena, &a))) ft__fail(root, FT_ERR_NOMEM, "ft_trace: out of memory");
  }
  root->cur = root;
  if (!root->failed) ft__run(root, fn, user, n_in, args, "ft_trace");
  if (!root->failed) {
    ft_var **outs = j->outvars;
    int n_out = j->n_out;
    if (!ft_jaxpr_set_vars(j, root->n_const, root->constvars, n_in, args, n_out, outs))
      ft__fail(root, FT_ERR_NOMEM, "ft_trace: out of memory");
  }
  if (!root->failed && root->n_const) {
    j->const_data = ft_arena_alloc(j->arena, sizeof(void *) * (size_t)root->n_const);
    if (!j->const_data) ft__fail(root, FT_ERR_NOMEM, "ft_trace: out of memory");
    else memcpy(j->const_data, root->const_data, sizeof(void *) * (size_t)root->n_const);
  }
  ft_status vst = root->failed ? FT_OK : ft_jaxpr_verify(ctx, j);
  if (vst == FT_ERR_NOMEM) {
    ft__fail(root, FT_ERR_NOMEM, "ft_trace: out of memory");
  } else if (vst != FT_OK) {
    /* A traced jaxpr that does not verify is a bug in the tracer. */
    char msg[sizeof ctx->err];
    snprintf(msg, sizeof msg, "%s", ft_ctx_error(ctx));
    ft__fail(root, FT_ERR_INTERNAL, "ft_trace: internal error: traced jaxpr does not verify: %s", msg);
  }
  free(args);
  if (root->failed) {
    /* Restore the first error: later calls may have overwritten ctx's. */
    ft_set_error(ctx, root->st, "%s", root->msg ? root->msg : "ft_trace failed");
    tracer_free_all(root);
    ft_jaxpr_free(j);
    return NULL;
  }
  tracer_free_all(root);
  ft_ctx_event ev = {.kind = FT_CTX_EV_TRACE, .jaxpr = j};
  if (ft_ctx_notify(ctx, &ev) != FT_OK) return ft_jaxpr_free(j), NULL; /* the ledger's record */
  return j;
}
