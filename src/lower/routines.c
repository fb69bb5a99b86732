/* src/lower/routines.c: routine steps (FT_STEP_ROUTINE), equations the JIT
 * runs natively with a C routine of the library on the program's buffers:
 * no interpreter, no allocation (a fallback step allocates on each call).
 *
 *   pad, concatenate, split, dynamic_slice, dynamic_update_slice, reshape
 *   with `dimensions` (old JAX's transpose-then-reshape)
 *       pure data movement: every element is copied as bytes, so the result
 *       is the interpreter's (interp_layout.c) bit for bit, NaN payloads
 *       included; start indices are clamped as XLA does.
 *   empty2
 *       all-zero bits, as the interpreter writes.
 *   cumsum, cumprod, cummax, cummin on f32/f64 and the integer dtypes
 *       (cummax/cummin also bool): the running fold of docs/determinism.md
 *       §4 written with the interpreter's own operations (interp_reduce.c):
 *       f32 values are quieted on load as its trip through double does, and
 *       integers wrap in 64 bits before the store truncates.
 *   sort, top_k, gather, scatter/-add/-mul/-min/-max, reduce_window_*,
 *   conv_general_dilated, reduce_precision, cumlogsumexp and the
 *   cumulative ops on f16/bf16; the reductions and argmax/argmin the
 *   reduction kernels do not compile (f16/bf16, complex) and dot_general
 *   outside the GEMM steps (integer, f16/bf16, complex, mixed dtypes)
 *       the interpreter's own rule bodies (runtime.h, "rules shared with the
 *       JIT") run on views of the program's buffers, with their scratch
 *       (sort's permutation, a window's offsets) in the program's arena:
 *       the same C as ft_eval, so the same bits, and no allocation.
 *   convert_element_type, bitcast_convert_type the loop kernels do not
 *   compile (to or from complex, bitcasts between widths; f16/bf16
 *   conversions among real dtypes are compiled into the loop kernels)
 *       ft_convert_elem per element, the interpreter's own conversion.
 *   fft
 *       an FFTW_ESTIMATE plan made once at planning under the library's
 *       FFTW planner lock (one plan for all leading batch dims), executed
 *       with FFTW's new-array functions; the planning arrays and every
 *       executed array are 64-byte aligned, as the interpreter's are, so
 *       FFTW runs the interpreter's codelets (a misaligned buffer, a scan
 *       row, goes through an aligned scratch copy). c2r destroys its input,
 *       so it always reads a scratch copy, as the interpreter does.
 *
 * Why routines and not loop kernels: these move whole rows (memcpy) or
 * carry a value along an axis, which the loop kernels' elementwise model
 * does not express; a routine is as fast and needs no LLVM. A step's in[k]
 * is the buffer of operand k of its equation (-1 for a literal, read from
 * the equation), out[k] of result k (-1: dropped). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

static bool dt_plain(ft_dtype dt) {
  switch (dt) {
  case FT_BOOL: case FT_I8: case FT_I16: case FT_I32: case FT_I64:
  case FT_U8: case FT_U16: case FT_U32: case FT_U64: case FT_F32: case FT_F64:
    return true;
  default:
    return false;
  }
}

static bool pad_config(const ft_eqn *e, int rank, int64_t cfg[][3]) {
  const ft_pval *v = ft_eqn_param(e, "padding_config");
  if (!v || v->tag != FT_PV_TUPLE || v->n != rank) return false;
  for (int i = 0; i < rank; i++) {
    int n = 0;
    if (!ft_pv_get_ints(&v->u.items[i], cfg[i], 3, &n) || n != 3 || cfg[i][2] < 0) return false;
  }
  return true;
}

/* A view of var v (its aval) on data. */
static ft_array view_of(const ft_var *v, void *data) {
  ft_array a = {.aval = v->aval, .data = data};
  a.nbytes = (size_t)ft_aval_size(&v->aval) * ft_dtype_size(v->aval.dtype);
  return a;
}

/* Whether the interpreter's rule body accepts e (checked on the avals, as
 * at run time: a routine never meets an operand the rule would refuse). */
static bool rule_accepts(const ft_eqn *e, const char **why) {
  ft_rule_into_fn f = ft_rule_into_for(e->prim);
  if (!f || e->n_in > 16 || e->n_out > 16) return false;
  if (e->prim == FT_P_SCATTER) {
    const ft_pval *uj = ft_eqn_param(e, "update_jaxpr");
    if (uj->tag == FT_PV_JAXPR && uj->u.jaxpr) {
      if (why) *why = "scatter with an update_jaxpr runs it through the interpreter";
      return false;
    }
  }
  if ((e->prim == FT_P_SCATTER_MIN || e->prim == FT_P_SCATTER_MAX) &&
      ft_dtype_is_complex(e->in[0]->aval.dtype))
    return false; /* the interpreter fails on its first update, as it should */
  ft_array iv[16], *ip[16];
  for (int k = 0; k < e->n_in; k++) iv[k] = view_of(e->in[k], NULL), ip[k] = &iv[k];
  return f(NULL, e, ip, NULL, NULL) == FT_OK;
}

