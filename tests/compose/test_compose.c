/* tests/compose/test_compose.c: composition strings (src/transforms/compose.c).
 * A string gives exactly the jaxpr of the hand-composed calls (same text,
 * same hash); grad(grad(f)) is the exact second derivative; per-example
 * gradients of the golden MLP loss through jit(vmap(grad(...))) equal the
 * loop of single-example gradients bit for bit; bad strings fail with
 * FT_ERR_PARSE, the column, a caret under it and what was expected. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

#define N FT_VMAP_NONE

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

/* f(w, x) = sum(sin(w * x)): two inputs, one scalar output. */
static const char *F2 =
    "{ lambda ; a:f32[3] b:f32[3]. let\n"
    "    c:f32[3] = mul a b\n"
    "    d:f32[3] = sin c\n"
    "    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] d\n"
    "  in (e,) }";

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

/* Same printed text and same canonical hash; frees both. */
static void assert_same(ft_jaxpr *got, ft_jaxpr *want, const char *what) {
  ck_assert_msg(got != NULL, "%s: %s", what, ft_ctx_error(C));
  ck_assert_msg(want != NULL, "%s (hand): %s", what, ft_ctx_error(C));
  char *a = ft_jaxpr_print(C, got), *b = ft_jaxpr_print(C, want);
  ck_assert_msg(a && b && !strcmp(a, b), "%s: text differs:\n%s\nvs\n%s", what, a, b);
  char ha[33], hb[33];
  ft_jaxpr_hash_hex(got, ha);
  ft_jaxpr_hash_hex(want, hb);
  ck_assert_str_eq(ha, hb);
  ft_free(a), ft_free(b);
  ft_jaxpr_free(got), ft_jaxpr_free(want);
}

START_TEST(test_equals_hand_composed) {
  ft_jaxpr *f = parse(F2);
  int in_axes[2] = {0, N}, a0[1] = {0}, a01[2] = {0, 1}, a1[1] = {1};
  ft_jaxpr *g = ft_grad(C, f, 1, a0, false);
  assert_same(ft_transform(C, f, "vmap(grad(f), in_axes=(0, None), axis_size=4)"),
              ft_vmap(C, g, ft_jaxpr_num_inputs(g), in_axes, 0, NULL, 4), "vmap(grad(f))");
  /* positional in_axes / out_axes as in JAX, jit as the identity */
  assert_same(ft_transform(C, f, " jit( vmap(grad(f, 0), (0, None), 0, axis_size=4,) ) "),
              ft_vmap(C, g, ft_jaxpr_num_inputs(g), in_axes, 0, NULL, 4), "jit(vmap(grad(f)))");
  assert_same(ft_transform(C, f, "grad(f, argnums=(0, 1))"), ft_grad(C, f, 2, a01, false),
              "grad argnums=(0, 1)");
  assert_same(ft_transform(C, f, "grad(f, argnums=-1)"), ft_grad(C, f, 1, a1, false),
              "grad argnums=-1");
  assert_same(ft_transform(C, f, "value_and_grad(f, argnums=1, has_aux=False)"),
              ft_value_and_grad(C, f, 1, a1, false), "value_and_grad");
  assert_same(ft_transform(C, f, "jacfwd(f, argnums=1)"), ft_jacfwd(C, f, 1), "jacfwd");
  assert_same(ft_transform(C, f, "jacrev(f)"), ft_jacrev(C, f, 0), "jacrev");
  assert_same(ft_transform(C, f, "hessian(f, 1)"), ft_hessian(C, f, 1), "hessian");
  assert_same(ft_transform(C, f, "jvp(f)"), ft_jvp(C, f), "jvp");
  assert_same(ft_transform(C, f, "vjp(f)"), ft_vjp_jaxpr(C, f), "vjp");
  assert_same(ft_transform(C, f, "f"), ft_transform(C, f, "jit(jit(f))"), "f vs jit(jit(f))");
  /* grad of vmap, vmap of vmap */
  ft_jaxpr *v = ft_vmap(C, f, ft_jaxpr_num_inputs(f), in_axes, 0, NULL, 2);
  int out_none[1] = {N};
  ft_jaxpr *v2 = ft_vmap(C, f, ft_jaxpr_num_inputs(f), (int[2]){N, N}, ft_jaxpr_num_outputs(f), out_none, 5);
  assert_same(ft_transform(C, f, "vmap(vmap(f, in_axes=(0, None), axis_size=2), in_axes=(None, 1),"
                                 " out_axes=-1, axis_size=3)"),
              ft_vmap(C, v, ft_jaxpr_num_inputs(v), (int[2]){N, 1}, ft_jaxpr_num_outputs(v), (int[1]){-1}, 3), "vmap(vmap(f))");
  assert_same(ft_transform(C, f, "vmap(f, in_axes=None, out_axes=None, axis_size=5)"), v2,
              "vmap all None");
  ft_jaxpr_free(v);
  ft_jaxpr_free(g);
  ft_jaxpr_free(f);
}
END_TEST

