/* src/ir/parse.c: ft_parse — jaxpr text as JAX 0.4.35 … 0.10.2 prints it.
 *
 * Grammar (whitespace, including newlines, is free between tokens):
 *   text    := { "let" NAME "=" jaxpr "in" } jaxpr
 *   jaxpr   := "{" "lambda" binder* ";" binder* "." "let" eqn* "in" "(" atoms ")" "}"
 *   binder  := NAME ":" aval            NAME may be `_` (a dropped result)
 *   aval    := DTYPE "[" [INT {"," INT}] "]"
 *   eqn     := binder+ "=" PRIM ["[" {KEY "=" value} "]"] atom* [";"]
 *   atom    := NAME | literal           literal: 1.0:f32[], -inf:f32[], True:bool[], or bare 2.0
 * Param values are parsed by parse_params.c following the primitive's schema.
 *
 * Scoping is SSA: every jaxpr (sub-jaxprs included) has its own names, a name
 * is defined once and only used after its definition.
 *
 * Bare literals (older JAX printed `mul b 2.0`) take their dtype from the
 * equation: the sub-jaxpr input they feed (jit, cond, while, scan, custom
 * calls), else another variable operand (select_n's cases, dynamic_slice's
 * indices, pad's value: the operand they pair with), else the result's dtype
 * for non-comparisons, else the weak default JAX uses with x64 off (i32 for
 * integers, f32 for floats, bool for True/False).
 *
 * Ambiguity JAX itself leaves: `inf`/`nan` followed by `:` read as literals
 * unless a variable of that name is in scope, and `in` followed by `(` ends
 * the equations. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "ir.h"

enum { MAX_DEPTH = 64 };

/* ---- errors */

static void line_col(const ft_parser *p, size_t pos, int *line, int *col, size_t *bol) {
  int l = 1;
  size_t b = 0;
  for (size_t i = 0; i < pos && i < p->len; i++)
    if (p->src[i] == '\n') l++, b = i + 1;
  *line = l;
  *col = (int)(pos - b) + 1;
  *bol = b;
}

_Noreturn void ft_parse_fail(ft_parser *p, size_t pos, const char *fmt, ...) {
  if (pos > p->len) pos = p->len;
  int line, col;
  size_t bol;
  line_col(p, pos, &line, &col, &bol);
  char msg[1024], src[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Show at most a window of the line around the column, bytes made printable. */
  size_t start = bol, caret = pos - bol;
  if (caret > 120) start = pos - 80, caret = 80;
  size_t n = 0;
  for (size_t i = start; i < p->len && p->src[i] != '\n' && n < sizeof src - 1; i++) {
    unsigned char c = (unsigned char)p->src[i];
    src[n++] = c >= 32 && c < 127 ? (char)c : '?';
  }
  src[n] = 0;
  ft_set_error(p->ctx, FT_ERR_PARSE, "%s:%d:%d: %s\n%s\n%*s^", p->name, line, col, msg, src,
               (int)caret, "");
  longjmp(*(jmp_buf *)p->jmp, 1);
}

/* Out of memory unwinds like a parse error but with its own status. */
static void *palloc(ft_parser *p, ft_arena *a, size_t n) {
  void *x = ft_arena_alloc(a, n);
  if (!x) {
    ft_set_error(p->ctx, FT_ERR_NOMEM, "%s: out of memory while parsing", p->name);
    longjmp(*(jmp_buf *)p->jmp, 2);
  }
  return x;
}

static void *oom_check(ft_parser *p, void *x) {
  if (!x) {
    ft_set_error(p->ctx, FT_ERR_NOMEM, "%s: out of memory while parsing", p->name);
    longjmp(*(jmp_buf *)p->jmp, 2);
  }
  return x;
}

/* ---- lexing */

char ft_parse_peek(const ft_parser *p) { return p->pos < p->len ? p->src[p->pos] : 0; }

static char peek_at(const ft_parser *p, size_t i) { return i < p->len ? p->src[i] : 0; }

void ft_parse_skip_ws(ft_parser *p) {
  while (p->pos < p->len) {
    char c = p->src[p->pos];
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') break;
    p->pos++;
  }
}

bool ft_parse_accept(ft_parser *p, char c) {
  ft_parse_skip_ws(p);
  if (ft_parse_peek(p) != c || p->pos >= p->len) return false;
  p->pos++;
  return true;
}

static const char *describe_here(const ft_parser *p) {
  if (p->pos >= p->len) return "the end of the text";
  return NULL;
}

void ft_parse_expect(ft_parser *p, char c, const char *what) {
  if (ft_parse_accept(p, c)) return;
  const char *at = describe_here(p);
  if (at) ft_parse_fail(p, p->pos, "expected %s, found %s", what, at);
  ft_parse_fail(p, p->pos, "expected %s", what);
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

size_t ft_parse_ident_len(const ft_parser *p, const char *extra) {
  size_t i = p->pos;
  if (!is_alpha(peek_at(p, i))) return 0;
  while (i < p->len) {
    char c = p->src[i];
    if (!is_alpha(c) && !is_digit(c) && !(c && extra && strchr(extra, c))) break;
    i++;
  }
  return i - p->pos;
}

/* A hoisted jaxpr's name: what the printer writes (print.c, hoisted_name):
 * letters, digits (also first: a jit may be named `3d`), '_', '.', '<', '>'. */
size_t ft_parse_jaxpr_name_len(const ft_parser *p) {
  size_t i = p->pos;
  while (i < p->len) {
    char c = p->src[i];
    if (!is_alpha(c) && !is_digit(c) && c != '.' && c != '<' && c != '>') break;
    i++;
  }
  return i - p->pos;
}

static bool at_word(const ft_parser *p, const char *w) {
  size_t n = strlen(w);
  if (p->pos + n > p->len || memcmp(p->src + p->pos, w, n)) return false;
  char c = peek_at(p, p->pos + n);
  return !is_alpha(c) && !is_digit(c);
}

static void expect_word(ft_parser *p, const char *w, const char *ctx) {
  ft_parse_skip_ws(p);
  if (!at_word(p, w)) ft_parse_fail(p, p->pos, "expected '%s' %s", w, ctx);
  p->pos += strlen(w);
}

/* `in` that ends the equations: the keyword followed by the output tuple. */
static bool at_in_keyword(ft_parser *p) {
  if (!at_word(p, "in")) return false;
  size_t i = p->pos + 2;
  while (i < p->len && (p->src[i] == ' ' || p->src[i] == '\n' || p->src[i] == '\r' || p->src[i] == '\t')) i++;
  return peek_at(p, i) == '(';
}

/* ---- scopes: name -> variable, open addressing in the scratch arena */

typedef struct sym {
  const char *s;
  size_t n, pos;
  ft_var *v;
} sym;

typedef struct ft_scope {
  sym *tab;
  size_t cap, cnt;
  ft_var *last_drop;          /* the latest `_` binder (see atom `_`) */
  ft_var **drops;             /* every `_` binder, in order (see drop_output) */
  bool *claimed;              /*   and whether an output `_` took it */
  int n_drops, cap_drops;
  ft_var *const *jit_outs;    /* set while a jit's params are parsed: its */
  int n_jit_outs;             /*   result binders, for its sub-jaxpr's `_` */
  ft_var *const *want_outs;   /* this jaxpr's expected results (a jit's), */
  int n_want_outs;            /*   or NULL */
} ft_scope;

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static sym *scope_find(ft_scope *sc, const char *s, size_t n) {
  size_t m = sc->cap - 1;
  for (size_t i = hash_name(s, n) & m;; i = (i + 1) & m) {
    sym *e = &sc->tab[i];
    if (!e->s || (e->n == n && !memcmp(e->s, s, n))) return e;
  }
}

static void scope_grow(ft_parser *p, ft_scope *sc) {
  size_t cap = sc->cap ? sc->cap * 2 : 64;
  sym *old = sc->tab;
  size_t oldcap = sc->cap;
  sc->tab = palloc(p, p->tmp, cap * sizeof *sc->tab);
  sc->cap = cap;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].s) *scope_find(sc, old[i].s, old[i].n) = old[i];
}