/* The permutation of a reshape with `dimensions` (old JAX: transpose the
 * operand by it, then reshape); false when it has none or it is bad. */
static bool reshape_perm(const ft_eqn *e, const ft_aval *a, int64_t *perm) {
  const ft_pval *d = ft_eqn_param(e, "dimensions");
  if (!d || d->tag != FT_PV_TUPLE) return false;
  bool seen[FT_MAX_RANK] = {0};
  if (ft_param_ints(e, "dimensions", perm, FT_MAX_RANK) != a->rank) return false;
  for (int i = 0; i < a->rank; i++) {
    if (perm[i] < 0 || perm[i] >= a->rank || seen[perm[i]]) return false;
    seen[perm[i]] = true;
  }
  return true;
}

/* The rule bodies write every result; sort, top_k, approx_top_k, unstack, Frexp, Nonzero and
 * optimization_barrier have several. */
bool ft_routine_all_outputs(const ft_eqn *e) {
  return e->prim == FT_P_SORT || e->prim == FT_P_TOP_K || e->prim == FT_P_UNSTACK ||
         e->prim == FT_P_OPTIMIZATION_BARRIER || e->prim == FT_P_FREXP ||
         e->prim == FT_P_NONZERO || e->prim == FT_P_APPROX_TOP_K || ft_linalg_writes_all(e);
}

/* cumsum/cumprod/cummax/cummin on the dtypes of the native folds below. */
static bool cum_native(const ft_eqn *e) {
  const ft_aval *a = &e->in[0]->aval;
  int64_t axis = ft_param_int(e, "axis", -1);
  return e->prim != FT_P_CUMLOGSUMEXP && dt_plain(a->dtype) &&
         !(a->dtype == FT_BOOL && (e->prim == FT_P_CUMSUM || e->prim == FT_P_CUMPROD)) &&
         axis >= 0 && axis < a->rank && e->out[0]->aval.dtype == a->dtype;
}

/* Whether e runs as a routine step; else *why (static) says why not. The
 * checks mirror the interpreter's, so a routine never meets an operand it
 * would refuse (those equations stay fallbacks and fail as the interpreter
 * does). */
/* Every result is float0 (JAX's tangent of integer values): nothing to
 * compute, the buffers have no bytes. */
static bool only_float0(const ft_eqn *e) {
  for (int k = 0; k < e->n_out; k++)
    if (e->out[k]->aval.dtype != FT_FLOAT0) return false;
  return e->n_out > 0 && ft_prim_get(e->prim)->family != FT_FAM_CONTROL;
}

