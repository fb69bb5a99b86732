/* src/transforms/ad_linalg.c: JVP, transpose and batching rules of the
 * factorizations and solves of issue 20 (docs/linalg.md), as JAX 0.12
 * writes them in jax/_src/lax/linalg.py:
 *   cholesky          L' = L phi(L^-1 sym(dA) L^-H) (Murray 2016), phi
 *                     keeping the lower triangle with a halved diagonal
 *   triangular_solve  linear in b; in a: -op(A)^-1 op(dA) X, multiplied in
 *                     the cheaper order; transposed in b by solving with
 *                     op(A)^T
 *   lu                L' = L tril(L^-1 P dA U^-1, -1), U' = triu(...) U
 *   tridiagonal_solve linear in b; in the diagonals a solve of -dT x;
 *                     transposed in b with the transposed diagonals
 *   lu_pivots_to_permutation  integer results: no tangent
 * Batching moves every batch dim to the front (JAX's expand_dims_batcher),
 * so each batch member runs the unbatched kernel: vmap(f) equals the
 * stacked f bit for bit. JAX defines no derivative for cholesky_update and
 * symmetric_product and no batching for cholesky_update; those say so. */
#include <stdio.h>
#include <string.h>

#include "transforms/vmap.h"

bool ad_linalg_prim(ft_prim p) {
  switch (p) {
  case FT_P_CHOLESKY: case FT_P_CHOLESKY_UPDATE: case FT_P_TRIANGULAR_SOLVE: case FT_P_LU:
  case FT_P_LU_PIVOTS_TO_PERMUTATION: case FT_P_TRIDIAGONAL_SOLVE: case FT_P_SYMMETRIC_PRODUCT:
    return true;
  default: return false;
  }
}

const char *ad_linalg_jvp_status(ft_prim p) {
  switch (p) {
  case FT_P_CHOLESKY_UPDATE:
    return "unsupported: JAX defines no JVP rule for cholesky_update "
           "(\"Differentiation rule for 'cholesky_update' not implemented\")";
  case FT_P_SYMMETRIC_PRODUCT:
    return "unsupported: JAX defines no JVP rule for symmetric_product "
           "(\"Differentiation rule for 'symmetric_product' not implemented\")";
  default: return NULL;
  }
}

const char *ad_linalg_transpose_status(ft_prim p) {
  (void)p;
  return NULL; /* custom_linear_solve: linear in b */
}

const char *ad_linalg_batch_status(ft_prim p) {
  if (p == FT_P_CHOLESKY_UPDATE)
    return "unsupported: JAX's cholesky_update has no batching rule (supports_batching=False)";
  return NULL;
}

/* ------------------------------------------------------------- helpers */
static int rk(const ft_var *x) { return x->aval.rank; }

/* x with its last two dims swapped. */
static ft_var *mT(tx *t, ft_var *x) {
  if (!x || t->failed) return NULL;
  int r = rk(x);
  int64_t perm[FT_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1, perm[r - 1] = r - 2;
  return tx_transpose(t, x, r, perm);
}

static ft_var *iota_like(tx *t, const ft_aval *av, int dim) {
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip) return NULL;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(dim));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(FT_I32));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, av->rank, av->dims));
  return tx_emit(t, FT_P_IOTA, ip, 0, NULL);
}

/* The mask col - row {<=, >=} k over x's shape (JAX's _tril / _triu). */
static ft_var *band_mask(tx *t, const ft_aval *av, int k, bool lower) {
  ft_var *row = iota_like(t, av, av->rank - 2), *col = iota_like(t, av, av->rank - 1);
  if (!row || !col) return NULL;
  ft_var *rk_ = k ? tx_add(t, row, tx_lit(t, FT_I32, k)) : row;
  return tx_binop(t, lower ? FT_P_LE : FT_P_GE, col, rk_);
}

static ft_var *tri(tx *t, ft_var *x, int k, bool lower) {
  if (!x || t->failed) return NULL;
  ft_var *m = band_mask(t, &x->aval, k, lower);
  return tx_select(t, m, tx_zeros(t, &x->aval), x);
}
#define tril(t, x, k) tri(t, x, k, true)
#define triu(t, x, k) tri(t, x, k, false)

