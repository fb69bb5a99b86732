/* src/lower/aot_rt.c: the runtime side of AOT (docs/jit.md, "AOT"). An
 * object emitted by aot.c holds the program's compiled kernels and a
 * descriptor (ft_aot_desc): the canonical text of the jaxpr it was planned
 * from, the kernels' entry points in the plan's order, the traced constants
 * and a hash of the plan. Its entry function calls ft_aot_rt_call, which on
 * the first call parses the text and plans it again with the same options
 * (planning is deterministic, so kernel k of this plan is kernel k of the
 * compile-time plan: the hash checks it), binds the kernel steps to the
 * embedded entry points and then runs the program through the same
 * executor as ft_call. Routine, GEMM, control and fallback steps run the
 * library's own step runners, so the bits are ft_call's. This file and the
 * planner need no LLVM: they are part of libfrankentrace_rt. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "lower/lower.h"
#include "runtime/exec.h"

struct ft_aot_state {
  ft_status status;       /* of the initialization: non-zero leaves msg */
  char msg[512];
  ft_jaxpr *j;
  ft_program *p;
  ft_pool *pool;
  ft_prog_exec *pe;
  /* Contexts for calls (their error channel): taken and given back under
   * mu, so concurrent calls never share one and a steady state allocates
   * nothing. */
  pthread_mutex_t mu;
  int n_ctx, cap_ctx;
  ft_ctx **ctxs;
};

/* aot.c builds the descriptor as an LLVM struct of the same fields in the
 * same order (five pointers, an i64, six i32, [16 x i8]): the C layout must
 * be that one. */
_Static_assert(offsetof(ft_aot_desc, jaxpr_len) == 40 && offsetof(ft_aot_desc, magic) == 48 &&
                   offsetof(ft_aot_desc, plan_hash) == 72 && sizeof(ft_aot_desc) == 88,
               "ft_aot_desc's layout differs from the one aot.c emits");

/* One lock for every descriptor's first call: initialization is rare. */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;

/* The calling thread's last failed call: its descriptor and message. */
static _Thread_local const ft_aot_desc *last_desc;
static _Thread_local char last_msg[512];

/* ------------------------------------------------------------ plan hash */
typedef struct hasher {
  XXH3_state_t *st;
} hasher;

static void h_bytes(hasher *h, const void *p, size_t n) { XXH3_128bits_update(h->st, p, n); }
static void h_i64(hasher *h, int64_t v) { h_bytes(h, &v, sizeof v); }
static void h_arr(hasher *h, const int64_t *a, int n) {
  h_i64(h, n);
  for (int i = 0; i < n; i++) h_i64(h, a[i]);
}
static void h_ints(hasher *h, const int *a, int n) {
  h_i64(h, n);
  for (int i = 0; i < n; i++) h_i64(h, a ? a[i] : -2);
}

static void h_access(hasher *h, const ft_access *a, int rank) {
  h_i64(h, a->buf);
  h_i64(h, a->dt);
  h_i64(h, a->base);
  h_arr(h, a->st, rank);
  h_i64(h, a->lit ? 1 : 0);
}

/* Every field that decides what a kernel computes, over its defined
 * entries only (unused array tails are not promised to be zero). */
static void h_kernel(hasher *h, const ft_kernel *k) {
  h_i64(h, k->kind);
  h_bytes(h, k->name, strnlen(k->name, sizeof k->name));
  h_arr(h, k->dims, k->kind == FT_KER_LOOP ? k->rank : 0);
  int lrank = k->kind == FT_KER_LOOP ? k->rank : k->irank;
  h_i64(h, k->n_nodes);
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *n = &k->nodes[i];
    h_i64(h, n->kind);
    h_i64(h, n->dt);
    h_i64(h, n->e ? (int64_t)n->e->prim : -1);
    h_ints(h, n->in, n->kind == FT_KN_ELEM ? n->n_in : 0);
    if (n->kind == FT_KN_LOAD) h_access(h, &n->acc, lrank);
    if (n->kind == FT_KN_IOTA) h_i64(h, n->dim);
  }
  h_i64(h, k->n_stores);
  for (int i = 0; i < k->n_stores; i++) h_i64(h, k->stores[i].node), h_i64(h, k->stores[i].buf);
  if (k->kind == FT_KER_LSE) {
    h_i64(h, k->lse_fin);
    h_i64(h, k->lse_rows), h_i64(h, k->lse_n), h_i64(h, k->lse_nb);
    h_i64(h, k->lse_x), h_i64(h, k->lse_pm), h_i64(h, k->lse_ps);
    h_i64(h, k->lse_shift), h_i64(h, k->lse_sum);
    return;
  }
  if (k->kind != FT_KER_REDUCE) return;
  h_i64(h, k->rprim);
  h_i64(h, k->rout);
  h_i64(h, k->rcount);
  h_i64(h, k->rstride);
  h_arr(h, k->kdims, k->krank);
  h_i64(h, k->rnode);
  h_arr(h, k->idims, k->irank);
  for (int d = 0; d < k->irank; d++) h_i64(h, k->ired[d]);
  h_i64(h, k->rout_dt);
  h_i64(h, k->rparts);
  h_i64(h, k->rblock);
  h_i64(h, k->rseq);
}

