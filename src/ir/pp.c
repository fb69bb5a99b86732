/* src/ir/pp.c: the pretty-printing engine behind ft_jaxpr_print, and the
 * Python number formatting JAX's text relies on.
 *
 * JAX formats a jaxpr by building a document (text, breaks, groups, nests)
 * and laying it out with a Wadler–Lindig printer at width 80
 * (jax/_src/pretty_printer.py, in C++ in jaxlib). The layout quirks that make
 * byte-exact output possible are reproduced here:
 *  - a group is printed flat when *its own* content fits in the rest of the
 *    line (Lindig's "fits" is applied to the group alone, not to what follows
 *    it), so a `group(brk)` separator acts as a greedy fill;
 *  - a break in break mode writes '\n' and the current indentation, nothing
 *    is stripped.
 * Documents live in an arena and are freed with it. */
#include <math.h>
#include <string.h>

#include "ir.h"

typedef enum { PD_NIL, PD_TEXT, PD_CAT, PD_BRK, PD_GROUP, PD_NEST } pd_kind;

struct ft_pdoc {
  pd_kind k;
  int n;               /* NEST: extra indentation */
  size_t len;          /* TEXT/BRK: length of s */
  const char *s;       /* TEXT/BRK */
  ft_pdoc *a, *b;      /* CAT: a then b; GROUP/NEST: a */
};

static ft_pdoc nil_doc = {PD_NIL, 0, 0, "", NULL, NULL};

/* Allocation failure degrades to the empty document and marks the builder,
 * so builders never need to check each step. */
static ft_pdoc *node(ft_pp *pp, pd_kind k) {
  ft_pdoc *d = ft_arena_alloc(pp->arena, sizeof *d);
  if (!d) {
    pp->oom = true;
    return NULL;
  }
  d->k = k;
  return d;
}

ft_pdoc *ft_pd_nil(void) { return &nil_doc; }

ft_pdoc *ft_pd_textn(ft_pp *pp, const char *s, size_t n) {
  ft_pdoc *d = node(pp, PD_TEXT);
  if (!d) return &nil_doc;
  d->s = s;
  d->len = n;
  return d;
}

ft_pdoc *ft_pd_text(ft_pp *pp, const char *s) { return ft_pd_textn(pp, s, strlen(s)); }

ft_pdoc *ft_pd_textcopy(ft_pp *pp, const char *s, size_t n) {
  char *c = ft_arena_strndup(pp->arena, s, n);
  if (!c) {
    pp->oom = true;
    return &nil_doc;
  }
  return ft_pd_textn(pp, c, n);
}

ft_pdoc *ft_pd_cat(ft_pp *pp, ft_pdoc *a, ft_pdoc *b) {
  if (a->k == PD_NIL) return b;
  if (b->k == PD_NIL) return a;
  ft_pdoc *d = node(pp, PD_CAT);
  if (!d) return &nil_doc;
  d->a = a;
  d->b = b;
  return d;
}

ft_pdoc *ft_pd_brk(ft_pp *pp, const char *s) {
  ft_pdoc *d = node(pp, PD_BRK);
  if (!d) return &nil_doc;
  d->s = s;
  d->len = strlen(s);
  return d;
}

ft_pdoc *ft_pd_group(ft_pp *pp, ft_pdoc *a) {
  ft_pdoc *d = node(pp, PD_GROUP);
  if (!d) return &nil_doc;
  d->a = a;
  return d;
}

ft_pdoc *ft_pd_nest(ft_pp *pp, int n, ft_pdoc *a) {
  ft_pdoc *d = node(pp, PD_NEST);
  if (!d) return &nil_doc;
  d->n = n;
  d->a = a;
  return d;
}

ft_pdoc *ft_pd_join(ft_pp *pp, ft_pdoc *sep, ft_pdoc **docs, int n) {
  if (n == 0) return &nil_doc;
  ft_pdoc *r = docs[0];
  for (int i = 1; i < n; i++) r = ft_pd_cat(pp, r, ft_pd_cat(pp, sep, docs[i]));
  return r;
}

/* ---- layout */

typedef struct item {
  int indent;
  bool flat;
  const ft_pdoc *d;
} item;

typedef struct stack {
  item *v;
  size_t n, cap;
  bool oom;
} stack;

static void push(stack *s, int indent, bool flat, const ft_pdoc *d) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    item *v = realloc(s->v, cap * sizeof *v);
    if (!v) {
      s->oom = true;
      return;
    }
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (item){indent, flat, d};
}

/* Does d, printed flat, fit in w columns? Only d itself is measured (JAX's
 * variant of Lindig's algorithm). */
