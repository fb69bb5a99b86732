/* examples/newton.c: a Newton solver traced with a while_loop (lax.while_loop):
 * the square root of a by x <- (x + a/x) / 2 from x = a, until
 * |x*x - a| <= 1e-6 a or 50 iterations. The loop is part of the program: it is
 * printed, interpreted and compiled like any other equation. */
#include <stdio.h>

#include <frankentrace.h>

/* carry: (x, a, i) */
static int cond(ft_tracer *t, ft_val *const *c, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *err = ft_abs(ft_np_sub(ft_np_mul(c[0], c[0]), c[1]));
  ft_val *far = ft_np_gt(err, ft_np_mul(ft_weak_f(t, 1e-6), c[1]));
  out[0] = ft_and(far, ft_np_lt(c[2], ft_const_i32(t, 50)));
  return 1;
}

static int body(ft_tracer *t, ft_val *const *c, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  out[0] = ft_np_mul(ft_np_add(c[0], ft_np_div(c[1], c[0])), ft_weak_f(t, 0.5));
  out[1] = c[1];
  out[2] = ft_np_add(c[2], ft_const_i32(t, 1));
  return 3;
}

static int newton_sqrt(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  ft_val *init[3] = {in[0], in[0], ft_const_i32(t, 0)}, *res[3];
  if (ft_while_loop(t, cond, body, user, 3, init, res) != 3) return -1;
  out[0] = res[0];
  out[1] = res[2];
  return 2;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval a = {.dtype = FT_F32, .rank = 0};
  ft_jaxpr *j = ft_trace(ctx, newton_sqrt, NULL, 1, &a);
  ft_fn *fn = j ? ft_jit(ctx, j, NULL) : NULL;
  if (!fn) {
    fprintf(stderr, "newton: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  char *text = ft_jaxpr_print(ctx, j);
  printf("%s\n", text);
  ft_free(text);
  const float as[] = {2, 9, 1e6f, 0.25f};
  for (int k = 0; k < 4; k++) {
    ft_array *in = ft_array_from_data(ctx, FT_F32, 0, NULL, &as[k]), *out[2] = {0};
    if (ft_call(fn, 1, (const ft_array *const *)&in, 2, out) != FT_OK) {
      fprintf(stderr, "newton: %s\n", ft_ctx_error(ctx));
      return 1;
    }
    printf("sqrt(%g) = %.9g after %d iterations\n", as[k], *(const float *)ft_array_data(out[0]),
           *(const int32_t *)ft_array_data(out[1]));
    ft_array_free(out[0]);
    ft_array_free(out[1]);
    ft_array_free(in);
  }
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return 0;
}