/* The identity of x's shape (its last two dims square), in x's dtype. */
static ft_var *eye_like(tx *t, const ft_aval *av) {
  ft_var *row = iota_like(t, av, av->rank - 2), *col = iota_like(t, av, av->rank - 1);
  return tx_convert(t, tx_binop(t, FT_P_EQ, row, col), av->dtype);
}

/* The batched matrix product a @ b over the leading batch dims. */
static ft_var *bmm(tx *t, ft_var *a, ft_var *b) {
  if (!a || !b || t->failed) return NULL;
  int r = rk(a);
  int64_t bd[FT_MAX_RANK];
  for (int i = 0; i < r - 2; i++) bd[i] = i;
  ft_pval dn = ft_pv_tuple(t->a, 2);
  if (!dn.u.items) return tx_nomem(t);
  for (int i = 0; i < 2; i++) {
    dn.u.items[i] = ft_pv_tuple(t->a, 2);
    if (!dn.u.items[i].u.items) return tx_nomem(t);
  }
  int64_t lc = r - 1, rc = r - 2;
  dn.u.items[0].u.items[0] = ft_pv_ints(t->a, 1, &lc);
  dn.u.items[0].u.items[1] = ft_pv_ints(t->a, 1, &rc);
  dn.u.items[1].u.items[0] = ft_pv_ints(t->a, r - 2, bd);
  dn.u.items[1].u.items[1] = ft_pv_ints(t->a, r - 2, bd);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) dn.u.items[i].u.items[j].list = true;
  ft_pval *ps = tx_params(t, FT_P_DOT_GENERAL);
  if (!ps) return NULL;
  pset(FT_P_DOT_GENERAL, ps, "dimension_numbers", dn);
  return tx_emit(t, FT_P_DOT_GENERAL, ps, 2, (ft_var *[]){a, b});
}

typedef struct tsolve_opts {
  bool left, lower, ta, ca, unit;
} tsolve_opts;

static ft_var *tsolve(tx *t, ft_var *a, ft_var *b, tsolve_opts o) {
  if (!a || !b || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_TRIANGULAR_SOLVE);
  if (!ps) return NULL;
  pset(FT_P_TRIANGULAR_SOLVE, ps, "left_side", ft_pv_bool(o.left));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "lower", ft_pv_bool(o.lower));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "transpose_a", ft_pv_bool(o.ta));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "conjugate_a", ft_pv_bool(o.ca));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "unit_diagonal", ft_pv_bool(o.unit));
  return tx_emit(t, FT_P_TRIANGULAR_SOLVE, ps, 2, (ft_var *[]){a, b});
}

static tsolve_opts tsolve_params(ft_prim p, const ft_pval *ps) {
  return (tsolve_opts){pget_bool(p, ps, "left_side", false), pget_bool(p, ps, "lower", false),
                       pget_bool(p, ps, "transpose_a", false), pget_bool(p, ps, "conjugate_a", false),
                       pget_bool(p, ps, "unit_diagonal", false)};
}

static bool is_cpx(const ft_var *x) { return ft_dtype_is_complex(x->aval.dtype); }

static ft_var *conj_of(tx *t, ft_var *x) { return x && is_cpx(x) ? tx_unop(t, FT_P_CONJ, x) : x; }

