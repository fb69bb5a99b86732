/* tests/lower/jit_util.h: helpers for the JIT tests: reading golden cases,
 * comparing arrays bit for bit (every NaN equal to every NaN, as
 * docs/determinism.md defines the contract), random arrays. */
#ifndef JIT_UTIL_H
#define JIT_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"

static ft_ctx *C;

static void jt_setup(void) { C = ft_ctx_new(NULL); }
static void jt_teardown(void) { ft_ctx_free(C); }

static char *jt_read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

/* What ft_jit_emit writes for j (kind: FT_EMIT_LLVM, FT_EMIT_PLAN, ...),
 * through a temporary file; malloc'd text. */
static inline char *jt_emit(ft_jaxpr *j, ft_emit_kind kind) {
  char path[] = "/tmp/ft_test_jit_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(ft_jit_emit(C, j, kind, NULL, path, NULL), FT_OK);
  size_t len;
  char *text = jt_read_all(path, &len);
  unlink(path);
  ck_assert_ptr_nonnull(text);
  return text;
}

/* Bitwise equal, except that any two NaNs of a float dtype are equal.
 * *strict is cleared when NaN payloads differ. */
static bool jt_same(const ft_array *a, const ft_array *b, bool *strict, int64_t *where) {
  if (!ft_aval_eq(&a->aval, &b->aval)) return false;
  if (!a->nbytes || !memcmp(a->data, b->data, a->nbytes)) return true;
  ft_dtype dt = a->aval.dtype;
  int64_t n = ft_array_size(a) * (ft_dtype_is_complex(dt) ? 2 : 1);
  size_t es = ft_dtype_is_complex(dt) ? ft_dtype_size(dt) / 2 : ft_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    const char *x = (const char *)a->data + (size_t)i * es, *y = (const char *)b->data + (size_t)i * es;
    if (!memcmp(x, y, es)) continue;
    bool nan = false;
    if (es == 4 && (dt == FT_F32 || dt == FT_C64)) {
      float fx, fy;
      memcpy(&fx, x, 4), memcpy(&fy, y, 4);
      nan = isnan(fx) && isnan(fy);
    } else if (es == 8 && (dt == FT_F64 || dt == FT_C128)) {
      double fx, fy;
      memcpy(&fx, x, 8), memcpy(&fy, y, 8);
      nan = isnan(fx) && isnan(fy);
    }
    if (!nan) {
      if (where) *where = i;
      return false;
    }
    if (strict) *strict = false;
  }
  return true;
}

static uint64_t jt_rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Random contents: a mix of small values, wide values, specials. */
static void jt_fill(ft_array *a, uint64_t seed) {
  int64_t n = ft_array_size(a);
  ft_dtype dt = a->aval.dtype;
  static const double sp[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, INFINITY, -INFINITY, NAN, 1e-40, 1e30, 100.0};
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = jt_rng(&seed);
    int kind = (int)(r % 8);
    double u = (double)(jt_rng(&seed) >> 11) * 0x1p-53;
    if (ft_dtype_is_float(dt)) {
      double v = kind == 0 ? sp[r % (sizeof sp / sizeof sp[0])] : kind < 4 ? 8 * u - 4 : kind < 6 ? (u - 0.5) * 1e4 : u;
      ft_set_f64(a, i, v);
    } else if (dt == FT_BOOL) {
      ft_set_i64(a, i, (int64_t)(r & 1));
    } else {
      int64_t v = kind < 3 ? (int64_t)(r % 17) - 8 : kind < 5 ? (int64_t)(r % 70) - 2 : (int64_t)jt_rng(&seed);
      ft_set_i64(a, i, v);
    }
  }
}

#endif
