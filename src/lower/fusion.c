/* src/lower/fusion.c: planning a jaxpr into an ft_program (DESIGN.md §6).
 *
 * One pass over the equations in order. Every value is, at any time, one of:
 *   a buffer    (an input, a constant, or the result of a step),
 *   a group value (computed inside an open fusion group: a loop kernel),
 *   a view      (a strided view of a buffer or a literal: broadcast_in_dim,
 *                reshape, squeeze, expand_dims, transpose, rev, slice cost
 *                nothing until a kernel reads them).
 * An elementwise equation joins the group of one of its operands when the
 * loop shapes agree, else starts a group. A use of a group value from
 * outside its group closes the group and materializes the value (a store),
 * so a group never runs after a consumer of its results. Groups run at the
 * position of their last equation. Reductions over one strided run become
 * reduction kernels in the canonical order (a few long float outputs: two
 * kernels, block partials the threads share and their fold); dot_general
 * on f32/f64 becomes a GEMM step; the rest are fallback steps that run the
 * interpreter's rule. */
#include <string.h>

#include "lower/lower.h"
#include "lower/vmath/vm_complex.h"
#include "lower/vmath/vmath.h"

typedef enum { VK_NONE, VK_BUF, VK_GROUP, VK_VIEW } vkind;

typedef struct vinfo {
  vkind kind;
  int buf;          /* VK_BUF; VK_GROUP once materialized (else -1) */
  int group, node;  /* VK_GROUP */
  ft_access view;   /* VK_VIEW: over the var's own shape */
} vinfo;

typedef struct group {
  int kernel;
  int rank;
  int64_t dims[FT_MAX_RANK];  /* the loop shape S, uncollapsed */
  bool open;
  int last_eqn, sub, seq;
  int n_eqns, cap_eqns;
  int *eqns;
} group;

typedef struct planner {
  ft_ctx *ctx;
  ft_program *p;
  const ft_plan_options *opts;
  vinfo *v;          /* by var id */
  uint32_t nv;
  group *g;
  int n_groups, cap_groups;
  int seq;
  bool oom;
  const char **why;  /* per eqn: why it is a fallback (NULL: compiled) */
  int *uses;         /* by var id: how many equation operands and outputs read it */
} planner;

/* ----------------------------------------------------------------- helpers */
static void *grow(planner *P, void *arr, int *cap, int need, size_t es) {
  if (need <= *cap) return arr;
  int nc = *cap ? *cap * 2 : 8;
  while (nc < need) nc *= 2;
  void *n = realloc(arr, (size_t)nc * es);
  if (!n) {
    P->oom = true;
    return NULL;
  }
  memset((char *)n + (size_t)*cap * es, 0, (size_t)(nc - *cap) * es);
  *cap = nc;
  return n;
}

static int64_t count_of(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  return n;
}

static void contig(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) st[d] = s, s *= dims[d];
}

static bool dims_eq(int r1, const int64_t *d1, int r2, const int64_t *d2) {
  if (r1 != r2) return false;
  for (int d = 0; d < r1; d++)
    if (d1[d] != d2[d]) return false;
  return true;
}

/* Whether st is the contiguous layout of dims (size-1 dims ignored). */
static bool is_contig(int rank, const int64_t *dims, const int64_t *st) {
  int64_t c[FT_MAX_RANK];
  contig(rank, dims, c);
  for (int d = 0; d < rank; d++)
    if (dims[d] != 1 && st[d] != c[d]) return false;
  return true;
}

static bool all_zero(int rank, const int64_t *dims, const int64_t *st) {
  for (int d = 0; d < rank; d++)
    if (dims[d] != 1 && st[d] != 0) return false;
  return true;
}

static bool dt_native(ft_dtype dt) {
  switch (dt) {
  case FT_BOOL: case FT_I8: case FT_I16: case FT_I32: case FT_I64:
  case FT_U8: case FT_U16: case FT_U32: case FT_U64: case FT_F32: case FT_F64:
    return true;
  default:
    return false;
  }
}

/* Dtypes loop kernels load, store and compute elementwise: the native ones
 * plus f16 and bf16, kept as their bits and computed through f32 exactly as
 * the interpreter does (codegen.c, half_elem), and c64/c128 as pairs of
 * f32/f64 parts (codegen.c, cpx_elem). Reductions stay on dt_native. */
static bool dt_elem(ft_dtype dt) {
  return dt_native(dt) || dt == FT_F16 || dt == FT_BF16 || ft_dtype_is_complex(dt);
}

static int new_buf(planner *P, ft_buf_kind kind, int index, const ft_aval *av) {
  ft_program *p = P->p;
  ft_pbuf *nb = grow(P, p->bufs, &p->cap_bufs, p->n_bufs + 1, sizeof *p->bufs);
  if (!nb) return -1;
  p->bufs = nb;
  ft_pbuf *b = &p->bufs[p->n_bufs];
  b->kind = kind;
  b->index = index;
  b->aval = *av;
  b->nbytes = (size_t)ft_aval_size(av) * ft_dtype_size(av->dtype);
  return p->n_bufs++;
}

static ft_step *new_step(planner *P, ft_step_kind kind, int eqn, int sub) {
  ft_program *p = P->p;
  ft_step *ns = grow(P, p->steps, &p->cap_steps, p->n_steps + 1, sizeof *p->steps);
  if (!ns) return NULL;
  p->steps = ns;
  ft_step *s = &p->steps[p->n_steps++];
  s->kind = kind;
  s->pos = eqn * 2 + sub;
  s->seq = P->seq++;
  s->eqn = eqn;
  s->kernel = -1;
  return s;
}

/* --------------------------------------------------------- native checks */
/* The real dtype of complex dt's parts. */
static ft_dtype part_of(ft_dtype dt) { return dt == FT_C128 ? FT_F64 : FT_F32; }

/* An equation with a complex operand or result, or real/imag/conj/complex:
 * exactly the operations the interpreter defines on complex values
 * (interp_elementwise.c: neg, copy, square, abs, add, sub, mul, div,
 * eq/ne, select_n, conversions, the complex parts, iota), which cpx_elem
 * in codegen.c compiles. The rest is refused by the interpreter too, so
 * it stays a fallback step that reports the interpreter's error. */
static bool cpx_native(const ft_eqn *e, ft_dtype id, ft_dtype od, const char **why) {
  bool ci = ft_dtype_is_complex(id), co = ft_dtype_is_complex(od);
  bool same = true;
  for (int k = 0; k < e->n_in; k++) same &= e->in[k]->aval.dtype == id;
  switch (e->prim) {
  case FT_P_REAL: case FT_P_IMAG: if (ci && od == part_of(id)) return true; break;
  case FT_P_CONJ: if (co && (ci ? od == id : id == part_of(od))) return true; break;
  case FT_P_COMPLEX: if (co && same && id == part_of(od) && e->n_in == 2) return true; break;
  case FT_P_NEG: case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: case FT_P_SQUARE:
  case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: case FT_P_SIGN:
  case FT_P_ONE_MINUS_SQUARE:
    if (ci && od == id) return true;
    break;
  case FT_P_ABS: if (ci && od == part_of(id)) return true; break;
  /* the transcendentals: calls of the shared vm_complex.c functions */
#define CPX_CASE(id, name) case FT_P_##id:
  FT_VM_COMPLEX_UNARY(CPX_CASE)
#undef CPX_CASE
    if (ci && od == id) return true;
    break;
  case FT_P_POW: if (ci && same && od == id) return true; break;
  case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_SUB: case FT_P_DIV: if (ci && same && od == id) return true; break;
  case FT_P_MUL:
    if (ft_eqn_param(e, "out_dtype")->tag != FT_PV_NONE) {
      *why = "mul with out_dtype is not compiled yet";
      return false;
    }
    if (ci && same && od == id) return true;
    break;
  case FT_P_EQ: case FT_P_NE: if (ci && same && od == FT_BOOL) return true; break;
  case FT_P_SELECT_N:
    if (co && !ci && e->n_in >= 2 && e->n_in <= 16) {
      for (int k = 1; k < e->n_in; k++)
        if (e->in[k]->aval.dtype != od) goto bad;
      return true;
    }
    break;
  case FT_P_CONVERT_ELEMENT_TYPE: return true; /* every dt_elem pair */
  case FT_P_BITCAST_CONVERT_TYPE:
    *why = "bitcast_convert_type of complex values is not compiled (a routine step moves the bytes)";
    return false;
  case FT_P_IOTA: return co;
  default: break;
  }
bad:
  *why = "not an operation the interpreter defines on complex values";
  return false;
}

