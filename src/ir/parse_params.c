/* src/ir/parse_params.c: param values of jaxpr text, typed by the schema of
 * prims.def, and the normalization of older JAX spellings to 0.10.2's.
 *
 * Values are Python objects printed with str(): None, True, 3, 2.5, float32,
 * (1, 2), [0], ((1, 2, 0),), np.int64(2), Precision.HIGHEST, 'text',
 * <function f at 0xXX>, GatherDimensionNumbers(offset_dims=(0,), ...),
 * sub-jaxprs `{ lambda ... }` or a hoisted jaxpr's name, and tuples of
 * sub-jaxprs separated by breaks `( {...} {...} )`. A value ends at
 * whitespace outside brackets; the caller expects the next `name=` or `]`. */
#include <errno.h>
#include <string.h>

#include "ir.h"

enum { MAX_VALUE_DEPTH = 64 };

static char peek_at(const ft_parser *p, size_t i) { return i < p->len ? p->src[i] : 0; }

static bool starts_with(const ft_parser *p, const char *w) {
  size_t n = strlen(w);
  return p->pos + n <= p->len && !memcmp(p->src + p->pos, w, n);
}

static const char *copy_span(ft_parser *p, size_t start, size_t end) {
  char *s = ft_arena_strndup(p->arena, p->src + start, end - start);
  if (!s) ft_parse_fail(p, start, "out of memory");
  return s;
}

/* Skips a bracketed span starting at pos (open char), nesting the bracket
 * kinds JAX prints; quotes are skipped whole. */
static void skip_balanced(ft_parser *p) {
  size_t start = p->pos;
  char stack[MAX_VALUE_DEPTH];
  int d = 0;
  do {
    char c = peek_at(p, p->pos);
    if (!c && p->pos >= p->len) ft_parse_fail(p, start, "unbalanced '%c': no closing bracket", p->src[start]);
    if (c == '\'' || c == '"') {
      p->pos++;
      while (p->pos < p->len && p->src[p->pos] != c) p->pos += 1 + (p->src[p->pos] == '\\');
      if (p->pos >= p->len) ft_parse_fail(p, start, "unterminated string");
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (d == MAX_VALUE_DEPTH) ft_parse_fail(p, p->pos, "brackets nested too deeply");
      stack[d++] = c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
    } else if (c == ')' || c == ']' || c == '}' || c == '>') {
      if (c == '>' && stack[d - 1] != '>') { /* a '>' inside other brackets, e.g. a repr */
        p->pos++;
        continue;
      }
      if (c != stack[d - 1]) ft_parse_fail(p, p->pos, "mismatched '%c', expected '%c'", c, stack[d - 1]);
      d--;
    }
    p->pos++;
  } while (d > 0);
}

static ft_pval opaque(ft_parser *p, size_t start) {
  ft_pval v = {.tag = FT_PV_OPAQUE};
  v.s = copy_span(p, start, p->pos);
  return v;
}

/* JAX 0.6 printed lu.WrappedFun params as several lines ending in
 * "Core: NAME" and an empty line. */
static ft_pval wrapped_function(ft_parser *p) {
  size_t start = p->pos;
  for (;;) {
    const char *nl = memchr(p->src + p->pos, '\n', p->len - p->pos);
    size_t eol = nl ? (size_t)(nl - p->src) : p->len;
    bool core = starts_with(p, "Core: ");
    p->pos = eol;
    if (core || eol >= p->len) break;
    p->pos++;
  }
  if (p->pos >= p->len && !starts_with(p, "")) ft_parse_fail(p, start, "unterminated 'Wrapped function' value");
  return opaque(p, start);
}

static ft_pval parse_value(ft_parser *p);
static void normalize_name(ft_parser *p, ft_pval *v);

