/* src/ir/prims.c: the primitive table built from prims.def, with each param
 * schema parsed once into typed specs (sorted by name, as JAX prints them). */
#include <pthread.h>
#include <string.h>

#include "ir.h"

static ft_prim_info table[FT_NUM_PRIMS] = {
#define FT_PRIM(id, nm, nin, nout, fam, sch) [FT_P_##id] = {nm, nin, nout, fam, sch, 0, NULL, 0},
#include "prims.def"
#undef FT_PRIM
};

/* Names other JAX versions print for the same primitive. */
static const struct { const char *alias; ft_prim p; } aliases[] = {
    {"pjit", FT_P_JIT},
    {"closed_call", FT_P_JIT},
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool schema_ok = true;

static const struct { const char *s; ft_pkind k; } kinds[] = {
    {"any", FT_PK_ANY},     {"int", FT_PK_INT},       {"ints?", FT_PK_INTS_OR_NONE},
    {"ints", FT_PK_INTS},   {"bools", FT_PK_BOOLS},   {"bool", FT_PK_BOOL},
    {"float", FT_PK_FLOAT}, {"dtype?", FT_PK_DTYPE_OR_NONE}, {"dtype", FT_PK_DTYPE},
    {"name", FT_PK_NAME},   {"jaxprs", FT_PK_JAXPRS}, {"jaxpr?", FT_PK_JAXPR_OR_NONE},
    {"jaxpr", FT_PK_JAXPR},
    {"dotdims", FT_PK_DOTDIMS}, {"padcfg", FT_PK_PADCFG}, {"sym", FT_PK_SYM},
    {"rule", FT_PK_RULE}, {"lstuple", FT_PK_LSTUPLE}, {"aval", FT_PK_AVAL},
};

static char *dup_range(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) abort(); /* static table construction at start-up; cannot recover */
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

/* Parses one "name:kind[=default]" (or "~name:kind") entry. */
static bool parse_entry(const char *s, size_t n, ft_param_spec *out) {
  memset(out, 0, sizeof *out);
  if (n && s[0] == '~') { out->legacy = true; s++; n--; }
  const char *colon = memchr(s, ':', n);
  if (!colon) return false;
  out->name = dup_range(s, (size_t)(colon - s));
  const char *k = colon + 1, *end = s + n;
  const char *eq = memchr(k, '=', (size_t)(end - k));
  const char *kend = eq ? eq : end;
  if (eq) out->dflt = dup_range(eq + 1, (size_t)(end - eq - 1));
  if (kend - k > 4 && !strncmp(k, "sym(", 4) && kend[-1] == ')') {
    out->kind = FT_PK_SYM;
    int cnt = 1;
    for (const char *p = k + 4; p < kend - 1; p++) cnt += *p == '|';
    const char **syms = calloc((size_t)cnt + 1, sizeof *syms);
    if (!syms) abort();
    const char *p = k + 4;
    for (int i = 0; i < cnt; i++) {
      const char *q = p;
      while (q < kend - 1 && *q != '|') q++;
      syms[i] = dup_range(p, (size_t)(q - p));
      p = q + 1;
    }
    out->syms = syms;
    return true;
  }
  for (size_t i = 0; i < FT_COUNTOF(kinds); i++)
    if ((size_t)(kend - k) == strlen(kinds[i].s) && !strncmp(k, kinds[i].s, (size_t)(kend - k))) {
      out->kind = kinds[i].k;
      return true;
    }
  return false;
}

static int cmp_spec(const void *a, const void *b) {
  const ft_param_spec *x = a, *y = b;
  if (x->legacy != y->legacy) return x->legacy - y->legacy;
  return strcmp(x->name, y->name);
}

static void build(void) {
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    ft_prim_info *pi = &table[p];
    const char *s = pi->schema;
    int cnt = 0;
    for (const char *q = s; *q;) {
      while (*q == ' ') q++;
      if (!*q) break;
      cnt++;
      while (*q && *q != ' ') q++;
    }
    ft_param_spec *specs = calloc((size_t)cnt + 1, sizeof *specs);
    if (!specs) abort();
    int i = 0;
    for (const char *q = s; *q;) {
      while (*q == ' ') q++;
      if (!*q) break;
      const char *e = q;
      while (*e && *e != ' ') e++;
      if (!parse_entry(q, (size_t)(e - q), &specs[i++])) schema_ok = false;
      q = e;
    }
    qsort(specs, (size_t)cnt, sizeof *specs, cmp_spec);
    int legacy = 0;
    for (int k = 0; k < cnt; k++) legacy += specs[k].legacy;
    pi->params = specs;
    pi->n_params = cnt - legacy;
    pi->n_legacy = legacy;
  }
  /* A malformed schema in prims.def is a bug in this file, not user input. */
  FT_ASSERT(schema_ok);
}

const ft_prim_info *ft_prim_get(ft_prim p) {
  pthread_once(&once, build);
  FT_ASSERT((unsigned)p < FT_NUM_PRIMS);
  return &table[p];
}

ft_prim ft_prim_lookup(const char *name, size_t len) {
  pthread_once(&once, build);
  for (int p = 0; p < FT_NUM_PRIMS; p++)
    if (strlen(table[p].name) == len && !strncmp(table[p].name, name, len)) return (ft_prim)p;
  for (size_t i = 0; i < FT_COUNTOF(aliases); i++)
    if (strlen(aliases[i].alias) == len && !strncmp(aliases[i].alias, name, len))
      return aliases[i].p;
  return FT_NUM_PRIMS;
}

int ft_prim_param_index(ft_prim p, const char *name) {
  const ft_prim_info *pi = ft_prim_get(p);
  for (int i = 0; i < pi->n_params; i++)
    if (!strcmp(pi->params[i].name, name)) return i;
  return -1;
}

/* The branch platform_index picks on this machine (JAX's lowering for the
 * cpu platform): the first item, a tuple of quoted platform names, that
 * names 'cpu'; else the default (an item that is None); -1 when neither
 * exists or platforms is not such a tuple. */
int ft_platform_index(const ft_pval *platforms) {
  if (!platforms || platforms->tag != FT_PV_TUPLE) return -1;
  int dflt = -1;
  for (int i = 0; i < platforms->n; i++) {
    const ft_pval *it = &platforms->u.items[i];
    if (it->tag == FT_PV_NONE) {
      if (dflt < 0) dflt = i;
      continue;
    }
    if (it->tag != FT_PV_TUPLE) return -1;
    for (int k = 0; k < it->n; k++) {
      const ft_pval *nm = &it->u.items[k];
      if ((nm->tag != FT_PV_OPAQUE && nm->tag != FT_PV_STR) || !nm->s) return -1;
      if (!strcmp(nm->s, "'cpu'") || !strcmp(nm->s, "\"cpu\"") || !strcmp(nm->s, "cpu")) return i;
    }
  }
  return dflt;
}
