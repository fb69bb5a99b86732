/* src/ir/print.c: ft_jaxpr_print — a jaxpr exactly as JAX 0.12 prints it.
 *
 * This mirrors jax/_src/core.py (pp_toplevel_jaxpr, pp_jaxpr_skeleton,
 * _pp_eqn, pp_vars, pp_kv_pairs) and the per-primitive pp rules that hide
 * params, building the same document and laying it out with the same engine
 * (pp.c). What makes the text reproducible, and so must match JAX exactly:
 *  - variable names are handed out lazily, in the order the document is
 *    built (a, b, ..., z, ba, bb, ...), skipping names of hoisted jaxprs;
 *  - at the top level, results no one uses print as `_`;
 *  - a jit equation suggests its outer variable names to its sub-jaxpr's
 *    inputs and outputs;
 *  - a sub-jaxpr used twice, or with more than 10 equations, is hoisted as
 *    `let name = { ... } in` before the main jaxpr and referenced by name.
 * The canonical hash (hash.c) hashes this text. */
#include <pthread.h>
#include <string.h>

#include "ir.h"

typedef struct pctx {
  ft_pp pp;
  const char **names;     /* by var id; NULL: not named yet */
  size_t n_names;
  uint64_t fresh;         /* next index for fresh names */
  int n_shared;
  const ft_jaxpr **sh_j;  /* hoisted jaxprs and their names */
  const char **sh_name;
} pctx;

/* ---- which params JAX hides (its pp_eqn_rules) */

/* HIDE_ABSENT: a None the text did not spell (a param JAX's call path did
 * not bind: lax.reduce_max binds no out_sharding, jnp.max binds None). */
typedef enum { SHOW, HIDE, HIDE_NONE, HIDE_EMPTY, HIDE_ZERO, HIDE_ABSENT } hide_rule;

static const struct {
  ft_prim p;
  const char *param;
  hide_rule r;
} hide_table[] = {
    /* _unary_with_accuracy_pp_rule */
    {FT_P_EXP, "accuracy", HIDE_NONE},   {FT_P_EXP2, "accuracy", HIDE_NONE},
    {FT_P_LOG, "accuracy", HIDE_NONE},   {FT_P_LOG1P, "accuracy", HIDE_NONE},
    {FT_P_EXPM1, "accuracy", HIDE_NONE}, {FT_P_TANH, "accuracy", HIDE_NONE},
    {FT_P_LOGISTIC, "accuracy", HIDE_NONE}, {FT_P_SIN, "accuracy", HIDE_NONE},
    {FT_P_COS, "accuracy", HIDE_NONE},   {FT_P_TAN, "accuracy", HIDE_NONE},
    {FT_P_SQRT, "accuracy", HIDE_NONE},  {FT_P_RSQRT, "accuracy", HIDE_NONE},
    {FT_P_CBRT, "accuracy", HIDE_NONE},  {FT_P_LOG2, "accuracy", HIDE_NONE},
    /* _binary_with_out_dtype_pp_rule */
    {FT_P_MUL, "out_dtype", HIDE_NONE},
    /* _convert_elt_type_pp_rule: sharding is implied by the binder type */
    {FT_P_CONVERT_ELEMENT_TYPE, "sharding", HIDE},
    /* _broadcast_in_dim_pp_rule */
    {FT_P_BROADCAST_IN_DIM, "broadcast_dimensions", HIDE_EMPTY},
    {FT_P_BROADCAST_IN_DIM, "shape", HIDE},
    {FT_P_BROADCAST_IN_DIM, "sharding", HIDE},
    /* _dot_general_pp_rule */
    {FT_P_DOT_GENERAL, "out_sharding", HIDE},
    {FT_P_DOT_GENERAL, "precision", HIDE_NONE},
    {FT_P_DOT_GENERAL, "preferred_element_type", HIDE_NONE},
    /* _pjit_pp_rule: trivial values are stored as None by the parser */
    {FT_P_JIT, "compiler_options_kvs", HIDE_NONE}, {FT_P_JIT, "ctx_mesh", HIDE_NONE},
    {FT_P_JIT, "donated_invars", HIDE_NONE}, {FT_P_JIT, "in_layouts", HIDE_NONE},
    {FT_P_JIT, "in_shardings", HIDE_NONE},   {FT_P_JIT, "keep_unused", HIDE_NONE},
    {FT_P_JIT, "out_layouts", HIDE_NONE},    {FT_P_JIT, "out_shardings", HIDE_NONE},
    /* _custom_jvp_call_pp_rule, _custom_vjp_call_pp_rule */
    {FT_P_CUSTOM_JVP_CALL, "num_consts", HIDE_ZERO},
    {FT_P_CUSTOM_VJP_CALL, "num_consts", HIDE_ZERO},
    /* JAX 0.12's scan prints ft_in/ft_out (see scan_tree) instead */
    {FT_P_SCAN, "num_carry", HIDE}, {FT_P_SCAN, "num_consts", HIDE},
    {FT_P_REDUCE_MAX, "out_sharding", HIDE_ABSENT}, {FT_P_REDUCE_MIN, "out_sharding", HIDE_ABSENT},
    /* JAX 0.12: cond's branches_platforms is only bound by platform_dependent;
     * polynomial's unroll only when given; reshard's pp rule prints no params */
    {FT_P_COND, "branches_platforms", HIDE_NONE}, {FT_P_POLYNOMIAL, "unroll", HIDE_NONE},
    {FT_P_RESHARD, "concrete_mesh", HIDE}, {FT_P_RESHARD, "dst_sharding", HIDE},
    /* HiPrim SearchSorted keeps out_dtype out of its params dict */
    {FT_P_SEARCHSORTED, "out_dtype", HIDE},
};

