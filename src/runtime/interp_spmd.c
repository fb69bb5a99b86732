/* src/runtime/interp_spmd.c: shard_map in the reference interpreter over a
 * simulated axis (issue 27, docs/spmd.md). One process evaluates the body
 * once per axis index, in lockstep, equation by equation; a collective
 * gathers the values of every index and combines them in index order
 * (((x0 + x1) + x2) + ... in the operand's dtype, with the interpreter's own
 * add/max/min), so the result is deterministic and equals the one-process
 * reduction over the global batch in that order.
 *
 * A mesh of several axes runs the product of their sizes, devices in
 * row-major order of their coordinates (as jax.sharding.Mesh lays out a
 * reshaped device array); a collective over axes A combines, for each
 * group of devices that agree on the other axes, the group's values in
 * row-major order over A in the order the collective names them.
 *
 * Control flow in a body (jit, scan, while, cond, custom calls) whose
 * sub-jaxprs hold a collective runs in lockstep too, sub-jaxpr equation by
 * equation; a while or a cond whose predicate differs between indices with
 * a collective inside is refused (the indices would not meet at the same
 * collective). Control flow without collectives runs per index as any
 * other equation.
 *
 * With a communicator on the context (ft_dist_init, dist.c) the same code
 * runs across MPI ranks: rank q evaluates only its block of devices
 * [lo, lo + cnt) of the row-major order, and before a collective the
 * operands of the other devices arrive from their ranks (ft_dist_exchange,
 * rank order = device order), so every rank combines the very same values
 * in the very same order as the simulated axis: bit-identical for any rank
 * count that divides the number of devices. Control flow holding a
 * collective runs in lockstep across the ranks as across the indices: a
 * predicate or branch index is exchanged and must agree everywhere, so
 * every rank meets the same exchanges in the same order (dist.c's tags
 * check it). */
#include <string.h>
#include <xxhash.h>

#include "runtime.h"

/* Per-index values of the body's variables. */
typedef struct ft_spmd_devs lockstep;
struct ft_spmd_devs {
  ft_ctx *ctx;
  int64_t n;            /* number of devices: the product of the mesh's sizes */
  int nm;               /* mesh axes */
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int64_t stride[FT_SPMD_MAX_AXES]; /* row-major strides of the device coordinates */
  uint32_t n_ids;
  ft_array **val;       /* [index * n_ids + var id], owned */
  int64_t lo, cnt;      /* the devices evaluated here (all of them without MPI) */
  ft_dist *dist;        /* the communicator, or NULL (the simulated axis) */
  uint8_t hash[16];     /* the body's canonical hash (the exchanges' tag) */
  int eqn;              /* the body's equation being run (sub-jaxprs: the enclosing one) */
};

static bool local(const lockstep *L, int64_t r) { return r >= L->lo && r < L->lo + L->cnt; }

static int64_t coord(const lockstep *L, int64_t r, int m) { return r / L->stride[m] % L->mesh[m].size; }

static int axis_of(const lockstep *L, const char *name) {
  for (int m = 0; m < L->nm; m++)
    if (!strcmp(L->mesh[m].name, name)) return m;
  return -1;
}

static ft_array **slot(lockstep *L, int64_t r, const ft_var *v) { return &L->val[(size_t)r * L->n_ids + v->id]; }

/* Input k of e at index r: borrowed (a variable) or fresh (a literal,
 * *fresh set). NULL with the error on ctx. */
static ft_array *input(lockstep *L, int64_t r, const ft_var *v, bool *fresh) {
  *fresh = v->kind == FT_LIT;
  if (*fresh) return ft_interp_lit(L->ctx, v);
  ft_array *a = v->id < L->n_ids ? *slot(L, r, v) : NULL;
  if (!a) ft_set_error(L->ctx, FT_ERR_INTERNAL, "shard_map body: an input is unbound");
  return a;
}

static void bind(lockstep *L, int64_t r, const ft_var *v, ft_array *a) {
  /* a drop var (or one of another arena: input() reports it), or another rank's device */
  if (v->kind != FT_VAR || v->id >= L->n_ids || !local(L, r)) {
    ft_array_free(a);
    return;
  }
  ft_array **s = slot(L, r, v);
  ft_array_free(*s);
  *s = a;
}

/* a := a OP b, elementwise in a's dtype, by the interpreter's binary rule. */
static ft_status combine(ft_ctx *ctx, ft_prim op, ft_array **acc, ft_array *b) {
  ft_var o = {.aval = (*acc)->aval, .kind = FT_VAR};
  ft_var *outs[1] = {&o};
  ft_eqn e = {.prim = op, .n_in = 2, .n_out = 1, .out = outs,
              .params = (ft_pval *)ft_params_default_shared(op)};
  if (!e.params) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  ft_array *in[2] = {*acc, b}, *r = NULL;
  ft_status st = ft_interp_eqn(ctx, &e, in, &r);
  if (st) return st;
  ft_array_free(*acc);
  *acc = r;
  return FT_OK;
}

/* The reduction of xs[0..n) in index order. */
static ft_array *reduce_ordered(ft_ctx *ctx, ft_prim op, int64_t n, ft_array *const *xs) {
  ft_array *acc = ft_array_clone(ctx, xs[0]);
  for (int64_t r = 1; acc && r < n; r++)
    if (combine(ctx, op, &acc, xs[r])) ft_array_free(acc), acc = NULL;
  return acc;
}

/* Copies block k of n of x viewed as [outer, n, inner bytes] to (or from,
 * when gather) block position of y viewed as [outer, inner]. */
static void blocks(const ft_aval *big, int dim, int64_t n, int64_t k, char *bigp, char *smallp, bool to_big) {
  int64_t outer = 1, inner = (int64_t)ft_dtype_size(big->dtype);
  for (int d = 0; d < dim; d++) outer *= big->dims[d];
  for (int d = dim; d < big->rank; d++) inner *= big->dims[d];
  inner /= n;
  for (int64_t o = 0; o < outer; o++) {
    char *bp = bigp + (o * n + k) * inner, *sp = smallp + o * inner;
    if (inner) memcpy(to_big ? bp : sp, to_big ? sp : bp, (size_t)inner);
  }
}

static int param_int(const ft_eqn *e, const char *name) { return (int)ft_param_int(e, name, 0); }

static void tag_of(const lockstep *L, ft_dist_tag *t, int32_t what, int32_t eqn, int64_t nbytes) {
  *t = (ft_dist_tag){.eqn = eqn, .prim = what, .nbytes = nbytes};
  memcpy(t->hash, L->hash, sizeof t->hash);
}

/* Over MPI: xs[r] (stride apart in xs) for every device r outside this
 * rank's block, from the ranks that hold them (fresh arrays, fresh[r] set);
 * xs[r] of the local devices are given. what: the tag's prim (or step). */
static ft_status fill_remote(lockstep *L, int32_t what, int32_t eqn, ft_array **xs, size_t stride, bool *fresh) {
  ft_ctx *ctx = L->ctx;
  const ft_aval *av = &xs[(size_t)L->lo * stride]->aval;
  size_t nb = xs[(size_t)L->lo * stride]->nbytes;
  char *send = malloc((size_t)L->cnt * nb + 1), *recv = malloc((size_t)L->n * nb + 1);
  ft_status st = FT_OK;
  if (!send || !recv) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < L->cnt && !st; i++) {
    const ft_array *a = xs[(size_t)(L->lo + i) * stride];
    if (a->nbytes != nb)
      st = ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map: operands of one collective differ in size");
    else if (nb) memcpy(send + (size_t)i * nb, a->data, nb);
  }
  ft_dist_tag t;
  tag_of(L, &t, what, eqn, (int64_t)((size_t)L->cnt * nb));
  if (!st) st = ft_dist_exchange(ctx, L->dist, &t, send, recv);
  for (int64_t r = 0; r < L->n && !st; r++) {
    if (local(L, r)) continue;
    ft_array *a = ft_array_alloc(ctx, av);
    if (!a) {
      st = ft_ctx_status(ctx);
      break;
    }
    if (nb) memcpy(a->data, recv + (size_t)r * nb, nb);
    xs[(size_t)r * stride] = a;
    fresh[(size_t)r * stride] = true;
  }
  free(send);
  free(recv);
  return st;
}

