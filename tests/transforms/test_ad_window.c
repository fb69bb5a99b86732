/* tests/transforms/test_ad_window.c: derivatives of the windowed
 * primitives (src/transforms/ad_window.c): the JVP of reduce_window_max/min
 * and the transposes of reduce_window_sum and conv_general_dilated.
 *
 * Programs are traced with ft_reduce_window / ft_conv and run with the
 * reference interpreter (ft_eval). Checks, all in f64:
 *  - linearity: <A x, y> == <x, A^T y> (1e-12 relative) for reduce_window_sum,
 *    conv w.r.t. lhs and w.r.t. rhs, and the linearized max/min pooling,
 *    over strides, padding (negative too), base/window and lhs/rhs
 *    dilation, feature and batch groups, NCHW and NHWC layouts;
 *  - gradients against central differences (h = 1e-6, |g - fd| <= 1e-7 *
 *    max(1, |fd|)) for max/min pooling on inputs without ties, sum pooling
 *    and conv w.r.t. both operands;
 *  - grad∘grad of a small conv net (conv, tanh, max pool, grouped conv,
 *    sum pool) against central differences of its gradient (h = 1e-5,
 *    |g - fd| <= 1e-6 * max(1, |fd|));
 *  - JAX's gradients (fixtures/ad_window, tools/oracle/gen_ad_window.py):
 *    1e-12 relative, including the tie rule of max/min pooling;
 *  - exact tangents for ties, -inf windows and NaN windows; f32 operands
 *    with an f64 preferred_element_type; coverage and errors. */
#define AD_SEED 0x9e3779b97f4a7c15ull
#include "ad_util.h"

static ft_array *rand_array(const ft_aval *av, double lo, double hi) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  for (int64_t i = 0; i < ft_aval_size(av); i++) ft_set_f64(a, i, lo + (hi - lo) * urand());
  return a;
}

static ft_aval f64_aval(int rank, const int64_t *dims) {
  ft_aval a = {.dtype = FT_F64, .rank = rank};
  for (int i = 0; i < rank; i++) a.dims[i] = dims[i];
  return a;
}

/* ---------------------------------------------------------------- cases */

enum { SUMPOOL, MAXPOOL, MINPOOL, CONV };

/* One windowed operation: a reduce_window (rank, x, window params; NULL
 * strides/dilations mean ones) or a conv (x, k, opts). */
typedef struct wcase {
  const char *name;
  int kind, rank;
  int64_t x[FT_MAX_RANK], k[FT_MAX_RANK];
  int64_t wd[FT_MAX_RANK], ws[FT_MAX_RANK], pad[2 * FT_MAX_RANK], bd[FT_MAX_RANK], wdl[FT_MAX_RANK];
  ft_conv_opts co;
} wcase;

/* How a case is traced: the op itself (x[, k]); the conv with its operands
 * given as (k, x), so that x is the linear input after the non-linear k;
 * or the loss sum(op(x[, k]) * w). */
enum { AS_OP, AS_OP_KX, AS_LOSS };
typedef struct tracing {
  const wcase *c;
  int mode;
} tracing;

static ft_val *apply(const wcase *c, ft_val *x, ft_val *k) {
  if (c->kind == CONV) return ft_conv(x, k, &c->co);
  static const ft_window_op ops[] = {FT_WINDOW_SUM, FT_WINDOW_MAX, FT_WINDOW_MIN};
  return ft_reduce_window(x, ops[c->kind], c->wd, c->ws, c->pad, c->bd[0] ? c->bd : NULL,
                          c->wdl[0] ? c->wdl : NULL);
}

static ft_val *sum_all(ft_val *v) {
  int axes[FT_MAX_RANK], r = ft_val_rank(v);
  for (int i = 0; i < r; i++) axes[i] = i;
  return ft_reduce_sum(v, r, axes);
}