/* HiJAX primitives (jax/_src/numpy/hijax.py) print their params dict in
 * its insertion order, not sorted: the names in that order, NULL-ended;
 * NULL for the others. */
static const char *const *dict_order(ft_prim p) {
  static const char *const searchsorted[] = {"side", "dimension", "batch_dims", "method", NULL};
  static const char *const nonzero[] = {"size", "axes", "out_dtype", NULL};
  static const char *const custom_root[] = {"solve_jaxpr", "has_aux", NULL}; /* CustomRoot.pp_params */
  return p == FT_P_SEARCHSORTED ? searchsorted : p == FT_P_NONZERO ? nonzero
         : p == FT_P_CUSTOM_ROOT ? custom_root : NULL;
}

enum { MAX_PARAMS = 24 };
static unsigned char hide_rules[FT_NUM_PRIMS][MAX_PARAMS];
static pthread_once_t hide_once = PTHREAD_ONCE_INIT;

static void build_hide_rules(void) {
  for (size_t i = 0; i < FT_COUNTOF(hide_table); i++) {
    int k = ft_prim_param_index(hide_table[i].p, hide_table[i].param);
    FT_ASSERT(k >= 0 && k < MAX_PARAMS); /* the table names a param prims.def lacks */
    hide_rules[hide_table[i].p][k] = (unsigned char)hide_table[i].r;
  }
}

/* The equations JAX prints with name= first (then the rest sorted). */
static bool name_first(ft_prim p) {
  return p == FT_P_JIT || p == FT_P_CUSTOM_JVP_CALL || p == FT_P_CUSTOM_VJP_CALL;
}

static bool hidden(ft_prim p, int k, const ft_pval *v) {
  switch ((hide_rule)hide_rules[p][k]) {
  case SHOW: return false;
  case HIDE: return true;
  case HIDE_NONE: return v->tag == FT_PV_NONE;
  case HIDE_EMPTY: return v->tag == FT_PV_TUPLE && v->n == 0;
  case HIDE_ZERO: return v->tag == FT_PV_INT && v->u.i == 0;
  case HIDE_ABSENT: return v->tag == FT_PV_NONE && !v->s;
  }
  return false;
}

/* ---- variable names */

/* JAX's _encode_digits_alphabetic: 0 -> a, 25 -> z, 26 -> ba. */
static void encode_alpha(uint64_t n, char *out) {
  char tmp[16];
  int k = 0;
  do {
    tmp[k++] = (char)('a' + n % 26);
    n /= 26;
  } while (n);
  for (int i = 0; i < k; i++) out[i] = tmp[k - 1 - i];
  out[k] = 0;
}

static bool is_shared_name(const pctx *pc, const char *s) {
  for (int i = 0; i < pc->n_shared; i++)
    if (!strcmp(pc->sh_name[i], s)) return true;
  return false;
}

static const char **name_slot(pctx *pc, const ft_var *v) {
  if (v->id >= pc->n_names) {
    size_t n = pc->n_names ? pc->n_names : 64;
    while (n <= v->id) n *= 2;
    const char **p = realloc((void *)pc->names, n * sizeof *p);
    if (!p) {
      pc->pp.oom = true;
      return NULL;
    }
    memset((void *)(p + pc->n_names), 0, (n - pc->n_names) * sizeof *p);
    pc->names = p;
    pc->n_names = n;
  }
  return &pc->names[v->id];
}

static const char *var_name(pctx *pc, const ft_var *v) {
  if (v->kind == FT_DROP) return "_";
  const char **slot = name_slot(pc, v);
  if (!slot) return "?";
  if (!*slot) {
    char buf[16];
    do encode_alpha(pc->fresh++, buf);
    while (is_shared_name(pc, buf));
    *slot = ft_arena_strndup(pc->pp.arena, buf, strlen(buf));
    if (!*slot) {
      pc->pp.oom = true;
      return "?";
    }
  }
  return *slot;
}