/* ( a, b ) or [ a, b ]: items of any kind, trailing comma allowed. */
static ft_pval parse_seq(ft_parser *p, char close) {
  size_t open = p->pos++;
  if (++p->depth > MAX_VALUE_DEPTH) ft_parse_fail(p, open, "values nested too deeply");
  ft_pval *items = NULL;
  int n = 0, cap = 0;
  for (;;) {
    ft_parse_skip_ws(p);
    if (ft_parse_peek(p) == close) break;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      ft_pval *ni = ft_arena_alloc(p->tmp, sizeof *ni * (size_t)cap);
      if (!ni) ft_parse_fail(p, p->pos, "out of memory");
      if (n) memcpy(ni, items, sizeof *ni * (size_t)n);
      items = ni;
    }
    items[n++] = parse_value(p);
    ft_parse_skip_ws(p);
    if (ft_parse_peek(p) == ',') p->pos++;
    else if (ft_parse_peek(p) != close && ft_parse_peek(p) != '{')
      ft_parse_fail(p, p->pos, "expected ',' or '%c' in a %s", close, close == ')' ? "tuple" : "list");
  }
  p->pos++;
  p->depth--;
  ft_pval v = ft_pv_tuple(p->arena, n);
  if (n && v.tag != FT_PV_TUPLE) ft_parse_fail(p, open, "out of memory");
  if (n) memcpy(v.u.items, items, sizeof *items * (size_t)n);
  v.list = close == ']';
  return v;
}

static ft_pval parse_number(ft_parser *p) {
  size_t start = p->pos;
  if (peek_at(p, p->pos) == '-' || peek_at(p, p->pos) == '+') p->pos++;
  bool is_float = false;
  if (starts_with(p, "inf") || starts_with(p, "nan")) p->pos += 3, is_float = true;
  while (p->pos < p->len) {
    char c = p->src[p->pos];
    bool sign = (c == '-' || c == '+') && (p->src[p->pos - 1] == 'e' || p->src[p->pos - 1] == 'E');
    if (!(c >= '0' && c <= '9') && c != '.' && c != 'e' && c != 'E' && !sign) break;
    is_float |= !(c >= '0' && c <= '9');
    p->pos++;
  }
  char buf[64];
  size_t n = p->pos - start;
  if (n >= sizeof buf) ft_parse_fail(p, start, "number too long");
  memcpy(buf, p->src + start, n);
  buf[n] = 0;
  char *end;
  if (is_float) {
    double f = strtod(buf, &end);
    if (*end || end == buf) ft_parse_fail(p, start, "malformed number '%s'", buf);
    return (ft_pval){.tag = FT_PV_FLOAT, .u.f = f};
  }
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (*end || end == buf || errno) ft_parse_fail(p, start, "malformed or out-of-range integer '%s'", buf);
  return ft_pv_int(v);
}

/* An identifier-led value: None/True/False, np.int64(3), Name(...), a.b.C. */
static ft_pval parse_word(ft_parser *p) {
  size_t start = p->pos, n = ft_parse_ident_len(p, ".");
  p->pos += n;
  if (n == 4 && !memcmp(p->src + start, "None", 4)) { /* spelled: see print.c's HIDE_ABSENT */
    ft_pval v = ft_pv_none();
    v.s = "None";
    return v;
  }
  if (n == 4 && !memcmp(p->src + start, "True", 4)) return ft_pv_bool(true);
  if (n == 5 && !memcmp(p->src + start, "False", 5)) return ft_pv_bool(false);
  if ((n == 3 && !memcmp(p->src + start, "inf", 3)) || (n == 3 && !memcmp(p->src + start, "nan", 3))) {
    p->pos = start;
    return parse_number(p);
  }
  if (peek_at(p, p->pos) != '(') {
    ft_pval v = {.tag = FT_PV_STR};
    v.s = copy_span(p, start, p->pos);
    return v;
  }
  if (n > 3 && !memcmp(p->src + start, "np.", 3)) { /* np.int64(2): a numpy scalar */
    size_t save = p->pos;
    p->pos++;
    char c = peek_at(p, p->pos);
    if ((c >= '0' && c <= '9') || c == '-') {
      ft_pval v = parse_number(p);
      if (v.tag == FT_PV_INT && peek_at(p, p->pos) == ')') {
        p->pos++;
        v.s = copy_span(p, start, start + n);
        return v;
      }
    }
    p->pos = save;
  }
  skip_balanced(p);
  return opaque(p, start);
}

