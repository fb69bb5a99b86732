/* include/frankentrace_egraph.h (was src/egraph/egraph.h; issue 23): the
 * header of the generic e-graph engine (src/egraph), in sections per file
 * (egraph.c, ematch.c, rules.c, run.c, extract.c, explain.c). It sits in
 * include/ so `ftc egraph` is a client of include/ alone; it is not
 * installed, and the shared library does not export these calls (the
 * tools link the static library): docs/architecture.md, "Layers".
 * The engine is generic: operators are interned symbols, an e-node is an
 * operator id + an opaque params blob + child e-class ids, so a client (the tensor IR keys nodes by primitive + params) brings its own
 * meaning. Library code never prints or exits: functions return a status and
 * leave a message in the e-graph (ft_egraph_error).
 *
 * Client quick start:
 *   ft_egraph *eg = ft_egraph_new();
 *   uint32_t add = ft_egraph_intern(eg, "add");
 *   ft_eclass x = ft_egraph_add(eg, ft_egraph_intern(eg, "x"), NULL, 0, NULL, 0);
 *   ft_eclass k[2] = {x, x};
 *   ft_eclass s = ft_egraph_add(eg, add, NULL, 0, k, 2);
 *   ft_egraph_rules *rs = ft_egraph_rules_parse(eg, "r: (add ?a ?a) => (mul 2 ?a)", "<rules>");
 *   ft_egraph_run_opts o = ft_egraph_run_defaults(); ft_egraph_report rep;
 *   ft_egraph_run(eg, rs, &o, &rep);
 *   ft_egraph_term *t = ft_egraph_extract(eg, &s, 1, FT_EXTRACT_TREE, NULL, NULL);
 *   ...; ft_egraph_term_free(t); ft_egraph_report_free(&rep);
 *   ft_egraph_rules_free(rs); ft_egraph_free(eg);
 */
#ifndef FT_EGRAPH_H
#define FT_EGRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ===================================================================== */
/* egraph.c: e-nodes, union-find, hashcons, deferred rebuilding, analyses */
/* ===================================================================== */

/* An e-class id. Every e-node id is also the id of the class it created, so
 * ids never dangle; ft_egraph_find gives the canonical representative. */
typedef uint32_t ft_eclass;
typedef uint32_t ft_enode;
#define FT_EGRAPH_NONE UINT32_MAX

typedef enum {
  FT_EGRAPH_OK = 0,
  FT_EGRAPH_ENOMEM,    /* allocation failed */
  FT_EGRAPH_EPARSE,    /* rule or term text is malformed (message has line:col) */
  FT_EGRAPH_EINVAL,    /* bad argument (unknown guard, explanations off, ...) */
  FT_EGRAPH_ECONFLICT, /* a union would merge two different constants */
  FT_EGRAPH_ENOTEQUAL, /* explain: the two terms are not in one class */
} ft_egraph_status;

/* Reserved operators: integer and float constants. Their params are the
 * value as int64_t / double (8 bytes, host order). */
enum { FT_EGRAPH_OP_INT = 0, FT_EGRAPH_OP_FLOAT = 1 };

typedef struct ft_egraph ft_egraph;

/* A read-only view of one e-node. Pointers stay valid until the next add. */
typedef struct {
  uint32_t op;
  uint32_t nkids;
  const ft_eclass *kids; /* canonical after a rebuild */
  const void *params;
  uint32_t pbytes;
} ft_enode_view;

/* Bits returned by ft_egraph_analysis.merge. */
enum {
  FT_EGRAPH_MERGE_DST_CHANGED = 1, /* dst's data changed: its parents are re-made */
  FT_EGRAPH_MERGE_SRC_CHANGED = 2, /* result differs from src's data */
  FT_EGRAPH_MERGE_CONFLICT = 4,    /* unsound merge; dst must be left unchanged */
};

