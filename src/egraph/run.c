/* src/egraph/run.c: the runner. Each iteration searches every rule on the
 * same e-graph (the frozen index makes that hold while matches are applied
 * rule by rule), applies all matches, then rebuilds once: egg's semantics.
 * Schedulers: simple (every match) and backoff (egg's BackoffScheduler:
 * match limit 1,000 and ban length 5, both doubling per ban). Limits on
 * iterations, e-nodes, time and memory; per-iteration statistics. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frankentrace_egraph.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ft_egraph_run_opts ft_egraph_run_defaults(void) {
  ft_egraph_run_opts o;
  memset(&o, 0, sizeof o);
  o.scheduler = FT_SCHED_BACKOFF;
  o.iter_limit = 30;
  o.node_limit = 10000;
  o.time_limit = 5.0;
  o.match_limit = 1000;
  o.ban_length = 5;
  return o;
}

const char *ft_egraph_stop_name(ft_egraph_stop s) {
  switch (s) {
  case FT_STOP_NONE: return "none";
  case FT_STOP_SATURATED: return "saturated";
  case FT_STOP_ITER_LIMIT: return "iteration limit";
  case FT_STOP_NODE_LIMIT: return "node limit";
  case FT_STOP_TIME_LIMIT: return "time limit";
  case FT_STOP_MEMORY_LIMIT: return "memory limit";
  case FT_STOP_ERROR: return "error";
  }
  return "?";
}

/* ---------------------------------------------------------------- apply */

typedef struct {
  ft_egraph *eg;
  const ft_erule *r;
  uint32_t ridx;
  uint32_t *buf;
  size_t n, cap;      /* buffered substitutions; capacity in words */
  size_t chunk;       /* apply when this many are buffered (0: never, backoff) */
  size_t limit;       /* stop searching past this many matches (0: none) */
  size_t found, applied;
  double apply_s;
  bool error;
} applier;

/* Applies one substitution: guards, then each RHS item instantiated and
 * unioned with its target (proof terms on both sides when explaining). */
static void apply_one(applier *A, const uint32_t *subst) {
  ft_egraph *eg = A->eg;
  const ft_erule *r = A->r;
  for (uint32_t g = 0; g < r->nguards; g++) {
    const ft_eguard *G = &r->guards[g];
    uint32_t args[32];
    for (uint32_t a = 0; a < G->nargs; a++) {
      uint32_t s = r->argv[G->args + a];
      args[a] = r->slot_param[s] ? subst[s] : ft_egraph_find(eg, subst[s]);
    }
    const ft_eregistered *f = &eg->guards[G->fn];
    if (!((ft_egraph_guard_fn)f->fn)(f->ud, eg, args, G->nargs)) return;
  }
  bool terms = eg->explain;
  for (uint32_t i = 0; i < r->nitems; i++) {
    const ft_eitem *it = &r->items[i];
    uint32_t rhs = ft_egraph_instantiate(eg, r, it->root, subst, terms);
    if (rhs == FT_EGRAPH_NONE) {
      if (eg->status) A->error = true;
      return;
    }
    uint32_t lhs = subst[it->target];
    if (terms && it->lhs != FT_EGRAPH_NONE) {
      lhs = ft_egraph_instantiate(eg, r, r->lhs_root[it->lhs], subst, true);
      if (lhs == FT_EGRAPH_NONE) {
        A->error = true;
        return;
      }
    }
    int u = ft_egraph_union_just(eg, lhs, rhs, A->ridx);
    if (u < 0) {
      A->error = true;
      return;
    }
    A->applied += (size_t)u;
  }
}

/* Software pipeline for the hashcons misses that dominate apply: 32
 * matches ahead, touch the union-find entries of the prefetch node's kids;
 * 16 ahead, hash its canonical content and touch the hashcons slot. */
#define PF_FAR 32
#define PF_NEAR 16

static inline void prefetch_uf(const ft_egraph *eg, const ft_erule *r, const uint32_t *subst) {
  const ft_etnode *t = &r->tn[r->pf_node];
  for (uint32_t i = 0; i < t->nkids; i++) __builtin_prefetch(&eg->uf[subst[r->refs[t->kid0 + i]]]);
}

static inline void prefetch_slot(const ft_egraph *eg, const ft_erule *r, const uint32_t *subst) {
  const ft_etnode *t = &r->tn[r->pf_node];
  uint32_t k[8];
  if (t->nkids > 8) return;
  for (uint32_t i = 0; i < t->nkids; i++) k[i] = ft_egraph_find_ro(eg, subst[r->refs[t->kid0 + i]]);
  ft_egraph_prefetch_node(eg, t->op, r->pool + t->poff, t->pbytes, k, t->nkids);
}

