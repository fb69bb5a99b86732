/* src/runtime/interp_lse.c: the one-pass logsumexp (docs/jit.md, "One-pass
 * logsumexp"). jax.nn.logsumexp / jax.scipy.special.logsumexp print as
 *
 *     b = reduce_max[axes=A] x          c = max -inf b
 *     d = is_finite c                   [z = broadcast_in_dim 0.0]
 *     e = select_n d 0.0|z c            (z when the maximum is not a scalar)
 *     f = stop_gradient e               g = broadcast_in_dim[...] f
 *     h = sub x g                       i = exp h
 *     j = reduce_sum[axes=A] i          (then sign/abs/log/add on j and f)
 *
 * which reads x twice. ft_lse_match recognizes these nine or ten equations
 * (f32, A the trailing axes, b c d z e g h i read by nothing else) and both engines
 * compute f and j in one pass over x with the shared routine of
 * src/lower/vmath/vm_lse.c: the interpreter here, the JIT as two kernels
 * (src/lower/fusion.c place_lse). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/vmath/vmath.h"
#include "runtime.h"

static bool is_f32_var(const ft_var *v) { return v->kind == FT_VAR && v->aval.dtype == FT_F32; }

static bool is_lit(const ft_var *v, double val) {
  return v->kind == FT_LIT && v->aval.dtype == FT_F32 && v->aval.rank == 0 && v->lit.f == val &&
         signbit(v->lit.f) == signbit(val);
}

/* e is prim p with n_in inputs and one f32 FT_VAR output. */
static bool eqn_is(const ft_eqn *e, ft_prim p, int n_in) {
  return e->prim == p && e->n_in == n_in && e->n_out == 1 && e->out[0]->kind == FT_VAR &&
         (p == FT_P_IS_FINITE ? e->out[0]->aval.dtype == FT_BOOL : e->out[0]->aval.dtype == FT_F32);
}

/* The reduction's axes as a count k when they are exactly the last k of
 * rank (any order, no repeats); else -1. */
static int trailing_axes(const ft_eqn *e, int rank) {
  int64_t ax[FT_MAX_RANK * 2];
  int n = ft_param_ints(e, "axes", ax, FT_MAX_RANK * 2);
  if (n < 1 || n > rank) return -1;
  bool seen[FT_MAX_RANK] = {0};
  for (int q = 0; q < n; q++) {
    if (ax[q] < rank - n || ax[q] >= rank || seen[ax[q]]) return -1;
    seen[ax[q]] = true;
  }
  return n;
}

static bool same_axes(const ft_eqn *a, const ft_eqn *b) {
  int64_t x[FT_MAX_RANK * 2], y[FT_MAX_RANK * 2];
  int n = ft_param_ints(a, "axes", x, FT_MAX_RANK * 2), m = ft_param_ints(b, "axes", y, FT_MAX_RANK * 2);
  if (n != m || n < 0) return false;
  bool in_x[FT_MAX_RANK] = {0};
  for (int q = 0; q < n; q++)
    if (x[q] >= 0 && x[q] < FT_MAX_RANK) in_x[x[q]] = true;
  for (int q = 0; q < m; q++)
    if (y[q] < 0 || y[q] >= FT_MAX_RANK || !in_x[y[q]]) return false;
  return true;
}

/* Which equations of j are live: some output is read, transitively, by
 * j's outputs (every primitive is pure). The JIT plans after its exact-tier
 * rewrite, which drops dead equations; counting only live readers here
 * makes both engines see the same readers (and the interpreter skips the
 * dead equations once it has used this). NULL when out of memory. */
bool *ft_live_eqns(const ft_jaxpr *j) {
  uint32_t nv = ft_arena_num_var_ids(j->arena);
  bool *need = calloc((size_t)nv + 1, 1), *live = calloc((size_t)j->n_eqn + 1, 1);
  if (!need || !live) {
    free(need), free(live);
    return NULL;
  }
  for (int k = 0; k < j->n_out; k++)
    if (j->outvars[k]->kind == FT_VAR && j->outvars[k]->id < nv) need[j->outvars[k]->id] = true;
  for (int i = j->n_eqn - 1; i >= 0; i--) {
    const ft_eqn *e = &j->eqns[i];
    for (int k = 0; k < e->n_out && !live[i]; k++)
      live[i] = e->out[k]->kind == FT_VAR && e->out[k]->id < nv && need[e->out[k]->id];
    if (!live[i]) continue;
    for (int k = 0; k < e->n_in; k++)
      if (e->in[k]->kind == FT_VAR && e->in[k]->id < nv) need[e->in[k]->id] = true;
  }
  free(need);
  return live;
}

/* Whether var v is read by a live equation outside [lo, hi] of j, or is an
 * output of j. */
static bool used_outside(const ft_jaxpr *j, const bool *live, const ft_var *v, int lo, int hi) {
  for (int k = 0; k < j->n_out; k++)
    if (j->outvars[k] == v) return true;
  for (int i = 0; i < j->n_eqn; i++) {
    if ((i >= lo && i <= hi) || !live[i]) continue;
    const ft_eqn *e = &j->eqns[i];
    for (int k = 0; k < e->n_in; k++)
      if (e->in[k] == v) return true;
  }
  return false;
}

