/* src/lower/program.c: running an ft_program (binding buffers, kernels,
 * GEMM and fallback steps, outputs) and describing it as text. The
 * dependency-wave executor (issue 7) may replace ft_program_run with a
 * parallel schedule over the same steps: each step reads and writes only the
 * buffers its in/out lists name, and kernels take [lo, hi) ranges of their
 * outermost loop whose boundaries may be cut from the shape alone. */
#include <stdio.h>
#include <string.h>

#include "lower/lower.h"

/* ------------------------------------------------------------------- GEMM */
/* dst[b][r][c] = src[ob[b] + orow[r] + ocol[c]]: rows whose columns are
 * contiguous in the source (ocol[c] == ocol[0] + c) are one memcpy each;
 * any other operand (a transposed one) goes through the executor's tiled
 * packing (ft_gemm_pack_rows, exec_program.c). Sub-programs (scan and
 * while bodies) run their GEMM steps here, once per iteration, so this
 * copy counts: it was an element loop reading three offset tables. A
 * copy either way: the GEMM's bits do not depend on which path ran. */
static void pack(bool f64, const void *src, void *dst, int64_t B, int64_t R, int64_t C,
                 const int64_t *ob, const int64_t *orow, const int64_t *ocol) {
  if (C <= 0 || R <= 0 || B <= 0) return;
  bool contiguous = true;
  for (int64_t c = 1; c < C && contiguous; c++) contiguous = ocol[c] == ocol[0] + c;
  if (!contiguous) {
    ft_gemm_pack_rows(f64, src, dst, 0, B * R, R, C, ob, orow, ocol);
    return;
  }
  size_t es = f64 ? sizeof(double) : sizeof(float);
  char *d = dst;
  for (int64_t b = 0; b < B; b++)
    for (int64_t r = 0; r < R; r++, d += es * (size_t)C)
      memcpy(d, (const char *)src + es * (size_t)(ob[b] + orow[r] + ocol[0]), es * (size_t)C);
}

static bool run_gemm(const ft_gemm_plan *g, const void *l, const void *r, void *c,
                     void *const *kbufs) {
  const void *A = l, *Bm = r;
  if (!g->lhs_direct) {
    pack(g->f64, l, kbufs[g->pack_a], g->B, g->M, g->K, g->lb, g->lm, g->lk);
    A = kbufs[g->pack_a];
  }
  if (!g->rhs_direct) {
    pack(g->f64, r, kbufs[g->pack_b], g->B, g->K, g->N, g->rb, g->rk, g->rn);
    Bm = kbufs[g->pack_b];
  }
  int64_t M = g->M, N = g->N, K = g->K;
  for (int64_t b = 0; b < g->B; b++) {
    bool ok = g->f64 ? ft_gemm_f64(M, N, K, (const double *)A + b * M * K, K,
                                   (const double *)Bm + b * K * N, N, (double *)c + b * M * N, N)
                     : ft_gemm_f32(M, N, K, (const float *)A + b * M * K, K,
                                   (const float *)Bm + b * K * N, N, (float *)c + b * M * N, N);
    if (!ok) return false;
  }
  return true;
}

/* --------------------------------------------------------------- fallback */
/* Runs the step's one-equation jaxpr with the interpreter on views of the
 * program's buffers and copies the results into them. Allocates (the
 * interpreter does). */
static ft_status run_fallback(ft_ctx *ctx, const ft_program *p, const ft_step *s,
                              void *const *kbufs) {
  ft_array view_st[16], *in_st[16], *out_st[16];
  ft_array *views = view_st, **in = in_st, **out = out_st;
  ft_status st = FT_OK;
  if (s->n_in > 16 || s->n_out > 16) {
    views = calloc((size_t)s->n_in + 1, sizeof *views);
    in = calloc((size_t)s->n_in + 1, sizeof *in);
    out = calloc((size_t)s->n_out + 1, sizeof *out);
    if (!views || !in || !out) {
      st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      goto done;
    }
  }
  for (int k = 0; k < s->n_in; k++) {
    const ft_pbuf *b = &p->bufs[s->in[k]];
    views[k].aval = b->aval;
    views[k].nbytes = b->nbytes;
    views[k].data = kbufs[s->in[k]];
    in[k] = &views[k];
  }
  st = ft_interp_jaxpr(ctx, s->sub, s->n_in, (const ft_array *const *)in, out);
  if (st == FT_OK)
    for (int k = 0; k < s->n_out; k++) {
      if (out[k]->nbytes) memcpy(kbufs[s->out[k]], out[k]->data, out[k]->nbytes);
      ft_array_free(out[k]);
    }
  else
    ft_error_prefix(ctx, "jit: fallback step for equation %d", s->eqn);
done:
  if (views != view_st) free(views), free(in), free(out);
  return st;
}

