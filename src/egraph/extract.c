/* src/egraph/extract.c: extraction of cheapest terms. Tree cost (a node's
 * cost plus its children's, computed to a fixpoint like egg's Extractor)
 * and DAG-aware cost (greedy DAG as in extraction-gym: each class keeps the
 * set of classes its choice needs, so shared subterms count once). The cost
 * of one node is a client callback; the result is a term DAG in
 * topological order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

static double unit_cost(void *ud, ft_egraph *eg, ft_enode n) {
  (void)ud;
  (void)eg;
  (void)n;
  return 1.0;
}

typedef struct {
  ft_egraph *eg;
  double *ncost;  /* per node id: its own cost (NAN for dead) */
  double *cost;   /* per class id: best cost (INFINITY if none yet) */
  uint32_t *best; /* per class id: chosen node */
} ext;

/* Tree costs to a fixpoint: every pass relaxes every live node. */
static void tree_costs(ext *X) {
  ft_egraph *eg = X->eg;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t n = 0; n < eg->nids; n++) {
      if (eg->nodes[n].op & FT_ENODE_DEAD) continue;
      const uint32_t *k = ft_enode_kids(eg, n);
      double c = X->ncost[n];
      for (uint32_t i = 0; i < eg->nodes[n].nkids && c < INFINITY; i++)
        c += X->cost[ft_egraph_find(eg, k[i])];
      uint32_t cls = ft_egraph_find(eg, n);
      if (c < X->cost[cls]) {
        X->cost[cls] = c;
        X->best[cls] = n;
        changed = true;
      }
    }
  }
}

/* ---------------------------------------------------------------- DAG */

typedef struct {
  uint32_t *cls; /* sorted class ids of the chosen sub-DAG, own class included */
  double *cst;
  uint32_t n;
  double total;
} cset;

/* Greedy DAG costs: a node's set is the union of its kids' sets plus its
 * own class; its cost is the sum over that set. Skips choices that would
 * need their own class (cycles). */
static bool dag_costs(ext *X, cset *sets) {
  ft_egraph *eg = X->eg;
  uint32_t *ubuf = NULL, *tmpc = NULL;
  double *ucst = NULL, *tmpd = NULL;
  size_t ucap = 0;
  bool ok = true;
  for (bool changed = true; changed && ok;) {
    changed = false;
    for (uint32_t n = 0; n < eg->nids && ok; n++) {
      if (eg->nodes[n].op & FT_ENODE_DEAD) continue;
      uint32_t cls = ft_egraph_find(eg, n), nk = eg->nodes[n].nkids;
      const uint32_t *k = ft_enode_kids(eg, n);
      size_t need = 1;
      bool ready = true;
      for (uint32_t i = 0; i < nk; i++) {
        cset *s = &sets[ft_egraph_find(eg, k[i])];
        if (!s->cls) ready = false;
        else need += s->n;
      }
      if (!ready) continue;
      if (need > ucap) {
        ucap = need * 2;
        free(ubuf), free(ucst), free(tmpc), free(tmpd);
        ubuf = malloc(ucap * 4), ucst = malloc(ucap * 8), tmpc = malloc(ucap * 4), tmpd = malloc(ucap * 8);
        if (!ubuf || !ucst || !tmpc || !tmpd) {
          ok = false;
          break;
        }
      }
      /* union of sorted sets, merging one kid at a time */
      uint32_t m = 1;
      ubuf[0] = cls;
      ucst[0] = X->ncost[n];
      bool cyc = false;
      for (uint32_t i = 0; i < nk && !cyc; i++) {
        cset *s = &sets[ft_egraph_find(eg, k[i])];
        uint32_t a = 0, b = 0, o = 0;
        while (a < m || b < s->n) {
          if (b == s->n || (a < m && ubuf[a] < s->cls[b])) tmpc[o] = ubuf[a], tmpd[o++] = ucst[a++];
          else if (a == m || s->cls[b] < ubuf[a]) tmpc[o] = s->cls[b], tmpd[o++] = s->cst[b++];
          else tmpc[o] = ubuf[a], tmpd[o++] = ucst[a++], b++;
        }
        for (uint32_t j = 0; j < s->n; j++)
          if (s->cls[j] == cls) cyc = true;
        memcpy(ubuf, tmpc, o * 4);
        memcpy(ucst, tmpd, o * 8);
        m = o;
      }
      if (cyc) continue;
      double total = 0;
      for (uint32_t j = 0; j < m; j++) total += ucst[j];
      cset *me = &sets[cls];
      if (me->cls && total >= me->total) continue;
      uint32_t *nc = realloc(me->cls, m * 4);
      double *nd = nc ? realloc(me->cst, m * 8) : NULL;
      if (nc) me->cls = nc;
      if (!nc || !nd) {
        ok = false;
        break;
      }
      me->cst = nd;
      memcpy(me->cls, ubuf, m * 4);
      memcpy(me->cst, ucst, m * 8);
      me->n = m;
      me->total = total;
      X->best[cls] = n;
      changed = true;
    }
  }
  free(ubuf), free(ucst), free(tmpc), free(tmpd);
  return ok;
}

