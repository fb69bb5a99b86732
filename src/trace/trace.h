/* src/trace/trace.h: the internal header of tracing (DESIGN.md §3).
 * Sections follow the files: trace.c (tracers, values, emission, constants,
 * ft_trace), ops.c (one function per primitive), control.c (cond, while,
 * scan, jit: sub-traces), custom.c (custom_jvp_call, custom_vjp_call),
 * numpy.c (jax.numpy-style conveniences built from primitives, and dtype
 * promotion).
 *
 * Model. One ft_trace call owns a tree of tracers: the root builds the
 * top-level jaxpr; each control-flow call pushes a sub-tracer that builds a
 * sub-jaxpr in the same arena. Every op is emitted into the innermost active
 * tracer (root->cur). A value of an enclosing tracer used there is captured:
 * the sub-tracer gets a new input for it, and the control-flow equation
 * passes the outer value as a leading operand (JAX's closure conversion).
 * Errors are sticky on the root: after the first one, every op returns NULL
 * and ft_trace returns NULL with that message on the context. */
#ifndef FT_TRACE_H
#define FT_TRACE_H

#include "ir/ir.h"

struct ft_val {
  struct ft_tracer *t;  /* the tracer whose jaxpr defines v (any tracer for literals) */
  ft_var *v;
};

struct ft_tracer {
  ft_ctx *ctx;
  struct ft_tracer *root, *parent;
  struct ft_tracer *next_all;  /* root's list of every tracer, freed at the end */
  int level;                   /* 0 for the root */
  bool active;                 /* on the stack root..root->cur */
  ft_jaxpr *j;
  ft_jb jb;
  /* captures: outer var (in parent's scope) -> this tracer's input var */
  int n_cap, cap_cap;
  ft_var **cap_outer, **cap_inner;
  /* root only */
  struct ft_tracer *cur;
  bool failed;
  ft_status st;
  char *msg;                   /* the first error (malloc'd) */
  int n_const, const_cap;
  ft_var **constvars;
  void **const_data;
};

/* ================================================================ trace.c */
/* Records the first error of the trace (formatted like printf) on the root
 * and on ctx; later errors are ignored. */
void ft__fail(ft_tracer *t, ft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reads a sized option struct of a tracing call (ft_opts_read's rules;
 * NULL gives the defaults, all zero); a bad size fails the trace. */
bool ft__opts(ft_tracer *t, const char *what, const void *src, size_t known, void *dst);
/* The root of the trace a set of operands belongs to (the first non-NULL
 * one, else t). Reports a NULL operand as an error of `what` and returns NULL;
 * returns NULL silently when the trace has already failed. */
ft_tracer *ft__root_of(ft_tracer *t, const char *what, int n, ft_val *const *vals);
/* A value for var v defined by tracer t (allocated in the arena). */
ft_val *ft__val(ft_tracer *t, ft_var *v);
/* The var of v as seen by tracer tr (capturing through enclosing tracers). */
ft_var *ft__lift(ft_tracer *tr, ft_val *v, const char *what);
/* A param array of p with its schema defaults, in the trace's arena. */
ft_pval *ft__params(ft_tracer *root, ft_prim p);
/* Sets param `name` of p in ps (ignored when the schema has no such param). */
void ft__set(ft_pval *ps, ft_prim p, const char *name, ft_pval v);
ft_pval ft__ints(ft_tracer *root, int n, const int64_t *v);
ft_pval ft__ints_i(ft_tracer *root, int n, const int *v);
/* Emits one equation of p into root->cur after its shape rule; returns the
 * number of outputs written to out (at most max_out), or -1 on error. */
int ft__emit(ft_tracer *root, ft_prim p, int n_in, ft_val *const *in, const ft_pval *params,
             ft_val **out, int max_out);
ft_val *ft__emit1(ft_tracer *root, ft_prim p, int n_in, ft_val *const *in, const ft_pval *params);
/* Literals: a new literal of dtype dt holding v (converted as a C cast
 * would, rounded to the dtype's precision), optionally weakly typed. */
ft_val *ft__lit(ft_tracer *t, ft_dtype dt, double v, bool weak);
/* Runs fn on tracer t with argument vars args, lifts its results into t
 * and stores them as t's outvars (invars are left to the caller: captures
 * + args). Returns the number of outputs or -1. */
int ft__run(ft_tracer *t, ft_trace_fn fn, void *user, int n_args, ft_var *const *args,
            const char *what);
/* A sub-tracer of root->cur with n_args fresh argument vars of the given
 * avals (written to args). NULL on failure. */
ft_tracer *ft__sub_new(ft_tracer *root, int n_args, const ft_aval *avals, ft_var **args);
/* The literal var lit converted to dtype dt (constant folding). */
ft_var *ft__lit_convert(ft_arena *a, const ft_var *lit, ft_dtype dt, bool weak);

/* ============================================================ control.c */
/* One traced callback (a sub-jaxpr being built): its tracer and argument vars. */
typedef struct ft_subtrace {
  ft_tracer *t;
  ft_var **args;   /* malloc'd; the caller frees it */
  int n_args;
} ft_subtrace;

/* Traces fn with n_args arguments of the given avals into a new sub-tracer
 * of root->cur; `what` names it in errors. False (error on root) on failure. */
bool ft__trace_sub(ft_tracer *root, ft_subtrace *s, ft_trace_fn fn, void *user, int n_args,
                   const ft_aval *avals, const char *what);
/* Installs the invars of s: inner vars for the outer vars consts[0..n)
 * (its captures, or fresh unused vars for consts it did not capture), then
 * its arguments. */
bool ft__install_sub(ft_tracer *root, ft_subtrace *s, int n, ft_var *const *consts);
/* Operands [lead_vals..., consts (vars of root->cur) as values..., vals...]
 * (malloc'd; the caller frees it), or NULL. */
ft_val **ft__operands(ft_tracer *root, int n_consts, ft_var *const *consts, int lead,
                      ft_val *const *lead_vals, int n_vals, ft_val *const *vals);
/* The avals of v[0..n) (malloc'd; the caller frees it), or NULL. */
ft_aval *ft__avals_of(ft_tracer *root, int n, ft_val *const *v);

/* ============================================================== numpy.c */
/* JAX's type promotion (jnp.promote_types with weak types, x64 off for the
 * weak defaults: weak ints are int32, weak floats float32). */
void ft__promote(ft_dtype a, bool wa, ft_dtype b, bool wb, ft_dtype *out, bool *weak);
/* x converted to dtype dt with the given weak type: no-op when equal, a
 * folded literal for literals, else convert_element_type. */
ft_val *ft__astype(ft_val *x, ft_dtype dt, bool weak);

#endif /* FT_TRACE_H */
