/* tests/egraph/test_egraph.c: the e-graph engine (src/egraph). The math
 * micro-benchmark's exact sizes per iteration (egg 0.9.5's), egg's
 * commutativity + associativity saturation counts, proofs checked step by
 * step against the rules, limits and stop reasons, the unsound-rule
 * (constant conflict) error from the engine and from an analysis, guards,
 * param functions, multi-patterns, non-linear patterns, extraction, and
 * rule-parse errors with line:col, and the nesting limit (deep input is an
 * error, never a stack overflow). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"

/* FT_SANITIZED builds are ~3-5x slower; every test here stays well under
 * the budget at N = 9 either way (N = 9 takes ~10 ms unsanitized). */
#ifndef FT_SANITIZED
#define FT_SANITIZED 0
#endif

static const char *BENCH_RULES =
    "comm-add:   (+ ?a ?b) => (+ ?b ?a)\n"
    "comm-mul:   (* ?a ?b) => (* ?b ?a)\n"
    "assoc-add:  (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c)\n"
    "assoc-mul:  (* ?a (* ?b ?c)) => (* (* ?a ?b) ?c)\n"
    "sub-canon:  (- ?a ?b) => (+ ?a (* -1 ?b))\n"
    "zero-add:   (+ ?a 0) => ?a\n"
    "zero-mul:   (* ?a 0) => 0\n"
    "one-mul:    (* ?a 1) => ?a\n"
    "cancel-sub: (- ?a ?a) => 0\n"
    "distribute: (* ?a (+ ?b ?c)) => (+ (* ?a ?b) (* ?a ?c))\n"
    "factor:     (+ (* ?a ?b) (* ?a ?c)) => (* ?a (+ ?b ?c))\n"
    "pow-mul:    (* (pow ?a ?b) (pow ?a ?c)) => (pow ?a (+ ?b ?c))\n"
    "pow1:       (pow ?x 1) => ?x\n"
    "pow2:       (pow ?x 2) => (* ?x ?x)\n"
    "d-add:      (d ?x (+ ?a ?b)) => (+ (d ?x ?a) (d ?x ?b))\n"
    "d-mul:      (d ?x (* ?a ?b)) => (+ (* ?a (d ?x ?b)) (* ?b (d ?x ?a)))\n"
    "d-sin:      (d ?x (sin ?x)) => (cos ?x)\n"
    "d-cos:      (d ?x (cos ?x)) => (* -1 (sin ?x))\n"
    "i-one:      (i 1 ?x) => ?x\n"
    "i-cos:      (i (cos ?x) ?x) => (sin ?x)\n"
    "i-sin:      (i (sin ?x) ?x) => (* -1 (cos ?x))\n"
    "i-sum:      (i (+ ?f ?g) ?x) => (+ (i ?f ?x) (i ?g ?x))\n"
    "i-dif:      (i (- ?f ?g) ?x) => (- (i ?f ?x) (i ?g ?x))\n"
    "i-parts:    (i (* ?a ?b) ?x) => (- (* ?a (i ?b ?x)) (i (* (d ?x ?a) (i ?b ?x)) ?x))\n";

static const char *BENCH_TERMS =
    "(i (ln x) x)\n"
    "(i (+ x (cos x)) x)\n"
    "(i (* (cos x) x) x)\n"
    "(d x (+ 1 (* 2 x)))\n"
    "(d x (- (pow x 3) (* 7 (pow x 2))))\n"
    "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))\n"
    "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))\n";

/* egg 0.9.5's sizes after N iterations (shared/egraph/README.md). */
static const size_t BENCH_NODES[] = {69, 118, 208, 389, 784, 1576, 3160, 8113, 28303};
static const size_t BENCH_CLASSES[] = {50, 71, 116, 197, 361, 666, 1347, 3576, 12445};

static ft_egraph_run_opts simple_opts(size_t iters) {
  ft_egraph_run_opts o = ft_egraph_run_defaults();
  o.scheduler = FT_SCHED_SIMPLE;
  o.iter_limit = iters;
  o.node_limit = 0;
  o.time_limit = 0;
  return o;
}

/* Builds an e-graph with the rules and terms, failing the test on errors. */
static ft_egraph *setup(const char *rules, const char *terms, ft_egraph_rules **rs, bool explain) {
  ft_egraph *eg = ft_egraph_new();
  ck_assert_ptr_nonnull(eg);
  if (explain) ck_assert_int_eq(ft_egraph_enable_explanations(eg), FT_EGRAPH_OK);
  *rs = ft_egraph_rules_parse(eg, rules, "<rules>");
  ck_assert_msg(*rs != NULL, "%s", ft_egraph_error(eg));
  if (terms) ck_assert_msg(ft_egraph_add_terms(eg, terms, "<terms>", NULL, NULL) == FT_EGRAPH_OK, "%s",
                           ft_egraph_error(eg));
  return eg;
}

/* ------------------------------------------------------------ counts */

START_TEST(bench_counts_n1_to_9) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  ck_assert_uint_eq(ft_egraph_rules_count(rs), 24);
  ft_egraph_run_opts o = simple_opts(9);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_ITER_LIMIT);
  ck_assert_uint_eq(rep.niters, 9);
  for (size_t i = 0; i < 9; i++) {
    ck_assert_uint_eq(rep.iters[i].nodes, BENCH_NODES[i]);
    ck_assert_uint_eq(rep.iters[i].classes, BENCH_CLASSES[i]);
  }
  /* every + node matches comm-add in the 9th iteration's search */
  ck_assert_uint_eq(rep.iters[8].matches[0], 2977);
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), 28303);
  ck_assert_uint_eq(ft_egraph_num_classes(eg), 12445);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* The same counts, one fresh e-graph per N (runs must not depend on history). */
START_TEST(bench_counts_fresh_per_n) {
  for (size_t n = 1; n <= 7; n++) {
    ft_egraph_rules *rs;
    ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
    ft_egraph_run_opts o = simple_opts(n);
    ft_egraph_report rep;
    ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
    ck_assert_uint_eq(ft_egraph_num_nodes(eg), BENCH_NODES[n - 1]);
    ck_assert_uint_eq(ft_egraph_num_classes(eg), BENCH_CLASSES[n - 1]);
    ft_egraph_report_free(&rep);
    ft_egraph_rules_free(rs);
    ft_egraph_free(eg);
  }
}
END_TEST

/* egg's test: comm + assoc over an n-term sum saturate to every nonempty
 * subset (2^n - 1 classes) and every split of each (3^n - 2^(n+1) + 1 + n
 * nodes). */
