/* examples/quickstart.c: the library in one page. Trace a C function into a
 * jaxpr, print it in JAX's text format, take its gradient, run it with the
 * reference interpreter, compile it with the JIT and check both agree.
 *
 *   f(x) = sum(x * x + 3 x),   grad f(x) = 2 x + 3 */
#include <stdio.h>
#include <string.h>

#include <frankentrace.h>

static int f(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *x = in[0];
  out[0] = ft_sum(ft_np_add(ft_np_mul(x, x), ft_np_mul(ft_weak_f(t, 3.0), x)), -1, NULL, false);
  return 1;
}

static int fail(ft_ctx *ctx) {
  fprintf(stderr, "quickstart: %s\n", ft_ctx_error(ctx));
  return 1;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval x_aval = {.dtype = FT_F32, .rank = 1, .dims = {4}};
  ft_jaxpr *jf = ft_trace(ctx, f, NULL, 1, &x_aval);
  if (!jf) return fail(ctx);
  char *text = ft_jaxpr_print(ctx, jf);
  printf("f:\n%s\n", text);
  ft_free(text);

  int argnum = 0;
  ft_jaxpr *jg = ft_grad(ctx, jf, 1, &argnum, false);
  if (!jg) return fail(ctx);
  text = ft_jaxpr_print(ctx, jg);
  printf("grad f:\n%s\n", text);
  ft_free(text);

  float xs[4] = {0, 1, 2, -1.5f};
  ft_array *x = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){4}, xs);
  ft_array *g_interp = NULL, *g_jit = NULL;
  const ft_array *args[1] = {x};  /* inputs are borrowed, and const */
  if (ft_eval(ctx, jg, 1, args, 1, &g_interp) != FT_OK) return fail(ctx);
  ft_fn *fn = ft_jit(ctx, jg, NULL);
  if (!fn || ft_call(fn, 1, args, 1, &g_jit) != FT_OK) return fail(ctx);
  const float *g = ft_array_data(g_interp);
  printf("grad f at [0, 1, 2, -1.5] = [%g, %g, %g, %g]\n", g[0], g[1], g[2], g[3]);
  printf("interpreter and JIT agree bit for bit: %s\n", ft_array_equal_bits(g_interp, g_jit) ? "yes" : "no");

  ft_array_free(g_jit);
  ft_array_free(g_interp);
  ft_array_free(x);
  ft_fn_free(fn);
  ft_jaxpr_free(jg);
  ft_jaxpr_free(jf);
  ft_ctx_free(ctx);
  return 0;
}
