/* tests/transforms/test_sub_props.c: the shared-sub-jaxpr property of
 * issue 28. For a program in which sub-jaxprs are called at several sites
 * (one hoisted jaxpr with different operands, one name for jaxprs of
 * different shapes, inline and hoisted definitions of one name mixed, one
 * jaxpr as several cond branches), every transform gives what the same
 * transform gives for the program with every sub-jaxpr inlined (ft_inline):
 *
 *   forward, jvp, linearize, vjp, grad (has_aux), vmap   bitwise equal
 *   e-graph optimization (exact tier)                    bitwise the original
 *   ft_jit of the program, its jvp and its grad          bitwise the interpreter
 *   grad                                                 f64 central differences
 *
 * and a transform that works on one works on the other. Programs: the JAX
 * 0.12 captures of fixtures/shared_sub (jnp.where, jax.image.resize,
 * jnp.linspace, jax.nn helpers, scatter's shared update_jaxpr), and
 * programs made by a mutation generator (mutate, below) from every golden
 * program without constvars, and from the shared_sub programs themselves. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "transforms/transforms.h"
#include "../ir/text_util.h"
#include "sub_mutate.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

enum { MAXV = 64 };

static void free_all(int n, ft_array **a) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]), a[i] = NULL;
}

/* Bitwise equal, every NaN equal to every NaN (docs/determinism.md: NaN
 * signs and payloads are outside the contract). */
static bool bits_eq(const ft_array *x, const ft_array *y) {
  if (ft_array_equal_bits(x, y)) return true;
  ft_aval av = ft_array_aval(x);
  if ((av.dtype != FT_F32 && av.dtype != FT_F64) || ft_array_nbytes(x) != ft_array_nbytes(y)) return false;
  size_t w = av.dtype == FT_F64 ? 8 : 4, n = ft_array_nbytes(x) / w;
  const char *a = ft_array_data(x), *b = ft_array_data(y);
  for (size_t i = 0; i < n; i++) {
    if (!memcmp(a + i * w, b + i * w, w)) continue;
    double u = w == 8 ? ((const double *)a)[i] : ((const float *)a)[i];
    double v = w == 8 ? ((const double *)b)[i] : ((const float *)b)[i];
    if (!(isnan(u) && isnan(v))) return false;
  }
  return true;
}

static ft_jaxpr *load(const char *path) {
  size_t n;
  char *text = tu_slurp(path, &n);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  ft_jaxpr *j = ft_parse(C, text, n, path);
  free(text);
  ck_assert_msg(j != NULL, "%s: %s", path, ft_ctx_error(C));
  return j;
}

/* ------------------------------------------------------------ the generator */

static ft_jaxpr *mutate(const ft_jaxpr *p, unsigned kind) {
  ft_jaxpr *q = sub_mutate(C, p, kind);
  ck_assert_msg(q != NULL, "mutate: %s", ft_ctx_error(C));
  return q;
}

/* ------------------------------------------------------------- the checks */

typedef struct stats {
  int programs, jvp, linearize, vjp, grad, fd, vmap, opt, jit;
} stats;
static stats S;

static bool eval(const ft_jaxpr *j, int n_in, ft_array *const *in, ft_array **out) {
  int no = ft_jaxpr_num_outputs(j);
  ck_assert_int_le(no, 8 * MAXV);
  return ft_eval(C, j, n_in, (const ft_array *const *)in, no, out) == FT_OK;
}

/* Both evaluate, or neither; when they do, the outputs are bitwise equal
 * (close: float outputs equal up to the order in which cotangents are
 * summed, see reverse_close). */
static void compare(const char *what, const char *how, const ft_jaxpr *a, const ft_jaxpr *b, int n_in,
                    ft_array *const *in, bool close);

static void same_bits(const char *what, const char *how, const ft_jaxpr *a, const ft_jaxpr *b, int n_in,
                      ft_array *const *in) {
  compare(what, how, a, b, n_in, in, false);
}

/* Reverse mode sums the cotangents of a value used at several places: a
 * jit's transpose sums its body's uses first and adds the total to the
 * caller's, where the inlined program adds each use in turn. The orders
 * differ, so the bits may (by an ulp or so): each element is within
 * 1e-4 of itself and 1e-5 of the output's largest magnitude. Wrong
 * sharing gives errors of the values' own size. */
