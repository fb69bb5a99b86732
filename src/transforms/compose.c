/* src/transforms/compose.c: composition strings — a transform stack in
 * JAX's Python spelling, "jit(vmap(grad(f, argnums=0), in_axes=(0, None)))"
 * (docs/transform.md). A recursive-descent parser builds a small tree; the
 * evaluator applies it inside out through the public transforms, so every
 * step is verified and recorded by ft__after_transform like a direct call,
 * and the result is the jaxpr the hand-composed calls give.
 *
 * Errors about the string (syntax, unknown names and keywords, counts and
 * ranges that need the inner function's signature) are FT_ERR_PARSE with
 * the column and a caret; a transform's own error keeps its status and is
 * prefixed with the step. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmap.h"

/* ============================================================ the tree */

typedef enum tkind {
  T_LEAF, T_GRAD, T_VALUE_AND_GRAD, T_JVP, T_VJP, T_VMAP, T_JIT, T_JACFWD, T_JACREV, T_HESSIAN
} tkind;

/* Keyword slots, in no particular order; a transform's table entry says
 * which it takes and which positional places map to them. */
enum { KW_ARGNUMS, KW_HAS_AUX, KW_IN_AXES, KW_OUT_AXES, KW_AXIS_SIZE, NKW };
static const char *const kw_names[NKW] = {"argnums", "has_aux", "in_axes", "out_axes",
                                          "axis_size"};

typedef struct tdef {
  const char *name;
  tkind kind;
  int kws[3];            /* the keywords it takes, in JAX's positional order; -1 ends */
  const char *expected;  /* for "has no keyword" messages */
} tdef;

static const tdef tdefs[] = {
    {"grad", T_GRAD, {KW_ARGNUMS, KW_HAS_AUX, -1}, "argnums or has_aux"},
    {"value_and_grad", T_VALUE_AND_GRAD, {KW_ARGNUMS, KW_HAS_AUX, -1}, "argnums or has_aux"},
    {"jvp", T_JVP, {-1}, NULL},
    {"vjp", T_VJP, {-1}, NULL},
    {"vmap", T_VMAP, {KW_IN_AXES, KW_OUT_AXES, -1}, "in_axes, out_axes or axis_size"},
    {"jit", T_JIT, {-1}, NULL},
    {"jacfwd", T_JACFWD, {KW_ARGNUMS, -1}, "argnums"},
    {"jacrev", T_JACREV, {KW_ARGNUMS, -1}, "argnums"},
    {"hessian", T_HESSIAN, {KW_ARGNUMS, -1}, "argnums"},
};
#define N_TDEFS ((int)(sizeof tdefs / sizeof tdefs[0]))

/* vmap takes axis_size by keyword only (JAX's third positional is axis_name). */
static bool takes_kw(const tdef *d, int kw) {
  if (d->kind == T_VMAP && kw == KW_AXIS_SIZE) return true;
  for (int i = 0; i < 3 && d->kws[i] >= 0; i++)
    if (d->kws[i] == kw) return true;
  return false;
}

typedef enum vkind { V_ABSENT = 0, V_INT, V_NONE, V_BOOL, V_TUPLE } vkind;

/* A value: an int, None, a bool, or a flat tuple of ints and Nones (the
 * programs' inputs are flat, so nested pytrees of axes have no meaning). */
typedef struct cval {
  vkind k;
  int64_t i;
  bool b;
  size_t pos;       /* where the value starts */
  int n;            /* tuple entries */
  struct cval *items;
} cval;

typedef struct cnode {
  const tdef *def;  /* NULL for the leaf */
  size_t pos, end;  /* the source span: name .. ')' */
  struct cnode *arg;
  cval kw[NKW];
} cnode;

/* ============================================================ the parser */

typedef struct cparser {
  ft_ctx *ctx;
  const char *s;
  size_t len, i;
  const char *name;  /* the program's required name, or NULL */
  bool failed;
  int depth;
} cparser;

/* The string on one line with a caret under byte pos: what every error of
 * this file ends with. Control characters print as spaces so the caret stays
 * under its column. */
static void show_caret(ft_buf *b, const char *s, size_t len, size_t pos) {
  ft_buf_puts(b, "\n");
  for (size_t k = 0; k < len; k++) {
    unsigned char c = (unsigned char)s[k];
    char ch = c >= 32 && c < 127 ? (char)c : ' ';
    ft_buf_putn(b, &ch, 1);
  }
  ft_buf_printf(b, "\n%*s^", (int)pos, "");
}

