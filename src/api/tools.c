/* src/api/tools.c: the public calls of frankentrace.h's "tools" section
 * (issue 23). The command-line tools used to read the library's internal
 * tables through internal headers; these calls give them what they need, so
 * every tool is a client of include/ alone. This folder sits above every
 * stage (docs/architecture.md, "Layers"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egraph/tensor.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "transforms/transforms.h"
#include "transforms/vmap.h"

/* ------------------------------------------------------- primitive table */

int ft_primitive_count(void) { return FT_NUM_PRIMS; }

const char *ft_primitive_name(int prim) {
  return prim >= 0 && prim < FT_NUM_PRIMS ? ft_prim_get((ft_prim)prim)->name : NULL;
}

int ft_primitive_lookup(const char *name) {
  if (!name) return -1;
  ft_prim p = ft_prim_lookup(name, strlen(name));
  return p == FT_NUM_PRIMS ? -1 : (int)p;
}

/* --------------------------------------------------------------- coverage */

typedef struct column {
  const char *name;
  const char *(*status)(ft_prim p);
} column;

static const column columns[] = {
    {"eval", ft_eval_rule_status},
    {"jvp", ft_jvp_rule_status},
    {"transpose", ft_transpose_rule_status},
    {"batch", ft_batch_rule_status},
    {"egraph", ft_egraph_rule_status},
    {"lower", ft_lower_rule_status},
};
enum { NCOL = sizeof columns / sizeof columns[0] };

int ft_coverage_num_passes(void) { return NCOL; }

const char *ft_coverage_pass_name(int pass) { return pass >= 0 && pass < NCOL ? columns[pass].name : NULL; }

const char *ft_coverage_status(int prim, int pass) {
  if (prim < 0 || prim >= FT_NUM_PRIMS || pass < 0 || pass >= NCOL) return "n/a: no such primitive or pass";
  return columns[pass].status((ft_prim)prim);
}

/* ------------------------------------------------------- plan statistics */

typedef struct lines {
  char *s;
  size_t len, cap;
  bool failed;
} lines;

static void lines_add(lines *L, int depth, const char *key) {
  size_t need = strlen(key) + 16;
  if (L->failed) return;
  if (L->len + need >= L->cap) {
    size_t cap = L->cap ? 2 * L->cap : 1024;
    while (L->len + need >= cap) cap *= 2;
    char *n = realloc(L->s, cap);
    if (!n) {
      L->failed = true;
      return;
    }
    L->s = n;
    L->cap = cap;
  }
  L->len += (size_t)snprintf(L->s + L->len, L->cap - L->len, "%d %s\n", depth, key);
}

/* "prim [in dtypes -> out dtypes] reason" */
static void step_key(const ft_program *p, const ft_step *s, char *buf, size_t n) {
  const ft_eqn *e = &p->j->eqns[s->eqn];
  int w = snprintf(buf, n, "%-18s [", ft_prim_get(e->prim)->name);
  for (int i = 0; i < e->n_in && w > 0 && (size_t)w < n; i++)
    w += snprintf(buf + w, n - (size_t)w, "%s%s", i ? "," : "", ft_dtype_name(e->in[i]->aval.dtype));
  for (int i = 0; i < e->n_out && w > 0 && (size_t)w < n; i++)
    w += snprintf(buf + w, n - (size_t)w, "%s%s", i ? "," : " -> ", ft_dtype_name(e->out[i]->aval.dtype));
  if (w > 0 && (size_t)w < n)
    snprintf(buf + w, n - (size_t)w, "] %s",
             p->why && p->why[s->eqn] ? p->why[s->eqn] : "debug option interpret_all");
}

/* Counts p's fallback steps and those of its control steps' sub-programs. */
static int walk(lines *L, const ft_program *p, int depth) {
  int n = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    if (s->kind == FT_STEP_FALLBACK) {
      char key[256];
      step_key(p, s, key, sizeof key);
      lines_add(L, depth, key);
      n++;
    } else if (s->kind == FT_STEP_CONTROL) {
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) n += walk(L, ft_control_sub(s->ctl, k), depth + 1);
    }
  }
  return n;
}

ft_status ft_jit_plan_fallbacks(ft_ctx *ctx, const ft_jaxpr *j, int *n_fallback,
                                char **out_lines, const ft_jit_options *opts) {
  if (n_fallback) *n_fallback = 0;
  if (out_lines) *out_lines = NULL;
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "jit: no jaxpr given");
  ft_jit_options o;
  ft_status st = ft_opts_read(ctx, "ft_jit_options", opts, sizeof o, &o);
  if (st) return st;
  bool optimize = !o.no_optimize;
  ft_jaxpr *opt = optimize ? ft_optimize(ctx, j, FT_OPT_EXACT, NULL) : NULL;
  if (optimize && !opt) return ft_ctx_status(ctx);
  ft_program *p = ft_program_plan(ctx, opt ? opt : j, &(ft_plan_options){0});
  if (!p) {
    ft_jaxpr_free(opt);
    return ft_ctx_status(ctx);
  }
  lines L = {0};
  int n = walk(&L, p, 0);
  ft_program_free(p);
  ft_jaxpr_free(opt);
  if (L.failed) {
    free(L.s);
    return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory while listing fallback steps");
  }
  if (n_fallback) *n_fallback = n;
  if (out_lines) {
    if (!L.s && !(L.s = calloc(1, 1))) return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
    *out_lines = L.s;
  } else {
    free(L.s);
  }
  return FT_OK;
}

/* -------------------------------------------------------------- profiling */

ft_status ft_profile_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_in, const ft_array *const *in,
                           int n_out, ft_array **out, char **trace_json, char **stats, int runs) {
  return ft_exec_profile_jaxpr(ctx, j, n_in, in, n_out, out, runs, trace_json, stats);
}
