/* src/runtime/interp_ragged.c: ragged_dot_general (lax.ragged_dot,
 * lax.ragged_dot_general), the rule body the interpreter and the JIT's
 * routine step share (runtime.h, "rules shared with the JIT").
 *
 * JAX 0.12 on CPU defines it by _ragged_dot_general_impl: the ragged
 * operand(s) are expanded to a leading group axis g, zero (select) outside
 * each group's rows, group g's rows being [end_g - size_g, end_g) with
 * end = cumsum(group_sizes), all in group_sizes' integer dtype (iota
 * included), and one dot_general runs on them:
 *   RAGGED_NONCONTRACTING  dot(expand(lhs), rhs), contracting (k..., g)
 *                          against (rhs's k..., its group axis);
 *   RAGGED_CONTRACTING     dot(expand(lhs), expand(rhs)), g a leading
 *                          batch axis;
 *   RAGGED_BATCH           dot(lhs, rhs): group_sizes is not read.
 * This body does exactly that, with dot_general's own body (ft_dot_raw:
 * the shared GEMM for floats), so the masked terms are XLA's: exact zeros,
 * and 0 * inf = NaN where another group's rhs holds an infinity or a NaN,
 * as JAX's result on CPU has. The cost is the dense one, g times the
 * ragged work (docs/primitives.md). */
#include <string.h>

#include "runtime.h"

typedef struct rplan {
  ft_ragged_dims d;
  ft_ragged_mode m;
  ft_aval el, er;                  /* the dot's operands (expanded or not) */
  int64_t dn[4][FT_MAX_RANK];
  int n[4];
  int64_t G, P;                    /* groups; prefix positions of group_sizes */
  int64_t pre[FT_MAX_RANK];
  int npre;
} rplan;

static size_t region(size_t n) { return (n + 63) & ~(size_t)63; }

static ft_status plan(ft_ctx *ctx, const ft_eqn *e, const ft_aval *l, const ft_aval *r, const ft_aval *gs,
                      const ft_aval *o, rplan *p) {
  ft_aval in[3] = {*l, *r, *gs}, want;
  int nout = 0;
  ft_status st = ft_infer(ctx, e->prim, e->params, 3, in, &nout, &want, 1);
  if (st) return st;
  if (nout != 1 || !ft_aval_eq(&want, o))
    return ft_set_error(ctx, FT_ERR_SHAPE, "ragged_dot_general: the result aval does not match its operands");
  memset(p, 0, sizeof *p);
  ft_ragged_dims_read(ft_eqn_param(e, "ragged_dot_dimension_numbers"), &p->d); /* checked by ft_infer */
  p->m = ft_ragged_mode_of(&p->d, l->rank);
  p->G = gs->dims[gs->rank - 1];
  p->npre = ft_ragged_prefix(&p->d, p->m, l->rank, p->pre);
  p->P = 1;
  for (int i = 0; i < p->npre; i++) p->P *= l->dims[p->pre[i]];
  const ft_ragged_dims *d = &p->d;
  p->el = *l, p->er = *r;
  if (p->m == FT_RAGGED_BATCH) {
    p->n[0] = p->n[1] = d->nc, p->n[2] = p->n[3] = d->nb;
    memcpy(p->dn[0], d->lc, sizeof d->lc), memcpy(p->dn[1], d->rc, sizeof d->rc);
    memcpy(p->dn[2], d->lb, sizeof d->lb), memcpy(p->dn[3], d->rb, sizeof d->rb);
    return FT_OK;
  }
  if (l->rank + 1 > FT_MAX_RANK || (p->m == FT_RAGGED_CONTRACTING && r->rank + 1 > FT_MAX_RANK))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "ragged_dot_general: the expanded operand would have more "
                        "than %d axes", FT_MAX_RANK);
  p->el.rank = l->rank + 1;
  p->el.dims[0] = p->G;
  memcpy(p->el.dims + 1, l->dims, sizeof(int64_t) * (size_t)l->rank);
  for (int i = 0; i < d->nc; i++) p->dn[0][i] = d->lc[i] + 1;
  for (int i = 0; i < d->nb; i++) p->dn[2][i] = d->lb[i] + 1;
  if (p->m == FT_RAGGED_NONCONTRACTING) { /* contracting (k..., g) x (k..., group) */
    memcpy(p->dn[1], d->rc, sizeof d->rc);
    memcpy(p->dn[3], d->rb, sizeof d->rb);
    p->dn[0][d->nc] = 0, p->dn[1][d->nc] = d->group[0];
    p->n[0] = p->n[1] = d->nc + 1, p->n[2] = p->n[3] = d->nb;
  } else { /* contracting: g leads the batch axes of both */
    p->er.rank = r->rank + 1;
    p->er.dims[0] = p->G;
    memcpy(p->er.dims + 1, r->dims, sizeof(int64_t) * (size_t)r->rank);
    for (int i = 0; i < d->nc; i++) p->dn[1][i] = d->rc[i] + 1;
    p->dn[2][0] = 0, p->dn[3][0] = 0;
    for (int i = 0; i < d->nb; i++) p->dn[2][i + 1] = d->lb[i] + 1, p->dn[3][i + 1] = d->rb[i] + 1;
    p->n[0] = p->n[1] = d->nc, p->n[2] = p->n[3] = d->nb + 1;
  }
  if (!ft_aval_size_ok(&p->el) || !ft_aval_size_ok(&p->er))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "ragged_dot_general: the group-expanded operand (%lld groups "
                        "times the operand) would have more than 2^56 elements", (long long)p->G);
  return FT_OK;
}