static ft_status run_step(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs);

const char ft_why_key_steps[] = "operations on PRNG key arrays run as interpreter steps";

bool ft_program_first_fallback(const ft_program *p, char *buf, size_t n) {
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    const char *prim = s->eqn >= 0 && s->eqn < p->j->n_eqn ? ft_prim_get(p->j->eqns[s->eqn].prim)->name
                                                           : "?";
    if (s->kind == FT_STEP_FALLBACK && !(p->why && p->why[s->eqn] == ft_why_key_steps)) {
      snprintf(buf, n, "equation %d (%s): %s", s->eqn, prim,
               p->why && p->why[s->eqn] ? p->why[s->eqn] : "not compiled");
      return true;
    }
    if (s->kind != FT_STEP_CONTROL) continue;
    for (int k = 0; k < ft_control_num_subs(s->ctl); k++) {
      char inner[512];
      if (ft_program_first_fallback(ft_control_sub(s->ctl, k), inner, sizeof inner)) {
        snprintf(buf, n, "equation %d (%s), sub-jaxpr %d: %s", s->eqn, prim, k, inner);
        return true;
      }
    }
  }
  return false;
}

/* Names the step's equation as where a guard fires, at the outermost
 * level (a control step's sub-programs keep their step's equation). */
ft_status ft_program_run_step(ft_ctx *ctx, const ft_program *p, const ft_step *s,
                              void *const *kbufs) {
  ft_guard_where saved = ft_guard_tl;
  if (ft_guard_tl.depth == 0) ft_guard_tl.engine = "jit", ft_guard_tl.eqn = s->eqn;
  ft_guard_tl.depth++;
  ft_status st = run_step(ctx, p, s, kbufs);
  ft_guard_tl = saved;
  return st;
}

static ft_status run_step(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs) {
  switch (s->kind) {
  case FT_STEP_KERNEL:
    if (s->extent > 0) s->fn(kbufs, 0, s->extent);
    return FT_OK;
  case FT_STEP_GEMM:
    return run_gemm(s->gemm, kbufs[s->in[0]], kbufs[s->in[1]], kbufs[s->out[0]], kbufs)
               ? FT_OK
               : ft_blas_nomem(ctx);
  case FT_STEP_FALLBACK:
    return run_fallback(ctx, p, s, kbufs);
  case FT_STEP_CONTROL:
    return ft_control_run(ctx, p, s, kbufs);
  case FT_STEP_ROUTINE:
    return ft_routine_run(ctx, p, s, kbufs);
  }
  return FT_ERR_INTERNAL;
}

/* Writes a literal's value into element 0 of dst (as the interpreter does). */
static void write_lit(const ft_var *v, void *dst) {
  ft_array a = {.aval = v->aval, .nbytes = ft_dtype_size(v->aval.dtype), .data = dst};
  ft_dtype dt = v->aval.dtype;
  if (ft_dtype_is_complex(dt)) ft_set_c128(&a, 0, v->lit.f, v->lit_im);
  else if (ft_dtype_is_float(dt)) ft_set_f64(&a, 0, v->lit.f);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(&a, 0, (int64_t)v->lit.u);
  else ft_set_i64(&a, 0, v->lit.i);
}

static bool check_arg(ft_ctx *ctx, const char *what, int i, const ft_aval *want,
                      const ft_array *a) {
  if (a && ft_aval_eq(want, &a->aval)) return true;
  char s1[128], s2[128];
  ft_set_error(ctx, a && a->aval.dtype != want->dtype ? FT_ERR_TYPE : FT_ERR_SHAPE,
               "call: %s %d: expected %s, got %s", what, i, ft_aval_str(want, s1, sizeof s1),
               a ? ft_aval_str(&a->aval, s2, sizeof s2) : "NULL");
  return false;
}

/* Whether buffer b holds NaN/Inf (literals, -1, never do). */
static bool buf_nonfinite(const ft_program *p, int b, void *const *kbufs) {
  return b >= 0 && ft_nonfinite_count(&p->bufs[b].aval, kbufs[b], NULL) > 0;
}

/* The per-step guard after step s: its results (a routine's scratch
 * buffers aside), when none of its inputs held NaN/Inf. */
