/* src/trace/call_jaxpr.c: ft_call_jaxpr, calling an existing jaxpr from
 * inside a trace. JAX does this whenever a traced function calls a jitted
 * function or a transformed one (jax.grad(f) inside jax.jit): the callee's
 * jaxpr becomes a `jit` equation of the caller. Here the callee is a jaxpr
 * the C program already holds (for example ft_value_and_grad's result), so
 * a training step can be one program: forward, gradient and the optimizer's
 * update (tools/ftc_demo.c). ft_inline flattens the call afterwards. */
#include <string.h>

#include "trace/trace.h"

int ft_call_jaxpr(ft_tracer *t, const char *name, const ft_jaxpr *j, int n_args,
                  ft_val *const *args, ft_val **out, int max_out) {
  ft_tracer *root = ft__root_of(t, "call_jaxpr", n_args, args);
  if (!root) return -1;
  if (!j || n_args < 0 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "call_jaxpr: NULL jaxpr, invalid argument count or out array");
    return -1;
  }
  /* A jit equation's jaxpr is closed over nothing: constants would have to
   * become operands, and their values are not the caller's to pass. */
  if (j->n_const > 0) {
    ft__fail(root, FT_ERR_UNSUPPORTED,
             "call_jaxpr: the called jaxpr has %d constvar(s); only jaxprs without constants "
             "can be called (pass the values as inputs)", j->n_const);
    return -1;
  }
  if (n_args != j->n_in) {
    ft__fail(root, FT_ERR_INVALID_ARG, "call_jaxpr: the jaxpr takes %d inputs, %d given", j->n_in,
             n_args);
    return -1;
  }
  ft_jaxpr *sub = jaxpr_clone(root->j->arena, j);
  const char *nm = name ? name : "<lambda>";
  char *copy = ft_arena_strndup(root->j->arena, nm, strlen(nm));
  ft_pval *ps = ft__params(root, FT_P_JIT);
  if (!sub || !copy || !ps) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return -1;
  }
  ft__set(ps, FT_P_JIT, "jaxpr", ft_pv_jaxpr(sub));
  ft__set(ps, FT_P_JIT, "name", (ft_pval){.tag = FT_PV_STR, .s = copy});
  /* The shape rule of jit checks each argument's aval against sub's invars. */
  return ft__emit(root, FT_P_JIT, n_args, args, ps, out, max_out);
}