static size_t bytes(const ft_aval *a) { return (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype); }

static size_t scratch_of(const rplan *p, const ft_aval *o) {
  size_t n = region(ft_dot_raw_scratch(&p->el, &p->er, o, p->dn, p->n));
  if (p->m == FT_RAGGED_BATCH) return n;
  n += region(bytes(&p->el)) + region(sizeof(int64_t) * (size_t)(2 * p->P * p->G));
  if (p->m == FT_RAGGED_CONTRACTING) n += region(bytes(&p->er));
  return n;
}

size_t ft_ragged_dot_scratch(const ft_eqn *e) {
  rplan p;
  if (e->n_in != 3 || e->n_out != 1 ||
      plan(NULL, e, &e->in[0]->aval, &e->in[1]->aval, &e->in[2]->aval, &e->out[0]->aval, &p))
    return 0;
  return scratch_of(&p, &e->out[0]->aval);
}

/* v wrapped to the integer dtype dt (as XLA computes in it): sign- or
 * zero-extended back to 64 bits. */
static int64_t wrap(int64_t v, ft_dtype dt) {
  switch (dt) {
  case FT_I8: return (int8_t)v;
  case FT_I16: return (int16_t)v;
  case FT_I32: return (int32_t)v;
  case FT_U8: return (uint8_t)v;
  case FT_U16: return (uint16_t)v;
  case FT_U32: return (uint32_t)v;
  default: return v;
  }
}

static bool le(int64_t a, int64_t b, bool uns) { return uns ? (uint64_t)a <= (uint64_t)b : a <= b; }
static bool lt(int64_t a, int64_t b, bool uns) { return uns ? (uint64_t)a < (uint64_t)b : a < b; }

/* Writes expand(x) into dst ([G] + x's dims): x's element where its
 * coordinate on axis rd lies in group g of its prefix position (axes pre
 * of x, in order), else zero bits. se: [P][G] starts then [P][G] ends. */
