/* src/transforms/vmap.c: the vmap driver — the public ft_vmap (in_axes,
 * out_axes, axis_size, negative axes, the size checks), the traversal that
 * gives every value a batch dimension or none, batching of sub-jaxprs for
 * control flow, and the axis helpers the rules share. */
#include <string.h>

#include "ir/json.h"
#include "vmap.h"

/* ----------------------------------------------------------- the state */

bool bt_state_init(bt_state *s, ft_ctx *ctx, int64_t size, uint32_t cap) {
  s->ctx = ctx;
  s->size = size;
  s->cap = cap ? cap : 16;
  s->val = calloc(s->cap, sizeof *s->val);
  s->bd = malloc(s->cap);
  if (!s->val || !s->bd) {
    bt_state_free(s);
    return false;
  }
  return true;
}

void bt_state_free(bt_state *s) {
  free(s->val);
  free(s->bd);
  s->val = NULL;
  s->bd = NULL;
  s->cap = 0;
}

static bool bt_set(bt_state *s, const ft_var *k, ft_var *v, int bd) {
  if (k->id >= s->cap) {
    uint32_t cap = s->cap;
    while (cap <= k->id) cap *= 2;
    ft_var **nv = realloc(s->val, sizeof *nv * cap);
    if (nv) s->val = nv;
    int8_t *nb = realloc(s->bd, cap);
    if (nb) s->bd = nb;
    if (!nv || !nb) return false;
    memset(s->val + s->cap, 0, sizeof *nv * (cap - s->cap));
    s->cap = cap;
  }
  s->val[k->id] = v;
  s->bd[k->id] = (int8_t)bd;
  return true;
}

/* ---------------------------------------------------------- axis helpers */

ft_pval bt_ints(tx *t, int n, const int64_t *v, bool list) {
  ft_pval r = ft_pv_ints(t->a, n, v);
  r.list = list;
  if (n && !r.u.items) tx_nomem(t);
  return r;
}

ft_var *bt_moveaxis(tx *t, ft_var *x, int from, int to) {
  if (!x) return NULL;
  if (from == to) return x;
  int r = x->aval.rank;
  int64_t perm[FT_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r; i++) {
    if (k == to) perm[k++] = from;
    if (i != from) perm[k++] = i;
  }
  if (k == to) perm[k++] = from;
  return tx_transpose(t, x, r, perm);
}

ft_var *bt_insert_axis(tx *t, ft_var *x, int at, int64_t size) {
  if (!x) return NULL;
  int r = x->aval.rank;
  if (r + 1 > FT_MAX_RANK)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "vmap: batching would exceed rank %d", FT_MAX_RANK);
  int64_t dims[FT_MAX_RANK], bd[FT_MAX_RANK];
  for (int i = 0, k = 0; i <= r; i++) {
    if (i == at) dims[i] = size;
    else bd[k] = i, dims[i] = x->aval.dims[k], k++;
  }
  return tx_bcast(t, x, r + 1, dims, bd);
}

ft_var *bt_match(tx *t, ft_var *x, int bd, int to, int64_t size) {
  if (bd < 0) return bt_insert_axis(t, x, to, size);
  return bt_moveaxis(t, x, bd, to);
}

/* --------------------------------------------------------- the traversal */

/* The target atom (and batch dim) of a source atom. */
static ft_var *get_atom(bt_state *s, tx *t, const ft_var *v, int *bd) {
  *bd = BT_NOT_MAPPED;
  if (v->kind == FT_LIT) {
    ft_var *r = lit_clone(t->a, v);
    return r ? r : tx_nomem(t);
  }
  if (v->id >= s->cap || !s->val[v->id])
    return tx_fail(t, FT_ERR_INTERNAL, "vmap: variable %u is used before it is defined", v->id);
  *bd = s->bd[v->id];
  return s->val[v->id];
}

/* An equation without mapped inputs runs as it is: a copy with fresh outputs. */
static bool copy_eqn(tx *t, const ft_eqn *e, ft_var **x, ft_var **y) {
  ft_pval *ps = params_clone(t->a, e->prim, e->params);
  if (!ps) return tx_nomem(t), false;
  for (int k = 0; k < e->n_out; k++) {
    const ft_var *o = e->out[k];
    y[k] = o->kind == FT_DROP ? ft_drop_new(t->a, &o->aval) : ft_var_new(t->a, &o->aval);
    if (!y[k] || !var_copy_vma(t->a, y[k], o)) return tx_nomem(t), false;
  }
  return tx_push(t, e->prim, ps, e->n_in, x, e->n_out, y);
}

