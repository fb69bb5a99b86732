/* src/transforms/transforms.h: the internal header of the transforms
 * (DESIGN.md §4). Sections follow the files:
 *   util.c        var maps, the equation emitter (tx), param helpers, cloning
 *   jvp.c         forward mode: the driver and jvp_jaxpr (sub-jaxprs)
 *   jvp_rules.c   one JVP rule per primitive (or the reason there is none)
 *   jvp_control.c JVP of cond, while, scan, jit, custom_jvp_call, custom_vjp_call
 *   partial_eval.c splitting a jaxpr into known and unknown parts (linearize)
 *   dce.c         dead-code elimination, recursive through control flow
 *   transpose.c   the backward pass; transpose_rules.c the per-primitive rules
 *   ad_index.c    JVP and transpose rules of gather, scatter*, top_k, cummax/cummin
 *   ad_window.c   JVP of reduce_window_max/min, transposes of reduce_window_sum and conv
 *   vjp.c         linearize, vjp, grad, value_and_grad (public entry points)
 *   pipeline.c    the hook run after every transform (verifier, ledger)
 *
 * Structure follows JAX: JVP rules produce a jaxpr whose tangent part is
 * linear in the tangent inputs; partial evaluation splits it into a primal
 * jaxpr and a linear jaxpr joined by residuals; transposing the linear jaxpr
 * gives the backward pass. Every step takes and returns jaxprs. */
#ifndef FT_TRANSFORMS_H
#define FT_TRANSFORMS_H

#include "ir/ir.h"

/* ================================================================= util.c */

/* Var maps (vmap, vflags) and deep copies (jaxpr_clone, params_clone, ...)
 * are IR-level: src/ir/ir.h, "clone.c". */

/* The equation emitter: appends equations to one jaxpr, computing output
 * avals with the shape rules (ft_infer). Failure is sticky: once an emit
 * fails (shape rule, memory), `failed` is set, the error is on ctx, and
 * every later helper returns NULL. Helpers given a NULL input return NULL
 * without touching the error, so a chain of calls needs one check. */
typedef struct tx {
  ft_ctx *ctx;
  ft_arena *a;
  ft_jaxpr *j;
  ft_jb b;
  bool failed;
  const char *what;   /* the transform, for error messages ("jvp") */
} tx;