/* vmap sizes come from the avals the result is called with, through
 * nesting: the inner vmap sees the avals with the outer batch axis removed. */
START_TEST(test_axis_size_from_avals) {
  ft_jaxpr *f = parse(F2);
  ft_aval av[2] = {{.dtype = FT_F32, .rank = 3, .dims = {6, 3, 4}},
                   {.dtype = FT_F32, .rank = 1, .dims = {3}}};
  ft_transform_options o = {.size = sizeof(ft_transform_options), .in_avals = av, .n_in_avals = 2};
  ft_jaxpr *g = ft_grad(C, f, 1, (int[1]){1}, false);
  ft_jaxpr *v1 = ft_vmap(C, g, ft_jaxpr_num_inputs(g), (int[2]){1, N}, 0, NULL, 4);
  assert_same(ft_transform_ex(C, f, "vmap(vmap(grad(f, argnums=1), in_axes=(1, None)), in_axes=(0, None))", &o),
              ft_vmap(C, v1, ft_jaxpr_num_inputs(v1), (int[2]){0, N}, 0, NULL, 6), "nested vmap, sizes from avals");
  /* axis_size= wins over the avals; without avals it is required */
  assert_same(ft_transform_ex(C, f, "vmap(grad(f, argnums=1), in_axes=(1, None), axis_size=4)", &o),
              ft_vmap(C, g, ft_jaxpr_num_inputs(g), (int[2]){1, N}, 0, NULL, 4), "explicit axis_size");
  ft_jaxpr_free(v1);
  ft_jaxpr_free(g);
  ft_jaxpr_free(f);
}
END_TEST

START_TEST(test_second_derivative_exact) {
  /* f(x) = x^3 + 2 x^2 - 5 x: f''(x) = 6 x + 4 */
  ft_jaxpr *f = parse("{ lambda ; a:f64[]. let\n"
                      "    b:f64[] = integer_pow[y=3] a\n"
                      "    c:f64[] = integer_pow[y=2] a\n"
                      "    d:f64[] = mul 2.0:f64[] c\n"
                      "    e:f64[] = add b d\n"
                      "    g:f64[] = mul 5.0:f64[] a\n"
                      "    h:f64[] = sub e g\n"
                      "  in (h,) }");
  ft_jaxpr *gg = ft_transform(C, f, "grad(grad(f))");
  ck_assert_msg(gg != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *g1 = ft_grad(C, f, 0, NULL, false);
  ft_jaxpr *g2 = ft_grad(C, g1, 0, NULL, false);
  char h1[33], h2[33];
  ft_jaxpr_hash_hex(gg, h1);
  ft_jaxpr_hash_hex(g2, h2);
  ck_assert_str_eq(h1, h2);
  const double xs[] = {1.5, -0.75, 3.0, 0.0, -2.25};
  for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++) {
    ft_array *x = ft_array_from_data(C, FT_F64, 0, NULL, &xs[k]), *y = NULL;
    ck_assert_int_eq(ft_eval(C, gg, 1, (const ft_array *const *)&x, 1, &y), FT_OK);
    ck_assert(*(const double *)ft_array_data(y) == 6 * xs[k] + 4);
    ft_array_free(x), ft_array_free(y);
  }
  ft_jaxpr_free(g2), ft_jaxpr_free(g1), ft_jaxpr_free(gg), ft_jaxpr_free(f);
}
END_TEST

/* A deterministic filler (xorshift) with values in [-2, 2). */
static ft_array *fill(const ft_aval *av, uint64_t *s) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert(a != NULL);
  float *p = ft_array_data_mut(a);
  for (int64_t i = 0; i < ft_aval_size(av); i++) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    p[i] = (float)((int64_t)(*s >> 40) - (1 << 23)) / (float)(1 << 22);
  }
  return a;
}

/* Slice b along axis 0 (C order: a contiguous block). */
static ft_array *take0(const ft_array *a, int64_t b) {
  ft_aval av = ft_array_aval(a);
  size_t n = ft_array_nbytes(a) / (size_t)av.dims[0];
  ft_array *r = ft_array_from_data(C, av.dtype, av.rank - 1, av.dims + 1,
                                   (const char *)ft_array_data(a) + n * (size_t)b);
  ck_assert(r != NULL);
  return r;
}

