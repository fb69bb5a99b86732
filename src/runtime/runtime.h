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
  bool borrowed;        /* ft_array_wrap: data is the caller's, not freed */
  size_t cap;           /* the buffer's allocated size (owned arrays) */
  ft_allocator allocator; /* the buffer's allocator (both NULL: aligned_alloc/free) */
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
ft_status ft_interp_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *args,
                          ft_array **outs);
/* The number of arguments ft_interp_jaxpr expects for j. */
int ft_interp_num_args(const ft_jaxpr *j);

/* ============================================================== guard.c */
/* Hardened mode's checks, shared by both engines. */
/* NaN/Inf elements of the inexact array (aval a at data): how many, and
 * the flat index of the first (-1: none) in *first (may be NULL). 0 for
 * other dtypes. Complex elements count once per NaN/Inf component. */
int64_t ft_nonfinite_count(const ft_aval *a, const void *data, int64_t *first);
/* Fires a NONFINITE guard for each of out[0..n) holding NaN/Inf: eqn < 0
 * for a call's outputs, else the equation or step (prim) whose results
 * they are. FT_OK when the call goes on (ft_guard_fire). */
ft_status ft_guard_results(ft_ctx *ctx, const ft_jaxpr *j, int eqn, const char *prim, int n,
                           ft_array *const *out);
/* The call boundary of j: each of in[0..n_args) (constants first when j
 * carries none) and, when out is not NULL, out[0..n_out) has the
 * program's aval, a matching byte count and 64-byte aligned data; no
 * output overlaps an input or another output. A fault is a CALL guard and
 * the call's error (FT_ERR_TYPE, FT_ERR_SHAPE or FT_ERR_INVALID_ARG). */
ft_status ft_guard_boundary(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *in,
                            int n_out, ft_array *const *out);
/* Coverage: NULL when ft_eval has a rule for p, else why not. */
const char *ft_eval_rule_status(ft_prim p);

/* A param of an equation by name (asserts it exists in the schema). */
const ft_pval *ft_eqn_param(const ft_eqn *e, const char *name);
/* An int-tuple param into out (at most FT_MAX_RANK*2 items); -1 when it is
 * not an int tuple. */
int ft_param_ints(const ft_eqn *e, const char *name, int64_t *out, int max);
int64_t ft_param_int(const ft_eqn *e, const char *name, int64_t dflt);
bool ft_param_bool(const ft_eqn *e, const char *name, bool dflt);

/* The one-pass logsumexp (interp_lse.c; docs/jit.md "One-pass logsumexp"):
 * equations i .. i + n_eqns - 1 of j (9, or 10 when the maximum is not a
 * scalar) are jax.nn.logsumexp's max, shift and exp-sum over x's trailing
 * axes, f32, whose intermediates nothing else reads. pat: x, the shift f
 * and the sum j (the only values of the pattern that may be read later),
 * rows x n elements. */
typedef struct ft_lse_pat {
  const ft_var *x, *shift, *sum;
  int64_t rows, n;
  int n_eqns;
} ft_lse_pat;
bool ft_lse_match(const ft_jaxpr *j, int i, ft_lse_pat *pat);
/* Which equations of j are live (some result read, transitively, by j's
 * outputs; every primitive is pure): malloc'd, n_eqn flags, or NULL when
 * out of memory. A reader of a pattern's intermediate counts only if live. */
bool *ft_live_eqns(const ft_jaxpr *j);
/* Computes shift[r] and sum[r] of every row of x (rows x n, contiguous)
 * with the shared routine (vm_lse.c); pm, ps: scratch of ceil(n / 4096)
 * floats each. */
void ft_lse_rows(const float *x, int64_t rows, int64_t n, float *pm, float *ps, float *shift, float *sum);

/* One rule per family. in: the n_in input arrays (borrowed); out: the eqn's
 * n_out results, allocated by the rule with the avals of e->out. On failure
 * the rule frees what it allocated and leaves out[] NULL. */
