/* src/egraph/egraph.c: the e-graph core. E-nodes live in flat arrays (no
 * per-node malloc), a node id is also the id of the class it created, the
 * union-find compresses paths, an open-addressing hashcons maps canonical
 * content to its node, and each class threads its parent uses through a
 * circular list over child slots. Unions queue the parents of the merged
 * class; one rebuild re-canonicalizes them and merges congruent classes
 * (egg's deferred rebuilding). Analyses and proof-forest edges hook in here. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

#define EMPTY_SLOT UINT64_MAX

/* ---------------------------------------------------------------- errors */

/* Records an error on the e-graph; returns st so callers can `return fail(...)`. */
ft_egraph_status ft_egraph_fail(ft_egraph *eg, ft_egraph_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(eg->msg, sizeof eg->msg, fmt, ap);
  va_end(ap);
  eg->status = st;
  return st;
}

const char *ft_egraph_error(const ft_egraph *eg) { return eg->msg; }
ft_egraph_status ft_egraph_status_of(const ft_egraph *eg) { return eg->status; }
void ft_egraph_clear_error(ft_egraph *eg) {
  eg->status = FT_EGRAPH_OK;
  eg->msg[0] = 0;
}

/* ---------------------------------------------------------------- memory */

/* Grows *p to hold `need` elements (doubling), counting bytes in eg->mem so
 * the runner's memory limit sees every array. */
bool ft_egraph_reserve(ft_egraph *eg, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) nc = nc + nc / 2 + 16;
  void *np = realloc(*p, nc * elem);
  if (!np) {
    ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory growing an e-graph array to %zu bytes",
                   nc * elem);
    return false;
  }
  eg->mem += (nc - *cap) * elem;
  *p = np;
  *cap = nc;
  return true;
}

bool ft_u32vec_push(ft_egraph *eg, ft_u32vec *v, uint32_t x) {
  if (v->n == v->cap && !ft_egraph_reserve(eg, (void **)&v->v, &v->cap, v->n + 1, 4)) return false;
  v->v[v->n++] = x;
  return true;
}

/* Reallocates one array from oc to nc elements, counting the bytes. */
static bool resize(ft_egraph *eg, void **p, size_t oc, size_t nc, size_t elem) {
  void *np = realloc(*p, nc * elem);
  if (!np) {
    ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory growing an e-graph array to %zu bytes",
                   nc * elem);
    return false;
  }
  *p = np;
  eg->mem += (nc - oc) * elem;
  return true;
}

/* Grows every per-id array together so one capacity describes them all. */
static bool reserve_ids(ft_egraph *eg, size_t need) {
  if (need <= eg->id_cap) return true;
  size_t oc = eg->id_cap, nc = oc ? oc : 64;
  while (nc < need) nc *= 2;
  if (!resize(eg, (void **)&eg->nodes, oc, nc, sizeof(ft_enode_rec)) ||
      !resize(eg, (void **)&eg->uf, oc, nc, 4) || !resize(eg, (void **)&eg->c_use, oc, nc, 4) ||
      !resize(eg, (void **)&eg->c_nuses, oc, nc, 4) ||
      !resize(eg, (void **)&eg->c_const, oc, nc, 4))
    return false;
  if (eg->has_an && !resize(eg, (void **)&eg->adata, oc, nc, eg->an.data_size)) return false;
  if (eg->explain &&
      (!resize(eg, (void **)&eg->ex_koff, oc, nc, 4) || !resize(eg, (void **)&eg->ex_parent, oc, nc, 4) ||
       !resize(eg, (void **)&eg->ex_just, oc, nc, 4)))
    return false;
  eg->id_cap = (uint32_t)nc;
  return true;
}

/* ---------------------------------------------------------------- new/free */

ft_egraph *ft_egraph_new(void) {
  ft_egraph *eg = calloc(1, sizeof *eg);
  if (!eg) return NULL;
  eg->cur_rule = -1;
  /* The child and param arrays are never NULL, so 'kids + koff' and
   * 'par + poff' are defined even before the first node with kids or
   * params (C forbids arithmetic on a null pointer, even + 0). Constants
   * are operators 0 and 1 so every client agrees on them. */
  if (!ft_egraph_reserve(eg, (void **)&eg->kids, &eg->kid_cap, 1, 4) ||
      !ft_egraph_reserve(eg, (void **)&eg->par, &eg->par_cap, 1, 1) ||
      ft_egraph_intern(eg, "int") != FT_EGRAPH_OP_INT ||
      ft_egraph_intern(eg, "float") != FT_EGRAPH_OP_FLOAT) {
    ft_egraph_free(eg);
    return NULL;
  }
  return eg;
}