static ft_var *lookup(ft_parser *p, const char *s, size_t n) {
  if (!p->scope->cap) return NULL;
  sym *e = scope_find(p->scope, s, n);
  return e->s ? e->v : NULL;
}

static void define(ft_parser *p, const char *s, size_t n, size_t pos, ft_var *v) {
  ft_scope *sc = p->scope;
  if (n == 1 && s[0] == '_') {
    sc->last_drop = v;
    if (sc->n_drops == sc->cap_drops) {
      int cap = sc->cap_drops ? 2 * sc->cap_drops : 8;
      ft_var **nd = palloc(p, p->tmp, sizeof *nd * (size_t)cap);
      bool *nc = palloc(p, p->tmp, sizeof *nc * (size_t)cap);
      if (sc->n_drops) {
        memcpy(nd, sc->drops, sizeof *nd * (size_t)sc->n_drops);
        memcpy(nc, sc->claimed, sizeof *nc * (size_t)sc->n_drops);
      }
      sc->drops = nd, sc->claimed = nc, sc->cap_drops = cap;
    }
    sc->claimed[sc->n_drops] = false;
    sc->drops[sc->n_drops++] = v;
    return;
  }
  if (2 * (sc->cnt + 1) > sc->cap) scope_grow(p, sc);
  sym *e = scope_find(sc, s, n);
  if (e->s) {
    int line, col;
    size_t bol;
    line_col(p, e->pos, &line, &col, &bol);
    ft_parse_fail(p, pos, "variable '%.*s' is already defined (at line %d, column %d)", (int)n, s,
                  line, col);
  }
  *e = (sym){s, n, pos, v};
  sc->cnt++;
}

/* ---- avals */

static ft_dtype parse_dtype(ft_parser *p) {
  ft_parse_skip_ws(p);
  size_t start = p->pos, n = ft_parse_ident_len(p, NULL);
  if (!n) ft_parse_fail(p, p->pos, "expected a dtype such as f32 or i32");
  char buf[32];
  if (n >= sizeof buf) ft_parse_fail(p, start, "unknown dtype '%.*s'", (int)(n > 40 ? 40 : n), p->src + start);
  memcpy(buf, p->src + start, n);
  buf[n] = 0;
  ft_dtype dt;
  if (!strcmp(buf, "key") && peek_at(p, start + n) == '<') { /* a PRNG key type: key<fry> */
    size_t t0 = start + n + 1, t = t0;
    while (peek_at(p, t) && peek_at(p, t) != '>' && peek_at(p, t) != '[' && t - t0 < 16) t++;
    if (peek_at(p, t) != '>') ft_parse_fail(p, start, "expected a PRNG key type such as key<fry>");
    if (ft_key_from_tag(p->src + t0, t - t0, &dt) != FT_OK)
      ft_parse_fail(p, t0, "unknown PRNG key implementation '%.*s' (known: fry, fry4, phx2, phx4, "
                    "rbg, urbg)", (int)(t - t0), p->src + t0);
    p->pos = t + 1;
    return dt;
  }
  if (ft_dtype_from_name(buf, &dt) != FT_OK) ft_parse_fail(p, start, "unknown dtype '%s'", buf);
  p->pos += n;
  return dt;
}

static int64_t parse_dim(ft_parser *p) {
  ft_parse_skip_ws(p);
  size_t start = p->pos;
  int64_t v = 0;
  if (!is_digit(ft_parse_peek(p))) ft_parse_fail(p, p->pos, "expected a dimension (a non-negative integer)");
  while (is_digit(ft_parse_peek(p))) {
    if (v > (INT64_MAX - 9) / 10) ft_parse_fail(p, start, "dimension is too large");
    v = v * 10 + (ft_parse_peek(p) - '0');
    p->pos++;
  }
  return v;
}

static ft_aval parse_aval(ft_parser *p) {
  ft_aval a = {0};
  ft_parse_skip_ws(p);
  size_t start = p->pos;
  a.dtype = parse_dtype(p);
  if (ft_parse_peek(p) != '[') {
    char c = ft_parse_peek(p);
    if (c == '<' || c == '{') ft_parse_fail(p, p->pos, "unsupported type annotation (memory spaces are not supported)");
    ft_parse_fail(p, p->pos, "expected '[' and the shape after the dtype");
  }
  p->pos++;
  if (ft_parse_accept(p, ']')) return a;
  do {
    if (a.rank == FT_MAX_RANK) ft_parse_fail(p, p->pos, "rank exceeds the maximum of %d", FT_MAX_RANK);
    a.dims[a.rank++] = parse_dim(p);
  } while (ft_parse_accept(p, ','));
  ft_parse_skip_ws(p);
  if (ft_parse_peek(p) == '@' || ft_parse_peek(p) == '{')
    ft_parse_fail(p, p->pos, "sharding annotations in types are not supported");
  ft_parse_expect(p, ']', "',' or ']' in the shape");
  if (!ft_aval_size_ok(&a)) {
    char b[256];
    ft_parse_fail(p, start, "shape %s has more than 2^56 elements", ft_aval_str(&a, b, sizeof b));
  }
  return a;
}

/* ---- literals */

typedef struct lit {
  enum { L_BOOL, L_INT, L_FLOAT, L_COMPLEX, L_FLOAT0 } kind;
  bool neg;
  uint64_t mag;     /* L_INT: |value| */
  double f, im;
  size_t pos;
  bool typed;
  ft_aval aval;
} lit;

static bool at_literal_word(const ft_parser *p) {
  return at_word(p, "True") || at_word(p, "False") || at_word(p, "inf") || at_word(p, "nan");
}

/* Could an atom start here? Names are checked separately. */
static bool literal_start(const ft_parser *p) {
  char c = ft_parse_peek(p), d = peek_at(p, p->pos + 1);
  return is_digit(c) || ((c == '-' || c == '+') && (is_digit(d) || d == 'i' || d == 'n' || d == '.')) ||
         c == '(' || (c == '.' && is_digit(d));
}