bool ft_routine_native(const ft_eqn *e, const char **why) {
  if (e->n_out < 1) return false;
  if (ft_prim_is_collective(e->prim)) return true; /* spmd.c: a shard_map body's rendezvous */
  if (only_float0(e)) return true;
  if (e->prim == FT_P_EMPTY2) return e->n_out == 1;
  if (e->n_in == 0 && (e->prim == FT_P_PLATFORM_INDEX || e->prim == FT_P_EMPTY))
    return rule_accepts(e, why); /* the rule bodies of interp_misc.c */
  const ft_aval *o = &e->out[0]->aval, *a = e->n_in ? &e->in[0]->aval : NULL;
  if (!a) return false;
  switch (e->prim) {
  case FT_P_RESHAPE: { /* only with `dimensions`; the others are views (fusion.c) */
    int64_t perm[FT_MAX_RANK];
    return e->n_in == 1 && reshape_perm(e, a, perm) && a->dtype == o->dtype &&
           ft_aval_size(a) == ft_aval_size(o);
  }
  case FT_P_PAD: {
    int64_t cfg[FT_MAX_RANK][3];
    return e->n_in == 2 && pad_config(e, a->rank, cfg) && e->in[1]->aval.dtype == o->dtype &&
           ft_aval_size(&e->in[1]->aval) == 1 && a->dtype == o->dtype && o->rank == a->rank;
  }
  case FT_P_CONCATENATE: {
    int64_t axis = ft_param_int(e, "dimension", -1), total = 0;
    if (axis < 0 || axis >= o->rank) return false;
    for (int k = 0; k < e->n_in; k++) {
      const ft_aval *x = &e->in[k]->aval;
      if (x->rank != o->rank || x->dtype != o->dtype) return false;
      total += x->dims[axis];
    }
    return total == o->dims[axis];
  }
  case FT_P_SPLIT: {
    int64_t axis = ft_param_int(e, "axis", -1), total = 0;
    if (axis < 0 || axis >= a->rank) return false;
    for (int k = 0; k < e->n_out; k++) {
      const ft_aval *x = &e->out[k]->aval;
      if (x->rank != a->rank || x->dtype != a->dtype) return false;
      total += x->dims[axis];
    }
    return total == a->dims[axis];
  }
  case FT_P_DYNAMIC_SLICE:
  case FT_P_DYNAMIC_UPDATE_SLICE: {
    bool upd = e->prim == FT_P_DYNAMIC_UPDATE_SLICE;
    int first = upd ? 2 : 1;
    const ft_aval *s = upd ? &e->in[1]->aval : o;
    if (e->n_in != first + a->rank || s->rank != a->rank || s->dtype != a->dtype) return false;
    for (int d = 0; d < a->rank; d++)
      if (s->dims[d] > a->dims[d]) return false;
    for (int k = first; k < e->n_in; k++) {
      ft_dtype t = e->in[k]->aval.dtype;
      if (!ft_dtype_is_int(t) || ft_aval_size(&e->in[k]->aval) != 1) return false;
    }
    return true;
  }
  case FT_P_FFT: {
    ft_fft_geom g;
    return ft_fft_geometry(NULL, e, a, o, &g) == FT_OK;
  }
  case FT_P_CONVERT_ELEMENT_TYPE: /* what loop kernels do not compile (a complex side) */
    return e->n_in == 1 && ft_aval_size(a) == ft_aval_size(o);
  case FT_P_BITCAST_CONVERT_TYPE: /* between widths: the bytes, reinterpreted */
    return e->n_in == 1 && (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype) ==
                               (size_t)ft_aval_size(o) * ft_dtype_size(o->dtype);
  default:
    if (ft_prim_get(e->prim)->family == FT_FAM_CUMULATIVE && cum_native(e)) return true;
    return rule_accepts(e, why);
  }
}

/* ---------------------------------------------------- state and scratch */
typedef struct fft_state {
  ft_fft_geom g;
  int rows;             /* rows per chunk (ft_fft_chunk_rows) */
  void *plan;           /* a full chunk's */
  void *plan_rem;       /* the last chunk's when it is shorter (howmany % rows rows), else NULL */
} fft_state;

/* The scratch of a split linalg step: one slot per chunk, together at most
 * this many bytes (or one slot, when a slot is larger): a batch of big
 * eighs then runs in fewer, longer chunks rather than take a slot each. */
#define LINALG_SCRATCH_CAP ((size_t)32 << 20)

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* linalg over its batch members: chunks of about FT_EXEC_CHUNK_WORK units
 * of work (a member's elements times its last dim: n^3 for an n x n
 * factorization), as the executor cuts a kernel. */
static bool linalg_split(const ft_eqn *e, ft_routine_split *sp) {
  int64_t members = ft_linalg_members(e);
  if (members < 2) return false;
  const ft_aval *a = &e->in[0]->aval;
  int64_t last = a->dims[a->rank - 1], per = ft_aval_size(a) / members;
  int64_t grain = ft_exec_grain(members, per * (last > 1 ? last : 1));
  size_t slot = round64(ft_rule_scratch(e));
  if (slot > 0) {
    int64_t cap = (int64_t)(LINALG_SCRATCH_CAP / slot);
    if (cap < 1) cap = 1;
    if ((members + grain - 1) / grain > cap) grain = (members + cap - 1) / cap;
  }
  if (grain >= members) return false;
  *sp = (ft_routine_split){.extent = members, .grain = grain, .slot = slot};
  return true;
}

bool ft_routine_split_of(const ft_eqn *e, ft_routine_split *sp) {
  if (e->prim == FT_P_FFT) {
    ft_fft_geom g;
    if (ft_fft_geometry(NULL, e, &e->in[0]->aval, &e->out[0]->aval, &g) || g.howmany < 2) return false;
    int rows = ft_fft_chunk_rows(&g);
    if (rows >= g.howmany) return false;
    *sp = (ft_routine_split){.extent = g.howmany, .grain = rows};
    return true;
  }
  if (!ft_linalg_rule_into_for(e->prim)) return false;
  return linalg_split(e, sp);
}