static void memo_free(ft_emem *m) {
  free(m->slots);
  m->slots = NULL;
  m->mask = m->count = 0;
}

void ft_egraph_free(ft_egraph *eg) {
  if (!eg) return;
  for (uint32_t i = 0; i < eg->nsym; i++) free(eg->sym[i]);
  free(eg->sym);
  free(eg->sym_tab);
  free(eg->nodes);
  free(eg->uf);
  free(eg->c_use);
  free(eg->c_nuses);
  free(eg->c_const);
  free(eg->adata);
  free(eg->kids);
  free(eg->use_next);
  free(eg->use_node);
  free(eg->par);
  memo_free(&eg->memo);
  free(eg->pending.v);
  free(eg->apending.v);
  free(eg->mpending.v);
  free(eg->scratch.v);
  free(eg->ex_koff);
  free(eg->ex_kids);
  free(eg->ex_parent);
  free(eg->ex_just);
  memo_free(&eg->ex_memo);
  ft_egraph_index_free(eg);
  for (uint32_t i = 0; i < eg->nguards; i++) free(eg->guards[i].name);
  for (uint32_t i = 0; i < eg->npfns; i++) free(eg->pfns[i].name);
  free(eg->guards);
  free(eg->pfns);
  free(eg);
}

ft_egraph_status ft_egraph_set_analysis(ft_egraph *eg, const ft_egraph_analysis *an) {
  if (eg->nids) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "set the analysis before adding nodes");
  if (!an || !an->make || !an->merge || !an->data_size)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "an analysis needs data_size, make and merge");
  eg->an = *an;
  eg->has_an = true;
  return FT_EGRAPH_OK;
}

ft_egraph_status ft_egraph_enable_explanations(ft_egraph *eg) {
  if (eg->nids)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "enable explanations before adding nodes");
  if (!ft_egraph_reserve(eg, (void **)&eg->ex_kids, &eg->ex_kid_cap, 1, 4)) return eg->status;
  eg->explain = true;
  return FT_EGRAPH_OK;
}

/* ---------------------------------------------------------------- symbols */

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

uint32_t ft_egraph_lookup_op(const ft_egraph *eg, const char *name) {
  if (!eg->sym_tab) return FT_EGRAPH_NONE;
  for (uint32_t i = str_hash(name) & eg->sym_mask;; i = (i + 1) & eg->sym_mask) {
    uint32_t s = eg->sym_tab[i];
    if (s == FT_EGRAPH_NONE) return FT_EGRAPH_NONE;
    if (!strcmp(eg->sym[s], name)) return s;
  }
}

uint32_t ft_egraph_intern(ft_egraph *eg, const char *name) {
  uint32_t s = ft_egraph_lookup_op(eg, name);
  if (s != FT_EGRAPH_NONE) return s;
  if ((eg->nsym + 1) * 2 > eg->sym_mask + 1 || !eg->sym_tab) { /* rehash at half load */
    uint32_t nm = eg->sym_tab ? (eg->sym_mask + 1) * 2 : 64;
    uint32_t *t = malloc(nm * sizeof *t);
    if (!t) return FT_EGRAPH_NONE;
    memset(t, 0xFF, nm * sizeof *t);
    for (uint32_t k = 0; k < eg->nsym; k++) {
      uint32_t i = str_hash(eg->sym[k]) & (nm - 1);
      while (t[i] != FT_EGRAPH_NONE) i = (i + 1) & (nm - 1);
      t[i] = k;
    }
    free(eg->sym_tab);
    eg->sym_tab = t;
    eg->sym_mask = nm - 1;
  }
  if (eg->nsym == eg->sym_cap) {
    uint32_t nc = eg->sym_cap ? eg->sym_cap * 2 : 32;
    char **ns = realloc(eg->sym, nc * sizeof *ns);
    if (!ns) return FT_EGRAPH_NONE;
    eg->sym = ns;
    eg->sym_cap = nc;
  }
  char *copy = strdup(name);
  if (!copy) return FT_EGRAPH_NONE;
  s = eg->nsym++;
  eg->sym[s] = copy;
  uint32_t i = str_hash(name) & eg->sym_mask;
  while (eg->sym_tab[i] != FT_EGRAPH_NONE) i = (i + 1) & eg->sym_mask;
  eg->sym_tab[i] = s;
  return s;
}

const char *ft_egraph_op_name(const ft_egraph *eg, uint32_t op) {
  op &= ~FT_ENODE_DEAD;
  return op < eg->nsym ? eg->sym[op] : "?";
}
uint32_t ft_egraph_num_ops(const ft_egraph *eg) { return eg->nsym; }