typedef ft_status (*ft_interp_rule)(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                    ft_array **out);

/* One equation by its family's rule (interp_spmd.c runs a shard_map body's
 * equations per index with it); in and out as for a rule. */
ft_status ft_interp_eqn(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* A rank-0 array holding literal v's value (the caller frees it). */
ft_array *ft_interp_lit(ft_ctx *ctx, const ft_var *v);
/* interp_spmd.c: shard_map over a simulated axis; a collective met anywhere
 * outside a shard_map body (an error naming why). */
ft_status ft_interp_shard_map(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* dist.c: the MPI transport of shard_map (ft_dist_init; docs/spmd.md). */
typedef struct ft_dist ft_dist;
/* What an exchange is, compared across ranks before its payload moves.
 * prim: the collective, or one of the FT_DIST_* steps. */
enum { FT_DIST_PROGRAM = -1, FT_DIST_ENTER = -2, FT_DIST_LEAVE = -3 };
typedef struct ft_dist_tag {
  uint64_t seq;       /* set by the exchange */
  uint8_t hash[16];   /* the shard_map body's (or program's) canonical hash */
  int32_t eqn, prim;
  int64_t nbytes;     /* payload bytes per rank (FT_DIST_ENTER: the axis size) */
} ft_dist_tag;
/* ctx's communicator (or its executor parent's), NULL when none. */
ft_dist *ft_dist_get(const ft_ctx *ctx);
bool ft_dist_native(const ft_dist *d);
/* Held around a whole shard_map over the communicator. */
void ft_dist_lock(ft_dist *d);
void ft_dist_unlock(ft_dist *d);
/* Checks that every rank is at *tag, then (recv non-NULL) allgathers
 * tag->nbytes from send on every rank into recv, in rank order. */
ft_status ft_dist_exchange(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send, void *recv);
/* Checks that every rank is at *tag, then MPI_Alltoallv of bytes (counts
 * and displacements per rank, in bytes). */
ft_status ft_dist_alltoallv(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send,
                            const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                            const int *rdispls);
/* The opt-out (ft_dist_options.native_allreduce): MPI_Allreduce in place. */
bool ft_dist_allreduce_ok(ft_dtype dt);
ft_status ft_dist_allreduce(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, ft_prim op, ft_dtype dt,
                            void *buf, int64_t n);
ft_status ft_interp_collective_outside(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

/* The JIT's compiled shard_map (src/lower/spmd.c) runs on the same
 * machinery: ft_spmd_run_compiled splits the inputs into each device's
 * blocks (this rank's devices [lo, lo + cnt) over MPI), calls fn once with
 * every local device's body inputs in[d * n_in + i] and body outputs
 * out[d * n_out + k] (allocated, to be written), then assembles the global
 * outputs exactly as the interpreter does (replicas checked bit for bit).
 * m describes the mesh; fn's collectives go through ft_spmd_collective,
 * which runs the interpreter's own grouping and index-order combination:
 * x[r * max(n_in, 1) + k] is operand k at device r for the local devices
 * (a NULL entry: a literal operand, read from e), o[d * n_out + k] local
 * device lo + d's result k (NULL: dropped); eqn goes into the MPI tags. */
typedef struct ft_spmd_devs ft_spmd_devs;
typedef ft_status (*ft_spmd_body_fn)(void *arg, ft_ctx *ctx, const ft_spmd_devs *m, int64_t lo, int64_t cnt,
                                     ft_array *const *in, ft_array *const *out);
ft_status ft_spmd_run_compiled(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out,
                               ft_spmd_body_fn fn, void *arg);
ft_status ft_spmd_collective(const ft_spmd_devs *m, ft_ctx *ctx, const ft_eqn *e, int32_t eqn, ft_array **x,
                             ft_array *const *o);
/* The device count of a shard_map's mesh (the product of its sizes), 0 when
 * unreadable. */
int64_t ft_spmd_num_devices(const ft_eqn *e);
int64_t ft_spmd_mesh_devices(const ft_spmd_devs *m);
/* A thread that runs one device of a shard_map body (a compiled body's
 * device thread) says so: a shard_map met there over MPI is nested. */
void ft_spmd_device_enter(void);
void ft_spmd_device_leave(void);

/* Allocates out[k] for every output of e with its aval. */
ft_status ft_interp_alloc_outs(ft_ctx *ctx, const ft_eqn *e, ft_array **out);

/* ===================================================== interp_elementwise.c */
ft_status ft_interp_unary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_binary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_ternary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_compare(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_select(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
ft_status ft_interp_convert(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* Converts element i of src into element j of dst with convert_element_type's
 * semantics (float->int saturates, NaN->0; complex->real takes the real part). */
void ft_convert_elem(const ft_array *src, int64_t i, ft_array *dst, int64_t j);
/* real, imag, conj, complex. */
ft_status ft_interp_complex_parts(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

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
/* fft, shared by the interpreter and the JIT's routine step (src/lower/
 * routines.c): the geometry of an equation, an FFTW_ESTIMATE plan made
 * under the library's one FFTW planner lock, and its execution with FFTW's
 * new-array functions on buffers aligned as the planning ones (64 bytes:
 * ft_fft_aligned), so both engines run the same codelets and get the same
 * bits. howmany == 0: nothing to transform (the result is all zeros). */
enum { FT_FFT_C2C = 0, FT_FFT_INV = 1, FT_FFT_R2C = 2, FT_FFT_C2R = 3 };
typedef struct ft_fft_geom {
  int type;             /* FT_FFT_* */
  bool dbl;             /* c128 / f64 */
  int rank, n[3];       /* fft_lengths (of the real side for r2c / c2r) */
  int howmany;          /* leading batch: one plan transforms them all */
  int64_t nreal;        /* product of n: the inverse transforms' normalization */
  size_t in_bytes, out_bytes;
} ft_fft_geom;
ft_status ft_fft_geometry(ft_ctx *ctx, const ft_eqn *e, const ft_aval *a, const ft_aval *o,
                          ft_fft_geom *g);
void *ft_fft_plan(const ft_fft_geom *g, void *in, void *out);
void ft_fft_plan_free(const ft_fft_geom *g, void *plan);
bool ft_fft_aligned(const ft_fft_geom *g, const void *p);
/* Executes and normalizes (ifft, irfft) into out; c2r overwrites in. */
void ft_fft_run(const ft_fft_geom *g, void *plan, void *in, void *out);
/* Both engines transform g's rows (its howmany transforms) in chunks of
 * ft_fft_chunk_rows(g) rows, a function of the geometry alone: one plan of
 * ft_fft_rows_geom(g, rows) runs every full chunk, one of the remainder
 * (howmany % rows rows) the last chunk when it is shorter. Chunk offsets
 * are multiples of 64 bytes, so every chunk runs the plans' codelets, and
 * the JIT runs the chunks on the executor's threads: which thread runs a
 * chunk never changes its bits. ft_fft_run_rows runs the chunks of rows
 * [lo, hi) (lo a multiple of rows; hi one too, or howmany). */
int ft_fft_chunk_rows(const ft_fft_geom *g);
ft_fft_geom ft_fft_rows_geom(const ft_fft_geom *g, int rows);
void ft_fft_run_rows(const ft_fft_geom *g, int rows, void *plan, void *plan_rem, void *in, void *out,
                     int64_t lo, int64_t hi);
/* The one GEMM routine of the project (interpreter and JIT): C[m,n] =
 * sum_k A[m,k] B[k,n], row-major, leading dimensions lda/ldb/ldc, computed
 * by single-threaded OpenBLAS so the bits never depend on the thread count.
 * It always computes C in row blocks: one OpenBLAS call per block of
 * ft_gemm_block_rows(m, n, k) rows (the last block shorter). The blocks
 * come from the shape alone, so the executor can run them on different
 * threads (ft_gemm_*_block) and make exactly the calls a whole ft_gemm
 * makes: OpenBLAS's bits change with how a product is split
 * (MACHINE-FACTS.md), never with who computes a block. */
enum { FT_GEMM_MAX_BLOCKS = 256 };
int64_t ft_gemm_block_rows(int64_t m, int64_t n, int64_t k);
int64_t ft_gemm_blocks(int64_t m, int64_t n, int64_t k);
/* false: out of memory for OpenBLAS's work buffer (ft_blas_enter); nothing
 * of c past the blocks already done is written. */
bool ft_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc);
bool ft_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                 const double *b, int64_t ldb, double *c, int64_t ldc);
/* Block blk (0 <= blk < ft_gemm_blocks(m, n, k)) of the product above: rows
 * [blk * R, min(m, (blk + 1) * R)) of C with R = ft_gemm_block_rows(m, n, k);
 * a and c point at row 0, as for the whole product. */
bool ft_gemm_f32_block(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc, int64_t blk);
bool ft_gemm_f64_block(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                       const double *b, int64_t ldb, double *c, int64_t ldc, int64_t blk);
/* The same call as ft_gemm_*_block(m, n, k, ..., blk), for a caller that
 * holds only that block: a and c point at the block's first row (row
 * blk * ft_gemm_block_rows(m, n, k)), not at row 0. The OpenBLAS call is
 * the one the whole product makes for that block, so the bits are too
 * (the blocked im2col of conv_general_dilated, interp_window.c). */
bool ft_gemm_f32_block_at(int64_t m, int64_t n, int64_t k, int64_t blk, const float *a,
                          int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);
bool ft_gemm_f64_block_at(int64_t m, int64_t n, int64_t k, int64_t blk, const double *a,
                          int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc);
/* Pins OpenBLAS to one thread (once per process; LAPACK calls, lapack.h). */
void ft_blas_single_thread(void);
/* Brackets an OpenBLAS call: false (nothing entered) when a new work buffer
 * might be needed and the address space has no room for one. */
bool ft_blas_enter(void);
void ft_blas_leave(void);
/* The out-of-memory error of a GEMM that ft_blas_enter refused. */
#define FT_BLAS_NOMEM_MSG                                                                 \
  "dot_general: out of memory: OpenBLAS needs a 128 MiB work buffer for each GEMM "     \
  "running at once and the address space has no room (ulimit -v?)"
ft_status ft_blas_nomem(ft_ctx *ctx);

/* ================================================ rules shared with the JIT */
/* The bodies of these interpreter rules also run the JIT's routine steps
 * (src/lower/routines.c), so both engines compute with the same C: each
 * checks e against the avals of in[] (errors on ctx, which may be NULL, and
 * nothing written) and, when out is not NULL, computes the results into the
 * caller's out[] (avals of e->out; any contents before) using scratch of
 * ft_rule_scratch(e) bytes (8-byte aligned; NULL when 0). in[k] may be a
 * view whose data is NULL when out is NULL (a check at planning). The
 * arrays' data must not overlap. */
typedef ft_status (*ft_rule_into_fn)(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                     ft_array *const *out, void *scratch);
ft_status ft_gather_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch);
/* (scatter_apply, a plain scatter with an update_jaxpr, allocates: the JIT
 * leaves it to the interpreter) */
ft_status ft_scatter_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch);
ft_status ft_reduce_window_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                ft_array *const *out, void *scratch);
ft_status ft_conv_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch);
ft_status ft_top_k_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch);
ft_status ft_sort_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch);
/* interp_misc.c: JAX 0.12's Frexp and Ldexp (bit-exact, no scratch) */
ft_status ft_frexp_ldexp_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                              ft_array *const *out, void *scratch);
/* interp_misc.c: approx_top_k as XLA's CPU fallback (exact; scratch below) */
ft_status ft_approx_top_k_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                               ft_array *const *out, void *scratch);
size_t ft_approx_top_k_scratch(const ft_eqn *e);
/* interp_misc.c: JAX 0.12's Nonzero (no scratch) */
ft_status ft_nonzero_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch);
/* JAX 0.12's SearchSorted (every method; no scratch) */
ft_status ft_searchsorted_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                               ft_array *const *out, void *scratch);
ft_status ft_cumulative_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                             ft_array *const *out, void *scratch);
ft_status ft_reduce_precision_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                   ft_array *const *out, void *scratch);
/* reductions and argmax/argmin (every dtype the interpreter reduces), and
 * dot_general (every dtype: GEMM in the compute precision for float
 * results, k-ordered loops for integer and complex ones) */
