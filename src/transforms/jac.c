/* src/transforms/jac.c: Jacobians and Hessians from the two primitives of
 * composition, as JAX builds them: jacfwd = vmap∘jvp (push the standard
 * basis of the input through the JVP, one lane per basis vector), jacrev =
 * vmap∘vjp (pull the standard basis of each output back through the VJP),
 * hessian = jacfwd∘jacrev. Each result is one jaxpr: the transformed
 * program is inlined after the basis is built, and dead code is removed. */
#include <string.h>

#include "ir/json.h"
#include "vmap.h"

/* The identity of size n in dtype dt, shaped [n, *shape] (the standard basis
 * of a value of that shape, one basis vector per leading index). */
static ft_var *basis(tx *t, ft_dtype dt, int64_t n, const ft_aval *of) {
  int64_t dims[2] = {n, n};
  ft_var *io[2];
  for (int d = 0; d < 2; d++) {
    ft_pval *ps = tx_params(t, FT_P_IOTA);
    if (!ps) return NULL;
    pset(FT_P_IOTA, ps, "dimension", ft_pv_int(d));
    pset(FT_P_IOTA, ps, "dtype", ft_pv_dtype(FT_I32));
    pset(FT_P_IOTA, ps, "shape", ft_pv_ints(t->a, 2, dims));
    io[d] = tx_emit(t, FT_P_IOTA, ps, 0, NULL);
  }
  ft_var *eye = tx_convert(t, tx_binop(t, FT_P_EQ, io[0], io[1]), dt);
  int64_t shape[FT_MAX_RANK + 1];
  shape[0] = n;
  for (int i = 0; i < of->rank; i++) shape[i + 1] = of->dims[i];
  return tx_reshape(t, eye, of->rank + 1, shape);
}

/* Copies the equations of src into t (an inliner: nothing is mapped, so
 * every equation is copied as it is). src's constvars map to cv. */
static bool inline_into(ft_ctx *ctx, tx *t, const ft_jaxpr *src, ft_var *const *cv,
                        ft_var *const *in, ft_var **out) {
  bt_state s;
  if (!bt_state_init(&s, ctx, 1, ft_arena_num_var_ids(src->arena) + 1)) return tx_nomem(t), false;
  int *bd = calloc((size_t)(src->n_in + src->n_out + src->n_const) + 1, sizeof(int));
  bool ok = bd != NULL;
  if (!ok) tx_nomem(t);
  for (int i = 0; ok && i < src->n_in + src->n_out; i++) bd[i] = BT_NOT_MAPPED;
  /* constvars are inputs of the traversal too */
  ft_jaxpr view = *src;
  if (ok && src->n_const) {
    ft_var **iv = malloc(sizeof *iv * (size_t)(src->n_const + src->n_in));
    ft_var **vv = malloc(sizeof *vv * (size_t)(src->n_const + src->n_in));
    int *vb = malloc(sizeof(int) * (size_t)(src->n_const + src->n_in + src->n_out));
    ok = iv && vv && vb;
    if (ok) {
      for (int i = 0; i < src->n_const; i++) iv[i] = src->constvars[i], vv[i] = cv[i];
      for (int i = 0; i < src->n_in; i++) iv[src->n_const + i] = src->invars[i], vv[src->n_const + i] = in[i];
      for (int i = 0; i < src->n_const + src->n_in + src->n_out; i++) vb[i] = BT_NOT_MAPPED;
      view.invars = iv;
      view.n_in = src->n_const + src->n_in;
      ok = bt_into(&s, t, &view, vv, vb, out, vb + view.n_in);
    } else {
      tx_nomem(t);
    }
    free(iv), free(vv), free(vb);
  } else if (ok) {
    ok = bt_into(&s, t, src, in, bd, out, bd + src->n_in);
  }
  free(bd);
  bt_state_free(&s);
  return ok;
}

typedef enum { JAC_FWD, JAC_REV } jac_mode;

/* Index of input i among the inexact inputs (or outputs) before it. */
static int inexact_rank(ft_var *const *vs, int i) {
  int k = 0;
  for (int a = 0; a < i; a++) k += var_inexact(vs[a]);
  return k;
}

