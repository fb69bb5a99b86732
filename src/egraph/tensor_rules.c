/* src/egraph/tensor_rules.c: the tensor rule sets (DESIGN.md §5) in the
 * engine's rule language, the guards and param functions they name, and
 * the coverage status of each primitive.
 *
 * Tiers. `exact` rules keep every output bit for every input under this
 * project's interpreter and JIT (NaN payloads aside: docs/determinism.md
 * makes all NaNs equal; x*1 quiets a signalling NaN). Each one is checked
 * by tests/egraph/test_tensor.c on >= 10,000 random inputs per rule and
 * dtype with -0.0, NaNs, infinities and subnormals, bit for bit. The
 * `algebraic` tier holds identities of real numbers that may change
 * rounding, the sign of zero or NaN/Inf results; it runs only when asked.
 *
 * Patterns without params (`(mul ?x ?c)`) match nodes whose params are all
 * schema defaults (tensor.c leaves defaults out of a node's key), e.g. a mul
 * without out_dtype. Guards read the analysis (avals, splat constants). */
#include <string.h>

#include "egraph/tensor.h"

static const char EXACT_RULES[] =
    "# identities\n"
    "mul-one: ?r = (mul ?x ?c) => ?x if is_one(?c), same_aval(?r, ?x)\n"
    "one-mul: ?r = (mul ?c ?x) => ?x if is_one(?c), same_aval(?r, ?x)\n"
    "div-one: ?r = (div ?x ?c) => ?x if is_one(?c), same_aval(?r, ?x)\n"
    "add-neg-zero: ?r = (add ?x ?c) => ?x if is_add_identity(?c), same_aval(?r, ?x)\n"
    "neg-zero-add: ?r = (add ?c ?x) => ?x if is_add_identity(?c), same_aval(?r, ?x)\n"
    "add-any-neg-zero: ?r = (add_any ?x ?c) => ?x if is_add_identity(?c), same_aval(?r, ?x)\n"
    "neg-zero-add-any: ?r = (add_any ?c ?x) => ?x if is_add_identity(?c), same_aval(?r, ?x)\n"
    "sub-zero: ?r = (sub ?x ?c) => ?x if is_sub_identity(?c), same_aval(?r, ?x)\n"
    "neg-neg: (neg (neg ?x)) => ?x\n"
    "select-same: ?r = (select_n ?p ?x ?x) => ?x if same_aval(?r, ?x)\n"
    "max-self: (max ?x ?x) => ?x\n"
    "min-self: (min ?x ?x) => ?x\n"
    "comm-add: (add ?a ?b) => (add ?b ?a)\n"
    "comm-mul: (mul ?a ?b) => (mul ?b ?a)\n"
    "# layout algebra\n"
    "transpose-transpose: (transpose[?p] (transpose[?q] ?x)) => (transpose[@perm_compose(?p, ?q)] ?x)\n"
    "transpose-id: (transpose[?p] ?x) => ?x if perm_identity(?p)\n"
    "reshape-reshape: (reshape[?p] (reshape[?q] ?x)) => (reshape[?p] ?x) if plain_reshape(?p), plain_reshape(?q)\n"
    "reshape-id: (reshape[?p] ?x) => ?x if plain_reshape(?p), node_aval_is(?p, ?x)\n"
    "broadcast-broadcast: (broadcast_in_dim[?p] (broadcast_in_dim[?q] ?x)) => (broadcast_in_dim[@bcast_compose(?p, ?q)] ?x)\n"
    "broadcast-id: (broadcast_in_dim[?p] ?x) => ?x if node_aval_is(?p, ?x)\n"
    "slice-slice: (slice[?p] (slice[?q] ?x)) => (slice[@slice_compose(?p, ?q)] ?x)\n"
    "slice-id: (slice[?p] ?x) => ?x if node_aval_is(?p, ?x)\n"
    "slice-concat2-0: (slice[?p] (concatenate[?q] ?a ?b)) => (slice[@slice_concat0(?p, ?q)] ?a)\n"
    "slice-concat2-1: (slice[?p] (concatenate[?q] ?a ?b)) => (slice[@slice_concat1(?p, ?q)] ?b)\n"
    "slice-concat3-0: (slice[?p] (concatenate[?q] ?a ?b ?c)) => (slice[@slice_concat0(?p, ?q)] ?a)\n"
    "slice-concat3-1: (slice[?p] (concatenate[?q] ?a ?b ?c)) => (slice[@slice_concat1(?p, ?q)] ?b)\n"
    "slice-concat3-2: (slice[?p] (concatenate[?q] ?a ?b ?c)) => (slice[@slice_concat2(?p, ?q)] ?c)\n"
    "slice-concat4-0: (slice[?p] (concatenate[?q] ?a ?b ?c ?d)) => (slice[@slice_concat0(?p, ?q)] ?a)\n"
    "slice-concat4-1: (slice[?p] (concatenate[?q] ?a ?b ?c ?d)) => (slice[@slice_concat1(?p, ?q)] ?b)\n"
    "slice-concat4-2: (slice[?p] (concatenate[?q] ?a ?b ?c ?d)) => (slice[@slice_concat2(?p, ?q)] ?c)\n"
    "slice-concat4-3: (slice[?p] (concatenate[?q] ?a ?b ?c ?d)) => (slice[@slice_concat3(?p, ?q)] ?d)\n"
    "convert-id: (convert_element_type[?p] ?x) => ?x if node_aval_is(?p, ?x)\n"
    "# a reduction over axes of size 1 only moves data (docs/determinism.md: n == 1 gives x[0])\n"
    "reduce-sum-unit: (reduce_sum[?p] ?x) => (reshape[@reshape_to(?p)] ?x) if unit_reduce(?p, ?x)\n"
    "reduce-max-unit: (reduce_max[?p] ?x) => (reshape[@reshape_to(?p)] ?x) if unit_reduce(?p, ?x)\n"
    "reduce-min-unit: (reduce_min[?p] ?x) => (reshape[@reshape_to(?p)] ?x) if unit_reduce(?p, ?x)\n"
    "reduce-prod-unit: (reduce_prod[?p] ?x) => (reshape[@reshape_to(?p)] ?x) if unit_reduce(?p, ?x)\n"
    "# an operand that is a splat constant array reads the same values as a scalar\n"
    "splat-add-l: ?r = (add ?c ?x) => (add const[@scalar_of(?c)] ?x) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-add-r: ?r = (add ?x ?c) => (add ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-sub-l: ?r = (sub ?c ?x) => (sub const[@scalar_of(?c)] ?x) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-sub-r: ?r = (sub ?x ?c) => (sub ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-mul-l: ?r = (mul ?c ?x) => (mul const[@scalar_of(?c)] ?x) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-mul-r: ?r = (mul ?x ?c) => (mul ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-div-l: ?r = (div ?c ?x) => (div const[@scalar_of(?c)] ?x) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-div-r: ?r = (div ?x ?c) => (div ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-max-r: ?r = (max ?x ?c) => (max ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n"
    "splat-min-r: ?r = (min ?x ?c) => (min ?x const[@scalar_of(?c)]) if nonscalar_const(?c), same_aval(?r, ?x)\n";