/* One collective over a group of n devices dev[0..n) (group order);
 * x[q * n_in + k]: operand k at group position q. */
static ft_status collective(lockstep *L, const ft_eqn *e, ft_array **x, const int64_t *dev, int64_t n) {
  ft_ctx *ctx = L->ctx;
  ft_status st = FT_OK;
  switch (e->prim) {
  case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PMAX: case FT_P_PMIN: case FT_P_PVARY: {
    ft_prim op = e->prim == FT_P_PMAX ? FT_P_MAX : e->prim == FT_P_PMIN ? FT_P_MIN : FT_P_ADD;
    ft_array **xs = malloc(sizeof *xs * (size_t)n);
    if (!xs) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < e->n_in && !st; k++) {
      for (int64_t r = 0; r < n; r++) xs[r] = x[r * e->n_in + k];
      if (e->prim == FT_P_PVARY) { /* no other device's value needed (nor fetched) */
        for (int64_t r = 0; r < n && !st; r++) {
          if (!local(L, dev[r])) continue;
          ft_array *c = ft_array_clone(ctx, xs[r]);
          if (!c) st = ft_ctx_status(ctx);
          else bind(L, dev[r], e->out[k], c);
        }
        continue;
      }
      ft_array *s = reduce_ordered(ctx, op, n, xs);
      for (int64_t r = 0; r < n && s && !st; r++) {
        ft_array *c = r + 1 < n ? ft_array_clone(ctx, s) : s;
        if (!c) st = ft_ctx_status(ctx);
        else bind(L, dev[r], e->out[k], c);
      }
      if (!s) st = ft_ctx_status(ctx);
    }
    free(xs);
    return st;
  }
  case FT_P_AXIS_INDEX:
    for (int64_t r = 0; r < n; r++) {
      ft_array *a = ft_array_alloc(ctx, &e->out[0]->aval);
      if (!a) return ft_ctx_status(ctx);
      ft_set_i64(a, 0, r); /* the position in the group */
      bind(L, dev[r], e->out[0], a);
    }
    return FT_OK;
  case FT_P_PPERMUTE: {
    const ft_pval *perm = ft_eqn_param(e, "perm");
    for (int k = 0; k < e->n_in; k++) {
      ft_array **o = calloc((size_t)n, sizeof *o);
      if (!o) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      for (int64_t r = 0; r < n && !st; r++)
        if (!(o[r] = ft_array_alloc(ctx, &e->out[k]->aval))) st = ft_ctx_status(ctx);
      for (int q = 0; q < perm->n && !st; q++) {
        int64_t pr[2];
        int np = 0;
        if (!ft_pv_get_ints(&perm->u.items[q], pr, 2, &np) || np != 2 || pr[0] < 0 || pr[0] >= n || pr[1] < 0 ||
            pr[1] >= n) {
          st = ft_set_error(ctx, FT_ERR_INVALID_ARG, "ppermute: perm pair %d is not two indices below %lld", q,
                            (long long)n);
          break;
        }
        if (!local(L, dev[pr[1]])) continue; /* another rank's result (its source may not be here) */
        ft_array *src = x[pr[0] * e->n_in + k];
        if (src->nbytes) memcpy(o[pr[1]]->data, src->data, src->nbytes);
      }
      for (int64_t r = 0; r < n; r++)
        if (st) ft_array_free(o[r]);
        else bind(L, dev[r], e->out[k], o[r]);
      free(o);
    }
    return st;
  }
  case FT_P_ALL_GATHER: case FT_P_ALL_TO_ALL: case FT_P_REDUCE_SCATTER: {
    ft_array *sum = NULL;
    if (e->prim == FT_P_REDUCE_SCATTER) {
      ft_array **xs = malloc(sizeof *xs * (size_t)n);
      if (!xs) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      for (int64_t r = 0; r < n; r++) xs[r] = x[r];
      sum = reduce_ordered(ctx, FT_P_ADD, n, xs);
      free(xs);
      if (!sum) return ft_ctx_status(ctx);
    }
    for (int64_t r = 0; r < n && !st; r++) {
      /* another rank's result (over MPI all_to_all brings only the blocks local devices need) */
      if (!local(L, dev[r])) continue;
      ft_array *o = ft_array_alloc(ctx, &e->out[0]->aval);
      if (!o) {
        st = ft_ctx_status(ctx);
        break;
      }
      if (e->prim == FT_P_ALL_GATHER) {
        int d = param_int(e, "all_gather_dimension");
        for (int64_t k = 0; k < n; k++) blocks(&o->aval, d, n, k, o->data, x[k]->data, true);
      } else if (e->prim == FT_P_REDUCE_SCATTER) {
        blocks(&sum->aval, param_int(e, "scatter_dimension"), n, r, sum->data, o->data, false);
      } else { /* block r (along split_axis) of every index's operand, at block k along concat_axis, in
                  index order */
        int sa = param_int(e, "split_axis"), ca = param_int(e, "concat_axis");
        ft_aval cav = x[0]->aval;
        if (sa < 0 || sa >= cav.rank || ca < 0 || ca >= o->aval.rank || cav.dims[sa] % n) {
          ft_array_free(o);
          st = ft_set_error(ctx, FT_ERR_INTERNAL, "all_to_all: split_axis %d and concat_axis %d do not fit %lld "
                            "devices", sa, ca, (long long)n);
          break;
        }
        cav.dims[sa] /= n;
        ft_array *tmp = ft_array_alloc(ctx, &cav);
        if (!tmp) {
          ft_array_free(o);
          st = ft_ctx_status(ctx);
          break;
        }
        for (int64_t k = 0; k < n; k++) {
          blocks(&x[k]->aval, sa, n, r, x[k]->data, tmp->data, false);
          blocks(&o->aval, ca, n, k, o->data, tmp->data, true);
        }
        ft_array_free(tmp);
      }
      bind(L, dev[r], e->out[0], o);
    }
    ft_array_free(sum);
    return st;
  }
  default:
    return ft_set_error(ctx, FT_ERR_INTERNAL, "%s is not a collective", ft_prim_get(e->prim)->name);
  }
}

/* One collective equation over one group of n devices, dev[0..n) in group
 * order. x[r * n_in + k]: operand k at device r. */
static ft_status collective_group(lockstep *L, const ft_eqn *e, ft_array *const *x_all, const int64_t *dev,
                                  int64_t n) {
  ft_ctx *ctx = L->ctx;
  ft_status st = FT_OK;
  ft_array **x = malloc(sizeof *x * (size_t)(n * (e->n_in ? e->n_in : 1)));
  if (!x) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t r = 0; r < n; r++)
    for (int k = 0; k < e->n_in; k++) x[r * e->n_in + k] = x_all[dev[r] * e->n_in + k];
  st = collective(L, e, x, dev, n);
  free(x);
  return st;
}

/* The groups of a collective over the axes it names: for each device whose
 * coordinates on those axes are all 0, the devices that agree with it on
 * the other axes, in row-major order over the named axes as named. */
static ft_status run_collective(lockstep *L, const ft_eqn *e, ft_array *const *x) {
  char names[FT_SPMD_MAX_AXES][64];
  int na = ft_spmd_names(ft_eqn_param(e, ft_spmd_axis_param(e->prim)), names, FT_SPMD_MAX_AXES);
  int ax[FT_SPMD_MAX_AXES];
  int64_t g = 1;
  for (int q = 0; q < na; q++) {
    if ((ax[q] = axis_of(L, names[q])) < 0)
      return ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "%s: axis name '%s' is not an axis of the mesh",
                          ft_prim_get(e->prim)->name, names[q]);
    g *= L->mesh[ax[q]].size;
  }
  if (na < 1) return ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "%s: no axis names", ft_prim_get(e->prim)->name);
  int64_t *dev = malloc(sizeof *dev * (size_t)g);
  if (!dev) return ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  ft_status st = FT_OK;
  for (int64_t r = 0; r < L->n && !st; r++) {
    bool lead = true;
    for (int q = 0; q < na; q++) lead = lead && coord(L, r, ax[q]) == 0;
    if (!lead) continue;
    for (int64_t pos = 0; pos < g; pos++) {
      int64_t rest = pos, d = r;
      for (int q = na - 1; q >= 0; q--) {
        d += rest % L->mesh[ax[q]].size * L->stride[ax[q]];
        rest /= L->mesh[ax[q]].size;
      }
      dev[pos] = d;
    }
    bool here = false;
    for (int64_t pos = 0; pos < g; pos++) here = here || local(L, dev[pos]);
    if (here) st = collective_group(L, e, x, dev, g);
  }
  free(dev);
  return st;
}

