/* tests/conformance/conf_roundtrip.c: the print -> parse property of issue
 * 16, over every program the conformance harness loads and every transform
 * of it (conf_run with conf_opts.roundtrip; tests/conformance/
 * test_roundtrip.c):
 *
 *   printing a program and parsing the text gives the same canonical hash,
 *   and the re-parsed program, run by the interpreter, gives bitwise the
 *   in-memory program's outputs.
 *
 * The programs: JAX's printout of each case and of each transform JAX
 * captured, and ours of each forward program: jvp, vjp, linearize (the
 * primal and the tangent program), vmap (a new axis of 2), grad (scalar
 * outputs), and the manifest's transforms (jacfwd, jacrev, hessian, ...)
 * built by conf_run. Inputs: the case's (JAX's) arrays; tangents and
 * cotangents are ones, batched inputs two copies. */
#include <string.h>

#include "conf.h"

/* An array of av filled with ones (floats), or zeros (anything else). */
static ft_array *ones_of(ft_ctx *ctx, const ft_aval *av) {
  ft_array *a = ft_array_new(ctx, av->dtype, av->rank, av->dims);
  if (!a) return NULL;
  size_t n = (size_t)ft_array_size(a);
  memset(ft_array_data_mut(a), 0, ft_array_nbytes(a));
  for (size_t i = 0; i < n; i++) {
    if (av->dtype == FT_F32) ((float *)ft_array_data_mut(a))[i] = 1.0f;
    else if (av->dtype == FT_F64) ((double *)ft_array_data_mut(a))[i] = 1.0;
    else if (av->dtype == FT_C64) ((float *)ft_array_data_mut(a))[2 * i] = 1.0f;
    else if (av->dtype == FT_C128) ((double *)ft_array_data_mut(a))[2 * i] = 1.0;
  }
  return a;
}

int conf_rt_program(ft_ctx *ctx, const ft_jaxpr *j, ft_array *const *in, int n_in, char *why, size_t n_why) {
  why[0] = 0;
  int n_out = ft_jaxpr_num_outputs(j);
  char *text = ft_jaxpr_print(ctx, j);
  if (!text) return snprintf(why, n_why, "print failed: %s", ft_ctx_error(ctx)), CONF_RT_FAIL;
  ft_jaxpr *k = ft_parse(ctx, text, strlen(text), "reprint");
  if (!k) {
    snprintf(why, n_why, "the printout does not parse back: %s", ft_ctx_error(ctx));
    ft_free(text);
    return CONF_RT_FAIL;
  }
  uint8_t h1[16], h2[16];
  ft_jaxpr_hash(j, h1);
  ft_jaxpr_hash(k, h2);
  int r = CONF_RT_PASS;
  if (memcmp(h1, h2, 16)) {
    char *t2 = ft_jaxpr_print(ctx, k);
    size_t at = 0;
    while (t2 && text[at] && text[at] == t2[at]) at++;
    snprintf(why, n_why, "print -> parse changes the canonical hash (reprinted text differs at byte %zu: "
             "\"%.50s\" vs \"%.50s\")", at, text + at, t2 ? t2 + at : "");
    ft_free(t2);
    r = CONF_RT_FAIL;
  }
  ft_free(text);
  if (r == CONF_RT_PASS && in) {
    ft_array **a = calloc((size_t)n_out + 1, sizeof *a), **b = calloc((size_t)n_out + 1, sizeof *b);
    ft_ctx_clear_error(ctx);
    if (ft_eval(ctx, j, n_in, (const ft_array *const *)in, n_out, a) != FT_OK) {
      r = CONF_RT_NOEVAL; /* the property is about the text; nothing to run */
      ft_ctx_clear_error(ctx);
    } else if (ft_eval(ctx, k, n_in, (const ft_array *const *)in, n_out, b) != FT_OK) {
      snprintf(why, n_why, "the re-parsed program does not run: %s", ft_ctx_error(ctx));
      r = CONF_RT_FAIL;
    } else {
      for (int q = 0; q < n_out && r == CONF_RT_PASS; q++)
        if (!ft_array_equal_bits(a[q], b[q])) {
          snprintf(why, n_why, "output %d of the re-parsed program differs", q);
          r = CONF_RT_FAIL;
        }
    }
    for (int q = 0; q < n_out; q++) ft_array_free(a[q]), ft_array_free(b[q]);
    free(a), free(b);
  }
  ft_jaxpr_free(k);
  return r;
}

/* in (n_in arrays) followed by ones for every further input of j. */
static int extend(ft_ctx *ctx, const ft_jaxpr *j, ft_array *const *in, int n_in, ft_array **all, int max) {
  int n = ft_jaxpr_num_inputs(j);
  if (n > max || n < n_in) return -1;
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    all[i] = i < n_in ? in[i] : ones_of(ctx, &av);
    if (!all[i]) return -1;
  }
  return n;
}