static void h_program(hasher *h, const ft_program *p) {
  h_i64(h, p->n_args);
  h_i64(h, p->n_out);
  h_i64(h, (int64_t)p->arena_bytes);
  h_i64(h, p->n_bufs);
  for (int b = 0; b < p->n_bufs; b++) {
    const ft_pbuf *pb = &p->bufs[b];
    h_i64(h, pb->kind);
    h_i64(h, pb->index);
    h_i64(h, (int64_t)pb->offset);
    h_i64(h, (int64_t)pb->nbytes);
    h_i64(h, pb->aval.dtype);
    h_arr(h, pb->aval.dims, pb->aval.rank);
  }
  h_i64(h, p->n_steps);
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    h_i64(h, s->kind);
    h_i64(h, s->eqn);
    h_ints(h, s->eqns, s->n_eqns);
    h_ints(h, s->in, s->n_in);
    h_ints(h, s->out, s->n_out);
    if (s->kind == FT_STEP_KERNEL) h_i64(h, s->kernel), h_i64(h, s->extent);
    if (s->kind == FT_STEP_GEMM) {
      const ft_gemm_plan *g = s->gemm;
      int64_t v[] = {g->f64, g->B, g->M, g->N, g->K, g->lhs_direct, g->rhs_direct, g->pack_a, g->pack_b};
      h_arr(h, v, (int)(sizeof v / sizeof *v));
    }
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) h_program(h, ft_control_sub(s->ctl, k));
  }
  h_i64(h, p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) h_kernel(h, &p->kernels[k]);
  for (int k = 0; k < p->n_out; k++) {
    const ft_out_src *o = &p->outs[k];
    h_i64(h, o->buf), h_i64(h, o->lit ? 1 : 0), h_i64(h, o->in_place);
  }
}

bool ft_aot_plan_hash(const ft_program *p, uint8_t out[16]) {
  hasher h = {XXH3_createState()};
  char *text = ft_program_describe(p);
  if (!h.st || !text) {
    XXH3_freeState(h.st);
    free(text);
    return false;
  }
  XXH3_128bits_reset(h.st);
  h_bytes(&h, text, strlen(text));
  free(text);
  h_program(&h, p);
  XXH128_hash_t d = XXH3_128bits_digest(h.st);
  XXH3_freeState(h.st);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, d);
  memcpy(out, c.digest, 16);
  return true;
}

/* --------------------------------------------------- parsing the program */
ft_jaxpr *ft_aot_parse(ft_ctx *ctx, const char *text, size_t len, int n_consts,
                       const void *const *consts, const char *name) {
  ft_jaxpr *j = ft_parse(ctx, text, len, name);
  if (!j || n_consts == 0) return j;
  if (j->n_const != n_consts) {
    ft_set_error(ctx, FT_ERR_INTERNAL, "%s: the program has %d constants, %d values were embedded", name,
                 j->n_const, n_consts);
    ft_jaxpr_free(j);
    return NULL;
  }
  void **cd = ft_arena_alloc(j->arena, (size_t)n_consts * sizeof *cd);
  for (int i = 0; cd && i < n_consts; i++) {
    const ft_aval *a = &j->constvars[i]->aval;
    size_t n = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
    if ((cd[i] = ft_arena_alloc(j->arena, n ? n : 1)) == NULL) cd = NULL;
    else if (n) memcpy(cd[i], consts[i], n);
  }
  if (!cd) {
    ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", name);
    ft_jaxpr_free(j);
    return NULL;
  }
  j->const_data = cd;
  return j;
}

/* ------------------------------------------------------- initialization */
/* Points every kernel step, sub-programs' included, at the embedded code. */
static void bind(ft_program *q, void *const *fns) {
  for (int i = 0; i < q->n_steps; i++) {
    ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) s->fn = (ft_kernel_fn)(uintptr_t)fns[s->kernel];
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) bind(ft_control_sub(s->ctl, k), fns);
  }
}

