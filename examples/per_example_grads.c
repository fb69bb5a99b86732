/* examples/per_example_grads.c: per-example gradients, as
 * jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)) in Python. The loss of a
 * linear model on one example (x, y) is (w.x - y)^2; its gradient in w is
 * 2 (w.x - y) x. vmap over the examples gives one gradient per row, in one
 * program, instead of a loop or the batch's mean gradient. */
#include <stdio.h>

#include <frankentrace.h>

enum { N = 4, D = 3 };

static int loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *w = in[0], *x = in[1], *y = in[2];
  ft_val *r = ft_np_sub(ft_sum(ft_np_mul(w, x), -1, NULL, false), y);
  out[0] = ft_np_mul(r, r);
  return 1;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval avals[3] = {{.dtype = FT_F32, .rank = 1, .dims = {D}},
                      {.dtype = FT_F32, .rank = 1, .dims = {D}},
                      {.dtype = FT_F32, .rank = 0}};
  ft_jaxpr *jl = ft_trace(ctx, loss, NULL, 3, avals);
  int argnum = 0;
  ft_jaxpr *jg = jl ? ft_grad(ctx, jl, 1, &argnum, false) : NULL;
  int in_axes[3] = {FT_VMAP_NONE, 0, 0}, out_axes[1] = {0};
  ft_jaxpr *jv = jg ? ft_vmap(ctx, jg, 3, in_axes, 1, out_axes, N) : NULL;
  if (!jv) {
    fprintf(stderr, "per_example_grads: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  char *text = ft_jaxpr_print(ctx, jv);
  printf("vmap(grad(loss), in_axes=(None, 0, 0)):\n%s\n", text);
  ft_free(text);

  float w[D] = {1, -1, 0.5f};
  float x[N][D] = {{1, 0, 0}, {0, 1, 0}, {1, 1, 2}, {2, 0, -2}};
  float y[N] = {0, 0, 1, 3};
  ft_array *in[3] = {ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){D}, w),
                     ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){N, D}, x),
                     ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){N}, y)};
  ft_array *g = NULL;
  if (ft_eval(ctx, jv, 3, (const ft_array *const *)in, 1, &g) != FT_OK) {
    fprintf(stderr, "per_example_grads: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  const float *gd = ft_array_data(g);
  for (int i = 0; i < N; i++) {
    float r = w[0] * x[i][0] + w[1] * x[i][1] + w[2] * x[i][2] - y[i];
    printf("example %d: residual %g, gradient [%g, %g, %g]\n", i, r, gd[i * D], gd[i * D + 1], gd[i * D + 2]);
  }
  ft_array_free(g);
  for (int k = 0; k < 3; k++) ft_array_free(in[k]);
  ft_jaxpr_free(jv);
  ft_jaxpr_free(jg);
  ft_jaxpr_free(jl);
  ft_ctx_free(ctx);
  return 0;
}