/* A rule's output must be the source aval with the batch axis inserted. */
static bool check_out(tx *t, int64_t size, const ft_eqn *e, int k, const ft_var *y, int bd) {
  const ft_aval *src = &e->out[k]->aval;
  ft_aval want = *src;
  if (bd >= 0) {
    if (bd > src->rank || src->rank + 1 > FT_MAX_RANK) goto bad;
    for (int i = src->rank; i > bd; i--) want.dims[i] = want.dims[i - 1];
    want.dims[bd] = size;
    want.rank++;
  }
  if (y && ft_aval_eq(&y->aval, &want)) return true;
bad:;
  char a[96], b[96];
  tx_fail(t, FT_ERR_INTERNAL, "vmap: the %s rule made output %d %s (batch dim %d), expected %s",
          ft_prim_get(e->prim)->name, k, y ? ft_aval_str(&y->aval, a, sizeof a) : "NULL", bd,
          ft_aval_str(&want, b, sizeof b));
  return false;
}

static bool batch_eqn(bt_state *s, tx *t, const ft_eqn *e, int idx) {
  int n = e->n_in + e->n_out;
  ft_var **vars = ft_arena_alloc(t->a, sizeof(ft_var *) * (size_t)(n + 1));
  int *bds = ft_arena_alloc(t->a, sizeof(int) * (size_t)(n + 1));
  if (!vars || !bds) return tx_nomem(t), false;
  bt_call c = {.s = s, .t = t, .e = e, .n_in = e->n_in, .n_out = e->n_out, .x = vars,
               .xb = bds, .y = vars + e->n_in, .yb = bds + e->n_in};
  bool mapped = false;
  for (int i = 0; i < e->n_in; i++) {
    if (!(c.x[i] = get_atom(s, t, e->in[i], &c.xb[i]))) return false;
    mapped = mapped || c.xb[i] >= 0;
  }
  bool ok;
  if (!mapped) {
    ok = copy_eqn(t, e, c.x, c.y);
    for (int k = 0; k < e->n_out; k++) c.yb[k] = BT_NOT_MAPPED;
  } else {
    for (int k = 0; k < e->n_out; k++) c.y[k] = NULL, c.yb[k] = BT_NOT_MAPPED;
    if (ft_prim_get(e->prim)->family == FT_FAM_CONTROL || e->prim == FT_P_SHARD_MAP) {
      ok = bt_control(&c);
    } else {
      c.params = params_clone(t->a, e->prim, e->params);
      if (!c.params) return tx_nomem(t), false;
      ok = bt_rule(&c);
    }
    for (int k = 0; ok && k < e->n_out; k++) ok = check_out(t, s->size, e, k, c.y[k], c.yb[k]);
  }
  if (!ok || t->failed) {
    if (!t->failed) tx_fail(t, FT_ERR_INTERNAL, "vmap: rule failed without a message");
    ft_error_prefix(s->ctx, "equation %d (%s)", idx, ft_prim_get(e->prim)->name);
    return false;
  }
  for (int k = 0; k < e->n_out; k++)
    if (e->out[k]->kind == FT_VAR && !bt_set(s, e->out[k], c.y[k], c.yb[k]))
      return tx_nomem(t), false;
  return true;
}

bool bt_into(bt_state *s, tx *t, const ft_jaxpr *src, ft_var *const *in, const int *in_bd,
             ft_var **out, int *out_bd) {
  for (int i = 0; i < src->n_in; i++)
    if (!bt_set(s, src->invars[i], in[i], in_bd[i])) return tx_nomem(t), false;
  for (int k = 0; k < src->n_eqn; k++)
    if (!batch_eqn(s, t, &src->eqns[k], k)) return false;
  for (int k = 0; k < src->n_out; k++)
    if (!(out[k] = get_atom(s, t, src->outvars[k], &out_bd[k]))) return false;
  return true;
}

