/* src/lower/lower.h: the internal header of the lowering folder (DESIGN.md
 * §6, §7). Sections follow the files:
 *   fusion.c   planning: a jaxpr -> an ft_program (steps, buffers, kernels)
 *   codegen.c  LLVM-C IR for the program's kernels (one module)
 *   jit.c      target machine, pass pipeline, object emission, ORC LLJIT,
 *              the public ft_jit / ft_call / ft_fn_free
 *   program.c  running a program: buffers, kernels, GEMM, fallback steps
 *   cache.c    the compile cache (in memory and on disk)
 *   aot.c      ahead-of-time emission (LLVM IR, assembly, object, .so + header)
 *   aot_rt.c   the runtime side of AOT: re-planning an emitted program (no LLVM)
 *   exec_program.c  an ft_program run by the executor (src/runtime/exec.h)
 *   exec_profile.c  compile + profile a jaxpr for ftc run --profile / --stats
 *
 * Only this folder includes llvm-c/; this header does not, so the sources
 * libfrankentrace_rt takes from here compile without LLVM. The executor
 * (src/runtime/exec.h: pool, tasks, buffer plan) is runtime's and knows
 * nothing of programs; this folder drives it (issue 23: one direction). */
#ifndef FT_LOWER_H
#define FT_LOWER_H

#include <pthread.h>

#include "runtime/exec.h"
#include "runtime/runtime.h"

/* Bump when generated code changes meaning: it is part of every cache key. */
#define FT_CODEGEN_VERSION 6

/* ============================================================== the program */
/* Where a value lives at run time. */
typedef enum ft_buf_kind {
  FT_BUF_INPUT,   /* the call's in[index] (constvars first when the jaxpr has no values) */
  FT_BUF_CONST,   /* the program's copy of const_data[index] */
  FT_BUF_TEMP,    /* arena + offset (an intermediate, or a GEMM packing buffer) */
  FT_BUF_OUTPUT   /* the call's out[index]: written in place by its producing step */
} ft_buf_kind;

typedef struct ft_pbuf {
  ft_buf_kind kind;
  int index;
  size_t offset;  /* FT_BUF_TEMP: bytes from the start of the arena (64-aligned) */
  size_t nbytes;
  ft_aval aval;
} ft_pbuf;

/* A strided access of a buffer over a loop nest: element (i_0..i_{r-1}) is
 * at base + sum i_d * st[d] (in elements; strides may be 0 or negative). */
typedef struct ft_access {
  int buf;        /* buffer id; -1 for a literal (lit) */
  const ft_var *lit;
  ft_dtype dt;
  int64_t base;
  int64_t st[FT_MAX_RANK];
} ft_access;

/* ---- loop kernels (fusion groups) */
typedef enum ft_knode_kind {
  FT_KN_LOAD,    /* acc: a strided load (or a literal) */
  FT_KN_ELEM,    /* e: an elementwise equation on earlier nodes */
  FT_KN_IOTA     /* the index along loop dim `dim` (-1: always 0), as dt */
} ft_knode_kind;

typedef struct ft_knode {
  ft_knode_kind kind;
  ft_dtype dt;
  const ft_eqn *e;
  int n_in;
  int in[16];     /* FT_KN_ELEM: operand node indices */
  ft_access acc;  /* FT_KN_LOAD */
  int dim;        /* FT_KN_IOTA */
} ft_knode;

typedef struct ft_kstore {
  int node, buf;
} ft_kstore;

/* FT_KER_LSE: a one-pass logsumexp kernel (fusion.c place_lse), calling the
 * shared routine of vmath/vm_lse.c on rows of x. */
typedef enum ft_kernel_kind { FT_KER_LOOP, FT_KER_REDUCE, FT_KER_LSE } ft_kernel_kind;

