/* tests/random/test_random.c: jax.random (docs/random.md). Known answers of
 * Threefry-2x32-20 (Random123's kat_vectors, also in JAX's tests) and of
 * JAX's threefry keys; key types in avals (parse, print, rejection);
 * every case of fixtures/random/ (tools/oracle/gen_random.py: each
 * jax.random sampler traced by JAX) run by the interpreter and the JIT and
 * compared with JAX's outputs bitwise, or within the ulp bound the case
 * states; vmap of a sampler over keys equals the stacked draws bitwise. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

/* Random123 kat_vectors, threefry2x32 with 20 rounds: counter, key, result. */
START_TEST(threefry_known_answers) {
  static const uint32_t kat[3][6] = {
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t y[2];
    ft_threefry2x32(kat[i][2], kat[i][3], kat[i][0], kat[i][1], y);
    ck_assert_uint_eq(y[0], kat[i][4]);
    ck_assert_uint_eq(y[1], kat[i][5]);
  }
}
END_TEST

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "t");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

static ft_array *u32s(int rank, const int64_t *dims, const uint32_t *v) {
  ft_array *a = ft_array_from_data(C, FT_U32, rank, dims, v);
  ck_assert_ptr_nonnull(a);
  return a;
}

/* Runs j on in with the interpreter and the JIT; both must agree bitwise.
 * Returns the interpreter's outputs. */
static void run_both(const ft_jaxpr *j, int n_in, ft_array **in, int n_out, ft_array **out) {
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out) == FT_OK, "%s", ft_ctx_error(C));
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_array *jo[8] = {0};
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, jo) == FT_OK, "%s", ft_ctx_error(C));
  for (int k = 0; k < n_out; k++) {
    ck_assert_msg(ft_array_equal_bits(out[k], jo[k]), "output %d: JIT != interpreter", k);
    ft_array_free(jo[k]);
  }
  ft_fn_free(fn);
}

/* JAX's values: key(0) is (0, 0); key_data(split(key(0))) and
 * random_bits(key(0), (2,)) as JAX 0.12 prints them (partitionable). */
START_TEST(jax_known_answers) {
  ft_jaxpr *j = parse("{ lambda ; a:i32[]. let\n"
                      "    b:key<fry>[] = random_seed[impl=fry] a\n"
                      "    c:key<fry>[2] = random_split[shape=(2,)] b\n"
                      "    d:u32[2,2] = random_unwrap c\n"
                      "    e:u32[2] = random_bits[bit_width=32 shape=(2,)] b\n"
                      "    f:u32[2] = random_unwrap b\n"
                      "  in (d, e, f) }");
  int32_t s = 0;
  ft_array *in = ft_array_from_data(C, FT_I32, 0, NULL, &s), *out[3] = {0};
  run_both(j, 1, &in, 3, out);
  const uint32_t *d = ft_array_data(out[0]), *e = ft_array_data(out[1]), *f = ft_array_data(out[2]);
  static const uint32_t want_split[4] = {1797259609u, 2579123966u, 928981903u, 3453687069u};
  static const uint32_t want_bits[2] = {4070199207u, 4202968722u};
  for (int i = 0; i < 4; i++) ck_assert_uint_eq(d[i], want_split[i]);
  for (int i = 0; i < 2; i++) ck_assert_uint_eq(e[i], want_bits[i]);
  ck_assert_uint_eq(f[0], 0);
  ck_assert_uint_eq(f[1], 0);
  for (int k = 0; k < 3; k++) ft_array_free(out[k]);
  ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(key_types_parse_and_print) {
  const char *text = "{ lambda ; a:key<fry>[4,2] b:key<rbg>[] c:key<urbg>[3]. let\n"
                     "    d:key<fry>[2,4] = transpose[permutation=(1, 0)] a\n"
                     "    e:key<fry>[8] = reshape[dimensions=None new_sizes=(8,)] d\n"
                     "  in (e, b, c) }";
  ft_jaxpr *j = parse(text);
  char *p = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(strstr(p, "a:key<fry>[4,2] b:key<rbg>[] c:key<urbg>[3]") != NULL, "%s", p);
  ck_assert_msg(strstr(p, "e:key<fry>[8] = reshape") != NULL, "%s", p);
  ft_free(p);
  ft_jaxpr_free(j);
  /* unknown impls and arithmetic on keys are refused with the reason */
  static const struct { const char *text, *msg; } bad[] = {
      {"{ lambda ; a:key<foo>[]. let  in (a,) }", "unknown PRNG key implementation 'foo'"},
      {"{ lambda ; a:key<fry>[2]. let b:key<fry>[2] = add a a in (b,) }", "operand dtype key<fry>"},
      {"{ lambda ; a:key<fry>[2]. let b:f32[2] = convert_element_type[new_dtype=float32 "
       "weak_type=False] a in (b,) }", "random_wrap/random_unwrap"},
      {"{ lambda ; a:u32[3]. let b:key<fry>[] = random_wrap[impl=fry] a in (b,) }",
       "must be u32[...,2]"},
      {"{ lambda ; a:u32[2]. let b:u32[2] = random_bits[bit_width=32 shape=(2,)] a in (b,) }",
       "must be a PRNG key array"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ft_jaxpr *b = ft_parse(C, bad[i].text, strlen(bad[i].text), "bad");
    ck_assert_msg(b == NULL, "accepted: %s", bad[i].text);
    ck_assert_msg(strstr(ft_ctx_error(C), bad[i].msg) != NULL, "%s: %s", bad[i].text, ft_ctx_error(C));
  }
}
END_TEST

/* The impls that are not built parse, and are refused where they are used. */
START_TEST(rbg_is_refused_clearly) {
  ft_jaxpr *j = parse("{ lambda ; a:i32[]. let\n"
                      "    b:key<rbg>[] = random_seed[impl=rbg] a\n"
                      "    c:u32[3] = random_bits[bit_width=32 shape=(3,)] b\n"
                      "  in (c,) }");
  int32_t s = 1;
  ft_array *in = ft_array_from_data(C, FT_I32, 0, NULL, &s), *out = NULL;
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&in, 1, &out), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "PRNG implementation 'rbg' (key<rbg>) is not built") != NULL,
                "%s", ft_ctx_error(C));
  ft_fn *fn = ft_jit(C, j, NULL);
  if (fn) {
    ck_assert_int_ne(ft_call(fn, 1, (const ft_array *const *)&in, 1, &out), FT_OK);
    ck_assert_msg(strstr(ft_ctx_error(C), "is not built") != NULL, "%s", ft_ctx_error(C));
  }
  ft_fn_free(fn);
  ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