/* Applies matches one at a time (proof terms, or wide nodes). */
static void flush_serial(applier *A) {
  const ft_erule *r = A->r;
  size_t w = r->nslots;
  bool pf = r->pf_node != FT_EGRAPH_NONE && !A->eg->explain;
  for (size_t i = 0; i < A->n && !A->error; i++) {
    if (pf && i + PF_FAR < A->n) prefetch_uf(A->eg, r, A->buf + (i + PF_FAR) * w);
    if (pf && i + PF_NEAR < A->n) prefetch_slot(A->eg, r, A->buf + (i + PF_NEAR) * w);
    apply_one(A, A->buf + i * w);
  }
}

#define BATCH 64
#define BATCH_MAXK 8  /* batched nodes have at most this many kids */
#define BATCH_MAXTN 16

/* True if every RHS node can go through the batched path. */
static bool batchable(const ft_egraph *eg, const ft_erule *r) {
  if (eg->explain || r->nrhs_tn > BATCH_MAXTN) return false;
  for (uint32_t j = 0; j < r->nrhs_tn; j++)
    if (r->tn[j].nkids > BATCH_MAXK || r->tn[j].pmode == 2) return false;
  return true;
}

/* The canonical kids of RHS node j for one match of the batch. */
static inline void batch_kids(ft_egraph *eg, const ft_erule *r, const ft_etnode *t,
                              const uint32_t *subst, const uint32_t *res, uint32_t *k) {
  for (uint32_t i = 0; i < t->nkids; i++) {
    uint32_t ref = r->refs[t->kid0 + i];
    k[i] = ft_egraph_find(eg, ref & FT_EREF_NODE ? res[ref & ~FT_EREF_NODE] : subst[ref]);
  }
}

/* Applies a batch level by level: all matches add RHS node j before any
 * adds node j+1, so each level's hashcons slots can be prefetched first
 * (the misses that dominate apply). Order does not change the result: the
 * congruence closure after the rebuild is the same. */
static void flush_batched(applier *A) {
  ft_egraph *eg = A->eg;
  const ft_erule *r = A->r;
  size_t w = r->nslots;
  uint32_t res[BATCH][BATCH_MAXTN];
  bool ok[BATCH];
  for (size_t b0 = 0; b0 < A->n && !A->error; b0 += BATCH) {
    size_t nb = A->n - b0 < BATCH ? A->n - b0 : BATCH;
    const uint32_t *sub0 = A->buf + b0 * w;
    for (size_t m = 0; m < nb; m++) {
      ok[m] = true;
      const uint32_t *subst = sub0 + m * w;
      for (uint32_t g = 0; g < r->nguards && ok[m]; g++) {
        const ft_eguard *G = &r->guards[g];
        uint32_t args[32];
        for (uint32_t a = 0; a < G->nargs; a++) {
          uint32_t s = r->argv[G->args + a];
          args[a] = r->slot_param[s] ? subst[s] : ft_egraph_find(eg, subst[s]);
        }
        const ft_eregistered *f = &eg->guards[G->fn];
        ok[m] = ((ft_egraph_guard_fn)f->fn)(f->ud, eg, args, G->nargs);
      }
    }
    for (uint32_t j = 0; j < r->nrhs_tn && !A->error; j++) {
      const ft_etnode *t = &r->tn[j];
      uint32_t k[BATCH_MAXK];
      for (size_t m = 0; m < nb; m++) { /* touch the union-find entries */
        if (!ok[m]) continue;
        for (uint32_t i = 0; i < t->nkids; i++) {
          uint32_t ref = r->refs[t->kid0 + i];
          __builtin_prefetch(&eg->uf[ref & FT_EREF_NODE ? res[m][ref & ~FT_EREF_NODE] : sub0[m * w + ref]]);
        }
      }
      for (size_t m = 0; m < nb; m++) { /* touch the hashcons slots */
        if (!ok[m] || t->pmode) continue;
        batch_kids(eg, r, t, sub0 + m * w, res[m], k);
        ft_egraph_prefetch_node(eg, t->op, r->pool + t->poff, t->pbytes, k, t->nkids);
      }
      for (size_t m = 0; m < nb && !A->error; m++) {
        if (!ok[m]) continue;
        const uint32_t *subst = sub0 + m * w;
        batch_kids(eg, r, t, subst, res[m], k);
        const void *params = r->pool + t->poff;
        size_t pbytes = t->pbytes;
        uint8_t pbuf[FT_EGRAPH_MAX_PARAMS];
        if (t->pmode == 1) { /* copy: the add may move eg->par */
          pbytes = eg->nodes[subst[t->pvar]].pbytes;
          memcpy(pbuf, ft_enode_params(eg, subst[t->pvar]), pbytes);
          params = pbuf;
        }
        res[m][j] = ft_egraph_add(eg, t->op, params, pbytes, k, t->nkids);
        if (res[m][j] == FT_EGRAPH_NONE) A->error = true;
      }
    }
    for (size_t m = 0; m < nb && !A->error; m++) {
      if (!ok[m]) continue;
      const uint32_t *subst = sub0 + m * w;
      for (uint32_t i = 0; i < r->nitems; i++) {
        const ft_eitem *it = &r->items[i];
        uint32_t rhs = it->root & FT_EREF_NODE ? res[m][it->root & ~FT_EREF_NODE] : subst[it->root];
        int u = ft_egraph_union_just(eg, subst[it->target], rhs, A->ridx);
        if (u < 0) {
          A->error = true;
          break;
        }
        A->applied += (size_t)u;
      }
    }
  }
}

