/* src/lower/exec_program.c: an ft_program run by the
 * dependency-wave executor. Each step becomes a task: loop and reduction
 * kernels are chunked over their [lo, hi) range (a grain from the kernel's
 * shape), GEMM steps over (batch element, row block): ft_gemm computes
 * every product in row blocks fixed by its shape (interp_linalg.c), so a
 * chunk makes exactly one of the OpenBLAS calls the interpreter makes
 * (splitting a product any other way changes OpenBLAS's bits,
 * MACHINE-FACTS.md). A GEMM whose right operand needs packing gets a
 * second task before it, which packs that operand in row chunks. Fallback
 * and control steps are one chunk run by ft_program_run_step (program.c)
 * on this thread's own context. Dependencies come
 * from the buffers the steps read and write (read-after-write,
 * write-after-read, write-after-write), and intermediates get offsets from
 * a buffer plan whose lifetimes are counted in waves, so two steps that may
 * run at once never share memory. */
#include <string.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "lower/lower.h"
#include "runtime/exec.h"

typedef struct step_task {
  struct ft_prog_exec *pe;
  int step;
} step_task;

struct ft_prog_exec {
  const ft_program *p;
  ft_exec *x;
  step_task *st;
  size_t *offset;          /* per buffer: the planned arena offset (TEMP) */
  ft_bufplan_stats plan;
};

/* -------------------------------------------------------------- the tasks */
static ft_status kernel_task(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  step_task *t = u;
  const ft_step *s = &t->pe->p->steps[t->step];
  s->fn((void *const *)ft_exec_call_scratch(c), lo, hi);
  return FT_OK;
}

/* Packs rows [r0, r1) of the operand enumerated as [B*R][Cn] (row q is row
 * q % R of batch element q / R), as src/lower's planner enumerates it.
 * A transposed operand has ocol[] strided: copying it row by row touches
 * one cache line per element (a 512x512 f32 transpose took 530 us), so
 * rows go in tiles of PACK_TILE, column by column within a tile: the tile's
 * reads of one column share cache lines, and its PACK_TILE destination
 * rows stay in L1. A copy: the packed values do not depend on the order. */
enum { PACK_TILE = 16 };

void ft_gemm_pack_rows(bool f64, const void *src, void *dst, int64_t r0, int64_t r1, int64_t R,
                       int64_t Cn, const int64_t *ob, const int64_t *orow, const int64_t *ocol) {
  int64_t base[PACK_TILE];
  for (int64_t t0 = r0; t0 < r1; t0 += PACK_TILE) {
    int nt = (int)(r1 - t0 < PACK_TILE ? r1 - t0 : PACK_TILE);
    for (int i = 0; i < nt; i++) base[i] = ob[(t0 + i) / R] + orow[(t0 + i) % R];
    if (f64) {
      const double *s = src;
      double *d = (double *)dst + t0 * Cn;
      for (int64_t c = 0; c < Cn; c++)
        for (int i = 0; i < nt; i++) d[i * Cn + c] = s[base[i] + ocol[c]];
    } else {
      const float *s = src;
      float *d = (float *)dst + t0 * Cn;
      int64_t c0 = 0;
#if defined(__SSE2__)
      /* A transposed operand: the tile's rows are consecutive elements of
       * the source (base[i] = base[0] + i), so each column of the tile is
       * one contiguous read; 4x4 blocks go through registers (four loads,
       * the transpose, four stores) instead of element by element. */
      bool consecutive = nt == PACK_TILE;
      for (int i = 1; consecutive && i < nt; i++) consecutive = base[i] == base[0] + i;
      if (consecutive) {
        for (; c0 + 4 <= Cn; c0 += 4)
          for (int i = 0; i < PACK_TILE; i += 4) {
            __m128 v0 = _mm_loadu_ps(s + base[i] + ocol[c0]);
            __m128 v1 = _mm_loadu_ps(s + base[i] + ocol[c0 + 1]);
            __m128 v2 = _mm_loadu_ps(s + base[i] + ocol[c0 + 2]);
            __m128 v3 = _mm_loadu_ps(s + base[i] + ocol[c0 + 3]);
            _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
            _mm_storeu_ps(d + (int64_t)i * Cn + c0, v0);
            _mm_storeu_ps(d + (int64_t)(i + 1) * Cn + c0, v1);
            _mm_storeu_ps(d + (int64_t)(i + 2) * Cn + c0, v2);
            _mm_storeu_ps(d + (int64_t)(i + 3) * Cn + c0, v3);
          }
      }
#endif
      for (int64_t c = c0; c < Cn; c++)
        for (int i = 0; i < nt; i++) d[i * Cn + c] = s[base[i] + ocol[c]];
    }
  }
}

