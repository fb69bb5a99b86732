/* src/runtime/interp_spmd.c: shard_map in the reference interpreter over a
 * simulated axis (issue 27, docs/spmd.md). One process evaluates the body
 * once per axis index, in lockstep, equation by equation; a collective
 * gathers the values of every index and combines them in index order
 * (((x0 + x1) + x2) + ... in the operand's dtype, with the interpreter's own
 * add/max/min), so the result is deterministic and equals the one-process
 * reduction over the global batch in that order.
 *
 * This slice simulates meshes of one axis; collectives are evaluated at the
 * top level of a body (inside control flow of a body they are refused).
 *
 * With a communicator on the context (ft_dist_init, dist.c) the same code
 * runs across MPI ranks: rank q evaluates only its block of indices
 * [lo, lo + cnt), and before a collective the operands of the other
 * indices arrive from their ranks (ft_dist_exchange, rank order = index
 * order), so every rank combines the very same values in the very same
 * order as the simulated axis: bit-identical for any rank count. */
#include <string.h>
#include <xxhash.h>

#include "runtime.h"

/* Per-index values of the body's variables. */
typedef struct lockstep {
  ft_ctx *ctx;
  int64_t n;            /* axis size */
  uint32_t n_ids;
  ft_array **val;       /* [index * n_ids + var id], owned */
  int64_t lo, cnt;      /* the indices evaluated here (all of them without MPI) */
  ft_dist *dist;        /* the communicator, or NULL (the simulated axis) */
  uint8_t hash[16];     /* the body's canonical hash (the exchanges' tag) */
  int eqn;              /* the equation being run */
} lockstep;

