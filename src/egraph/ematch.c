/* src/egraph/ematch.c: e-matching. Patterns are compiled (in rules.c) to a
 * tiny VM: SCAN an operator's nodes, BIND the nodes of an operator inside a
 * class held in a register, CMP two registers (non-linear variables and
 * multi-pattern joins), YIELD a substitution. The VM reads a frozen index
 * (nodes grouped by operator, and by class sorted by operator) built after
 * a rebuild, so all rules of an iteration see the same e-graph even though
 * each rule's matches are applied before the next rule is searched. Also
 * here: instantiating a rule's right-hand side for a substitution. */
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

/* ---------------------------------------------------------------- index */

void ft_egraph_index_free(ft_egraph *eg) {
  ft_eindex *ix = &eg->ix;
  free(ix->cls_start);
  free(ix->cls_nodes);
  free(ix->op_start);
  free(ix->op_nodes);
  free(ix->op_cls);
  memset(ix, 0, sizeof *ix);
}

void ft_egraph_index_invalidate(ft_egraph *eg) { eg->ix.valid = false; }

/* Two counting sorts over the live nodes: by operator (ascending id), then
 * stably by class, so each class's nodes come out grouped by operator. */
ft_egraph_status ft_egraph_index_build(ft_egraph *eg) {
  ft_eindex *ix = &eg->ix;
  if (ix->valid) return FT_EGRAPH_OK;
  if (ix->frozen)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "the match index cannot be rebuilt while a run applies matches "
                                                "(hooks must not search or list class nodes)");
  uint32_t nids = eg->nids, nops = eg->nsym;
  size_t live = eg->n_live;
  if (!ft_egraph_reserve(eg, (void **)&ix->cls_start, &ix->cap_ids, (size_t)nids + 2, 4) ||
      !ft_egraph_reserve(eg, (void **)&ix->op_start, &ix->cap_ops, (size_t)nops + 2, 4))
    return eg->status;
  size_t cl = ix->cap_live, cl2 = ix->cap_live, cl3 = ix->cap_live;
  if (!ft_egraph_reserve(eg, (void **)&ix->cls_nodes, &cl, live + 1, 4) ||
      !ft_egraph_reserve(eg, (void **)&ix->op_nodes, &cl2, cl, 4) ||
      !ft_egraph_reserve(eg, (void **)&ix->op_cls, &cl3, cl, 4))
    return eg->status;
  ix->cap_live = cl;
  uint32_t *cs = ix->cls_start, *os = ix->op_start;
  memset(cs, 0, ((size_t)nids + 2) * 4);
  memset(os, 0, ((size_t)nops + 2) * 4);
  const ft_enode_rec *nodes = eg->nodes;
  for (uint32_t n = 0; n < nids; n++) {
    uint32_t op = nodes[n].op;
    if (op & FT_ENODE_DEAD) continue;
    cs[ft_egraph_find(eg, n) + 1]++;
    os[op + 1]++;
  }
  for (uint32_t i = 0; i < nids; i++) cs[i + 1] += cs[i];
  for (uint32_t i = 0; i < nops; i++) os[i + 1] += os[i];
  /* by operator: os[op] is the cursor, shifted back afterwards */
  for (uint32_t n = 0; n < nids; n++) {
    uint32_t op = nodes[n].op;
    if (op & FT_ENODE_DEAD) continue;
    uint32_t at = os[op]++;
    ix->op_nodes[at] = n;
    ix->op_cls[at] = ft_egraph_find(eg, n);
  }
  memmove(os + 1, os, (size_t)nops * 4);
  os[0] = 0;
  /* by class, visiting in operator order */
  for (size_t i = 0; i < live; i++) ix->cls_nodes[cs[ix->op_cls[i]]++] = ix->op_nodes[i];
  memmove(cs + 1, cs, (size_t)nids * 4);
  cs[0] = 0;
  ix->nids = nids;
  ix->nops = nops;
  ix->valid = true;
  return FT_EGRAPH_OK;
}