/* Chunk q of a GEMM is row block q % blocks of batch element q / blocks:
 * it packs its own rows of the left operand (when that needs packing) and
 * makes that block's one OpenBLAS call. */
static ft_status gemm_task(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  step_task *t = u;
  const ft_step *s = &t->pe->p->steps[t->step];
  const ft_gemm_plan *g = s->gemm;
  void *const *kb = ft_exec_call_scratch(c);
  const void *A = kb[s->in[0]], *Bm = kb[s->in[1]];
  void *Cm = kb[s->out[0]];
  int64_t M = g->M, N = g->N, K = g->K;
  int64_t nblk = ft_gemm_blocks(M, N, K), rows = ft_gemm_block_rows(M, N, K);
  for (int64_t q = lo; q < hi; q++) {
    int64_t b = q / nblk, blk = q % nblk;
    if (!g->lhs_direct) {
      int64_t r0 = b * M + blk * rows, r1 = r0 + (M - blk * rows < rows ? M - blk * rows : rows);
      ft_gemm_pack_rows(g->f64, A, kb[g->pack_a], r0, r1, M, K, g->lb, g->lm, g->lk);
    }
    const void *a = g->lhs_direct ? A : kb[g->pack_a];
    const void *bb = g->rhs_direct ? Bm : kb[g->pack_b];
    bool ok = g->f64 ? ft_gemm_f64_block(M, N, K, (const double *)a + b * M * K, K,
                                         (const double *)bb + b * K * N, N,
                                         (double *)Cm + b * M * N, N, blk)
                     : ft_gemm_f32_block(M, N, K, (const float *)a + b * M * K, K,
                                         (const float *)bb + b * K * N, N,
                                         (float *)Cm + b * M * N, N, blk);
    if (!ok) return ft_exec_fail(c, FT_ERR_NOMEM, "%s", FT_BLAS_NOMEM_MSG);
  }
  return FT_OK;
}

/* The right operand of a GEMM packed as [B*K][N], rows [lo, hi): a task of
 * its own, a wave before the GEMM's blocks, which all read it. */
static ft_status pack_b_task(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  step_task *t = u;
  const ft_step *s = &t->pe->p->steps[t->step];
  const ft_gemm_plan *g = s->gemm;
  void *const *kb = ft_exec_call_scratch(c);
  ft_gemm_pack_rows(g->f64, kb[s->in[1]], kb[g->pack_b], lo, hi, g->K, g->N, g->rb, g->rk, g->rn);
  return FT_OK;
}

/* A routine split over its batch (ft_routine_split_of): items [lo, hi),
 * each computed as the whole step computes it, so any thread may run any
 * chunk. */
static ft_status routine_chunk_task(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  step_task *t = u;
  const ft_program *p = t->pe->p;
  ft_ctx *tctx = ft_exec_call_ctx(c);
  ft_status st = ft_routine_run_range(tctx, p, &p->steps[t->step],
                                      (void *const *)ft_exec_call_scratch(c), lo, hi);
  if (st != FT_OK) {
    ft_exec_fail(c, st, "%s", ft_ctx_error(tctx));
    ft_ctx_clear_error(tctx);
  }
  return st;
}

