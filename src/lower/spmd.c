/* src/lower/spmd.c: compiled shard_map bodies (issue 27, docs/spmd.md).
 *
 * A shard_map equation is a FT_STEP_CONTROL step (control.c) whose
 * sub-programs are the body planned once per device of the mesh (every
 * plan owns its buffers, arena and nested control state, so the devices
 * can run at once). ft_spmd_jit_run hands the step to the interpreter's
 * shard_map machinery (ft_spmd_run_compiled, interp_spmd.c: the blocks of
 * the inputs, the MPI entry check, the assembly of the outputs with the
 * replica checks), which calls back with each local device's body inputs:
 * every device runs its compiled body on a thread of its own, with a
 * context of its own (reporting to the caller's).
 *
 * A collective in a body (also inside compiled control flow of the body)
 * is a routine step (routines.c -> ft_spmd_jit_collective): the device
 * deposits its operand and result buffers at the shard_map's rendezvous and
 * waits; when no device is running any more, the last one to stop checks
 * that every device waits at the same collective (the same site: a number
 * given to each collective in planning order, equal in every device's plan
 * and on every rank) and runs ft_spmd_collective, the interpreter's own
 * grouping and index-order combination (and, over MPI, its exchange) on the
 * deposited buffers, then wakes them all. Devices that diverge (a cond
 * taking another branch, a while another trip count, with a collective
 * inside) meet at different sites, or one finishes while another waits: that
 * fails every device with a message, never a hang nor a mixed result.
 *
 * Order over MPI: a device's collectives run in its body's program order
 * (the body runs serially on its thread); the executor chains every step
 * that holds a shard_map in program order (exec_program.c), so every rank
 * enters its shard_maps in the same order whatever its thread count. */
#include <pthread.h>
#include <string.h>

#include "lower/lower.h"
#include "runtime/exec.h"

/* ------------------------------------------------------------ the sites */
static _Thread_local int site_next; /* the next collective site while planning a body */

int ft_spmd_site_new(void) { return ++site_next; }

int ft_spmd_site_reset(int to) {
  int old = site_next;
  site_next = to;
  return old;
}

/* ------------------------------------------------------- the rendezvous */
typedef struct rv rv;

typedef struct dev {
  rv *R;
  int d;                   /* local device: lo + d of the mesh */
  ft_ctx *ctx;             /* its own context (limits_from the caller's) */
  ft_control *c;
  ft_array *const *in, *const *out;
  ft_status st;
  /* at a collective: */
  int site;                /* 0: running or finished */
  bool done;
  bool rv_fail;            /* failed by the rendezvous (another device's doing) */
  const ft_eqn *e;
  ft_array **x;            /* its operands (views) */
  ft_array **o;            /* its results (views; NULL: dropped) */
} dev;

struct rv {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int cnt, running;
  uint64_t gen;
  ft_status result;
  char msg[512];
  const ft_spmd_devs *m;
  int64_t lo, n;
  dev *devs;
};

static _Thread_local dev *cur_dev;

/* With the lock held, every device stopped and one at least waiting. */
static void resolve(rv *R) {
  dev *first = NULL, *odd = NULL, *fin = NULL;
  int waiting = 0;
  for (int d = 0; d < R->cnt; d++) {
    dev *v = &R->devs[d];
    if (v->done) {
      fin = fin ? fin : v;
      continue;
    }
    waiting++;
    if (!first) first = v;
    else if (!odd && v->site != first->site) odd = v;
  }
  R->result = FT_OK;
  R->msg[0] = 0;
  if (fin || odd) {
    dev *b = fin ? fin : odd;
    snprintf(R->msg, sizeof R->msg, "shard_map (compiled): device %lld waits at %s (collective site %d) but "
             "device %lld %s: the devices took different paths through control flow holding a collective",
             (long long)(R->lo + first->d), ft_prim_get(first->e->prim)->name, first->site, (long long)(R->lo + b->d),
             fin ? "finished its body (or failed)" : "waits at another collective");
    R->result = FT_ERR_INVALID_ARG;
  } else {
    const ft_eqn *e = first->e;
    size_t nin = (size_t)(e->n_in ? e->n_in : 1), no = (size_t)(e->n_out ? e->n_out : 1);
    ft_array **x = calloc((size_t)R->n * nin + 1, sizeof *x), **o = calloc((size_t)R->cnt * no + 1, sizeof *o);
    ft_ctx *ctx = first->ctx;
    if (!x || !o) {
      R->result = FT_ERR_NOMEM;
      snprintf(R->msg, sizeof R->msg, "out of memory");
    } else {
      for (int d = 0; d < R->cnt; d++) {
        dev *v = &R->devs[d];
        for (int k = 0; k < e->n_in; k++) x[(size_t)(R->lo + d) * nin + (size_t)k] = v->x[k];
        for (int k = 0; k < e->n_out; k++) o[(size_t)d * no + (size_t)k] = v->o[k];
      }
      R->result = ft_spmd_collective(R->m, ctx, e, first->site, x, o);
      if (R->result) snprintf(R->msg, sizeof R->msg, "%s", ft_ctx_error(ctx));
    }
    free(x);
    free(o);
  }
  R->running = waiting;
  R->gen++;
  pthread_cond_broadcast(&R->cv);
}

