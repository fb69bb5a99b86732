/* tests/fuzz/fuzz_roundtrip.c: the print -> parse property of issue 16 on
 * mutated and transformed programs. The input is one selector byte, then
 * jaxpr text (the corpus: small golden programs with sub-jaxprs). A text
 * that parses is
 *   1. mutated when the selector asks (bit 4: tests/transforms/sub_mutate.h
 *      calls it at several sites through shared, renamed, re-shaped and
 *      duplicated definitions, kind = the low four bits),
 *   2. transformed by the selector's high bits (none, jvp, vjp, vmap of 2,
 *      grad, linearize's tangent program, inline, optimize),
 *   3. printed and parsed back: the hash must not change, the reprint must
 *      be the print (canonical), and on small inputs (a fixed pattern) the
 *      interpreter must give bitwise the same outputs for both (loops are
 *      bounded by the context's limits, big programs are not run).
 * Every failure to build a mutation or a transform must come with a
 * message. */
#include <string.h>

#include "fuzz.h"
#include "ft.h"
#include "../transforms/sub_mutate.h"

static ft_ctx *ctx;

/* Every value a run would make, sub-jaxprs included, is small (so a run
 * cannot exhaust memory). */
static bool small(const ft_jaxpr *j, int depth) {
  if (depth > 8) return false;
  for (int i = 0; i < j->n_in; i++)
    if (ft_aval_size(&j->invars[i]->aval) > 4096) return false;
  for (int q = 0; q < j->n_eqn; q++) {
    const ft_eqn *e = &j->eqns[q];
    for (int k = 0; k < e->n_out; k++)
      if (ft_aval_size(&e->out[k]->aval) > 4096) return false;
    const ft_prim_info *pi = ft_prim_get(e->prim);
    for (int p = 0; p < pi->n_params; p++) {
      const ft_pval *v = &e->params[p];
      int n = v->tag == FT_PV_TUPLE ? v->n : 1;
      for (int i = 0; i < n; i++) {
        const ft_pval *x = v->tag == FT_PV_TUPLE ? &v->u.items[i] : v;
        if (x->tag == FT_PV_JAXPR && x->u.jaxpr && !small(x->u.jaxpr, depth + 1)) return false;
      }
    }
  }
  return true;
}

static ft_jaxpr *transform(ft_jaxpr *j, int which) {
  ft_jaxpr *r = NULL;
  switch (which) {
  case 0: return j;
  case 1: r = ft_jvp(ctx, j); break;
  case 2: r = ft_vjp_jaxpr(ctx, j); break;
  case 3: r = ft_vmap(ctx, j, 0, NULL, 0, NULL, 2); break;
  case 4: {
    int arg = 0;
    r = ft_grad(ctx, j, 1, &arg, ft_jaxpr_num_outputs(j) > 1);
    break;
  }
  case 5: {
    ft_jaxpr *p = NULL;
    if (ft_linearize(ctx, j, &p, &r, NULL) == FT_OK) ft_jaxpr_free(p);
    break;
  }
  case 6: r = ft_inline(ctx, j); break;
  default: r = ft_optimize(ctx, j, FT_OPT_EXACT, NULL); break;
  }
  if (!r) FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "transform %d failed silently", which);
  ft_jaxpr_free(j);
  return r;
}

