/* src/lower/control.c: control flow in compiled code (DESIGN.md §6). A
 * cond, while, scan, jit, custom_jvp_call, custom_vjp_call or
 * custom_linear_solve (its solve jaxpr on its consts and b) equation
 * becomes one FT_STEP_CONTROL step driving sub-programs: each sub-jaxpr is
 * planned like a top-level jaxpr (fusion, GEMM, reductions, nested control)
 * and its kernels are compiled in the top program's one LLVM module
 * (fusion.c hoists them). The step reproduces the interpreter's rules
 * (interp_control.c): cond clamps its index, while re-evaluates its cond
 * before each body, scan walks the rows forward or in reverse and stacks
 * the ys. Everything a call needs (sub-program arenas, the two carry sets
 * of while/scan, array views) is allocated once at planning, so a control
 * step allocates nothing unless a sub-program has a fallback step. */
#include <string.h>

#include "lower/lower.h"

typedef struct sub {
  ft_program *p;
  void **kbufs;
  void *arena;
  ft_array *inv, **inp;   /* views of the arguments, re-pointed on each run */
  ft_array *outv, **outp;
} sub;

struct ft_control {
  ft_prim prim;
  int n_sub;
  sub *subs;
  int nconst, bconst, ncarry; /* while: cond/body consts; scan: consts; carries;
                               * custom_linear_solve: offset and count of the solve's consts */
  int nx, ny;                 /* scan; custom_linear_solve: nx right-hand sides */
  int64_t len;
  bool rev;
  void **carry[2];            /* while/scan: two sets of carries */
  size_t *cbytes;
  void *pred;                 /* while: its predicate, bool[B...] when batched */
  int64_t lanes;              /*   element count of the predicate */
  /* reduce (generic): the operands' aval, dtypes and reduced dims; the
   * compiled computation's results land in tmp, then in the accumulators */
  ft_aval ra;
  ft_dtype rdt[FT_GREDUCE_MAX];
  bool rred[FT_MAX_RANK];
  void *tmp[FT_GREDUCE_MAX];
  ft_ctx *rctx;
  ft_rwin rw;                 /* reduce_window (generic): its window and result aval */
  ft_aval rres;
};

static const ft_aval *arg_aval(const ft_program *q, int k) {
  const ft_jaxpr *j = q->j;
  int nc = j->const_data ? 0 : j->n_const;
  return k < nc ? &j->constvars[k]->aval : &j->invars[k - nc]->aval;
}

static bool aval_is(const ft_aval *a, const ft_aval *b) { return ft_aval_eq(a, b); }

/* a without its leading axis (a scan row). */
static ft_aval row_of(const ft_aval *a) {
  ft_aval r = *a;
  r.rank = a->rank - 1;
  for (int d = 0; d < r.rank; d++) r.dims[d] = a->dims[d + 1];
  return r;
}

static void *alloc64(size_t n) { return aligned_alloc(64, n ? (n + 63) & ~(size_t)63 : 64); }

static bool sub_init(sub *q) {
  ft_program *p = q->p;
  q->kbufs = calloc((size_t)p->n_bufs + 1, sizeof *q->kbufs);
  q->arena = alloc64(p->arena_bytes);
  q->inv = calloc((size_t)p->n_args + 1, sizeof *q->inv);
  q->inp = calloc((size_t)p->n_args + 1, sizeof *q->inp);
  q->outv = calloc((size_t)p->n_out + 1, sizeof *q->outv);
  q->outp = calloc((size_t)p->n_out + 1, sizeof *q->outp);
  if (!q->kbufs || !q->arena || !q->inv || !q->inp || !q->outv || !q->outp) return false;
  for (int k = 0; k < p->n_args; k++) {
    q->inv[k].aval = *arg_aval(p, k);
    q->inv[k].nbytes = (size_t)ft_aval_size(&q->inv[k].aval) * ft_dtype_size(q->inv[k].aval.dtype);
    q->inp[k] = &q->inv[k];
  }
  for (int k = 0; k < p->n_out; k++) {
    q->outv[k].aval = p->j->outvars[k]->aval;
    q->outv[k].nbytes = (size_t)ft_aval_size(&q->outv[k].aval) * ft_dtype_size(q->outv[k].aval.dtype);
    q->outp[k] = &q->outv[k];
  }
  return true;
}