ft_status ft_reduce_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch);
ft_status ft_dot_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                      void *scratch);
/* interp_misc.c: JAX 0.12's polynomial, stack, unstack, tile,
 * optimization_barrier, platform_index and empty */
ft_status ft_polynomial_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                             ft_array *const *out, void *scratch);
ft_status ft_stack_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch);
ft_status ft_unstack_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch);
ft_status ft_tile_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch);
ft_status ft_opt_barrier_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                              ft_array *const *out, void *scratch);
ft_status ft_platform_index_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                 ft_array *const *out, void *scratch);
ft_status ft_empty_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch);
/* interp_window.c: select_and_gather_add, select_and_scatter_add (scratch:
 * ft_select_and_scratch, one window's offsets) */
ft_status ft_select_and_gather_add_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                        ft_array *const *out, void *scratch);
ft_status ft_select_and_scatter_add_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                         ft_array *const *out, void *scratch);
size_t ft_select_and_scratch(const ft_eqn *e);
/* interp_random.c: random_seed/bits/split/fold_in/wrap/unwrap/clone and
 * threefry2x32 on threefry keys (docs/random.md); rng_bit_generator and the
 * other key impls are refused with a message. */
ft_status ft_random_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch);
/* The Threefry-2x32-20 hash of (x0, x1) under key (k0, k1). */
void ft_threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t out[2]);
/* random_bits of width bw (8, 16, 32, 64) from one threefry key: n elements. */
void ft_threefry_bits(uint32_t k0, uint32_t k1, int bw, int64_t n, void *out);
/* interp_spectral.c (linalg2): eigh, svd and qr through LAPACK; scratch:
 * ft_spectral_scratch (the column-major copies and LAPACK's workspace). */
