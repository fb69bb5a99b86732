/* src/transforms/vmap.h: the internal header of vmap (batching), jacfwd,
 * jacrev and hessian (DESIGN.md §4). Sections follow the files:
 *   vmap.c              the driver: batch-dim bookkeeping, ft_vmap,
 *                       batching of sub-jaxprs, axis helpers
 *   batching_rules.c    one batching rule per primitive (or the reason why not)
 *   batching_control.c  cond, while, scan, jit, custom calls, and the
 *                       lane-loop fallback (a scan over the batch)
 *   jac.c               jacfwd = vmap∘jvp, jacrev = vmap∘vjp, hessian
 *
 * Structure follows JAX's batching: every value of the source carries a
 * batch dimension (an axis of its batched value) or BT_NOT_MAPPED. An
 * equation none of whose inputs is mapped is copied unchanged; otherwise the
 * primitive's rule emits batched equations and says where the batch
 * dimension of each output is.
 *
 * Uses the equation emitter of transforms.h (tx) read-only; owns nothing
 * there. */
#ifndef FT_VMAP_H
#define FT_VMAP_H

#include "transforms/transforms.h"

#define BT_NOT_MAPPED (-1)

/* Source var -> (target var, batch dim), indexed by source var id. */
typedef struct bt_state {
  ft_ctx *ctx;
  int64_t size;       /* the batch size */
  ft_var **val;
  int8_t *bd;
  uint32_t cap;
} bt_state;

bool bt_state_init(bt_state *s, ft_ctx *ctx, int64_t size, uint32_t cap);
void bt_state_free(bt_state *s);

/* One equation to batch. Inputs are target atoms with their batch dims; the
 * rule writes the outputs (target vars) and their batch dims. */
typedef struct bt_call {
  bt_state *s;
  tx *t;
  const ft_eqn *e;     /* the source equation */
  ft_pval *params;     /* its params, cloned into the target arena */
  int n_in, n_out;
  ft_var **x;
  int *xb;
  ft_var **y;
  int *yb;
} bt_call;

/* ================================================================= vmap.c */

/* Emits into t the batched form of src (its constvars must already be
 * mapped in s, unbatched). in/in_bd per src input; writes out/out_bd. */
bool bt_into(bt_state *s, tx *t, const ft_jaxpr *src, ft_var *const *in, const int *in_bd,
             ft_var **out, int *out_bd);

/* The batched src as a sub-jaxpr in arena a: input i has its batch dim at
 * axis 0 when in_b[i] (else its own aval); output k is batched (axis 0) when
 * the computation makes it so or force_out[k] (force_out may be NULL).
 * out_b (may be NULL) receives which outputs are batched. src's constvars
 * stay (unbatched) constvars. */
ft_jaxpr *bt_batch_jaxpr(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *src, int64_t size,
                         const bool *in_b, const bool *force_out, bool *out_b);

/* Axis helpers. All return NULL on failure (sticky on t). */
/* Moves axis `from` of x to position `to` (a transpose; identity: x). */
ft_var *bt_moveaxis(tx *t, ft_var *x, int from, int to);
/* x with its batch dim at `to`; an unmapped x (bd < 0) is broadcast to
 * size along a new axis at `to`. */
ft_var *bt_match(tx *t, ft_var *x, int bd, int to, int64_t size);
/* x with a new axis of the given size inserted at `at` (broadcast_in_dim). */
ft_var *bt_insert_axis(tx *t, ft_var *x, int at, int64_t size);

/* An int tuple param in t's arena; list: printed with [ ]. */
ft_pval bt_ints(tx *t, int n, const int64_t *v, bool list);

/* ======================================================= batching_rules.c */

/* NULL when p has a batching rule, else "unsupported: why" (static). */
const char *ft_batch_rule_status(ft_prim p);
/* True when p is batched by the lane loop (batching_control.c) rather than
 * by a rule of its own. */
bool bt_uses_lane_loop(ft_prim p);
/* Batches a non-control-flow equation with at least one mapped input. */
bool bt_rule(bt_call *c);
/* ad_linalg.c */
bool bt_linalg(bt_call *c);
/* ad_ragged.c: ragged_dot_general (JAX's rule, every operand at axis 0) */
bool bt_ragged(bt_call *c);

/* ===================================================== batching_control.c */

/* Batches cond, while, scan, jit, custom_jvp_call, custom_vjp_call. */
bool bt_control(bt_call *c);
/* The fallback for primitives without a rule of their own: a scan over the
 * batch whose body is the unbatched equation, so lane b computes exactly
 * what the unbatched program computes on slice b. Outputs at axis 0. */
bool bt_lane_loop(bt_call *c);

#endif /* FT_VMAP_H */
