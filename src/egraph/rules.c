/* src/egraph/rules.c: the text rule language and term reader. A small
 * lexer (line:col kept for errors, newlines significant only outside
 * brackets), a recursive-descent parser to an AST, and the compiler from
 * AST to the e-matching program (ematch.c) and to term programs that
 * instantiate a right-hand side (or a left-hand side, for proofs). Guards
 * and param functions are C callbacks registered by name. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

/* ---------------------------------------------------------------- registry */

static ft_egraph_status reg_add(ft_egraph *eg, ft_eregistered **arr, uint32_t *n, const char *name,
                                void *fn, void *ud) {
  for (uint32_t i = 0; i < *n; i++)
    if (!strcmp((*arr)[i].name, name)) {
      (*arr)[i].fn = fn;
      (*arr)[i].ud = ud;
      return FT_EGRAPH_OK;
    }
  ft_eregistered *na = realloc(*arr, (*n + 1) * sizeof *na);
  if (!na) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  *arr = na;
  char *copy = strdup(name);
  if (!copy) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
  na[*n] = (ft_eregistered){copy, fn, ud};
  (*n)++;
  return FT_EGRAPH_OK;
}

ft_egraph_status ft_egraph_register_guard(ft_egraph *eg, const char *name, ft_egraph_guard_fn fn,
                                          void *ud) {
  return reg_add(eg, &eg->guards, &eg->nguards, name, (void *)fn, ud);
}
ft_egraph_status ft_egraph_register_param_fn(ft_egraph *eg, const char *name,
                                             ft_egraph_param_fn fn, void *ud) {
  return reg_add(eg, &eg->pfns, &eg->npfns, name, (void *)fn, ud);
}

/* ---------------------------------------------------------------- lexer */

typedef enum { T_EOF, T_NL, T_LP, T_RP, T_LB, T_RB, T_COMMA, T_COLON, T_AT, T_ATOM } tkind;

typedef struct {
  tkind k;
  const char *s;
  int len, line, col;
} token;

typedef struct {
  ft_egraph *eg;
  const char *file, *src, *p, *line_start;
  int line, depth;
  token t; /* current token */
  bool failed;
  /* AST arena */
  struct block *blocks;
  /* children of the nodes being parsed, innermost on top (one stack for all
   * levels keeps parse_pat's frame small) */
  struct ast **kstack;
  uint32_t nk, capk;
} parser;

static bool atom_char(char c) {
  return c && !strchr(" \t\r\n()[],:#@", c);
}

/* Advances to the next token; newlines inside brackets are whitespace. */
static void lex(parser *P) {
  for (;;) {
    while (*P->p == ' ' || *P->p == '\t' || *P->p == '\r') P->p++;
    if (*P->p == '#')
      while (*P->p && *P->p != '\n') P->p++;
    if (*P->p == '\n' && P->depth > 0) {
      P->p++;
      P->line++;
      P->line_start = P->p;
      continue;
    }
    break;
  }
  token t = {T_EOF, P->p, 1, P->line, (int)(P->p - P->line_start) + 1};
  char c = *P->p;
  if (!c) t.len = 0;
  else if (c == '\n') {
    t.k = T_NL;
    P->p++;
    P->line++;
    P->line_start = P->p;
  } else if (strchr("()[],:@", c)) {
    static const char *ch = "()[],:@";
    static const tkind kk[] = {T_LP, T_RP, T_LB, T_RB, T_COMMA, T_COLON, T_AT};
    t.k = kk[strchr(ch, c) - ch];
    if (c == '(' || c == '[') P->depth++;
    if ((c == ')' || c == ']') && P->depth > 0) P->depth--;
    P->p++;
  } else {
    t.k = T_ATOM;
    while (atom_char(*P->p)) P->p++;
    t.len = (int)(P->p - t.s);
  }
  P->t = t;
}

/* Reports "file:line:col: expected X but found Y" with the line and a caret. */
static void *perr(parser *P, const token *t, const char *expected) {
  if (P->failed) return NULL;
  P->failed = true;
  const char *ls = t->s - (t->col - 1), *le = ls;
  while (*le && *le != '\n') le++;
  char found[64];
  if (t->k == T_EOF) snprintf(found, sizeof found, "end of input");
  else if (t->k == T_NL) snprintf(found, sizeof found, "end of line");
  else snprintf(found, sizeof found, "'%.*s'", t->len > 40 ? 40 : t->len, t->s);
  int ll = (int)(le - ls);
  if (ll > 200) ll = 200;
  ft_egraph_fail(P->eg, FT_EGRAPH_EPARSE, "%s:%d:%d: expected %s but found %s\n  %.*s\n  %*s^",
                 P->file, t->line, t->col, expected, found, ll, ls, t->col - 1, "");
  return NULL;
}

static bool tok_is(const token *t, const char *s) {
  return t->k == T_ATOM && (int)strlen(s) == t->len && !memcmp(t->s, s, (size_t)t->len);
}

/* ---------------------------------------------------------------- AST */

