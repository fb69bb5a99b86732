/* tests/conformance/conf.h: the differential conformance harness against
 * real JAX (fixtures/golden, fixtures/conformance). Shared by the Check test
 * (test_conformance.c) and the report tool (tools/conformance-report.c).
 *
 * Files: conf_compare.c (the tolerance policy and array comparison),
 * conf_run.c (loading cases, running every check), conf_report.c (the
 * markdown report, docs/conformance.md). */
#ifndef FT_CONF_H
#define FT_CONF_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/runtime.h"

/* ------------------------------------------------------------ the policy */

/* How one output is compared with JAX's. */
typedef enum conf_tol_class {
  CONF_EXACT,     /* bitwise (any NaN matches any NaN; XLA's FTZ bridged) */
  CONF_ULP,       /* each element within ulp ulps (one transcendental primitive) */
  CONF_REDUCE,    /* sums/products/dots: |got-want| <= k * eps * S */
  CONF_CHAIN,     /* several float arithmetic ops (XLA's FMA contraction) */
  CONF_COMPOSITE  /* programs and transforms: the same form, a larger k */
} conf_tol_class;

typedef struct conf_tol {
  conf_tol_class cls;
  double ulp;      /* CONF_ULP bound; for the others an elementwise escape */
  double k;        /* CONF_REDUCE / CONF_COMPOSITE: the normwise factor */
  const char *prim;/* CONF_ULP: the primitive the bound belongs to */
} conf_tol;

/* The tolerance for an output of dtype dt of a program using the n
 * primitives prims (JAX names), whose longest reduction has length red.
 * structural: our program is not JAX's program (our own transforms), so
 * the order of operations may differ even where each one is exact. */
conf_tol conf_tolerance(const char *const *prims, int n, long red, ft_dtype dt,
                        bool structural);
/* True for primitives IEEE-754 (or their definition) makes exact. */
bool conf_prim_exact(const char *prim);
/* The ULP bound of a transcendental primitive for dt (0 when not one). */
double conf_prim_ulp(const char *prim, ft_dtype dt);

/* The result of comparing one output. */
typedef struct conf_cmp {
  int verdict;          /* 0 bitwise, 1 within tolerance, 2 fails */
  double max_ulp;       /* largest elementwise distance in ulps (finite pairs) */
  double max_nrm;       /* largest |got-want| / (eps * S) */
  int jax_less_accurate;/* elements beyond the bound where JAX is the less
                           accurate one (checked against long double) */
  char why[256];        /* for a failure: the first bad element */
  double jax_worst_ulp; /* JAX's largest distance from the reference there */
  char jax_note[256];   /* that element */
} conf_cmp;

/* Compares got with want under tol. got_alt (may be NULL) is our result
 * on the inputs with subnormals flushed (XLA's DAZ); an element passes if
 * either result passes. ref_fn (may be NULL) computes the long double
 * reference of element i, used to find where JAX is the less accurate. */
typedef long double (*conf_ref_fn)(void *user, int64_t i);
conf_cmp conf_compare(const ft_array *got, const ft_array *got_alt, const ft_array *want,
                      const conf_tol *tol, conf_ref_fn ref_fn, void *ref_user);

/* The long double reference function of an elementwise primitive with one
 * or two operands, or NULL when there is none (then no accuracy note). */
typedef long double (*conf_ld1)(long double);
typedef long double (*conf_ld2)(long double, long double);
bool conf_reference(const char *prim, conf_ld1 *f1, conf_ld2 *f2);

/* ------------------------------------------------------------ the run */

/* CONF_INFO: a record that is not a check (where JAX is less accurate). */
typedef enum conf_status { CONF_PASS, CONF_FAIL, CONF_KNOWN, CONF_SKIP, CONF_INFO } conf_status;

/* One failing, known-failing or skipped check. */
typedef struct conf_note {
  char case_name[96];
  char check[48];       /* "parse", "print", "eval:interp", "grad:ours:interp", ... */
  conf_status status;
  char reason[320];
  int known;            /* CONF_KNOWN, or an unexpected pass: the entry's index */
} conf_note;

/* Per family (golden, prim, transform, control, program). */
typedef struct conf_family {
  char name[24];
  int cases, pass, fail, known, with_skips;
} conf_family;