typedef struct ft_kernel {
  ft_kernel_kind kind;
  char name[24];        /* the symbol: ft_k<index> */
  /* FT_KER_LOOP: a loop nest over dims[0..rank) (collapsed; rank >= 1) */
  int rank;
  int64_t dims[FT_MAX_RANK];
  int n_nodes, cap_nodes;
  ft_knode *nodes;
  int n_stores;
  ft_kstore *stores;    /* contiguous over the loop nest */
  /* FT_KER_REDUCE: out[o] = fold over k < rcount of in(base(o) + k*rstride),
   * base(o) from the kept dims (kdims, kst), row-major over the output. */
  ft_prim rprim;
  ft_access rin;        /* rin.st: strides over kdims */
  int rout;             /* output buffer */
  int64_t rcount, rstride;
  int krank;
  int64_t kdims[FT_MAX_RANK];
  /* FT_KER_REDUCE, general form (the fields above stay filled for the plan
   * text): the value folded is node rnode of nodes[] (loads and elementwise
   * producers fused into the reduction), evaluated at each element of the
   * input shape idims[0..irank) (load strides are over that shape); ired[d]
   * marks the reduced axes. Outputs enumerate the kept axes row-major, the
   * fold the reduced axes row-major, as the interpreter does. rprim may be
   * argmax/argmin; rout_dt is the output dtype. */
  int rnode, irank;
  int64_t idims[FT_MAX_RANK];
  bool ired[FT_MAX_RANK];
  ft_dtype rout_dt;
  /* A reduction split in two so that few outputs still use every thread
   * (fusion.c, split_reduce): rparts > 0 marks the first kernel, whose
   * outputs [lo, hi) are the partials p = o * rparts + b, the fold of
   * reduced positions [b * rblock, (b + 1) * rblock) of output o (for
   * sums/products a block of docs/determinism.md §3, so rblock is
   * FT_SUM_BLOCK); rseq marks the second, which folds each output's
   * partials left to right from the identity (total = p0 + p1 + ...). */
  int64_t rparts, rblock;
  bool rseq;
  /* FT_KER_LSE over lse_rows rows of lse_n contiguous f32 at buffer lse_x,
   * each cut into lse_nb blocks of FT_VM_LSE_BLOCK. !lse_fin: item
   * p = row * lse_nb + block writes that block's maximum to lse_pm[p] and
   * its sum to lse_ps[p] (ft_vm_lse_block_f32); lse_fin: item r combines
   * row r's partials into lse_shift[r], lse_sum[r] (ft_vm_lse_finish_f32).
   * krank = 1, kdims[0] = the items, rcount = elements per item (the
   * executor's grain and the JIT's work estimate, as for reductions). */
  bool lse_fin;
  int64_t lse_rows, lse_n, lse_nb;
  int lse_x, lse_pm, lse_ps, lse_shift, lse_sum;
} ft_kernel;

/* A compiled kernel: runs iterations [lo, hi) of its outermost loop (loop
 * kernels) or outputs [lo, hi) (reductions). bufs: every buffer's address. */
typedef void (*ft_kernel_fn)(void *const *bufs, int64_t lo, int64_t hi);

/* ---- GEMM steps */
typedef struct ft_gemm_plan {
  bool f64;
  int64_t B, M, N, K;
  /* element offsets per group (as the interpreter enumerates them) */
  int64_t *lb, *lm, *lk, *rb, *rk, *rn;
  bool lhs_direct, rhs_direct;  /* already [b][m][k] / [b][k][n] contiguous */
  int pack_a, pack_b;           /* TEMP buffers for packing, or -1 */
} ft_gemm_plan;
/* Packs rows [r0, r1) of an operand enumerated as [B*R][Cn] (row q is row
 * q % R of batch element q / R): dst[q][c] = src[ob[q / R] + orow[q % R] +
 * ocol[c]], in tiles (exec_program.c). Used by the executor's GEMM tasks
 * and by program.c's sequential GEMM steps (sub-programs). */
void ft_gemm_pack_rows(bool f64, const void *src, void *dst, int64_t r0, int64_t r1, int64_t R,
                       int64_t Cn, const int64_t *ob, const int64_t *orow, const int64_t *ocol);

typedef enum ft_step_kind {
  FT_STEP_KERNEL,    /* a compiled loop or reduction kernel */
  FT_STEP_GEMM,      /* dot_general through ft_gemm_f32/f64 */
  FT_STEP_FALLBACK,  /* one equation run by the interpreter's own rule */
  FT_STEP_CONTROL,   /* cond/while/scan/jit/custom_*_call driving compiled sub-programs (control.c) */
  FT_STEP_ROUTINE    /* a native C routine of the library on the buffers (routines.c): pad,
                        concatenate, split, dynamic_(update_)slice, cumulative ops, sort,
                        top_k, gather, scatter*, reduce_window_*, conv_general_dilated,
                        reduce_precision (the interpreter's own rule bodies), fft (FFTW) */
} ft_step_kind;