struct block {
  struct block *next;
  size_t used, cap;
  _Alignas(16) unsigned char mem[];
};

static void *palloc(parser *P, size_t n) {
  n = (n + 15) & ~(size_t)15;
  struct block *b = P->blocks;
  if (!b || b->used + n > b->cap) {
    size_t cap = n > 16384 ? n : 16384;
    b = malloc(sizeof *b + cap);
    if (!b) {
      ft_egraph_fail(P->eg, FT_EGRAPH_ENOMEM, "out of memory");
      P->failed = true;
      return NULL;
    }
    b->next = P->blocks;
    b->used = 0;
    b->cap = cap;
    P->blocks = b;
  }
  void *r = b->mem + b->used;
  b->used += n;
  memset(r, 0, n);
  return r;
}

static void pfree(parser *P) {
  free(P->kstack);
  P->kstack = NULL;
  while (P->blocks) {
    struct block *n = P->blocks->next;
    free(P->blocks);
    P->blocks = n;
  }
}

enum { A_VAR, A_NODE };
enum { PM_LIT, PM_VAR, PM_FN };

typedef struct ast {
  int kind;
  token tok;          /* the variable or operator token */
  uint32_t op;
  int pmode;          /* PM_* */
  uint8_t *pbytes;    /* literal params */
  uint32_t npbytes;
  token pvar;         /* PM_VAR */
  token pfn;          /* PM_FN: name, args */
  token *pargs;
  uint32_t npargs;
  struct ast **kids;
  uint32_t nkids;
} ast;

/* A number atom: 1 int, 2 float, 0 not a number. */
static int parse_number(const token *t, int64_t *iv, double *dv) {
  char buf[64];
  if (t->len >= (int)sizeof buf) return 0;
  memcpy(buf, t->s, (size_t)t->len);
  buf[t->len] = 0;
  const char *q = buf + (buf[0] == '-' || buf[0] == '+');
  if (!((*q >= '0' && *q <= '9') || (*q == '.' && q[1] >= '0' && q[1] <= '9'))) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (!*end && !errno) {
    *iv = v;
    return 1;
  }
  errno = 0;
  double d = strtod(buf, &end);
  if (!*end) {
    *dv = d;
    return 2;
  }
  return 0;
}

static uint32_t intern_tok(parser *P, const token *t) {
  char buf[256];
  if (t->len >= (int)sizeof buf) return perr(P, t, "an operator name under 256 characters"), FT_EGRAPH_NONE;
  memcpy(buf, t->s, (size_t)t->len);
  buf[t->len] = 0;
  uint32_t op = ft_egraph_intern(P->eg, buf);
  if (op == FT_EGRAPH_NONE) {
    P->failed = true;
    ft_egraph_fail(P->eg, FT_EGRAPH_ENOMEM, "out of memory");
  }
  return op;
}

static bool is_var(const token *t) { return t->k == T_ATOM && t->s[0] == '?'; }

/* params := '[' (number {',' number} | ?var | @fn(args)) ']' */
static bool parse_params(parser *P, ast *a, bool allow_vars) {
  lex(P); /* '[' */
  if (P->t.k == T_RB) {
    lex(P);
    return true;
  }
  if (is_var(&P->t) || P->t.k == T_AT) {
    if (!allow_vars) return perr(P, &P->t, "a number (terms have no variables)"), false;
    if (is_var(&P->t)) {
      a->pmode = PM_VAR;
      a->pvar = P->t;
      lex(P);
    } else {
      lex(P);
      if (P->t.k != T_ATOM) return perr(P, &P->t, "a param function name after '@'"), false;
      a->pmode = PM_FN;
      a->pfn = P->t;
      lex(P);
      if (P->t.k != T_LP) return perr(P, &P->t, "'(' after the param function name"), false;
      lex(P);
      token args[32];
      uint32_t n = 0;
      while (P->t.k != T_RP) {
        if (!is_var(&P->t)) return perr(P, &P->t, "a variable argument"), false;
        if (n == 32) return perr(P, &P->t, "at most 32 arguments"), false;
        args[n++] = P->t;
        lex(P);
        if (P->t.k == T_COMMA) lex(P);
        else if (P->t.k != T_RP) return perr(P, &P->t, "',' or ')'"), false;
      }
      lex(P);
      a->pargs = palloc(P, n * sizeof *a->pargs + 1);
      if (!a->pargs) return false;
      memcpy(a->pargs, args, n * sizeof *args);
      a->npargs = n;
    }
    if (P->t.k != T_RB) return perr(P, &P->t, "']' after the params"), false;
    lex(P);
    return true;
  }
  uint8_t buf[FT_EGRAPH_MAX_PARAMS];
  uint32_t n = 0;
  for (;;) {
    int64_t iv;
    double dv;
    int kind = P->t.k == T_ATOM ? parse_number(&P->t, &iv, &dv) : 0;
    if (!kind) return perr(P, &P->t, "a number in the params"), false;
    if (n + 8 > sizeof buf) return perr(P, &P->t, "fewer params"), false;
    if (kind == 1) memcpy(buf + n, &iv, 8);
    else memcpy(buf + n, &dv, 8);
    n += 8;
    lex(P);
    if (P->t.k == T_COMMA) {
      lex(P);
      continue;
    }
    if (P->t.k == T_RB) break;
    return perr(P, &P->t, "',' or ']' in the params"), false;
  }
  lex(P);
  a->pbytes = palloc(P, n);
  if (!a->pbytes) return false;
  memcpy(a->pbytes, buf, n);
  a->npbytes = n;
  return true;
}