bool ft_lower_elem_native(const ft_eqn *e, const char **why) {
  const char *w = NULL;
  ft_dtype od = e->n_out == 1 ? e->out[0]->aval.dtype : FT_NUM_DTYPES;
  ft_dtype id = e->n_in > 0 ? e->in[0]->aval.dtype : od;
  ft_family fam = ft_prim_get(e->prim)->family;
  bool fl = od == FT_F32 || od == FT_F64 || od == FT_F16 || od == FT_BF16, isbool = id == FT_BOOL;
  if (!dt_elem(od) || !dt_elem(id)) {
    w = "dtype not compiled yet";
    goto no;
  }
  bool cpx = ft_dtype_is_complex(od) || e->prim == FT_P_REAL || e->prim == FT_P_IMAG ||
             e->prim == FT_P_CONJ || e->prim == FT_P_COMPLEX;
  for (int k = 0; k < e->n_in; k++) {
    if (!dt_elem(e->in[k]->aval.dtype)) {
      w = "operand dtype not compiled yet";
      goto no;
    }
    cpx |= ft_dtype_is_complex(e->in[k]->aval.dtype);
  }
  if (cpx) {
    if (cpx_native(e, id, od, &w)) return true;
    goto no;
  }
  switch (fam) {
  case FT_FAM_UNARY:
    switch (e->prim) {
    case FT_P_REDUCE_PRECISION: w = "reduce_precision is not compiled yet"; goto no;
    case FT_P_IS_FINITE: if (!ft_dtype_is_float(id)) goto bad; return true;
    case FT_P_NOT: if (fl) goto bad; return true;
    case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: return true;
    case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: return true;
    case FT_P_CLZ: case FT_P_POPULATION_COUNT: if (fl || isbool) goto bad; return true;
    case FT_P_NEG: case FT_P_SIGN: case FT_P_ABS: case FT_P_SQUARE: case FT_P_ONE_MINUS_SQUARE:
      if (isbool) goto bad;
      return true;
    case FT_P_INTEGER_POW: {
      const ft_pval *y = &e->params[ft_prim_param_index(e->prim, "y")];
      if (y->tag != FT_PV_INT || isbool || (!fl && y->u.i < 0)) goto bad;
      return true;
    }
    default:
      if (!fl) goto bad;
      return true;
    }
  case FT_FAM_BINARY:
    if (e->prim == FT_P_MUL) {
      const ft_pval *o = &e->params[ft_prim_param_index(e->prim, "out_dtype")];
      /* out_dtype equal to the operands' dtype is a plain mul (as the
       * interpreter computes it: in the result's dtype) */
      if (o->tag != FT_PV_NONE && (o->tag != FT_PV_DTYPE || o->u.dt != e->in[0]->aval.dtype ||
                                   o->u.dt != e->in[1]->aval.dtype)) {
        w = "mul with an out_dtype other than its operands' dtype is not compiled yet";
        goto no;
      }
    }
    switch (e->prim) {
    case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_MUL: case FT_P_MAX: case FT_P_MIN: return true;
    case FT_P_SUB: case FT_P_DIV: case FT_P_REM: if (isbool) goto bad; return true;
    case FT_P_POW: case FT_P_ATAN2: case FT_P_NEXTAFTER: case FT_P_POLYGAMMA: case FT_P_ZETA:
    case FT_P_IGAMMA: case FT_P_IGAMMAC: case FT_P_IGAMMA_GRAD_A:
      if (!fl) goto bad;
      return true;
    case FT_P_AND: case FT_P_OR: case FT_P_XOR: if (fl) goto bad; return true;
    case FT_P_SHIFT_LEFT: case FT_P_SHIFT_RIGHT_LOGICAL: case FT_P_SHIFT_RIGHT_ARITHMETIC:
    case FT_P_MULHI:
      if (fl || isbool) goto bad;
      return true;
    default: goto bad;
    }
  case FT_FAM_COMPARE: return true;
  case FT_FAM_TERNARY: /* regularized_incomplete_beta: ft_vm_betainc_* */
    if (!fl || e->prim != FT_P_REGULARIZED_INCOMPLETE_BETA) goto bad;
    return true;
  case FT_FAM_SELECT:
    if (e->prim == FT_P_SELECT_N && (e->n_in < 2 || e->n_in > 16)) goto bad;
    return true;
  case FT_FAM_CONVERT:
    if (e->prim == FT_P_BITCAST_CONVERT_TYPE && ft_dtype_size(id) != ft_dtype_size(od)) {
      w = "bitcast_convert_type between widths is not compiled yet";
      goto no;
    }
    return true;
  case FT_FAM_OTHER:
    if (e->prim == FT_P_IOTA) return true;
    goto bad;
  default: goto bad;
  }
bad:
  w = "not an elementwise operation the loop kernels compile";
no:
  if (why) *why = w;
  return false;
}

/* ---------------------------------------------------------------- groups */
static ft_kernel *gkernel(planner *P, int gi) { return &P->p->kernels[P->g[gi].kernel]; }

static int new_group(planner *P, int rank, const int64_t *dims, int eqn) {
  ft_program *p = P->p;
  group *ng = grow(P, P->g, &P->cap_groups, P->n_groups + 1, sizeof *P->g);
  if (!ng) return -1;
  P->g = ng;
  ft_kernel *nk = grow(P, p->kernels, &p->cap_kernels, p->n_kernels + 1, sizeof *p->kernels);
  if (!nk) return -1;
  p->kernels = nk;
  group *g = &P->g[P->n_groups];
  memset(g, 0, sizeof *g);
  g->kernel = p->n_kernels++;
  g->rank = rank;
  memcpy(g->dims, dims, sizeof(int64_t) * (size_t)rank);
  g->open = true;
  g->last_eqn = eqn;
  g->sub = 1;
  g->seq = P->seq++;
  ft_kernel *k = &p->kernels[g->kernel];
  memset(k, 0, sizeof *k);
  k->kind = FT_KER_LOOP;
  return P->n_groups++;
}

static int add_node(planner *P, int gi, const ft_knode *n) {
  ft_kernel *k = gkernel(P, gi);
  ft_knode *nn = grow(P, k->nodes, &k->cap_nodes, k->n_nodes + 1, sizeof *k->nodes);
  if (!nn) return -1;
  k->nodes = nn;
  k->nodes[k->n_nodes] = *n;
  return k->n_nodes++;
}

/* A load node for acc (strides over the group's loop shape), reused when
 * the same access was loaded before. */
static int load_node(planner *P, int gi, const ft_access *acc) {
  ft_kernel *k = gkernel(P, gi);
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *n = &k->nodes[i];
    if (n->kind != FT_KN_LOAD || n->acc.buf != acc->buf || n->acc.dt != acc->dt) continue;
    if (acc->buf < 0) {
      if (n->acc.lit == acc->lit) return i;
      continue;
    }
    if (n->acc.base == acc->base && !memcmp(n->acc.st, acc->st, sizeof acc->st)) return i;
  }
  ft_knode n = {.kind = FT_KN_LOAD, .dt = acc->dt, .acc = *acc};
  return add_node(P, gi, &n);
}

static void add_eqn(planner *P, int gi, int eqn) {
  group *g = &P->g[gi];
  int *ne = grow(P, g->eqns, &g->cap_eqns, g->n_eqns + 1, sizeof *g->eqns);
  if (!ne) return;
  g->eqns = ne;
  g->eqns[g->n_eqns++] = eqn;
  if (eqn > g->last_eqn) g->last_eqn = eqn;
}

static int add_store(planner *P, int gi, int node, int buf) {
  ft_kernel *k = gkernel(P, gi);
  ft_kstore *ns = realloc(k->stores, sizeof *k->stores * (size_t)(k->n_stores + 1));
  if (!ns) {
    P->oom = true;
    return -1;
  }
  k->stores = ns;
  k->stores[k->n_stores].node = node;
  k->stores[k->n_stores].buf = buf;
  return k->n_stores++;
}

/* ------------------------------------------------------- materialization */
/* The buffer holding var v (a var of the top-level jaxpr), creating it when
 * v is a group value (a store; closes the group) or a view (a copy kernel
 * placed just before the consumer at equation `at`). */
static int materialize(planner *P, const ft_var *v, int at) {
  vinfo *vi = &P->v[v->id];
  switch (vi->kind) {
  case VK_BUF: return vi->buf;
  case VK_GROUP:
    if (vi->buf < 0) {
      vi->buf = new_buf(P, FT_BUF_TEMP, 0, &v->aval);
      if (vi->buf < 0) return -1;
      add_store(P, vi->group, vi->node, vi->buf);
    }
    P->g[vi->group].open = false;
    return vi->buf;
  case VK_VIEW: {
    int gi = new_group(P, v->aval.rank, v->aval.dims, at);
    if (gi < 0) return -1;
    P->g[gi].sub = 0; /* before the consumer's own step */
    P->g[gi].open = false;
    int node = load_node(P, gi, &vi->view);
    int buf = new_buf(P, FT_BUF_TEMP, 0, &v->aval);
    if (node < 0 || buf < 0) return -1;
    add_store(P, gi, node, buf);
    vi->kind = VK_BUF;
    vi->buf = buf;
    return buf;
  }
  default:
    ft_set_error(P->ctx, FT_ERR_INTERNAL, "jit: value %u has no producer", v->id);
    P->oom = true;
    return -1;
  }
}

/* The access of atom x over its own shape, if it has one without a kernel
 * (a buffer, a view or a literal); false for group values. */
static bool own_access(planner *P, const ft_var *x, ft_access *a) {
  memset(a, 0, sizeof *a);
  a->dt = x->aval.dtype;
  if (x->kind == FT_LIT) {
    a->buf = -1;
    a->lit = x;
    return true;
  }
  vinfo *vi = &P->v[x->id];
  if (vi->kind == VK_VIEW) {
    *a = vi->view;
    return true;
  }
  if (vi->kind == VK_BUF || (vi->kind == VK_GROUP && !P->g[vi->group].open)) {
    a->buf = vi->kind == VK_BUF ? vi->buf : -2; /* -2: materialized on commit */
    contig(x->aval.rank, x->aval.dims, a->st);
    return true;
  }
  return false;
}

/* ---------------------------------------------------------- operand refs */
/* How an elementwise operand is read inside group gi (loop shape S), for an
 * equation whose result has shape T: an in-group node, or an access. */
typedef struct oref {
  int node;        /* >= 0: in-group node */
  ft_access acc;   /* else: acc.buf -1 literal, -2 group value to materialize, else buffer */
  const ft_var *x;
} oref;

/* Strides of operand x (own access a) against result shape T, with lax's
 * elementwise broadcasting (rank 0, or equal rank with size-1 dims). */
static bool to_result(const ft_var *x, ft_access *a, int rt, const int64_t *T) {
  const ft_aval *A = &x->aval;
  int64_t st[FT_MAX_RANK] = {0};
  if (A->rank == 0 || x->kind == FT_LIT) {
    memset(a->st, 0, sizeof a->st);
    return true;
  }
  if (A->rank != rt) return false;
  for (int d = 0; d < rt; d++) {
    if (A->dims[d] == T[d]) st[d] = a->st[d];
    else if (A->dims[d] == 1) st[d] = 0;
    else return false;
  }
  memcpy(a->st, st, sizeof st);
  return true;
}

/* Strides over T -> strides over the loop shape S (same element count). */
static bool to_loop(ft_access *a, int rt, const int64_t *T, int rs, const int64_t *S) {
  if (dims_eq(rt, T, rs, S)) return true;
  if (a->buf == -1 || all_zero(rt, T, a->st)) {
    memset(a->st, 0, sizeof a->st);
    return true;
  }
  if (count_of(rt, T) == count_of(rs, S) && is_contig(rt, T, a->st)) {
    contig(rs, S, a->st);
    return true;
  }
  return false;
}

static bool operand_ref(planner *P, int gi, const ft_eqn *e, int k, oref *r) {
  const ft_var *x = e->in[k], *o = e->out[0];
  group *g = &P->g[gi];
  r->x = x;
  r->node = -1;
  if (x->kind == FT_VAR && P->v[x->id].kind == VK_GROUP && P->v[x->id].group == gi) {
    if (ft_aval_size(&x->aval) != count_of(g->rank, g->dims)) return false;
    if (ft_aval_size(&x->aval) != ft_aval_size(&o->aval)) return false; /* broadcast */
    r->node = P->v[x->id].node;
    return true;
  }
  if (!own_access(P, x, &r->acc)) {
    /* a value of another open group: materialized on commit */
    memset(&r->acc, 0, sizeof r->acc);
    r->acc.buf = -2;
    r->acc.dt = x->aval.dtype;
    contig(x->aval.rank, x->aval.dims, r->acc.st);
  }
  if (!to_result(x, &r->acc, o->aval.rank, o->aval.dims)) return false;
  return to_loop(&r->acc, o->aval.rank, o->aval.dims, g->rank, g->dims);
}