static ft_pval parse_value(ft_parser *p) {
  ft_parse_skip_ws(p);
  size_t start = p->pos;
  char c = ft_parse_peek(p), d = peek_at(p, p->pos + 1);
  if (p->pos >= p->len) ft_parse_fail(p, p->pos, "expected a param value, found the end of the text");
  if (c == '(') return parse_seq(p, ')');
  if (c == '[') return parse_seq(p, ']');
  if (c == '{') {
    size_t i = p->pos + 1;
    while (i < p->len && (p->src[i] == ' ' || p->src[i] == '\n')) i++;
    if (i + 6 <= p->len && !memcmp(p->src + i, "lambda", 6)) return ft_pv_jaxpr(ft_parse_subjaxpr(p));
    skip_balanced(p);
    return opaque(p, start);
  }
  if (c == '<' || c == '\'' || c == '"') {
    skip_balanced(p);
    return opaque(p, start);
  }
  if ((c >= '0' && c <= '9') || ((c == '-' || c == '+') && ((d >= '0' && d <= '9') || d == 'i' || d == 'n')))
    return parse_number(p);
  if (starts_with(p, "Wrapped function:")) return wrapped_function(p);
  if (ft_parse_ident_len(p, ".")) return parse_word(p);
  ft_parse_fail(p, p->pos, "expected a param value");
}

/* ---- kinds */

static const char *kind_name(ft_pkind k) {
  switch (k) {
  case FT_PK_ANY: return "a value";
  case FT_PK_INT: return "an int";
  case FT_PK_INTS: return "a tuple of ints";
  case FT_PK_INTS_OR_NONE: return "a tuple of ints or None";
  case FT_PK_BOOL: return "True or False";
  case FT_PK_BOOLS: return "a tuple of bools";
  case FT_PK_FLOAT: return "a number";
  case FT_PK_DTYPE: return "a dtype";
  case FT_PK_DTYPE_OR_NONE: return "a dtype or None";
  case FT_PK_SYM: return "one of its enum values";
  case FT_PK_NAME: return "a name";
  case FT_PK_JAXPR: return "a jaxpr";
  case FT_PK_JAXPR_OR_NONE: return "a jaxpr or None";
  case FT_PK_JAXPRS: return "a tuple of jaxprs";
  case FT_PK_DOTDIMS: return "dimension numbers ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))";
  case FT_PK_PADCFG: return "a tuple of (low, high, interior) triples";
  case FT_PK_RULE: return "a function name or a jaxpr";
  case FT_PK_AVAL: return "an aval such as f32[4]";
  case FT_PK_LSTUPLE: return "_LinearSolveTuple(matvec=, vecmat=, solve=, transpose_solve=)";
  }
  return "a value";
}

static bool all_items(const ft_pval *v, ft_pv_tag tag) {
  if (v->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++)
    if (v->u.items[i].tag != tag) return false;
  return true;
}

static bool is_dotdims(const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE || v->n != 2) return false;
  for (int i = 0; i < 2; i++) {
    const ft_pval *x = &v->u.items[i];
    if (x->tag != FT_PV_TUPLE || x->n != 2 || !all_items(&x->u.items[0], FT_PV_INT) ||
        !all_items(&x->u.items[1], FT_PV_INT))
      return false;
  }
  return true;
}

static bool is_padcfg(const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++)
    if (!all_items(&v->u.items[i], FT_PV_INT) || v->u.items[i].n != 3) return false;
  return true;
}