/* Pushes a finished child onto the parser's child stack. */
static bool kpush(parser *P, ast *k) {
  if (P->nk == P->capk) {
    uint32_t nc = P->capk ? P->capk * 2 : 256;
    ast **ns = realloc(P->kstack, nc * sizeof *ns);
    if (!ns) {
      ft_egraph_fail(P->eg, FT_EGRAPH_ENOMEM, "out of memory");
      P->failed = true;
      return false;
    }
    P->kstack = ns;
    P->capk = nc;
  }
  P->kstack[P->nk++] = k;
  return true;
}

/* pattern := ?var | number | sym[params] | '(' sym[params] pattern* ')'
 * Recursive, with the nesting bounded by FT_EGRAPH_MAX_NESTING so that this
 * and every recursive walk of the tree (compiling, adding, extracting,
 * printing) stays far inside a thread's stack. */
static ast *parse_pat(parser *P, bool allow_vars, int depth) {
  if (P->t.k == T_LP && depth >= FT_EGRAPH_MAX_NESTING) {
    char what[80];
    snprintf(what, sizeof what, "a shallower expression (nesting over %d)", FT_EGRAPH_MAX_NESTING);
    return perr(P, &P->t, what);
  }
  ast *a = palloc(P, sizeof *a);
  if (!a) return NULL;
  a->tok = P->t;
  if (P->t.k == T_ATOM) {
    if (is_var(&P->t)) {
      if (!allow_vars) return perr(P, &P->t, "a term (variables only appear in rules)");
      if (P->t.len < 2) return perr(P, &P->t, "a variable name after '?'");
      a->kind = A_VAR;
      lex(P);
      return a;
    }
    a->kind = A_NODE;
    int64_t iv;
    double dv;
    int num = parse_number(&P->t, &iv, &dv);
    if (num) {
      a->op = num == 1 ? FT_EGRAPH_OP_INT : FT_EGRAPH_OP_FLOAT;
      a->pbytes = palloc(P, 8);
      if (!a->pbytes) return NULL;
      if (num == 1) memcpy(a->pbytes, &iv, 8);
      else memcpy(a->pbytes, &dv, 8);
      a->npbytes = 8;
      lex(P);
      return a;
    }
    if ((a->op = intern_tok(P, &P->t)) == FT_EGRAPH_NONE) return NULL;
    lex(P);
    if (P->t.k == T_LB && !parse_params(P, a, allow_vars)) return NULL;
    return a;
  }
  if (P->t.k != T_LP) return perr(P, &P->t, allow_vars ? "a pattern" : "a term");
  lex(P);
  a->kind = A_NODE;
  a->tok = P->t;
  if (P->t.k != T_ATOM || is_var(&P->t)) return perr(P, &P->t, "an operator name after '('");
  int64_t iv;
  double dv;
  if (parse_number(&P->t, &iv, &dv)) return perr(P, &P->t, "an operator name, not a number");
  if ((a->op = intern_tok(P, &P->t)) == FT_EGRAPH_NONE) return NULL;
  lex(P);
  if (P->t.k == T_LB && !parse_params(P, a, allow_vars)) return NULL;
  uint32_t base = P->nk;
  while (P->t.k != T_RP) {
    if (P->t.k == T_EOF || P->t.k == T_NL) return perr(P, &P->t, "')'");
    ast *k = parse_pat(P, allow_vars, depth + 1);
    if (!k || !kpush(P, k)) return NULL;
  }
  lex(P);
  uint32_t n = P->nk - base;
  if (n > 0xFFFF) return perr(P, &a->tok, "at most 65535 children");
  a->kids = palloc(P, n * sizeof *a->kids + 1);
  if (!a->kids) return NULL;
  if (n) memcpy(a->kids, P->kstack + base, n * sizeof *a->kids);
  P->nk = base;
  a->nkids = n;
  return a;
}

/* ---------------------------------------------------------------- compiler */

typedef struct {
  ast *pat;
  token bind; /* ?v = pat, or k == T_EOF */
} item;

typedef struct {
  parser *P;
  ft_erule *r;
  /* variables */
  token vars[256];
  uint32_t nvars;
  bool vparam[256];
  uint32_t vreg[256];
  /* growable buffers */
  ft_einsn *prog;
  uint32_t nprog, capprog;
  ft_etnode *tn;
  uint32_t ntn, captn;
  uint32_t *refs;
  uint32_t nrefs, caprefs;
  uint32_t *argv;
  uint32_t nargv, capargv;
  uint8_t *pool;
  uint32_t npool, cappool;
  uint32_t nregs;
} comp;