/* vmap of normal over 5 keys is bitwise the 5 draws stacked. */
START_TEST(vmap_equals_stacking) {
  ft_jaxpr *j = parse("{ lambda ; a:key<fry>[]. let\n"
                      "    b:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n"
                      "    c:key<fry>[2] = random_split[shape=(2,)] a\n"
                      "    d:key<fry>[] = random_fold_in a 9:u32[]\n"
                      "    e:u32[2] = random_unwrap d\n"
                      "    f:u32[2,2] = random_unwrap c\n"
                      "  in (b, e, f) }");
  int ax = 0;
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), &ax, 0, NULL, 5);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  uint32_t kd[10];
  for (int i = 0; i < 10; i++) kd[i] = 0x9e3779b9u * (uint32_t)(i + 1);
  int64_t dims[2] = {5, 2};
  ft_array *keys = u32s(2, dims, kd), *vo[3] = {0};
  ck_assert_int_eq(ft_array_wrap_keys(C, keys, FT_KEY_FRY), FT_OK);
  run_both(v, 1, &keys, 3, vo);
  for (int i = 0; i < 5; i++) {
    int64_t one = 2;
    ft_array *k = u32s(1, &one, kd + 2 * i), *o[3] = {0};
    ck_assert_int_eq(ft_array_wrap_keys(C, k, FT_KEY_FRY), FT_OK);
    run_both(j, 1, &k, 3, o);
    for (int q = 0; q < 3; q++) {
      size_t nb = ft_array_nbytes(o[q]);
      ck_assert(!memcmp((const char *)ft_array_data(vo[q]) + i * nb, ft_array_data(o[q]), nb));
      ft_array_free(o[q]);
    }
    ft_array_free(k);
  }
  for (int q = 0; q < 3; q++) ft_array_free(vo[q]);
  ft_array_free(keys);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
}
END_TEST

/* random_gamma vmapped over keys and alphas (and over keys with shared
 * alphas) is, lane by lane, the unbatched draw: JAX's batching rule moves
 * both batch axes to the front and the sampler splits each key over the
 * rest of a. Both log_space settings, f32 and f64. */