static void sub_free(sub *q) {
  ft_program_free(q->p);
  free(q->kbufs);
  free(q->arena);
  free(q->inv), free(q->inp), free(q->outv), free(q->outp);
}

void ft_control_free(ft_control *c) {
  if (!c) return;
  for (int i = 0; i < c->n_sub; i++) sub_free(&c->subs[i]);
  free(c->subs);
  for (int s = 0; s < 2; s++) {
    for (int i = 0; c->carry[s] && i < c->ncarry; i++) free(c->carry[s][i]);
    free(c->carry[s]);
  }
  free(c->cbytes);
  free(c->pred);
  for (int k = 0; k < FT_GREDUCE_MAX; k++) free(c->tmp[k]);
  free(c);
}

int ft_control_num_subs(const ft_control *c) { return c->n_sub; }
ft_program *ft_control_sub(const ft_control *c, int i) { return c->subs[i].p; }

static const ft_jaxpr *param_jaxpr(const ft_eqn *e, const char *name) {
  const ft_pval *v = ft_eqn_param(e, name);
  return v->tag == FT_PV_JAXPR ? v->u.jaxpr : NULL;
}

/* Whether sub-program q takes the avals of e's operands [from, from + n)
 * (its arguments [at, at + n)). */
static bool takes(const ft_program *q, int at, const ft_eqn *e, int from, int n) {
  for (int k = 0; k < n; k++)
    if (at + k >= q->n_args || !aval_is(arg_aval(q, at + k), &e->in[from + k]->aval)) return false;
  return true;
}

static bool gives(const ft_program *q, int at, const ft_eqn *e, int from, int n) {
  for (int k = 0; k < n; k++)
    if (at + k >= q->n_out || !aval_is(&q->j->outvars[at + k]->aval, &e->out[from + k]->aval))
      return false;
  return true;
}

