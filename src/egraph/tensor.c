/* src/egraph/tensor.c: the tensor client of the e-graph engine. A jaxpr
 * becomes an e-graph (each equation an e-node keyed by primitive + canonical
 * params, literals splat-constant nodes, inputs leaf symbols), rules from
 * tensor_rules.c grow it, and the cheapest program under tensor_cost.c's
 * model is extracted and rebuilt as a verified jaxpr. Hash-consing gives
 * CSE, extraction from the outputs gives DCE. Control-flow and multi-output
 * equations are opaque tuple nodes read by `proj` nodes; their sub-jaxprs
 * are optimized recursively first (and keyed by index of the optimized
 * copy, so equal sub-jaxprs are optimized once).
 *
 * The analysis carries each class's aval and, when every element of the
 * value is known to be the same constant, that constant's bits ("splat").
 * Folding runs the interpreter on a one-equation jaxpr, so a folded
 * constant is bit-identical to what evaluation would produce. Two classes
 * with different constants never merge silently: at the exact tier that is
 * an "unsound rule" error naming the rule (NaNs count as equal, as in
 * docs/determinism.md). */
#include <math.h>
#include <string.h>

#include "egraph/tensor.h"
#include "ir/json.h"
#include "ledger/ledger.h"
#include "runtime/runtime.h"
#include "transforms/transforms.h"

/* ------------------------------------------------------------ the session */

typedef struct sub_ent {
  const ft_jaxpr *orig;
  uint8_t hash[16];
  ft_jaxpr *opt;
} sub_ent;

typedef struct fired_ent {
  char *name;
  int64_t count;
} fired_ent;

/* State shared by the e-graphs of one ft_optimize (the top level and every
 * sub-jaxpr): the result's arena, the optimized sub-jaxprs, counters. */
typedef struct ft_tsession {
  ft_ctx *ctx;            /* the caller's: errors end up here */
  ft_ctx *pctx;           /* private: shape rules and folding */
  ft_arena *A;            /* the result's arena */
  ft_topt_opts o;
  sub_ent *subs;
  uint32_t nsubs, capsubs;
  ft_pval **big;          /* params too large for a node key (unique, in A) */
  uint32_t nbig, capbig;
  fired_ent *fired;
  int nfired, capfired;
  int depth;
  bool failed;
  size_t n_cse;
  size_t iters, nodes, classes;
  ft_egraph_stop stop;
  char **proofs;
  int nproofs, capproofs;
  bool want_proofs;
} ft_tsession;

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return true;
  uint32_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, (size_t)nc * elem);
  if (!q) return false;
  memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
  *p = q;
  *cap = nc;
  return true;
}

static bool session_fail(ft_tsession *S, ft_status st, const char *msg) {
  if (!S->failed) ft_set_error(S->ctx, st, "optimize: %s", msg);
  S->failed = true;
  return false;
}

static void count_fired(ft_tsession *S, const char *name, int64_t n) {
  if (n <= 0) return;
  for (int i = 0; i < S->nfired; i++)
    if (!strcmp(S->fired[i].name, name)) {
      S->fired[i].count += n;
      return;
    }
  uint32_t cap = (uint32_t)S->capfired;
  if (!grow((void **)&S->fired, &cap, (uint32_t)S->nfired + 1, sizeof *S->fired)) return;
  S->capfired = (int)cap;
  char *s = strdup(name);
  if (!s) return;
  S->fired[S->nfired++] = (fired_ent){s, n};
}

static ft_jaxpr *opt_jaxpr(ft_tsession *S, const ft_jaxpr *src, ft_jaxpr *dst);

/* The index of the optimized copy of sub-jaxpr j (optimized on first use;
 * equal canonical hashes share one copy). -1 on failure. */
static int64_t sub_index(ft_tsession *S, const ft_jaxpr *j) {
  for (uint32_t i = 0; i < S->nsubs; i++)
    if (S->subs[i].orig == j) return i;
  uint8_t h[16];
  ft_jaxpr_hash(j, h);
  for (uint32_t i = 0; i < S->nsubs; i++)
    if (!memcmp(S->subs[i].hash, h, 16)) return i;
  ft_jaxpr *dst = ft_jaxpr_new(S->A);
  if (!dst) return session_fail(S, FT_ERR_NOMEM, "out of memory"), -1;
  S->depth++;
  ft_jaxpr *r = opt_jaxpr(S, j, dst);
  S->depth--;
  if (!r) return -1;
  if (!grow((void **)&S->subs, &S->capsubs, S->nsubs + 1, sizeof *S->subs))
    return session_fail(S, FT_ERR_NOMEM, "out of memory"), -1;
  S->subs[S->nsubs] = (sub_ent){j, {0}, r};
  memcpy(S->subs[S->nsubs].hash, h, 16);
  return S->nsubs++;
}

/* ------------------------------------------------------- params encoding */
/* A node's params blob is a sequence of 64-bit words (so the engine prints
 * them as integers): for each param that differs from the schema default,
 * its index, then the value: tag, payload. Defaults are left out, so ops
 * whose params are all default have an empty blob and rule patterns such
 * as (mul ?x ?c) match them. Sub-jaxprs are the index of their optimized
 * copy. A blob over the engine's limit becomes {-1, k}: params kept whole
 * in S->big (unique, so such equations are never shared). */
typedef struct wbuf {
  int64_t *w;
  size_t n, cap;
  bool bad;
} wbuf;

static void wput(wbuf *b, int64_t v) {
  if (b->n < b->cap) b->w[b->n] = v;
  else b->bad = true;
  b->n++;
}

static void wstr(wbuf *b, const char *s) {
  size_t l = s ? strlen(s) : 0;
  wput(b, (int64_t)l);
  for (size_t i = 0; i < l; i += 8) {
    int64_t w = 0;
    memcpy(&w, s + i, l - i < 8 ? l - i : 8);
    wput(b, w);
  }
}

static void enc_pval(ft_tclient *tc, wbuf *b, const ft_pval *v) {
  wput(b, v->tag);
  switch (v->tag) {
  case FT_PV_NONE: break;
  case FT_PV_BOOL: wput(b, v->u.b); break;
  case FT_PV_INT: wput(b, v->u.i); break;
  case FT_PV_FLOAT: {
    int64_t w;
    memcpy(&w, &v->u.f, 8);
    wput(b, w);
    break;
  }
  case FT_PV_DTYPE: wput(b, v->u.dt); break;
  case FT_PV_SYM: wput(b, v->u.i); wstr(b, v->s); break;
  case FT_PV_STR: case FT_PV_OPAQUE: wstr(b, v->s); break;
  case FT_PV_TUPLE:
    wput(b, (int64_t)v->n | ((int64_t)v->list << 32));
    for (int i = 0; i < v->n; i++) enc_pval(tc, b, &v->u.items[i]);
    break;
  case FT_PV_JAXPR: {
    int64_t k = tc->S ? sub_index(tc->S, v->u.jaxpr) : -1;
    if (k < 0) b->bad = true;
    wput(b, k);
    break;
  }
  }
}

int ft_tparams_encode(ft_tclient *tc, ft_prim p, const ft_pval *ps, uint8_t *out, size_t cap) {
  const ft_prim_info *pi = ft_prim_get(p);
  int64_t words[FT_EGRAPH_MAX_PARAMS / 8];
  wbuf b = {.w = words, .n = 0, .cap = FT_COUNTOF(words)};
  ft_arena *tmp = ft_arena_new();
  ft_pval *dflt = tmp ? ft_params_default(tmp, p) : NULL;
  if (!dflt) return tc->oom = true, ft_arena_free(tmp), -1; /* not "too large for a key" */
  /* a shard_map's body (optimized on first encoding) sees its mesh: all_to_all's shape rule needs it */
  ft_spmd_env saved;
  if (p == FT_P_SHARD_MAP) ft_spmd_env_enter(&ps[ft_prim_param_index(p, "mesh")], &saved);
  for (int i = 0; i < pi->n_params; i++) {
    if (ft_pval_eq(&ps[i], &dflt[i])) continue;
    wput(&b, i);
    enc_pval(tc, &b, &ps[i]);
  }
  if (p == FT_P_SHARD_MAP) ft_spmd_env_leave(&saved);
  ft_arena_free(tmp);
  if (b.bad && tc->S && tc->S->failed) return -1;
  if (b.bad || b.n * 8 > cap) return -1;
  memcpy(out, words, b.n * 8);
  return (int)(b.n * 8);
}