/* Fresh constvars for dst, mapped (unbatched) from src's, values copied. */
static bool map_consts(bt_state *s, ft_jaxpr *dst, const ft_jaxpr *src, ft_var ***cv) {
  *cv = ft_arena_alloc(dst->arena, sizeof(ft_var *) * (size_t)(src->n_const + 1));
  if (!*cv) return false;
  for (int i = 0; i < src->n_const; i++)
    if (!((*cv)[i] = ft_var_new(dst->arena, &src->constvars[i]->aval)) ||
        !bt_set(s, src->constvars[i], (*cv)[i], BT_NOT_MAPPED))
      return false;
  return true;
}

static ft_aval batched_aval(const ft_aval *a, int at, int64_t size) {
  ft_aval r = *a;
  for (int i = a->rank; i > at; i--) r.dims[i] = r.dims[i - 1];
  r.dims[at] = size;
  r.rank++;
  return r;
}

ft_jaxpr *bt_batch_jaxpr(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *src, int64_t size,
                         const bool *in_b, const bool *force_out, bool *out_b) {
  ft_jaxpr *j = ft_jaxpr_new(a);
  bt_state s;
  if (!j) return ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory"), NULL;
  if (!bt_state_init(&s, ctx, size, ft_arena_num_var_ids(src->arena) + 1))
    return ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory"), NULL;
  tx t;
  tx_init(&t, ctx, j, "vmap");
  size_t n = (size_t)(src->n_in + 2 * src->n_out + 1);
  ft_var **in = ft_arena_alloc(a, sizeof(ft_var *) * n), **cv = NULL;
  int *bd = ft_arena_alloc(a, sizeof(int) * n);
  bool ok = in && bd && map_consts(&s, j, src, &cv) && jaxpr_copy_consts(j, src);
  if (!ok) tx_nomem(&t);
  for (int i = 0; ok && i < src->n_in; i++) {
    ft_aval av = src->invars[i]->aval;
    if (in_b[i] && av.rank + 1 > FT_MAX_RANK) {
      ok = false;
      tx_fail(&t, FT_ERR_UNSUPPORTED, "vmap: batching would exceed rank %d", FT_MAX_RANK);
      break;
    }
    if (in_b[i]) av = batched_aval(&av, 0, size);
    bd[i] = in_b[i] ? 0 : BT_NOT_MAPPED;
    if (!(in[i] = ft_var_new(a, &av)) || !var_copy_vma(a, in[i], src->invars[i])) ok = (tx_nomem(&t), false);
  }
  ft_var **out = in ? in + src->n_in : NULL;
  int *obd = bd ? bd + src->n_in : NULL;
  ok = ok && bt_into(&s, &t, src, in, bd, out, obd);
  for (int k = 0; ok && k < src->n_out; k++) {
    bool want = obd[k] >= 0 || (force_out && force_out[k]);
    if (want) out[k] = bt_match(&t, out[k], obd[k], 0, size);
    if (out_b) out_b[k] = want;
    ok = !t.failed;
  }
  bt_state_free(&s);
  if (!ok || !ft_jaxpr_set_vars(j, src->n_const, cv, src->n_in, in, src->n_out, out)) {
    if (!t.failed) ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    return NULL;
  }
  return j;
}

/* ----------------------------------------------------------- the public API */

static const char *axis_str(int ax, char *buf, size_t n) {
  if (ax == FT_VMAP_NONE) return "none";
  snprintf(buf, n, "%d", ax);
  return buf;
}

/* Checks in_axes against j's (per-example) inputs: axis a of a rank-r
 * input names an axis of the batched input, rank r + 1. */
static ft_status resolve_in(ft_ctx *ctx, const ft_jaxpr *j, const int *in_axes, int *bd) {
  for (int i = 0; i < j->n_in; i++) {
    int ax = in_axes ? in_axes[i] : 0;
    const ft_aval *av = &j->invars[i]->aval;
    int r1 = av->rank + 1;
    char s1[96], s2[16];
    if (ax == FT_VMAP_NONE) {
      bd[i] = BT_NOT_MAPPED;
      continue;
    }
    int a = ax < 0 ? ax + r1 : ax;
    if (a < 0 || a >= r1)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                          "vmap: in_axes[%d] = %s is out of range for input %d of type %s "
                          "(batched rank %d: axes %d..%d)",
                          i, axis_str(ax, s2, sizeof s2), i, ft_aval_str(av, s1, sizeof s1), r1,
                          -r1, r1 - 1);
    if (r1 > FT_MAX_RANK)
      return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                          "vmap: input %d of type %s would exceed rank %d when batched", i,
                          ft_aval_str(av, s1, sizeof s1), FT_MAX_RANK);
    bd[i] = a;
  }
  return FT_OK;
}

