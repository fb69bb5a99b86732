/* tools/ftc_demo_model.c: the data and the programs of `ftc demo`
 * (docs/demo.md). Every program is traced from C with the public API and
 * written to compute what tools/oracle/gen_demo.py computes in JAX, operation
 * for operation, so the initialization is JAX's bit for bit and the training
 * trajectory differs from JAX's only by rounding. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc_demo.h"

enum { DIGITS_N = 1797 };

/* ------------------------------------------------------------------ data */

static ft_array *read_u8(ft_ctx *ctx, const char *dir, const char *file, int rank, const int64_t *dims,
                         char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  ft_array *a = ft_npy_read(ctx, path);
  if (!a) {
    snprintf(err, errlen, "%s: %s", path, ft_ctx_error(ctx));
    return NULL;
  }
  ft_aval av = ft_array_aval(a);
  bool ok = av.dtype == FT_U8 && av.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = av.dims[i] == dims[i];
  if (!ok) {
    snprintf(err, errlen, "%s: expected uint8 of shape [%lld%s], found another dtype or shape", path,
             (long long)dims[0], rank == 2 ? ", 64" : "");
    ft_array_free(a);
    return NULL;
  }
  return a;
}

int demo_data_load(ft_ctx *ctx, const char *dir, demo_data *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  const int64_t di[2] = {DIGITS_N, DEMO_PIXELS}, dl[1] = {DIGITS_N};
  ft_array *im = read_u8(ctx, dir, "images.npy", 2, di, err, errlen);
  ft_array *lb = im ? read_u8(ctx, dir, "labels.npy", 1, dl, err, errlen) : NULL;
  int rc = -1;
  if (!lb) goto done;
  const uint8_t *px = ft_array_data(im), *y = ft_array_data(lb);
  for (int i = 0; i < DIGITS_N; i++) {
    if (y[i] >= DEMO_CLASSES) {
      snprintf(err, errlen, "%s/labels.npy: label %d of sample %d is not a digit", dir, y[i], i);
      goto done;
    }
    for (int p = 0; p < DEMO_PIXELS; p++)
      if (px[i * DEMO_PIXELS + p] > 16) {
        snprintf(err, errlen, "%s/images.npy: pixel %d of sample %d is %d, above 16", dir, p, i,
                 px[i * DEMO_PIXELS + p]);
        goto done;
      }
  }
  int seen[DEMO_CLASSES] = {0}, n_test = 0;
  bool test[DIGITS_N];
  for (int i = 0; i < DIGITS_N; i++) n_test += (test[i] = seen[y[i]]++ % 5 == 4);
  d->n_test = n_test;
  d->n_train = DIGITS_N - n_test;
  d->x_train = malloc(sizeof(float) * DEMO_PIXELS * (size_t)d->n_train);
  d->x_test = malloc(sizeof(float) * DEMO_PIXELS * (size_t)d->n_test);
  d->y_train = malloc(sizeof(int32_t) * (size_t)d->n_train);
  d->y_test = malloc(sizeof(int32_t) * (size_t)d->n_test);
  if (!d->x_train || !d->x_test || !d->y_train || !d->y_test) {
    snprintf(err, errlen, "out of memory");
    demo_data_free(d);
    goto done;
  }
  int a = 0, b = 0;
  for (int i = 0; i < DIGITS_N; i++) {
    float *x = test[i] ? d->x_test + (size_t)b * DEMO_PIXELS : d->x_train + (size_t)a * DEMO_PIXELS;
    for (int p = 0; p < DEMO_PIXELS; p++) x[p] = (float)px[i * DEMO_PIXELS + p] / 16.0f;
    if (test[i]) d->y_test[b++] = y[i];
    else d->y_train[a++] = y[i];
  }
  rc = 0;
done:
  ft_array_free(im);
  ft_array_free(lb);
  return rc;
}