/* The opt-out of bitwise identity (ft_dist_options.native_allreduce): a
 * psum over every device, one device per rank, by MPI_Allreduce. */
static bool native_psum(const lockstep *L, const ft_eqn *e) {
  if (!L->dist || !ft_dist_native(L->dist) || L->cnt != 1) return false;
  if (e->prim != FT_P_PSUM && e->prim != FT_P_PSUM_INVARIANT) return false;
  char names[FT_SPMD_MAX_AXES][64];
  int na = ft_spmd_names(ft_eqn_param(e, ft_spmd_axis_param(e->prim)), names, FT_SPMD_MAX_AXES);
  int64_t g = 1;
  for (int q = 0; q < na; q++) {
    int m = axis_of(L, names[q]);
    if (m < 0) return false; /* run_collective names it */
    g *= L->mesh[m].size;
  }
  if (na < 1 || g != L->n) return false;
  for (int k = 0; k < e->n_in; k++)
    if (!ft_dist_allreduce_ok(e->in[k]->aval.dtype)) return false;
  return true;
}

static ft_status psum_native(lockstep *L, const ft_eqn *e, ft_array **x) {
  for (int k = 0; k < e->n_in; k++) {
    ft_array *c = ft_array_clone(L->ctx, x[(size_t)L->lo * (size_t)e->n_in + (size_t)k]);
    if (!c) return ft_ctx_status(L->ctx);
    ft_dist_tag t;
    tag_of(L, &t, (int32_t)e->prim, L->eqn, (int64_t)c->nbytes);
    ft_status st = ft_dist_allreduce(L->ctx, L->dist, &t, FT_P_ADD, c->aval.dtype, c->data, ft_aval_size(&c->aval));
    if (st) {
      ft_array_free(c);
      return st;
    }
    bind(L, L->lo, e->out[k], c);
  }
  return FT_OK;
}

static bool has_collective(const ft_jaxpr *j);

static bool pval_has_collective(const ft_pval *v) {
  if (v->tag == FT_PV_JAXPR) return v->u.jaxpr && has_collective(v->u.jaxpr);
  for (int q = 0; v->tag == FT_PV_TUPLE && q < v->n; q++)
    if (pval_has_collective(&v->u.items[q])) return true;
  return false;
}

/* Whether j or a sub-jaxpr of it (a nested shard_map's aside) holds a
 * collective. */
static bool has_collective(const ft_jaxpr *j) {
  for (int i = 0; i < j->n_eqn; i++) {
    const ft_eqn *e = &j->eqns[i];
    if (ft_prim_is_collective(e->prim)) return true;
    if (e->prim == FT_P_SHARD_MAP) continue;
    const ft_prim_info *pi = ft_prim_get(e->prim);
    for (int k = 0; k < pi->n_params; k++)
      if (pval_has_collective(&e->params[k])) return true;
  }
  return false;
}

static ft_status step(lockstep *L, const ft_eqn *e);

/* Sub-jaxpr j at every index in lockstep, in its own environment (as the
 * interpreter gives every call one): args[r * n_args + k] (borrowed) ->
 * res[r * j->n_out + k] (owned). */
static ft_status ls_run(lockstep *L, const ft_jaxpr *j, int n_args, ft_array *const *args, ft_array **res) {
  if (j->n_const || j->n_in != n_args)
    return ft_set_error(L->ctx, FT_ERR_UNSUPPORTED, "a sub-jaxpr in a shard_map body with constvars (or %d "
                        "inputs for %d operands) cannot run in lockstep", j->n_in, n_args);
  lockstep S = *L;
  S.n_ids = ft_arena_num_var_ids(j->arena);
  S.val = calloc((size_t)S.n * S.n_ids + 1, sizeof *S.val);
  ft_status st = S.val ? FT_OK : ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t r = S.lo; r < S.lo + S.cnt && !st; r++)
    for (int k = 0; k < n_args && !st; k++) {
      ft_array *c = ft_array_clone(L->ctx, args[r * n_args + k]);
      if (!c) st = ft_ctx_status(L->ctx);
      else bind(&S, r, j->invars[k], c);
    }
  for (int i = 0; i < j->n_eqn && !st; i++) st = step(&S, &j->eqns[i]);
  for (int64_t r = 0; r < S.n; r++)
    for (int k = 0; k < j->n_out; k++) {
      ft_array **o = &res[r * j->n_out + k];
      *o = NULL;
      if (st || !local(&S, r)) continue;
      bool fresh;
      ft_array *a = input(&S, r, j->outvars[k], &fresh);
      if (a && !fresh) a = ft_array_clone(L->ctx, a);
      if (!(*o = a)) st = ft_ctx_status(L->ctx);
    }
  if (st)
    for (int64_t q = 0; q < S.n * j->n_out; q++) ft_array_free(res[q]), res[q] = NULL;
  for (size_t q = 0; S.val && q < (size_t)S.n * S.n_ids; q++) ft_array_free(S.val[q]);
  free(S.val);
  return st;
}

static const ft_jaxpr *sub(const ft_eqn *e, const char *name) {
  const ft_pval *v = ft_eqn_param(e, name);
  return v && v->tag == FT_PV_JAXPR ? v->u.jaxpr : NULL;
}

/* The one value every index gives for a scalar (a predicate or a branch
 * index), or an error naming the primitive: with a collective inside, the
 * indices must take the same path. */
static ft_status agree(lockstep *L, const ft_eqn *e, ft_array *const *v, int stride, int64_t *out) {
  int64_t *all = malloc(sizeof *all * (size_t)L->n);
  if (!all) return ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t r = L->lo; r < L->lo + L->cnt; r++) all[r] = ft_get_i64(v[r * stride], 0);
  ft_status st = FT_OK;
  if (L->dist) { /* every rank's values, so every rank takes the same path (or fails alike) */
    ft_dist_tag t;
    tag_of(L, &t, (int32_t)e->prim, L->eqn, (int64_t)(sizeof *all * (size_t)L->cnt));
    int64_t *mine = malloc(sizeof *mine * (size_t)L->cnt);
    if (!mine) st = ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
    if (!st) {
      memcpy(mine, all + L->lo, sizeof *mine * (size_t)L->cnt);
      st = ft_dist_exchange(L->ctx, L->dist, &t, mine, all);
    }
    free(mine);
  }
  *out = st ? 0 : all[0];
  for (int64_t r = 1; r < L->n && !st; r++)
    if (all[r] != *out)
      st = ft_set_error(L->ctx, FT_ERR_UNSUPPORTED, "%s in a shard_map body: index %lld takes another path "
                        "than index 0 and a collective is inside (the indices would not meet at it)",
                        ft_prim_get(e->prim)->name, (long long)r);
  free(all);
  return st;
}

/* Binds res[r * n + k] as e's outputs at every index (takes ownership). */
static void bind_outs(lockstep *L, const ft_eqn *e, ft_array **res, int n) {
  for (int64_t r = L->lo; r < L->lo + L->cnt; r++)
    for (int k = 0; k < n; k++) bind(L, r, e->out[k], res[r * n + k]), res[r * n + k] = NULL;
}

/* scan in lockstep: per step, every index's body on its consts, carry and
 * row of xs. x[r * n_in + k] borrowed. */
