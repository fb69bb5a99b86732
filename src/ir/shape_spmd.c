/* src/ir/shape_spmd.c: shape rules of shard_map and the named-axis
 * collectives (issue 27, docs/spmd.md), and the readers of the params JAX
 * 0.12 prints for them: the mesh (`Mesh('i': 4, axis_types=(Auto,))`), the
 * partition specs (`P('i',)`, `P()`, `P(None, 'i')`) and axis names.
 *
 * The named-axis environment is the shard_map's mesh: its shape rule checks
 * that every collective in the body (and in the body's sub-jaxprs) names
 * axes of that mesh, with the mesh's sizes, so a program naming an axis
 * that does not exist fails when it is parsed or built. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

static const ft_pval *pv(ft_prim p, const ft_pval *params, const char *name) {
  int k = ft_prim_param_index(p, name);
  return k >= 0 && params ? &params[k] : NULL;
}

/* One axis name: a bare name (STR) or a quoted one (OPAQUE 'i'). */
static bool one_name(const ft_pval *v, char *out) {
  if (!v->s || (v->tag != FT_PV_STR && v->tag != FT_PV_OPAQUE)) return false;
  const char *s = v->s;
  size_t n = strlen(s);
  if (v->tag == FT_PV_OPAQUE) {
    if (n < 3 || s[0] != '\'' || s[n - 1] != '\'') return false;
    s++, n -= 2;
  }
  if (!n || n >= 64) return false;
  memcpy(out, s, n);
  out[n] = 0;
  return true;
}

int ft_spmd_names(const ft_pval *v, char (*names)[64], int max) {
  if (!v) return -1;
  if (v->tag != FT_PV_TUPLE) return max >= 1 && one_name(v, names[0]) ? 1 : -1;
  if (v->n > max) return -1;
  for (int i = 0; i < v->n; i++)
    if (!one_name(&v->u.items[i], names[i])) return -1;
  return v->n;
}

/* Reads `'name'` at *s into buf; advances *s. */
static bool quoted(const char **s, char *buf, size_t n) {
  const char *t = *s;
  if (*t != '\'') return false;
  const char *e = strchr(t + 1, '\'');
  if (!e || (size_t)(e - t - 1) >= n || e == t + 1) return false;
  memcpy(buf, t + 1, (size_t)(e - t - 1));
  buf[e - t - 1] = 0;
  *s = e + 1;
  return true;
}

int ft_spmd_mesh(const ft_pval *v, ft_spmd_axis *axes, int max) {
  if (!v || (v->tag != FT_PV_OPAQUE && v->tag != FT_PV_STR) || !v->s || strncmp(v->s, "Mesh(", 5))
    return -1;
  const char *s = v->s + 5;
  int n = 0;
  while (*s == '\'') {
    if (n == max || !quoted(&s, axes[n].name, sizeof axes[n].name) || strncmp(s, ": ", 2)) return -1;
    s += 2;
    char *end;
    long long size = strtoll(s, &end, 10);
    if (end == s || size < 1 || size > 1 << 20) return -1;
    axes[n++].size = size;
    s = end;
    if (!strncmp(s, ", ", 2)) s += 2;
  }
  return n && (!strncmp(s, "axis_types=", 11) || !strcmp(s, ")")) ? n : -1;
}

int ft_spmd_spec(const ft_pval *v, ft_spmd_dim *dims, int max) {
  if (!v || (v->tag != FT_PV_OPAQUE && v->tag != FT_PV_STR) || !v->s || strncmp(v->s, "P(", 2)) return -1;
  const char *s = v->s + 2;
  int n = 0;
  while (*s && *s != ')') {
    if (n == max) return -1;
    ft_spmd_dim *d = &dims[n++];
    d->n = 0;
    if (!strncmp(s, "None", 4)) {
      s += 4;
    } else if (*s == '\'') {
      if (!quoted(&s, d->names[0], sizeof d->names[0])) return -1;
      d->n = 1;
    } else if (*s == '(') {
      s++;
      while (*s == '\'') {
        if (d->n == FT_SPMD_MAX_AXES || !quoted(&s, d->names[d->n], sizeof d->names[0])) return -1;
        d->n++;
        if (!strncmp(s, ", ", 2)) s += 2;
        else if (*s == ',') s++;
      }
      if (*s++ != ')') return -1;
    } else {
      return -1;
    }
    if (!strncmp(s, ", ", 2)) s += 2;
    else if (*s == ',') s++;
  }
  return *s == ')' && !s[1] ? n : -1;
}