/* Whether equation e (elementwise or iota) can join group gi. */
static bool can_join(planner *P, int gi, const ft_eqn *e, oref *refs) {
  group *g = &P->g[gi];
  const ft_aval *T = &e->out[0]->aval;
  if (!g->open || ft_aval_size(T) != count_of(g->rank, g->dims)) return false;
  if (e->prim == FT_P_IOTA && !dims_eq(T->rank, T->dims, g->rank, g->dims)) return false;
  for (int k = 0; k < e->n_in; k++)
    if (!operand_ref(P, gi, e, k, &refs[k])) return false;
  return true;
}

static void commit(planner *P, int gi, const ft_eqn *e, int idx, oref *refs) {
  ft_knode n = {.kind = FT_KN_ELEM, .dt = e->out[0]->aval.dtype, .e = e, .n_in = e->n_in};
  for (int k = 0; k < e->n_in; k++) {
    if (refs[k].node >= 0) {
      n.in[k] = refs[k].node;
      continue;
    }
    if (refs[k].acc.buf == -2) refs[k].acc.buf = materialize(P, refs[k].x, idx);
    if (refs[k].acc.buf < -1) return;
    n.in[k] = load_node(P, gi, &refs[k].acc);
  }
  if (e->prim == FT_P_IOTA) {
    n.kind = FT_KN_IOTA;
    n.dim = (int)ft_param_int(e, "dimension", 0);
  }
  int node = add_node(P, gi, &n);
  add_eqn(P, gi, idx);
  vinfo *vo = &P->v[e->out[0]->id];
  vo->kind = VK_GROUP;
  vo->group = gi;
  vo->node = node;
  vo->buf = -1;
}

/* Places an elementwise equation: in an operand's group (latest first), or
 * in a new group shaped like its result. */
static void place_elem(planner *P, const ft_eqn *e, int idx) {
  oref refs[16];
  if (!P->opts->no_fusion) {
    int tried[16], nt = 0;
    for (int k = e->n_in - 1; k >= 0; k--) {
      const ft_var *x = e->in[k];
      if (x->kind != FT_VAR || P->v[x->id].kind != VK_GROUP) continue;
      int gi = P->v[x->id].group, seen = 0;
      for (int t = 0; t < nt; t++) seen |= tried[t] == gi;
      if (seen) continue;
      tried[nt++] = gi;
    }
    /* latest group first */
    for (int a = 0; a < nt; a++)
      for (int b = a + 1; b < nt; b++)
        if (tried[b] > tried[a]) {
          int t = tried[a];
          tried[a] = tried[b], tried[b] = t;
        }
    for (int t = 0; t < nt; t++)
      if (can_join(P, tried[t], e, refs)) {
        commit(P, tried[t], e, idx, refs);
        return;
      }
    /* horizontal fusion: a recent open group with the same loop shape
     * (siblings reading the same inputs share one loop and its loads) */
    for (int gi = P->n_groups - 1, seen = 0; gi >= 0 && seen < 4; gi--) {
      if (!P->g[gi].open) continue;
      seen++;
      const ft_aval *T = &e->out[0]->aval;
      if (dims_eq(T->rank, T->dims, P->g[gi].rank, P->g[gi].dims) && can_join(P, gi, e, refs)) {
        commit(P, gi, e, idx, refs);
        return;
      }
    }
  }
  const ft_aval *T = &e->out[0]->aval;
  int gi = new_group(P, T->rank, T->dims, idx);
  if (gi < 0) return;
  if (!can_join(P, gi, e, refs)) { /* cannot happen: T == S */
    ft_set_error(P->ctx, FT_ERR_INTERNAL, "jit: equation %d does not fit its own group", idx);
    P->oom = true;
    return;
  }
  commit(P, gi, e, idx, refs);
  if (P->opts->no_fusion) P->g[gi].open = false;
}

/* ------------------------------------------------------------------ views */
/* The view a layout equation makes of access a (over x's shape), or false. */
static bool view_of(const ft_eqn *e, const ft_access *a, ft_access *r) {
  const ft_aval *A = &e->in[0]->aval, *T = &e->out[0]->aval;
  int64_t p[FT_MAX_RANK * 2];
  *r = *a;
  memset(r->st, 0, sizeof r->st);
  switch (e->prim) {
  case FT_P_BROADCAST_IN_DIM: {
    int n = ft_param_ints(e, "broadcast_dimensions", p, FT_MAX_RANK);
    if (n != A->rank) return false;
    for (int i = 0; i < n; i++)
      if (A->dims[i] != 1) r->st[p[i]] = a->st[i];
    return true;
  }
  case FT_P_RESHAPE: {
    const ft_pval *d = ft_eqn_param(e, "dimensions");
    if (d->tag != FT_PV_NONE) return false;
  }
    /* fall through */
  case FT_P_SQUEEZE: case FT_P_EXPAND_DIMS: {
    if (a->buf == -1 || all_zero(A->rank, A->dims, a->st)) return true;
    if (is_contig(A->rank, A->dims, a->st)) {
      contig(T->rank, T->dims, r->st);
      return true;
    }
    /* same dims once size-1 dims are dropped: strides carry over */
    int ia = 0;
    for (int t = 0; t < T->rank; t++) {
      if (T->dims[t] == 1) continue;
      while (ia < A->rank && A->dims[ia] == 1) ia++;
      if (ia >= A->rank || A->dims[ia] != T->dims[t]) return false;
      r->st[t] = a->st[ia++];
    }
    while (ia < A->rank && A->dims[ia] == 1) ia++;
    return ia == A->rank;
  }
  case FT_P_TRANSPOSE: {
    int n = ft_param_ints(e, "permutation", p, FT_MAX_RANK);
    if (n != A->rank) return false;
    for (int i = 0; i < n; i++) r->st[i] = a->st[p[i]];
    return true;
  }
  case FT_P_REV: {
    int n = ft_param_ints(e, "dimensions", p, FT_MAX_RANK);
    if (n < 0 || a->buf == -1) return false;
    memcpy(r->st, a->st, sizeof r->st);
    for (int i = 0; i < n; i++) {
      int d = (int)p[i];
      if (A->dims[d] > 0) r->base += (A->dims[d] - 1) * a->st[d];
      r->st[d] = -a->st[d];
    }
    return true;
  }
  case FT_P_SLICE: {
    int64_t lim[FT_MAX_RANK], str[FT_MAX_RANK];
    int n = ft_param_ints(e, "start_indices", p, FT_MAX_RANK);
    int nl = ft_param_ints(e, "limit_indices", lim, FT_MAX_RANK);
    if (n != A->rank || nl != n || a->buf == -1) return false;
    int ns = ft_param_ints(e, "strides", str, FT_MAX_RANK);
    if (ns != n) ns = -1;
    for (int d = 0; d < n; d++) {
      if (T->dims[d] > 0) r->base += p[d] * a->st[d];
      r->st[d] = a->st[d] * (ns < 0 ? 1 : str[d]);
    }
    return true;
  }
  default:
    return false;
  }
}

static bool is_view_prim(const ft_eqn *e) {
  switch (e->prim) {
  case FT_P_BROADCAST_IN_DIM: case FT_P_RESHAPE: case FT_P_SQUEEZE: case FT_P_EXPAND_DIMS:
  case FT_P_TRANSPOSE: case FT_P_REV: case FT_P_SLICE:
    return e->n_in == 1 && e->n_out == 1;
  default:
    return false;
  }
}

/* A layout equation: an alias inside an open group when it keeps the
 * element order (reshape-like), else a view. Returns false when neither
 * applies (then it is a fallback step). */
static bool place_view(planner *P, const ft_eqn *e, int idx) {
  const ft_var *x = e->in[0], *o = e->out[0];
  if (!is_view_prim(e) || !dt_elem(o->aval.dtype)) return false;
  if (P->opts->no_fusion && x->kind == FT_VAR && P->v[x->id].kind == VK_GROUP)
    materialize(P, x, idx);
  if (x->kind == FT_VAR && P->v[x->id].kind == VK_GROUP && P->g[P->v[x->id].group].open) {
    vinfo *vx = &P->v[x->id];
    bool keeps_order = e->prim == FT_P_RESHAPE || e->prim == FT_P_SQUEEZE ||
                       e->prim == FT_P_EXPAND_DIMS ||
                       (e->prim == FT_P_BROADCAST_IN_DIM &&
                        ft_aval_size(&x->aval) == ft_aval_size(&o->aval));
    if (e->prim == FT_P_RESHAPE && ft_eqn_param(e, "dimensions")->tag != FT_PV_NONE)
      keeps_order = false;
    if (keeps_order) {
      P->v[o->id] = *vx;
      P->v[o->id].buf = -1;
      add_eqn(P, vx->group, idx);
      return true;
    }
    materialize(P, x, idx);
  }
  ft_access a, r;
  if (!own_access(P, x, &a)) return false;
  if (a.buf == -2) a.buf = materialize(P, x, idx);
  if (!view_of(e, &a, &r)) {
    if (x->kind == FT_LIT || P->v[x->id].kind != VK_VIEW) return false;
    /* a view that does not compose: copy it, then view the copy */
    a.buf = materialize(P, x, idx);
    a.base = 0;
    contig(x->aval.rank, x->aval.dims, a.st);
    if (!view_of(e, &a, &r)) return false;
  }
  r.dt = o->aval.dtype;
  P->v[o->id].kind = VK_VIEW;
  P->v[o->id].view = r;
  return true;
}

/* ------------------------------------------------------------- reductions */
static bool reduce_native(const ft_eqn *e, const char **why) {
  ft_dtype dt = e->in[0]->aval.dtype, od = e->out[0]->aval.dtype;
  bool fl = dt == FT_F32 || dt == FT_F64;
  /* f16/bf16 fold in f32 on the widened values (codegen.c): max/min/
   * argmax/argmin exactly, sums and products rounded to the dtype at each
   * step of the canonical order, as ft_sum_f32(..., rdt) */
  bool half = (dt == FT_F16 || dt == FT_BF16) && e->prim != FT_P_REDUCE_AND &&
              e->prim != FT_P_REDUCE_OR && e->prim != FT_P_REDUCE_XOR;
  if (!(dt_native(dt) || half) || !(dt_native(od) || (half && od == dt))) {
    *why = "a reduction of a dtype the kernels do not fold (complex), which the interpreter "
           "refuses too";
    return false;
  }
  switch (e->prim) {
  case FT_P_REDUCE_SUM: case FT_P_REDUCE_PROD: if (dt == FT_BOOL) goto bad; return true;
  case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN: return true;
  case FT_P_REDUCE_AND: case FT_P_REDUCE_OR: case FT_P_REDUCE_XOR: if (fl) goto bad; return true;
  case FT_P_ARGMAX: case FT_P_ARGMIN: {
    int64_t axes[FT_MAX_RANK];
    const ft_aval *A = &e->in[0]->aval;
    if (ft_param_ints(e, "axes", axes, FT_MAX_RANK) != 1 || axes[0] < 0 || axes[0] >= A->rank ||
        A->dims[axes[0]] == 0) {
      *why = "argmax/argmin over other than one non-empty axis (the interpreter's error)";
      return false;
    }
    return true;
  }
  default: *why = "not a reduction the kernels compile"; return false;
  }
bad:
  *why = "reduction not defined for this dtype";
  return false;
}