static ft_status ls_scan(lockstep *L, const ft_eqn *e, ft_array *const *x) {
  const ft_jaxpr *j = sub(e, "jaxpr");
  int nc0 = (int)ft_param_int(e, "num_consts", -1), ncar = (int)ft_param_int(e, "num_carry", -1);
  int64_t len = ft_param_int(e, "length", -1);
  bool rev = ft_param_bool(e, "reverse", false);
  int n = e->n_in, nx = n - nc0 - ncar, ny = e->n_out - ncar;
  if (!j || nc0 < 0 || ncar < 0 || len < 0 || nx < 0 || ny < 0 || j->n_out != e->n_out || j->n_in != n)
    return ft_set_error(L->ctx, FT_ERR_TYPE, "scan: params do not fit the operands");
  size_t N = (size_t)L->n;
  ft_array **args = calloc(N * (size_t)n + 1, sizeof *args), **rows = calloc(N * (size_t)(nx + 1), sizeof *rows);
  ft_array **res = calloc(N * (size_t)e->n_out + 1, sizeof *res), **out = calloc(N * (size_t)e->n_out + 1, sizeof *out);
  ft_status st = args && rows && res && out ? FT_OK : ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  size_t r0 = (size_t)L->lo, r1 = (size_t)(L->lo + L->cnt);
  for (size_t r = r0; r < r1 && !st; r++) {
    for (int k = 0; k < ncar && !st; k++)
      if (!(out[r * (size_t)e->n_out + (size_t)k] = ft_array_clone(L->ctx, x[r * (size_t)n + (size_t)(nc0 + k)])))
        st = ft_ctx_status(L->ctx);
    for (int k = 0; k < ny && !st; k++)
      if (!(out[r * (size_t)e->n_out + (size_t)(ncar + k)] = ft_array_alloc(L->ctx, &e->out[ncar + k]->aval)))
        st = ft_ctx_status(L->ctx);
    for (int k = 0; k < nx && !st; k++)
      if (!(rows[r * (size_t)nx + (size_t)k] = ft_array_alloc(L->ctx, &j->invars[nc0 + ncar + k]->aval)))
        st = ft_ctx_status(L->ctx);
  }
  for (int64_t s = 0; s < len && !st; s++) {
    int64_t t = rev ? len - 1 - s : s;
    for (size_t r = r0; r < r1; r++) {
      ft_array **a = args + r * (size_t)n, **o = out + r * (size_t)e->n_out;
      for (int k = 0; k < nc0; k++) a[k] = x[r * (size_t)n + (size_t)k];
      for (int k = 0; k < ncar; k++) a[nc0 + k] = o[k];
      for (int k = 0; k < nx; k++) {
        ft_array *row = rows[r * (size_t)nx + (size_t)k];
        const ft_array *xs = x[r * (size_t)n + (size_t)(nc0 + ncar + k)];
        if (row->nbytes) memcpy(row->data, (const char *)xs->data + (size_t)t * row->nbytes, row->nbytes);
        a[nc0 + ncar + k] = row;
      }
    }
    if ((st = ls_run(L, j, n, args, res))) break;
    for (size_t r = r0; r < r1; r++) {
      ft_array **o = out + r * (size_t)e->n_out, **q = res + r * (size_t)e->n_out;
      for (int k = 0; k < ncar; k++) ft_array_free(o[k]), o[k] = q[k], q[k] = NULL;
      for (int k = 0; k < ny; k++) {
        ft_array *y = q[ncar + k], *ys = o[ncar + k];
        if (y->nbytes) memcpy((char *)ys->data + (size_t)t * y->nbytes, y->data, y->nbytes);
        ft_array_free(y), q[ncar + k] = NULL;
      }
    }
  }
  if (!st) bind_outs(L, e, out, e->n_out);
  for (size_t q = 0; out && q < N * (size_t)e->n_out; q++) ft_array_free(out[q]);
  for (size_t q = 0; rows && q < N * (size_t)nx; q++) ft_array_free(rows[q]);
  free(args), free(rows), free(res), free(out);
  return st;
}

/* while in lockstep: the predicate must agree at every index. */
static ft_status ls_while(lockstep *L, const ft_eqn *e, ft_array *const *x) {
  const ft_jaxpr *cj = sub(e, "cond_jaxpr"), *bj = sub(e, "body_jaxpr");
  int cn = (int)ft_param_int(e, "cond_nconsts", -1), bn = (int)ft_param_int(e, "body_nconsts", -1);
  int n = e->n_in, nc = n - cn - bn;
  if (!cj || !bj || cn < 0 || bn < 0 || nc != e->n_out || cj->n_out != 1 || bj->n_out != nc)
    return ft_set_error(L->ctx, FT_ERR_TYPE, "while: params do not fit the operands");
  size_t N = (size_t)L->n;
  ft_array **carry = calloc(N * (size_t)nc + 1, sizeof *carry), **args = calloc(N * (size_t)(n + 1), sizeof *args);
  ft_array **pred = calloc(N + 1, sizeof *pred), **res = calloc(N * (size_t)nc + 1, sizeof *res);
  ft_status st = carry && args && pred && res ? FT_OK : ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  size_t r0 = (size_t)L->lo, r1 = (size_t)(L->lo + L->cnt);
  for (size_t r = r0; r < r1 && !st; r++)
    for (int k = 0; k < nc && !st; k++)
      if (!(carry[r * (size_t)nc + (size_t)k] = ft_array_clone(L->ctx, x[r * (size_t)n + (size_t)(cn + bn + k)])))
        st = ft_ctx_status(L->ctx);
  ft_loop_guard g;
  ft_loop_begin(&g, L->ctx, "while_loop");
  while (!st) {
    if ((st = ft_loop_step(&g, L->ctx))) break;
    for (size_t r = r0; r < r1; r++) {
      for (int k = 0; k < cn; k++) args[r * (size_t)(cn + nc) + (size_t)k] = x[r * (size_t)n + (size_t)k];
      for (int k = 0; k < nc; k++) args[r * (size_t)(cn + nc) + (size_t)(cn + k)] = carry[r * (size_t)nc + (size_t)k];
    }
    if ((st = ls_run(L, cj, cn + nc, args, pred))) break;
    int64_t go = 0;
    if (ft_array_size(pred[r0]) != 1)
      st = ft_set_error(L->ctx, FT_ERR_UNSUPPORTED, "while_loop in a shard_map body: a batched predicate "
                        "with a collective inside is not supported");
    if (!st) st = agree(L, e, pred, 1, &go);
    for (size_t r = 0; r < N; r++) ft_array_free(pred[r]), pred[r] = NULL;
    if (st || !go) break;
    for (size_t r = r0; r < r1; r++) {
      for (int k = 0; k < bn; k++) args[r * (size_t)(bn + nc) + (size_t)k] = x[r * (size_t)n + (size_t)(cn + k)];
      for (int k = 0; k < nc; k++) args[r * (size_t)(bn + nc) + (size_t)(bn + k)] = carry[r * (size_t)nc + (size_t)k];
    }
    if ((st = ls_run(L, bj, bn + nc, args, res))) break;
    for (size_t q = 0; q < N * (size_t)nc; q++) ft_array_free(carry[q]), carry[q] = res[q], res[q] = NULL;
  }
  if (!st) bind_outs(L, e, carry, nc);
  for (size_t q = 0; carry && q < N * (size_t)nc; q++) ft_array_free(carry[q]);
  free(carry), free(args), free(pred), free(res);
  return st;
}

