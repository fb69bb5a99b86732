/* src/egraph/explain.c: explanations. With explanations on, every distinct
 * term-level node gets an id, and every union adds an edge to a proof
 * forest (egraph.c): a rule edge joins a rule instance's LHS term and RHS
 * term, a congruence edge joins two nodes whose children are equal. To
 * explain a = b we walk the forest path between them; rule edges become
 * rewrite steps, congruence edges recurse into the children at that
 * position. The result is flat: a chain of whole terms, each one rule
 * application away from the previous. Nothing here runs unless asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

/* The term being rewritten: a tree of cells, each showing term id `id`
 * either folded (kids == NONE) or unfolded into child cells. */
typedef struct {
  uint32_t id;
  uint32_t kid0; /* first child cell in cells[], or NONE while folded */
} cell;

typedef struct {
  ft_egraph *eg;
  cell *cells;
  size_t ncells, cap;
  uint32_t *mark; /* per id: stamp of the last path search that saw it */
  uint32_t stamp;
  ft_egraph_proof *out;
  size_t stepcap;
  bool fail;
} prover;

#define MAX_STEPS 1000000

static uint32_t new_cells(prover *X, uint32_t n) {
  if (X->ncells + n > X->cap) {
    size_t nc = (X->ncells + n) * 2 + 64;
    cell *c = realloc(X->cells, nc * sizeof *c);
    if (!c) {
      X->fail = true;
      ft_egraph_fail(X->eg, FT_EGRAPH_ENOMEM, "out of memory");
      return FT_EGRAPH_NONE;
    }
    X->cells = c;
    X->cap = nc;
  }
  X->ncells += n;
  return (uint32_t)(X->ncells - n);
}

typedef struct {
  char *s;
  size_t n, cap;
} sbuf;

static bool sb_put(sbuf *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l + 1 > b->cap) {
    size_t nc = (b->n + l + 1) * 2;
    char *ns = realloc(b->s, nc);
    if (!ns) return false;
    b->s = ns;
    b->cap = nc;
  }
  memcpy(b->s + b->n, s, l + 1);
  b->n += l;
  return true;
}

/* Prints the current term (cell 0) with an explicit stack: a term is as
 * deep as the program's longest chain of equations, far beyond what a
 * thread's stack holds if each level were a call. A frame is a cell (kid
 * cells unfolded during the proof) or a term id (term-level kids), and the
 * next child to print; a folded cell becomes the frame of its term id. */
typedef struct {
  uint32_t x, next;
  bool is_cell;
} pframe;

static bool print_cell(prover *X, uint32_t c0, sbuf *b) {
  const ft_egraph *eg = X->eg;
  size_t cap = 64, sp = 0;
  pframe *st = malloc(cap * sizeof *st);
  if (!st) return false;
  st[sp++] = (pframe){c0, 0, true};
  bool ok = true;
  char op[256];
  while (sp && ok) {
    pframe *f = &st[sp - 1];
    if (f->is_cell && X->cells[f->x].kid0 == FT_EGRAPH_NONE) *f = (pframe){X->cells[f->x].id, 0, false};
    uint32_t id = f->is_cell ? X->cells[f->x].id : f->x;
    const ft_enode_rec *r = &eg->nodes[id];
    if (f->next == 0) {
      ft_egraph_format_op(eg, r->op, eg->par + r->poff, r->pbytes, op, sizeof op);
      if (!r->nkids) {
        ok = sb_put(b, op);
        sp--;
        continue;
      }
      ok = sb_put(b, "(") && sb_put(b, op);
    }
    if (ok && f->next < r->nkids) {
      uint32_t j = f->next++;
      pframe kid = f->is_cell ? (pframe){X->cells[f->x].kid0 + j, 0, true}
                              : (pframe){eg->ex_kids[eg->ex_koff[id] + j], 0, false};
      ok = sb_put(b, " ");
      if (ok && sp == cap) {
        pframe *ns = realloc(st, 2 * cap * sizeof *ns);
        if (!ns) ok = false;
        else st = ns, cap *= 2;
      }
      if (ok) st[sp++] = kid;
    } else if (ok) {
      ok = sb_put(b, ")");
      sp--;
    }
  }
  free(st);
  return ok;
}

