/* examples/ledger_audit.c: a ledger as an audit trail. Every transform,
 * compilation and call made on a context with a ledger attached is
 * recorded; afterwards the ledger is verified (checksums, hash chain,
 * parity) and replayed (each transform recomputed from its stored input and
 * its output hash compared), then re-executed (each logged call re-run).
 * Usage: ledger_audit DIR (DIR must not exist yet, or be such a ledger). */
#include <stdio.h>

#include <frankentrace.h>

static int f(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_sum(ft_tanh(ft_np_mul(in[0], in[0])), -1, NULL, false);
  return 1;
}

static int report(const char *what, ft_status st, ft_ctx *ctx, const ft_ledger_report *r) {
  if (st != FT_OK) {
    fprintf(stderr, "ledger_audit: %s: %s\n", what, ft_ctx_error(ctx));
    return 1;
  }
  printf("%s: %s, %lld records", what, r->health == FT_LEDGER_CLEAN ? "clean" : "NOT clean",
         (long long)r->records);
  if (r->checked || r->diverged) printf(", %lld recomputed, %lld diverged", (long long)r->checked, (long long)r->diverged);
  printf("\n");
  return r->health != FT_LEDGER_CLEAN || r->diverged;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ledger_audit DIR\n");
    return 2;
  }
  ft_ctx *ctx = ft_ctx_new(NULL);
  /* calls: keep each call's input and output bytes, so reexec can re-run it */
  ft_ledger_options opts = FT_LEDGER_OPTIONS_INIT;
  opts.calls = FT_LEDGER_CALLS_BYTES;
  ft_ledger *lg = ft_ledger_open(ctx, argv[1], &opts);
  if (!lg || ft_ctx_attach_ledger(ctx, lg) != FT_OK) {
    fprintf(stderr, "ledger_audit: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  ft_aval xa = {.dtype = FT_F32, .rank = 1, .dims = {3}};
  ft_jaxpr *j = ft_trace(ctx, f, NULL, 1, &xa);
  int argnum = 0;
  ft_jaxpr *g = j ? ft_grad(ctx, j, 1, &argnum, false) : NULL;
  ft_fn *fn = g ? ft_jit(ctx, g, NULL) : NULL;
  float xs[3] = {0.5f, -1, 2};
  ft_array *x = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, xs), *out = NULL;
  if (!fn || ft_call(fn, 1, (const ft_array *const *)&x, 1, &out) != FT_OK) {
    fprintf(stderr, "ledger_audit: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  printf("recorded %lld records\n", (long long)ft_ledger_num_records(lg));
  ft_array_free(out);
  ft_array_free(x);
  ft_fn_free(fn);
  ft_jaxpr_free(g);
  ft_jaxpr_free(j);
  ft_ctx_attach_ledger(ctx, NULL);
  if (ft_ledger_close(lg) != FT_OK) {
    fprintf(stderr, "ledger_audit: the ledger could not be synced\n");
    return 1;
  }
  ft_ledger_report r = {0};
  int bad = report("verify", ft_ledger_verify(ctx, argv[1], &r), ctx, &r);
  ft_ledger_report_free(&r);
  bad |= report("replay", ft_ledger_replay(ctx, argv[1], &r), ctx, &r);
  ft_ledger_report_free(&r);
  bad |= report("reexec", ft_ledger_reexec(ctx, argv[1], &r), ctx, &r);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  return bad;
}