bool ft_lse_match(const ft_jaxpr *j, int i, ft_lse_pat *pat) {
  if (i < 0 || i + 9 > j->n_eqn) return false;
  const ft_eqn *E = &j->eqns[i];
  /* b = reduce_max[axes=A] x */
  if (!eqn_is(&E[0], FT_P_REDUCE_MAX, 1) || !is_f32_var(E[0].in[0])) return false;
  const ft_var *x = E[0].in[0], *b = E[0].out[0];
  int r = x->aval.rank, nk = trailing_axes(&E[0], r);
  if (nk < 1) return false;
  /* c = max -inf b (either operand order) */
  if (!eqn_is(&E[1], FT_P_MAX, 2)) return false;
  if (!((E[1].in[1] == b && is_lit(E[1].in[0], -INFINITY)) ||
        (E[1].in[0] == b && is_lit(E[1].in[1], -INFINITY))))
    return false;
  const ft_var *c = E[1].out[0];
  /* d = is_finite c */
  if (!eqn_is(&E[2], FT_P_IS_FINITE, 1) || E[2].in[0] != c) return false;
  const ft_var *d = E[2].out[0];
  /* [z = broadcast_in_dim 0.0] (a non-scalar maximum); e = select_n d 0.0|z c */
  int q = 3;
  const ft_var *z = NULL;
  if (eqn_is(&E[q], FT_P_BROADCAST_IN_DIM, 1) && is_lit(E[q].in[0], 0.0)) {
    z = E[q].out[0];
    if (!ft_aval_eq(&z->aval, &c->aval)) return false;
    q++;
  }
  if (!eqn_is(&E[q], FT_P_SELECT_N, 3) || E[q].in[0] != d || E[q].in[2] != c ||
      !(z ? E[q].in[1] == z : is_lit(E[q].in[1], 0.0)))
    return false;
  const ft_var *ev = E[q++].out[0];
  int n_eqns = q + 5; /* stop_gradient, broadcast_in_dim, sub, exp, reduce_sum */
  if (i + n_eqns > j->n_eqn) return false;
  /* f = stop_gradient e */
  if (!eqn_is(&E[q], FT_P_STOP_GRADIENT, 1) || E[q].in[0] != ev) return false;
  const ft_var *f = E[q++].out[0];
  /* g = broadcast_in_dim f to x's shape with 1 on the reduced axes */
  if (!eqn_is(&E[q], FT_P_BROADCAST_IN_DIM, 1) || E[q].in[0] != f) return false;
  const ft_var *g = E[q].out[0];
  if (g->aval.rank != r || f->aval.rank != r - nk) return false;
  for (int k = 0; k < r; k++)
    if (g->aval.dims[k] != (k < r - nk ? x->aval.dims[k] : 1)) return false;
  int64_t bd[FT_MAX_RANK * 2];
  int nbd = ft_param_ints(&E[q], "broadcast_dimensions", bd, FT_MAX_RANK * 2);
  if (nbd != r - nk) return false;
  for (int k = 0; k < nbd; k++)
    if (bd[k] != k) return false;
  q++;
  /* h = sub x g;  i = exp h;  j = reduce_sum[axes=A] i */
  if (!eqn_is(&E[q], FT_P_SUB, 2) || E[q].in[0] != x || E[q].in[1] != g) return false;
  const ft_var *h = E[q++].out[0];
  if (!eqn_is(&E[q], FT_P_EXP, 1) || E[q].in[0] != h) return false;
  const ft_var *iv = E[q++].out[0];
  if (!eqn_is(&E[q], FT_P_REDUCE_SUM, 1) || E[q].in[0] != iv || !same_axes(&E[0], &E[q])) return false;
  const ft_var *sum = E[q].out[0];
  /* The intermediates are read exactly where the pattern reads them: once
   * each (c twice), inside the pattern, and nowhere else. */
  const ft_var *internal[8] = {b, c, d, ev, g, h, iv, z};
  int want[8] = {1, 2, 1, 1, 1, 1, 1, 1};
  bool *live = ft_live_eqns(j);
  if (!live) return false; /* out of memory: the equations run one by one */
  for (int k = 0; k < 8; k++) {
    if (!internal[k]) continue;
    if (used_outside(j, live, internal[k], i, i + n_eqns - 1)) {
      free(live);
      return false;
    }
    int seen = 0;
    for (int e = 0; e < n_eqns; e++)
      for (int a = 0; a < E[e].n_in; a++) seen += E[e].in[a] == internal[k];
    if (seen != want[k]) {
      free(live);
      return false;
    }
  }
  free(live);
  int64_t rows = 1, n = 1;
  for (int k = 0; k < r; k++) *(k < r - nk ? &rows : &n) *= x->aval.dims[k];
  if (rows < 1 || n < 1) return false;
  pat->x = x;
  pat->shift = f;
  pat->sum = sum;
  pat->rows = rows;
  pat->n = n;
  pat->n_eqns = n_eqns;
  return true;
}

void ft_lse_rows(const float *x, int64_t rows, int64_t n, float *pm, float *ps, float *shift, float *sum) {
  int64_t nb = (n + FT_VM_LSE_BLOCK - 1) / FT_VM_LSE_BLOCK;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    for (int64_t b = 0; b < nb; b++) {
      int64_t len = n - b * FT_VM_LSE_BLOCK < FT_VM_LSE_BLOCK ? n - b * FT_VM_LSE_BLOCK : FT_VM_LSE_BLOCK;
      ps[b] = ft_vm_lse_block_f32(xr + b * FT_VM_LSE_BLOCK, len, &pm[b]);
    }
    sum[r] = ft_vm_lse_finish_f32(xr, n, pm, ps, nb, &shift[r]);
  }
}