static void gamma_vmap_case(const char *dt, ft_dtype fdt) {
  char text[1024];
  snprintf(text, sizeof text,
           "{ lambda ; a:key<fry>[] b:%s[3]. let\n"
           "    c:%s[3] = random_gamma[log_space=False] a b\n"
           "    d:%s[3] = random_gamma[log_space=True] a b\n"
           "  in (c, d) }", dt, dt, dt);
  ft_jaxpr *j = parse(text);
  uint32_t kd[10];
  for (int i = 0; i < 10; i++) kd[i] = 0x85ebca6bu * (uint32_t)(i + 3);
  double av[15];
  for (int i = 0; i < 15; i++) av[i] = 0.05 + 0.7 * i; /* below and above 1 */
  float af[15];
  for (int i = 0; i < 15; i++) af[i] = (float)av[i];
  const void *adata = fdt == FT_F32 ? (const void *)af : (const void *)av;
  size_t es = fdt == FT_F32 ? 4 : 8;
  for (int shared = 0; shared < 2; shared++) {
    int axes[2] = {0, shared ? FT_VMAP_NONE : 0};
    ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), axes, 0, NULL, 5);
    ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
    int64_t kdims[2] = {5, 2}, adims[2] = {5, 3}, three = 3;
    ft_array *in[2] = {u32s(2, kdims, kd), shared ? ft_array_from_data(C, fdt, 1, &three, adata)
                                                   : ft_array_from_data(C, fdt, 2, adims, adata)};
    ck_assert_int_eq(ft_array_wrap_keys(C, in[0], FT_KEY_FRY), FT_OK);
    ft_array *vo[2] = {0};
    run_both(v, 2, in, 2, vo);
    for (int i = 0; i < 5; i++) {
      int64_t two = 2;
      ft_array *one[2] = {u32s(1, &two, kd + 2 * i),
                          ft_array_from_data(C, fdt, 1, &three,
                                             (const char *)adata + (shared ? 0 : (size_t)(3 * i) * es))};
      ck_assert_int_eq(ft_array_wrap_keys(C, one[0], FT_KEY_FRY), FT_OK);
      ft_array *o[2] = {0};
      run_both(j, 2, one, 2, o);
      for (int q = 0; q < 2; q++) {
        size_t nb = ft_array_nbytes(o[q]);
        ck_assert_msg(!memcmp((char *)ft_array_data(vo[q]) + i * nb, ft_array_data(o[q]), nb),
                      "%s lane %d output %d (shared alphas %d): vmap != the unbatched draw", dt, i,
                      q, shared);
        ft_array_free(o[q]);
      }
      ft_array_free(one[0]), ft_array_free(one[1]);
    }
    /* the samples are gamma draws: positive, and log_space is their log
     * up to rounding (JAX draws the boost's uniform the same way in both) */
    for (int64_t e = 0; e < 15; e++) {
      double g = fdt == FT_F32 ? ((float *)ft_array_data(vo[0]))[e] : ((double *)ft_array_data(vo[0]))[e];
      double lg = fdt == FT_F32 ? ((float *)ft_array_data(vo[1]))[e] : ((double *)ft_array_data(vo[1]))[e];
      ck_assert_msg(g >= 0 && isfinite(lg), "%s element %lld: gamma %g, log %g", dt, (long long)e, g, lg);
      if (g > 1e-30) ck_assert_msg(fabs(log(g) - lg) < 1e-4 * (1 + fabs(lg)), "%s element %lld: log(%g) != %g", dt, (long long)e, g, lg);
    }
    for (int q = 0; q < 2; q++) ft_array_free(vo[q]);
    ft_array_free(in[0]), ft_array_free(in[1]);
    ft_jaxpr_free(v);
  }
  ft_jaxpr_free(j);
}

START_TEST(gamma_vmap_equals_stacking) {
  gamma_vmap_case("f32", FT_F32);
  gamma_vmap_case("f64", FT_F64);
}
END_TEST

/* random_gamma refuses keys that do not prefix a's shape, naming both; it
 * differentiates in a (JAX's values: the agrad_ fixtures) and without a
 * tangent in a. */