typedef struct ft_control ft_control;

typedef struct ft_step {
  ft_step_kind kind;
  int pos;            /* program order: index of the last equation it covers */
  int seq;            /* tie-break: creation order */
  int eqn;            /* KERNEL: its last equation; GEMM/FALLBACK: the equation */
  int n_eqns;
  int *eqns;          /* KERNEL: the fused equations (indices into j->eqns) */
  int n_in, n_out;
  int *in, *out;      /* buffer ids; -1: a literal (in) / dropped (out) */
  int kernel;         /* KERNEL: index into program->kernels */
  int64_t extent;     /* KERNEL: the range [0, extent) of lo..hi; ROUTINE split over its
                         batch (grain > 0): its batch members (linalg) or rows (fft) */
  int64_t grain;      /* ROUTINE: items per chunk when it splits (ft_routine_split), else 0 */
  size_t slot;        /* ROUTINE split: bytes of scratch per chunk (chunk c uses slot c) */
  ft_gemm_plan *gemm;
  ft_jaxpr *sub;      /* FALLBACK: the one-equation jaxpr the interpreter runs */
  ft_kernel_fn fn;    /* KERNEL: bound after compilation */
  ft_control *ctl;    /* CONTROL: the sub-programs and their preallocated state */
  void *rt;           /* ROUTINE: its state made at planning (fft: the FFTW plan), or NULL.
                         A routine's out[] lists e's results, then its scratch buffers
                         (ft_routine_scratch), which only the step itself uses */
} ft_step;

/* How output k is produced when it is not written in place. */
typedef struct ft_out_src {
  int buf;            /* the buffer to copy from, or -1: literal / in place */
  const ft_var *lit;  /* a literal output */
  bool in_place;      /* a step writes out[k] directly */
} ft_out_src;

typedef struct ft_program {
  ft_jaxpr *j;               /* the program's own copy of the jaxpr (fallbacks use it) */
  int n_args;                /* inputs a call passes (constvars first when no const_data) */
  int n_out;
  int n_bufs, cap_bufs;
  ft_pbuf *bufs;
  size_t arena_bytes;        /* TEMP buffers, one arena */
  void **consts;             /* FT_BUF_CONST data (owned) */
  int n_consts;
  int n_steps, cap_steps;
  ft_step *steps;
  int n_kernels, cap_kernels;
  ft_kernel *kernels;
  ft_out_src *outs;
  int n_fallback, n_gemm, n_fused_eqns;
  const char **why;          /* by equation: why it is a fallback step (static strings) */
} ft_program;

/* ================================================================ fusion.c */
typedef struct ft_plan_options {
  bool no_fusion;         /* one kernel per equation (debugging, tests) */
  bool no_compile;        /* every equation a fallback step (debugging) */
} ft_plan_options;

/* Plans j: fusion groups, GEMM and fallback steps, buffers. The program
 * copies j (and its constant values). NULL + error on ctx on failure. Free
 * with ft_program_free. */
ft_program *ft_program_plan(ft_ctx *ctx, const ft_jaxpr *j, const ft_plan_options *opts);
void ft_program_free(ft_program *p);
/* The plan as text (ftc compile --emit plan). malloc'd; free with free(). */
char *ft_program_describe(const ft_program *p);
/* Whether the loop kernels can compute this equation natively (else it is a
 * fallback step). why (may be NULL) receives a static reason when not. */
bool ft_lower_elem_native(const ft_eqn *e, const char **why);

/* Coverage: NULL when the JIT compiles p natively (at least for f32), else
 * "unsupported: runs as an interpreter step: <why>" (a static string). */
const char *ft_lower_rule_status(ft_prim p);

/* =============================================================== control.c */
/* Control flow as compiled sub-programs: the branches of cond, the cond and
 * body of while, the body of scan, the jaxpr of jit / custom_jvp_call /
 * custom_vjp_call are planned as ft_programs whose kernels the caller
 * hoists into the top program's module. NULL and *why (static) when the
 * equation's sub-jaxprs do not fit its operands (then it is a fallback
 * step); NULL with an error on ctx on a real failure. */