static bool named(pctx *pc, const ft_var *v) {
  if (v->kind == FT_DROP) return false; /* DropVar is never in var_names */
  const char **slot = name_slot(pc, v);
  return slot && *slot;
}

/* ---- values */

void ft_print_aval(ft_buf *b, const ft_aval *a) {
  ft_buf_puts(b, ft_dtype_name(a->dtype));
  ft_buf_puts(b, "[");
  for (int i = 0; i < a->rank; i++) ft_buf_printf(b, i ? ",%lld" : "%lld", (long long)a->dims[i]);
  ft_buf_puts(b, "]");
}

void ft_print_lit_value(ft_buf *b, const ft_var *lit) {
  ft_dtype dt = lit->aval.dtype;
  if (dt == FT_FLOAT0) ft_buf_puts(b, "(b'',)"); /* repr of numpy's zero-size void scalar: np.zeros((), float0) */
  else if (dt == FT_BOOL) ft_buf_puts(b, lit->lit.i ? "True" : "False");
  else if (ft_dtype_is_unsigned(dt)) ft_buf_printf(b, "%llu", (unsigned long long)lit->lit.u);
  else if (ft_dtype_is_signed(dt)) ft_buf_printf(b, "%lld", (long long)lit->lit.i);
  else if (ft_dtype_is_complex(dt)) ft_py_complex_repr(b, lit->lit.f, lit->lit_im);
  else ft_py_float_repr(b, lit->lit.f, true);
}

/* str() of a param value, as Python prints the object JAX stores. */
static void str_pval(ft_buf *b, const ft_pval *v) {
  switch (v->tag) {
  case FT_PV_NONE: ft_buf_puts(b, "None"); break;
  case FT_PV_BOOL: ft_buf_puts(b, v->u.b ? "True" : "False"); break;
  case FT_PV_INT:
    /* numpy scalars inside params print as np.int64(2) under numpy 2 */
    if (v->s) ft_buf_printf(b, "%s(%lld)", v->s, (long long)v->u.i);
    else ft_buf_printf(b, "%lld", (long long)v->u.i);
    break;
  case FT_PV_FLOAT: ft_py_float_repr(b, v->u.f, true); break;
  case FT_PV_DTYPE: ft_buf_puts(b, v->s ? v->s : ft_dtype_long_name(v->u.dt)); break; /* s: a <class '...'> spelling */
  case FT_PV_SYM: case FT_PV_STR: case FT_PV_OPAQUE: ft_buf_puts(b, v->s ? v->s : ""); break;
  case FT_PV_TUPLE:
    ft_buf_puts(b, v->list ? "[" : "(");
    for (int i = 0; i < v->n; i++) {
      if (i) ft_buf_puts(b, ", ");
      str_pval(b, &v->u.items[i]);
    }
    ft_buf_puts(b, v->list ? "]" : (v->n == 1 ? ",)" : ")"));
    break;
  case FT_PV_JAXPR: ft_buf_puts(b, "{ lambda ... }"); break;
  }
}

/* dot_general prints its dimension numbers as tuples of lists. */
static bool str_dotdims(ft_buf *b, const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE || v->n != 2) return false;
  for (int i = 0; i < 2; i++) {
    const ft_pval *p = &v->u.items[i];
    if (p->tag != FT_PV_TUPLE || p->n != 2) return false;
    for (int k = 0; k < 2; k++)
      if (!ft_pv_get_ints(&p->u.items[k], NULL, 0, NULL)) return false;
  }
  ft_buf_puts(b, "(");
  for (int i = 0; i < 2; i++) {
    ft_buf_puts(b, i ? ", (" : "(");
    for (int k = 0; k < 2; k++) {
      const ft_pval *l = &v->u.items[i].u.items[k];
      ft_buf_puts(b, k ? ", [" : "[");
      for (int m = 0; m < l->n; m++) {
        if (m) ft_buf_puts(b, ", ");
        str_pval(b, &l->u.items[m]);
      }
      ft_buf_puts(b, "]");
    }
    ft_buf_puts(b, ")");
  }
  ft_buf_puts(b, ")");
  return true;
}

static ft_pdoc *text_of_buf(pctx *pc, ft_buf *b) {
  if (b->failed) pc->pp.oom = true;
  ft_pdoc *d = ft_pd_textcopy(&pc->pp, b->p ? b->p : "", b->len);
  free(b->p);
  return d;
}

/* ---- documents */

static ft_pdoc *jaxpr_doc(pctx *pc, const ft_jaxpr *j);