static void expand(const ft_array *x, int rd, const int64_t *pre, int npre, const rplan *p, const int64_t *se,
                   ft_dtype gdt, char *dst) {
  const ft_aval *a = &x->aval;
  size_t es = ft_dtype_size(a->dtype), sz = (size_t)ft_aval_size(a);
  bool uns = ft_dtype_is_unsigned(gdt);
  int64_t idx[FT_MAX_RANK] = {0};
  for (size_t i = 0; i < sz; i++) {
    int64_t pi = 0;
    for (int k = 0; k < npre; k++) pi = pi * a->dims[pre[k]] + idx[pre[k]];
    int64_t at = wrap(idx[rd], gdt);
    const char *src = (const char *)x->data + i * es;
    for (int64_t g = 0; g < p->G; g++) {
      int64_t s = se[pi * p->G + g], en = se[(p->P + pi) * p->G + g];
      char *o = dst + ((size_t)g * sz + i) * es;
      if (le(s, at, uns) && lt(at, en, uns)) memcpy(o, src, es);
      else memset(o, 0, es);
    }
    for (int k = a->rank - 1; k >= 0; k--) {
      if (++idx[k] < a->dims[k]) break;
      idx[k] = 0;
    }
  }
}

ft_status ft_ragged_dot_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                             void *scratch) {
  rplan p;
  if (e->n_in != 3 || e->n_out != 1)
    return ft_set_error(ctx, FT_ERR_TYPE, "ragged_dot_general: expects 3 operands and 1 result");
  ft_status st = plan(ctx, e, &in[0]->aval, &in[1]->aval, &in[2]->aval, &e->out[0]->aval, &p);
  if (st) return st;
  ft_dtype dt = e->out[0]->aval.dtype;
  if (!ft_dtype_is_float(dt) && !ft_dtype_is_complex(dt) && !ft_dtype_is_int(dt))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "ragged_dot_general into %s", ft_dtype_name(dt));
  if (!out) return FT_OK;
  if (p.m == FT_RAGGED_BATCH) return ft_dot_raw(ctx, in[0], in[1], out[0], p.dn, p.n, scratch);
  char *s = scratch;
  char *dot_scratch = s;
  s += region(ft_dot_raw_scratch(&p.el, &p.er, &out[0]->aval, p.dn, p.n));
  char *xl = s;
  s += region(bytes(&p.el));
  int64_t *se = (int64_t *)(void *)s;
  s += region(sizeof(int64_t) * (size_t)(2 * p.P * p.G));
  char *xr = s;
  /* starts and ends per prefix position: cumsum in group_sizes' dtype */
  const ft_array *gs = in[2];
  ft_dtype gdt = gs->aval.dtype;
  for (int64_t pi = 0; pi < p.P; pi++) {
    int64_t end = 0;
    for (int64_t g = 0; g < p.G; g++) {
      int64_t sz = wrap(ft_get_i64(gs, gs->aval.rank == 1 ? g : pi * p.G + g), gdt);
      end = wrap((int64_t)((uint64_t)end + (uint64_t)sz), gdt);
      se[pi * p.G + g] = wrap((int64_t)((uint64_t)end - (uint64_t)sz), gdt);
      se[(p.P + pi) * p.G + g] = end;
    }
  }
  expand(in[0], (int)p.d.ragged[0], p.pre, p.npre, &p, se, gdt, xl);
  ft_array vl = {.aval = p.el, .nbytes = bytes(&p.el), .data = xl, .borrowed = true};
  ft_array vr = *in[1];
  if (p.m == FT_RAGGED_CONTRACTING) {
    /* rhs's ragged axis pairs with lhs's; its prefix: rhs batch, then the
     * rhs contracting axes paired with lhs's before the ragged one */
    int64_t rpre[FT_MAX_RANK], rrd = -1;
    int nr = 0;
    for (int i = 0; i < p.d.nb; i++) rpre[nr++] = p.d.rb[i];
    for (int i = 0; i < p.d.nc; i++) {
      if (p.d.lc[i] == p.d.ragged[0]) {
        rrd = p.d.rc[i];
        break;
      }
      rpre[nr++] = p.d.rc[i];
    }
    FT_ASSERT(rrd >= 0 && nr == p.npre);
    expand(in[1], (int)rrd, rpre, nr, &p, se, gdt, xr);
    vr = (ft_array){.aval = p.er, .nbytes = bytes(&p.er), .data = xr, .borrowed = true};
  }
  return ft_dot_raw(ctx, &vl, &vr, out[0], p.dn, p.n, dot_scratch);
}
