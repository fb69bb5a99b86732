/* tests/spmd/test_spmd.c: shard_map and the named-axis collectives over the
 * simulated axis (issue 27, docs/spmd.md). Every case of fixtures/spmd/
 * (tools/oracle/gen_spmd.py): the printout reads back and prints byte for
 * byte, and the interpreter's result equals JAX's bit for bit (the inputs
 * are small integers, so every sum is exact). Then: psum combines in index
 * order; bad axis names and mesh sizes fail with clear errors; strict
 * ft_jit compiles shard_map (the body per device, collectives as routine
 * steps; same bits), refuses a mesh past 8 devices unless allow_fallback,
 * and fails devices that diverge at a collective; jvp of the linear cases is (f(x), f(t));
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

static ft_jaxpr *parse_file(const char *name, const char *ext, char **text_out) {
  char p[1024];
  path_of(p, sizeof p, name, ext);
  char *text = slurp(p);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), name);
  ck_assert_msg(j != NULL, "%s%s: %s", name, ext, ft_ctx_error(C));
  size_t len = strlen(text);
  if (len && text[len - 1] == '\n') text[len - 1] = 0; /* the generator's newline */
  char *back = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(back);
  ck_assert_msg(!strcmp(back, text), "%s%s: printout differs:\n%s\nwant:\n%s", name, ext, back, text);
  free(back);
  if (text_out) *text_out = text;
  else free(text);
  return j;
}

static ft_array *npy(const char *name, const char *ext) {
  char p[1024];
  path_of(p, sizeof p, name, ext);
  ft_array *a = ft_npy_read(C, p);
  ck_assert_msg(a != NULL, "%s%s: %s", name, ext, ft_ctx_error(C));
  return a;
}

/* The JIT compiles shard_map (strict: no interpreter step), the body once
 * per device, the collectives as routine steps: the interpreter's bits. */
static void check_jit(const char *name, const ft_jaxpr *j, int n_in, ft_array **in, const ft_array *want) {
  ft_jit_options o = {.size = sizeof(ft_jit_options)};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
  ft_array *got = NULL;
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, 1, &got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, want), "%s: JIT != interpreter", name);
  ft_array_free(got);
  ft_fn_free(fn);
}

/* A linear case: jvp(f)(x, t) is (f(x), f(t)), bit for bit (the tangent
 * runs the same operations on t). pmax/pmin refuse as JAX does. */
static void check_jvp(const char *name, const ft_jaxpr *j, ft_array *x, const ft_array *fx, bool linear) {
  ft_jaxpr *d = ft_jvp(C, j);
  if (!strcmp(name, "pmax") || !strcmp(name, "pmin")) {
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(ft_ctx_error(C), "Differentiation rule for 'pm"), "%s", ft_ctx_error(C));
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
  if (linear) ck_assert_msg(ft_array_equal_bits(out[1], ft_), "%s: jvp tangent is not f(t)", name);
  ft_array_free(t), ft_array_free(out[0]), ft_array_free(out[1]), ft_array_free(ft_);
  ft_jaxpr_free(d);
}

/* vmap over a batch of two inputs (x and another array) equals the two
 * results stacked, bit for bit. */
static void check_vmap(const char *name, const ft_jaxpr *j, ft_array *x, bool captured) {
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
  if (captured) { /* JAX's own jax.vmap of the same batch */
    ft_array *vw = npy(name, ".vmap0.npy");
    ck_assert_msg(ft_array_equal_bits(got, vw), "%s: vmap differs from jax.vmap's", name);
    ft_array_free(vw);
  }
  ft_array_free(t), ft_array_free(b), ft_array_free(got), ft_array_free(fx), ft_array_free(ft_);
  ft_jaxpr_free(v);
}

/* Equal as f32 values, every element exactly (the Hessian: a zero's sign
 * may differ from JAX's, whose program multiplies a zero tangent by a
 * negative weight where ours adds zeros; the conformance harness compares
 * values the same way). */
static bool equal_values(const ft_array *a, const ft_array *b) {
  if (ft_array_size(a) != ft_array_size(b)) return false;
  const float *x = ft_array_data(a), *y = ft_array_data(b);
  for (int64_t i = 0; i < ft_array_size(a); i++)
    if (!(x[i] == y[i])) return false;
  return true;
}