/* pp_vars: names (with types for binders) separated by greedy breaks. */
static ft_pdoc *vars_doc(pctx *pc, ft_var *const *vs, int n, const char *sep, bool shapes) {
  ft_pp *pp = &pc->pp;
  ft_pdoc *r = ft_pd_nil(), *brk = ft_pd_cat(pp, ft_pd_text(pp, sep), ft_pd_group(pp, ft_pd_brk(pp, " ")));
  for (int i = 0; i < n; i++) {
    ft_buf b = {0};
    const ft_var *v = vs[i];
    if (v->kind == FT_LIT) {
      ft_print_lit_value(&b, v);
      ft_buf_puts(&b, ":");
      ft_print_aval(&b, &v->aval);
    } else {
      ft_buf_puts(&b, var_name(pc, v));
      if (shapes) {
        ft_buf_puts(&b, ":");
        ft_print_aval(&b, &v->aval);
        if (v->vma) ft_buf_printf(&b, "{V:%s}", v->vma);
      }
    }
    ft_pdoc *item = text_of_buf(pc, &b);
    r = i ? ft_pd_cat(pp, r, ft_pd_cat(pp, brk, item)) : item;
  }
  return ft_pd_nest(pp, 2, ft_pd_group(pp, r));
}

/* JaxprPpContext.suggest_same_var_names: each outer variable lends its name
 * to at most one unnamed inner variable. */
static void suggest(pctx *pc, ft_var *const *for_vars, int nf, ft_var *const *like_vars, int nl) {
  if (nf != nl) return;
  const ft_var **used = ft_arena_alloc(pc->pp.arena, sizeof *used * (size_t)(nf + 1));
  if (!used) {
    pc->pp.oom = true;
    return;
  }
  int n_used = 0;
  for (int i = 0; i < nf; i++) {
    const ft_var *like = like_vars[i], *fv = for_vars[i];
    if (like->kind == FT_LIT || fv->kind == FT_LIT) continue;
    bool seen = false;
    for (int k = 0; k < n_used && !seen; k++) seen = used[k] == like;
    if (seen || named(pc, fv)) continue;
    used[n_used++] = like;
    const char *nm = var_name(pc, like);
    if (fv->kind != FT_DROP) {
      const char **slot = name_slot(pc, fv);
      if (slot) *slot = nm;
    }
  }
}

static bool is_shared(const pctx *pc, const ft_jaxpr *j) {
  for (int i = 0; i < pc->n_shared; i++)
    if (pc->sh_j[i] == j) return true;
  return false;
}

static ft_pdoc *jaxprs_doc(pctx *pc, const ft_pval *v) {
  ft_pp *pp = &pc->pp;
  ft_pdoc *items = ft_pd_nil();
  for (int i = 0; i < v->n; i++) {
    ft_pdoc *d = jaxpr_doc(pc, v->u.items[i].u.jaxpr);
    items = i ? ft_pd_cat(pp, items, ft_pd_cat(pp, ft_pd_brk(pp, " "), d)) : d;
  }
  ft_pdoc *open = ft_pd_cat(pp, ft_pd_text(pp, "("), ft_pd_cat(pp, ft_pd_brk(pp, ""), items));
  return ft_pd_group(pp, ft_pd_cat(pp, ft_pd_nest(pp, 2, open),
                                   ft_pd_cat(pp, ft_pd_brk(pp, ""), ft_pd_text(pp, ")"))));
}

static bool all_jaxprs(const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE || v->n == 0) return false;
  for (int i = 0; i < v->n; i++)
    if (v->u.items[i].tag != FT_PV_JAXPR) return false;
  return true;
}

/* custom_linear_solve's params, as JAX prints the namedtuple: one text,
 * each jaxpr str(ClosedJaxpr), a program printed on its own (its own
 * names and hoisting) from column 0. */
static ft_pdoc *lstuple_doc(pctx *pc, const ft_pval *v) {
  static const char *const fields[4] = {"matvec", "vecmat", "solve", "transpose_solve"};
  ft_buf b = {0};
  ft_buf_puts(&b, "_LinearSolveTuple(");
  for (int i = 0; i < v->n && i < 4; i++) {
    const ft_pval *x = &v->u.items[i];
    ft_buf_puts(&b, i ? ", " : "");
    ft_buf_puts(&b, fields[i]);
    ft_buf_puts(&b, "=");
    if (x->tag == FT_PV_JAXPR) {
      char *s = ft_jaxpr_print(NULL, x->u.jaxpr);
      if (!s) pc->pp.oom = true;
      else ft_buf_puts(&b, s);
      free(s);
    } else {
      str_pval(&b, x);
    }
  }
  ft_buf_puts(&b, ")");
  return text_of_buf(pc, &b);
}