typedef struct rbuf {
  const int64_t *w;
  size_t n, pos;
  bool bad;
} rbuf;

static int64_t wget(rbuf *r) {
  if (r->pos >= r->n) return r->bad = true, 0;
  return r->w[r->pos++];
}

static const char *rstr(rbuf *r, ft_arena *a) {
  int64_t l = wget(r);
  if (l < 0 || (size_t)(l + 7) / 8 > r->n - r->pos) return r->bad = true, "";
  char *s = ft_arena_strndup(a, (const char *)(r->w + r->pos), (size_t)l);
  r->pos += (size_t)(l + 7) / 8;
  if (!s) r->bad = true;
  return s ? s : "";
}

static void dec_pval(ft_tclient *tc, ft_arena *a, rbuf *r, ft_pval *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > 64) {
    r->bad = true;
    return;
  }
  v->tag = (ft_pv_tag)wget(r);
  switch (v->tag) {
  case FT_PV_NONE: break;
  case FT_PV_BOOL: v->u.b = wget(r) != 0; break;
  case FT_PV_INT: v->u.i = wget(r); break;
  case FT_PV_FLOAT: {
    int64_t w = wget(r);
    memcpy(&v->u.f, &w, 8);
    break;
  }
  case FT_PV_DTYPE: v->u.dt = (ft_dtype)wget(r); break;
  case FT_PV_SYM: v->u.i = wget(r); v->s = rstr(r, a); break;
  case FT_PV_STR: case FT_PV_OPAQUE: v->s = rstr(r, a); break;
  case FT_PV_TUPLE: {
    int64_t h = wget(r);
    v->n = (int)(h & 0xFFFFFFFF);
    v->list = (h >> 32) & 1;
    if (v->n < 0 || (size_t)v->n > r->n) {
      r->bad = true;
      v->n = 0;
      break;
    }
    v->u.items = v->n ? ft_arena_alloc(a, sizeof(ft_pval) * (size_t)v->n) : NULL;
    if (v->n && !v->u.items) {
      r->bad = true;
      v->n = 0;
      break;
    }
    for (int i = 0; i < v->n; i++) dec_pval(tc, a, r, &v->u.items[i], depth + 1);
    break;
  }
  case FT_PV_JAXPR: {
    int64_t k = wget(r);
    if (!tc->S || k < 0 || k >= tc->S->nsubs) r->bad = true;
    else v->u.jaxpr = tc->S->subs[k].opt;
    break;
  }
  default: r->bad = true;
  }
}

ft_pval *ft_tparams_decode(ft_tclient *tc, ft_arena *a, ft_prim p, const uint8_t *blob,
                           size_t len) {
  int64_t words[FT_EGRAPH_MAX_PARAMS / 8];
  if (len % 8 || len > sizeof words) return NULL;
  if (len) memcpy(words, blob, len);
  rbuf r = {words, len / 8, 0, false};
  if (r.n == 2 && words[0] == -1) {
    if (!tc->S || words[1] < 0 || words[1] >= tc->S->nbig) return NULL;
    return tc->S->big[words[1]];
  }
  const ft_prim_info *pi = ft_prim_get(p);
  ft_pval *ps = ft_params_default(a, p);
  if (!ps) return tc->oom = true, NULL;
  while (r.pos < r.n && !r.bad) {
    int64_t i = wget(&r);
    if (i < 0 || i >= pi->n_params) return NULL;
    dec_pval(tc, a, &r, &ps[i], 0);
  }
  return r.bad ? NULL : ps;
}

/* --------------------------------------------------------------- constants */

void ft_tbits_of(ft_dtype dt, double v, uint8_t bits[16]) {
  ft_array a = {0};
  uint64_t buf[4] = {0};
  a.aval = ft_aval_scalar(dt);
  a.nbytes = ft_dtype_size(dt);
  a.data = buf;
  if (ft_dtype_is_complex(dt)) ft_set_c128(&a, 0, v, 0);
  else if (ft_dtype_is_float(dt)) ft_set_f64(&a, 0, v);
  else ft_set_i64(&a, 0, (int64_t)v);
  memset(bits, 0, 16);
  memcpy(bits, buf, a.nbytes);
}

/* The bits of a literal, materialized as the interpreter does. */
static void lit_bits(const ft_var *v, uint8_t bits[16]) {
  ft_array a = {0};
  uint64_t buf[4] = {0};
  ft_dtype dt = v->aval.dtype;
  a.aval = ft_aval_scalar(dt);
  a.nbytes = ft_dtype_size(dt);
  a.data = buf;
  if (ft_dtype_is_complex(dt)) ft_set_c128(&a, 0, v->lit.f, v->lit_im);
  else if (ft_dtype_is_float(dt)) ft_set_f64(&a, 0, v->lit.f);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(&a, 0, (int64_t)v->lit.u);
  else ft_set_i64(&a, 0, v->lit.i);
  memset(bits, 0, 16);
  memcpy(bits, buf, a.nbytes);
}

/* A literal var holding bits. */
static ft_var *bits_lit(ft_arena *A, ft_dtype dt, bool weak, const uint8_t bits[16]) {
  ft_array a = {0};
  uint64_t buf[4] = {0};
  a.aval = ft_aval_scalar(dt);
  a.nbytes = ft_dtype_size(dt);
  a.data = buf;
  memcpy(buf, bits, a.nbytes);
  ft_var *v;
  if (ft_dtype_is_complex(dt)) {
    double re, im;
    ft_get_c128(&a, 0, &re, &im);
    if ((v = ft_lit_new_float(A, dt, re))) v->lit_im = im;
  } else if (ft_dtype_is_float(dt)) v = ft_lit_new_float(A, dt, ft_get_f64(&a, 0));
  else if (ft_dtype_is_unsigned(dt)) v = ft_lit_new_uint(A, dt, ft_get_u64(&a, 0));
  else v = ft_lit_new_int(A, dt, ft_get_i64(&a, 0));
  if (v) v->aval.weak_type = weak;
  return v;
}

size_t ft_tconst_encode(const ft_aval *av, const uint8_t bits[16], uint8_t *out) {
  int64_t w[4 + FT_MAX_RANK + 2];
  size_t n = 0;
  w[n++] = av->dtype;
  w[n++] = av->weak_type;
  w[n++] = av->rank;
  for (int d = 0; d < av->rank; d++) w[n++] = av->dims[d];
  memcpy(&w[n++], bits, 8);
  memcpy(&w[n++], bits + 8, 8);
  memcpy(out, w, n * 8);
  return n * 8;
}

static bool const_decode(const ft_enode_view *v, ft_aval *av, uint8_t bits[16]) {
  int64_t w[4 + FT_MAX_RANK + 2];
  if (v->pbytes % 8 || v->pbytes < 40 || v->pbytes > sizeof w) return false;
  memcpy(w, v->params, v->pbytes);
  size_t n = v->pbytes / 8;
  if (w[2] < 0 || w[2] > FT_MAX_RANK || (size_t)w[2] + 5 != n) return false;
  if (w[0] < 0 || w[0] >= FT_NUM_DTYPES) return false;
  *av = ft_aval_make((ft_dtype)w[0], (int)w[2], w + 3);
  av->weak_type = w[1] != 0;
  memcpy(bits, &w[3 + w[2]], 8);
  memcpy(bits + 8, &w[4 + w[2]], 8);
  return true;
}

/* ---------------------------------------------------------------- analysis */

ft_prim ft_tnode_prim(const ft_tclient *tc, uint32_t op) {
  if (op < tc->op_prim0 || op >= tc->op_prim0 + FT_NUM_PRIMS) return FT_NUM_PRIMS;
  return (ft_prim)(op - tc->op_prim0);
}

