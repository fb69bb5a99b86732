/* frankentrace.h: the public C API of FrankenTrace, a trace compiler with
 * JAX's core semantics (jaxprs, transforms, JIT) as a C library. Installed
 * as <frankentrace.h>; <ft.h> is a shim that includes it (docs/install.md).
 *
 * Conventions, for every function below:
 *  - Handles are opaque. A function that returns a pointer says who owns it
 *    and how it is freed. Freeing NULL is always allowed.
 *  - Functions return ft_status (FT_OK == 0) or NULL on failure; the message,
 *    naming what is wrong and where, is then available from ft_ctx_error().
 *  - The library never prints and never exits.
 *  - One ft_ctx must not be used by two threads at the same time; separate
 *    contexts are independent.
 *
 *  - Argument order: the context, then the object acted on, then inputs as
 *    (count, array) pairs, then outputs, then options. Every array
 *    parameter comes with its length, except where the length is fixed by
 *    an operand's rank and says so.
 *  - Borrowed inputs are const (const ft_array *const *in): a C caller
 *    holding ft_array *in[] passes it with a cast,
 *    (const ft_array *const *)in (C++ converts implicitly).
 *  - Option structs begin with `size_t size`; initialize them with their
 *    *_INIT macro (e.g. ft_jit_options o = FT_JIT_OPTIONS_INIT;). The
 *    library reads only the fields that fit in size, so a program built
 *    against an older header keeps working; a size of 0 (a struct not
 *    initialized by the macro) is refused with FT_ERR_INVALID_ARG, and
 *    non-zero fields beyond what this library knows with
 *    FT_ERR_UNSUPPORTED.
 *
 * The header compiles as C11 and as C++.
 */
#ifndef FT_H
#define FT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version of this header (semantic versioning; the shared library's
 * SONAME carries the ABI number, raised at each incompatible change:
 * libfrankentrace.so.1 since 0.2.0). ft_version() gives
 * the version of the library actually linked. meson.build checks these
 * against the project's version. */
#define FT_VERSION_MAJOR 0
#define FT_VERSION_MINOR 2
#define FT_VERSION_PATCH 0
#define FT_VERSION_STRING "0.2.0"
/* One number for compile-time comparisons: FT_VERSION_NUMBER >= FT_VERSION_AT(0, 2, 0). */
#define FT_VERSION_AT(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define FT_VERSION_NUMBER FT_VERSION_AT(FT_VERSION_MAJOR, FT_VERSION_MINOR, FT_VERSION_PATCH)

#if defined(FT_BUILDING_LIBRARY)
#define FT_API __attribute__((visibility("default")))
#else
#define FT_API
#endif

/* The *_INIT macros of the option structs: size set, every other field
 * zero (in C a designated initializer; in C++ an expression that value-
 * initializes the struct, so that -Wextra stays quiet in both). */
#ifdef __cplusplus
#define FT_SIZED_INIT_(T) ([] { T o_{}; o_.size = sizeof o_; return o_; }())
#else
#define FT_SIZED_INIT_(T) {.size = sizeof(T)}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== core */

typedef enum ft_status {
  FT_OK = 0,
  FT_ERR_INVALID_ARG,  /* a NULL handle, an out-of-range index, bad options */
  FT_ERR_PARSE,        /* malformed jaxpr text (message has line:col and a caret) */
  FT_ERR_TYPE,         /* dtype mismatch, wrong arity, bad params, SSA violation */
  FT_ERR_SHAPE,        /* shape mismatch */
  FT_ERR_UNSUPPORTED,  /* a valid request that this build cannot do (names what) */
  FT_ERR_IO,           /* a file could not be read or written, or is malformed */
  FT_ERR_NOMEM,        /* an allocation failed; nothing was half-done */
  FT_ERR_RUNTIME,      /* evaluation failed (e.g. a hardened-mode guard) */
  FT_ERR_INTERNAL,     /* a bug in FrankenTrace: please report it */
  FT_ERR_LIMIT,        /* a loop ran past its iteration or time limit (ft_loop_limits) */
  FT_ERR_CANCELLED     /* the work was cancelled (ft_ctx_cancel, ft_fn_cancel) */
} ft_status;

/* Element types, with the short names JAX prints (bool, i8, ..., c128). */
typedef enum ft_dtype {
  FT_BOOL = 0,
  FT_I8, FT_I16, FT_I32, FT_I64,
  FT_U8, FT_U16, FT_U32, FT_U64,
  FT_F16, FT_BF16, FT_F32, FT_F64,
  FT_C64, FT_C128,
  FT_FLOAT0,           /* JAX's tangent type of integer values: no data */
  /* PRNG key types (JAX's extended dtypes, printed key<tag>): one element is
   * one key, stored as its impl's u32 words (key<fry>[4] is u32[4,2] in
   * memory). Only threefry2x32 (fry) is built; the others parse, print and
   * move through layout operations, and random_* refuse them (docs/random.md). */
  FT_KEY_FRY,          /* threefry2x32: 2 words */
  FT_KEY_FRY4,         /* threefry4x32: 4 words */
  FT_KEY_PHX2,         /* philox2x32: 1 word */
  FT_KEY_PHX4,         /* philox4x32: 2 words */
  FT_KEY_RBG,          /* rbg: 4 words */
  FT_KEY_URBG,         /* unsafe_rbg: 4 words */
  FT_NUM_DTYPES
} ft_dtype;

#define FT_MAX_RANK 8

/* An abstract value: dtype and shape. weak_type is JAX's weak typing (the
 * type of a Python scalar); it only shows in convert_element_type params. */
typedef struct ft_aval {
  ft_dtype dtype;
  int rank;
  int64_t dims[FT_MAX_RANK];
  bool weak_type;
} ft_aval;

/* Error-handling policy (docs/architecture.md, "Modes"). */
typedef enum ft_mode {
  FT_MODE_STRICT = 0,  /* fail closed on anything unknown */
  FT_MODE_HARDENED     /* also guard at run time and record guard events */
} ft_mode;

/* How a custom_jvp_call whose jvp rule JAX printed only as a Python
 * function's name (`jvp=softplus_jvp`) is differentiated
 * (ft_ctx_options.custom_jvp; docs/autodiff.md, "Rules JAX printed as
 * Python functions"). */
typedef enum ft_custom_jvp_mode {
  /* Refuse (FT_ERR_UNSUPPORTED, naming the function and the rule), except
   * for JAX library functions whose rule FrankenTrace knows exactly. */
  FT_CUSTOM_JVP_REFUSE = 0,
  /* Differentiate call_jaxpr instead of the unknown rule. WRONG wherever
   * the rule is not the true derivative of call_jaxpr (a `where` that
   * makes the gradient 0 at a singular point, a clipped or
   * straight-through gradient): only for rules known to be the plain
   * derivative. */
  FT_CUSTOM_JVP_PRIMAL
} ft_custom_jvp_mode;

/* The allocator of array buffers (ft_ctx_options.allocator). alloc returns
 * size bytes aligned to alignment (64; a power of two dividing size), or
 * NULL on failure; free releases such a block (p never NULL) and gets the
 * size that was asked for. Both may be called from any thread (the JIT's
 * executor threads allocate the buffers of interpreter fallback steps). */
typedef struct ft_allocator {
  void *(*alloc)(void *user, size_t size, size_t alignment);
  void (*free)(void *user, void *p, size_t size);
  void *user;
} ft_allocator;

typedef struct ft_ctx_options {
  size_t size;         /* sizeof(ft_ctx_options): set by FT_CTX_OPTIONS_INIT */
  ft_mode mode;
  int num_threads;     /* 0: FT_NUM_THREADS from the environment, else the core count */
  /* Hardened mode only (ignored in strict mode): */
  bool guard_fail;      /* a guard that fires fails the call (FT_ERR_RUNTIME) instead of
                           keeping the defined result and reporting it */
  bool guard_each_step; /* also check every equation (interpreter) or plan step (JIT) for
                           NaN/Inf appearing in its results (slow: a debugging aid) */
  /* Where the buffers of arrays made on this context come from (both
   * functions NULL: aligned_alloc and free). Exactly these allocations go
   * through it: the data buffer of every ft_array the library creates on
   * the context or on an ft_fn compiled on it, i.e. ft_array_new,
   * ft_array_from_data, ft_npy_read, ft_npy_read_mem, the outputs of ft_eval,
   * ft_call and ft_profile_jaxpr, and the interpreter's intermediate arrays
   * (in ft_eval, and in JIT fallback steps). An array remembers its
   * allocator: ft_array_free gives the buffer back to it, so the user
   * pointer must stay valid until the last such array is freed. Array
   * handles (a small struct), ft_array_wrap's handles, jaxprs, compiled
   * code, the JIT's buffer frames, ledger buffers and returned strings use
   * malloc. */
  ft_allocator allocator;
  /* custom_jvp_call rules only named in a printout: FT_CUSTOM_JVP_REFUSE
   * (0, the default) or the FT_CUSTOM_JVP_PRIMAL opt-in (read its warning). */
  ft_custom_jvp_mode custom_jvp;
} ft_ctx_options;
#define FT_CTX_OPTIONS_INIT FT_SIZED_INIT_(ft_ctx_options)

typedef struct ft_ctx ft_ctx;

/* The library's version, e.g. "0.1.0". Static storage. */
FT_API const char *ft_version(void);

/* Creates a context. opts may be NULL (defaults: strict, automatic threads).
 * Returns NULL when memory is exhausted or opts is refused (its size is 0,
 * it sets fields this library does not know, or only one of the
 * allocator's alloc and free): with no context to hold a message, check
 * the options with ft_ctx_options_check first when that matters. Free with
 * ft_ctx_free(). */
FT_API ft_ctx *ft_ctx_new(const ft_ctx_options *opts);
FT_API void ft_ctx_free(ft_ctx *ctx);
/* Why ft_ctx_new would refuse opts: FT_OK, or a status with a message in
 * buf (len bytes; may be NULL). */
FT_API ft_status ft_ctx_options_check(const ft_ctx_options *opts, char *buf, size_t len);

/* The message of the last failure on ctx ("" if none): a copy for the
 * calling thread, valid until this thread's fourth later ft_ctx_error call.
 * A context may fail from several threads at once (concurrent ft_call of one
 * ft_fn); each message is written and read whole. */
FT_API const char *ft_ctx_error(const ft_ctx *ctx);
/* The status of the last failure on ctx (FT_OK if none). */
FT_API ft_status ft_ctx_status(const ft_ctx *ctx);
/* The name of a status code, e.g. "FT_ERR_PARSE", or "FT_ERR_?" for a value
 * that is not one. Static storage. */
FT_API const char *ft_status_string(ft_status code);
FT_API void ft_ctx_clear_error(ft_ctx *ctx);

/* Bounds on loops that might never finish (a while_loop whose predicate
 * stays true, a scan of length 10^12). Strict mode runs such programs, as
 * JAX does; with limits set, each execution of one while or scan stops
 * after max_iterations iterations or max_seconds of wall time, and the call
 * fails with FT_ERR_LIMIT naming the loop and what was reached. Both the
 * interpreter (ft_eval) and compiled code (ft_call) check them before
 * every iteration (AOT-emitted functions take no context and run
 * unbounded). Zero fields mean no limit. */
typedef struct ft_loop_limits {
  size_t size;             /* sizeof(ft_loop_limits): set by FT_LOOP_LIMITS_INIT */
  int64_t max_iterations;  /* per execution of one loop; 0: none */
  double max_seconds;      /* wall time of one execution of one loop; <= 0: none */
} ft_loop_limits;
#define FT_LOOP_LIMITS_INIT FT_SIZED_INIT_(ft_loop_limits)
/* Sets ctx's loop limits (NULL: none). Applies to loops that start later.
 * FT_ERR_INVALID_ARG (limits unchanged) for a NULL ctx or a bad size. */
FT_API ft_status ft_ctx_set_loop_limits(ft_ctx *ctx, const ft_loop_limits *limits);
/* Cancels: every loop running on ctx, from any thread, stops before its
 * next iteration and its call fails with FT_ERR_CANCELLED; so do later
 * loops until ft_ctx_clear_cancel. Safe to call from any thread or from a
 * signal handler (an atomic store). */
