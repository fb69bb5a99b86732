/* src/ir/ir.h: the internal header of the IR (DESIGN.md §2). Sections follow
 * the files: arena.c, ctx.c, dtype.c, prims.c (+ prims.def), param.c,
 * jaxpr.c (construction), shape.c (shape/dtype rules), verify.c, print.c,
 * parse.c, hash.c, dot.c.
 *
 * Depends on nothing but libc and xxHash. */
#ifndef FT_IR_H
#define FT_IR_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ft.h"

/* Internal invariant check: aborts with file:line. Not for user errors. */
#define FT_ASSERT(cond)                                                        \
  do {                                                                         \
    if (!(cond)) ft_assert_fail(#cond, __FILE__, __LINE__);                    \
  } while (0)
_Noreturn void ft_assert_fail(const char *what, const char *file, int line);

#define FT_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ================================================================ arena.c */
/* A bump allocator. Every IR node of a jaxpr (and of its sub-jaxprs) lives in
 * one arena and is freed at once with it. Allocation failure is reported as
 * NULL (and the arena remembers it in .failed). */
typedef struct ft_arena ft_arena;

ft_arena *ft_arena_new(void);
void ft_arena_free(ft_arena *a);
/* Frees the big chunks freed arenas left for reuse (arena.c); ft_ctx_free
 * calls it when the last context goes. */
void ft_arena_release_kept(void);
/* Bytes kept for reuse now (tests). */
size_t ft_arena_kept_bytes(void);
/* Zeroed memory, 16-byte aligned. NULL when out of memory. */
void *ft_arena_alloc(ft_arena *a, size_t n);
/* Like ft_arena_alloc without the zeroing: for builders that write every
 * byte they later read (the hot paths of the parser and the transforms). */
void *ft_arena_alloc_raw(ft_arena *a, size_t n);
/* A NUL-terminated copy of s[0..len). */
char *ft_arena_strndup(ft_arena *a, const char *s, size_t len);
/* The next variable id of this arena: ids are unique among all the vars of
 * the jaxprs that share the arena, and dense, so evaluators can index by id. */
uint32_t ft_arena_next_var_id(ft_arena *a);
uint32_t ft_arena_num_var_ids(const ft_arena *a);
/* Bytes in use (for statistics). */
size_t ft_arena_bytes(const ft_arena *a);

/* ================================================================== ctx.c */
struct ft_ledger;

/* What a successful ft_parse, ft_trace or ft_eval reports to the context's
 * observer. The observer is how the ledger (src/ledger installs it when it is
 * attached) records these calls without src/ir, src/trace or src/runtime
 * depending on it. Fields a kind does not use are zero; all are borrowed. */
/* FT_CTX_EV_COMPILE: a successful ft_jit (src/lower): jaxpr is its input,
 * text/len the plan text and cache key, params the options as JSON.
 * FT_CTX_EV_EVAL also reports ft_call/ft_call_into with op "jit" (jaxpr: the
 * program the function runs); op NULL means the interpreter ("interp"). */
/* FT_CTX_EV_GUARD: a hardened-mode guard fired (guard; jaxpr: the program
 * that ran, or NULL). */
typedef enum ft_ctx_event_kind {
  FT_CTX_EV_PARSE, FT_CTX_EV_TRACE, FT_CTX_EV_EVAL, FT_CTX_EV_COMPILE, FT_CTX_EV_GUARD
} ft_ctx_event_kind;
typedef struct ft_ctx_event {
  ft_ctx_event_kind kind;
  const char *text;          /* parse: the source text, len bytes */
  size_t len;
  const ft_jaxpr *jaxpr;     /* the parsed, traced or evaluated jaxpr */
  int n_in, n_out;           /* eval: its arguments and results */
  const ft_array *const *in;
  ft_array *const *out;
  const char *op;            /* eval: the engine ("jit"); NULL: "interp" */
  const char *params;        /* compile: a JSON object as text */
  const ft_guard_event *guard; /* guard: what fired */
} ft_ctx_event;

struct ft_ctx {
  ft_ctx_options opts;
  pthread_mutex_t err_lock;  /* guards status and err (ctx.c) */
  _Atomic int64_t loop_max_iters;   /* ft_loop_limits, read by every loop */
  _Atomic double loop_max_seconds;
  _Atomic bool cancelled;
  /* The context whose loop limits and cancel flag apply here (the
   * executor's per-thread contexts point at the caller's), or NULL: self. */
  const struct ft_ctx *limits_from;
  ft_status status;
  char err[4096];
  struct ft_ledger *ledger;  /* attached ledger, or NULL (src/ledger owns it) */
  /* The observer (NULL: none). A status other than FT_OK fails the call that
   * reported (its result is freed), with the observer's message on ctx. */
  ft_status (*on_event)(ft_ctx *ctx, const ft_ctx_event *ev);
  /* Installed with the observer by its owner (NULL: none); ft_ctx_free
   * calls it first, so the owner (the ledger, src/replay/observe.c) stops
   * pointing here without src/ir calling up into it. */
  void (*on_free)(ft_ctx *ctx);
  pthread_mutex_t guard_lock;  /* guards the guard list (hardened mode) */
  int n_guards;
  ft_guard_event guards[FT_MAX_GUARDS];
  /* The MPI transport (ft_dist_init, src/runtime/dist.c), or NULL; freed by
   * dist_free from ft_ctx_free (src/ir does not call up into runtime). */
  struct ft_dist *dist;
  void (*dist_free)(struct ft_ctx *ctx);
};

/* Hardened mode's guards (ctx.c). Where a guard fires: the engine and the
 * equation being run, per thread. The interpreter's ft_eval and the JIT's
 * steps set it at their outermost level (depth 0); nested evaluation
 * (control-flow bodies, fallback steps) keeps the outer equation. */
typedef struct ft_guard_where {
  const char *engine;
  int eqn;
  int depth;
} ft_guard_where;
extern _Thread_local ft_guard_where ft_guard_tl;
static inline bool ft_hardened(const ft_ctx *ctx) {
  return ctx && ctx->opts.mode == FT_MODE_HARDENED;
}
/* A guard fired on ctx (or, for an executor thread's context, on the
 * caller's): kept on the context, reported to the observer (the ledger's
 * guard record). can_continue: a defined result exists; the decision is
 * then CONTINUED unless opts.guard_fail. eqn < -1 takes the thread's
 * current equation. Returns FT_OK when the call goes on; otherwise the
 * call's status (FT_ERR_RUNTIME with "hardened: <message>" set on ctx for
 * a guard that refused; the observer's failure, if it failed). A guard
 * that records a failure already reported (can_continue false: a loop
 * budget, a call-boundary check) returns FT_OK and leaves ctx's message. */
ft_status ft_guard_fire(ft_ctx *ctx, ft_guard_kind kind, bool can_continue, const ft_jaxpr *j,
                        int eqn, const char *prim, int output, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* Reports ev to ctx's observer, if any. */
static inline ft_status ft_ctx_notify(ft_ctx *ctx, const ft_ctx_event *ev) {
  return ctx && ctx->on_event ? ctx->on_event(ctx, ev) : FT_OK;
}

/* Records a failure on ctx (message formatted like printf) and returns st, so
 * callers can write `return ft_set_error(ctx, FT_ERR_SHAPE, "...", ...)`.
 * ctx may be NULL (then only st is returned). */
ft_status ft_set_error(ft_ctx *ctx, ft_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ft_status ft_set_errorv(ft_ctx *ctx, ft_status st, const char *fmt, va_list ap);
/* One execution of a while or scan under ctx's limits and cancel flag:
 * begin before the first iteration, step before each one. */
typedef struct ft_loop_guard {
  const ft_ctx *ctx;
  const char *prim;       /* "while", "scan" */
  int64_t iters, max_iters;
  double max_seconds, start;
} ft_loop_guard;
void ft_loop_begin(ft_loop_guard *g, const ft_ctx *ctx, const char *prim);
/* FT_OK, or FT_ERR_LIMIT / FT_ERR_CANCELLED with the message set on ctx. */
ft_status ft_loop_step(ft_loop_guard *g, ft_ctx *ctx);

/* Replaces the message (and, unless st is FT_OK, the status) as a whole. */
void ft_ctx_set_message(ft_ctx *ctx, ft_status st, const char *msg);
/* Prepends "prefix: " to the current message (for context on the way out). */
void ft_error_prefix(ft_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Per-call errors (ft_call_ex): from begin to end, every message the
 * calling thread sets on ctx is also written to buf (len bytes; set to ""
 * at begin). Nests: end restores what begin returned. */
typedef struct ft_err_capture {
  const ft_ctx *ctx;
  char *buf;
  size_t len;
} ft_err_capture;
ft_err_capture ft_err_capture_begin(const ft_ctx *ctx, char *buf, size_t len);
void ft_err_capture_end(ft_err_capture saved);
/* Reads a sized option struct (the header's conventions: size_t size
 * first) into dst (known bytes): the fields within both sizes are copied,
 * the rest zeroed; src NULL gives all defaults. FT_ERR_INVALID_ARG for a
 * size below sizeof(size_t), FT_ERR_UNSUPPORTED for a non-zero byte past
 * known; the message names what (the struct's name). */
ft_status ft_opts_read(ft_ctx *ctx, const char *what, const void *src, size_t known, void *dst);

/* ================================================================ dtype.c */
bool ft_dtype_is_float(ft_dtype dt);    /* f16 bf16 f32 f64 */
bool ft_dtype_is_complex(ft_dtype dt);  /* c64 c128 */
bool ft_dtype_is_inexact(ft_dtype dt);  /* float or complex */
bool ft_dtype_is_int(ft_dtype dt);      /* signed or unsigned integer */
bool ft_dtype_is_signed(ft_dtype dt);   /* i8..i64 */
bool ft_dtype_is_unsigned(ft_dtype dt); /* u8..u64 */
bool ft_dtype_is_key(ft_dtype dt);      /* key<fry> ... key<urbg> (PRNG keys) */
int ft_key_words(ft_dtype dt);          /* u32 words per key; 0 if not a key */
const char *ft_key_tag(ft_dtype dt);    /* "fry" for key<fry>; NULL if not a key */
ft_status ft_key_from_tag(const char *tag, size_t n, ft_dtype *out);
/* Bit width of one element (bool: 8; float0: 0). */
int ft_dtype_bits(ft_dtype dt);

bool ft_aval_eq(const ft_aval *a, const ft_aval *b);  /* dtype + shape (not weak_type) */
bool ft_shape_eq(const ft_aval *a, const ft_aval *b);
ft_aval ft_aval_scalar(ft_dtype dt);
ft_aval ft_aval_make(ft_dtype dt, int rank, const int64_t *dims);
/* The most elements an aval may have: 2^56, so a byte count (at most 16
 * bytes an element) and any index or stride computed from the dims fit in
 * int64 with room to spare. Zero dims do not excuse the others: the product
 * of the nonzero dims is bounded too (strides are built from them). */
#define FT_MAX_ELEMS (INT64_C(1) << 56)
/* Whether a's dims are non-negative and their (nonzero) product is at most
 * FT_MAX_ELEMS. Parse, trace, shape rules and verify reject other avals. */
bool ft_aval_size_ok(const ft_aval *a);

/* ============================================================= fileout.c */
/* (public: ft_file_write) A fresh temporary name beside path (malloc'd). */
char *ft__file_tmp_name(const char *path);
/* Renames a complete temporary file over path; on failure removes tmp and
 * sets "WHAT: cannot write 'PATH': rename failed: <errno text>". */
ft_status ft__file_commit(ft_ctx *ctx, const char *what, const char *tmp, const char *path);
/* Tests: the nth write, close or rename of an output file from now fails
 * with errno err (nth <= 0 disarms). Process-wide. */
void ft__file_fault(long nth, int err);

/* ======================================================= prims.c, prims.def */
typedef enum ft_prim {
#define FT_PRIM(id, name, nin, nout, fam, params) FT_P_##id,
#include "prims.def"
#undef FT_PRIM
  FT_NUM_PRIMS
} ft_prim;

/* Families group primitives that share shape, batching and lowering logic. */
typedef enum ft_family {
  FT_FAM_UNARY,     /* elementwise, one operand, result of the operand's type */
  FT_FAM_BINARY,    /* elementwise, two operands of one type, result of that type */
  FT_FAM_COMPARE,   /* elementwise, two operands of one type, bool result */
  FT_FAM_TERNARY,   /* elementwise, three float operands of one type, result of that type
                       (regularized_incomplete_beta) */
  FT_FAM_SELECT,    /* select_n, clamp */
  FT_FAM_CONVERT,   /* convert_element_type, bitcast_convert_type */
  FT_FAM_LAYOUT,    /* data movement: broadcast, reshape, transpose, slices, pad, ... */
  FT_FAM_REDUCE,    /* reductions over axes, argmax/argmin */
  FT_FAM_CUMULATIVE,/* cumsum and friends */
  FT_FAM_DOT,       /* dot_general */
  FT_FAM_OTHER,     /* iota, sort, fft, ... */
  FT_FAM_CONTROL    /* cond, while, scan, jit, custom_jvp_call, custom_vjp_call */
} ft_family;

/* Kinds of parameter values (the schema language of prims.def). */
typedef enum ft_pkind {
  FT_PK_ANY,      /* any value; kept as parsed (typed tree), printed back */
  FT_PK_INT,
  FT_PK_INTS,     /* tuple of ints */
  FT_PK_INTS_OR_NONE,
  FT_PK_BOOL,
  FT_PK_BOOLS,
  FT_PK_FLOAT,
  FT_PK_DTYPE,
  FT_PK_DTYPE_OR_NONE,
  FT_PK_SYM,      /* an identifier from a fixed set (an enum), see ft_param_spec.syms */
  FT_PK_NAME,     /* a free identifier (e.g. pjit's name=f) */
  FT_PK_JAXPR,    /* a closed sub-jaxpr */
  FT_PK_JAXPR_OR_NONE, /* a sub-jaxpr, inline or hoisted, or None (scatter's update_jaxpr) */
  FT_PK_JAXPRS,   /* a tuple of closed sub-jaxprs */
  FT_PK_DOTDIMS,  /* ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)) */
  FT_PK_PADCFG,   /* ((lo, hi, interior), ...) */
  FT_PK_RULE,     /* a function: a name (JAX prints Python rules so) or a jaxpr (C tracing) */
  FT_PK_AVAL,     /* an aval as JAX prints a ShapedArray (f32[4]): HiPrims' x_aval params,
                     kept as text and printed from the operand (print.c) */
  FT_PK_LSTUPLE   /* custom_linear_solve's _LinearSolveTuple(matvec=, vecmat=, solve=,
                     transpose_solve=): a tuple of 4 ints, or of 4 closed jaxprs or None,
                     each jaxpr printed as a program of its own (str(ClosedJaxpr)) */
} ft_pkind;

typedef struct ft_param_spec {
  const char *name;
  ft_pkind kind;
  const char *dflt;     /* default's text (NULL: required) */
  const char **syms;    /* FT_PK_SYM: NULL-terminated allowed spellings */
  bool legacy;          /* accepted from older JAX printouts, dropped, never printed */
} ft_param_spec;

typedef struct ft_prim_info {
  const char *name;     /* as JAX 0.10 prints it */
  int n_in, n_out;      /* -1: variadic */
  ft_family family;
  const char *schema;   /* the param schema text from prims.def */
  int n_params;         /* canonical (non-legacy) params, sorted by name */
  const ft_param_spec *params;   /* n_params canonical, then the legacy ones */
  int n_legacy;
} ft_prim_info;

/* The table, with schemas parsed (thread-safe, once). Never NULL. */
const ft_prim_info *ft_prim_get(ft_prim p);
/* Looks a primitive up by its printed name (also accepts aliases such as
 * "pjit" for jit). Returns FT_NUM_PRIMS when unknown. */
ft_prim ft_prim_lookup(const char *name, size_t len);
/* Index of a canonical param of p by name, or -1. */
int ft_prim_param_index(ft_prim p, const char *name);

/* ================================================================ param.c */
typedef enum ft_pv_tag {
  FT_PV_NONE, FT_PV_BOOL, FT_PV_INT, FT_PV_FLOAT, FT_PV_DTYPE, FT_PV_SYM,
  FT_PV_STR,     /* a quoted string or a name */
  FT_PV_OPAQUE,  /* text JAX prints for Python objects, e.g. <function f at 0x..> */
  FT_PV_TUPLE,   /* (a, b) or [a, b]: items */
  FT_PV_JAXPR
} ft_pv_tag;

struct ft_jaxpr;

/* A typed parameter value. Tuples own an array of items in the arena. */
typedef struct ft_pval {
  ft_pv_tag tag;
  bool list;            /* FT_PV_TUPLE printed with [ ] rather than ( ) */
  int n;                /* FT_PV_TUPLE: number of items */
  union {
    bool b;
    int64_t i;          /* FT_PV_INT; FT_PV_SYM: index into the spec's syms */
    double f;
    ft_dtype dt;
    struct ft_pval *items;
    struct ft_jaxpr *jaxpr;
  } u;
  const char *s;        /* FT_PV_SYM/STR/OPAQUE: the spelling */
} ft_pval;

ft_pval ft_pv_none(void);
ft_pval ft_pv_int(int64_t i);
ft_pval ft_pv_bool(bool b);
ft_pval ft_pv_dtype(ft_dtype dt);
ft_pval ft_pv_jaxpr(struct ft_jaxpr *j);
/* A tuple of n ints (copied into a). */
ft_pval ft_pv_ints(ft_arena *a, int n, const int64_t *v);
/* An empty tuple of n items to fill in. */
ft_pval ft_pv_tuple(ft_arena *a, int n);
/* Reads a tuple of ints; returns false if v is not one. Writes at most max. */
bool ft_pv_get_ints(const ft_pval *v, int64_t *out, int max, int *n_out);
/* platform_index's choice on this CPU for its platforms param: the index of
 * the branch naming 'cpu', else of the default (None); -1 if neither (prims.c). */
int ft_platform_index(const ft_pval *platforms);
bool ft_pval_eq(const ft_pval *a, const ft_pval *b);

/* ============================================================ flattree.c */

/* Leaves of a pytree structure as JAX 0.12 prints scan's ft_in/ft_out
 * (tuples of None, dicts, Pytree(...), Static(...), RightsOnly(...)); -1
 * when v is not one. */
int64_t ft_flattree_leaves(const ft_pval *v);
/* v is a tuple of n_groups trees: writes each one's leaf count. */
bool ft_flattree_groups(const ft_pval *v, int n_groups, int64_t *counts);
/* v is a tuple of tuples of None (the structure of flat lists). */
bool ft_flattree_is_flat(const ft_pval *v);
/* The flat structure ((None, ...), ...) with counts[g] leaves in group g,
 * in arena a (None when out of memory). */
ft_pval ft_flattree_flat(ft_arena *a, int n_groups, const int64_t *counts);

/* ================================================================ jaxpr.c */
typedef enum ft_var_kind { FT_VAR, FT_LIT, FT_DROP } ft_var_kind;

/* A variable, a literal (FT_LIT: a scalar constant), or a dropped output
 * (FT_DROP, printed as `_`). Atoms — equation inputs and jaxpr outputs — are
 * ft_var pointers of kind FT_VAR or FT_LIT. */
typedef struct ft_var {
  ft_aval aval;
  ft_var_kind kind;
  uint32_t id;          /* unique and dense within the arena */
  union {               /* FT_LIT: the value, by dtype class */
    int64_t i;          /* signed ints and bool (0/1) */
    uint64_t u;         /* unsigned ints */
    double f;           /* floats (exactly the value of the narrower type) */
  } lit;
  double lit_im;        /* complex literals: imaginary part */
  /* Inside a shard_map body: the mesh axes the value varies over, as JAX
   * 0.12 prints them after the type (`f32[2]{V:i}` holds "i"); in the
   * arena, or NULL. Printed back; not a part of the aval (docs/spmd.md). */
  const char *vma;
} ft_var;

typedef struct ft_eqn {
  ft_prim prim;
  int n_in, n_out;
  ft_var **in;          /* atoms */
  ft_var **out;         /* FT_VAR or FT_DROP */
  ft_pval *params;      /* ft_prim_get(prim)->n_params values, canonical order */
} ft_eqn;

/* A jaxpr: constvars; invars; equations; outvars (atoms). Sub-jaxprs (params
 * of control flow) share the arena of the top-level jaxpr. */
struct ft_jaxpr {
  ft_arena *arena;
  bool owns_arena;      /* top level: frees the arena */
  int n_const, n_in, n_out, n_eqn;
  ft_var **constvars, **invars, **outvars;
  ft_eqn *eqns;
  /* Values of the constvars when known (traced constants): n_const C-order
   * buffers in the arena, shaped by constvars[i]->aval; or NULL (parsed text
   * carries no values: callers pass them as leading inputs). */
  void **const_data;
  /* Unique in the process (set by ft_jaxpr_new): with the address, an
   * identity that survives address reuse (the ledger caches per program). */
  uint64_t serial;
};

/* A new, empty top-level jaxpr with its own arena (a == NULL), or a
 * sub-jaxpr in a's arena. NULL when out of memory. */
struct ft_jaxpr *ft_jaxpr_new(ft_arena *a);
/* A new process-unique serial for j: its identity changed in place (bound constants). */
void ft_jaxpr_renew_serial(struct ft_jaxpr *j);
ft_var *ft_var_new(ft_arena *a, const ft_aval *aval);
ft_var *ft_drop_new(ft_arena *a, const ft_aval *aval);
ft_var *ft_lit_new_int(ft_arena *a, ft_dtype dt, int64_t v);
ft_var *ft_lit_new_uint(ft_arena *a, ft_dtype dt, uint64_t v);
ft_var *ft_lit_new_float(ft_arena *a, ft_dtype dt, double v);
ft_var *ft_lit_new_bool(ft_arena *a, bool v);

/* A growable equation list used while building a jaxpr (parser, tracer,
 * transforms). Arrays grow in the arena; ft_jb_finish installs them. */
typedef struct ft_jb {
  ft_arena *arena;
  struct ft_jaxpr *j;
  int cap_eqn;
} ft_jb;

void ft_jb_init(ft_jb *b, struct ft_jaxpr *j);
/* Appends an equation; in/out arrays are copied; params is copied (NULL:
 * the schema defaults, shared). Returns the equation or NULL (no memory). */
ft_eqn *ft_jb_add(ft_jb *b, ft_prim p, int n_in, ft_var *const *in, int n_out,
                  ft_var *const *out, const ft_pval *params);
/* As ft_jb_add, but params is stored, not copied: it must outlive the
 * arena (live in it, or be ft_params_default_shared) and nobody may write
 * it afterwards. Params are immutable once built, so equations with equal
 * params may share one array. */
ft_eqn *ft_jb_add_owned(ft_jb *b, ft_prim p, int n_in, ft_var *const *in, int n_out,
                        ft_var *const *out, const ft_pval *params);
/* Makes room for one more equation in b->j->eqns (false: no memory). */
bool ft_jb_reserve(ft_jb *b);
/* Sets the var lists (copied into the arena). */
bool ft_jaxpr_set_vars(struct ft_jaxpr *j, int n_const, ft_var *const *constvars,
                       int n_in, ft_var *const *invars, int n_out, ft_var *const *outvars);
/* A param array for p filled with the schema defaults (required ones NONE). */
ft_pval *ft_params_default(ft_arena *a, ft_prim p);
/* The same defaults as one immutable array per primitive, shared by every
 * equation and arena (process lifetime; never written). */
const ft_pval *ft_params_default_shared(ft_prim p);

/* ================================================================ shape.c */
/* The shape/dtype rule of every primitive: given the params and the input
 * avals, computes the output avals (n_out_expected of them) or reports the
 * misuse (primitive, shapes, dtypes) on ctx. Sub-jaxpr params are checked
 * against the inputs here too. */
/* SearchSorted's side and method params: false unless valid; *left (side
 * left) and *binary (method scan or scan_unrolled) when not NULL. */
bool ft_searchsorted_mode(const ft_pval *side, const ft_pval *method, bool *left, bool *binary);
ft_status ft_infer(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in,
                   const ft_aval *in, int *n_out, ft_aval *out, int max_out);
/* shape_linalg.c: the rules of the linear-algebra primitives; false when p
 * is not one (then nothing is touched), else *st and *n_out are set. */
bool ft_infer_linalg(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in, const ft_aval *in,
                     ft_aval *out, int max_out, int *n_out, ft_status *st);
/* Field `name` of a dimension-numbers param (GatherDimensionNumbers,
 * ScatterDimensionNumbers, ConvDimensionNumbers): from JAX's printed text
 * `Name(field=(1, 2), ...)`, or item `pos` of a positional tuple of int
 * tuples. Writes at most FT_MAX_RANK ints to out and their count to *n;
 * false when the field is missing or malformed. */
bool ft_dimnums_field(const ft_pval *v, const char *name, int pos, int64_t *out, int *n);

/* ================================================================ ragged.c */
/* ragged_dot_general's RaggedDotDimensionNumbers (docs/primitives.md). */
typedef struct ft_ragged_dims {
  int64_t lc[FT_MAX_RANK], rc[FT_MAX_RANK], lb[FT_MAX_RANK], rb[FT_MAX_RANK];
  int64_t ragged[FT_MAX_RANK], group[FT_MAX_RANK];
  int nc, nb, n_ragged, n_group;
} ft_ragged_dims;
typedef enum ft_ragged_mode {
  FT_RAGGED_BAD, FT_RAGGED_NONCONTRACTING, FT_RAGGED_CONTRACTING, FT_RAGGED_BATCH
} ft_ragged_mode;
/* Decodes JAX's printed RaggedDotDimensionNumbers(...); false if malformed. */
bool ft_ragged_dims_read(const ft_pval *v, ft_ragged_dims *d);
/* The param value (text, as JAX prints it with plain ints) of d. */
bool ft_ragged_dims_pval(ft_arena *a, const ft_ragged_dims *d, ft_pval *out);
/* JAX's _ragged_dot_mode: where the one lhs ragged dim is (BAD: not one dim
 * in range). */
ft_ragged_mode ft_ragged_mode_of(const ft_ragged_dims *d, int lhs_rank);
const char *ft_ragged_mode_name(ft_ragged_mode m);
/* JAX's _ragged_dot_prefix_dims: the lhs dims group_sizes is indexed by
 * before its group axis; returns their count. */
int ft_ragged_prefix(const ft_ragged_dims *d, ft_ragged_mode m, int lhs_rank, int64_t *out);

/* =========================================================== shape_spmd.c */
/* shard_map and the named-axis collectives (docs/spmd.md). */
#define FT_SPMD_MAX_AXES 8
typedef struct ft_spmd_axis { char name[64]; int64_t size; } ft_spmd_axis;
typedef struct ft_spmd_dim { int n; char names[FT_SPMD_MAX_AXES][64]; } ft_spmd_dim;
/* Shape rules of FT_P_SHARD_MAP and the collectives (ft_infer calls it). */
ft_status ft_infer_spmd(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in, const ft_aval *in,
                        ft_aval *out, int max_out, int *n_out);
/* psum, pmax, all_gather, ..., axis_index: the prims that name mesh axes. */
bool ft_prim_is_collective(ft_prim p);
/* The param holding a collective's axis names ("axes" or "axis_name"). */
const char *ft_spmd_axis_param(ft_prim p);
/* Axis names of a param (a name or a tuple of quoted names), copied out
 * unquoted; -1 when v is not that or holds more than max. */
int ft_spmd_names(const ft_pval *v, char (*names)[64], int max);
/* The axes of a printed Mesh(...), in order; -1 when malformed. */
int ft_spmd_mesh(const ft_pval *v, ft_spmd_axis *axes, int max);
/* The per-dimension axis names of a printed P(...); -1 when malformed. */
int ft_spmd_spec(const ft_pval *v, ft_spmd_dim *dims, int max);
/* The size of the mesh axis `name`, or -1 when the mesh has none. */
int64_t ft_spmd_axis_size(const ft_spmd_axis *mesh, int n_mesh, const char *name);
/* The number of indices a collective eqn combines over (the product of its
 * axes' sizes), after checking its axes exist in the mesh, axis_size,
 * axis_index_groups and perm; -1 with the error on ctx. */
int64_t ft_spmd_group_size(ft_ctx *ctx, const ft_eqn *e, const ft_spmd_axis *mesh, int n_mesh);
/* The named-axis environment of the shape rules: the mesh of the shard_map
 * whose body is being checked, built or transformed on this thread (the
 * innermost one), which all_to_all with split_axis != concat_axis needs
 * for its result shape (its params carry no axis size). Whoever works on a
 * shard_map body enters its mesh first and leaves it after:
 *   ft_spmd_env saved; ft_spmd_env_enter(mesh_param, &saved); ...; ft_spmd_env_leave(&saved);
 * An unreadable mesh enters an empty environment (the rules then refuse). */
typedef struct ft_spmd_env { int n; ft_spmd_axis axes[FT_SPMD_MAX_AXES]; } ft_spmd_env;
void ft_spmd_env_enter(const ft_pval *mesh, ft_spmd_env *saved);
void ft_spmd_env_leave(const ft_spmd_env *saved);
/* The current environment's mesh (*n axes; NULL, *n = 0 outside any). */
const ft_spmd_axis *ft_spmd_env_mesh(int *n);

/* ================================================================ print.c */
/* (pp.c holds the layout engine and the number formatting; print.c builds
 * JAX's document for a jaxpr.) */
/* Appends to a malloc'd growable string; all print functions use it. */
typedef struct ft_buf {
  char *p;
  size_t len, cap;
  bool failed;          /* an allocation failed; contents are incomplete */
} ft_buf;
void ft_buf_puts(ft_buf *b, const char *s);
void ft_buf_putn(ft_buf *b, const char *s, size_t n);
void ft_buf_printf(ft_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes a literal's value as JAX prints it (without the :dtype suffix). */
void ft_print_lit_value(ft_buf *b, const ft_var *lit);
/* Writes a param value as JAX prints it (sub-jaxprs at the given indent). */
void ft_print_pval(ft_buf *b, const ft_pval *v, int indent);
/* Writes an aval as JAX does in a binder, e.g. "f32[3,4]". */
void ft_print_aval(ft_buf *b, const ft_aval *a);

/* pp.c: JAX's Wadler–Lindig document printer. Documents are built in
 * pp->arena (freed with it); a failed allocation sets pp->oom and yields the
 * empty document, so builders need not check each step. */
typedef struct ft_pdoc ft_pdoc;
typedef struct ft_pp {
  ft_arena *arena;
  bool oom;
} ft_pp;
ft_pdoc *ft_pd_nil(void);
ft_pdoc *ft_pd_text(ft_pp *pp, const char *s);            /* s must outlive the doc */
ft_pdoc *ft_pd_textn(ft_pp *pp, const char *s, size_t n);
ft_pdoc *ft_pd_textcopy(ft_pp *pp, const char *s, size_t n); /* copies s */
ft_pdoc *ft_pd_cat(ft_pp *pp, ft_pdoc *a, ft_pdoc *b);
ft_pdoc *ft_pd_brk(ft_pp *pp, const char *s);             /* s: static text */
ft_pdoc *ft_pd_group(ft_pp *pp, ft_pdoc *a);
ft_pdoc *ft_pd_nest(ft_pp *pp, int n, ft_pdoc *a);
ft_pdoc *ft_pd_join(ft_pp *pp, ft_pdoc *sep, ft_pdoc **docs, int n);
/* Lays doc out at the given width, starting at column `indent`. */
void ft_pd_format(ft_buf *out, const ft_pdoc *doc, int width, int indent);
/* Python's repr(float) (add_dot_0: "1.0" rather than "1", as float.__repr__
 * does; complex parts omit it) and repr(complex). */
void ft_py_float_repr(ft_buf *b, double x, bool add_dot_0);
void ft_py_complex_repr(ft_buf *b, double re, double im);

/* The sub-jaxprs of j (at any depth) that have constvars, depth first in
 * equation order with params in canonical order, each shared one once
 * (jaxpr.c). *out (may be NULL): a malloc'd list the caller frees. Returns
 * the count, -1 when out of memory. */
int ft_jaxpr_closed_subs(const struct ft_jaxpr *j, const struct ft_jaxpr ***out);

/* ================================================================ parse.c */
/* The parser's state, shared by parse.c (jaxprs, equations, atoms) and
 * parse_params.c (param values). Errors longjmp out through ft_parse_fail,
 * so everything is allocated in arenas that ft_parse frees on the way out. */
struct ft_scope;
typedef struct ft_parser {
  ft_ctx *ctx;
  const char *src, *name;     /* text and its name for messages */
  size_t len, pos;
  void *jmp;                  /* jmp_buf *: where ft_parse_fail returns to */
  ft_arena *arena;            /* the result's arena */
  ft_arena *tmp;              /* scratch: scopes, growing arrays */
  struct ft_scope *scope;     /* names of the jaxpr being parsed */
  int depth;                  /* nesting of jaxprs and tuples (bounded) */
  int n_named, cap_named;     /* hoisted `let name = { ... } in` jaxprs */
  struct ft_named *named;     /*   (and forward references to them) */
} ft_parser;

/* Records "name:line:col: message", the line and a caret under pos, then
 * unwinds the parse. */
_Noreturn void ft_parse_fail(ft_parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ft_parse_skip_ws(ft_parser *p);
/* The current byte (0 at the end of the text). */
char ft_parse_peek(const ft_parser *p);
/* Skips whitespace and consumes c if it is next. */
bool ft_parse_accept(ft_parser *p, char c);
void ft_parse_expect(ft_parser *p, char c, const char *what);
/* Length of the identifier at pos (letters, digits, '_'; extra: more allowed
 * characters such as "-" or "."), 0 if none. */
size_t ft_parse_ident_len(const ft_parser *p, const char *extra);
/* A sub-jaxpr `{ lambda ... }` at pos (own scope). */
struct ft_jaxpr *ft_parse_subjaxpr(ft_parser *p);
/* The hoisted jaxpr named src[start..start+n): defined before or later in
 * the text (a forward reference is checked at the end). */
/* Length of the hoisted-jaxpr name at pos (0: none). */
size_t ft_parse_jaxpr_name_len(const ft_parser *p);
struct ft_jaxpr *ft_parse_named_ref(ft_parser *p, size_t start, size_t n);
/* A closed jaxpr printed as a program of its own inside a param (its own
 * `let name = { ... } in` hoists, in a scope of their own). */
struct ft_jaxpr *ft_parse_closed_program(ft_parser *p);
/* Whether v is a _LinearSolveTuple value: 4 ints, or 4 jaxprs or None. */
bool ft_lstuple_ok(const ft_pval *v);
/* A param value of the given kind at pos (parse_params.c). */
ft_pval ft_parse_param_value(ft_parser *p, ft_prim prim, const ft_param_spec *spec);
/* Rewrites values older JAX printed into 0.10.2's form (trivial jit params
 * become None, function reprs become names). */
void ft_parse_normalize_params(ft_parser *p, ft_prim prim, ft_pval *params, size_t at);

/* =============================================================== verify.c */
/* ft_jaxpr_verify is public (ft.h). */

/* ================================================================= hash.c */
/* ft_jaxpr_hash is public (ft.h): XXH3-128 of the canonical printed form. */

/* ================================================================ clone.c */
/* IR-level utilities (moved from src/transforms, issue 23). */

/* A map from var id to var (or to a flag), growing on demand. Ids are dense
 * per arena, so an array indexed by id is the cheapest map. */
typedef struct vmap {
  ft_var **v;
  uint32_t cap;
  bool failed;
} vmap;

bool vmap_init(vmap *m, uint32_t cap);
void vmap_free(vmap *m);
static inline ft_var *vmap_get(const vmap *m, const ft_var *k) {
  return k->id < m->cap ? m->v[k->id] : NULL;
}
bool vmap_set_grow(vmap *m, const ft_var *k, ft_var *v);
/* Maps sized by the arena's var-id count never grow: the set is a store. */
static inline bool vmap_set(vmap *m, const ft_var *k, ft_var *v) {
  if (k->id >= m->cap) return vmap_set_grow(m, k, v);
  m->v[k->id] = v;
  return true;
}

/* A byte flag per var id, growing on demand. */
typedef struct vflags {
  uint8_t *f;
  uint32_t cap;
  bool failed;
} vflags;
bool vflags_init(vflags *m, uint32_t cap);
void vflags_free(vflags *m);
static inline uint8_t vflags_get(const vflags *m, const ft_var *k) {
  return k->id < m->cap ? m->f[k->id] : 0;
}
bool vflags_set_grow(vflags *m, const ft_var *k, uint8_t v);
static inline bool vflags_set(vflags *m, const ft_var *k, uint8_t v) {
  if (k->id >= m->cap) return vflags_set_grow(m, k, v);
  m->f[k->id] = v;
  return true;
}

/* Deep copies (params, jaxprs) into arena a, renaming every var. */
ft_pval pval_clone(ft_arena *a, const ft_pval *v, bool *ok);
ft_pval *params_clone(ft_arena *a, ft_prim p, const ft_pval *ps);
ft_jaxpr *jaxpr_clone(ft_arena *a, const ft_jaxpr *src);
/* As jaxpr_clone, but a sub-jaxpr used at several sites (one pointer) gets
 * one copy used at the same sites: the copy shares what src shares. */
ft_jaxpr *jaxpr_clone_shared(ft_arena *a, const ft_jaxpr *src);
/* A new top-level jaxpr (own arena) that is a deep copy of src. */
ft_jaxpr *jaxpr_clone_top(const ft_jaxpr *src);
/* Copies const_data of src into dst's arena (dst constvars shaped like src's). */
bool jaxpr_copy_consts(ft_jaxpr *dst, const ft_jaxpr *src);
/* A literal var equal to lit, in arena a. */
ft_var *lit_clone(ft_arena *a, const ft_var *lit);
/* A jaxpr in arena a whose invars are src's, reordered: new input k is
 * src input perm_in[k]; and likewise outputs. Shares the equations. */
ft_jaxpr *jaxpr_permute(ft_arena *a, const ft_jaxpr *src, const int *perm_in, const int *perm_out);

#endif /* FT_IR_H */