static bool cgrow(comp *C, void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return true;
  uint32_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *np = realloc(*p, nc * elem);
  if (!np) {
    ft_egraph_fail(C->P->eg, FT_EGRAPH_ENOMEM, "out of memory");
    C->P->failed = true;
    return false;
  }
  *p = np;
  *cap = nc;
  return true;
}

static int var_find(comp *C, const token *t) {
  for (uint32_t i = 0; i < C->nvars; i++)
    if (C->vars[i].len == t->len && !memcmp(C->vars[i].s, t->s, (size_t)t->len)) return (int)i;
  return -1;
}

static int var_new(comp *C, const token *t, bool param, uint32_t reg) {
  if (C->nvars == 256) return perr(C->P, t, "at most 256 variables in a rule"), -1;
  C->vars[C->nvars] = *t;
  C->vparam[C->nvars] = param;
  C->vreg[C->nvars] = reg;
  return (int)C->nvars++;
}

static bool emit(comp *C, ft_einsn in) {
  if (!cgrow(C, (void **)&C->prog, &C->capprog, C->nprog + 1, sizeof in)) return false;
  C->prog[C->nprog++] = in;
  return true;
}

static uint32_t pool_add(comp *C, const uint8_t *b, uint32_t n) {
  if (!cgrow(C, (void **)&C->pool, &C->cappool, C->npool + n + 1, 1)) return 0;
  if (n) memcpy(C->pool + C->npool, b, n);
  C->npool += n;
  return C->npool - n;
}

/* Fills a SCAN/BIND instruction's operator and params test. */
static bool node_insn(comp *C, ast *a, ft_einsn *in) {
  in->op = a->op;
  in->nkids = (uint16_t)a->nkids;
  if (a->pmode == PM_FN) return perr(C->P, &a->pfn, "a param variable or numbers (param functions belong on the right-hand side)"), false;
  if (a->pmode == PM_VAR) {
    if (var_find(C, &a->pvar) >= 0) return perr(C->P, &a->pvar, "a fresh param variable (each appears once on the left)"), false;
    in->pmode = 1;
    in->pvar = C->nregs++;
    return var_new(C, &a->pvar, true, in->pvar) >= 0;
  }
  in->poff = pool_add(C, a->pbytes, a->npbytes);
  in->pbytes = a->npbytes;
  return !C->P->failed;
}

/* Compiles the kids of a node bound at registers base..: variables first
 * (so comparisons prune early), then nested BINDs depth-first. */
static bool comp_kids(comp *C, ast *a, uint32_t base) {
  for (uint32_t j = 0; j < a->nkids; j++) {
    ast *k = a->kids[j];
    if (k->kind != A_VAR) continue;
    int v = var_find(C, &k->tok);
    if (v < 0) {
      if (var_new(C, &k->tok, false, base + j) < 0) return false;
    } else if (C->vparam[v]) return perr(C->P, &k->tok, "a class variable (this one binds params)"), false;
    else if (!emit(C, (ft_einsn){.kind = FT_EI_CMP, .in = C->vreg[v], .out = base + j})) return false;
  }
  for (uint32_t j = 0; j < a->nkids; j++) {
    ast *k = a->kids[j];
    if (k->kind != A_NODE) continue;
    ft_einsn in = {.kind = FT_EI_BIND, .in = base + j};
    in.out = C->nregs;
    C->nregs += k->nkids;
    if (!node_insn(C, k, &in) || !emit(C, in) || !comp_kids(C, k, in.out)) return false;
  }
  return true;
}

/* One LHS pattern: SCAN its root operator, bind the root, match the kids. */
static bool comp_lhs(comp *C, item *it, uint32_t *root_reg) {
  ast *a = it->pat;
  if (a->kind != A_NODE) return perr(C->P, &a->tok, "an operator pattern (a left-hand side cannot be a bare variable)"), false;
  ft_einsn in = {.kind = FT_EI_SCAN, .out = C->nregs};
  C->nregs += 1 + a->nkids;
  if (!node_insn(C, a, &in) || !emit(C, in)) return false;
  *root_reg = in.out;
  if (it->bind.k == T_ATOM) {
    int v = var_find(C, &it->bind);
    if (v < 0) {
      if (var_new(C, &it->bind, false, in.out) < 0) return false;
    } else if (!emit(C, (ft_einsn){.kind = FT_EI_CMP, .in = C->vreg[v], .out = in.out})) return false;
  }
  return comp_kids(C, a, in.out + 1);
}

static bool push_ref(comp *C, uint32_t ref) {
  if (!cgrow(C, (void **)&C->refs, &C->caprefs, C->nrefs + 1, 4)) return false;
  C->refs[C->nrefs++] = ref;
  return true;
}