static int trace_case(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  const tracing *u = user;
  const wcase *c = u->c;
  int n = c->kind == CONV ? 2 : 1;
  (void)t, (void)max_out;
  switch (u->mode) {
  case AS_OP: out[0] = apply(c, in[0], n == 2 ? in[1] : NULL); break;
  case AS_OP_KX: out[0] = apply(c, in[1], in[0]); break;
  default: out[0] = sum_all(ft_mul(apply(c, in[0], n == 2 ? in[1] : NULL), in[n])); break;
  }
  return out[0] ? 1 : -1;
}

static ft_jaxpr *trace(const wcase *c, int mode) {
  tracing u = {c, mode};
  ft_aval av[3];
  int n = c->kind == CONV ? 2 : 1;
  av[0] = f64_aval(c->rank, c->x);
  if (n == 2) av[1] = f64_aval(c->rank, c->k);
  if (mode == AS_OP_KX) {
    ft_aval s = av[0];
    av[0] = av[1], av[1] = s;
  }
  if (mode == AS_LOSS) {
    ft_jaxpr *op = trace(c, AS_OP);
    ck_assert_int_eq(ft_jaxpr_output_aval(op, 0, &av[n]), FT_OK);
    ft_jaxpr_free(op);
  }
  ft_jaxpr *j = ft_trace(C, trace_case, &u, n + (mode == AS_LOSS), av);
  ck_assert_msg(j != NULL, "%s: trace: %s", c->name, ft_ctx_error(C));
  return j;
}

#define V(...) {__VA_ARGS__}
/* NHWC / HWIO / NHWC dimension numbers. */
#define NHWC .has_dimension_numbers = true, .lhs_spec = {0, 3, 1, 2}, .rhs_spec = {3, 2, 0, 1}, \
             .out_spec = {0, 3, 1, 2}

/* A reduce_window case (kind set where it is used); bd/wdl {0}: ones. */
#define POOL(nm, r, xs, wds, wss, pads, bds, wdls) \
  {.name = nm, .kind = SUMPOOL, .rank = r, .x = xs, .wd = wds, .ws = wss, .pad = pads, .bd = bds, .wdl = wdls}

static const wcase POOLS[] = {
  POOL("1d stride 2 pad (1,1)", 2, V(2, 7), V(1, 3), V(1, 2), V(0, 0, 1, 1), {0}, {0}),
  POOL("3d base+window dilation", 3, V(2, 5, 6), V(1, 2, 3), V(1, 2, 2), V(0, 0, 1, 0, 2, 1), V(1, 2, 1),
       V(1, 1, 2)),
  POOL("negative padding", 1, V(9), V(2), V(3), V(-1, 0), {0}, {0}),
  POOL("global window", 2, V(3, 4), V(3, 4), V(1, 1), V(0, 0, 0, 0), {0}, {0}),
  POOL("nhwc 3x3 s2 same", 4, V(2, 5, 5, 2), V(1, 3, 3, 1), V(1, 2, 2, 1), V(0, 0, 1, 1, 1, 1, 0, 0), {0}, {0}),
  POOL("strides leave a tail", 1, V(10), V(3), V(4), V(0, 0), V(2), V(2)),
};