/* Records an FT_ERR_PARSE at byte pos (first failure wins); returns false. */
static bool cfail_at(ft_ctx *ctx, const char *s, size_t len, size_t pos, const char *fmt,
                     va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  ft_buf b = {0};
  ft_buf_printf(&b, "column %d: %s", (int)pos + 1, msg);
  show_caret(&b, s, len, pos);
  ft_set_error(ctx, FT_ERR_PARSE, "%s", b.failed ? msg : b.p);
  free(b.p);
  return false;
}

static bool perr(cparser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool perr(cparser *p, size_t pos, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  va_list ap;
  va_start(ap, fmt);
  cfail_at(p->ctx, p->s, p->len, pos, fmt, ap);
  va_end(ap);
  return false;
}

static void skip_ws(cparser *p) {
  while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
    p->i++;
}

static bool is_ident0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident(char c) { return is_ident0(c) || (c >= '0' && c <= '9'); }

/* An identifier at the cursor: its length (0 when there is none). */
static size_t ident_len(const cparser *p) {
  size_t k = p->i;
  if (k >= p->len || !is_ident0(p->s[k])) return 0;
  while (k < p->len && is_ident(p->s[k])) k++;
  return k - p->i;
}

static bool word_is(const cparser *p, size_t at, size_t n, const char *w) {
  return strlen(w) == n && !memcmp(p->s + at, w, n);
}

/* Describes the token at the cursor for "expected X, got Y" messages. */
static const char *got(const cparser *p, char *buf, size_t n) {
  if (p->i >= p->len) return "the end of the string";
  size_t k = ident_len(p);
  if (!k && (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9'))) {
    k = 1;
    while (p->i + k < p->len && p->s[p->i + k] >= '0' && p->s[p->i + k] <= '9') k++;
  }
  if (!k) k = 1;
  if (k > 40) k = 40;
  unsigned char c = (unsigned char)p->s[p->i];
  if (k == 1 && (c < 32 || c >= 127)) snprintf(buf, n, "byte 0x%02x", c);
  else snprintf(buf, n, "'%.*s'", (int)k, p->s + p->i);
  return buf;
}

static bool expect_char(cparser *p, char c, const char *what) {
  skip_ws(p);
  if (p->i < p->len && p->s[p->i] == c) {
    p->i++;
    return true;
  }
  char b[64];
  return perr(p, p->i, "expected %s, got %s", what, got(p, b, sizeof b));
}

static bool parse_int(cparser *p, cval *v) {
  size_t k = p->i;
  bool neg = k < p->len && p->s[k] == '-';
  if (neg) k++;
  if (k >= p->len || p->s[k] < '0' || p->s[k] > '9') {
    char b[64];
    return perr(p, p->i, "expected an integer, got %s", got(p, b, sizeof b));
  }
  int64_t x = 0;
  bool big = false;
  for (; k < p->len && p->s[k] >= '0' && p->s[k] <= '9'; k++) {
    if (x > (INT_MAX - (p->s[k] - '0')) / 10) big = true;
    else x = x * 10 + (p->s[k] - '0');
  }
  if (big) return perr(p, p->i, "integer out of range");
  if (k < p->len && is_ident(p->s[k])) return perr(p, k, "expected a digit, ',' or ')'");
  v->k = V_INT;
  v->i = neg ? -x : x;
  p->i = k;
  return true;
}

static bool parse_value(cparser *p, cval *v, bool in_tuple);

/* '(' already seen at start: a tuple, or a parenthesized value (Python's
 * (0) is 0). */
static bool parse_paren(cparser *p, cval *v, size_t start) {
  cval tmp[64];
  int n = 0;
  bool comma = false;
  for (;;) {
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == ')') break;
    if (n == 64) return perr(p, p->i, "too many entries (at most 64)");
    memset(&tmp[n], 0, sizeof tmp[n]);
    if (!parse_value(p, &tmp[n++], true)) return false;
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == ',') {
      p->i++;
      comma = true;
      continue;
    }
    if (p->i < p->len && p->s[p->i] == ')') break;
    char b[64];
    return perr(p, p->i, "expected ',' or ')', got %s", got(p, b, sizeof b));
  }
  p->i++;
  if (n == 1 && !comma) {
    *v = tmp[0];
    v->pos = start;
    return true;
  }
  v->k = V_TUPLE;
  v->pos = start;
  v->n = n;
  if (n && !(v->items = malloc(sizeof(cval) * (size_t)n)))
    return p->failed = true, ft_set_error(p->ctx, FT_ERR_NOMEM, "transform: out of memory"), false;
  if (n) memcpy(v->items, tmp, sizeof(cval) * (size_t)n);
  return true;
}

