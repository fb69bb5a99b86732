/* tests/vmap/vt.c: see vt.h. */
#include "vt.h"

#include <check.h>
#include <math.h>
#include <string.h>

uint64_t vt_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

ft_array *vt_random(ft_ctx *ctx, const ft_aval *av, uint64_t *seed, int64_t lo, int64_t hi) {
  ft_array *a = ft_array_new(ctx, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  int64_t n = ft_aval_size(av);
  void *d = ft_array_data_mut(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = vt_rand(seed);
    double f = ((double)(r >> 11) / 9007199254740992.0) * 8.0 - 4.0;
    int64_t k = lo + (int64_t)(r % (uint64_t)(hi - lo + 1));
    if (r % 17 == 0) f = 0.0;
    if (r % 19 == 0) f = -0.0;
    switch (av->dtype) {
    case FT_F32: ((float *)d)[i] = (float)f; break;
    case FT_F64: ((double *)d)[i] = f; break;
    case FT_I32: ((int32_t *)d)[i] = (int32_t)k; break;
    case FT_I64: ((int64_t *)d)[i] = k; break;
    case FT_U32: ((uint32_t *)d)[i] = (uint32_t)k; break;
    case FT_U8: ((uint8_t *)d)[i] = (uint8_t)k; break;
    case FT_I8: ((int8_t *)d)[i] = (int8_t)k; break;
    case FT_BOOL: ((uint8_t *)d)[i] = (uint8_t)(r >> 40) & 1; break;
    case FT_C64:
      ((float *)d)[2 * i] = (float)f;
      ((float *)d)[2 * i + 1] = (float)(((double)(vt_rand(seed) >> 11) / 9007199254740992.0) - 0.5);
      break;
    default: ck_abort_msg("vt_random: dtype %s", ft_dtype_name(av->dtype));
    }
  }
  return a;
}

ft_aval vt_insert(const ft_aval *av, int at, int64_t n) {
  ft_aval r = *av;
  for (int i = av->rank; i > at; i--) r.dims[i] = r.dims[i - 1];
  r.dims[at] = n;
  r.rank++;
  return r;
}

ft_array *vt_take(ft_ctx *ctx, const ft_array *a, int axis, int64_t b) {
  ft_aval av = ft_array_aval(a), r = av;
  ck_assert_int_lt(axis, av.rank);
  for (int i = axis; i < av.rank - 1; i++) r.dims[i] = r.dims[i + 1];
  r.rank--;
  ft_array *o = ft_array_new(ctx, r.dtype, r.rank, r.dims);
  ck_assert_ptr_nonnull(o);
  size_t es = ft_dtype_size(av.dtype);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= av.dims[i];
  for (int i = axis + 1; i < av.rank; i++) inner *= av.dims[i];
  const char *s = ft_array_data(a);
  char *d = ft_array_data_mut(o);
  for (int64_t o1 = 0; o1 < outer; o1++)
    memcpy(d + (size_t)(o1 * inner) * es, s + (size_t)((o1 * av.dims[axis] + b) * inner) * es,
           (size_t)inner * es);
  return o;
}

ft_jaxpr *vt_parse(ft_ctx *ctx, const char *text) {
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse: %s\n%s", ft_ctx_error(ctx), text);
  return j;
}

static int norm(int ax, int rank) { return ax < 0 ? ax + rank : ax; }

int64_t vt_check_j(ft_ctx *ctx, const ft_jaxpr *j, const int *in_axes, const int *out_axes,
                   int64_t B, ft_array *const *xs) {
  int n = ft_jaxpr_num_inputs(j), m = ft_jaxpr_num_outputs(j);
  ft_jaxpr *v = ft_vmap(ctx, j, ft_jaxpr_num_inputs(j), in_axes, ft_jaxpr_num_outputs(j), out_axes, B);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(ctx));
  ck_assert_int_eq(ft_jaxpr_verify(ctx, v), FT_OK);
  ft_array *outs[16], *souts[16], *slices[16];
  ck_assert_int_le(m, 16);
  ck_assert_int_le(n, 16);
  ft_status st = ft_eval(ctx, v, n, (const ft_array *const *)xs, m, outs);
  if (st) {
    char *p = ft_jaxpr_print(ctx, v);
    ck_abort_msg("eval of vmap: %s\n%s", ft_ctx_error(ctx), p ? p : "");
  }
  int64_t compared = 0;
  for (int64_t b = 0; b < B; b++) {
    for (int i = 0; i < n; i++) {
      int ax = in_axes ? in_axes[i] : 0;
      if (ax == FT_VMAP_NONE) {
        slices[i] = NULL;
        continue;
      }
      slices[i] = vt_take(ctx, xs[i], norm(ax, ft_array_aval(xs[i]).rank), b);
    }
    ft_array *in[16];
    for (int i = 0; i < n; i++) in[i] = slices[i] ? slices[i] : xs[i];
    ck_assert_msg(ft_eval(ctx, j, n, (const ft_array *const *)in, m, souts) == FT_OK, "eval: %s", ft_ctx_error(ctx));
    for (int k = 0; k < m; k++) {
      int ax = out_axes ? out_axes[k] : 0;
      ft_array *got = ax == FT_VMAP_NONE
                          ? NULL
                          : vt_take(ctx, outs[k], norm(ax, ft_array_aval(outs[k]).rank), b);
      const ft_array *g = got ? got : outs[k];
      if (!ft_array_equal_bits(g, souts[k])) {
        char *p = ft_jaxpr_print(ctx, v);
        ft_aval ga = ft_array_aval(g), sa = ft_array_aval(souts[k]);
        char s1[64], s2[64];
        int64_t nel = ft_aval_size(&sa), bad = -1;
        if (ft_aval_size(&ga) == nel && ga.dtype == sa.dtype)
          for (int64_t e = 0; e < nel && bad < 0; e++)
            if (memcmp((const char *)ft_array_data(g) + e * ft_dtype_size(ga.dtype),
                       (const char *)ft_array_data(souts[k]) + e * ft_dtype_size(ga.dtype),
                       ft_dtype_size(ga.dtype)))
              bad = e;
        ck_abort_msg("output %d lane %lld differs (%s vs %s; first element %lld)\n%s", k,
                     (long long)b, ft_aval_str(&ga, s1, sizeof s1),
                     ft_aval_str(&sa, s2, sizeof s2), (long long)bad, p ? p : "");
      }
      ft_aval oa = ft_array_aval(souts[k]);
      compared += ft_aval_size(&oa);
      ft_array_free(got);
      ft_array_free(souts[k]);
    }
    for (int i = 0; i < n; i++) ft_array_free(slices[i]);
  }
  for (int k = 0; k < m; k++) ft_array_free(outs[k]);
  ft_jaxpr_free(v);
  return compared;
}

int64_t vt_check(ft_ctx *ctx, const char *text, const int *in_axes, const int *out_axes,
                 int64_t B, uint64_t seed, int64_t lo, int64_t hi) {
  ft_jaxpr *j = vt_parse(ctx, text);
  int n = ft_jaxpr_num_inputs(j);
  ft_array *xs[16];
  ck_assert_int_le(n, 16);
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, i, &av), FT_OK);
    int ax = in_axes ? in_axes[i] : 0;
    if (ax != FT_VMAP_NONE) av = vt_insert(&av, norm(ax, av.rank + 1), B);
    xs[i] = vt_random(ctx, &av, &seed, lo, hi);
  }
  int64_t r = vt_check_j(ctx, j, in_axes, out_axes, B, xs);
  for (int i = 0; i < n; i++) ft_array_free(xs[i]);
  ft_jaxpr_free(j);
  return r;
}