/* Checks that the sub-programs fit the equation as the interpreter calls them. */
static bool fits(ft_control *c, const ft_eqn *e) {
  sub *s = c->subs;
  switch (e->prim) {
  case FT_P_COND:
    if (e->n_in < 1 || ft_dtype_is_float(e->in[0]->aval.dtype) || ft_dtype_is_complex(e->in[0]->aval.dtype) ||
        ft_aval_size(&e->in[0]->aval) != 1)
      return false;
    for (int i = 0; i < c->n_sub; i++)
      if (s[i].p->n_args != e->n_in - 1 || s[i].p->n_out != e->n_out || !takes(s[i].p, 0, e, 1, e->n_in - 1) ||
          !gives(s[i].p, 0, e, 0, e->n_out))
        return false;
    return true;
  case FT_P_WHILE: {
    int cn = c->nconst, bn = c->bconst, nc = c->ncarry;
    const ft_program *cq = s[0].p, *bq = s[1].p;
    if (cn < 0 || bn < 0 || cn + bn + nc != e->n_in || cq->n_args != cn + nc || cq->n_out != 1 ||
        bq->n_args != bn + nc || bq->n_out != nc)
      return false;
    const ft_aval *pa = &cq->j->outvars[0]->aval;
    if (ft_dtype_is_float(pa->dtype) || ft_dtype_is_complex(pa->dtype)) return false;
    for (int i = 0; i < nc && pa->rank > 0; i++) { /* a batched predicate leads every carry */
      const ft_aval *ca = &e->out[i]->aval;
      if (ca->rank < pa->rank || memcmp(ca->dims, pa->dims, sizeof(int64_t) * (size_t)pa->rank)) return false;
    }
    return takes(cq, 0, e, 0, cn) && takes(cq, cn, e, cn + bn, nc) && takes(bq, 0, e, cn, bn) &&
           takes(bq, bn, e, cn + bn, nc) && gives(bq, 0, e, 0, nc);
  }
  case FT_P_SCAN: {
    const ft_program *q = s[0].p;
    int k0 = c->nconst, nc = c->ncarry;
    if (k0 < 0 || nc < 0 || c->nx < 0 || c->ny < 0 || c->len < 0 || q->n_args != e->n_in ||
        q->n_out != e->n_out || !takes(q, 0, e, 0, k0 + nc) || !gives(q, 0, e, 0, nc))
      return false;
    for (int i = 0; i < c->nx; i++) {
      const ft_aval *xa = &e->in[k0 + nc + i]->aval;
      if (xa->rank < 1 || xa->dims[0] != c->len) return false;
      ft_aval r = row_of(xa);
      if (!aval_is(arg_aval(q, k0 + nc + i), &r)) return false;
    }
    for (int i = 0; i < c->ny; i++) {
      const ft_aval *ya = &e->out[nc + i]->aval;
      if (ya->rank < 1 || ya->dims[0] != c->len) return false;
      ft_aval r = row_of(ya);
      if (!aval_is(&q->j->outvars[nc + i]->aval, &r)) return false;
    }
    return true;
  }
  case FT_P_CUSTOM_LINEAR_SOLVE: {
    const ft_program *q = s[0].p;
    int ns = c->bconst, nb = c->nx;
    return q->n_args == ns + nb && q->n_out == e->n_out && takes(q, 0, e, c->nconst, ns) &&
           takes(q, ns, e, e->n_in - nb, nb) && gives(q, 0, e, 0, e->n_out);
  }
  case FT_P_REDUCE: case FT_P_REDUCE_WINDOW:
    return s[0].p->n_args == e->n_in && s[0].p->n_out == e->n_out;
  case FT_P_CUSTOM_ROOT: {
    const ft_program *q = s[0].p;
    return q->n_args <= e->n_in && q->n_out == e->n_out && takes(q, 0, e, 0, q->n_args) &&
           gives(q, 0, e, 0, e->n_out);
  }
  case FT_P_SHARD_MAP: /* per-device avals: interp_spmd.c checks the blocks against them */
    for (int i = 0; i < c->n_sub; i++)
      if (s[i].p->n_args != e->n_in || s[i].p->n_out != e->n_out) return false;
    return true;
  default:
    return s[0].p->n_args == e->n_in && s[0].p->n_out == e->n_out && takes(s[0].p, 0, e, 0, e->n_in) &&
           gives(s[0].p, 0, e, 0, e->n_out);
  }
}