typedef struct step_log {
  int n;
  char names[8][16];
  char hashes[8][33];
} step_log;

static void log_step(void *user, const ft_transform_step *st) {
  step_log *l = user;
  ck_assert_int_eq(st->index, l->n + 1);
  snprintf(l->names[l->n], 16, "%s", st->name);
  ft_jaxpr_hash_hex(st->result, l->hashes[l->n]);
  l->n++;
}

/* Per-example gradients of the golden MLP loss w.r.t. the first weight
 * matrix, batching the data inputs (e, f): B models' worth of minibatches. */
START_TEST(test_mlp_per_example_grads) {
  char *text = slurp(FT_FIXTURES "/golden/mlp_loss.jaxpr");
  ft_jaxpr *f = parse(text);
  free(text);
  enum { B = 7 };
  ft_aval av[6];
  ft_array *xs[6];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(ft_jaxpr_input_aval(f, i, &av[i]), FT_OK);
    if (i >= 4) {
      memmove(av[i].dims + 1, av[i].dims, sizeof(int64_t) * (size_t)av[i].rank);
      av[i].dims[0] = B, av[i].rank++;
    }
    xs[i] = fill(&av[i], &seed);
  }
  step_log log = {0};
  ft_transform_options o = {.size = sizeof(ft_transform_options), .in_avals = av, .n_in_avals = 6, .name = "f", .on_step = log_step,
                            .user = &log};
  const char *expr = "jit(vmap(grad(f, argnums=0), in_axes=(None, None, None, None, 0, 0)))";
  ft_jaxpr *r = ft_transform_ex(C, f, expr, &o);
  ck_assert_msg(r != NULL, "%s", ft_ctx_error(C));
  /* the steps, in the order applied, are the hand-composed calls */
  ck_assert_int_eq(log.n, 3);
  ck_assert_str_eq(log.names[0], "grad");
  ck_assert_str_eq(log.names[1], "vmap");
  ck_assert_str_eq(log.names[2], "jit");
  ft_jaxpr *g = ft_grad(C, f, 1, (int[1]){0}, false);
  ft_jaxpr *v = ft_vmap_avals(C, g, ft_jaxpr_num_inputs(g), (int[6]){N, N, N, N, 0, 0}, 0, NULL, ft_jaxpr_num_inputs(g), av);
  char hg[33], hv[33], hr[33];
  ft_jaxpr_hash_hex(g, hg), ft_jaxpr_hash_hex(v, hv), ft_jaxpr_hash_hex(r, hr);
  ck_assert_str_eq(log.hashes[0], hg);
  ck_assert_str_eq(log.hashes[1], hv);
  ck_assert_str_eq(log.hashes[2], hv);
  ck_assert_str_eq(hr, hv);
  /* run it compiled (jit) and interpreted; both equal the loop bitwise */
  ft_array *out_jit = NULL, *out_eval = NULL;
  ft_fn *fn = ft_jit(C, r, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, 6, (const ft_array *const *)xs, 1, &out_jit) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_eval(C, r, 6, (const ft_array *const *)xs, 1, &out_eval) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert(ft_array_equal_bits(out_jit, out_eval));
  ft_aval ao = ft_array_aval(out_jit);
  ck_assert_int_eq(ao.rank, 3);
  ck_assert_int_eq(ao.dims[0], B);
  for (int b = 0; b < B; b++) {
    ft_array *one[6], *gb = NULL;
    for (int i = 0; i < 6; i++) one[i] = i >= 4 ? take0(xs[i], b) : xs[i];
    ck_assert_int_eq(ft_eval(C, g, 6, (const ft_array *const *)one, 1, &gb), FT_OK);
    ft_array *lane = take0(out_jit, b);
    ck_assert_msg(ft_array_equal_bits(lane, gb), "lane %d differs", b);
    ft_array_free(lane), ft_array_free(gb);
    for (int i = 4; i < 6; i++) ft_array_free(one[i]);
  }
  ft_array_free(out_jit), ft_array_free(out_eval);
  ft_fn_free(fn);
  for (int i = 0; i < 6; i++) ft_array_free(xs[i]);
  ft_jaxpr_free(v), ft_jaxpr_free(g), ft_jaxpr_free(r), ft_jaxpr_free(f);
}
END_TEST

/* A bad string: status, the column in the message, the caret under it on
 * the last line, and a fragment of what was expected. */
typedef struct bad_case {
  const char *expr;
  int col;
  const char *frag;
} bad_case;