/* ------------------------------------------------------------- cholesky */
static bool jvp_cholesky(jvp_call *c) {
  tx *t = c->t;
  ft_var *dx = c->dx[0];
  if (!dx) return true;
  ft_var *sd;
  if (is_cpx(dx)) { /* JAX: complex(tril(re) + tril(re,-1)^T, tril(im,-1) - tril(im,-1)^T) */
    ft_var *re = tx_unop(t, FT_P_REAL, dx), *im = tx_unop(t, FT_P_IMAG, dx);
    ft_var *sre = tx_add(t, tril(t, re, 0), mT(t, tril(t, re, -1)));
    ft_var *sim = tx_sub(t, tril(t, im, -1), mT(t, tril(t, im, -1)));
    sd = tx_binop(t, FT_P_COMPLEX, sre, sim);
  } else {
    sd = tx_add(t, tril(t, dx, 0), mT(t, tril(t, dx, -1)));
  }
  ft_var *L = tril(t, c->y[0], 0);
  ft_var *tmp = tsolve(t, L, sd, (tsolve_opts){.left = false, .lower = true, .ta = true, .ca = true});
  ft_var *in = tsolve(t, L, tmp, (tsolve_opts){.left = true, .lower = true});
  /* phi: the lower triangle, its diagonal halved (divided by 1 + I, as JAX) */
  ft_var *den = in ? tx_add(t, eye_like(t, &in->aval), tx_lit(t, in->aval.dtype, 1.0)) : NULL;
  ft_var *phi = tx_div(t, tril(t, in, 0), den);
  c->dy[0] = bmm(t, L, phi);
  return !t->failed;
}

/* ----------------------------------------------------- triangular_solve */
static bool jvp_triangular_solve(jvp_call *c) {
  tx *t = c->t;
  tsolve_opts o = tsolve_params(c->e->prim, c->params);
  ft_var *a = c->x[0], *ans = c->y[0], *da = NULL, *db = NULL;
  if (c->dx[0]) {
    int k = o.unit ? 1 : 0;
    ft_var *g = o.lower ? tril(t, c->dx[0], -k) : triu(t, c->dx[0], k);
    g = tx_neg(t, g);
    if (o.ta) g = mT(t, g);
    if (o.ca) g = conj_of(t, g);
    int64_t m = ans->aval.dims[rk(ans) - 2], n = ans->aval.dims[rk(ans) - 1];
    if (o.left)
      da = m > n ? tsolve(t, a, bmm(t, g, ans), o) : bmm(t, tsolve(t, a, g, o), ans);
    else
      da = m < n ? tsolve(t, a, bmm(t, ans, g), o) : bmm(t, ans, tsolve(t, a, g, o));
  }
  if (c->dx[1]) db = tsolve(t, a, c->dx[1], o);
  c->dy[0] = tx_acc(t, da, db);
  return !t->failed;
}

static bool tr_triangular_solve(tr_call *c) {
  tx *t = c->t;
  if (c->lin[0]) {
    tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of triangular_solve: it is not linear in a");
    return false;
  }
  if (!c->lin[1] || !c->ct[0]) return true;
  tsolve_opts o = tsolve_params(c->e->prim, c->params);
  o.ta = !o.ta;
  c->ct_x[1] = tsolve(t, c->x[0], c->ct[0], o);
  return !t->failed;
}

/* ------------------------------------------------------------------- lu */
/* a_dot[..., perm, :]: a gather of whole rows with the batch dims as
 * gather batching dims. */
ft_var *rows_permuted(tx *t, ft_var *x, ft_var *perm) {
  if (!x || !perm || t->failed) return NULL;
  int r = rk(x);
  int64_t idims[FT_MAX_RANK + 1], ss[FT_MAX_RANK];
  for (int i = 0; i < r - 1; i++) idims[i] = perm->aval.dims[i];
  idims[r - 1] = 1;
  ft_var *idx = tx_reshape(t, perm, r, idims);
  char b[512], bd[128] = "";
  size_t n = 0;
  for (int i = 0; i < r - 2; i++) n += (size_t)snprintf(bd + n, sizeof bd - n, "%s%d", i ? ", " : "", i);
  if (r - 2 == 1) snprintf(bd + n, sizeof bd - n, ",");
  snprintf(b, sizeof b,
           "GatherDimensionNumbers(offset_dims=(%d,), collapsed_slice_dims=(%d,), "
           "start_index_map=(%d,), operand_batching_dims=(%s), start_indices_batching_dims=(%s))",
           r - 1, r - 2, r - 2, bd, bd);
  for (int i = 0; i < r; i++) ss[i] = 1;
  ss[r - 1] = x->aval.dims[r - 1];
  ft_pval *ps = tx_params(t, FT_P_GATHER);
  if (!ps) return NULL;
  ft_pval dn = {.tag = FT_PV_OPAQUE}, mode = {.tag = FT_PV_OPAQUE};
  dn.s = ft_arena_strndup(t->a, b, strlen(b));
  mode.s = "GatherScatterMode.PROMISE_IN_BOUNDS";
  if (!dn.s) return tx_nomem(t);
  pset(FT_P_GATHER, ps, "dimension_numbers", dn);
  pset(FT_P_GATHER, ps, "slice_sizes", ft_pv_ints(t->a, r, ss));
  pset(FT_P_GATHER, ps, "mode", mode);
  pset(FT_P_GATHER, ps, "indices_are_sorted", ft_pv_bool(false));
  pset(FT_P_GATHER, ps, "unique_indices", ft_pv_bool(false));
  return tx_emit(t, FT_P_GATHER, ps, 2, (ft_var *[]){x, idx});
}