static const char ALGEBRAIC_RULES[] =
    "assoc-add: (add (add ?a ?b) ?c) => (add ?a (add ?b ?c)) if assoc_ok(?a, ?b, ?c)\n"
    "assoc-add-rev: (add ?a (add ?b ?c)) => (add (add ?a ?b) ?c) if assoc_ok(?a, ?b, ?c)\n"
    "assoc-mul: (mul (mul ?a ?b) ?c) => (mul ?a (mul ?b ?c)) if assoc_ok(?a, ?b, ?c)\n"
    "assoc-mul-rev: (mul ?a (mul ?b ?c)) => (mul (mul ?a ?b) ?c) if assoc_ok(?a, ?b, ?c)\n"
    "distribute: (mul ?a (add ?b ?c)) => (add (mul ?a ?b) (mul ?a ?c)) if assoc_ok(?a, ?b, ?c)\n"
    "factor: (add (mul ?a ?b) (mul ?a ?c)) => (mul ?a (add ?b ?c)) if assoc_ok(?a, ?b, ?c)\n"
    "mul-zero: ?r = (mul ?x ?z) => const[@zeros_like(?r)] if is_zero(?z)\n"
    "zero-mul: ?r = (mul ?z ?x) => const[@zeros_like(?r)] if is_zero(?z)\n"
    "sub-self: ?r = (sub ?x ?x) => const[@zeros_like(?r)]\n"
    "add-zero: ?r = (add ?x ?z) => ?x if is_zero(?z), same_aval(?r, ?x)\n"
    "zero-add: ?r = (add ?z ?x) => ?x if is_zero(?z), same_aval(?r, ?x)\n"
    "exp-log: (exp (log ?x)) => ?x\n"
    "log-exp: (log (exp ?x)) => ?x\n"
    "dot-assoc: (dot_general[?p] (dot_general[?q] ?a ?b) ?c) => (dot_general[?p] ?a (dot_general[?q] ?b ?c)) if plain_matmul(?p), plain_matmul(?q), same_params(?p, ?q)\n"
    "dot-assoc-rev: (dot_general[?p] ?a (dot_general[?q] ?b ?c)) => (dot_general[?p] (dot_general[?q] ?a ?b) ?c) if plain_matmul(?p), plain_matmul(?q), same_params(?p, ?q)\n"
    "sum-broadcast: ?r = (reduce_sum[?p] (broadcast_in_dim[?q] ?x)) => (mul ?x const[@count_of(?p, ?q, ?x)]) if same_aval(?r, ?x)\n";