/* Strides of a group load over the group's loop shape S -> over the
 * reduction's input shape T (same element count). */
static bool load_to_input(ft_access *a, const group *g, const ft_aval *T) {
  if (dims_eq(g->rank, g->dims, T->rank, T->dims)) return true;
  if (a->buf < 0 || all_zero(g->rank, g->dims, a->st)) {
    memset(a->st, 0, sizeof a->st);
    return true;
  }
  if (is_contig(g->rank, g->dims, a->st)) {
    contig(T->rank, T->dims, a->st);
    return true;
  }
  return false;
}

/* Marks in need[0..node] (zeroed) the nodes of group kernel gk that
 * compute `node`: it and its operands, transitively. */
static void mark_producers(const ft_kernel *gk, int node, bool *need) {
  need[node] = true;
  for (int i = node; i >= 0; i--) {
    const ft_knode *q = &gk->nodes[i];
    for (int a = 0; need[i] && q->kind == FT_KN_ELEM && a < q->n_in; a++) need[q->in[a]] = true;
  }
}

/* Copies into k the nodes of open group gi that compute `node` (a
 * prologue: the producers are recomputed inside the reduction, the group
 * never stores the value). False when they cannot be moved (an iota, or a
 * load whose strides do not carry over to the input shape). */
static bool clone_prologue(planner *P, int gi, int node, const ft_aval *T, ft_kernel *k) {
  const ft_kernel *gk = gkernel(P, gi);
  int n = node + 1;
  int *map = malloc(sizeof(int) * (size_t)n);
  bool *need = calloc((size_t)n, sizeof *need);
  bool ok = map && need;
  if (ok) mark_producers(gk, node, need);
  for (int i = 0; ok && i < n; i++) {
    const ft_knode *q = &gk->nodes[i];
    /* reduction kernels load and compute real values only (codegen.c's
     * eval_at): a complex producer stays in its group, which stores */
    if (need[i] && (q->kind == FT_KN_IOTA || ft_dtype_is_complex(q->dt))) ok = false;
  }
  for (int i = 0; ok && i < n; i++) {
    if (!need[i]) continue;
    ft_knode q = gk->nodes[i];
    if (q.kind == FT_KN_LOAD && !load_to_input(&q.acc, &P->g[gi], T)) {
      ok = false;
      break;
    }
    for (int a = 0; q.kind == FT_KN_ELEM && a < q.n_in; a++) q.in[a] = map[q.in[a]];
    ft_knode *nn = grow(P, k->nodes, &k->cap_nodes, k->n_nodes + 1, sizeof *k->nodes);
    if (!nn) {
      ok = false;
      break;
    }
    k->nodes = nn;
    k->nodes[k->n_nodes] = q;
    map[i] = k->n_nodes++;
  }
  if (ok) k->rnode = map[node];
  free(map);
  free(need);
  return ok;
}

/* Whether the nodes of open group gi that compute `node` are cheap enough
 * to compute twice: once inside a reduction that reads the value and once
 * more in the group, for the value's other consumers. Recomputing them
 * saves storing every element and loading it back (softmax's exp(x - max)
 * feeds both its sum and its division: XLA recomputes it too). The bits
 * are the same either way: the same nodes run on the same inputs. Cheap:
 * at most RECOMPUTE_MAX_OPS operations, of which at most
 * RECOMPUTE_MAX_COSTLY are more than one arithmetic instruction
 * (transcendentals, division, square roots, integer division). */
enum { RECOMPUTE_MAX_OPS = 8, RECOMPUTE_MAX_COSTLY = 1 };

static bool cheap_op(ft_prim p) {
  switch (p) {
  case FT_P_ADD: case FT_P_SUB: case FT_P_MUL: case FT_P_NEG: case FT_P_MAX: case FT_P_MIN:
  case FT_P_ABS: case FT_P_SIGN: case FT_P_SELECT_N: case FT_P_CONVERT_ELEMENT_TYPE:
  case FT_P_EQ: case FT_P_NE: case FT_P_LT: case FT_P_LE: case FT_P_GT: case FT_P_GE:
  case FT_P_AND: case FT_P_OR: case FT_P_NOT: case FT_P_XOR: case FT_P_STOP_GRADIENT:
  case FT_P_COPY: case FT_P_SQUARE: case FT_P_ONE_MINUS_SQUARE: case FT_P_INTEGER_POW:
    return true;
  default:
    return false;
  }
}

static bool cheap_prologue(planner *P, int gi, int node) {
  const ft_kernel *gk = gkernel(P, gi);
  bool *need = calloc((size_t)node + 1, sizeof *need);
  if (!need) return false;
  mark_producers(gk, node, need);
  int ops = 0, costly = 0;
  for (int i = 0; i <= node; i++) {
    const ft_knode *q = &gk->nodes[i];
    if (!need[i] || q->kind != FT_KN_ELEM) continue;
    ops++;
    costly += !q->e || !cheap_op(q->e->prim);
  }
  free(need);
  return ops <= RECOMPUTE_MAX_OPS && costly <= RECOMPUTE_MAX_COSTLY;
}

/* Fills the plan-text fields (rcount, rstride, kdims) of reduction k. */
static void reduce_summary(ft_kernel *k) {
  const ft_knode *l0 = NULL;
  for (int i = 0; i < k->n_nodes && !l0; i++)
    if (k->nodes[i].kind == FT_KN_LOAD && k->nodes[i].acc.buf >= 0) l0 = &k->nodes[i];
  k->rcount = 1;
  k->rstride = 0;
  k->krank = 0;
  for (int d = 0; d < k->irank; d++) {
    if (k->ired[d]) {
      k->rcount *= k->idims[d];
      if (k->idims[d] != 1 && l0) k->rstride = l0->acc.st[d];
    } else if (k->idims[d] != 1) {
      k->kdims[k->krank++] = k->idims[d];
    }
  }
  if (l0) k->rin = l0->acc;
}

/* Adds reduction kernel k (its nodes now owned by the program) and its
 * step, writing a new TEMP buffer of aval ov over ov's elements. The
 * buffer, or -1 (k's nodes freed). */
static int add_reduce_step(planner *P, ft_kernel *kp, int idx, const ft_aval *ov) {
  ft_kernel k = *kp;
  k.rout = new_buf(P, FT_BUF_TEMP, 0, ov);
  ft_program *p = P->p;
  ft_kernel *nk = grow(P, p->kernels, &p->cap_kernels, p->n_kernels + 1, sizeof *p->kernels);
  if (!nk || k.rout < 0) {
    free(k.nodes);
    return -1;
  }
  p->kernels = nk;
  int ki = p->n_kernels++;
  p->kernels[ki] = k;
  ft_step *s = new_step(P, FT_STEP_KERNEL, idx, 1);
  if (!s) return -1;
  s->kernel = ki;
  s->extent = ft_aval_size(ov);
  s->n_eqns = 1;
  s->eqns = malloc(sizeof(int));
  s->in = malloc(sizeof(int) * (size_t)(k.n_nodes + 1));
  s->out = malloc(sizeof(int));
  if (!s->eqns || !s->in || !s->out) {
    P->oom = true;
    return -1;
  }
  s->eqns[0] = idx;
  s->n_in = 0;
  for (int i = 0; i < k.n_nodes; i++) {
    int b2 = k.nodes[i].kind == FT_KN_LOAD ? k.nodes[i].acc.buf : -1;
    bool dup = b2 < 0;
    for (int q = 0; q < s->n_in && !dup; q++) dup = s->in[q] == b2;
    if (!dup) s->in[s->n_in++] = b2;
  }
  s->n_out = 1;
  s->out[0] = k.rout;
  return k.rout;
}

/* Whether reduction k (nout outputs) runs as two kernels: a kernel's
 * outputs are what the executor splits among threads, so a float
 * sum/prod/max/min with few long outputs is computed as block partials
 * (every thread takes blocks) that a second kernel folds. The bits are the
 * canonical order's (docs/determinism.md §3: the blocks are its blocks, the
 * partials combine left to right) or exact (max/min). */
enum { SPLIT_MAX_OUTPUTS = 16, SPLIT_MIN_BLOCKS = 4 };

static bool split_wanted(const ft_kernel *k, int64_t nout) {
  ft_dtype dt = k->nodes[k->rnode].dt;
  bool fold = k->rprim == FT_P_REDUCE_SUM || k->rprim == FT_P_REDUCE_PROD ||
              k->rprim == FT_P_REDUCE_MAX || k->rprim == FT_P_REDUCE_MIN;
  return fold && (dt == FT_F32 || dt == FT_F64) && k->rout_dt == dt && nout > 0 &&
         nout <= SPLIT_MAX_OUTPUTS && k->rcount >= (int64_t)SPLIT_MIN_BLOCKS * FT_SUM_BLOCK;
}

/* The split form of reduction k (split_wanted): a kernel of nout * nb
 * partials (block b of output o at o * nb + b) into a TEMP buffer, then a
 * kernel folding each output's nb partials in order (rseq). The output
 * buffer, or -1. */
static int place_split(planner *P, ft_kernel *k, int idx, const ft_aval *ov) {
  int64_t nout = ft_aval_size(ov), nb = (k->rcount + FT_SUM_BLOCK - 1) / FT_SUM_BLOCK;
  ft_kernel part = *k;
  part.rparts = nb;
  part.rblock = FT_SUM_BLOCK;
  part.rcount = FT_SUM_BLOCK; /* per output of this kernel: the executor's grain */
  if (part.krank < FT_MAX_RANK) part.kdims[part.krank++] = nb;
  ft_aval pav = {.dtype = k->rout_dt, .rank = 2, .dims = {nout, nb}};
  int pbuf = add_reduce_step(P, &part, idx, &pav);
  if (pbuf < 0) return -1;
  ft_kernel comb;
  memset(&comb, 0, sizeof comb);
  comb.kind = FT_KER_REDUCE;
  comb.rprim = k->rprim;
  comb.rout_dt = k->rout_dt;
  comb.rseq = true;
  comb.irank = 2;
  comb.idims[0] = nout, comb.idims[1] = nb;
  comb.ired[1] = true;
  comb.nodes = calloc(1, sizeof *comb.nodes);
  if (!comb.nodes) {
    P->oom = true;
    return -1;
  }
  comb.n_nodes = comb.cap_nodes = 1;
  comb.nodes[0] = (ft_knode){.kind = FT_KN_LOAD, .dt = k->rout_dt,
                             .acc = {.buf = pbuf, .dt = k->rout_dt, .st = {nb, 1}}};
  reduce_summary(&comb);
  return add_reduce_step(P, &comb, idx, ov);
}