/* One Jacobian per inexact output of j, with respect to input argnum. */
static ft_jaxpr *jacobian(ft_ctx *ctx, const ft_jaxpr *j, int argnum, jac_mode mode) {
  const char *what = mode == JAC_FWD ? "jacfwd" : "jacrev";
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: jaxpr is NULL", what), NULL;
  if (argnum < 0 || argnum >= j->n_in)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: argnum %d is out of range (%d inputs)",
                        what, argnum, j->n_in), NULL;
  const ft_aval *xa = &j->invars[argnum]->aval;
  if (!ft_dtype_is_float(xa->dtype))
    return ft_set_error(ctx, FT_ERR_TYPE, "%s: input %d is %s; differentiate float inputs only",
                        what, argnum, ft_dtype_name(xa->dtype)), NULL;
  int n_in = j->n_in;
  for (int k = 0; k < j->n_out; k++)
    if (var_inexact(j->outvars[k]) && j->outvars[k]->aval.rank + xa->rank > FT_MAX_RANK)
      return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s: the Jacobian of output %d exceeds rank %d",
                          what, k, FT_MAX_RANK), NULL;
  ft_jaxpr *d = mode == JAC_FWD ? ft_jvp(ctx, j) : ft_vjp_jaxpr(ctx, j);
  if (!d) return NULL;
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  int nd = d->n_in, *axes = malloc(sizeof(int) * (size_t)(nd + d->n_out + 1));
  ft_var **buf = calloc((size_t)(2 * nd + 2 * d->n_out + n_in + d->n_const + 2), sizeof *buf);
  ft_jaxpr *res = NULL, *v = NULL;
  if (!r || !axes || !buf) {
    ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", what);
    goto done;
  }
  tx t;
  tx_init(&t, ctx, r, what);
  ft_var **x = buf, **din = buf + n_in, **dout = din + nd, **outs = dout + d->n_out;
  ft_var **cv = outs + d->n_out;
  for (int i = 0; i < n_in; i++)
    if (!(x[i] = ft_var_new(r->arena, &j->invars[i]->aval))) goto nomem;
  for (int i = 0; i < d->n_const; i++)
    if (!(cv[i] = ft_var_new(r->arena, &d->constvars[i]->aval))) goto nomem;
  if (!jaxpr_copy_consts(r, d)) goto nomem;
  int n_jac = 0;
  int seeds = mode == JAC_FWD ? 1 : j->n_out;
  for (int s = 0; s < seeds; s++) {
    /* JAC_FWD: one vmap of the JVP over the basis of x_argnum.
     * JAC_REV: per inexact output s, one vmap of the VJP over its basis. */
    if (mode == JAC_REV && !var_inexact(j->outvars[s])) continue;
    const ft_aval *seed_av = mode == JAC_FWD ? xa : &j->outvars[s]->aval;
    int64_t n = ft_aval_size(seed_av);
    int seed_in = mode == JAC_FWD ? n_in + inexact_rank(j->invars, argnum)
                                  : n_in + inexact_rank(j->outvars, s);
    for (int i = 0; i < nd; i++) {
      axes[i] = i == seed_in ? 0 : FT_VMAP_NONE;
      din[i] = i < n_in ? x[i] : i == seed_in ? basis(&t, seed_av->dtype, n, seed_av)
                                             : tx_zeros(&t, &d->invars[i]->aval);
    }
    if (t.failed) goto fail;
    /* outputs: primals unmapped (dropped later), tangents/cotangents batched */
    for (int k = 0; k < d->n_out; k++)
      axes[nd + k] = k < j->n_out ? FT_VMAP_NONE : mode == JAC_FWD ? -1 : 0;
    ft_jaxpr_free(v);
    if (!(v = ft_vmap(ctx, d, nd, axes, d->n_out, axes + nd, n))) goto fail;
    if (!inline_into(ctx, &t, v, cv, din, dout)) goto fail;
    if (mode == JAC_FWD) {
      for (int k = 0, m = 0; k < j->n_out; k++) {
        if (!var_inexact(j->outvars[k])) continue;
        const ft_aval *ya = &j->outvars[k]->aval;
        int64_t shape[FT_MAX_RANK];
        memcpy(shape, ya->dims, sizeof(int64_t) * (size_t)ya->rank);
        memcpy(shape + ya->rank, xa->dims, sizeof(int64_t) * (size_t)xa->rank);
        outs[n_jac++] = tx_reshape(&t, dout[j->n_out + m++], ya->rank + xa->rank, shape);
      }
    } else {
      /* [n, *x.shape] -> y.shape + x.shape */
      int k = j->n_out + inexact_rank(j->invars, argnum);
      int64_t shape[FT_MAX_RANK];
      memcpy(shape, seed_av->dims, sizeof(int64_t) * (size_t)seed_av->rank);
      memcpy(shape + seed_av->rank, xa->dims, sizeof(int64_t) * (size_t)xa->rank);
      outs[n_jac++] = tx_reshape(&t, dout[k], seed_av->rank + xa->rank, shape);
    }
    if (t.failed) goto fail;
  }
  if (!ft_jaxpr_set_vars(r, d->n_const, cv, n_in, x, n_jac, outs)) goto nomem;
  res = ft_dce(ctx, r);
  ft_buf params = {0}; /* {"argnum":N} */
  ft_buf_puts(&params, "{");
  ft_json_key(&params, "argnum");
  ft_buf_printf(&params, "%d}", argnum);
  if (res && params.failed) ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", what);
  bool after_ok = res && !params.failed && ft__after_transform(ctx, what, params.p, j, res);
  free(params.p);
  if (res && !after_ok) {
    ft_jaxpr_free(res);
    res = NULL;
  }
  goto done;
nomem:
  ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", what);
fail:
  ft_error_prefix(ctx, "%s", what);
done:
  ft_jaxpr_free(v);
  ft_jaxpr_free(d);
  ft_jaxpr_free(r);
  free(axes);
  free(buf);
  return res;
}

ft_jaxpr *ft_jacfwd(ft_ctx *ctx, const ft_jaxpr *j, int argnum) {
  return jacobian(ctx, j, argnum, JAC_FWD);
}

ft_jaxpr *ft_jacrev(ft_ctx *ctx, const ft_jaxpr *j, int argnum) {
  return jacobian(ctx, j, argnum, JAC_REV);
}

ft_jaxpr *ft_hessian(ft_ctx *ctx, const ft_jaxpr *j, int argnum) {
  ft_jaxpr *g = ft_jacrev(ctx, j, argnum);
  if (!g) return NULL;
  ft_jaxpr *h = ft_jacfwd(ctx, g, argnum);
  ft_jaxpr_free(g);
  if (!h) ft_error_prefix(ctx, "hessian");
  return h;
}
