/* tests/install/consumer.c: a program outside the tree, as a user writes it,
 * built by test_install.sh against an installed FrankenTrace with
 * pkg-config only. It checks the version macros against the library, traces
 * sum(x*x), takes its gradient and runs it. */
#include <stdio.h>
#include <string.h>

#include <frankentrace.h>

#if !defined(FT_VERSION_MAJOR) || !defined(FT_VERSION_STRING) || FT_VERSION_NUMBER < FT_VERSION_AT(0, 1, 0)
#error "frankentrace.h lacks its version macros"
#endif

static int sum_sq(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_sum(ft_np_mul(in[0], in[0]), -1, NULL, false);
  return 1;
}

int main(void) {
  if (strcmp(ft_version(), FT_VERSION_STRING)) {
    printf("header %s, library %s\n", FT_VERSION_STRING, ft_version());
    return 1;
  }
  printf("version: header and library agree\n");
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval x = {.dtype = FT_F32, .rank = 1, .dims = {3}};
  ft_jaxpr *f = ft_trace(ctx, sum_sq, NULL, 1, &x);
  int argnum = 0;
  ft_jaxpr *g = f ? ft_grad(ctx, f, 1, &argnum, false) : NULL;
  float xs[3] = {1, 2, 3};
  ft_array *in = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, xs);
  ft_array *out = NULL;
  if (!g || !in || ft_eval(ctx, g, 1, (const ft_array *const *)&in, 1, &out) != FT_OK) {
    printf("failed: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  const float *d = ft_array_data(out);
  printf("grad of sum(x*x) at [1, 2, 3]: %g %g %g\n", d[0], d[1], d[2]);
  ft_jaxpr *bad = ft_parse(ctx, "{ lambda", 8, "bad");
  printf("a parse error is %s\n", bad ? "missing" : ft_status_string(ft_ctx_status(ctx)));
  ft_array_free(out);
  ft_array_free(in);
  ft_jaxpr_free(g);
  ft_jaxpr_free(f);
  ft_ctx_free(ctx);
  return 0;
}