START_TEST(comm_assoc_saturates) {
  for (int n = 2; n <= 7; n++) {
    char term[256] = "", tail[64] = "";
    for (int i = 0; i < n - 1; i++) {
      char b[32];
      snprintf(b, sizeof b, "(+ x%d ", i);
      strcat(term, b);
      strcat(tail, ")");
    }
    char last[16];
    snprintf(last, sizeof last, "x%d", n - 1);
    strcat(term, last);
    strcat(term, tail);
    ft_egraph_rules *rs;
    ft_egraph *eg = setup("comm: (+ ?a ?b) => (+ ?b ?a)\n"
                          "assoc: (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c)\n",
                          term, &rs, false);
    ft_egraph_run_opts o = simple_opts(100);
    ft_egraph_report rep;
    ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
    ck_assert_int_eq(rep.stop, FT_STOP_SATURATED);
    size_t p3 = 1, p2 = 1;
    for (int i = 0; i < n; i++) p3 *= 3, p2 *= 2;
    ck_assert_uint_eq(ft_egraph_num_classes(eg), p2 - 1);
    ck_assert_uint_eq(ft_egraph_num_nodes(eg), p3 - 2 * p2 + 1 + (size_t)n);
    if (n == 7) {
      ck_assert_uint_eq(ft_egraph_num_classes(eg), 127);
      ck_assert_uint_eq(ft_egraph_num_nodes(eg), 1939);
    }
    ft_egraph_report_free(&rep);
    ft_egraph_rules_free(rs);
    ft_egraph_free(eg);
  }
}
END_TEST

/* ------------------------------------------------------------ proofs */

/* A tiny s-expression tree for checking proof steps independently of the
 * engine. Leaves and operators are strings; ?x is a pattern variable. */
typedef struct sx {
  char *op;
  int n;
  struct sx **k;
} sx;

static sx *sx_parse(const char **p) {
  while (**p == ' ') (*p)++;
  sx *t = calloc(1, sizeof *t);
  if (**p == '(') {
    (*p)++;
    while (**p == ' ') (*p)++;
    const char *s = *p;
    while (**p && !strchr(" ()", **p)) (*p)++;
    t->op = strndup(s, (size_t)(*p - s));
    for (;;) {
      while (**p == ' ') (*p)++;
      if (**p == ')') {
        (*p)++;
        break;
      }
      ck_assert_msg(**p != 0, "unbalanced term");
      t->k = realloc(t->k, (size_t)(t->n + 1) * sizeof *t->k);
      t->k[t->n++] = sx_parse(p);
    }
  } else {
    const char *s = *p;
    while (**p && !strchr(" ()", **p)) (*p)++;
    t->op = strndup(s, (size_t)(*p - s));
  }
  return t;
}

static sx *sx_of(const char *s) { return sx_parse(&s); }

static void sx_free(sx *t) {
  if (!t) return;
  for (int i = 0; i < t->n; i++) sx_free(t->k[i]);
  free(t->k);
  free(t->op);
  free(t);
}

static bool sx_eq(const sx *a, const sx *b) {
  if (strcmp(a->op, b->op) || a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (!sx_eq(a->k[i], b->k[i])) return false;
  return true;
}

typedef struct {
  const char *var[16];
  const sx *val[16];
  int n;
} binding;

/* Matches pattern p against term t, extending b (non-linear vars compare). */
static bool sx_match(const sx *p, const sx *t, binding *b) {
  if (p->op[0] == '?' && p->n == 0) {
    for (int i = 0; i < b->n; i++)
      if (!strcmp(b->var[i], p->op)) return sx_eq(b->val[i], t);
    b->var[b->n] = p->op;
    b->val[b->n++] = t;
    return true;
  }
  if (strcmp(p->op, t->op) || p->n != t->n) return false;
  for (int i = 0; i < p->n; i++)
    if (!sx_match(p->k[i], t->k[i], b)) return false;
  return true;
}

/* True if some position on the path to the single difference between a and
 * b holds a rule instance l -> r rewriting a's subterm into b's. */
static bool valid_step(const sx *a, const sx *b, const sx *l, const sx *r) {
  binding bd = {0};
  if (sx_match(l, a, &bd)) {
    binding b2 = bd;
    if (sx_match(r, b, &b2) && b2.n == bd.n) return true;
  }
  if (strcmp(a->op, b->op) || a->n != b->n) return false;
  int diff = -1;
  for (int i = 0; i < a->n; i++)
    if (!sx_eq(a->k[i], b->k[i])) {
      if (diff >= 0) return false; /* two children changed: not one rewrite below here */
      diff = i;
    }
  return diff >= 0 && valid_step(a->k[diff], b->k[diff], l, r);
}

/* Checks a whole proof: starts at a, ends at b, each step one rule instance. */
static void check_proof(const ft_egraph_proof *pf, const char *rules[][2], const ft_egraph_rules *rs,
                        const char *a, const char *b) {
  ck_assert_uint_ge(pf->nsteps, 1);
  ck_assert_str_eq(pf->steps[0].term, a);
  ck_assert_str_eq(pf->steps[pf->nsteps - 1].term, b);
  for (size_t i = 1; i < pf->nsteps; i++) {
    int r = pf->steps[i].rule;
    ck_assert_int_ge(r, 0);
    const char *name = ft_egraph_rule_name(rs, (size_t)r);
    int k = 0;
    while (rules[k][0] && strncmp(rules[k][0], name, strlen(name))) k++;
    ck_assert_ptr_nonnull(rules[k][0]);
    sx *l = sx_of(rules[k][0] + strlen(name) + 1), *rr = sx_of(rules[k][1]);
    sx *prev = sx_of(pf->steps[i - 1].term), *next = sx_of(pf->steps[i].term);
    bool ok = pf->steps[i].backward ? valid_step(prev, next, rr, l) : valid_step(prev, next, l, rr);
    ck_assert_msg(ok, "step %zu [%s%s]: %s -> %s is not a rule instance", i, name,
                  pf->steps[i].backward ? " <=" : "", pf->steps[i - 1].term, pf->steps[i].term);
    sx_free(l), sx_free(rr), sx_free(prev), sx_free(next);
  }
}

/* The micro-benchmark's rules as "name LHS" / "RHS" pairs for the checker. */
static const char *BENCH_PAIRS[][2] = {
    {"comm-add (+ ?a ?b)", "(+ ?b ?a)"},
    {"comm-mul (* ?a ?b)", "(* ?b ?a)"},
    {"assoc-add (+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"},
    {"assoc-mul (* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"},
    {"sub-canon (- ?a ?b)", "(+ ?a (* -1 ?b))"},
    {"zero-add (+ ?a 0)", "?a"},
    {"zero-mul (* ?a 0)", "0"},
    {"one-mul (* ?a 1)", "?a"},
    {"cancel-sub (- ?a ?a)", "0"},
    {"distribute (* ?a (+ ?b ?c))", "(+ (* ?a ?b) (* ?a ?c))"},
    {"factor (+ (* ?a ?b) (* ?a ?c))", "(* ?a (+ ?b ?c))"},
    {"pow-mul (* (pow ?a ?b) (pow ?a ?c))", "(pow ?a (+ ?b ?c))"},
    {"pow1 (pow ?x 1)", "?x"},
    {"pow2 (pow ?x 2)", "(* ?x ?x)"},
    {"d-add (d ?x (+ ?a ?b))", "(+ (d ?x ?a) (d ?x ?b))"},
    {"d-mul (d ?x (* ?a ?b))", "(+ (* ?a (d ?x ?b)) (* ?b (d ?x ?a)))"},
    {"d-sin (d ?x (sin ?x))", "(cos ?x)"},
    {"d-cos (d ?x (cos ?x))", "(* -1 (sin ?x))"},
    {"i-one (i 1 ?x)", "?x"},
    {"i-cos (i (cos ?x) ?x)", "(sin ?x)"},
    {"i-sin (i (sin ?x) ?x)", "(* -1 (cos ?x))"},
    {"i-sum (i (+ ?f ?g) ?x)", "(+ (i ?f ?x) (i ?g ?x))"},
    {"i-dif (i (- ?f ?g) ?x)", "(- (i ?f ?x) (i ?g ?x))"},
    {"i-parts (i (* ?a ?b) ?x)", "(- (* ?a (i ?b ?x)) (i (* (d ?x ?a) (i ?b ?x)) ?x))"},
    {NULL, NULL}};

START_TEST(explain_bench_proofs) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, true);
  const char *pairs[][2] = {
      {"(+ (* y (+ x y)) (- (+ x 2) (+ x x)))", "(+ (* (+ y x) y) (- (+ x 2) (+ x x)))"},
      {"(d x (+ 1 (* 2 x)))", "(+ (d x 1) (d x (* 2 x)))"},
      {"(i (+ x (cos x)) x)", "(+ (i x x) (sin x))"},
      {"(+ (* y (+ x y)) (- (+ x 2) (+ x x)))", "(+ (+ (* y x) (* y y)) (- (+ x 2) (+ x x)))"},
  };
  size_t np = sizeof pairs / sizeof pairs[0];
  ft_enode ids[8][2];
  for (size_t i = 0; i < np; i++)
    for (int j = 0; j < 2; j++) {
      ids[i][j] = ft_egraph_add_term_id(eg, pairs[i][j]);
      ck_assert_uint_ne(ids[i][j], FT_EGRAPH_NONE);
    }
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ft_egraph_report_free(&rep);
  for (size_t i = 0; i < np; i++) {
    ft_egraph_proof pf;
    ck_assert_msg(ft_egraph_explain_ids(eg, rs, ids[i][0], ids[i][1], &pf) == FT_EGRAPH_OK, "%s",
                  ft_egraph_error(eg));
    ck_assert_uint_ge(pf.nsteps, 2);
    check_proof(&pf, BENCH_PAIRS, rs, pairs[i][0], pairs[i][1]);
    ft_egraph_proof_free(&pf);
  }
  /* the string form re-finds the same terms */
  ft_egraph_proof pf;
  ck_assert_int_eq(ft_egraph_explain(eg, rs, pairs[2][0], pairs[2][1], &pf), FT_EGRAPH_OK);
  check_proof(&pf, BENCH_PAIRS, rs, pairs[2][0], pairs[2][1]);
  ft_egraph_proof_free(&pf);
  /* unequal terms are reported, not explained */
  ck_assert_int_eq(ft_egraph_explain(eg, rs, "(i (ln x) x)", "x", &pf), FT_EGRAPH_ENOTEQUAL);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