/* Control flow holding a collective, in lockstep. x[r * n_in + k]. */
static ft_status ls_control(lockstep *L, const ft_eqn *e, ft_array *const *x) {
  int n = e->n_in;
  size_t N = (size_t)L->n;
  switch (e->prim) {
  case FT_P_SCAN: return ls_scan(L, e, x);
  case FT_P_WHILE: return ls_while(L, e, x);
  case FT_P_JIT: case FT_P_REMAT2: case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: case FT_P_COND:
  case FT_P_EVAL_JAXPR: {
    const ft_jaxpr *j;
    int off = 0;
    if (e->prim == FT_P_COND) {
      const ft_pval *br = ft_eqn_param(e, "branches");
      int64_t idx;
      if (!br || br->tag != FT_PV_TUPLE || br->n < 1 || n < 1)
        return ft_set_error(L->ctx, FT_ERR_TYPE, "cond: bad branches");
      ft_status st = agree(L, e, x, n, &idx);
      if (st) return st;
      if (ft_dtype_is_unsigned(x[(size_t)L->lo * (size_t)n]->aval.dtype) && idx < 0) idx = INT64_MAX;
      idx = idx < 0 ? 0 : idx >= br->n ? br->n - 1 : idx;
      j = br->u.items[idx].tag == FT_PV_JAXPR ? br->u.items[idx].u.jaxpr : NULL;
      off = 1;
    } else {
      j = sub(e, e->prim == FT_P_JIT || e->prim == FT_P_REMAT2 ? "jaxpr" : "call_jaxpr");
    }
    if (!j || j->n_out != e->n_out)
      return ft_set_error(L->ctx, FT_ERR_TYPE, "%s: bad sub-jaxpr", ft_prim_get(e->prim)->name);
    ft_array **args = calloc(N * (size_t)(n - off) + 1, sizeof *args);
    ft_array **res = calloc(N * (size_t)e->n_out + 1, sizeof *res);
    ft_status st = args && res ? FT_OK : ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
    for (size_t r = (size_t)L->lo; r < (size_t)(L->lo + L->cnt) && !st; r++)
      for (int k = off; k < n; k++) args[r * (size_t)(n - off) + (size_t)(k - off)] = x[r * (size_t)n + (size_t)k];
    if (!st) st = ls_run(L, j, n - off, args, res);
    if (!st) bind_outs(L, e, res, e->n_out);
    free(args), free(res);
    return st;
  }
  default:
    return ft_set_error(L->ctx, FT_ERR_UNSUPPORTED, "%s holding a collective in a shard_map body cannot run "
                        "over the simulated axis", ft_prim_get(e->prim)->name);
  }
}

/* Over MPI, ppermute's operands: only those whose destination is a local
 * device arrive (MPI_Alltoallv; every rank enumerates the pairs of every
 * group in the same order), not every device's as the allgather would
 * bring. Pure data movement: the results are the allgather's bits. */
static ft_status fill_ppermute(lockstep *L, const ft_eqn *e, ft_array **x, bool *fresh) {
  ft_ctx *ctx = L->ctx;
  char names[FT_SPMD_MAX_AXES][64];
  int na = ft_spmd_names(ft_eqn_param(e, ft_spmd_axis_param(e->prim)), names, FT_SPMD_MAX_AXES);
  const ft_pval *perm = ft_eqn_param(e, "perm");
  int ax[FT_SPMD_MAX_AXES];
  int64_t g = 1;
  for (int q = 0; q < na; q++) {
    if ((ax[q] = axis_of(L, names[q])) < 0) return run_collective(L, e, x); /* it names the error */
    g *= L->mesh[ax[q]].size;
  }
  if (na < 1 || !perm || perm->tag != FT_PV_TUPLE) return run_collective(L, e, x);
  int np = perm->n, p = ft_dist_size(ctx), me = ft_dist_rank(ctx);
  int64_t ngroups = L->n / g, npairs = ngroups * np;
  int64_t *src = malloc(sizeof *src * (size_t)(npairs + 1)), *dst = malloc(sizeof *dst * (size_t)(npairs + 1));
  int *cnt4 = calloc((size_t)p * 4 + 1, sizeof *cnt4);
  int64_t *dev = malloc(sizeof *dev * (size_t)g);
  ft_status st = src && dst && cnt4 && dev ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  int64_t m = 0;
  for (int64_t r = 0; r < L->n && !st; r++) { /* the groups as run_collective makes them */
    bool lead = true;
    for (int q = 0; q < na; q++) lead = lead && coord(L, r, ax[q]) == 0;
    if (!lead) continue;
    for (int64_t pos = 0; pos < g; pos++) {
      int64_t rest = pos, d = r;
      for (int q = na - 1; q >= 0; q--) {
        d += rest % L->mesh[ax[q]].size * L->stride[ax[q]];
        rest /= L->mesh[ax[q]].size;
      }
      dev[pos] = d;
    }
    for (int q = 0; q < np; q++) {
      int64_t pr[2];
      int n2 = 0;
      if (!ft_pv_get_ints(&perm->u.items[q], pr, 2, &n2) || n2 != 2 || pr[0] < 0 || pr[0] >= g || pr[1] < 0 ||
          pr[1] >= g) {
        free(src), free(dst), free(cnt4), free(dev);
        return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ppermute: perm pair %d is not two indices below %lld", q,
                            (long long)g);
      }
      src[m] = dev[pr[0]], dst[m] = dev[pr[1]], m++;
    }
  }
  size_t nin = (size_t)(e->n_in ? e->n_in : 1);
  int *sc = cnt4, *sd = cnt4 + p, *rc = cnt4 + 2 * p, *rd = cnt4 + 3 * p;
  for (int k = 0; k < e->n_in && !st; k++) {
    const ft_array *mine = x[(size_t)L->lo * nin + (size_t)k];
    size_t nb = mine->nbytes;
    int64_t ns = 0, nr = 0;
    for (int q = 0; q < p; q++) sc[q] = rc[q] = 0;
    for (int64_t i = 0; i < m; i++) {
      int so = (int)(src[i] / L->cnt), dn = (int)(dst[i] / L->cnt);
      if (so == dn) continue;
      if (so == me) sc[dn] += (int)nb, ns++;
      if (dn == me) rc[so] += (int)nb, nr++;
    }
    if ((int64_t)nb * (ns > nr ? ns : nr) > INT32_MAX) {
      st = ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dist: a ppermute of more than 2 GiB per rank");
      break;
    }
    for (int q = 0; q < p; q++) sd[q] = q ? sd[q - 1] + sc[q - 1] : 0, rd[q] = q ? rd[q - 1] + rc[q - 1] : 0;
    char *sb = malloc((size_t)ns * nb + 1), *rb = malloc((size_t)nr * nb + 1);
    if (!sb || !rb) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    for (int q = 0, off = 0; q < p && !st; q++) /* by destination rank, pairs in order */
      for (int64_t i = 0; i < m; i++)
        if (src[i] / L->cnt == me && dst[i] / L->cnt == q && q != me) {
          const ft_array *a = x[(size_t)src[i] * nin + (size_t)k];
          if (a->nbytes != nb) {
            st = ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map: operands of one collective differ in size");
            break;
          }
          if (nb) memcpy(sb + off, a->data, nb);
          off += (int)nb;
        }
    ft_dist_tag t;
    tag_of(L, &t, (int32_t)e->prim, L->eqn, (int64_t)nb);
    if (!st) st = ft_dist_alltoallv(ctx, L->dist, &t, sb, sc, sd, rb, rc, rd);
    for (int q = 0, off = 0; q < p && !st; q++)
      for (int64_t i = 0; i < m && !st; i++)
        if (dst[i] / L->cnt == me && src[i] / L->cnt == q && q != me) {
          ft_array *a = ft_array_alloc(ctx, &mine->aval);
          if (!a) {
            st = ft_ctx_status(ctx);
            break;
          }
          if (nb) memcpy(a->data, rb + off, nb);
          off += (int)nb;
          size_t at = (size_t)src[i] * nin + (size_t)k;
          x[at] = a, fresh[at] = true;
        }
    free(sb), free(rb);
  }
  free(src), free(dst), free(cnt4), free(dev);
  return st ? st : run_collective(L, e, x);
}

/* The groups of collective e as run_collective makes them: *ng groups of
 * *g devices each, group by group in its order (malloc'd; NULL with the
 * error on ctx, or *g = 0 when e names an axis the mesh lacks: then
 * run_collective reports it). */
static int64_t *all_groups(lockstep *L, const ft_eqn *e, int64_t *g, int64_t *ng) {
  char names[FT_SPMD_MAX_AXES][64];
  int na = ft_spmd_names(ft_eqn_param(e, ft_spmd_axis_param(e->prim)), names, FT_SPMD_MAX_AXES);
  int ax[FT_SPMD_MAX_AXES];
  *g = 1, *ng = 0;
  for (int q = 0; q < na; q++) {
    if ((ax[q] = axis_of(L, names[q])) < 0) return *g = 0, NULL;
    *g *= L->mesh[ax[q]].size;
  }
  if (na < 1) return *g = 0, NULL;
  int64_t *dev = malloc(sizeof *dev * (size_t)L->n), m = 0;
  if (!dev) return ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory"), NULL;
  for (int64_t r = 0; r < L->n; r++) {
    bool lead = true;
    for (int q = 0; q < na; q++) lead = lead && coord(L, r, ax[q]) == 0;
    if (!lead) continue;
    for (int64_t pos = 0; pos < *g; pos++) {
      int64_t rest = pos, d = r;
      for (int q = na - 1; q >= 0; q--) {
        d += rest % L->mesh[ax[q]].size * L->stride[ax[q]];
        rest /= L->mesh[ax[q]].size;
      }
      dev[m++] = d;
    }
    ++*ng;
  }
  return dev;
}

