/* src/runtime/guard.c: the run-time checks of hardened mode that both
 * engines share (DESIGN.md §9): NaN/Inf in results, and the call boundary
 * (avals, byte counts, alignment, aliasing). Each firing goes through
 * ft_guard_fire (src/ir/ctx.c), which keeps it on the context and writes
 * the ledger's guard record. Strict mode never calls these: its fast path
 * pays one branch per call. */
#include <string.h>

#include "runtime.h"

/* Whether the 16/32/64-bit float of the given exponent mask is NaN or Inf. */
#define NONFINITE_LOOP(T, MASK)                                 \
  for (int64_t i = 0; i < n; i++) {                             \
    T b;                                                        \
    memcpy(&b, (const char *)data + (size_t)i * sizeof b, sizeof b); \
    if ((b & (MASK)) == (MASK)) {                               \
      if (!count) first = i / per;                              \
      count++;                                                  \
    }                                                           \
  }

int64_t ft_nonfinite_count(const ft_aval *a, const void *data, int64_t *first_out) {
  ft_dtype dt = a->dtype;
  if (!ft_dtype_is_inexact(dt)) return 0;
  int per = ft_dtype_is_complex(dt) ? 2 : 1;
  int64_t n = ft_aval_size(a) * per, count = 0, first = -1;
  switch (dt) {
  case FT_F16: NONFINITE_LOOP(uint16_t, 0x7c00u) break;
  case FT_BF16: NONFINITE_LOOP(uint16_t, 0x7f80u) break;
  case FT_F32: case FT_C64: NONFINITE_LOOP(uint32_t, 0x7f800000u) break;
  case FT_F64: case FT_C128: NONFINITE_LOOP(uint64_t, UINT64_C(0x7ff0000000000000)) break;
  default: break;
  }
  if (first_out) *first_out = first;
  return count;
}

ft_status ft_guard_results(ft_ctx *ctx, const ft_jaxpr *j, int eqn, const char *prim, int n,
                           ft_array *const *out) {
  for (int k = 0; k < n; k++) {
    if (!out[k]) continue;
    int64_t first, c = ft_nonfinite_count(&out[k]->aval, out[k]->data, &first);
    if (!c) continue;
    char av[128];
    ft_aval_str(&out[k]->aval, av, sizeof av);
    ft_status st =
        eqn < 0 ? ft_guard_fire(ctx, FT_GUARD_NONFINITE, true, j, -1, "", k,
                                "NaN/Inf in output %d (%s): %lld element(s), the first at flat "
                                "index %lld", k, av, (long long)c, (long long)first)
                : ft_guard_fire(ctx, FT_GUARD_NONFINITE, true, j, eqn, prim, k,
                                "NaN/Inf appears in result %d (%s) of equation %d (%s): %lld "
                                "element(s), the first at flat index %lld; its inputs had none",
                                k, av, eqn, prim, (long long)c, (long long)first);
    if (st) return st;
  }
  return FT_OK;
}

/* One array at the boundary: its aval against the program's, its byte
 * count against the aval, its alignment. NULL when it passes, else why. */
static const char *boundary_fault(const ft_aval *want, const ft_array *a, char *buf, size_t n) {
  char s1[128], s2[128];
  if (!a) return "NULL";
  if (!ft_aval_eq(want, &a->aval)) {
    snprintf(buf, n, "expected %s, got %s", ft_aval_str(want, s1, sizeof s1),
             ft_aval_str(&a->aval, s2, sizeof s2));
    return buf;
  }
  if (!ft_aval_size_ok(&a->aval) ||
      a->nbytes != (size_t)ft_aval_size(&a->aval) * ft_dtype_size(a->aval.dtype)) {
    snprintf(buf, n, "holds %zu bytes where %s needs %zu", a->nbytes,
             ft_aval_str(want, s1, sizeof s1),
             (size_t)ft_aval_size(&a->aval) * ft_dtype_size(a->aval.dtype));
    return buf;
  }
  if (!a->data || ((uintptr_t)a->data % FT_ARRAY_ALIGN) != 0) {
    snprintf(buf, n, "data at %p is not %d-byte aligned", a->data, (int)FT_ARRAY_ALIGN);
    return buf;
  }
  return NULL;
}

static bool overlaps(const ft_array *a, const ft_array *b) {
  uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
  size_t na = a->nbytes ? a->nbytes : 1, nb = b->nbytes ? b->nbytes : 1;
  return a0 < b0 + nb && b0 < a0 + na;
}

static ft_status boundary_fail(ft_ctx *ctx, const ft_jaxpr *j, ft_status st, int out_k,
                               const char *msg) {
  ft_set_error(ctx, st, "call boundary: %s", msg);
  ft_status g = ft_guard_fire(ctx, FT_GUARD_CALL, false, j, -1, "", out_k,
                              "call boundary: %s; the call fails", msg);
  return g ? g : st;
}

ft_status ft_guard_boundary(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *in,
                            int n_out, ft_array *const *out) {
  int nc = j->const_data ? 0 : j->n_const;
  char why[400], msg[600];
  for (int k = 0; k < n_args && k < nc + j->n_in; k++) {
    const ft_var *v = k < nc ? j->constvars[k] : j->invars[k - nc];
    const char *f = boundary_fault(&v->aval, in[k], why, sizeof why);
    if (!f) continue;
    snprintf(msg, sizeof msg, "%s %d: %s", k < nc ? "constant input" : "input", k < nc ? k : k - nc,
             f);
    return boundary_fail(ctx, j, in[k] && in[k]->aval.dtype != v->aval.dtype ? FT_ERR_TYPE
                                 : in[k] && !ft_aval_eq(&v->aval, &in[k]->aval) ? FT_ERR_SHAPE
                                                                              : FT_ERR_INVALID_ARG,
                         -1, msg);
  }
  for (int k = 0; out && k < n_out && k < j->n_out; k++) {
    const ft_aval *want = &j->outvars[k]->aval;
    const char *f = boundary_fault(want, out[k], why, sizeof why);
    if (f) {
      snprintf(msg, sizeof msg, "output %d: %s", k, f);
      return boundary_fail(ctx, j, out[k] && out[k]->aval.dtype != want->dtype ? FT_ERR_TYPE
                                   : out[k] && !ft_aval_eq(want, &out[k]->aval) ? FT_ERR_SHAPE
                                                                                : FT_ERR_INVALID_ARG,
                           k, msg);
    }
    for (int i = 0; i < n_args; i++)
      if (in[i] && overlaps(out[k], in[i])) {
        snprintf(msg, sizeof msg, "output %d shares memory with argument %d", k, i);
        return boundary_fail(ctx, j, FT_ERR_INVALID_ARG, k, msg);
      }
    for (int i = 0; i < k; i++)
      if (overlaps(out[k], out[i])) {
        snprintf(msg, sizeof msg, "output %d shares memory with output %d", k, i);
        return boundary_fail(ctx, j, FT_ERR_INVALID_ARG, k, msg);
      }
  }
  return FT_OK;
}