static void reverse_close(const char *what, const char *how, const ft_jaxpr *a, const ft_jaxpr *b, int n_in,
                          ft_array *const *in) {
  compare(what, how, a, b, n_in, in, true);
}

static bool near(const ft_array *x, const ft_array *y) {
  ft_aval av = ft_array_aval(x);
  if ((av.dtype != FT_F32 && av.dtype != FT_F64) || ft_array_nbytes(x) != ft_array_nbytes(y)) return false;
  size_t n = ft_array_nbytes(x) / (av.dtype == FT_F64 ? 8 : 4);
  double big = 0;
  for (size_t i = 0; i < n; i++) {
    double u = av.dtype == FT_F64 ? ((const double *)ft_array_data(x))[i] : ((const float *)ft_array_data(x))[i];
    if (isfinite(u) && fabs(u) > big) big = fabs(u);
  }
  for (size_t i = 0; i < n; i++) {
    double u = av.dtype == FT_F64 ? ((const double *)ft_array_data(x))[i] : ((const float *)ft_array_data(x))[i];
    double v = av.dtype == FT_F64 ? ((const double *)ft_array_data(y))[i] : ((const float *)ft_array_data(y))[i];
    if (isnan(u) && isnan(v)) continue;
    if (u == v) continue;
    if (!(fabs(u - v) <= 1e-4 * fabs(u) + 1e-5 * big)) return false;
  }
  return true;
}

static void compare(const char *what, const char *how, const ft_jaxpr *a, const ft_jaxpr *b, int n_in,
                    ft_array *const *in, bool close) {
  ft_array *oa[8 * MAXV], *ob[8 * MAXV];
  bool ra = eval(a, n_in, in, oa);
  char ea[512];
  snprintf(ea, sizeof ea, "%s", ra ? "" : ft_ctx_error(C));
  bool rb = eval(b, n_in, in, ob);
  ck_assert_msg(ra == rb, "%s: %s: one evaluates, the other does not: %s%s", what, how, ea,
                rb ? "" : ft_ctx_error(C));
  if (!ra) return;
  int no = ft_jaxpr_num_outputs(a);
  ck_assert_int_eq(no, ft_jaxpr_num_outputs(b));
  for (int k = 0; k < no; k++) {
    if (close && !bits_eq(oa[k], ob[k]) && near(oa[k], ob[k])) continue;
    if (!bits_eq(oa[k], ob[k]) && ft_array_aval(oa[k]).dtype == FT_F32) {
      const float *x = ft_array_data(oa[k]), *y = ft_array_data(ob[k]);
      double md = 0;
      size_t at = 0;
      for (size_t i = 0; i < ft_array_nbytes(oa[k]) / 4; i++)
        if (fabs((double)x[i] - y[i]) > md) md = fabs((double)x[i] - y[i]), at = i;
      ck_assert_msg(0, "%s: %s: output %d differs: [%zu] %.9g vs %.9g (inlined)", what, how, k, at, (double)x[at],
                    (double)y[at]);
    }
    ck_assert_msg(bits_eq(oa[k], ob[k]), "%s: %s: output %d differs", what, how, k);
  }
  free_all(no, oa), free_all(no, ob);
}

/* t(p) and t(inline(p)) both fail or both give programs; returns whether
 * they did (results in *rp, *ri). */
static bool both(const char *what, const char *how, ft_jaxpr *rp, ft_jaxpr *ri) {
  char ep[512];
  snprintf(ep, sizeof ep, "%s", rp ? "" : ft_ctx_error(C));
  ck_assert_msg(!rp == !ri, "%s: %s succeeds on one of the program and its inlined form only: %s", what, how,
                ep[0] ? ep : ft_ctx_error(C));
  ft_ctx_clear_error(C);
  return rp != NULL;
}