/* An e-class analysis (egg's Analysis): fixed-size data per class.
 * make:   fill `out` with the data of new node n (read children's data with
 *         ft_egraph_data). Must not add or union.
 * merge:  join src into dst, return FT_EGRAPH_MERGE_* bits; CONFLICT refuses
 *         the union and reports an unsound-rule error.
 * modify: called after class c was created or changed; may add nodes and
 *         union (e.g. add the folded constant). Optional. */
typedef struct {
  size_t data_size;
  void *ud;
  void (*make)(void *ud, ft_egraph *eg, ft_enode n, void *out);
  int (*merge)(void *ud, void *dst, const void *src);
  void (*modify)(void *ud, ft_egraph *eg, ft_eclass c);
  /* Optional: writes a short description of the data for error messages. */
  void (*describe)(void *ud, const void *data, char *buf, size_t len);
} ft_egraph_analysis;

/* A new empty e-graph. Free with ft_egraph_free. NULL if out of memory. */
ft_egraph *ft_egraph_new(void);
void ft_egraph_free(ft_egraph *eg);
/* Install an analysis (copied). Only on an empty e-graph. */
ft_egraph_status ft_egraph_set_analysis(ft_egraph *eg, const ft_egraph_analysis *an);
/* Record a proof forest so ft_egraph_explain works. Only on an empty e-graph;
 * costs nothing when never called. */
ft_egraph_status ft_egraph_enable_explanations(ft_egraph *eg);
/* The message of the last error (owned by eg, "" if none). */
const char *ft_egraph_error(const ft_egraph *eg);
ft_egraph_status ft_egraph_status_of(const ft_egraph *eg);
void ft_egraph_clear_error(ft_egraph *eg);

/* Interns an operator name; returns its id (stable for the e-graph's life).
 * FT_EGRAPH_NONE on allocation failure. */
uint32_t ft_egraph_intern(ft_egraph *eg, const char *name);
uint32_t ft_egraph_lookup_op(const ft_egraph *eg, const char *name); /* NONE if unknown */
const char *ft_egraph_op_name(const ft_egraph *eg, uint32_t op);
uint32_t ft_egraph_num_ops(const ft_egraph *eg);

/* Adds an e-node (hash-consed: an equal canonical node gives its class).
 * Returns the canonical class, FT_EGRAPH_NONE on error. */
ft_eclass ft_egraph_add(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                        const ft_eclass *kids, size_t nkids);
ft_eclass ft_egraph_add_int(ft_egraph *eg, int64_t v);
ft_eclass ft_egraph_add_float(ft_egraph *eg, double v);
/* The class holding this node, without adding it; NONE if absent. */
ft_eclass ft_egraph_lookup(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                           const ft_eclass *kids, size_t nkids);
/* Canonical representative of a class id (path-compressing). */
ft_eclass ft_egraph_find(ft_egraph *eg, ft_eclass c);
/* Merges two classes; congruence is restored by the next rebuild.
 * Returns 1 if merged, 0 if already equal, -1 on error (constant conflict). */
int ft_egraph_union(ft_egraph *eg, ft_eclass a, ft_eclass b);
/* Restores congruence and canonical form; processes analysis updates. */
ft_egraph_status ft_egraph_rebuild(ft_egraph *eg);

/* Sizes as egg reports them: distinct canonical e-nodes in the hashcons and
 * live e-classes (exact after a rebuild). */
size_t ft_egraph_num_nodes(const ft_egraph *eg);
size_t ft_egraph_num_classes(const ft_egraph *eg);
/* Number of node ids ever created (dead duplicates included): the id bound. */
uint32_t ft_egraph_num_ids(const ft_egraph *eg);
/* Bytes currently reserved by the engine's arrays. */
size_t ft_egraph_memory(const ft_egraph *eg);

/* Node access. A node is live when it is the hashcons entry of its content;
 * congruent duplicates found by rebuild are dead. */
