/* src/ir/ragged.c: ragged_dot_general's dimension numbers. JAX 0.12 prints
 * them as one value,
 *   RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (1,)), ((), ())),
 *     lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))
 * (on one line; vmap's bumped dims print as np.int64(2)). The parser keeps
 * that text (an opaque param, printed back as read); this file decodes it
 * for the shape rule, the interpreter and the transforms, and writes the
 * text of dimension numbers the transforms make (plain ints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void ws(const char **s) {
  while (**s == ' ' || **s == '\n') (*s)++;
}

static bool lit(const char **s, const char *w) {
  ws(s);
  size_t n = strlen(w);
  if (strncmp(*s, w, n)) return false;
  *s += n;
  return true;
}

/* (a, b, ...) of ints, each maybe np.int64(x); at most FT_MAX_RANK. */
static bool int_tuple(const char **s, int64_t *out, int *n) {
  *n = 0;
  if (!lit(s, "(")) return false;
  for (;;) {
    ws(s);
    if (**s == ')') break;
    bool wrapped = lit(s, "np.int64(");
    ws(s);
    char *e;
    long long v = strtoll(*s, &e, 10);
    if (e == *s || *n >= FT_MAX_RANK) return false;
    *s = e;
    if (wrapped && !lit(s, ")")) return false;
    out[(*n)++] = v;
    ws(s);
    if (**s == ',') (*s)++;
    else if (**s != ')') return false;
  }
  (*s)++;
  return true;
}

bool ft_ragged_dims_read(const ft_pval *v, ft_ragged_dims *d) {
  memset(d, 0, sizeof *d);
  if (!v || (v->tag != FT_PV_OPAQUE && v->tag != FT_PV_STR) || !v->s) return false;
  const char *s = v->s;
  int n2;
  if (!lit(&s, "RaggedDotDimensionNumbers(") || !lit(&s, "dot_dimension_numbers=") || !lit(&s, "(") ||
      !lit(&s, "(") || !int_tuple(&s, d->lc, &d->nc) || !lit(&s, ",") || !int_tuple(&s, d->rc, &n2) ||
      n2 != d->nc || !lit(&s, ")") || !lit(&s, ",") || !lit(&s, "(") || !int_tuple(&s, d->lb, &d->nb) ||
      !lit(&s, ",") || !int_tuple(&s, d->rb, &n2) || n2 != d->nb || !lit(&s, ")") || !lit(&s, ")") ||
      !lit(&s, ",") || !lit(&s, "lhs_ragged_dimensions=") || !int_tuple(&s, d->ragged, &d->n_ragged) ||
      !lit(&s, ",") || !lit(&s, "rhs_group_dimensions=") || !int_tuple(&s, d->group, &d->n_group) ||
      !lit(&s, ")"))
    return false;
  ws(&s);
  return *s == '\0';
}

static void put_tuple(ft_buf *b, int n, const int64_t *v) {
  ft_buf_puts(b, "(");
  for (int i = 0; i < n; i++) ft_buf_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
  ft_buf_puts(b, n == 1 ? ",)" : ")");
}

bool ft_ragged_dims_pval(ft_arena *a, const ft_ragged_dims *d, ft_pval *out) {
  ft_buf b = {0};
  ft_buf_puts(&b, "RaggedDotDimensionNumbers(dot_dimension_numbers=((");
  put_tuple(&b, d->nc, d->lc);
  ft_buf_puts(&b, ", ");
  put_tuple(&b, d->nc, d->rc);
  ft_buf_puts(&b, "), (");
  put_tuple(&b, d->nb, d->lb);
  ft_buf_puts(&b, ", ");
  put_tuple(&b, d->nb, d->rb);
  ft_buf_puts(&b, ")), lhs_ragged_dimensions=");
  put_tuple(&b, d->n_ragged, d->ragged);
  ft_buf_puts(&b, ", rhs_group_dimensions=");
  put_tuple(&b, d->n_group, d->group);
  ft_buf_puts(&b, ")");
  char *s = b.failed || !b.p ? NULL : ft_arena_strndup(a, b.p, b.len);
  free(b.p);
  if (!s) return false;
  *out = (ft_pval){.tag = FT_PV_OPAQUE, .s = s};
  return true;
}

static bool has(int n, const int64_t *v, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

ft_ragged_mode ft_ragged_mode_of(const ft_ragged_dims *d, int lhs_rank) {
  if (d->n_ragged != 1 || d->ragged[0] < 0 || d->ragged[0] >= lhs_rank) return FT_RAGGED_BAD;
  int64_t r = d->ragged[0];
  if (has(d->nc, d->lc, r)) return FT_RAGGED_CONTRACTING;
  if (has(d->nb, d->lb, r)) return FT_RAGGED_BATCH;
  return FT_RAGGED_NONCONTRACTING;
}

const char *ft_ragged_mode_name(ft_ragged_mode m) {
  switch (m) {
  case FT_RAGGED_NONCONTRACTING: return "RAGGED_NONCONTRACTING";
  case FT_RAGGED_CONTRACTING: return "RAGGED_CONTRACTING";
  case FT_RAGGED_BATCH: return "RAGGED_BATCH";
  default: return "invalid";
  }
}

int ft_ragged_prefix(const ft_ragged_dims *d, ft_ragged_mode m, int lhs_rank, int64_t *out) {
  int n = 0;
  int64_t r = d->ragged[0];
  switch (m) {
  case FT_RAGGED_NONCONTRACTING:
    for (int i = 0; i < d->nb; i++) out[n++] = d->lb[i];
    for (int i = 0; i < lhs_rank && i < r; i++)
      if (!has(d->nc, d->lc, i) && !has(d->nb, d->lb, i)) out[n++] = i;
    return n;
  case FT_RAGGED_CONTRACTING:
    for (int i = 0; i < d->nb; i++) out[n++] = d->lb[i];
    for (int i = 0; i < d->nc && d->lc[i] != r; i++) out[n++] = d->lc[i];
    return n;
  case FT_RAGGED_BATCH:
    for (int i = 0; i < d->nb && d->lb[i] != r; i++) out[n++] = d->lb[i];
    return n;
  default: return 0;
  }
}
