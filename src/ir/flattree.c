/* src/ir/flattree.c: the pytree structures JAX 0.12 prints in scan's
 * ft_in and ft_out params (jax/_src/flattree.py). Only their leaf counts
 * matter here: ft_in is (consts, carry, xs) and ft_out is (carry, ys), and
 * the number of leaves of each group is scan's num_consts, num_carry, ...
 *
 * A FlatTree prints as the repr of its structure with None leaves: tuples
 * `(None, None)`, dicts `{'a': None}`, `Pytree(vals=[None], tree=...)`,
 * `Static(x)` (no leaf) and `RightsOnly(t)` (FTFiltered), whose leaves are
 * the payloads of t's `Right(...)` leaves (a `Left(...)` is static); nested
 * RightsOnly filter again, so a leaf counts only when it is wrapped in as
 * many Rights as RightsOnly surround it. The parser keeps tuples of None as
 * tuples and the other forms as text (FT_PV_OPAQUE). */
#include <string.h>

#include "ir.h"

typedef struct scan_text {
  const char *s;
  size_t i;
} scan_text;

static void skip_ws(scan_text *t) {
  while (t->s[t->i] == ' ' || t->s[t->i] == '\n' || t->s[t->i] == '\t' || t->s[t->i] == '\r') t->i++;
}

static bool take(scan_text *t, const char *w) {
  size_t n = strlen(w);
  if (strncmp(t->s + t->i, w, n)) return false;
  t->i += n;
  return true;
}

/* Skips to just after the bracket that closes the one before t->i. */
static bool skip_to_close(scan_text *t) {
  int d = 1;
  for (; t->s[t->i] && d; t->i++) {
    char c = t->s[t->i];
    if (c == '\'' || c == '"') {
      for (t->i++; t->s[t->i] && t->s[t->i] != c; t->i++)
        if (t->s[t->i] == '\\' && t->s[t->i + 1]) t->i++;
      if (!t->s[t->i]) return false;
    } else if (c == '(' || c == '[' || c == '{') d++;
    else if (c == ')' || c == ']' || c == '}') d--;
  }
  return d == 0;
}

static int64_t leaves_at(scan_text *t, int depth, int k);
static int64_t leaf_value_at(scan_text *t, int depth, int k);

/* Items up to the closing bracket `close`, separated by commas; for a dict,
 * each item is `key: value` and only values count. With `values`, each item
 * is one leaf's value (a Pytree's vals), else a subtree. */
static int64_t items_at(scan_text *t, char close, bool dict, bool values, int depth, int k) {
  int64_t n = 0;
  for (;;) {
    skip_ws(t);
    if (t->s[t->i] == close) return t->i++, n;
    if (dict) { /* a key: a quoted string or a word, then ':' */
      while (t->s[t->i] && t->s[t->i] != ':') {
        if (t->s[t->i] == '\'' || t->s[t->i] == '"') {
          char q = t->s[t->i++];
          while (t->s[t->i] && t->s[t->i] != q) t->i++;
          if (!t->s[t->i]) return -1;
        }
        t->i++;
      }
      if (!take(t, ":")) return -1;
    }
    int64_t m = values ? leaf_value_at(t, depth + 1, k) : leaves_at(t, depth + 1, k);
    if (m < 0) return -1;
    n += m;
    skip_ws(t);
    if (t->s[t->i] == ',') t->i++;
    else if (t->s[t->i] != close) return -1;
  }
}

/* One leaf's value (the repr of a Python value, Either's `Right(x)` /
 * `Left(x)` among them): 1 if it survives k RightsOnly filters around it,
 * i.e. it is k nested Rights, else 0. Skips the value. */
static int64_t leaf_value_at(scan_text *t, int depth, int k) {
  if (depth > 64) return -1;
  skip_ws(t);
  if (k == 0) { /* any value is one leaf: skip it */
    if (take(t, "None")) return 1;
    size_t i0 = t->i;
    while (t->s[t->i] && t->s[t->i] != ',' && t->s[t->i] != ')' && t->s[t->i] != ']' && t->s[t->i] != '}') {
      char c = t->s[t->i++];
      if (c == '(' || c == '[' || c == '{' || c == '\'' || c == '"') {
        t->i--;
        if (c == '\'' || c == '"') {
          for (t->i++; t->s[t->i] && t->s[t->i] != c; t->i++)
            if (t->s[t->i] == '\\' && t->s[t->i + 1]) t->i++;
          if (!t->s[t->i]) return -1;
          t->i++;
        } else {
          t->i++;
          if (!skip_to_close(t)) return -1;
        }
      }
    }
    return t->i > i0 ? 1 : -1;
  }
  if (take(t, "Right(")) {
    int64_t n = leaf_value_at(t, depth + 1, k - 1);
    skip_ws(t);
    return n >= 0 && take(t, ")") ? n : -1;
  }
  if (!take(t, "Left(")) return -1; /* a filtered leaf is an Either */
  return skip_to_close(t) ? 0 : -1;
}