static bool cache_grow(ft_tclient *tc, uint32_t n) {
  if (n < tc->ncache) return true;
  uint32_t nc = tc->ncache ? tc->ncache : 256;
  while (nc <= n) nc *= 2;
  ft_pval **d = realloc(tc->dec, nc * sizeof *d);
  if (d) tc->dec = d;
  double *c = realloc(tc->cost, nc * sizeof *c);
  if (c) tc->cost = c;
  if (!d || !c) return tc->oom = true, false;
  for (uint32_t i = tc->ncache; i < nc; i++) d[i] = NULL, c[i] = -1;
  tc->ncache = nc;
  return true;
}

const ft_pval *ft_tnode_params(ft_tclient *tc, ft_enode n) {
  if (!cache_grow(tc, n)) return NULL;
  if (tc->dec[n]) return tc->dec[n];
  ft_enode_view v = ft_egraph_node(tc->eg, n);
  ft_prim p = ft_tnode_prim(tc, v.op);
  if (p == FT_NUM_PRIMS) return NULL;
  tc->dec[n] = ft_tparams_decode(tc, tc->scratch, p, v.params, v.pbytes);
  return tc->dec[n];
}

ft_aval ft_tdata_aval(const ft_tdata *d) {
  ft_aval a = ft_aval_make((ft_dtype)d->dtype, d->rank, d->dims);
  a.weak_type = d->weak;
  return a;
}

static void set_aval(ft_tdata *d, const ft_aval *a) {
  d->kind = TD_VALUE;
  d->dtype = (uint8_t)a->dtype;
  d->rank = (uint8_t)a->rank;
  d->weak = a->weak_type;
  for (int i = 0; i < a->rank; i++) d->dims[i] = a->dims[i];
}

static bool is_tuple_prim(ft_prim p) {
  const ft_prim_info *pi = ft_prim_get(p);
  return pi->family == FT_FAM_CONTROL || pi->n_out != 1;
}

/* Evaluates p on inputs filled with the given splat bits (avals `in`),
 * with the interpreter's own rule; writes element 0 of the result. */
static bool eval_splat(ft_tclient *tc, ft_prim p, const ft_pval *ps, int n, const ft_aval *in,
                       uint8_t (*ibits)[16], const ft_aval *out, uint8_t obits[16]) {
  ft_jaxpr *J = ft_jaxpr_new(NULL);
  if (!J) return tc->oom = true, false;
  bool ok = false;
  ft_var *iv[16], *ov = ft_var_new(J->arena, out);
  ft_array *args[16] = {0}, *res = NULL;
  bool nomem = !ov;
  if (n > 16 || !ov) goto done;
  for (int k = 0; k < n; k++) {
    if (!(iv[k] = ft_var_new(J->arena, &in[k]))) {
      nomem = true;
      goto done;
    }
    if (!(args[k] = ft_array_alloc(tc->ctx, &in[k]))) goto done;
    size_t es = ft_dtype_size(in[k].dtype);
    for (int64_t i = 0; i < ft_array_size(args[k]); i++)
      memcpy((char *)args[k]->data + (size_t)i * es, ibits[k], es);
  }
  ft_jb b;
  ft_jb_init(&b, J);
  if (!ft_jb_add(&b, p, n, iv, 1, &ov, ps) || !ft_jaxpr_set_vars(J, 0, NULL, n, iv, 1, &ov)) {
    nomem = true; /* they fail only when an allocation does */
    goto done;
  }
  if (ft_interp_jaxpr(tc->ctx, J, n, (const ft_array *const *)args, &res) != FT_OK || !res) goto done;
  memset(obits, 0, 16);
  if (ft_array_size(res) >= 1) {
    memcpy(obits, res->data, ft_dtype_size(out->dtype));
    ok = true;
  }
done:
  /* Out of memory is not "this does not fold": the optimization fails
   * (a fold skipped for want of memory would change the result). */
  if (!ok && (nomem || ft_ctx_status(tc->ctx) == FT_ERR_NOMEM)) tc->oom = true;
  ft_ctx_clear_error(tc->ctx);
  for (int k = 0; k < n && k < 16; k++) ft_array_free(args[k]);
  ft_array_free(res);
  ft_jaxpr_free(J);
  return ok;
}

static bool same_bits(const ft_tdata *a, const ft_tdata *b) {
  return !memcmp(a->bits, b->bits, ft_dtype_size((ft_dtype)a->dtype));
}

/* Folds node p (whose kids' data are kd) into a splat constant in d. */
static void fold(ft_tclient *tc, ft_prim p, const ft_pval *ps, int nk, const ft_tdata **kd,
                 ft_tdata *d) {
  if (nk < 1 || nk > 16 || !kd[0]->has_const) return;
  const ft_prim_info *pi = ft_prim_get(p);
  ft_aval out = ft_tdata_aval(d);
  switch (pi->family) {
  case FT_FAM_UNARY: case FT_FAM_BINARY: case FT_FAM_COMPARE: case FT_FAM_TERNARY:
  case FT_FAM_SELECT: case FT_FAM_CONVERT: {
    if (p == FT_P_BITCAST_CONVERT_TYPE && ft_dtype_size(out.dtype) != ft_dtype_size((ft_dtype)kd[0]->dtype))
      return;
    ft_aval in[16];
    uint8_t ib[16][16];
    for (int k = 0; k < nk; k++) {
      if (!kd[k]->has_const) return;
      in[k] = ft_aval_scalar((ft_dtype)kd[k]->dtype);
      memcpy(ib[k], kd[k]->bits, 16);
    }
    ft_aval o = ft_aval_scalar(out.dtype);
    if (eval_splat(tc, p, ps, nk, in, ib, &o, d->bits)) d->has_const = 1, tc->n_folds++;
    return;
  }
  case FT_FAM_LAYOUT:
    switch (p) {
    case FT_P_BROADCAST_IN_DIM: case FT_P_RESHAPE: case FT_P_TRANSPOSE: case FT_P_SQUEEZE:
    case FT_P_EXPAND_DIMS: case FT_P_REV: case FT_P_SLICE: case FT_P_DYNAMIC_SLICE:
      break;
    case FT_P_CONCATENATE: case FT_P_PAD:
      for (int k = 1; k < nk; k++)
        if (!kd[k]->has_const || !same_bits(kd[0], kd[k])) return;
      break;
    default: return;
    }
    memcpy(d->bits, kd[0]->bits, 16);
    d->has_const = 1;
    return;
  case FT_FAM_REDUCE: {
    ft_aval x = ft_tdata_aval(kd[0]);
    int64_t nin = ft_aval_size(&x), nout = ft_aval_size(&out);
    if (nout <= 0 || nin % nout) return;
    int64_t cnt = nin / nout;
    if (p == FT_P_REDUCE_MAX || p == FT_P_REDUCE_MIN || p == FT_P_REDUCE_AND ||
        p == FT_P_REDUCE_OR) {
      if (cnt < 1) return;
      memcpy(d->bits, kd[0]->bits, 16);
      d->has_const = 1;
      return;
    }
    if ((p != FT_P_REDUCE_SUM && p != FT_P_REDUCE_PROD) || cnt > 65536) return;
    /* every output element reduces cnt equal values: one 1-D reduction */
    ft_arena *a = ft_arena_new();
    if (!a) return;
    int64_t ax = 0;
    ft_pval *rp = ft_params_default(a, p);
    if (rp) {
      rp[ft_prim_param_index(p, "axes")] = ft_pv_ints(a, 1, &ax);
      ft_aval in1 = ft_aval_make(x.dtype, 1, &cnt), o = ft_aval_scalar(out.dtype);
      uint8_t ib[1][16];
      memcpy(ib[0], kd[0]->bits, 16);
      if (eval_splat(tc, p, rp, 1, &in1, ib, &o, d->bits)) d->has_const = 1, tc->n_folds++;
    }
    ft_arena_free(a);
    return;
  }
  default: return;
  }
}

static void make_value(ft_tclient *tc, ft_prim p, const ft_pval *ps, int nk, const ft_tdata **kd,
                       const ft_aval *outs, int got, ft_tdata *d);