static bool parse_value(cparser *p, cval *v, bool in_tuple) {
  skip_ws(p);
  v->pos = p->i;
  if (p->i < p->len && p->s[p->i] == '(') {
    if (in_tuple)
      return perr(p, p->i, "expected an integer or None: nested tuples have no meaning here "
                           "(the program's inputs and outputs are flat)");
    p->i++;
    return parse_paren(p, v, v->pos);
  }
  size_t n = ident_len(p);
  if (n) {
    if (word_is(p, p->i, n, "None")) v->k = V_NONE;
    else if (word_is(p, p->i, n, "True")) v->k = V_BOOL, v->b = true;
    else if (word_is(p, p->i, n, "False")) v->k = V_BOOL, v->b = false;
    else
      return perr(p, p->i, "expected an integer, None, True, False or a tuple, got '%.*s'",
                  (int)n, p->s + p->i);
    p->i += n;
    return true;
  }
  if (p->i < p->len && (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9')))
    return parse_int(p, v);
  char b[64];
  return perr(p, p->i, "expected an integer, None, True, False or a tuple, got %s",
              got(p, b, sizeof b));
}

static void free_tree(cnode *n) {
  while (n) {
    cnode *next = n->arg;
    for (int k = 0; k < NKW; k++) free(n->kw[k].items);
    free(n);
    n = next;
  }
}

static cnode *parse_expr(cparser *p);

/* Keyword or positional argument number `idx` (0-based after the function)
 * of a call of d. */
static bool parse_arg(cparser *p, cnode *n, int idx, bool *seen_kw) {
  skip_ws(p);
  size_t at = p->i, len = ident_len(p);
  size_t save = p->i;
  int slot = -1;
  if (len) {
    p->i += len;
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == '=') {
      p->i++;
      for (int k = 0; k < NKW; k++)
        if (word_is(p, at, len, kw_names[k])) slot = k;
      if (slot < 0 || !takes_kw(n->def, slot)) {
        if (!n->def->expected)
          return perr(p, at, "%s takes no keyword arguments here, got '%.*s'", n->def->name,
                      (int)len, p->s + at);
        bool argnum = word_is(p, at, len, "argnum");
        return perr(p, at, "%s has no keyword '%.*s' (expected %s)%s", n->def->name, (int)len,
                    p->s + at, n->def->expected, argnum ? "; did you mean argnums?" : "");
      }
      *seen_kw = true;
    } else {
      p->i = save;
    }
  }
  if (slot < 0) {
    if (*seen_kw) return perr(p, at, "positional argument follows keyword argument");
    int nk = 0;
    while (nk < 3 && n->def->kws[nk] >= 0) nk++;
    if (idx >= nk)
      return perr(p, at, "%s takes %d positional argument%s after the function", n->def->name,
                  nk, nk == 1 ? "" : "s");
    slot = n->def->kws[idx];
  }
  if (n->kw[slot].k != V_ABSENT)
    return perr(p, at, "keyword '%s' given twice", kw_names[slot]);
  return parse_value(p, &n->kw[slot], false);
}

/* fn '(' expr (',' arg)* [','] ')' with fn's name at the cursor. */
static cnode *parse_call(cparser *p, cnode *n) {
  p->i++; /* '(' */
  if (++p->depth > 64) return perr(p, n->pos, "transforms nested too deeply (at most 64)"), n;
  if (!(n->arg = parse_expr(p))) return n;
  bool seen_kw = false;
  for (int idx = 0;; idx++) {
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == ')') break;
    if (!expect_char(p, ',', "',' or ')'")) return n;
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == ')') break; /* a trailing comma */
    if (!parse_arg(p, n, idx, &seen_kw)) return n;
  }
  p->i++;
  p->depth--;
  n->end = p->i;
  return n;
}