FT_API void ft_ctx_cancel(ft_ctx *ctx);
FT_API void ft_ctx_clear_cancel(ft_ctx *ctx);

/* Hardened mode's run-time guards (docs/architecture.md, "Modes"). Strict mode (the default) fails closed on anything unknown
 * when a program is parsed, transformed, optimized or compiled, and adds
 * no run-time check. FT_MODE_HARDENED keeps every strict check and also
 * guards ft_eval and ft_call (ft_call_into) at run time:
 *  - NONFINITE: NaN or Inf in an output (with guard_each_step: in the
 *    results of an equation, or JIT plan step, whose inputs had none);
 *  - INDEX: a gather/scatter index out of bounds where the equation said
 *    mode=PROMISE_IN_BOUNDS (the defined result is kept: gather clamps,
 *    scatter drops the update window);
 *  - LOOP: a while/scan stopped by its budget (ft_loop_limits; hardened
 *    loops without one stop at FT_HARDENED_MAX_ITERATIONS);
 *  - CALL: the call boundary: each input's and (ft_call_into) output's
 *    dtype, shape, byte count and 64-byte alignment, outputs not aliasing
 *    inputs.
 * NONFINITE and INDEX keep the defined result and the call succeeds,
 * unless ft_ctx_options.guard_fail; LOOP and CALL always fail the call.
 * Every firing is kept on the context (the first FT_MAX_GUARDS) and
 * written to an attached ledger as a `guard` record. Guards never change
 * a result's bits: hardened results equal strict results. */
#define FT_HARDENED_MAX_ITERATIONS (INT64_C(1) << 31)
#define FT_MAX_GUARDS 64
typedef enum ft_guard_kind {
  FT_GUARD_NONFINITE = 0, FT_GUARD_INDEX, FT_GUARD_LOOP, FT_GUARD_CALL, FT_GUARD_NUM_KINDS
} ft_guard_kind;
typedef enum ft_guard_decision {
  FT_GUARD_CONTINUED = 0, /* the defined result was kept and the call went on */
  FT_GUARD_FAILED         /* the call failed */
} ft_guard_decision;
typedef struct ft_guard_event {
  ft_guard_kind kind;
  ft_guard_decision decision;
  const char *engine;   /* "interp" or "jit" (static storage) */
  int eqn;              /* the equation: its index in the program the engine ran
                           (the JIT's: ft_fn_plan); -1: none (the call's outputs) */
  const char *prim;     /* its primitive ("" when none; static storage) */
  int output;           /* the output or result index; -1: none */
  char message[256];    /* what fired, where, and the decision, in words */
} ft_guard_event;
/* Guards fired on ctx since it was made or last cleared (at most FT_MAX_GUARDS
 * are kept; later ones still reach the ledger). */
FT_API int ft_ctx_num_guards(const ft_ctx *ctx);
/* Copies guard i (0-based, oldest first); FT_ERR_INVALID_ARG when out of range. */
FT_API ft_status ft_ctx_get_guard(const ft_ctx *ctx, int i, ft_guard_event *out);
FT_API void ft_ctx_clear_guards(ft_ctx *ctx);
/* "nonfinite", "index", "loop", "call"; NULL when out of range. Static. */
FT_API const char *ft_guard_kind_name(ft_guard_kind kind);

/* Frees memory the library returned to the caller with malloc (strings). */
FT_API void ft_free(void *p);

/* dtype names as JAX prints them in avals ("f32") and in params ("float32").
 * Static storage. */
FT_API const char *ft_dtype_name(ft_dtype dt);
FT_API const char *ft_dtype_long_name(ft_dtype dt);
/* Parses either spelling; returns FT_OK or FT_ERR_INVALID_ARG. */
FT_API ft_status ft_dtype_from_name(const char *name, ft_dtype *out);
/* Bytes per element (0 for float0). */
FT_API size_t ft_dtype_size(ft_dtype dt);
/* Number of elements of an aval (1 for a scalar). */
FT_API int64_t ft_aval_size(const ft_aval *a);
/* Writes an aval as JAX prints it ("f32[3,4]") into buf (n bytes); returns buf. */
FT_API char *ft_aval_str(const ft_aval *a, char *buf, size_t n);
/* Writes len bytes to path through a temporary file in the same directory
 * renamed over path when complete: path is never left half written (a full
 * disk or a crash leaves its old content, or no file) and no temporary
 * stays behind. On failure, FT_ERR_IO with "WHAT: cannot write 'PATH':
 * <errno text> (the file was not changed)". Not synced to disk. */
FT_API ft_status ft_file_write(ft_ctx *ctx, const char *what, const char *path, const void *data,
                               size_t len);

/* ==================================================================== jaxpr */

typedef struct ft_jaxpr ft_jaxpr;

/* Parses the text of a jaxpr as JAX prints it (JAX 0.4.35 through 0.10).
 * name is used in error messages (e.g. a file name; may be NULL). On error
 * returns NULL and the message names line:col, shows the line with a caret
 * and says what was expected. The result is verified. Free with ft_jaxpr_free(). */
FT_API ft_jaxpr *ft_parse(ft_ctx *ctx, const char *text, size_t len, const char *name);
FT_API void ft_jaxpr_free(ft_jaxpr *j);

/* Prints j exactly as JAX 0.10.2 prints the same program. Returns a
 * NUL-terminated malloc'd string the caller frees with ft_free(); NULL on
 * allocation failure. */
FT_API char *ft_jaxpr_print(ft_ctx *ctx, const ft_jaxpr *j);

/* Checks types, arity, params, shapes and SSA scoping of j (recursively).
 * FT_OK, or an error naming the equation (by index and primitive) and the problem. */
FT_API ft_status ft_jaxpr_verify(ft_ctx *ctx, const ft_jaxpr *j);

/* The canonical XXH3-128 hash: invariant under renaming of variables, changed
 * by any semantic change. out receives 16 bytes (big-endian high64, low64). */
FT_API void ft_jaxpr_hash(const ft_jaxpr *j, uint8_t out[16]);
/* The same hash as 32 lowercase hex digits plus NUL in out (33 bytes). */
FT_API void ft_jaxpr_hash_hex(const ft_jaxpr *j, char out[33]);

FT_API int ft_jaxpr_num_inputs(const ft_jaxpr *j);
FT_API int ft_jaxpr_num_outputs(const ft_jaxpr *j);
FT_API int ft_jaxpr_num_eqns(const ft_jaxpr *j);
/* The aval of input i / output i; FT_ERR_INVALID_ARG when out of range. */
FT_API ft_status ft_jaxpr_input_aval(const ft_jaxpr *j, int i, ft_aval *out);
FT_API ft_status ft_jaxpr_output_aval(const ft_jaxpr *j, int i, ft_aval *out);
/* Constants (constvars) of j. A traced jaxpr carries their values; a parsed
 * one does not (JAX's text has none): then ft_eval and ft_jit take them as
 * leading inputs, or ft_jaxpr_bind_consts binds them once so that j is
 * called with its inputs only, like a traced jaxpr. */
FT_API int ft_jaxpr_num_consts(const ft_jaxpr *j);
FT_API ft_status ft_jaxpr_const_aval(const ft_jaxpr *j, int i, ft_aval *out);
/* True when j carries its constants' values (or has none). */
FT_API bool ft_jaxpr_consts_bound(const ft_jaxpr *j);

/* Writes a Graphviz DOT picture of j. malloc'd string, free with ft_free(). */
FT_API char *ft_jaxpr_dot(ft_ctx *ctx, const ft_jaxpr *j);

/* ================================================================== arrays */
/* A host array: a dtype, a shape (C order, rank <= FT_MAX_RANK) and an owned,
 * 64-byte aligned buffer of ft_array_nbytes() bytes. */
typedef struct ft_array ft_array;

/* A new zero-filled array. dims has rank entries (may be NULL for rank 0);
 * each must be >= 0. Returns NULL with FT_ERR_INVALID_ARG (bad dtype, rank
 * or dims) or FT_ERR_NOMEM on ctx. The caller frees it with ft_array_free(). */
FT_API ft_array *ft_array_new(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims);
/* A new array holding a copy of data (C order, ft_array_nbytes() bytes; not
 * retained). Fails like ft_array_new, or when data is NULL for a non-empty
 * array. The caller frees it with ft_array_free(). */
FT_API ft_array *ft_array_from_data(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims,
                                    const void *data);
/* An array over the caller's memory, without a copy: data (C order,
 * ft_array_nbytes() bytes, 64-byte aligned as the library's own buffers are,
 * e.g. from aligned_alloc(64, n)) is borrowed, never freed by the library,
 * and must stay valid and unmoved until ft_array_free() of the result, which
 * frees only the handle. Reads and writes through the array (ft_call_into
 * outputs, ft_array_data, ft_array_data_mut) go to data. Fails like ft_array_new, or with
 * FT_ERR_INVALID_ARG when data is NULL for a non-empty array or misaligned. */
FT_API ft_array *ft_array_wrap(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims,
                               void *data);
FT_API void ft_array_free(ft_array *a);
/* The buffer (owned by a, or the caller's for ft_array_wrap; valid until
 * ft_array_free), read-only. NULL for NULL. */
FT_API const void *ft_array_data(const ft_array *a);
/* The same buffer, writable (fill an input, write a wrapped buffer). */
FT_API void *ft_array_data_mut(ft_array *a);
/* The dtype and shape (weak_type false). */
FT_API ft_aval ft_array_aval(const ft_array *a);
/* PRNG keys at the boundary (docs/random.md): a key array key<fry>[s] holds
 * the same bytes as its key data u32[s,2] (jax.random.key_data). This turns
 * a u32 array whose last axis is the key type's word count into that key
 * array, in place (e.g. an .npy of key data read for a key<fry> input);
 * FT_ERR_TYPE otherwise. ft_npy_write writes key arrays as their key data. */
FT_API ft_status ft_array_wrap_keys(ft_ctx *ctx, ft_array *a, ft_dtype key_dtype);
FT_API size_t ft_array_nbytes(const ft_array *a);
/* True when a and b have the same dtype, the same shape and the same bytes
 * (so NaN payloads and the sign of zero count). */
FT_API bool ft_array_equal_bits(const ft_array *a, const ft_array *b);

/* Reads a NumPy .npy file (format 1.0, 2.0 or 3.0; little-endian, C order;
 * bool, int8..int64, uint8..uint64, float16, bfloat16 (descr '<V2' as
 * ml_dtypes/JAX write it, or 'bfloat16'), float32, float64, complex64,
 * complex128). Fortran order, big-endian, structured or object dtypes,
 * pickles and malformed or truncated files fail with FT_ERR_IO and a
 * message naming the file and the problem. The caller frees the result with
 * ft_array_free(). */
FT_API ft_array *ft_npy_read(ft_ctx *ctx, const char *path);
/* The same from len bytes at buf (not retained); name is used in messages
 * (may be NULL). */
FT_API ft_array *ft_npy_read_mem(ft_ctx *ctx, const void *buf, size_t len, const char *name);
/* Writes a as a format 1.0 .npy file (bf16 as '<V2'). FT_ERR_IO on failure. */
FT_API ft_status ft_npy_write(ft_ctx *ctx, const ft_array *a, const char *path);
/* The same file contents in memory: *out is malloc'd (free with ft_free()),
 * *out_len its size. */
FT_API ft_status ft_npy_write_mem(ft_ctx *ctx, const ft_array *a, void **out, size_t *out_len);

/* ============================================================= interpreter */
/* Binds a parsed jaxpr's constants: copies n == ft_jaxpr_num_consts(j)
 * arrays (borrowed) into j as its constants' values. Each must match its
 * constvar's dtype and shape (FT_ERR_TYPE / FT_ERR_SHAPE naming the
 * constant); FT_ERR_INVALID_ARG when j already carries values or n is
 * wrong. On failure j is unchanged. */
FT_API ft_status ft_jaxpr_bind_consts(ft_ctx *ctx, ft_jaxpr *j, int n,
                                      const ft_array *const *values);