/* pp_kv_pair: `name=value`, sub-jaxprs as nested documents. */
static ft_pdoc *kv_doc(pctx *pc, const ft_param_spec *spec, const ft_pval *v) {
  ft_pp *pp = &pc->pp;
  ft_buf b = {0};
  ft_buf_puts(&b, spec->name);
  ft_buf_puts(&b, "=");
  ft_pdoc *key = text_of_buf(pc, &b);
  ft_pdoc *val;
  if (spec->kind == FT_PK_LSTUPLE && v->tag == FT_PV_TUPLE) {
    val = lstuple_doc(pc, v);
  } else if (v->tag == FT_PV_JAXPR) {
    val = jaxpr_doc(pc, v->u.jaxpr);
  } else if (all_jaxprs(v)) {
    val = jaxprs_doc(pc, v);
  } else {
    ft_buf s = {0};
    if (spec->kind != FT_PK_DOTDIMS || !str_dotdims(&s, v)) str_pval(&s, v);
    val = text_of_buf(pc, &s);
  }
  return ft_pd_cat(pp, key, val);
}

/* scan's ft_in/ft_out stored as None (flat lists, see normalize_scan):
 * the structure the counts give, ((None, ...), (None, ...), (None, ...)). */
static ft_pval scan_tree(pctx *pc, const ft_eqn *e, int k) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  int64_t ncon = e->params[ft_prim_param_index(FT_P_SCAN, "num_consts")].u.i;
  int64_t ncar = e->params[ft_prim_param_index(FT_P_SCAN, "num_carry")].u.i;
  if (!strcmp(pi->params[k].name, "ft_in")) {
    int64_t g[3] = {ncon, ncar, e->n_in - ncon - ncar};
    return ft_flattree_flat(pc->pp.arena, 3, g);
  }
  int64_t g[2] = {ncar, e->n_out - ncar};
  return ft_flattree_flat(pc->pp.arena, 2, g);
}

static void add_kv(pctx *pc, ft_pdoc **kvs, int *n, const ft_eqn *e, int k) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  if (hidden(e->prim, k, &e->params[k])) return;
  ft_pval v = e->params[k];
  char avs[160];
  if (pi->params[k].kind == FT_PK_AVAL) { /* HiPrims' x_aval, x1_aval, x2_aval: the operand's */
    int i = pi->params[k].name[1] == '2' ? 1 : 0;
    if (i < e->n_in) v = (ft_pval){.tag = FT_PV_OPAQUE, .s = ft_aval_str(&e->in[i]->aval, avs, sizeof avs)};
  }
  if (e->prim == FT_P_SCAN && v.tag == FT_PV_NONE && pi->params[k].name[0] == 'f')
    v = scan_tree(pc, e, k);
  ft_pdoc *d = kv_doc(pc, &pi->params[k], &v);
  *kvs = *n ? ft_pd_cat(&pc->pp, *kvs, ft_pd_cat(&pc->pp, ft_pd_brk(&pc->pp, " "), d)) : d;
  (*n)++;
}

/* pp_kv_pairs: `[a=1 b=2]`, breaking one param a line when too long. */
static ft_pdoc *params_doc(pctx *pc, const ft_eqn *e) {
  ft_pp *pp = &pc->pp;
  const ft_prim_info *pi = ft_prim_get(e->prim);
  ft_pdoc *kvs = ft_pd_nil();
  int n = 0, first = name_first(e->prim) ? ft_prim_param_index(e->prim, "name") : -1;
  const char *const *order = dict_order(e->prim);
  if (order) {
    for (int i = 0; order[i]; i++) add_kv(pc, &kvs, &n, e, ft_prim_param_index(e->prim, order[i]));
  } else {
    if (first >= 0) add_kv(pc, &kvs, &n, e, first);
    for (int k = 0; k < pi->n_params; k++)
      if (k != first) add_kv(pc, &kvs, &n, e, k);
  }
  if (!n) return ft_pd_nil();
  ft_pdoc *open = ft_pd_cat(pp, ft_pd_text(pp, "["), ft_pd_cat(pp, ft_pd_brk(pp, ""), kvs));
  return ft_pd_group(pp, ft_pd_cat(pp, ft_pd_nest(pp, 2, open),
                                   ft_pd_cat(pp, ft_pd_brk(pp, ""), ft_pd_text(pp, "]"))));
}

static const ft_jaxpr *param_jaxpr(const ft_eqn *e, const char *name) {
  int k = ft_prim_param_index(e->prim, name);
  if (k < 0 || e->params[k].tag != FT_PV_JAXPR) return NULL;
  return e->params[k].u.jaxpr;
}