static ft_array *filled(const ft_aval *av, double scale, uint32_t *seed) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  size_t n = 1;
  for (int d = 0; d < av->rank; d++) n *= (size_t)av->dims[d];
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    double u = (double)(*seed >> 8) / (double)(1u << 24);
    if (av->dtype == FT_F32) ((float *)ft_array_data_mut(a))[i] = (float)(scale * (2 * u - 1));
    else if (av->dtype == FT_F64) ((double *)ft_array_data_mut(a))[i] = scale * (2 * u - 1);
    else memset((char *)ft_array_data_mut(a), 0, ft_array_nbytes(a));
  }
  return a;
}

static ft_array *ones(const ft_aval *av) {
  uint32_t seed = 1;
  ft_array *a = filled(av, 0, &seed);
  size_t n = ft_array_nbytes(a) / (av->dtype == FT_F64 ? 8 : 4);
  for (size_t i = 0; i < n; i++)
    if (av->dtype == FT_F32) ((float *)ft_array_data_mut(a))[i] = 1;
    else if (av->dtype == FT_F64) ((double *)ft_array_data_mut(a))[i] = 1;
  return a;
}

static bool inexact_in(const ft_jaxpr *j, int i) {
  ft_aval av;
  ft_jaxpr_input_aval(j, i, &av);
  return av.dtype == FT_F32 || av.dtype == FT_F64 || av.dtype == FT_F16 || av.dtype == FT_BF16 ||
         av.dtype == FT_C64 || av.dtype == FT_C128;
}

/* Writes a failing program and its inputs to the working directory
 * (sub_props_failure.jaxpr, .inK.npy) to reproduce with ftc. */
static void dump(const ft_jaxpr *j, int n_in, ft_array *const *in) {
  char *text = ft_jaxpr_print(C, j);
  FILE *f = fopen("sub_props_failure.jaxpr", "w");
  if (f && text) fputs(text, f), fputc('\n', f);
  if (f) fclose(f);
  ft_free(text);
  for (int i = 0; i < n_in; i++) {
    char path[64];
    snprintf(path, sizeof path, "sub_props_failure.in%d.npy", i);
    ft_npy_write(C, in[i], path);
  }
}

/* ft_jit(j) runs as the interpreter, bit for bit. */
static void jit_same(const char *what, const char *how, const ft_jaxpr *j, int n_in, ft_array *const *in) {
  ft_array *ref[8 * MAXV], *got[8 * MAXV];
  if (!eval(j, n_in, in, ref)) return ft_ctx_clear_error(C);
  int no = ft_jaxpr_num_outputs(j);
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s: %s: ft_jit: %s", what, how, ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, no, got) == FT_OK, "%s: %s: ft_call: %s", what, how, ft_ctx_error(C));
  for (int k = 0; k < no; k++) {
    if (!bits_eq(ref[k], got[k])) dump(j, n_in, in);
    ck_assert_msg(bits_eq(ref[k], got[k]),
                  "%s: %s: the JIT's output %d differs from the interpreter's (program and inputs in "
                  "sub_props_failure.*)", what, how, k);
  }
  free_all(no, ref), free_all(no, got);
  ft_fn_free(fn);
  S.jit++;
}

/* The f64 twin of an f32 program: its printout with f32 read as f64. */
static ft_jaxpr *as_f64(const ft_jaxpr *j) {
  char *text = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(text);
  size_t n = strlen(text);
  for (size_t i = 0; i + 7 <= n; i++) {
    if (!strncmp(text + i, "f32", 3)) memcpy(text + i, "f64", 3);
    if (!strncmp(text + i, "float32", 7)) memcpy(text + i, "float64", 7);
  }
  ft_jaxpr *r = ft_parse(C, text, n, "f64 twin");
  ft_free(text);
  ft_ctx_clear_error(C);
  return r;
}

static ft_array *to_f64(const ft_array *x, const double *dir, double h) {
  ft_aval av = ft_array_aval(x);
  if (av.dtype != FT_F32) return NULL;
  ft_array *r = ft_array_new(C, FT_F64, av.rank, av.dims);
  const float *s = ft_array_data(x);
  double *d = ft_array_data_mut(r);
  size_t n = ft_array_nbytes(x) / 4;
  for (size_t i = 0; i < n; i++) d[i] = (double)s[i] + (dir ? h * dir[i] : 0);
  return r;
}