static void an_make(void *ud, ft_egraph *eg, ft_enode n, void *out) {
  ft_tclient *tc = ud;
  ft_tdata *d = out;
  memset(d, 0, sizeof *d);
  ft_enode_view v = ft_egraph_node(eg, n);
  int64_t w0 = 0;
  if (v.pbytes >= 8) memcpy(&w0, v.params, 8);
  if (v.op == tc->op_arg || v.op == tc->op_constvar) {
    const ft_jaxpr *j = tc->src;
    bool arg = v.op == tc->op_arg;
    if (w0 < 0 || w0 >= (arg ? j->n_in : j->n_const)) return;
    set_aval(d, &(arg ? j->invars : j->constvars)[w0]->aval);
    return;
  }
  if (v.op == tc->op_const) {
    ft_aval av;
    if (!const_decode(&v, &av, d->bits)) return;
    set_aval(d, &av);
    d->has_const = 1;
    return;
  }
  if (v.op == tc->op_proj) {
    const ft_tdata *t = v.nkids == 1 ? ft_egraph_data(eg, v.kids[0]) : NULL;
    if (!t || t->kind != TD_TUPLE || t->tuple >= tc->ntuples) return;
    const ft_ttuple *tu = &tc->tuples[t->tuple];
    if (w0 < 0 || w0 >= tu->n) return;
    set_aval(d, &tu->avals[w0]);
    return;
  }
  ft_prim p = ft_tnode_prim(tc, v.op);
  const ft_pval *ps = p == FT_NUM_PRIMS ? NULL : ft_tnode_params(tc, n);
  if (!ps) return;
  ft_aval in[256];
  const ft_tdata *kd[256];
  if (v.nkids > 256) return;
  for (uint32_t k = 0; k < v.nkids; k++) {
    kd[k] = ft_egraph_data(eg, v.kids[k]);
    if (!kd[k] || kd[k]->kind != TD_VALUE) return;
    in[k] = ft_tdata_aval(kd[k]);
  }
  enum { MAXO = 1024 };
  ft_aval *outs = malloc(sizeof *outs * MAXO);
  if (!outs) {
    tc->oom = true; /* a node without its analysis would change what rules see */
    return;
  }
  int got = 0;
  ft_status st = ft_infer(tc->ctx, p, ps, (int)v.nkids, in, &got, outs, MAXO);
  if (st == FT_ERR_NOMEM) tc->oom = true;
  ft_ctx_clear_error(tc->ctx);
  if (st == FT_OK && got >= 0) make_value(tc, p, ps, (int)v.nkids, kd, outs, got, d);
  free(outs);
}

/* The data of a primitive node from its inferred output avals. */
static void make_value(ft_tclient *tc, ft_prim p, const ft_pval *ps, int nk, const ft_tdata **kd,
                       const ft_aval *outs, int got, ft_tdata *d) {
  if (is_tuple_prim(p)) {
    if (!grow((void **)&tc->tuples, &tc->cap_tuples, tc->ntuples + 1, sizeof *tc->tuples)) {
      tc->oom = true;
      return;
    }
    ft_aval *av = ft_arena_alloc(tc->scratch, sizeof *av * (size_t)(got ? got : 1));
    if (!av) {
      tc->oom = true;
      return;
    }
    memcpy(av, outs, sizeof *av * (size_t)got);
    tc->tuples[tc->ntuples] = (ft_ttuple){got, av};
    d->kind = TD_TUPLE;
    d->tuple = tc->ntuples++;
    return;
  }
  if (got != 1) return;
  set_aval(d, &outs[0]);
  fold(tc, p, ps, nk, kd, d);
}

static bool is_nan_bits(const ft_tdata *d) {
  ft_array a = {0};
  uint64_t buf[4] = {0};
  ft_dtype dt = (ft_dtype)d->dtype;
  if (!ft_dtype_is_float(dt)) return false;
  a.aval = ft_aval_scalar(dt);
  a.nbytes = ft_dtype_size(dt);
  a.data = buf;
  memcpy(buf, d->bits, a.nbytes);
  return isnan(ft_get_f64(&a, 0));
}

static int an_merge(void *ud, void *dst, const void *src) {
  ft_tclient *tc = ud;
  ft_tdata *a = dst;
  const ft_tdata *b = src;
  if (b->kind == TD_BAD) return a->kind == TD_BAD ? 0 : FT_EGRAPH_MERGE_SRC_CHANGED;
  if (a->kind == TD_BAD) {
    *a = *b;
    return FT_EGRAPH_MERGE_DST_CHANGED;
  }
  if (a->kind != b->kind) return FT_EGRAPH_MERGE_CONFLICT;
  if (a->kind == TD_TUPLE) return 0;
  if (a->dtype != b->dtype || a->rank != b->rank ||
      memcmp(a->dims, b->dims, sizeof(int64_t) * a->rank))
    return FT_EGRAPH_MERGE_CONFLICT;
  if (a->has_const && b->has_const) {
    if (same_bits(a, b) || (is_nan_bits(a) && is_nan_bits(b))) return 0;
    return tc->algebraic ? FT_EGRAPH_MERGE_SRC_CHANGED : FT_EGRAPH_MERGE_CONFLICT;
  }
  if (a->has_const) return FT_EGRAPH_MERGE_SRC_CHANGED;
  if (b->has_const) {
    memcpy(a->bits, b->bits, 16);
    a->has_const = 1;
    return FT_EGRAPH_MERGE_DST_CHANGED;
  }
  return 0;
}

/* A class that became a known constant gets the constant node, so
 * extraction can pick the literal instead of the computation. */
static void an_modify(void *ud, ft_egraph *eg, ft_eclass c) {
  ft_tclient *tc = ud;
  const ft_tdata *d = ft_egraph_data(eg, c);
  if (!d || d->kind != TD_VALUE || !d->has_const) return;
  uint8_t blob[8 * (FT_MAX_RANK + 6)];
  ft_aval av = ft_tdata_aval(d);
  size_t n = ft_tconst_encode(&av, d->bits, blob);
  static const ft_eclass none[1] = {0};
  ft_eclass k = ft_egraph_add(eg, tc->op_const, blob, n, none, 0);
  if (k != FT_EGRAPH_NONE) ft_egraph_union(eg, c, k);
}

static void an_describe(void *ud, const void *data, char *buf, size_t len) {
  (void)ud;
  const ft_tdata *d = data;
  if (d->kind != TD_VALUE) {
    snprintf(buf, len, d->kind == TD_TUPLE ? "a tuple" : "an ill-typed value");
    return;
  }
  ft_aval av = ft_tdata_aval(d);
  char s[96];
  ft_aval_str(&av, s, sizeof s);
  if (!d->has_const) {
    snprintf(buf, len, "%s", s);
    return;
  }
  size_t n = (size_t)snprintf(buf, len, "%s constant 0x", s);
  size_t es = ft_dtype_size(av.dtype);
  for (size_t i = es; i-- > 0 && n + 3 < len;) n += (size_t)snprintf(buf + n, len - n, "%02x", d->bits[i]);
}

/* ------------------------------------------------------- jaxpr -> e-graph */

/* Adds a node: with explanations on, kids are term ids and so is the
 * result (the class is its find). */
static uint32_t tadd(ft_tclient *tc, bool terms, uint32_t op, const void *p, size_t np,
                     const uint32_t *kids, size_t nk) {
  static const uint32_t none[1] = {0};
  if (!kids) kids = none; /* the engine copies nk ids from kids even when nk == 0 */
  if (terms) return ft_egraph_add_termnode(tc->eg, op, p, np, kids, nk);
  return ft_egraph_add(tc->eg, op, p, np, kids, nk);
}

typedef struct level {
  ft_tclient tc;
  ft_egraph_rules *rs;
  bool terms;
  uint32_t *var_id;       /* per var id of src's arena: node/term id, NONE if unset */
  uint32_t nvar;
  uint32_t *roots;        /* per output: class */
  uint32_t *root_terms;   /* per output: term/node id */
} level;