static void drop(ft_array **all, int from, int n) {
  for (int i = from; i < n; i++) ft_array_free(all[i]);
}

enum { MAXT = 256 };

/* One transformed program: built (or skipped when it cannot be), checked
 * with in and ones. */
static void rt_one(ft_ctx *ctx, const char *what, ft_jaxpr *t, ft_array *const *in, int n_in, conf_rt_note fn,
                   void *user) {
  char why[512];
  if (!t) {
    snprintf(why, sizeof why, "not built: %s", ft_ctx_error(ctx));
    ft_ctx_clear_error(ctx);
    fn(user, what, CONF_RT_NOBUILD, why);
    return;
  }
  ft_array *all[MAXT];
  int n = in ? extend(ctx, t, in, n_in, all, MAXT) : -1;
  /* without inputs (or too many), the text half of the property alone */
  int r = conf_rt_program(ctx, t, n < 0 ? NULL : all, n < 0 ? 0 : n, why, sizeof why);
  if (n >= 0) drop(all, n_in, n);
  fn(user, what, r, why);
  ft_ctx_clear_error(ctx);
  ft_jaxpr_free(t);
}

void conf_rt_transforms(ft_ctx *ctx, const ft_jaxpr *j, ft_array *const *in, int n_in, conf_rt_note fn,
                        void *user) {
  int n_const = j->const_data ? 0 : j->n_const;
  ft_ctx_clear_error(ctx);
  rt_one(ctx, "jvp", ft_jvp(ctx, j), in, n_in, fn, user);
  rt_one(ctx, "vjp", ft_vjp_jaxpr(ctx, j), in, n_in, fn, user);

  /* linearize: the primal program on in, the tangent one on its residuals */
  ft_jaxpr *pp = NULL, *tp = NULL;
  int n_res = 0;
  if (ft_linearize(ctx, j, &pp, &tp, &n_res) != FT_OK) {
    rt_one(ctx, "linearize", NULL, in, n_in, fn, user);
  } else {
    int np = ft_jaxpr_num_outputs(pp);
    ft_array **po = calloc((size_t)np + 1, sizeof *po);
    bool ran = po && ft_eval(ctx, pp, n_in, (const ft_array *const *)in, np, po) == FT_OK;
    rt_one(ctx, "linearize:primal", pp, in, n_in, fn, user);
    ft_ctx_clear_error(ctx);
    if (ran) rt_one(ctx, "linearize:tangent", tp, po + (np - n_res), n_res, fn, user);
    else rt_one(ctx, "linearize:tangent", tp, NULL, 0, fn, user);
    for (int q = 0; ran && q < np; q++) ft_array_free(po[q]);
    free(po);
  }

  /* vmap over a new leading axis of 2 (constants unbatched) */
  ft_jaxpr *vm = ft_vmap(ctx, j, 0, NULL, 0, NULL, 2);
  ft_array *st[MAXT];
  int ns = 0;
  bool ok = n_in <= MAXT;
  for (int i = 0; ok && i < n_in; i++) {
    if (i < n_const) {
      st[ns++] = (ft_array *)in[i];
      continue;
    }
    ft_aval av = ft_array_aval(in[i]), bv = av;
    bv.rank = av.rank + 1;
    bv.dims[0] = 2;
    for (int d = 0; d < av.rank; d++) bv.dims[d + 1] = av.dims[d];
    ft_array *b = ft_array_new(ctx, bv.dtype, bv.rank, bv.dims);
    if (!b) {
      ok = false;
      break;
    }
    size_t nb = ft_array_nbytes(in[i]);
    memcpy(ft_array_data_mut(b), ft_array_data_mut(in[i]), nb);
    memcpy((char *)ft_array_data_mut(b) + nb, ft_array_data_mut(in[i]), nb);
    st[ns++] = b;
  }
  if (ok) rt_one(ctx, "vmap", vm, st, ns, fn, user);
  else ft_jaxpr_free(vm);
  for (int i = n_const; i < ns; i++) ft_array_free(st[i]);

  /* grad of a real scalar output 0 w.r.t. the first float input */
  ft_aval o0;
  if (j->n_out >= 1 && ft_jaxpr_output_aval(j, 0, &o0) == FT_OK && o0.rank == 0 &&
      (o0.dtype == FT_F32 || o0.dtype == FT_F64)) {
    int arg = -1;
    for (int i = 0; i < j->n_in && arg < 0; i++)
      if (j->invars[i]->aval.dtype == FT_F32 || j->invars[i]->aval.dtype == FT_F64) arg = i;
    if (arg >= 0) rt_one(ctx, "grad", ft_grad(ctx, j, 1, &arg, j->n_out > 1), in, n_in, fn, user);
  }
}