static const wcase CONVS[] = {
  {"1d stride 2 rhs dilation", CONV, 3, V(2, 3, 9), V(4, 3, 3), .co = {.size = sizeof(ft_conv_opts), .window_strides = {2},
   .padding = {{1, 2}}, .rhs_dilation = {2}}},
  {"nhwc lhs+rhs dilation", CONV, 4, V(2, 5, 4, 3), V(2, 3, 3, 2), .co = {.size = sizeof(ft_conv_opts), .window_strides = {2, 1},
   .padding = {{1, 0}, {0, 2}}, .lhs_dilation = {1, 2}, .rhs_dilation = {2, 1}, NHWC}},
  {"nchw feature groups, negative pad", CONV, 4, V(2, 4, 6, 5), V(6, 2, 2, 2), .co = {.size = sizeof(ft_conv_opts), .window_strides = {2, 1},
   .padding = {{-1, 1}, {1, 1}}, .feature_group_count = 2}},
  {"nchw batch groups", CONV, 4, V(4, 3, 5, 5), V(4, 3, 2, 3), .co = {.size = sizeof(ft_conv_opts), .window_strides = {1, 2},
   .padding = {{1, 0}, {2, 1}}, .lhs_dilation = {2, 1}, .batch_group_count = 2}},
  {"1d lhs dilation 3 stride 2", CONV, 3, V(1, 2, 5), V(3, 2, 2), .co = {.size = sizeof(ft_conv_opts), .window_strides = {2},
   .padding = {{0, 1}}, .lhs_dilation = {3}}},
  {"nhwc depthwise", CONV, 4, V(1, 6, 5, 3), V(3, 2, 1, 3), .co = {.size = sizeof(ft_conv_opts), .window_strides = {1, 2},
   .padding = {{1, 1}, {0, 0}}, .feature_group_count = 3, NHWC}},
  {"nhwc batch groups", CONV, 4, V(6, 4, 4, 2), V(2, 2, 2, 3), .co = {.size = sizeof(ft_conv_opts), .window_strides = {1, 1},
   .padding = {{0, 1}, {1, 0}}, .rhs_dilation = {1, 2}, .batch_group_count = 3, NHWC}},
};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------ linearity */

/* j is linear in its inputs from nnl on (the first nnl given by fixed, or
 * random when fixed is NULL): checks <A x, y> == <x, A^T y>. */
static void lincheck(const char *what, ft_jaxpr *j, int nnl, ft_array *const *fixed) {
  ft_jaxpr *t = ft_linear_transpose(C, j, nnl);
  ck_assert_msg(t != NULL, "%s: transpose: %s", what, ft_ctx_error(C));
  verify(t);
  int n = ft_jaxpr_num_inputs(j), no = ft_jaxpr_num_outputs(j);
  ck_assert(n <= 16 && no <= 8);
  ft_array *x[16], *y[8], *ax[8], *aty[16], *tin[24];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    x[i] = i < nnl && fixed ? NULL : rand_array(&av, -1, 1);
    if (!x[i]) x[i] = fixed[i];
  }
  run(j, n, x, ax);
  int m = 0;
  for (int i = 0; i < nnl; i++) tin[m++] = x[i];
  for (int k = 0; k < no; k++) {
    ft_aval av;
    ft_jaxpr_output_aval(j, k, &av);
    tin[m++] = y[k] = rand_array(&av, -1, 1);
  }
  run(t, m, tin, aty);
  double lhs = 0, rhs = 0, mag = 0;
  for (int k = 0; k < no; k++) lhs += dot_arrays(ax[k], y[k]);
  for (int i = nnl; i < n; i++) {
    double d = dot_arrays(x[i], aty[i - nnl]);
    rhs += d, mag += fabs(d);
  }
  ck_assert_msg(fabs(lhs - rhs) <= 1e-12 * fmax(1.0, mag), "%s: <Ax,y> = %.17g but <x,A^T y> = %.17g", what,
                lhs, rhs);
  int own0 = fixed ? nnl : 0; /* the fixed arrays belong to the caller */
  free_arrays(no, y), free_arrays(no, ax), free_arrays(n - nnl, aty), free_arrays(n - own0, x + own0);
  ft_jaxpr_free(t);
}

START_TEST(linearity_sum_pool) {
  for (int i = 0; i < N_OF(POOLS); i++) {
    ft_jaxpr *j = trace(&POOLS[i], AS_OP);
    lincheck(POOLS[i].name, j, 0, NULL);
    ft_jaxpr_free(j);
  }
}
END_TEST