START_TEST(gamma_refusals) {
  const char *bad = "{ lambda ; a:key<fry>[2] b:f32[3]. let c:f32[3] = random_gamma[log_space=False] a b in (c,) }";
  ck_assert(ft_parse(C, bad, strlen(bad), "t") == NULL);
  ck_assert_msg(strstr(ft_ctx_error(C), "the keys' shape must prefix a's shape") != NULL, "%s",
                ft_ctx_error(C));
  ft_jaxpr *j = parse("{ lambda ; a:f32[] b:key<fry>[]. let\n"
                      "    c:f32[] = random_gamma[log_space=False] b a\n"
                      "    d:f32[] = mul c a\n"
                      "  in (d,) }");
  int arg0 = 0;
  ft_jaxpr *ga = ft_grad(C, j, 1, &arg0, false);
  ck_assert_msg(ga != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(ga);
  ft_jaxpr_free(j);
  /* no tangent reaches a: the draw is a constant of the gradient */
  j = parse("{ lambda ; a:f32[] b:key<fry>[]. let\n"
            "    c:f32[] = random_gamma[log_space=False] b 2.5:f32[]\n"
            "    d:f32[] = mul c a\n"
            "  in (d,) }");
  ft_jaxpr *g = ft_grad(C, j, 1, &arg0, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(g);
  ft_jaxpr_free(j);
}
END_TEST

/* Keys have no numeric value: a key scalar is refused when traced, and the
 * runtime's element accessors on a key array neither recurse nor write. */
static int key_scalar(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)in, (void)max_out, (void)user;
  out[0] = ft_scalar(t, FT_KEY_FRY, 1.0);
  return 1;
}

START_TEST(keys_have_no_numeric_value) {
  ft_aval f = ft_aval_make(FT_F32, 0, NULL);
  ck_assert(ft_trace(C, key_scalar, NULL, 1, &f) == NULL);
  ck_assert_msg(strstr(ft_ctx_error(C), "key<fry> has no numeric value") != NULL, "%s", ft_ctx_error(C));
  uint32_t kd[2] = {7, 9};
  int64_t two = 2;
  ft_array *k = u32s(1, &two, kd);
  ck_assert_int_eq(ft_array_wrap_keys(C, k, FT_KEY_FRY), FT_OK);
  ft_set_i64(k, 0, 5);
  ft_set_f64(k, 0, 5.0);
  ck_assert(ft_get_i64(k, 0) == 0 && ft_get_f64(k, 0) == 0.0);
  ck_assert_uint_eq(((uint32_t *)ft_array_data(k))[0], 7);
  ck_assert_uint_eq(((uint32_t *)ft_array_data(k))[1], 9);
  ft_array_free(k);
}
END_TEST

/* ------------------------------------------------------ the C API */

static int traced(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  int64_t five = 5, ten = 10, six = 6, lg[2] = {2, 3};
  (void)ten;
  float lv[6] = {0, 1, 2, 2, 1, 0};
  ft_val *key = in[0];
  out[0] = ft_random_uniform(key, FT_F32, 1, &five, 0.0, 1.0);
  out[1] = ft_random_permutation(key, 10);
  out[2] = ft_random_bernoulli(key, 0.3, 1, &six);
  out[3] = ft_random_categorical(key, ft_constant(t, FT_F32, 2, lg, lv), -1);
  out[4] = ft_random_unwrap(ft_random_fold_in(key, ft_const_i32(t, 77)));
  out[5] = ft_random_normal(key, FT_F32, 1, &five);
  return 6;
}

/* loss(w) = sum(dropout(key, w, 0.5)^2), key an input */
static int dropout_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *d = ft_dropout(in[1], in[0], 0.5);
  out[0] = ft_sum(ft_mul(d, d), -1, NULL, false);
  return 1;
}