/* A device stops at site (its operands x, results o) until the collective
 * has run; FT_OK or the collective's error (on the device's context). */
static ft_status arrive(dev *v, int site, const ft_eqn *e, ft_array **x, ft_array **o) {
  rv *R = v->R;
  pthread_mutex_lock(&R->mu);
  v->site = site, v->e = e, v->x = x, v->o = o;
  uint64_t g = R->gen;
  if (--R->running == 0) resolve(R);
  else
    while (R->gen == g) pthread_cond_wait(&R->cv, &R->mu);
  ft_status st = R->result;
  char msg[sizeof R->msg];
  memcpy(msg, R->msg, sizeof msg);
  v->site = 0;
  v->rv_fail = st != FT_OK;
  pthread_mutex_unlock(&R->mu);
  return st ? ft_set_error(v->ctx, st, "%s", msg) : FT_OK;
}

static void finish(dev *v) {
  rv *R = v->R;
  pthread_mutex_lock(&R->mu);
  v->done = true;
  if (--R->running == 0) {
    bool any = false;
    for (int d = 0; d < R->cnt; d++) any = any || !R->devs[d].done;
    if (any) resolve(R);
  }
  pthread_mutex_unlock(&R->mu);
}

static void *dev_main(void *arg) {
  dev *v = arg;
  unsigned fp = ft_fp_env_enter();
  dev *saved = cur_dev;
  cur_dev = v;
  ft_spmd_device_enter();
  v->st = ft_control_run_sub_arrays(v->ctx, v->c, v->d, v->in, v->out);
  ft_spmd_device_leave();
  cur_dev = saved;
  ft_fp_env_leave(fp);
  finish(v);
  return NULL;
}

typedef struct body_arg {
  ft_control *c;
  int n_in, n_out;
} body_arg;

/* ft_spmd_body_fn: every local device's compiled body, one thread each. */
static ft_status run_devices(void *arg, ft_ctx *ctx, const ft_spmd_devs *m, int64_t lo, int64_t cnt,
                             ft_array *const *in, ft_array *const *out) {
  body_arg *B = arg;
  if (cnt > ft_control_num_subs(B->c))
    return ft_set_error(ctx, FT_ERR_INTERNAL, "shard_map (compiled): %lld devices but %d plans", (long long)cnt,
                        ft_control_num_subs(B->c));
  rv R = {.cnt = (int)cnt, .running = (int)cnt, .m = m, .lo = lo};
  R.n = 0;
  R.devs = calloc((size_t)cnt, sizeof *R.devs);
  pthread_t *th = calloc((size_t)cnt, sizeof *th);
  bool *started = calloc((size_t)cnt, 1);
  ft_status st = R.devs && th && started ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  const ft_ctx *root = ctx->limits_from ? ctx->limits_from : ctx;
  for (int d = 0; d < cnt && !st; d++) {
    dev *v = &R.devs[d];
    *v = (dev){.R = &R, .d = d, .c = B->c, .in = in + (size_t)d * (size_t)B->n_in,
               .out = out + (size_t)d * (size_t)B->n_out};
    if (!(v->ctx = ft_ctx_new(&root->opts))) st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    else v->ctx->limits_from = root;
  }
  if (st) goto out;
  R.n = ft_spmd_mesh_devices(m);
  pthread_mutex_init(&R.mu, NULL);
  pthread_cond_init(&R.cv, NULL);
  for (int d = 1; d < cnt; d++) {
    started[d] = !pthread_create(&th[d], NULL, dev_main, &R.devs[d]);
    if (started[d]) continue;
    /* no thread: the device fails (the others fail at their next collective) */
    pthread_mutex_lock(&R.mu);
    R.devs[d].st = ft_set_error(R.devs[d].ctx, FT_ERR_RUNTIME, "could not start a thread for it");
    R.devs[d].done = true;
    R.running--;
    pthread_mutex_unlock(&R.mu);
  }
  dev_main(&R.devs[0]);
  for (int d = 1; d < cnt; d++)
    if (started[d]) pthread_join(th[d], NULL);
  pthread_mutex_destroy(&R.mu);
  pthread_cond_destroy(&R.cv);
  /* the first device that failed on its own, else the first that failed */
  for (int pass = 0; pass < 2 && !st; pass++)
    for (int d = 0; d < cnt && !st; d++) {
      dev *v = &R.devs[d];
      if (!v->st || (pass == 0 && v->rv_fail)) continue;
      st = ft_set_error(ctx, v->st, "shard_map (compiled): device %lld: %s", (long long)(lo + d),
                        ft_ctx_error(v->ctx));
    }
out:
  for (int d = 0; R.devs && d < cnt; d++) ft_ctx_free(R.devs[d].ctx);
  free(R.devs);
  free(th);
  free(started);
  return st;
}