int ft_routine_scratch(const ft_eqn *e, size_t bytes[2]) {
  if (e->prim == FT_P_FFT) {
    /* [0]: the input copy (c2r, or a misaligned input); [1]: the result of
     * a misaligned output */
    ft_fft_geom g;
    if (ft_fft_geometry(NULL, e, &e->in[0]->aval, &e->out[0]->aval, &g) || g.howmany == 0) return 0;
    bytes[0] = g.in_bytes, bytes[1] = g.out_bytes;
    return 2;
  }
  if (!ft_rule_into_for(e->prim) || (ft_prim_get(e->prim)->family == FT_FAM_CUMULATIVE && cum_native(e)))
    return 0;
  bytes[0] = ft_rule_scratch(e);
  ft_routine_split sp;
  if (bytes[0] && ft_routine_split_of(e, &sp)) /* a slot per chunk */
    bytes[0] = sp.slot * (size_t)((sp.extent + sp.grain - 1) / sp.grain);
  return bytes[0] ? 1 : 0;
}

bool ft_routine_prepare(const ft_eqn *e, void **state, const char **why) {
  *state = NULL;
  if (ft_prim_is_collective(e->prim)) { /* its site in the body (spmd.c), not a pointer */
    *state = (void *)(intptr_t)ft_spmd_site_new();
    return true;
  }
  if (e->prim != FT_P_FFT) return true;
  fft_state *f = calloc(1, sizeof *f);
  if (!f || ft_fft_geometry(NULL, e, &e->in[0]->aval, &e->out[0]->aval, &f->g)) {
    free(f);
    return false;
  }
  if (f->g.howmany > 0) {
    /* plan on 64-byte aligned arrays (FFTW_ESTIMATE does not touch them):
     * the alignment class of the arena's buffers and of the interpreter's */
    void *in = aligned_alloc(64, (f->g.in_bytes + 63) & ~(size_t)63);
    void *out = aligned_alloc(64, (f->g.out_bytes + 63) & ~(size_t)63);
    f->rows = ft_fft_chunk_rows(&f->g);
    int rem = f->g.howmany % f->rows;
    ft_fft_geom gm = ft_fft_rows_geom(&f->g, f->rows), gr = ft_fft_rows_geom(&f->g, rem);
    f->plan = in && out ? ft_fft_plan(&gm, in, out) : NULL;
    f->plan_rem = f->plan && rem ? ft_fft_plan(&gr, in, out) : NULL;
    free(in), free(out);
    if (!f->plan || (rem && !f->plan_rem)) {
      ft_fft_plan_free(&gm, f->plan);
      if (why) *why = "fft: FFTW could not plan the transform";
      free(f);
      return false;
    }
  }
  *state = f;
  return true;
}

void ft_routine_state_free(const ft_eqn *e, void *state) {
  if (!state || ft_prim_is_collective(e->prim)) return;
  if (e->prim == FT_P_FFT) {
    fft_state *f = state;
    ft_fft_plan_free(&f->g, f->plan);
    ft_fft_plan_free(&f->g, f->plan_rem);
  }
  free(state);
}

/* ------------------------------------------------------------- helpers */
static void c_strides(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) st[d] = s, s *= dims[d];
}

static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* Element 0 of operand k: its buffer, or the literal written into tmp. */
static const void *operand(const ft_eqn *e, const ft_step *s, void *const *kbufs, int k,
                           uint64_t tmp[2]) {
  if (s->in[k] >= 0) return kbufs[s->in[k]];
  const ft_var *v = e->in[k];
  ft_array a = {.aval = v->aval, .nbytes = ft_dtype_size(v->aval.dtype), .data = tmp};
  a.aval.rank = 0;
  ft_dtype dt = v->aval.dtype;
  tmp[0] = tmp[1] = 0;
  if (ft_dtype_is_complex(dt)) ft_set_c128(&a, 0, v->lit.f, v->lit_im);
  else if (ft_dtype_is_float(dt)) ft_set_f64(&a, 0, v->lit.f);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(&a, 0, (int64_t)v->lit.u);
  else ft_set_i64(&a, 0, v->lit.i);
  return tmp;
}

/* A scalar integer index as the interpreter reads it (ft_get_i64). */
static int64_t read_index(ft_dtype dt, const void *p) {
  switch (dt) {
  case FT_BOOL: case FT_U8: return *(const uint8_t *)p;
  case FT_I8: return *(const int8_t *)p;
  case FT_I16: return *(const int16_t *)p;
  case FT_U16: return *(const uint16_t *)p;
  case FT_I32: return *(const int32_t *)p;
  case FT_U32: return *(const uint32_t *)p;
  case FT_I64: return *(const int64_t *)p;
  case FT_U64: return (int64_t) * (const uint64_t *)p;
  default: return 0;
  }
}