/* ---------------------------------------------------------------- output */

typedef struct {
  ft_egraph *eg;
  ft_egraph_term *t;
  size_t cap;
  uint32_t *kidpool;
  size_t nkp, kpcap;
  uint32_t *at;    /* per class: index in t->nodes, NONE unvisited, NONE-1 on the stack */
  uint8_t *pbuf;
  size_t npb, pbcap;
  const uint32_t *best; /* per class: the chosen node */
  bool cycle, oom;
} builder;

/* Appends class c's chosen node, whose kids' term indices are ki. */
static uint32_t put_node(builder *B, uint32_t c, const uint32_t *ki) {
  ft_egraph *eg = B->eg;
  uint32_t n = B->best[c];
  const ft_enode_rec *r = &eg->nodes[n];
  uint32_t nk = r->nkids;
  ft_egraph_term *t = B->t;
  if (t->nnodes == B->cap) {
    size_t nc = B->cap ? B->cap * 2 : 64;
    ft_egraph_term_node *nn = realloc(t->nodes, nc * sizeof *nn);
    if (!nn) B->oom = true;
    else t->nodes = nn, B->cap = nc;
  }
  if (B->nkp + nk > B->kpcap) {
    size_t nc = (B->nkp + nk) * 2 + 64;
    uint32_t *np = realloc(B->kidpool, nc * 4);
    if (!np) B->oom = true;
    else B->kidpool = np, B->kpcap = nc;
  }
  if (B->npb + r->pbytes > B->pbcap) {
    size_t nc = (B->npb + r->pbytes) * 2 + 64;
    uint8_t *np = realloc(B->pbuf, nc);
    if (!np) B->oom = true;
    else B->pbuf = np, B->pbcap = nc;
  }
  if (B->oom) return 0;
  if (nk) memcpy(B->kidpool + B->nkp, ki, nk * 4u);
  if (r->pbytes) memcpy(B->pbuf + B->npb, ft_enode_params(eg, n), r->pbytes);
  /* pointers are fixed up at the end: store offsets for now */
  t->nodes[t->nnodes] = (ft_egraph_term_node){r->op & ~FT_ENODE_DEAD, nk,
                                              (const uint32_t *)(uintptr_t)B->nkp,
                                              (const void *)(uintptr_t)B->npb, r->pbytes, c, n};
  B->nkp += nk;
  B->npb += r->pbytes;
  return (uint32_t)t->nnodes++;
}

static bool push_u32(builder *B, uint32_t **v, size_t *n, size_t *cap, uint32_t x) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    uint32_t *nv = realloc(*v, nc * 4);
    if (!nv) return B->oom = true, false;
    *v = nv, *cap = nc;
  }
  (*v)[(*n)++] = x;
  return true;
}

/* Emits class root's chosen node after its kids, memoized (a DAG), with an
 * explicit stack: a chain of 100,000 operations must not recurse 100,000
 * deep. The stack holds (class, next kid) pairs; vals holds the term
 * indices of finished kids of every open class, each class's above the
 * previous one's. A class met again while open is a cycle. */