static uint32_t atom_id(level *L, const ft_var *v) {
  ft_tclient *tc = &L->tc;
  if (v->kind == FT_LIT) {
    uint8_t bits[16], blob[8 * (FT_MAX_RANK + 6)];
    lit_bits(v, bits);
    size_t n = ft_tconst_encode(&v->aval, bits, blob);
    return tadd(tc, L->terms, tc->op_const, blob, n, NULL, 0);
  }
  return v->id < L->nvar ? L->var_id[v->id] : FT_EGRAPH_NONE;
}

static bool add_eqn(level *L, const ft_eqn *e) {
  ft_tclient *tc = &L->tc;
  ft_tsession *S = tc->S;
  uint32_t kids[256], *k = kids;
  if (e->n_in > 256 && !(k = malloc(sizeof *k * (size_t)e->n_in))) return false;
  bool ok = true;
  for (int i = 0; i < e->n_in && ok; i++) ok = (k[i] = atom_id(L, e->in[i])) != FT_EGRAPH_NONE;
  uint8_t blob[FT_EGRAPH_MAX_PARAMS];
  int nb = ok ? ft_tparams_encode(tc, e->prim, e->params, blob, sizeof blob) : -1;
  if (tc->oom) ok = false;
  if (ok && nb < 0 && !S->failed) { /* too large for a key: keep it whole, unshared */
    ft_pval *cp = params_clone(S->A, e->prim, e->params);
    if (!cp || !grow((void **)&S->big, &S->capbig, S->nbig + 1, sizeof *S->big)) ok = false;
    else {
      int64_t w[2] = {-1, S->nbig};
      S->big[S->nbig++] = cp;
      memcpy(blob, w, 16);
      nb = 16;
    }
  }
  ok = ok && nb >= 0;
  uint32_t op = tc->op_prim0 + (uint32_t)e->prim;
  if (ok && e->n_in <= 256) { /* an equal equation exists already: CSE */
    ft_eclass kc[256];
    for (int i = 0; i < e->n_in; i++) kc[i] = ft_egraph_find(tc->eg, k[i]);
    if (ft_egraph_lookup(tc->eg, op, blob, (size_t)nb, kc, (size_t)e->n_in) != FT_EGRAPH_NONE)
      S->n_cse++;
  }
  uint32_t id = ok ? tadd(tc, L->terms, op, blob, (size_t)nb, k, (size_t)e->n_in) : FT_EGRAPH_NONE;
  ok = id != FT_EGRAPH_NONE;
  if (ok && is_tuple_prim(e->prim)) {
    for (int o = 0; o < e->n_out && ok; o++) {
      if (e->out[o]->kind != FT_VAR) continue;
      int64_t w = o;
      uint32_t pid = tadd(tc, L->terms, tc->op_proj, &w, 8, &id, 1);
      ok = pid != FT_EGRAPH_NONE && e->out[o]->id < L->nvar;
      if (ok) L->var_id[e->out[o]->id] = pid;
    }
  } else if (ok && e->out[0]->kind == FT_VAR) {
    ok = e->out[0]->id < L->nvar;
    if (ok) L->var_id[e->out[0]->id] = id;
  }
  if (k != kids) free(k);
  return ok;
}

static bool add_jaxpr(level *L, const ft_jaxpr *j) {
  ft_tclient *tc = &L->tc;
  L->nvar = ft_arena_num_var_ids(j->arena);
  L->var_id = malloc(sizeof *L->var_id * ((size_t)L->nvar + 1));
  L->roots = malloc(sizeof *L->roots * ((size_t)j->n_out + 1));
  L->root_terms = malloc(sizeof *L->root_terms * ((size_t)j->n_out + 1));
  if (!L->var_id || !L->roots || !L->root_terms) return false;
  memset(L->var_id, 0xFF, sizeof *L->var_id * L->nvar);
  for (int i = 0; i < j->n_const; i++) {
    int64_t w = i;
    uint32_t id = tadd(tc, L->terms, tc->op_constvar, &w, 8, NULL, 0);
    if (id == FT_EGRAPH_NONE || j->constvars[i]->id >= L->nvar) return false;
    L->var_id[j->constvars[i]->id] = id;
  }
  for (int i = 0; i < j->n_in; i++) {
    int64_t w = i;
    uint32_t id = tadd(tc, L->terms, tc->op_arg, &w, 8, NULL, 0);
    if (id == FT_EGRAPH_NONE || j->invars[i]->id >= L->nvar) return false;
    L->var_id[j->invars[i]->id] = id;
  }
  for (int e = 0; e < j->n_eqn; e++)
    if (!add_eqn(L, &j->eqns[e])) return false;
  for (int o = 0; o < j->n_out; o++) {
    uint32_t id = atom_id(L, j->outvars[o]);
    if (id == FT_EGRAPH_NONE) return false;
    L->root_terms[o] = id;
  }
  if (ft_egraph_rebuild(tc->eg) != FT_EGRAPH_OK) return false;
  for (int o = 0; o < j->n_out; o++) L->roots[o] = ft_egraph_find(tc->eg, L->root_terms[o]);
  return true;
}

/* ------------------------------------------------------------------ rules */

/* Keeps the lines of text whose rule name is in the comma-separated list
 * (a `<=>` rule NAME also keeps NAME-rev). Malloc'd. */
static char *filter_rules(const char *text, const char *only) {
  size_t n = strlen(text);
  char *out = malloc(n + 1);
  if (!out) return NULL;
  size_t w = 0;
  const char *s = text;
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    const char *q = s;
    while (q < s + len && (*q == ' ' || *q == '\t')) q++;
    const char *colon = memchr(q, ':', (size_t)(s + len - q));
    bool keep = false;
    if (colon && *q != '#') {
      size_t nl = (size_t)(colon - q);
      for (const char *o = only; *o;) {
        const char *oe = strchr(o, ',');
        size_t ol = oe ? (size_t)(oe - o) : strlen(o);
        if (ol == nl && !memcmp(o, q, nl)) keep = true;
        o += ol + (oe ? 1 : 0);
      }
    }
    if (keep) {
      memcpy(out + w, s, len);
      w += len;
      out[w++] = '\n';
    }
    s += len + (e ? 1 : 0);
  }
  out[w] = 0;
  return out;
}

static ft_egraph_rules *load_rules(ft_tsession *S, ft_egraph *eg) {
  const ft_topt_opts *o = &S->o;
  size_t n1 = strlen(ft_tensor_rules_exact()), n2 = strlen(ft_tensor_rules_algebraic());
  size_t n3 = o->extra_rules ? strlen(o->extra_rules) : 0;
  char *all = malloc(n1 + n2 + n3 + 4);
  if (!all) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), NULL;
  size_t w = 0;
  memcpy(all + w, ft_tensor_rules_exact(), n1), w += n1, all[w++] = '\n';
  if (o->tier == FT_OPT_ALGEBRAIC) memcpy(all + w, ft_tensor_rules_algebraic(), n2), w += n2, all[w++] = '\n';
  if (n3) memcpy(all + w, o->extra_rules, n3), w += n3, all[w++] = '\n';
  all[w] = 0;
  if (o->only) {
    char *f = filter_rules(all, o->only);
    free(all);
    if (!f) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), NULL;
    all = f;
    if (n3) { /* extra rules always run */
      size_t fl = strlen(all);
      char *g = realloc(all, fl + n3 + 2);
      if (!g) return free(all), ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), NULL;
      all = g;
      memcpy(all + fl, o->extra_rules, n3);
      all[fl + n3] = '\n';
      all[fl + n3 + 1] = 0;
    }
  }
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, all, "<tensor rules>");
  free(all);
  return rs;
}

/* ---------------------------------------------------------------- costs */