START_TEST(explain_exact_chain) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup("comm-add: (+ ?a ?b) => (+ ?b ?a)\nzero-add: (+ ?a 0) => ?a\n", NULL, &rs, true);
  ft_enode a = ft_egraph_add_term_id(eg, "(+ 0 (+ x y))"), b = ft_egraph_add_term_id(eg, "(+ y x)");
  ft_egraph_run_opts o = simple_opts(10);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_SATURATED);
  ft_egraph_report_free(&rep);
  ft_egraph_proof pf;
  ck_assert_int_eq(ft_egraph_explain_ids(eg, rs, a, b, &pf), FT_EGRAPH_OK);
  ck_assert_uint_eq(pf.nsteps, 4);
  ck_assert_str_eq(pf.steps[0].term, "(+ 0 (+ x y))");
  ck_assert_str_eq(pf.steps[1].term, "(+ (+ x y) 0)");
  ck_assert_str_eq(ft_egraph_rule_name(rs, (size_t)pf.steps[1].rule), "comm-add");
  ck_assert_str_eq(pf.steps[2].term, "(+ x y)");
  ck_assert_str_eq(ft_egraph_rule_name(rs, (size_t)pf.steps[2].rule), "zero-add");
  ck_assert_str_eq(pf.steps[3].term, "(+ y x)");
  ck_assert_str_eq(ft_egraph_rule_name(rs, (size_t)pf.steps[3].rule), "comm-add");
  ft_egraph_proof_free(&pf);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* Recording proofs adds term ids but must not change what egg counts. */
START_TEST(explain_keeps_counts) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, true);
  ft_egraph_run_opts o = simple_opts(7);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  for (size_t i = 0; i < 7; i++) {
    ck_assert_uint_eq(rep.iters[i].nodes, BENCH_NODES[i]);
    ck_assert_uint_eq(rep.iters[i].classes, BENCH_CLASSES[i]);
  }
  ck_assert_uint_gt(ft_egraph_num_ids(eg), 3160);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

START_TEST(explain_off_is_refused) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup("r: (f ?a) => ?a\n", "(f x)", &rs, false);
  ft_egraph_proof pf;
  ck_assert_int_eq(ft_egraph_explain(eg, rs, "(f x)", "x", &pf), FT_EGRAPH_EINVAL);
  ck_assert_uint_eq(ft_egraph_add_term_id(eg, "x"), FT_EGRAPH_NONE);
  ck_assert_int_eq(ft_egraph_enable_explanations(eg), FT_EGRAPH_EINVAL); /* not on a used e-graph */
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ limits */