static ft_status guard_step(ft_ctx *ctx, const ft_program *p, const ft_step *s, void *const *kbufs) {
  for (int k = 0; k < s->n_in; k++)
    if (buf_nonfinite(p, s->in[k], kbufs)) return FT_OK;
  const ft_eqn *e = s->eqn >= 0 && s->eqn < p->j->n_eqn ? &p->j->eqns[s->eqn] : NULL;
  int n = s->n_out;
  if (s->kind == FT_STEP_ROUTINE && e && e->n_out < n) n = e->n_out;
  const char *prim = e ? ft_prim_get(e->prim)->name : "";
  for (int k = 0; k < n; k++) {
    int b = s->out[k];
    if (b < 0) continue;
    ft_array view = {.aval = p->bufs[b].aval, .nbytes = p->bufs[b].nbytes, .data = kbufs[b]};
    ft_array *v = &view;
    ft_status st = ft_guard_results(ctx, p->j, s->eqn, prim, 1, &v);
    if (st) return st;
  }
  return FT_OK;
}

static ft_status program_run(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                             ft_array *const *out, void **kbufs, void *arena, bool check);

ft_status ft_program_run(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                         ft_array *const *out, void **kbufs, void *arena) {
  return program_run(ctx, p, in, out, kbufs, arena, false);
}

ft_status ft_program_run_checked(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                                 ft_array *const *out, void **kbufs, void *arena) {
  return program_run(ctx, p, in, out, kbufs, arena, true);
}

static ft_status program_run(ft_ctx *ctx, const ft_program *p, const ft_array *const *in,
                             ft_array *const *out, void **kbufs, void *arena, bool check) {
  const ft_jaxpr *j = p->j;
  int nc = j->const_data ? 0 : j->n_const;
  for (int k = 0; k < p->n_args; k++) {
    const ft_var *v = k < nc ? j->constvars[k] : j->invars[k - nc];
    if (!check_arg(ctx, k < nc ? "constant input" : "input", k < nc ? k : k - nc, &v->aval, in[k]))
      return ft_ctx_status(ctx);
  }
  for (int k = 0; k < p->n_out; k++) {
    const ft_var *v = j->outvars[k];
    if (!check_arg(ctx, "output", k, &v->aval, out[k])) return ft_ctx_status(ctx);
  }
  for (int b = 0; b < p->n_bufs; b++) {
    const ft_pbuf *pb = &p->bufs[b];
    switch (pb->kind) {
    case FT_BUF_INPUT: kbufs[b] = in[pb->index]->data; break;
    case FT_BUF_CONST: kbufs[b] = p->consts[pb->index]; break;
    case FT_BUF_TEMP: kbufs[b] = (char *)arena + pb->offset; break;
    case FT_BUF_OUTPUT: kbufs[b] = out[pb->index]->data; break;
    }
  }
  for (int i = 0; i < p->n_steps; i++) {
    ft_status st = ft_program_run_step(ctx, p, &p->steps[i], kbufs);
    if (!st && check) st = guard_step(ctx, p, &p->steps[i], kbufs);
    if (st) return st;
  }
  for (int k = 0; k < p->n_out; k++) {
    const ft_out_src *o = &p->outs[k];
    if (o->in_place) continue;
    if (o->lit) write_lit(o->lit, out[k]->data);
    else if (out[k]->nbytes) memcpy(out[k]->data, kbufs[o->buf], out[k]->nbytes);
  }
  return FT_OK;
}

/* -------------------------------------------------------------- the plan */
static const char *buf_name(const ft_program *p, int b, char *tmp, size_t n) {
  if (b < 0) return "literal";
  const ft_pbuf *pb = &p->bufs[b];
  char av[96];
  ft_aval_str(&pb->aval, av, sizeof av);
  switch (pb->kind) {
  case FT_BUF_INPUT: snprintf(tmp, n, "in%d:%s", pb->index, av); break;
  case FT_BUF_CONST: snprintf(tmp, n, "const%d:%s", pb->index, av); break;
  case FT_BUF_TEMP: snprintf(tmp, n, "t%d:%s@%zu", b, av, pb->offset); break;
  case FT_BUF_OUTPUT: snprintf(tmp, n, "out%d:%s", pb->index, av); break;
  }
  return tmp;
}

static void put_bufs(ft_buf *o, const ft_program *p, int n, const int *b) {
  char tmp[160];
  for (int k = 0; k < n; k++) ft_buf_printf(o, "%s%s", k ? ", " : "", buf_name(p, b[k], tmp, sizeof tmp));
}

