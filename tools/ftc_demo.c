/* tools/ftc_demo.c: `ftc demo`, the main job. It traces a small MLP
 * classifier's loss from C, prints its jaxpr (JAX's text format), checks
 * that the text parses back to the same hash, runs it with the reference
 * interpreter on fixed data, differentiates it (ft_grad), checks that the
 * JIT-compiled gradient (ft_jit) equals the interpreter's bit for bit, and
 * takes one SGD step. With the global --ledger DIR every step is recorded:
 * the trace, the parse, the grad transform, the compilation and each run
 * (see docs/ledger.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc.h"

enum { BATCH = 8, IN = 4, HIDDEN = 16, CLASSES = 3 };
#define LR 0.5f

/* loss(W1, b1, W2, b2, x, y) = mean over the batch of the softmax
 * cross-entropy of tanh(x W1 + b1) W2 + b2 against one-hot labels y. */
static int mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *w1 = in[0], *b1 = in[1], *w2 = in[2], *b2 = in[3], *x = in[4], *y = in[5];
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(x, w1), b1));
  ft_val *logits = ft_np_add(ft_matmul(h, w2), b2);
  int last = -1;
  ft_val *logp = ft_log_softmax(logits, last);
  ft_val *nll = ft_neg(ft_sum(ft_np_mul(y, logp), 1, &last, false));
  out[0] = ft_mean(nll, -1, NULL, false);
  return 1;
}

/* Deterministic data: a fixed linear congruential sequence in [-1, 1). */
static float next_uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

static ft_array *random_array(ft_ctx *ctx, uint64_t *seed, int rank, const int64_t *dims, float scale) {
  ft_array *a = ft_array_new(ctx, FT_F32, rank, dims);
  if (!a) return NULL;
  float *d = ft_array_data(a);
  ft_aval av = ft_array_aval(a);
  for (int64_t i = 0; i < ft_aval_size(&av); i++) d[i] = next_uniform(seed) * scale;
  return a;
}

static int demo_usage(void) {
  printf("usage: ftc demo [--ledger DIR]\n\n"
         "Traces the loss of a small MLP classifier (%d-%d-%d, tanh, softmax\n"
         "cross-entropy, batch %d) from C, prints its jaxpr in JAX's text format,\n"
         "parses the text back and checks the canonical hash, and runs the jaxpr\n"
         "with the reference interpreter on fixed data. Then it takes the gradient\n"
         "of the loss with respect to the weights (ft_grad), runs it, compiles it\n"
         "with ft_jit and checks the compiled result equals the interpreter's bit\n"
         "for bit, and takes one SGD step (learning rate %g).\n\n"
         "With --ledger DIR each step is recorded in the ledger DIR (the trace, the\n"
         "parse, the grad transform, the compilation and, with the arrays, every\n"
         "run); then try\n"
         "  ftledger verify DIR && ftledger replay DIR && ftledger reexec DIR\n",
         IN, HIDDEN, CLASSES, BATCH, (double)LR);
  return 0;
}

/* Compiles the gradient with ft_jit, runs it on in[] and checks that every
 * output equals the interpreter's (want[]) bit for bit. 0, or 1 on failure. */
static int jit_check(ft_ctx *ctx, const ft_jaxpr *gj, ft_array **in, ft_array **want) {
  ft_array *got[4] = {0};
  ft_fn *fn = ft_jit(ctx, gj, ftc_jit_options());
  if (!fn || ft_call(fn, 6, in, 4, got) != FT_OK) {
    ft_fn_free(fn);
    return 1;
  }
  bool same = true;
  for (int p = 0; p < 4; p++) same = same && ft_array_equal_bits(got[p], want[p]);
  ft_jit_stats st;
  ft_fn_stats(fn, &st);
  printf("# the same gradient compiled by ft_jit (%d kernels, %d GEMM calls, "
         "%d interpreter steps): %s\n", st.n_kernels, st.n_gemm, st.n_fallback,
         same ? "bit-identical to the interpreter" : "DIFFERENT from the interpreter (a bug)");
  for (int p = 0; p < 4; p++) ft_array_free(got[p]);
  ft_fn_free(fn);
  return same ? 0 : 1;
}

/* The gradient of the loss w.r.t. W1, b1, W2, b2, run on in[], then one SGD
 * step in place on in[0..4). Prints what it did; 0 or 1 (after a message). */