/* Constants of sub-jaxprs. A jit whose closed jaxpr keeps constants (JAX
 * 0.12 keeps NumPy arrays so: jnp.piecewise's tables in jax.scipy.special's
 * sici and spence) prints `{ lambda a:f32[8]; ...}` with no values, so a
 * parsed program cannot run until they are bound. The sub-jaxprs with
 * constvars are numbered 0..ft_jaxpr_num_sub_consts(j)-1 depth first, in
 * equation order, params in the order JAX prints them (sorted by name), a
 * shared (hoisted) sub-jaxpr once. ft_jaxpr_bind_sub_consts binds sub-jaxpr
 * k's n constants as ft_jaxpr_bind_consts does (same checks; copies), after
 * which every call of it, in both engines, uses them. Without it ft_eval and
 * ft_jit refuse the program, naming the missing constants. */
FT_API int ft_jaxpr_num_sub_consts(const ft_jaxpr *j);
/* Number of constants of sub-jaxpr k (-1 when k is out of range). */
FT_API int ft_jaxpr_sub_num_consts(const ft_jaxpr *j, int k);
FT_API ft_status ft_jaxpr_sub_const_aval(const ft_jaxpr *j, int k, int i, ft_aval *out);
FT_API ft_status ft_jaxpr_bind_sub_consts(ft_ctx *ctx, ft_jaxpr *j, int k, int n,
                                          const ft_array *const *values);

/* Evaluates j with the reference interpreter (simple, slow, the oracle for
 * compiled code; every primitive, control flow included).
 *
 * Inputs: when j carries constant values (traced constants), in[] holds
 * only its n inputs; when it does not (a parsed jaxpr with constvars), in[]
 * holds the constvars' values first, then the inputs. Each must match its
 * variable's dtype and shape (FT_ERR_TYPE / FT_ERR_SHAPE naming the input).
 * The inputs are borrowed.
 *
 * out receives n_out (== the number of outputs) new arrays the caller frees
 * with ft_array_free(); on failure none are left and the message names the
 * equation (index and primitive) and the problem. Reductions follow the
 * canonical order of docs/determinism.md, so the results are bit-identical
 * to the JIT's. */
FT_API ft_status ft_eval(ft_ctx *ctx, const ft_jaxpr *j, int n_in, const ft_array *const *in,
                         int n_out, ft_array **out);

/* ================================================================= tracing */
/* Tracing turns a C function into a jaxpr (docs/tracing.md). ft_trace calls
 * your function with symbolic values (ft_val *); each op below appends one
 * equation (after the primitive's shape rule) and returns a new value.
 *
 *  - Values know their trace, so ops take no tracer argument; only ops with
 *    no array operand (constants, iota, control flow) take the ft_tracer *.
 *  - Values live until ft_trace returns; never free them.
 *  - Errors are sticky: the first misuse (shape mismatch, wrong dtype, bad
 *    axis, NULL operand) is recorded with the primitive, the shapes and the
 *    dtypes; from then on every op returns NULL (int-returning ops -1) and
 *    ft_trace returns NULL with that message on the context. So you may chain
 *    calls freely and check once.
 *  - Primitive ops (ft_add, ft_dot_general, ...) have lax semantics: equal
 *    dtypes; elementwise ops broadcast rank-0 operands and size-1 axes of
 *    equal-rank operands, nothing more. A weakly typed literal operand
 *    (ft_weak_f/ft_weak_i, like a Python scalar) takes the other operand's
 *    dtype. The ft_np_* ops and the conveniences (ft_matmul, ft_sum, ...)
 *    have jax.numpy semantics: dtype promotion and rank broadcasting,
 *    emitted as the primitives jax.numpy emits.
 *  - Axes: primitive ops take non-negative axes, as the printed params show;
 *    the conveniences accept negative axes (counted from the end).
 *  - Tracing the same function twice gives the same jaxpr (same text, same
 *    hash). Sub-traces (branches, loop bodies) may use values of the
 *    enclosing function directly: they are captured as extra operands. */
typedef struct ft_tracer ft_tracer;
typedef struct ft_val ft_val;

/* Capacity of the out array given to a traced function. */
#define FT_TRACE_MAX_OUT 256

/* A function to trace: reads in[0..n_in) (n_in as given to ft_trace or the
 * control-flow op), writes its results to out[0..max_out) and returns their
 * number, or a negative number to abort the trace. */
typedef int (*ft_trace_fn)(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user);

/* Traces fn on n_in inputs of the given avals. Returns a verified jaxpr
 * (free with ft_jaxpr_free) whose constvars hold the arrays made by
 * ft_constant (their data in the jaxpr), or NULL with the first error on ctx. */
FT_API ft_jaxpr *ft_trace(ft_ctx *ctx, ft_trace_fn fn, void *user, int n_in, const ft_aval *in_avals);

/* ---- values */
/* The aval of v (a zeroed aval for NULL). */
FT_API ft_aval ft_val_aval(const ft_val *v);
FT_API ft_dtype ft_val_dtype(const ft_val *v);
FT_API int ft_val_rank(const ft_val *v);
/* Size of axis (negative counts from the end); -1 when out of range. */
FT_API int64_t ft_val_dim(const ft_val *v, int axis);
FT_API ft_tracer *ft_val_tracer(const ft_val *v);
/* Whether the trace has failed (then ft_trace will return NULL). */
FT_API bool ft_tracer_failed(const ft_tracer *t);
/* Fails the trace with a message of yours (first error wins). */
FT_API void ft_tracer_fail(ft_tracer *t, const char *msg);

/* ---- constants */
/* Scalar literals, printed inline (`2.0:f32[]`). */
FT_API ft_val *ft_const_f32(ft_tracer *t, float v);
FT_API ft_val *ft_const_f64(ft_tracer *t, double v);
FT_API ft_val *ft_const_i32(ft_tracer *t, int32_t v);
FT_API ft_val *ft_const_i64(ft_tracer *t, int64_t v);
FT_API ft_val *ft_const_u32(ft_tracer *t, uint32_t v);
FT_API ft_val *ft_const_bool(ft_tracer *t, bool v);
/* A scalar literal of any dtype (v converted as a C cast would). */
FT_API ft_val *ft_scalar(ft_tracer *t, ft_dtype dt, double v);
/* Weakly typed scalars, like Python's 2.0 and 2: they take the dtype of the
 * array they meet (weak float: float32 alone; weak int: int32 alone). */
FT_API ft_val *ft_weak_f(ft_tracer *t, double v);
FT_API ft_val *ft_weak_i(ft_tracer *t, int64_t v);
/* An array constant: data (C order, ft_dtype_size(dt) bytes per element) is
 * copied. Rank 0 gives a literal; otherwise a constvar of the jaxpr. */
FT_API ft_val *ft_constant(ft_tracer *t, ft_dtype dt, int rank, const int64_t *dims, const void *data);
/* An array filled with value: broadcast_in_dim of a literal (lax.full). */
FT_API ft_val *ft_full(ft_tracer *t, ft_dtype dt, int rank, const int64_t *dims, double value);

/* ---- elementwise unary primitives */
FT_API ft_val *ft_neg(ft_val *x);
FT_API ft_val *ft_sign(ft_val *x);
FT_API ft_val *ft_floor(ft_val *x);
FT_API ft_val *ft_ceil(ft_val *x);
/* rounding_method: 0 away from zero, 1 to nearest even (JAX's RoundingMethod). */
FT_API ft_val *ft_round(ft_val *x, int rounding_method);
FT_API ft_val *ft_is_finite(ft_val *x);
FT_API ft_val *ft_exp(ft_val *x);
FT_API ft_val *ft_exp2(ft_val *x);
FT_API ft_val *ft_log(ft_val *x);
FT_API ft_val *ft_log1p(ft_val *x);
FT_API ft_val *ft_expm1(ft_val *x);
FT_API ft_val *ft_tanh(ft_val *x);
FT_API ft_val *ft_logistic(ft_val *x);
FT_API ft_val *ft_sin(ft_val *x);
FT_API ft_val *ft_cos(ft_val *x);
FT_API ft_val *ft_tan(ft_val *x);
FT_API ft_val *ft_asin(ft_val *x);
FT_API ft_val *ft_acos(ft_val *x);
FT_API ft_val *ft_atan(ft_val *x);
FT_API ft_val *ft_sinh(ft_val *x);
FT_API ft_val *ft_cosh(ft_val *x);
FT_API ft_val *ft_asinh(ft_val *x);
FT_API ft_val *ft_acosh(ft_val *x);
FT_API ft_val *ft_atanh(ft_val *x);
FT_API ft_val *ft_sqrt(ft_val *x);
FT_API ft_val *ft_rsqrt(ft_val *x);
FT_API ft_val *ft_cbrt(ft_val *x);
FT_API ft_val *ft_square(ft_val *x);
FT_API ft_val *ft_abs(ft_val *x);
FT_API ft_val *ft_erf(ft_val *x);
FT_API ft_val *ft_erfc(ft_val *x);
FT_API ft_val *ft_erf_inv(ft_val *x);
FT_API ft_val *ft_lgamma(ft_val *x);
FT_API ft_val *ft_digamma(ft_val *x);
FT_API ft_val *ft_integer_pow(ft_val *x, int y);
FT_API ft_val *ft_not(ft_val *x);
FT_API ft_val *ft_copy(ft_val *x);
FT_API ft_val *ft_copy_p(ft_val *x);
FT_API ft_val *ft_stop_gradient(ft_val *x);
FT_API ft_val *ft_reduce_precision(ft_val *x, int exponent_bits, int mantissa_bits);
/* Complex parts, elementwise: ft_real/ft_imag take complex64/complex128 to
 * float32/float64; ft_conj takes float32/float64 or complex to the complex
 * type (conj[input_dtype=...], a float's imaginary part is +0); ft_complex
 * takes two operands of one type, float32 or float64, to re + i im. Linear,
 * so jvp, grad and vmap go through them (JAX's complex-gradient convention:
 * docs/autodiff.md). */
FT_API ft_val *ft_real(ft_val *x);
FT_API ft_val *ft_imag(ft_val *x);
FT_API ft_val *ft_conj(ft_val *x);
FT_API ft_val *ft_complex(ft_val *re, ft_val *im);

/* ---- elementwise binary primitives and comparisons */
FT_API ft_val *ft_add(ft_val *a, ft_val *b);
FT_API ft_val *ft_add_any(ft_val *a, ft_val *b);
FT_API ft_val *ft_sub(ft_val *a, ft_val *b);
FT_API ft_val *ft_mul(ft_val *a, ft_val *b);
FT_API ft_val *ft_div(ft_val *a, ft_val *b);
FT_API ft_val *ft_rem(ft_val *a, ft_val *b);
FT_API ft_val *ft_pow(ft_val *a, ft_val *b);
FT_API ft_val *ft_max(ft_val *a, ft_val *b);
FT_API ft_val *ft_min(ft_val *a, ft_val *b);
FT_API ft_val *ft_atan2(ft_val *a, ft_val *b);
/* polygamma(m, x): m a non-negative integer value (else NaN); zeta(x, q):
 * the Hurwitz zeta function, sum over k >= 0 of (q + k)^-x. */
FT_API ft_val *ft_polygamma(ft_val *m, ft_val *x);
FT_API ft_val *ft_zeta(ft_val *x, ft_val *q);
FT_API ft_val *ft_nextafter(ft_val *a, ft_val *b);
FT_API ft_val *ft_and(ft_val *a, ft_val *b);
FT_API ft_val *ft_or(ft_val *a, ft_val *b);
FT_API ft_val *ft_xor(ft_val *a, ft_val *b);
FT_API ft_val *ft_shift_left(ft_val *a, ft_val *b);
FT_API ft_val *ft_shift_right_logical(ft_val *a, ft_val *b);
FT_API ft_val *ft_shift_right_arithmetic(ft_val *a, ft_val *b);
FT_API ft_val *ft_eq(ft_val *a, ft_val *b);
FT_API ft_val *ft_ne(ft_val *a, ft_val *b);
FT_API ft_val *ft_lt(ft_val *a, ft_val *b);
FT_API ft_val *ft_le(ft_val *a, ft_val *b);
FT_API ft_val *ft_gt(ft_val *a, ft_val *b);
FT_API ft_val *ft_ge(ft_val *a, ft_val *b);
/* select_n(which, cases): cases[which] elementwise; which is bool (2 cases)
 * or int32, a scalar or of the cases' shape. */