/* grad (f32, of output 0 w.r.t. argnums) against central differences of
 * the f64 twin along a random direction: <g, v> vs (L(x+hv) - L(x-hv))/2h. */
static void grad_vs_fd(const char *what, const ft_jaxpr *j, const ft_jaxpr *g, int n_argnums, const int *argnums,
                       int n_in, ft_array *const *in) {
  for (int i = 0; i < n_in; i++)
    if (ft_array_aval(in[i]).dtype != FT_F32) return; /* f32 programs only */
  /* Where grad is not the derivative of the computed function (stopped
   * gradients, piecewise-constant rounding with JAX's zero or straight-
   * through rules), differences say nothing. */
  static const char *const skip[] = {"stop_gradient", "reduce_precision", " round", " floor", " ceil",
                                     " sign ", "nextafter"};
  char *text = ft_jaxpr_print(C, j);
  bool stopped = !text;
  for (size_t i = 0; text && i < sizeof skip / sizeof *skip; i++) stopped = stopped || strstr(text, skip[i]);
  ft_free(text);
  if (stopped) return;
  ft_jaxpr *j64 = as_f64(j);
  if (!j64) return;
  ft_array *go[8 * MAXV];
  if (!eval(g, n_in, in, go)) {
    ft_jaxpr_free(j64);
    return ft_ctx_clear_error(C);
  }
  uint32_t seed = 77;
  double *dirs[MAXV] = {0}, dot = 0, mag = 0;
  for (int w = 0; w < n_argnums; w++) {
    int i = argnums[w];
    size_t n = ft_array_nbytes(in[i]) / 4;
    dirs[i] = malloc(sizeof(double) * (n + 1));
    const float *gv = ft_array_data(go[w]);
    for (size_t e = 0; e < n; e++) {
      seed = seed * 1664525u + 1013904223u;
      dirs[i][e] = (double)(seed >> 8) / (double)(1u << 23) - 1;
      dot += (double)gv[e] * dirs[i][e];
      mag += fabs((double)gv[e] * dirs[i][e]);
    }
  }
  double l[2];
  bool ok = true;
  double h = 1e-5;
  for (int side = 0; side < 2 && ok; side++) {
    ft_array *x64[MAXV], *o[8 * MAXV];
    for (int i = 0; i < n_in; i++) x64[i] = to_f64(in[i], dirs[i], side ? -h : h);
    ok = eval(j64, n_in, x64, o);
    if (ok) l[side] = *(const double *)ft_array_data(o[0]), free_all(ft_jaxpr_num_outputs(j64), o);
    free_all(n_in, x64);
  }
  if (ok && !(isfinite(l[0]) && isfinite(l[1]) && isfinite(dot))) ok = false; /* NaN/Inf: nothing to compare */
  if (ok) {
    double fd = (l[0] - l[1]) / (2 * h);
    ck_assert_msg(fabs(fd - dot) <= 2e-3 * (fabs(fd) + mag) + 1e-4,
                  "%s: grad . v = %.9g, f64 central differences %.9g", what, dot, fd);
    S.fd++;
  }
  ft_ctx_clear_error(C);
  for (int i = 0; i < MAXV; i++) free(dirs[i]);
  free_all(ft_jaxpr_num_outputs(g), go);
  ft_jaxpr_free(j64);
}