/* Older spellings of enums that 0.10.2 prints as integers. */
static const struct { const char *from, *to; } sym_aliases[] = {
    {"FftType.FFT", "0"},   {"FftType.IFFT", "1"},   {"FftType.RFFT", "2"},   {"FftType.IRFFT", "3"},
    {"jax.lax.FftType.FFT", "0"}, {"jax.lax.FftType.IFFT", "1"},
    {"jax.lax.FftType.RFFT", "2"}, {"jax.lax.FftType.IRFFT", "3"},
    {"RoundingMethod.AWAY_FROM_ZERO", "0"}, {"RoundingMethod.TO_NEAREST_EVEN", "1"},
};

static bool to_sym(const ft_param_spec *spec, ft_pval *v) {
  char buf[32];
  const char *s = v->s;
  if (v->tag == FT_PV_INT && !v->s) {
    snprintf(buf, sizeof buf, "%lld", (long long)v->u.i);
    s = buf;
  } else if (v->tag != FT_PV_STR) {
    return false;
  }
  for (size_t i = 0; i < FT_COUNTOF(sym_aliases); i++)
    if (!strcmp(s, sym_aliases[i].from)) s = sym_aliases[i].to;
  for (int i = 0; spec->syms[i]; i++)
    if (!strcmp(spec->syms[i], s)) {
      *v = (ft_pval){.tag = FT_PV_SYM, .u.i = i, .s = spec->syms[i]};
      return true;
    }
  return false;
}

/* A dtype param: a name (float32), or the type object JAX prints when a
 * program passed one (lax.empty(shape, jnp.float32) prints
 * dtype=<class 'jax.numpy.float32'>), whose spelling is kept for printing. */
static bool to_dtype(ft_pval *v, bool or_none) {
  if (or_none && v->tag == FT_PV_NONE) return true;
  ft_dtype dt;
  if (v->tag == FT_PV_OPAQUE && v->s && !strncmp(v->s, "<class '", 8)) {
    size_t n = strlen(v->s);
    const char *dot = strrchr(v->s, '.');
    char name[32];
    if (n < 11 || strcmp(v->s + n - 2, "'>") || !dot || (size_t)(v->s + n - 2 - dot - 1) >= sizeof name)
      return false;
    memcpy(name, dot + 1, (size_t)(v->s + n - 2 - dot - 1));
    name[v->s + n - 2 - dot - 1] = '\0';
    if (ft_dtype_from_name(name, &dt) != FT_OK) return false;
    const char *spelled = v->s;
    *v = ft_pv_dtype(dt);
    v->s = spelled;
    return true;
  }
  if (v->tag != FT_PV_STR || ft_dtype_from_name(v->s, &dt) != FT_OK) return false;
  *v = ft_pv_dtype(dt);
  return true;
}

/* Function names as JAX prints them: identifiers, `<lambda>`, dotted, and
 * the names transformations give, `jvp(f)`, `transpose(jvp(f))` (balanced
 * parentheses, not first). They also name hoisted jaxprs, so nothing else
 * may get through. */
static bool is_name(const char *s) {
  if (!*s || *s == '(') return false;
  int depth = 0;
  for (; *s; s++) {
    if (*s == '(') depth++;
    else if (*s == ')') {
      if (--depth < 0) return false;
    } else if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
               *s == '_' || *s == '.' || *s == '<' || *s == '>'))
      return false;
  }
  return depth == 0;
}