/* The traced samplers draw JAX's values for key(5) (printed by JAX 0.12). */
START_TEST(c_api_matches_jax) {
  ft_aval kav = ft_aval_scalar(FT_KEY_FRY);
  ft_jaxpr *j = ft_trace(C, traced, NULL, 1, &kav);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  uint32_t kd[2] = {0, 5};
  int64_t two = 2;
  ft_array *key = u32s(1, &two, kd), *out[6] = {0};
  ck_assert_int_eq(ft_array_wrap_keys(C, key, FT_KEY_FRY), FT_OK);
  run_both(j, 1, &key, 6, out);
  static const uint32_t uni[5] = {1055836504u, 1064025820u, 1060920846u, 1036171792u, 1063918590u};
  static const int32_t perm[10] = {9, 0, 2, 4, 8, 1, 3, 5, 7, 6};
  static const bool bern[6] = {0, 0, 0, 1, 0, 0};
  static const int32_t cat[2] = {1, 1};
  static const uint32_t fold[2] = {1111628739u, 2812123778u};
  ck_assert(!memcmp(ft_array_data(out[0]), uni, sizeof uni));
  ck_assert(!memcmp(ft_array_data(out[1]), perm, sizeof perm));
  ck_assert(!memcmp(ft_array_data(out[2]), bern, sizeof bern));
  ck_assert(!memcmp(ft_array_data(out[3]), cat, sizeof cat));
  ck_assert(!memcmp(ft_array_data(out[4]), fold, sizeof fold));
  for (int k = 0; k < 6; k++) ft_array_free(out[k]);
  ft_jaxpr_free(j);
  /* grad of a loss with dropout: JAX's gradient, 2 * mask * w / 0.5 / 0.5 */
  int64_t six = 6;
  ft_aval av[2] = {ft_aval_make(FT_F32, 1, &six), kav};
  ft_jaxpr *l = ft_trace(C, dropout_loss, NULL, 2, av);
  ck_assert_msg(l != NULL, "%s", ft_ctx_error(C));
  int arg = 0;
  ft_jaxpr *g = ft_grad(C, l, 1, &arg, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  float w[6] = {0, 1, 2, 3, 4, 5}, want[6] = {0, 0, 0, 24, 0, 0};
  ft_array *in[2] = {ft_array_from_data(C, FT_F32, 1, &six, w), key}, *go = NULL;
  run_both(g, 2, in, 1, &go);
  ck_assert(!memcmp(ft_array_data(go), want, sizeof want));
  ft_array_free(go), ft_array_free(in[0]), ft_array_free(key);
  ft_jaxpr_free(g), ft_jaxpr_free(l);
}
END_TEST

/* ------------------------------------------------- the JAX fixtures */

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, f) != (size_t)len) free(b), b = NULL;
  if (b) b[len] = 0, *n = (size_t)len;
  fclose(f);
  return b;
}