const char *ft_tensor_rules_exact(void) { return EXACT_RULES; }
const char *ft_tensor_rules_algebraic(void) { return ALGEBRAIC_RULES; }

const char *ft_egraph_rule_status(ft_prim p) {
  const ft_prim_info *pi = ft_prim_get(p);
  if (pi->family == FT_FAM_CONTROL)
    return "n/a: opaque control-flow node; sub-jaxprs optimized recursively";
  if (pi->n_out != 1)
    return "n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only";
  return NULL;
}

/* ---------------------------------------------------------------- helpers */

static const ft_tdata *cls(ft_tclient *tc, uint32_t c) {
  const ft_tdata *d = ft_tclass(tc, c);
  return d && d->kind == TD_VALUE ? d : NULL;
}

static bool aval_same(const ft_tdata *a, const ft_tdata *b) {
  return a && b && a->dtype == b->dtype && a->rank == b->rank &&
         !memcmp(a->dims, b->dims, sizeof(int64_t) * a->rank);
}

static bool const_is(const ft_tdata *d, double v) {
  if (!d || !d->has_const || ft_dtype_is_complex((ft_dtype)d->dtype)) return false;
  uint8_t b[16];
  ft_tbits_of((ft_dtype)d->dtype, v, b);
  return !memcmp(b, d->bits, ft_dtype_size((ft_dtype)d->dtype));
}

/* Int tuple param `name` of node n's decoded params; -1 if absent/None. */
static int node_ints(ft_tclient *tc, ft_enode n, const char *name, int64_t *out, int max) {
  ft_enode_view v = ft_egraph_node(tc->eg, n);
  ft_prim p = ft_tnode_prim(tc, v.op);
  const ft_pval *ps = ft_tnode_params(tc, n);
  int k = p == FT_NUM_PRIMS ? -1 : ft_prim_param_index(p, name);
  int cnt = 0;
  if (!ps || k < 0 || !ft_pv_get_ints(&ps[k], out, max, &cnt)) return -1;
  return cnt;
}