static ft_status fallback_task(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  step_task *t = u;
  const ft_program *p = t->pe->p;
  ft_ctx *tctx = ft_exec_call_ctx(c);
  ft_status st = ft_program_run_step(tctx, p, &p->steps[t->step],
                                     (void *const *)ft_exec_call_scratch(c));
  if (st != FT_OK) {
    ft_exec_fail(c, st, "%s", ft_ctx_error(tctx));
    ft_ctx_clear_error(tctx);
  }
  return st;
}

/* ----------------------------------------------------------- the planning */
static int64_t shape_elems(const ft_kernel *k, int from) {
  int64_t n = 1;
  for (int d = from; d < k->rank; d++) n *= k->dims[d];
  return n;
}

/* The task of step i: function, extent, grain (from the shape alone). */
static void step_shape(const ft_program *p, const ft_step *s, ft_exec_task *t) {
  switch (s->kind) {
  case FT_STEP_KERNEL: {
    const ft_kernel *k = &p->kernels[s->kernel];
    int64_t per = k->kind != FT_KER_LOOP ? (k->rcount > 0 ? k->rcount : 1) : shape_elems(k, 1);
    t->fn = kernel_task;
    t->extent = s->extent > 0 ? s->extent : 0;
    t->grain = ft_exec_grain(t->extent, per);
    break;
  }
  case FT_STEP_GEMM:
    t->fn = gemm_task;
    t->extent = s->gemm->B * ft_gemm_blocks(s->gemm->M, s->gemm->N, s->gemm->K);
    t->grain = 1;
    break;
  case FT_STEP_ROUTINE: /* a native routine (src/lower/routines.c): one chunk, or its batch in
                          chunks (linalg members, fft rows; ft_routine_split_of) */
    if (s->grain > 0) {
      t->fn = routine_chunk_task;
      t->extent = s->extent;
      t->grain = s->grain;
      break;
    }
    /* fall through */
  case FT_STEP_FALLBACK:
  case FT_STEP_CONTROL: /* one task: the sub-programs run inside it (src/lower/control.c) */
    t->fn = fallback_task;
    t->extent = 1;
    t->grain = 1;
    break;
  }
}

static void step_name(const ft_program *p, const ft_step *s, char *buf, size_t n) {
  /* a copy kernel (a view materialized for a consumer) covers no equation */
  bool has_eqn = s->eqn >= 0 && s->eqn < p->j->n_eqn && s->n_eqns != 0;
  const char *prim = has_eqn || s->kind != FT_STEP_KERNEL ? ft_prim_get(p->j->eqns[s->eqn].prim)->name
                                                          : "copy";
  switch (s->kind) {
  case FT_STEP_KERNEL:
    snprintf(buf, n, "%s %s#%d%s", p->kernels[s->kernel].name, prim, s->eqn,
             s->n_eqns > 1 ? " (fused)" : "");
    break;
  case FT_STEP_GEMM: snprintf(buf, n, "gemm %s#%d", prim, s->eqn); break;
  case FT_STEP_FALLBACK: snprintf(buf, n, "fallback %s#%d", prim, s->eqn); break;
  case FT_STEP_CONTROL: snprintf(buf, n, "control %s#%d", prim, s->eqn); break;
  case FT_STEP_ROUTINE: snprintf(buf, n, "routine %s#%d", prim, s->eqn); break;
  }
}

/* Dependencies by buffer hazards, in program order (steps only depend on
 * earlier steps). deps[i] gets at most n_in + n_out + readers entries. */
typedef struct hazards {
  int *last_writer;        /* per buffer */
  int **readers;           /* per buffer: readers since the last write */
  int *n_readers, *cap_readers;
} hazards;

static bool add_dep(int **deps, int *nd, int *cap, int d) {
  for (int k = 0; k < *nd; k++)
    if ((*deps)[k] == d) return true;
  if (*nd == *cap) {
    int nc = *cap ? *cap * 2 : 8;
    int *nw = realloc(*deps, sizeof **deps * (size_t)nc);
    if (!nw) return false;
    *deps = nw, *cap = nc;
  }
  (*deps)[(*nd)++] = d;
  return true;
}