bool ft_egraph_node_live(const ft_egraph *eg, ft_enode n);
ft_enode_view ft_egraph_node(const ft_egraph *eg, ft_enode n);
/* Analysis data of a class (any id; it is canonicalized). NULL without analysis. */
void *ft_egraph_data(ft_egraph *eg, ft_eclass c);
/* Calls fn for every live node of the canonical class c; after a rebuild. */
void ft_egraph_class_nodes(ft_egraph *eg, ft_eclass c,
                           void (*fn)(void *ud, ft_enode n), void *ud);
/* If class c holds a constant leaf, returns that node, else NONE. */
ft_enode ft_egraph_class_const(ft_egraph *eg, ft_eclass c);

/* Writes a node's operator and params ("+", "-1", "2.5", "op[1,2]"). */
void ft_egraph_format_op(const ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                         char *buf, size_t len);

/* ===================================================================== */
/* rules.c: the text rule language                                        */
/* ===================================================================== */
/*
 * One rule a line (newlines inside brackets are spaces; '#' starts a comment):
 *   name: LHS => RHS [if guard(?x, ...), ...]
 *   name: LHS <=> RHS            (adds name and name-rev)
 * Patterns: ?x variables; integers (-1, 0) and floats (2.5) are constants;
 * `sym` a leaf; `(op p...)` an operator; `op[1, 2.5]` attaches params (each
 * number 8 bytes: int64 or double), `op[?p]` binds (LHS) or copies (RHS) a
 * node's whole params, `op[@fn(?p, ?x)]` (RHS) computes them with a
 * registered param function. Multi-patterns: `?r = (f ?x), ?s = (g ?x) =>
 * ?r = (h ?x), ?s = ...`; a RHS item without `?v =` unions with the first
 * LHS pattern's class. Non-linear variables ((- ?a ?a)) are compared.
 */
typedef struct ft_egraph_rules ft_egraph_rules;

/* A guard: true lets the match apply. args: class ids (canonical) of class
 * variables and node ids of param variables, in the written order. */
typedef bool (*ft_egraph_guard_fn)(void *ud, ft_egraph *eg, const uint32_t *args, size_t nargs);
/* A param applier: writes the new params into out (capacity *len bytes) and
 * sets *len; returns false to skip the match. args as for guards. */
typedef bool (*ft_egraph_param_fn)(void *ud, ft_egraph *eg, const uint32_t *args, size_t nargs,
                                   void *out, size_t *len);
#define FT_EGRAPH_MAX_PARAMS 4096

/* Registers by name; must happen before the rules naming them are parsed. */
ft_egraph_status ft_egraph_register_guard(ft_egraph *eg, const char *name,
                                          ft_egraph_guard_fn fn, void *ud);
ft_egraph_status ft_egraph_register_param_fn(ft_egraph *eg, const char *name,
                                             ft_egraph_param_fn fn, void *ud);

/* The deepest nesting of parentheses the rule and term parser accepts: the
 * parser and the walks over parsed trees recurse once per level, and this
 * keeps them under ~1 MiB of stack even with sanitizer-sized frames. */
#define FT_EGRAPH_MAX_NESTING 1000

/* Parses rule text. Returns a rule set owned by the caller (free with
 * ft_egraph_rules_free), or NULL with "file:line:col: expected ..." plus the
 * line and a caret in ft_egraph_error(eg). */
ft_egraph_rules *ft_egraph_rules_parse(ft_egraph *eg, const char *text, const char *filename);
void ft_egraph_rules_free(ft_egraph_rules *rs);
size_t ft_egraph_rules_count(const ft_egraph_rules *rs);
const char *ft_egraph_rule_name(const ft_egraph_rules *rs, size_t i);

/* Parses one term (no variables) and adds it; NONE with a message on error. */
ft_eclass ft_egraph_add_term(ft_egraph *eg, const char *text);
/* Adds every term of a terms file (one a line, '#' comments). *ids receives
 * a malloc'd array of their classes (caller frees with free). */
ft_egraph_status ft_egraph_add_terms(ft_egraph *eg, const char *text, const char *filename,
                                     ft_eclass **ids, size_t *n);

/* ===================================================================== */
/* ematch.c: compiled e-matching over a frozen index                      */
/* ===================================================================== */