static cnode *parse_expr(cparser *p) {
  skip_ws(p);
  size_t at = p->i, len = ident_len(p);
  char b[64];
  if (!len)
    return perr(p, at, "expected a transform (grad, vmap, jit, ...) or the function's name, got %s",
                got(p, b, sizeof b)),
           NULL;
  cnode *n = calloc(1, sizeof *n);
  if (!n) return p->failed = true, ft_set_error(p->ctx, FT_ERR_NOMEM, "transform: out of memory"), NULL;
  n->pos = at;
  p->i += len;
  for (int k = 0; k < N_TDEFS; k++)
    if (word_is(p, at, len, tdefs[k].name)) n->def = &tdefs[k];
  skip_ws(p);
  bool call = p->i < p->len && p->s[p->i] == '(';
  if (call && !n->def) {
    perr(p, at, "unknown transform '%.*s' (expected grad, value_and_grad, jvp, vjp, vmap, jit, "
                "jacfwd, jacrev or hessian)", (int)len, p->s + at);
    return free_tree(n), NULL;
  }
  if (!call && n->def) {
    perr(p, p->i, "expected '(' after '%s', got %s", n->def->name, got(p, b, sizeof b));
    return free_tree(n), NULL;
  }
  if (!call) {
    if (word_is(p, at, len, "None") || word_is(p, at, len, "True") || word_is(p, at, len, "False")) {
      perr(p, at, "expected a transform or the function's name, got '%.*s'", (int)len, p->s + at);
      return free_tree(n), NULL;
    }
    if (p->name && !word_is(p, at, len, p->name)) {
      perr(p, at, "unknown function '%.*s' (the program is named '%s')", (int)len, p->s + at,
           p->name);
      return free_tree(n), NULL;
    }
    n->end = at + len;
    return n;
  }
  parse_call(p, n);
  if (p->failed) return free_tree(n), NULL;
  return n;
}

static cnode *parse_all(cparser *p) {
  cnode *n = parse_expr(p);
  if (!n) return NULL;
  skip_ws(p);
  if (p->i < p->len) {
    char b[64];
    perr(p, p->i, "unexpected %s after the end of the expression", got(p, b, sizeof b));
    return free_tree(n), NULL;
  }
  return n;
}

/* ========================================================= the evaluator */

typedef struct ceval {
  ft_ctx *ctx;
  const char *s;
  size_t len;
  const ft_transform_options *opts;
  const ft_jaxpr *base;
  int step;
} ceval;