static int slot_of(comp *C, const token *t, bool want_param) {
  int v = var_find(C, t);
  if (v < 0) return perr(C->P, t, "a variable bound by the left-hand side"), -1;
  if (C->vparam[v] != want_param)
    return perr(C->P, t, want_param ? "a param variable" : "a class variable"), -1;
  return v;
}

/* Compiles a term program for a pattern; returns its ref or NONE. */
static uint32_t comp_term(comp *C, ast *a) {
  if (a->kind == A_VAR) {
    int v = slot_of(C, &a->tok, false);
    return v < 0 ? FT_EGRAPH_NONE : (uint32_t)v;
  }
  uint32_t kref[8], *kr = a->nkids <= 8 ? kref : malloc(a->nkids * 4u);
  if (!kr) {
    ft_egraph_fail(C->P->eg, FT_EGRAPH_ENOMEM, "out of memory");
    C->P->failed = true;
    return FT_EGRAPH_NONE;
  }
  uint32_t res = FT_EGRAPH_NONE;
  for (uint32_t j = 0; j < a->nkids; j++)
    if ((kr[j] = comp_term(C, a->kids[j])) == FT_EGRAPH_NONE) goto out;
  ft_etnode t = {.op = a->op, .nkids = (uint16_t)a->nkids, .kid0 = C->nrefs};
  for (uint32_t j = 0; j < a->nkids; j++)
    if (!push_ref(C, kr[j])) goto out;
  if (a->pmode == PM_LIT) {
    t.poff = pool_add(C, a->pbytes, a->npbytes);
    t.pbytes = a->npbytes;
  } else if (a->pmode == PM_VAR) {
    int v = slot_of(C, &a->pvar, true);
    if (v < 0) goto out;
    t.pmode = 1;
    t.pvar = (uint32_t)v;
  } else {
    ft_egraph *eg = C->P->eg;
    uint32_t f = 0;
    while (f < eg->npfns && ((int)strlen(eg->pfns[f].name) != a->pfn.len ||
                             memcmp(eg->pfns[f].name, a->pfn.s, (size_t)a->pfn.len)))
      f++;
    if (f == eg->npfns) {
      perr(C->P, &a->pfn, "a registered param function");
      goto out;
    }
    t.pmode = 2;
    t.pfn = f;
    t.pargs = C->nargv;
    t.npargs = a->npargs;
    for (uint32_t j = 0; j < a->npargs; j++) {
      int v = var_find(C, &a->pargs[j]);
      if (v < 0) {
        perr(C->P, &a->pargs[j], "a variable bound by the left-hand side");
        goto out;
      }
      if (!cgrow(C, (void **)&C->argv, &C->capargv, C->nargv + 1, 4)) goto out;
      C->argv[C->nargv++] = (uint32_t)v;
    }
  }
  if (C->P->failed || !cgrow(C, (void **)&C->tn, &C->captn, C->ntn + 1, sizeof t)) goto out;
  C->tn[C->ntn++] = t;
  res = FT_EREF_NODE | (C->ntn - 1);
out:
  if (kr != kref) free(kr);
  return res;
}

typedef struct {
  token name;
  item lhs[16], rhs[16];
  uint32_t nlhs, nrhs;
  token gname[16];
  token *gargs[16];
  uint32_t ngargs[16], nguards;
} rule_ast;

static void rule_free(ft_erule *r) {
  free(r->name);
  free(r->prog);
  free(r->slot_reg);
  free(r->slot_param);
  if (r->var_names)
    for (uint32_t i = 0; i < r->nvars; i++) free(r->var_names[i]);
  free(r->var_names);
  free(r->tn);
  free(r->refs);
  free(r->items);
  free(r->lhs_root);
  free(r->guards);
  free(r->argv);
  free(r->pool);
}

/* RHS items: each instantiates a pattern and unions it with its target,
 * `?v =` naming one, else the first LHS pattern's root. */
static bool comp_items(comp *C, const item *lhs, uint32_t nlhs, const item *rhs, uint32_t nrhs,
                       ft_erule *r) {
  for (uint32_t i = 0; i < nrhs; i++) {
    uint32_t root = comp_term(C, rhs[i].pat);
    if (root == FT_EGRAPH_NONE) return false;
    ft_eitem it = {root, C->nvars, 0};
    if (rhs[i].bind.k == T_ATOM) {
      int v = slot_of(C, &rhs[i].bind, false);
      if (v < 0) return false;
      it.target = (uint32_t)v;
      it.lhs = FT_EGRAPH_NONE; /* proofs use the LHS pattern this binder names, if any */
      for (uint32_t j = 0; j < nlhs; j++)
        if (lhs[j].bind.k == T_ATOM && lhs[j].bind.len == rhs[i].bind.len &&
            !memcmp(lhs[j].bind.s, rhs[i].bind.s, (size_t)lhs[j].bind.len))
          it.lhs = j;
    }
    r->items[i] = it;
  }
  r->nitems = nrhs;
  r->nrhs_tn = C->ntn;
  return true;
}