static bool local(const lockstep *L, int64_t r) { return r >= L->lo && r < L->lo + L->cnt; }

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
  if (v->kind != FT_VAR || !local(L, r)) {
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

/* Over MPI: xs[r] (stride apart in xs) for every index r outside this
 * rank's block, from the ranks that hold them (fresh arrays, fresh[r] set);
 * xs[r] of the local indices are given. what: the tag's prim (or step). */
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
  ft_dist_tag t = {.eqn = eqn, .prim = what, .nbytes = (int64_t)((size_t)L->cnt * nb)};
  memcpy(t.hash, L->hash, sizeof t.hash);
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

/* The opt-out of bitwise identity (ft_dist_options.native_allreduce): a
 * psum of one index per rank by MPI_Allreduce. */
static bool native_psum(const lockstep *L, const ft_eqn *e) {
  if (!L->dist || !ft_dist_native(L->dist) || L->cnt != 1) return false;
  if (e->prim != FT_P_PSUM && e->prim != FT_P_PSUM_INVARIANT) return false;
  for (int k = 0; k < e->n_in; k++)
    if (!ft_dist_allreduce_ok(e->in[k]->aval.dtype)) return false;
  return true;
}

static ft_status psum_native(lockstep *L, const ft_eqn *e, ft_array **x) {
  for (int k = 0; k < e->n_in; k++) {
    ft_array *c = ft_array_clone(L->ctx, x[(size_t)L->lo * (size_t)e->n_in + (size_t)k]);
    if (!c) return ft_ctx_status(L->ctx);
    ft_dist_tag t = {.eqn = L->eqn, .prim = (int32_t)e->prim, .nbytes = (int64_t)c->nbytes};
    memcpy(t.hash, L->hash, sizeof t.hash);
    ft_status st = ft_dist_allreduce(L->ctx, L->dist, &t, FT_P_ADD, c->aval.dtype, c->data, ft_aval_size(&c->aval));
    if (st) {
      ft_array_free(c);
      return st;
    }
    bind(L, L->lo, e->out[k], c);
  }
  return FT_OK;
}

/* One collective equation over all indices. x[r * n_in + k]: operand k at r. */
static ft_status collective(lockstep *L, const ft_eqn *e, ft_array **x) {
  ft_ctx *ctx = L->ctx;
  int64_t n = L->n;
  ft_status st = FT_OK;
  switch (e->prim) {
  case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PMAX: case FT_P_PMIN: case FT_P_PVARY: {
    ft_prim op = e->prim == FT_P_PMAX ? FT_P_MAX : e->prim == FT_P_PMIN ? FT_P_MIN : FT_P_ADD;
    ft_array **xs = malloc(sizeof *xs * (size_t)n);
    if (!xs) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < e->n_in && !st; k++) {
      for (int64_t r = 0; r < n; r++) xs[r] = x[r * e->n_in + k];
      if (e->prim == FT_P_PVARY) {
        for (int64_t r = L->lo; r < L->lo + L->cnt && !st; r++) { /* no other index's value needed */
          ft_array *c = ft_array_clone(ctx, xs[r]);
          if (!c) st = ft_ctx_status(ctx);
          else bind(L, r, e->out[k], c);
        }
        continue;
      }
      ft_array *s = reduce_ordered(ctx, op, n, xs);
      int64_t end = L->lo + L->cnt; /* the indices evaluated here */
      for (int64_t r = L->lo; r < end && s && !st; r++) {
        ft_array *c = r + 1 < end ? ft_array_clone(ctx, s) : s;
        if (!c) st = ft_ctx_status(ctx);
        else bind(L, r, e->out[k], c);
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
      ft_set_i64(a, 0, r);
      bind(L, r, e->out[0], a);
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
        int np;
        ft_pv_get_ints(&perm->u.items[q], pr, 2, &np);
        ft_array *src = x[pr[0] * e->n_in + k];
        if (src->nbytes) memcpy(o[pr[1]]->data, src->data, src->nbytes);
      }
      for (int64_t r = 0; r < n; r++)
        if (st) ft_array_free(o[r]);
        else bind(L, r, e->out[k], o[r]);
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
    for (int64_t r = L->lo; r < L->lo + L->cnt && !st; r++) {
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
      } else { /* block r of every index's operand, in index order */
        int d = param_int(e, "split_axis");
        ft_array *tmp = ft_array_alloc(ctx, &o->aval);
        if (!tmp) {
          ft_array_free(o);
          st = ft_ctx_status(ctx);
          break;
        }
        for (int64_t k = 0; k < n; k++) {
          blocks(&x[k]->aval, d, n, r, x[k]->data, tmp->data, false);
          blocks(&o->aval, d, n, k, o->data, tmp->data, true);
        }
        ft_array_free(tmp);
      }
      bind(L, r, e->out[0], o);
    }
    ft_array_free(sum);
    return st;
  }
  default:
    return ft_set_error(ctx, FT_ERR_INTERNAL, "%s is not a collective", ft_prim_get(e->prim)->name);
  }
}