ft_control *ft_control_new(ft_ctx *ctx, const ft_eqn *e, const ft_plan_options *opts,
                           const char **why) {
  const ft_jaxpr *js[64];
  int n = 0;
  *why = "control flow whose sub-jaxprs do not fit its operands";
  ft_control *c = calloc(1, sizeof *c);
  if (!c) {
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
    return NULL;
  }
  c->prim = e->prim;
  switch (e->prim) {
  case FT_P_COND: {
    const ft_pval *br = ft_eqn_param(e, "branches");
    if (br->tag != FT_PV_TUPLE || br->n < 1 || br->n > 64) goto unfit;
    for (int i = 0; i < br->n; i++) {
      if (br->u.items[i].tag != FT_PV_JAXPR) goto unfit;
      js[n++] = br->u.items[i].u.jaxpr;
    }
    break;
  }
  case FT_P_WHILE:
    js[n++] = param_jaxpr(e, "cond_jaxpr");
    js[n++] = param_jaxpr(e, "body_jaxpr");
    c->nconst = (int)ft_param_int(e, "cond_nconsts", -1);
    c->bconst = (int)ft_param_int(e, "body_nconsts", -1);
    c->ncarry = e->n_out;
    break;
  case FT_P_SCAN:
    js[n++] = param_jaxpr(e, "jaxpr");
    c->nconst = (int)ft_param_int(e, "num_consts", -1);
    c->ncarry = (int)ft_param_int(e, "num_carry", -1);
    c->len = ft_param_int(e, "length", -1);
    c->rev = ft_param_bool(e, "reverse", false);
    c->nx = e->n_in - c->nconst - c->ncarry;
    c->ny = e->n_out - c->ncarry;
    if (c->ncarry < 0 || c->ncarry > e->n_out) goto unfit;
    break;
  case FT_P_JIT: case FT_P_REMAT2: js[n++] = param_jaxpr(e, "jaxpr"); break;
  case FT_P_SHARD_MAP: { /* the body once per device (spmd.c) */
    int64_t nd = ft_spmd_num_devices(e);
    if (nd < 1 || nd > FT_SPMD_JIT_MAX_DEVICES) {
      *why = "a shard_map over more than 8 devices is not compiled (its body is planned once per device)";
      goto unfit;
    }
    for (int64_t d = 0; d < nd; d++) js[n++] = param_jaxpr(e, "jaxpr");
    break;
  }
  case FT_P_CUSTOM_LIN: /* never run forward: the interpreter step reports it */
    *why = "custom_lin is only meaningful under transposition";
    goto unfit;
  case FT_P_CUSTOM_LINEAR_SOLVE: { /* the solve jaxpr on its consts and b (interp_control.c) */
    const ft_pval *cl = ft_eqn_param(e, "const_lengths"), *sj = ft_eqn_param(e, "jaxprs");
    if (!ft_lstuple_ok(cl) || !ft_lstuple_ok(sj) || sj->u.items[2].tag != FT_PV_JAXPR) goto unfit;
    int64_t nc = 0;
    for (int i = 0; i < 4; i++) {
      if (cl->u.items[i].tag != FT_PV_INT || cl->u.items[i].u.i < 0 || cl->u.items[i].u.i > e->n_in) goto unfit;
      if (i == 2) c->nconst = (int)nc;
      nc += cl->u.items[i].u.i;
    }
    if (nc > e->n_in) goto unfit;
    c->bconst = (int)cl->u.items[2].u.i;
    c->nx = e->n_in - (int)nc; /* the right-hand sides, operands [nc, n_in) */
    js[n++] = sj->u.items[2].u.jaxpr;
    break;
  }
  case FT_P_REDUCE: { /* the computation, once per element (interp_reduce.c's order) */
    int m = 0;
    if (ft_generic_reduce_geom(NULL, e, &m, c->rred)) goto unfit;
    c->nx = m;
    c->ra = e->in[0]->aval;
    for (int k = 0; k < m; k++) {
      c->rdt[k] = e->in[k]->aval.dtype;
      if (!(c->tmp[k] = alloc64(ft_dtype_size(c->rdt[k])))) goto oom;
    }
    js[n++] = param_jaxpr(e, "jaxpr");
    break;
  }
  case FT_P_REDUCE_WINDOW: { /* the computation, once per window element (interp_window.c's order) */
    int m = 0;
    if (ft_generic_reduce_window_geom(NULL, e, &m, &c->rw)) goto unfit;
    c->nx = m;
    c->ra = e->in[0]->aval;
    c->rres = e->out[0]->aval;
    for (int k = 0; k < m; k++) {
      c->rdt[k] = e->in[k]->aval.dtype;
      if (!(c->tmp[k] = alloc64(ft_dtype_size(c->rdt[k])))) goto oom;
    }
    js[n++] = param_jaxpr(e, "jaxpr");
    break;
  }
  case FT_P_CUSTOM_ROOT: /* solve_jaxpr on its first n_in operands (interp_control.c) */
    js[n++] = param_jaxpr(e, "solve_jaxpr");
    break;
  default: js[n++] = param_jaxpr(e, "call_jaxpr"); break;
  }
  for (int i = 0; i < n; i++) {
    if (!js[i]) goto unfit;
    if (js[i]->n_const && !js[i]->const_data && e->n_in == js[i]->n_in) {
      *why = "a sub-jaxpr closes over constants whose values the text does not carry (bind them "
             "with ft_jaxpr_bind_sub_consts)";
      goto unfit;
    }
  }
  c->subs = calloc((size_t)n, sizeof *c->subs);
  if (!c->subs) goto oom;
  /* a body's collectives are numbered in planning order, the same in every
   * device's plan (spmd.c's rendezvous compares them) */
  int outer_site = e->prim == FT_P_SHARD_MAP ? ft_spmd_site_reset(0) : 0;
  for (int i = 0; i < n; i++) {
    if (e->prim == FT_P_SHARD_MAP) ft_spmd_site_reset(0);
    c->subs[i].p = ft_program_plan(ctx, js[i], opts);
    if (!c->subs[i].p) {
      if (e->prim == FT_P_SHARD_MAP) ft_spmd_site_reset(outer_site);
      ft_control_free(c);
      return NULL;
    }
    c->n_sub = i + 1;
  }
  if (e->prim == FT_P_SHARD_MAP) ft_spmd_site_reset(outer_site);
  if (!fits(c, e)) goto unfit;
  for (int i = 0; i < n; i++)
    if (!sub_init(&c->subs[i])) goto oom;
  if (e->prim == FT_P_WHILE) {
    const ft_aval *pa = &c->subs[0].p->j->outvars[0]->aval;
    c->lanes = ft_aval_size(pa);
    if (!(c->pred = alloc64((size_t)c->lanes * ft_dtype_size(pa->dtype)))) goto oom;
  }
  if (e->prim == FT_P_WHILE || e->prim == FT_P_SCAN) {
    int nc = c->ncarry;
    c->cbytes = calloc((size_t)nc + 1, sizeof *c->cbytes);
    for (int s = 0; s < 2; s++) c->carry[s] = calloc((size_t)nc + 1, sizeof *c->carry[s]);
    if (!c->cbytes || !c->carry[0] || !c->carry[1]) goto oom;
    for (int i = 0; i < nc; i++) {
      const ft_aval *a = &e->out[i]->aval;
      c->cbytes[i] = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
      for (int s = 0; s < 2; s++)
        if (!(c->carry[s][i] = alloc64(c->cbytes[i]))) goto oom;
    }
  }
  return c;
unfit:
  ft_control_free(c);
  return NULL;
oom:
  ft_control_free(c);
  ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory planning control flow");
  return NULL;
}