/* ---------------------------------------------------------------- hashing */

/* Hash of a node's content; the low bits index the table, all 32 are kept
 * in the slot to skip most content comparisons. */
static inline uint32_t node_hash(uint32_t op, const void *params, size_t pbytes,
                                 const uint32_t *kids, size_t nkids) {
  uint64_t h = (uint64_t)op * 0x9E3779B97F4A7C15ull ^ (nkids << 16) ^ pbytes;
  for (size_t i = 0; i < nkids; i++) h = (h ^ kids[i]) * 0xff51afd7ed558ccdull;
  const uint8_t *p = params;
  for (size_t i = 0; i < pbytes; i += 8) {
    uint64_t w = 0;
    memcpy(&w, p + i, pbytes - i < 8 ? pbytes - i : 8);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  }
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return (uint32_t)h;
}

void ft_egraph_prefetch_node(const ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                             const uint32_t *kids, size_t nkids) {
  if (eg->memo.slots)
    __builtin_prefetch(&eg->memo.slots[node_hash(op, params, pbytes, kids, nkids) & eg->memo.mask]);
}

static inline bool node_eq(const ft_egraph *eg, uint32_t id, uint32_t op, const void *params,
                           size_t pbytes, const uint32_t *kids, size_t nkids, bool term) {
  const ft_enode_rec *r = &eg->nodes[id];
  if ((r->op & ~FT_ENODE_DEAD) != op || r->nkids != nkids || r->pbytes != pbytes) return false;
  const uint32_t *k = term ? eg->ex_kids + eg->ex_koff[id] : eg->kids + r->koff;
  for (size_t i = 0; i < nkids; i++)
    if (k[i] != kids[i]) return false;
  return !pbytes || !memcmp(eg->par + r->poff, params, pbytes);
}

static uint32_t memo_find(const ft_egraph *eg, const ft_emem *m, uint32_t h, uint32_t op,
                          const void *params, size_t pbytes, const uint32_t *kids, size_t nkids,
                          bool term) {
  if (!m->slots) return FT_EGRAPH_NONE;
  for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
    uint64_t s = m->slots[i];
    if (s == EMPTY_SLOT) return FT_EGRAPH_NONE;
    if ((uint32_t)(s >> 32) == h && node_eq(eg, (uint32_t)s, op, params, pbytes, kids, nkids, term))
      return (uint32_t)s;
  }
}

static void memo_put(ft_emem *m, uint64_t s) {
  size_t i = (s >> 32) & m->mask;
  while (m->slots[i] != EMPTY_SLOT) i = (i + 1) & m->mask;
  m->slots[i] = s;
}

/* Inserts a node known to be absent; grows at 60% load (linear probing). */
static bool memo_insert(ft_egraph *eg, ft_emem *m, uint32_t h, uint32_t id) {
  if (!m->slots || (m->count + 1) * 5 > (m->mask + 1) * 3) {
    size_t ncap = m->slots ? (m->mask + 1) * 2 : 1024;
    uint64_t *ns = malloc(ncap * sizeof *ns);
    if (!ns) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory growing the hashcons"), false;
    memset(ns, 0xFF, ncap * sizeof *ns);
    ft_emem old = *m;
    m->slots = ns;
    m->mask = ncap - 1;
    if (old.slots) {
      for (size_t i = 0; i <= old.mask; i++)
        if (old.slots[i] != EMPTY_SLOT) memo_put(m, old.slots[i]);
      eg->mem -= (old.mask + 1) * sizeof *ns;
      free(old.slots);
    }
    eg->mem += ncap * sizeof *ns;
  }
  memo_put(m, (uint64_t)h << 32 | id);
  m->count++;
  return true;
}

/* Removes node id (hashed h) with backward-shift deletion, so lookups never
 * meet tombstones. */
static void memo_remove(ft_emem *m, uint32_t h, uint32_t id) {
  size_t i = h & m->mask;
  while ((uint32_t)m->slots[i] != id) i = (i + 1) & m->mask;
  for (size_t j = i;;) {
    j = (j + 1) & m->mask;
    uint64_t s = m->slots[j];
    if (s == EMPTY_SLOT) break;
    size_t home = (s >> 32) & m->mask;
    if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
      m->slots[i] = s;
      i = j;
    }
  }
  m->slots[i] = EMPTY_SLOT;
  m->count--;
}

/* ---------------------------------------------------------------- find */

ft_eclass ft_egraph_find(ft_egraph *eg, ft_eclass c) {
  uint32_t *uf = eg->uf;
  while (uf[c] != c) { /* path halving */
    uf[c] = uf[uf[c]];
    c = uf[c];
  }
  return c;
}