static bool eerr(ceval *e, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool eerr(ceval *e, size_t pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cfail_at(e->ctx, e->s, e->len, pos, fmt, ap);
  va_end(ap);
  return false;
}

/* A transform failed: name the step, drop the transform's own "name: "
 * (it would repeat), keep the status, and show where the step is. */
static void step_failed(ceval *e, const cnode *n) {
  ft_ctx *ctx = e->ctx;
  if (!ctx) return;
  size_t nl = strlen(n->def->name);
  const char *msg = ft_ctx_error(ctx);
  if (!strncmp(msg, n->def->name, nl) && !strncmp(msg + nl, ": ", 2)) msg += nl + 2;
  ft_status st = ft_ctx_status(ctx);
  ft_buf b = {0};
  ft_buf_printf(&b, "%s(...): %s", n->def->name, msg);
  show_caret(&b, e->s, e->len, n->pos);
  if (!b.failed) ft_ctx_set_message(ctx, st == FT_OK ? FT_ERR_INTERNAL : st, b.p);
  else ft_error_prefix(ctx, "%s(...)", n->def->name);
  free(b.p);
}

/* argnums: an int or a non-empty tuple of ints, each in [-n, n) (negative
 * counts from the end, as in JAX). Writes up to max into out; returns the
 * count or -1. */
static int resolve_argnums(ceval *e, const cnode *n, int n_in, int *out, int max) {
  const cval *v = &n->kw[KW_ARGNUMS];
  if (v->k == V_ABSENT) return out[0] = 0, 1;
  const cval *items = v->k == V_TUPLE ? v->items : v;
  int cnt = v->k == V_TUPLE ? v->n : 1;
  if (cnt == 0) return eerr(e, v->pos, "argnums must not be empty"), -1;
  if (cnt > max) return eerr(e, v->pos, "too many argnums (at most %d)", max), -1;
  for (int k = 0; k < cnt; k++) {
    if (items[k].k != V_INT)
      return eerr(e, items[k].pos, "argnums must be an integer or a tuple of integers"), -1;
    int64_t a = items[k].i;
    if (a < -n_in || a >= n_in)
      return eerr(e, items[k].pos, "argnums %lld out of range for a function of %d input%s",
                  (long long)a, n_in, n_in == 1 ? "" : "s"),
             -1;
    out[k] = (int)(a < 0 ? a + n_in : a);
  }
  return cnt;
}

/* in_axes / out_axes: an int or None for every entry, or a tuple of exactly
 * n of them. Writes n entries (FT_VMAP_NONE for None). */
static bool resolve_axes(ceval *e, const cval *v, const char *key, int n, const char *what,
                         int *out) {
  if (v->k == V_ABSENT) {
    for (int k = 0; k < n; k++) out[k] = 0;
    return true;
  }
  if (v->k == V_BOOL) return eerr(e, v->pos, "%s must be an integer, None or a tuple", key);
  if (v->k != V_TUPLE) {
    for (int k = 0; k < n; k++) out[k] = v->k == V_NONE ? FT_VMAP_NONE : (int)v->i;
    return true;
  }
  if (v->n != n)
    return eerr(e, v->pos, "%s has %d entr%s but the function %s %d %s%s", key, v->n,
                v->n == 1 ? "y" : "ies", what[0] == 'i' ? "takes" : "returns", n, what,
                n == 1 ? "" : "s");
  for (int k = 0; k < n; k++) {
    if (v->items[k].k == V_BOOL)
      return eerr(e, v->items[k].pos, "%s entries must be an integer or None", key);
    out[k] = v->items[k].k == V_NONE ? FT_VMAP_NONE : (int)v->items[k].i;
  }
  return true;
}

/* The axis of in_axes for input k, or FT_VMAP_NONE; used before the inner
 * function's arity is known (so a short tuple just stops early). */
static bool axis_of(const cval *v, int k, int *ax) {
  if (v->k == V_ABSENT) return *ax = 0, true;
  if (v->k == V_NONE) return *ax = FT_VMAP_NONE, true;
  if (v->k == V_INT) return *ax = (int)v->i, true;
  if (v->k != V_TUPLE || k >= v->n || v->items[k].k == V_BOOL) return false;
  *ax = v->items[k].k == V_NONE ? FT_VMAP_NONE : (int)v->items[k].i;
  return true;
}

/* The avals seen by the function inside vmap node n, given those of n's
 * result: each mapped entry loses its batch axis. Stops at the first entry
 * that cannot be mapped (the vmap step reports it). Returns the count. */
static int unbatch_avals(const cnode *n, const ft_aval *in, int n_in, ft_aval *out) {
  const cval *v = &n->kw[KW_IN_AXES];
  for (int k = 0; k < n_in; k++) {
    int ax;
    if (!axis_of(v, k, &ax)) return k;
    out[k] = in[k];
    if (ax == FT_VMAP_NONE) continue;
    int a = ax < 0 ? ax + in[k].rank : ax;
    if (a < 0 || a >= in[k].rank) return k;
    for (int d = a; d + 1 < in[k].rank; d++) out[k].dims[d] = out[k].dims[d + 1];
    out[k].rank--;
  }
  return n_in;
}

static void put_axes(ft_buf *b, const char *key, const int *ax, int n) {
  ft_buf_printf(b, "%s=(", key);
  for (int k = 0; k < n; k++) {
    if (k) ft_buf_puts(b, ", ");
    if (ax[k] == FT_VMAP_NONE) ft_buf_puts(b, "None");
    else ft_buf_printf(b, "%d", ax[k]);
  }
  ft_buf_puts(b, n == 1 ? ",)" : ")");
}

static ft_jaxpr *apply_vmap(ceval *e, const cnode *n, const ft_jaxpr *f, const ft_aval *avals,
                            int n_avals, ft_buf *params) {
  int ni = f->n_in, no = f->n_out;
  int *ia = malloc(sizeof(int) * (size_t)(ni + no + 1)), *oa = ia ? ia + ni : NULL;
  ft_jaxpr *r = NULL;
  if (!ia) return ft_set_error(e->ctx, FT_ERR_NOMEM, "transform: out of memory"), NULL;
  if (!resolve_axes(e, &n->kw[KW_IN_AXES], "in_axes", ni, "input", ia) ||
      !resolve_axes(e, &n->kw[KW_OUT_AXES], "out_axes", no, "output", oa))
    goto done;
  const cval *sz = &n->kw[KW_AXIS_SIZE];
  bool any_mapped = false;
  for (int k = 0; k < ni; k++) any_mapped |= ia[k] != FT_VMAP_NONE;
  put_axes(params, "in_axes", ia, ni);
  ft_buf_puts(params, " ");
  put_axes(params, "out_axes", oa, no);
  if (sz->k != V_ABSENT) {
    if (sz->k != V_INT) {
      eerr(e, sz->pos, "axis_size must be an integer");
      goto done;
    }
    if (sz->i < 0) {
      eerr(e, sz->pos, "axis_size must be >= 0, got %lld", (long long)sz->i);
      goto done;
    }
    ft_buf_printf(params, " axis_size=%lld", (long long)sz->i);
    r = ft_vmap(e->ctx, f, ni, ia, no, oa, sz->i);
  } else if (!any_mapped) {
    eerr(e, n->pos, "vmap with every in_axes None needs axis_size= (as in JAX)");
    goto done;
  } else if (n_avals >= ni) {
    r = ft_vmap_avals(e->ctx, f, ni, ia, no, oa, ni, avals);
    if (r) {
      for (int k = 0; k < ni; k++)
        if (ia[k] != FT_VMAP_NONE) {
          int a = ia[k] < 0 ? ia[k] + avals[k].rank : ia[k];
          ft_buf_printf(params, " axis_size=%lld (from the input shapes)", (long long)avals[k].dims[a]);
          break;
        }
    }
  } else if (n_avals) {
    eerr(e, n->pos, "vmap needs axis_size= or the shapes of all %d inputs (got %d)", ni, n_avals);
    goto done;
  } else {
    eerr(e, n->pos, "vmap needs axis_size= (the batch size cannot be inferred without the "
                    "shapes of the inputs)");
    goto done;
  }
  if (!r) step_failed(e, n);
done:
  free(ia);
  return r;
}

static ft_jaxpr *apply_ad(ceval *e, const cnode *n, const ft_jaxpr *f, ft_buf *params) {
  int argnums[64];
  const cval *aux = &n->kw[KW_HAS_AUX];
  if (aux->k != V_ABSENT && aux->k != V_BOOL) {
    eerr(e, aux->pos, "has_aux must be True or False");
    return NULL;
  }
  int cnt = resolve_argnums(e, n, f->n_in, argnums, 64);
  if (cnt < 0) return NULL;
  bool single = n->kw[KW_ARGNUMS].k != V_TUPLE;
  if (n->def->kind == T_JACFWD || n->def->kind == T_JACREV || n->def->kind == T_HESSIAN) {
    if (cnt != 1) {
      eerr(e, n->kw[KW_ARGNUMS].pos,
           "%s differentiates with respect to one input here: give argnums=INT", n->def->name);
      return NULL;
    }
    ft_buf_printf(params, "argnums=%d", argnums[0]);
  } else {
    ft_buf_puts(params, "argnums=");
    for (int k = 0; k < cnt; k++) ft_buf_printf(params, k ? ", %d" : (single ? "%d" : "(%d"), argnums[k]);
    ft_buf_printf(params, "%s has_aux=%s", single ? "" : (cnt == 1 ? ",)" : ")"),
                  aux->k == V_BOOL && aux->b ? "True" : "False");
  }
  bool has_aux = aux->k == V_BOOL && aux->b;
  ft_jaxpr *r = NULL;
  switch (n->def->kind) {
  case T_GRAD: r = ft_grad(e->ctx, f, cnt, argnums, has_aux); break;
  case T_VALUE_AND_GRAD: r = ft_value_and_grad(e->ctx, f, cnt, argnums, has_aux); break;
  case T_JACFWD: r = ft_jacfwd(e->ctx, f, argnums[0]); break;
  case T_JACREV: r = ft_jacrev(e->ctx, f, argnums[0]); break;
  default: r = ft_hessian(e->ctx, f, argnums[0]); break;
  }
  if (!r) step_failed(e, n);
  return r;
}

static bool report(ceval *e, const cnode *n, const char *params, const ft_jaxpr *r) {
  if (!e->opts || !e->opts->on_step) return true;
  char *text = malloc(n->end - n->pos + 1);
  if (!text) return ft_set_error(e->ctx, FT_ERR_NOMEM, "transform: out of memory"), false;
  memcpy(text, e->s + n->pos, n->end - n->pos);
  text[n->end - n->pos] = 0;
  ft_transform_step st = {.index = ++e->step, .name = n->def->name, .expr = text,
                          .params = params ? params : "", .result = r};
  e->opts->on_step(e->opts->user, &st);
  free(text);
  return true;
}

/* Evaluates n given the avals its result will be called with (n_avals may
 * be 0). Returns the program: e->base itself for the leaf and for jit of
 * the leaf, else a new jaxpr the caller frees. */
static const ft_jaxpr *eval_node(ceval *e, const cnode *n, const ft_aval *avals, int n_avals) {
  if (!n->def) return e->base;
  ft_aval *inner = NULL;
  int n_inner = n_avals;
  if (n->def->kind == T_VMAP && n_avals) {
    if (!(inner = malloc(sizeof *inner * (size_t)n_avals)))
      return ft_set_error(e->ctx, FT_ERR_NOMEM, "transform: out of memory"), NULL;
    n_inner = unbatch_avals(n, avals, n_avals, inner);
  }
  const ft_jaxpr *f = eval_node(e, n->arg, inner ? inner : avals, n_inner);
  free(inner);
  if (!f) return NULL;
  ft_buf params = {0};
  const ft_jaxpr *r = NULL;
  switch (n->def->kind) {
  case T_JIT:
    ft_buf_puts(&params, "identity on the IR: compiled at call time");
    r = f;
    break;
  case T_JVP:
  case T_VJP:
    if (!(r = n->def->kind == T_JVP ? ft_jvp(e->ctx, f) : ft_vjp_jaxpr(e->ctx, f))) step_failed(e, n);
    break;
  case T_VMAP: r = apply_vmap(e, n, f, avals, n_avals, &params); break;
  default: r = apply_ad(e, n, f, &params); break;
  }
  if (r && (params.failed || !report(e, n, params.p, r))) {
    if (params.failed) ft_set_error(e->ctx, FT_ERR_NOMEM, "transform: out of memory");
    if (r != f) ft_jaxpr_free((ft_jaxpr *)r);
    r = NULL;
  }
  free(params.p);
  if (f != e->base && f != r) ft_jaxpr_free((ft_jaxpr *)f);
  return r;
}

ft_jaxpr *ft_transform_ex(ft_ctx *ctx, const ft_jaxpr *j, const char *expr,
                          const ft_transform_options *opts) {
  if (!j || !expr)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "transform: %s is NULL", j ? "expr" : "jaxpr"),
           NULL;
  ft_transform_options opts_read;
  if (ft_opts_read(ctx, "ft_transform_options", opts, sizeof opts_read, &opts_read)) return NULL;
  if (opts) opts = &opts_read;
  cparser p = {.ctx = ctx, .s = expr, .len = strlen(expr), .name = opts ? opts->name : NULL};
  cnode *tree = parse_all(&p);
  if (!tree) return NULL;
  ceval e = {.ctx = ctx, .s = expr, .len = p.len, .opts = opts, .base = j};
  const ft_aval *avals = opts ? opts->in_avals : NULL;
  int n_avals = avals && opts->n_in_avals > 0 ? opts->n_in_avals : 0;
  /* constvars without values are passed first (ft_eval's convention) and
   * stay constvars through every transform: skip their avals */
  if (n_avals && !j->const_data && j->n_const) {
    if (n_avals > j->n_const) avals += j->n_const, n_avals -= j->n_const;
    else n_avals = 0;
  }
  const ft_jaxpr *r = eval_node(&e, tree, n_avals ? avals : NULL, n_avals);
  free_tree(tree);
  if (r != j) return (ft_jaxpr *)r;
  ft_jaxpr *c = jaxpr_clone_top(j);
  if (!c) ft_set_error(ctx, FT_ERR_NOMEM, "transform: out of memory");
  return c;
}

ft_jaxpr *ft_transform(ft_ctx *ctx, const ft_jaxpr *j, const char *expr) {
  return ft_transform_ex(ctx, j, expr, NULL);
}
