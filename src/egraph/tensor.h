/* src/egraph/tensor.h: the tensor client of the e-graph engine (issue 5,
 * DESIGN.md §5; docs/egraph.md "The tensor client"). Sections per file:
 *   tensor.c        jaxpr -> e-graph -> jaxpr, the analysis (avals,
 *                   splat constants folded with the interpreter's kernels),
 *                   sub-jaxpr recursion, ft_optimize, report, ledger
 *   tensor_rules.c  the rule texts (exact and algebraic tiers), their guards
 *                   and param functions, the coverage status per primitive
 *   tensor_cost.c   the cost model (FLOPs and bytes moved from shapes)
 *
 * A separate header rather than a section of egraph.h: egraph.h is the
 * generic engine and depends on nothing; this client depends on the IR and
 * the interpreter, and only its own three files (and tests, ftc) include it. */
#ifndef FT_EGRAPH_TENSOR_H
#define FT_EGRAPH_TENSOR_H

#include "frankentrace_egraph.h"
#include "ir/ir.h"

/* ================================================================ tensor.c */

/* Per-class analysis data. A class is a value (one array) or, for an
 * opaque multi-output or control-flow node, a tuple read by `proj` nodes. */
enum { TD_BAD = 0, TD_VALUE = 1, TD_TUPLE = 2 };
typedef struct ft_tdata {
  uint8_t kind;
  uint8_t dtype, rank, weak;
  uint8_t has_const;     /* every element equals `bits` (a splat constant) */
  uint8_t pad[3];
  uint32_t tuple;        /* TD_TUPLE: index into the client's tuple table */
  int64_t dims[FT_MAX_RANK];
  uint8_t bits[16];      /* the element's bytes, little-endian, dtype-sized */
} ft_tdata;

/* Output avals of an opaque tuple node. */
typedef struct ft_ttuple {
  int n;
  ft_aval *avals;
} ft_ttuple;

struct ft_tsession;

/* The client state of one e-graph (one jaxpr level). */
typedef struct ft_tclient {
  struct ft_tsession *S;
  ft_ctx *ctx;                /* private: shape rules and folding report here */
  ft_egraph *eg;
  const ft_jaxpr *src;        /* the jaxpr being optimized (input avals) */
  ft_arena *scratch;          /* decoded params of nodes */
  uint32_t op_prim0;          /* op id of primitive 0; prims are interned in order */
  uint32_t op_arg, op_constvar, op_const, op_proj;
  ft_pval **dec;              /* per node id: decoded params (cache), NULL if not yet */
  double *cost;               /* per node id: cost (cache), < 0 if not yet */
  uint32_t ncache;
  ft_ttuple *tuples;
  uint32_t ntuples, cap_tuples;
  bool algebraic;             /* conflicting constants merge silently (non-exact tier) */
  size_t n_folds;             /* constants added by folding */
  bool oom;
} ft_tclient;

/* Operator of a node: a primitive, or FT_NUM_PRIMS for the client's own
 * (arg, constvar, const, proj). */
ft_prim ft_tnode_prim(const ft_tclient *tc, uint32_t op);
/* Decoded params of node n (cached; in tc->scratch). NULL on failure. */
const ft_pval *ft_tnode_params(ft_tclient *tc, ft_enode n);
/* Analysis data of a class. */
static inline const ft_tdata *ft_tclass(ft_tclient *tc, ft_eclass c) {
  return (const ft_tdata *)ft_egraph_data(tc->eg, c);
}
/* The aval of a value class. */
ft_aval ft_tdata_aval(const ft_tdata *d);
/* Params blob of a primitive's param array (the node key), and back.
 * encode returns the byte count or -1 (too large / no memory). */
int ft_tparams_encode(ft_tclient *tc, ft_prim p, const ft_pval *ps, uint8_t *out, size_t cap);
ft_pval *ft_tparams_decode(ft_tclient *tc, ft_arena *a, ft_prim p, const uint8_t *blob,
                           size_t len);
/* Params blob of a splat constant node. */
size_t ft_tconst_encode(const ft_aval *av, const uint8_t bits[16], uint8_t *out);
/* The bytes of value v (double) in dtype dt (1.0, -0.0, n ...). */
void ft_tbits_of(ft_dtype dt, double v, uint8_t bits[16]);

/* Internal entry point (ft_optimize, ftc opt and the tests). */
typedef struct ft_topt_opts {
  ft_opt_tier tier;
  const char *only;           /* comma-separated rule names to run (tests); NULL: the tier's */
  const char *extra_rules;    /* more rule text (tests: an unsound rule) */
  bool explain;               /* proofs of the merges extraction relied on */
  bool no_ledger;
  size_t iter_limit;          /* 0: 30 */
  size_t node_limit;          /* 0: 50,000 */
  double time_limit;          /* 0: 5 s */
} ft_topt_opts;
ft_jaxpr *ft_tensor_optimize(ft_ctx *ctx, const ft_jaxpr *j, const ft_topt_opts *o,
                             ft_opt_report *rep);

/* ========================================================== tensor_rules.c */

/* The rule text of a tier (the algebraic tier runs both texts). */
const char *ft_tensor_rules_exact(void);
const char *ft_tensor_rules_algebraic(void);
/* Registers the guards and param functions the rule texts name. */
bool ft_tensor_register(ft_egraph *eg, ft_tclient *tc);
/* Coverage (ftc coverage, the `egraph` column): NULL when p is an e-node
 * with analysis and rules, else "n/a: ..." (why it is an opaque node). */
const char *ft_egraph_rule_status(ft_prim p);

/* =========================================================== tensor_cost.c */

/* Cost of one equation: FLOPs + bytes moved / 4 (one unit moves a float32).
 * Control flow costs its sub-jaxprs (scan: times length; while: 8 trips). */
double ft_tensor_eqn_cost(ft_prim p, const ft_pval *ps, int n_in, const ft_aval *in, int n_out,
                          const ft_aval *out);
/* Sum over the equations of j (recursively through sub-jaxprs). */
double ft_tensor_jaxpr_cost(const ft_jaxpr *j);
/* Equations of j, counting those of sub-jaxprs. */
int ft_tensor_jaxpr_eqns(const ft_jaxpr *j);

#endif