/* Per transform: JAX's transformed program in our engines, and ours. */
typedef struct conf_tstat {
  char name[24];
  int jax_pass, jax_fail, jax_known;
  int ours_pass, ours_fail, ours_known, ours_skip;
} conf_tstat;

/* The largest error seen per primitive and dtype (prim-family cases and
 * single-primitive golden cases). */
typedef struct conf_pstat {
  char prim[32];
  ft_dtype dt;
  int outputs, bitwise;
  double max_ulp, max_nrm;
  int jax_less_accurate;
  conf_tol tol;
} conf_pstat;

typedef struct conf_stats {
  int cases, pass, fail, known;
  int checks, checks_pass, checks_fail, checks_known, checks_skip;
  conf_family fam[16];
  int n_fam;
  conf_tstat tf[12];
  int n_tf;
  conf_pstat *ps;
  int n_ps, cap_ps;
  conf_note *notes;
  int n_notes, cap_notes;
  char (*seen)[32];             /* primitives used by the cases run */
  int n_seen, cap_seen;
  char jax_version[32];
  const char *engines[4];
  int n_engines;
} conf_stats;

/* The known failures: (case name glob, check glob, reason). A check that
 * an entry names and that passes is a failure ("unexpected pass"), so the
 * list stays honest: remove the entry when its cause is fixed. Entries that
 * share a reason share its text (one macro), and the report groups them. */
struct conf_known {
  const char *case_glob, *check_glob, *reason;
};
typedef struct conf_known conf_known;

typedef struct conf_opts {
  const char *golden_dir;       /* NULL: skip the golden set */
  const char *conf_dir;         /* NULL: skip the conformance set */
  const char *more_dirs[12];     /* further sets in the conformance format */
  int n_more;                   /* (fixtures/sweep, fixtures/program2) */
  const char *only;             /* NULL or a case name prefix */
  bool verbose;                 /* print every failing check to stderr */
  bool interp_only;             /* run the interpreter only (FT_CONF_INTERP_ONLY) */
  FILE *dump;                   /* not NULL: every check as a line "case TAB check
                                   TAB pass|fail|known|skip TAB reason" (the
                                   known-failure list is made from it) */
  const struct conf_known *skip;/* cases not run at all (check glob unused), */
  int n_skip;                   /* each reported as a skip with its reason */
  bool roundtrip;               /* instead of comparing with JAX: the print ->
                                 * parse property of every program and of our
                                 * transforms of it (conf_roundtrip.c) */
} conf_opts;

/* ------------------------------------------------- print -> parse (issue 16) */

/* Results of one program's check. NOEVAL: the text round-trips (same
 * hash) but the program itself does not run on the inputs given, so
 * there are no outputs to compare; NOBUILD: the transform is not built. */
enum { CONF_RT_PASS, CONF_RT_FAIL, CONF_RT_NOEVAL, CONF_RT_NOBUILD };
/* print(j) parses to the same canonical hash, and (in not NULL) the
 * re-parsed program gives bitwise j's outputs on in. why: the failure. */
int conf_rt_program(ft_ctx *ctx, const ft_jaxpr *j, ft_array *const *in, int n_in, char *why, size_t n_why);
/* Builds jvp, vjp, linearize (primal and tangent), vmap and grad of j and
 * checks each (inputs: in, then ones; batched: two copies), reporting
 * each to fn. */
typedef void (*conf_rt_note)(void *user, const char *what, int result, const char *why);
void conf_rt_transforms(ft_ctx *ctx, const ft_jaxpr *j, ft_array *const *in, int n_in, conf_rt_note fn,
                        void *user);

/* Runs every check of every case; fills *st (free with conf_stats_free).
 * Returns 0, or -1 when a manifest cannot be read (message on stderr). */
int conf_run(const conf_opts *o, conf_stats *st);
void conf_stats_free(conf_stats *st);


extern const conf_known conf_known_failures[];
extern const int conf_n_known_failures;

/* Writes docs/conformance.md. lax_json: fixtures/conformance/LAX_PRIMITIVES.json
 * (may be NULL). Returns 0 or -1. */
int conf_write_report(const conf_stats *st, const char *lax_json, FILE *out);

#endif