/* The first RHS node built from variables alone: serial apply prefetches it. */
static void pick_prefetch(comp *C, ft_erule *r) {
  r->pf_node = FT_EGRAPH_NONE;
  for (uint32_t j = 0; j < r->nrhs_tn && r->pf_node == FT_EGRAPH_NONE; j++) {
    const ft_etnode *t = &C->tn[j];
    bool vars = t->nkids > 0 && t->pmode == 0;
    for (uint32_t i = 0; vars && i < t->nkids; i++)
      if (C->refs[t->kid0 + i] & FT_EREF_NODE) vars = false;
    if (vars) r->pf_node = j;
  }
}

/* Resolves guard names to registered callbacks and their argument slots. */
static bool comp_guards(comp *C, const rule_ast *R, ft_erule *r) {
  ft_egraph *eg = C->P->eg;
  for (uint32_t g = 0; g < R->nguards; g++) {
    const token *gn = &R->gname[g];
    uint32_t f = 0;
    while (f < eg->nguards &&
           ((int)strlen(eg->guards[f].name) != gn->len || memcmp(eg->guards[f].name, gn->s, (size_t)gn->len)))
      f++;
    if (f == eg->nguards) return perr(C->P, gn, "a registered guard name"), false;
    r->guards[g] = (ft_eguard){f, C->nargv, R->ngargs[g]};
    for (uint32_t j = 0; j < R->ngargs[g]; j++) {
      int v = var_find(C, &R->gargs[g][j]);
      if (v < 0) return perr(C->P, &R->gargs[g][j], "a variable bound by the left-hand side"), false;
      if (!cgrow(C, (void **)&C->argv, &C->capargv, C->nargv + 1, 4)) return false;
      C->argv[C->nargv++] = (uint32_t)v;
    }
  }
  return true;
}

/* Compiles one rule (lhs => rhs) into *r. */
static bool compile_rule(parser *P, const rule_ast *R, const item *lhs, uint32_t nlhs,
                         const item *rhs, uint32_t nrhs, const char *suffix, ft_erule *r) {
  comp C = {.P = P, .r = r};
  memset(r, 0, sizeof *r);
  uint32_t root_reg[16];
  bool ok = true;
  for (uint32_t i = 0; ok && i < nlhs; i++) ok = comp_lhs(&C, (item *)&lhs[i], &root_reg[i]);
  ok = ok && emit(&C, (ft_einsn){.kind = FT_EI_YIELD});
  r->nvars = C.nvars;
  r->nlhs = nlhs;
  r->nslots = C.nvars + nlhs;
  r->slot_reg = malloc(r->nslots * 4u + 4);
  r->slot_param = calloc(r->nslots + 1, 1);
  r->var_names = calloc(C.nvars + 1, sizeof *r->var_names);
  r->items = calloc(nrhs + 1, sizeof *r->items);
  r->lhs_root = calloc(nlhs + 1, 4);
  r->guards = calloc(R->nguards + 1, sizeof *r->guards);
  r->name = malloc((size_t)R->name.len + strlen(suffix) + 1);
  if (!r->slot_reg || !r->slot_param || !r->var_names || !r->items || !r->lhs_root || !r->guards ||
      !r->name) {
    ft_egraph_fail(P->eg, FT_EGRAPH_ENOMEM, "out of memory");
    P->failed = true;
    ok = false;
  }
  if (ok) {
    memcpy(r->name, R->name.s, (size_t)R->name.len);
    strcpy(r->name + R->name.len, suffix);
    r->line = R->name.line;
    for (uint32_t v = 0; v < C.nvars; v++) {
      r->slot_reg[v] = C.vreg[v];
      r->slot_param[v] = C.vparam[v];
      r->var_names[v] = strndup(C.vars[v].s + 1, (size_t)C.vars[v].len - 1);
      if (!r->var_names[v]) ok = false;
    }
    for (uint32_t i = 0; i < nlhs; i++) r->slot_reg[C.nvars + i] = root_reg[i];
  }
  ok = ok && comp_items(&C, lhs, nlhs, rhs, nrhs, r);
  pick_prefetch(&C, r);
  /* LHS term programs, for proofs */
  for (uint32_t i = 0; ok && i < nlhs; i++)
    if ((r->lhs_root[i] = comp_term(&C, lhs[i].pat)) == FT_EGRAPH_NONE) ok = false;
  ok = ok && comp_guards(&C, R, r);
  /* A rule without literal params still gets a pool: 'pool + poff' must
   * not be arithmetic on a null pointer. */
  ok = ok && cgrow(&C, (void **)&C.pool, &C.cappool, 1, 1);
  r->nguards = R->nguards;
  r->prog = C.prog;
  r->nprog = C.nprog;
  r->nregs = C.nregs;
  r->tn = C.tn;
  r->ntn = C.ntn;
  r->refs = C.refs;
  r->nrefs = C.nrefs;
  r->argv = C.argv;
  r->nargv = C.nargv;
  r->pool = C.pool;
  r->npool = C.npool;
  if (!ok) rule_free(r);
  return ok;
}