/* A loss of (x, w): its value, FrankenTrace's value_and_grad w.r.t. x and
 * JAX's own grad printout, evaluated, and the Hessian w.r.t. x: all equal
 * JAX's bits. */
static void check_grad(const char *name) {
  char *text = NULL;
  ft_jaxpr *j = parse_file(name, ".jaxpr", &text), *jg = parse_file(name, ".grad.jaxpr", NULL);
  ft_array *in[2] = {npy(name, ".in0.npy"), npy(name, ".in1.npy")};
  ft_array *want = npy(name, ".out0.npy"), *gwant = npy(name, ".grad0.npy"), *got = NULL, *vg[2] = {0};
  ck_assert_msg(ft_eval(C, j, 2, (const ft_array *const *)in, 1, &got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, want), "%s: value differs from JAX's", name);
  ft_array_free(got), got = NULL;
  ck_assert_msg(ft_eval(C, jg, 2, (const ft_array *const *)in, 1, &got) == FT_OK, "%s: JAX's grad: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, gwant), "%s: JAX's grad printout evaluates differently", name);
  int argnum = 0;
  ft_jaxpr *g = ft_value_and_grad(C, j, 1, &argnum, false);
  ck_assert_msg(g != NULL, "%s: value_and_grad: %s", name, ft_ctx_error(C));
  /* the transformed bodies keep the varying-axes annotation, as JAX's */
  char *gt = ft_jaxpr_print(C, g);
  ck_assert_ptr_nonnull(gt);
  ck_assert_msg(!strstr(text, "{V:") || strstr(gt, "{V:"), "%s: value_and_grad lost {V:...}:\n%s", name, gt);
  ck_assert_msg(!strstr(text, "{V:(i,j)}") || strstr(gt, "{V:(i,j)}"), "%s: {V:(i,j)} lost:\n%s", name, gt);
  free(gt), free(text);
  ck_assert_msg(ft_eval(C, g, 2, (const ft_array *const *)in, 2, vg) == FT_OK, "%s: value_and_grad eval: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(vg[0], want), "%s: value_and_grad's value differs from JAX's", name);
  ck_assert_msg(ft_array_equal_bits(vg[1], gwant), "%s: gradient differs from JAX's", name);
  { /* the JIT compiles the gradient's shard_maps (strict): the same bits */
    ft_jit_options o = {.size = sizeof(ft_jit_options)};
    ft_fn *fn = ft_jit(C, g, &o);
    ck_assert_msg(fn != NULL, "%s: jit of value_and_grad: %s", name, ft_ctx_error(C));
    ft_array *jo[2] = {0};
    ck_assert_msg(ft_call(fn, 2, (const ft_array *const *)in, 2, jo) == FT_OK, "%s: %s", name, ft_ctx_error(C));
    ck_assert_msg(ft_array_equal_bits(jo[0], want) && ft_array_equal_bits(jo[1], gwant),
                  "%s: JIT's value_and_grad differs", name);
    ft_array_free(jo[0]), ft_array_free(jo[1]);
    ft_fn_free(fn);
  }
  check_jit(name, j, 2, in, want);
  /* split reverse mode: the residuals leave the known shard_map as global
   * arrays (split over every mesh axis) and enter the backward one */
  ft_jaxpr *fwd = NULL, *bwd = NULL;
  int nres = 0;
  ck_assert_msg(ft_vjp(C, j, &fwd, &bwd, &nres) == FT_OK, "%s: vjp: %s", name, ft_ctx_error(C));
  ft_array **fo = calloc((size_t)nres + 2, sizeof *fo), *cts[2] = {0};
  ck_assert_msg(ft_eval(C, fwd, 2, (const ft_array *const *)in, 1 + nres, fo) == FT_OK, "%s: vjp fwd: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(fo[0], want), "%s: vjp's value differs from JAX's", name);
  float one = 1.0f;
  fo[0] = (ft_array_free(fo[0]), ft_array_from_data(C, FT_F32, 0, NULL, &one));
  ft_array **bi = calloc((size_t)nres + 2, sizeof *bi);
  for (int r = 0; r < nres; r++) bi[r] = fo[1 + r];
  bi[nres] = fo[0];
  ck_assert_msg(ft_eval(C, bwd, nres + 1, (const ft_array *const *)bi, 2, cts) == FT_OK, "%s: vjp bwd: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(cts[0], gwant), "%s: vjp's cotangent differs from JAX's gradient", name);
  for (int r = 0; r <= nres; r++) ft_array_free(fo[r]);
  free(fo), free(bi), ft_array_free(cts[0]), ft_array_free(cts[1]);
  ft_jaxpr_free(fwd), ft_jaxpr_free(bwd);
  /* second order: jax.hessian (forward over reverse through shard_map) */
  ft_jaxpr *h = ft_hessian(C, j, 0);
  ck_assert_msg(h != NULL, "%s: hessian: %s", name, ft_ctx_error(C));
  ft_array *hw = npy(name, ".hessian0.npy"), *hg = NULL;
  ck_assert_msg(ft_eval(C, h, 2, (const ft_array *const *)in, 1, &hg) == FT_OK, "%s: hessian eval: %s", name, ft_ctx_error(C));
  ck_assert_msg(equal_values(hg, hw), "%s: hessian differs from JAX's", name);
  ft_array_free(hw), ft_array_free(hg), ft_jaxpr_free(h);
  ft_array_free(in[0]), ft_array_free(in[1]), ft_array_free(want), ft_array_free(gwant);
  ft_array_free(got), ft_array_free(vg[0]), ft_array_free(vg[1]);
  ft_jaxpr_free(j), ft_jaxpr_free(jg), ft_jaxpr_free(g);
}

static void check_case(const char *name, bool linear, bool vmap_captured) {
  ft_jaxpr *j = parse_file(name, ".jaxpr", NULL);
  ft_array *in = npy(name, ".in0.npy"), *want = npy(name, ".out0.npy"), *got = NULL;
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&in, 1, &got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_array_equal_bits(got, want), "%s: result differs from JAX's", name);
  check_jit(name, j, 1, &in, got);
  check_jvp(name, j, in, got, linear);
  check_vmap(name, j, in, vmap_captured);
  ft_array_free(in);
  ft_array_free(want);
  ft_array_free(got);
  ft_jaxpr_free(j);
}

START_TEST(fixtures) {
  char p[1024];
  path_of(p, sizeof p, "CASES", "");
  char *list = slurp(p);
  int n = 0, ng = 0, nv = 0;
  for (char *s = strtok(list, "\n"); s; s = strtok(NULL, "\n"), n++) {
    char *flags = strchr(s, ' ');
    if (flags) *flags++ = 0;
    if (flags && !strcmp(flags, "grad")) check_grad(s), ng++;
    else check_case(s, flags && strstr(flags, "linear"), flags && strstr(flags, "vmap"));
    nv += flags && strstr(flags, "vmap");
  }
  ck_assert_int_eq(n, 57);
  ck_assert_int_eq(ng, 16);
  ck_assert_int_eq(nv, 6);
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
  ck_assert_msg(strstr(ft_ctx_error(C), "psum outside a shard_map body"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  ft_array_free(a);
  ft_jaxpr_free(j);
}
END_TEST

/* all_to_all with split_axis != concat_axis takes its result shape from
 * the enclosing shard_map's mesh: a declared shape that disagrees with the
 * mesh fails, and outside a shard_map body (no mesh) it is refused. */
static const char *A2A =
    "{ lambda ; a:f32[16,8]. let\n"
    "    b:f32[%d,%d] = shard_map[\n"
    "      check_vma=True\n"
    "      in_specs=(P('i',),)\n"
    "      jaxpr={ lambda ; c:f32[%d,8]{V:i}. let\n"
    "          d:f32[%d,%d]{V:i} = all_to_all[\n"
    "            axis_index_groups=None\n"
    "            axis_name=%s\n"
    "            concat_axis=1\n"
    "            split_axis=0\n"
    "            tiled=True\n"
    "          ] c\n"
    "        in (d,) }\n"
    "      mesh=Mesh('i': %d, axis_types=(Auto,))\n"
    "      newly_manual_axes=frozenset({'i'})\n"
    "      out_specs=(P('i',),)\n"
    "    ] a\n"
    "  in (b,) }\n";

START_TEST(all_to_all_mesh) {
  char t[2048];
  snprintf(t, sizeof t, A2A, 4, 32, 4, 1, 32, "i", 4); /* as JAX prints it */
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "a2a");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  snprintf(t, sizeof t, A2A, 4, 16, 8, 2, 16, "i", 2); /* a mesh of 2: [8,8] -> [4,16] per index, not [2,16] */
  ck_assert_ptr_null(ft_parse(C, t, strlen(t), "a2a"));
  ck_assert_msg(strstr(ft_ctx_error(C), "f32[4,16]"), "%s", ft_ctx_error(C));
  snprintf(t, sizeof t, A2A, 4, 32, 4, 1, 32, "k", 4);
  ck_assert_ptr_null(ft_parse(C, t, strlen(t), "a2a"));
  ck_assert_msg(strstr(ft_ctx_error(C), "axis name 'k' is not an axis of the enclosing shard_map's mesh"), "%s",
                ft_ctx_error(C));
  const char *outside = "{ lambda ; a:f32[4,8]. let\n"
                        "    b:f32[1,32] = all_to_all[axis_index_groups=None axis_name=i concat_axis=1 "
                        "split_axis=0 tiled=True] a\n"
                        "  in (b,) }\n";
  ck_assert_ptr_null(ft_parse(C, outside, strlen(outside), "outside"));
  ck_assert_msg(strstr(ft_ctx_error(C), "known only inside a shard_map body"), "%s", ft_ctx_error(C));
}
END_TEST

/* Strict ft_jit compiles a shard_map (psum in index order, as the
 * interpreter); a mesh past FT_SPMD_JIT_MAX_DEVICES is refused in strict
 * mode with the reason and runs as an interpreter step with allow_fallback. */
START_TEST(jit_compiles) {
  ft_jaxpr *j = sum4("i", 4);
  ck_assert_ptr_nonnull(j);
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  float v[4] = {1e8f, 1.0f, 1.0f, -1e8f}, w[4] = {1.0f, 1e8f, -1e8f, 1.0f};
  int64_t d = 4;
  for (int rep = 0; rep < 2; rep++) {
    ft_array *a = ft_array_from_data(C, FT_F32, 1, &d, rep ? w : v), *o = NULL;
    ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&a, 1, &o) == FT_OK, "%s", ft_ctx_error(C));
    ck_assert(((const float *)ft_array_data(o))[0] == (rep ? 1.0f : 0.0f));
    ft_array_free(a), ft_array_free(o);
  }
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  char t[1024];
  snprintf(t, sizeof t, SUM4, "i", 16);
  char *at = strstr(t, "f32[4]");
  ck_assert_ptr_nonnull(at);
  memmove(at + 7, at + 6, strlen(at + 6) + 1);
  memcpy(at, "f32[16]", 7);
  j = ft_parse(C, t, strlen(t), "sum16");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_jit(C, j, NULL));
  ck_assert_msg(strstr(ft_ctx_error(C), "shard_map over more than 8 devices is not compiled"), "%s",
                ft_ctx_error(C));
  ft_jit_options o = {.size = sizeof(ft_jit_options)};
  o.allow_fallback = true;
  fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i;
  d = 16;
  ft_array *a = ft_array_from_data(C, FT_F32, 1, &d, x), *r = NULL;
  ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&a, 1, &r) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert(((const float *)ft_array_data(r))[0] == 120.0f);
  ft_array_free(a), ft_array_free(r);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}