/* ---------------------------------------------------------------- adding */

/* Links child slot s (of node id) into class c's circular use list. */
static inline void use_link(ft_egraph *eg, uint32_t c, uint32_t s, uint32_t id) {
  eg->use_node[s] = id;
  uint32_t h = eg->c_use[c];
  if (h == FT_EGRAPH_NONE) {
    eg->use_next[s] = s;
    eg->c_use[c] = s;
  } else {
    eg->use_next[s] = eg->use_next[h];
    eg->use_next[h] = s;
  }
  eg->c_nuses[c]++;
}

/* Creates node storage. Live nodes are registered as parents of their
 * (canonical) kids; dead ones are proof-only terms. tkids: term-level kids
 * (explanations) or NULL. Returns the id or NONE. */
static uint32_t new_node(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                         const uint32_t *kids, size_t nkids, bool live, const uint32_t *tkids) {
  uint32_t id = eg->nids;
  if (id >= FT_EGRAPH_NONE - 1 || !reserve_ids(eg, (size_t)id + 1) ||
      !ft_egraph_reserve(eg, (void **)&eg->kids, &eg->kid_cap, eg->nkid + nkids, 4))
    return FT_EGRAPH_NONE;
  if (eg->use_cap < eg->kid_cap) { /* use_next/use_node shadow kids slot for slot */
    size_t kc = eg->kid_cap;
    uint32_t *a = realloc(eg->use_next, kc * 4);
    if (a) eg->use_next = a;
    uint32_t *b = a ? realloc(eg->use_node, kc * 4) : NULL;
    if (b) eg->use_node = b;
    if (!a || !b) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), FT_EGRAPH_NONE;
    eg->mem += (kc - eg->use_cap) * 8;
    eg->use_cap = kc;
  }
  if (pbytes && !ft_egraph_reserve(eg, (void **)&eg->par, &eg->par_cap, eg->npar + pbytes, 1))
    return FT_EGRAPH_NONE;
  if (tkids && !ft_egraph_reserve(eg, (void **)&eg->ex_kids, &eg->ex_kid_cap, eg->ex_nkid + nkids, 4))
    return FT_EGRAPH_NONE;
  ft_enode_rec *r = &eg->nodes[id];
  r->op = op | (live ? 0 : FT_ENODE_DEAD);
  r->koff = (uint32_t)eg->nkid;
  r->poff = (uint32_t)eg->npar;
  r->nkids = (uint16_t)nkids;
  r->pbytes = (uint16_t)pbytes;
  if (pbytes) memcpy(eg->par + eg->npar, params, pbytes);
  eg->npar += pbytes;
  eg->uf[id] = id;
  eg->c_use[id] = FT_EGRAPH_NONE;
  eg->c_nuses[id] = 0;
  eg->c_const[id] = live && nkids == 0 && (op == FT_EGRAPH_OP_INT || op == FT_EGRAPH_OP_FLOAT)
                        ? id : FT_EGRAPH_NONE;
  for (size_t i = 0; i < nkids; i++) {
    uint32_t s = (uint32_t)eg->nkid + (uint32_t)i;
    eg->kids[s] = kids[i];
    if (live) use_link(eg, kids[i], s, id);
    else eg->use_next[s] = eg->use_node[s] = FT_EGRAPH_NONE;
  }
  eg->nkid += nkids;
  if (eg->explain) {
    eg->ex_parent[id] = id;
    eg->ex_just[id] = FT_EJUST_USER;
    eg->ex_koff[id] = (uint32_t)eg->ex_nkid;
    if (tkids && nkids) memcpy(eg->ex_kids + eg->ex_nkid, tkids, nkids * 4);
    eg->ex_nkid += nkids;
  }
  eg->nids = id + 1;
  eg->n_classes++;
  return id;
}

/* Runs the analysis' make for a new node and then its modify hook. */
static void analyse_new(ft_egraph *eg, uint32_t id, bool modify) {
  if (!eg->has_an) return;
  eg->an.make(eg->an.ud, eg, id, eg->adata + (size_t)id * eg->an.data_size);
  if (modify && eg->an.modify) eg->an.modify(eg->an.ud, eg, id);
}

/* Copies kids into scratch (callers may pass pointers into our arrays) and
 * canonicalizes them. */
static uint32_t *canon_kids(ft_egraph *eg, const uint32_t *kids, size_t nkids) {
  if (!ft_egraph_reserve(eg, (void **)&eg->scratch.v, &eg->scratch.cap, nkids + 1, 4)) return NULL;
  for (size_t i = 0; i < nkids; i++) {
    if (kids[i] >= eg->nids) {
      ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "child id %" PRIu32 " does not exist", kids[i]);
      return NULL;
    }
    eg->scratch.v[i] = ft_egraph_find(eg, kids[i]);
  }
  return eg->scratch.v;
}