/* Runs sub-program q on argument and result addresses. */
static ft_status run_sub(ft_ctx *ctx, sub *q, void *const *in, void *const *out) {
  for (int k = 0; k < q->p->n_args; k++) q->inv[k].data = in[k];
  for (int k = 0; k < q->p->n_out; k++) q->outv[k].data = out[k];
  return ft_program_run(ctx, q->p, (const ft_array *const *)q->inp, q->outp, q->kbufs, q->arena);
}

ft_status ft_control_run_sub_arrays(ft_ctx *ctx, ft_control *c, int i, ft_array *const *in, ft_array *const *out) {
  sub *q = &c->subs[i];
  return ft_program_run(ctx, q->p, (const ft_array *const *)in, out, q->kbufs, q->arena);
}

/* An integer scalar as the interpreter reads it (ft_get_i64). */
static int64_t read_int(const void *p, ft_dtype dt) {
  switch (dt) {
  case FT_BOOL: case FT_U8: return *(const uint8_t *)p;
  case FT_I8: return *(const int8_t *)p;
  case FT_I16: return *(const int16_t *)p;
  case FT_U16: return *(const uint16_t *)p;
  case FT_I32: return *(const int32_t *)p;
  case FT_U32: return *(const uint32_t *)p;
  default: return *(const int64_t *)p;
  }
}

/* The generic reduce's reducer: the compiled computation on the
 * accumulators and the elements, its results copied back. */
static ft_status reduce_step_fn(void *ud, void *const *acc, const void *const *x) {
  ft_control *c = ud;
  void *arg[2 * FT_GREDUCE_MAX];
  for (int k = 0; k < c->nx; k++) arg[k] = acc[k], arg[c->nx + k] = (void *)x[k];
  ft_status st = run_sub(c->rctx, &c->subs[0], arg, c->tmp);
  for (int k = 0; !st && k < c->nx; k++) memcpy(acc[k], c->tmp[k], ft_dtype_size(c->rdt[k]));
  return st;
}