/* Whether buf (a number's text, with an optional sign) spells inf or nan. */
static bool at_word_text(const char *buf) {
  const char *w = buf + (buf[0] == '-' || buf[0] == '+');
  return !strcmp(w, "inf") || !strcmp(w, "nan");
}

static double parse_real(ft_parser *p, lit *l) {
  size_t start = p->pos;
  char buf[64];
  size_t n = 0;
  bool is_float = false;
  if (ft_parse_peek(p) == '-' || ft_parse_peek(p) == '+') buf[n++] = p->src[p->pos++];
  if (at_word(p, "inf") || at_word(p, "nan")) {
    memcpy(buf + n, p->src + p->pos, 3);
    n += 3;
    p->pos += 3;
    is_float = true;
  } else {
    while (p->pos < p->len && n < sizeof buf - 1) {
      char c = p->src[p->pos];
      bool exp_sign = (c == '-' || c == '+') && n && (buf[n - 1] == 'e' || buf[n - 1] == 'E');
      if (!is_digit(c) && c != '.' && c != 'e' && c != 'E' && !exp_sign) break;
      is_float |= !is_digit(c);
      buf[n++] = c;
      p->pos++;
    }
  }
  buf[n] = 0;
  char *end;
  errno = 0;
  double f = strtod(buf, &end);
  if (end == buf || *end) ft_parse_fail(p, start, "malformed number '%s'", buf);
  /* Digits that overflow a double are not 'inf' (which is written as such),
   * as 300:i8 is not 44: the same error as an integer out of range. */
  if (isinf(f) && !at_word_text(buf)) ft_parse_fail(p, start, "float literal %s is out of range", buf);
  if (!is_float && l) {
    l->kind = L_INT;
    l->neg = buf[0] == '-';
    const char *digits = buf + (buf[0] == '-' || buf[0] == '+');
    errno = 0;
    l->mag = strtoull(digits, NULL, 10);
    if (errno == ERANGE) ft_parse_fail(p, start, "integer literal %s is out of range", buf);
  }
  return f;
}

/* 2.5, -1, inf, nan, True, (1+2j), 3j — the value, without a type. */
static void parse_lit_value(ft_parser *p, lit *l) {
  memset(l, 0, sizeof *l);
  l->pos = p->pos;
  if (at_word(p, "True") || at_word(p, "False")) {
    l->kind = L_BOOL;
    l->mag = ft_parse_peek(p) == 'T';
    p->pos += l->mag ? 4 : 5;
    return;
  }
  /* JAX's zero tangent of an integer value: numpy's float0 scalar (a
   * zero-size void) prints as (b'',); it has no value to read. */
  if (p->len - p->pos >= 6 && !memcmp(p->src + p->pos, "(b'',)", 6)) {
    l->kind = L_FLOAT0;
    p->pos += 6;
    return;
  }
  bool paren = ft_parse_peek(p) == '(';
  if (paren) p->pos++;
  l->kind = L_FLOAT;
  double re = parse_real(p, l);
  if (ft_parse_peek(p) == 'j') { /* 3j */
    p->pos++;
    l->kind = L_COMPLEX, l->im = re, re = 0;
  } else if (paren) {
    char c = ft_parse_peek(p);
    if (c != '+' && c != '-') ft_parse_fail(p, p->pos, "expected the imaginary part of a complex literal");
    l->kind = L_COMPLEX;
    l->im = parse_real(p, NULL);
    if (ft_parse_peek(p) != 'j') ft_parse_fail(p, p->pos, "expected 'j' after the imaginary part");
    p->pos++;
  }
  if (paren && ft_parse_peek(p) != ')') ft_parse_fail(p, p->pos, "expected ')' to close the complex literal");
  if (paren) p->pos++;
  l->f = l->kind == L_INT ? (l->neg ? -(double)l->mag : (double)l->mag) : re;
}

/* Whether a finite double stays finite in dt (rounding to nearest even):
 * the thresholds are the largest finite value plus half an ulp. */
static bool float_fits(double f, ft_dtype dt) {
  if (!isfinite(f)) return true; /* spelled inf or nan */
  double a = fabs(f);
  switch (dt) {
  case FT_F16: return a < 0x1.FFEp15;       /* 65520 */
  case FT_BF16: return a < 0x1.FFp127;
  case FT_F32:
  case FT_C64: return a < 0x1.FFFFFFp127;
  default: return true;                     /* f64, c128: strtod checked */
  }
}

static bool int_fits(const lit *l, ft_dtype dt) {
  int bits = ft_dtype_bits(dt);
  if (ft_dtype_is_unsigned(dt)) return !(l->neg && l->mag) && (bits == 64 || l->mag < (1ull << bits));
  uint64_t lim = 1ull << (bits - 1);
  return l->neg ? l->mag <= lim : l->mag < lim;
}

/* Makes the literal variable of dtype dt, checking the value suits it. */
static ft_var *make_lit(ft_parser *p, const lit *l, ft_dtype dt) {
  ft_var *v;
  if (dt == FT_FLOAT0 && l->kind != L_FLOAT0) ft_parse_fail(p, l->pos, "a float0 literal must be (b'',)");
  if (dt != FT_FLOAT0 && l->kind == L_FLOAT0)
    ft_parse_fail(p, l->pos, "(b'',) is a float0 literal, not %s", ft_dtype_name(dt));
  if (dt == FT_FLOAT0) {
    v = ft_lit_new_int(p->arena, FT_FLOAT0, 0);
  } else if (dt == FT_BOOL) {
    if (l->kind != L_BOOL) ft_parse_fail(p, l->pos, "a bool literal must be True or False");
    v = ft_lit_new_bool(p->arena, l->mag != 0);
  } else if (ft_dtype_is_int(dt)) {
    if (l->kind != L_INT) ft_parse_fail(p, l->pos, "literal of integer type %s must be an integer", ft_dtype_name(dt));
    if (!int_fits(l, dt)) ft_parse_fail(p, l->pos, "integer literal out of range for %s", ft_dtype_name(dt));
    if (ft_dtype_is_unsigned(dt)) v = ft_lit_new_uint(p->arena, dt, l->mag);
    else v = ft_lit_new_int(p->arena, dt, l->neg ? (int64_t)(0 - l->mag) : (int64_t)l->mag);
  } else if (ft_dtype_is_inexact(dt)) {
    if (l->kind == L_BOOL) ft_parse_fail(p, l->pos, "literal of type %s must be a number", ft_dtype_name(dt));
    if (l->kind == L_COMPLEX && !ft_dtype_is_complex(dt))
      ft_parse_fail(p, l->pos, "complex literal for real type %s", ft_dtype_name(dt));
    if (!float_fits(l->f, dt) || !float_fits(l->im, dt))
      ft_parse_fail(p, l->pos, "float literal out of range for %s", ft_dtype_name(dt));
    v = ft_lit_new_float(p->arena, dt, l->f);
    if (v) v->lit_im = l->im;
  } else {
    ft_parse_fail(p, l->pos, "literals of type %s are not supported", ft_dtype_name(dt));
  }
  return oom_check(p, v);
}