/* A reduction kernel: the input's producers (the open fusion group that
 * computes it, when the reduction is its only consumer or the producers
 * are cheap: cheap_prologue) are recomputed in the kernel, and the group
 * stays open for the value's other consumers; else it loads the input's
 * buffer or view. Any set of axes. */
static bool place_reduce(planner *P, const ft_eqn *e, int idx) {
  const ft_var *x = e->in[0], *o = e->out[0];
  if (!reduce_native(e, &P->why[idx]) || x->kind != FT_VAR) return false;
  const ft_aval *T = &x->aval;
  ft_kernel k;
  memset(&k, 0, sizeof k);
  k.kind = FT_KER_REDUCE;
  k.rprim = e->prim;
  k.rout_dt = o->aval.dtype;
  k.irank = T->rank;
  memcpy(k.idims, T->dims, sizeof(int64_t) * (size_t)T->rank);
  int64_t axes[FT_MAX_RANK];
  int na = ft_param_ints(e, "axes", axes, FT_MAX_RANK);
  if (na < 0) return false;
  for (int i = 0; i < na; i++) {
    if (axes[i] < 0 || axes[i] >= T->rank) return false;
    k.ired[axes[i]] = true;
  }
  vinfo *vx = &P->v[x->id];
  bool fused = false;
  if (!P->opts->no_fusion && vx->kind == VK_GROUP && vx->buf < 0 && P->g[vx->group].open &&
      (P->uses[x->id] == 1 || cheap_prologue(P, vx->group, vx->node))) {
    fused = clone_prologue(P, vx->group, vx->node, T, &k);
    if (!fused) {
      free(k.nodes);
      memset(&k.nodes, 0, sizeof k.nodes);
      k.n_nodes = k.cap_nodes = 0;
    }
  }
  if (!fused) {
    ft_access a;
    if (!own_access(P, x, &a)) {
      memset(&a, 0, sizeof a);
      a.buf = -2;
      a.dt = T->dtype;
      contig(T->rank, T->dims, a.st);
    }
    if (a.buf == -2) a.buf = materialize(P, x, idx);
    if (a.buf < -1) return false;
    a.dt = T->dtype;
    ft_knode ln = {.kind = FT_KN_LOAD, .dt = a.dt, .acc = a};
    k.nodes = malloc(sizeof *k.nodes);
    if (!k.nodes) {
      P->oom = true;
      return false;
    }
    k.nodes[0] = ln;
    k.n_nodes = k.cap_nodes = 1;
    k.rnode = 0;
  }
  reduce_summary(&k);
  int out = split_wanted(&k, ft_aval_size(&o->aval)) ? place_split(P, &k, idx, &o->aval)
                                                      : add_reduce_step(P, &k, idx, &o->aval);
  if (out < 0) return false;
  if (fused) P->p->n_fused_eqns++;
  P->v[o->id].kind = VK_BUF;
  P->v[o->id].buf = out;
  return true;
}

/* ------------------------------------------------------------------ GEMM */
static bool split_dims(const ft_aval *a, const ft_pval *contract, const ft_pval *batch,
                       int64_t *c, int *nc, int64_t *b, int *nb, int64_t *f, int *nf) {
  bool used[FT_MAX_RANK] = {0};
  if (!ft_pv_get_ints(contract, c, FT_MAX_RANK, nc) || !ft_pv_get_ints(batch, b, FT_MAX_RANK, nb))
    return false;
  for (int i = 0; i < *nc; i++) used[c[i]] = true;
  for (int i = 0; i < *nb; i++) used[b[i]] = true;
  *nf = 0;
  for (int i = 0; i < a->rank; i++)
    if (!used[i]) f[(*nf)++] = i;
  return true;
}

static bool seq_is(const int64_t *off, int64_t n, int64_t step) {
  for (int64_t i = 0; i < n; i++)
    if (off[i] != i * step) return false;
  return true;
}

static bool place_dot(planner *P, const ft_eqn *e, int idx) {
  ft_dtype od = e->out[0]->aval.dtype;
  if ((od != FT_F32 && od != FT_F64) || e->in[0]->aval.dtype != od ||
      e->in[1]->aval.dtype != od) {
    P->why[idx] = "dot_general outside the f32/f64 GEMM steps, which the interpreter refuses "
                  "too";
    return false;
  }
  if (e->in[0]->kind != FT_VAR || e->in[1]->kind != FT_VAR) return false;
  const ft_pval *dn = ft_eqn_param(e, "dimension_numbers");
  if (dn->tag != FT_PV_TUPLE || dn->n != 2 || dn->u.items[0].n != 2 || dn->u.items[1].n != 2)
    return false;
  const ft_aval *la = &e->in[0]->aval, *ra = &e->in[1]->aval;
  int64_t lc[FT_MAX_RANK], lb[FT_MAX_RANK], lf[FT_MAX_RANK], rc[FT_MAX_RANK], rb[FT_MAX_RANK],
      rf[FT_MAX_RANK];
  int nlc, nlb, nlf, nrc, nrb, nrf;
  if (!split_dims(la, &dn->u.items[0].u.items[0], &dn->u.items[1].u.items[0], lc, &nlc, lb, &nlb,
                  lf, &nlf) ||
      !split_dims(ra, &dn->u.items[0].u.items[1], &dn->u.items[1].u.items[1], rc, &nrc, rb, &nrb,
                  rf, &nrf))
    return false;
  ft_gemm_plan *g = calloc(1, sizeof *g);
  if (!g) {
    P->oom = true;
    return false;
  }
  int64_t t;
  g->f64 = od == FT_F64;
  g->lb = ft_enum_offsets(la, lb, nlb, &g->B);
  g->lm = ft_enum_offsets(la, lf, nlf, &g->M);
  g->lk = ft_enum_offsets(la, lc, nlc, &g->K);
  g->rb = ft_enum_offsets(ra, rb, nrb, &t);
  g->rk = ft_enum_offsets(ra, rc, nrc, &t);
  g->rn = ft_enum_offsets(ra, rf, nrf, &g->N);
  if (!g->lb || !g->lm || !g->lk || !g->rb || !g->rk || !g->rn) P->oom = true;
  int lbuf = materialize(P, e->in[0], idx), rbuf = materialize(P, e->in[1], idx);
  ft_step *s = new_step(P, FT_STEP_GEMM, idx, 1);
  if (P->oom || !s || lbuf < 0 || rbuf < 0) {
    if (g) {
      free(g->lb), free(g->lm), free(g->lk), free(g->rb), free(g->rk), free(g->rn);
      free(g);
    }
    return false;
  }
  s->gemm = g;
  g->lhs_direct = seq_is(g->lk, g->K, 1) && seq_is(g->lm, g->M, g->K) &&
                  seq_is(g->lb, g->B, g->M * g->K);
  g->rhs_direct = seq_is(g->rn, g->N, 1) && seq_is(g->rk, g->K, g->N) &&
                  seq_is(g->rb, g->B, g->K * g->N);
  ft_aval pa = ft_aval_make(od, 1, (int64_t[]){g->B * g->M * g->K});
  ft_aval pb = ft_aval_make(od, 1, (int64_t[]){g->B * g->K * g->N});
  g->pack_a = g->lhs_direct ? -1 : new_buf(P, FT_BUF_TEMP, 0, &pa);
  g->pack_b = g->rhs_direct ? -1 : new_buf(P, FT_BUF_TEMP, 0, &pb);
  s = &P->p->steps[P->p->n_steps - 1]; /* new_buf does not move steps; keep it simple */
  s->n_in = 2;
  s->n_out = 1;
  s->in = malloc(2 * sizeof(int));
  s->out = malloc(sizeof(int));
  if (!s->in || !s->out) {
    P->oom = true;
    return false;
  }
  s->in[0] = lbuf, s->in[1] = rbuf;
  s->out[0] = new_buf(P, FT_BUF_TEMP, 0, &e->out[0]->aval);
  P->v[e->out[0]->id].kind = VK_BUF;
  P->v[e->out[0]->id].buf = s->out[0];
  return true;
}

/* --------------------------------------------------------- control flow */
/* A buffer holding literal x (a one-node kernel that stores it). */
static int literal_buf(planner *P, const ft_var *x, int at) {
  if (!dt_elem(x->aval.dtype)) return -1;
  int gi = new_group(P, x->aval.rank, x->aval.dims, at);
  if (gi < 0) return -1;
  P->g[gi].sub = 0;
  P->g[gi].open = false;
  ft_access a = {.buf = -1, .lit = x, .dt = x->aval.dtype};
  int node = load_node(P, gi, &a), buf = new_buf(P, FT_BUF_TEMP, 0, &x->aval);
  if (node < 0 || buf < 0) return -1;
  add_store(P, gi, node, buf);
  return buf;
}

/* Adds off to every kernel index of q's steps and of its sub-programs'. */
static void shift_kernels(ft_program *q, int off) {
  for (int i = 0; i < q->n_steps; i++) {
    ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) s->kernel += off;
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) shift_kernels(ft_control_sub(s->ctl, k), off);
  }
}

/* Moves sub-program q's kernels (its own and its sub-programs') into the
 * program being planned: one module holds every kernel. */
static bool hoist_kernels(planner *P, ft_program *q) {
  ft_program *p = P->p;
  if (q->n_kernels == 0) return true;
  ft_kernel *nk = grow(P, p->kernels, &p->cap_kernels, p->n_kernels + q->n_kernels, sizeof *p->kernels);
  if (!nk) return false;
  p->kernels = nk;
  memcpy(p->kernels + p->n_kernels, q->kernels, sizeof *q->kernels * (size_t)q->n_kernels);
  shift_kernels(q, p->n_kernels);
  p->n_kernels += q->n_kernels;
  free(q->kernels);
  q->kernels = NULL;
  q->n_kernels = q->cap_kernels = 0;
  return true;
}

/* cond/while/scan/jit/custom_*_call: one control step driving compiled
 * sub-programs (control.c). False (a fallback step) when the sub-jaxprs do
 * not fit or an operand is a literal of a dtype kernels cannot store. */