static const ft_pval *node_param(ft_tclient *tc, ft_enode n, const char *name) {
  ft_enode_view v = ft_egraph_node(tc->eg, n);
  ft_prim p = ft_tnode_prim(tc, v.op);
  const ft_pval *ps = ft_tnode_params(tc, n);
  int k = p == FT_NUM_PRIMS ? -1 : ft_prim_param_index(p, name);
  return ps && k >= 0 ? &ps[k] : NULL;
}

/* A copy of node n's params (in scratch) to modify and encode. */
static ft_pval *params_copy(ft_tclient *tc, ft_enode n, ft_prim p) {
  const ft_pval *ps = ft_tnode_params(tc, n);
  if (!ps) return NULL;
  int np = ft_prim_get(p)->n_params;
  ft_pval *c = ft_arena_alloc(tc->scratch, sizeof *c * (size_t)(np + 1));
  if (c) memcpy(c, ps, sizeof *c * (size_t)np);
  return c;
}

static void set_ints(ft_tclient *tc, ft_prim p, ft_pval *ps, const char *name, int n,
                     const int64_t *v) {
  int k = ft_prim_param_index(p, name);
  if (k >= 0) ps[k] = ft_pv_ints(tc->scratch, n, v);
}

static bool emit(ft_tclient *tc, ft_prim p, const ft_pval *ps, void *out, size_t *len) {
  int n = ft_tparams_encode(tc, p, ps, out, *len);
  if (n < 0) return false;
  *len = (size_t)n;
  return true;
}

static bool emit_const(const ft_aval *av, const uint8_t bits[16], void *out, size_t *len) {
  if (*len < 8 * (FT_MAX_RANK + 6)) return false;
  *len = ft_tconst_encode(av, bits, out);
  return true;
}

/* ------------------------------------------------------------------ guards */

#define GUARD(name) static bool name(void *ud, ft_egraph *eg, const uint32_t *a, size_t n)

GUARD(g_is_one) {
  (void)eg;
  return n == 1 && const_is(cls(ud, a[0]), 1.0);
}

/* x + c == x bitwise: c is -0.0 (floats; +0.0 would turn -0.0 into +0.0)
 * or 0 (integers). */
GUARD(g_is_add_identity) {
  (void)eg;
  const ft_tdata *d = n == 1 ? cls(ud, a[0]) : NULL;
  if (!d) return false;
  return const_is(d, ft_dtype_is_float((ft_dtype)d->dtype) ? -0.0 : 0.0);
}

/* x - c == x bitwise: c is +0.0 or integer 0. */
GUARD(g_is_sub_identity) {
  (void)eg;
  return n == 1 && const_is(cls(ud, a[0]), 0.0);
}

GUARD(g_is_zero) {
  (void)eg;
  const ft_tdata *d = n == 1 ? cls(ud, a[0]) : NULL;
  return d && (const_is(d, 0.0) || const_is(d, -0.0));
}

GUARD(g_same_aval) {
  (void)eg;
  return n == 2 && aval_same(cls(ud, a[0]), cls(ud, a[1]));
}

/* The class of node a[0] has the aval of class a[1]. */
GUARD(g_node_aval_is) {
  (void)eg;
  return n == 2 && aval_same(cls(ud, a[0]), cls(ud, a[1]));
}

GUARD(g_nonscalar_const) {
  (void)eg;
  const ft_tdata *d = n == 1 ? cls(ud, a[0]) : NULL;
  return d && d->has_const && d->rank > 0;
}

GUARD(g_plain_reshape) {
  (void)eg;
  const ft_pval *v = n == 1 ? node_param(ud, a[0], "dimensions") : NULL;
  return v && v->tag == FT_PV_NONE;
}