static void run_both(const ft_jaxpr *a, const ft_jaxpr *b) {
  int ni = ft_jaxpr_num_inputs(a), no = ft_jaxpr_num_outputs(a);
  if (ni > 64 || no > 64 || !small(a, 0)) return;
  ft_array *in[64] = {0}, *oa[64] = {0}, *ob[64] = {0};
  bool ok = true;
  for (int i = 0; i < ni && ok; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(a, i, &av);
    ok = (in[i] = ft_array_new(ctx, av.dtype, av.rank, av.dims)) != NULL;
    if (!ok) break;
    /* small values, not all equal: floats 0.25..1.75, ints 0..2, bools alternating */
    memset(ft_array_data_mut(in[i]), 0, ft_array_nbytes(in[i]));
    size_t n = (size_t)ft_aval_size(&av);
    for (size_t e = 0; e < n; e++) {
      size_t r = e + (size_t)i;
      double v = av.dtype == FT_BOOL            ? (double)(e & 1)
                 : ft_dtype_is_float(av.dtype) ? 0.25 + 0.25 * (double)(r % 7)
                                               : (double)(r % 3);
      if (av.dtype == FT_F32) ((float *)ft_array_data_mut(in[i]))[e] = (float)v;
      else if (av.dtype == FT_F64) ((double *)ft_array_data_mut(in[i]))[e] = v;
      else if (av.dtype == FT_I32) ((int32_t *)ft_array_data_mut(in[i]))[e] = (int32_t)v;
      else if (av.dtype == FT_I64) ((int64_t *)ft_array_data_mut(in[i]))[e] = (int64_t)v;
      else if (av.dtype == FT_BOOL) ((uint8_t *)ft_array_data_mut(in[i]))[e] = (uint8_t)v;
    }
  }
  if (ok && ft_eval(ctx, a, ni, (const ft_array *const *)in, no, oa) == FT_OK) {
    FUZZ_CHECK(ft_eval(ctx, b, ni, (const ft_array *const *)in, no, ob) == FT_OK, "the re-parsed program does not run: %s",
               ft_ctx_error(ctx));
    for (int k = 0; k < no; k++)
      FUZZ_CHECK(ft_array_equal_bits(oa[k], ob[k]), "output %d of the re-parsed program differs", k);
  }
  for (int k = 0; k < no; k++) ft_array_free(oa[k]), ft_array_free(ob[k]);
  for (int i = 0; i < ni; i++) ft_array_free(in[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) {
    if (!(ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1}))) abort();
    ft_ctx_set_loop_limits(ctx, &(ft_loop_limits){.size = sizeof(ft_loop_limits), .max_iterations = 1000, .max_seconds = 1.0});
  }
  if (size < 2 || size > 16384) return 0;
  unsigned sel = data[0];
  ft_ctx_clear_error(ctx);
  ft_jaxpr *j = ft_parse(ctx, (const char *)data + 1, size - 1, "fuzz");
  if (!j) return 0;
  if (sel & 16) {
    ft_jaxpr *m = sub_mutate(ctx, j, sel & 15);
    if (!m) FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "mutation failed silently");
    ft_jaxpr_free(j);
    if (!(j = m)) return 0;
  }
  ft_ctx_clear_error(ctx);
  if (!(j = transform(j, (int)(sel >> 5)))) return 0;
  FUZZ_CHECK(ft_jaxpr_verify(ctx, j) == FT_OK, "the result does not verify: %s", ft_ctx_error(ctx));
  char *text = ft_jaxpr_print(ctx, j);
  FUZZ_CHECK(text != NULL, "print failed: %s", ft_ctx_error(ctx));
  ft_jaxpr *k = ft_parse(ctx, text, strlen(text), "fuzz-reprint");
  FUZZ_CHECK(k != NULL, "the printout does not parse: %s\n--- text:\n%s", ft_ctx_error(ctx), text);
  uint8_t h1[16], h2[16];
  ft_jaxpr_hash(j, h1);
  ft_jaxpr_hash(k, h2);
  FUZZ_CHECK(!memcmp(h1, h2, 16), "print -> parse changes the hash\n--- text:\n%s", text);
  char *text2 = ft_jaxpr_print(ctx, k);
  FUZZ_CHECK(text2 && !strcmp(text, text2), "print is not a fixed point\n--- first:\n%s\n--- second:\n%s", text,
             text2 ? text2 : "(null)");
  run_both(j, k);
  ft_ctx_clear_error(ctx);
  ft_free(text2);
  ft_free(text);
  ft_jaxpr_free(k);
  ft_jaxpr_free(j);
  return 0;
}