/* XLA clamps each start index into [0, operand_dim - slice_dim]. */
static int64_t clamp_start(ft_dtype dt, int64_t v, int64_t dim, int64_t size) {
  int64_t hi = dim - size;
  if (ft_dtype_is_unsigned(dt) && v < 0) v = INT64_MAX; /* huge u64 */
  if (v > hi) v = hi;
  if (v < 0) v = 0;
  return v;
}

/* ---------------------------------------------------------- data movement */
/* Rows of the axis-major blocks: concatenate copies part rows into o's,
 * split the other way. */
static void blocks(const ft_aval *big, char *bigp, int np, const ft_aval *const *parts,
                   char *const *partp, int axis, bool split) {
  size_t es = ft_dtype_size(big->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++) outer *= big->dims[d];
  for (int d = axis + 1; d < big->rank; d++) inner *= big->dims[d];
  size_t row = (size_t)(big->dims[axis] * inner) * es;
  for (int64_t i = 0; i < outer; i++) {
    size_t off = (size_t)i * row;
    for (int k = 0; k < np; k++) {
      size_t blk = (size_t)(parts[k]->dims[axis] * inner) * es;
      if (blk && partp[k]) {
        char *b = bigp + off, *sm = partp[k] + (size_t)i * blk;
        if (split) memcpy(sm, b, blk);
        else memcpy(b, sm, blk);
      }
      off += blk;
    }
  }
}

static void run_concat_split(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  bool split = e->prim == FT_P_SPLIT;
  int np = split ? e->n_out : e->n_in;
  const ft_aval *pa[64];
  char *pp[64];
  const ft_aval **parts = np <= 64 ? pa : malloc(sizeof *parts * (size_t)np);
  char **partp = np <= 64 ? pp : malloc(sizeof *partp * (size_t)np);
  if (!parts || !partp) abort(); /* cannot happen for programs that planned */
  uint64_t tmp[2];
  for (int k = 0; k < np; k++) {
    parts[k] = split ? &e->out[k]->aval : &e->in[k]->aval;
    /* a literal operand of concatenate is a scalar: only rank-0 concatenations have one */
    partp[k] = split ? (s->out[k] >= 0 ? kbufs[s->out[k]] : NULL)
                     : (char *)(uintptr_t)operand(e, s, kbufs, k, tmp);
    if (!split && s->in[k] < 0) partp[k] = NULL; /* rank >= 1: never a literal */
  }
  int axis = (int)ft_param_int(e, split ? "axis" : "dimension", 0);
  if (split) blocks(&e->in[0]->aval, kbufs[s->in[0]], np, parts, partp, axis, true);
  else blocks(&e->out[0]->aval, kbufs[s->out[0]], np, parts, partp, axis, false);
  if (parts != pa) free((void *)parts);
  if (partp != pp) free(partp);
}

/* pad: each output row is filled in runs, as the interpreter's per-element
 * choice (operand element or padding value) but a dimension at a time. */
static void run_pad(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  const ft_aval *a = &e->in[0]->aval, *o = &e->out[0]->aval;
  int r = a->rank;
  int64_t cfg[FT_MAX_RANK][3], ist[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  pad_config(e, r, cfg);
  c_strides(r, a->dims, ist);
  size_t es = ft_dtype_size(o->dtype);
  uint64_t t0[2], t1[2];
  const char *src = operand(e, s, kbufs, 0, t0), *pv = operand(e, s, kbufs, 1, t1);
  char *dst = kbufs[s->out[0]];
  int64_t n = ft_aval_size(o);
  if (n == 0) return;
  if (r == 0) {
    memcpy(dst, src, es);
    return;
  }
  /* innermost dim handled as a row: outer indices give the row's source (or none) */
  int64_t W = o->dims[r - 1], lo = cfg[r - 1][0], q = cfg[r - 1][2] + 1, ad = a->dims[r - 1];
  int64_t rows = n / W, k = 0;
  for (int64_t row = 0; row < rows; row++) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r - 1 && inside; d++) {
      int64_t t = idx[d] - cfg[d][0], qd = cfg[d][2] + 1;
      if (t < 0 || t % qd != 0 || t / qd >= a->dims[d]) inside = false;
      else off += (t / qd) * ist[d];
    }
    char *out = dst + (size_t)k * es;
    for (int64_t x = 0; x < W; x++) {
      int64_t t = x - lo;
      bool in = inside && t >= 0 && t % q == 0 && t / q < ad;
      memcpy(out + (size_t)x * es, in ? src + (size_t)(off + t / q) * es : pv, es);
    }
    k += W;
    next_index(r - 1, o->dims, idx);
  }
}