GUARD(g_perm_identity) {
  (void)eg;
  int64_t p[FT_MAX_RANK];
  int k = n == 1 ? node_ints(ud, a[0], "permutation", p, FT_MAX_RANK) : -1;
  if (k < 0) return false;
  for (int i = 0; i < k; i++)
    if (p[i] != i) return false;
  return true;
}

/* Reduction node a[0] over operand class a[1] reduces only axes of size 1. */
GUARD(g_unit_reduce) {
  (void)eg;
  const ft_tdata *x = n == 2 ? cls(ud, a[1]) : NULL;
  int64_t ax[FT_MAX_RANK];
  int k = x ? node_ints(ud, a[0], "axes", ax, FT_MAX_RANK) : -1;
  if (k < 0) return false;
  for (int i = 0; i < k; i++)
    if (ax[i] < 0 || ax[i] >= x->rank || x->dims[ax[i]] != 1) return false;
  return true;
}

/* dot_general node a[0] is a plain matrix product: rank-2 operands,
 * contracting lhs axis 1 with rhs axis 0, no batch axes. */
GUARD(g_plain_matmul) {
  ft_tclient *tc = ud;
  if (n != 1) return false;
  ft_enode_view v = ft_egraph_node(eg, a[0]);
  const ft_pval *dn = node_param(tc, a[0], "dimension_numbers");
  if (!dn || v.nkids != 2) return false;
  const ft_tdata *l = cls(tc, v.kids[0]), *r = cls(tc, v.kids[1]);
  if (!l || !r || l->rank != 2 || r->rank != 2) return false;
  if (dn->tag != FT_PV_TUPLE || dn->n != 2) return false;
  int64_t x[4];
  int c0 = 0, c1 = 0, b0 = 0, b1 = 0;
  const ft_pval *c = &dn->u.items[0], *b = &dn->u.items[1];
  if (c->tag != FT_PV_TUPLE || c->n != 2 || b->tag != FT_PV_TUPLE || b->n != 2) return false;
  if (!ft_pv_get_ints(&c->u.items[0], x, 4, &c0) || c0 != 1 || x[0] != 1) return false;
  if (!ft_pv_get_ints(&c->u.items[1], x, 4, &c1) || c1 != 1 || x[0] != 0) return false;
  if (!ft_pv_get_ints(&b->u.items[0], x, 4, &b0) || b0 != 0) return false;
  if (!ft_pv_get_ints(&b->u.items[1], x, 4, &b1) || b1 != 0) return false;
  return true;
}

GUARD(g_same_params) {
  (void)ud;
  if (n != 2) return false;
  ft_enode_view p = ft_egraph_node(eg, a[0]), q = ft_egraph_node(eg, a[1]);
  return p.pbytes == q.pbytes && (!p.pbytes || !memcmp(p.params, q.params, p.pbytes));
}

/* Three operands of one dtype whose non-scalar shapes agree: any
 * association of an elementwise op over them is well-typed. */
GUARD(g_assoc_ok) {
  (void)eg;
  if (n != 3) return false;
  const ft_tdata *s = NULL;
  for (int i = 0; i < 3; i++) {
    const ft_tdata *d = cls(ud, a[i]);
    if (!d || (i && d->dtype != cls(ud, a[0])->dtype)) return false;
    if (d->rank == 0) continue;
    if (s && !aval_same(s, d)) return false;
    s = d;
  }
  return true;
}

/* --------------------------------------------------------- param functions */

#define PFN(name)                                                              \
  static bool name(void *ud, ft_egraph *eg, const uint32_t *a, size_t n, void *out, size_t *len)