static bool place_control(planner *P, const ft_eqn *e, int idx) {
  const char *why = NULL;
  ft_status before = ft_ctx_status(P->ctx); /* an earlier call's error is not this step's */
  ft_control *c = ft_control_new(P->ctx, e, P->opts, &why);
  if (!c) {
    if (ft_ctx_status(P->ctx) && !before) { /* e.g. a sub-jaxpr the planner rejects: the interpreter reports it */
      ft_ctx_clear_error(P->ctx);
      why = "a sub-jaxpr could not be planned";
    }
    P->why[idx] = why;
    return false;
  }
  for (int k = 0; k < e->n_in; k++)
    if (e->in[k]->kind == FT_LIT && !dt_elem(e->in[k]->aval.dtype)) {
      P->why[idx] = "a literal operand of a dtype the kernels do not store";
      ft_control_free(c);
      return false;
    }
  int *in = malloc(sizeof(int) * (size_t)(e->n_in + 1)), *out = malloc(sizeof(int) * (size_t)(e->n_out + 1));
  bool ok = in && out;
  for (int k = 0; ok && k < e->n_in; k++) {
    in[k] = e->in[k]->kind == FT_LIT ? literal_buf(P, e->in[k], idx) : materialize(P, e->in[k], idx);
    ok = in[k] >= 0;
  }
  for (int k = 0; ok && k < e->n_out; k++) {
    out[k] = new_buf(P, FT_BUF_TEMP, 0, &e->out[k]->aval);
    ok = out[k] >= 0;
    if (ok && e->out[k]->kind == FT_VAR) {
      P->v[e->out[k]->id].kind = VK_BUF;
      P->v[e->out[k]->id].buf = out[k];
    }
  }
  int nf = 0;
  for (int i = 0; ok && i < ft_control_num_subs(c); i++) {
    ok = hoist_kernels(P, ft_control_sub(c, i));
    nf += ft_control_sub(c, i)->n_fallback;
  }
  ft_step *s = ok ? new_step(P, FT_STEP_CONTROL, idx, 1) : NULL;
  if (!s) {
    free(in), free(out);
    ft_control_free(c);
    P->oom = true;
    return false;
  }
  s->ctl = c;
  s->n_in = e->n_in, s->n_out = e->n_out;
  s->in = in, s->out = out;
  P->p->n_fallback += nf;
  return true;
}

/* -------------------------------------------------------------- fallback */
/* A fallback step runs a one-equation jaxpr (sharing the equation) through
 * the interpreter, so it uses exactly the interpreter's own rule. Its
 * inputs are the distinct vars the equation reads (literals stay in the
 * equation); its outputs, the equation's live outputs. */
static bool place_fallback(planner *P, const ft_eqn *e, int idx) {
  if (ft_eval_rule_status(e->prim)) {
    ft_set_error(P->ctx, FT_ERR_UNSUPPORTED,
                 "jit: equation %d (%s) has no rule in the interpreter nor the compiler", idx,
                 ft_prim_get(e->prim)->name);
    P->oom = true;
    return false;
  }
  ft_arena *ar = P->p->j->arena;
  ft_var **iv = calloc((size_t)e->n_in + 1, sizeof *iv), **ov = calloc((size_t)e->n_out + 1, sizeof *ov);
  int *in = calloc((size_t)e->n_in + 1, sizeof(int)), *out = calloc((size_t)e->n_out + 1, sizeof(int));
  ft_jaxpr *sub = ft_jaxpr_new(ar);
  int ni = 0, no = 0;
  bool ok = iv && ov && in && out && sub;
  for (int k = 0; ok && k < e->n_in; k++) {
    ft_var *x = e->in[k];
    bool dup = x->kind != FT_VAR;
    for (int q = 0; q < ni && !dup; q++) dup = iv[q] == x;
    if (dup) continue;
    iv[ni] = x;
    in[ni++] = materialize(P, x, idx);
  }
  for (int k = 0; ok && k < e->n_out; k++) {
    if (e->out[k]->kind != FT_VAR) continue;
    ov[no] = e->out[k];
    out[no] = new_buf(P, FT_BUF_TEMP, 0, &e->out[k]->aval);
    P->v[e->out[k]->id].kind = VK_BUF;
    P->v[e->out[k]->id].buf = out[no++];
  }
  ok = ok && ft_jaxpr_set_vars(sub, 0, NULL, ni, iv, no, ov);
  ft_step *s = ok ? new_step(P, FT_STEP_FALLBACK, idx, 1) : NULL;
  free(iv), free(ov);
  if (!s) {
    free(in), free(out);
    P->oom = true;
    return false;
  }
  sub->eqns = (ft_eqn *)e;
  sub->n_eqn = 1;
  s->sub = sub;
  s->n_in = ni, s->n_out = no;
  s->in = in, s->out = out;
  P->p->n_fallback++;
  return true;
}

/* A routine step (routines.c): operand k's buffer in in[k] (-1 for a
 * literal, which the routine reads from the equation), result k's in out[k]
 * (-1 when dropped, unless the routine writes every result), then its
 * scratch buffers. rt: its state (ft_routine_prepare), owned by the step. */
static bool place_routine(planner *P, const ft_eqn *e, int idx, void *rt) {
  size_t sb[2];
  int ns = ft_routine_scratch(e, sb);
  bool all = ft_routine_all_outputs(e);
  int *in = calloc((size_t)e->n_in + 1, sizeof(int)), *out = calloc((size_t)e->n_out + 3, sizeof(int));
  bool ok = in && out;
  for (int k = 0; ok && k < e->n_in; k++) {
    in[k] = e->in[k]->kind == FT_VAR ? materialize(P, e->in[k], idx) : -1;
    ok = e->in[k]->kind != FT_VAR || in[k] >= 0;
  }
  for (int k = 0; ok && k < e->n_out; k++) {
    out[k] = -1;
    if (e->out[k]->kind != FT_VAR && !all) continue;
    out[k] = new_buf(P, FT_BUF_TEMP, 0, &e->out[k]->aval);
    ok = out[k] >= 0;
    if (e->out[k]->kind != FT_VAR) continue;
    P->v[e->out[k]->id].kind = VK_BUF;
    P->v[e->out[k]->id].buf = out[k];
  }
  for (int k = 0; ok && k < ns; k++) {
    ft_aval av = ft_aval_make(FT_U8, 1, (int64_t[]){(int64_t)sb[k]});
    out[e->n_out + k] = new_buf(P, FT_BUF_TEMP, 0, &av);
    ok = out[e->n_out + k] >= 0;
  }
  ft_step *s = ok ? new_step(P, FT_STEP_ROUTINE, idx, 1) : NULL;
  if (!s) {
    free(in), free(out);
    ft_routine_state_free(e, rt);
    P->oom = true;
    return false;
  }
  s->n_in = e->n_in, s->n_out = e->n_out + ns;
  s->in = in, s->out = out;
  s->rt = rt;
  ft_routine_split sp; /* batch chunks the executor may run at once */
  if (ft_routine_split_of(e, &sp)) s->extent = sp.extent, s->grain = sp.grain, s->slot = sp.slot;
  return true;
}

/* -------------------------------------------------------------- finishing */
/* Collapses group gi's loop shape (drops size-1 dims, merges dims every
 * load walks contiguously, never an iota's dim) and makes its step. */
static bool finish_group(planner *P, int gi) {
  group *g = &P->g[gi];
  ft_kernel *k = gkernel(P, gi);
  int r = g->rank, nr = 0;
  bool iota_dim[FT_MAX_RANK] = {0};
  for (int i = 0; i < k->n_nodes; i++)
    if (k->nodes[i].kind == FT_KN_IOTA) iota_dim[k->nodes[i].dim] = true;
  int map[FT_MAX_RANK], inner[FT_MAX_RANK]; /* old dim -> new dim; new dim -> its innermost old dim */
  int64_t nd[FT_MAX_RANK];
  bool zero = count_of(r, g->dims) == 0;
  for (int d = 0; d < r; d++) {
    map[d] = -1;
    if (zero || g->dims[d] == 1) continue;
    bool merge = nr > 0 && !iota_dim[d] && !iota_dim[inner[nr - 1]];
    for (int i = 0; merge && i < k->n_nodes; i++) {
      const ft_knode *n = &k->nodes[i];
      if (n->kind == FT_KN_LOAD && n->acc.buf >= 0 &&
          n->acc.st[inner[nr - 1]] != n->acc.st[d] * g->dims[d])
        merge = false;
    }
    if (merge) {
      nd[nr - 1] *= g->dims[d];
      inner[nr - 1] = d;
      map[d] = nr - 1;
    } else {
      nd[nr] = g->dims[d];
      inner[nr] = d;
      map[d] = nr++;
    }
  }
  for (int i = 0; i < k->n_nodes; i++) {
    ft_knode *n = &k->nodes[i];
    if (n->kind == FT_KN_IOTA) n->dim = zero || g->dims[n->dim] == 1 ? -1 : map[n->dim];
    if (n->kind != FT_KN_LOAD) continue;
    int64_t st[FT_MAX_RANK] = {0};
    for (int j = 0; j < nr && n->acc.buf >= 0; j++) st[j] = n->acc.st[inner[j]];
    memcpy(n->acc.st, st, sizeof st);
  }
  if (k->n_stores == 0) { /* every value went into reductions: no step */
    P->p->n_fused_eqns += g->n_eqns;
    return true;
  }
  if (zero) nd[0] = 0, nr = 1;
  if (nr == 0) nd[0] = 1, nr = 1;
  k->rank = nr;
  memcpy(k->dims, nd, sizeof(int64_t) * (size_t)nr);
  ft_step *s = new_step(P, FT_STEP_KERNEL, g->last_eqn, g->sub);
  if (!s) return false;
  s->seq = g->seq;
  s->kernel = g->kernel;
  s->extent = k->dims[0];
  s->n_eqns = g->n_eqns;
  s->eqns = g->eqns;
  g->eqns = NULL;
  s->n_out = k->n_stores;
  s->out = malloc(sizeof(int) * (size_t)(k->n_stores + 1));
  int nin = 0;
  s->in = malloc(sizeof(int) * (size_t)(k->n_nodes + 1));
  if (!s->out || !s->in) {
    P->oom = true;
    return false;
  }
  for (int i = 0; i < k->n_stores; i++) s->out[i] = k->stores[i].buf;
  for (int i = 0; i < k->n_nodes; i++)
    if (k->nodes[i].kind == FT_KN_LOAD && k->nodes[i].acc.buf >= 0) s->in[nin++] = k->nodes[i].acc.buf;
  s->n_in = nin;
  P->p->n_fused_eqns += g->n_eqns;
  return true;
}

/* Removes the kernels no step runs (groups whose values were all fused
 * into reductions) and renumbers the rest, sub-programs' steps included. */
static void mark_used(const ft_program *q, bool *used) {
  for (int i = 0; i < q->n_steps; i++) {
    const ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) used[s->kernel] = true;
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) mark_used(ft_control_sub(s->ctl, k), used);
  }
}

static void remap_kernels(ft_program *q, const int *map) {
  for (int i = 0; i < q->n_steps; i++) {
    ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) s->kernel = map[s->kernel];
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) remap_kernels(ft_control_sub(s->ctl, k), map);
  }
}

