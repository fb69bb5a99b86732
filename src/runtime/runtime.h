/* src/runtime/runtime.h: the internal header of the runtime (DESIGN.md §7).
 * Sections follow the files: array.c (host arrays, element access, 16-bit
 * float conversions), npy.c (.npy I/O), interp.c (the reference interpreter's
 * environment and dispatch), interp_elementwise.c, interp_layout.c,
 * interp_reduce.c (reductions, cumulative ops, argmax, sort), interp_linalg.c
 * (dot_general, the shared GEMM routine, fft), interp_index.c (gather,
 * scatter*), interp_window.c (reduce_window_*, conv_general_dilated, top_k),
 * interp_control.c (cond, while, scan, jit, custom calls). */
#ifndef FT_RUNTIME_H
#define FT_RUNTIME_H

#include "ir/ir.h"

/* ================================================================ array.c */
/* A host tensor: an owned, 64-byte aligned, C-order buffer and its aval. */
struct ft_array {
  ft_aval aval;
  size_t nbytes;        /* element count * dtype size */
  void *data;           /* never NULL (a zero-size array has a 64-byte block) */
};

enum { FT_ARRAY_ALIGN = 64 };

/* Like ft_array_new with an aval; the contents are zeroed. NULL + error on ctx
 * when the shape is invalid or memory is exhausted. */
ft_array *ft_array_alloc(ft_ctx *ctx, const ft_aval *aval);
/* A copy of a (same aval, same bytes). */
ft_array *ft_array_clone(ft_ctx *ctx, const ft_array *a);
int64_t ft_array_size(const ft_array *a);

/* Element access by flat index, for every dtype but float0. Integers and
 * bool are read as int64 (unsigned values as their bit pattern: u64 values
 * above INT64_MAX come back negative; use ft_get_u64 for those), floats as
 * double (exact), complex as its real part. */
int64_t ft_get_i64(const ft_array *a, int64_t i);
uint64_t ft_get_u64(const ft_array *a, int64_t i);
double ft_get_f64(const ft_array *a, int64_t i);
/* Complex parts (the imaginary part of a real dtype is 0). */
void ft_get_c128(const ft_array *a, int64_t i, double *re, double *im);
/* Stores: integers truncate (wrap) to the width, bool stores v != 0; floats
 * round to nearest even from double (f16/bf16 through f32, as XLA does). */
void ft_set_i64(ft_array *a, int64_t i, int64_t v);
void ft_set_f64(ft_array *a, int64_t i, double v);
void ft_set_c128(ft_array *a, int64_t i, double re, double im);

/* 16-bit floats. Conversions to them round to nearest even, overflow to
 * infinity, keep subnormals and the sign of NaN (made quiet). */
float ft_f16_to_f32(uint16_t h);
float ft_bf16_to_f32(uint16_t h);
uint16_t ft_f64_to_f16(double x);
uint16_t ft_f64_to_bf16(double x);

/* Truncates v to bits (8..64) and sign- or zero-extends it back. */
int64_t ft_int_wrap(int64_t v, int bits, bool is_signed);

/* Offsets (in elements) of the row-major enumeration of the dims dims[0..nd)
 * of a C-order array of aval a: a malloc'd array of *count entries (at least
 * one allocated; NULL when out of memory). Used by dot_general (interpreter
 * and the JIT's GEMM steps). Defined in interp_linalg.c. */
int64_t *ft_enum_offsets(const ft_aval *a, const int64_t *dims, int nd, int64_t *count);

/* ================================================================== npy.c */
/* (public: ft_npy_read, ft_npy_read_mem, ft_npy_write, ft_npy_write_mem) */

/* ================================================================= interp.c */
/* Evaluates a (sub-)jaxpr. args: the constvars first when j->const_data is
 * NULL, then the invars; they are borrowed. outs receive j->n_out new arrays
 * the caller owns. Used by ft_eval and by the control-flow primitives. */
ft_status ft_interp_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_args, ft_array *const *args,
                          ft_array **outs);