/* Called per match: subst holds the class of every variable of the rule's
 * LHS in order of first appearance, then each LHS pattern's root class
 * (param variables hold the matched node id). Return false to stop. */
typedef bool (*ft_egraph_match_fn)(void *ud, const uint32_t *subst, size_t n);
/* Searches rule i's LHS on the current e-graph (rebuilds the index if stale).
 * Returns the number of matches seen. */
size_t ft_egraph_search(ft_egraph *eg, const ft_egraph_rules *rs, size_t rule,
                        ft_egraph_match_fn fn, void *ud);
/* Variable names of a rule's subst layout (for ft_egraph_search callers). */
size_t ft_egraph_rule_nvars(const ft_egraph_rules *rs, size_t rule);
const char *ft_egraph_rule_var(const ft_egraph_rules *rs, size_t rule, size_t v);

/* ===================================================================== */
/* run.c: the runner (schedulers, limits, statistics)                     */
/* ===================================================================== */
typedef enum { FT_SCHED_SIMPLE, FT_SCHED_BACKOFF } ft_egraph_sched;
typedef enum {
  FT_STOP_NONE = 0,
  FT_STOP_SATURATED,
  FT_STOP_ITER_LIMIT,
  FT_STOP_NODE_LIMIT,
  FT_STOP_TIME_LIMIT,
  FT_STOP_MEMORY_LIMIT,
  FT_STOP_ERROR, /* an unsound rule (constant conflict) or allocation failure */
} ft_egraph_stop;

typedef struct {
  size_t nodes, classes;     /* after this iteration's rebuild */
  size_t *matches;           /* per rule: substitutions found (0 when banned) */
  size_t *applied;           /* per rule: matches whose union changed the graph */
  size_t total_matches, total_applied, rebuild_unions;
  double search_s, apply_s, rebuild_s, total_s;
} ft_egraph_iter_stats;

typedef struct {
  ft_egraph_stop stop;
  size_t niters;
  ft_egraph_iter_stats *iters; /* niters entries */
  size_t nrules;
  double total_s;
} ft_egraph_report;

typedef struct {
  ft_egraph_sched scheduler;
  size_t iter_limit;        /* default 30 (egg) */
  size_t node_limit;        /* default 10,000 (egg); SIZE_MAX: none */
  double time_limit;        /* seconds; default 5 (egg); <= 0: none */
  size_t memory_limit;      /* bytes of engine arrays; 0: none */
  size_t match_limit;       /* backoff: default 1,000 */
  size_t ban_length;        /* backoff: default 5 */
  /* Called after each iteration (for live printing); may be NULL. */
  void (*on_iter)(void *ud, const ft_egraph *eg, const ft_egraph_rules *rs, size_t iter,
                  const ft_egraph_iter_stats *st);
  void *ud;
} ft_egraph_run_opts;

ft_egraph_run_opts ft_egraph_run_defaults(void);
/* Runs equality saturation: per iteration, search every rule on the same
 * e-graph, apply all matches, rebuild once. Fills *rep (free with
 * ft_egraph_report_free). FT_EGRAPH_OK unless memory ran out; an unsound
 * rule stops with FT_STOP_ERROR and the message in ft_egraph_error. */
ft_egraph_status ft_egraph_run(ft_egraph *eg, const ft_egraph_rules *rs,
                               const ft_egraph_run_opts *opts, ft_egraph_report *rep);
void ft_egraph_report_free(ft_egraph_report *rep);
const char *ft_egraph_stop_name(ft_egraph_stop s);

/* ===================================================================== */
/* extract.c: tree and DAG-aware extraction                               */
/* ===================================================================== */
typedef enum { FT_EXTRACT_TREE, FT_EXTRACT_DAG } ft_extract_mode;
/* Cost of one node alone (children excluded; tree cost adds children's,
 * DAG cost counts every chosen class once). NULL means 1 per node. Costs
 * should be positive. Analysis data (shapes...) is reachable through eg. */
