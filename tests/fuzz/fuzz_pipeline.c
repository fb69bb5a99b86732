/* tests/fuzz/fuzz_pipeline.c: parse -> transform -> optimize -> interpret
 * (issue 18). The input is a jaxpr's text, then a line "%%", then a
 * transform expression (default "grad(f)" when absent). Any input must
 * fail with a status and a message at some stage, or pass every stage:
 * the transform's result verifies, its exact-tier optimization verifies
 * and evaluates (on inputs filled with a fixed pattern) to the same bits
 * as the unoptimized program, NaNs aside. Shapes are capped so a run
 * stays small. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "ft.h"

enum { MAX_LEN = 4096, MAX_ELEMS = 4096, MAX_IO = 8 };

static ft_ctx *ctx;

static bool small_avals(const ft_jaxpr *j) {
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  if (n_in > MAX_IO || n_out > MAX_IO || ft_jaxpr_num_eqns(j) > 64) return false;
  for (int i = 0; i < n_in + n_out; i++) {
    ft_aval a;
    if (i < n_in ? ft_jaxpr_input_aval(j, i, &a) : ft_jaxpr_output_aval(j, i - n_in, &a)) return false;
    if (ft_aval_size(&a) > MAX_ELEMS) return false;
  }
  return true;
}

/* Same bits, or both NaN (NaN payloads are outside the contract). */
static bool same(const ft_array *a, const ft_array *b) {
  if (ft_array_equal_bits(a, b)) return true;
  ft_aval av = ft_array_aval(a);
  if (av.dtype != FT_F32 || ft_array_nbytes(a) != ft_array_nbytes(b)) return false;
  const float *x = ft_array_data(a), *y = ft_array_data(b);
  for (int64_t i = 0; i < ft_aval_size(&av); i++)
    if (memcmp(&x[i], &y[i], 4) && !(isnan(x[i]) && isnan(y[i]))) return false;
  return true;
}

static void run_both(const ft_jaxpr *r, const ft_jaxpr *o) {
  int n_in = ft_jaxpr_num_inputs(r), n_out = ft_jaxpr_num_outputs(r);
  if (n_in > MAX_IO || n_out > MAX_IO || !small_avals(r)) return;
  ft_array *in[MAX_IO] = {0}, *a[MAX_IO] = {0}, *b[MAX_IO] = {0};
  for (int i = 0; i < n_in; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(r, i, &av);
    in[i] = ft_array_new(ctx, av.dtype, av.rank, av.dims);
    if (!in[i]) goto done;
    unsigned char *d = ft_array_data_mut(in[i]);
    for (size_t k = 0; k < ft_array_nbytes(in[i]); k++) d[k] = (unsigned char)(k * 37 + (size_t)i * 11 + 3) & 0x3f;
  }
  ft_status s1 = ft_eval(ctx, r, n_in, (const ft_array *const *)in, n_out, a);
  if (s1 == FT_OK) {
    ft_status s2 = ft_eval(ctx, o, n_in, (const ft_array *const *)in, n_out, b);
    FUZZ_CHECK(s2 == FT_OK, "the optimized program fails where the original runs: %s",
               ft_ctx_error(ctx));
    for (int k = 0; k < n_out; k++) FUZZ_CHECK(same(a[k], b[k]), "output %d differs after optimize", k);
  } else {
    FUZZ_CHECK(ft_ctx_error(ctx)[0], "eval failed without a message");
  }
done:
  for (int k = 0; k < MAX_IO; k++) ft_array_free(in[k]), ft_array_free(a[k]), ft_array_free(b[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_LEN) return 0;
  if (!ctx) ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1});
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  char *sep = memmem(text, size, "\n%%\n", 4);
  const char *expr = "grad(f)";
  size_t jlen = size;
  if (sep) {
    *sep = 0;
    jlen = (size_t)(sep - text);
    expr = sep + 4;
    if (strlen(expr) != size - jlen - 4 || strchr(expr, '(') == NULL) expr = "jvp(f)";
  }
  ft_ctx_clear_error(ctx);
  ft_jaxpr *j = ft_parse(ctx, text, jlen, "fuzz");
  if (!j) {
    FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "parse failed silently");
  } else if (small_avals(j)) {
    ft_jaxpr *r = ft_transform(ctx, j, expr);
    if (!r) {
      FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "'%s' failed silently", expr);
      r = NULL;
    }
    const ft_jaxpr *base = r ? r : j;
    FUZZ_CHECK(ft_jaxpr_verify(ctx, base) == FT_OK, "unverified: %s", ft_ctx_error(ctx));
    ft_jaxpr *o = ft_optimize(ctx, base, FT_OPT_EXACT, NULL);
    if (!o) {
      FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "optimize failed silently");
    } else {
      FUZZ_CHECK(ft_jaxpr_verify(ctx, o) == FT_OK, "optimized program does not verify: %s",
                 ft_ctx_error(ctx));
      run_both(base, o);
      ft_jaxpr_free(o);
    }
    ft_jaxpr_free(r);
  }
  ft_jaxpr_free(j);
  free(text);
  return 0;
}