void tx_init(tx *t, ft_ctx *ctx, ft_jaxpr *j, const char *what);
/* Records a failure (message formatted) and returns NULL. */
void *tx_fail(tx *t, ft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *tx_nomem(tx *t);

/* Emits p(in...) with params (NULL: defaults) and n_out outputs whose avals
 * come from the shape rule. Writes the new vars to out. */
bool tx_emitn(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in, int n_out,
              ft_var **out);
/* One-output form. */
/* Gives dst src's varying-axes annotation ({V:...}, copied into a) unless
 * dst has one; false when out of memory. */
bool var_copy_vma(ft_arena *a, ft_var *dst, const ft_var *src);
ft_var *tx_emit(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in);
/* Appends an equation with the given (already typed) output vars; no shape
 * rule. Used to copy equations. */
bool tx_push(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in, int n_out,
             ft_var *const *out);
/* As tx_push, storing params without a copy (see ft_jb_add_owned: it must
 * live in t's arena or be shared defaults, and is never written again). */
bool tx_push_owned(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in,
                   int n_out, ft_var *const *out);
/* Appends a copy of e sharing its arrays (e must live in t's arena). */
bool tx_push_shared(tx *t, const ft_eqn *e);

/* Scalar literal of dtype dt (float value converted for int dtypes). */
ft_var *tx_lit(tx *t, ft_dtype dt, double v);
/* An array of av filled with v: a literal for scalars, else broadcast_in_dim. */
ft_var *tx_full(tx *t, const ft_aval *av, double v);
ft_var *tx_zeros(tx *t, const ft_aval *av);

ft_var *tx_unop(tx *t, ft_prim p, ft_var *x);
/* Binary op; two float literals are folded into a literal. */
ft_var *tx_binop(tx *t, ft_prim p, ft_var *x, ft_var *y);
#define tx_add(t, x, y) tx_binop(t, FT_P_ADD, x, y)
#define tx_add_any(t, x, y) tx_binop(t, FT_P_ADD_ANY, x, y)
#define tx_sub(t, x, y) tx_binop(t, FT_P_SUB, x, y)
#define tx_mul(t, x, y) tx_binop(t, FT_P_MUL, x, y)
#define tx_div(t, x, y) tx_binop(t, FT_P_DIV, x, y)
#define tx_neg(t, x) tx_unop(t, FT_P_NEG, x)
ft_var *tx_convert(tx *t, ft_var *x, ft_dtype dt);
ft_var *tx_integer_pow(tx *t, ft_var *x, int64_t y);
/* broadcast_in_dim of x to shape (rank, dims) with broadcast_dimensions bd. */
ft_var *tx_bcast(tx *t, ft_var *x, int rank, const int64_t *dims, const int64_t *bd);
/* Broadcasts a scalar x to av's shape (identity when av is a scalar). */
ft_var *tx_bcast_scalar(tx *t, ft_var *x, const ft_aval *av);
ft_var *tx_reduce_sum(tx *t, ft_var *x, int n_axes, const int64_t *axes);
ft_var *tx_reshape(tx *t, ft_var *x, int rank, const int64_t *dims);
ft_var *tx_transpose(tx *t, ft_var *x, int rank, const int64_t *perm);
ft_var *tx_select(tx *t, ft_var *pred, ft_var *on_false, ft_var *on_true);
ft_var *tx_slice(tx *t, ft_var *x, const int64_t *start, const int64_t *limit,
                 const int64_t *strides);
ft_var *tx_pad(tx *t, ft_var *x, ft_var *padv, const int64_t *lo, const int64_t *hi,
               const int64_t *interior);
/* Implicit broadcasting of elementwise ops: a tangent to the output shape,
 * and a cotangent summed back to an operand's shape. */
ft_var *tx_bcast_to(tx *t, ft_var *v, const ft_aval *to);
ft_var *tx_unbcast(tx *t, ft_var *ct, const ft_aval *x);
/* Sum of a and b where NULL is a symbolic zero (add_any: cotangents, tangents). */
ft_var *tx_acc(tx *t, ft_var *a, ft_var *b);

/* Params of an equation of arena `from` for use in t's arena: the same
 * array when the arenas are one (params are immutable, so equations share
 * them), the shared defaults when p has none, else a deep copy. NULL (and
 * t failed) when out of memory. */
const ft_pval *params_import(tx *t, const ft_arena *from, ft_prim p, const ft_pval *ps);
/* Params: a fresh default array for p, and setting one by name. */
ft_pval *tx_params(tx *t, ft_prim p);
void pset(ft_prim p, ft_pval *ps, const char *name, ft_pval v);
/* scan's num_consts and num_carry; drops the pytree structure kept from a
 * printout (ft_in/ft_out), which no longer fits new counts. */
void scan_set_counts(ft_pval *ps, int64_t num_consts, int64_t num_carry);
/* A param by name, or NULL when p has no such param. */
const ft_pval *pget(ft_prim p, const ft_pval *ps, const char *name);
int64_t pget_int(ft_prim p, const ft_pval *ps, const char *name, int64_t dflt);
bool pget_bool(ft_prim p, const ft_pval *ps, const char *name, bool dflt);
/* Reads an int tuple param into out (max FT_MAX_RANK*2); returns the count or -1. */
int pget_ints(ft_prim p, const ft_pval *ps, const char *name, int64_t *out, int max);
ft_jaxpr *pget_jaxpr(ft_prim p, const ft_pval *ps, const char *name);

/* A fresh var with av in a (NULL on no memory). */
ft_var *var_fresh(ft_arena *a, const ft_aval *av);

bool aval_inexact(const ft_aval *a);
bool var_inexact(const ft_var *v);

/* ================================================================== jvp.c */

/* The state of one forward-mode traversal. The maps are indexed by var id,
 * and ids are unique only within one arena: every jaxpr the traversal reads
 * (the program and the sub-jaxprs of its equations) must live in `src`, the
 * program's arena. Rules therefore read sub-jaxprs from the source
 * equation's params (jvp_call.e), never from jvp_call.params, whose
 * sub-jaxprs are copies in the target arena; jvp_into checks it. */
typedef struct jvp_state {
  ft_ctx *ctx;
  const ft_arena *src; /* the arena whose var ids key the maps */
  vmap primal;   /* source var -> target var */
  vmap tangent;  /* source var -> tangent var in the target (NULL: zero) */
} jvp_state;

/* Emits into t the JVP of src: primals_in / tangents_in (NULL: zero) per
 * src input (constvars must have been mapped by the caller); writes
 * primals_out and tangents_out (NULL: symbolic zero) per src output. */
bool jvp_into(jvp_state *s, tx *t, const ft_jaxpr *src, ft_var *const *primals_in,
              ft_var *const *tangents_in, ft_var **primals_out, ft_var **tangents_out);

/* The JVP of src as a new sub-jaxpr in arena a: inputs
 * [primals..., tangents of the inputs with nonzero[i]], outputs
 * [primal outs..., tangents of outputs with out_nz[k] || instantiate[k]]
 * (instantiate may be NULL). out_nz receives which output tangents are
 * nonzero before instantiation. src constvars stay constvars. */
ft_jaxpr *jvp_jaxpr(jvp_state *s, ft_arena *a, const ft_jaxpr *src, const bool *nonzero,
                    const bool *instantiate, bool *out_nz);

/* ============================================================ jvp_rules.c */

/* Coverage (tests/coverage): NULL when p has a JVP rule (a zero tangent
 * for non-differentiable primitives counts: it is JAX's rule), else
 * "unsupported: why". */
const char *ft_jvp_rule_status(ft_prim p);

/* A primitive's JVP rule, emitted after the primal equation. */
typedef struct jvp_call {
  tx *t;
  const ft_eqn *e;        /* the source equation (read sub-jaxprs here) */
  const ft_pval *params;  /* its params, in the target arena (sub-jaxprs: copies) */
  ft_var **x;             /* primal inputs (target) */
  ft_var **dx;            /* their tangents (NULL: zero) */
  ft_var **y;             /* primal outputs (target) */
  ft_var **dy;            /* out: output tangents (NULL: zero) */
} jvp_call;

/* Emits the tangents of a non-control-flow equation. */
bool jvp_rule(jvp_call *c);
/* Emits primal and tangent of a control-flow equation (all outputs). */
bool jvp_control(jvp_state *s, jvp_call *c);

/* ========================================================= partial_eval.c */

/* Splits j (in arena a, vars shared) into
 *   known:   [known inputs (order kept)] -> [known outputs..., residuals...]
 *   unknown: [residuals..., unknown inputs] -> [unknown outputs]
 * An output is unknown if it depends on an unknown input or instantiate[k].
 * Constvars of j stay with known. Both jaxprs live in a. */
typedef struct pe_out {
  ft_jaxpr *known, *unknown;
  int n_res;
  bool *out_unknown;      /* per output of j (arena memory) */
} pe_out;

bool pe_jaxpr(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *j, const bool *in_unknown,
              const bool *instantiate, pe_out *out);

/* ================================================================== dce.c */

/* Removes in place the equations of j (which the caller owns, in its
 * arena) that do not contribute to outputs with used[k] (NULL: all), and
 * drops unused outputs when prune_outs. Control flow is pruned inside.
 * used_in (may be NULL) receives which inputs are still read. */
bool dce_jaxpr(ft_ctx *ctx, ft_jaxpr *j, const bool *used, bool prune_outs, bool *used_in);
/* A pruned copy of a sub-jaxpr (shallow: equations shared where unchanged). */
ft_jaxpr *dce_copy(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *j, const bool *used_outs,
                   bool *used_in);
/* Removes inputs of j with keep[i] false (they must be unused). */
bool jaxpr_drop_inputs(ft_jaxpr *j, const bool *keep);

/* ============================================================ transpose.c */

/* As jvp_state: the maps are indexed by var ids of `src`, the linear
 * program's arena; rules read sub-jaxprs from tr_call.e, and transpose_into
 * checks that every jaxpr it walks lives in src. */
typedef struct tr_state {
  ft_ctx *ctx;
  const ft_arena *src; /* the arena whose var ids key the maps */
  vmap primal;   /* source var -> target var (non-linear values) */
  vmap ct;       /* source var -> accumulated cotangent (NULL: zero) */
  vflags lin;    /* source var is linear */
} tr_state;

/* Emits into t the transpose of lin (sub-jaxpr or top level): inputs with
 * linear[i] are the linear ones; nonlin[i] gives target atoms of the
 * others. ct_out[k] (NULL: zero) is the cotangent of output k. Writes
 * ct_in[i] for linear inputs (NULL: zero). */
bool transpose_into(tr_state *s, tx *t, const ft_jaxpr *lin, const bool *linear,
                    ft_var *const *nonlin, ft_var *const *ct_out, ft_var **ct_in);

/* As a sub-jaxpr in a: inputs [non-linear inputs..., cts of outputs with
 * ct_nz[k]...], outputs [cts of linear inputs with out_nz[i] after the
 * transpose, or all linear inputs (zeros) when instantiate]. out_nz may be
 * NULL when instantiate. */
ft_jaxpr *transpose_jaxpr(tr_state *s, ft_arena *a, const ft_jaxpr *lin, const bool *linear,
                          const bool *ct_nz, bool instantiate, bool *out_nz);

/* ====================================================== transpose_rules.c */

/* Coverage: NULL when p has a transpose rule, "not linear" when p is
 * never linear in any operand, else "unsupported: why". */
const char *ft_transpose_rule_status(ft_prim p);

typedef struct tr_call {
  tx *t;
  const ft_eqn *e;        /* the source equation (read sub-jaxprs here) */
  const ft_pval *params;  /* in the target arena (sub-jaxprs: copies) */
  const bool *lin;        /* per input: linear */
  ft_var **x;             /* per input: target atom when non-linear, else NULL */
  ft_var **ct;            /* per output: cotangent (NULL: zero, not all NULL) */
  ft_var **ct_x;          /* out: per input cotangent (NULL: zero) */
} tr_call;

bool transpose_rule(tr_state *s, tr_call *c);

/* ad_spmd.c (issue 27): transposes of the linear collectives and of
 * shard_map. */
bool tr_collective(tr_call *c);
/* ad_ragged.c: ragged_dot_general's JVP and transpose (JAX 0.12's rules). */
bool ad_ragged_jvp(jvp_call *c);
bool ad_ragged_transpose(tr_call *c);
bool tr_shard_map(tr_state *s, tr_call *c);

/* ============================================================= ad_index.c */

/* gather, the scatter family, top_k, cummax/cummin: whether p is one of
 * them, and their JVP and transpose rules (jvp_rule and transpose_rule
 * dispatch to these). */
bool ad_index_prim(ft_prim p);
/* ad_linalg.c: cholesky, triangular_solve, lu, tridiagonal_solve, ... (issue 20) */
bool ad_linalg_prim(ft_prim p);
const char *ad_linalg_jvp_status(ft_prim p);
const char *ad_linalg_batch_status(ft_prim p);
const char *ad_linalg_transpose_status(ft_prim p);
bool jvp_linalg(jvp_call *c);
bool tr_linalg(tr_call *c);
bool jvp_custom_linear_solve(jvp_state *s, jvp_call *c);
bool jvp_index(jvp_call *c);
bool transpose_index(tr_call *c);

/* ============================================================ ad_complex.c */

/* real, imag, conj, complex: JVP (the primitive on the tangents) and
 * transpose (JAX's rules and complex-cotangent convention). */
bool ad_complex_jvp(jvp_call *c);
bool ad_complex_transpose(tr_call *c);
/* The transpose of fft with fft_type RFFT (rfft) or IRFFT (!rfft). */
bool ad_fft_real_transpose(tr_call *c, bool rfft);

/* ========================================================== ad_spectral.c */

/* eigh, svd, qr (linalg2): JVP rules as JAX's and the batching rule (the
 * batch axis to the front). ft_spectral_jvp_status: NULL or why not. */
bool ad_spectral_prim(ft_prim p);
bool jvp_spectral(jvp_call *c);
const char *ft_spectral_jvp_status(ft_prim p);
/* x[..., perm, :] (whole rows; leading axes batch), a gather (ad_linalg.c). */
ft_var *rows_permuted(tx *t, ft_var *x, ft_var *perm);
struct bt_call;
bool bt_spectral(struct bt_call *c);

/* ============================================================ ad_window.c */

/* JVP of reduce_window_max/min; transposes of reduce_window_sum and of
 * conv_general_dilated (either operand linear). */
bool jvp_reduce_window_chooser(jvp_call *c);
bool tr_reduce_window_sum(tr_call *c);
bool tr_conv(tr_call *c);

/* ============================================================== vjp.c */

/* Linearize into one arena: the jvp jaxpr of j w.r.t. inputs with diff[i],
 * split. Used by ft_linearize, ft_vjp and ft_grad. */
typedef struct lin_parts {
  ft_jaxpr *jvp;       /* [x..., t (diff inputs)...] -> [y..., ty (inexact outs)...] */
  pe_out pe;
  int n_diff_in;       /* tangent inputs */
  int n_tan_out;       /* tangent outputs */
  int *tan_out_of;     /* tangent output k belongs to primal output tan_out_of[k] */
} lin_parts;

/* ============================================================ pipeline.c */

/* Called once after each public transform with its name and params text;
 * runs the verifier (debug builds) and appends the ledger record. Returns
 * false (error on ctx) when the output fails verification. */
bool ft__after_transform(ft_ctx *ctx, const char *op, const char *params,
                         const ft_jaxpr *in, const ft_jaxpr *out);

#endif /* FT_TRANSFORMS_H */