static uint32_t emit_class(builder *B, uint32_t root) {
  ft_egraph *eg = B->eg;
  if (B->at[root] != FT_EGRAPH_NONE && B->at[root] != FT_EGRAPH_NONE - 1) return B->at[root];
  if (B->at[root] == FT_EGRAPH_NONE - 1) return B->cycle = true, 0;
  uint32_t *st = NULL, *vals = NULL, *base = NULL;
  size_t nst = 0, cst = 0, nv = 0, cv = 0, nb = 0, cb = 0;
  uint32_t res = 0;
  B->at[root] = FT_EGRAPH_NONE - 1;
  bool ok = push_u32(B, &st, &nst, &cst, root) && push_u32(B, &st, &nst, &cst, 0) &&
            push_u32(B, &base, &nb, &cb, 0);
  while (ok && nst && !B->cycle && !B->oom) {
    uint32_t c = st[nst - 2], i = st[nst - 1], n = B->best[c];
    if (i < eg->nodes[n].nkids) {
      st[nst - 1] = i + 1;
      uint32_t k = ft_egraph_find(eg, ft_enode_kids(eg, n)[i]);
      if (B->at[k] == FT_EGRAPH_NONE - 1) {
        B->cycle = true;
      } else if (B->at[k] != FT_EGRAPH_NONE) {
        ok = push_u32(B, &vals, &nv, &cv, B->at[k]);
      } else {
        B->at[k] = FT_EGRAPH_NONE - 1;
        ok = push_u32(B, &st, &nst, &cst, k) && push_u32(B, &st, &nst, &cst, 0) &&
             push_u32(B, &base, &nb, &cb, (uint32_t)nv);
      }
      continue;
    }
    size_t b = base[--nb];
    uint32_t idx = put_node(B, c, vals ? vals + b : NULL); /* no kids pushed yet: vals is NULL (NULL + 0 is undefined) */
    if (B->oom) break;
    B->at[c] = idx;
    nv = b;
    nst -= 2;
    if (nst) ok = push_u32(B, &vals, &nv, &cv, idx);
    else res = idx;
  }
  if (!ok) B->oom = true;
  free(st), free(vals), free(base);
  return res;
}

/* Lays out the term DAG for the roots; one malloc block owns everything. */
static ft_egraph_term *build_term(ft_egraph *eg, const uint32_t *best, const ft_eclass *roots,
                                  size_t nroots, bool *cycle) {
  builder B = {.eg = eg, .best = best};
  B.t = calloc(1, sizeof *B.t);
  B.at = malloc((size_t)eg->nids * 4 + 4);
  uint32_t *ridx = malloc(nroots * 4 + 4);
  if (!B.t || !B.at || !ridx) B.oom = true;
  else memset(B.at, 0xFF, (size_t)eg->nids * 4);
  for (size_t i = 0; i < nroots && !B.oom && !B.cycle; i++)
    ridx[i] = emit_class(&B, ft_egraph_find(eg, roots[i]));
  ft_egraph_term *out = NULL;
  if (!B.oom && !B.cycle) {
    size_t nn = B.t->nnodes;
    size_t sz = sizeof *out + nn * sizeof(ft_egraph_term_node) + (B.nkp + nroots) * 4 + B.npb + 16;
    out = calloc(1, sz);
    if (out) {
      out->nnodes = nn;
      out->nodes = (ft_egraph_term_node *)(out + 1);
      uint32_t *kp = (uint32_t *)(out->nodes + nn);
      out->roots = kp + B.nkp;
      uint8_t *pb = (uint8_t *)(out->roots + nroots);
      if (B.nkp) memcpy(kp, B.kidpool, B.nkp * 4);
      memcpy(out->roots, ridx, nroots * 4);
      if (B.npb) memcpy(pb, B.pbuf, B.npb);
      out->nroots = nroots;
      for (size_t i = 0; i < nn; i++) {
        out->nodes[i] = B.t->nodes[i];
        out->nodes[i].kids = kp + (uintptr_t)B.t->nodes[i].kids;
        out->nodes[i].params = pb + (uintptr_t)B.t->nodes[i].params;
      }
    }
  }
  *cycle = B.cycle;
  if (B.t) free(B.t->nodes);
  free(B.t);
  free(B.at);
  free(ridx);
  free(B.kidpool);
  free(B.pbuf);
  return out;
}