static const bad_case bad[] = {
    {"grad2(f)", 1, "unknown transform 'grad2'"},
    {"grad(f", 7, "expected ',' or ')', got the end of the string"},
    {"vmap(f, in_axes=(0, None, 0), axis_size=2)", 17, "in_axes has 3 entries but the function takes 2 inputs"},
    {"vmap(f, out_axes=(0, 0), axis_size=2)", 18, "out_axes has 2 entries but the function returns 1 output"},
    {"grad(f, argnums=5)", 17, "argnums 5 out of range for a function of 2 inputs"},
    {"grad(f, argnums=(0, -3))", 21, "argnums -3 out of range"},
    {"grad(f, argnums=())", 17, "argnums must not be empty"},
    {"", 1, "expected a transform (grad, vmap, jit, ...) or the function's name, got the end"},
    {"grad(f))", 8, "unexpected ')' after the end of the expression"},
    {"grad(f, argnum=0)", 9, "grad has no keyword 'argnum' (expected argnums or has_aux); did you mean argnums?"},
    {"grad(f, in_axes=0)", 9, "grad has no keyword 'in_axes'"},
    {"grad(f, has_aux=maybe)", 17, "expected an integer, None, True, False or a tuple, got 'maybe'"},
    {"grad(f, has_aux=1)", 17, "has_aux must be True or False"},
    {"grad(f, argnums=0, argnums=1)", 20, "keyword 'argnums' given twice"},
    {"grad(f, argnums=0, 1)", 20, "positional argument follows keyword argument"},
    {"grad(f, 0, True, 3)", 18, "grad takes 2 positional arguments after the function"},
    {"vmap(f, in_axes=(0, None))", 1, "vmap needs axis_size="},
    {"vmap(f, in_axes=None)", 1, "every in_axes None needs axis_size="},
    {"vmap(f, in_axes=[0, None], axis_size=3)", 17, "expected an integer, None, True, False or a tuple, got '['"},
    {"vmap(f, in_axes=((0, 1), None), axis_size=2)", 18, "nested tuples have no meaning here"},
    {"vmap(f, axis_size=-1)", 19, "axis_size must be >= 0, got -1"},
    {"vmap(f, axis_size=None)", 19, "axis_size must be an integer"},
    {"jit(f, static_argnums=0)", 8, "jit takes no keyword arguments here, got 'static_argnums'"},
    {"jacfwd(f, argnums=(0, 1))", 19, "jacfwd differentiates with respect to one input"},
    {"jacrev(f, has_aux=True)", 11, "jacrev has no keyword 'has_aux' (expected argnums)"},
    {"grad(f, argnums=99999999999)", 17, "integer out of range"},
    {"grad(f $)", 8, "expected ',' or ')', got '$'"},
    {"vmap", 5, "expected '(' after 'vmap'"},
    {"grad(vmap)", 10, "expected '(' after 'vmap', got ')'"},
    {"grad(g)", 6, "unknown function 'g' (the program is named 'f')"},
    {"grad(f, argnums=1x)", 18, "expected a digit, ',' or ')'"},
    {"grad(None)", 6, "expected a transform or the function's name, got 'None'"},
    {"grad(f,, 0)", 8, "expected an integer, None, True, False or a tuple, got ','"},
};

START_TEST(test_bad_strings) {
  ft_jaxpr *f = parse(F2);
  ft_transform_options o = {.size = sizeof(ft_transform_options), .name = "f"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    const bad_case *b = &bad[k];
    ft_ctx_clear_error(C);
    ft_jaxpr *r = ft_transform_ex(C, f, b->expr, &o);
    ck_assert_msg(r == NULL, "'%s' was accepted", b->expr);
    const char *m = ft_ctx_error(C);
    ck_assert_msg(ft_ctx_status(C) == FT_ERR_PARSE, "'%s': status %d: %s", b->expr,
                  ft_ctx_status(C), m);
    char head[32];
    snprintf(head, sizeof head, "column %d: ", b->col);
    ck_assert_msg(!strncmp(m, head, strlen(head)), "'%s': wanted '%s' in:\n%s", b->expr, head, m);
    ck_assert_msg(strstr(m, b->frag) != NULL, "'%s': wanted '%s' in:\n%s", b->expr, b->frag, m);
    /* the message ends with the string, then the caret under the column */
    const char *caret = strrchr(m, '\n');
    ck_assert(caret != NULL);
    caret++;
    ck_assert_int_eq(strspn(caret, " "), (size_t)(b->col - 1));
    ck_assert_str_eq(caret + b->col - 1, "^");
    const char *line = caret - 1;
    while (line > m && line[-1] != '\n') line--;
    ck_assert_int_eq(strncmp(line, b->expr, strlen(b->expr)), 0);
  }
  ft_jaxpr_free(f);
}
END_TEST