static bool step_deps(const ft_step *s, int i, hazards *h, int **deps, int *nd) {
  int cap = 0;
  *deps = NULL, *nd = 0;
  for (int k = 0; k < s->n_in; k++) {
    int b = s->in[k];
    if (b >= 0 && h->last_writer[b] >= 0 && !add_dep(deps, nd, &cap, h->last_writer[b])) return false;
  }
  for (int k = 0; k < s->n_out; k++) {
    int b = s->out[k];
    if (b < 0) continue;
    if (h->last_writer[b] >= 0 && !add_dep(deps, nd, &cap, h->last_writer[b])) return false;
    for (int r = 0; r < h->n_readers[b]; r++)
      if (h->readers[b][r] != i && !add_dep(deps, nd, &cap, h->readers[b][r])) return false;
  }
  for (int k = 0; k < s->n_in; k++) {
    int b = s->in[k];
    if (b < 0) continue;
    if (h->n_readers[b] == h->cap_readers[b]) {
      int nc = h->cap_readers[b] ? h->cap_readers[b] * 2 : 4;
      int *nw = realloc(h->readers[b], sizeof *nw * (size_t)nc);
      if (!nw) return false;
      h->readers[b] = nw, h->cap_readers[b] = nc;
    }
    h->readers[b][h->n_readers[b]++] = i;
  }
  for (int k = 0; k < s->n_out; k++)
    if (s->out[k] >= 0) h->last_writer[s->out[k]] = i, h->n_readers[s->out[k]] = 0;
  return true;
}

/* Whether loop kernel k may write its first store over its input buffer b:
 * b is TEMP, of the store's size, and every load of b is the identity
 * access of the loop nest with the store's element size (so each element
 * is loaded, in the same iteration, before the store that overwrites it).
 * codegen.c drops `noalias` on such pairs, so passing one buffer for both
 * keeps the promises the kernel's IR makes. A function of the program
 * alone: codegen and the buffer plan must agree. */
static bool kernel_inplace_ok(const ft_program *p, const ft_kernel *k, int b) {
  if (k->kind != FT_KER_LOOP || k->n_stores < 1 || b < 0 || b >= p->n_bufs) return false;
  int ob = k->stores[0].buf; /* ids may be another program's (hoisted kernels): check bounds */
  if (ob == b || ob < 0 || ob >= p->n_bufs || p->bufs[b].kind != FT_BUF_TEMP ||
      p->bufs[ob].kind != FT_BUF_TEMP ||
      p->bufs[b].nbytes != p->bufs[ob].nbytes)
    return false;
  size_t es = ft_dtype_size(k->nodes[k->stores[0].node].dt);
  int64_t cst[FT_MAX_RANK], m = 1;
  for (int d = k->rank - 1; d >= 0; d--) cst[d] = m, m *= k->dims[d];
  bool loaded = false;
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *n = &k->nodes[i];
    if (n->kind != FT_KN_LOAD || n->acc.buf != b) continue;
    if (n->acc.base != 0 || ft_dtype_size(n->acc.dt) != es) return false;
    for (int d = 0; d < k->rank; d++)
      if (n->acc.st[d] != cst[d]) return false;
    loaded = true;
  }
  for (int i = 1; i < k->n_stores; i++)
    if (k->stores[i].buf == b) return false;
  return loaded;
}

int ft_kernel_inplace_input(const ft_program *p, const ft_kernel *k) {
  if (k->kind != FT_KER_LOOP || k->n_stores < 1) return -1;
  int b = -1;
  for (int i = 0; i < k->n_nodes && b < 0; i++)
    if (k->nodes[i].kind == FT_KN_LOAD && kernel_inplace_ok(p, k, k->nodes[i].acc.buf))
      b = k->nodes[i].acc.buf;
  /* Only p's own steps run on the executor. Kernels hoisted from control
   * sub-programs (fusion.c) index their own program's buffers and run
   * through ft_program_run, which never aliases. (Checked last: it scans
   * the steps, and few kernels get this far.) */
  bool own = false;
  for (int i = 0; b >= 0 && i < p->n_steps && !own; i++)
    own = p->steps[i].kind == FT_STEP_KERNEL && &p->kernels[p->steps[i].kernel] == k;
  return own ? b : -1;
}