/* The dtype JAX gives an untyped Python scalar (x64 off). */
static ft_dtype natural_dtype(const lit *l) {
  switch (l->kind) {
  case L_BOOL: return FT_BOOL;
  case L_INT: return FT_I32;
  case L_FLOAT: return FT_F32;
  case L_COMPLEX: return FT_C64;
  case L_FLOAT0: return FT_FLOAT0;
  }
  return FT_F32;
}

/* ---- equations */

typedef struct eqn_in {
  ft_var **in;
  lit *bare;        /* bare[i].pos != 0 ... marked by is_bare */
  bool *is_bare;
  int n, cap;
} eqn_in;

static void grow_in(ft_parser *p, eqn_in *a) {
  if (a->n < a->cap) return;
  int cap = a->cap ? a->cap * 2 : 8;
  ft_var **in = palloc(p, p->tmp, sizeof *in * (size_t)cap);
  lit *bare = palloc(p, p->tmp, sizeof *bare * (size_t)cap);
  bool *is_bare = palloc(p, p->tmp, sizeof *is_bare * (size_t)cap);
  if (a->n) {
    memcpy(in, a->in, sizeof *in * (size_t)a->n);
    memcpy(bare, a->bare, sizeof *bare * (size_t)a->n);
    memcpy(is_bare, a->is_bare, sizeof *is_bare * (size_t)a->n);
  }
  a->in = in, a->bare = bare, a->is_bare = is_bare, a->cap = cap;
}

/* A literal atom; typed ones become variables now, bare ones wait for the
 * equation's context (is_bare). */
static void parse_lit_atom(ft_parser *p, eqn_in *a) {
  grow_in(p, a);
  lit *l = &a->bare[a->n];
  parse_lit_value(p, l);
  a->is_bare[a->n] = false;
  if (ft_parse_peek(p) == ':') {
    p->pos++;
    size_t at = p->pos;
    ft_aval av = parse_aval(p);
    if (av.rank) ft_parse_fail(p, at, "a literal must be a scalar (type %s[])", ft_dtype_name(av.dtype));
    a->in[a->n++] = make_lit(p, l, av.dtype);
    return;
  }
  a->in[a->n] = NULL;
  a->is_bare[a->n++] = true;
}

/* Is the text at pos `name:` (a binder) rather than an atom? */
static bool at_binder(ft_parser *p) {
  size_t n = ft_parse_ident_len(p, NULL);
  if (!n || peek_at(p, p->pos + n) != ':') return false;
  if (at_word(p, "True") || at_word(p, "False")) return false;
  if ((at_word(p, "inf") || at_word(p, "nan")) && !lookup(p, p->src + p->pos, n)) return false;
  return true;
}

static ft_var *resolve(ft_parser *p, size_t start, size_t n) {
  if (n == 1 && p->src[start] == '_') {
    ft_var *v = p->scope->last_drop;
    if (!v) ft_parse_fail(p, start, "'_' (a dropped result) cannot be used as an operand");
    v->kind = FT_VAR; /* a `_` JAX printed for a variable it then reads */
    return v;
  }
  ft_var *v = lookup(p, p->src + start, n);
  if (!v) ft_parse_fail(p, start, "undefined variable '%.*s'", (int)(n > 60 ? 60 : n), p->src + start);
  return v;
}

/* Output k written `_`. JAX names a jit's sub-jaxpr results after the jit's
 * own results (suggest_same_var_names), so when those are unused at the top
 * level (`_`), `in (_, _)` lists several different variables all printed
 * `_`. Output k is the first `_` binder not yet taken with the type of the
 * jit's result k (any `_` of that type if all are taken: a variable listed
 * twice). Which of two `_` of one type is which cannot be read from the
 * text, and need not be: those results are unused. Outside a jit (no
 * expected types), the latest `_`, as for an operand. */
static ft_var *drop_output(ft_parser *p, size_t start, int k) {
  ft_scope *sc = p->scope;
  if (!sc->want_outs || k >= sc->n_want_outs) return resolve(p, start, 1);
  const ft_aval *want = &sc->want_outs[k]->aval;
  int pick = -1;
  for (int i = 0; i < sc->n_drops && pick < 0; i++)
    if (!sc->claimed[i] && ft_aval_eq(&sc->drops[i]->aval, want)) pick = i;
  for (int i = sc->n_drops - 1; i >= 0 && pick < 0; i--)
    if (ft_aval_eq(&sc->drops[i]->aval, want)) pick = i;
  if (pick < 0) return resolve(p, start, 1);
  sc->claimed[pick] = true;
  sc->drops[pick]->kind = FT_VAR;
  return sc->drops[pick];
}

/* Operands up to the next binder, `;`, `in (` or `}`. */
/* An equation without results starts here: `prim[...]` where prim is not a
 * variable in scope (JAX prints a call that returns nothing, e.g. jnp.roll's
 * empty _roll_static, as `jit[...] ` without binders or '='). */
static bool at_resultless_eqn(ft_parser *p) {
  size_t n = ft_parse_ident_len(p, "-");
  return n && peek_at(p, p->pos + n) == '[' && ft_prim_lookup(p->src + p->pos, n) != FT_NUM_PRIMS &&
         !lookup(p, p->src + p->pos, n);
}

static void parse_atoms(ft_parser *p, eqn_in *a) {
  for (;;) {
    ft_parse_skip_ws(p);
    char c = ft_parse_peek(p);
    if (!c || c == ';' || c == '}' || at_in_keyword(p) || at_binder(p)) return;
    if (literal_start(p) || at_literal_word(p)) {
      if (!(at_word(p, "inf") || at_word(p, "nan")) || !lookup(p, p->src + p->pos, 3)) {
        parse_lit_atom(p, a);
        continue;
      }
    }
    size_t start = p->pos, n = ft_parse_ident_len(p, NULL);
    if (!n) ft_parse_fail(p, p->pos, "expected an operand (a variable or a literal), 'in' or the next equation");
    if (at_resultless_eqn(p)) return;
    p->pos += n;
    grow_in(p, a);
    a->is_bare[a->n] = false;
    a->in[a->n++] = resolve(p, start, n);
  }
}

static ft_jaxpr *sub_of(const ft_pval *ps, ft_prim prim, const char *name) {
  int k = ft_prim_param_index(prim, name);
  return k >= 0 && ps[k].tag == FT_PV_JAXPR ? ps[k].u.jaxpr : NULL;
}