/* _pp_eqn. Order matters: names are handed out as the document is built. */
static ft_pdoc *eqn_doc(pctx *pc, const ft_eqn *e) {
  ft_pp *pp = &pc->pp;
  const ft_jaxpr *sub = e->prim == FT_P_JIT ? param_jaxpr(e, "jaxpr") : NULL;
  if (sub && !is_shared(pc, sub)) {
    suggest(pc, sub->invars, sub->n_in, e->in, e->n_in);
    suggest(pc, sub->outvars, sub->n_out, e->out, e->n_out);
  }
  ft_pdoc *lhs = vars_doc(pc, e->out, e->n_out, "", true);
  ft_pdoc *prim = ft_pd_text(pp, ft_prim_get(e->prim)->name);
  ft_pdoc *params = params_doc(pc, e);
  ft_pdoc *args = ft_pd_cat(pp, ft_pd_text(pp, " "), vars_doc(pc, e->in, e->n_in, "", false));
  ft_pdoc *rhs = ft_pd_cat(pp, prim, ft_pd_cat(pp, params, args));
  if (!e->n_out) return rhs;
  return ft_pd_cat(pp, lhs, ft_pd_cat(pp, ft_pd_text(pp, " = "), rhs));
}

/* pp_jaxpr_skeleton: `{ lambda consts; invars. let eqns in (outs) }`. */
static ft_pdoc *skeleton_doc(pctx *pc, const ft_jaxpr *j) {
  ft_pp *pp = &pc->pp;
  ft_pdoc *consts = vars_doc(pc, j->constvars, j->n_const, "", true);
  ft_pdoc *ins = vars_doc(pc, j->invars, j->n_in, "", true);
  ft_pdoc *eqns = ft_pd_nil();
  for (int i = 0; i < j->n_eqn; i++) {
    ft_pdoc *d = eqn_doc(pc, &j->eqns[i]);
    eqns = i ? ft_pd_cat(pp, eqns, ft_pd_cat(pp, ft_pd_brk(pp, "; "), d)) : d;
  }
  ft_pdoc *outs = ft_pd_cat(pp, ft_pd_text(pp, "("),
                            ft_pd_cat(pp, vars_doc(pc, j->outvars, j->n_out, ",", false),
                                      ft_pd_text(pp, j->n_out == 1 ? ",)" : ")")));
  ft_pdoc *parts[] = {
      ft_pd_text(pp, "{ "), ft_pd_text(pp, "lambda "), consts, ft_pd_text(pp, "; "), ins,
      ft_pd_text(pp, ". "), ft_pd_text(pp, "let"),
      ft_pd_nest(pp, 2, ft_pd_cat(pp, ft_pd_brk(pp, " "), eqns)), ft_pd_brk(pp, " "),
      ft_pd_text(pp, "in "), outs};
  ft_pdoc *body = ft_pd_nil();
  for (size_t i = 0; i < FT_COUNTOF(parts); i++) body = ft_pd_cat(pp, body, parts[i]);
  /* " }" is inside the group: it counts when deciding to break. */
  return ft_pd_group(pp, ft_pd_cat(pp, ft_pd_nest(pp, 2, body), ft_pd_text(pp, " }")));
}

static ft_pdoc *jaxpr_doc(pctx *pc, const ft_jaxpr *j) {
  for (int i = 0; i < pc->n_shared; i++)
    if (pc->sh_j[i] == j) return ft_pd_text(&pc->pp, pc->sh_name[i]);
  return skeleton_doc(pc, j);
}

/* ---- hoisting shared sub-jaxprs (pp_toplevel_jaxpr) */

typedef struct seen {
  const ft_jaxpr *j;
  int count;
  const char *name;
} seen;

typedef struct bfs {
  const ft_jaxpr **q;
  int head, n, cap;
  seen *s;
  int n_s, cap_s;
  bool oom;
} bfs;

static void bfs_push(bfs *b, const ft_jaxpr *j) {
  if (b->n == b->cap) {
    int cap = b->cap ? b->cap * 2 : 16;
    const ft_jaxpr **q = realloc((void *)b->q, sizeof *q * (size_t)cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->q = q;
    b->cap = cap;
  }
  b->q[b->n++] = j;
}

static seen *bfs_seen(bfs *b, const ft_jaxpr *j) {
  for (int i = 0; i < b->n_s; i++)
    if (b->s[i].j == j) return &b->s[i];
  if (b->n_s == b->cap_s) {
    int cap = b->cap_s ? b->cap_s * 2 : 16;
    seen *s = realloc(b->s, sizeof *s * (size_t)cap);
    if (!s) {
      b->oom = true;
      return NULL;
    }
    b->s = s;
    b->cap_s = cap;
  }
  b->s[b->n_s] = (seen){j, 0, NULL};
  return &b->s[b->n_s++];
}

/* jaxprs_in_params, in the order JAX's params dicts hold them (while: cond
 * before body, which is the reverse of the sorted order). */
static void push_subjaxprs(bfs *b, const ft_eqn *e, const char *name) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  for (int t = 0; t < pi->n_params; t++) {
    int k = e->prim == FT_P_WHILE ? pi->n_params - 1 - t : t;
    const ft_pval *v = &e->params[k];
    int n = v->tag == FT_PV_TUPLE ? v->n : 1;
    for (int i = 0; i < n; i++) {
      const ft_pval *x = v->tag == FT_PV_TUPLE ? &v->u.items[i] : v;
      if (x->tag != FT_PV_JAXPR) continue;
      bfs_push(b, x->u.jaxpr);
      /* the entry is made at the first push, which is the first dequeue's
       * order: JAX's Counter order, which hoisting and suffixing follow */
      seen *s = bfs_seen(b, x->u.jaxpr);
      if (s && name && !s->name) s->name = name;
    }
  }
}