static double node_cost(void *ud, ft_egraph *eg, ft_enode n) {
  ft_tclient *tc = ud;
  if (!cache_grow(tc, n)) return 1e30;
  if (tc->cost[n] >= 0) return tc->cost[n];
  ft_enode_view v = ft_egraph_node(eg, n);
  double c = 1e-3;
  const ft_tdata *d = ft_egraph_data(eg, n);
  if (v.op == tc->op_const) {
    ft_aval av = ft_tdata_aval(d);
    if (av.rank > 0) {
      ft_aval s = ft_aval_scalar(av.dtype);
      c = ft_tensor_eqn_cost(FT_P_BROADCAST_IN_DIM, NULL, 1, &s, 1, &av);
    }
  } else if (v.op == tc->op_proj || v.op == tc->op_arg || v.op == tc->op_constvar) {
    c = 1e-3;
  } else {
    ft_prim p = ft_tnode_prim(tc, v.op);
    const ft_pval *ps = ft_tnode_params(tc, n);
    ft_aval in[256];
    bool ok = ps && v.nkids <= 256 && d;
    for (uint32_t k = 0; ok && k < v.nkids; k++) {
      const ft_tdata *kd = ft_egraph_data(eg, v.kids[k]);
      ok = kd && kd->kind == TD_VALUE;
      if (ok) in[k] = ft_tdata_aval(kd);
    }
    if (!ok || d->kind == TD_BAD) c = 1e30;
    else if (d->kind == TD_TUPLE) {
      const ft_ttuple *t = &tc->tuples[d->tuple];
      c = ft_tensor_eqn_cost(p, ps, (int)v.nkids, in, t->n, t->avals);
    } else {
      ft_aval o = ft_tdata_aval(d);
      c = ft_tensor_eqn_cost(p, ps, (int)v.nkids, in, 1, &o);
    }
  }
  tc->cost[n] = c;
  return c;
}

/* ------------------------------------------------------- e-graph -> jaxpr */

static bool rebuild(level *L, const ft_egraph_term *t, const ft_jaxpr *src, ft_jaxpr *dst) {
  ft_tclient *tc = &L->tc;
  ft_tsession *S = tc->S;
  ft_arena *A = dst->arena;
  ft_var **ins = ft_arena_alloc(A, sizeof(ft_var *) * (size_t)(src->n_in + 1));
  ft_var **cvs = ft_arena_alloc(A, sizeof(ft_var *) * (size_t)(src->n_const + 1));
  ft_var **val = calloc(t->nnodes + 1, sizeof *val);
  ft_var ***tup = calloc(t->nnodes + 1, sizeof *tup);
  bool ok = ins && cvs && val && tup;
  for (int i = 0; ok && i < src->n_in; i++) ok = (ins[i] = ft_var_new(A, &src->invars[i]->aval)) != NULL;
  for (int i = 0; ok && i < src->n_const; i++)
    ok = (cvs[i] = ft_var_new(A, &src->constvars[i]->aval)) != NULL;
  tx T;
  tx_init(&T, S->pctx, dst, "optimize");
  for (size_t i = 0; ok && i < t->nnodes; i++) {
    const ft_egraph_term_node *tn = &t->nodes[i];
    int64_t w0 = 0;
    if (tn->pbytes >= 8) memcpy(&w0, tn->params, 8);
    if (tn->op == tc->op_arg) val[i] = w0 >= 0 && w0 < src->n_in ? ins[w0] : NULL;
    else if (tn->op == tc->op_constvar) val[i] = w0 >= 0 && w0 < src->n_const ? cvs[w0] : NULL;
    else if (tn->op == tc->op_const) {
      ft_aval av;
      uint8_t bits[16];
      ft_enode_view v = {tn->op, 0, NULL, tn->params, tn->pbytes};
      if (!const_decode(&v, &av, bits)) ok = false;
      else {
        ft_var *lit = bits_lit(A, av.dtype, av.weak_type, bits);
        if (av.rank == 0 || !lit) val[i] = lit;
        else {
          ft_pval *bp = ft_params_default(A, FT_P_BROADCAST_IN_DIM);
          if (bp) {
            pset(FT_P_BROADCAST_IN_DIM, bp, "shape", ft_pv_ints(A, av.rank, av.dims));
            pset(FT_P_BROADCAST_IN_DIM, bp, "broadcast_dimensions", ft_pv_ints(A, 0, NULL));
          }
          val[i] = bp ? tx_emit(&T, FT_P_BROADCAST_IN_DIM, bp, 1, &lit) : NULL;
        }
      }
    } else if (tn->op == tc->op_proj) {
      ft_var **outs = tn->nkids == 1 ? tup[tn->kids[0]] : NULL;
      const ft_tdata *td = outs ? ft_egraph_data(tc->eg, t->nodes[tn->kids[0]].eclass) : NULL;
      int nout = td && td->kind == TD_TUPLE ? tc->tuples[td->tuple].n : 0;
      val[i] = outs && w0 >= 0 && w0 < nout ? outs[w0] : NULL;
    } else {
      ft_prim p = ft_tnode_prim(tc, tn->op);
      ft_pval *ps = p == FT_NUM_PRIMS ? NULL : ft_tparams_decode(tc, A, p, tn->params, tn->pbytes);
      ft_var *kin[256];
      ok = ps && tn->nkids <= 256;
      for (uint32_t k = 0; ok && k < tn->nkids; k++) ok = (kin[k] = val[tn->kids[k]]) != NULL;
      if (!ok) break;
      if (is_tuple_prim(p)) {
        const ft_tdata *td = ft_egraph_data(tc->eg, tn->eclass);
        int nout = td && td->kind == TD_TUPLE ? tc->tuples[td->tuple].n : -1;
        ft_var **outs = nout >= 0 ? ft_arena_alloc(A, sizeof(ft_var *) * (size_t)(nout + 1)) : NULL;
        ok = outs && tx_emitn(&T, p, ps, (int)tn->nkids, kin, nout, outs);
        tup[i] = outs;
        val[i] = NULL;
        continue;
      }
      val[i] = tx_emit(&T, p, ps, (int)tn->nkids, kin);
    }
    ok = ok && val[i] != NULL;
  }
  ft_var **outs = ok ? ft_arena_alloc(A, sizeof(ft_var *) * (size_t)(src->n_out + 1)) : NULL;
  ok = ok && outs;
  for (int o = 0; ok && o < src->n_out; o++) ok = (outs[o] = val[t->roots[o]]) != NULL;
  /* outputs of tuple equations nobody reads print as `_` */
  if (ok) {
    bool *used = calloc(ft_arena_num_var_ids(A) + 1, 1);
    ok = used != NULL;
    for (int e = 0; ok && e < dst->n_eqn; e++)
      for (int k = 0; k < dst->eqns[e].n_in; k++)
        if (dst->eqns[e].in[k]->kind == FT_VAR) used[dst->eqns[e].in[k]->id] = true;
    for (int o = 0; ok && o < src->n_out; o++)
      if (outs[o]->kind == FT_VAR) used[outs[o]->id] = true;
    for (int e = 0; ok && e < dst->n_eqn; e++) {
      ft_eqn *q = &dst->eqns[e];
      if (!is_tuple_prim(q->prim)) continue;
      for (int k = 0; k < q->n_out; k++)
        if (q->out[k]->kind == FT_VAR && !used[q->out[k]->id]) {
          ft_var *dv = ft_drop_new(A, &q->out[k]->aval);
          if (dv) q->out[k] = dv;
        }
    }
    free(used);
  }
  ok = ok && !T.failed && ft_jaxpr_set_vars(dst, src->n_const, cvs, src->n_in, ins, src->n_out, outs);
  if (ok && src->const_data) ok = jaxpr_copy_consts(dst, src);
  free(val);
  free(tup);
  if (!ok && !S->failed) {
    char msg[1200];
    bool oom = ft_ctx_status(S->pctx) == FT_ERR_NOMEM || !ft_ctx_error(S->pctx)[0];
    snprintf(msg, sizeof msg, "%s: %s", oom ? "rebuilding the extracted program" :
             "internal error: rebuilding the extracted program failed", ft_ctx_error(S->pctx)[0] ?
             ft_ctx_error(S->pctx) : "out of memory");
    session_fail(S, oom ? FT_ERR_NOMEM : FT_ERR_INTERNAL, msg);
  }
  ft_ctx_clear_error(S->pctx);
  return ok;
}

/* ----------------------------------------------------------- explanations */