static void json_axes(ft_buf *b, const char *key, int n, const int *axes) {
  ft_json_key(b, key);
  if (axes) ft_json_ints(b, n, axes, FT_VMAP_NONE);
  else {
    ft_buf_puts(b, "[");
    for (int i = 0; i < n; i++) ft_buf_puts(b, i ? ",0" : "0");
    ft_buf_puts(b, "]");
  }
}

/* The pipeline hook (verifier, ledger record with the params as JSON). */
static bool after_vmap(ft_ctx *ctx, const ft_jaxpr *j, const ft_jaxpr *r, const int *in_axes,
                       const int *out_axes, int64_t size) {
  ft_buf b = {0};
  ft_buf_puts(&b, "{");
  json_axes(&b, "in_axes", j->n_in, in_axes);
  ft_buf_puts(&b, ",");
  json_axes(&b, "out_axes", j->n_out, out_axes);
  ft_buf_printf(&b, ",\"axis_size\":%lld}", (long long)size);
  if (b.failed) {
    free(b.p);
    ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    return false;
  }
  bool ok = ft__after_transform(ctx, "vmap", b.p, j, r);
  free(b.p);
  return ok;
}

/* The lengths of the axis arrays: one entry per input / output of j; NULL
 * (the default axes) with that count or 0. */
static bool check_lengths(ft_ctx *ctx, const ft_jaxpr *j, int n_in_axes, const int *in_axes,
                          int n_out_axes, const int *out_axes) {
  if (n_in_axes != j->n_in && (in_axes || n_in_axes != 0)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, in_axes
                 ? "vmap: in_axes has %d entries; the jaxpr has %d inputs"
                 : "vmap: in_axes is NULL but n_in_axes is %d (the jaxpr has %d inputs; NULL "
                   "takes that or 0)", n_in_axes, j->n_in);
    return false;
  }
  if (n_out_axes != j->n_out && (out_axes || n_out_axes != 0)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, out_axes
                 ? "vmap: out_axes has %d entries; the jaxpr has %d outputs"
                 : "vmap: out_axes is NULL but n_out_axes is %d (the jaxpr has %d outputs; NULL "
                   "takes that or 0)", n_out_axes, j->n_out);
    return false;
  }
  return true;
}

ft_jaxpr *ft_vmap(ft_ctx *ctx, const ft_jaxpr *j, int n_in_axes, const int *in_axes,
                  int n_out_axes, const int *out_axes, int64_t axis_size) {
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "vmap: jaxpr is NULL"), NULL;
  if (!check_lengths(ctx, j, n_in_axes, in_axes, n_out_axes, out_axes)) return NULL;
  int *bd = malloc(sizeof(int) * (size_t)(j->n_in + 2 * j->n_out + 1));
  ft_var **buf = malloc(sizeof(ft_var *) * (size_t)(j->n_in + j->n_out + 1));
  ft_jaxpr *r = NULL;
  bt_state s = {0};
  int64_t size;
  if (!bd || !buf) {
    ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    goto done;
  }
  if (axis_size < 0) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "vmap: axis_size must be >= 0 (got %lld)",
                 (long long)axis_size);
    goto done;
  }
  size = axis_size;
  if (resolve_in(ctx, j, in_axes, bd)) goto done;
  if (!(r = ft_jaxpr_new(NULL)) ||
      !bt_state_init(&s, ctx, size, ft_arena_num_var_ids(j->arena) + 1)) {
    ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    goto fail;
  }
  tx t;
  tx_init(&t, ctx, r, "vmap");
  ft_var **cv, **in = buf, **out = buf + j->n_in;
  int *obd = bd + j->n_in;
  if (!map_consts(&s, r, j, &cv) || !jaxpr_copy_consts(r, j)) {
    ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    goto fail;
  }
  for (int i = 0; i < j->n_in; i++) {
    ft_aval av = j->invars[i]->aval;
    if (bd[i] >= 0) av = batched_aval(&av, bd[i], size);
    if (!(in[i] = ft_var_new(r->arena, &av))) {
      ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
      goto fail;
    }
  }
  if (!bt_into(&s, &t, j, in, bd, out, obd)) goto fail;
  for (int k = 0; k < j->n_out; k++) {
    int ax = out_axes ? out_axes[k] : 0, r1 = j->outvars[k]->aval.rank + 1;
    char s2[16];
    if (ax == FT_VMAP_NONE) {
      if (obd[k] >= 0) {
        ft_set_error(ctx, FT_ERR_INVALID_ARG,
                     "vmap: output %d depends on a mapped input but out_axes[%d] is none", k, k);
        goto fail;
      }
      continue;
    }
    int a = ax < 0 ? ax + r1 : ax;
    if (a < 0 || a >= r1) {
      char s1[96];
      ft_set_error(ctx, FT_ERR_INVALID_ARG,
                   "vmap: out_axes[%d] = %s is out of range for output %d of type %s "
                   "(batched rank %d: axes %d..%d)",
                   k, axis_str(ax, s2, sizeof s2), k,
                   ft_aval_str(&j->outvars[k]->aval, s1, sizeof s1), r1, -r1, r1 - 1);
      goto fail;
    }
    if (!(out[k] = bt_match(&t, out[k], obd[k], a, size))) goto fail;
  }
  if (!ft_jaxpr_set_vars(r, j->n_const, cv, j->n_in, in, j->n_out, out)) {
    ft_set_error(ctx, FT_ERR_NOMEM, "vmap: out of memory");
    goto fail;
  }
  if (!after_vmap(ctx, j, r, in_axes, out_axes, size)) goto fail;
  goto done;