static void run_dynamic(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  bool upd = e->prim == FT_P_DYNAMIC_UPDATE_SLICE;
  const ft_aval *a = &e->in[0]->aval, *sl = upd ? &e->in[1]->aval : &e->out[0]->aval;
  int r = a->rank, first = upd ? 2 : 1;
  int64_t ast[FT_MAX_RANK], start[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  c_strides(r, a->dims, ast);
  for (int d = 0; d < r; d++) {
    uint64_t tmp[2];
    ft_dtype dt = e->in[first + d]->aval.dtype;
    start[d] = clamp_start(dt, read_index(dt, operand(e, s, kbufs, first + d, tmp)), a->dims[d],
                           sl->dims[d]);
  }
  size_t es = ft_dtype_size(a->dtype);
  uint64_t t0[2];
  const char *big = operand(e, s, kbufs, 0, t0);
  char *out = kbufs[s->out[0]];
  if (upd) memcpy(out, big, (size_t)ft_aval_size(a) * es);
  int64_t n = ft_aval_size(sl);
  if (n == 0) return;
  uint64_t t1[2];
  const char *u = upd ? operand(e, s, kbufs, 1, t1) : NULL;
  /* rows along the last dim are contiguous in both arrays */
  int64_t W = r ? sl->dims[r - 1] : 1, rows = n / W;
  for (int64_t row = 0; row < rows; row++) {
    int64_t off = 0;
    for (int d = 0; d < r; d++) off += (start[d] + idx[d]) * ast[d];
    size_t bytes = (size_t)W * es, at = (size_t)(row * W) * es;
    if (upd) memcpy(out + (size_t)off * es, u + at, bytes);
    else memcpy(out + at, big + (size_t)off * es, bytes);
    if (r) next_index(r - 1, sl->dims, idx);
  }
}

/* reshape with `dimensions`: the operand transposed by them, in row-major
 * order (the interpreter transposes into a copy, then copies its bytes). */
static void run_reshape(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  const ft_aval *a = &e->in[0]->aval;
  int r = a->rank;
  int64_t perm[FT_MAX_RANK], ist[FT_MAX_RANK], tdims[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  reshape_perm(e, a, perm);
  c_strides(r, a->dims, ist);
  for (int d = 0; d < r; d++) tdims[d] = a->dims[perm[d]];
  size_t es = ft_dtype_size(a->dtype);
  uint64_t t0[2];
  const char *src = operand(e, s, kbufs, 0, t0);
  char *dst = kbufs[s->out[0]];
  int64_t n = ft_aval_size(a);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int d = 0; d < r; d++) off += idx[d] * ist[perm[d]];
    memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
    next_index(r, tdims, idx);
  }
}

/* ------------------------------------------------------------- cumulative */
/* The interpreter's fold_max (interp_reduce.c): NaN wins, -0 < +0. */
static double fold_max(double a, double b, bool is_max) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return (signbit(a) == is_max) ? b : a;
  return is_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* A float as it comes back from double: a signaling NaN is quieted (the
 * interpreter reads f32 through ft_get_f64). */
static float quiet32(float x) {
  if (x == x) return x;
  uint32_t u;
  memcpy(&u, &x, 4);
  u |= 0x00400000u;
  memcpy(&x, &u, 4);
  return x;
}

static void cum_f32(ft_prim p, const float *a, float *o, int64_t base, int64_t len, int64_t stride,
                    bool rev) {
  float acc = p == FT_P_CUMSUM ? 0.0f : p == FT_P_CUMPROD ? 1.0f
            : p == FT_P_CUMMIN ? INFINITY : -INFINITY;
  for (int64_t t = 0; t < len; t++) {
    int64_t i = base + (rev ? len - 1 - t : t) * stride;
    float x = quiet32(a[i]), r;
    switch (p) {
    case FT_P_CUMSUM: r = acc + x; break;
    case FT_P_CUMPROD: r = acc * x; break;
    case FT_P_CUMMAX: r = (float)fold_max(acc, x, true); break;
    default: r = (float)fold_max(acc, x, false); break;
    }
    o[i] = acc = r;
  }
}

static void cum_f64(ft_prim p, const double *a, double *o, int64_t base, int64_t len,
                    int64_t stride, bool rev) {
  double fa = p == FT_P_CUMSUM ? 0.0 : p == FT_P_CUMPROD ? 1.0
            : p == FT_P_CUMMIN ? INFINITY : -INFINITY;
  for (int64_t t = 0; t < len; t++) {
    int64_t i = base + (rev ? len - 1 - t : t) * stride;
    double x = a[i];
    switch (p) {
    case FT_P_CUMSUM: fa = fa + x; break;
    case FT_P_CUMPROD: fa = fa * x; break;
    case FT_P_CUMMAX: fa = fold_max(fa, x, true); break;
    default: fa = fold_max(fa, x, false); break;
    }
    o[i] = fa;
  }
}