/* Appends a step: the whole current term, and how it was reached. */
static void step(prover *X, int rule, bool backward) {
  if (X->fail) return;
  ft_egraph_proof *p = X->out;
  if (p->nsteps >= MAX_STEPS) {
    X->fail = true;
    ft_egraph_fail(X->eg, FT_EGRAPH_EINVAL, "explain: the proof exceeds %d steps", MAX_STEPS);
    return;
  }
  if (p->nsteps == X->stepcap) {
    size_t nc = X->stepcap ? X->stepcap * 2 : 16;
    ft_egraph_proof_step *ns = realloc(p->steps, nc * sizeof *ns);
    if (!ns) goto oom;
    p->steps = ns;
    X->stepcap = nc;
  }
  sbuf b = {0};
  if (!print_cell(X, 0, &b)) {
    free(b.s);
    goto oom;
  }
  p->steps[p->nsteps++] = (ft_egraph_proof_step){b.s, rule, backward};
  return;
oom:
  X->fail = true;
  ft_egraph_fail(X->eg, FT_EGRAPH_ENOMEM, "out of memory");
}

/* The forest path a -> b as a list of (from, to, just, forward) edges. */
typedef struct {
  uint32_t from, to, just;
  bool forward;
} edge;

static edge *forest_path(prover *X, uint32_t a, uint32_t b, size_t *n) {
  ft_egraph *eg = X->eg;
  uint32_t st = ++X->stamp;
  for (uint32_t x = a;; x = eg->ex_parent[x]) {
    X->mark[x] = st;
    if (eg->ex_parent[x] == x) break;
  }
  uint32_t lca = b;
  size_t nb = 0;
  while (X->mark[lca] != st) {
    lca = eg->ex_parent[lca];
    nb++;
  }
  size_t na = 0;
  for (uint32_t x = a; x != lca; x = eg->ex_parent[x]) na++;
  edge *e = malloc((na + nb + 1) * sizeof *e);
  if (!e) return NULL;
  size_t k = 0;
  for (uint32_t x = a; x != lca; x = eg->ex_parent[x]) {
    uint32_t j = eg->ex_just[x];
    e[k++] = (edge){x, eg->ex_parent[x], j & FT_EJUST_MASK, !(j & FT_EJUST_BACKWARD)};
  }
  k += nb;
  size_t w = k;
  for (uint32_t y = b; y != lca; y = eg->ex_parent[y]) { /* walked backwards */
    uint32_t j = eg->ex_just[y];
    e[--w] = (edge){eg->ex_parent[y], y, j & FT_EJUST_MASK, (j & FT_EJUST_BACKWARD) != 0};
  }
  *n = k;
  return e;
}

/* Rewrites cell c0, currently showing term a, into term b, emitting steps.
 * A congruence edge rewrites each child cell in turn before the cell takes
 * the edge's far end; the nesting is an explicit stack of frames (a cell,
 * its forest path, the edge and the child being rewritten), not recursion,
 * so a proof as deep as the term does not overflow the stack. */
typedef struct {
  uint32_t c, j;
  edge *path;
  size_t n, i;
} prove_frame;

static bool push_proof(prover *X, prove_frame **st, size_t *sp, size_t *cap, uint32_t c,
                       uint32_t a, uint32_t b) {
  if (a == b) return true;
  if (*sp == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    prove_frame *ns = realloc(*st, nc * sizeof *ns);
    if (!ns) return false;
    *st = ns, *cap = nc;
  }
  size_t n = 0;
  edge *path = forest_path(X, a, b, &n);
  if (!path) return false;
  (*st)[(*sp)++] = (prove_frame){c, 0, path, n, 0};
  return true;
}