/* x padded with zeros to `rows` rows and `cols` cols at the end. */
static ft_var *pad_to(tx *t, ft_var *x, int64_t rows, int64_t cols, int64_t lo) {
  if (!x || t->failed) return NULL;
  int r = rk(x);
  int64_t l[FT_MAX_RANK] = {0}, h[FT_MAX_RANK] = {0}, in[FT_MAX_RANK] = {0};
  l[r - 2] = l[r - 1] = lo;
  h[r - 2] = rows - x->aval.dims[r - 2] - lo;
  h[r - 1] = cols - x->aval.dims[r - 1] - lo;
  if (!l[r - 2] && !l[r - 1] && !h[r - 2] && !h[r - 1]) return x;
  return tx_pad(t, x, tx_lit(t, x->aval.dtype, 0.0), l, h, in);
}

static ft_var *slice_mat(tx *t, ft_var *x, int64_t rows, int64_t cols) {
  if (!x || t->failed) return NULL;
  int r = rk(x);
  int64_t s[FT_MAX_RANK] = {0}, lim[FT_MAX_RANK];
  for (int i = 0; i < r; i++) lim[i] = x->aval.dims[i];
  lim[r - 2] = rows, lim[r - 1] = cols;
  if (rows == x->aval.dims[r - 2] && cols == x->aval.dims[r - 1]) return x;
  return tx_slice(t, x, s, lim, NULL);
}

static bool jvp_lu(jvp_call *c) {
  tx *t = c->t;
  ft_var *dA = c->dx[0];
  if (!dA) return true;
  ft_var *lu = c->y[0], *perm = c->y[2];
  int r = rk(lu);
  int64_t m = lu->aval.dims[r - 2], n = lu->aval.dims[r - 1], k = m < n ? m : n;
  ft_aval mm = lu->aval;
  mm.dims[r - 1] = m;
  /* l = pad(tril(lu[:, :k], -1)) + I (m x m); u = pad(triu(lu[:k, :])) + pad(I_{n-k}) */
  ft_var *l = tx_add(t, pad_to(t, tril(t, slice_mat(t, lu, m, k), -1), m, m, 0), eye_like(t, &mm));
  ft_var *u = pad_to(t, triu(t, slice_mat(t, lu, k, n), 0), n, n, 0);
  if (n > k) {
    ft_aval e = lu->aval;
    e.dims[r - 2] = e.dims[r - 1] = n - k;
    u = tx_add(t, u, pad_to(t, eye_like(t, &e), n, n, k));
  }
  ft_var *la = tsolve(t, l, rows_permuted(t, dA, perm), (tsolve_opts){.left = true, .lower = true, .unit = true});
  ft_var *lau = tsolve(t, u, la, (tsolve_opts){.left = false, .lower = false});
  ft_var *ldot = bmm(t, l, tril(t, lau, -1)), *udot = bmm(t, triu(t, lau, 0), u);
  c->dy[0] = tx_add(t, ldot, udot);
  return !t->failed;
}