/* The name a jit equation gives its sub-jaxprs: name.strip("<>"). */
static const char *strip_name(ft_arena *a, const char *s) {
  size_t n = strlen(s);
  while (n && (*s == '<' || *s == '>')) s++, n--;
  while (n && (s[n - 1] == '<' || s[n - 1] == '>')) n--;
  return ft_arena_strndup(a, s, n);
}

/* Hoisted names are JAX's (pp_toplevel_jaxpr): a jit's name, the second
 * use of a name gets the suffix 1, the third 2, ... (a Counter over the
 * names handed out, suffixed ones included). Two departures, both so that
 * the text can be read back: characters the parser cannot take in a name
 * (JAX keeps `jvp(f)` or `a b` as they are) become '_', and where JAX's
 * scheme gives a name twice (a jit named `f1` beside two named `f`) the
 * suffixing goes on until the name is new. */
typedef struct name_counts {
  struct name_count {
    const char *name;
    int count;
  } *v;
  int n, cap;
} name_counts;

/* The count of name (0 if new), then one more; NULL out of memory. */
static int next_count(pctx *pc, name_counts *nc, const char *name) {
  for (int i = 0; i < nc->n; i++)
    if (!strcmp(nc->v[i].name, name)) return nc->v[i].count++;
  if (nc->n == nc->cap) {
    int cap = nc->cap ? 2 * nc->cap : 16;
    struct name_count *v = realloc(nc->v, sizeof *v * (size_t)cap);
    if (!v) return pc->pp.oom = true, 0;
    nc->v = v, nc->cap = cap;
  }
  nc->v[nc->n++] = (struct name_count){name, 1};
  return 0;
}

static bool hoist_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '<' || c == '>';
}

static const char *suffixed(pctx *pc, name_counts *nc, const char *name, int k) {
  char buf[544];
  snprintf(buf, sizeof buf, "%.512s%d", name, k);
  const char *r = ft_arena_strndup(pc->pp.arena, buf, strlen(buf));
  if (!r) return pc->pp.oom = true, NULL;
  next_count(pc, nc, r);
  return r;
}

static const char *hoisted_name(pctx *pc, const char *base, name_counts *nc) {
  size_t n = strlen(base);
  char *clean = ft_arena_alloc(pc->pp.arena, n + 1);
  if (!clean) return pc->pp.oom = true, NULL;
  for (size_t i = 0; i < n; i++) clean[i] = hoist_char(base[i]) ? base[i] : '_';
  clean[n] = 0;
  const char *name = n ? clean : "jaxpr";
  int k = next_count(pc, nc, name);
  if (k > 0) name = suffixed(pc, nc, name, k);
  while (name && !pc->pp.oom && is_shared_name(pc, name)) name = suffixed(pc, nc, name, next_count(pc, nc, name));
  return name;
}

static void find_shared(pctx *pc, const ft_jaxpr *top) {
  bfs b = {0};
  bfs_push(&b, top);
  while (b.head < b.n && !b.oom) {
    const ft_jaxpr *j = b.q[b.head++];
    seen *s = bfs_seen(&b, j);
    if (!s) break;
    s->count += 1 + (j != top && j->n_eqn > 10);
    for (int i = 0; i < j->n_eqn; i++) {
      const ft_eqn *e = &j->eqns[i];
      /* JAX names a hoisted jaxpr after its equation's `name` param, of
       * whatever primitive (core._pp_subjaxprs). custom_jvp_call and
       * custom_vjp_call have none in JAX (their pp rules make up the printed
       * name), so theirs are hoisted as `jaxpr`. */
      bool custom = e->prim == FT_P_CUSTOM_JVP_CALL || e->prim == FT_P_CUSTOM_VJP_CALL;
      int k = custom ? -1 : ft_prim_param_index(e->prim, "name");
      const char *name = NULL;
      bool printed_only = e->prim == FT_P_CUSTOM_JVP_CALL || e->prim == FT_P_CUSTOM_VJP_CALL;
      if (k >= 0 && !printed_only && e->params[k].tag == FT_PV_STR && e->params[k].s)
        name = strip_name(pc->pp.arena, e->params[k].s);
      push_subjaxprs(&b, e, name);
    }
  }
  if (b.oom) pc->pp.oom = true;
  pc->sh_j = ft_arena_alloc(pc->pp.arena, sizeof *pc->sh_j * (size_t)(b.n_s + 1));
  pc->sh_name = ft_arena_alloc(pc->pp.arena, sizeof *pc->sh_name * (size_t)(b.n_s + 1));
  if (!pc->sh_j || !pc->sh_name) pc->pp.oom = true;
  name_counts nc = {0};
  for (int i = 0; i < b.n_s && !pc->pp.oom; i++) {
    if (b.s[i].count < 2) continue;
    const char *name = hoisted_name(pc, b.s[i].name ? b.s[i].name : "jaxpr", &nc);
    pc->sh_j[pc->n_shared] = b.s[i].j;
    pc->sh_name[pc->n_shared++] = name ? name : "?";
  }
  free(nc.v);
  free((void *)b.q);
  free(b.s);
}