static void flush(applier *A) {
  double t0 = now_s();
  if (batchable(A->eg, A->r)) flush_batched(A);
  else flush_serial(A);
  A->n = 0;
  A->apply_s += now_s() - t0;
}

/* Buffers a match; applies the buffer in chunks to bound memory. */
static bool on_match(void *ud, const uint32_t *subst, size_t n) {
  applier *A = ud;
  if (A->limit && A->found >= A->limit) return false; /* backoff: limit + 1 is enough */
  A->found++;
  if ((A->n + 1) * n > A->cap) { /* cap counts words: rules differ in width */
    size_t nc = A->cap ? A->cap * 2 : 1024;
    while (nc < (A->n + 1) * n) nc *= 2;
    uint32_t *nb = realloc(A->buf, nc * 4);
    if (!nb) {
      ft_egraph_fail(A->eg, FT_EGRAPH_ENOMEM, "out of memory buffering matches");
      A->error = true;
      return false;
    }
    A->buf = nb;
    A->cap = nc;
  }
  memcpy(A->buf + A->n * n, subst, n * 4);
  A->n++;
  if (A->chunk && A->n >= A->chunk) flush(A);
  return !A->error;
}

/* ---------------------------------------------------------------- backoff */

typedef struct {
  size_t times_banned, banned_until;
} rule_stat;

/* egg's BackoffScheduler.can_stop: if rules are banned, fast-forward the
 * bans to the earliest expiry and keep going. */
static bool backoff_can_stop(rule_stat *st, size_t n, size_t iter) {
  size_t min_ban = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (st[i].banned_until > iter && st[i].banned_until < min_ban) min_ban = st[i].banned_until;
  if (min_ban == SIZE_MAX) return true;
  size_t delta = min_ban - iter;
  for (size_t i = 0; i < n; i++)
    if (st[i].banned_until > iter) st[i].banned_until -= delta;
  return false;
}

/* ---------------------------------------------------------------- runner */

static ft_egraph_stop check_limits(ft_egraph *eg, const ft_egraph_run_opts *o, double t_start) {
  if (eg->status == FT_EGRAPH_ECONFLICT || eg->status == FT_EGRAPH_ENOMEM) return FT_STOP_ERROR;
  if (o->node_limit && ft_egraph_num_nodes(eg) > o->node_limit) return FT_STOP_NODE_LIMIT;
  if (o->time_limit > 0 && now_s() - t_start > o->time_limit) return FT_STOP_TIME_LIMIT;
  if (o->memory_limit && ft_egraph_memory(eg) > o->memory_limit) return FT_STOP_MEMORY_LIMIT;
  return FT_STOP_NONE;
}

void ft_egraph_report_free(ft_egraph_report *rep) {
  if (!rep) return;
  for (size_t i = 0; i < rep->niters; i++) free(rep->iters[i].matches);
  free(rep->iters);
  memset(rep, 0, sizeof *rep);
}

