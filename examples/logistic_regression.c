/* examples/logistic_regression.c: a training loop. Logistic regression on
 * eight points of two classes (labels -1 and +1): the loss is
 * mean(log(1 + exp(-y (X w + b)))); ft_value_and_grad gives the loss and its
 * gradients in w and b as one jaxpr, ft_jit compiles it once, and C runs 200
 * steps of gradient descent, calling the compiled function with the
 * parameters of each step. */
#include <stdio.h>

#include <frankentrace.h>

enum { N = 8, D = 2, STEPS = 200 };

static int loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *w = in[0], *b = in[1], *x = in[2], *y = in[3];
  ft_val *z = ft_np_add(ft_matmul(x, w), b);
  ft_val *margin = ft_neg(ft_np_mul(y, z));
  out[0] = ft_mean(ft_log1p(ft_exp(margin)), -1, NULL, false);
  (void)t;
  return 1;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval avals[4] = {{.dtype = FT_F32, .rank = 1, .dims = {D}},
                      {.dtype = FT_F32, .rank = 0},
                      {.dtype = FT_F32, .rank = 2, .dims = {N, D}},
                      {.dtype = FT_F32, .rank = 1, .dims = {N}}};
  ft_jaxpr *jl = ft_trace(ctx, loss, NULL, 4, avals);
  int argnums[2] = {0, 1};
  ft_jaxpr *jvg = jl ? ft_value_and_grad(ctx, jl, 2, argnums, false) : NULL;
  ft_fn *step = jvg ? ft_jit(ctx, jvg, NULL) : NULL;
  if (!step) {
    fprintf(stderr, "logistic_regression: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  const float x[N][D] = {{2, 1}, {1, 3}, {3, 2}, {2, 2.5f}, {-1, -2}, {-2, 0}, {0, -1.5f}, {-1.5f, -1}};
  const float y[N] = {1, 1, 1, 1, -1, -1, -1, -1};
  float w[D] = {0, 0}, b = 0;
  const float lr = 0.5f;
  ft_array *xa = ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){N, D}, x);
  ft_array *ya = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){N}, y);
  for (int it = 0; it <= STEPS; it++) {
    ft_array *in[4] = {ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){D}, w),
                       ft_array_from_data(ctx, FT_F32, 0, NULL, &b), xa, ya};
    ft_array *out[3] = {0};
    if (ft_call(step, 4, (const ft_array *const *)in, 3, out) != FT_OK) {
      fprintf(stderr, "logistic_regression: %s\n", ft_ctx_error(ctx));
      return 1;
    }
    const float *gw = ft_array_data(out[1]), *gb = ft_array_data(out[2]);
    if (it % 50 == 0) printf("step %3d: loss %.6f\n", it, *(const float *)ft_array_data(out[0]));
    if (it < STEPS) {
      for (int d = 0; d < D; d++) w[d] -= lr * gw[d];
      b -= lr * *gb;
    }
    for (int k = 0; k < 3; k++) ft_array_free(out[k]);
    ft_array_free(in[0]);
    ft_array_free(in[1]);
  }
  int correct = 0;
  for (int i = 0; i < N; i++) correct += (x[i][0] * w[0] + x[i][1] * w[1] + b > 0) == (y[i] > 0);
  printf("w = [%.4f, %.4f], b = %.4f; %d of %d points classified correctly\n", w[0], w[1], b, correct, N);
  ft_array_free(xa);
  ft_array_free(ya);
  ft_fn_free(step);
  ft_jaxpr_free(jvg);
  ft_jaxpr_free(jl);
  ft_ctx_free(ctx);
  return 0;
}