/* Over MPI, all_to_all's operands: device r of a group needs only block
 * pos(r) (along split_axis) of each member's operand, so only those blocks
 * travel (one MPI_Alltoallv, after the same tag check; every rank
 * enumerates the (source, destination) pairs of every group in the same
 * order). A remote source's operand arrives as a fresh array holding just
 * the blocks of this rank's devices; the combination (collective) reads no
 * other block, since it builds the local devices' results only. Pure data
 * movement: the allgather's bits. */
static ft_status fill_all_to_all(lockstep *L, const ft_eqn *e, ft_array **x, bool *fresh) {
  ft_ctx *ctx = L->ctx;
  int64_t g, ng;
  int64_t *dev = all_groups(L, e, &g, &ng);
  if (!dev) return g ? ft_ctx_status(ctx) : run_collective(L, e, x);
  int sa = (int)ft_param_int(e, "split_axis", -1), p = ft_dist_size(ctx), me = ft_dist_rank(ctx);
  size_t nin = (size_t)(e->n_in ? e->n_in : 1);
  int *cnt4 = calloc((size_t)p * 4 + 1, sizeof *cnt4);
  ft_status st = cnt4 ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  int *sc = cnt4, *sd = cnt4 + p, *rc = cnt4 + 2 * p, *rd = cnt4 + 3 * p;
  for (int k = 0; k < e->n_in && !st; k++) {
    const ft_array *mine = x[(size_t)L->lo * nin + (size_t)k];
    const ft_aval *av = &mine->aval;
    if (sa < 0 || sa >= av->rank || av->dims[sa] % g) { /* the shape rule forbids it */
      st = ft_set_error(ctx, FT_ERR_INTERNAL, "all_to_all: split_axis %d does not split over %lld devices", sa,
                        (long long)g);
      break;
    }
    size_t cb = mine->nbytes / (size_t)g; /* one block */
    int64_t ns = 0, nr = 0;
    for (int q = 0; q < p; q++) sc[q] = rc[q] = 0;
    for (int64_t gi = 0; gi < ng; gi++)
      for (int64_t s = 0; s < g; s++)
        for (int64_t r = 0; r < g; r++) {
          int so = (int)(dev[gi * g + s] / L->cnt), dn = (int)(dev[gi * g + r] / L->cnt);
          if (so == dn) continue;
          if (so == me) sc[dn] += (int)cb, ns++;
          if (dn == me) rc[so] += (int)cb, nr++;
        }
    if ((int64_t)cb * (ns > nr ? ns : nr) > INT32_MAX) {
      st = ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dist: an all_to_all of more than 2 GiB per rank");
      break;
    }
    for (int q = 0; q < p; q++) sd[q] = q ? sd[q - 1] + sc[q - 1] : 0, rd[q] = q ? rd[q - 1] + rc[q - 1] : 0;
    char *sb = malloc((size_t)ns * cb + 1), *rb = malloc((size_t)nr * cb + 1);
    if (!sb || !rb) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    for (int q = 0, off = 0; q < p && !st; q++) /* by destination rank, pairs in order */
      for (int64_t gi = 0; gi < ng && !st; gi++)
        for (int64_t s = 0; s < g && !st; s++)
          for (int64_t r = 0; r < g; r++) {
            int64_t ds = dev[gi * g + s], dr = dev[gi * g + r];
            if (ds / L->cnt != me || dr / L->cnt != q || q == me) continue;
            const ft_array *a = x[(size_t)ds * nin + (size_t)k];
            if (a->nbytes != mine->nbytes) {
              st = ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map: operands of one collective differ in size");
              break;
            }
            blocks(av, sa, g, r, a->data, sb + off, false);
            off += (int)cb;
          }
    ft_dist_tag t;
    tag_of(L, &t, (int32_t)e->prim, L->eqn, (int64_t)mine->nbytes);
    if (!st) st = ft_dist_alltoallv(ctx, L->dist, &t, sb, sc, sd, rb, rc, rd);
    for (int q = 0, off = 0; q < p && !st; q++)
      for (int64_t gi = 0; gi < ng && !st; gi++)
        for (int64_t s = 0; s < g && !st; s++)
          for (int64_t r = 0; r < g; r++) {
            int64_t ds = dev[gi * g + s], dr = dev[gi * g + r];
            if (dr / L->cnt != me || ds / L->cnt != q || q == me) continue;
            size_t at = (size_t)ds * nin + (size_t)k;
            if (!x[at]) {
              if (!(x[at] = ft_array_alloc(ctx, av))) {
                st = ft_ctx_status(ctx);
                break;
              }
              fresh[at] = true;
            }
            blocks(av, sa, g, r, x[at]->data, rb + off, true);
            off += (int)cb;
          }
    free(sb), free(rb);
  }
  free(cnt4), free(dev);
  return st ? st : run_collective(L, e, x);
}

/* Collective e at every index: x[r * max(n_in, 1) + k] given for the local
 * devices (fresh[...] marks arrays this call owns; remote operands arrive
 * as fresh arrays). */
static ft_status collective_eqn(lockstep *L, const ft_eqn *e, ft_array **x, bool *fresh) {
  if (native_psum(L, e)) return psum_native(L, e, x);
  /* Over MPI every device's operands (a group's members may sit on any
   * rank); axis_index and pvary need no other device's value. */
  size_t nin = (size_t)(e->n_in ? e->n_in : 1);
  ft_status st = FT_OK;
  bool remote = L->dist && L->cnt < L->n && e->prim != FT_P_AXIS_INDEX && e->prim != FT_P_PVARY;
  if (remote && e->prim == FT_P_PPERMUTE) return fill_ppermute(L, e, x, fresh);
  if (remote && e->prim == FT_P_ALL_TO_ALL) return fill_all_to_all(L, e, x, fresh);
  for (int k = 0; remote && k < e->n_in && !st; k++)
    st = fill_remote(L, (int32_t)e->prim, L->eqn, x + k, nin, fresh + k);
  return st ? st : run_collective(L, e, x);
}

/* Equation e of a body at every index. */
static ft_status step(lockstep *L, const ft_eqn *e) {
  int64_t n = L->n;
  size_t nin = (size_t)(e->n_in ? e->n_in : 1);
  ft_array **x = calloc((size_t)n * nin, sizeof *x);
  bool *fresh = calloc((size_t)n * nin, 1);
  ft_array **o = calloc((size_t)(e->n_out + 1), sizeof *o);
  ft_status st = FT_OK;
  if (!x || !fresh || !o) st = ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t r = L->lo; r < L->lo + L->cnt && !st; r++)
    for (int k = 0; k < e->n_in && !st; k++) {
      size_t q = (size_t)r * nin + (size_t)k;
      if (!(x[q] = input(L, r, e->in[k], &fresh[q]))) st = ft_ctx_status(L->ctx);
    }
  if (!st && ft_prim_is_collective(e->prim)) {
    st = collective_eqn(L, e, x, fresh);
  } else if (!st && e->prim != FT_P_SHARD_MAP && ft_prim_get(e->prim)->family == FT_FAM_CONTROL &&
             has_collective(&(ft_jaxpr){.n_eqn = 1, .eqns = (ft_eqn *)e})) {
    st = ls_control(L, e, x);
  } else {
    for (int64_t r = L->lo; r < L->lo + L->cnt && !st; r++) {
      st = ft_interp_eqn(L->ctx, e, x + (size_t)r * nin, o);
      for (int k = 0; k < e->n_out && !st; k++) bind(L, r, e->out[k], o[k]), o[k] = NULL;
    }
  }
  for (size_t q = 0; x && fresh && q < (size_t)n * nin; q++)
    if (fresh[q]) ft_array_free(x[q]);
  free(x);
  free(fresh);
  free(o);
  return st;
}