/* Lifetimes in waves and the buffer plan of the TEMP buffers. wave[] is by
 * task: steps first, then the packing tasks; pack_task[i] is step i's
 * packing task or -1. */
static ft_status plan_buffers(ft_ctx *ctx, ft_prog_exec *pe, const int *wave,
                              const int *pack_task) {
  const ft_program *p = pe->p;
  int nb = p->n_bufs;
  int *map = malloc(sizeof *map * ((size_t)nb + 1));     /* buffer -> plan index */
  ft_bufplan_buf *pb = calloc((size_t)nb + 1, sizeof *pb);
  int *last_reader = malloc(sizeof *last_reader * ((size_t)nb + 1));
  int *readers_at_last = calloc((size_t)nb + 1, sizeof *readers_at_last);
  if (!map || !pb || !last_reader || !readers_at_last) {
    free(map), free(pb), free(last_reader), free(readers_at_last);
    return ft_set_error(ctx, FT_ERR_NOMEM, "executor: out of memory planning buffers");
  }
  int n = 0;
  for (int b = 0; b < nb; b++) {
    map[b] = -1, last_reader[b] = -1;
    if (p->bufs[b].kind != FT_BUF_TEMP) continue;
    map[b] = n;
    pb[n++] = (ft_bufplan_buf){.size = p->bufs[b].nbytes, .align = 64, .first = -1, .last = -1,
                               .inplace_of = -1};
  }
#define TOUCH(b, w)                                                              \
  do {                                                                           \
    ft_bufplan_buf *q_ = &pb[map[b]];                                            \
    if (q_->first < 0 || (w) < q_->first) q_->first = (w);                       \
    if ((w) > q_->last) q_->last = (w);                                          \
  } while (0)
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    int w = wave[i];
    for (int k = 0; k < s->n_in; k++)
      if (s->in[k] >= 0 && map[s->in[k]] >= 0) TOUCH(s->in[k], w);
    for (int k = 0; k < s->n_out; k++)
      if (s->out[k] >= 0 && map[s->out[k]] >= 0) TOUCH(s->out[k], w);
    if (s->kind == FT_STEP_GEMM) {
      if (s->gemm->pack_a >= 0) TOUCH(s->gemm->pack_a, w);
      if (s->gemm->pack_b >= 0) TOUCH(s->gemm->pack_b, w);
    }
    if (pack_task[i] >= 0) { /* the packing wave reads in[1] and writes pack_b */
      int pw = wave[pack_task[i]];
      if (s->in[1] >= 0 && map[s->in[1]] >= 0) TOUCH(s->in[1], pw);
      if (s->gemm->pack_b >= 0) TOUCH(s->gemm->pack_b, pw);
    }
  }
#undef TOUCH
  for (int q = 0; q < n; q++)
    if (pb[q].first < 0) pb[q].first = pb[q].last = 0;
  /* in-place offers: step i is the only reader of b in b's last wave */
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    for (int k = 0; k < s->n_in; k++) {
      int b = s->in[k];
      if (b >= 0 && map[b] >= 0 && pb[map[b]].last == wave[i]) {
        if (last_reader[b] != i) readers_at_last[b]++;
        last_reader[b] = i;
      }
    }
  }
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    if (s->kind != FT_STEP_KERNEL) continue;
    const ft_kernel *kr = &p->kernels[s->kernel];
    int ob = kr->kind == FT_KER_LOOP && kr->n_stores > 0 ? kr->stores[0].buf : -1;
    if (ob < 0 || map[ob] < 0) continue;
    int b = ft_kernel_inplace_input(p, kr); /* the one input codegen made aliasable */
    if (b >= 0 && map[b] >= 0 && last_reader[b] == i && readers_at_last[b] == 1)
      pb[map[ob]].inplace_of = map[b];
  }
  ft_status st = ft_bufplan_solve(ctx, n, pb, &pe->plan);
  if (st == FT_OK) {
    char why[256];
    FT_ASSERT(ft_bufplan_validate(n, pb, pe->plan.peak, why, sizeof why));
    for (int b = 0; b < nb; b++) pe->offset[b] = map[b] >= 0 ? pb[map[b]].offset : 0;
  }
  free(map), free(pb), free(last_reader), free(readers_at_last);
  return st;
}