/* ----------------------------------------------------- tridiagonal_solve */
/* T x for diagonals (dl, d, du) and x [..., m, n] (JAX's _tridiagonal_product). */
static ft_var *tri_product(tx *t, ft_var *dl, ft_var *d, ft_var *du, ft_var *x) {
  if (!dl || !d || !du || !x || t->failed) return NULL;
  int r = rk(x);
  int64_t m = x->aval.dims[r - 2];
  int64_t bd[FT_MAX_RANK];
  for (int i = 0; i < r - 1; i++) bd[i] = i;
  ft_var *D = tx_bcast(t, d, r, x->aval.dims, bd), *DL = tx_bcast(t, dl, r, x->aval.dims, bd),
         *DU = tx_bcast(t, du, r, x->aval.dims, bd);
  ft_var *y = tx_mul(t, D, x);
  if (m < 2) return y;
  int64_t z[FT_MAX_RANK] = {0}, lim[FT_MAX_RANK], lo[FT_MAX_RANK] = {0}, hi[FT_MAX_RANK] = {0},
          in[FT_MAX_RANK] = {0}, one[FT_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) lim[i] = x->aval.dims[i];
  one[r - 2] = 1;
  int64_t lim1[FT_MAX_RANK];
  memcpy(lim1, lim, sizeof lim);
  lim1[r - 2] = m - 1;
  /* y[1:] += dl[1:] * x[:-1]; y[:-1] += du[:-1] * x[1:] */
  ft_var *lower = tx_mul(t, tx_slice(t, DL, one, lim, NULL), tx_slice(t, x, z, lim1, NULL));
  ft_var *upper = tx_mul(t, tx_slice(t, DU, z, lim1, NULL), tx_slice(t, x, one, lim, NULL));
  ft_var *zero = tx_lit(t, x->aval.dtype, 0.0);
  lo[r - 2] = 1;
  ft_var *lp = tx_pad(t, lower, zero, lo, hi, in);
  lo[r - 2] = 0, hi[r - 2] = 1;
  ft_var *up = tx_pad(t, upper, zero, lo, hi, in);
  return tx_add(t, tx_add(t, y, lp), up);
}

static ft_var *tridiag(tx *t, const ft_pval *ps, ft_var *dl, ft_var *d, ft_var *du, ft_var *b) {
  if (!dl || !d || !du || !b || t->failed) return NULL;
  return tx_emit(t, FT_P_TRIDIAGONAL_SOLVE, ps, 4, (ft_var *[]){dl, d, du, b});
}

static bool jvp_tridiagonal_solve(jvp_call *c) {
  tx *t = c->t;
  ft_var *rhs = c->dx[3];
  if (c->dx[0] || c->dx[1] || c->dx[2]) {
    ft_var *dd[3];
    for (int i = 0; i < 3; i++) dd[i] = c->dx[i] ? c->dx[i] : tx_zeros(t, &c->x[i]->aval);
    ft_var *mv = tri_product(t, dd[0], dd[1], dd[2], c->y[0]);
    rhs = rhs ? tx_sub(t, rhs, mv) : tx_neg(t, mv);
  }
  if (!rhs) return true;
  c->dy[0] = tridiag(t, c->params, c->x[0], c->x[1], c->x[2], rhs);
  return !t->failed;
}

static bool tr_tridiagonal_solve(tr_call *c) {
  tx *t = c->t;
  if (c->lin[0] || c->lin[1] || c->lin[2]) {
    tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of tridiagonal_solve: it is not linear in the diagonals");
    return false;
  }
  if (!c->lin[3] || !c->ct[0]) return true;
  ft_var *dl = c->x[0], *du = c->x[2];
  int r = rk(dl);
  int64_t m = dl->aval.dims[r - 1];
  /* dl' = (0, du[:-1]); du' = (dl[1:], 0) */
  int64_t z[FT_MAX_RANK] = {0}, lo[FT_MAX_RANK] = {0}, hi[FT_MAX_RANK] = {0}, in[FT_MAX_RANK] = {0};
  int64_t one[FT_MAX_RANK] = {0}, lim[FT_MAX_RANK], lim1[FT_MAX_RANK];
  for (int i = 0; i < r; i++) lim[i] = lim1[i] = dl->aval.dims[i];
  ft_var *dlt = dl, *dut = du;
  if (m > 0) {
    lim1[r - 1] = m - 1, one[r - 1] = 1;
    ft_var *zero = tx_lit(t, dl->aval.dtype, 0.0);
    lo[r - 1] = 1;
    dlt = tx_pad(t, tx_slice(t, du, z, lim1, NULL), zero, lo, hi, in);
    lo[r - 1] = 0, hi[r - 1] = 1;
    dut = tx_pad(t, tx_slice(t, dl, one, lim, NULL), zero, lo, hi, in);
  }
  c->ct_x[3] = tridiag(t, c->params, dlt, c->x[1], dut, c->ct[0]);
  return !t->failed;
}