typedef double (*ft_egraph_cost_fn)(void *ud, ft_egraph *eg, ft_enode n);

/* A term DAG: nodes in topological order (children before parents). */
typedef struct {
  uint32_t op;
  uint32_t nkids;
  const uint32_t *kids; /* indices into ft_egraph_term.nodes */
  const void *params;
  uint32_t pbytes;
  ft_eclass eclass;     /* the class it was extracted from */
  ft_enode enode;       /* the e-node chosen for it */
} ft_egraph_term_node;

typedef struct {
  size_t nnodes;
  ft_egraph_term_node *nodes;
  size_t nroots;
  uint32_t *roots;      /* index of each requested root */
  double cost;          /* tree: sum of roots' tree costs; DAG: sum over distinct nodes */
} ft_egraph_term;

/* Extracts the cheapest term of each root class (after a rebuild). Returns a
 * term owned by the caller (ft_egraph_term_free), NULL on error. */
ft_egraph_term *ft_egraph_extract(ft_egraph *eg, const ft_eclass *roots, size_t nroots,
                                  ft_extract_mode mode, ft_egraph_cost_fn cost, void *ud);
void ft_egraph_term_free(ft_egraph_term *t);
/* The s-expression of root r (malloc'd; caller frees). Shared subterms are
 * printed at every use. */
char *ft_egraph_term_print(const ft_egraph *eg, const ft_egraph_term *t, size_t r);

/* ===================================================================== */
/* explain.c: proofs of equalities                                        */
/* ===================================================================== */
/* One step of a flat proof: `term` is the whole term after the step; step 0
 * is the start term (rule == -1). A step rewrites one subterm with one rule
 * instance (forward: LHS -> RHS, backward: RHS -> LHS); congruence shows as
 * the position of that subterm. */
typedef struct {
  char *term;
  int rule;
  bool backward;
} ft_egraph_proof_step;

typedef struct {
  size_t nsteps;
  ft_egraph_proof_step *steps;
} ft_egraph_proof;

/* Explains why the two terms (s-expressions that were added to the e-graph
 * while explanations were on) are equal. Fills *out (free with
 * ft_egraph_proof_free). */
ft_egraph_status ft_egraph_explain(ft_egraph *eg, const ft_egraph_rules *rs, const char *a,
                                   const char *b, ft_egraph_proof *out);
/* The same for two node ids (e.g. returned by ft_egraph_add_term). */
ft_egraph_status ft_egraph_explain_ids(ft_egraph *eg, const ft_egraph_rules *rs, ft_enode a,
                                       ft_enode b, ft_egraph_proof *out);
void ft_egraph_proof_free(ft_egraph_proof *p);
/* Adds a term like ft_egraph_add_term but returns its term id (the node id
 * of exactly this term, not canonicalized), for ft_egraph_explain_ids. */
ft_enode ft_egraph_add_term_id(ft_egraph *eg, const char *text);

/* ===================================================================== */
/* Engine internals shared by the files of src/egraph (not client API).   */
/* ===================================================================== */

#define FT_ENODE_DEAD 0x80000000u /* op bit: a congruent duplicate or a proof-only term */
#define FT_EREF_NODE 0x80000000u  /* term-program ref: bit set = earlier node, else subst slot */

/* One e-node: kids live in eg->kids[koff..], params in eg->par[poff..]. */
typedef struct {
  uint32_t op;
  uint32_t koff;
  uint32_t poff;
  uint16_t nkids;
  uint16_t pbytes;
} ft_enode_rec;

/* Open-addressing hashcons: slot = (hash32 << 32) | node id; empty = ~0. */
typedef struct {
  uint64_t *slots;
  size_t mask, count;
} ft_emem;

/* Frozen index for e-matching, built after a rebuild and read-only while
 * an iteration applies its matches. */