ft_egraph_term *ft_egraph_extract(ft_egraph *eg, const ft_eclass *roots, size_t nroots,
                                  ft_extract_mode mode, ft_egraph_cost_fn cost, void *ud) {
  if (!cost) cost = unit_cost;
  for (size_t i = 0; i < nroots; i++)
    if (roots[i] >= eg->nids) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "extract: unknown class"), NULL;
  if (ft_egraph_rebuild(eg) != FT_EGRAPH_OK) return NULL;
  size_t n = eg->nids;
  ext X = {eg, malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 4 + 4)};
  cset *sets = mode == FT_EXTRACT_DAG ? calloc(n + 1, sizeof *sets) : NULL;
  ft_egraph_term *t = NULL;
  if (!X.ncost || !X.cost || !X.best || (mode == FT_EXTRACT_DAG && !sets)) {
    ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    X.cost[i] = INFINITY;
    X.best[i] = FT_EGRAPH_NONE;
    X.ncost[i] = (eg->nodes[i].op & FT_ENODE_DEAD) ? NAN : cost(ud, eg, (ft_enode)i);
  }
  tree_costs(&X);
  for (size_t i = 0; i < nroots; i++)
    if (X.best[ft_egraph_find(eg, roots[i])] == FT_EGRAPH_NONE) {
      ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "extract: class %u has no finite-cost term", roots[i]);
      goto out;
    }
  bool cycle = false;
  if (mode == FT_EXTRACT_DAG) {
    uint32_t *tree_best = malloc(n * 4 + 4);
    if (!tree_best) {
      ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
      goto out;
    }
    memcpy(tree_best, X.best, n * 4);
    if (!dag_costs(&X, sets)) {
      free(tree_best);
      ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
      goto out;
    }
    t = build_term(eg, X.best, roots, nroots, &cycle);
    if (cycle) /* the greedy choices met a cycle: fall back to tree choices */
      t = build_term(eg, tree_best, roots, nroots, &cycle);
    free(tree_best);
    if (t) { /* DAG cost: every distinct node once */
      t->cost = 0;
      for (size_t i = 0; i < t->nnodes; i++) t->cost += X.ncost[t->nodes[i].enode];
    }
  } else {
    t = build_term(eg, X.best, roots, nroots, &cycle);
    if (t) {
      t->cost = 0;
      for (size_t i = 0; i < nroots; i++) t->cost += X.cost[ft_egraph_find(eg, roots[i])];
    }
  }
  if (!t && !eg->status) {
    if (cycle) ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "extract: the choices form a cycle (costs must be positive)");
    else ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  }
out:
  if (sets)
    for (size_t i = 0; i < n; i++) free(sets[i].cls), free(sets[i].cst);
  free(sets);
  free(X.ncost);
  free(X.cost);
  free(X.best);
  return t;
}

void ft_egraph_term_free(ft_egraph_term *t) { free(t); }

typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l + 1 > b->cap) {
    size_t nc = (b->n + l + 1) * 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  memcpy(b->s + b->n, s, l + 1);
  b->n += l;
}

/* Prints node i of t and its subterms with an explicit stack (a term can
 * be as deep as it has nodes: a long chain of equations is one path). Each
 * frame is a node and the next child to print. Returns false when out of
 * memory. Depth is bounded by t->nnodes: children come before parents. */
typedef struct {
  uint32_t node, next;
} print_frame;

static bool print_tree(const ft_egraph *eg, const ft_egraph_term *t, uint32_t root, sbuf *b) {
  print_frame *st = malloc((t->nnodes ? t->nnodes : 1) * sizeof *st);
  if (!st) return false;
  size_t sp = 0;
  st[sp++] = (print_frame){root, 0};
  char op[256];
  while (sp && !b->oom) {
    print_frame *f = &st[sp - 1];
    const ft_egraph_term_node *nd = &t->nodes[f->node];
    if (f->next == 0) {
      ft_egraph_format_op(eg, nd->op, nd->params, nd->pbytes, op, sizeof op);
      if (!nd->nkids) {
        sb_put(b, op);
        sp--;
        continue;
      }
      sb_put(b, "(");
      sb_put(b, op);
    }
    if (f->next < nd->nkids) {
      uint32_t k = nd->kids[f->next++];
      sb_put(b, " ");
      if (sp == t->nnodes) { /* a child not before its parent: not a term DAG */
        b->oom = true;
        break;
      }
      st[sp++] = (print_frame){k, 0};
    } else {
      sb_put(b, ")");
      sp--;
    }
  }
  free(st);
  return !b->oom;
}

char *ft_egraph_term_print(const ft_egraph *eg, const ft_egraph_term *t, size_t r) {
  if (!t || r >= t->nroots) return NULL;
  sbuf b = {0};
  if (!print_tree(eg, t, t->roots[r], &b)) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