ft_control *ft_control_new(ft_ctx *ctx, const ft_eqn *e, const ft_plan_options *opts,
                           const char **why);
void ft_control_free(ft_control *c);
int ft_control_num_subs(const ft_control *c);
ft_program *ft_control_sub(const ft_control *c, int i);
/* Runs a FT_STEP_CONTROL step (its buffers bound in kbufs). */
ft_status ft_control_run(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs);
/* Runs sub-program i on arrays of its argument and output avals. */
ft_status ft_control_run_sub_arrays(ft_ctx *ctx, ft_control *c, int i, ft_array *const *in, ft_array *const *out);
/* One line for the plan text: "while#3 (cond: 2 steps, body: 5 steps, ...)". */
void ft_control_describe(const ft_control *c, char *buf, size_t n);

/* ============================================================== routines.c */
/* Whether e runs as a FT_STEP_ROUTINE step (its in[k]: operand k's buffer,
 * -1 for a literal; out[k]: result k's, -1 dropped). why (may be NULL)
 * receives a static reason for some refusals. */
bool ft_routine_native(const ft_eqn *e, const char **why);
/* Whether every result of e needs a buffer even when dropped (the
 * interpreter's rule bodies write all their results). */
bool ft_routine_all_outputs(const ft_eqn *e);
/* The scratch buffers of e's routine: their sizes into bytes[0..n), n
 * returned (at most 2). They follow e's results in the step's out[]. */
int ft_routine_scratch(const ft_eqn *e, size_t bytes[2]);
/* The state of e's routine made once at planning (fft: an FFTW plan under
 * the library's planner lock), into *state (NULL when it has none). False
 * and *why (static) when it cannot be made: the equation falls back. */
bool ft_routine_prepare(const ft_eqn *e, void **state, const char **why);
void ft_routine_state_free(const ft_eqn *e, void *state);
/* How e's routine splits into chunks the executor's threads may run at
 * once, each computing its items exactly as the whole call does: linalg
 * rule bodies over their batch members (ft_linalg_members; each chunk with
 * a scratch slot of its own, slot bytes, in the step's scratch buffer),
 * fft over its rows in FFT chunks (ft_fft_chunk_rows). extent items in
 * chunks of grain, both from the shape alone. False: one chunk. */
typedef struct ft_routine_split {
  int64_t extent, grain;
  size_t slot;
} ft_routine_split;
bool ft_routine_split_of(const ft_eqn *e, ft_routine_split *sp);
/* Runs items [lo, hi) of a split routine step (lo a multiple of s->grain;
 * hi one too, or s->extent); the same bits as ft_routine_run gives them. */
ft_status ft_routine_run_range(ft_ctx *ctx, const ft_program *p, const ft_step *s,
                               void *const *kbufs, int64_t lo, int64_t hi);
/* Runs a routine step (buffers bound in kbufs). Never allocates (except
 * split/concatenate of more than 64 parts); fails only where the
 * interpreter's rule body would (the equations were checked at planning). */
ft_status ft_routine_run(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs);

/* ================================================================== spmd.c */
/* Compiled shard_map: the most devices whose bodies are planned (one plan
 * per device); a larger mesh runs its shard_map as an interpreter step. */
enum { FT_SPMD_JIT_MAX_DEVICES = 8 };
/* Runs a shard_map control step: in/out are its global buffers; c's
 * sub-programs are the body planned once per device. */
ft_status ft_spmd_jit_run(ft_ctx *ctx, ft_control *c, const ft_eqn *e, void *const *in, void *const *out);
/* A collective's routine step (its site number in s->rt). */
ft_status ft_spmd_jit_collective(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs);
/* Collective sites while planning a body: a new number; reset returns the
 * previous counter. */
int ft_spmd_site_new(void);
int ft_spmd_site_reset(int to);
/* Whether e is a shard_map or holds one in a sub-jaxpr. */
bool ft_spmd_eqn_holds_shard_map(const ft_eqn *e);

/* =============================================================== program.c */
/* Runs p once. in: n_args arrays (checked against the avals); out: n_out
 * arrays of the output avals (written). kbufs: scratch of p->n_bufs
 * pointers; arena: p->arena_bytes bytes, 64-aligned. Steps run in order on
 * the calling thread. */