ft_status ft_spectral_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                           ft_array *const *out, void *scratch);
size_t ft_spectral_scratch(const ft_eqn *e);
/* The rule body above for e's primitive (NULL: none), and its scratch bytes. */
/* interp_reduce.c: JAX's generic reduce (a computation jaxpr over n
 * operands) in XLA CPU's order. The reducer replaces acc[0..n) with
 * computation(acc..., x...) (scalars; it may read acc before writing). The
 * interpreter passes one that evaluates the jaxpr, the JIT's control step
 * one that runs its compiled program (src/lower/control.c). in: the n
 * operands (shape `operand`), then the n scalar inits; out: the n results. */
enum { FT_GREDUCE_MAX = 16 };
typedef ft_status (*ft_reducer_fn)(void *ud, void *const *acc, const void *const *x);
ft_status ft_generic_reduce_run(ft_ctx *ctx, int n, const ft_aval *operand, const ft_dtype *dtypes,
                                const bool *reduced, const void *const *in, void *const *out,
                                ft_reducer_fn f, void *ud);
/* Checks e (a reduce equation): its operand count n and reduced dims. */
ft_status ft_generic_reduce_geom(ft_ctx *ctx, const ft_eqn *e, int *n, bool *reduced);
ft_status ft_interp_reduce_generic(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);
/* The generic reduce_window (JAX's reduce_window_p with a computation
 * jaxpr): its window, checked (interp_window.c), and the run in XLA CPU's
 * order there: each result element starts from the init values and folds
 * the window's operand elements in row-major window order, holes and pads
 * skipped: acc = computation(acc..., x...). in: the n operands (shape
 * `operand`), then the n scalar inits; out: the n results (shape `res`). */
