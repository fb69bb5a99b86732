/* examples/mlp.c: training a small neural network. A two-layer perceptron
 * (2 -> 8 tanh -> 1) learns XOR, which no linear model can: the loss is the
 * mean logistic loss log(1 + exp(-y f(x))) with labels -1 and +1. One jaxpr
 * gives the loss and the gradients of all four parameters
 * (ft_value_and_grad), compiled once (ft_jit); C updates the parameters. */
#include <stdio.h>

#include <frankentrace.h>

enum { N = 4, IN = 2, H = 8, STEPS = 600 };

static int loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *w1 = in[0], *b1 = in[1], *w2 = in[2], *b2 = in[3], *x = in[4], *y = in[5];
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(x, w1), b1));  /* [N,H] */
  ft_val *f = ft_np_add(ft_matmul(h, w2), b2);           /* [N] */
  out[0] = ft_mean(ft_log1p(ft_exp(ft_neg(ft_np_mul(y, f)))), -1, NULL, false);
  return 1;
}

/* The network's output f(x) alone, for predictions. */
static int predict(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(in[4], in[0]), in[1]));
  out[0] = ft_np_add(ft_matmul(h, in[2]), in[3]);
  return 1;
}

/* Fixed pseudo-random starting weights in [-1, 1): the same run every time. */
static float next_weight(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval av[6] = {{.dtype = FT_F32, .rank = 2, .dims = {IN, H}}, {.dtype = FT_F32, .rank = 1, .dims = {H}},
                   {.dtype = FT_F32, .rank = 1, .dims = {H}},     {.dtype = FT_F32, .rank = 0},
                   {.dtype = FT_F32, .rank = 2, .dims = {N, IN}}, {.dtype = FT_F32, .rank = 1, .dims = {N}}};
  ft_jaxpr *jl = ft_trace(ctx, loss, NULL, 6, av);
  int argnums[4] = {0, 1, 2, 3};
  ft_jaxpr *jvg = jl ? ft_value_and_grad(ctx, jl, 4, argnums, false) : NULL;
  ft_fn *step = jvg ? ft_jit(ctx, jvg, NULL) : NULL;
  if (!step) {
    fprintf(stderr, "mlp: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  float w1[IN * H], b1[H] = {0}, w2[H], b2 = 0;
  unsigned seed = 7;
  for (int i = 0; i < IN * H; i++) w1[i] = next_weight(&seed);
  for (int i = 0; i < H; i++) w2[i] = next_weight(&seed);
  const float x[N][IN] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}}, y[N] = {-1, 1, 1, -1};
  float *params[4] = {w1, b1, w2, &b2};
  const int sizes[4] = {IN * H, H, H, 1};
  const float lr = 0.5f;
  for (int it = 0; it <= STEPS; it++) {
    ft_array *in[6] = {ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){IN, H}, w1),
                       ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){H}, b1),
                       ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){H}, w2),
                       ft_array_from_data(ctx, FT_F32, 0, NULL, &b2),
                       ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){N, IN}, x),
                       ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){N}, y)};
    ft_array *out[5] = {0};
    if (ft_call(step, 6, (const ft_array *const *)in, 5, out) != FT_OK) {
      fprintf(stderr, "mlp: %s\n", ft_ctx_error(ctx));
      return 1;
    }
    if (it % 100 == 0) printf("step %3d: loss %.6f\n", it, *(const float *)ft_array_data(out[0]));
    for (int p = 0; p < 4 && it < STEPS; p++) {
      const float *g = ft_array_data(out[1 + p]);
      for (int k = 0; k < sizes[p]; k++) params[p][k] -= lr * g[k];
    }
    for (int k = 0; k < 5; k++) ft_array_free(out[k]);
    for (int k = 0; k < 6; k++) ft_array_free(in[k]);
  }
  /* The trained network on the four points, run by the interpreter. */
  ft_jaxpr *jp = ft_trace(ctx, predict, NULL, 5, av);
  ft_array *pin[5] = {ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){IN, H}, w1),
                      ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){H}, b1),
                      ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){H}, w2),
                      ft_array_from_data(ctx, FT_F32, 0, NULL, &b2),
                      ft_array_from_data(ctx, FT_F32, 2, (int64_t[]){N, IN}, x)};
  ft_array *pred = NULL;
  if (!jp || ft_eval(ctx, jp, 5, (const ft_array *const *)pin, 1, &pred) != FT_OK) {
    fprintf(stderr, "mlp: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  const float *f = ft_array_data(pred);
  for (int i = 0; i < N; i++)
    printf("xor(%g, %g): f = %+.3f -> %s\n", x[i][0], x[i][1], f[i], (f[i] > 0) == (y[i] > 0) ? "right" : "wrong");
  ft_array_free(pred);
  for (int k = 0; k < 5; k++) ft_array_free(pin[k]);
  ft_jaxpr_free(jp);
  ft_jaxpr_free(jvg);
  ft_fn_free(step);
  ft_jaxpr_free(jl);
  ft_ctx_free(ctx);
  return 0;
}