/* ---------------------------------------------------------------- the VM */

typedef struct {
  ft_egraph *eg;
  const ft_erule *r;
  uint32_t *regs;
  uint32_t *subst;
  ft_egraph_match_fn fn;
  void *ud;
  size_t count;
  bool stop;
} vm_ctx;

static inline bool params_ok(const ft_egraph *eg, const ft_erule *r, const ft_einsn *I,
                             const ft_enode_rec *rec) {
  if (I->pmode) return true;
  return rec->pbytes == I->pbytes &&
         (!I->pbytes || !memcmp(eg->par + rec->poff, r->pool + I->poff, I->pbytes));
}

/* Binds a matched node: its kids into registers out.., its id to pvar. */
static inline void bind_node(vm_ctx *x, const ft_einsn *I, uint32_t n, uint32_t base) {
  const ft_enode_rec *rec = &x->eg->nodes[n];
  const uint32_t *k = x->eg->kids + rec->koff;
  for (uint32_t j = 0; j < I->nkids; j++) x->regs[base + j] = k[j];
  if (I->pmode) x->regs[I->pvar] = n;
}

static void vm_run(vm_ctx *x, uint32_t pc) {
  const ft_einsn *I = &x->r->prog[pc];
  ft_egraph *eg = x->eg;
  const ft_eindex *ix = &eg->ix;
  switch (I->kind) {
  case FT_EI_SCAN: {
    if (I->op >= ix->nops) return;
    for (uint32_t i = ix->op_start[I->op], e = ix->op_start[I->op + 1]; i < e && !x->stop; i++) {
      uint32_t n = ix->op_nodes[i];
      const ft_enode_rec *rec = &eg->nodes[n];
      if (rec->nkids != I->nkids || !params_ok(eg, x->r, I, rec)) continue;
      x->regs[I->out] = ix->op_cls[i];
      bind_node(x, I, n, I->out + 1);
      vm_run(x, pc + 1);
    }
    return;
  }
  case FT_EI_BIND: {
    uint32_t c = x->regs[I->in];
    if (c >= ix->nids) return; /* a class born after the index froze */
    for (uint32_t i = ix->cls_start[c], e = ix->cls_start[c + 1]; i < e && !x->stop; i++) {
      uint32_t n = ix->cls_nodes[i];
      const ft_enode_rec *rec = &eg->nodes[n];
      uint32_t op = rec->op & ~FT_ENODE_DEAD;
      if (op < I->op) continue;
      if (op > I->op) break; /* sorted by operator */
      if (rec->nkids != I->nkids || !params_ok(eg, x->r, I, rec)) continue;
      bind_node(x, I, n, I->out);
      vm_run(x, pc + 1);
    }
    return;
  }
  case FT_EI_CMP:
    if (x->regs[I->in] == x->regs[I->out]) vm_run(x, pc + 1);
    return;
  case FT_EI_YIELD: {
    const ft_erule *r = x->r;
    for (uint32_t s = 0; s < r->nslots; s++) x->subst[s] = x->regs[r->slot_reg[s]];
    x->count++;
    if (!x->fn(x->ud, x->subst, r->nslots)) x->stop = true;
    return;
  }
  }
}

size_t ft_egraph_ematch(ft_egraph *eg, const ft_erule *r, ft_egraph_match_fn fn, void *ud) {
  uint32_t regs_small[64], subst_small[64];
  uint32_t *regs = r->nregs <= 64 ? regs_small : malloc(r->nregs * 4);
  uint32_t *subst = r->nslots <= 64 ? subst_small : malloc(r->nslots * 4);
  size_t count = 0;
  if (regs && subst) {
    vm_ctx x = {eg, r, regs, subst, fn, ud, 0, false};
    vm_run(&x, 0);
    count = x.count;
  } else ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  if (regs != regs_small) free(regs);
  if (subst != subst_small) free(subst);
  return count;
}