/* Units in the last place between two floats of one dtype (same sign). */
static uint64_t ulps(ft_dtype dt, const void *a, const void *b, int64_t i) {
  if (dt == FT_F32) {
    int32_t x, y;
    memcpy(&x, (const char *)a + 4 * i, 4), memcpy(&y, (const char *)b + 4 * i, 4);
    if ((x < 0) != (y < 0)) return x == y ? 0 : UINT64_MAX;
    return (uint64_t)llabs((long long)x - y);
  }
  int64_t x, y;
  memcpy(&x, (const char *)a + 8 * i, 8), memcpy(&y, (const char *)b + 8 * i, 8);
  if ((x < 0) != (y < 0)) return x == y ? 0 : UINT64_MAX;
  return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

/* Compares got with JAX's want: bitwise, or floats within tol ulps. Returns
 * the largest distance seen (0: bitwise). */
static uint64_t compare(const char *cs, int k, const ft_array *got, const ft_array *want, int tol) {
  ft_aval g = ft_array_aval(got), w = ft_array_aval(want);
  char s1[128], s2[128];
  ck_assert_msg(ft_aval_size(&g) * (int64_t)ft_dtype_size(g.dtype) ==
                    ft_aval_size(&w) * (int64_t)ft_dtype_size(w.dtype),
                "%s out%d: %s vs JAX %s", cs, k, ft_aval_str(&g, s1, sizeof s1),
                ft_aval_str(&w, s2, sizeof s2));
  if (ft_array_nbytes(got) && !memcmp(ft_array_data(got), ft_array_data(want), ft_array_nbytes(got)))
    return 0;
  ck_assert_msg(tol > 0 && (g.dtype == FT_F32 || g.dtype == FT_F64),
                "%s out%d (%s): not bitwise JAX's", cs, k, ft_aval_str(&g, s1, sizeof s1));
  uint64_t worst = 0;
  for (int64_t i = 0; i < ft_aval_size(&g); i++) {
    uint64_t d = ulps(g.dtype, ft_array_data(got), ft_array_data(want), i);
    if (d > worst) worst = d;
  }
  ck_assert_msg(worst <= (uint64_t)tol, "%s out%d: %llu ulps from JAX's (bound %d)", cs, k,
                (unsigned long long)worst, tol);
  return worst;
}

START_TEST(jax_samplers_bitwise) {
  const char *dir = getenv("FT_FIXTURES");
  ck_assert_msg(dir != NULL, "FT_FIXTURES is not set");
  char path[1024], line[256];
  snprintf(path, sizeof path, "%s/random/CASES.txt", dir);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  int n_cases = 0, n_bitwise = 0, n_blocked = 0, n_grad = 0;
  while (fgets(line, sizeof line, f)) {
    char name[128], tolstr[32];
    int n_in, n_out;
    if (line[0] == '#' || sscanf(line, "%127s %d %d %31s", name, &n_in, &n_out, tolstr) != 4) continue;
    int tol = strncmp(tolstr, "ulp:", 4) ? 0 : atoi(tolstr + 4);
    ck_assert(n_in >= 1 && n_in <= 4 && n_out >= 1 && n_out <= 8);
    size_t len = 0;
    snprintf(path, sizeof path, "%s/random/%s.jaxpr", dir, name);
    char *text = slurp(path, &len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    ft_jaxpr *j = ft_parse(C, text, len, name);
    free(text);
    if (!strncmp(tolstr, "blocked:", 8)) { /* refused, naming the missing primitive */
      char want[96];
      snprintf(want, sizeof want, "unknown primitive '%s'", tolstr + 8);
      ck_assert_msg(j == NULL, "%s now parses: make it a real check in gen_random.py", name);
      ck_assert_msg(strstr(ft_ctx_error(C), want) != NULL, "%s: %s", name, ft_ctx_error(C));
      n_blocked++;
      continue;
    }
    ck_assert_msg(j != NULL, "%s: %s", name, ft_ctx_error(C));
    if (strstr(name, "agrad_")) { /* the loss: its gradient in alpha (input 0) against jax.grad */
      int arg0 = 0;
      ft_jaxpr *g = ft_grad(C, j, 1, &arg0, false);
      ck_assert_msg(g != NULL, "%s: %s", name, ft_ctx_error(C));
      ft_jaxpr_free(j);
      j = g;
      n_grad++;
    }
    ft_array *in[4] = {0}, *out[8] = {0};
    for (int i = 0; i < n_in; i++) {
      snprintf(path, sizeof path, "%s/random/%s.in%d.npy", dir, name, i);
      in[i] = ft_npy_read(C, path);
      ck_assert_msg(in[i] != NULL, "%s", ft_ctx_error(C));
      ft_aval want; /* constvars' values first, then the inputs */
      int nc = n_in - ft_jaxpr_num_inputs(j);
      if (i >= nc && ft_jaxpr_input_aval(j, i - nc, &want) == FT_OK && ft_dtype_is_key(want.dtype))
        ck_assert_msg(ft_array_wrap_keys(C, in[i], want.dtype) == FT_OK, "%s", ft_ctx_error(C));
    }
    ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out) == FT_OK, "%s: %s", name, ft_ctx_error(C));
    ft_fn *fn = ft_jit(C, j, NULL);
    ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
    ft_array *jo[8] = {0};
    ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, jo) == FT_OK, "%s: %s", name, ft_ctx_error(C));
    uint64_t worst = 0;
    for (int k = 0; k < n_out; k++) {
      snprintf(path, sizeof path, "%s/random/%s.out%d.npy", dir, name, k);
      ft_array *w = ft_npy_read(C, path);
      ck_assert_msg(w != NULL, "%s", ft_ctx_error(C));
      ck_assert_msg(ft_array_equal_bits(out[k], jo[k]), "%s out%d: JIT != interpreter", name, k);
      uint64_t d = compare(name, k, out[k], w, tol);
      worst = d > worst ? d : worst;
      ft_array_free(w), ft_array_free(out[k]), ft_array_free(jo[k]);
    }
    n_bitwise += worst == 0;
    n_cases++;
    ft_fn_free(fn);
    for (int i = 0; i < n_in; i++) ft_array_free(in[i]);
    ft_jaxpr_free(j);
  }
  fclose(f);
  printf("random: %d JAX cases run (%d gradients in alpha), %d bitwise, %d within their ulp "
         "bound; %d blocked on a missing primitive\n", n_cases, n_grad, n_bitwise, n_cases - n_bitwise,
         n_blocked);
  ck_assert_int_eq(n_grad, 12);
  ck_assert_int_ge(n_cases, 90);
  ck_assert_int_ge(n_cases + n_blocked, 120);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("random");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 300);
  tcase_add_test(t, threefry_known_answers);
  tcase_add_test(t, jax_known_answers);
  tcase_add_test(t, key_types_parse_and_print);
  tcase_add_test(t, rbg_is_refused_clearly);
  tcase_add_test(t, vmap_equals_stacking);
  tcase_add_test(t, gamma_vmap_equals_stacking);
  tcase_add_test(t, gamma_refusals);
  tcase_add_test(t, keys_have_no_numeric_value);
  tcase_add_test(t, c_api_matches_jax);
  tcase_add_test(t, jax_samplers_bitwise);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
