/* src/lower/exec_profile.c: ftc run --profile / --stats. A jaxpr is
 * compiled the way ft_jit compiles it and run on the executor with a
 * profile, so the trace shows the real steps, threads and waves. */
#include "lower/lower.h"
#include "runtime/exec.h"

/* Binds the kernels of q and of its control steps' sub-programs (whose
 * kernels live in the top program's module), as ft_jit does. */
static void bind(ft_program *q, const ft_jit_code *code) {
  for (int i = 0; i < q->n_steps; i++) {
    ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) s->fn = ft_jit_code_kernel(code, s->kernel);
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) bind(ft_control_sub(s->ctl, k), code);
  }
}

ft_status ft_exec_compile(ft_ctx *ctx, const ft_jaxpr *j, ft_program **p, ft_jit_code **code) {
  *code = NULL;
  if (!(*p = ft_program_plan(ctx, j, NULL))) return ft_ctx_status(ctx);
  if ((*p)->n_kernels == 0) return FT_OK;
  void *obj = NULL;
  size_t len = 0;
  ft_status st = ft_jit_emit_program(ctx, *p, 2, FT_LO_OBJ, NULL, &obj, &len, NULL, NULL);
  if (st == FT_OK) {
    *code = ft_jit_code_load(ctx, *p, obj, len);
    if (!*code) st = ft_ctx_status(ctx);
  }
  free(obj);
  if (st != FT_OK) {
    ft_program_free(*p);
    *p = NULL;
    return st;
  }
  bind(*p, *code);
  return FT_OK;
}

ft_status ft_exec_profile_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_in, const ft_array *const *in,
                                int n_out, ft_array **out, int runs, char **json, char **stats) {
  if (json) *json = NULL;
  if (stats) *stats = NULL;
  for (int k = 0; k < n_out; k++) out[k] = NULL;
  if (n_out != j->n_out || n_in != ft_interp_num_args(j))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "profile: expected %d inputs and %d outputs, "
                        "got %d and %d", ft_interp_num_args(j), j->n_out, n_in, n_out);
  ft_program *p = NULL;
  ft_jit_code *code = NULL;
  ft_pool *pool = NULL;
  ft_prog_exec *pe = NULL;
  ft_exec_profile *prof = NULL;
  ft_status st = ft_exec_compile(ctx, j, &p, &code);
  if (st) return st;
  int nt = ft_pool_default_threads(&ctx->opts);
  if (!(pool = ft_pool_acquire_shared(nt))) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "profile: cannot start %d threads", nt);
    goto done;
  }
  if (!(pe = ft_prog_exec_new(ctx, p, pool, NULL))) {
    st = ft_ctx_status(ctx);
    goto done;
  }
  if (!(prof = ft_exec_profile_new(ft_prog_exec_executor(pe)))) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "profile: out of memory");
    goto done;
  }
  for (int k = 0; k < n_out; k++)
    if (!(out[k] = ft_array_alloc(ctx, &j->outvars[k]->aval))) {
      st = ft_ctx_status(ctx);
      goto done;
    }
  if ((st = ft_prog_exec_run(pe, ctx, in, out, NULL))) goto done;
  for (int r = 0; r < (runs < 1 ? 1 : runs); r++)
    if ((st = ft_prog_exec_run(pe, ctx, in, out, prof))) goto done;
  if (json && !(*json = ft_exec_profile_json(prof))) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "profile: out of memory");
    goto done;
  }
  if (stats) {
    ft_bufplan_stats bs = ft_prog_exec_plan_stats(pe);
    char *tab = ft_exec_stats_table(prof);
    ft_buf b = {0};
    ft_buf_printf(&b, "executor: %d threads, %d steps in %d waves (%d kernels, %d GEMM, %d "
                  "fallback); %d profiled calls\nintermediates: %zu bytes planned in an arena of "
                  "%zu (lower bound %zu, %d in place)\n", nt, p->n_steps,
                  ft_exec_num_waves(ft_prog_exec_executor(pe)), p->n_kernels, p->n_gemm,
                  p->n_fallback, runs < 1 ? 1 : runs, bs.sum, bs.peak, bs.lower_bound,
                  bs.n_inplace);
    if (tab) ft_buf_puts(&b, tab);
    free(tab);
    if (!tab || b.failed) {
      free(b.p);
      st = ft_set_error(ctx, FT_ERR_NOMEM, "profile: out of memory");
      goto done;
    }
    *stats = b.p;
  }
done:
  if (st != FT_OK) {
    for (int k = 0; k < n_out; k++) ft_array_free(out[k]), out[k] = NULL;
    if (json) free(*json), *json = NULL;
  }
  ft_exec_profile_free(prof);
  ft_prog_exec_free(pe);
  ft_pool_release_shared(pool);
  if (code) ft_jit_code_release(code);
  ft_program_free(p);
  return st;
}