ft_status ft_spmd_jit_run(ft_ctx *ctx, ft_control *c, const ft_eqn *e, void *const *in, void *const *out) {
  const ft_jaxpr *j = ft_eqn_param(e, "jaxpr")->u.jaxpr;
  ft_array *iv = calloc((size_t)e->n_in + 1, sizeof *iv), **ip = calloc((size_t)e->n_in + 1, sizeof *ip);
  ft_array **op = calloc((size_t)e->n_out + 1, sizeof *op);
  ft_status st = iv && ip && op ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int k = 0; k < e->n_in && !st; k++) {
    iv[k].aval = e->in[k]->aval;
    iv[k].nbytes = (size_t)ft_aval_size(&iv[k].aval) * ft_dtype_size(iv[k].aval.dtype);
    iv[k].data = in[k];
    ip[k] = &iv[k];
  }
  body_arg B = {.c = c, .n_in = j->n_in, .n_out = j->n_out};
  if (!st) st = ft_spmd_run_compiled(ctx, e, ip, op, run_devices, &B);
  for (int k = 0; k < e->n_out && !st; k++)
    if (op[k]->nbytes) memcpy(out[k], op[k]->data, op[k]->nbytes);
  for (int k = 0; op && k < e->n_out; k++) ft_array_free(op[k]);
  free(iv), free(ip), free(op);
  return st;
}

/* ----------------------------------------------------- collective steps */
ft_status ft_spmd_jit_collective(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs) {
  const ft_eqn *e = &p->j->eqns[s->eqn];
  dev *v = cur_dev;
  if (!v) {
    ft_array *o[8] = {0};
    return ft_interp_collective_outside(ctx, e, NULL, o);
  }
  int site = (int)(intptr_t)s->rt;
  ft_array view_st[16], *x_st[8], *o_st[8];
  int ni = e->n_in, no = e->n_out;
  ft_array *views = ni + no <= 16 ? view_st : calloc((size_t)(ni + no), sizeof *views);
  ft_array **x = ni <= 8 ? x_st : calloc((size_t)ni, sizeof *x), **o = no <= 8 ? o_st : calloc((size_t)no, sizeof *o);
  ft_status st = views && x && o ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int k = 0; k < ni && !st; k++) {
    x[k] = NULL;
    if (s->in[k] < 0) continue; /* a literal: read from e */
    const ft_pbuf *b = &p->bufs[s->in[k]];
    views[k] = (ft_array){.aval = b->aval, .nbytes = b->nbytes, .data = kbufs[s->in[k]]};
    x[k] = &views[k];
  }
  for (int k = 0; k < no && !st; k++) {
    o[k] = NULL;
    if (s->out[k] < 0) continue;
    const ft_pbuf *b = &p->bufs[s->out[k]];
    views[ni + k] = (ft_array){.aval = b->aval, .nbytes = b->nbytes, .data = kbufs[s->out[k]]};
    o[k] = &views[ni + k];
  }
  if (!st) st = arrive(v, site, e, x, o);
  if (views != view_st) free(views);
  if (x != x_st) free(x);
  if (o != o_st) free(o);
  return st;
}

/* ------------------------------------------------- order across ranks */
static bool jaxpr_holds(const ft_jaxpr *j);

static bool pval_holds(const ft_pval *v) {
  if (v->tag == FT_PV_JAXPR) return v->u.jaxpr && jaxpr_holds(v->u.jaxpr);
  for (int q = 0; v->tag == FT_PV_TUPLE && q < v->n; q++)
    if (pval_holds(&v->u.items[q])) return true;
  return false;
}

static bool jaxpr_holds(const ft_jaxpr *j) {
  for (int i = 0; i < j->n_eqn; i++)
    if (ft_spmd_eqn_holds_shard_map(&j->eqns[i])) return true;
  return false;
}

bool ft_spmd_eqn_holds_shard_map(const ft_eqn *e) {
  if (e->prim == FT_P_SHARD_MAP) return true;
  const ft_prim_info *pi = ft_prim_get(e->prim);
  for (int k = 0; k < pi->n_params; k++)
    if (pval_holds(&e->params[k])) return true;
  return false;
}
