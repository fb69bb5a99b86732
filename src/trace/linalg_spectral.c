/* src/trace/linalg_spectral.c: the C tracing API of jnp.linalg's spectral
 * and orthogonal decompositions (include/frankentrace.h: ft_eigh, ft_svd,
 * ft_qr, ft_eig), emitting the equations jnp.linalg emits (without its jit
 * wrappers): eigh symmetrizes its input as (a + a^T) / 2 first, as
 * jnp.linalg.eigh(symmetrize_input=True) does. */
#include "trace.h"

static ft_tracer *root_one(ft_val *a, const char *what) {
  ft_val *ops[1] = {a};
  ft_tracer *root = ft__root_of(NULL, what, 1, ops);
  if (root && a->v->aval.rank < 2) {
    ft__fail(root, FT_ERR_SHAPE, "%s: operand must have rank >= 2 (a matrix or a batch of them)",
             what);
    return NULL;
  }
  return root;
}

/* (a + a^T) / 2 over the last two axes (jax.lax.linalg.symmetrize). */
static ft_val *symmetrize(ft_tracer *root, ft_val *a) {
  int r = a->v->aval.rank;
  int64_t perm[FT_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 1] = r - 2, perm[r - 2] = r - 1;
  ft_pval *ps = ft__params(root, FT_P_TRANSPOSE);
  if (!ps) return NULL;
  ft__set(ps, FT_P_TRANSPOSE, "permutation", ft__ints(root, r, perm));
  ft_val *at = ft__emit1(root, FT_P_TRANSPOSE, 1, &a, ps);
  if (!at) return NULL;
  ft_val *s = ft__emit1(root, FT_P_ADD, 2, (ft_val *[]){a, at}, NULL);
  ft_val *two = ft__lit(root, a->v->aval.dtype, 2.0, false);
  if (!s || !two) return NULL;
  return ft__emit1(root, FT_P_DIV, 2, (ft_val *[]){s, two}, NULL);
}

int ft_eigh(ft_val *a, bool lower, bool symmetrize_input, ft_val **w, ft_val **v) {
  ft_tracer *root = root_one(a, "eigh");
  if (!root) return -1;
  const ft_aval *av = &a->v->aval;
  if (av->dims[av->rank - 1] != av->dims[av->rank - 2]) {
    ft__fail(root, FT_ERR_SHAPE, "eigh: operand must be square in its last two axes, got %lld x %lld",
             (long long)av->dims[av->rank - 2], (long long)av->dims[av->rank - 1]);
    return -1;
  }
  ft_val *x = symmetrize_input ? symmetrize(root, a) : a;
  ft_pval *ps = x ? ft__params(root, FT_P_EIGH) : NULL;
  if (!ps) return -1;
  ft__set(ps, FT_P_EIGH, "lower", ft_pv_bool(lower));
  ft_val *out[2];
  if (ft__emit(root, FT_P_EIGH, 1, &x, ps, out, 2) != 2) return -1;
  if (w) *w = out[1];
  if (v) *v = out[0];
  return 2;
}

int ft_svd(ft_val *a, bool full_matrices, bool compute_uv, ft_val **u, ft_val **s, ft_val **vh) {
  ft_tracer *root = root_one(a, "svd");
  ft_pval *ps = root ? ft__params(root, FT_P_SVD) : NULL;
  if (!ps) return -1;
  ft__set(ps, FT_P_SVD, "full_matrices", ft_pv_bool(full_matrices));
  ft__set(ps, FT_P_SVD, "compute_uv", ft_pv_bool(compute_uv));
  ft_val *out[3];
  int n = ft__emit(root, FT_P_SVD, 1, &a, ps, out, 3);
  if (n != (compute_uv ? 3 : 1)) return -1;
  if (s) *s = out[0];
  if (compute_uv) {
    if (u) *u = out[1];
    if (vh) *vh = out[2];
  }
  return n;
}

int ft_eig(ft_val *a, bool compute_vectors, ft_val **w, ft_val **v) {
  ft_tracer *root = root_one(a, "eig");
  ft_pval *ps = root ? ft__params(root, FT_P_EIG) : NULL;
  if (!ps) return -1;
  ft__set(ps, FT_P_EIG, "compute_right_eigenvectors", ft_pv_bool(compute_vectors));
  ft_val *out[2];
  int n = ft__emit(root, FT_P_EIG, 1, &a, ps, out, 2);
  if (n != (compute_vectors ? 2 : 1)) return -1;
  if (w) *w = out[0];
  if (compute_vectors && v) *v = out[1];
  return n;
}

int ft_qr(ft_val *a, ft_qr_mode mode, ft_val **q, ft_val **r) {
  ft_tracer *root = root_one(a, "qr");
  if (!root) return -1;
  if ((unsigned)mode > FT_QR_R) {
    ft__fail(root, FT_ERR_INVALID_ARG, "qr: invalid mode %d", (int)mode);
    return -1;
  }
  ft_pval *ps = ft__params(root, FT_P_QR);
  if (!ps) return -1;
  ft__set(ps, FT_P_QR, "full_matrices", ft_pv_bool(mode == FT_QR_COMPLETE));
  ft_val *out[2];
  if (ft__emit(root, FT_P_QR, 1, &a, ps, out, 2) != 2) return -1;
  if (mode == FT_QR_R) {
    if (r) *r = out[1];
    return 1;
  }
  if (q) *q = out[0];
  if (r) *r = out[1];
  return 2;
}