START_TEST(limits_and_stop_reasons) {
  ft_egraph_rules *rs;
  ft_egraph_report rep;
  /* iteration limit */
  ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  ft_egraph_run_opts o = simple_opts(3);
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_ITER_LIMIT);
  ck_assert_uint_eq(rep.niters, 3);
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), 208);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  /* node limit: stops once the e-graph holds more than the limit (after
   * the rule that crossed it; the iteration still rebuilds) */
  eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  o = simple_opts(30);
  o.node_limit = 1000;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_NODE_LIMIT);
  ck_assert_uint_eq(rep.niters, 6);
  ck_assert_uint_gt(ft_egraph_num_nodes(eg), 784);
  ck_assert_uint_lt(ft_egraph_num_nodes(eg), 1576);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  /* time limit */
  eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  o = simple_opts(30);
  o.time_limit = 1e-9;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_TIME_LIMIT);
  ck_assert_uint_le(rep.niters, 1);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  /* memory limit */
  eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  o = simple_opts(30);
  o.memory_limit = 4u << 20;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_MEMORY_LIMIT);
  ck_assert_uint_lt(rep.niters, 30);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  /* saturation */
  eg = setup("r: (f (f ?x)) => ?x\n", "(f (f (f (f a))))", &rs, false);
  o = simple_opts(30);
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_SATURATED);
  ck_assert_uint_eq(ft_egraph_num_classes(eg), 2); /* {a, f(f a)..}, {f a, ..} */
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), 3);   /* a, (f A), (f FA) */
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* The backoff scheduler bans a rule whose matches exceed its limit, for
 * ban_length iterations, both doubling per ban (egg's defaults). */
START_TEST(backoff_bans) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup(BENCH_RULES, BENCH_TERMS, &rs, false);
  ft_egraph_run_opts o = ft_egraph_run_defaults();
  ck_assert_int_eq(o.scheduler, FT_SCHED_BACKOFF);
  ck_assert_uint_eq(o.match_limit, 1000);
  ck_assert_uint_eq(o.ban_length, 5);
  o.match_limit = 50;
  o.ban_length = 2;
  o.iter_limit = 8;
  o.node_limit = 0;
  o.time_limit = 0;
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_uint_eq(rep.niters, 8);
  /* comm-add: 69 > 50 matches in iteration 4 (index 3): banned until
   * 3 + 2 (skipped in iteration index 4); back in index 5 with limit 100,
   * 101 > 100: banned again until 5 + 4 (skips indices 6, 7) */
  ck_assert_uint_eq(rep.iters[2].matches[0], 36);
  ck_assert_uint_eq(rep.iters[3].matches[0], 51); /* search stops at limit + 1 */
  ck_assert_uint_eq(rep.iters[3].applied[0], 0);
  ck_assert_uint_eq(rep.iters[4].matches[0], 0);
  ck_assert_uint_eq(rep.iters[5].matches[0], 101);
  ck_assert_uint_eq(rep.iters[5].applied[0], 0);
  ck_assert_uint_eq(rep.iters[6].matches[0], 0);
  ck_assert_uint_eq(rep.iters[7].matches[0], 0);
  ck_assert_uint_lt(ft_egraph_num_nodes(eg), 3160);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ conflicts */

START_TEST(constant_conflict_names_rule) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup("same: (f ?x) => z\nunwrap: (f ?x) => ?x\n", "(f 1)\n(f 2)\n", &rs, false);
  ft_eclass one = ft_egraph_add_int(eg, 1), two = ft_egraph_add_int(eg, 2);
  ft_egraph_run_opts o = simple_opts(10);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_ERROR);
  ck_assert_int_eq(ft_egraph_status_of(eg), FT_EGRAPH_ECONFLICT);
  ck_assert_str_eq(ft_egraph_error(eg), "unsound rule 'unwrap': it merges the constants 1 and 2");
  ck_assert_uint_ne(ft_egraph_find(eg, one), ft_egraph_find(eg, two));
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

START_TEST(constant_conflict_direct_union) {
  ft_egraph *eg = ft_egraph_new();
  ft_eclass a = ft_egraph_add_float(eg, 1.5), b = ft_egraph_add_float(eg, -0.0);
  ft_eclass x = ft_egraph_add(eg, ft_egraph_intern(eg, "x"), NULL, 0, NULL, 0);
  ck_assert_int_eq(ft_egraph_union(eg, a, x), 1);
  ck_assert_int_eq(ft_egraph_union(eg, x, b), -1);
  ck_assert_int_eq(ft_egraph_status_of(eg), FT_EGRAPH_ECONFLICT);
  ck_assert_ptr_nonnull(strstr(ft_egraph_error(eg), "1.5 and -0.0"));
  ck_assert_uint_eq(ft_egraph_num_classes(eg), 2);
  ft_egraph_free(eg);
}
END_TEST

/* A constant-folding analysis over + and *: make folds, merge detects
 * conflicts, modify adds the folded constant to the class. */
typedef struct {
  bool has;
  int64_t v;
} cf_data;

typedef struct {
  uint32_t add, mul;
} cf_ops;

static void cf_make(void *ud, ft_egraph *eg, ft_enode n, void *out) {
  const cf_ops *ops = ud;
  cf_data *d = out;
  ft_enode_view v = ft_egraph_node(eg, n);
  d->has = false;
  d->v = 0;
  if (v.op == FT_EGRAPH_OP_INT) {
    d->has = true;
    memcpy(&d->v, v.params, 8);
  } else if ((v.op == ops->add || v.op == ops->mul) && v.nkids == 2) {
    const cf_data *a = ft_egraph_data(eg, v.kids[0]), *b = ft_egraph_data(eg, v.kids[1]);
    if (a->has && b->has) {
      d->has = true;
      d->v = v.op == ops->add ? a->v + b->v : a->v * b->v;
    }
  }
}

static int cf_merge(void *ud, void *dst, const void *src) {
  (void)ud;
  cf_data *d = dst;
  const cf_data *s = src;
  if (!s->has) return d->has ? FT_EGRAPH_MERGE_SRC_CHANGED : 0;
  if (!d->has) {
    *d = *s;
    return FT_EGRAPH_MERGE_DST_CHANGED;
  }
  return d->v == s->v ? 0 : FT_EGRAPH_MERGE_CONFLICT;
}

static void cf_modify(void *ud, ft_egraph *eg, ft_eclass c) {
  (void)ud;
  const cf_data *d = ft_egraph_data(eg, c);
  if (d->has) ft_egraph_union(eg, c, ft_egraph_add_int(eg, d->v));
}

static void cf_describe(void *ud, const void *data, char *buf, size_t len) {
  (void)ud;
  const cf_data *d = data;
  if (d->has) snprintf(buf, len, "%lld", (long long)d->v);
  else snprintf(buf, len, "(none)");
}