/* Checks (and converts) a generic value to the schema's kind. */
static bool coerce(const ft_param_spec *spec, ft_pval *v) {
  switch (spec->kind) {
  case FT_PK_ANY: return true;
  case FT_PK_INT: return v->tag == FT_PV_INT;
  case FT_PK_INTS: return all_items(v, FT_PV_INT);
  case FT_PK_INTS_OR_NONE: return v->tag == FT_PV_NONE || all_items(v, FT_PV_INT);
  case FT_PK_BOOL: return v->tag == FT_PV_BOOL;
  case FT_PK_BOOLS: return all_items(v, FT_PV_BOOL);
  case FT_PK_FLOAT:
    if (v->tag == FT_PV_INT) *v = (ft_pval){.tag = FT_PV_FLOAT, .u.f = (double)v->u.i};
    return v->tag == FT_PV_FLOAT;
  case FT_PK_DTYPE: return to_dtype(v, false);
  case FT_PK_DTYPE_OR_NONE: return to_dtype(v, true);
  case FT_PK_SYM: return to_sym(spec, v);
  case FT_PK_NAME: return v->tag == FT_PV_NONE || (v->tag == FT_PV_STR && is_name(v->s));
  case FT_PK_JAXPR: return v->tag == FT_PV_JAXPR;
  case FT_PK_JAXPR_OR_NONE: return v->tag == FT_PV_JAXPR || v->tag == FT_PV_NONE;
  case FT_PK_JAXPRS: return all_items(v, FT_PV_JAXPR);
  case FT_PK_DOTDIMS: return is_dotdims(v);
  case FT_PK_PADCFG: return is_padcfg(v);
  case FT_PK_RULE:
    return v->tag == FT_PV_NONE || v->tag == FT_PV_JAXPR || (v->tag == FT_PV_STR && is_name(v->s));
  case FT_PK_LSTUPLE: return ft_lstuple_ok(v);
  case FT_PK_AVAL: return v->tag == FT_PV_OPAQUE;
  }
  return false;
}

/* A hoisted jaxpr referenced by name (`jaxpr=_uniform`). */
static ft_jaxpr *named_jaxpr(ft_parser *p) {
  size_t start = p->pos, n = ft_parse_jaxpr_name_len(p);
  if (!n) ft_parse_fail(p, p->pos, "expected a jaxpr '{ lambda ... }' or the name of a hoisted jaxpr");
  p->pos += n;
  return ft_parse_named_ref(p, start, n);
}

static ft_jaxpr *jaxpr_or_name(ft_parser *p) {
  ft_parse_skip_ws(p);
  return ft_parse_peek(p) == '{' ? ft_parse_subjaxpr(p) : named_jaxpr(p);
}

/* `( {...} {...} )`: JAX separates the jaxprs by breaks, not commas. */
static ft_pval parse_jaxprs(ft_parser *p) {
  ft_parse_expect(p, '(', "'(' to start a tuple of jaxprs");
  ft_jaxpr **js = NULL;
  int n = 0, cap = 0;
  while (!ft_parse_accept(p, ')')) {
    if (p->pos >= p->len) ft_parse_fail(p, p->pos, "expected ')' to close the tuple of jaxprs");
    if (n == cap) {
      cap = cap ? cap * 2 : 4;
      ft_jaxpr **nj = ft_arena_alloc(p->tmp, sizeof *nj * (size_t)cap);
      if (!nj) ft_parse_fail(p, p->pos, "out of memory");
      if (n) memcpy(nj, js, sizeof *nj * (size_t)n);
      js = nj;
    }
    js[n++] = jaxpr_or_name(p);
    ft_parse_accept(p, ',');
  }
  ft_pval v = ft_pv_tuple(p->arena, n);
  if (n && v.tag != FT_PV_TUPLE) ft_parse_fail(p, p->pos, "out of memory");
  for (int i = 0; i < n; i++) v.u.items[i] = ft_pv_jaxpr(js[i]);
  return v;
}

static bool at_none(const ft_parser *p);

/* custom_linear_solve's `_LinearSolveTuple(matvec=X, vecmat=X, solve=X,
 * transpose_solve=X)`: X an int (const_lengths), None, or a closed jaxpr
 * printed as a program of its own (str(ClosedJaxpr): its own hoisted
 * `let name = { ... } in`, from column 0). */