ft_status ft_program_run(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                         ft_array *const *out, void **kbufs, void *arena);
/* The same, and after each step, hardened mode's per-step guard: NaN/Inf
 * in a result of a step whose inputs held none (ft_call_into with
 * guard_each_step runs the whole call this way). */
ft_status ft_program_run_checked(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                                 ft_array *const *out, void **kbufs, void *arena);
/* The first fallback step of p, looking into control steps' sub-programs:
 * the message "equation N (prim): why" (nested: "equation N (while),
 * body: equation M (prim): why") in buf. False when p has none. */
bool ft_program_first_fallback(const ft_program *p, char *buf, size_t n);
/* The reason of the interpreter steps that move PRNG key arrays: they are
 * planned that way by design (the kernels have no key type), so they are not
 * fallbacks that strict mode refuses; ft_program_first_fallback skips them. */
extern const char ft_why_key_steps[];
/* Runs step s (buffers already bound in kbufs). */
ft_status ft_program_run_step(ft_ctx *ctx, const ft_program *p, const ft_step *s,
                              void *const *kbufs);

/* =============================================================== codegen.c */
/* Code generation needs LLVM types; the entry point is declared in
 * codegen.h-like form here with opaque pointers so jit.c and aot.c share it:
 * builds every kernel of p into the LLVM module `module` (an LLVMModuleRef),
 * declaring the math functions it calls. Returns 0, 1 with *err (malloc'd),
 * or 2 when out of memory (*err may then be NULL). */
int ft_codegen_program(void *module, const ft_program *p, char **err);

/* ==================================================================== jit.c */
/* The host target: triple, CPU name and features (static strings, computed
 * once). */
const char *ft_jit_host_triple(void);
const char *ft_jit_host_cpu(void);
const char *ft_jit_host_features(void);

typedef enum ft_llvm_out { FT_LO_OBJ, FT_LO_ASM, FT_LO_LLVM } ft_llvm_out;
/* Builds, optimizes (default<O2|O3>, host target) and emits p's kernels.
 * *out is malloc'd (free with free()), *len its size. relocation PIC so the
 * object also links into a shared library. entry (may be NULL): also emit
 * the AOT descriptor and entry functions (ft_aot_codegen_entry). Times in
 * ms go to *opt_ms and *cg_ms when not NULL. */
typedef struct ft_aot_entry ft_aot_entry;
ft_status ft_jit_emit_program(ft_ctx *ctx, const ft_program *p, int opt_level, ft_llvm_out kind,
                              const ft_aot_entry *entry, void **out, size_t *len, double *opt_ms,
                              double *cg_ms);

/* Compiled code shared by every ft_fn of one cache key (refcounted). */
typedef struct ft_jit_code ft_jit_code;
/* Loads an object file (as emitted above) into a new LLJIT and looks up
 * every kernel of p. NULL + error on ctx. */
ft_jit_code *ft_jit_code_load(ft_ctx *ctx, const ft_program *p, const void *obj, size_t len);
void ft_jit_code_retain(ft_jit_code *c);
void ft_jit_code_release(ft_jit_code *c);
/* The address of kernel k of the program the code was loaded for. */
ft_kernel_fn ft_jit_code_kernel(const ft_jit_code *c, int k);

/* What ft_jit records as the output of its compile/jit ledger record: the
 * exact-tier rewrite (unless opts->no_optimize), the plan text and the
 * cache key, without generating code (the ledger's replayer re-plans with
 * it). malloc'd (free()); NULL + error on ctx. */
char *ft_jit_plan_record(ft_ctx *ctx, const ft_jaxpr *j, const ft_jit_options *opts);

/* ============================================================ aot.c, aot_rt.c */
/* The ABI between an AOT-emitted object and the runtime (docs/jit.md,
 * "AOT"). The object defines one ft_aot_desc per entry function (internal,
 * writable: `state` starts NULL) and `int NAME(in, out)`, `const char
 * *NAME_error(void)`, `void NAME_release(void)`, which call ft_aot_rt_call,
 * ft_aot_rt_error and ft_aot_rt_release on it. aot.c lays the descriptor out in
 * LLVM IR field by field in this order: change both together (and bump
 * FT_AOT_ABI). */
