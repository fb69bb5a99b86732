/* tests/shape/shape_util.h: helpers shared by the shape-rule and verifier
 * tests: avals from text ("f32[3,4]") and params from a small text syntax
 * ("axes=(0, 1) index_dtype=int32 dimension_numbers=(((1,), (0,)), ((), ()))").
 * Param values: ints, True/False, None, dtype names, (nested) tuples, and
 * Name(...) texts (kept opaque, as JAX's GatherDimensionNumbers(...)). */
#ifndef SHAPE_UTIL_H
#define SHAPE_UTIL_H

#include <check.h>
#include <ctype.h>
#include <string.h>

#include "ir/ir.h"

static ft_aval AV(const char *s) {
  ft_aval a = {0};
  char name[16];
  size_t n = strcspn(s, "[");
  ck_assert_uint_lt(n, sizeof name);
  memcpy(name, s, n);
  name[n] = 0;
  ck_assert_int_eq(ft_dtype_from_name(name, &a.dtype), FT_OK);
  const char *p = s + n + 1;
  while (*p && *p != ']') {
    char *e;
    a.dims[a.rank++] = strtoll(p, &e, 10);
    p = *e == ',' ? e + 1 : e;
  }
  return a;
}

static ft_pval pv_parse(ft_arena *ar, const char **sp) {
  const char *s = *sp;
  while (*s == ' ') s++;
  ft_pval v = ft_pv_none();
  if (*s == '(') {
    ft_pval items[32];
    int n = 0;
    s++;
    while (*s == ' ') s++;
    while (*s != ')') {
      items[n++] = pv_parse(ar, &s);
      while (*s == ' ' || *s == ',') s++;
    }
    s++;
    v = ft_pv_tuple(ar, n);
    for (int i = 0; i < n; i++) v.u.items[i] = items[i];
  } else if (*s == '-' || isdigit((unsigned char)*s)) {
    char *e;
    v = ft_pv_int(strtoll(s, &e, 10));
    s = e;
  } else {
    const char *b = s;
    while (isalnum((unsigned char)*s) || *s == '_' || *s == '.') s++;
    size_t n = (size_t)(s - b);
    ft_dtype dt;
    char word[64];
    memcpy(word, b, n < 63 ? n : 63);
    word[n < 63 ? n : 63] = 0;
    if (*s == '(') { /* Name(...): opaque text up to the matching paren */
      int depth = 0;
      do {
        depth += (*s == '(') - (*s == ')');
        s++;
      } while (depth > 0 && *s);
      v.tag = FT_PV_OPAQUE;
      v.s = ft_arena_strndup(ar, b, (size_t)(s - b));
    } else if (!strcmp(word, "True") || !strcmp(word, "False")) {
      v = ft_pv_bool(word[0] == 'T');
    } else if (!strcmp(word, "None")) {
      v = ft_pv_none();
    } else if (ft_dtype_from_name(word, &dt) == FT_OK) {
      v = ft_pv_dtype(dt);
    } else {
      v.tag = FT_PV_STR;
      v.s = ft_arena_strndup(ar, b, n);
    }
  }
  *sp = s;
  return v;
}

/* Params of p from text, starting from the schema defaults. Sym params
 * written as integers become the sym with that index. */
static ft_pval *PARAMS(ft_arena *ar, ft_prim p, const char *text) {
  ft_pval *ps = ft_params_default(ar, p);
  const char *s = text ? text : "";
  while (*s) {
    while (*s == ' ') s++;
    if (!*s) break;
    const char *eq = strchr(s, '=');
    ck_assert_ptr_nonnull(eq);
    char name[64];
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = 0;
    s = eq + 1;
    ft_pval v = pv_parse(ar, &s);
    int i = ft_prim_param_index(p, name);
    ck_assert_msg(i >= 0, "no param %s in %s", name, ft_prim_get(p)->name);
    const ft_param_spec *spec = &ft_prim_get(p)->params[i];
    if (spec->kind == FT_PK_SYM && v.tag == FT_PV_INT) {
      v.tag = FT_PV_SYM;
      v.s = spec->syms[v.u.i];
    }
    ps[i] = v;
  }
  return ps;
}

#endif