/* item := [?v '='] pattern */
static bool parse_item(parser *P, item *it) {
  it->bind.k = T_EOF;
  if (is_var(&P->t)) {
    /* peek: `?v = ...` binds, otherwise ?v is the pattern itself */
    const char *q = P->p;
    while (*q == ' ' || *q == '\t') q++;
    if (q[0] == '=' && !atom_char(q[1])) {
      it->bind = P->t;
      lex(P);
      lex(P); /* '=' */
    }
  }
  it->pat = parse_pat(P, true, 0);
  return it->pat != NULL;
}

static bool parse_items(parser *P, item *its, uint32_t *n, const char *stop1, const char *stop2) {
  for (;;) {
    if (*n == 16) return perr(P, &P->t, "at most 16 patterns on a side"), false;
    if (!parse_item(P, &its[(*n)++])) return false;
    if (P->t.k != T_COMMA) break;
    lex(P);
  }
  (void)stop1;
  (void)stop2;
  return true;
}

/* rule := name ':' items ('=>'|'<=>') items ['if' guard {',' guard}] NL */
static bool parse_rule(parser *P, ft_egraph_rules *rs) {
  rule_ast R;
  memset(&R, 0, sizeof R);
  R.name = P->t;
  if (P->t.k != T_ATOM || is_var(&P->t)) return perr(P, &P->t, "a rule name"), false;
  lex(P);
  if (P->t.k != T_COLON) return perr(P, &P->t, "':' after the rule name"), false;
  lex(P);
  if (!parse_items(P, R.lhs, &R.nlhs, "=>", "<=>")) return false;
  bool both = tok_is(&P->t, "<=>");
  if (!both && !tok_is(&P->t, "=>")) return perr(P, &P->t, "'=>' or '<=>' (or ',' and another pattern)"), false;
  token arrow = P->t;
  lex(P);
  if (!parse_items(P, R.rhs, &R.nrhs, "if", NULL)) return false;
  if (tok_is(&P->t, "if")) {
    lex(P);
    for (;;) {
      if (R.nguards == 16) return perr(P, &P->t, "at most 16 guards"), false;
      if (P->t.k != T_ATOM || is_var(&P->t)) return perr(P, &P->t, "a guard name"), false;
      uint32_t g = R.nguards++;
      R.gname[g] = P->t;
      lex(P);
      if (P->t.k != T_LP) return perr(P, &P->t, "'(' after the guard name"), false;
      lex(P);
      token args[32];
      uint32_t n = 0;
      while (P->t.k != T_RP) {
        if (!is_var(&P->t)) return perr(P, &P->t, "a variable argument"), false;
        if (n == 32) return perr(P, &P->t, "at most 32 guard arguments"), false;
        args[n++] = P->t;
        lex(P);
        if (P->t.k == T_COMMA) lex(P);
        else if (P->t.k != T_RP) return perr(P, &P->t, "',' or ')'"), false;
      }
      lex(P);
      R.gargs[g] = palloc(P, n * sizeof(token) + 1);
      if (!R.gargs[g]) return false;
      memcpy(R.gargs[g], args, n * sizeof(token));
      R.ngargs[g] = n;
      if (P->t.k != T_COMMA) break;
      lex(P);
    }
  }
  if (P->t.k != T_NL && P->t.k != T_EOF)
    return perr(P, &P->t, "the end of the rule (one rule a line)"), false;
  if (both && (R.nlhs != 1 || R.nrhs != 1 || R.rhs[0].bind.k == T_ATOM || R.lhs[0].bind.k == T_ATOM))
    return perr(P, &arrow, "'=>' ('<=>' takes one pattern a side, no '?v =')"), false;
  for (size_t i = 0; i < rs->n; i++)
    if ((int)strlen(rs->r[i].name) == R.name.len && !memcmp(rs->r[i].name, R.name.s, (size_t)R.name.len))
      return perr(P, &R.name, "a new rule name (this one is taken)"), false;
  if (rs->n + 2 > rs->cap) {
    size_t nc = rs->cap ? rs->cap * 2 : 16;
    ft_erule *nr = realloc(rs->r, nc * sizeof *nr);
    if (!nr) return ft_egraph_fail(P->eg, FT_EGRAPH_ENOMEM, "out of memory"), false;
    rs->r = nr;
    rs->cap = nc;
  }
  if (!compile_rule(P, &R, R.lhs, R.nlhs, R.rhs, R.nrhs, "", &rs->r[rs->n])) return false;
  rs->n++;
  if (both) {
    if (!compile_rule(P, &R, R.rhs, 1, R.lhs, 1, "-rev", &rs->r[rs->n])) return false;
    rs->n++;
  }
  return true;
}

static void parser_init(parser *P, ft_egraph *eg, const char *text, const char *file) {
  memset(P, 0, sizeof *P);
  P->eg = eg;
  P->file = file ? file : "<input>";
  P->src = P->p = P->line_start = text;
  P->line = 1;
  lex(P);
}