/* Tree size of term id t, capped (memo per call). */
static size_t term_size(ft_egraph *eg, uint32_t t, size_t cap, int depth) {
  if (depth > 200) return cap + 1;
  uint32_t nk = eg->nodes[t].nkids;
  size_t s = 1;
  const uint32_t *k = eg->ex_kids + eg->ex_koff[t];
  for (uint32_t i = 0; i < nk && s <= cap; i++) s += term_size(eg, k[i], cap - s, depth + 1);
  return s;
}

static void add_proof(ft_tsession *S, char *p) {
  uint32_t cap = (uint32_t)S->capproofs;
  if (!p || !grow((void **)&S->proofs, &cap, (uint32_t)S->nproofs + 1, sizeof *S->proofs)) {
    free(p);
    return;
  }
  S->capproofs = (int)cap;
  S->proofs[S->nproofs++] = p;
}

/* Proofs that each rewritten equation's value equals what extraction chose
 * for it: for every source equation whose extracted node differs, the
 * chain of rule applications between the two terms (small terms only). */
static void explain_level(level *L, const ft_egraph_term *t, const ft_jaxpr *src) {
  ft_tclient *tc = &L->tc;
  ft_egraph *eg = tc->eg;
  uint32_t *tid = calloc(t->nnodes + 1, sizeof *tid);
  if (!tid) return;
  for (size_t i = 0; i < t->nnodes; i++) {
    const ft_egraph_term_node *tn = &t->nodes[i];
    uint32_t kids[256];
    if (tn->nkids > 256) goto out;
    for (uint32_t k = 0; k < tn->nkids; k++) kids[k] = tid[tn->kids[k]];
    tid[i] = ft_egraph_add_termnode(eg, tn->op, tn->params, tn->pbytes, kids, tn->nkids);
    if (tid[i] == FT_EGRAPH_NONE) goto out;
  }
  for (int e = 0; e < src->n_eqn && tc->S->nproofs < 64; e++) {
    const ft_eqn *q = &src->eqns[e];
    if (q->n_out != 1 || q->out[0]->kind != FT_VAR) continue;
    uint32_t t0 = L->var_id[q->out[0]->id];
    ft_eclass c = ft_egraph_find(eg, t0);
    size_t i = t->nnodes;
    for (size_t k = 0; k < t->nnodes; k++)
      if (ft_egraph_find(eg, t->nodes[k].eclass) == c) i = k;
    if (i == t->nnodes || tid[i] == t0) continue;
    if (term_size(eg, t0, 24, 0) > 24 || term_size(eg, tid[i], 24, 0) > 24) continue;
    ft_egraph_proof pf = {0};
    if (ft_egraph_explain_ids(eg, L->rs, t0, tid[i], &pf) != FT_EGRAPH_OK) {
      ft_egraph_clear_error(eg);
      continue;
    }
    ft_buf b = {0};
    ft_buf_printf(&b, "eqn %d (%s):\n  %s\n", e, ft_prim_get(q->prim)->name,
                  pf.nsteps ? pf.steps[0].term : "?");
    for (size_t s = 1; s < pf.nsteps; s++) {
      int r = pf.steps[s].rule;
      const char *rn = r >= 0 && (size_t)r < ft_egraph_rules_count(L->rs)
                           ? ft_egraph_rule_name(L->rs, (size_t)r) : "constant-fold";
      ft_buf_printf(&b, "  = %s   [%s%s]\n", pf.steps[s].term, rn,
                    pf.steps[s].backward ? ", backward" : "");
    }
    ft_egraph_proof_free(&pf);
    if (b.failed) free(b.p);
    else add_proof(tc->S, b.p);
  }
out:
  free(tid);
}

/* ------------------------------------------------------------- one level */

static void level_free(level *L) {
  free(L->var_id);
  free(L->roots);
  free(L->root_terms);
  ft_egraph_rules_free(L->rs);
  ft_egraph_free(L->tc.eg);
  ft_arena_free(L->tc.scratch);
  free(L->tc.dec);
  free(L->tc.cost);
  free(L->tc.tuples);
}

static bool level_init(ft_tsession *S, level *L, const ft_jaxpr *src) {
  memset(L, 0, sizeof *L);
  ft_tclient *tc = &L->tc;
  tc->S = S;
  tc->ctx = S->pctx;
  tc->src = src;
  tc->algebraic = S->o.tier == FT_OPT_ALGEBRAIC;
  tc->scratch = ft_arena_new();
  tc->eg = ft_egraph_new();
  if (!tc->scratch || !tc->eg) return false;
  L->terms = S->want_proofs && S->depth == 0;
  if (L->terms && ft_egraph_enable_explanations(tc->eg) != FT_EGRAPH_OK) return false;
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    uint32_t op = ft_egraph_intern(tc->eg, ft_prim_get((ft_prim)p)->name);
    if (p == 0) tc->op_prim0 = op;
    if (op != tc->op_prim0 + (uint32_t)p) return false; /* interned in order */
  }
  tc->op_arg = ft_egraph_intern(tc->eg, "arg");
  tc->op_constvar = ft_egraph_intern(tc->eg, "constvar");
  tc->op_const = ft_egraph_intern(tc->eg, "const");
  tc->op_proj = ft_egraph_intern(tc->eg, "proj");
  if (tc->op_arg == FT_EGRAPH_NONE || tc->op_constvar == FT_EGRAPH_NONE ||
      tc->op_const == FT_EGRAPH_NONE || tc->op_proj == FT_EGRAPH_NONE)
    return false; /* interning ran out of memory */
  ft_egraph_analysis an = {sizeof(ft_tdata), tc, an_make, an_merge, an_modify, an_describe};
  if (ft_egraph_set_analysis(tc->eg, &an) != FT_EGRAPH_OK) return false;
  return ft_tensor_register(tc->eg, tc);
}

static ft_jaxpr *opt_jaxpr(ft_tsession *S, const ft_jaxpr *src, ft_jaxpr *dst) {
  level L;
  ft_egraph_term *t = NULL;
  ft_jaxpr *res = NULL;
  ft_egraph_report rep = {0};
  if (S->depth > 32) {
    session_fail(S, FT_ERR_UNSUPPORTED, "sub-jaxprs nested deeper than 32");
    return NULL;
  }
  if (!level_init(S, &L, src)) {
    session_fail(S, FT_ERR_NOMEM, "out of memory setting up the e-graph");
    goto out;
  }
  ft_egraph *eg = L.tc.eg;
  if (!(L.rs = load_rules(S, eg))) {
    char msg[1200];
    snprintf(msg, sizeof msg, "rules: %s", ft_egraph_error(eg));
    session_fail(S, ft_egraph_status_of(eg) == FT_EGRAPH_ENOMEM ? FT_ERR_NOMEM : FT_ERR_INVALID_ARG, msg);
    goto out;
  }
  if (!add_jaxpr(&L, src)) {
    if (!S->failed) {
      /* An allocation that failed on this side leaves no e-graph error. */
      char msg[1200];
      ft_egraph_status es = ft_egraph_status_of(eg);
      bool oom = es == FT_EGRAPH_OK || es == FT_EGRAPH_ENOMEM || L.tc.oom;
      snprintf(msg, sizeof msg, "building the e-graph failed: %s",
               oom ? "out of memory" : ft_egraph_error(eg));
      session_fail(S, oom ? FT_ERR_NOMEM : FT_ERR_INTERNAL, msg);
    }
    goto out;
  }
  ft_egraph_run_opts ro = ft_egraph_run_defaults();
  ro.scheduler = FT_SCHED_BACKOFF;
  ro.iter_limit = S->o.iter_limit ? S->o.iter_limit : 30;
  ro.node_limit = S->o.node_limit ? S->o.node_limit : 50000;
  ro.time_limit = S->o.time_limit > 0 ? S->o.time_limit : 5;
  if (ft_egraph_run(eg, L.rs, &ro, &rep) != FT_EGRAPH_OK || rep.stop == FT_STOP_ERROR) {
    char msg[1200];
    snprintf(msg, sizeof msg, "%s", ft_egraph_error(eg));
    session_fail(S, ft_egraph_status_of(eg) == FT_EGRAPH_ENOMEM ? FT_ERR_NOMEM : FT_ERR_INTERNAL, msg);
    goto out;
  }
  if (L.tc.oom) {
    session_fail(S, FT_ERR_NOMEM, "out of memory folding constants");
    goto out;
  }
  for (size_t r = 0; r < rep.nrules; r++) {
    int64_t n = 0;
    for (size_t i = 0; i < rep.niters; i++) n += (int64_t)rep.iters[i].applied[r];
    count_fired(S, ft_egraph_rule_name(L.rs, r), n);
  }
  if (S->depth == 0) {
    S->iters = rep.niters;
    S->stop = rep.stop;
    S->nodes = ft_egraph_num_nodes(eg);
    S->classes = ft_egraph_num_classes(eg);
  }
  t = ft_egraph_extract(eg, L.roots, (size_t)src->n_out, FT_EXTRACT_DAG, node_cost, &L.tc);
  if (!t) {
    char msg[1200];
    snprintf(msg, sizeof msg, "extraction failed: %s", ft_egraph_error(eg));
    session_fail(S, ft_egraph_status_of(eg) == FT_EGRAPH_ENOMEM || L.tc.oom ? FT_ERR_NOMEM : FT_ERR_INTERNAL, msg);
    goto out;
  }
  if (!rebuild(&L, t, src, dst)) goto out;
  if (L.tc.oom) {
    session_fail(S, FT_ERR_NOMEM, "out of memory folding constants");
    goto out;
  }
  count_fired(S, "constant-fold", (int64_t)L.tc.n_folds);
  count_fired(S, "cse", (int64_t)S->n_cse);
  S->n_cse = 0;
  if (L.terms) explain_level(&L, t, src);
  res = dst;
out:
  ft_egraph_report_free(&rep);
  ft_egraph_term_free(t);
  level_free(&L);
  return res;
}