static ft_pval parse_lstuple(ft_parser *p) {
  static const char *const fields[4] = {"matvec", "vecmat", "solve", "transpose_solve"};
  static const char head[] = "_LinearSolveTuple(";
  if (!starts_with(p, head)) ft_parse_fail(p, p->pos, "expected '_LinearSolveTuple('");
  p->pos += sizeof head - 1;
  ft_pval v = ft_pv_tuple(p->arena, 4);
  if (v.tag != FT_PV_TUPLE) ft_parse_fail(p, p->pos, "out of memory");
  for (int i = 0; i < 4; i++) {
    ft_parse_skip_ws(p);
    if (i) {
      ft_parse_expect(p, ',', "',' between the fields of _LinearSolveTuple");
      ft_parse_skip_ws(p);
    }
    size_t n = strlen(fields[i]);
    if (!starts_with(p, fields[i]) || peek_at(p, p->pos + n) != '=')
      ft_parse_fail(p, p->pos, "expected '%s=' in _LinearSolveTuple", fields[i]);
    p->pos += n + 1;
    ft_parse_skip_ws(p);
    char c = ft_parse_peek(p);
    if (at_none(p)) p->pos += 4, v.u.items[i] = ft_pv_none();
    else if (c == '{' || starts_with(p, "let ")) v.u.items[i] = ft_pv_jaxpr(ft_parse_closed_program(p));
    else v.u.items[i] = parse_value(p);
  }
  ft_parse_skip_ws(p);
  ft_parse_expect(p, ')', "')' to close _LinearSolveTuple");
  return v;
}

/* A name as JAX prints a function's name: `f`, `<lambda>`, `_where`. Older
 * versions printed the function object; see normalize_name. */
static ft_pval parse_name(ft_parser *p) {
  ft_parse_skip_ws(p);
  size_t start = p->pos;
  if (starts_with(p, "Wrapped function:")) return wrapped_function(p);
  if (starts_with(p, "None") && !(ft_parse_ident_len(p, NULL) > 4)) {
    p->pos += 4;
    return ft_pv_none();
  }
  int angle = 0;
  while (p->pos < p->len) {
    char c = p->src[p->pos];
    if (c == '<') angle++;
    else if (c == '>' && angle) angle--;
    else if (!angle && (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ']')) break;
    p->pos++;
  }
  if (angle) ft_parse_fail(p, start, "unbalanced '<' in a name");
  if (p->pos == start) ft_parse_fail(p, p->pos, "expected a name");
  ft_pval v = {.tag = FT_PV_STR};
  v.s = copy_span(p, start, p->pos);
  return v;
}

/* The word None (not a hoisted jaxpr named None1). */
static bool at_none(const ft_parser *p) {
  char c = peek_at(p, p->pos + 4);
  return starts_with(p, "None") && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                     (c >= '0' && c <= '9') || c == '_' || c == '.');
}

/* An aval as text (f32[4], i32[], bool[2,3]{...}): up to a space or the
 * params' closing ']' outside brackets. */
static ft_pval parse_aval_text(ft_parser *p) {
  size_t start = p->pos;
  int depth = 0;
  while (p->pos < p->len) {
    char c = p->src[p->pos];
    if (c == '[' || c == '{' || c == '(') depth++;
    else if ((c == ']' || c == '}' || c == ')') && depth-- == 0) break;
    else if (depth == 0 && (c == ' ' || c == '\n' || c == '\t' || c == '\r')) break;
    p->pos++;
  }
  if (p->pos == start) ft_parse_fail(p, start, "expected an aval such as f32[4]");
  char *s = ft_arena_strndup(p->arena, p->src + start, p->pos - start);
  if (!s) ft_parse_fail(p, start, "out of memory");
  return (ft_pval){.tag = FT_PV_OPAQUE, .s = s};
}