/* transpose[p](transpose[q](x)) = transpose[r](x) with r[i] = q[p[i]]. */
PFN(pf_perm_compose) {
  (void)eg;
  ft_tclient *tc = ud;
  int64_t p[FT_MAX_RANK], q[FT_MAX_RANK], r[FT_MAX_RANK];
  if (n != 2) return false;
  int np = node_ints(tc, a[0], "permutation", p, FT_MAX_RANK);
  int nq = node_ints(tc, a[1], "permutation", q, FT_MAX_RANK);
  if (np < 0 || np != nq) return false;
  for (int i = 0; i < np; i++) {
    if (p[i] < 0 || p[i] >= nq) return false;
    r[i] = q[p[i]];
  }
  ft_pval *ps = params_copy(tc, a[0], FT_P_TRANSPOSE);
  if (!ps) return false;
  set_ints(tc, FT_P_TRANSPOSE, ps, "permutation", np, r);
  return emit(tc, FT_P_TRANSPOSE, ps, out, len);
}

/* Outer broadcast p of inner broadcast q: operand axis i lands on outer
 * axis p.bdims[q.bdims[i]]. */
PFN(pf_bcast_compose) {
  (void)eg;
  ft_tclient *tc = ud;
  int64_t d2[FT_MAX_RANK], d1[FT_MAX_RANK], r[FT_MAX_RANK];
  if (n != 2) return false;
  int n2 = node_ints(tc, a[0], "broadcast_dimensions", d2, FT_MAX_RANK);
  int n1 = node_ints(tc, a[1], "broadcast_dimensions", d1, FT_MAX_RANK);
  if (n1 < 0 || n2 < 0) return false;
  for (int i = 0; i < n1; i++) {
    if (d1[i] < 0 || d1[i] >= n2) return false;
    r[i] = d2[d1[i]];
  }
  ft_pval *ps = params_copy(tc, a[0], FT_P_BROADCAST_IN_DIM);
  if (!ps) return false;
  set_ints(tc, FT_P_BROADCAST_IN_DIM, ps, "broadcast_dimensions", n1, r);
  return emit(tc, FT_P_BROADCAST_IN_DIM, ps, out, len);
}

typedef struct slc {
  int n;
  int64_t st[FT_MAX_RANK], lim[FT_MAX_RANK], str[FT_MAX_RANK];
} slc;

static bool read_slice(ft_tclient *tc, ft_enode s, slc *o) {
  int n1 = node_ints(tc, s, "start_indices", o->st, FT_MAX_RANK);
  int n2 = node_ints(tc, s, "limit_indices", o->lim, FT_MAX_RANK);
  if (n1 < 0 || n1 != n2) return false;
  o->n = n1;
  int n3 = node_ints(tc, s, "strides", o->str, FT_MAX_RANK);
  if (n3 < 0)
    for (int i = 0; i < n1; i++) o->str[i] = 1;
  else if (n3 != n1) return false;
  for (int i = 0; i < n1; i++)
    if (o->str[i] < 1 || o->lim[i] < o->st[i]) return false;
  return true;
}

/* Elements slice s takes along d (read_slice checked lim >= st, str >= 1). */
static int64_t slice_count(const slc *s, int d) {
  int64_t span = s->lim[d] - s->st[d];
  return span / s->str[d] + (span % s->str[d] != 0);
}

static bool emit_slice(ft_tclient *tc, ft_enode like, const slc *s, void *out, size_t *len) {
  ft_pval *ps = params_copy(tc, like, FT_P_SLICE);
  if (!ps) return false;
  bool unit = true;
  for (int i = 0; i < s->n; i++) unit = unit && s->str[i] == 1;
  set_ints(tc, FT_P_SLICE, ps, "start_indices", s->n, s->st);
  set_ints(tc, FT_P_SLICE, ps, "limit_indices", s->n, s->lim);
  int k = ft_prim_param_index(FT_P_SLICE, "strides");
  if (unit) ps[k] = ft_pv_none();
  else set_ints(tc, FT_P_SLICE, ps, "strides", s->n, s->str);
  return emit(tc, FT_P_SLICE, ps, out, len);
}