/* --------------------------------------------------- custom_linear_solve */
typedef struct cls_layout {
  int64_t len[4], off[4], nc; /* const counts and offsets of matvec, vecmat, solve, transpose_solve */
  int nb;
} cls_layout;

static bool cls_read(tx *t, const ft_eqn *e, const ft_pval *ps, cls_layout *L) {
  const ft_pval *cl = pget(e->prim, ps, "const_lengths");
  if (!cl || !ft_lstuple_ok(cl) || cl->u.items[0].tag != FT_PV_INT)
    return tx_fail(t, FT_ERR_TYPE, "%s of custom_linear_solve: bad const_lengths", t->what), false;
  L->nc = 0;
  for (int i = 0; i < 4; i++) L->len[i] = cl->u.items[i].u.i, L->off[i] = L->nc, L->nc += L->len[i];
  L->nb = e->n_in - (int)L->nc;
  if (L->nb < 0 || e->n_in > 256 || e->n_out != L->nb)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "%s of custom_linear_solve: %d operands", t->what, e->n_in), false;
  return true;
}

/* JAX's _custom_linear_solve_jvp: x = solve(b); x' = solve(b' - matvec'(x))
 * where matvec' is the JVP of matvec in its consts (the tangents of the
 * solves' consts do not enter: the solve is the inverse of matvec). */
bool jvp_custom_linear_solve(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  cls_layout L;
  if (!cls_read(t, e, e->params, &L)) return false;
  ft_var *x[256], *rhs[256], *in[256];
  if (!tx_emitn(t, e->prim, c->params, e->n_in, c->x, e->n_out, x)) return false;
  for (int k = 0; k < e->n_out; k++) c->y[k] = x[k];
  for (int k = 0; k < L.nb; k++) rhs[k] = c->dx[L.nc + k];
  bool mv_dot = false;
  for (int64_t i = 0; i < L.len[0]; i++) mv_dot |= c->dx[L.off[0] + i] != NULL;
  if (mv_dot) {
    const ft_pval *js = pget(e->prim, e->params, "jaxprs");
    const ft_jaxpr *mv = js && ft_lstuple_ok(js) && js->u.items[0].tag == FT_PV_JAXPR ? js->u.items[0].u.jaxpr : NULL;
    if (!mv || mv->n_const || mv->n_in != L.len[0] + L.nb || mv->n_out != L.nb)
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of custom_linear_solve: its matvec jaxpr does not fit"), false;
    ft_var *pin[256], *tin[256], *pout[256], *tout[256];
    for (int64_t i = 0; i < L.len[0]; i++) pin[i] = c->x[L.off[0] + i], tin[i] = c->dx[L.off[0] + i];
    for (int k = 0; k < L.nb; k++) pin[L.len[0] + k] = x[k], tin[L.len[0] + k] = NULL;
    if (!jvp_into(s, t, mv, pin, tin, pout, tout)) return false;
    for (int k = 0; k < L.nb; k++)
      if (tout[k]) rhs[k] = rhs[k] ? tx_sub(t, rhs[k], tout[k]) : tx_neg(t, tout[k]);
  }
  bool any = false;
  for (int k = 0; k < L.nb; k++) any |= rhs[k] != NULL;
  if (!any) return !t->failed;
  for (int64_t i = 0; i < L.nc; i++) in[i] = c->x[i];
  for (int k = 0; k < L.nb; k++) in[L.nc + k] = rhs[k] ? rhs[k] : tx_zeros(t, &e->in[L.nc + k]->aval);
  if (t->failed) return false;
  return tx_emitn(t, e->prim, c->params, e->n_in, in, e->n_out, c->dy);
}