START_TEST(linearity_conv) {
  for (int i = 0; i < N_OF(CONVS); i++) {
    char what[128];
    ft_jaxpr *j = trace(&CONVS[i], AS_OP_KX); /* (k, x): linear in lhs */
    snprintf(what, sizeof what, "%s (lhs)", CONVS[i].name);
    lincheck(what, j, 1, NULL);
    ft_jaxpr_free(j);
    j = trace(&CONVS[i], AS_OP); /* (x, k): linear in rhs */
    snprintf(what, sizeof what, "%s (rhs)", CONVS[i].name);
    lincheck(what, j, 1, NULL);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* The tangent jaxpr of max/min pooling, (residuals, dx) -> dy, is linear in
 * dx and transposes (the backward pass of max pooling). */
START_TEST(linearity_pool_jvp) {
  for (int kind = MAXPOOL; kind <= MINPOOL; kind++)
    for (int i = 0; i < N_OF(POOLS); i++) {
      wcase c = POOLS[i];
      c.kind = kind;
      ft_jaxpr *j = trace(&c, AS_OP), *pj = NULL, *tj = NULL;
      int nres = -1;
      ck_assert_msg(ft_linearize(C, j, &pj, &tj, &nres) == FT_OK, "%s: %s", c.name, ft_ctx_error(C));
      verify(pj), verify(tj);
      ft_aval av;
      ft_jaxpr_input_aval(j, 0, &av);
      ft_array *x = rand_array(&av, -1, 1), *po[16];
      ck_assert_int_le(1 + nres, 16);
      run(pj, 1, &x, po);
      lincheck(c.name, tj, nres, po + 1);
      free_arrays(1 + nres, po), ft_array_free(x);
      ft_jaxpr_free(pj), ft_jaxpr_free(tj), ft_jaxpr_free(j);
    }
}
END_TEST

/* ----------------------------------------------------- central differences */

static double loss_at(const ft_jaxpr *j, int n, ft_array *const *in) {
  ft_array *o[1];
  run(j, n, in, o);
  double v = ft_get_f64(o[0], 0);
  ft_array_free(o[0]);
  return v;
}

/* grad of the scalar j w.r.t. inputs argn[0..na) at `in` against central
 * differences with step h and bound tol * max(1, |fd|). */
static void fd_check(const char *what, ft_jaxpr *j, ft_array **in, int na, const int *argn, double h,
                     double tol) {
  int n = ft_jaxpr_num_inputs(j);
  ft_jaxpr *g = ft_grad(C, j, na, argn, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", what, ft_ctx_error(C));
  verify(g);
  ft_array *gr[16];
  run(g, n, in, gr);
  for (int w = 0; w < na; w++) {
    ft_array *x = in[argn[w]];
    for (int64_t e = 0; e < ft_array_size(x); e++) {
      double x0 = ft_get_f64(x, e);
      ft_set_f64(x, e, x0 + h);
      double fp = loss_at(j, n, in);
      ft_set_f64(x, e, x0 - h);
      double fm = loss_at(j, n, in);
      ft_set_f64(x, e, x0);
      double fd = (fp - fm) / (2 * h), an = ft_get_f64(gr[w], e);
      ck_assert_msg(fabs(an - fd) <= tol * fmax(1.0, fabs(fd)),
                    "%s: d/d input %d [%lld]: grad %.15g, central difference %.15g", what, argn[w], (long long)e,
                    an, fd);
    }
  }
  free_arrays(na, gr);
  ft_jaxpr_free(g);
}

static void grad_case(const wcase *c) {
  ft_jaxpr *j = trace(c, AS_LOSS);
  int n = ft_jaxpr_num_inputs(j), argn[2] = {0, 1};
  ft_array *in[3];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    in[i] = rand_array(&av, -1, 1); /* continuous: no ties in max/min windows */
  }
  fd_check(c->name, j, in, n - 1, argn, 1e-6, 1e-7);
  free_arrays(n, in);
  ft_jaxpr_free(j);
}

START_TEST(grad_pools) {
  for (int kind = SUMPOOL; kind <= MINPOOL; kind++)
    for (int i = 0; i < N_OF(POOLS); i++) {
      wcase c = POOLS[i];
      c.kind = kind;
      grad_case(&c);
    }
}
END_TEST

START_TEST(grad_convs) {
  for (int i = 0; i < N_OF(CONVS); i++) grad_case(&CONVS[i]);
}
END_TEST

/* ----------------------------------------------------------- grad∘grad */

/* f(x, k1, k2, w) = sum(sumpool(conv2(maxpool(tanh(conv1(x, k1))), k2)) * w),
 * conv2 with two feature groups. */
static int convnet(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_conv_opts c1 = {.size = sizeof(ft_conv_opts), .window_strides = {1, 1}, .padding = {{1, 1}, {1, 1}}};
  ft_conv_opts c2 = {.size = sizeof(ft_conv_opts), .window_strides = {1, 1}, .padding = {{0, 0}, {0, 0}}, .feature_group_count = 2};
  ft_val *h = ft_tanh(ft_conv(in[0], in[1], &c1));
  h = ft_reduce_window(h, FT_WINDOW_MAX, (int64_t[]){1, 1, 2, 2}, (int64_t[]){1, 1, 2, 2}, NULL, NULL, NULL);
  h = ft_conv(h, in[2], &c2);
  h = ft_reduce_window(h, FT_WINDOW_SUM, (int64_t[]){1, 1, 2, 2}, (int64_t[]){1, 1, 1, 1},
                       (int64_t[]){0, 0, 0, 0, 1, 0, 0, 1}, NULL, NULL);
  out[0] = sum_all(ft_mul(h, in[3]));
  return out[0] ? 1 : -1;
}

static void aval_text(char *b, size_t cap, const ft_aval *a) {
  size_t k = (size_t)snprintf(b, cap, "f64[");
  for (int i = 0; i < a->rank; i++) k += (size_t)snprintf(b + k, cap - k, i ? ",%lld" : "%lld", (long long)a->dims[i]);
  snprintf(b + k, cap - k, "]");
}

/* s(x, k1, k2, w, v0, v1, v2) = sum_i <grad_i f(x, k1, k2, w), v_i>, with
 * grad f called as a jit of its printed jaxpr: grad(s) is grad∘grad f
 * applied to v (three Hessian-vector products). */
static ft_jaxpr *grad_dot_v(const ft_jaxpr *g, const ft_aval *av) {
  char *gt = ft_jaxpr_print(C, g);
  ck_assert_ptr_nonnull(gt);
  size_t cap = strlen(gt) + 4096;
  char *s = malloc(cap), ty[7][64];
  ck_assert_ptr_nonnull(s);
  for (int i = 0; i < 4; i++) aval_text(ty[i], sizeof ty[i], &av[i]);
  size_t k = (size_t)snprintf(s, cap, "{ lambda ; x:%s k1:%s k2:%s w:%s v0:%s v1:%s v2:%s. let\n", ty[0], ty[1], ty[2],
                              ty[3], ty[0], ty[1], ty[2]);
  k += (size_t)snprintf(s + k, cap - k, "    g0:%s g1:%s g2:%s = jit[name=g jaxpr=%s] x k1 k2 w\n", ty[0], ty[1], ty[2], gt);
  for (int i = 0; i < 3; i++)
    k += (size_t)snprintf(s + k, cap - k, "    p%d:%s = mul g%d v%d\n    s%d:f64[] = reduce_sum[axes=(0, 1, 2, 3) "
                          "out_sharding=None] p%d\n", i, ty[i], i, i, i, i);
  snprintf(s + k, cap - k, "    t:f64[] = add s0 s1\n    u:f64[] = add t s2\n  in (u,) }\n");
  ft_jaxpr *j = ft_parse(C, s, strlen(s), "grad_dot_v");
  ck_assert_msg(j != NULL, "parse: %.2000s", ft_ctx_error(C));
  free(s), ft_free(gt);
  return j;
}

START_TEST(grad_grad_convnet) {
  ft_aval av[7] = {f64_aval(4, (int64_t[]){2, 1, 6, 6}), f64_aval(4, (int64_t[]){4, 1, 3, 3}),
                   f64_aval(4, (int64_t[]){2, 2, 2, 2}), f64_aval(4, (int64_t[]){2, 2, 2, 2})};
  ft_jaxpr *f = ft_trace(C, convnet, NULL, 4, av);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  int argn[3] = {0, 1, 2};
  ft_jaxpr *g = ft_grad(C, f, 3, argn, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *s = grad_dot_v(g, av);
  ft_array *in[7];
  for (int i = 0; i < 7; i++) in[i] = rand_array(i < 4 ? &av[i] : &av[i - 4], -1, 1);
  fd_check("grad∘grad convnet", s, in, 3, argn, 1e-5, 1e-6);
  free_arrays(7, in);
  ft_jaxpr_free(s), ft_jaxpr_free(g), ft_jaxpr_free(f);
}
END_TEST

/* ------------------------------------------------------------ JAX values */

static char *read_text(const char *path) {
  FILE *fp = fopen(path, "rb");
  ck_assert_msg(fp != NULL, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(fread(b, 1, (size_t)n, fp), n);
  b[n] = 0;
  fclose(fp);
  return b;
}

static ft_array *fixture(const char *cs, const char *what, int k) {
  char path[512];
  snprintf(path, sizeof path, "%s/ad_window/%s.%s%d.npy", FT_FIXTURES, cs, what, k);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s", ft_ctx_error(C));
  return a;
}

static void same_values(const char *what, int k, const ft_array *got, const ft_array *want) {
  ck_assert_int_eq(ft_array_size(got), ft_array_size(want));
  for (int64_t e = 0; e < ft_array_size(want); e++) {
    double w = ft_get_f64(want, e), g = ft_get_f64(got, e);
    ck_assert_msg(fabs(w - g) <= 1e-12 * fmax(1.0, fabs(w)), "%s: derivative %d [%lld]: %.17g, JAX %.17g", what, k,
                  (long long)e, g, w);
  }
}

/* A case of fixtures/ad_window: grad w.r.t. argnums (n_arg of them), or
 * the JVP when n_arg is 0 (in1 is the tangent of in0). */
static void jax_case(const char *cs, int n_in, int n_arg) {
  char path[512];
  snprintf(path, sizeof path, "%s/ad_window/%s.jaxpr", FT_FIXTURES, cs);
  char *text = read_text(path);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), path);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  free(text);
  ft_array *in[8], *o[8];
  for (int i = 0; i < n_in; i++) in[i] = fixture(cs, "in", i);
  if (n_arg == 0) {
    ft_jaxpr *jv = ft_jvp(C, j);
    ck_assert_msg(jv != NULL, "%s: %s", cs, ft_ctx_error(C));
    run(jv, 2, in, o);
    ft_array *want = fixture(cs, "grad", 0);
    same_values(cs, 0, o[1], want);
    ft_array_free(want), free_arrays(2, o);
    ft_jaxpr_free(jv);
  } else {
    int argn[8] = {0, 1, 2, 3};
    ft_jaxpr *g = ft_grad(C, j, n_arg, argn, false);
    ck_assert_msg(g != NULL, "%s: %s", cs, ft_ctx_error(C));
    run(g, n_in, in, o);
    for (int k = 0; k < n_arg; k++) {
      ft_array *want = fixture(cs, "grad", k);
      same_values(cs, k, o[k], want);
      ft_array_free(want);
    }
    free_arrays(n_arg, o);
    ft_jaxpr_free(g);
  }
  free_arrays(n_in, in);
  ft_jaxpr_free(j);
}

START_TEST(jax_gradients) {
  jax_case("maxpool_nhwc_ties", 2, 1);
  jax_case("minpool_dilated_ties", 2, 1);
  jax_case("maxpool_window_dilation_jvp", 2, 0);
  jax_case("sumpool_dilated", 2, 1);
  jax_case("conv_nhwc_groups", 3, 2);
  jax_case("conv_nchw_lhs_dilation_batch_groups", 3, 2);
  jax_case("convnet", 4, 3);
}
END_TEST

/* ------------------------------------------------------- ties and edges */

/* The JVP of a 1-D max/min pool (window 2, stride 1, padding (1, 0)) of x
 * with tangent 1, 10, 100, ... : the output tangents say which element
 * each window selected. */
static void pool_jvp_1d(ft_window_op op, int n, const double *x, const double *want) {
  ft_aval av = f64_aval(1, (int64_t[]){n});
  wcase c = POOL("1d", 1, {n}, {2}, {1}, V(1, 0), {0}, {0});
  c.kind = op == FT_WINDOW_MAX ? MAXPOOL : MINPOOL;
  ft_jaxpr *j = trace(&c, AS_OP), *jv = ft_jvp(C, j);
  ck_assert_msg(jv != NULL, "%s", ft_ctx_error(C));
  ft_array *in[2] = {ft_array_new(C, FT_F64, 1, av.dims), ft_array_new(C, FT_F64, 1, av.dims)}, *o[2];
  double tv = 1;
  for (int i = 0; i < n; i++, tv *= 10) ft_set_f64(in[0], i, x[i]), ft_set_f64(in[1], i, tv);
  run(jv, 2, in, o);
  ck_assert_int_eq(ft_array_size(o[1]), n);
  for (int i = 0; i < n; i++)
    ck_assert_msg(ft_get_f64(o[1], i) == want[i], "window %d: tangent %g, want %g", i, ft_get_f64(o[1], i), want[i]);
  free_arrays(2, o), free_arrays(2, in);
  ft_jaxpr_free(jv), ft_jaxpr_free(j);
}

START_TEST(ties_and_edges) {
  /* windows: [pad, x0], [x0, x1], ...; ties go to the first element */
  pool_jvp_1d(FT_WINDOW_MAX, 5, (double[]){3, 3, 1, 5, 5}, (double[]){1, 1, 10, 1000, 1000});
  pool_jvp_1d(FT_WINDOW_MIN, 5, (double[]){2, 2, 4, 4, 1}, (double[]){1, 1, 10, 100, 10000});
  /* a window of -inf (max) or +inf (min) only: the identity wins, tangent 0
   * (XLA's select_and_gather_add); the pad alone likewise */
  pool_jvp_1d(FT_WINDOW_MAX, 3, (double[]){-INFINITY, -INFINITY, 2}, (double[]){0, 0, 100});
  pool_jvp_1d(FT_WINDOW_MIN, 3, (double[]){INFINITY, 7, INFINITY}, (double[]){0, 10, 10});
  /* NaN windows: tangent 0 */
  pool_jvp_1d(FT_WINDOW_MAX, 3, (double[]){NAN, 1, 2}, (double[]){0, 0, 100});
}
END_TEST

/* ------------------------------------------------ preferred_element_type */

/* sum(conv(x, k) * w) with f32 x and k and an f64 result
 * (preferred_element_type): the gradients are f32 and equal the f64
 * program's rounded to f32. */
static int conv_pet(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  ft_conv_opts o = {.size = sizeof(ft_conv_opts), .window_strides = {2}, .padding = {{1, 0}}, .feature_group_count = 2};
  o.has_preferred_element_type = user != NULL, o.preferred_element_type = FT_F64;
  out[0] = sum_all(ft_mul(ft_conv(in[0], in[1], &o), in[2]));
  return out[0] ? 1 : -1;
}

START_TEST(preferred_element_type) {
  ft_aval a32[3] = {f64_aval(3, (int64_t[]){2, 4, 7}), f64_aval(3, (int64_t[]){6, 2, 3}),
                    f64_aval(3, (int64_t[]){2, 6, 3})};
  ft_aval a64[3] = {a32[0], a32[1], a32[2]};
  a32[0].dtype = a32[1].dtype = FT_F32;
  int argn[2] = {0, 1};
  ft_jaxpr *j32 = ft_trace(C, conv_pet, (void *)1, 3, a32), *j64 = ft_trace(C, conv_pet, NULL, 3, a64);
  ck_assert_msg(j32 && j64, "%s", ft_ctx_error(C));
  ft_jaxpr *g32 = ft_grad(C, j32, 2, argn, false), *g64 = ft_grad(C, j64, 2, argn, false);
  ck_assert_msg(g32 && g64, "%s", ft_ctx_error(C));
  ft_array *in32[3], *in64[3], *o32[2], *o64[2];
  for (int i = 0; i < 3; i++) {
    in32[i] = rand_array(&a32[i], -1, 1);
    in64[i] = ft_array_new(C, FT_F64, a64[i].rank, a64[i].dims);
    for (int64_t e = 0; e < ft_array_size(in32[i]); e++) ft_set_f64(in64[i], e, ft_get_f64(in32[i], e));
  }
  run(g32, 3, in32, o32), run(g64, 3, in64, o64);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(o32[k]->aval.dtype, FT_F32);
    for (int64_t e = 0; e < ft_array_size(o64[k]); e++)
      ck_assert_msg(ft_get_f64(o32[k], e) == (double)(float)ft_get_f64(o64[k], e), "grad %d [%lld]: %.9g vs %.9g",
                    k, (long long)e, ft_get_f64(o32[k], e), ft_get_f64(o64[k], e));
  }
  free_arrays(2, o32), free_arrays(2, o64), free_arrays(3, in32), free_arrays(3, in64);
  ft_jaxpr_free(g32), ft_jaxpr_free(g64), ft_jaxpr_free(j32), ft_jaxpr_free(j64);
}
END_TEST

/* ------------------------------------------------- coverage and errors */

START_TEST(coverage_and_errors) {
  ck_assert_ptr_null(ft_jvp_rule_status(FT_P_REDUCE_WINDOW_MAX));
  ck_assert_ptr_null(ft_jvp_rule_status(FT_P_REDUCE_WINDOW_MIN));
  ck_assert_ptr_null(ft_jvp_rule_status(FT_P_REDUCE_WINDOW_SUM));
  ck_assert_ptr_null(ft_jvp_rule_status(FT_P_CONV_GENERAL_DILATED));
  ck_assert_ptr_null(ft_transpose_rule_status(FT_P_REDUCE_WINDOW_SUM));
  ck_assert_ptr_null(ft_transpose_rule_status(FT_P_CONV_GENERAL_DILATED));
  ck_assert_str_eq(ft_transpose_rule_status(FT_P_REDUCE_WINDOW_MAX), "not linear");
  /* conv is bilinear: with both operands linear it has no transpose */
  ft_jaxpr *j = trace(&CONVS[0], AS_OP);
  ck_assert_ptr_null(ft_linear_transpose(C, j, 0));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "conv_general_dilated: both operands are linear"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  /* dimension_numbers=None (as older JAX prints the default layout) */
  const char *dflt = "{ lambda ; a:f64[1,1,3] b:f64[1,1,2]. let\n"
                    "    c:f64[1,1,2] = conv_general_dilated[batch_group_count=1 dimension_numbers=None "
                    "feature_group_count=1 lhs_dilation=(1,) padding=((0, 0),) rhs_dilation=(1,) "
                    "window_strides=(1,)] a b\n  in (c,) }";
  j = ft_parse(C, dflt, strlen(dflt), "dflt");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *t = ft_linear_transpose(C, j, 1);
  ck_assert_msg(t != NULL, "dimension_numbers=None is the default layout: %s", ft_ctx_error(C));
  ft_jaxpr_free(t), ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ad_window");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 240);
  tcase_add_test(t, linearity_sum_pool);
  tcase_add_test(t, linearity_conv);
  tcase_add_test(t, linearity_pool_jvp);
  tcase_add_test(t, grad_pools);
  tcase_add_test(t, grad_convs);
  tcase_add_test(t, grad_grad_convnet);
  tcase_add_test(t, jax_gradients);
  tcase_add_test(t, ties_and_edges);
  tcase_add_test(t, preferred_element_type);
  tcase_add_test(t, coverage_and_errors);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