static void hex16(const uint8_t h[16], char out[33]) {
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Builds the program of d; a failure is recorded in st->status/msg. */
static void state_init(ft_aot_state *st, const ft_aot_desc *d, ft_ctx *ctx) {
  if (d->magic != FT_AOT_MAGIC || d->abi != FT_AOT_ABI) {
    ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                 "aot: the function was emitted for AOT ABI %u (magic %08x); this runtime (FrankenTrace %s) "
                 "runs ABI %d",
                 d->abi, d->magic, ft_version(), FT_AOT_ABI);
    return;
  }
  st->j = ft_aot_parse(ctx, d->jaxpr, (size_t)d->jaxpr_len, d->n_consts, d->consts, "aot: the embedded jaxpr");
  if (!st->j) return;
  ft_plan_options po = {.no_fusion = d->flags & FT_AOT_NO_FUSION, .no_compile = d->flags & FT_AOT_INTERPRET_ALL};
  if (!(st->p = ft_program_plan(ctx, st->j, &po))) {
    ft_error_prefix(ctx, "aot: planning the embedded jaxpr");
    return;
  }
  uint8_t h[16];
  if (!ft_aot_plan_hash(st->p, h)) {
    ft_set_error(ctx, FT_ERR_NOMEM, "aot: out of memory hashing the plan");
    return;
  }
  if (memcmp(h, d->plan_hash, 16) || st->p->n_kernels != d->n_kernels) {
    char want[33], got[33];
    hex16(d->plan_hash, want), hex16(h, got);
    ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                 "aot: the runtime's plan of the embedded jaxpr differs from the one compiled "
                 "(plan hash %s with %d kernels, emitted %s with %d kernels by FrankenTrace %s; this runtime "
                 "is %s): the kernels cannot be bound; re-emit with this version",
                 got, st->p->n_kernels, want, d->n_kernels, d->version ? d->version : "?", ft_version());
    return;
  }
  bind(st->p, d->kernels);
  int threads = ft_pool_default_threads(NULL);
  if (!(st->pool = ft_pool_acquire_shared(threads))) {
    ft_set_error(ctx, FT_ERR_NOMEM, "aot: cannot start %d executor threads", threads);
    return;
  }
  if (!(st->pe = ft_prog_exec_new(ctx, st->p, st->pool, NULL))) return;
  ft_exec_reserve(ft_prog_exec_executor(st->pe), ctx, 1);
}