#define FT_AOT_MAGIC 0x46544f41u /* "AOTF" */
#define FT_AOT_ABI 1
enum { FT_AOT_NO_FUSION = 1, FT_AOT_INTERPRET_ALL = 2 }; /* ft_aot_desc.flags: plan options */
typedef struct ft_aot_state ft_aot_state;
typedef struct ft_aot_desc {
  const char *jaxpr;              /* canonical text of the planned jaxpr, NUL-terminated */
  void *const *kernels;           /* n_kernels entry points, in the plan's kernel order */
  const void *const *consts;      /* n_consts constant values (traced constants), C order */
  const char *version;            /* ft_version() of the emitting library */
  _Atomic(ft_aot_state *) state;  /* the runtime's, made on the first call */
  uint64_t jaxpr_len;
  uint32_t magic, abi, flags;
  int32_t n_kernels, n_consts, reserved;
  uint8_t plan_hash[16];          /* ft_aot_plan_hash of the compile-time plan */
} ft_aot_desc;

/* What aot.c passes to codegen for the descriptor: the entry name, the
 * text the runtime parses, the plan hash, options and constants. */
struct ft_aot_entry {
  const char *name;
  const char *jaxpr;
  size_t jaxpr_len;
  uint8_t plan_hash[16];
  uint32_t flags;
  int n_consts;
  const void *const *consts;
  const size_t *const_bytes;
};
/* Adds the descriptor, the kernel table and the entry functions to module
 * (an LLVMModuleRef holding p's kernels, made internal here so several
 * programs link into one library). 1 + *err (malloc'd) on failure. */
int ft_aot_codegen_entry(void *module, const ft_program *p, const ft_aot_entry *e, char **err);

/* Runs the program of d on C-order buffers (avals of the jaxpr's inputs and
 * outputs): 0, or a ft_status with the message for ft_aot_rt_error. The first
 * call plans the program (thread-safe); calls may run concurrently. */
FT_API int ft_aot_rt_call(ft_aot_desc *d, const void *const *in, void *const *out);
/* The message of the failed initialization of d, else of the calling
 * thread's last failed call of d, else "". */
FT_API const char *ft_aot_rt_error(ft_aot_desc *d);
/* Frees d's runtime state (no call of d may be running); the next call
 * plans again. */
FT_API void ft_aot_rt_release(ft_aot_desc *d);
/* A hash of everything in p that decides which kernel runs where on which
 * buffers (steps, buffers, kernels, sub-programs, the plan text). False
 * when out of memory. */
bool ft_aot_plan_hash(const ft_program *p, uint8_t out[16]);
/* ft_parse of the text, with n_consts constant values attached (copied
 * into its arena) when n_consts > 0. */
ft_jaxpr *ft_aot_parse(ft_ctx *ctx, const char *text, size_t len, int n_consts,
                       const void *const *consts, const char *name);

/* ================================================================== cache.c */
/* The key of a compilation: canonical hash, avals, options, CPU, versions. */
typedef struct ft_cache_key {
  uint8_t h[16];
  char hex[33];
} ft_cache_key;
void ft_cache_key_make(const ft_jaxpr *j, int opt_level, const ft_plan_options *po,
                       ft_cache_key *key);
/* The key without the identity of the built library file (for ledger records). */
void ft_cache_key_make_portable(const ft_jaxpr *j, int opt_level, const ft_plan_options *po,
                                ft_cache_key *key);
/* In-memory cache: a retained ft_jit_code for key, or NULL. */
ft_jit_code *ft_cache_mem_get(const ft_cache_key *key);
/* Records c under key (the cache retains it). */
void ft_cache_mem_put(const ft_cache_key *key, ft_jit_code *c);
/* Drops every in-memory entry (tests). */
void ft_cache_mem_clear(void);
/* Disk cache: the object for key from dir, checked (magic, key, length,
 * XXH3-128 of the bytes). Returns 1 hit (*obj malloc'd), 0 miss, -1 a
 * corrupt or stale entry (removed; the caller rebuilds). */
int ft_cache_disk_get(const char *dir, const ft_cache_key *key, void **obj, size_t *len);
/* Writes the object atomically (temp file + rename). Errors are ignored:
 * the cache is an optimization. */