/* Every transform of p against the same transform of inline(p). */
static void check_program(const char *what, const ft_jaxpr *p, int n_in, ft_array *const *in, bool deep) {
  ck_assert_int_le(n_in, MAXV);
  ft_jaxpr *il = ft_inline(C, p);
  ck_assert_msg(il != NULL, "%s: inline: %s", what, ft_ctx_error(C));
  S.programs++;
  same_bits(what, "forward", p, il, n_in, in);
  ft_ctx_clear_error(C);

  /* optimize (exact): the original's bits */
  ft_jaxpr *op = ft_optimize(C, p, FT_OPT_EXACT, NULL);
  if (op) {
    same_bits(what, "optimize", p, op, n_in, in);
    S.opt++;
    ft_jaxpr_free(op);
  }
  ft_ctx_clear_error(C);

  /* jvp, tangents one */
  ft_jaxpr *jp = ft_jvp(C, p), *ji = ft_jvp(C, il);
  if (both(what, "jvp", jp, ji)) {
    ft_array *jin[2 * MAXV];
    int nj = 0;
    for (int i = 0; i < n_in; i++) jin[nj++] = in[i];
    for (int i = 0; i < n_in; i++)
      if (inexact_in(p, i)) {
        ft_aval av = ft_array_aval(in[i]);
        jin[nj++] = ones(&av);
      }
    same_bits(what, "jvp", jp, ji, nj, jin);
    if (deep) jit_same(what, "jit(jvp)", jp, nj, jin);
    /* linearize: the tangent program on the primal's residuals */
    ft_jaxpr *pp, *tp, *pi, *ti;
    int rp, ri;
    ft_status sp = ft_linearize(C, p, &pp, &tp, &rp);
    ft_status si = ft_linearize(C, il, &pi, &ti, &ri);
    if (both(what, "linearize", sp == FT_OK ? pp : NULL, si == FT_OK ? pi : NULL)) {
      ft_array *po[8 * MAXV], *qo[8 * MAXV], *tin[8 * MAXV], *ta[8 * MAXV], *tb[8 * MAXV];
      int npo = ft_jaxpr_num_outputs(pp), nqo = ft_jaxpr_num_outputs(pi), nt = nj - n_in;
      if (eval(pp, n_in, in, po) && eval(pi, n_in, in, qo)) {
        int ny = npo - rp;
        ck_assert_int_eq(ny, nqo - ri);
        for (int k = 0; k < ny; k++)
          ck_assert_msg(bits_eq(po[k], qo[k]), "%s: linearize: primal output %d differs", what, k);
        for (int r = 0; r < rp; r++) tin[r] = po[ny + r];
        for (int i = 0; i < nt; i++) tin[rp + i] = jin[n_in + i];
        bool ea = eval(tp, rp + nt, tin, ta);
        for (int r = 0; r < ri; r++) tin[r] = qo[ny + r];
        for (int i = 0; i < nt; i++) tin[ri + i] = jin[n_in + i];
        bool eb = eval(ti, ri + nt, tin, tb);
        ck_assert_msg(ea && eb, "%s: linearize: the tangent program does not run: %s", what, ft_ctx_error(C));
        for (int k = 0; k < ft_jaxpr_num_outputs(tp); k++)
          ck_assert_msg(bits_eq(ta[k], tb[k]), "%s: linearize: tangent output %d differs", what, k);
        free_all(ft_jaxpr_num_outputs(tp), ta), free_all(ft_jaxpr_num_outputs(ti), tb);
        free_all(npo, po), free_all(nqo, qo);
        S.linearize++;
      }
      ft_ctx_clear_error(C);
      ft_jaxpr_free(pp), ft_jaxpr_free(tp), ft_jaxpr_free(pi), ft_jaxpr_free(ti);
    }
    for (int i = n_in; i < nj; i++) ft_array_free(jin[i]);
    S.jvp++;
  }
  ft_jaxpr_free(jp), ft_jaxpr_free(ji);

  /* vjp, cotangents one */
  ft_jaxpr *vp = ft_vjp_jaxpr(C, p), *vi = ft_vjp_jaxpr(C, il);
  if (both(what, "vjp", vp, vi)) {
    ft_array *vin[9 * MAXV];
    int nv = ft_jaxpr_num_inputs(vp);
    for (int i = 0; i < nv; i++) {
      ft_aval av;
      ft_jaxpr_input_aval(vp, i, &av);
      vin[i] = i < n_in ? in[i] : ones(&av);
    }
    reverse_close(what, "vjp", vp, vi, nv, vin);
    for (int i = n_in; i < nv; i++) ft_array_free(vin[i]);
    S.vjp++;
  }
  ft_jaxpr_free(vp), ft_jaxpr_free(vi);

  /* grad of output 0 w.r.t. every float input, the rest aux */
  int argnums[MAXV], na = 0;
  for (int i = 0; i < n_in; i++)
    if (ft_array_aval(in[i]).dtype == FT_F32 || ft_array_aval(in[i]).dtype == FT_F64) argnums[na++] = i;
  ft_aval o0;
  ft_jaxpr_output_aval(p, 0, &o0);
  if (na && o0.rank == 0 && is_float(&o0)) {
    ft_jaxpr *gp = ft_grad(C, p, na, argnums, true), *gi = ft_grad(C, il, na, argnums, true);
    if (both(what, "grad", gp, gi)) {
      reverse_close(what, "grad", gp, gi, n_in, in);
      if (deep) jit_same(what, "jit(grad)", gp, n_in, in);
      grad_vs_fd(what, p, gp, na, argnums, n_in, in);
      S.grad++;
    }
    ft_jaxpr_free(gp), ft_jaxpr_free(gi);
  }

  /* vmap over a new leading axis of 2: lanes x and x / 2 */
  int ax[8 * MAXV] = {0};
  ft_jaxpr *mp = ft_vmap(C, p, ft_jaxpr_num_inputs(p), ax, ft_jaxpr_num_outputs(p), ax, 2), *mi = ft_vmap(C, il, ft_jaxpr_num_inputs(il), ax, ft_jaxpr_num_outputs(il), ax, 2);
  if (both(what, "vmap", mp, mi)) {
    ft_array *bin[MAXV];
    for (int i = 0; i < n_in; i++) {
      ft_aval av = ft_array_aval(in[i]), bv = av;
      bv.rank = av.rank + 1;
      bv.dims[0] = 2;
      for (int d = 0; d < av.rank; d++) bv.dims[d + 1] = av.dims[d];
      bin[i] = ft_array_new(C, bv.dtype, bv.rank, bv.dims);
      size_t nb = ft_array_nbytes(in[i]);
      memcpy(ft_array_data_mut(bin[i]), ft_array_data_mut(in[i]), nb);
      memcpy((char *)ft_array_data_mut(bin[i]) + nb, ft_array_data_mut(in[i]), nb);
      if (av.dtype == FT_F32)
        for (size_t e = 0; e < nb / 4; e++) ((float *)ft_array_data_mut(bin[i]))[nb / 4 + e] *= 0.5f;
    }
    same_bits(what, "vmap", mp, mi, n_in, bin);
    free_all(n_in, bin);
    S.vmap++;
  }
  ft_jaxpr_free(mp), ft_jaxpr_free(mi);

  if (deep) jit_same(what, "jit", p, n_in, in);
  ft_ctx_clear_error(C);
  ft_jaxpr_free(il);
}