static ft_egraph *cf_egraph(cf_ops *ops) {
  ft_egraph *eg = ft_egraph_new();
  ops->add = ft_egraph_intern(eg, "+");
  ops->mul = ft_egraph_intern(eg, "*");
  ft_egraph_analysis an = {sizeof(cf_data), ops, cf_make, cf_merge, cf_modify, cf_describe};
  ck_assert_int_eq(ft_egraph_set_analysis(eg, &an), FT_EGRAPH_OK);
  return eg;
}

START_TEST(analysis_constant_folding) {
  cf_ops ops;
  ft_egraph *eg = cf_egraph(&ops);
  ft_eclass t = ft_egraph_add_term(eg, "(+ (* 2 3) (+ x 0))");
  ft_eclass six = ft_egraph_add_term(eg, "(* 2 3)");
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_find(eg, six), ft_egraph_find(eg, ft_egraph_add_int(eg, 6)));
  ck_assert(!((cf_data *)ft_egraph_data(eg, t))->has);
  /* x = 4 propagates upward through the rebuild: 6 + (4 + 0) = 10 */
  ft_eclass x = ft_egraph_add_term(eg, "x");
  ck_assert_int_eq(ft_egraph_union(eg, x, ft_egraph_add_int(eg, 4)), 1);
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  const cf_data *d = ft_egraph_data(eg, t);
  ck_assert(d->has);
  ck_assert_int_eq(d->v, 10);
  ck_assert_uint_eq(ft_egraph_find(eg, t), ft_egraph_find(eg, ft_egraph_add_int(eg, 10)));
  ft_egraph_free(eg);
}
END_TEST

START_TEST(analysis_conflict_names_rule) {
  cf_ops ops;
  ft_egraph *eg = cf_egraph(&ops);
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, "add-is-mul: (+ ?a ?b) => (* ?a ?b)\n", "<rules>");
  ck_assert_ptr_nonnull(rs);
  ft_egraph_add_term(eg, "(+ 2 3)");
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_ERROR);
  ck_assert_str_eq(ft_egraph_error(eg), "unsound rule 'add-is-mul': it merges the constants 5 and 6");
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ rule features */

static bool g_nonzero(void *ud, ft_egraph *eg, const uint32_t *args, size_t n) {
  (void)ud;
  ck_assert_uint_eq(n, 1);
  ft_enode k = ft_egraph_class_const(eg, args[0]);
  if (k == FT_EGRAPH_NONE) return false;
  int64_t v;
  memcpy(&v, ft_egraph_node(eg, k).params, 8);
  return v != 0;
}

START_TEST(guards) {
  ft_egraph *eg = ft_egraph_new();
  ck_assert_int_eq(ft_egraph_register_guard(eg, "nonzero", g_nonzero, NULL), FT_EGRAPH_OK);
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, "div-cancel: (/ (* ?a ?b) ?b) => ?a if nonzero(?b)\n", "<r>");
  ck_assert_msg(rs != NULL, "%s", ft_egraph_error(eg));
  ft_eclass t1 = ft_egraph_add_term(eg, "(/ (* x 2) 2)"), t0 = ft_egraph_add_term(eg, "(/ (* y 0) 0)");
  ft_eclass x = ft_egraph_add_term(eg, "x"), y = ft_egraph_add_term(eg, "y");
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_find(eg, t1), ft_egraph_find(eg, x));
  ck_assert_uint_ne(ft_egraph_find(eg, t0), ft_egraph_find(eg, y));
  ck_assert_uint_eq(rep.iters[0].matches[0], 2);
  ck_assert_uint_eq(rep.iters[0].applied[0], 1);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* Composes two permutations stored as int64 params: (p . q)[i] = q[p[i]]. */
static bool compose_perm(void *ud, ft_egraph *eg, const uint32_t *args, size_t n, void *out, size_t *len) {
  (void)ud;
  ck_assert_uint_eq(n, 2);
  ft_enode_view a = ft_egraph_node(eg, args[0]), b = ft_egraph_node(eg, args[1]);
  if (a.pbytes != b.pbytes || *len < a.pbytes) return false;
  const int64_t *p = a.params, *q = b.params;
  int64_t r[64];
  size_t k = a.pbytes / 8;
  for (size_t i = 0; i < k; i++) r[i] = q[p[i]];
  memcpy(out, r, a.pbytes);
  *len = a.pbytes;
  return true;
}

START_TEST(param_functions) {
  ft_egraph *eg = ft_egraph_new();
  ck_assert_int_eq(ft_egraph_register_param_fn(eg, "compose", compose_perm, NULL), FT_EGRAPH_OK);
  ft_egraph_rules *rs = ft_egraph_rules_parse(
      eg, "tt: (transpose[?p] (transpose[?q] ?x)) => (transpose[@compose(?p, ?q)] ?x)\n"
          "id: (transpose[0, 1, 2] ?x) => ?x\n", "<r>");
  ck_assert_msg(rs != NULL, "%s", ft_egraph_error(eg));
  ft_eclass t = ft_egraph_add_term(eg, "(transpose[1, 2, 0] (transpose[2, 0, 1] a))");
  ft_eclass t2 = ft_egraph_add_term(eg, "(transpose[1, 0, 2] (transpose[2, 0, 1] a))");
  ft_eclass a = ft_egraph_add_term(eg, "a");
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_find(eg, t), ft_egraph_find(eg, a));
  /* [1,0,2] . [2,0,1] = [0,2,1] */
  ft_eclass expect = ft_egraph_add_term(eg, "(transpose[0, 2, 1] a)");
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_find(eg, t2), ft_egraph_find(eg, expect));
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

START_TEST(nonlinear_and_multipatterns) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup("cancel: (- ?a ?a) => 0\n"
                        "join: ?r = (f ?x), ?s = (g ?x) => ?r = (h ?x), ?s = ?r\n",
                        "(- x x)\n(- x y)\n(f a)\n(g a)\n(g b)\n", &rs, false);
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_SATURATED);
  ft_eclass z = ft_egraph_add_int(eg, 0);
  ck_assert_uint_eq(ft_egraph_add_term(eg, "(- x x)"), ft_egraph_find(eg, z));
  ck_assert_uint_ne(ft_egraph_add_term(eg, "(- x y)"), ft_egraph_find(eg, z));
  ft_eclass fa = ft_egraph_add_term(eg, "(f a)");
  ck_assert_uint_eq(ft_egraph_add_term(eg, "(g a)"), fa);
  ck_assert_uint_eq(ft_egraph_add_term(eg, "(h a)"), fa);
  ck_assert_uint_ne(ft_egraph_add_term(eg, "(g b)"), fa);
  ck_assert_uint_eq(ft_egraph_rule_nvars(rs, 1), 3); /* r, x, s */
  ck_assert_str_eq(ft_egraph_rule_var(rs, 1, 1), "x");
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