/* Equation i of the body at every index. */
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
  if (!st && ft_prim_is_collective(e->prim) && native_psum(L, e)) {
    st = psum_native(L, e, x);
  } else if (!st && ft_prim_is_collective(e->prim)) {
    /* axis_index and pvary need no other index's value */
    bool remote = L->dist && e->prim != FT_P_AXIS_INDEX && e->prim != FT_P_PVARY;
    for (int k = 0; remote && k < e->n_in && !st; k++)
      st = fill_remote(L, (int32_t)e->prim, L->eqn, x + k, nin, fresh + k);
    if (!st) st = collective(L, e, x);
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

/* The global value of output k from the per-index values: concatenated
 * along the dimension its spec names, or (P()) the one value every index
 * holds, checked equal bit for bit. */
static ft_array *assemble(lockstep *L, const ft_eqn *e, const ft_spmd_dim *dims, int nd, int k,
                          const ft_jaxpr *j) {
  const ft_var *v = j->outvars[k];
  int dim = -1;
  for (int d = 0; d < nd; d++)
    if (dims[d].n) dim = d;
  ft_array **vals = calloc((size_t)L->n, sizeof *vals);
  bool *fresh = calloc((size_t)L->n, 1);
  ft_array *g = vals && fresh ? ft_array_alloc(L->ctx, &e->out[k]->aval) : NULL;
  if (!g && vals && fresh) goto out;
  if (!g) {
    ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (int64_t r = L->lo; r < L->lo + L->cnt; r++)
    if (!(vals[r] = input(L, r, v, &fresh[r]))) {
      ft_array_free(g), g = NULL;
      goto out;
    }
  if (L->dist && dim < 0) {
    /* P(): this rank's indices agree (checked here), then every rank's
     * (by the XXH3-128 of the bytes plus each rank's own verdict, so
     * every rank takes part in the exchange and fails alike). */
    int64_t bad = -1;
    for (int64_t r = L->lo + 1; r < L->lo + L->cnt && bad < 0; r++)
      if (g->nbytes && memcmp(vals[r]->data, vals[L->lo]->data, g->nbytes)) bad = r;
    uint8_t mine[17], *all = malloc(sizeof mine * (size_t)ft_dist_size(L->ctx));
    XXH128_canonical_t h;
    XXH128_canonicalFromHash(&h, XXH3_128bits(vals[L->lo]->data, vals[L->lo]->nbytes));
    memcpy(mine, &h, 16);
    mine[16] = bad >= 0;
    ft_dist_tag t = {.eqn = k, .prim = FT_DIST_LEAVE, .nbytes = (int64_t)sizeof mine};
    memcpy(t.hash, L->hash, sizeof t.hash);
    if (!all) ft_set_error(L->ctx, FT_ERR_NOMEM, "out of memory"), ft_array_free(g), g = NULL;
    if (g && ft_dist_exchange(L->ctx, L->dist, &t, mine, all)) ft_array_free(g), g = NULL;
    for (int q = 0; g && q < ft_dist_size(L->ctx); q++) {
      if (!all[q * sizeof mine + 16] && !memcmp(all + q * sizeof mine, all, 16)) continue;
      if (bad >= 0)
        ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d has out_specs P() (the same on every "
                     "index) but index %lld holds a different value than index %lld", k, (long long)bad,
                     (long long)L->lo);
      else
        ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d has out_specs P() (the same on every "
                     "index) but rank %d's indices hold a different value than rank 0's (XXH3-128 of the "
                     "bytes, or rank %d's own check)", k, q, q);
      ft_array_free(g), g = NULL;
    }
    free(all);
    if (g && g->nbytes) memcpy(g->data, vals[L->lo]->data, g->nbytes);
    goto out;
  }
  if (L->dist && fill_remote(L, FT_DIST_LEAVE, k, vals, 1, fresh)) {
    ft_array_free(g), g = NULL;
    goto out;
  }
  for (int64_t r = 0; g && r < L->n; r++) {
    ft_array *a = vals[r];
    if (dim >= 0) {
      blocks(&g->aval, dim, L->n, r, g->data, a->data, true);
    } else if (r == 0) {
      if (g->nbytes) memcpy(g->data, a->data, g->nbytes);
    } else if (g->nbytes && memcmp(g->data, a->data, g->nbytes)) {
      ft_set_error(L->ctx, FT_ERR_INVALID_ARG, "shard_map: output %d has out_specs P() (the same on every "
                   "index) but index %lld holds a different value than index 0", k, (long long)r);
      ft_array_free(g), g = NULL;
    }
  }
out:
  for (int64_t r = 0; vals && fresh && r < L->n; r++)
    if (fresh[r]) ft_array_free(vals[r]);
  free(vals);
  free(fresh);
  return g;
}

/* The axis of a one-axis mesh's spec dimension list, or an error for specs
 * naming more than one axis on a dimension. */
static ft_status read_specs(ft_ctx *ctx, const ft_pval *specs, int i, ft_spmd_dim *dims, int *nd) {
  *nd = ft_spmd_spec(&specs->u.items[i], dims, FT_MAX_RANK);
  if (*nd < 0) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "shard_map: spec %d is malformed", i);
  return FT_OK;
}

static ft_status shard_map(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int nm = ft_spmd_mesh(ft_eqn_param(e, "mesh"), mesh, FT_SPMD_MAX_AXES);
  const ft_jaxpr *j = ft_eqn_param(e, "jaxpr")->u.jaxpr;
  const ft_pval *is = ft_eqn_param(e, "in_specs"), *os = ft_eqn_param(e, "out_specs");
  if (nm != 1)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "shard_map: the simulated axis runs meshes of one axis; this mesh "
                        "has %d (docs/spmd.md)", nm);
  lockstep L = {.ctx = ctx, .n = mesh[0].size, .n_ids = ft_arena_num_var_ids(j->arena), .lo = 0,
                .cnt = mesh[0].size, .dist = ft_dist_get(ctx)};
  if (L.dist) {
    int p = ft_dist_size(ctx), q = ft_dist_rank(ctx);
    if (L.n % p)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "shard_map: mesh axis '%s' has size %lld, which does not split "
                          "over %d MPI ranks (the rank count must divide the axis size)", mesh[0].name,
                          (long long)L.n, p);
    L.cnt = L.n / p;
    L.lo = q * L.cnt;
    ft_jaxpr_hash(j, L.hash);
    ft_dist_tag t = {.prim = FT_DIST_ENTER, .nbytes = L.n};
    memcpy(t.hash, L.hash, sizeof t.hash);
    ft_status cst = ft_dist_exchange(ctx, L.dist, &t, NULL, NULL);
    if (cst) return cst;
  }
  L.val = calloc((size_t)L.n * L.n_ids + 1, sizeof *L.val);
  if (!L.val) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  ft_status st = FT_OK;
  ft_spmd_dim dims[FT_MAX_RANK];
  int nd;
  for (int i = 0; i < e->n_in && !st; i++) {
    if ((st = read_specs(ctx, is, i, dims, &nd))) break;
    int dim = -1;
    for (int d = 0; d < nd; d++)
      if (dims[d].n) dim = d;
    for (int64_t r = L.lo; r < L.lo + L.cnt && !st; r++) {
      ft_array *a = ft_array_alloc(ctx, &j->invars[i]->aval);
      if (!a) {
        st = ft_ctx_status(ctx);
        break;
      }
      if (dim >= 0) blocks(&in[i]->aval, dim, L.n, r, in[i]->data, a->data, false);
      else if (a->nbytes) memcpy(a->data, in[i]->data, a->nbytes);
      bind(&L, r, j->invars[i], a);
    }
  }
  for (int i = 0; i < j->n_eqn && !st; i++) {
    L.eqn = i;
    st = step(&L, &j->eqns[i]);
    if (st) ft_error_prefix(ctx, "shard_map body: equation %d (%s)", i, ft_prim_get(j->eqns[i].prim)->name);
  }
  for (int k = 0; k < e->n_out; k++) out[k] = NULL;
  for (int k = 0; k < e->n_out && !st; k++) {
    if ((st = read_specs(ctx, os, k, dims, &nd))) break;
    if (!(out[k] = assemble(&L, e, dims, nd, k, j))) st = ft_ctx_status(ctx);
  }
  if (st)
    for (int k = 0; k < e->n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  for (size_t q = 0; q < (size_t)L.n * L.n_ids; q++) ft_array_free(L.val[q]);
  free(L.val);
  return st;
}

ft_status ft_interp_shard_map(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_dist *d = ft_dist_get(ctx);
  if (d) ft_dist_lock(d);
  ft_status st = shard_map(ctx, e, in, out);
  if (d) ft_dist_unlock(d);
  return st;
}

ft_status ft_interp_collective_outside(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  (void)in;
  for (int k = 0; k < e->n_out; k++) out[k] = NULL;
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                      "%s outside the top level of a shard_map body: the simulated axis binds mesh axes only "
                      "there (not at top level, not inside control flow of a body; docs/spmd.md)",
                      ft_prim_get(e->prim)->name);
}