/* Whether step s gets a packing task for its right operand. */
static bool has_pack_task(const ft_step *s) {
  return s->kind == FT_STEP_GEMM && !s->gemm->rhs_direct && s->gemm->pack_b >= 0;
}

ft_prog_exec *ft_prog_exec_new(ft_ctx *ctx, const ft_program *p, ft_pool *pool,
                               const ft_prog_exec_options *opts) {
  ft_prog_exec *pe = calloc(1, sizeof *pe);
  int n = p->n_steps, nt = n;
  for (int i = 0; i < n; i++) nt += has_pack_task(&p->steps[i]);
  ft_exec_task *tasks = calloc((size_t)nt + 1, sizeof *tasks);
  char (*names)[96] = calloc((size_t)nt + 1, sizeof *names);
  int *wave = calloc((size_t)nt + 1, sizeof *wave);
  int *pack_task = malloc(sizeof *pack_task * ((size_t)n + 1));
  hazards h = {0};
  h.last_writer = malloc(sizeof(int) * ((size_t)p->n_bufs + 1));
  h.readers = calloc((size_t)p->n_bufs + 1, sizeof *h.readers);
  h.n_readers = calloc((size_t)p->n_bufs + 1, sizeof(int));
  h.cap_readers = calloc((size_t)p->n_bufs + 1, sizeof(int));
  if (!pe || !tasks || !names || !wave || !pack_task || !h.last_writer || !h.readers ||
      !h.n_readers || !h.cap_readers)
    goto nomem;
  pe->p = p;
  pe->st = calloc((size_t)nt + 1, sizeof *pe->st);
  pe->offset = calloc((size_t)p->n_bufs + 1, sizeof *pe->offset);
  if (!pe->st || !pe->offset) goto nomem;
  for (int b = 0; b < p->n_bufs; b++) h.last_writer[b] = -1;
  int next_pack = n, last_spmd = -1;
  for (int i = 0; i < n; i++) {
    const ft_step *s = &p->steps[i];
    pack_task[i] = -1;
    if (s->kind == FT_STEP_KERNEL && !s->fn && s->extent > 0) {
      ft_set_error(ctx, FT_ERR_INTERNAL, "executor: step %d: kernel not bound", i);
      goto fail;
    }
    int nd;
    int *deps;
    if (!step_deps(s, i, &h, &deps, &nd)) goto nomem;
    /* Steps holding a shard_map run in program order (a chain of edges):
     * over MPI every rank then enters its shard_maps, and meets their
     * exchanges, in the same order whatever its thread count (spmd.c). */
    if ((s->kind == FT_STEP_CONTROL || s->kind == FT_STEP_FALLBACK) && s->eqn >= 0 && s->eqn < p->j->n_eqn &&
        ft_spmd_eqn_holds_shard_map(&p->j->eqns[s->eqn])) {
      if (last_spmd >= 0) {
        int *nw = realloc(deps, sizeof *nw * ((size_t)nd + 1));
        if (!nw) {
          free(deps);
          goto nomem;
        }
        deps = nw;
        bool dup = false;
        for (int k = 0; k < nd; k++) dup = dup || deps[k] == last_spmd;
        if (!dup) deps[nd++] = last_spmd;
      }
      last_spmd = i;
    }
    pe->st[i] = (step_task){pe, i};
    step_name(p, s, names[i], sizeof names[i]);
    tasks[i] = (ft_exec_task){.name = names[i], .user = &pe->st[i], .n_deps = nd, .deps = deps};
    step_shape(p, s, &tasks[i]);
    if (has_pack_task(s)) {
      /* the packing task waits for what the step waits for; the step for it */
      const ft_gemm_plan *g = s->gemm;
      int q = pack_task[i] = next_pack++;
      int *pdeps = malloc(sizeof *pdeps * ((size_t)nd + 1)), cap = nd;
      if (!pdeps) goto nomem; /* deps is freed with tasks[i] */
      if (nd) memcpy(pdeps, deps, sizeof *pdeps * (size_t)nd);
      pe->st[q] = (step_task){pe, i};
      char of[sizeof names[i]]; /* a copy: gcc -O0 cannot tell names[q] from names[i] */
      memcpy(of, names[i], sizeof of);
      snprintf(names[q], sizeof names[q], "pack rhs of %.80s", of);
      tasks[q] = (ft_exec_task){.name = names[q], .fn = pack_b_task, .user = &pe->st[q],
                                .n_deps = nd, .extent = g->B * g->K,
                                .grain = ft_exec_grain(g->B * g->K, g->N),
                                .cost = (uint64_t)(g->B * g->K * g->N) + 1};
      if (s->in[1] >= 0) tasks[q].bytes = p->bufs[s->in[1]].nbytes;
      tasks[q].bytes += p->bufs[g->pack_b].nbytes;
      for (int k = 0; k < nd; k++)
        if (wave[deps[k]] + 1 > wave[q]) wave[q] = wave[deps[k]] + 1;
      tasks[q].deps = pdeps;
      bool added = add_dep(&deps, &nd, &cap, q);
      tasks[i].deps = deps, tasks[i].n_deps = nd;
      if (!added) goto nomem;
    }
    for (int k = 0; k < nd; k++)
      if (wave[deps[k]] + 1 > wave[i]) wave[i] = wave[deps[k]] + 1;
    for (int k = 0; k < s->n_in; k++)
      if (s->in[k] >= 0) tasks[i].bytes += p->bufs[s->in[k]].nbytes;
    if (s->kind == FT_STEP_KERNEL) { /* elements computed; other steps: unknown */
      const ft_kernel *kr = &p->kernels[s->kernel];
      tasks[i].cost = (uint64_t)s->extent *
                      (uint64_t)(kr->kind != FT_KER_LOOP ? (kr->rcount > 0 ? kr->rcount : 1)
                                                           : shape_elems(kr, 1));
      if (!tasks[i].cost) tasks[i].cost = 1;
    } else if (s->kind == FT_STEP_GEMM) {
      const ft_gemm_plan *g = s->gemm;
      tasks[i].cost = (uint64_t)(g->B * g->M * g->N * (g->K ? g->K : 1)) + 1;
    }
    for (int k = 0; k < s->n_out; k++)
      if (s->out[k] >= 0) tasks[i].bytes += p->bufs[s->out[k]].nbytes;
  }
  if (plan_buffers(ctx, pe, wave, pack_task)) goto fail;
  /* Steps run by src/lower (fallback, control) report errors on a context
   * of their own thread. Control steps keep their sub-programs' arenas in
   * the program (control.c): calls of such a program take turns (one frame). */
  bool other = false, control = false;
  for (int i = 0; i < n; i++) {
    other |= p->steps[i].kind != FT_STEP_KERNEL && p->steps[i].kind != FT_STEP_GEMM;
    control |= p->steps[i].kind == FT_STEP_CONTROL;
  }
  ft_exec_options xo = {.pool = pool, .arena_bytes = pe->plan.peak,
                        .scratch_bytes = sizeof(void *) * ((size_t)p->n_bufs + 1),
                        .frame_ctx = other, .max_frames = control ? 1 : 0,
                        .no_small_waves = opts && opts->no_small_waves};
  if (!(pe->x = ft_exec_new(ctx, nt, tasks, &xo))) goto fail;
  for (int i = 0; i < nt; i++) FT_ASSERT(ft_exec_task_wave(pe->x, i) == wave[i]);
  goto done;
nomem:
  ft_set_error(ctx, FT_ERR_NOMEM, "executor: out of memory");
fail:
  ft_prog_exec_free(pe);
  pe = NULL;
done:
  if (tasks)
    for (int i = 0; i < nt; i++) free((void *)tasks[i].deps);
  if (h.readers)
    for (int b = 0; b < p->n_bufs; b++) free(h.readers[b]);
  free(h.last_writer), free(h.readers), free(h.n_readers), free(h.cap_readers);
  free(tasks), free(names), free(wave), free(pack_task);
  return pe;
}