ft_pval ft_parse_param_value(ft_parser *p, ft_prim prim, const ft_param_spec *spec) {
  ft_parse_skip_ws(p);
  size_t start = p->pos;
  ft_pval v;
  if (spec->kind == FT_PK_JAXPR_OR_NONE && at_none(p)) p->pos += 4, v = ft_pv_none();
  else if (spec->kind == FT_PK_JAXPR || spec->kind == FT_PK_JAXPR_OR_NONE) v = ft_pv_jaxpr(jaxpr_or_name(p));
  else if (spec->kind == FT_PK_JAXPRS) v = parse_jaxprs(p);
  else if (spec->kind == FT_PK_LSTUPLE) v = parse_lstuple(p);
  else if (spec->kind == FT_PK_AVAL) v = parse_aval_text(p);
  else if (spec->kind == FT_PK_NAME) v = parse_name(p), normalize_name(p, &v);
  else if (spec->kind == FT_PK_RULE && ft_parse_peek(p) == '{') v = ft_pv_jaxpr(ft_parse_subjaxpr(p));
  else if (spec->kind == FT_PK_RULE) v = parse_name(p), normalize_name(p, &v);
  else v = parse_value(p);
  if (!spec->legacy && !coerce(spec, &v))
    ft_parse_fail(p, start, "param '%s' of %s expects %s", spec->name, ft_prim_get(prim)->name,
                  kind_name(spec->kind));
  char c = ft_parse_peek(p);
  if (p->pos < p->len && c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != ']')
    ft_parse_fail(p, p->pos, "expected a space or ']' after the value of param '%s'", spec->name);
  return v;
}

/* ---- normalization to JAX 0.10.2 */

/* `<function outer.<locals>.f at 0x..>` -> `f`; JAX 0.6's multi-line
 * "Wrapped function: ... Core: f" -> `f`. */
static void normalize_name(ft_parser *p, ft_pval *v) {
  if (v->tag != FT_PV_STR && v->tag != FT_PV_OPAQUE) return;
  const char *s = v->s;
  const char *core = strstr(s, "\nCore: ");
  if (!strncmp(s, "Wrapped function:", 17) && core) {
    core += 7;
    char *n = ft_arena_strndup(p->arena, core, strcspn(core, "\n"));
    if (!n) ft_parse_fail(p, p->pos, "out of memory");
    v->tag = FT_PV_STR;
    v->s = n;
    return;
  }
  if (!strncmp(s, "<function ", 10)) {
    const char *q = s + 10, *end = strstr(q, " at ");
    if (!end) end = q + strcspn(q, ">");
    const char *last = q;
    for (const char *c = q; c < end; c++)
      if (*c == '.' && c[1] != '<') last = c + 1;
      else if (*c == '.' && !strncmp(c + 1, "<lambda>", 8)) last = c + 1;
    char *n = ft_arena_strndup(p->arena, last, (size_t)(end - last));
    if (!n) ft_parse_fail(p, p->pos, "out of memory");
    v->tag = FT_PV_STR;
    v->s = n;
  }
}

static bool tuple_all(const ft_pval *v, bool (*pred)(const ft_pval *)) {
  if (v->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++)
    if (!pred(&v->u.items[i])) return false;
  return true;
}

static bool is_false(const ft_pval *v) { return v->tag == FT_PV_BOOL && !v->u.b; }
static bool is_none(const ft_pval *v) { return v->tag == FT_PV_NONE; }
static bool is_unspecified(const ft_pval *v) {
  return (v->tag == FT_PV_STR || v->tag == FT_PV_OPAQUE) && v->s && !strcmp(v->s, "UnspecifiedValue");
}

static void set_none(ft_prim prim, ft_pval *ps, const char *name, bool cond) {
  int k = ft_prim_param_index(prim, name);
  if (k >= 0 && cond) ps[k] = ft_pv_none();
}

static ft_pval *param(ft_prim prim, ft_pval *ps, const char *name) {
  int k = ft_prim_param_index(prim, name);
  return k >= 0 ? &ps[k] : NULL;
}

/* _pjit_pp_rule hides trivial values; older versions printed them. Storing
 * them as None makes the printout and the hash version-independent. */
