/* tests/spmd/test_spmd.c: shard_map and the named-axis collectives over the
 * simulated axis (issue 27, docs/spmd.md). Every case of fixtures/spmd/
 * (tools/oracle/gen_spmd.py): the printout reads back and prints byte for
 * byte, and the interpreter's result equals JAX's bit for bit (the inputs
 * are small integers, so every sum is exact). Then: psum combines in index
 * order; bad axis names and mesh sizes fail with clear errors; the JIT
 * refuses shard_map with a message (and with allow_fallback runs it as an
 * interpreter step, same bits); jvp of the linear cases is (f(x), f(t));
 * vmap equals the stacked results; grad refuses with its reason. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static void path_of(char *buf, size_t n, const char *name, const char *ext) {
  const char *dir = getenv("FT_FIXTURES");
  ck_assert_ptr_nonnull(dir);
  snprintf(buf, n, "%s/spmd/%s%s", dir, name, ext);
}

/* The JIT runs shard_map as an interpreter step (allow_fallback): the
 * same bits. */
static void check_jit(const char *name, const ft_jaxpr *j, ft_array *in, const ft_array *want) {
  ft_jit_options o = {.size = sizeof(ft_jit_options)};
  o.allow_fallback = true;
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
  ft_array *got = NULL;
  ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&in, 1, &got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, want), "%s: JIT != interpreter", name);
  ft_array_free(got);
  ft_fn_free(fn);
}

/* Every case but pmax/pmin is linear in x: jvp(f)(x, t) is (f(x), f(t)),
 * bit for bit (the tangent runs the same operations on t). pmax/pmin
 * refuse with the reason. */
static void check_jvp(const char *name, const ft_jaxpr *j, ft_array *x, const ft_array *fx) {
  ft_jaxpr *d = ft_jvp(C, j);
  if (!strcmp(name, "pmax") || !strcmp(name, "pmin")) {
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(ft_ctx_error(C), "the JVP of pmax/pmin"), "%s", ft_ctx_error(C));
    return;
  }
  ck_assert_msg(d != NULL, "%s: %s", name, ft_ctx_error(C));
  ft_array *t = ft_array_clone(C, x);
  float *tv = ft_array_data_mut(t);
  for (int64_t i = 0; i < ft_array_size(t); i++) tv[i] = (float)(i % 7) - 3.0f;
  ft_array *in[2] = {x, t}, *out[2] = {0}, *ft_ = NULL;
  ck_assert_msg(ft_eval(C, d, 2, (const ft_array *const *)in, 2, out) == FT_OK, "%s: jvp: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&t, 1, &ft_) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(out[0], fx), "%s: jvp primal differs", name);
  ck_assert_msg(ft_array_equal_bits(out[1], ft_), "%s: jvp tangent is not f(t)", name);
  ft_array_free(t), ft_array_free(out[0]), ft_array_free(out[1]), ft_array_free(ft_);
  ft_jaxpr_free(d);
}

/* vmap over a batch of two inputs (x and another array) equals the two
 * results stacked, bit for bit. */
static void check_vmap(const char *name, const ft_jaxpr *j, ft_array *x) {
  int ax = 0;
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), &ax, ft_jaxpr_num_outputs(j), &ax, 2);
  ck_assert_msg(v != NULL, "%s: vmap: %s", name, ft_ctx_error(C));
  ft_array *t = ft_array_clone(C, x);
  float *tv = ft_array_data_mut(t);
  for (int64_t i = 0; i < ft_array_size(t); i++) tv[i] = (float)(i % 5) - 2.0f;
  int64_t dims[FT_MAX_RANK + 1] = {2};
  ft_aval xav = ft_array_aval(x);
  const ft_aval *xa = &xav;
  for (int d = 0; d < xa->rank; d++) dims[d + 1] = xa->dims[d];
  ft_array *b = ft_array_new(C, FT_F32, xa->rank + 1, dims);
  size_t nb = (size_t)ft_array_size(x) * sizeof(float);
  memcpy(ft_array_data_mut(b), ft_array_data_mut(x), nb);
  memcpy((char *)ft_array_data_mut(b) + nb, tv, nb);
  ft_array *got = NULL, *fx = NULL, *ft_ = NULL;
  ck_assert_msg(ft_eval(C, v, 1, (const ft_array *const *)&b, 1, &got) == FT_OK, "%s: vmap eval: %s", name, ft_ctx_error(C));
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&x, 1, &fx) == FT_OK && ft_eval(C, j, 1, (const ft_array *const *)&t, 1, &ft_) == FT_OK);
  size_t no = (size_t)ft_array_size(fx) * sizeof(float);
  ck_assert_int_eq(ft_array_size(got), 2 * ft_array_size(fx));
  ck_assert_msg(!memcmp(ft_array_data(got), ft_array_data(fx), no) &&
                !memcmp((const char *)ft_array_data(got) + no, ft_array_data(ft_), no),
                "%s: vmap differs from the stacked results", name);
  ft_array_free(t), ft_array_free(b), ft_array_free(got), ft_array_free(fx), ft_array_free(ft_);
  ft_jaxpr_free(v);
}