/* JAX's _linear_solve_transpose_rule: the same primitive with matvec and
 * vecmat, solve and transpose_solve swapped, on the cotangents. */
static bool tr_custom_linear_solve(tr_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  cls_layout L;
  if (!cls_read(t, e, c->params, &L)) return false;
  for (int64_t i = 0; i < L.nc; i++)
    if (c->lin[i]) return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of custom_linear_solve: it is not linear in its consts"), false;
  const ft_pval *js = pget(e->prim, c->params, "jaxprs"), *cl = pget(e->prim, c->params, "const_lengths");
  if (!js || !ft_lstuple_ok(js) || js->u.items[3].tag != FT_PV_JAXPR)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of custom_linear_solve: transpose_solve required for "
                   "backwards mode automatic differentiation of custom_linear_solve"), false;
  static const int swap[4] = {1, 0, 3, 2};
  ft_pval *ps = tx_params(t, e->prim);
  ft_pval ncl = ft_pv_tuple(t->a, 4), njs = ft_pv_tuple(t->a, 4);
  if (!ps || !ncl.u.items || !njs.u.items) return tx_nomem(t), false;
  ft_var *in[256], *out[256];
  int n = 0;
  for (int i = 0; i < 4; i++) {
    ncl.u.items[i] = cl->u.items[swap[i]];
    njs.u.items[i] = js->u.items[swap[i]];
    for (int64_t k = 0; k < L.len[swap[i]]; k++) in[n++] = c->x[L.off[swap[i]] + k];
  }
  pset(e->prim, ps, "const_lengths", ncl);
  pset(e->prim, ps, "jaxprs", njs);
  for (int k = 0; k < L.nb; k++) in[n++] = c->ct[k] ? c->ct[k] : tx_zeros(t, &e->out[k]->aval);
  if (t->failed || !tx_emitn(t, e->prim, ps, n, in, L.nb, out)) return false;
  for (int k = 0; k < L.nb; k++)
    if (c->lin[L.nc + k]) c->ct_x[L.nc + k] = out[k];
  return true;
}

/* ---------------------------------------------------------------- entry */
bool jvp_linalg(jvp_call *c) {
  switch (c->e->prim) {
  case FT_P_CHOLESKY: return jvp_cholesky(c);
  case FT_P_TRIANGULAR_SOLVE: return jvp_triangular_solve(c);
  case FT_P_LU: return jvp_lu(c);
  case FT_P_TRIDIAGONAL_SOLVE: return jvp_tridiagonal_solve(c);
  case FT_P_LU_PIVOTS_TO_PERMUTATION: return true; /* integer results */
  default:
    tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp of %s: %s", ft_prim_get(c->e->prim)->name,
            ad_linalg_jvp_status(c->e->prim));
    return false;
  }
}

bool tr_linalg(tr_call *c) {
  switch (c->e->prim) {
  case FT_P_TRIANGULAR_SOLVE: return tr_triangular_solve(c);
  case FT_P_TRIDIAGONAL_SOLVE: return tr_tridiagonal_solve(c);
  case FT_P_CUSTOM_LINEAR_SOLVE: return tr_custom_linear_solve(c);
  default:
    tx_fail(c->t, FT_ERR_UNSUPPORTED, "transpose of %s: not linear", ft_prim_get(c->e->prim)->name);
    return false;
  }
}

/* Every operand with its batch dim at the front (unbatched ones broadcast),
 * every result batched at 0. */
bool bt_linalg(bt_call *c) {
  const char *why = ad_linalg_batch_status(c->e->prim);
  if (why) {
    tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of %s: %s", ft_prim_get(c->e->prim)->name, why);
    return false;
  }
  ft_var *in[8];
  if (c->n_in > 8) return tx_fail(c->t, FT_ERR_INTERNAL, "vmap: too many operands"), false;
  for (int i = 0; i < c->n_in; i++) in[i] = bt_match(c->t, c->x[i], c->xb[i], 0, c->s->size);
  for (int k = 0; k < c->n_out; k++) c->yb[k] = 0;
  return tx_emitn(c->t, c->e->prim, c->params, c->n_in, in, c->n_out, c->y);
}