/* For control flow: the sub-jaxpr input operand i feeds, or NULL. */
static const ft_var *fed_invar(ft_prim prim, const ft_pval *ps, int i) {
  const ft_jaxpr *j = NULL;
  int k = i;
  if (prim == FT_P_JIT || prim == FT_P_SCAN) j = sub_of(ps, prim, "jaxpr");
  else if (prim == FT_P_CUSTOM_JVP_CALL || prim == FT_P_CUSTOM_VJP_CALL) j = sub_of(ps, prim, "call_jaxpr");
  else if (prim == FT_P_COND) {
    int b = ft_prim_param_index(prim, "branches");
    const ft_pval *br = &ps[b];
    if (i == 0 || br->tag != FT_PV_TUPLE || !br->n || br->u.items[0].tag != FT_PV_JAXPR) return NULL;
    j = br->u.items[0].u.jaxpr, k = i - 1;
  } else if (prim == FT_P_WHILE) {
    /* operands: cond consts, body consts, carry; body takes consts + carry */
    int cn = (int)ps[ft_prim_param_index(prim, "cond_nconsts")].u.i;
    j = sub_of(ps, prim, i < cn ? "cond_jaxpr" : "body_jaxpr");
    k = i < cn ? i : i - cn;
  }
  if (!j || k < 0 || k >= j->n_in) return NULL;
  return j->invars[k];
}

/* The dtype of a bare literal operand (see the top of this file). */
static ft_dtype bare_dtype(ft_prim prim, const ft_pval *ps, const eqn_in *a, int i,
                           ft_var *const *outs, int n_out) {
  const lit *l = &a->bare[i];
  const ft_var *fed = fed_invar(prim, ps, i);
  if (fed) return fed->aval.dtype;
  ft_family fam = ft_prim_get(prim)->family;
  if (fam == FT_FAM_CONTROL) return natural_dtype(l);
  if (prim == FT_P_SELECT_N && i == 0) return l->kind == L_BOOL ? FT_BOOL : FT_I32;
  int lo = 0, hi = a->n; /* the operands that share a dtype with operand i */
  if (prim == FT_P_SELECT_N) lo = 1;
  if (prim == FT_P_DYNAMIC_SLICE) lo = i ? 1 : 0, hi = i ? a->n : 1;
  if (prim == FT_P_DYNAMIC_UPDATE_SLICE) lo = i >= 2 ? 2 : 0, hi = i >= 2 ? a->n : 2;
  for (int k = lo; k < hi; k++)
    if (k != i && !a->is_bare[k] && a->in[k]) return a->in[k]->aval.dtype;
  bool index_like = (prim == FT_P_DYNAMIC_SLICE && i) || (prim == FT_P_DYNAMIC_UPDATE_SLICE && i >= 2);
  if (!index_like && fam != FT_FAM_COMPARE && fam != FT_FAM_CONVERT && n_out == 1 && outs[0])
    return outs[0]->aval.dtype;
  return natural_dtype(l);
}

typedef struct binders {
  ft_var **v;
  size_t *pos, *len;
  int n, cap;
} binders;

static void add_binder(ft_parser *p, binders *b, ft_var *v, size_t pos, size_t len) {
  if (b->n == b->cap) {
    int cap = b->cap ? b->cap * 2 : 8;
    ft_var **nv = palloc(p, p->tmp, sizeof *nv * (size_t)cap);
    size_t *np = palloc(p, p->tmp, sizeof *np * (size_t)cap), *nl = palloc(p, p->tmp, sizeof *nl * (size_t)cap);
    if (b->n) {
      memcpy(nv, b->v, sizeof *nv * (size_t)b->n);
      memcpy(np, b->pos, sizeof *np * (size_t)b->n);
      memcpy(nl, b->len, sizeof *nl * (size_t)b->n);
    }
    b->v = nv, b->pos = np, b->len = nl, b->cap = cap;
  }
  b->v[b->n] = v, b->pos[b->n] = pos, b->len[b->n++] = len;
}

/* `{V:i}` or `{V:(i,j)}` after a binder's type (JAX 0.12, check_vma): the
 * axes the value varies over inside a shard_map body, kept as text to
 * print back. */