START_TEST(bidirectional_and_floats) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup("half: (* ?x 0.5) <=> (/ ?x 2)\n", "(* a 0.5)\n(/ b 2)\n", &rs, false);
  ck_assert_uint_eq(ft_egraph_rules_count(rs), 2);
  ck_assert_str_eq(ft_egraph_rule_name(rs, 1), "half-rev");
  ft_egraph_run_opts o = simple_opts(5);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_add_term(eg, "(/ a 2)"), ft_egraph_add_term(eg, "(* a 0.5)"));
  ck_assert_uint_eq(ft_egraph_add_term(eg, "(* b 0.5)"), ft_egraph_add_term(eg, "(/ b 2)"));
  ck_assert_uint_ne(ft_egraph_add_term(eg, "(* b 0.5)"), ft_egraph_add_term(eg, "(* b 0.50000001)"));
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ extraction */

static double op_cost(void *ud, ft_egraph *eg, ft_enode n) {
  (void)ud;
  const char *op = ft_egraph_op_name(eg, ft_egraph_node(eg, n).op);
  return !strcmp(op, "*") ? 4.0 : 1.0;
}

START_TEST(extract_tree) {
  ft_egraph_rules *rs;
  ft_egraph *eg = setup(BENCH_RULES, NULL, &rs, false);
  ft_eclass r = ft_egraph_add_term(eg, "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))");
  ft_egraph_run_opts o = simple_opts(6);
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ft_egraph_term *t = ft_egraph_extract(eg, &r, 1, FT_EXTRACT_TREE, NULL, NULL);
  ck_assert_ptr_nonnull(t);
  char *s = ft_egraph_term_print(eg, t, 0);
  /* no rule here shrinks it below its own 13 nodes */
  ck_assert_str_eq(s, "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))");
  ck_assert_double_eq(t->cost, 13.0);
  free(s);
  ft_egraph_term_free(t);
  ft_egraph_report_free(&rep);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
}
END_TEST

/* Tree cost prefers (g C) (1 + 7 = 8) over (f A A) (1 + 4 + 4 = 9); counting
 * the shared A once, (f A A) costs 5 and the DAG extractor takes it. */
START_TEST(extract_dag_shares) {
  ft_egraph *eg = ft_egraph_new();
  ft_eclass f = ft_egraph_add_term(eg, "(f (h (h (h x))) (h (h (h x))))");
  ft_eclass g = ft_egraph_add_term(eg, "(g (k (k (k (k (k y))))))");
  ft_egraph_union(eg, f, g);
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  ft_egraph_term *t = ft_egraph_extract(eg, &f, 1, FT_EXTRACT_TREE, NULL, NULL);
  char *s = ft_egraph_term_print(eg, t, 0);
  ck_assert_str_eq(s, "(g (k (k (k (k (k y))))))");
  ck_assert_double_eq(t->cost, 7.0);
  free(s);
  ft_egraph_term_free(t);
  t = ft_egraph_extract(eg, &f, 1, FT_EXTRACT_DAG, NULL, NULL);
  s = ft_egraph_term_print(eg, t, 0);
  ck_assert_str_eq(s, "(f (h (h (h x))) (h (h (h x))))");
  ck_assert_double_eq(t->cost, 5.0);
  ck_assert_uint_eq(t->nnodes, 5); /* a DAG: the shared subterm is laid out once */
  free(s);
  ft_egraph_term_free(t);
  /* a custom cost function changes the choice */
  t = ft_egraph_extract(eg, &f, 1, FT_EXTRACT_TREE, op_cost, NULL);
  ck_assert_double_eq(t->cost, 7.0);
  ft_egraph_term_free(t);
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ parse errors */

static void expect_parse_error(const char *rules, const char *msg) {
  ft_egraph *eg = ft_egraph_new();
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, rules, "t.rules");
  ck_assert_ptr_null(rs);
  ck_assert_int_eq(ft_egraph_status_of(eg), FT_EGRAPH_EPARSE);
  const char *e = ft_egraph_error(eg);
  ck_assert_msg(!strncmp(e, msg, strlen(msg)), "got: %s\nwant: %s", e, msg);
  ft_egraph_free(eg);
}

START_TEST(rule_parse_errors) {
  expect_parse_error("ok: (f ?x) => ?x\nbad: (f ?x) ?x\n",
                     "t.rules:2:13: expected '=>' or '<=>' (or ',' and another pattern) but found '?x'\n"
                     "  bad: (f ?x) ?x\n"
                     "              ^");
  /* newlines inside brackets are spaces, so an unclosed '(' runs to the end */
  expect_parse_error("r: (f ?x => ?x\n", "t.rules:2:1: expected ')' but found end of input");
  expect_parse_error("r: (f ?x) => (g ?y)\n",
                     "t.rules:1:17: expected a variable bound by the left-hand side but found '?y'");
  expect_parse_error("r: ?x => (g ?x)\n",
                     "t.rules:1:4: expected an operator pattern (a left-hand side cannot be a bare "
                     "variable) but found '?x'");
  expect_parse_error("r (f ?x) => ?x\n", "t.rules:1:3: expected ':' after the rule name but found '('");
  expect_parse_error("r: (f ?x) => ?x if positive(?x)\n",
                     "t.rules:1:20: expected a registered guard name but found 'positive'");
  expect_parse_error("r: (f ?x) => ?x\nr: (g ?x) => ?x\n",
                     "t.rules:2:1: expected a new rule name (this one is taken) but found 'r'");
  expect_parse_error("r: (f[1, x] ?x) => ?x\n", "t.rules:1:10: expected a number in the params but found 'x'");
  expect_parse_error("r: (f ?x) => (g[@nope(?x)] ?x)\n",
                     "t.rules:1:18: expected a registered param function but found 'nope'");
  expect_parse_error("r: (f ?x) => ?x ?x\n", "t.rules:1:17: expected the end of the rule (one rule a line) but found '?x'");
  /* terms: no variables */
  ft_egraph *eg = ft_egraph_new();
  ck_assert_int_eq(ft_egraph_add_terms(eg, "(f x)\n(g ?y)\n", "t.terms", NULL, NULL), FT_EGRAPH_EPARSE);
  ck_assert_ptr_nonnull(strstr(ft_egraph_error(eg), "t.terms:2:4: expected a term"));
  ft_egraph_free(eg);
}
END_TEST

/* ------------------------------------------------------------ nesting */

/* "(f (f ... x))" nested n deep, after prefix; the caller frees it. */
static char *nested(const char *prefix, int n, const char *leaf, const char *suffix) {
  size_t pl = strlen(prefix), ll = strlen(leaf), sl = strlen(suffix);
  char *s = malloc(pl + 4 * (size_t)n + ll + sl + 1), *q = s;
  ck_assert_ptr_nonnull(s);
  memcpy(q, prefix, pl), q += pl;
  for (int i = 0; i < n; i++) memcpy(q, "(f ", 3), q += 3;
  memcpy(q, leaf, ll), q += ll;
  memset(q, ')', (size_t)n), q += n;
  memcpy(q, suffix, sl + 1);
  return s;
}