char *ft_program_describe(const ft_program *p) {
  ft_buf o = {0};
  const ft_jaxpr *j = p->j;
  int nk = 0;
  for (int i = 0; i < p->n_steps; i++) nk += p->steps[i].kind == FT_STEP_KERNEL;
  ft_buf_printf(&o, "plan: %d equations -> %d steps (%d compiled kernels, %d GEMM, %d fallback); "
                "%d equations fused; arena %zu bytes\n", j->n_eqn, p->n_steps, nk, p->n_gemm,
                p->n_fallback, p->n_fused_eqns, p->arena_bytes);
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    const ft_eqn *e = &j->eqns[s->eqn];
    ft_buf_printf(&o, "step %d: ", i);
    switch (s->kind) {
    case FT_STEP_KERNEL: {
      const ft_kernel *k = &p->kernels[s->kernel];
      if (k->kind == FT_KER_LSE) {
        ft_buf_printf(&o, "kernel %s (compiled one-pass logsumexp, %s: %lld rows x %lld elements, "
                      "%lld blocks per row; fused:", k->name,
                      k->lse_fin ? "row combine" : "block max and exp-sum", (long long)k->lse_rows,
                      (long long)k->lse_n, (long long)k->lse_nb);
        for (int q = 0; q < s->n_eqns; q++)
          ft_buf_printf(&o, " %s#%d", ft_prim_get(j->eqns[s->eqns[q]].prim)->name, s->eqns[q]);
        ft_buf_printf(&o, ")\n");
      } else if (k->kind == FT_KER_REDUCE) {
        ft_buf_printf(&o, "kernel %s (compiled reduction %s, %lld outputs x %lld elements, "
                      "stride %lld%s)\n", k->name, ft_prim_get(k->rprim)->name,
                      (long long)s->extent, (long long)k->rcount, (long long)k->rstride,
                      (k->rprim == FT_P_REDUCE_SUM || k->rprim == FT_P_REDUCE_PROD) &&
                              ft_dtype_is_float(k->rin.dt)
                          ? ", canonical order" : "");
      } else {
        ft_buf_printf(&o, "kernel %s (compiled loop over [", k->name);
        for (int d = 0; d < k->rank; d++) ft_buf_printf(&o, "%s%lld", d ? "," : "", (long long)k->dims[d]);
        ft_buf_printf(&o, "]; fused:");
        for (int q = 0; q < s->n_eqns; q++)
          ft_buf_printf(&o, " %s#%d", ft_prim_get(j->eqns[s->eqns[q]].prim)->name, s->eqns[q]);
        if (s->n_eqns == 0) ft_buf_printf(&o, " copy of a view");
        ft_buf_printf(&o, ")\n");
      }
      break;
    }
    case FT_STEP_GEMM: {
      const ft_gemm_plan *g = s->gemm;
      ft_buf_printf(&o, "gemm dot_general#%d (ft_gemm_%s B=%lld M=%lld N=%lld K=%lld; lhs %s, rhs %s)\n",
                    s->eqn, g->f64 ? "f64" : "f32", (long long)g->B, (long long)g->M,
                    (long long)g->N, (long long)g->K, g->lhs_direct ? "direct" : "packed",
                    g->rhs_direct ? "direct" : "packed");
      break;
    }
    case FT_STEP_CONTROL: {
      char line[512];
      ft_control_describe(s->ctl, line, sizeof line);
      ft_buf_printf(&o, "control %s#%d: %s\n", ft_prim_get(e->prim)->name, s->eqn, line);
      break;
    }
    case FT_STEP_ROUTINE:
      ft_buf_printf(&o, "routine %s#%d (native, no interpreter)\n", ft_prim_get(e->prim)->name, s->eqn);
      break;
    case FT_STEP_FALLBACK:
      ft_buf_printf(&o, "FALLBACK %s#%d (interpreter rule, not compiled: %s)\n",
                    ft_prim_get(e->prim)->name, s->eqn,
                    p->why && p->why[s->eqn] ? p->why[s->eqn] : "debug option interpret_all");
      break;
    }
    ft_buf_printf(&o, "    in: ");
    put_bufs(&o, p, s->n_in, s->in);
    ft_buf_printf(&o, "\n    out: ");
    put_bufs(&o, p, s->n_out, s->out);
    ft_buf_printf(&o, "\n");
  }
  for (int k = 0; k < p->n_out; k++) {
    const ft_out_src *s = &p->outs[k];
    char tmp[160];
    if (s->in_place) ft_buf_printf(&o, "output %d: written in place\n", k);
    else if (s->lit) ft_buf_printf(&o, "output %d: literal\n", k);
    else ft_buf_printf(&o, "output %d: copied from %s\n", k, buf_name(p, s->buf, tmp, sizeof tmp));
  }
  if (o.failed) {
    free(o.p);
    return NULL;
  }
  return o.p;
}