static bool node_args_ok(ft_egraph *eg, uint32_t op, size_t pbytes, size_t nkids) {
  if (op >= eg->nsym) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "unknown operator id %u", op), false;
  if (nkids > 0xFFFF || pbytes > FT_EGRAPH_MAX_PARAMS)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "node too large (%zu kids, %zu param bytes)", nkids,
                          pbytes), false;
  return true;
}

ft_eclass ft_egraph_lookup(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                           const ft_eclass *kids, size_t nkids) {
  if (!node_args_ok(eg, op, pbytes, nkids)) return FT_EGRAPH_NONE;
  uint32_t *k = canon_kids(eg, kids, nkids);
  if (!k) return FT_EGRAPH_NONE;
  uint32_t q = memo_find(eg, &eg->memo, node_hash(op, params, pbytes, k, nkids), op, params, pbytes,
                         k, nkids, false);
  return q == FT_EGRAPH_NONE ? q : ft_egraph_find(eg, q);
}

/* The hash-consing add on canonical content (the fast path of rule apply). */
static ft_eclass add_canonical(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                               const uint32_t *k, size_t nkids) {
  uint32_t h = node_hash(op, params, pbytes, k, nkids);
  uint32_t q = memo_find(eg, &eg->memo, h, op, params, pbytes, k, nkids, false);
  if (q != FT_EGRAPH_NONE) return ft_egraph_find(eg, q);
  uint32_t id = new_node(eg, op, params, pbytes, k, nkids, true, NULL);
  if (id == FT_EGRAPH_NONE || !memo_insert(eg, &eg->memo, h, id)) return FT_EGRAPH_NONE;
  eg->n_live++;
  eg->ix.valid = false;
  analyse_new(eg, id, true);
  return id;
}

ft_eclass ft_egraph_add(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                        const ft_eclass *kids, size_t nkids) {
  if (!node_args_ok(eg, op, pbytes, nkids)) return FT_EGRAPH_NONE;
  if (eg->explain) {
    uint32_t t = ft_egraph_add_termnode(eg, op, params, pbytes, kids, nkids);
    return t == FT_EGRAPH_NONE ? t : ft_egraph_find(eg, t);
  }
  uint32_t *k = canon_kids(eg, kids, nkids);
  if (!k) return FT_EGRAPH_NONE;
  return add_canonical(eg, op, params, pbytes, k, nkids);
}

ft_enode ft_egraph_add_termnode(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                                const uint32_t *tkids, size_t nkids) {
  if (!node_args_ok(eg, op, pbytes, nkids)) return FT_EGRAPH_NONE;
  for (size_t i = 0; i < nkids; i++)
    if (tkids[i] >= eg->nids)
      return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "child id %u does not exist", tkids[i]),
             FT_EGRAPH_NONE;
  uint32_t th = node_hash(op, params, pbytes, tkids, nkids);
  uint32_t t = memo_find(eg, &eg->ex_memo, th, op, params, pbytes, tkids, nkids, true);
  if (t != FT_EGRAPH_NONE) return t;
  /* copy term kids: tkids may point into ex_kids, which new_node grows */
  uint32_t small[8] = {0}, *tk = nkids <= 8 ? small : malloc(nkids * 4);
  if (!tk) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), FT_EGRAPH_NONE;
  if (nkids) memcpy(tk, tkids, nkids * 4); /* tkids may be NULL for a leaf */
  uint32_t *k = canon_kids(eg, tk, nkids);
  uint32_t id = FT_EGRAPH_NONE;
  if (k) {
    uint32_t h = node_hash(op, params, pbytes, k, nkids);
    uint32_t q = memo_find(eg, &eg->memo, h, op, params, pbytes, k, nkids, false);
    id = new_node(eg, op, params, pbytes, k, nkids, q == FT_EGRAPH_NONE, tk);
    if (id != FT_EGRAPH_NONE && memo_insert(eg, &eg->ex_memo, th, id)) {
      eg->ix.valid = false;
      if (q == FT_EGRAPH_NONE) {
        if (!memo_insert(eg, &eg->memo, h, id)) id = FT_EGRAPH_NONE;
        else {
          eg->n_live++;
          analyse_new(eg, id, true);
        }
      } else { /* a new spelling of an existing node: congruent to it */
        analyse_new(eg, id, false);
        if (ft_egraph_union_just(eg, id, q, FT_EJUST_CONGRUENCE) < 0) id = FT_EGRAPH_NONE;
      }
    } else id = FT_EGRAPH_NONE;
  }
  if (tk != small) free(tk);
  return id;
}