/* A transform's own error keeps its status and names the step. */
START_TEST(test_transform_errors_prefixed) {
  ft_jaxpr *f = parse(F2);
  const char *expr = "jit(grad(vmap(f, in_axes=(0, None), axis_size=3)))";
  ck_assert(ft_transform(C, f, expr) == NULL);
  ft_status st = ft_ctx_status(C);
  char *msg = strdup(ft_ctx_error(C));
  ft_jaxpr *v = ft_vmap(C, f, ft_jaxpr_num_inputs(f), (int[2]){0, N}, 0, NULL, 3);
  ck_assert(ft_grad(C, v, 0, NULL, false) == NULL);
  ck_assert_int_ne(st, FT_OK);
  ck_assert_int_eq(st, ft_ctx_status(C));
  ck_assert_msg(!strncmp(msg, "grad(...): ", 11), "%s", msg);
  ck_assert_msg(strstr(msg, "\njit(grad(vmap(f, in_axes=(0, None), axis_size=3)))\n    ^") != NULL,
                "%s", msg);
  free(msg);
  /* a vmap axis out of range is vmap's own error */
  ck_assert(ft_transform(C, f, "vmap(f, in_axes=(4, None), axis_size=3)") == NULL);
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_msg(!strncmp(ft_ctx_error(C), "vmap(...): in_axes[0] = 4 is out of range", 41), "%s",
                ft_ctx_error(C));
  /* and a shape that disagrees with in_axes */
  ft_aval av[2] = {{.dtype = FT_F32, .rank = 2, .dims = {4, 5}}, {.dtype = FT_F32, .rank = 1, .dims = {3}}};
  ft_transform_options o = {.size = sizeof(ft_transform_options), .in_avals = av, .n_in_avals = 2};
  ck_assert(ft_transform_ex(C, f, "vmap(f, in_axes=(0, None))", &o) == NULL);
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_msg(!strncmp(ft_ctx_error(C), "vmap(...): ", 11), "%s", ft_ctx_error(C));
  ck_assert(ft_transform(C, NULL, "f") == NULL);
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert(ft_transform(C, f, NULL) == NULL);
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ft_jaxpr_free(v);
  ft_jaxpr_free(f);
}
END_TEST

/* Every step goes through its transform, so an attached ledger records the
 * composition exactly as it records the hand-composed calls, and replays it. */
START_TEST(test_ledger_records_steps) {
  ft_jaxpr *f = parse(F2);
  char dir[] = "/tmp/ft-compose-XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  ft_ledger_options lo = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
  ft_ledger *lg = ft_ledger_open(C, dir, &lo);
  ck_assert_msg(lg != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_ctx_attach_ledger(C, lg), FT_OK);
  int64_t n0 = ft_ledger_num_records(lg);
  ft_jaxpr *r = ft_transform(C, f, "jit(vmap(grad(f), in_axes=(0, None), axis_size=4))");
  ck_assert_msg(r != NULL, "%s", ft_ctx_error(C));
  int64_t n1 = ft_ledger_num_records(lg);
  ft_jaxpr *g = ft_grad(C, f, 0, NULL, false);
  ft_jaxpr *v = ft_vmap(C, g, ft_jaxpr_num_inputs(g), (int[2]){0, N}, 0, NULL, 4);
  int64_t n2 = ft_ledger_num_records(lg);
  ck_assert_int_gt(n1 - n0, 0);
  ck_assert_int_eq(n1 - n0, n2 - n1);
  ck_assert_int_eq(ft_ctx_attach_ledger(C, NULL), FT_OK);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ledger_report rep = {0};
  ck_assert_msg(ft_ledger_replay(C, dir, &rep) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert_int_gt(rep.checked, 0);
  ck_assert_int_eq(rep.diverged, 0);
  ft_ledger_report_free(&rep);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  ft_jaxpr_free(v), ft_jaxpr_free(g), ft_jaxpr_free(r), ft_jaxpr_free(f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("compose");
  TCase *tc = tcase_create("compose");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_equals_hand_composed);
  tcase_add_test(tc, test_axis_size_from_avals);
  tcase_add_test(tc, test_second_derivative_exact);
  tcase_add_test(tc, test_mlp_per_example_grads);
  tcase_add_test(tc, test_bad_strings);
  tcase_add_test(tc, test_transform_errors_prefixed);
  tcase_add_test(tc, test_ledger_records_steps);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