void demo_data_free(demo_data *d) {
  free(d->x_train);
  free(d->x_test);
  free(d->y_train);
  free(d->y_test);
  memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------- models */

const char *demo_model_name(demo_model m) { return m == DEMO_CNN ? "cnn" : "mlp"; }

static ft_aval aval_f32(int rank, int64_t d0, int64_t d1) {
  ft_aval a;
  memset(&a, 0, sizeof a);
  a.dtype = FT_F32;
  a.rank = rank;
  a.dims[0] = d0;
  a.dims[1] = d1;
  return a;
}

int demo_param_avals(demo_model m, ft_aval *out) {
  if (m == DEMO_CNN) {
    /* conv 3x3, 1 -> DEMO_CNN_CH channels (OIHW), bias; dense 128 -> 10. */
    out[0] = aval_f32(4, DEMO_CNN_CH, 1);
    out[0].dims[2] = out[0].dims[3] = 3;
    out[1] = aval_f32(1, DEMO_CNN_CH, 0);
    out[2] = aval_f32(2, DEMO_CNN_CH * 16, DEMO_CLASSES);
    out[3] = aval_f32(1, DEMO_CLASSES, 0);
    return 4;
  }
  out[0] = aval_f32(2, DEMO_PIXELS, DEMO_HIDDEN);
  out[1] = aval_f32(1, DEMO_HIDDEN, 0);
  out[2] = aval_f32(2, DEMO_HIDDEN, DEMO_CLASSES);
  out[3] = aval_f32(1, DEMO_CLASSES, 0);
  return 4;
}

/* keys[i] of a key<fry>[n] array, as JAX's k1, k2 = split(k) unpacks it. */
static ft_val *key_at(ft_val *keys, int64_t i) {
  const int64_t start[1] = {i}, limit[1] = {i + 1};
  const int dims[1] = {0};
  return ft_squeeze(ft_slice(keys, ft_val_rank(keys), start, limit, NULL), 1, dims);
}

/* Glorot-uniform weights as (2u - 1) * lim: u * 2 - 1 is exact, so the one
 * rounding is the product with lim, the same in JAX with or without FMA. */
static ft_val *glorot(ft_tracer *t, ft_val *key, const ft_aval *av, int64_t fan_in, int64_t fan_out) {
  ft_val *u = ft_random_uniform(key, FT_F32, av->rank, av->dims, 0.0, 1.0);
  double lim = sqrt(6.0 / (double)(fan_in + fan_out));
  return ft_np_mul(ft_np_sub(ft_np_mul(u, ft_weak_f(t, 2.0)), ft_weak_f(t, 1.0)), ft_weak_f(t, lim));
}

static int init_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  demo_model m = *(const demo_model *)user;
  ft_aval av[DEMO_MAX_PARAMS];
  demo_param_avals(m, av);
  /* Fans as jax.nn.initializers.glorot_uniform computes them for OIHW. */
  int64_t fi0 = m == DEMO_CNN ? 9 : DEMO_PIXELS, fo0 = m == DEMO_CNN ? 9 * DEMO_CNN_CH : DEMO_HIDDEN;
  const int64_t two[1] = {2};
  ft_val *keys = ft_random_split(ft_random_key(in[0]), 1, two);
  ft_val *k_init = key_at(keys, 0), *k_shuffle = key_at(keys, 1);
  ft_val *wk = ft_random_split(k_init, 1, two);
  out[0] = glorot(t, key_at(wk, 0), &av[0], fi0, fo0);
  out[1] = ft_full(t, FT_F32, 1, av[1].dims, 0.0);
  out[2] = glorot(t, key_at(wk, 1), &av[2], av[2].dims[0], av[2].dims[1]);
  out[3] = ft_full(t, FT_F32, 1, av[3].dims, 0.0);
  out[4] = ft_random_unwrap(k_shuffle);
  return 5;
}