/* The step's operands are in[] (buffer addresses by operand), its results
 * out[]; the sub-programs run on views of them (scan: on rows). */
ft_status ft_control_run(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs) {
  ft_control *c = s->ctl;
  void *in_st[64], *out_st[64], *arg_st[64], *res_st[64];
  void **in = in_st, **out = out_st, **arg = arg_st, **res = res_st;
  int ni = s->n_in, no = s->n_out;
  ft_status st = FT_OK;
  (void)p;
  if (ni > 64 || no > 64) {
    in = calloc((size_t)ni + 1, sizeof *in), out = calloc((size_t)no + 1, sizeof *out);
    arg = calloc((size_t)ni + 1, sizeof *arg), res = calloc((size_t)no + 1, sizeof *res);
    if (!in || !out || !arg || !res) {
      st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      goto done;
    }
  }
  for (int k = 0; k < ni; k++) in[k] = kbufs[s->in[k]];
  for (int k = 0; k < no; k++) out[k] = kbufs[s->out[k]];
  switch (c->prim) {
  case FT_P_COND: {
    ft_dtype dt = s->n_in ? p->bufs[s->in[0]].aval.dtype : FT_I32;
    int64_t idx = read_int(in[0], dt);
    if (ft_dtype_is_unsigned(dt) && idx < 0) idx = INT64_MAX;
    idx = idx < 0 ? 0 : idx >= c->n_sub ? c->n_sub - 1 : idx;
    st = run_sub(ctx, &c->subs[idx], in + 1, out);
    break;
  }
  case FT_P_WHILE: {
    int cn = c->nconst, bn = c->bconst, nc = c->ncarry, cur = 0;
    sub *cq = &c->subs[0], *bq = &c->subs[1];
    const ft_aval *pa = &cq->p->j->outvars[0]->aval;
    size_t pes = ft_dtype_size(pa->dtype);
    void *pp = c->pred;
    for (int i = 0; i < nc; i++)
      if (c->cbytes[i]) memcpy(c->carry[0][i], in[cn + bn + i], c->cbytes[i]);
    ft_loop_guard g;
    ft_loop_begin(&g, ctx, "while");
    for (;;) {
      memcpy(arg, in, sizeof *arg * (size_t)cn);
      memcpy(arg + cn, c->carry[cur], sizeof *arg * (size_t)nc);
      if ((st = run_sub(ctx, cq, arg, &pp))) break;
      bool go = false; /* a batched predicate: while any lane is true (interp_control.c) */
      for (int64_t l = 0; l < c->lanes && !go; l++) go = read_int((char *)c->pred + l * pes, pa->dtype) != 0;
      if (!go || (st = ft_loop_step(&g, ctx))) break;
      memcpy(arg, in + cn, sizeof *arg * (size_t)bn);
      memcpy(arg + bn, c->carry[cur], sizeof *arg * (size_t)nc);
      if ((st = run_sub(ctx, bq, arg, c->carry[1 - cur]))) break;
      for (int64_t l = 0; pa->rank > 0 && l < c->lanes; l++) { /* finished lanes keep their carry */
        if (read_int((char *)c->pred + l * pes, pa->dtype)) continue;
        for (int i = 0; i < nc; i++) {
          size_t row = c->cbytes[i] / (size_t)c->lanes;
          memcpy((char *)c->carry[1 - cur][i] + (size_t)l * row, (char *)c->carry[cur][i] + (size_t)l * row, row);
        }
      }
      cur = 1 - cur;
    }
    for (int i = 0; st == FT_OK && i < nc; i++)
      if (c->cbytes[i]) memcpy(out[i], c->carry[cur][i], c->cbytes[i]);
    break;
  }
  case FT_P_SCAN: {
    int k0 = c->nconst, nc = c->ncarry, cur = 0;
    sub *q = &c->subs[0];
    for (int i = 0; i < nc; i++)
      if (c->cbytes[i]) memcpy(c->carry[0][i], in[k0 + i], c->cbytes[i]);
    ft_loop_guard g;
    ft_loop_begin(&g, ctx, "scan");
    for (int64_t it = 0; it < c->len; it++) {
      if ((st = ft_loop_step(&g, ctx))) break;
      int64_t t = c->rev ? c->len - 1 - it : it;
      memcpy(arg, in, sizeof *arg * (size_t)k0);
      memcpy(arg + k0, c->carry[cur], sizeof *arg * (size_t)nc);
      for (int i = 0; i < c->nx; i++)
        arg[k0 + nc + i] = (char *)in[k0 + nc + i] + (size_t)t * q->inv[k0 + nc + i].nbytes;
      memcpy(res, c->carry[1 - cur], sizeof *res * (size_t)nc);
      for (int i = 0; i < c->ny; i++)
        res[nc + i] = (char *)out[nc + i] + (size_t)t * q->outv[nc + i].nbytes;
      if ((st = run_sub(ctx, q, arg, res))) break;
      cur = 1 - cur;
    }
    for (int i = 0; st == FT_OK && i < nc; i++)
      if (c->cbytes[i]) memcpy(out[i], c->carry[cur][i], c->cbytes[i]);
    break;
  }
  case FT_P_REDUCE:
    c->rctx = ctx;
    st = ft_generic_reduce_run(ctx, c->nx, &c->ra, c->rdt, c->rred, (const void *const *)in, out,
                               reduce_step_fn, c);
    break;
  case FT_P_REDUCE_WINDOW:
    c->rctx = ctx;
    st = ft_generic_reduce_window_run(ctx, c->nx, &c->rw, &c->ra, &c->rres, c->rdt, (const void *const *)in,
                                      out, reduce_step_fn, c);
    break;
  case FT_P_SHARD_MAP:
    st = ft_spmd_jit_run(ctx, c, &p->j->eqns[s->eqn], in, out);
    break;
  case FT_P_CUSTOM_LINEAR_SOLVE: /* the solve jaxpr's consts, then b */
    memcpy(arg, in + c->nconst, sizeof *arg * (size_t)c->bconst);
    memcpy(arg + c->bconst, in + ni - c->nx, sizeof *arg * (size_t)c->nx);
    st = run_sub(ctx, &c->subs[0], arg, out);
    break;
  default:
    st = run_sub(ctx, &c->subs[0], in, out);
    break;
  }
  if (st) ft_error_prefix(ctx, "jit: %s step", ft_prim_get(c->prim)->name);
done:
  if (in != in_st) free(in), free(out), free(arg), free(res);
  return st;
}