typedef struct ft_rwin {
  int rank;
  int64_t wd[FT_MAX_RANK], ws[FT_MAX_RANK], bd[FT_MAX_RANK], wdl[FT_MAX_RANK];
  int64_t lo[FT_MAX_RANK], hi[FT_MAX_RANK];
} ft_rwin;
ft_status ft_generic_reduce_window_geom(ft_ctx *ctx, const ft_eqn *e, int *n, ft_rwin *w);
ft_status ft_generic_reduce_window_run(ft_ctx *ctx, int n, const ft_rwin *w, const ft_aval *operand,
                                       const ft_aval *res, const ft_dtype *dtypes, const void *const *in,
                                       void *const *out, ft_reducer_fn f, void *ud);
ft_status ft_interp_reduce_window_generic(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

ft_rule_into_fn ft_rule_into_for(ft_prim p);
size_t ft_rule_scratch(const ft_eqn *e);
/* lapack.c: the rule body of a linear-algebra primitive (NULL: p is not one), its
 * scratch bytes (FT_LAPACK_ALIGN included), and whether it writes every
 * result (the planner then gives dropped results a buffer too). Called by
 * ft_rule_into_for / ft_rule_scratch (interp_shared.c), interp.c's rule_for
 * and routines.c's ft_routine_all_outputs. */
ft_rule_into_fn ft_linalg_rule_into_for(ft_prim p);
size_t ft_linalg_rule_scratch(const ft_eqn *e);
bool ft_linalg_writes_all(const ft_eqn *e);
/* lapack.c: a linear-algebra equation's batch members, so they can run in
 * chunks on the executor's threads (the JIT's routine steps, src/lower/
 * routines.c). The number of members when every operand and result
 * carries the same leading batch dims (their product), else 0 (the
 * equation runs whole). Member b of each operand and result is its b-th
 * contiguous block, which only the rule body's iteration for b reads or
 * writes. */
enum { FT_LINALG_MAX_ARGS = 16 };
int64_t ft_linalg_members(const ft_eqn *e);
/* Runs e's rule body on members [lo, hi) only, on views of in[] and out[]
 * whose batch dims are (1, ..., 1, hi - lo), starting at member lo: each
 * member makes the same LAPACK calls on the same bytes at the same
 * addresses as in the whole call, with scratch of its own of
 * ft_linalg_rule_scratch(e) bytes, so every partition of the batch gives
 * the whole call's bits. */
ft_status ft_linalg_run_members(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                ft_array *const *out, void *scratch, int64_t lo, int64_t hi);
/* (the parts of ft_rule_scratch that live next to their bodies) */
size_t ft_reduce_window_scratch(const ft_eqn *e);
size_t ft_top_k_scratch(const ft_eqn *e);
size_t ft_conv_scratch(const ft_eqn *e);
size_t ft_reduce_scratch(const ft_eqn *e);
size_t ft_dot_scratch(const ft_eqn *e);
/* dot_general's body on arrays with int dimension numbers (lhs contract,
 * rhs contract, lhs batch, rhs batch), and its scratch (interp_linalg.c). */
ft_status ft_dot_raw(ft_ctx *ctx, const ft_array *l, const ft_array *r, ft_array *o,
                     const int64_t dn[4][FT_MAX_RANK], const int n[4], void *scratch);
size_t ft_dot_raw_scratch(const ft_aval *l, const ft_aval *r, const ft_aval *o,
                          const int64_t dn[4][FT_MAX_RANK], const int n[4]);
/* ragged_dot_general (interp_ragged.c): JAX 0.12's CPU definition, the
 * dense dot of the group-masked operands. */
ft_status ft_ragged_dot_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                             void *scratch);
size_t ft_ragged_dot_scratch(const ft_eqn *e);
/* Runs a rule body as an interpreter rule: allocates out[] and the scratch. */
ft_status ft_interp_via_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out);

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