/* At the limit: the term parses, adds, extracts and prints back unchanged,
 * and a rule that deep compiles and fires. Run on a 1 MiB stack, the budget
 * the limit promises. */
static void *deep_ok(void *arg) {
  (void)arg;
  ft_egraph *eg = ft_egraph_new();
  char *t = nested("", FT_EGRAPH_MAX_NESTING, "x", "");
  ft_eclass c = ft_egraph_add_term(eg, t);
  ck_assert_uint_ne(c, FT_EGRAPH_NONE);
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), FT_EGRAPH_MAX_NESTING + 1);
  ft_egraph_term *et = ft_egraph_extract(eg, &c, 1, FT_EXTRACT_TREE, NULL, NULL);
  ck_assert_ptr_nonnull(et);
  char *pr = ft_egraph_term_print(eg, et, 0);
  ck_assert_str_eq(pr, t);
  free(pr);
  ft_egraph_term_free(et);
  /* (f^1000 ?x) => ?x: one iteration merges the chain's root with x */
  char *r = nested("r: ", FT_EGRAPH_MAX_NESTING, "?x", " => ?x\n");
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, r, "deep.rules");
  ck_assert_msg(rs != NULL, "%s", ft_egraph_error(eg));
  ft_egraph_run_opts o = ft_egraph_run_defaults();
  o.iter_limit = 1;
  ft_egraph_report rep;
  ck_assert_int_eq(ft_egraph_run(eg, rs, &o, &rep), FT_EGRAPH_OK);
  ck_assert_int_eq(rep.stop, FT_STOP_ITER_LIMIT);
  ck_assert_uint_eq(rep.iters[0].total_applied, 1);
  ft_egraph_report_free(&rep);
  ck_assert_uint_eq(ft_egraph_find(eg, c), ft_egraph_find(eg, ft_egraph_add_term(eg, "x")));
  ft_egraph_rules_free(rs);
  free(r);
  free(t);
  ft_egraph_free(eg);
  return NULL;
}

/* Extraction walks a chain of 200,000 nodes without recursing: on a 1 MiB
 * stack the term comes out whole, each node's one kid the one before it. */
static void *long_chain(void *arg) {
  (void)arg;
  enum { N = 200000 };
  ft_egraph *eg = ft_egraph_new();
  uint32_t f = ft_egraph_intern(eg, "f"), x = ft_egraph_intern(eg, "x");
  ft_eclass c = ft_egraph_add(eg, x, NULL, 0, NULL, 0);
  for (int i = 0; i < N; i++) c = ft_egraph_add(eg, f, NULL, 0, &c, 1);
  ft_egraph_term *t = ft_egraph_extract(eg, &c, 1, FT_EXTRACT_TREE, NULL, NULL);
  ck_assert_msg(t != NULL, "%s", ft_egraph_error(eg));
  ck_assert_uint_eq(t->nnodes, N + 1);
  uint32_t at = t->roots[0];
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq(t->nodes[at].op, f);
    ck_assert_uint_eq(t->nodes[at].nkids, 1);
    ck_assert_uint_eq(t->nodes[at].kids[0], at - 1); /* kids come first */
    at = t->nodes[at].kids[0];
  }
  ck_assert_uint_eq(at, 0);
  ck_assert_uint_eq(t->nodes[0].op, x);
  /* and prints without recursing: "(f (f ... x))", N deep */
  char *pr = ft_egraph_term_print(eg, t, 0), *want = nested("", N, "x", "");
  ck_assert_ptr_nonnull(pr);
  ck_assert_int_eq(strcmp(pr, want), 0);
  free(pr);
  free(want);
  ft_egraph_term_free(t);
  ft_egraph_free(eg);
  return NULL;
}

/* A proof as deep as a long chain: f^N(x) = f^N(y) after x = y is N nested
 * congruences. Explained on a 1 MiB stack without recursing (it used to
 * recurse once per level in the proof and in printing each step): the
 * proof is the two whole terms, one user union apart. */
static void *deep_proof(void *arg) {
  (void)arg;
  enum { N = 100000 };
  ft_egraph *eg = ft_egraph_new();
  ck_assert_int_eq(ft_egraph_enable_explanations(eg), FT_EGRAPH_OK);
  uint32_t f = ft_egraph_intern(eg, "f");
  ft_enode a = ft_egraph_add_termnode(eg, ft_egraph_intern(eg, "x"), NULL, 0, NULL, 0);
  ft_enode b = ft_egraph_add_termnode(eg, ft_egraph_intern(eg, "y"), NULL, 0, NULL, 0);
  ck_assert_int_eq(ft_egraph_union(eg, a, b), 1);
  for (int i = 0; i < N; i++) {
    a = ft_egraph_add_termnode(eg, f, NULL, 0, &a, 1);
    b = ft_egraph_add_termnode(eg, f, NULL, 0, &b, 1);
  }
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  ft_egraph_proof pf;
  ck_assert_int_eq(ft_egraph_explain_ids(eg, NULL, a, b, &pf), FT_EGRAPH_OK);
  ck_assert_uint_eq(pf.nsteps, 2);
  char *wa = nested("", N, "x", ""), *wb = nested("", N, "y", "");
  ck_assert_int_eq(strcmp(pf.steps[0].term, wa), 0);
  ck_assert_int_eq(strcmp(pf.steps[1].term, wb), 0);
  ck_assert_int_eq(pf.steps[1].rule, -2); /* the user's union */
  free(wa);
  free(wb);
  ft_egraph_proof_free(&pf);
  ft_egraph_free(eg);
  return NULL;
}