ft_eclass ft_egraph_add_int(ft_egraph *eg, int64_t v) {
  return ft_egraph_add(eg, FT_EGRAPH_OP_INT, &v, sizeof v, NULL, 0);
}
ft_eclass ft_egraph_add_float(ft_egraph *eg, double v) {
  return ft_egraph_add(eg, FT_EGRAPH_OP_FLOAT, &v, sizeof v, NULL, 0);
}

/* ---------------------------------------------------------------- union */

/* Pushes the live parents of class c onto v, dropping dead uses from c's
 * list on the way (they never come back). */
static bool collect_parents(ft_egraph *eg, uint32_t c, ft_u32vec *v) {
  uint32_t head = eg->c_use[c];
  if (head == FT_EGRAPH_NONE) return true;
  uint32_t first = FT_EGRAPH_NONE, last = FT_EGRAPH_NONE, n = 0;
  uint32_t s = head;
  do {
    uint32_t next = eg->use_next[s];
    uint32_t p = eg->use_node[s];
    if (!(eg->nodes[p].op & FT_ENODE_DEAD)) {
      if (v && !ft_u32vec_push(eg, v, p)) return false;
      if (first == FT_EGRAPH_NONE) first = s;
      else eg->use_next[last] = s;
      last = s;
      n++;
    }
    s = next;
  } while (s != head);
  if (first != FT_EGRAPH_NONE) eg->use_next[last] = first;
  eg->c_use[c] = first;
  eg->c_nuses[c] = n;
  return true;
}

/* Splices class b's circular use list into a's (O(1)). */
static void splice_uses(ft_egraph *eg, uint32_t a, uint32_t b) {
  uint32_t ha = eg->c_use[a], hb = eg->c_use[b];
  if (hb == FT_EGRAPH_NONE) return;
  if (ha == FT_EGRAPH_NONE) eg->c_use[a] = hb;
  else {
    uint32_t t = eg->use_next[ha];
    eg->use_next[ha] = eg->use_next[hb];
    eg->use_next[hb] = t;
  }
  eg->c_nuses[a] += eg->c_nuses[b];
  eg->c_use[b] = FT_EGRAPH_NONE;
  eg->c_nuses[b] = 0;
}

void ft_egraph_format_op(const ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                         char *buf, size_t len) {
  op &= ~FT_ENODE_DEAD;
  if (op == FT_EGRAPH_OP_INT && pbytes == 8) {
    int64_t v;
    memcpy(&v, params, 8);
    snprintf(buf, len, "%" PRId64, v);
    return;
  }
  if (op == FT_EGRAPH_OP_FLOAT && pbytes == 8) {
    double v;
    memcpy(&v, params, 8);
    snprintf(buf, len, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", len - strlen(buf) - 1);
    return;
  }
  size_t n = (size_t)snprintf(buf, len, "%s", ft_egraph_op_name(eg, op));
  if (!pbytes || n >= len) return;
  /* opaque params: 8-byte words as integers */
  const uint8_t *p = params;
  n += (size_t)snprintf(buf + n, len - n, "[");
  for (size_t i = 0; i < pbytes && n < len; i += 8) {
    int64_t w = 0;
    memcpy(&w, p + i, pbytes - i < 8 ? pbytes - i : 8);
    n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, i ? "," : "", w);
  }
  if (n < len) snprintf(buf + n, len - n, "]");
}

static ft_egraph_status conflict(ft_egraph *eg, const char *what_a, const char *what_b) {
  if (eg->cur_rule_name)
    return ft_egraph_fail(eg, FT_EGRAPH_ECONFLICT,
                          "unsound rule '%s': it merges the constants %s and %s",
                          eg->cur_rule_name, what_a, what_b);
  return ft_egraph_fail(eg, FT_EGRAPH_ECONFLICT,
                        "congruence closure merges the constants %s and %s (unsound rules "
                        "applied earlier)", what_a, what_b);
}

/* Proof forest: makes a the root of its tree (reversing the path), then
 * hangs it under b with justification `just` (a's term rewrites to b's). */
static void ex_link(ft_egraph *eg, uint32_t a, uint32_t b, uint32_t just) {
  uint32_t prev = a, cur = eg->ex_parent[a], cj = eg->ex_just[a];
  while (cur != prev) {
    uint32_t next = eg->ex_parent[cur], nj = eg->ex_just[cur];
    eg->ex_parent[cur] = prev;
    uint32_t base = cj & FT_EJUST_MASK;
    eg->ex_just[cur] = base < FT_EJUST_USER ? cj ^ FT_EJUST_BACKWARD : cj;
    if (next == cur) break;
    prev = cur;
    cur = next;
    cj = nj;
  }
  eg->ex_parent[a] = b;
  eg->ex_just[a] = just;
}