void ft_prog_exec_free(ft_prog_exec *pe) {
  if (!pe) return;
  ft_exec_free(pe->x);
  free(pe->st);
  free(pe->offset);
  free(pe);
}

ft_exec *ft_prog_exec_executor(ft_prog_exec *pe) { return pe->x; }
ft_bufplan_stats ft_prog_exec_plan_stats(const ft_prog_exec *pe) { return pe->plan; }

/* ---------------------------------------------------------------- a call */
static bool arg_ok(ft_ctx *ctx, const char *what, int i, const ft_aval *want, const ft_array *a) {
  if (a && ft_aval_eq(want, &a->aval)) return true;
  char s1[128], s2[128];
  ft_set_error(ctx, a && a->aval.dtype != want->dtype ? FT_ERR_TYPE : FT_ERR_SHAPE,
               "call: %s %d: expected %s, got %s", what, i, ft_aval_str(want, s1, sizeof s1),
               a ? ft_aval_str(&a->aval, s2, sizeof s2) : "NULL");
  return false;
}

/* A literal output's value into element 0 of dst (as the interpreter does). */
static void put_literal(const ft_var *v, void *dst) {
  ft_array a = {.aval = v->aval, .nbytes = ft_dtype_size(v->aval.dtype), .data = dst};
  ft_dtype dt = v->aval.dtype;
  if (ft_dtype_is_complex(dt)) ft_set_c128(&a, 0, v->lit.f, v->lit_im);
  else if (ft_dtype_is_float(dt)) ft_set_f64(&a, 0, v->lit.f);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(&a, 0, (int64_t)v->lit.u);
  else ft_set_i64(&a, 0, v->lit.i);
}