static void prove(prover *X, uint32_t c0, uint32_t a, uint32_t b) {
  ft_egraph *eg = X->eg;
  prove_frame *st = NULL;
  size_t sp = 0, cap = 0;
  if (!push_proof(X, &st, &sp, &cap, c0, a, b)) goto oom;
  while (sp && !X->fail) {
    prove_frame *f = &st[sp - 1];
    if (f->i == f->n) {
      free(f->path);
      sp--;
      continue;
    }
    edge e = f->path[f->i];
    uint32_t c = f->c;
    if (e.just != FT_EJUST_CONGRUENCE) {
      X->cells[c] = (cell){e.to, FT_EGRAPH_NONE};
      step(X, e.just == FT_EJUST_USER ? -2 : (int)e.just, !e.forward);
      f->i++;
      continue;
    }
    uint32_t nk = eg->nodes[e.from].nkids;
    if (f->j == 0 && X->cells[c].kid0 == FT_EGRAPH_NONE) { /* unfold: the cell shows e.from */
      uint32_t k0 = new_cells(X, nk);
      if (k0 == FT_EGRAPH_NONE) break;
      for (uint32_t j = 0; j < nk; j++)
        X->cells[k0 + j] = (cell){eg->ex_kids[eg->ex_koff[e.from] + j], FT_EGRAPH_NONE};
      X->cells[c].kid0 = k0;
    }
    if (f->j < nk) {
      uint32_t j = f->j++;
      uint32_t fk = eg->ex_kids[eg->ex_koff[e.from] + j], tk = eg->ex_kids[eg->ex_koff[e.to] + j];
      if (!push_proof(X, &st, &sp, &cap, X->cells[c].kid0 + j, fk, tk)) goto oom;
      continue;
    }
    X->cells[c].id = e.to;
    f->i++, f->j = 0;
  }
  goto out;
oom:
  if (!X->fail) {
    X->fail = true;
    ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  }
out:
  while (sp) free(st[--sp].path);
  free(st);
}

ft_egraph_status ft_egraph_explain_ids(ft_egraph *eg, const ft_egraph_rules *rs, ft_enode a,
                                       ft_enode b, ft_egraph_proof *out) {
  (void)rs;
  memset(out, 0, sizeof *out);
  if (!eg->explain) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "explanations are not enabled");
  if (a >= eg->nids || b >= eg->nids) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "explain: unknown term id");
  if (ft_egraph_find(eg, a) != ft_egraph_find(eg, b))
    return ft_egraph_fail(eg, FT_EGRAPH_ENOTEQUAL, "the two terms are in different e-classes");
  prover X = {.eg = eg, .out = out};
  X.mark = calloc((size_t)eg->nids + 1, 4);
  if (!X.mark || new_cells(&X, 1) == FT_EGRAPH_NONE) {
    free(X.mark);
    free(X.cells);
    return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  }
  X.cells[0] = (cell){a, FT_EGRAPH_NONE};
  step(&X, -1, false);
  prove(&X, 0, a, b);
  free(X.mark);
  free(X.cells);
  if (X.fail) {
    ft_egraph_proof_free(out);
    return eg->status ? eg->status : FT_EGRAPH_ENOMEM;
  }
  return FT_EGRAPH_OK;
}

ft_egraph_status ft_egraph_explain(ft_egraph *eg, const ft_egraph_rules *rs, const char *a,
                                   const char *b, ft_egraph_proof *out) {
  memset(out, 0, sizeof *out);
  if (!eg->explain) return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "explanations are not enabled");
  uint32_t ta = ft_egraph_add_term_id(eg, a);
  if (ta == FT_EGRAPH_NONE) return eg->status;
  uint32_t tb = ft_egraph_add_term_id(eg, b);
  if (tb == FT_EGRAPH_NONE) return eg->status;
  if (ft_egraph_rebuild(eg) != FT_EGRAPH_OK) return eg->status;
  return ft_egraph_explain_ids(eg, rs, ta, tb, out);
}

void ft_egraph_proof_free(ft_egraph_proof *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nsteps; i++) free(p->steps[i].term);
  free(p->steps);
  memset(p, 0, sizeof *p);
}