ft_jaxpr *demo_trace_init(ft_ctx *ctx, demo_model m) {
  ft_aval seed;
  memset(&seed, 0, sizeof seed);
  seed.dtype = FT_I32;
  return ft_trace(ctx, init_fn, &m, 1, &seed);
}

/* The logits of the MLP: relu(x W1 + b1) W2 + b2. Of the CNN: x as
 * [n, 1, 8, 8], relu(conv3x3 same(x, K) + b1), 2x2 max pooling, flattened
 * to [n, 128], then W2, b2. */
static ft_val *logits(ft_tracer *t, demo_model m, ft_val *const *p, ft_val *x) {
  if (m == DEMO_CNN) {
    int64_t n = ft_val_dim(x, 0);
    const int64_t img[4] = {n, 1, 8, 8}, bsh[4] = {1, DEMO_CNN_CH, 1, 1}, flat[2] = {n, DEMO_CNN_CH * 16};
    ft_conv_opts co = FT_CONV_OPTS_INIT;
    co.padding[0][0] = co.padding[0][1] = co.padding[1][0] = co.padding[1][1] = 1;
    ft_val *c = ft_conv(ft_reshape(x, 4, img), p[0], &co);
    ft_val *h = ft_np_maximum(ft_np_add(c, ft_reshape(p[1], 4, bsh)), ft_weak_f(t, 0.0));
    const int64_t win[4] = {1, 1, 2, 2};
    ft_val *pooled = ft_reduce_window(h, FT_WINDOW_MAX, win, win, NULL, NULL, NULL);
    return ft_np_add(ft_matmul(ft_reshape(pooled, 2, flat), p[2]), p[3]);
  }
  ft_val *h = ft_np_maximum(ft_np_add(ft_matmul(x, p[0]), p[1]), ft_weak_f(t, 0.0));
  return ft_np_add(ft_matmul(h, p[2]), p[3]);
}

static int loss_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  int last = -1;
  ft_val *logp = ft_log_softmax(logits(t, *(const demo_model *)user, in, in[4]), -1);
  out[0] = ft_neg(ft_mean(ft_sum(ft_np_mul(in[5], logp), 1, &last, false), -1, NULL, false));
  return 1;
}

ft_jaxpr *demo_trace_loss(ft_ctx *ctx, demo_model m, int batch) {
  ft_aval av[DEMO_MAX_PARAMS + 2];
  int np = demo_param_avals(m, av);
  av[np] = aval_f32(2, batch, DEMO_PIXELS);
  av[np + 1] = aval_f32(2, batch, DEMO_CLASSES);
  return ft_trace(ctx, loss_fn, &m, np + 2, av);
}

static int predict_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  out[0] = ft_argmax(logits(t, *(const demo_model *)user, in, in[4]), 1, FT_I32);
  return 1;
}

ft_jaxpr *demo_trace_predict(ft_ctx *ctx, demo_model m, int n) {
  ft_aval av[DEMO_MAX_PARAMS + 1];
  int np = demo_param_avals(m, av);
  av[np] = aval_f32(2, n, DEMO_PIXELS);
  return ft_trace(ctx, predict_fn, &m, np + 1, av);
}

static int perm_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  int64_t n = *(const int64_t *)user;
  out[0] = ft_random_permutation(ft_random_fold_in(ft_random_wrap(in[0]), in[1]), n);
  return 1;
}

ft_jaxpr *demo_trace_perm(ft_ctx *ctx, int n) {
  ft_aval av[2];
  memset(av, 0, sizeof av);
  av[0].dtype = FT_U32;
  av[0].rank = 1;
  av[0].dims[0] = 2;
  av[1].dtype = FT_I32;
  int64_t nn = n;
  return ft_trace(ctx, perm_fn, &nn, 2, av);
}

typedef struct step_user {
  const ft_jaxpr *vg;
  int np;
} step_user;