/* ----------------------------------------------------------------- tests */

/* Which mutated programs also run under ft_jit (compiling is the costly
 * part): kind 15 of the JAX captures and one golden program in 32; none
 * under sanitizers (the captures themselves always). */
#ifdef SUB_PROPS_SANITIZED
#define JIT_MUTATED(f) ((void)(f), false)
#else
#define JIT_MUTATED(f) ((f) % 32 == 15)
#endif

static const char *shared_cases[] = {"resize_two_shapes", "resize_mean_target", "linspace_scan_body",
                                     "linspace_scan_inline", "where_helpers", "nn_helpers",
                                     "jit_twice_big", "scatter_shared_update", "nn_softmax_onehot",
                                     "where_in_scan", "linspace_two_shapes"};

static ft_array *read_npy(const char *dir, const char *name, int k) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, k);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fclose(f);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s: %s", path, ft_ctx_error(C));
  return a;
}

/* The JAX captures as they are, then mutated (every kind). */
START_TEST(shared_sub_fixtures) {
  const char *name = shared_cases[_i];
  char path[600];
  snprintf(path, sizeof path, "%s/shared_sub/%s.jaxpr", FT_FIXTURES, name);
  ft_jaxpr *p = load(path);
  ft_array *in[MAXV];
  int n = ft_jaxpr_num_inputs(p);
  for (int i = 0; i < n; i++) in[i] = read_npy(FT_FIXTURES "/shared_sub", name, i);
  check_program(name, p, n, in, true);
  for (unsigned kind = 0; kind < 16; kind += 5) {
    ft_jaxpr *q = mutate(p, kind);
    char what[300];
    snprintf(what, sizeof what, "%s mutated %u", name, kind);
    check_program(what, q, n, in, JIT_MUTATED(kind));
    ft_jaxpr_free(q);
  }
  free_all(n, in);
  ft_jaxpr_free(p);
}
END_TEST