static bool drop_unused_kernels(ft_program *p) {
  bool *used = calloc((size_t)p->n_kernels + 1, sizeof *used);
  int *map = malloc(sizeof(int) * (size_t)(p->n_kernels + 1));
  if (!used || !map) {
    free(used), free(map);
    return false;
  }
  mark_used(p, used);
  int n = 0;
  for (int i = 0; i < p->n_kernels; i++) {
    map[i] = -1;
    if (!used[i]) {
      free(p->kernels[i].nodes), free(p->kernels[i].stores);
      continue;
    }
    p->kernels[n] = p->kernels[i];
    map[i] = n++;
  }
  p->n_kernels = n;
  remap_kernels(p, map);
  free(used), free(map);
  return true;
}

static int step_cmp(const void *a, const void *b) {
  const ft_step *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Output k: written in place when its buffer is a temporary nobody else
 * claimed; else copied at the end of the call. */
static void plan_outputs(planner *P) {
  const ft_jaxpr *j = P->p->j;
  ft_program *p = P->p;
  p->outs = calloc((size_t)j->n_out + 1, sizeof *p->outs);
  if (!p->outs) {
    P->oom = true;
    return;
  }
  for (int k = 0; k < j->n_out; k++) {
    const ft_var *v = j->outvars[k];
    p->outs[k].buf = -1;
    if (v->kind == FT_LIT) {
      p->outs[k].lit = v;
      continue;
    }
    int b = materialize(P, v, j->n_eqn);
    if (b < 0) return;
    if (p->bufs[b].kind == FT_BUF_TEMP) {
      p->bufs[b].kind = FT_BUF_OUTPUT;
      p->bufs[b].index = k;
      p->outs[k].in_place = true;
    } else {
      p->outs[k].buf = b;
    }
  }
}

static void assign_offsets(ft_program *p) {
  size_t off = 0;
  for (int b = 0; b < p->n_bufs; b++) {
    if (p->bufs[b].kind != FT_BUF_TEMP) continue;
    p->bufs[b].offset = off;
    off += (p->bufs[b].nbytes + 63) & ~(size_t)63;
  }
  p->arena_bytes = off;
}

/* reduce_sum of complex values: the interpreter (interp_reduce.c,
 * reduce_cpx) sums the real parts and the imaginary parts separately, each
 * in the canonical order (ft_sum_f32 / ft_sum_f64 over the parts gathered
 * in the reduced elements' row-major order). That is the f32/f64 canonical
 * sum of the operand viewed as its parts, x[..., 2] (element strides
 * doubled, the part axis kept, stride 1), whose outputs [..., 2] are the
 * complex result's bytes: one real reduction kernel (split as any), its
 * buffer typed as the complex result for whoever reads it. The operand is
 * read from its buffer or view (a complex producer is not recomputed in
 * the reduction: reduction kernels compute real values only). */
static bool place_reduce_cpx(planner *P, const ft_eqn *e, int idx) {
  const ft_var *x = e->in[0], *o = e->out[0];
  const ft_aval *T = &x->aval;
  if (e->prim != FT_P_REDUCE_SUM || x->kind != FT_VAR || !ft_dtype_is_complex(T->dtype) ||
      o->aval.dtype != T->dtype || T->rank + 1 > FT_MAX_RANK || o->aval.rank + 1 > FT_MAX_RANK)
    return false;
  ft_dtype pd = part_of(T->dtype);
  ft_kernel k;
  memset(&k, 0, sizeof k);
  k.kind = FT_KER_REDUCE;
  k.rprim = FT_P_REDUCE_SUM;
  k.rout_dt = pd;
  k.irank = T->rank + 1;
  memcpy(k.idims, T->dims, sizeof(int64_t) * (size_t)T->rank);
  k.idims[T->rank] = 2;
  int64_t axes[FT_MAX_RANK];
  int na = ft_param_ints(e, "axes", axes, FT_MAX_RANK);
  if (na < 0) return false;
  for (int i = 0; i < na; i++) {
    if (axes[i] < 0 || axes[i] >= T->rank) return false;
    k.ired[axes[i]] = true;
  }
  ft_access a;
  if (!own_access(P, x, &a)) {
    memset(&a, 0, sizeof a);
    a.buf = -2;
    contig(T->rank, T->dims, a.st);
  }
  if (a.buf == -2) a.buf = materialize(P, x, idx);
  if (a.buf < 0) return false; /* a literal operand: the interpreter's step */
  a.dt = pd;
  a.base *= 2;
  for (int d = 0; d < T->rank; d++) a.st[d] *= 2;
  a.st[T->rank] = 1;
  k.nodes = malloc(sizeof *k.nodes);
  if (!k.nodes) {
    P->oom = true;
    return false;
  }
  k.nodes[0] = (ft_knode){.kind = FT_KN_LOAD, .dt = pd, .acc = a};
  k.n_nodes = k.cap_nodes = 1;
  k.rnode = 0;
  reduce_summary(&k);
  int64_t od[FT_MAX_RANK];
  memcpy(od, o->aval.dims, sizeof(int64_t) * (size_t)o->aval.rank);
  od[o->aval.rank] = 2;
  ft_aval ov = ft_aval_make(pd, o->aval.rank + 1, od);
  int out = split_wanted(&k, ft_aval_size(&ov)) ? place_split(P, &k, idx, &ov)
                                                : add_reduce_step(P, &k, idx, &ov);
  if (out < 0) return false;
  P->p->bufs[out].aval = o->aval; /* the same bytes */
  P->v[o->id].kind = VK_BUF;
  P->v[o->id].buf = out;
  return true;
}

/* The one-pass logsumexp (ft_lse_match; docs/jit.md "One-pass
 * logsumexp"): equations idx .. idx + n_eqns - 1 become two kernels calling the
 * shared routine of vmath/vm_lse.c, which the interpreter calls too: block
 * partials (max and exp-sum of FT_VM_LSE_BLOCK elements, read once from
 * memory; the executor shares the blocks among threads), then one combine
 * per row writing the shift f and the sum j. x is read from its buffer. */
static int add_lse_kernel(planner *P, const ft_kernel *k, int eqn, int n_eqns, int first_eqn) {
  ft_program *p = P->p;
  ft_kernel *nk = grow(P, p->kernels, &p->cap_kernels, p->n_kernels + 1, sizeof *p->kernels);
  if (!nk) return -1;
  p->kernels = nk;
  int ki = p->n_kernels++;
  p->kernels[ki] = *k;
  ft_step *s = new_step(P, FT_STEP_KERNEL, eqn, 1);
  if (!s) return -1;
  s->kernel = ki;
  s->extent = k->kdims[0];
  s->n_eqns = n_eqns;
  s->eqns = malloc(sizeof(int) * (size_t)n_eqns);
  s->in = malloc(sizeof(int) * 3);
  s->out = malloc(sizeof(int) * 2);
  if (!s->eqns || !s->in || !s->out) {
    P->oom = true;
    return -1;
  }
  for (int q = 0; q < n_eqns; q++) s->eqns[q] = first_eqn + q;
  if (k->lse_fin) {
    s->n_in = 3, s->in[0] = k->lse_x, s->in[1] = k->lse_pm, s->in[2] = k->lse_ps;
    s->n_out = 2, s->out[0] = k->lse_shift, s->out[1] = k->lse_sum;
  } else {
    s->n_in = 1, s->in[0] = k->lse_x;
    s->n_out = 2, s->out[0] = k->lse_pm, s->out[1] = k->lse_ps;
  }
  return ki;
}

static bool place_lse(planner *P, const ft_lse_pat *pat, int idx) {
  int xb = materialize(P, pat->x, idx);
  if (xb < 0) return false;
  int64_t rows = pat->rows, n = pat->n, nb = (n + FT_VM_LSE_BLOCK - 1) / FT_VM_LSE_BLOCK;
  ft_aval pav = ft_aval_make(FT_F32, 1, (int64_t[]){rows * nb});
  ft_kernel k;
  memset(&k, 0, sizeof k);
  k.kind = FT_KER_LSE;
  k.lse_rows = rows, k.lse_n = n, k.lse_nb = nb;
  k.lse_x = xb;
  k.lse_pm = new_buf(P, FT_BUF_TEMP, 0, &pav);
  k.lse_ps = new_buf(P, FT_BUF_TEMP, 0, &pav);
  k.lse_shift = new_buf(P, FT_BUF_TEMP, 0, &pat->shift->aval);
  k.lse_sum = new_buf(P, FT_BUF_TEMP, 0, &pat->sum->aval);
  if (k.lse_pm < 0 || k.lse_ps < 0 || k.lse_shift < 0 || k.lse_sum < 0) return false;
  k.krank = 1;
  k.kdims[0] = rows * nb;
  k.rcount = n < FT_VM_LSE_BLOCK ? n : FT_VM_LSE_BLOCK;
  int last = idx + pat->n_eqns - 1;
  if (add_lse_kernel(P, &k, idx, pat->n_eqns - 1, idx) < 0) return false;
  k.lse_fin = true;
  k.kdims[0] = rows;
  k.rcount = nb > 0 ? nb : 1;
  if (add_lse_kernel(P, &k, last, 1, last) < 0) return false;
  P->v[pat->shift->id].kind = VK_BUF;
  P->v[pat->shift->id].buf = k.lse_shift;
  P->v[pat->sum->id].kind = VK_BUF;
  P->v[pat->sum->id].buf = k.lse_sum;
  P->p->n_fused_eqns += pat->n_eqns;
  return true;
}

static bool touches_key(const ft_eqn *e) {
  for (int k = 0; k < e->n_in; k++)
    if (ft_dtype_is_key(e->in[k]->aval.dtype)) return true;
  for (int k = 0; k < e->n_out; k++)
    if (ft_dtype_is_key(e->out[k]->aval.dtype)) return true;
  return false;
}

static bool plan_eqn(planner *P, const ft_eqn *e, int idx) {
  if (P->opts->no_compile) return place_fallback(P, e, idx);
  bool live = false; /* every primitive is pure: an equation nobody reads is skipped */
  for (int k = 0; k < e->n_out; k++) live |= e->out[k]->kind == FT_VAR;
  if (!live && e->n_out > 0) return true;
  ft_family fam = ft_prim_get(e->prim)->family;
  if (fam == FT_FAM_CONTROL || e->prim == FT_P_REDUCE || e->prim == FT_P_REDUCE_WINDOW || e->prim == FT_P_SHARD_MAP) {
    /* generic reduce(_window): its computation compiled; shard_map: spmd.c */
    if (place_control(P, e, idx)) return true;
    if (P->oom) return false;
    if (e->prim == FT_P_SHARD_MAP) return place_fallback(P, e, idx); /* keeps place_control's reason */
  }
  if (fam != FT_FAM_CONTROL && ft_rule_into_for(e->prim) != ft_random_into && touches_key(e)) {
    /* PRNG keys (key<fry>) move between random_* routine steps as buffers:
     * the kernels have no key type, the interpreter's rules move any bytes */
    P->why[idx] = ft_why_key_steps;
    return place_fallback(P, e, idx);
  }
  if ((fam == FT_FAM_LAYOUT || fam == FT_FAM_CUMULATIVE || fam == FT_FAM_OTHER ||
       e->prim == FT_P_REDUCE_PRECISION) && ft_routine_native(e, &P->why[idx])) {
    void *rt = NULL;
    if (ft_routine_prepare(e, &rt, &P->why[idx])) return place_routine(P, e, idx, rt);
  }
  if (P->oom) return false;
  if (e->n_out == 1 && e->out[0]->kind == FT_VAR && fam != FT_FAM_CONTROL) {
    if (is_view_prim(e) && place_view(P, e, idx)) return true;
    if (fam == FT_FAM_REDUCE && (place_reduce_cpx(P, e, idx) || place_reduce(P, e, idx))) return true;
    if (fam == FT_FAM_DOT && place_dot(P, e, idx)) return true;
    if (fam != FT_FAM_LAYOUT && fam != FT_FAM_REDUCE && fam != FT_FAM_DOT &&
        ft_lower_elem_native(e, &P->why[idx]) && e->n_in <= 16) {
      place_elem(P, e, idx);
      return !P->oom;
    }
  }
  if (P->oom) return false;
  /* conversions the loop kernels do not compile: the interpreter's conversion */
  if (fam == FT_FAM_CONVERT && ft_routine_native(e, NULL)) return place_routine(P, e, idx, NULL);
  /* reductions and dots the kernels and GEMM steps do not compute: the
   * interpreter's rule body; what it refuses keeps the reason above */
  if ((fam == FT_FAM_REDUCE || fam == FT_FAM_DOT) && ft_routine_native(e, NULL))
    return place_routine(P, e, idx, NULL);
  if (!P->why[idx]) {
    switch (fam) {
    case FT_FAM_CONTROL:
      P->why[idx] = "control flow whose sub-jaxprs do not fit its operands";
      break;
    case FT_FAM_LAYOUT: P->why[idx] = "layout operation is not compiled yet"; break;
    case FT_FAM_CUMULATIVE: P->why[idx] = "cumulative operations are not compiled yet"; break;
    case FT_FAM_OTHER:
      P->why[idx] = e->prim == FT_P_FFT || ft_rule_into_for(e->prim)
                        ? "the interpreter's rule refuses these operands or params"
                        : "not compiled yet";
      break;
    default: P->why[idx] = "not compiled yet"; break;
    }
  }
  return place_fallback(P, e, idx);
}

/* Binds inputs and constants to buffers. */
static bool plan_inputs(planner *P) {
  ft_program *p = P->p;
  const ft_jaxpr *j = p->j;
  int pos = 0;
  if (j->const_data) {
    p->n_consts = j->n_const;
    p->consts = calloc((size_t)j->n_const + 1, sizeof *p->consts);
    if (!p->consts) return false;
  }
  for (int k = 0; k < j->n_const; k++) {
    const ft_var *v = j->constvars[k];
    int b;
    if (j->const_data) {
      size_t nb = (size_t)ft_aval_size(&v->aval) * ft_dtype_size(v->aval.dtype);
      p->consts[k] = aligned_alloc(64, (nb + 63) & ~(size_t)63 ? (nb + 63) & ~(size_t)63 : 64);
      if (!p->consts[k]) return false;
      if (nb) memcpy(p->consts[k], j->const_data[k], nb);
      b = new_buf(P, FT_BUF_CONST, k, &v->aval);
    } else {
      b = new_buf(P, FT_BUF_INPUT, pos++, &v->aval);
    }
    if (b < 0) return false;
    P->v[v->id].kind = VK_BUF;
    P->v[v->id].buf = b;
  }
  for (int k = 0; k < j->n_in; k++) {
    const ft_var *v = j->invars[k];
    int b = new_buf(P, FT_BUF_INPUT, pos++, &v->aval);
    if (b < 0) return false;
    P->v[v->id].kind = VK_BUF;
    P->v[v->id].buf = b;
  }
  p->n_args = pos;
  p->n_out = j->n_out;
  return true;
}

ft_program *ft_program_plan(ft_ctx *ctx, const ft_jaxpr *j, const ft_plan_options *opts) {
  ft_plan_options dflt = {0};
  planner P = {.ctx = ctx, .opts = opts ? opts : &dflt};
  ft_program *p = calloc(1, sizeof *p);
  if (!p) {
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
    return NULL;
  }
  P.p = p;
  p->j = jaxpr_clone_top(j);
  if (!p->j || (j->const_data && !jaxpr_copy_consts(p->j, j))) {
    ft_program_free(p);
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory copying the jaxpr");
    return NULL;
  }
  P.nv = ft_arena_num_var_ids(p->j->arena);
  P.v = calloc((size_t)P.nv + 1, sizeof *P.v);
  P.why = calloc((size_t)p->j->n_eqn + 1, sizeof *P.why);
  P.uses = calloc((size_t)P.nv + 1, sizeof *P.uses);
  bool ok = P.v && P.why && P.uses && plan_inputs(&P);
  for (int i = 0; ok && i < p->j->n_eqn; i++)
    for (int k = 0; k < p->j->eqns[i].n_in; k++)
      if (p->j->eqns[i].in[k]->kind == FT_VAR) P.uses[p->j->eqns[i].in[k]->id]++;
  for (int k = 0; ok && k < p->j->n_out; k++)
    if (p->j->outvars[k]->kind == FT_VAR) P.uses[p->j->outvars[k]->id]++;
  for (int i = 0; ok && i < p->j->n_eqn; i++) {
    ft_lse_pat lse;
    if (!P.opts->no_compile && p->j->eqns[i].prim == FT_P_REDUCE_MAX && ft_lse_match(p->j, i, &lse)) {
      ok = place_lse(&P, &lse, i) && !P.oom;
      i += lse.n_eqns - 1;
      continue;
    }
    ok = plan_eqn(&P, &p->j->eqns[i], i) && !P.oom;
  }
  if (ok) plan_outputs(&P);
  for (int gi = 0; ok && !P.oom && gi < P.n_groups; gi++) ok = finish_group(&P, gi);
  ok = ok && !P.oom;
  if (ok) {
    if (p->n_steps > 1) qsort(p->steps, (size_t)p->n_steps, sizeof *p->steps, step_cmp);
    ok = drop_unused_kernels(p);
  }
  if (ok) {
    for (int i = 0; i < p->n_kernels; i++)
      snprintf(p->kernels[i].name, sizeof p->kernels[i].name, "ft_k%d", i);
    for (int i = 0; i < p->n_steps; i++) p->n_gemm += p->steps[i].kind == FT_STEP_GEMM;
    assign_offsets(p);
    /* remember the reasons for the plan text */
    p->why = P.why;
    P.why = NULL;
  }
  for (int gi = 0; gi < P.n_groups; gi++) free(P.g[gi].eqns);
  free(P.g);
  free(P.v);
  free(P.uses);
  free(P.why);
  if (!ok) {
    if (ft_ctx_status(ctx) == FT_OK) ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory while planning");
    ft_program_free(p);
    return NULL;
  }
  return p;
}

void ft_program_free(ft_program *p) {
  if (!p) return;
  for (int i = 0; i < p->n_steps; i++) {
    ft_step *s = &p->steps[i];
    free(s->eqns), free(s->in), free(s->out);
    ft_control_free(s->ctl);
    if (s->rt) ft_routine_state_free(&p->j->eqns[s->eqn], s->rt);
    if (s->gemm) {
      ft_gemm_plan *g = s->gemm;
      free(g->lb), free(g->lm), free(g->lk), free(g->rb), free(g->rk), free(g->rn);
      free(g);
    }
  }
  for (int i = 0; i < p->n_kernels; i++) free(p->kernels[i].nodes), free(p->kernels[i].stores);
  for (int i = 0; i < p->n_consts; i++) free(p->consts[i]);
  free(p->consts);
  free(p->steps);
  free(p->kernels);
  free(p->bufs);
  free(p->outs);
  free(p->why);
  ft_jaxpr_free(p->j);
  free(p);
}

/* ------------------------------------------------------------- coverage */
const char *ft_lower_rule_status(ft_prim p) {
  if (p == FT_P_CUSTOM_LIN) /* its interpreter step refuses to run, as JAX's impl does */
    return "n/a: custom_lin is only meaningful under transposition (it never runs forward)";
  switch (ft_prim_get(p)->family) {
  case FT_FAM_UNARY:
    return NULL; /* reduce_precision: a routine step (the interpreter's body) */
  case FT_FAM_BINARY: case FT_FAM_COMPARE: case FT_FAM_TERNARY: case FT_FAM_SELECT:
  case FT_FAM_CONVERT: case FT_FAM_REDUCE: case FT_FAM_DOT: case FT_FAM_CONTROL:
    return NULL;
  case FT_FAM_LAYOUT:
    switch (p) {
    case FT_P_BROADCAST_IN_DIM: case FT_P_RESHAPE: case FT_P_TRANSPOSE: case FT_P_SQUEEZE:
    case FT_P_EXPAND_DIMS: case FT_P_REV: case FT_P_SLICE:
    case FT_P_PAD: case FT_P_CONCATENATE: case FT_P_SPLIT: case FT_P_DYNAMIC_SLICE:
    case FT_P_DYNAMIC_UPDATE_SLICE: /* native routines (routines.c) */
      return NULL;
    default:
      return "unsupported: runs as an interpreter step: this layout operation is not compiled yet";
    }
  case FT_FAM_CUMULATIVE: /* routines.c: native folds, or the interpreter's body (f16/bf16,
                             cumlogsumexp) */
    return NULL;
  default:
    if (p == FT_P_IOTA || p == FT_P_FFT || ft_rule_into_for(p) || p == FT_P_REAL ||
        p == FT_P_IMAG || p == FT_P_CONJ || p == FT_P_COMPLEX)
      return NULL; /* a kernel (complex parts: cpx_elem); routines.c (FFTW, or the
                      interpreter's rule body) */
    if (p == FT_P_EMPTY2) return NULL; /* routines.c: all-zero bits */
    if (p == FT_P_REDUCE || p == FT_P_REDUCE_WINDOW) return NULL; /* control.c: computation compiled */
    if (p == FT_P_SHARD_MAP || ft_prim_is_collective(p))
      return NULL; /* spmd.c: the body per device, collectives as routine steps */
    return "unsupported: runs as an interpreter step: not compiled yet";
  }
}