int ft_egraph_union_just(ft_egraph *eg, ft_eclass a, ft_eclass b, uint32_t just) {
  uint32_t ra = ft_egraph_find(eg, a), rb = ft_egraph_find(eg, b);
  if (ra == rb) return 0;
  uint32_t ca = eg->c_const[ra], cb = eg->c_const[rb];
  if (ca != FT_EGRAPH_NONE && cb != FT_EGRAPH_NONE && ca != cb) {
    char sa[64], sb[64];
    ft_enode_view va = ft_egraph_node(eg, ca), vb = ft_egraph_node(eg, cb);
    ft_egraph_format_op(eg, va.op, va.params, va.pbytes, sa, sizeof sa);
    ft_egraph_format_op(eg, vb.op, vb.params, vb.pbytes, sb, sizeof sb);
    conflict(eg, sa, sb);
    return -1;
  }
  /* the root keeps the longer parent list: we walk the shorter one */
  uint32_t r = eg->c_nuses[ra] >= eg->c_nuses[rb] ? ra : rb, c = r == ra ? rb : ra;
  int flags = 0;
  if (eg->has_an) {
    size_t ds = eg->an.data_size;
    flags = eg->an.merge(eg->an.ud, eg->adata + (size_t)r * ds, eg->adata + (size_t)c * ds);
    if (flags & FT_EGRAPH_MERGE_CONFLICT) {
      char sa[128] = "?", sb[128] = "?";
      if (eg->an.describe) { /* in the caller's order: a's class, then b's */
        eg->an.describe(eg->an.ud, eg->adata + (size_t)ra * ds, sa, sizeof sa);
        eg->an.describe(eg->an.ud, eg->adata + (size_t)rb * ds, sb, sizeof sb);
      }
      conflict(eg, sa, sb);
      return -1;
    }
    if ((flags & FT_EGRAPH_MERGE_DST_CHANGED) && !collect_parents(eg, r, &eg->apending)) return -1;
    if ((flags & FT_EGRAPH_MERGE_SRC_CHANGED) && !collect_parents(eg, c, &eg->apending)) return -1;
  }
  if (eg->explain) ex_link(eg, a, b, just);
  eg->uf[c] = r;
  if (!collect_parents(eg, c, &eg->pending)) return -1;
  splice_uses(eg, r, c);
  if (eg->c_const[r] == FT_EGRAPH_NONE) eg->c_const[r] = eg->c_const[c];
  if (eg->has_an && eg->an.modify && !ft_u32vec_push(eg, &eg->mpending, r)) return -1;
  eg->n_classes--;
  eg->ix.valid = false;
  return 1;
}

int ft_egraph_union(ft_egraph *eg, ft_eclass a, ft_eclass b) {
  if (a >= eg->nids || b >= eg->nids)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "union of unknown ids"), -1;
  return ft_egraph_union_just(eg, a, b, FT_EJUST_USER);
}

/* ---------------------------------------------------------------- rebuild */

/* Re-canonicalizes parent node p; if its new content already exists, p is a
 * congruent duplicate: it dies and the two classes merge. */
static bool recanon(ft_egraph *eg, uint32_t p) {
  ft_enode_rec *r = &eg->nodes[p];
  uint32_t *k = eg->kids + r->koff;
  size_t nk = r->nkids;
  bool stale = false;
  for (size_t i = 0; i < nk; i++)
    if (eg->uf[k[i]] != k[i]) stale = true;
  if (!stale) return true;
  const void *params = eg->par + r->poff;
  uint32_t op = r->op;
  memo_remove(&eg->memo, node_hash(op, params, r->pbytes, k, nk), p);
  for (size_t i = 0; i < nk; i++) k[i] = ft_egraph_find(eg, k[i]);
  uint32_t h = node_hash(op, params, r->pbytes, k, nk);
  uint32_t q = memo_find(eg, &eg->memo, h, op, params, r->pbytes, k, nk, false);
  if (q == FT_EGRAPH_NONE) return memo_insert(eg, &eg->memo, h, p);
  r->op |= FT_ENODE_DEAD;
  eg->n_live--;
  return ft_egraph_union_just(eg, p, q, FT_EJUST_CONGRUENCE) >= 0;
}