int64_t ft_spmd_axis_size(const ft_spmd_axis *mesh, int n_mesh, const char *name) {
  for (int i = 0; i < n_mesh; i++)
    if (!strcmp(mesh[i].name, name)) return mesh[i].size;
  return -1;
}

/* The named-axis environment (ir.h): per thread, as the transforms and
 * checks that enter it run on the caller's thread. */
static _Thread_local ft_spmd_env env_cur;

void ft_spmd_env_enter(const ft_pval *mesh, ft_spmd_env *saved) {
  *saved = env_cur;
  int n = ft_spmd_mesh(mesh, env_cur.axes, FT_SPMD_MAX_AXES);
  env_cur.n = n < 0 ? 0 : n;
}

void ft_spmd_env_leave(const ft_spmd_env *saved) { env_cur = *saved; }

const ft_spmd_axis *ft_spmd_env_mesh(int *n) {
  *n = env_cur.n;
  return env_cur.n ? env_cur.axes : NULL;
}

static ft_status failf(ft_ctx *ctx, ft_prim p, ft_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ft_status failf(ft_ctx *ctx, ft_prim p, ft_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ft_set_error(ctx, st, "%s: %s", ft_prim_get(p)->name, msg);
}

bool ft_prim_is_collective(ft_prim p) {
  return p == FT_P_PSUM || p == FT_P_PSUM_INVARIANT || p == FT_P_PMAX || p == FT_P_PMIN ||
         p == FT_P_PVARY || p == FT_P_ALL_GATHER || p == FT_P_REDUCE_SCATTER ||
         p == FT_P_ALL_TO_ALL || p == FT_P_PPERMUTE || p == FT_P_AXIS_INDEX;
}

const char *ft_spmd_axis_param(ft_prim p) {
  return p == FT_P_PSUM || p == FT_P_PSUM_INVARIANT || p == FT_P_PMAX || p == FT_P_PMIN || p == FT_P_PVARY
             ? "axes" : "axis_name";
}

/* The product of the named axes' sizes in the mesh, after checking that
 * each exists; -1 with the error set. */
int64_t ft_spmd_group_size(ft_ctx *ctx, const ft_eqn *e, const ft_spmd_axis *mesh, int n_mesh) {
  char names[FT_SPMD_MAX_AXES][64];
  int n = ft_spmd_names(pv(e->prim, e->params, ft_spmd_axis_param(e->prim)), names, FT_SPMD_MAX_AXES);
  if (n < 1) {
    failf(ctx, e->prim, FT_ERR_INVALID_ARG, "%s must name one or more mesh axes", ft_spmd_axis_param(e->prim));
    return -1;
  }
  int64_t size = 1;
  for (int i = 0; i < n; i++) {
    int64_t s = ft_spmd_axis_size(mesh, n_mesh, names[i]);
    if (s < 0) {
      char have[256];
      size_t k = 0;
      have[0] = 0;
      for (int m = 0; m < n_mesh && k < sizeof have; m++)
        k += (size_t)snprintf(have + k, sizeof have - k, "%s'%s': %lld", m ? ", " : "", mesh[m].name,
                              (long long)mesh[m].size);
      failf(ctx, e->prim, FT_ERR_INVALID_ARG,
            "axis name '%s' is not an axis of the enclosing shard_map's mesh (%s)", names[i], have);
      return -1;
    }
    size *= s;
  }
  const ft_pval *ag = pv(e->prim, e->params, "axis_index_groups");
  if (ag && ag->tag != FT_PV_NONE) {
    failf(ctx, e->prim, FT_ERR_UNSUPPORTED, "axis_index_groups other than None are not supported");
    return -1;
  }
  const ft_pval *as = pv(e->prim, e->params, "axis_size");
  if (as && as->tag == FT_PV_INT && as->u.i != size) {
    failf(ctx, e->prim, FT_ERR_SHAPE, "axis_size=%lld but the mesh axes named have size %lld",
          (long long)as->u.i, (long long)size);
    return -1;
  }
  if (e->prim == FT_P_PPERMUTE) {
    const ft_pval *perm = pv(e->prim, e->params, "perm");
    int64_t pair[2];
    int np;
    bool *src = calloc((size_t)size * 2, 1);
    if (!src) {
      ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      return -1;
    }
    bool ok = perm && perm->tag == FT_PV_TUPLE;
    for (int i = 0; ok && i < perm->n; i++) {
      ok = ft_pv_get_ints(&perm->u.items[i], pair, 2, &np) && np == 2 && pair[0] >= 0 && pair[0] < size &&
           pair[1] >= 0 && pair[1] < size && !src[pair[0]] && !src[size + pair[1]];
      if (ok) src[pair[0]] = src[size + pair[1]] = true;
    }
    free(src);
    if (!ok) {
      failf(ctx, e->prim, FT_ERR_INVALID_ARG,
            "perm must be (source, destination) pairs of indices below the axis size %lld, each source "
            "and each destination at most once", (long long)size);
      return -1;
    }
  }
  return size;
}

/* Every collective in j (and its sub-jaxprs, shard_maps excepted: they
 * check their own) names axes of the mesh. */
static ft_status check_body(ft_ctx *ctx, const ft_jaxpr *j, const ft_spmd_axis *mesh, int n_mesh) {
  for (int i = 0; i < j->n_eqn; i++) {
    const ft_eqn *e = &j->eqns[i];
    if (ft_prim_is_collective(e->prim)) {
      if (ft_spmd_group_size(ctx, e, mesh, n_mesh) < 0) {
        ft_error_prefix(ctx, "shard_map body: equation %d", i);
        return ft_ctx_status(ctx);
      }
      if (e->prim == FT_P_ALL_TO_ALL && e->n_in == 1 && e->n_out == 1) { /* its shape needs the mesh */
        ft_aval in = e->in[0]->aval, out;
        int n_out = 0;
        ft_status st = ft_infer_spmd(ctx, e->prim, e->params, 1, &in, &out, 1, &n_out);
        if (st) {
          ft_error_prefix(ctx, "shard_map body: equation %d", i);
          return st;
        }
        if (!ft_aval_eq(&out, &e->out[0]->aval)) {
          char a[128], b[128];
          return failf(ctx, e->prim, FT_ERR_SHAPE, "shard_map body: equation %d declares %s but the mesh gives %s",
                       i, ft_aval_str(&e->out[0]->aval, a, sizeof a), ft_aval_str(&out, b, sizeof b));
        }
      }
      continue;
    }
    if (e->prim == FT_P_SHARD_MAP) continue;
    const ft_prim_info *pi = ft_prim_get(e->prim);
    for (int k = 0; k < pi->n_params; k++) {
      const ft_pval *v = &e->params[k];
      ft_status st = FT_OK;
      if (v->tag == FT_PV_JAXPR && v->u.jaxpr) st = check_body(ctx, v->u.jaxpr, mesh, n_mesh);
      for (int q = 0; !st && v->tag == FT_PV_TUPLE && q < v->n; q++)
        if (v->u.items[q].tag == FT_PV_JAXPR && v->u.items[q].u.jaxpr)
          st = check_body(ctx, v->u.items[q].u.jaxpr, mesh, n_mesh);
      if (st) return st;
    }
  }
  return FT_OK;
}

/* The per-index (local) aval of global aval g under spec (or the global
 * one when inverse: local -> global). */
static ft_status map_spec(ft_ctx *ctx, const ft_pval *spec, const ft_spmd_axis *mesh, int n_mesh,
                          const ft_aval *g, ft_aval *o, bool to_global, const char *what, int i) {
  ft_spmd_dim dims[FT_MAX_RANK];
  int nd = ft_spmd_spec(spec, dims, FT_MAX_RANK);
  if (nd < 0)
    return failf(ctx, FT_P_SHARD_MAP, FT_ERR_INVALID_ARG, "%s %d: expected a partition spec like P('i',)", what, i);
  if (nd > g->rank)
    return failf(ctx, FT_P_SHARD_MAP, FT_ERR_SHAPE, "%s %d: spec of %d dimensions for a value of rank %d", what,
                 i, nd, g->rank);
  *o = *g;
  for (int d = 0; d < nd; d++) {
    int64_t f = 1;
    for (int q = 0; q < dims[d].n; q++) {
      int64_t s = ft_spmd_axis_size(mesh, n_mesh, dims[d].names[q]);
      if (s < 0)
        return failf(ctx, FT_P_SHARD_MAP, FT_ERR_INVALID_ARG, "%s %d: axis '%s' is not an axis of the mesh", what,
                     i, dims[d].names[q]);
      f *= s;
    }
    if (to_global) {
      o->dims[d] *= f;
    } else {
      if (g->dims[d] % f)
        return failf(ctx, FT_P_SHARD_MAP, FT_ERR_SHAPE,
                     "%s %d: dimension %d of size %lld does not split evenly over %lld mesh indices", what, i,
                     d, (long long)g->dims[d], (long long)f);
      o->dims[d] /= f;
    }
  }
  return FT_OK;
}

static ft_status infer_shard_map(ft_ctx *ctx, const ft_pval *ps, int n_in, const ft_aval *in, ft_aval *out,
                                 int max_out, int *n_out) {
  ft_prim p = FT_P_SHARD_MAP;
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int nm = ft_spmd_mesh(pv(p, ps, "mesh"), mesh, FT_SPMD_MAX_AXES);
  if (nm < 0)
    return failf(ctx, p, FT_ERR_INVALID_ARG, "mesh must read like Mesh('i': 4, axis_types=(Auto,)), "
                 "at most %d axes", FT_SPMD_MAX_AXES);
  const ft_pval *jp = pv(p, ps, "jaxpr"), *is = pv(p, ps, "in_specs"), *os = pv(p, ps, "out_specs");
  const ft_jaxpr *j = jp && jp->tag == FT_PV_JAXPR ? jp->u.jaxpr : NULL;
  if (!j) return failf(ctx, p, FT_ERR_INVALID_ARG, "needs a jaxpr");
  if (j->n_const) return failf(ctx, p, FT_ERR_INVALID_ARG, "the body must have no constvars");
  if (!is || is->tag != FT_PV_TUPLE || is->n != n_in || j->n_in != n_in)
    return failf(ctx, p, FT_ERR_INVALID_ARG, "%d operands, %d in_specs and %d body inputs must agree", n_in,
                 is && is->tag == FT_PV_TUPLE ? is->n : -1, j->n_in);
  if (!os || os->tag != FT_PV_TUPLE || os->n != j->n_out)
    return failf(ctx, p, FT_ERR_INVALID_ARG, "%d out_specs for %d body outputs",
                 os && os->tag == FT_PV_TUPLE ? os->n : -1, j->n_out);
  if (j->n_out > max_out) return failf(ctx, p, FT_ERR_INVALID_ARG, "more than %d outputs", max_out);
  for (int i = 0; i < n_in; i++) {
    ft_aval loc;
    ft_status st = map_spec(ctx, &is->u.items[i], mesh, nm, &in[i], &loc, false, "operand", i);
    if (st) return st;
    if (!ft_aval_eq(&loc, &j->invars[i]->aval)) {
      char a[128], b[128];
      return failf(ctx, p, FT_ERR_SHAPE, "operand %d: the body takes %s, the spec gives %s per index", i,
                   ft_aval_str(&j->invars[i]->aval, a, sizeof a), ft_aval_str(&loc, b, sizeof b));
    }
  }
  for (int i = 0; i < j->n_out; i++) {
    ft_status st = map_spec(ctx, &os->u.items[i], mesh, nm, &j->outvars[i]->aval, &out[i], true, "output", i);
    if (st) return st;
  }
  ft_spmd_env saved;
  ft_spmd_env_enter(pv(p, ps, "mesh"), &saved);
  ft_status st = check_body(ctx, j, mesh, nm);
  ft_spmd_env_leave(&saved);
  if (st) return st;
  *n_out = j->n_out;
  return FT_OK;
}

static ft_status infer_collective(ft_ctx *ctx, ft_prim p, const ft_pval *ps, int n_in, const ft_aval *in,
                                  ft_aval *out, int max_out, int *n_out) {
  if (n_in > max_out) return failf(ctx, p, FT_ERR_INVALID_ARG, "more than %d outputs", max_out);
  char names[FT_SPMD_MAX_AXES][64];
  if (ft_spmd_names(pv(p, ps, ft_spmd_axis_param(p)), names, FT_SPMD_MAX_AXES) < 1)
    return failf(ctx, p, FT_ERR_INVALID_ARG, "%s must name one or more mesh axes", ft_spmd_axis_param(p));
  if (p == FT_P_AXIS_INDEX) {
    out[0] = ft_aval_scalar(FT_I32);
    *n_out = 1;
    return FT_OK;
  }
  for (int i = 0; i < n_in; i++) out[i] = in[i];
  *n_out = n_in;
  if ((p == FT_P_PMAX || p == FT_P_PMIN) && n_in)
    for (int i = 0; i < n_in; i++)
      if (ft_dtype_is_complex(in[i].dtype)) return failf(ctx, p, FT_ERR_TYPE, "operand %d is complex", i);
  if (p == FT_P_ALL_GATHER || p == FT_P_REDUCE_SCATTER) {
    const ft_pval *sz = pv(p, ps, "axis_size"), *tl = pv(p, ps, "tiled");
    const ft_pval *dm = pv(p, ps, p == FT_P_ALL_GATHER ? "all_gather_dimension" : "scatter_dimension");
    int64_t n = sz->u.i, d = dm->u.i;
    bool tiled = tl->tag == FT_PV_BOOL && tl->u.b;
    ft_aval a = in[0];
    if (n < 1) return failf(ctx, p, FT_ERR_INVALID_ARG, "axis_size must be positive");
    if (p == FT_P_ALL_GATHER) {
      if (d < 0 || d > a.rank - (tiled ? 1 : 0))
        return failf(ctx, p, FT_ERR_INVALID_ARG, "all_gather_dimension %lld out of range for rank %d",
                     (long long)d, a.rank);
      if (tiled) {
        a.dims[d] *= n;
      } else {
        if (a.rank == FT_MAX_RANK) return failf(ctx, p, FT_ERR_SHAPE, "result rank exceeds %d", FT_MAX_RANK);
        memmove(&a.dims[d + 1], &a.dims[d], sizeof a.dims[0] * (size_t)(a.rank - d));
        a.dims[d] = n;
        a.rank++;
      }
    } else {
      if (d < 0 || d >= a.rank)
        return failf(ctx, p, FT_ERR_INVALID_ARG, "scatter_dimension %lld out of range for rank %d", (long long)d,
                     a.rank);
      if (tiled ? a.dims[d] % n : a.dims[d] != n)
        return failf(ctx, p, FT_ERR_SHAPE, "dimension %lld of size %lld %s the axis size %lld", (long long)d,
                     (long long)a.dims[d], tiled ? "is not a multiple of" : "must equal", (long long)n);
      if (tiled) {
        a.dims[d] /= n;
      } else {
        memmove(&a.dims[d], &a.dims[d + 1], sizeof a.dims[0] * (size_t)(a.rank - d - 1));
        a.rank--;
      }
    }
    out[0] = a;
  }
  if (p == FT_P_ALL_TO_ALL) {
    /* JAX 0.12's _all_to_all_effectful_abstract_eval: split_axis divided
     * by the axis size, concat_axis multiplied by it, whatever `tiled`
     * (jax.lax.all_to_all's untiled form inserts and squeezes the unit
     * axes around the primitive itself). The axis size is the enclosing
     * shard_map's (the environment): the params carry none. */
    int64_t sa = pv(p, ps, "split_axis")->u.i, ca = pv(p, ps, "concat_axis")->u.i;
    if (sa < 0 || sa >= in[0].rank || ca < 0 || ca >= in[0].rank)
      return failf(ctx, p, FT_ERR_INVALID_ARG, "split_axis and concat_axis must be below the rank %d", in[0].rank);
    int nm = 0;
    const ft_spmd_axis *mesh = ft_spmd_env_mesh(&nm);
    int nn = ft_spmd_names(pv(p, ps, "axis_name"), names, FT_SPMD_MAX_AXES);
    int64_t n = 1;
    int missing = -1;
    for (int q = 0; mesh && q < nn; q++) {
      int64_t s = ft_spmd_axis_size(mesh, nm, names[q]);
      if (s < 0) {
        n = -1, missing = q;
        break;
      }
      n *= s;
    }
    if (!mesh || n < 1) {
      if (sa == ca) return FT_OK; /* the shape stays; the shard_map's rule checks the axis (check_body) */
      if (!mesh)
        return failf(ctx, p, FT_ERR_UNSUPPORTED, "split_axis=%lld != concat_axis=%lld: the result shape needs the "
                     "size of the mesh axes named, known only inside a shard_map body (no enclosing mesh here)",
                     (long long)sa, (long long)ca);
      char have[256];
      size_t k = 0;
      have[0] = 0;
      for (int m = 0; m < nm && k < sizeof have; m++)
        k += (size_t)snprintf(have + k, sizeof have - k, "%s'%s': %lld", m ? ", " : "", mesh[m].name,
                              (long long)mesh[m].size);
      return failf(ctx, p, FT_ERR_INVALID_ARG, "axis name '%s' is not an axis of the enclosing shard_map's mesh "
                   "(%s)", missing >= 0 ? names[missing] : "?", have);
    }
    if (in[0].dims[sa] % n)
      return failf(ctx, p, FT_ERR_SHAPE, "dimension %lld (split_axis) of size %lld is not a multiple of the axis "
                   "size %lld", (long long)sa, (long long)in[0].dims[sa], (long long)n);
    out[0].dims[sa] /= n;
    out[0].dims[ca] *= n;
  }
  return FT_OK;
}

ft_status ft_infer_spmd(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in, const ft_aval *in,
                        ft_aval *out, int max_out, int *n_out) {
  *n_out = 0;
  if (p == FT_P_SHARD_MAP) return infer_shard_map(ctx, params, n_in, in, out, max_out, n_out);
  return infer_collective(ctx, p, params, n_in, in, out, max_out, n_out);
}