/* Searches and applies one rule; fills the iteration's per-rule counts. */
static void run_rule(ft_egraph *eg, const ft_egraph_rules *rs, size_t ri, const ft_egraph_run_opts *o,
                     rule_stat *st, size_t iter, ft_egraph_iter_stats *is, applier *A) {
  const ft_erule *r = &rs->r[ri];
  bool backoff = o->scheduler == FT_SCHED_BACKOFF;
  if (backoff && iter < st[ri].banned_until) return;
  size_t threshold = 0;
  if (backoff) {
    threshold = o->match_limit << (st[ri].times_banned < 40 ? st[ri].times_banned : 40);
    if (!threshold) threshold = SIZE_MAX - 1;
  }
  A->r = r;
  A->ridx = (uint32_t)ri;
  A->n = A->found = A->applied = 0;
  A->apply_s = 0;
  A->chunk = backoff ? 0 : 65536;
  A->limit = backoff ? threshold + 1 : 0;
  eg->cur_rule = (int)ri;
  eg->cur_rule_name = r->name;
  double t0 = now_s();
  ft_egraph_ematch(eg, r, on_match, A);
  if (backoff && A->found > threshold) { /* too many: ban and skip them */
    is->matches[ri] = A->found;
    st[ri].banned_until = iter + (o->ban_length << (st[ri].times_banned < 40 ? st[ri].times_banned : 40));
    st[ri].times_banned++;
    A->n = 0;
  } else {
    flush(A);
    is->matches[ri] = A->found;
  }
  double total = now_s() - t0;
  is->applied[ri] = A->applied;
  is->total_matches += A->found;
  is->total_applied += A->applied;
  is->apply_s += A->apply_s;
  is->search_s += total - A->apply_s;
  eg->cur_rule_name = NULL;
  eg->cur_rule = -1;
}

ft_egraph_status ft_egraph_run(ft_egraph *eg, const ft_egraph_rules *rs,
                               const ft_egraph_run_opts *opts, ft_egraph_report *rep) {
  ft_egraph_run_opts o = opts ? *opts : ft_egraph_run_defaults();
  memset(rep, 0, sizeof *rep);
  rep->nrules = rs->n;
  rule_stat *st = calloc(rs->n + 1, sizeof *st);
  applier A = {.eg = eg};
  if (!st) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  double t_start = now_s();
  ft_egraph_status status = FT_EGRAPH_OK;
  if (ft_egraph_rebuild(eg) != FT_EGRAPH_OK) rep->stop = FT_STOP_ERROR;
  size_t cap = 0;
  for (size_t iter = 0; !rep->stop; iter++) {
    if (iter >= o.iter_limit) {
      rep->stop = FT_STOP_ITER_LIMIT;
      break;
    }
    if ((rep->stop = check_limits(eg, &o, t_start))) break;
    if (rep->niters == cap) {
      cap = cap ? cap * 2 : 16;
      ft_egraph_iter_stats *ni = realloc(rep->iters, cap * sizeof *ni);
      if (!ni) {
        status = ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
        break;
      }
      rep->iters = ni;
    }
    ft_egraph_iter_stats *is = &rep->iters[rep->niters];
    memset(is, 0, sizeof *is);
    is->matches = calloc(2 * rs->n + 1, sizeof(size_t));
    if (!is->matches) {
      status = ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
      break;
    }
    is->applied = is->matches + rs->n;
    rep->niters++;
    double t_iter = now_s();
    size_t nodes0 = ft_egraph_num_nodes(eg), classes0 = ft_egraph_num_classes(eg);
    if (ft_egraph_index_build(eg) != FT_EGRAPH_OK) {
      rep->stop = FT_STOP_ERROR;
      break;
    }
    eg->ix.frozen = true;
    for (size_t ri = 0; ri < rs->n; ri++) {
      run_rule(eg, rs, ri, &o, st, iter, is, &A);
      if (A.error) {
        rep->stop = FT_STOP_ERROR;
        break;
      }
      if ((rep->stop = check_limits(eg, &o, t_start))) break;
    }
    eg->ix.frozen = false;
    double t_rb = now_s();
    size_t classes_before_rb = ft_egraph_num_classes(eg);
    if (ft_egraph_rebuild(eg) != FT_EGRAPH_OK) rep->stop = FT_STOP_ERROR;
    is->rebuild_unions = classes_before_rb - ft_egraph_num_classes(eg);
    is->rebuild_s = now_s() - t_rb;
    is->total_s = now_s() - t_iter;
    is->nodes = ft_egraph_num_nodes(eg);
    is->classes = ft_egraph_num_classes(eg);
    if (o.on_iter) o.on_iter(o.ud, eg, rs, iter, is);
    if (!rep->stop && is->total_applied == 0 && is->nodes == nodes0 && is->classes == classes0 &&
        (o.scheduler != FT_SCHED_BACKOFF || backoff_can_stop(st, rs->n, iter)))
      rep->stop = FT_STOP_SATURATED;
    if (!rep->stop) rep->stop = check_limits(eg, &o, t_start);
  }
  rep->total_s = now_s() - t_start;
  free(A.buf);
  free(st);
  return status;
}