typedef struct {
  bool valid;
  bool frozen;          /* a run is searching/applying: rebuilding it now would pull it from under the VM */
  uint32_t nids;        /* id bound when built: newer nodes are not indexed */
  uint32_t *cls_start;  /* per class id: range in cls_nodes (nodes sorted by op) */
  uint32_t *cls_nodes;
  uint32_t *op_start;   /* per op: range in op_nodes / op_cls */
  uint32_t *op_nodes;
  uint32_t *op_cls;     /* frozen canonical class of op_nodes[i] */
  uint32_t nops;
  size_t cap_ids, cap_live, cap_ops;
} ft_eindex;

typedef struct { char *name; void *fn; void *ud; } ft_eregistered;

typedef struct { uint32_t *v; size_t n, cap; } ft_u32vec;

struct ft_egraph {
  /* symbols */
  char **sym;
  uint32_t nsym, sym_cap;
  uint32_t *sym_tab;    /* open addressing over sym ids */
  uint32_t sym_mask;
  /* nodes and classes (indexed by id) */
  ft_enode_rec *nodes;
  uint32_t *uf;         /* union-find parent */
  uint32_t *c_use;      /* head slot of the circular parent (use) list, NONE if empty */
  uint32_t *c_nuses;
  uint32_t *c_const;    /* a constant leaf of the class, NONE if none */
  uint8_t *adata;       /* analysis data, data_size per id */
  uint32_t nids, id_cap;
  /* child slots */
  uint32_t *kids, *use_next, *use_node;
  size_t nkid, kid_cap, use_cap;
  /* params */
  uint8_t *par;
  size_t npar, par_cap;
  ft_emem memo;
  size_t n_live, n_classes;
  /* rebuild work lists */
  ft_u32vec pending, apending, mpending, scratch;
  /* analysis */
  bool has_an;
  ft_egraph_analysis an;
  /* explanations (only when enabled) */
  bool explain;
  uint32_t *ex_koff;    /* per id: term-level kids in ex_kids */
  uint32_t *ex_kids;
  size_t ex_nkid, ex_kid_cap;
  uint32_t *ex_parent;  /* proof forest */
  uint32_t *ex_just;    /* edge to parent: rule index | FT_EJUST_* | direction bit */
  ft_emem ex_memo;      /* term-level hashcons */
  /* e-matching index */
  ft_eindex ix;
  /* registries */
  ft_eregistered *guards, *pfns;
  uint32_t nguards, npfns;
  /* current rule (for error messages and proof edges) */
  int cur_rule;
  const char *cur_rule_name;
  /* errors */
  ft_egraph_status status;
  char msg[1024];
  size_t mem;
};

#define FT_EJUST_CONGRUENCE 0x3FFFFFFEu
#define FT_EJUST_USER 0x3FFFFFFDu
#define FT_EJUST_MASK 0x3FFFFFFFu
#define FT_EJUST_BACKWARD 0x40000000u /* the edge's rule runs from parent to child */

/* egraph.c internals */
ft_egraph_status ft_egraph_fail(ft_egraph *eg, ft_egraph_status st, const char *fmt, ...);
bool ft_egraph_reserve(ft_egraph *eg, void **p, size_t *cap, size_t need, size_t elem);
bool ft_u32vec_push(ft_egraph *eg, ft_u32vec *v, uint32_t x);
/* Union with a justification (rule index, FT_EJUST_CONGRUENCE or _USER);
 * for explanations the proof edge joins exactly ids a and b. */
int ft_egraph_union_just(ft_egraph *eg, ft_eclass a, ft_eclass b, uint32_t just);
/* Adds a term-level node (explanations on): kids are term ids. Returns the
 * term id; its class is find(id). */
ft_enode ft_egraph_add_termnode(ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                                const uint32_t *kids, size_t nkids);
/* Prefetches the hashcons slot a node with these canonical kids would use
 * (apply runs it ahead of the matches it is about to add). */
void ft_egraph_prefetch_node(const ft_egraph *eg, uint32_t op, const void *params, size_t pbytes,
                             const uint32_t *kids, size_t nkids);