void ft_control_describe(const ft_control *c, char *buf, size_t n) {
  static const char *const wnames[] = {"cond", "body"};
  int w = snprintf(buf, n, "compiled %s (", ft_prim_get(c->prim)->name);
  for (int i = 0; i < c->n_sub && w > 0 && (size_t)w < n; i++) {
    const ft_program *q = c->subs[i].p;
    char nm[32];
    if (c->prim == FT_P_COND) snprintf(nm, sizeof nm, "branch %d", i);
    else if (c->prim == FT_P_WHILE) snprintf(nm, sizeof nm, "%s", wnames[i]);
    else if (c->prim == FT_P_CUSTOM_LINEAR_SOLVE || c->prim == FT_P_CUSTOM_ROOT) snprintf(nm, sizeof nm, "solve");
    else if (c->prim == FT_P_REDUCE || c->prim == FT_P_REDUCE_WINDOW) snprintf(nm, sizeof nm, "computation");
    else if (c->prim == FT_P_SHARD_MAP) snprintf(nm, sizeof nm, "device %d", i);
    else snprintf(nm, sizeof nm, "body");
    w += snprintf(buf + w, n - (size_t)w, "%s%s: %d steps, %d fallback", i ? "; " : "", nm,
                  q->n_steps, q->n_fallback);
  }
  if (w > 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, ")");
}