/* Copies the block of global array g at offsets off (per dimension) with
 * the local shape of l, to l (or, to_global, from l into g). */
static void copy_block(const ft_aval *g, const ft_aval *l, const int64_t *off, char *gp, char *lp, bool to_global) {
  size_t es = ft_dtype_size(g->dtype);
  int rank = g->rank;
  if (rank == 0) {
    memcpy(to_global ? gp : lp, to_global ? lp : gp, es);
    return;
  }
  int64_t count = 1, gs[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++)
    if (!l->dims[d]) return;
  for (int d = 0; d < rank - 1; d++) count *= l->dims[d];
  gs[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; d--) gs[d] = gs[d + 1] * g->dims[d + 1];
  size_t run = (size_t)l->dims[rank - 1] * es;
  for (int64_t c = 0; c < count; c++) {
    int64_t go = off[rank - 1];
    for (int d = 0; d < rank - 1; d++) go += (idx[d] + off[d]) * gs[d];
    char *a = gp + (size_t)go * es, *b = lp + (size_t)c * run;
    memcpy(to_global ? a : b, to_global ? b : a, run);
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < l->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* The offsets of device r's block under a spec (dims, nd) for the local
 * aval l; *dup set when r repeats a block of a device with all
 * coordinates 0 on the axes the spec leaves unmentioned (a replica). */
static void block_of(const lockstep *L, int64_t r, const ft_spmd_dim *dims, int nd, const ft_aval *l,
                     int64_t *off, bool *dup) {
  bool used[FT_SPMD_MAX_AXES] = {0};
  for (int d = 0; d < l->rank; d++) {
    int64_t blk = 0;
    for (int q = 0; d < nd && q < dims[d].n; q++) {
      int m = axis_of(L, dims[d].names[q]);
      blk = blk * L->mesh[m].size + coord(L, r, m);
      used[m] = true;
    }
    off[d] = blk * l->dims[d];
  }
  *dup = false;
  for (int m = 0; m < L->nm; m++) *dup = *dup || (!used[m] && coord(L, r, m) != 0);
}

/* Over MPI, output k under a spec that names no mesh axis (the same value
 * on every device): this rank's devices agree (checked here), then every
 * rank's, by the XXH3-128 of the bytes plus each rank's own verdict, so
 * every rank takes part in the exchange and fails alike; g gets the value. */
static ft_status replicated_dist(lockstep *L, int k, ft_array *const *vals, ft_array *g) {
  int64_t bad = -1;
  for (int64_t r = L->lo + 1; r < L->lo + L->cnt && bad < 0; r++)
    if (g->nbytes && memcmp(vals[r]->data, vals[L->lo]->data, g->nbytes)) bad = r;
  int p = ft_dist_size(L->ctx);
  uint8_t mine[17], *all = malloc(sizeof mine * (size_t)p);
  if (!all) return ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
  XXH128_canonical_t h;
  XXH128_canonicalFromHash(&h, XXH3_128bits(vals[L->lo]->data, vals[L->lo]->nbytes));
  memcpy(mine, &h, 16);
  mine[16] = bad >= 0;
  ft_dist_tag t;
  tag_of(L, &t, FT_DIST_LEAVE, k, (int64_t)sizeof mine);
  ft_status st = ft_dist_exchange(L->ctx, L->dist, &t, mine, all);
  for (int q = 0; !st && q < p; q++) {
    if (!all[q * sizeof mine + 16] && !memcmp(all + q * sizeof mine, all, 16)) continue;
    if (bad >= 0)
      st = ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d has out_specs P() (the same on every "
                        "index) but index %lld holds a different value than index %lld", k, (long long)bad,
                        (long long)L->lo);
    else
      st = ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d has out_specs P() (the same on every "
                        "index) but rank %d's indices hold a different value than rank 0's (XXH3-128 of the "
                        "bytes, or rank %d's own check)", k, q, q);
  }
  free(all);
  if (!st && g->nbytes) memcpy(g->data, vals[L->lo]->data, g->nbytes);
  return st;
}

/* The global value of output k from the per-index values: each index's
 * block where its spec puts it; indices that differ only on axes the spec
 * leaves unmentioned must hold the same value, checked bit for bit. Over
 * MPI the other ranks' values arrive first (or, for a spec that names no
 * axis, only their hashes). */
static ft_array *assemble(lockstep *L, const ft_eqn *e, const ft_spmd_dim *dims, int nd, int k,
                          const ft_jaxpr *j) {
  const ft_var *v = j->outvars[k];
  ft_array **vals = calloc((size_t)L->n, sizeof *vals);
  bool *fresh = calloc((size_t)L->n, 1), named = false;
  ft_array *g = NULL, *tmp = NULL;
  if (!vals || !fresh) {
    ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (int d = 0; d < nd; d++) named = named || dims[d].n > 0;
  for (int64_t r = L->lo; r < L->lo + L->cnt; r++)
    if (!(vals[r] = input(L, r, v, &fresh[r]))) goto out;
  if (!(g = ft_array_alloc(L->ctx, &e->out[k]->aval))) goto out;
  if (L->dist && !named) {
    if (replicated_dist(L, k, vals, g)) ft_array_free(g), g = NULL;
    goto out;
  }
  if (L->dist && L->cnt < L->n && fill_remote(L, FT_DIST_LEAVE, k, vals, 1, fresh)) {
    ft_array_free(g), g = NULL;
    goto out;
  }
  if (!(tmp = ft_array_alloc(L->ctx, &v->aval))) {
    ft_array_free(g), g = NULL;
    goto out;
  }
  for (int64_t r = 0; g && r < L->n; r++) {
    bool dup;
    int64_t off[FT_MAX_RANK];
    ft_array *a = vals[r];
    block_of(L, r, dims, nd, &a->aval, off, &dup);
    if (!dup) {
      copy_block(&g->aval, &a->aval, off, g->data, a->data, true);
    } else {
      copy_block(&g->aval, &a->aval, off, g->data, tmp->data, false);
      if (tmp->nbytes && memcmp(tmp->data, a->data, tmp->nbytes)) {
        ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d's out_specs leave a mesh axis unmentioned "
                     "(the same value along it) but index %lld holds a different value than its replica", k,
                     (long long)r);
        ft_array_free(g), g = NULL;
      }
    }
  }
out:
  for (int64_t r = 0; vals && fresh && r < L->n; r++)
    if (fresh[r]) ft_array_free(vals[r]);
  free(vals);
  free(fresh);
  ft_array_free(tmp);
  return g;
}

static ft_status read_specs(const lockstep *L, const ft_pval *specs, int i, ft_spmd_dim *dims, int *nd) {
  *nd = specs && specs->tag == FT_PV_TUPLE && i < specs->n ? ft_spmd_spec(&specs->u.items[i], dims, FT_MAX_RANK) : -1;
  if (*nd < 0) return ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: spec %d is malformed", i);
  for (int d = 0; d < *nd; d++)
    for (int q = 0; q < dims[d].n; q++)
      if (axis_of(L, dims[d].names[q]) < 0)
        return ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: spec %d names '%s', not an axis of the mesh",
                            i, dims[d].names[q]);
  return FT_OK;
}

/* The body on every local device: the interpreter's lockstep (fn NULL), or
 * a compiled body (fn: ft_spmd_run_compiled). */
static ft_status run_body(lockstep *L, const ft_jaxpr *j, ft_spmd_body_fn fn, void *arg) {
  ft_ctx *ctx = L->ctx;
  ft_status st = FT_OK;
  if (!fn) {
    for (int i = 0; i < j->n_eqn && !st; i++) {
      L->eqn = i;
      st = step(L, &j->eqns[i]);
      if (st) ft_error_prefix(ctx, "shard_map body: equation %d (%s)", i, ft_prim_get(j->eqns[i].prim)->name);
    }
    return st;
  }
  size_t ni = (size_t)j->n_in, no = (size_t)j->n_out, cnt = (size_t)L->cnt;
  ft_array **bin = calloc(cnt * ni + 1, sizeof *bin), **bout = calloc(cnt * no + 1, sizeof *bout);
  if (!bin || !bout) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (size_t d = 0; d < cnt && !st; d++) {
    for (size_t i = 0; i < ni; i++) bin[d * ni + i] = *slot(L, L->lo + (int64_t)d, j->invars[i]);
    for (size_t k = 0; k < no && !st; k++)
      if (!(bout[d * no + k] = ft_array_alloc(ctx, &j->outvars[k]->aval))) st = ft_ctx_status(ctx);
  }
  if (!st) st = fn(arg, ctx, L, L->lo, L->cnt, bin, bout);
  for (size_t d = 0; bout && d < cnt; d++)
    for (size_t k = 0; k < no; k++) {
      ft_array *a = bout[d * no + k];
      const ft_var *v = j->outvars[k];
      if (!st && v->kind == FT_VAR) bind(L, L->lo + (int64_t)d, v, a); /* an input's slot: its copy */
      else ft_array_free(a);
    }
  free(bin);
  free(bout);
  return st;
}

static ft_status shard_map(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out, ft_spmd_body_fn fn,
                           void *arg) {
  lockstep L = {.ctx = ctx, .dist = ft_dist_get(ctx)};
  L.nm = ft_spmd_mesh(ft_eqn_param(e, "mesh"), L.mesh, FT_SPMD_MAX_AXES);
  const ft_jaxpr *j = ft_eqn_param(e, "jaxpr")->u.jaxpr;
  const ft_pval *is = ft_eqn_param(e, "in_specs"), *os = ft_eqn_param(e, "out_specs");
  for (int k = 0; k < e->n_out; k++) out[k] = NULL;
  if (L.nm < 1) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "shard_map: unreadable mesh");
  L.n = 1;
  for (int m = L.nm - 1; m >= 0; m--) L.stride[m] = L.n, L.n *= L.mesh[m].size;
  L.lo = 0, L.cnt = L.n;
  if (L.dist) {
    int p = ft_dist_size(ctx), q = ft_dist_rank(ctx);
    if (L.n % p)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "shard_map: the mesh's %lld devices (the product of its axis "
                          "sizes) do not split over %d MPI ranks (the rank count must divide them)",
                          (long long)L.n, p);
    L.cnt = L.n / p;
    L.lo = q * L.cnt;
    ft_jaxpr_hash(j, L.hash);
    ft_dist_tag t;
    tag_of(&L, &t, FT_DIST_ENTER, 0, L.n);
    ft_status cst = ft_dist_exchange(ctx, L.dist, &t, NULL, NULL);
    if (cst) return cst;
  }
  L.n_ids = ft_arena_num_var_ids(j->arena);
  L.val = calloc((size_t)L.n * L.n_ids + 1, sizeof *L.val);
  if (!L.val) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  ft_status st = FT_OK;
  ft_spmd_dim dims[FT_MAX_RANK];
  int nd;
  for (int i = 0; i < e->n_in && !st; i++) {
    if ((st = read_specs(&L, is, i, dims, &nd))) break;
    for (int64_t r = L.lo; r < L.lo + L.cnt && !st; r++) {
      ft_array *a = ft_array_alloc(ctx, &j->invars[i]->aval);
      if (!a) {
        st = ft_ctx_status(ctx);
        break;
      }
      int64_t off[FT_MAX_RANK];
      bool dup;
      block_of(&L, r, dims, nd, &a->aval, off, &dup);
      copy_block(&in[i]->aval, &a->aval, off, in[i]->data, a->data, false);
      bind(&L, r, j->invars[i], a);
    }
  }
  if (!st) st = run_body(&L, j, fn, arg);
  for (int k = 0; k < e->n_out && !st; k++) {
    if ((st = read_specs(&L, os, k, dims, &nd))) break;
    if (!(out[k] = assemble(&L, e, dims, nd, k, j))) st = ft_ctx_status(ctx);
  }
  if (st)
    for (int k = 0; k < e->n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  for (size_t q = 0; q < (size_t)L.n * L.n_ids; q++) ft_array_free(L.val[q]);
  free(L.val);
  return st;
}