START_TEST(explain_deep_chain) {
  pthread_attr_t at;
  pthread_t th;
  ck_assert_int_eq(pthread_attr_init(&at), 0);
  ck_assert_int_eq(pthread_attr_setstacksize(&at, (size_t)1 << 20), 0);
  ck_assert_int_eq(pthread_create(&th, &at, deep_proof, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  pthread_attr_destroy(&at);
}
END_TEST

START_TEST(extract_long_chain) {
  pthread_attr_t at;
  pthread_t th;
  ck_assert_int_eq(pthread_attr_init(&at), 0);
  ck_assert_int_eq(pthread_attr_setstacksize(&at, (size_t)1 << 20), 0);
  ck_assert_int_eq(pthread_create(&th, &at, long_chain, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  pthread_attr_destroy(&at);
}
END_TEST

START_TEST(nesting_limit) {
  pthread_attr_t at;
  pthread_t th;
  ck_assert_int_eq(pthread_attr_init(&at), 0);
  ck_assert_int_eq(pthread_attr_setstacksize(&at, (size_t)1 << 20), 0);
  ck_assert_int_eq(pthread_create(&th, &at, deep_ok, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  pthread_attr_destroy(&at);
  /* one level over, the depth that crashed (3,900), and far beyond: an
   * error at the first '(' past the limit, never a stack overflow */
  const int deep[] = {FT_EGRAPH_MAX_NESTING + 1, 3900, 10000, 100000, 1000000};
  for (size_t i = 0; i < sizeof deep / sizeof *deep; i++) {
    char want[160];
    ft_egraph *eg = ft_egraph_new();
    char *t = nested("", deep[i], "x", "");
    ck_assert_uint_eq(ft_egraph_add_term(eg, t), FT_EGRAPH_NONE);
    ck_assert_int_eq(ft_egraph_status_of(eg), FT_EGRAPH_EPARSE);
    snprintf(want, sizeof want, "<term>:1:%d: expected a shallower expression (nesting over %d) but found '('",
             3 * FT_EGRAPH_MAX_NESTING + 1, FT_EGRAPH_MAX_NESTING);
    ck_assert_msg(!strncmp(ft_egraph_error(eg), want, strlen(want)), "got: %.200s", ft_egraph_error(eg));
    ck_assert_uint_eq(ft_egraph_num_nodes(eg), 0);
    ft_egraph_free(eg);
    free(t);
    char *r = nested("r: ", deep[i], "?x", " => ?x\n");
    snprintf(want, sizeof want, "t.rules:1:%d: expected a shallower expression (nesting over %d) but found '('",
             3 * FT_EGRAPH_MAX_NESTING + 4, FT_EGRAPH_MAX_NESTING);
    expect_parse_error(r, want);
    free(r);
    /* a terms file: the error names its line */
    char *f = nested("(g y)\n", deep[i], "x", "\n");
    eg = ft_egraph_new();
    ck_assert_int_eq(ft_egraph_add_terms(eg, f, "t.terms", NULL, NULL), FT_EGRAPH_EPARSE);
    snprintf(want, sizeof want, "t.terms:2:%d: expected a shallower", 3 * FT_EGRAPH_MAX_NESTING + 1);
    ck_assert_msg(!strncmp(ft_egraph_error(eg), want, strlen(want)), "got: %.200s", ft_egraph_error(eg));
    ft_egraph_free(eg);
    free(f);
  }
}
END_TEST

/* ------------------------------------------------------------ core API */

START_TEST(core_hashcons_and_rebuild) {
  ft_egraph *eg = ft_egraph_new();
  uint32_t f = ft_egraph_intern(eg, "f"), xop = ft_egraph_intern(eg, "x"), yop = ft_egraph_intern(eg, "y");
  ck_assert_uint_eq(ft_egraph_intern(eg, "f"), f);
  ck_assert_str_eq(ft_egraph_op_name(eg, f), "f");
  ft_eclass x = ft_egraph_add(eg, xop, NULL, 0, NULL, 0), y = ft_egraph_add(eg, yop, NULL, 0, NULL, 0);
  ft_eclass fx = ft_egraph_add(eg, f, NULL, 0, &x, 1), fy = ft_egraph_add(eg, f, NULL, 0, &y, 1);
  ck_assert_uint_eq(ft_egraph_add(eg, f, NULL, 0, &x, 1), fx);
  ft_eclass ffx = ft_egraph_add(eg, f, NULL, 0, &fx, 1), ffy = ft_egraph_add(eg, f, NULL, 0, &fy, 1);
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), 6);
  ck_assert_uint_eq(ft_egraph_num_classes(eg), 6);
  ck_assert_int_eq(ft_egraph_union(eg, x, y), 1);
  ck_assert_int_eq(ft_egraph_union(eg, y, x), 0);
  ck_assert_uint_ne(ft_egraph_find(eg, fx), ft_egraph_find(eg, fy)); /* deferred */
  ck_assert_int_eq(ft_egraph_rebuild(eg), FT_EGRAPH_OK);
  ck_assert_uint_eq(ft_egraph_find(eg, fx), ft_egraph_find(eg, fy));
  ck_assert_uint_eq(ft_egraph_find(eg, ffx), ft_egraph_find(eg, ffy));
  /* egg counts: x and y stay two nodes; f(x)=f(y) and f(f x)=f(f y) merge */
  ck_assert_uint_eq(ft_egraph_num_nodes(eg), 4);
  ck_assert_uint_eq(ft_egraph_num_classes(eg), 3);
  ck_assert_uint_eq(ft_egraph_lookup(eg, f, NULL, 0, &y, 1), ft_egraph_find(eg, fx));
  ft_eclass z = ft_egraph_add_term(eg, "z");
  ck_assert_uint_eq(ft_egraph_lookup(eg, f, NULL, 0, &z, 1), FT_EGRAPH_NONE);
  ft_egraph_free(eg);
}
END_TEST

static Suite *egraph_suite(void) {
  Suite *s = suite_create("egraph");
  TCase *tc = tcase_create("egraph");
  tcase_set_timeout(tc, FT_SANITIZED ? 240 : 60);
  tcase_add_test(tc, core_hashcons_and_rebuild);
  tcase_add_test(tc, bench_counts_n1_to_9);
  tcase_add_test(tc, bench_counts_fresh_per_n);
  tcase_add_test(tc, comm_assoc_saturates);
  tcase_add_test(tc, explain_exact_chain);
  tcase_add_test(tc, explain_bench_proofs);
  tcase_add_test(tc, explain_keeps_counts);
  tcase_add_test(tc, explain_off_is_refused);
  tcase_add_test(tc, limits_and_stop_reasons);
  tcase_add_test(tc, backoff_bans);
  tcase_add_test(tc, constant_conflict_names_rule);
  tcase_add_test(tc, constant_conflict_direct_union);
  tcase_add_test(tc, analysis_constant_folding);
  tcase_add_test(tc, analysis_conflict_names_rule);
  tcase_add_test(tc, guards);
  tcase_add_test(tc, param_functions);
  tcase_add_test(tc, nonlinear_and_multipatterns);
  tcase_add_test(tc, bidirectional_and_floats);
  tcase_add_test(tc, extract_tree);
  tcase_add_test(tc, extract_dag_shares);
  tcase_add_test(tc, rule_parse_errors);
  tcase_add_test(tc, nesting_limit);
  tcase_add_test(tc, explain_deep_chain);
  tcase_add_test(tc, extract_long_chain);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(egraph_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