static void parse_vma(ft_parser *p, ft_var *v) {
  size_t at = p->pos;
  if (peek_at(p, p->pos + 1) != 'V' || peek_at(p, p->pos + 2) != ':')
    ft_parse_fail(p, at, "unsupported type annotation (expected '{V:axes}', the varying mesh axes)");
  size_t s = p->pos + 3, e = s;
  while (e < p->len && p->src[e] != '}') {
    char c = p->src[e];
    if (!(c == ',' || c == '_' || c == '(' || c == ')' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      ft_parse_fail(p, e, "expected a mesh axis name or '}' in '{V:...}'");
    e++;
  }
  if (e >= p->len || e == s) ft_parse_fail(p, at, "'{V:' needs axis names and a closing '}'");
  v->vma = oom_check(p, ft_arena_strndup(p->arena, p->src + s, e - s));
  p->pos = e + 1;
}

/* `name:aval`; `_` makes a dropped variable. Not yet in scope. */
static void parse_binder(ft_parser *p, binders *b) {
  ft_parse_skip_ws(p);
  size_t start = p->pos, n = ft_parse_ident_len(p, NULL);
  if (!n) ft_parse_fail(p, p->pos, "expected a variable name");
  p->pos += n;
  if (ft_parse_peek(p) != ':') ft_parse_fail(p, p->pos, "expected ':' after variable name");
  p->pos++;
  ft_aval av = parse_aval(p);
  bool drop = n == 1 && p->src[start] == '_';
  ft_var *v = oom_check(p, drop ? ft_drop_new(p->arena, &av) : ft_var_new(p->arena, &av));
  if (ft_parse_peek(p) == '{') parse_vma(p, v);
  add_binder(p, b, v, start, n);
}

static void define_all(ft_parser *p, const binders *b) {
  for (int i = 0; i < b->n; i++) define(p, p->src + b->pos[i], b->len[i], b->pos[i], b->v[i]);
}

/* Binders up to `stop` (';' or '.'), defined at once: a jaxpr's inputs. */
static binders parse_binder_list(ft_parser *p, char stop, const char *what) {
  binders b = {0};
  for (;;) {
    ft_parse_skip_ws(p);
    if (ft_parse_peek(p) == stop) break;
    size_t n = ft_parse_ident_len(p, NULL);
    bool keyword = at_word(p, "let") || at_word(p, "in");
    if (!n || (keyword && peek_at(p, p->pos + n) != ':'))
      ft_parse_fail(p, p->pos, "expected a variable binder like 'a:f32[3]' or '%c' after the %s", stop, what);
    parse_binder(p, &b);
  }
  p->pos++;
  define_all(p, &b);
  return b;
}

/* Primitive names as JAX prints them; also names of older versions. */
static ft_prim lookup_prim(ft_parser *p, size_t start, size_t n) {
  if (n == 21 && !memcmp(p->src + start, "custom_vjp_call_jaxpr", 21)) return FT_P_CUSTOM_VJP_CALL;
  ft_prim prim = ft_prim_lookup(p->src + start, n);
  if (prim == FT_NUM_PRIMS)
    ft_parse_fail(p, start, "unknown primitive '%.*s'", (int)(n > 60 ? 60 : n), p->src + start);
  return prim;
}

static void check_arity(ft_parser *p, ft_prim prim, size_t at, int n_in, int n_out) {
  const ft_prim_info *pi = ft_prim_get(prim);
  if (pi->n_in >= 0 && n_in != pi->n_in)
    ft_parse_fail(p, at, "primitive '%s' takes %d operand%s, got %d", pi->name, pi->n_in,
                  pi->n_in == 1 ? "" : "s", n_in);
  if (pi->n_out >= 0 && n_out != pi->n_out)
    ft_parse_fail(p, at, "primitive '%s' has %d result%s, got %d", pi->name, pi->n_out,
                  pi->n_out == 1 ? "" : "s", n_out);
}

static ft_pval *parse_params(ft_parser *p, ft_prim prim, size_t at, ft_var *const *outs, int n_out);

/* outs = prim[params] atoms */
static void parse_eqn(ft_parser *p, ft_jb *jb) {
  binders outs = {0};
  ft_parse_skip_ws(p);
  while (ft_parse_skip_ws(p), at_binder(p)) parse_binder(p, &outs);
  bool no_results = !outs.n && at_resultless_eqn(p);
  if (!outs.n && !no_results)
    ft_parse_fail(p, p->pos, "expected an equation ('a:f32[] = prim ...') or 'in'");
  if (!no_results) ft_parse_expect(p, '=', "'=' after the equation's result binders");
  ft_parse_skip_ws(p);
  size_t at = p->pos, n = ft_parse_ident_len(p, "-");
  if (!n) ft_parse_fail(p, p->pos, "expected a primitive name after '='");
  ft_prim prim = lookup_prim(p, at, n);
  p->pos += n;
  ft_pval *ps = parse_params(p, prim, at, outs.v, outs.n);
  eqn_in a = {0};
  parse_atoms(p, &a);
  check_arity(p, prim, at, a.n, outs.n);
  for (int i = 0; i < a.n; i++)
    if (a.is_bare[i]) a.in[i] = make_lit(p, &a.bare[i], bare_dtype(prim, ps, &a, i, outs.v, outs.n));
  define_all(p, &outs);
  oom_check(p, ft_jb_add(jb, prim, a.n, a.in, outs.n, outs.v, ps));
  ft_parse_accept(p, ';');
}

/* Params in any order; missing ones take their schema default. */
static ft_pval *parse_params(ft_parser *p, ft_prim prim, size_t at, ft_var *const *outs, int n_out) {
  const ft_prim_info *pi = ft_prim_get(prim);
  ft_pval *ps = palloc(p, p->arena, sizeof *ps * (size_t)(pi->n_params + 1));
  bool *set = palloc(p, p->tmp, (size_t)(pi->n_params + pi->n_legacy + 1));
  if (prim == FT_P_JIT && p->scope) p->scope->jit_outs = outs, p->scope->n_jit_outs = n_out;
  if (ft_parse_peek(p) == '[') {
    p->pos++;
    while (!ft_parse_accept(p, ']')) {
      ft_parse_skip_ws(p);
      size_t kpos = p->pos, kn = ft_parse_ident_len(p, NULL);
      if (!kn) ft_parse_fail(p, p->pos, "expected a param name or ']' in the params of %s", pi->name);
      p->pos += kn;
      if (ft_parse_peek(p) != '=') ft_parse_fail(p, p->pos, "expected '=' after param name");
      p->pos++;
      int k = -1;
      for (int i = 0; i < pi->n_params + pi->n_legacy; i++)
        if (strlen(pi->params[i].name) == kn && !memcmp(pi->params[i].name, p->src + kpos, kn)) k = i;
      /* custom_vjp_call_jaxpr (JAX < 0.7) called its jaxpr fun_jaxpr */
      if (k < 0 && prim == FT_P_CUSTOM_VJP_CALL && kn == 9 && !memcmp(p->src + kpos, "fun_jaxpr", 9))
        k = ft_prim_param_index(prim, "call_jaxpr");
      /* Both modes refuse: dropping a param could change the result. */
      if (k < 0)
        ft_parse_fail(p, kpos, "unknown param '%.*s' of %s", (int)(kn > 60 ? 60 : kn), p->src + kpos, pi->name);
      if (k >= 0 && set[k]) ft_parse_fail(p, kpos, "duplicate param '%s' of %s", pi->params[k].name, pi->name);
      ft_param_spec any = {.name = "?", .kind = FT_PK_ANY};
      ft_pval v = ft_parse_param_value(p, prim, k >= 0 ? &pi->params[k] : &any);
      if (k >= 0) set[k] = true;
      if (k >= 0 && k < pi->n_params) ps[k] = v;
    }
  }
  if (p->scope) p->scope->jit_outs = NULL; /* a jit naming a hoisted jaxpr did not take it */
  ft_pval *dflt = oom_check(p, ft_params_default(p->tmp, prim));
  for (int k = 0; k < pi->n_params; k++) {
    if (set[k]) continue;
    if (prim == FT_P_BROADCAST_IN_DIM && !strcmp(pi->params[k].name, "shape") && n_out == 1) {
      /* JAX 0.10 elides the shape: it is the result's. */
      ps[k] = ft_pv_ints(p->arena, outs[0]->aval.rank, outs[0]->aval.dims);
      continue;
    }
    if (prim == FT_P_SEARCHSORTED && !strcmp(pi->params[k].name, "out_dtype") && n_out == 1) {
      /* JAX keeps SearchSorted's out_dtype out of its params: the result's */
      ps[k] = ft_pv_dtype(outs[0]->aval.dtype);
      continue;
    }
    if (!pi->params[k].dflt)
      ft_parse_fail(p, at, "missing param '%s' of %s", pi->params[k].name, pi->name);
    ps[k] = dflt[k];
  }
  ft_parse_normalize_params(p, prim, ps, at);
  return ps;
}

/* ---- jaxprs */

static void parse_outvars(ft_parser *p, ft_jaxpr *j, ft_jb *jb) {
  (void)jb;
  ft_parse_expect(p, '(', "'(' before the jaxpr's outputs");
  eqn_in a = {0};
  for (;;) {
    ft_parse_skip_ws(p);
    if (ft_parse_peek(p) == ')') break;
    if (literal_start(p) || at_literal_word(p)) {
      if (!(at_word(p, "inf") || at_word(p, "nan")) || !lookup(p, p->src + p->pos, 3)) {
        parse_lit_atom(p, &a);
        if (a.is_bare[a.n - 1]) a.in[a.n - 1] = make_lit(p, &a.bare[a.n - 1], natural_dtype(&a.bare[a.n - 1]));
        if (!ft_parse_accept(p, ',')) break;
        continue;
      }
    }
    size_t start = p->pos, n = ft_parse_ident_len(p, NULL);
    if (!n) ft_parse_fail(p, p->pos, "expected an output variable or ')'");
    p->pos += n;
    grow_in(p, &a);
    a.is_bare[a.n] = false;
    a.in[a.n] = n == 1 && p->src[start] == '_' ? drop_output(p, start, a.n) : resolve(p, start, n);
    a.n++;
    if (!ft_parse_accept(p, ',')) break;
  }
  ft_parse_expect(p, ')', "',' or ')' after an output");
  j->outvars = a.in;
  j->n_out = a.n;
}

/* Fills j from `{ lambda ... }` at pos, in a fresh scope. */
static void parse_jaxpr_into(ft_parser *p, ft_jaxpr *j) {
  if (++p->depth > MAX_DEPTH) ft_parse_fail(p, p->pos, "sub-jaxprs nested too deeply (more than %d)", MAX_DEPTH);
  ft_scope *outer = p->scope, sc = {0};
  if (outer && outer->jit_outs) { /* the jit's sub-jaxpr: see drop_output */
    sc.want_outs = outer->jit_outs, sc.n_want_outs = outer->n_jit_outs;
    outer->jit_outs = NULL;
  }
  p->scope = &sc;
  ft_parse_expect(p, '{', "'{' to start a jaxpr");
  expect_word(p, "lambda", "after '{'");
  binders consts = parse_binder_list(p, ';', "constvars");
  binders ins = parse_binder_list(p, '.', "input binders");
  expect_word(p, "let", "after the input binders");
  ft_jb jb;
  ft_jb_init(&jb, j);
  for (;;) {
    ft_parse_skip_ws(p);
    if (at_in_keyword(p)) break;
    if (at_word(p, "in") && peek_at(p, p->pos + 2) != ':') {
      p->pos += 2;
      ft_parse_expect(p, '(', "'(' and the outputs after 'in'");
    }
    if (p->pos >= p->len) ft_parse_fail(p, p->pos, "unexpected end of text: expected an equation or 'in'");
    parse_eqn(p, &jb);
  }
  p->pos += 2;
  parse_outvars(p, j, &jb);
  ft_parse_expect(p, '}', "'}' to close the jaxpr");
  ft_var **outs = j->outvars;
  int n_out = j->n_out;
  oom_check(p, (void *)(uintptr_t)ft_jaxpr_set_vars(j, consts.n, consts.v, ins.n, ins.v, n_out, outs));
  p->scope = outer;
  p->depth--;
}

ft_jaxpr *ft_parse_subjaxpr(ft_parser *p) {
  ft_jaxpr *j = oom_check(p, ft_jaxpr_new(p->arena));
  parse_jaxpr_into(p, j);
  return j;
}

/* ---- hoisted jaxprs */

typedef struct ft_named {
  const char *s;
  size_t n, ref_pos;
  ft_jaxpr *j;
  enum { REFERENCED, PARSING, DEFINED } state;
  int mark;               /* cycle check: 0 new, 1 on the path, 2 done */
} ft_named;

static ft_named *named_get(ft_parser *p, size_t start, size_t n) {
  for (int i = 0; i < p->n_named; i++)
    if (p->named[i].n == n && !memcmp(p->named[i].s, p->src + start, n)) return &p->named[i];
  if (p->n_named == p->cap_named) {
    int cap = p->cap_named ? p->cap_named * 2 : 8;
    ft_named *nn = palloc(p, p->tmp, sizeof *nn * (size_t)cap);
    if (p->n_named) memcpy(nn, p->named, sizeof *nn * (size_t)p->n_named);
    p->named = nn, p->cap_named = cap;
  }
  ft_named *e = &p->named[p->n_named++];
  *e = (ft_named){p->src + start, n, start, oom_check(p, ft_jaxpr_new(p->arena)), REFERENCED, 0};
  return e;
}

ft_jaxpr *ft_parse_named_ref(ft_parser *p, size_t start, size_t n) {
  ft_named *e = named_get(p, start, n);
  if (e->state == PARSING) ft_parse_fail(p, start, "jaxpr '%.*s' refers to itself", (int)(n > 40 ? 40 : n), p->src + start);
  return e->j;
}

/* `let name = { ... } in`: jaxprs JAX hoists because they are shared or big.
 * They may refer to each other in any order. */
static void parse_hoisted(ft_parser *p) {
  for (;;) {
    ft_parse_skip_ws(p);
    if (!at_word(p, "let")) return;
    p->pos += 3;
    ft_parse_skip_ws(p);
    size_t start = p->pos, n = ft_parse_jaxpr_name_len(p);
    if (!n) ft_parse_fail(p, p->pos, "expected the name of a hoisted jaxpr after 'let'");
    p->pos += n;
    ft_named *e = named_get(p, start, n);
    if (e->state != REFERENCED)
      ft_parse_fail(p, start, "hoisted jaxpr '%.*s' is already defined", (int)(n > 40 ? 40 : n), p->src + start);
    ft_parse_expect(p, '=', "'=' after the hoisted jaxpr's name");
    ft_parse_skip_ws(p);
    e->state = PARSING;
    ft_jaxpr *j = e->j;
    parse_jaxpr_into(p, j);
    named_get(p, start, n)->state = DEFINED; /* e may have moved */
    expect_word(p, "in", "after a hoisted jaxpr");
  }
}

static void check_named(ft_parser *p, ft_jaxpr *top);

ft_jaxpr *ft_parse_closed_program(ft_parser *p) {
  ft_named *named = p->named;
  int n = p->n_named, cap = p->cap_named;
  p->named = NULL, p->n_named = p->cap_named = 0; /* its own hoisted names */
  parse_hoisted(p);
  ft_parse_skip_ws(p);
  ft_jaxpr *j = oom_check(p, ft_jaxpr_new(p->arena));
  parse_jaxpr_into(p, j);
  check_named(p, j);
  p->named = named, p->n_named = n, p->cap_named = cap;
  return j;
}

static ft_named *named_of(ft_parser *p, const ft_jaxpr *j) {
  for (int i = 0; i < p->n_named; i++)
    if (p->named[i].j == j) return &p->named[i];
  return NULL;
}

static void check_cycles(ft_parser *p, const ft_jaxpr *j, int depth);

static void check_param_cycles(ft_parser *p, const ft_pval *v, int depth) {
  if (v->tag == FT_PV_TUPLE)
    for (int i = 0; i < v->n; i++) check_param_cycles(p, &v->u.items[i], depth);
  if (v->tag != FT_PV_JAXPR) return;
  ft_named *e = named_of(p, v->u.jaxpr);
  if (!e) return check_cycles(p, v->u.jaxpr, depth + 1);
  if (e->mark == 1) ft_parse_fail(p, e->ref_pos, "hoisted jaxprs refer to each other in a cycle through '%.*s'", (int)(e->n > 40 ? 40 : e->n), e->s);
  if (e->mark == 2) return;
  e->mark = 1;
  check_cycles(p, v->u.jaxpr, depth + 1);
  named_of(p, v->u.jaxpr)->mark = 2;
}

/* Printing and evaluation recurse into sub-jaxprs: a cycle of hoisted
 * jaxprs (only possible through names) must not reach them. */
static void check_cycles(ft_parser *p, const ft_jaxpr *j, int depth) {
  if (depth > 10000) ft_parse_fail(p, 0, "hoisted jaxprs nested too deeply");
  for (int i = 0; i < j->n_eqn; i++) {
    const ft_eqn *e = &j->eqns[i];
    for (int k = 0; k < ft_prim_get(e->prim)->n_params; k++) check_param_cycles(p, &e->params[k], depth);
  }
}

static void check_named(ft_parser *p, ft_jaxpr *top) {
  for (int i = 0; i < p->n_named; i++)
    if (p->named[i].state != DEFINED)
      ft_parse_fail(p, p->named[i].ref_pos, "unknown jaxpr '%.*s' (no 'let %.*s = { ... } in')",
                    (int)(p->named[i].n > 40 ? 40 : p->named[i].n), p->named[i].s,
                    (int)(p->named[i].n > 40 ? 40 : p->named[i].n), p->named[i].s);
  if (p->n_named) check_cycles(p, top, 0);
}

/* JAX hoists a jaxpr object that several custom_linear_solve equations
 * share (the tangent or transposed solve reuses the primal one's jaxprs)
 * as a top-level `let jaxpr = { ... } in`, yet prints it in full inside
 * each _LinearSolveTuple (str(ClosedJaxpr), a program of its own), so no
 * name in the text refers to it; so are jaxprs nested in those programs
 * (the jit of _lu_solve that two solves share). A top-level hoisted jaxpr
 * that nothing references is such a shared object: each jaxpr in a tuple's
 * programs printing the same text (as a program of its own) is taken to be
 * that object, so printing hoists it where JAX did. Equal text is an equal computation, so sharing
 * changes no result. */
typedef struct share_cands {
  ft_jaxpr **j;
  char **text;
  int n;
} share_cands;

static void share_visit(ft_parser *p, ft_jaxpr *j, share_cands *c, int depth, bool inside);

/* inside: v is in a program a _LinearSolveTuple prints on its own, where
 * the text shows no sharing with the outer program's objects. */
static void share_visit_pval(ft_parser *p, ft_pval *v, share_cands *c, int depth, bool inside) {
  if (v->tag == FT_PV_TUPLE)
    for (int i = 0; i < v->n; i++) share_visit_pval(p, &v->u.items[i], c, depth, inside);
  if (v->tag != FT_PV_JAXPR) return;
  if (inside && !named_of(p, v->u.jaxpr)) {
    char *s = ft_jaxpr_print(NULL, v->u.jaxpr);
    if (!s) ft_parse_fail(p, 0, "out of memory");
    for (int q = 0; q < c->n; q++)
      if (!strcmp(s, c->text[q])) {
        v->u.jaxpr = c->j[q];
        break;
      }
    free(s);
  }
  ft_named *e = named_of(p, v->u.jaxpr);
  if (e && e->mark == 3) return;
  if (e) e->mark = 3;
  share_visit(p, v->u.jaxpr, c, depth + 1, inside);
}

static void share_visit(ft_parser *p, ft_jaxpr *j, share_cands *c, int depth, bool inside) {
  if (depth > 10000) return; /* check_cycles bounds the nesting first */
  for (int i = 0; i < j->n_eqn; i++) {
    ft_eqn *e = &j->eqns[i];
    bool in = inside || e->prim == FT_P_CUSTOM_LINEAR_SOLVE;
    for (int t = 0; t < ft_prim_get(e->prim)->n_params; t++) share_visit_pval(p, &e->params[t], c, depth, in);
  }
}

static void share_lstuple_jaxprs(ft_parser *p, ft_jaxpr *top) {
  share_cands c = {0};
  int n = 0;
  for (int i = 0; i < p->n_named; i++) n += p->named[i].state == DEFINED && p->named[i].mark == 0;
  if (!n) return;
  c.j = palloc(p, p->tmp, sizeof *c.j * (size_t)n);
  c.text = palloc(p, p->tmp, sizeof *c.text * (size_t)n);
  for (int i = 0; i < p->n_named; i++) {
    if (p->named[i].state != DEFINED || p->named[i].mark != 0) continue;
    char *s = ft_jaxpr_print(NULL, p->named[i].j);
    if (!s) ft_parse_fail(p, 0, "out of memory");
    size_t len = strlen(s);
    char *t = palloc(p, p->tmp, len + 1);
    memcpy(t, s, len + 1);
    free(s);
    c.j[c.n] = p->named[i].j, c.text[c.n++] = t;
  }
  share_visit(p, top, &c, 0, false);
}

static ft_jaxpr *parse_top(ft_parser *p, ft_jaxpr *top) {
  parse_hoisted(p);
  ft_parse_skip_ws(p);
  if (p->pos >= p->len) ft_parse_fail(p, p->pos, p->len ? "expected '{' to start a jaxpr, found the end of the text" : "empty input: expected a jaxpr '{ lambda ... }'");
  parse_jaxpr_into(p, top);
  ft_parse_skip_ws(p);
  if (p->pos < p->len) ft_parse_fail(p, p->pos, "unexpected text after the jaxpr");
  check_named(p, top);
  share_lstuple_jaxprs(p, top);
  return top;
}

ft_jaxpr *ft_parse(ft_ctx *ctx, const char *text, size_t len, const char *name) {
  if (!text) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_parse: NULL text");
    return NULL;
  }
  ft_jaxpr *top = ft_jaxpr_new(NULL);
  ft_arena *tmp = ft_arena_new();
  if (!top || !tmp) {
    ft_jaxpr_free(top);
    ft_arena_free(tmp);
    ft_set_error(ctx, FT_ERR_NOMEM, "ft_parse: out of memory");
    return NULL;
  }
  jmp_buf jb;
  ft_parser p = {.ctx = ctx, .src = text, .len = len, .name = name ? name : "<input>",
                 .jmp = &jb, .arena = top->arena, .tmp = tmp};
  if (setjmp(jb)) {
    ft_jaxpr_free(top);
    ft_arena_free(tmp);
    return NULL;
  }
  /* JAX never prints control characters; refusing them up front keeps NUL
   * bytes out of param text that is stored verbatim (found by fuzzing:
   * such text printed shorter than it parsed). */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f)
      ft_parse_fail(&p, i, "control character 0x%02x is not allowed in jaxpr text", c);
  }
  parse_top(&p, top);
  ft_arena_free(tmp);
  ft_status st = ft_jaxpr_verify(ctx, top);
  if (st != FT_OK) {
    ft_error_prefix(ctx, "%s", p.name);
    ft_jaxpr_free(top);
    return NULL;
  }
  ft_ctx_event ev = {.kind = FT_CTX_EV_PARSE, .text = text, .len = len, .jaxpr = top};
  if (ft_ctx_notify(ctx, &ev) != FT_OK) return ft_jaxpr_free(top), NULL; /* the ledger's record */
  return top;
}