static int grad_step(ft_ctx *ctx, const ft_jaxpr *loss, ft_array **in, float loss0) {
  const int argnums[4] = {0, 1, 2, 3};
  ft_array *g[4] = {0}, *out[1] = {0};
  int rc = 1;
  ft_jaxpr *gj = ft_grad(ctx, loss, 4, argnums, false);
  if (!gj || ft_eval(ctx, gj, 6, in, 4, g) != FT_OK) goto done;
  char h[33];
  ft_jaxpr_hash_hex(gj, h);
  printf("\n# its gradient w.r.t. W1, b1, W2, b2 (ft_grad): %d equations, hash %s\n",
         ft_jaxpr_num_eqns(gj), h);
  if (jit_check(ctx, gj, in, g)) goto done;
  for (int p = 0; p < 4; p++) {
    float *w = ft_array_data(in[p]);
    const float *d = ft_array_data(g[p]);
    ft_aval av = ft_array_aval(in[p]);
    double norm = 0;
    for (int64_t i = 0; i < ft_aval_size(&av); i++) {
      norm += (double)d[i] * d[i];
      w[i] -= LR * d[i];
    }
    printf("|d loss / d %s| = %.9g\n", (const char *[]){"W1", "b1", "W2", "b2"}[p], sqrt(norm));
  }
  if (ft_eval(ctx, loss, 6, in, 1, out) != FT_OK) goto done;
  float loss1 = *(float *)ft_array_data(out[0]);
  printf("# one SGD step (learning rate %g):\nloss = %.9g -> %.9g\n", (double)LR, (double)loss0,
         (double)loss1);
  rc = loss1 < loss0 ? 0 : ftc_fail("demo", "the SGD step did not lower the loss (a bug)");
done:
  if (rc && ft_ctx_status(ctx)) ftc_fail("demo", "%s", ft_ctx_error(ctx));
  for (int p = 0; p < 4; p++) ft_array_free(g[p]);
  ft_array_free(out[0]);
  ft_jaxpr_free(gj);
  return rc;
}

int ftc_cmd_demo(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) return demo_usage();
  if (argc > 1) return ftc_usage("demo", "unexpected argument '%s'", argv[1]);
  int rc = 1;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = NULL, *back = NULL;
  char *text = NULL;
  ft_array *in[6] = {0}, *out[1] = {0};
  const int64_t dw1[] = {IN, HIDDEN}, db1[] = {HIDDEN}, dw2[] = {HIDDEN, CLASSES}, db2[] = {CLASSES},
                dx[] = {BATCH, IN}, dy[] = {BATCH, CLASSES};
  const int64_t *dims[6] = {dw1, db1, dw2, db2, dx, dy};
  const int ranks[6] = {2, 1, 2, 1, 2, 2};
  ft_aval avals[6];
  if (!ctx) return 1;
  for (int i = 0; i < 6; i++) {
    memset(&avals[i], 0, sizeof avals[i]);
    avals[i].dtype = FT_F32;
    avals[i].rank = ranks[i];
    memcpy(avals[i].dims, dims[i], sizeof(int64_t) * (size_t)ranks[i]);
  }
  if (!(j = ft_trace(ctx, mlp_loss, NULL, 6, avals))) goto fail;
  if (!(text = ft_jaxpr_print(ctx, j))) goto fail;
  char h1[33], h2[33];
  ft_jaxpr_hash_hex(j, h1);
  printf("# the traced loss, as JAX prints a jaxpr (%d equations):\n%s\n", ft_jaxpr_num_eqns(j), text);
  if (!(back = ft_parse(ctx, text, strlen(text), "demo"))) goto fail;
  ft_jaxpr_hash_hex(back, h2);
  printf("# canonical hash %s; parsed back from text: %s\n\n", h1,
         strcmp(h1, h2) ? "DIFFERENT (a bug)" : "same hash");
  if (strcmp(h1, h2)) goto done;

  uint64_t seed = 42;
  const float scales[6] = {0.5f, 0.1f, 0.5f, 0.1f, 1.0f, 0.0f};
  for (int i = 0; i < 6; i++)
    if (!(in[i] = random_array(ctx, &seed, ranks[i], dims[i], scales[i]))) goto fail;
  float *y = ft_array_data(in[5]);
  for (int b = 0; b < BATCH; b++) y[b * CLASSES + b % CLASSES] = 1.0f;
  if (ft_eval(ctx, j, 6, in, 1, out) != FT_OK) goto fail;
  float loss = *(float *)ft_array_data(out[0]);
  printf("# reference interpreter on fixed data (seed 42):\nloss = %.9g  (chance level ln 3 = %.9g)\n",
         (double)loss, log(3.0));
  rc = grad_step(ctx, j, in, loss);
  goto done;
fail:
  ftc_fail("demo", "%s", ft_ctx_error(ctx));
done:
  ftc_report_guards("demo", ctx);
  for (int i = 0; i < 6; i++) ft_array_free(in[i]);
  ft_array_free(out[0]);
  ft_free(text);
  ft_jaxpr_free(back);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}