size_t ft_egraph_search(ft_egraph *eg, const ft_egraph_rules *rs, size_t rule,
                        ft_egraph_match_fn fn, void *ud) {
  if (rule >= rs->n || ft_egraph_index_build(eg) != FT_EGRAPH_OK) return 0;
  return ft_egraph_ematch(eg, &rs->r[rule], fn, ud);
}

size_t ft_egraph_rule_nvars(const ft_egraph_rules *rs, size_t rule) {
  return rule < rs->n ? rs->r[rule].nvars : 0;
}
const char *ft_egraph_rule_var(const ft_egraph_rules *rs, size_t rule, size_t v) {
  return rule < rs->n && v < rs->r[rule].nvars ? rs->r[rule].var_names[v] : NULL;
}

/* ---------------------------------------------------------------- apply */

/* The value a subst slot gives a term: classes canonical, or (proof terms)
 * the id itself, which is a term of that class. */
static inline uint32_t slot_val(ft_egraph *eg, const ft_erule *r, const uint32_t *subst,
                                uint32_t slot, bool terms) {
  uint32_t v = subst[slot];
  return terms || r->slot_param[slot] ? v : ft_egraph_find(eg, v);
}

static uint32_t inst_node(ft_egraph *eg, const ft_erule *r, uint32_t j, const uint32_t *subst,
                          bool terms);

static uint32_t inst_ref(ft_egraph *eg, const ft_erule *r, uint32_t ref, const uint32_t *subst,
                         bool terms) {
  if (ref & FT_EREF_NODE) return inst_node(eg, r, ref & ~FT_EREF_NODE, subst, terms);
  return slot_val(eg, r, subst, ref, terms);
}

/* Builds one RHS node bottom-up and adds it; NONE when a param fn declines. */
static uint32_t inst_node(ft_egraph *eg, const ft_erule *r, uint32_t j, const uint32_t *subst,
                          bool terms) {
  const ft_etnode *t = &r->tn[j];
  uint32_t small[16], *kids = t->nkids <= 16 ? small : malloc(t->nkids * 4u);
  if (!kids) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), FT_EGRAPH_NONE;
  uint32_t out = FT_EGRAPH_NONE;
  for (uint32_t i = 0; i < t->nkids; i++)
    if ((kids[i] = inst_ref(eg, r, r->refs[t->kid0 + i], subst, terms)) == FT_EGRAPH_NONE) goto done;
  const void *params = r->pool + t->poff;
  size_t pbytes = t->pbytes;
  uint8_t pbuf[FT_EGRAPH_MAX_PARAMS];
  if (t->pmode == 1) {
    uint32_t n = subst[t->pvar];
    params = ft_enode_params(eg, n);
    pbytes = eg->nodes[n].pbytes;
    memcpy(pbuf, params, pbytes); /* the add below may move eg->par */
    params = pbuf;
  } else if (t->pmode == 2) {
    uint32_t args[32];
    for (uint32_t a = 0; a < t->npargs && a < 32; a++) {
      uint32_t s = r->argv[t->pargs + a];
      args[a] = slot_val(eg, r, subst, s, false);
    }
    const ft_eregistered *f = &eg->pfns[t->pfn];
    size_t len = sizeof pbuf;
    if (!((ft_egraph_param_fn)f->fn)(f->ud, eg, args, t->npargs, pbuf, &len)) goto done;
    params = pbuf;
    pbytes = len;
  }
  out = terms ? ft_egraph_add_termnode(eg, t->op, params, pbytes, kids, t->nkids)
              : ft_egraph_add(eg, t->op, params, pbytes, kids, t->nkids);
done:
  if (kids != small) free(kids);
  return out;
}

uint32_t ft_egraph_instantiate(ft_egraph *eg, const ft_erule *r, uint32_t root_ref,
                               const uint32_t *subst, bool terms) {
  return inst_ref(eg, r, root_ref, subst, terms);
}