/* Re-makes a parent's analysis data after a child's data changed. */
static bool reanalyse(ft_egraph *eg, uint32_t p, uint8_t *tmp) {
  size_t ds = eg->an.data_size;
  eg->an.make(eg->an.ud, eg, p, tmp);
  uint32_t c = ft_egraph_find(eg, p);
  int flags = eg->an.merge(eg->an.ud, eg->adata + (size_t)c * ds, tmp);
  if (flags & FT_EGRAPH_MERGE_CONFLICT) {
    char sa[128] = "?", sb[128] = "?";
    if (eg->an.describe) {
      eg->an.describe(eg->an.ud, eg->adata + (size_t)c * ds, sa, sizeof sa);
      eg->an.describe(eg->an.ud, tmp, sb, sizeof sb);
    }
    conflict(eg, sa, sb);
    return false;
  }
  if (flags & FT_EGRAPH_MERGE_DST_CHANGED) {
    if (!collect_parents(eg, c, &eg->apending)) return false;
    if (eg->an.modify && !ft_u32vec_push(eg, &eg->mpending, c)) return false;
  }
  return true;
}

ft_egraph_status ft_egraph_rebuild(ft_egraph *eg) {
  const char *saved = eg->cur_rule_name;
  eg->cur_rule_name = NULL; /* merges found here are congruence, not a rule */
  uint8_t tmpbuf[256], *tmp = tmpbuf;
  if (eg->has_an && eg->an.data_size > sizeof tmpbuf && !(tmp = malloc(eg->an.data_size)))
    return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  bool ok = true;
  while (ok) {
    while (ok && eg->pending.n) {
      uint32_t p = eg->pending.v[--eg->pending.n];
      if (!(eg->nodes[p].op & FT_ENODE_DEAD)) ok = recanon(eg, p);
    }
    while (ok && eg->apending.n) {
      uint32_t p = eg->apending.v[--eg->apending.n];
      if (!(eg->nodes[p].op & FT_ENODE_DEAD)) ok = reanalyse(eg, p, tmp);
    }
    if (ok && eg->mpending.n) {
      uint32_t c = ft_egraph_find(eg, eg->mpending.v[--eg->mpending.n]);
      eg->an.modify(eg->an.ud, eg, c);
      ok = eg->status != FT_EGRAPH_ECONFLICT && eg->status != FT_EGRAPH_ENOMEM;
      continue;
    }
    if (!eg->pending.n && !eg->apending.n) break;
  }
  if (tmp != tmpbuf) free(tmp);
  eg->cur_rule_name = saved;
  if (!ok) {
    eg->pending.n = eg->apending.n = eg->mpending.n = 0;
    return eg->status ? eg->status : FT_EGRAPH_ENOMEM;
  }
  return FT_EGRAPH_OK;
}

/* ---------------------------------------------------------------- access */

size_t ft_egraph_num_nodes(const ft_egraph *eg) { return eg->n_live; }
size_t ft_egraph_num_classes(const ft_egraph *eg) { return eg->n_classes; }
uint32_t ft_egraph_num_ids(const ft_egraph *eg) { return eg->nids; }
size_t ft_egraph_memory(const ft_egraph *eg) { return eg->mem; }

bool ft_egraph_node_live(const ft_egraph *eg, ft_enode n) {
  return n < eg->nids && !(eg->nodes[n].op & FT_ENODE_DEAD);
}

ft_enode_view ft_egraph_node(const ft_egraph *eg, ft_enode n) {
  const ft_enode_rec *r = &eg->nodes[n];
  ft_enode_view v = {r->op & ~FT_ENODE_DEAD, r->nkids, eg->kids + r->koff, eg->par + r->poff,
                     r->pbytes};
  return v;
}

void *ft_egraph_data(ft_egraph *eg, ft_eclass c) {
  if (!eg->has_an || c >= eg->nids) return NULL;
  return eg->adata + (size_t)ft_egraph_find(eg, c) * eg->an.data_size;
}

ft_enode ft_egraph_class_const(ft_egraph *eg, ft_eclass c) {
  return c < eg->nids ? eg->c_const[ft_egraph_find(eg, c)] : FT_EGRAPH_NONE;
}

void ft_egraph_class_nodes(ft_egraph *eg, ft_eclass c, void (*fn)(void *ud, ft_enode n),
                           void *ud) {
  if (c >= eg->nids || ft_egraph_index_build(eg) != FT_EGRAPH_OK) return;
  c = ft_egraph_find(eg, c);
  if (c >= eg->ix.nids) return;
  for (uint32_t i = eg->ix.cls_start[c]; i < eg->ix.cls_start[c + 1]; i++) fn(ud, eg->ix.cls_nodes[i]);
}
