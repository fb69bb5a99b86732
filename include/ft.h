/* ft.h: the public C API of FrankenTrace, a trace compiler with JAX's core
 * semantics (jaxprs, transforms, JIT) as a C library.
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
 * The header compiles as C11 and as C++.
 *
 * Sections (each owned by one area of the library; edit only your own):
 *   core (context, status, dtypes, avals)  — src/ir
 *   jaxpr (parse, print, hash, verify)     — src/ir
 *   arrays and .npy                        — src/runtime
 *   interpreter                            — src/runtime
 *   tracing                                — src/trace
 *   ledger                                 — src/ledger
 */
#ifndef FT_H
#define FT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(FT_BUILDING_LIBRARY)
#define FT_API __attribute__((visibility("default")))
#else
#define FT_API
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
  FT_ERR_INTERNAL      /* a bug in FrankenTrace: please report it */
} ft_status;

/* Element types, with the short names JAX prints (bool, i8, ..., c128). */
typedef enum ft_dtype {
  FT_BOOL = 0,
  FT_I8, FT_I16, FT_I32, FT_I64,
  FT_U8, FT_U16, FT_U32, FT_U64,
  FT_F16, FT_BF16, FT_F32, FT_F64,
  FT_C64, FT_C128,
  FT_FLOAT0,           /* JAX's tangent type of integer values: no data */
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

/* Error-handling policy (DESIGN.md §9). */
typedef enum ft_mode {
  FT_MODE_STRICT = 0,  /* fail closed on anything unknown */
  FT_MODE_HARDENED     /* also guard at run time and record guard events */
} ft_mode;

typedef struct ft_ctx_options {
  ft_mode mode;
  int num_threads;     /* 0: FT_NUM_THREADS from the environment, else the core count */
} ft_ctx_options;

typedef struct ft_ctx ft_ctx;

/* The library's version, e.g. "0.1.0". Static storage. */
FT_API const char *ft_version(void);

/* Creates a context. opts may be NULL (defaults: strict, automatic threads).
 * Returns NULL only when memory is exhausted. Free with ft_ctx_free(). */
FT_API ft_ctx *ft_ctx_new(const ft_ctx_options *opts);
FT_API void ft_ctx_free(ft_ctx *ctx);

/* The message of the last failure on ctx ("" if none). Owned by ctx; valid
 * until the next call that fails or ft_ctx_clear_error(). */
FT_API const char *ft_ctx_error(const ft_ctx *ctx);
/* The status of the last failure on ctx (FT_OK if none). */
FT_API ft_status ft_ctx_status(const ft_ctx *ctx);
FT_API void ft_ctx_clear_error(ft_ctx *ctx);

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

/* Writes a Graphviz DOT picture of j. malloc'd string, free with ft_free(). */
FT_API char *ft_jaxpr_dot(ft_ctx *ctx, const ft_jaxpr *j);

/* ================================================================== arrays */
/* (declarations of src/runtime: ft_array, .npy I/O) */

/* ============================================================= interpreter */
/* (declarations of src/runtime: ft_eval) */

/* ================================================================= tracing */
/* (declarations of src/trace: ft_trace and the op functions) */

/* ================================================================== ledger */
/* (declarations of src/ledger) */

#ifdef __cplusplus
}
#endif
#endif /* FT_H */