/* ------------------------------------------------------------ public API */

static int cmp_fired(const void *a, const void *b) {
  const fired_ent *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void session_free(ft_tsession *S) {
  for (int i = 0; i < S->nfired; i++) free(S->fired[i].name);
  free(S->fired);
  for (int i = 0; i < S->nproofs; i++) free(S->proofs[i]);
  free(S->proofs);
  free(S->subs);
  free(S->big);
  ft_ctx_free(S->pctx);
}

static const char *tier_name(ft_opt_tier t) { return t == FT_OPT_ALGEBRAIC ? "algebraic" : "exact"; }

static bool record_ledger(ft_tsession *S, const ft_jaxpr *in, const ft_jaxpr *out) {
  ft_ctx *ctx = S->ctx;
  if (!ft_ledger_active(ctx)) return true;
  char *tin = ft_jaxpr_print(ctx, in), *tout = ft_jaxpr_print(ctx, out);
  ft_ledger_rule *fr = calloc((size_t)S->nfired + 1, sizeof *fr);
  bool ok = tin && tout && fr;
  if (ok) {
    for (int i = 0; i < S->nfired; i++) fr[i] = (ft_ledger_rule){S->fired[i].name, S->fired[i].count, NULL};
    ft_buf pb = {0}; /* {"tier":"NAME"} */
    ft_buf_puts(&pb, "{");
    ft_json_key(&pb, "tier");
    ft_json_str(&pb, tier_name(S->o.tier));
    ft_buf_puts(&pb, "}");
    ft_ledger_obj ins = {.name = "jaxpr", .data = tin, .len = strlen(tin)};
    ft_ledger_obj outs = {.name = "jaxpr", .data = tout, .len = strlen(tout)};
    ft_ledger_event ev = {.kind = FT_LEDGER_OPTIMIZE, .op = "saturate", .params_json = pb.p,
                          .inputs = &ins, .n_inputs = 1, .outputs = &outs, .n_outputs = 1,
                          .fired = fr, .n_fired = S->nfired};
    if (pb.failed) ft_set_error(ctx, FT_ERR_NOMEM, "optimize: out of memory printing the ledger record");
    ok = !pb.failed && ft_ledger_record(ctx, &ev) == FT_OK;
    free(pb.p);
  } else {
    ft_set_error(ctx, FT_ERR_NOMEM, "optimize: out of memory printing the ledger record");
  }
  free(tin);
  free(tout);
  free(fr);
  return ok;
}

static void fill_report(ft_tsession *S, const ft_jaxpr *in, const ft_jaxpr *out, ft_opt_report *rep) {
  bool want = rep->want_proofs;
  memset(rep, 0, sizeof *rep);
  rep->want_proofs = want;
  if (S->nfired) qsort(S->fired, (size_t)S->nfired, sizeof *S->fired, cmp_fired);
  rep->rules = calloc((size_t)S->nfired + 1, sizeof *rep->rules);
  if (rep->rules) {
    for (int i = 0; i < S->nfired; i++) {
      rep->rules[i].name = S->fired[i].name;
      rep->rules[i].count = S->fired[i].count;
      S->fired[i].name = NULL;
    }
    rep->n_rules = S->nfired;
  }
  rep->cost_before = ft_tensor_jaxpr_cost(in);
  rep->cost_after = ft_tensor_jaxpr_cost(out);
  rep->eqns_before = ft_tensor_jaxpr_eqns(in);
  rep->eqns_after = ft_tensor_jaxpr_eqns(out);
  rep->iterations = (int)S->iters;
  rep->stop_reason = ft_egraph_stop_name(S->stop);
  rep->egraph_nodes = S->nodes;
  rep->egraph_classes = S->classes;
  rep->proofs = S->proofs;
  rep->n_proofs = S->nproofs;
  S->proofs = NULL;
  S->nproofs = 0;
}

ft_jaxpr *ft_tensor_optimize(ft_ctx *ctx, const ft_jaxpr *j, const ft_topt_opts *o,
                             ft_opt_report *rep) {
  if (!j || !o || (o->tier != FT_OPT_EXACT && o->tier != FT_OPT_ALGEBRAIC)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, j ? "optimize: unknown tier %d" : "optimize: NULL jaxpr",
                 o ? (int)o->tier : -1);
    return NULL;
  }
  ft_tsession S = {0};
  S.ctx = ctx;
  S.o = *o;
  S.want_proofs = o->explain || (rep && rep->want_proofs);
  S.pctx = ft_ctx_new(NULL);
  ft_jaxpr *r = S.pctx ? ft_jaxpr_new(NULL) : NULL;
  if (!r) {
    ft_set_error(ctx, FT_ERR_NOMEM, "optimize: out of memory");
    session_free(&S);
    return NULL;
  }
  S.A = r->arena;
  if (!opt_jaxpr(&S, j, r)) goto fail;
  if (ft_jaxpr_verify(S.pctx, r) != FT_OK) {
    bool oom = ft_ctx_status(S.pctx) == FT_ERR_NOMEM;
    ft_set_error(ctx, oom ? FT_ERR_NOMEM : FT_ERR_INTERNAL, "optimize: %s: %s",
                 oom ? "verifying the result" : "internal error: the result does not verify",
                 ft_ctx_error(S.pctx));
    goto fail;
  }
  if (!o->no_ledger && !record_ledger(&S, j, r)) goto fail;
  if (rep) fill_report(&S, j, r, rep);
  session_free(&S);
  return r;
fail:
  ft_jaxpr_free(r);
  session_free(&S);
  return NULL;
}

ft_jaxpr *ft_optimize(ft_ctx *ctx, const ft_jaxpr *j, ft_opt_tier tier, ft_opt_report *report) {
  ft_topt_opts o = {.tier = tier};
  return ft_tensor_optimize(ctx, j, &o, report);
}

void ft_opt_report_free(ft_opt_report *r) {
  if (!r) return;
  for (int i = 0; i < r->n_rules; i++) free(r->rules[i].name);
  free(r->rules);
  for (int i = 0; i < r->n_proofs; i++) free(r->proofs[i]);
  free(r->proofs);
  r->rules = NULL;
  r->proofs = NULL;
  r->n_rules = r->n_proofs = 0;
}