/* _dropvars: at the top level, results no one reads print as `_`. */
static void seed_dropvars(pctx *pc, const ft_jaxpr *j) {
  uint32_t n = ft_arena_num_var_ids(j->arena);
  unsigned char *used = calloc(n ? n : 1, 1);
  if (!used) {
    pc->pp.oom = true;
    return;
  }
  for (int i = 0; i < j->n_out; i++)
    if (j->outvars[i]->kind == FT_VAR && j->outvars[i]->id < n) used[j->outvars[i]->id] = 1;
  for (int e = j->n_eqn - 1; e >= 0; e--) {
    const ft_eqn *q = &j->eqns[e];
    for (int k = 0; k < q->n_out; k++) {
      const ft_var *v = q->out[k];
      if (v->kind != FT_VAR || (v->id < n && used[v->id])) continue;
      const char **slot = name_slot(pc, v);
      if (slot) *slot = "_";
    }
    for (int k = 0; k < q->n_in; k++)
      if (q->in[k]->kind == FT_VAR && q->in[k]->id < n) used[q->in[k]->id] = 1;
  }
  free(used);
}

static char *print_doc(pctx *pc, const ft_pdoc *d, int indent) {
  ft_buf out = {0};
  if (!pc->pp.oom) ft_pd_format(&out, d, 80, indent);
  if (pc->pp.oom || out.failed || !out.p) {
    free(out.p);
    return NULL;
  }
  return out.p;
}

static bool pctx_init(pctx *pc) {
  memset(pc, 0, sizeof *pc);
  pthread_once(&hide_once, build_hide_rules);
  pc->pp.arena = ft_arena_new();
  return pc->pp.arena != NULL;
}

static void pctx_free(pctx *pc) {
  free((void *)pc->names);
  ft_arena_free(pc->pp.arena);
}

char *ft_jaxpr_print(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_jaxpr_print: NULL jaxpr");
    return NULL;
  }
  pctx pc;
  if (!pctx_init(&pc)) {
    ft_set_error(ctx, FT_ERR_NOMEM, "ft_jaxpr_print: out of memory");
    return NULL;
  }
  seed_dropvars(&pc, j);
  find_shared(&pc, j);
  ft_pp *pp = &pc.pp;
  ft_pdoc *doc = ft_pd_nil();
  for (int i = 0; i < pc.n_shared; i++) {
    ft_pdoc *parts[] = {ft_pd_text(pp, "let "), ft_pd_text(pp, pc.sh_name[i]), ft_pd_text(pp, " = "),
                        skeleton_doc(&pc, pc.sh_j[i]), ft_pd_text(pp, " in"), ft_pd_brk(pp, " ")};
    for (size_t k = 0; k < FT_COUNTOF(parts); k++) doc = ft_pd_cat(pp, doc, parts[k]);
  }
  doc = ft_pd_cat(pp, doc, jaxpr_doc(&pc, j));
  char *s = print_doc(&pc, doc, 0);
  pctx_free(&pc);
  if (!s) ft_set_error(ctx, FT_ERR_NOMEM, "ft_jaxpr_print: out of memory");
  return s;
}

void ft_print_pval(ft_buf *b, const ft_pval *v, int indent) {
  pctx pc;
  if (!pctx_init(&pc)) {
    b->failed = true;
    return;
  }
  ft_param_spec spec = {.name = "", .kind = FT_PK_ANY};
  ft_pdoc *d = kv_doc(&pc, &spec, v);
  char *s = print_doc(&pc, d, indent);
  if (s) ft_buf_puts(b, s + 1); /* skip the "=" of the empty key */
  else b->failed = true;
  free(s);
  pctx_free(&pc);
}