FT_API ft_val *ft_select_n(ft_val *which, int n_cases, ft_val *const *cases);
FT_API ft_val *ft_clamp(ft_val *lo, ft_val *x, ft_val *hi);

/* ---- conversions */
/* convert_element_type[new_dtype weak_type=False] (on a literal: folded). */
FT_API ft_val *ft_convert(ft_val *x, ft_dtype dt);
FT_API ft_val *ft_bitcast_convert(ft_val *x, ft_dtype dt);

/* ---- layout */
/* Output of rank `rank` and the given shape; bdims[i] is the output axis of
 * operand axis i (strictly increasing; NULL for a rank-0 operand). */
FT_API ft_val *ft_broadcast_in_dim(ft_val *x, int rank, const int64_t *shape, const int *bdims);
FT_API ft_val *ft_reshape(ft_val *x, int rank, const int64_t *new_sizes);
/* permutation: n == rank(x) entries. */
FT_API ft_val *ft_transpose(ft_val *x, int n, const int *permutation);
FT_API ft_val *ft_squeeze(ft_val *x, int n, const int *dims);
FT_API ft_val *ft_expand_dims(ft_val *x, int n, const int *dims);
FT_API ft_val *ft_rev(ft_val *x, int n, const int *dims);
/* start, limit and strides: n == rank(x) entries each; strides may be NULL
 * (all 1). */
FT_API ft_val *ft_slice(ft_val *x, int n, const int64_t *start, const int64_t *limit,
                        const int64_t *strides);
/* start_indices: rank(x) integer scalars; sizes: rank(x) entries. */
FT_API ft_val *ft_dynamic_slice(ft_val *x, ft_val *const *start_indices, const int64_t *sizes);
FT_API ft_val *ft_dynamic_update_slice(ft_val *x, ft_val *update, ft_val *const *start_indices);
FT_API ft_val *ft_concatenate(int n, ft_val *const *xs, int dimension);
/* config: 3 entries (lo, hi, interior) per axis of x; pad_value a scalar of x's dtype. */
FT_API ft_val *ft_pad(ft_val *x, ft_val *pad_value, const int64_t *config);
/* Splits x along axis into n pieces of the given sizes; returns n or -1. */
FT_API int ft_split(ft_val *x, int axis, int n, const int64_t *sizes, ft_val **out);