/* Adam as optax (and gen_demo.py) writes it: m = b1 m + (1 - b1) g,
 * v = b2 v + (1 - b2) g², p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). */
static int step_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  const step_user *u = user;
  int np = u->np;
  ft_val *args[DEMO_MAX_PARAMS + 2], *vg[DEMO_MAX_PARAMS + 1];
  for (int i = 0; i < np; i++) args[i] = in[i];
  ft_val *step = in[3 * np];
  args[np] = in[3 * np + 1];
  args[np + 1] = in[3 * np + 2];
  if (ft_call_jaxpr(t, "value_and_grad_loss", u->vg, np + 2, args, vg, np + 1) != np + 1) return -1;
  ft_val *c1 = ft_np_sub(ft_weak_f(t, 1.0), ft_np_pow(ft_weak_f(t, DEMO_B1), step));
  ft_val *c2 = ft_np_sub(ft_weak_f(t, 1.0), ft_np_pow(ft_weak_f(t, DEMO_B2), step));
  for (int i = 0; i < np; i++) {
    ft_val *g = vg[1 + i];
    ft_val *m = ft_np_add(ft_np_mul(ft_weak_f(t, DEMO_B1), in[np + i]),
                          ft_np_mul(ft_weak_f(t, 1.0 - DEMO_B1), g));
    ft_val *v = ft_np_add(ft_np_mul(ft_weak_f(t, DEMO_B2), in[2 * np + i]),
                          ft_np_mul(ft_np_mul(ft_weak_f(t, 1.0 - DEMO_B2), g), g));
    ft_val *den = ft_np_add(ft_sqrt(ft_np_div(v, c2)), ft_weak_f(t, DEMO_EPS));
    ft_val *upd = ft_np_div(ft_np_mul(ft_weak_f(t, DEMO_LR), ft_np_div(m, c1)), den);
    out[i] = ft_np_sub(in[i], upd);
    out[np + i] = m;
    out[2 * np + i] = v;
  }
  out[3 * np] = vg[0];
  return 3 * np + 1;
}

ft_jaxpr *demo_trace_step(ft_ctx *ctx, demo_model m, const ft_jaxpr *vg, int batch) {
  ft_aval av[3 * DEMO_MAX_PARAMS + 3];
  int np = demo_param_avals(m, av);
  for (int i = 0; i < np; i++) av[np + i] = av[2 * np + i] = av[i];
  av[3 * np] = aval_f32(0, 0, 0);
  av[3 * np + 1] = aval_f32(2, batch, DEMO_PIXELS);
  av[3 * np + 2] = aval_f32(2, batch, DEMO_CLASSES);
  step_user u = {vg, np};
  return ft_trace(ctx, step_fn, &u, 3 * np + 3, av);
}

/* Appends printf output to a growing buffer; false when out of memory. */
typedef struct sbuf {
  char *s;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (w < 0) {
    b->oom = true;
    return;
  }
  if (b->n + (size_t)w + 1 > b->cap) {
    size_t nc = (b->n + (size_t)w + 1) * 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns, b->cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)w + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)w;
}

static void sb_type(sbuf *b, const ft_aval *a) {
  sb_printf(b, "f32[");
  for (int d = 0; d < a->rank; d++) sb_printf(b, "%s%lld", d ? "," : "", (long long)a->dims[d]);
  sb_printf(b, "]");
}