static void store_int(ft_dtype dt, void *o, int64_t i, uint64_t v) {
  switch (dt) {
  case FT_BOOL: ((uint8_t *)o)[i] = v != 0; break;
  case FT_I8: case FT_U8: ((uint8_t *)o)[i] = (uint8_t)v; break;
  case FT_I16: case FT_U16: ((uint16_t *)o)[i] = (uint16_t)v; break;
  case FT_I32: case FT_U32: ((uint32_t *)o)[i] = (uint32_t)v; break;
  default: ((uint64_t *)o)[i] = v; break;
  }
}

static void cum_int(ft_prim p, ft_dtype dt, const char *a, void *o, int64_t base, int64_t len,
                    int64_t stride, bool rev) {
  size_t es = ft_dtype_size(dt);
  bool sgn = ft_dtype_is_signed(dt);
  uint64_t ia = p == FT_P_CUMPROD ? 1 : 0;
  for (int64_t t = 0; t < len; t++) {
    int64_t i = base + (rev ? len - 1 - t : t) * stride;
    uint64_t x = (uint64_t)read_index(dt, a + (size_t)i * es);
    bool first = t == 0;
    switch (p) {
    case FT_P_CUMSUM: ia += x; break;
    case FT_P_CUMPROD: ia *= x; break;
    case FT_P_CUMMAX:
      if (first || (sgn ? (int64_t)x > (int64_t)ia : x > ia)) ia = x;
      break;
    default:
      if (first || (sgn ? (int64_t)x < (int64_t)ia : x < ia)) ia = x;
      break;
    }
    store_int(dt, o, i, ia);
  }
}

static void run_cumulative(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  const ft_aval *a = &e->in[0]->aval;
  int axis = (int)ft_param_int(e, "axis", -1);
  bool rev = ft_param_bool(e, "reverse", false);
  int64_t st[FT_MAX_RANK];
  c_strides(a->rank, a->dims, st);
  int64_t len = a->dims[axis], stride = st[axis], n = ft_aval_size(a);
  int64_t lines = len ? n / len : 0;
  uint64_t t0[2];
  const char *src = operand(e, s, kbufs, 0, t0);
  void *dst = kbufs[s->out[0]];
  for (int64_t l = 0; l < lines; l++) {
    int64_t base = (l / stride) * stride * len + l % stride;
    if (a->dtype == FT_F32) cum_f32(e->prim, (const float *)src, dst, base, len, stride, rev);
    else if (a->dtype == FT_F64) cum_f64(e->prim, (const double *)src, dst, base, len, stride, rev);
    else cum_int(e->prim, a->dtype, src, dst, base, len, stride, rev);
  }
}

/* ------------------------------------------------------------------ fft */
/* Rows [lo, hi) in the interpreter's chunks (ft_fft_run_rows). A copy goes
 * through the scratch at the rows' own offsets, so chunks running at once
 * touch disjoint bytes. */
static void run_fft(const ft_step *s, void *const *kbufs, int64_t lo, int64_t hi) {
  const fft_state *f = s->rt;
  const ft_fft_geom *g = &f->g;
  char *src = kbufs[s->in[0]], *dst = kbufs[s->out[0]];
  if (g->howmany == 0) { /* nothing to transform: the interpreter's zeros */
    if (g->out_bytes) memset(dst, 0, g->out_bytes);
    return;
  }
  size_t ir = g->in_bytes / (size_t)g->howmany, orow = g->out_bytes / (size_t)g->howmany;
  char *in = src, *out = dst;
  if (g->type == FT_FFT_C2R || !ft_fft_aligned(g, src)) {
    in = kbufs[s->out[1]];
    memcpy(in + ir * (size_t)lo, src + ir * (size_t)lo, ir * (size_t)(hi - lo));
  }
  if (!ft_fft_aligned(g, dst)) out = kbufs[s->out[2]];
  ft_fft_run_rows(g, f->rows, f->plan, f->plan_rem, in, out, lo, hi);
  if (out != dst) memcpy(dst + orow * (size_t)lo, out + orow * (size_t)lo, orow * (size_t)(hi - lo));
}

/* -------------------------------------------------------------- convert */
/* ft_interp_convert's loop: ft_convert_elem per element (the interpreter's
 * conversion, f16/bf16 rounding and complex parts included); a bitcast
 * copies the bytes; float0 is all zeros. */