fail:
  ft_jaxpr_free(r);
  r = NULL;
done:
  bt_state_free(&s);
  free(bd);
  free(buf);
  return r;
}

ft_jaxpr *ft_vmap_avals(ft_ctx *ctx, const ft_jaxpr *j, int n_in_axes, const int *in_axes,
                        int n_out_axes, const int *out_axes, int n_batched_in,
                        const ft_aval *batched_in) {
  if (!j || (!batched_in && j->n_in))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "vmap: jaxpr or avals is NULL"), NULL;
  if (!check_lengths(ctx, j, n_in_axes, in_axes, n_out_axes, out_axes)) return NULL;
  if (n_batched_in != j->n_in)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "vmap: %d argument avals given; the jaxpr has %d inputs", n_batched_in,
                        j->n_in),
           NULL;
  int64_t size = -1;
  int first = -1, first_ax = 0;
  for (int i = 0; i < j->n_in; i++) {
    int ax = in_axes ? in_axes[i] : 0;
    const ft_aval *b = &batched_in[i], *av = &j->invars[i]->aval;
    char s1[96], s2[96], s3[16];
    if (ax == FT_VMAP_NONE) {
      if (!ft_aval_eq(b, av))
        return ft_set_error(ctx, FT_ERR_SHAPE, "vmap: unmapped input %d is %s, expected %s", i,
                            ft_aval_str(b, s1, sizeof s1), ft_aval_str(av, s2, sizeof s2)),
               NULL;
      continue;
    }
    int a = ax < 0 ? ax + b->rank : ax;
    if (a < 0 || a >= b->rank)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                          "vmap: in_axes[%d] = %s is out of range for input %d of type %s "
                          "(axes %d..%d)",
                          i, axis_str(ax, s3, sizeof s3), i, ft_aval_str(b, s1, sizeof s1),
                          -b->rank, b->rank - 1),
             NULL;
    ft_aval want = batched_aval(av, a, b->dims[a]);
    if (!ft_aval_eq(b, &want))
      return ft_set_error(ctx, FT_ERR_SHAPE,
                          "vmap: input %d is %s; with the batch at axis %d it should be %s", i,
                          ft_aval_str(b, s1, sizeof s1), a, ft_aval_str(&want, s2, sizeof s2)),
             NULL;
    if (size < 0) {
      size = b->dims[a], first = i, first_ax = a;
    } else if (b->dims[a] != size) {
      return ft_set_error(ctx, FT_ERR_SHAPE,
                          "vmap: inconsistent sizes for the mapped axis: input %d has size %lld "
                          "along axis %d, input %d has size %lld along axis %d",
                          first, (long long)size, first_ax, i, (long long)b->dims[a], a),
             NULL;
    }
  }
  if (size < 0)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "vmap: no input is mapped (all in_axes are none): use ft_vmap with "
                        "axis_size"),
           NULL;
  return ft_vmap(ctx, j, n_in_axes, in_axes, n_out_axes, out_axes, size);
}