ft_status ft_prog_exec_run(ft_prog_exec *pe, ft_ctx *ctx, const ft_array *const *in,
                           ft_array *const *out, ft_exec_profile *prof) {
  const ft_program *p = pe->p;
  const ft_jaxpr *j = p->j;
  int nc = j->const_data ? 0 : j->n_const;
  for (int k = 0; k < p->n_args; k++) {
    const ft_var *v = k < nc ? j->constvars[k] : j->invars[k - nc];
    if (!arg_ok(ctx, k < nc ? "constant input" : "input", k < nc ? k : k - nc, &v->aval, in[k]))
      return ft_ctx_status(ctx);
  }
  for (int k = 0; k < p->n_out; k++)
    if (!arg_ok(ctx, "output", k, &j->outvars[k]->aval, out[k])) return ft_ctx_status(ctx);
  ft_exec_frame *f = ft_exec_acquire(pe->x, ctx);
  if (!f) return ft_ctx_status(ctx);
  void **kb = ft_exec_frame_scratch(f);
  char *arena = ft_exec_frame_arena(f);
  for (int b = 0; b < p->n_bufs; b++) {
    const ft_pbuf *pb = &p->bufs[b];
    switch (pb->kind) {
    case FT_BUF_INPUT: kb[b] = in[pb->index]->data; break;
    case FT_BUF_CONST: kb[b] = p->consts[pb->index]; break;
    case FT_BUF_TEMP: kb[b] = arena + pe->offset[b]; break;
    case FT_BUF_OUTPUT: kb[b] = out[pb->index]->data; break;
    }
  }
  ft_status st = ft_exec_run_frame(pe->x, f, ctx, NULL, prof);
  if (st == FT_OK)
    for (int k = 0; k < p->n_out; k++) {
      const ft_out_src *o = &p->outs[k];
      if (o->in_place) continue;
      if (o->lit) put_literal(o->lit, out[k]->data);
      else if (out[k]->nbytes) memcpy(out[k]->data, kb[o->buf], out[k]->nbytes);
    }
  ft_exec_release(pe->x, f);
  return st;
}