/* Over MPI, the shard_maps this thread is inside (a nested one would take
 * the lock again and split the devices over the ranks a second time). */
static _Thread_local int dist_depth;

void ft_spmd_device_enter(void) { dist_depth++; }
void ft_spmd_device_leave(void) { dist_depth--; }

static ft_status shard_map_dist(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out,
                                ft_spmd_body_fn fn, void *arg) {
  ft_dist *d = ft_dist_get(ctx);
  if (!d) return shard_map(ctx, e, in, out, fn, arg);
  if (dist_depth) {
    for (int k = 0; k < e->n_out; k++) out[k] = NULL;
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "shard_map inside a shard_map body does not run over MPI (the "
                        "simulated axis runs it in one process)");
  }
  ft_dist_lock(d);
  dist_depth++;
  ft_status st = shard_map(ctx, e, in, out, fn, arg);
  dist_depth--;
  ft_dist_unlock(d);
  return st;
}

ft_status ft_interp_shard_map(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return shard_map_dist(ctx, e, in, out, NULL, NULL);
}

ft_status ft_spmd_run_compiled(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out,
                               ft_spmd_body_fn fn, void *arg) {
  return shard_map_dist(ctx, e, in, out, fn, arg);
}

int64_t ft_spmd_mesh_devices(const ft_spmd_devs *m) { return m->n; }

int64_t ft_spmd_num_devices(const ft_eqn *e) {
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int nm = ft_spmd_mesh(ft_eqn_param(e, "mesh"), mesh, FT_SPMD_MAX_AXES);
  int64_t n = nm < 1 ? 0 : 1;
  for (int m = 0; m < nm; m++) n *= mesh[m].size;
  return n;
}

ft_status ft_spmd_collective(const ft_spmd_devs *m, ft_ctx *ctx, const ft_eqn *e, int32_t eqn, ft_array **x,
                             ft_array *const *o) {
  lockstep L = *m;
  L.ctx = ctx;
  L.eqn = eqn;
  L.n_ids = 0;
  for (int k = 0; k < e->n_out; k++)
    if (e->out[k]->kind == FT_VAR && e->out[k]->id + 1 > L.n_ids) L.n_ids = e->out[k]->id + 1;
  size_t nin = (size_t)(e->n_in ? e->n_in : 1), N = (size_t)L.n;
  L.val = calloc(N * L.n_ids + 1, sizeof *L.val);
  bool *fresh = calloc(N * nin + 1, 1);
  ft_status st = L.val && fresh ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t r = L.lo; r < L.lo + L.cnt && !st; r++)
    for (int k = 0; k < e->n_in && !st; k++) {
      size_t q = (size_t)r * nin + (size_t)k;
      if (x[q]) continue;
      if (e->in[k]->kind != FT_LIT)
        st = ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map: operand %d of %s is unbound", k,
                          ft_prim_get(e->prim)->name);
      else if (!(x[q] = ft_interp_lit(ctx, e->in[k]))) st = ft_ctx_status(ctx);
      else fresh[q] = true;
    }
  if (!st) st = collective_eqn(&L, e, x, fresh);
  for (int64_t r = L.lo; r < L.lo + L.cnt && !st; r++)
    for (int k = 0; k < e->n_out && !st; k++) {
      ft_array *dst = o[(size_t)(r - L.lo) * (size_t)e->n_out + (size_t)k];
      if (!dst || e->out[k]->kind != FT_VAR) continue;
      const ft_array *a = *slot(&L, r, e->out[k]);
      if (!a || a->nbytes != dst->nbytes)
        st = ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map: %s gave no result %d of its size", 
                          ft_prim_get(e->prim)->name, k);
      else if (a->nbytes) memcpy(dst->data, a->data, a->nbytes);
    }
  for (size_t q = 0; fresh && q < N * nin; q++)
    if (fresh[q]) ft_array_free(x[q]), x[q] = NULL;
  for (size_t q = 0; L.val && q < N * L.n_ids; q++) ft_array_free(L.val[q]);
  free(L.val);
  free(fresh);
  return st;
}

ft_status ft_interp_collective_outside(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  (void)in;
  for (int k = 0; k < e->n_out; k++) out[k] = NULL;
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                      "%s outside a shard_map body: the simulated axis binds mesh axes only there "
                      "(docs/spmd.md)",
                      ft_prim_get(e->prim)->name);
}
