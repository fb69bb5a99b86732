/* tests/runtime/rt_util.h: helpers for the runtime tests — building
 * one-equation jaxprs by hand (no parser needed), making arrays, running
 * the interpreter, and comparing bits. */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <check.h>
#include <math.h>
#include <string.h>

#include "runtime/runtime.h"

static ft_ctx *C;

static void rt_setup(void) { C = ft_ctx_new(NULL); }
static void rt_teardown(void) { ft_ctx_free(C); }

/* A one-equation jaxpr under construction. */
typedef struct B {
  ft_jaxpr *j;
  ft_prim p;
  ft_pval *ps;
} B;

static inline B b_new(ft_prim p) {
  B b = {ft_jaxpr_new(NULL), p, NULL};
  ck_assert_ptr_nonnull(b.j);
  b.ps = ft_params_default(b.j->arena, p);
  return b;
}

static inline void b_pv(B *b, const char *name, ft_pval v) {
  int k = ft_prim_param_index(b->p, name);
  ck_assert_msg(k >= 0, "no param %s", name);
  b->ps[k] = v;
}
static inline void b_int(B *b, const char *name, int64_t v) { b_pv(b, name, ft_pv_int(v)); }
static inline void b_bool(B *b, const char *name, bool v) { b_pv(b, name, ft_pv_bool(v)); }
static inline void b_ints(B *b, const char *name, int n, const int64_t *v) {
  b_pv(b, name, ft_pv_ints(b->j->arena, n, v));
}

/* Finishes the jaxpr with inputs shaped like in[] and the given outputs,
 * evaluates it, frees it. Returns the status; res receives n_out arrays. */
static inline ft_status b_eval(B *b, int n_in, ft_array *const *in, int n_out,
                               const ft_aval *outs, ft_array **res) {
  ft_var *iv[32], *ov[32];
  ck_assert_int_le(n_in, 32);
  for (int i = 0; i < n_in; i++) iv[i] = ft_var_new(b->j->arena, &in[i]->aval);
  for (int i = 0; i < n_out; i++) ov[i] = ft_var_new(b->j->arena, &outs[i]);
  ft_jb jb;
  ft_jb_init(&jb, b->j);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, b->p, n_in, iv, n_out, ov, b->ps));
  ck_assert(ft_jaxpr_set_vars(b->j, 0, NULL, n_in, iv, n_out, ov));
  ft_status st = ft_eval(C, b->j, n_in, (const ft_array *const *)in, n_out, res);
  ft_jaxpr_free(b->j);
  b->j = NULL;
  return st;
}

/* One output; asserts success. */
static inline ft_array *b_run(B *b, int n_in, ft_array *const *in, ft_aval out) {
  ft_array *r = NULL;
  ft_status st = b_eval(b, n_in, in, 1, &out, &r);
  ck_assert_msg(st == FT_OK, "eval failed: %s", ft_ctx_error(C));
  return r;
}

static inline ft_aval AV(ft_dtype dt, int rank, const int64_t *dims) {
  return ft_aval_make(dt, rank, dims);
}
static inline ft_array *ARR(ft_dtype dt, int rank, const int64_t *dims, const void *data) {
  ft_array *a = ft_array_from_data(C, dt, rank, dims, data);
  ck_assert_msg(a != NULL, "%s", ft_ctx_error(C));
  return a;
}
static inline ft_array *SCALAR_F64(ft_dtype dt, double v) {
  ft_array *a = ft_array_new(C, dt, 0, NULL);
  ft_set_f64(a, 0, v);
  return a;
}
static inline ft_array *SCALAR_I64(ft_dtype dt, int64_t v) {
  ft_array *a = ft_array_new(C, dt, 0, NULL);
  ft_set_i64(a, 0, v);
  return a;
}

static inline void free_arrays(ft_array **a, int n) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]);
}

static inline uint32_t bits32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline uint64_t bits64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static inline float fbits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Same value, bit for bit, except that any NaN matches any NaN. */
#define ck_same_f32(got, want)                                                  \
  do {                                                                          \
    float g_ = (got), w_ = (want);                                              \
    ck_assert_msg((isnan(g_) && isnan(w_)) || bits32(g_) == bits32(w_),         \
                  "got %a (0x%08x), want %a (0x%08x)", g_, bits32(g_), w_, bits32(w_)); \
  } while (0)
#define ck_same_f64(got, want)                                                  \
  do {                                                                          \
    double g_ = (got), w_ = (want);                                             \
    ck_assert_msg((isnan(g_) && isnan(w_)) || bits64(g_) == bits64(w_),         \
                  "got %a, want %a", g_, w_);                                   \
  } while (0)

/* Scalar elementwise helpers: build, run, return the value. */
static inline double un(ft_prim p, ft_dtype dt, double x) {
  B b = b_new(p);
  ft_array *a = SCALAR_F64(dt, x);
  ft_array *r = b_run(&b, 1, &a, ft_aval_scalar(dt));
  double v = ft_get_f64(r, 0);
  ft_array_free(a), ft_array_free(r);
  return v;
}
static inline int64_t un_i(ft_prim p, ft_dtype dt, int64_t x) {
  B b = b_new(p);
  ft_array *a = SCALAR_I64(dt, x);
  ft_array *r = b_run(&b, 1, &a, ft_aval_scalar(dt));
  int64_t v = ft_get_i64(r, 0);
  ft_array_free(a), ft_array_free(r);
  return v;
}
static inline double bin(ft_prim p, ft_dtype dt, double x, double y) {
  B b = b_new(p);
  ft_array *a[2] = {SCALAR_F64(dt, x), SCALAR_F64(dt, y)};
  ft_array *r = b_run(&b, 2, a, ft_aval_scalar(dt));
  double v = ft_get_f64(r, 0);
  free_arrays(a, 2), ft_array_free(r);
  return v;
}
static inline int64_t bin_i(ft_prim p, ft_dtype dt, int64_t x, int64_t y) {
  B b = b_new(p);
  ft_array *a[2] = {SCALAR_I64(dt, x), SCALAR_I64(dt, y)};
  ft_array *r = b_run(&b, 2, a, ft_aval_scalar(dt));
  int64_t v = ft_get_i64(r, 0);
  free_arrays(a, 2), ft_array_free(r);
  return v;
}
/* A comparison of two scalars of dtype dt (given as doubles). */
static inline bool cmp(ft_prim p, ft_dtype dt, double x, double y) {
  B b = b_new(p);
  ft_array *a[2] = {SCALAR_F64(dt, x), SCALAR_F64(dt, y)};
  ft_array *r = b_run(&b, 2, a, ft_aval_scalar(FT_BOOL));
  bool v = ft_get_i64(r, 0) != 0;
  free_arrays(a, 2), ft_array_free(r);
  return v;
}
static inline bool cmp_i(ft_prim p, ft_dtype dt, int64_t x, int64_t y) {
  B b = b_new(p);
  ft_array *a[2] = {SCALAR_I64(dt, x), SCALAR_I64(dt, y)};
  ft_array *r = b_run(&b, 2, a, ft_aval_scalar(FT_BOOL));
  bool v = ft_get_i64(r, 0) != 0;
  free_arrays(a, 2), ft_array_free(r);
  return v;
}

#endif