static bool fits(stack *s, const ft_pdoc *d, long w) {
  size_t base = s->n;
  push(s, 0, true, d);
  while (w >= 0 && s->n > base) {
    const ft_pdoc *x = s->v[--s->n].d;
    switch (x->k) {
    case PD_NIL: break;
    case PD_TEXT: case PD_BRK: w -= (long)x->len; break;
    case PD_CAT: push(s, 0, true, x->b); push(s, 0, true, x->a); break;
    case PD_GROUP: case PD_NEST: push(s, 0, true, x->a); break;
    }
  }
  s->n = base;
  return w >= 0;
}

void ft_pd_format(ft_buf *out, const ft_pdoc *doc, int width, int indent) {
  stack s = {0};
  long k = indent;
  push(&s, indent, false, doc);
  while (s.n && !s.oom) {
    item it = s.v[--s.n];
    const ft_pdoc *d = it.d;
    switch (d->k) {
    case PD_NIL: break;
    case PD_TEXT:
      ft_buf_putn(out, d->s, d->len);
      k += (long)d->len;
      break;
    case PD_CAT:
      push(&s, it.indent, it.flat, d->b);
      push(&s, it.indent, it.flat, d->a);
      break;
    case PD_BRK:
      if (it.flat) {
        ft_buf_putn(out, d->s, d->len);
        k += (long)d->len;
      } else {
        ft_buf_putn(out, "\n", 1);
        for (int i = 0; i < it.indent; i++) ft_buf_putn(out, " ", 1);
        k = it.indent;
      }
      break;
    case PD_NEST: push(&s, it.indent + d->n, it.flat, d->a); break;
    case PD_GROUP: {
      bool flat = fits(&s, d->a, width - k);
      push(&s, it.indent, flat, d->a);
      break;
    }
    }
  }
  if (s.oom) out->failed = true;
  free(s.v);
}

/* ---- growable strings */

void ft_buf_putn(ft_buf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void ft_buf_puts(ft_buf *b, const char *s) { ft_buf_putn(b, s, strlen(s)); }

void ft_buf_printf(ft_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    ft_buf_putn(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->failed = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ft_buf_putn(b, big, (size_t)n);
  free(big);
}

/* ---- Python's float repr */

/* The shortest decimal digits that round-trip x (x finite, nonzero), as
 * Python's repr finds them: the correctly rounded p-digit form for the
 * smallest p that reads back as x. *decpt is the decimal exponent of the
 * point (digits "123", decpt 1 means 1.23). */
static int shortest_digits(double x, char *digits, int *decpt) {
  char tmp[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
    if (strtod(tmp, NULL) == x || p == 17) {
      const char *q = tmp;
      if (*q == '-') q++;
      int n = 0;
      for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[n++] = *q;
      int e = atoi(q + 1);
      while (n > 1 && digits[n - 1] == '0') n--;
      digits[n] = 0;
      *decpt = e + 1;
      return n;
    }
  }
  return 0; /* not reached */
}

void ft_py_float_repr(ft_buf *b, double x, bool add_dot_0) {
  if (isnan(x)) {
    ft_buf_puts(b, "nan");
    return;
  }
  if (isinf(x)) {
    ft_buf_puts(b, x < 0 ? "-inf" : "inf");
    return;
  }
  if (signbit(x)) ft_buf_puts(b, "-");
  if (x == 0) {
    ft_buf_puts(b, add_dot_0 ? "0.0" : "0");
    return;
  }
  char d[24];
  int decpt, n = shortest_digits(fabs(x), d, &decpt);
  if (decpt <= -4 || decpt > 16) {
    ft_buf_putn(b, d, 1);
    if (n > 1) {
      ft_buf_puts(b, ".");
      ft_buf_putn(b, d + 1, (size_t)n - 1);
    }
    int e = decpt - 1;
    ft_buf_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  } else if (decpt <= 0) {
    ft_buf_puts(b, "0.");
    for (int i = 0; i < -decpt; i++) ft_buf_puts(b, "0");
    ft_buf_putn(b, d, (size_t)n);
  } else if (decpt >= n) {
    ft_buf_putn(b, d, (size_t)n);
    for (int i = n; i < decpt; i++) ft_buf_puts(b, "0");
    if (add_dot_0) ft_buf_puts(b, ".0");
  } else {
    ft_buf_putn(b, d, (size_t)decpt);
    ft_buf_puts(b, ".");
    ft_buf_putn(b, d + decpt, (size_t)(n - decpt));
  }
}

void ft_py_complex_repr(ft_buf *b, double re, double im) {
  /* complex.__repr__: the parts use repr without ".0"; a +0.0 real part is
   * omitted along with the parentheses. */
  if (re == 0 && !signbit(re)) {
    ft_py_float_repr(b, im, false);
    ft_buf_puts(b, "j");
    return;
  }
  ft_buf_puts(b, "(");
  ft_py_float_repr(b, re, false);
  if (isnan(im) || !signbit(im)) ft_buf_puts(b, "+");
  ft_py_float_repr(b, im, false);
  ft_buf_puts(b, "j)");
}