/* Read-only find (no path compression), safe while searching. */
static inline ft_eclass ft_egraph_find_ro(const ft_egraph *eg, ft_eclass c) {
  while (eg->uf[c] != c) c = eg->uf[c];
  return c;
}
static inline const uint32_t *ft_enode_kids(const ft_egraph *eg, ft_enode n) {
  return eg->kids + eg->nodes[n].koff;
}
static inline const void *ft_enode_params(const ft_egraph *eg, ft_enode n) {
  return eg->par + eg->nodes[n].poff;
}

/* ematch.c internals: a compiled pattern program. */
typedef enum { FT_EI_SCAN, FT_EI_BIND, FT_EI_CMP, FT_EI_YIELD } ft_einsn_kind;
typedef struct {
  uint8_t kind;
  uint8_t pmode;        /* 0: params must equal (poff/pbytes in rule pool), 1: bind to reg pvar */
  uint16_t nkids;
  uint32_t op;
  uint32_t in, out;     /* BIND: class reg in; kids to out..; SCAN: root to out, kids to out+1.. */
  uint32_t poff, pbytes, pvar;
} ft_einsn;

/* A term program (RHS, or a LHS instantiated for proofs): nodes in order. */
typedef struct {
  uint32_t op;
  uint16_t nkids;
  uint8_t pmode;        /* 0 literal (poff/pbytes in rule pool), 1 copy params of subst node pvar, 2 call pfn */
  uint32_t poff, pbytes, pvar;
  uint32_t pfn, pargs, npargs; /* pmode 2: fn index, args in rule's argv pool */
  uint32_t kid0;        /* first ref in rule's refs pool */
} ft_etnode;

typedef struct {
  uint32_t root;        /* a ref: subst slot or FT_EREF_NODE | node index */
  uint32_t target;      /* subst slot to union with */
  uint32_t lhs;         /* for proofs: LHS pattern index whose root is target, or NONE */
} ft_eitem;

typedef struct { uint32_t fn, args, nargs; } ft_eguard;

typedef struct {
  char *name;
  int line;
  /* matcher */
  ft_einsn *prog;
  uint32_t nprog, nregs;
  uint32_t nslots;      /* subst width: variables then LHS roots */
  uint32_t nvars;
  uint32_t *slot_reg;   /* register of each subst slot */
  uint8_t *slot_param;  /* 1 if the slot is a param variable (holds a node id) */
  char **var_names;     /* nvars names (without '?') */
  uint32_t nlhs;
  /* term programs: RHS nodes, then per LHS pattern its instantiation */
  ft_etnode *tn;
  uint32_t ntn;
  uint32_t *refs;
  uint32_t nrefs;
  ft_eitem *items;
  uint32_t nitems;
  uint32_t *lhs_root;   /* per LHS pattern: ref of its instantiated root */
  ft_eguard *guards;
  uint32_t nguards;
  uint32_t *argv;       /* guard and param-fn argument slots */
  uint32_t nargv;
  uint8_t *pool;        /* literal params */
  uint32_t npool;
  uint32_t pf_node;     /* a RHS node whose kids are all variables (prefetched), or NONE */
  uint32_t nrhs_tn;     /* tn[0..nrhs_tn) are the RHS items' nodes, in post-order */
} ft_erule;

struct ft_egraph_rules {
  ft_erule *r;
  size_t n, cap;
};

/* Builds the frozen index if stale. */
ft_egraph_status ft_egraph_index_build(ft_egraph *eg);
void ft_egraph_index_invalidate(ft_egraph *eg);
void ft_egraph_index_free(ft_egraph *eg);
/* Runs rule r's matcher over the frozen index. */
size_t ft_egraph_ematch(ft_egraph *eg, const ft_erule *r, ft_egraph_match_fn fn, void *ud);
/* Instantiates a term program node list and returns the class (or the term
 * id when `terms` is set, explanations on). NONE on error or a param fn
 * declining. */
uint32_t ft_egraph_instantiate(ft_egraph *eg, const ft_erule *r, uint32_t root_ref,
                               const uint32_t *subst, bool terms);

#endif