/* ---- reductions (axes non-negative, distinct) */
FT_API ft_val *ft_reduce_sum(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_reduce_max(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_reduce_min(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_reduce_prod(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_reduce_and(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_reduce_or(ft_val *x, int naxes, const int *axes);
FT_API ft_val *ft_argmax(ft_val *x, int axis, ft_dtype index_dtype);
FT_API ft_val *ft_argmin(ft_val *x, int axis, ft_dtype index_dtype);
FT_API ft_val *ft_cumsum(ft_val *x, int axis, bool reverse);
FT_API ft_val *ft_cumprod(ft_val *x, int axis, bool reverse);
FT_API ft_val *ft_cummax(ft_val *x, int axis, bool reverse);
FT_API ft_val *ft_cummin(ft_val *x, int axis, bool reverse);
FT_API ft_val *ft_cumlogsumexp(ft_val *x, int axis, bool reverse);

/* ---- dot_general */
typedef struct ft_dot_dims {
  int n_contract;
  int lhs_contract[FT_MAX_RANK], rhs_contract[FT_MAX_RANK];
  int n_batch;
  int lhs_batch[FT_MAX_RANK], rhs_batch[FT_MAX_RANK];
} ft_dot_dims;
/* No preferred element type (the operand type decides). */
#define FT_DTYPE_NONE ((ft_dtype)FT_NUM_DTYPES)
FT_API ft_val *ft_dot_general(ft_val *a, ft_val *b, const ft_dot_dims *dims, ft_dtype preferred);

/* ---- other primitives */
FT_API ft_val *ft_iota(ft_tracer *t, ft_dtype dt, int rank, const int64_t *shape, int dimension);

/* ---- jax.random (docs/random.md): keys are values of dtype key<fry> (an
 * input of that aval, or ft_random_key); each sampler emits what jax.random
 * emits, so it draws JAX's bits for the same key (floats through erf_inv
 * and log: within the bounds docs/random.md states). */
/* jax.random.key(seed): seed of any integer dtype and shape. */
FT_API ft_val *ft_random_key(ft_val *seed);
/* random_wrap[impl=fry] (u32[...,2] -> key<fry>[...], jax.random.wrap_key_data)
 * and random_unwrap (jax.random.key_data). */
FT_API ft_val *ft_random_wrap(ft_val *data);
FT_API ft_val *ft_random_unwrap(ft_val *key);
/* jax.random.split(key, shape): keys of shape key.shape + shape. */
FT_API ft_val *ft_random_split(ft_val *key, int rank, const int64_t *shape);
/* jax.random.fold_in(key, data): data of an integer dtype (as uint32). */
FT_API ft_val *ft_random_fold_in(ft_val *key, ft_val *data);
/* jax.random.bits(key, shape, uint<bit_width>): bit_width 8, 16, 32, 64. */
FT_API ft_val *ft_random_bits(ft_val *key, int bit_width, int rank, const int64_t *shape);
/* jax.random.uniform(key, shape, dt, minval, maxval): dt f32 or f64. */
FT_API ft_val *ft_random_uniform(ft_val *key, ft_dtype dt, int rank, const int64_t *shape,
                                 double minval, double maxval);
/* jax.random.normal(key, shape, dt). */
FT_API ft_val *ft_random_normal(ft_val *key, ft_dtype dt, int rank, const int64_t *shape);
/* jax.random.bernoulli(key, p, shape): bool. */
FT_API ft_val *ft_random_bernoulli(ft_val *key, double p, int rank, const int64_t *shape);
/* jax.random.categorical(key, logits, axis): i32 indices, logits' shape
 * without axis. */
FT_API ft_val *ft_random_categorical(ft_val *key, ft_val *logits, int axis);
/* jax.random.permutation(key, n): a permutation of 0..n-1 (i32). */
FT_API ft_val *ft_random_permutation(ft_val *key, int64_t n);
/* Dropout (Flax's): zero each element of x with probability rate, scale
 * the others by 1 / (1 - rate); rate in [0, 1). */
FT_API ft_val *ft_dropout(ft_val *key, ft_val *x, double rate);
/* Sorts x along dimension (lax.sort of one operand). */
FT_API ft_val *ft_sort(ft_val *x, int dimension, bool is_stable);
/* Sorts n operands of one shape by the first num_keys (lexicographically);
 * returns n or -1. */
FT_API int ft_sort_multi(int n, ft_val *const *xs, int dimension, bool is_stable, int num_keys,
                         ft_val **out);
/* The k largest along the last axis of x (values, int32 indices); returns 2 or -1. */
FT_API int ft_top_k(ft_val *x, int k, ft_val **values, ft_val **indices);

/* ---- jnp.linalg: spectral and orthogonal decompositions
 * (docs/linalg-spectral.md). Matrices are the last two axes of a (f32 or
 * f64; leading axes are a batch). Each returns its number of results, or
 * -1 with the error on the trace. Results are written only where the
 * pointer is not NULL. */
/* jnp.linalg.eigh(a, UPLO='L' if lower else 'U', symmetrize_input):
 * eigenvalues w [..., n] ascending and eigenvectors v [..., n, n] (column
 * j for w[j]), with the signs LAPACK's syevd gives, as JAX on CPU. */
FT_API int ft_eigh(ft_val *a, bool lower, bool symmetrize_input, ft_val **w, ft_val **v);
/* jnp.linalg.svd(a, full_matrices, compute_uv): u, s (descending), vh;
 * with compute_uv false only s (returns 1). */
FT_API int ft_svd(ft_val *a, bool full_matrices, bool compute_uv, ft_val **u, ft_val **s,
                  ft_val **vh);
/* jnp.linalg.qr(a, mode): 'reduced' (q [..., m, k], r [..., k, n]),
 * 'complete' (q [..., m, m], r [..., m, n]) or 'r' (r only; returns 1). */
typedef enum ft_qr_mode { FT_QR_REDUCED, FT_QR_COMPLETE, FT_QR_R } ft_qr_mode;
FT_API int ft_qr(ft_val *a, ft_qr_mode mode, ft_val **q, ft_val **r);
/* jnp.linalg.eig(a) (compute_vectors) or eigvals(a): w [..., n] and right
 * eigenvectors v [..., n, n], complex (c64 for f32 a), unsorted, as LAPACK's
 * geev gives them. */
FT_API int ft_eig(ft_val *a, bool compute_vectors, ft_val **w, ft_val **v);
typedef enum ft_fft_type { FT_FFT = 0, FT_IFFT = 1, FT_RFFT = 2, FT_IRFFT = 3 } ft_fft_type;
/* n (1..3) fft_lengths over the trailing axes. */
FT_API ft_val *ft_fft(ft_val *x, ft_fft_type type, int n, const int64_t *fft_lengths);

/* ---- control flow: each traces C callbacks into sub-jaxprs. They return
 * the number of outputs written to out, or -1 on error. */
/* lax.switch: runs branches[index] on ops (index int, clamped to range; or
 * bool for two branches, false -> branches[0], as lax.cond). Every branch
 * must return the same avals. */
FT_API int ft_cond(ft_tracer *t, ft_val *index, int n_branches, const ft_trace_fn *branches,
                   void *user, int n_ops, ft_val *const *ops, ft_val **out, int max_out);
/* lax.while_loop: cond_fn(carry) returns one bool[]; body_fn(carry) returns
 * the next carry (same avals). out receives n_carry values. */
FT_API int ft_while_loop(ft_tracer *t, ft_trace_fn cond_fn, ft_trace_fn body_fn, void *user,
                         int n_carry, ft_val *const *init, ft_val **out);
/* lax.scan: body(carry..., x slices...) returns (carry..., y...). length < 0
 * takes it from xs; out receives the final carry, then each y stacked. */
FT_API int ft_scan(ft_tracer *t, ft_trace_fn body, void *user, int64_t length, bool reverse,
                   int n_carry, ft_val *const *init, int n_xs, ft_val *const *xs, ft_val **out,
                   int max_out);
/* jax.jit inside a trace: fn traced into jit[name=... jaxpr=...]. */
FT_API int ft_jit_call(ft_tracer *t, const char *name, ft_trace_fn fn, void *user, int n_args,
                       ft_val *const *args, ft_val **out, int max_out);
/* A jaxpr the caller already holds (e.g. ft_value_and_grad's result),
 * called inside a trace as jax.jit(f)(*args) is: one jit[name=... jaxpr=...]
 * equation whose jaxpr is a copy of j (j stays the caller's). j must have no
 * constvars; args must match its input avals. Returns the number of outputs
 * written (at most max_out) or -1 (the trace fails with the reason). Use
 * ft_inline to flatten the call. */
FT_API int ft_call_jaxpr(ft_tracer *t, const char *name, const ft_jaxpr *j, int n_args,
                         ft_val *const *args, ft_val **out, int max_out);

/* ---- jax.numpy-style ops (promotion and broadcasting as jnp does) */
FT_API ft_val *ft_np_add(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_sub(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_mul(ft_val *a, ft_val *b);
/* true division: integer operands give float32, as jnp.true_divide */
FT_API ft_val *ft_np_div(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_pow(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_maximum(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_minimum(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_eq(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_ne(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_lt(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_le(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_gt(ft_val *a, ft_val *b);
FT_API ft_val *ft_np_ge(ft_val *a, ft_val *b);
/* jnp.where(cond, x, y): cond bool; all three broadcast together. */
FT_API ft_val *ft_np_where(ft_val *cond, ft_val *x, ft_val *y);
/* jnp.astype (no equation when the dtype already matches). */
FT_API ft_val *ft_astype(ft_val *x, ft_dtype dt);
FT_API ft_val *ft_broadcast_to(ft_val *x, int rank, const int64_t *shape);
/* jnp.matmul for ranks 1 and 2, equal-rank batches (>= 3) and rank >= 3 @ 2. */
FT_API ft_val *ft_matmul(ft_val *a, ft_val *b);
/* Reductions over naxes axes (naxes < 0: all axes; negative axes allowed). */
FT_API ft_val *ft_sum(ft_val *x, int naxes, const int *axes, bool keepdims);
FT_API ft_val *ft_mean(ft_val *x, int naxes, const int *axes, bool keepdims);
FT_API ft_val *ft_amax(ft_val *x, int naxes, const int *axes, bool keepdims);
FT_API ft_val *ft_amin(ft_val *x, int naxes, const int *axes, bool keepdims);
/* jax.nn: softmax and log_softmax along one axis; logsumexp over axes. */
FT_API ft_val *ft_softmax(ft_val *x, int axis);
FT_API ft_val *ft_log_softmax(ft_val *x, int axis);
FT_API ft_val *ft_logsumexp(ft_val *x, int naxes, const int *axes, bool keepdims);
/* max(x, 0) */
FT_API ft_val *ft_relu(ft_val *x);
/* jax.nn.one_hot of integer labels: labels.shape + (n,), in dtype dt. */
FT_API ft_val *ft_one_hot(ft_val *labels, int n, ft_dtype dt);

/* ---- indexing: gather, scatter, windows, convolution.
 * lax semantics: the last axis of `indices` holds the start-index vectors;
 * axis numbers are non-negative. Conveniences (ft_take, ft_index_update_*)
 * follow jax.numpy. top_k is ft_top_k above. */
/* JAX's GatherScatterMode (numbered as JAX numbers it). */
typedef enum ft_gather_mode {
  FT_GATHER_CLIP = 0,              /* start indices are clamped into range */
  FT_GATHER_FILL_OR_DROP = 1,      /* out-of-range gather slices read the fill value;
                                      out-of-range scatter windows are dropped */
  FT_GATHER_PROMISE_IN_BOUNDS = 2  /* the caller promises in-range indices (gather
                                      clamps, scatter drops, as XLA does) */
} ft_gather_mode;
/* lax.GatherDimensionNumbers, and the two hint params JAX prints. */
typedef struct ft_gather_dims {
  int n_offset;
  int offset_dims[FT_MAX_RANK];            /* result axes of the slice (sorted) */
  int n_collapsed;
  int collapsed_slice_dims[FT_MAX_RANK];   /* operand axes of slice size 1 dropped */
  int n_start;
  int start_index_map[FT_MAX_RANK];        /* operand axis of each index component */
  int n_batching;
  int operand_batching_dims[FT_MAX_RANK];
  int start_indices_batching_dims[FT_MAX_RANK];
  bool indices_are_sorted, unique_indices;
} ft_gather_dims;
/* lax.gather. slice_sizes: one per operand axis. fill_value (FILL_OR_DROP
 * only, else ignored): NULL means lax's default, NaN for inexact dtypes, the
 * minimum of signed and the maximum of unsigned integers, True for bool. */
FT_API ft_val *ft_gather(ft_val *operand, ft_val *indices, const ft_gather_dims *dims,
                         const int64_t *slice_sizes, ft_gather_mode mode, const double *fill_value);
/* lax.ScatterDimensionNumbers, and the two hint params JAX prints. */
typedef struct ft_scatter_dims {
  int n_update_window;
  int update_window_dims[FT_MAX_RANK];     /* axes of updates that are window axes */
  int n_inserted;
  int inserted_window_dims[FT_MAX_RANK];   /* operand axes with window size 1, absent in updates */
  int n_scatter;
  int scatter_dims_to_operand_dims[FT_MAX_RANK];
  int n_batching;
  int operand_batching_dims[FT_MAX_RANK];
  int scatter_indices_batching_dims[FT_MAX_RANK];
  bool indices_are_sorted, unique_indices;
} ft_scatter_dims;
/* lax.scatter (last write wins), scatter_add, scatter_mul, scatter_min,
 * scatter_max: updates combine in row-major order of updates. */
FT_API ft_val *ft_scatter(ft_val *operand, ft_val *indices, ft_val *updates,
                          const ft_scatter_dims *dims, ft_gather_mode mode);
FT_API ft_val *ft_scatter_add(ft_val *operand, ft_val *indices, ft_val *updates,
                              const ft_scatter_dims *dims, ft_gather_mode mode);
FT_API ft_val *ft_scatter_mul(ft_val *operand, ft_val *indices, ft_val *updates,
                              const ft_scatter_dims *dims, ft_gather_mode mode);
FT_API ft_val *ft_scatter_min(ft_val *operand, ft_val *indices, ft_val *updates,
                              const ft_scatter_dims *dims, ft_gather_mode mode);
FT_API ft_val *ft_scatter_max(ft_val *operand, ft_val *indices, ft_val *updates,
                              const ft_scatter_dims *dims, ft_gather_mode mode);
/* jnp.take(x, idx, axis) (mode "fill": negative indices count from the end,
 * out-of-range ones read NaN / the dtype's fill), and mode "clip". idx: an
 * integer array of any rank; the result has x's axes with `axis` replaced
 * by idx's axes. axis may be negative. */
FT_API ft_val *ft_take(ft_val *x, ft_val *idx, int axis);
FT_API ft_val *ft_take_clip(ft_val *x, ft_val *idx, int axis);
/* x.at[idx].set/add/mul/min/max(updates) for an integer array idx indexing
 * axis 0: negative indices count from the end, out-of-range ones are
 * dropped; updates (converted to x's dtype) broadcast to idx.shape +
 * x.shape[1:]. */
FT_API ft_val *ft_index_update_set(ft_val *x, ft_val *idx, ft_val *updates);
FT_API ft_val *ft_index_update_add(ft_val *x, ft_val *idx, ft_val *updates);
FT_API ft_val *ft_index_update_mul(ft_val *x, ft_val *idx, ft_val *updates);
FT_API ft_val *ft_index_update_min(ft_val *x, ft_val *idx, ft_val *updates);
FT_API ft_val *ft_index_update_max(ft_val *x, ft_val *idx, ft_val *updates);
typedef enum ft_window_op { FT_WINDOW_SUM = 0, FT_WINDOW_MAX = 1, FT_WINDOW_MIN = 2 } ft_window_op;
/* lax.reduce_window with add/max/min and its identity (reduce_window_sum,
 * _max, _min). One entry per axis of x: window_dimensions; window_strides,
 * base_dilation, window_dilation (NULL: all 1); padding (2 per axis, lo and
 * hi; NULL: none). */
FT_API ft_val *ft_reduce_window(ft_val *x, ft_window_op op, const int64_t *window_dimensions,
                                const int64_t *window_strides, const int64_t *padding,
                                const int64_t *base_dilation, const int64_t *window_dilation);
/* lax.conv_general_dilated options; a zeroed struct (or NULL) is a stride-1,
 * unpadded, undilated, ungrouped NC.../OI.../NC... convolution. Arrays have
 * one entry per spatial axis (rank - 2); 0 in a stride, dilation or group
 * count means 1. */
typedef struct ft_conv_opts {
  size_t size;                             /* sizeof(ft_conv_opts): set by FT_CONV_OPTS_INIT */
  int64_t window_strides[FT_MAX_RANK];
  int64_t padding[FT_MAX_RANK][2];         /* (lo, hi); negative crops */
  int64_t lhs_dilation[FT_MAX_RANK];       /* base (transposed-conv) dilation */
  int64_t rhs_dilation[FT_MAX_RANK];       /* kernel (atrous) dilation */
  bool has_dimension_numbers;              /* false: the default specs */
  int lhs_spec[FT_MAX_RANK];               /* (batch, feature, spatial...) axes of lhs */
  int rhs_spec[FT_MAX_RANK];               /* (out feature, in feature, spatial...) of rhs */
  int out_spec[FT_MAX_RANK];               /* (batch, feature, spatial...) of the result */
  int64_t feature_group_count, batch_group_count;
  bool has_preferred_element_type;
  ft_dtype preferred_element_type;
} ft_conv_opts;
#define FT_CONV_OPTS_INIT FT_SIZED_INIT_(ft_conv_opts)
FT_API ft_val *ft_conv(ft_val *lhs, ft_val *rhs, const ft_conv_opts *opts);

/* ---- linear algebra (docs/linalg.md): jnp.linalg and
 * jax.lax.linalg over leading batch dims (equal in every operand), f32 and
 * f64 (and c64/c128 for cholesky, triangular_solve and lu). Failures are
 * values, as in JAX on CPU: a matrix that is not positive definite gives
 * a NaN Cholesky factor, a singular one infs/NaNs from the solves. Each
 * returns NULL (or -1) with the error on the trace for bad shapes/dtypes. */
/* jnp.linalg.cholesky: the lower factor L of (a + a^H) / 2 (the upper
 * triangle zero). a: [..., n, n]. */
FT_API ft_val *ft_cholesky(ft_val *a);
/* lax.linalg.triangular_solve's options (a zeroed struct or NULL: solve
 * x a = b with a upper triangular, as lax's defaults). */
typedef struct ft_triangular_opts {
  size_t size;         /* sizeof(ft_triangular_opts): set by FT_TRIANGULAR_OPTS_INIT */
  bool left_side;      /* solve op(a) x = b instead of x op(a) = b */
  bool lower;          /* a is lower triangular (only that triangle is read) */
  bool transpose_a;    /* op(a) = a^T (a^H with conjugate_a) */
  bool conjugate_a;
  bool unit_diagonal;  /* a's diagonal is taken as ones */
} ft_triangular_opts;
#define FT_TRIANGULAR_OPTS_INIT FT_SIZED_INIT_(ft_triangular_opts)
/* lax.linalg.triangular_solve: a [..., m, m]; b [..., m, n] (left_side)
 * or [..., n, m]. */
FT_API ft_val *ft_triangular_solve(ft_val *a, ft_val *b, const ft_triangular_opts *opts);
/* lax.linalg.lu: lu [..., m, n] (L below the diagonal, unit diagonal
 * implied; U on and above), pivots i32 [..., min(m, n)] (0-based row
 * swaps), permutation i32 [..., m]. Any of the outputs may be NULL.
 * Returns 3 or -1. */
FT_API int ft_lu(ft_val *a, ft_val **lu, ft_val **pivots, ft_val **permutation);
/* jnp.linalg.solve: x with a x = b; a [n, n] and b [n], or a [..., n, n]
 * and b [..., n, k] (as JAX >= 0.5: a batch of vectors is b[..., None]). Computed as JAX's CPU path does (LU with partial pivoting,
 * then two triangular solves), differentiated through the factorization. */
FT_API ft_val *ft_linalg_solve(ft_val *a, ft_val *b);
/* jnp.linalg.inv: solve(a, I). */
FT_API ft_val *ft_inv(ft_val *a);
/* jnp.linalg.slogdet: sign and log|det| from the LU factors (sign 0 and
 * logabsdet -inf for a singular matrix). Returns 2 or -1. */
FT_API int ft_slogdet(ft_val *a, ft_val **sign, ft_val **logabsdet);
/* jnp.linalg.det: sign * exp(logabsdet). */
FT_API ft_val *ft_det(ft_val *a);

/* ---- custom rules: jax.custom_jvp and jax.custom_vjp.
 * fn is traced into call_jaxpr, which evaluation runs; the rules are traced
 * into jaxprs that the transforms use instead of differentiating fn
 * (docs/autodiff.md, "Custom rules"). fn and the rules are called with the
 * arguments' avals and must return what is said below (checked here).
 *  - Every tangent and cotangent has its primal's aval; for integer and
 *    bool values they are zeros on the way in and ignored on the way out.
 *  - Values of enclosing traces that fn or a rule uses are captured as
 *    leading operands (num_consts) shared by all of them. The rules give no
 *    derivative with respect to them, so differentiating the call with
 *    respect to such a value fails, as in JAX: pass it as an argument.
 *  - name (NULL: "<lambda>") is the call's name param: letters, digits and
 *    '_' '.' '<' '>' only, so that the printout parses back.
 * Both return the number of outputs written to out (fn's outputs), or -1. */
/* jax.custom_jvp. jvp_fn gets the n_args primals, then their n_args
 * tangents, and returns fn's outputs, then their tangents (which must be
 * linear in the input tangents for reverse mode). jvp, linearize, vjp and
 * grad use the rule; higher orders differentiate the rule, as JAX does. */
FT_API int ft_custom_jvp_call(ft_tracer *t, const char *name, ft_trace_fn fn, ft_trace_fn jvp_fn,
                              void *user, int n_args, ft_val *const *args, ft_val **out,
                              int max_out);
/* jax.custom_vjp. fwd_fn gets the n_args arguments and returns fn's
 * outputs, then any number of residuals; bwd_fn gets the residuals, then
 * one cotangent per output, and returns one cotangent per argument. vjp and
 * grad run fwd forward and bwd backward (through custom_lin, JAX's linear
 * primitive that carries bwd); higher orders differentiate fwd and bwd.
 * Forward mode has no rule: ft_jvp and ft_linearize succeed, but evaluating
 * their tangents fails ("custom_lin is only meaningful under
 * transposition"), as in JAX. */
FT_API int ft_custom_vjp_call(ft_tracer *t, const char *name, ft_trace_fn fn, ft_trace_fn fwd_fn,
                              ft_trace_fn bwd_fn, void *user, int n_args, ft_val *const *args,
                              ft_val **out, int max_out);

/* ============================================================== transforms */
/* Automatic differentiation as jaxpr -> jaxpr transforms
 * (docs/autodiff.md). Every result is a new, verified jaxpr the caller frees
 * with ft_jaxpr_free(); the input is not modified and may be freed at once.
 * They compose: ft_grad(ft_grad(f)) is the second derivative, exactly (no
 * finite differences anywhere in the library).
 *
 * Tangents and cotangents exist for inexact (float, complex) values only;
 * integer and boolean values have JAX's float0 tangents, which carry no data
 * and are omitted from the signatures below. Constvars stay constvars. On
 * failure: NULL (or a status), the message on ctx, nothing allocated. */

/* Forward mode: (x_1..x_n, t_i for each inexact x_i) ->
 * (y_1..y_m, dy_k for each inexact y_k). */
FT_API ft_jaxpr *ft_jvp(ft_ctx *ctx, const ft_jaxpr *j);

/* Linearization: *primal: x -> (y..., residuals...), *tangent:
 * (residuals..., t for each inexact x) -> (dy for each inexact y), linear in
 * t. *n_res receives the number of residuals (may be NULL). */
FT_API ft_status ft_linearize(ft_ctx *ctx, const ft_jaxpr *j, ft_jaxpr **primal, ft_jaxpr **tangent,
                              int *n_res);

/* Transposes a jaxpr that is linear in its inputs from n_nonlinear on (the
 * first n_nonlinear are constants, e.g. residuals): the result maps
 * (nonlinear inputs..., cotangent of each output...) -> (cotangent of each
 * linear input...). Fails with FT_ERR_UNSUPPORTED naming the equation when
 * it is not linear or uses a primitive without a transpose rule. */
FT_API ft_jaxpr *ft_linear_transpose(ft_ctx *ctx, const ft_jaxpr *lin, int n_nonlinear);

/* Reverse mode, split: *fwd: x -> (y..., residuals...); *bwd: (residuals...,
 * ct of each inexact y...) -> (ct of each inexact x...). */
FT_API ft_status ft_vjp(ft_ctx *ctx, const ft_jaxpr *j, ft_jaxpr **fwd, ft_jaxpr **bwd, int *n_res);
/* Reverse mode in one jaxpr: (x..., ct of each inexact y...) ->
 * (y..., ct of each inexact x...). */
FT_API ft_jaxpr *ft_vjp_jaxpr(ft_ctx *ctx, const ft_jaxpr *j);

/* jax.grad: j must return one real scalar (then aux outputs when has_aux).
 * argnums (n_argnums entries; NULL/0 means {0}) picks the inputs, which must
 * be floating or complex (a complex input's gradient is JAX's dL/dRe - i
 * dL/dIm, docs/autodiff.md). Result: x -> (d out0/d x_argnums[0], ..., aux...).
 * Errors: a non-scalar or non-float output, more than one output without
 * has_aux, an argnum out of range, an integer input (FT_ERR_TYPE). */
FT_API ft_jaxpr *ft_grad(ft_ctx *ctx, const ft_jaxpr *j, int n_argnums, const int *argnums, bool has_aux);
/* jax.value_and_grad: x -> (value, aux..., grads...). */
FT_API ft_jaxpr *ft_value_and_grad(ft_ctx *ctx, const ft_jaxpr *j, int n_argnums, const int *argnums,
                                   bool has_aux);

/* Dead-code elimination (recursive through jit, cond and scan). */
FT_API ft_jaxpr *ft_dce(ft_ctx *ctx, const ft_jaxpr *j);
/* The same program with every jit call replaced by its body and every other
 * sub-jaxpr (cond branches, loop bodies, custom rules, scatter's
 * update_jaxpr) an unshared copy, inlined in turn: nothing in the result is
 * shared or named. A jit whose jaxpr has constvars stays a call. The caller
 * frees the result with ft_jaxpr_free. */
FT_API ft_jaxpr *ft_inline(ft_ctx *ctx, const ft_jaxpr *j);

/* ================================================================== ledger */
/* A ledger is a directory that records, hash-chained and repairable, every
 * trace, parse, transform, optimization, compilation and (opt-in) call made
 * through a context it is attached to (docs/ledger.md). The
 * hashes (XXH3-128) protect against accidents, not against an adversary. */
typedef struct ft_ledger ft_ledger;

/* What a record is about. The names ("trace", "parse", ...) appear in records. */
typedef enum ft_ledger_kind {
  FT_LEDGER_TRACE = 0, FT_LEDGER_PARSE, FT_LEDGER_TRANSFORM, FT_LEDGER_OPTIMIZE,
  FT_LEDGER_COMPILE, FT_LEDGER_CALL, FT_LEDGER_GUARD, FT_LEDGER_NUM_KINDS
} ft_ledger_kind;

typedef enum ft_ledger_fsync {
  FT_LEDGER_FSYNC_EVERY = 0, /* fsync data, parity and directories after each record */
  FT_LEDGER_FSYNC_CLOSE,     /* once, at ft_ledger_sync() and ft_ledger_close() */
  FT_LEDGER_FSYNC_NEVER      /* leave it to the OS (tests, throwaway ledgers) */
} ft_ledger_fsync;

/* How much of each call (running a program) is logged. */
typedef enum ft_ledger_calls {
  FT_LEDGER_CALLS_NONE = 0,  /* calls are not recorded */
  FT_LEDGER_CALLS_HASHES,    /* a record with the hash and size of each input and output */
  FT_LEDGER_CALLS_BYTES      /* also the bytes of each array up to call_byte_cap */
} ft_ledger_calls;

/* FT_LEDGER_OPTIONS_INIT gives the defaults. k, m and block_size apply when
 * a ledger is created; an existing ledger keeps its own. */
typedef struct ft_ledger_options {
  size_t size;               /* sizeof(ft_ledger_options): set by FT_LEDGER_OPTIONS_INIT */
  ft_ledger_fsync fsync;
  ft_ledger_calls calls;
  size_t call_byte_cap;      /* 0: 1 MiB per array */
  int parity_k;              /* data blocks per stripe; 0: 8 (1..64) */
  int parity_m;              /* parity blocks per stripe; 0: 2 (1..16) */
  int block_size;            /* bytes per block; 0: 4096 (16..1 MiB, a multiple of 16) */
  bool auto_recover;         /* open a torn ledger by running ft_ledger_recover first */
} ft_ledger_options;
#define FT_LEDGER_OPTIONS_INIT FT_SIZED_INIT_(ft_ledger_options)

/* Opens the ledger in dir, creating dir and the ledger when absent. Only one
 * writer may have a ledger open (an advisory lock; FT_ERR_IO otherwise). A
 * ledger with a torn tail is refused unless opts->auto_recover. opts may be
 * NULL. Returns NULL on failure (message on ctx). Close with ft_ledger_close();
 * close it before freeing a context it is attached to. */
FT_API ft_ledger *ft_ledger_open(ft_ctx *ctx, const char *dir, const ft_ledger_options *opts);
/* Syncs per the fsync policy, detaches from its context, frees. NULL is fine.
 * Returns FT_ERR_IO when the final sync failed (the ledger is freed anyway). */
FT_API ft_status ft_ledger_close(ft_ledger *lg);
/* Makes every later call on ctx that changes or runs a program append to lg
 * (lg NULL detaches). Does not transfer ownership. */
FT_API ft_status ft_ctx_attach_ledger(ft_ctx *ctx, ft_ledger *lg);
/* Forces data and parity to stable storage now. */
FT_API ft_status ft_ledger_sync(ft_ledger *lg);
/* Records written so far (the seq of the last one; seqs start at 1). */
FT_API int64_t ft_ledger_num_records(const ft_ledger *lg);

/* ---- checking and maintenance of a ledger directory ---- */

typedef enum ft_ledger_health {
  FT_LEDGER_CLEAN = 0,  /* every check passed */
  FT_LEDGER_TORN,       /* only a crash's traces: a torn last record and/or parity
                           behind the log; ft_ledger_recover fixes it */
  FT_LEDGER_CORRUPT     /* damaged or missing bytes; ft_ledger_repair may fix it */
} ft_ledger_health;

/* The outcome of a check. Every command fills the summary fields it concerns
 * (the others are 0) and json, the full report. Free with ft_ledger_report_free. */
typedef struct ft_ledger_report {
  ft_ledger_health health;
  int64_t records;          /* valid complete records */
  int64_t first_bad_seq;    /* verify: first bad record; replay/reexec: first
                               divergence; diff: first divergent seq; 0: none */
  int64_t checked;          /* replay/reexec: records recomputed */
  int64_t diverged;         /* replay/reexec: records whose check failed */
  int64_t not_replayable;   /* replay/reexec: records with no registered replayer
                               or without stored inputs */
  int64_t repaired_blocks;  /* repair: blocks rebuilt; recover: bytes truncated */
  int64_t unrecoverable;    /* repair: stripes or objects parity could not rebuild;
                               when the damage left is of another kind, the damaged
                               places verify reports (the error message's number) */
  char *json;               /* canonical JSON of the whole report (malloc'd) */
} ft_ledger_report;
FT_API void ft_ledger_report_free(ft_ledger_report *r);

/* Checks record checksums, the hash chain, block hashes against parity, every
 * object's hash and every parity entry. Returns FT_OK when the check ran (the
 * verdict is in out->health); FT_ERR_IO when dir is not a ledger. */
FT_API ft_status ft_ledger_verify(ft_ctx *ctx, const char *dir, ft_ledger_report *out);
/* Truncates a torn last record, brings parity up to date and removes crash
 * leftovers; never changes a complete record. FT_OK when the ledger is then
 * clean; FT_ERR_IO (nothing changed) when it is corrupt rather than torn. */
FT_API ft_status ft_ledger_recover(ft_ctx *ctx, const char *dir, ft_ledger_report *out);
/* Rebuilds damaged blocks of the log and objects from Reed-Solomon parity
 * (up to m per stripe), and parity from verified data. FT_OK when the ledger
 * is then clean (or torn only); FT_ERR_IO when damage remains: those stripes
 * are left untouched, never guessed. */
FT_API ft_status ft_ledger_repair(ft_ctx *ctx, const char *dir, ft_ledger_report *out);

/* ---- replay and re-execution ---- */

typedef struct ft_ledger_blob {
  const void *data;
  size_t len;
} ft_ledger_blob;

typedef struct ft_ledger_buf {
  void *data;   /* malloc'd by the replayer; the ledger frees it with free() */
  size_t len;
} ft_ledger_buf;

/* Recomputes one record: given its op, params (canonical JSON text) and input
 * objects, fills out[0..n_out) with the outputs (n_out is the number the
 * record holds). A failure is reported as a divergence with ctx's message. */
typedef ft_status (*ft_ledger_replayer)(ft_ctx *ctx, void *user, const char *op,
                                        const char *params_json, const ft_ledger_blob *in,
                                        int n_in, ft_ledger_buf *out, int n_out);

/* Registers (process-wide, thread-safe) the replayer of records of kind with
 * operation op (NULL: any op of that kind; an exact op wins). fn NULL removes
 * it. FT_LEDGER_CALL replayers are the executors used by ft_ledger_reexec. */
FT_API ft_status ft_ledger_register_replayer(ft_ledger_kind kind, const char *op,
                                             ft_ledger_replayer fn, void *user);
/* Recomputes every non-call record that has a replayer and checks each output
 * hash; records without one are counted as not replayable yet. FT_OK when the
 * replay ran; the verdict is in the report (first divergence by seq). */
FT_API ft_status ft_ledger_replay(ft_ctx *ctx, const char *dir, ft_ledger_report *out);
/* The same for call records, with their stored inputs, bit for bit. */
FT_API ft_status ft_ledger_reexec(ft_ctx *ctx, const char *dir, ft_ledger_report *out);
/* The first record where ledgers a and b differ (kind, op, params, input and
 * output hashes, fired, mode; timings ignored) and what differs. */
FT_API ft_status ft_ledger_diff(ft_ctx *ctx, const char *a, const char *b, ft_ledger_report *out);

/* ---- reading and export ---- */

typedef enum ft_ledger_format {
  FT_LEDGER_JSON = 0,  /* the valid records as a JSON array */
  FT_LEDGER_HTML,      /* a self-contained page: the chain as SVG, IR before/after, rules */
  FT_LEDGER_DOT        /* Graphviz: records and the objects flowing between them */
} ft_ledger_format;
/* The ledger in dir rendered as fmt. malloc'd NUL-terminated string, free
 * with ft_free(); NULL on failure. */
FT_API char *ft_ledger_export(ft_ctx *ctx, const char *dir, ft_ledger_format fmt);
/* Reads the object with the given 32-hex-digit hash, checking its hash.
 * *data is malloc'd (plus a NUL byte), free with ft_free(). */
FT_API ft_status ft_ledger_object_read(ft_ctx *ctx, const char *dir, const char *hash_hex,
                                       void **data, size_t *len);
/* "trace", "parse", ... ; NULL when out of range. Static storage. */
FT_API const char *ft_ledger_kind_name(ft_ledger_kind kind);

/* ==================================================================== vmap */
/* Batching (jax.vmap) as a jaxpr-to-jaxpr transform (docs/vmap.md). */

/* An in_axes / out_axes entry meaning "not mapped" (JAX's None). */
#define FT_VMAP_NONE (-2147483647 - 1)

/* jax.vmap of j, the per-example program: the result takes inputs with a
 * batch axis of size axis_size (>= 0) inserted at in_axes[i] (n_in_axes
 * entries, one per input of j, ft_jaxpr_num_inputs; constvars are never
 * mapped) (FT_VMAP_NONE:
 * input i is not mapped and keeps its aval; a negative axis counts from the
 * end of the batched input, so -1 appends the batch axis) and returns each
 * output with the batch axis at out_axes[k] (FT_VMAP_NONE: output k must
 * not depend on a mapped input; negative: counted from the end of the
 * batched output; n_out_axes entries, one per output). in_axes NULL (with
 * n_in_axes 0 or the input count) maps every input at axis 0; out_axes
 * NULL (with n_out_axes 0 or the output count) puts every batch axis at 0. Outputs that do not depend on a mapped input
 * are broadcast along the batch axis (unless out_axes says none).
 * Constvars (and their values) are kept, unbatched.
 *
 * Evaluated by the interpreter, the result is bit-identical to evaluating j
 * on each slice of the inputs and stacking the results (docs/vmap.md).
 *
 * Errors: FT_ERR_INVALID_ARG for a length that is not the jaxpr's count
 * (naming both), an axis out of range, axis_size < 0, or a mapped output
 * with out_axes none. The result is verified; free it with ft_jaxpr_free(). */
FT_API ft_jaxpr *ft_vmap(ft_ctx *ctx, const ft_jaxpr *j, int n_in_axes, const int *in_axes,
                         int n_out_axes, const int *out_axes, int64_t axis_size);
/* The same, with the batch size taken from the avals of the batched
 * arguments (batched_in, n_batched_in == one per input of j, as in_axes)
 * as jax.vmap(f)(*args) does:
 * each mapped argument must be j's input aval with one axis inserted at its
 * in_axes entry, all of one size (FT_ERR_SHAPE names the first two that
 * disagree); unmapped arguments must equal j's input avals. */
FT_API ft_jaxpr *ft_vmap_avals(ft_ctx *ctx, const ft_jaxpr *j, int n_in_axes, const int *in_axes,
                               int n_out_axes, const int *out_axes, int n_batched_in,
                               const ft_aval *batched_in);

/* Jacobians and Hessians, as JAX builds them (docs/vmap.md). Each takes
 * j's inputs and returns, for each inexact output y_k of j (in order), the
 * derivative d y_k / d x_argnum shaped y_k.shape + x.shape (x = input
 * argnum, which must be floating). jacfwd = vmap of jvp over the standard
 * basis of x; jacrev = vmap of vjp over the basis of each output; hessian =
 * jacfwd(jacrev(j)). Free the result with ft_jaxpr_free(). */
FT_API ft_jaxpr *ft_jacfwd(ft_ctx *ctx, const ft_jaxpr *j, int argnum);
FT_API ft_jaxpr *ft_jacrev(ft_ctx *ctx, const ft_jaxpr *j, int argnum);
FT_API ft_jaxpr *ft_hessian(ft_ctx *ctx, const ft_jaxpr *j, int argnum);

/* ===================================================================== jit */
/* Compilation to native code (docs/jit.md).
 * ft_jit plans a jaxpr into steps — fused loop kernels compiled by LLVM (one
 * module per program, host CPU, no FP contraction, the shared math library
 * inlined), GEMM calls through the project's one GEMM routine, and, for what
 * is not compiled yet, fallback steps that run the interpreter's own rule for
 * that one equation (listed by ftc compile --emit plan). Results are
 * bit-identical to ft_eval. */
typedef struct ft_fn ft_fn;

/* FT_JIT_OPTIONS_INIT gives the defaults. */
typedef struct ft_jit_options {
  size_t size;            /* sizeof(ft_jit_options): set by FT_JIT_OPTIONS_INIT */
  int opt_level;          /* LLVM pipeline default<On>: 0 means 2; 1..3 */
  bool no_cache;          /* bypass both compile caches */
  bool no_disk_cache;     /* in-memory cache only */
  const char *cache_dir;  /* NULL: the default (ft_jit_disk_cache_info below) */
  bool no_fusion;         /* one kernel per equation (debugging) */
  bool interpret_all;     /* every equation a fallback step (debugging) */
  bool no_optimize;       /* skip the exact-tier e-graph rewrite (on by default) */
  bool allow_fallback;    /* accept fallback steps (equations the compiler does not
                             compile, run by the interpreter's rule); without it ft_jit
                             fails closed naming the first (FT_ERR_UNSUPPORTED) */
} ft_jit_options;
#define FT_JIT_OPTIONS_INIT FT_SIZED_INIT_(ft_jit_options)

/* What one ft_jit did (ft_fn_stats). Times in milliseconds. */
typedef struct ft_jit_stats {
  bool mem_hit;           /* the compiled code came from the in-memory cache */
  bool disk_hit;          /* ... from the disk cache (LLVM was not run) */
  bool disk_corrupt;      /* a disk entry failed its check and was rebuilt */
  int n_steps, n_kernels, n_fused_eqns, n_gemm, n_fallback;
  double plan_ms, opt_ms, codegen_ms, load_ms, total_ms;
  size_t arena_bytes;     /* intermediate buffers of one call */
  size_t buffers_bytes;   /* those buffers' sizes added up: what a call would need
                           * without the buffer plan's reuse (docs/executor.md) */
} ft_jit_stats;

/* Compiles j (inputs as ft_eval takes them: the constvars' values first
 * when j carries none). opts may be NULL. The jaxpr is copied: it may be
 * freed at once. Returns NULL with the message on ctx. ctx must outlive the
 * ft_fn (calls report their errors on it). Free with ft_fn_free(). */
FT_API ft_fn *ft_jit(ft_ctx *ctx, const ft_jaxpr *j, const ft_jit_options *opts);
/* Runs fn: in[] like ft_eval's (borrowed, checked against the avals); out
 * receives n_out new arrays the caller frees with ft_array_free(). Results
 * are bit-identical to ft_eval, for any thread count. Several threads may
 * call one fn at once: each call takes its own buffer frame (up to 8; more
 * callers wait), see docs/executor.md. A failure's status is returned and
 * its message left on the context (ft_ctx_error), where a concurrent
 * call's failure may replace it: use ft_call_ex to get this call's own. */
FT_API ft_status ft_call(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                         ft_array **out);
/* The same into caller-provided arrays of the output avals: no allocation
 * unless a fallback step runs. An output array must not also be an input. */
FT_API ft_status ft_call_into(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                              ft_array *const *out);
/* ft_call and ft_call_into with a per-call error: on failure, this call's
 * message is written to err (err_len bytes, always NUL-terminated,
 * truncated to fit), whatever other threads calling fn do; on success err
 * is set to "". err may be NULL (err_len is then ignored). The message is
 * also left on the context as ft_call leaves it. */
FT_API ft_status ft_call_ex(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                            ft_array **out, char *err, size_t err_len);
FT_API ft_status ft_call_into_ex(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                                 ft_array *const *out, char *err, size_t err_len);
FT_API void ft_fn_free(ft_fn *fn);
/* ft_ctx_cancel on the context fn reports to: its running calls stop at
 * their next loop iteration with FT_ERR_CANCELLED. */
FT_API void ft_fn_cancel(ft_fn *fn);
FT_API ft_status ft_fn_stats(const ft_fn *fn, ft_jit_stats *out);
/* The execution plan as text: each step, fused, GEMM or fallback (not
 * compiled, with the reason). malloc'd; free with ft_free(). */
FT_API char *ft_fn_plan(const ft_fn *fn);

typedef enum ft_emit_kind {
  FT_EMIT_PLAN = 0,       /* the plan text of ft_fn_plan */
  FT_EMIT_LLVM,           /* optimized LLVM IR of the kernels */
  FT_EMIT_ASM,            /* host assembly */
  FT_EMIT_OBJ,            /* an ELF object: the kernels and an entry function */
  FT_EMIT_SO,             /* a shared library (needs cc on PATH) with the entry function */
  FT_EMIT_HEADER          /* the C header declaring the entry function */
} ft_emit_kind;
/* Writes j's compiled form to path (ahead of time). The entry function of
 * OBJ/SO is `int <name>(const void *const *in, void *const *out)` (C-order
 * buffers of the input and output avals; returns 0 or a nonzero ft_status,
 * `const char *<name>_error(void)` says why), with `<name>_release`; it runs
 * every step kind through libfrankentrace_rt (no LLVM), which it needs at
 * link time (docs/jit.md, "AOT"). name NULL gives "ft_main". */
FT_API ft_status ft_jit_emit(ft_ctx *ctx, const ft_jaxpr *j, ft_emit_kind kind, const char *name,
                             const char *path, const ft_jit_options *opts);
/* Empties the in-memory compile cache (compiled code still used by an
 * ft_fn lives until that ft_fn is freed). */
FT_API void ft_jit_cache_clear(void);

/* The compile cache on disk. Its directory is, first found:
 * ft_jit_options.cache_dir, $FT_CACHE_DIR, $XDG_CACHE_HOME/frankentrace,
 * $HOME/.cache/frankentrace. FT_CACHE=off (or 0) turns it off. It is capped
 * at $FT_CACHE_MAX bytes (a K, M or G suffix allowed; default 256M): after
 * each new entry the least recently used entries are removed until it fits.
 * An entry is checked before use; a bad one is rebuilt, never trusted. */
typedef struct ft_disk_cache_info {
  bool enabled;           /* false: FT_CACHE=off; the other fields but max_bytes are zero */
  char dir[4096];         /* the directory (it may not exist yet) */
  int64_t entries, bytes; /* compiled objects in it and their total size */
  int64_t max_bytes;      /* the cap */
} ft_disk_cache_info;
/* Describes the disk cache that ft_jit with cache_dir (NULL: the default)
 * would use. FT_ERR_INVALID_ARG when there is no directory to use,
 * FT_ERR_IO when it cannot be read. */
FT_API ft_status ft_jit_disk_cache_info(ft_ctx *ctx, const char *cache_dir, ft_disk_cache_info *out);
/* Removes every compiled object from that cache (*removed: how many; may be
 * NULL). Other files in the directory are left alone. */
FT_API ft_status ft_jit_disk_cache_clear(ft_ctx *ctx, const char *cache_dir, int64_t *removed);

/* ================================================================= compose */
/* A transform stack named in one line, in JAX's Python spelling, e.g.
 * "jit(vmap(grad(f, argnums=0), in_axes=(0, None), axis_size=8))"
 * (docs/transform.md). Grammar:
 *   expr  := NAME | fn '(' expr (',' arg)* [','] ')'
 *   fn    := grad | value_and_grad | jvp | vjp | vmap | jit | jacfwd | jacrev | hessian
 *   arg   := value | KEY '=' value     (positional values in JAX's order, then keywords)
 *   value := INT | None | True | False | '(' [value (',' value)* [',']] ')'
 * Keywords: grad, value_and_grad: argnums, has_aux; vmap: in_axes, out_axes,
 * axis_size; jacfwd, jacrev, hessian: argnums (one input); jvp, vjp, jit:
 * none. NAME is the program j. Steps apply inside out through the public
 * transforms above (each verified and recorded in an attached ledger); jit
 * is the identity on the IR (the program is compiled when it is called). */

/* Applies expr to j. vmap needs axis_size= here (ft_transform_ex infers it
 * from input avals). Errors: FT_ERR_PARSE for a malformed or inconsistent
 * string (the message gives the column, the string and a caret under the
 * offending place, and what was expected); a transform's own error keeps
 * its status and is prefixed with the step ("vmap(...): ..."). Returns a new
 * jaxpr; free it with ft_jaxpr_free(). */
FT_API ft_jaxpr *ft_transform(ft_ctx *ctx, const ft_jaxpr *j, const char *expr);

/* One applied step, as reported to ft_transform_options.on_step. Every
 * pointer is valid during the call only. */
typedef struct ft_transform_step {
  int index;               /* 1, 2, ... in the order applied (innermost first) */
  const char *name;        /* "grad", "vmap", "jit", ... */
  const char *expr;        /* the step's text as written, e.g. "grad(f, argnums=0)" */
  const char *params;      /* the resolved parameters, e.g. "in_axes=(0, None) out_axes=0 axis_size=8" */
  const ft_jaxpr *result;  /* the program after this step (borrowed) */
} ft_transform_step;

/* FT_TRANSFORM_OPTIONS_INIT gives ft_transform's behaviour. */
typedef struct ft_transform_options {
  size_t size;             /* sizeof(ft_transform_options): FT_TRANSFORM_OPTIONS_INIT */
  /* The avals of the arguments the result will be called with, as ft_eval
   * takes them (when j's constvars carry no values, their avals come first
   * and are skipped): a vmap without axis_size= takes its size from them,
   * as jax.vmap(f)(*args) does. NULL: none. */
  const ft_aval *in_avals;
  int n_in_avals;
  /* The program's name in expr; NULL accepts any identifier. */
  const char *name;
  /* Called after each step (may be NULL); the library never prints. */
  void (*on_step)(void *user, const ft_transform_step *step);
  void *user;
} ft_transform_options;
#define FT_TRANSFORM_OPTIONS_INIT FT_SIZED_INIT_(ft_transform_options)

/* ft_transform with options (opts may be NULL). */
FT_API ft_jaxpr *ft_transform_ex(ft_ctx *ctx, const ft_jaxpr *j, const char *expr,
                                 const ft_transform_options *opts);

/* ================================================================ optimize */
/* Equality saturation on jaxprs (docs/egraph.md). Each equation becomes an
 * e-node keyed by primitive and params; rewrite rules grow the e-graph; the
 * cheapest equivalent program under a cost model of FLOPs and bytes moved
 * is extracted (shared subterms computed once: CSE; unused ones dropped:
 * DCE). */
typedef enum ft_opt_tier {
  /* Only rewrites that keep every output bit for every input (NaN payloads
   * aside: docs/determinism.md treats all NaNs as equal): x*1, x/1,
   * x+(-0.0), x-0.0, neg(neg x), select_n(p,x,x), max(x,x), layout algebra,
   * constant folding with the interpreter's kernels, CSE. */
  FT_OPT_EXACT = 0,
  /* Also real-number identities that may change rounding, the sign of zero
   * or NaN/Inf results (reassociation, distribution, x*0, x-x, x+0.0,
   * exp(log x), matrix-chain reordering). Opt-in; recorded in the ledger. */
  FT_OPT_ALGEBRAIC
} ft_opt_tier;

typedef struct ft_opt_rule_count {
  char *name;            /* a rule of docs/egraph.md, or "constant-fold", "cse" */
  int64_t count;         /* applications that changed the e-graph */
} ft_opt_rule_count;

/* What one ft_optimize did. Zero-initialize; set want_proofs before the
 * call to collect explanations. Free the contents with ft_opt_report_free. */
typedef struct ft_opt_report {
  bool want_proofs;                /* in: explain the rewritten outputs */
  int n_rules;
  ft_opt_rule_count *rules;        /* rules that fired, most frequent first */
  double cost_before, cost_after;  /* the cost model: FLOPs + bytes / 4 */
  int eqns_before, eqns_after;     /* equations, sub-jaxprs included */
  int iterations;                  /* saturation iterations (top level) */
  const char *stop_reason;         /* "saturated", "iteration limit", ... (static) */
  size_t egraph_nodes, egraph_classes; /* top-level e-graph when it stopped */
  int n_proofs;
  char **proofs;                   /* per rewritten output: a chain of rewrites */
} ft_opt_report;

/* Optimizes j at the given tier. Returns a new verified jaxpr with the same
 * inputs and outputs (free with ft_jaxpr_free), evaluating to the same bits
 * at FT_OPT_EXACT; NULL with the message on ctx (an unsound rule names
 * itself). report may be NULL. Appends an `optimize` record to an attached
 * ledger with the rules that fired. */
FT_API ft_jaxpr *ft_optimize(ft_ctx *ctx, const ft_jaxpr *j, ft_opt_tier tier,
                             ft_opt_report *report);
FT_API void ft_opt_report_free(ft_opt_report *report);


/* =================================================================== tools */
/* What the command-line tools need beyond the calls above, so every tool is
 * a client of this header alone (docs/architecture.md, "Layers"). */

/* The primitive table (docs/primitives.md): primitives are numbered
 * 0 .. ft_primitive_count() - 1 in table order. ft_primitive_name gives
 * NULL out of range; ft_primitive_lookup gives -1 for an unknown name. */
FT_API int ft_primitive_count(void);
FT_API const char *ft_primitive_name(int prim);
FT_API int ft_primitive_lookup(const char *name);

/* The primitive x pass rule matrix (ftc coverage, docs/primitives.md). Passes
 * are numbered 0 .. ft_coverage_num_passes() - 1: eval, jvp, transpose,
 * batch, egraph, lower. ft_coverage_status gives NULL when the pass has a
 * rule for the primitive, else the reason (static text: "unsupported:
 * ...", "not linear", "n/a: ...", or anything else for a hole); prim or
 * pass out of range gives "n/a: no such primitive or pass". */
FT_API int ft_coverage_num_passes(void);
FT_API const char *ft_coverage_pass_name(int pass);
FT_API const char *ft_coverage_status(int prim, int pass);

/* Plan statistics without code generation (what tools/jit-fallbacks in
 * the source tree prints): plans j
 * as ft_jit plans it (the exact-tier e-graph rewrite first unless
 * opts->no_optimize; opts may be NULL) and lists every fallback step at
 * every depth (control-flow sub-programs included), one line each:
 * "DEPTH KEY\n", where KEY is "prim [in dtypes -> out dtypes] reason".
 * *n_fallback receives the count, *lines (may be NULL) the text (malloc'd,
 * free with ft_free). Error on ctx. */
FT_API ft_status ft_jit_plan_fallbacks(ft_ctx *ctx, const ft_jaxpr *j, int *n_fallback,
                                       char **lines, const ft_jit_options *opts);

/* What ftc run --profile / --stats do: compiles j as ft_jit does (no
 * compile cache) and runs it on the executor: one warm-up call, then runs
 * (>= 1) profiled calls. out receives n_out new arrays (free with
 * ft_array_free). *trace_json (may be NULL) receives the last call's Chrome
 * trace, *stats (may be NULL) the per-step table over the profiled calls;
 * both malloc'd, free with ft_free. */
FT_API ft_status ft_profile_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_in,
                                  const ft_array *const *in, int n_out, ft_array **out,
                                  char **trace_json, char **stats, int runs);

/* ---- Distributed SPMD over MPI (issue 27, docs/spmd.md) ----
 * ft_dist_init attaches an MPI communicator to ctx: every shard_map then
 * runs across its ranks, each rank evaluating its own block of the mesh
 * axis's indices (a mesh axis of size n over p ranks: rank q runs indices
 * q*n/p .. (q+1)*n/p - 1; p must divide n). Every rank passes the same
 * global inputs and receives the same global outputs. Collectives move
 * bytes over MPI; reductions (psum, pmean, reduce_scatter, pmax, pmin)
 * gather every index's operand and reduce in index order, so results are
 * bit-identical to the one-process run (the simulated axis) for any rank
 * count. Every shard_map entry and every collective first checks that all
 * ranks run the same body (its canonical hash) at the same equation with
 * the same sizes: a mismatch is an error on every rank, never a hang or a
 * wrong answer. In FT_MODE_HARDENED each exchange is bounded by
 * ft_dist_options.timeout_seconds (a rank that died or diverged: an error).
 *
 * mpi_comm points to an MPI_Comm (it is duplicated; the caller keeps its
 * own), or is NULL for MPI_COMM_WORLD. MPI is initialized here if the
 * caller has not (MPI_THREAD_MULTIPLE requested); ft_dist_shutdown ends it
 * then. A library built without MPI returns FT_ERR_UNSUPPORTED ("built
 * without MPI"). */
typedef struct ft_dist_options {
  size_t size;             /* sizeof(ft_dist_options): set by FT_DIST_OPTIONS_INIT */
  /* Opt out of bitwise identity: psum/pmean of one index per rank by
   * MPI_Allreduce (Open MPI's order; results may differ in the last bits
   * from the one-process run and between rank counts). */
  bool native_allreduce;
  /* Hardened mode's bound on each exchange, in seconds (0: 60). */
  double timeout_seconds;
} ft_dist_options;
#define FT_DIST_OPTIONS_INIT FT_SIZED_INIT_(ft_dist_options)
FT_API ft_status ft_dist_init(ft_ctx *ctx, const void *mpi_comm);
FT_API ft_status ft_dist_set_options(ft_ctx *ctx, const ft_dist_options *opts);
/* ctx's rank and number of ranks; 0 and 1 when no communicator is attached. */
FT_API int ft_dist_rank(const ft_ctx *ctx);
FT_API int ft_dist_size(const ft_ctx *ctx);
/* Whether this library was built with MPI. */
FT_API bool ft_dist_available(void);
/* Checks that every rank is about to run the same program (the canonical
 * hash of j): an error naming the ranks that differ, on every rank. */
FT_API ft_status ft_dist_check_program(ft_ctx *ctx, const ft_jaxpr *j);
/* Detaches (and frees the duplicate of) ctx's communicator; ft_ctx_free
 * does it too. */
FT_API ft_status ft_dist_finalize(ft_ctx *ctx);
/* Ends MPI if ft_dist_init started it: status 0 finalizes; any other
 * status aborts every rank (MPI_Abort) so no rank waits on one that
 * failed. Call once, after the last ft_ctx with a communicator is freed. */
FT_API void ft_dist_shutdown(int status);

#ifdef __cplusplus
}
#endif
#endif /* FT_H */