END_TEST

/* grad of a shard_map holding pmax fails closed with JAX's words. */
START_TEST(pmax_grad_refuses) {
  const char *t =
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[1] = shard_map[\n"
      "      check_vma=True\n"
      "      in_specs=(P('i',),)\n"
      "      jaxpr={ lambda ; c:f32[1]{V:i}. let\n"
      "          d:f32[1] = pmax[axes=('i',) axis_index_groups=None] c\n"
      "        in (d,) }\n"
      "      mesh=Mesh('i': 4, axis_types=(Auto,))\n"
      "      newly_manual_axes=frozenset({'i'})\n"
      "      out_specs=(P(),)\n"
      "    ] a\n"
      "  in (b,) }\n";
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "pmax");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *v = ft_vjp_jaxpr(C, j);
  ck_assert_ptr_null(v);
  ck_assert_msg(strstr(ft_ctx_error(C), "Differentiation rule for 'pmax' not implemented"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
}
END_TEST

/* A cond whose branch index differs between indices, with a collective in
 * its branches, is refused (the indices would not meet at the psum); an
 * output whose spec leaves a mesh axis unmentioned must be the same along
 * it (check_vma=False lets a body break that): refused, not a wrong value. */
START_TEST(lockstep_refusals) {
  const char *t =
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[4] = shard_map[\n"
      "      check_vma=False\n"
      "      in_specs=(P('i',),)\n"
      "      jaxpr={ lambda ; c:f32[1]. let\n"
      "          d:i32[] = axis_index[axis_name=i] \n"
      "          e:bool[] = lt d 2:i32[]\n"
      "          g:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
      "          h:f32[1] = cond[\n"
      "            branches=(\n"
      "              { lambda ; i:f32[1]. let\n"
      "                  m:f32[1] = psum[axes=('i',) axis_index_groups=None] i\n"
      "                in (m,) }\n"
      "              { lambda ; n:f32[1]. let o:f32[1] = neg n in (o,) }\n"
      "            )\n"
      "          ] g c\n"
      "        in (h,) }\n"
      "      mesh=Mesh('i': 4, axis_types=(Auto,))\n"
      "      newly_manual_axes=frozenset({'i'})\n"
      "      out_specs=(P('i',),)\n"
      "    ] a\n"
      "  in (b,) }\n";
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "cond");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  float v[4] = {1, 2, 3, 4};
  int64_t d = 4;
  ft_array *a = ft_array_from_data(C, FT_F32, 1, &d, v), *o = NULL;
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "cond in a shard_map body: index 2 takes another path than index 0"),
                "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  /* compiled: the devices meet at different places, which fails them all */
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert(ft_call(fn, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(ft_ctx_error(C), "the devices took different paths through control flow holding a "
                       "collective"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  ft_fn_free(fn);
  ft_array_free(a);
  ft_jaxpr_free(j);
  const char *u =
      "{ lambda ; a:f32[2,2]. let\n"
      "    b:f32[2,1] = shard_map[\n"
      "      check_vma=False\n"
      "      in_specs=(P('i', 'j'),)\n"
      "      jaxpr={ lambda ; c:f32[1,1]. let d:f32[1,1] = neg c in (d,) }\n"
      "      mesh=Mesh('i': 2, 'j': 2, axis_types=(Auto, Auto))\n"
      "      newly_manual_axes=frozenset({'i', 'j'})\n"
      "      out_specs=(P('i',),)\n"
      "    ] a\n"
      "  in (b,) }\n";
  j = ft_parse(C, u, strlen(u), "replica");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  int64_t d2[2] = {2, 2};
  a = ft_array_from_data(C, FT_F32, 2, d2, v);
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(ft_ctx_error(C), "output 0's out_specs leave a mesh axis unmentioned"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  fn = ft_jit(C, j, NULL); /* compiled bodies: the same check on the assembled outputs */
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert(ft_call(fn, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(ft_ctx_error(C), "output 0's out_specs leave a mesh axis unmentioned"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(o);
  ft_fn_free(fn);
  float w[4] = {1, 1, 2, 2}; /* the same along 'j': rows of the result */
  ft_array_free(a);
  a = ft_array_from_data(C, FT_F32, 2, d2, w);
  ck_assert(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &o) == FT_OK);
  ck_assert(((const float *)ft_array_data(o))[0] == -1.0f && ((const float *)ft_array_data(o))[1] == -2.0f);
  ft_array_free(a), ft_array_free(o);
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
  tcase_add_test(tc, jit_compiles);
  tcase_add_test(tc, all_to_all_mesh);
  tcase_add_test(tc, pmax_grad_refuses);
  tcase_add_test(tc, lockstep_refusals);
  SRunner *r = srunner_create(s);
  suite_add_tcase(s, tc);
  srunner_run_all(r, CK_NORMAL);
  int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