/* The number of arguments ft_interp_jaxpr expects for j. */
int ft_interp_num_args(const ft_jaxpr *j);
/* Coverage: NULL when ft_eval has a rule for p, else why not. */
const char *ft_eval_rule_status(ft_prim p);

/* A param of an equation by name (asserts it exists in the schema). */
const ft_pval *ft_eqn_param(const ft_eqn *e, const char *name);
/* An int-tuple param into out (at most FT_MAX_RANK*2 items); -1 when it is
 * not an int tuple. */
int ft_param_ints(const ft_eqn *e, const char *name, int64_t *out, int max);
int64_t ft_param_int(const ft_eqn *e, const char *name, int64_t dflt);
bool ft_param_bool(const ft_eqn *e, const char *name, bool dflt);

/* One rule per family. in: the n_in input arrays (borrowed); out: the eqn's
 * n_out results, allocated by the rule with the avals of e->out. On failure
 * the rule frees what it allocated and leaves out[] NULL. */
typedef ft_status (*ft_interp_rule)(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                    ft_array **out);

/* Allocates out[k] for every output of e with its aval. */
ft_status ft_interp_alloc_outs(ft_ctx *ctx, const ft_eqn *e, ft_array **out);

/* ===================================================== interp_elementwise.c */
ft_status ft_interp_unary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_binary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_compare(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_select(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_convert(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* Converts element i of src into element j of dst with convert_element_type's
 * semantics (float->int saturates, NaN->0; complex->real takes the real part). */
void ft_convert_elem(const ft_array *src, int64_t i, ft_array *dst, int64_t j);

/* ========================================================= interp_layout.c */
ft_status ft_interp_layout(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_iota(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* empty2: JAX leaves the contents unspecified; zeros keep runs deterministic. */
ft_status ft_interp_empty2(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* ========================================================= interp_reduce.c */
ft_status ft_interp_reduce(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_cumulative(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_sort(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* The canonical order of reduce_sum / reduce_prod (docs/determinism.md):
 * the n values x[0], x[stride], ... are cut into blocks of FT_SUM_BLOCK;
 * within a block, value k goes to lane k % FT_SUM_LANES (lanes start at the
 * identity, +0.0 or 1.0, and accumulate in increasing k), then lanes fold as
 * a halving tree (lane l += lane l + w for w = 8, 4, 2, 1); block results
 * combine left to right. n == 1 gives x[0]; n == 0 the identity. The f32
 * version rounds every step to rdt (FT_F32, FT_F16 or FT_BF16). */
enum { FT_SUM_LANES = 16, FT_SUM_BLOCK = 4096 };
double ft_sum_f64(const double *x, int64_t n, int64_t stride);
float ft_sum_f32(const float *x, int64_t n, int64_t stride, ft_dtype rdt);
double ft_prod_f64(const double *x, int64_t n, int64_t stride);
float ft_prod_f32(const float *x, int64_t n, int64_t stride, ft_dtype rdt);
/* Rounds a float to the precision of dt (f16 and bf16; others unchanged). */
float ft_round_to(ft_dtype dt, float x);

/* ========================================================= interp_linalg.c */
ft_status ft_interp_dot(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_fft(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* The one GEMM routine of the project (interpreter and JIT): C[m,n] =
 * sum_k A[m,k] B[k,n], row-major, leading dimensions lda/ldb/ldc, computed
 * by single-threaded OpenBLAS so the bits never depend on the thread count. */
void ft_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc);
void ft_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                 const double *b, int64_t ldb, double *c, int64_t ldc);

/* ========================================================== interp_index.c */
/* gather and scatter, scatter-add, scatter-mul, scatter-min, scatter-max
 * (JAX's GatherScatterMode: clip, fill/drop, promise_in_bounds). */
ft_status ft_interp_gather(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_scatter(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* ========================================================= interp_window.c */
/* reduce_window_{sum,max,min}, conv_general_dilated, top_k. Float sums are
 * sequential in window order (docs/determinism.md). */
ft_status ft_interp_reduce_window(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_conv(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_top_k(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* ======================================================== interp_control.c */
ft_status ft_interp_control(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

#endif /* FT_RUNTIME_H */