ft_jaxpr *demo_dp_value_and_grad(ft_ctx *ctx, demo_model m, const ft_jaxpr *vg_shard, int batch, int devices,
                                 char *err, size_t errn) {
  ft_aval av[DEMO_MAX_PARAMS];
  int np = demo_param_avals(m, av);
  if (devices < 1 || batch % devices) {
    snprintf(err, errn, "the batch (%d) does not split over %d devices", batch, devices);
    return NULL;
  }
  char *text = ft_jaxpr_print(ctx, vg_shard);
  if (!text) return NULL;
  /* "{ lambda ; INVARS. let EQNS\n  in (OUTS) }": the body keeps the
   * invars and equations, then psums and divides every output */
  char *tail = strstr(text, "{ lambda ; ") == text ? strrchr(text, '\n') : NULL;
  char *outs = tail ? strstr(tail, " in (") : NULL;
  char *close = outs ? strstr(outs, ") }") : NULL;
  if (!close) {
    snprintf(err, errn, "unexpected printout of the shard's value_and_grad");
    ft_free(text);
    return NULL;
  }
  *tail = 0;
  outs += 5;
  *close = 0;
  sbuf b = {0};
  sb_printf(&b, "{ lambda ; ");
  for (int i = 0; i < np; i++) sb_printf(&b, "gp%d:", i), sb_type(&b, &av[i]), sb_printf(&b, " ");
  sb_printf(&b, "gx:f32[%d,%d] gy:f32[%d,%d]. let\n    ", batch, DEMO_PIXELS, batch, DEMO_CLASSES);
  for (int k = 0; k <= np; k++) {
    sb_printf(&b, "%sgo%d:", k ? " " : "", k);
    if (k) sb_type(&b, &av[k - 1]);
    else sb_printf(&b, "f32[]");
  }
  sb_printf(&b, " = shard_map[\n      check_vma=False\n      in_specs=(");
  for (int i = 0; i < np; i++) sb_printf(&b, "P(), ");
  sb_printf(&b, "P('i',), P('i',))\n      jaxpr=%s", text);
  int k = 0;
  for (char *save = NULL, *o = strtok_r(outs, ", ", &save); o; o = strtok_r(NULL, ", ", &save), k++) {
    if (k > np || strchr(o, ':')) {
      snprintf(err, errn, "unexpected output '%s' of the shard's value_and_grad", o);
      free(b.s);
      ft_free(text);
      return NULL;
    }
    sb_printf(&b, "\n          dp%d:", k);
    if (k) sb_type(&b, &av[k - 1]);
    else sb_printf(&b, "f32[]");
    sb_printf(&b, " = psum[axes=('i',) axis_index_groups=None] %s\n          dq%d:", o, k);
    if (k) sb_type(&b, &av[k - 1]);
    else sb_printf(&b, "f32[]");
    sb_printf(&b, " = div dp%d %d.0:f32[]", k, devices);
  }
  sb_printf(&b, "\n        in (");
  for (int q = 0; q < k; q++) sb_printf(&b, "%sdq%d", q ? ", " : "", q);
  sb_printf(&b, ") }\n      mesh=Mesh('i': %d, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
            "      out_specs=(", devices);
  for (int q = 0; q <= np; q++) sb_printf(&b, "%sP()", q ? ", " : "");
  sb_printf(&b, ")\n    ] ");
  for (int i = 0; i < np; i++) sb_printf(&b, "gp%d ", i);
  sb_printf(&b, "gx gy\n  in (");
  for (int q = 0; q <= np; q++) sb_printf(&b, "%sgo%d", q ? ", " : "", q);
  sb_printf(&b, ") }\n");
  ft_free(text);
  if (b.oom || k != np + 1) {
    if (b.oom) snprintf(err, errn, "out of memory");
    else snprintf(err, errn, "the shard's value_and_grad has %d outputs, not %d", k, np + 1);
    free(b.s);
    return NULL;
  }
  ft_jaxpr *j = ft_parse(ctx, b.s, b.n, "dp_value_and_grad");
  free(b.s);
  return j;
}

uint64_t demo_fnv1a(int n, ft_array *const *arrays) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (int k = 0; k < n; k++) {
    ft_aval av = ft_array_aval(arrays[k]);
    size_t bytes = (size_t)ft_aval_size(&av) * ft_dtype_size(av.dtype);
    const unsigned char *p = ft_array_data(arrays[k]);
    for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 0x100000001B3ULL;
  }
  return h;
}
