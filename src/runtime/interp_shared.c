/* src/runtime/interp_shared.c: the interpreter rules whose bodies the JIT
 * also runs (runtime.h, "rules shared with the JIT"). A body checks an
 * equation against its operands' avals, then computes into arrays it is
 * given with scratch it is given: the interpreter allocates both here
 * (ft_interp_via_into); the JIT's routine steps (src/lower/routines.c)
 * pass views of the program's buffers and scratch from its arena, so a
 * compiled call allocates nothing and computes with the interpreter's own
 * C, bit for bit. */
#include <stdlib.h>

#include "runtime.h"
#include "runtime/lapack.h"

ft_rule_into_fn ft_rule_into_for(ft_prim p) {
  switch (p) {
  case FT_P_GATHER: return ft_gather_into;
  case FT_P_SCATTER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL: case FT_P_SCATTER_MIN:
  case FT_P_SCATTER_MAX: case FT_P_SCATTER_SUB:
    return ft_scatter_into;
  case FT_P_POLYNOMIAL: return ft_polynomial_into;
  case FT_P_STACK: return ft_stack_into;
  case FT_P_UNSTACK: return ft_unstack_into;
  case FT_P_TILE: return ft_tile_into;
  case FT_P_OPTIMIZATION_BARRIER: return ft_opt_barrier_into;
  case FT_P_PLATFORM_INDEX: return ft_platform_index_into;
  case FT_P_EMPTY: return ft_empty_into;
  case FT_P_SELECT_AND_GATHER_ADD: return ft_select_and_gather_add_into;
  case FT_P_SELECT_AND_SCATTER_ADD: return ft_select_and_scatter_add_into;
  case FT_P_REDUCE_WINDOW_SUM: case FT_P_REDUCE_WINDOW_MAX: case FT_P_REDUCE_WINDOW_MIN:
    return ft_reduce_window_into;
  case FT_P_CONV_GENERAL_DILATED: return ft_conv_into;
  case FT_P_TOP_K: return ft_top_k_into;
  case FT_P_SORT: return ft_sort_into;
  case FT_P_SEARCHSORTED: return ft_searchsorted_into;
  case FT_P_FREXP: case FT_P_LDEXP: return ft_frexp_ldexp_into;
  case FT_P_NONZERO: return ft_nonzero_into;
  case FT_P_APPROX_TOP_K: return ft_approx_top_k_into;
  case FT_P_CUMSUM: case FT_P_CUMPROD: case FT_P_CUMMAX: case FT_P_CUMMIN: case FT_P_CUMLOGSUMEXP:
    return ft_cumulative_into;
  case FT_P_REDUCE_PRECISION: return ft_reduce_precision_into;
  case FT_P_REDUCE_SUM: case FT_P_REDUCE_PROD: case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN:
  case FT_P_REDUCE_AND: case FT_P_REDUCE_OR: case FT_P_ARGMAX: case FT_P_ARGMIN:
  case FT_P_REDUCE_XOR:
    return ft_reduce_into;
  case FT_P_DOT_GENERAL: return ft_dot_into;
  case FT_P_RAGGED_DOT_GENERAL: return ft_ragged_dot_into;
  case FT_P_RANDOM_SEED: case FT_P_RANDOM_BITS: case FT_P_RANDOM_SPLIT: case FT_P_RANDOM_FOLD_IN:
  case FT_P_RANDOM_WRAP: case FT_P_RANDOM_UNWRAP: case FT_P_RANDOM_CLONE: case FT_P_THREEFRY2X32:
  case FT_P_RANDOM_GAMMA:
    return ft_random_into; /* (rng_bit_generator has no body: docs/random.md) */
  default: return ft_linalg_rule_into_for(p); /* LAPACK-backed linear algebra: lapack.c */
  }
}

size_t ft_rule_scratch(const ft_eqn *e) {
  switch (e->prim) {
  case FT_P_SORT: {
    const ft_aval *a = &e->in[0]->aval;
    int64_t dim = ft_param_int(e, "dimension", -1);
    int64_t len = dim >= 0 && dim < a->rank ? a->dims[dim] : 0;
    return sizeof(int64_t) * (size_t)(2 * len + 1);
  }
  case FT_P_REDUCE_WINDOW_SUM: case FT_P_REDUCE_WINDOW_MAX: case FT_P_REDUCE_WINDOW_MIN:
    return ft_reduce_window_scratch(e);
  case FT_P_TOP_K: return ft_top_k_scratch(e);
  case FT_P_APPROX_TOP_K: return ft_approx_top_k_scratch(e);
  case FT_P_CONV_GENERAL_DILATED: return ft_conv_scratch(e);
  case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD: return ft_select_and_scratch(e);
  case FT_P_REDUCE_SUM: case FT_P_REDUCE_PROD: case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN:
  case FT_P_REDUCE_AND: case FT_P_REDUCE_OR: case FT_P_ARGMAX: case FT_P_ARGMIN:
  case FT_P_REDUCE_XOR:
    return ft_reduce_scratch(e);
  case FT_P_DOT_GENERAL: return ft_dot_scratch(e);
  case FT_P_RAGGED_DOT_GENERAL: return ft_ragged_dot_scratch(e);
  default: return ft_linalg_rule_scratch(e);
  }
}

ft_status ft_interp_via_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_rule_into_fn f = ft_rule_into_for(e->prim);
  FT_ASSERT(f != NULL);
  ft_status st = f(ctx, e, in, NULL, NULL); /* errors before anything is allocated */
  if (st || (st = ft_interp_alloc_outs(ctx, e, out))) return st;
  size_t nb = ft_rule_scratch(e);
  void *scratch = nb ? malloc(nb) : NULL;
  if (nb && !scratch) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  else st = f(ctx, e, in, out, scratch);
  free(scratch);
  if (st)
    for (int k = 0; k < e->n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}