/* Every golden program without constvars, mutated (the kind rotating with
 * the file), with the golden inputs or generated ones. */
START_TEST(golden_mutated) {
  int nf;
  char **files = tu_list(FT_FIXTURES "/golden", &nf);
  ck_assert_int_ge(nf, 100);
  int done = 0;
  for (int f = 0; f < nf; f++) {
    const char *base = strrchr(files[f], '/') + 1;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 6), base);
    ft_jaxpr *p = load(files[f]);
    int n = ft_jaxpr_num_inputs(p);
    if (p->n_const || n > MAXV || p->n_out > MAXV) {
      ft_jaxpr_free(p);
      continue;
    }
    ft_array *in[MAXV];
    uint32_t seed = 5u + (uint32_t)f;
    for (int i = 0; i < n; i++) {
      in[i] = read_npy(FT_FIXTURES "/golden", name, i);
      if (!in[i]) {
        ft_aval av;
        ft_jaxpr_input_aval(p, i, &av);
        in[i] = filled(&av, 1.0, &seed);
      }
    }
    ft_array *probe[8 * MAXV];
    if (eval(p, n, in, probe)) {
      free_all(ft_jaxpr_num_outputs(p), probe);
      ft_jaxpr *q = mutate(p, (unsigned)f % 16);
      char what[300];
      snprintf(what, sizeof what, "golden %s mutated %u", name, (unsigned)f % 16);
      check_program(what, q, n, in, JIT_MUTATED(f));
      ft_jaxpr_free(q);
      done++;
    }
    ft_ctx_clear_error(C);
    free_all(n, in);
    ft_jaxpr_free(p);
  }
  tu_free_list(files, nf);
  ck_assert_int_ge(done, 100);
}
END_TEST

/* ft_inline writes out what sharing hid: no jit is left, and every
 * sub-jaxpr is used once (so nothing prints hoisted unless big). */
START_TEST(inline_unshares) {
  ft_jaxpr *p = load(FT_FIXTURES "/shared_sub/where_helpers.jaxpr");
  ft_jaxpr *il = ft_inline(C, p);
  ck_assert_ptr_nonnull(il);
  char *text = ft_jaxpr_print(C, il);
  ck_assert_msg(!strstr(text, "jit[") && !strstr(text, "let _where"), "%.300s", text);
  ck_assert_int_eq(ft_jaxpr_num_eqns(il), 14); /* 12 - 2 jits + their 1 + 3 */
  ft_free(text);
  ft_jaxpr *q = mutate(p, 15), *qi = ft_inline(C, q);
  text = ft_jaxpr_print(C, qi);
  /* the cond's two branches, one jaxpr in q, are two (big, so hoisted) */
  ck_assert_msg(!strstr(text, "jit[") && strstr(text, "branches=(jaxpr jaxpr1)") && strstr(text, "let jaxpr1 = ") &&
                    !strstr(text, "let jaxpr2 = "),
                "%.300s", text);
  ft_free(text);
  ft_jaxpr_free(qi), ft_jaxpr_free(q), ft_jaxpr_free(il), ft_jaxpr_free(p);
}
END_TEST

static void report(void) {
  fprintf(stderr,
          "sub_props: %d programs; transforms compared: jvp %d, linearize %d, vjp %d, grad %d (f64 central "
          "differences %d), vmap %d, optimize %d, jit %d\n",
          S.programs, S.jvp, S.linearize, S.vjp, S.grad, S.fd, S.vmap, S.opt, S.jit);
}

int main(void) {
  Suite *s = suite_create("sub_props");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 600);
  tcase_add_test(t, inline_unshares);
  tcase_add_loop_test(t, shared_sub_fixtures, 0, (int)(sizeof shared_cases / sizeof *shared_cases));
  tcase_add_test(t, golden_mutated);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_set_fork_status(r, CK_NOFORK);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  report();
  return failed ? 1 : 0;
}