/* The number of leaves of the FlatTree printed at t->i that survive k
 * RightsOnly filters around it. RightsOnly(u)'s leaves are the payloads of
 * u's Right leaves, so its leaves surviving k filters are u's leaves
 * surviving k + 1 (`RightsOnly(RightsOnly(Right(Left(None))))` has none). */
static int64_t leaves_at(scan_text *t, int depth, int k) {
  if (depth > 64) return -1;
  skip_ws(t);
  if (take(t, "(")) return items_at(t, ')', false, false, depth, k);
  if (take(t, "[")) return items_at(t, ']', false, false, depth, k);
  if (take(t, "{")) return items_at(t, '}', true, false, depth, k);
  if (take(t, "Static(")) return skip_to_close(t) ? 0 : -1;
  if (take(t, "RightsOnly(")) {
    int64_t n = leaves_at(t, depth + 1, k + 1);
    skip_ws(t);
    return n >= 0 && take(t, ")") ? n : -1;
  }
  if (take(t, "Pytree(vals=[")) {
    int64_t n = items_at(t, ']', false, true, depth, k);
    return n >= 0 && skip_to_close(t) ? n : -1;
  }
  return leaf_value_at(t, depth, k); /* a Singleton: None, Right(..), Left(..) */
}

int64_t ft_flattree_leaves(const ft_pval *v) {
  switch (v->tag) {
  case FT_PV_NONE: return 1;
  case FT_PV_TUPLE: {
    int64_t n = 0;
    for (int i = 0; i < v->n; i++) {
      int64_t k = ft_flattree_leaves(&v->u.items[i]);
      if (k < 0) return -1;
      n += k;
    }
    return n;
  }
  case FT_PV_OPAQUE: case FT_PV_STR: {
    if (!v->s) return -1;
    scan_text t = {v->s, 0};
    int64_t n = leaves_at(&t, 0, 0);
    skip_ws(&t);
    return n >= 0 && !t.s[t.i] ? n : -1;
  }
  default: return -1;
  }
}

/* `Pytree(vals=[...], tree=PyTreeDef((g0, g1, ...)))`: a tree whose top is
 * a tuple of the groups; a group's leaves are the `*` of its treedef. */
static bool pytree_groups(const char *s, int n_groups, int64_t *counts) {
  const char *tree = strstr(s, "tree=PyTreeDef(");
  if (strncmp(s, "Pytree(", 7) || !tree) return false;
  scan_text t = {tree + 15, 0};
  skip_ws(&t);
  if (!take(&t, "(")) return false;
  int g = 0, d = 0;
  for (int k = 0; k < n_groups; k++) counts[k] = 0;
  for (; t.s[t.i]; t.i++) {
    char c = t.s[t.i];
    if (c == '\'' || c == '"') {
      for (t.i++; t.s[t.i] && t.s[t.i] != c; t.i++)
        if (t.s[t.i] == '\\' && t.s[t.i + 1]) t.i++;
      if (!t.s[t.i]) return false;
    } else if (c == '(' || c == '[' || c == '{') d++;
    else if ((c == ')' || c == ']' || c == '}') && d) d--;
    else if (c == ')') { /* the end of the groups' tuple */
      int n = g + 1;
      for (size_t k = t.i; k-- > 0 && t.s[k] != '(';) /* `(a, b,)` or `()` */
        if (t.s[k] != ' ') {
          if (t.s[k] == ',') n = g;
          break;
        }
      return n == n_groups;
    } else if (c == ',' && !d) {
      if (++g >= n_groups + 1) return false;
    } else if (c == '*' && g < n_groups) counts[g]++;
  }
  return false;
}

bool ft_flattree_groups(const ft_pval *v, int n_groups, int64_t *counts) {
  if ((v->tag == FT_PV_OPAQUE || v->tag == FT_PV_STR) && v->s) return pytree_groups(v->s, n_groups, counts);
  if (v->tag != FT_PV_TUPLE || v->n != n_groups) return false;
  for (int g = 0; g < n_groups; g++)
    if ((counts[g] = ft_flattree_leaves(&v->u.items[g])) < 0) return false;
  return true;
}

bool ft_flattree_is_flat(const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE) return false;
  for (int g = 0; g < v->n; g++) {
    const ft_pval *x = &v->u.items[g];
    if (x->tag != FT_PV_TUPLE || x->list) return false;
    for (int i = 0; i < x->n; i++)
      if (x->u.items[i].tag != FT_PV_NONE) return false;
  }
  return !v->list;
}

ft_pval ft_flattree_flat(ft_arena *a, int n_groups, const int64_t *counts) {
  ft_pval v = ft_pv_tuple(a, n_groups);
  if (n_groups && v.tag != FT_PV_TUPLE) return v;
  for (int g = 0; g < n_groups; g++) {
    ft_pval x = ft_pv_tuple(a, (int)counts[g]);
    if (counts[g] && x.tag != FT_PV_TUPLE) return ft_pv_none();
    for (int i = 0; i < x.n; i++) x.u.items[i] = ft_pv_none();
    v.u.items[g] = x;
  }
  return v;
}