static void check_case(const char *name) {
  char p[1024];
  path_of(p, sizeof p, name, ".jaxpr");
  char *text = slurp(p);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), name);
  ck_assert_msg(j != NULL, "%s: %s", name, ft_ctx_error(C));
  size_t len = strlen(text);
  if (len && text[len - 1] == '\n') text[len - 1] = 0; /* the generator's newline */
  char *back = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(back);
  ck_assert_msg(!strcmp(back, text), "%s: printout differs:\n%s\nwant:\n%s", name, back, text);
  path_of(p, sizeof p, name, ".in0.npy");
  ft_array *in = ft_npy_read(C, p);
  path_of(p, sizeof p, name, ".out0.npy");
  ft_array *want = ft_npy_read(C, p), *got = NULL;
  ck_assert(in && want);
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&in, 1, &got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, want), "%s: result differs from JAX's", name);
  check_jit(name, j, in, got);
  check_jvp(name, j, in, got);
  check_vmap(name, j, in);
  ft_array_free(in);
  ft_array_free(want);
  ft_array_free(got);
  free(back);
  free(text);
  ft_jaxpr_free(j);
}

START_TEST(fixtures) {
  char p[1024];
  path_of(p, sizeof p, "CASES", "");
  char *list = slurp(p);
  int n = 0;
  for (char *s = strtok(list, "\n"); s; s = strtok(NULL, "\n"), n++) check_case(s);
  ck_assert_int_eq(n, 14);
  free(list);
}
END_TEST

static const char *SUM4 =
    "{ lambda ; a:f32[4]. let\n"
    "    b:f32[1] = shard_map[\n"
    "      check_vma=True\n"
    "      in_specs=(P('i',),)\n"
    "      jaxpr={ lambda ; c:f32[1]{V:i}. let\n"
    "          d:f32[1] = psum_invariant[axes=('%s',)] c\n"
    "        in (d,) }\n"
    "      mesh=Mesh('i': %d, axis_types=(Auto,))\n"
    "      newly_manual_axes=frozenset({'i'})\n"
    "      out_specs=(P(),)\n"
    "    ] a\n"
    "  in (b,) }\n";

static ft_jaxpr *sum4(const char *axis, int size) {
  char t[1024];
  snprintf(t, sizeof t, SUM4, axis, size);
  return ft_parse(C, t, strlen(t), "sum4");
}

/* 1e8 + 1 + 1 - 1e8 in f32: index order gives ((1e8 + 1) + 1) - 1e8 = 0
 * (each +1 is lost), any other order something else for some of them. */
START_TEST(psum_index_order) {
  ft_jaxpr *j = sum4("i", 4);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  float v[4] = {1e8f, 1.0f, 1.0f, -1e8f}, w[4] = {1.0f, 1e8f, -1e8f, 1.0f};
  int64_t d = 4;
  ft_array *a = ft_array_from_data(C, FT_F32, 1, &d, v), *o = NULL;
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_OK);
  float want = ((v[0] + v[1]) + v[2]) + v[3];
  ck_assert(((const float *)ft_array_data(o))[0] == want && want == 0.0f);
  ft_array_free(a), ft_array_free(o);
  a = ft_array_from_data(C, FT_F32, 1, &d, w);
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_OK);
  ck_assert(((const float *)ft_array_data(o))[0] == 1.0f); /* ((1 + 1e8) - 1e8) + 1: the first 1 is lost */
  ft_array_free(a), ft_array_free(o);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(bad_axis_and_mesh) {
  ck_assert_ptr_null(sum4("k", 4));
  ck_assert_msg(strstr(ft_ctx_error(C), "axis name 'k' is not an axis of the enclosing shard_map's mesh ('i': 4)"),
                "%s", ft_ctx_error(C));
  ck_assert_ptr_null(sum4("i", 3)); /* f32[4] does not split over 3 */
  ck_assert_msg(strstr(ft_ctx_error(C), "does not split evenly over 3 mesh indices"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(sum4("i", 2)); /* f32[4] over 2 gives f32[2], the body takes f32[1] */
  ck_assert_msg(strstr(ft_ctx_error(C), "the body takes f32[1], the spec gives f32[2] per index"), "%s",
                ft_ctx_error(C));
  const char *outside = "{ lambda ; a:f32[2]. let b:f32[2] = psum[axes=('i',) axis_index_groups=None] a in (b,) }";
  ft_jaxpr *j = ft_parse(C, outside, strlen(outside), "outside");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  float v[2] = {1, 2};
  int64_t d = 2;
  ft_array *a = ft_array_from_data(C, FT_F32, 1, &d, v), *o = NULL;
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "psum outside the top level of a shard_map body"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  ft_array_free(a);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(jit_refuses) {
  ft_jaxpr *j = sum4("i", 4);
  ck_assert_ptr_nonnull(j);
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_ptr_null(fn);
  ck_assert_msg(strstr(ft_ctx_error(C), "shard_map"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
}
END_TEST

/* Reverse mode is the next slice: a clear refusal, not a wrong program. */
START_TEST(grad_refuses) {
  ft_jaxpr *j = sum4("i", 4);
  ck_assert_ptr_nonnull(j);
  ft_jaxpr *v = ft_vjp_jaxpr(C, j);
  ck_assert_ptr_null(v);
  ck_assert_msg(strstr(ft_ctx_error(C), "reverse mode through shard_map"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("spmd");
  TCase *tc = tcase_create("spmd");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fixtures);
  tcase_add_test(tc, psum_index_order);
  tcase_add_test(tc, bad_axis_and_mesh);
  tcase_add_test(tc, jit_refuses);
  tcase_add_test(tc, grad_refuses);
  SRunner *r = srunner_create(s);
  suite_add_tcase(s, tc);
  srunner_run_all(r, CK_NORMAL);
  int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