static void run_convert(const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  uint64_t t[2];
  ft_array a = view_of(e->in[0], (void *)(uintptr_t)operand(e, s, kbufs, 0, t));
  ft_array o = view_of(e->out[0], kbufs[s->out[0]]);
  if (e->prim == FT_P_BITCAST_CONVERT_TYPE) {
    if (o.nbytes) memcpy(o.data, a.data, o.nbytes);
    return;
  }
  if (o.aval.dtype == FT_FLOAT0 || a.aval.dtype == FT_FLOAT0) {
    if (o.nbytes) memset(o.data, 0, o.nbytes);
    return;
  }
  int64_t n = ft_aval_size(&o.aval);
  for (int64_t i = 0; i < n; i++) ft_convert_elem(&a, i, &o, i);
}

/* ------------------------------------------------ the interpreter's bodies */
static ft_status run_rule(ft_ctx *ctx, const ft_eqn *e, const ft_step *s, void *const *kbufs) {
  ft_array iv[16], ov[16], *ip[16], *op[16];
  uint64_t lit[16][2];
  for (int k = 0; k < e->n_in; k++) {
    iv[k] = view_of(e->in[k], (void *)(uintptr_t)operand(e, s, kbufs, k, lit[k]));
    ip[k] = &iv[k];
  }
  for (int k = 0; k < e->n_out; k++) ov[k] = view_of(e->out[k], kbufs[s->out[k]]), op[k] = &ov[k];
  void *scratch = s->n_out > e->n_out ? kbufs[s->out[e->n_out]] : NULL;
  /* checked at planning (rule_accepts), so this fails only as the
   * interpreter's rule would, with its message */
  return ft_rule_into_for(e->prim)(ctx, e, ip, op, scratch);
}

ft_status ft_routine_run_range(ft_ctx *ctx, const ft_program *p, const ft_step *s,
                               void *const *kbufs, int64_t lo, int64_t hi) {
  const ft_eqn *e = &p->j->eqns[s->eqn];
  if (s->grain <= 0 || lo < 0 || hi > s->extent || lo > hi)
    return ft_set_error(ctx, FT_ERR_INTERNAL, "jit: routine step for equation %d: items [%lld, %lld) "
                        "of %lld", s->eqn, (long long)lo, (long long)hi, (long long)s->extent);
  if (lo == hi) return FT_OK;
  if (e->prim == FT_P_FFT) {
    run_fft(s, kbufs, lo, hi);
    return FT_OK;
  }
  /* linalg: the rule body on members [lo, hi), with the chunk's own
   * scratch slot */
  ft_array iv[16], ov[16], *ip[16], *op[16];
  for (int k = 0; k < e->n_in; k++) iv[k] = view_of(e->in[k], kbufs[s->in[k]]), ip[k] = &iv[k];
  for (int k = 0; k < e->n_out; k++) ov[k] = view_of(e->out[k], kbufs[s->out[k]]), op[k] = &ov[k];
  char *scratch = s->n_out > e->n_out ? (char *)kbufs[s->out[e->n_out]] + s->slot * (size_t)(lo / s->grain)
                                      : NULL;
  ft_status st = ft_linalg_run_members(ctx, e, ip, op, scratch, lo, hi);
  if (st) ft_error_prefix(ctx, "jit: routine step for equation %d", s->eqn);
  return st;
}

ft_status ft_routine_run(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs) {
  const ft_eqn *e = &p->j->eqns[s->eqn];
  ft_status st = FT_OK;
  if (ft_prim_is_collective(e->prim)) return ft_spmd_jit_collective(ctx, p, s, kbufs);
  if (only_float0(e)) return FT_OK;
  switch (e->prim) {
  case FT_P_PAD: run_pad(e, s, kbufs); break;
  case FT_P_CONCATENATE: case FT_P_SPLIT: run_concat_split(e, s, kbufs); break;
  case FT_P_DYNAMIC_SLICE: case FT_P_DYNAMIC_UPDATE_SLICE: run_dynamic(e, s, kbufs); break;
  case FT_P_RESHAPE: run_reshape(e, s, kbufs); break;
  case FT_P_EMPTY2: /* all-zero bits: +0, False (interp_layout.c) */
    memset(kbufs[s->out[0]], 0, ft_dtype_size(e->out[0]->aval.dtype) *
                                    (size_t)ft_aval_size(&e->out[0]->aval));
    break;
  case FT_P_FFT: run_fft(s, kbufs, 0, ((const fft_state *)s->rt)->g.howmany); break;
  case FT_P_CONVERT_ELEMENT_TYPE: case FT_P_BITCAST_CONVERT_TYPE: run_convert(e, s, kbufs); break;
  default:
    if (ft_prim_get(e->prim)->family == FT_FAM_CUMULATIVE && cum_native(e)) run_cumulative(e, s, kbufs);
    else st = run_rule(ctx, e, s, kbufs);
    break;
  }
  if (st) ft_error_prefix(ctx, "jit: routine step for equation %d", s->eqn);
  return st;
}