/* Element k of slice p of slice q of x is x[q.st + (p.st + k p.str) q.str]. */
PFN(pf_slice_compose) {
  (void)eg;
  ft_tclient *tc = ud;
  slc p, q, r;
  if (n != 2 || !read_slice(tc, a[0], &p) || !read_slice(tc, a[1], &q) || p.n != q.n) return false;
  r.n = p.n;
  /* TF-converted programs take one element with strides like 2^31: a
   * composition whose indices would not fit in int64 is left alone. */
  for (int d = 0; d < p.n; d++) {
    int64_t cnt = slice_count(&p, d), t;
    if (__builtin_mul_overflow(p.st[d], q.str[d], &t) || __builtin_add_overflow(q.st[d], t, &r.st[d]) ||
        __builtin_mul_overflow(p.str[d], q.str[d], &r.str[d]))
      return false;
    r.lim[d] = r.st[d];
    if (cnt > 0 && (__builtin_mul_overflow(cnt - 1, r.str[d], &t) ||
                    __builtin_add_overflow(r.st[d], t, &t) || __builtin_add_overflow(t, 1, &r.lim[d])))
      return false;
  }
  return emit_slice(tc, a[0], &r, out, len);
}

/* Slice p of concatenate q that reads operand k only: the same slice of
 * operand k, shifted. Declines otherwise. */
static bool slice_concat(ft_tclient *tc, ft_egraph *eg, const uint32_t *a, size_t n, int k,
                         void *out, size_t *len) {
  slc s;
  if (n != 2 || !read_slice(tc, a[0], &s)) return false;
  ft_enode_view q = ft_egraph_node(eg, a[1]);
  const ft_pval *dv = node_param(tc, a[1], "dimension");
  if (!dv || dv->tag != FT_PV_INT || k >= (int)q.nkids) return false;
  int64_t D = dv->u.i, off = 0;
  if (D < 0 || D >= s.n) return false;
  for (int i = 0; i < k; i++) {
    const ft_tdata *d = cls(tc, q.kids[i]);
    if (!d || d->rank != s.n) return false;
    off += d->dims[D];
  }
  const ft_tdata *dk = cls(tc, q.kids[k]);
  if (!dk || dk->rank != s.n) return false;
  int64_t cnt = slice_count(&s, (int)D);
  if (cnt < 1) return false;
  int64_t first = s.st[D], last = s.st[D] + (cnt - 1) * s.str[D];
  if (first < off || last >= off + dk->dims[D]) return false;
  s.st[D] = first - off;
  s.lim[D] = last - off + 1;
  return emit_slice(tc, a[0], &s, out, len);
}

PFN(pf_slice_concat0) { return slice_concat(ud, eg, a, n, 0, out, len); }
PFN(pf_slice_concat1) { return slice_concat(ud, eg, a, n, 1, out, len); }
PFN(pf_slice_concat2) { return slice_concat(ud, eg, a, n, 2, out, len); }
PFN(pf_slice_concat3) { return slice_concat(ud, eg, a, n, 3, out, len); }

/* A plain reshape to the aval of node a[0]'s class. */
PFN(pf_reshape_to) {
  (void)eg;
  ft_tclient *tc = ud;
  const ft_tdata *d = n == 1 ? cls(tc, a[0]) : NULL;
  if (!d) return false;
  ft_pval *ps = ft_params_default(tc->scratch, FT_P_RESHAPE);
  if (!ps) return false;
  set_ints(tc, FT_P_RESHAPE, ps, "new_sizes", d->rank, d->dims);
  return emit(tc, FT_P_RESHAPE, ps, out, len);
}

/* The scalar constant a splat class holds. */
PFN(pf_scalar_of) {
  (void)eg;
  const ft_tdata *d = n == 1 ? cls(ud, a[0]) : NULL;
  if (!d || !d->has_const) return false;
  ft_aval av = ft_aval_scalar((ft_dtype)d->dtype);
  av.weak_type = d->weak;
  return emit_const(&av, d->bits, out, len);
}