static void state_free(ft_aot_state *st) {
  if (!st) return;
  ft_prog_exec_free(st->pe); /* borrows p */
  if (st->pool) ft_pool_release_shared(st->pool);
  ft_program_free(st->p);
  ft_jaxpr_free(st->j);
  for (int i = 0; i < st->n_ctx; i++) ft_ctx_free(st->ctxs[i]);
  free(st->ctxs);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

/* The state of d, made on the first call (once, under init_mu; later calls
 * read it with one acquire load). NULL only when out of memory. */
static ft_aot_state *state_get(ft_aot_desc *d) {
  ft_aot_state *st = atomic_load_explicit(&d->state, memory_order_acquire);
  if (st) return st;
  pthread_mutex_lock(&init_mu);
  if (!(st = atomic_load_explicit(&d->state, memory_order_relaxed)) && (st = calloc(1, sizeof *st))) {
    pthread_mutex_init(&st->mu, NULL);
    ft_ctx *ctx = ft_ctx_new(NULL);
    if (!ctx) {
      st->status = FT_ERR_NOMEM;
      snprintf(st->msg, sizeof st->msg, "aot: out of memory");
    } else {
      state_init(st, d, ctx);
      if ((st->status = ft_ctx_status(ctx)) != FT_OK) {
        snprintf(st->msg, sizeof st->msg, "%s", ft_ctx_error(ctx));
        ft_ctx_free(ctx);
      } else if (!(st->ctxs = malloc(sizeof *st->ctxs))) {
        ft_ctx_free(ctx);
      } else {
        st->ctxs[st->n_ctx++] = ctx, st->cap_ctx = 1;
      }
    }
    atomic_store_explicit(&d->state, st, memory_order_release);
  }
  pthread_mutex_unlock(&init_mu);
  return st;
}

static ft_ctx *ctx_take(ft_aot_state *st) {
  ft_ctx *c = NULL;
  pthread_mutex_lock(&st->mu);
  if (st->n_ctx) c = st->ctxs[--st->n_ctx];
  pthread_mutex_unlock(&st->mu);
  return c ? c : ft_ctx_new(NULL);
}

static void ctx_give(ft_aot_state *st, ft_ctx *c) {
  ft_ctx_clear_error(c);
  pthread_mutex_lock(&st->mu);
  if (st->n_ctx == st->cap_ctx) {
    int cap = st->cap_ctx ? 2 * st->cap_ctx : 4;
    ft_ctx **nc = realloc(st->ctxs, (size_t)cap * sizeof *nc);
    if (nc) st->ctxs = nc, st->cap_ctx = cap;
  }
  if (st->n_ctx < st->cap_ctx) st->ctxs[st->n_ctx++] = c, c = NULL;
  pthread_mutex_unlock(&st->mu);
  ft_ctx_free(c);
}

static int fail(const ft_aot_desc *d, int status, const char *msg) {
  last_desc = d;
  snprintf(last_msg, sizeof last_msg, "%s", msg);
  return status ? status : FT_ERR_INTERNAL;
}

/* ---------------------------------------------------------------- calls */
int ft_aot_rt_call(ft_aot_desc *d, const void *const *in, void *const *out) {
  if (!d) return FT_ERR_INVALID_ARG;
  ft_aot_state *st = state_get(d);
  if (!st) return fail(d, FT_ERR_NOMEM, "aot: out of memory");
  if (st->status) return st->status;
  const ft_program *p = st->p;
  const ft_jaxpr *j = p->j;
  int nc = j->const_data ? 0 : j->n_const, n = p->n_args + p->n_out;
  if ((p->n_args && !in) || (p->n_out && !out))
    return fail(d, FT_ERR_INVALID_ARG, "aot: NULL in or out array");
  /* Views of the caller's buffers; a zero-size one may be NULL. */
  static _Alignas(64) unsigned char empty[64];
  ft_array view_st[32], *ptr_st[32], *views = view_st, **ptrs = ptr_st;
  if (n > 32 && (!(views = malloc((size_t)n * sizeof *views)) || !(ptrs = malloc((size_t)n * sizeof *ptrs)))) {
    free(views != view_st ? views : NULL);
    return fail(d, FT_ERR_NOMEM, "aot: out of memory");
  }
  int status = FT_OK;
  char msg[160] = "";
  for (int k = 0; k < n && !status; k++) {
    bool is_in = k < p->n_args;
    int i = is_in ? k : k - p->n_args;
    const ft_var *v = !is_in ? j->outvars[i] : i < nc ? j->constvars[i] : j->invars[i - nc];
    void *data = is_in ? (void *)in[i] : out[i];
    views[k].aval = v->aval;
    views[k].nbytes = (size_t)ft_aval_size(&v->aval) * ft_dtype_size(v->aval.dtype);
    views[k].data = data ? data : empty;
    ptrs[k] = &views[k];
    if (!data && views[k].nbytes) {
      snprintf(msg, sizeof msg, "aot: %s[%d] is NULL (%zu bytes expected)", is_in ? "in" : "out", i,
               views[k].nbytes);
      status = FT_ERR_INVALID_ARG;
    }
  }
  ft_ctx *ctx = status ? NULL : ctx_take(st);
  if (!status && !ctx) snprintf(msg, sizeof msg, "aot: out of memory"), status = FT_ERR_NOMEM;
  if (!status && (status = ft_prog_exec_run(st->pe, ctx, (const ft_array *const *)ptrs, ptrs + p->n_args, NULL)))
    fail(d, status, ft_ctx_error(ctx));
  else if (status)
    fail(d, status, msg);
  if (ctx) ctx_give(st, ctx);
  if (views != view_st) free(views), free(ptrs);
  return status;
}

const char *ft_aot_rt_error(ft_aot_desc *d) {
  if (!d) return "aot: NULL descriptor";
  ft_aot_state *st = atomic_load_explicit(&d->state, memory_order_acquire);
  if (st && st->status) return st->msg;
  return last_desc == d ? last_msg : "";
}

void ft_aot_rt_release(ft_aot_desc *d) {
  if (!d) return;
  pthread_mutex_lock(&init_mu);
  ft_aot_state *st = atomic_exchange_explicit(&d->state, NULL, memory_order_acq_rel);
  pthread_mutex_unlock(&init_mu);
  state_free(st);
  if (last_desc == d) last_desc = NULL;
}