ft_egraph_rules *ft_egraph_rules_parse(ft_egraph *eg, const char *text, const char *filename) {
  ft_egraph_rules *rs = calloc(1, sizeof *rs);
  if (!rs) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), NULL;
  parser P;
  parser_init(&P, eg, text, filename);
  while (!P.failed && P.t.k != T_EOF) {
    if (P.t.k == T_NL) {
      lex(&P);
      continue;
    }
    if (!parse_rule(&P, rs)) {
      P.failed = true;
      break;
    }
  }
  pfree(&P);
  if (P.failed) {
    /* every syntax error reports itself (perr): a failure without a status
     * is an allocation that failed */
    if (!eg->status) ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory parsing the rules");
    ft_egraph_rules_free(rs);
    return NULL;
  }
  return rs;
}

void ft_egraph_rules_free(ft_egraph_rules *rs) {
  if (!rs) return;
  for (size_t i = 0; i < rs->n; i++) rule_free(&rs->r[i]);
  free(rs->r);
  free(rs);
}

size_t ft_egraph_rules_count(const ft_egraph_rules *rs) { return rs ? rs->n : 0; }
const char *ft_egraph_rule_name(const ft_egraph_rules *rs, size_t i) {
  return rs && i < rs->n ? rs->r[i].name : NULL;
}

/* ---------------------------------------------------------------- terms */

/* Adds a parsed term bottom-up: classes, or term ids when proving. */
static uint32_t add_ast(ft_egraph *eg, const ast *a, bool terms) {
  uint32_t small[16], *k = a->nkids <= 16 ? small : malloc(a->nkids * 4u);
  if (!k) return ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory"), FT_EGRAPH_NONE;
  uint32_t res = FT_EGRAPH_NONE;
  uint32_t j = 0;
  for (; j < a->nkids; j++)
    if ((k[j] = add_ast(eg, a->kids[j], terms)) == FT_EGRAPH_NONE) break;
  if (j == a->nkids)
    res = terms ? ft_egraph_add_termnode(eg, a->op, a->pbytes, a->npbytes, k, a->nkids)
                : ft_egraph_add(eg, a->op, a->pbytes, a->npbytes, k, a->nkids);
  if (k != small) free(k);
  return res;
}

static uint32_t add_term_text(ft_egraph *eg, const char *text, bool terms) {
  parser P;
  parser_init(&P, eg, text, "<term>");
  while (P.t.k == T_NL) lex(&P);
  ast *a = parse_pat(&P, false, 0);
  while (a && P.t.k == T_NL) lex(&P);
  if (a && P.t.k != T_EOF) perr(&P, &P.t, "the end of the term");
  uint32_t res = FT_EGRAPH_NONE;
  if (a && !P.failed) res = add_ast(eg, a, terms);
  pfree(&P);
  return res;
}

ft_eclass ft_egraph_add_term(ft_egraph *eg, const char *text) {
  uint32_t t = add_term_text(eg, text, false);
  return t == FT_EGRAPH_NONE ? t : ft_egraph_find(eg, t);
}

ft_enode ft_egraph_add_term_id(ft_egraph *eg, const char *text) {
  if (!eg->explain)
    return ft_egraph_fail(eg, FT_EGRAPH_EINVAL, "term ids need explanations enabled"), FT_EGRAPH_NONE;
  return add_term_text(eg, text, true);
}

ft_egraph_status ft_egraph_add_terms(ft_egraph *eg, const char *text, const char *filename,
                                     ft_eclass **ids, size_t *n) {
  parser P;
  parser_init(&P, eg, text, filename);
  ft_eclass *out = NULL;
  size_t cnt = 0, cap = 0;
  while (!P.failed && P.t.k != T_EOF) {
    if (P.t.k == T_NL) {
      lex(&P);
      continue;
    }
    ast *a = parse_pat(&P, false, 0);
    if (!a) break;
    if (P.t.k != T_NL && P.t.k != T_EOF) {
      perr(&P, &P.t, "the end of the term (one term a line)");
      break;
    }
    uint32_t c = add_ast(eg, a, eg->explain);
    if (c != FT_EGRAPH_NONE) c = ft_egraph_find(eg, c);
    if (c == FT_EGRAPH_NONE) {
      P.failed = true;
      break;
    }
    if (cnt == cap) {
      cap = cap ? cap * 2 : 16;
      ft_eclass *no = realloc(out, cap * sizeof *no);
      if (!no) {
        ft_egraph_fail(eg, FT_EGRAPH_ENOMEM, "out of memory");
        P.failed = true;
        break;
      }
      out = no;
    }
    out[cnt++] = c;
  }
  pfree(&P);
  if (P.failed) {
    free(out);
    return eg->status ? eg->status : FT_EGRAPH_EPARSE;
  }
  if (ids) *ids = out;
  else free(out);
  if (n) *n = cnt;
  return FT_EGRAPH_OK;
}