PFN(pf_zeros_like) {
  (void)eg;
  const ft_tdata *d = n == 1 ? cls(ud, a[0]) : NULL;
  if (!d) return false;
  ft_aval av = ft_tdata_aval(d);
  uint8_t b[16];
  ft_tbits_of(av.dtype, 0.0, b);
  return emit_const(&av, b, out, len);
}

/* reduce_sum[p] of broadcast_in_dim[q] of x, where the broadcast only adds
 * the axes the sum removes: n * x, with n the product of their sizes. */
PFN(pf_count_of) {
  (void)eg;
  ft_tclient *tc = ud;
  const ft_tdata *x = n == 3 ? cls(tc, a[2]) : NULL;
  int64_t ax[FT_MAX_RANK], bd[FT_MAX_RANK], shape[FT_MAX_RANK];
  int na = x ? node_ints(tc, a[0], "axes", ax, FT_MAX_RANK) : -1;
  int nb = x ? node_ints(tc, a[1], "broadcast_dimensions", bd, FT_MAX_RANK) : -1;
  int ns = x ? node_ints(tc, a[1], "shape", shape, FT_MAX_RANK) : -1;
  if (na < 0 || nb != x->rank || ns < 0 || na + nb != ns) return false;
  bool kept[FT_MAX_RANK] = {0};
  for (int i = 0; i < nb; i++) {
    if (bd[i] < 0 || bd[i] >= ns || shape[bd[i]] != x->dims[i]) return false;
    kept[bd[i]] = true;
  }
  double cnt = 1;
  for (int i = 0; i < na; i++) {
    if (ax[i] < 0 || ax[i] >= ns || kept[ax[i]]) return false;
    cnt *= (double)shape[ax[i]];
  }
  ft_aval av = ft_aval_scalar((ft_dtype)x->dtype);
  uint8_t b[16];
  ft_tbits_of(av.dtype, cnt, b);
  return emit_const(&av, b, out, len);
}

bool ft_tensor_register(ft_egraph *eg, ft_tclient *tc) {
  static const struct {
    const char *name;
    ft_egraph_guard_fn fn;
  } guards[] = {
      {"is_one", g_is_one}, {"is_add_identity", g_is_add_identity},
      {"is_sub_identity", g_is_sub_identity}, {"is_zero", g_is_zero},
      {"same_aval", g_same_aval}, {"node_aval_is", g_node_aval_is},
      {"nonscalar_const", g_nonscalar_const}, {"plain_reshape", g_plain_reshape},
      {"perm_identity", g_perm_identity}, {"unit_reduce", g_unit_reduce},
      {"plain_matmul", g_plain_matmul}, {"same_params", g_same_params},
      {"assoc_ok", g_assoc_ok},
  };
  static const struct {
    const char *name;
    ft_egraph_param_fn fn;
  } pfns[] = {
      {"perm_compose", pf_perm_compose}, {"bcast_compose", pf_bcast_compose},
      {"slice_compose", pf_slice_compose}, {"slice_concat0", pf_slice_concat0},
      {"slice_concat1", pf_slice_concat1}, {"slice_concat2", pf_slice_concat2},
      {"slice_concat3", pf_slice_concat3}, {"reshape_to", pf_reshape_to},
      {"scalar_of", pf_scalar_of}, {"zeros_like", pf_zeros_like},
      {"count_of", pf_count_of},
  };
  for (size_t i = 0; i < FT_COUNTOF(guards); i++)
    if (ft_egraph_register_guard(eg, guards[i].name, guards[i].fn, tc) != FT_EGRAPH_OK) return false;
  for (size_t i = 0; i < FT_COUNTOF(pfns); i++)
    if (ft_egraph_register_param_fn(eg, pfns[i].name, pfns[i].fn, tc) != FT_EGRAPH_OK) return false;
  return true;
}