static void normalize_jit(ft_pval *ps) {
  ft_prim j = FT_P_JIT;
  ft_pval *v;
  if ((v = param(j, ps, "donated_invars"))) set_none(j, ps, "donated_invars", tuple_all(v, is_false));
  if ((v = param(j, ps, "keep_unused"))) set_none(j, ps, "keep_unused", is_false(v));
  if ((v = param(j, ps, "in_shardings"))) set_none(j, ps, "in_shardings", tuple_all(v, is_unspecified));
  if ((v = param(j, ps, "out_shardings"))) set_none(j, ps, "out_shardings", tuple_all(v, is_unspecified));
  if ((v = param(j, ps, "in_layouts"))) set_none(j, ps, "in_layouts", tuple_all(v, is_none));
  if ((v = param(j, ps, "out_layouts"))) set_none(j, ps, "out_layouts", tuple_all(v, is_none));
  if ((v = param(j, ps, "compiler_options_kvs"))) set_none(j, ps, "compiler_options_kvs", v->tag == FT_PV_TUPLE && !v->n);
}

/* JAX 0.12 prints scan's operand and result structure (ft_in = (consts,
 * carry, xs), ft_out = (carry, ys)) instead of num_consts and num_carry;
 * older JAX prints the counts. The counts are what every pass reads, so
 * they come from ft_in here; a flat structure (tuples of None) is what the
 * counts alone say, so it is stored as None: printing writes it back from
 * the counts and the hash does not depend on which form was read. */
static void normalize_scan(ft_parser *p, size_t at, ft_pval *ps) {
  int kin = ft_prim_param_index(FT_P_SCAN, "ft_in"), kout = ft_prim_param_index(FT_P_SCAN, "ft_out");
  int kcon = ft_prim_param_index(FT_P_SCAN, "num_consts"), kcar = ft_prim_param_index(FT_P_SCAN, "num_carry");
  if (ps[kin].tag != FT_PV_NONE) {
    int64_t g[3];
    if (!ft_flattree_groups(&ps[kin], 3, g))
      ft_parse_fail(p, at, "scan's ft_in must be a tuple (consts, carry, xs) of pytree structures");
    const char *names[2] = {"num_consts", "num_carry"};
    int ks[2] = {kcon, kcar};
    for (int i = 0; i < 2; i++) {
      if (ps[ks[i]].u.i >= 0 && ps[ks[i]].u.i != g[i])
        ft_parse_fail(p, at, "scan's %s=%lld disagrees with ft_in, which has %lld", names[i],
                      (long long)ps[ks[i]].u.i, (long long)g[i]);
      ps[ks[i]] = ft_pv_int(g[i]);
    }
    if (ft_flattree_is_flat(&ps[kin])) ps[kin] = ft_pv_none();
  }
  if (ps[kout].tag != FT_PV_NONE) {
    int64_t g[2];
    if (!ft_flattree_groups(&ps[kout], 2, g))
      ft_parse_fail(p, at, "scan's ft_out must be a tuple (carry, ys) of pytree structures");
    if (ps[kcar].u.i >= 0 && g[0] != ps[kcar].u.i)
      ft_parse_fail(p, at, "scan's ft_out has %lld carries, ft_in or num_carry %lld", (long long)g[0],
                    (long long)ps[kcar].u.i);
    if (ft_flattree_is_flat(&ps[kout])) ps[kout] = ft_pv_none();
  }
  if (ps[kcon].u.i < 0 || ps[kcar].u.i < 0)
    ft_parse_fail(p, at, "scan needs ft_in (JAX 0.12) or num_consts and num_carry (older JAX)");
}

void ft_parse_normalize_params(ft_parser *p, ft_prim prim, ft_pval *ps, size_t at) {
  const ft_prim_info *pi = ft_prim_get(prim);
  for (int k = 0; k < pi->n_params; k++)
    if (pi->params[k].kind == FT_PK_NAME || pi->params[k].kind == FT_PK_RULE) normalize_name(p, &ps[k]);
  if (prim == FT_P_JIT) normalize_jit(ps);
  if (prim == FT_P_SCAN) normalize_scan(p, at, ps);
}