void ft_cache_disk_put(const char *dir, const ft_cache_key *key, const void *obj, size_t len);
/* The cache directory: opts_dir, else $FT_CACHE_DIR, else
 * $XDG_CACHE_HOME/frankentrace, else $HOME/.cache/frankentrace. Writes into
 * buf (n bytes); false when none or when FT_CACHE=off. */
bool ft_cache_dir(const char *opts_dir, char *buf, size_t n);
/* False when FT_CACHE is "off" or "0": no disk cache at all. */
bool ft_cache_disk_enabled(void);
/* The disk cache's size cap: FT_CACHE_MAX (bytes, or with a K, M or G
 * suffix), else 256 MiB. */
int64_t ft_cache_max_bytes(void);
/* Removes dir's cache files, least recently used (oldest mtime) first, until
 * they add up to at most max_bytes. Run after every ft_cache_disk_put. */
void ft_cache_disk_trim(const char *dir, int64_t max_bytes);

/* ========================================================= exec_program.c */
/* An ft_program (src/lower) compiled for the executor: its steps as tasks
 * (loop and reduction kernels chunked over [lo, hi), GEMM steps chunked by
 * batch, fallback steps as one chunk), dependencies from the buffers each
 * step reads and writes, and a buffer plan over the waves (so concurrent
 * steps never share memory). The program is borrowed (and its kernels must
 * be bound) and outlives this. */
typedef struct ft_prog_exec ft_prog_exec;
typedef struct ft_prog_exec_options {
  bool no_small_waves;    /* as in ft_exec_options (tests: exercise the threads) */
} ft_prog_exec_options;
/* opts may be NULL. */
ft_prog_exec *ft_prog_exec_new(ft_ctx *ctx, const struct ft_program *p, ft_pool *pool,
                               const ft_prog_exec_options *opts);
void ft_prog_exec_free(ft_prog_exec *pe);
/* Runs the program: like ft_program_run (in/out checked against the
 * avals; out written), on the executor. Safe from several threads at once;
 * allocation-free when the program has no fallback step. */
ft_status ft_prog_exec_run(ft_prog_exec *pe, ft_ctx *ctx, const ft_array *const *in,
                           ft_array *const *out, ft_exec_profile *prof);
ft_exec *ft_prog_exec_executor(ft_prog_exec *pe);
/* The input buffer that loop kernel k (one of p's steps) may overwrite
 * with its first store, or -1: the first input k reads only with the
 * store's own index (same size, no broadcast or transpose), a TEMP buffer.
 * The plan runs k in place over it when it dies at k; codegen.c drops
 * `noalias` on that input and the store's buffer, and has the kernel call
 * its body with one pointer for both when they are equal (so the loop
 * still vectorizes). A function of the program alone. */
struct ft_kernel;
int ft_kernel_inplace_input(const struct ft_program *p, const struct ft_kernel *k);
/* The buffer plan's figures (bytes). */
ft_bufplan_stats ft_prog_exec_plan_stats(const ft_prog_exec *pe);

/* ========================================================= exec_profile.c */
struct ft_jit_code;
/* Plans and compiles j as ft_jit does (opt level 2, no compile cache) and
 * binds every kernel, sub-programs' included. *p: free with
 * ft_program_free; *code: ft_jit_code_release (NULL when p has no
 * kernels). Error on ctx. */
ft_status ft_exec_compile(ft_ctx *ctx, const ft_jaxpr *j, struct ft_program **p,
                          struct ft_jit_code **code);
/* What ftc run --profile / --stats do: compiles j as ft_jit does (plan,
 * LLVM, kernels bound; no compile cache), runs it on the executor with a
 * shared pool of ft_pool_default_threads(&ctx->opts) threads: one warm-up
 * call, then `runs` (>= 1) profiled calls. out receives n_out new arrays
 * (the results; free with ft_array_free). *json (may be NULL) receives the
 * last call's Chrome trace, *stats (may be NULL) the per-step table over
 * the profiled calls; both malloc'd, free with free(). */
ft_status ft_exec_profile_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_in, const ft_array *const *in,
                                int n_out, ft_array **out, int runs, char **json, char **stats);

#endif /* FT_LOWER_H */
