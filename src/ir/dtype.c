/* src/ir/dtype.c: element types and avals (dtype + shape). */
#include <string.h>

#include "ir.h"

static const struct {
  const char *s, *l;
  int bits;
} dtypes[FT_NUM_DTYPES] = {
    [FT_BOOL] = {"bool", "bool", 8},       [FT_I8] = {"i8", "int8", 8},
    [FT_I16] = {"i16", "int16", 16},       [FT_I32] = {"i32", "int32", 32},
    [FT_I64] = {"i64", "int64", 64},       [FT_U8] = {"u8", "uint8", 8},
    [FT_U16] = {"u16", "uint16", 16},      [FT_U32] = {"u32", "uint32", 32},
    [FT_U64] = {"u64", "uint64", 64},      [FT_F16] = {"f16", "float16", 16},
    [FT_BF16] = {"bf16", "bfloat16", 16},  [FT_F32] = {"f32", "float32", 32},
    [FT_F64] = {"f64", "float64", 64},     [FT_C64] = {"c64", "complex64", 64},
    [FT_C128] = {"c128", "complex128", 128}, [FT_FLOAT0] = {"float0", "float0", 0},
};

const char *ft_dtype_name(ft_dtype dt) {
  return (unsigned)dt < FT_NUM_DTYPES ? dtypes[dt].s : "?";
}
const char *ft_dtype_long_name(ft_dtype dt) {
  return (unsigned)dt < FT_NUM_DTYPES ? dtypes[dt].l : "?";
}

ft_status ft_dtype_from_name(const char *name, ft_dtype *out) {
  if (!name) return FT_ERR_INVALID_ARG;
  for (int i = 0; i < FT_NUM_DTYPES; i++)
    if (!strcmp(name, dtypes[i].s) || !strcmp(name, dtypes[i].l)) {
      *out = (ft_dtype)i;
      return FT_OK;
    }
  return FT_ERR_INVALID_ARG;
}

int ft_dtype_bits(ft_dtype dt) { return (unsigned)dt < FT_NUM_DTYPES ? dtypes[dt].bits : 0; }
size_t ft_dtype_size(ft_dtype dt) { return (size_t)ft_dtype_bits(dt) / 8; }

bool ft_dtype_is_float(ft_dtype dt) {
  return dt == FT_F16 || dt == FT_BF16 || dt == FT_F32 || dt == FT_F64;
}
bool ft_dtype_is_complex(ft_dtype dt) { return dt == FT_C64 || dt == FT_C128; }
bool ft_dtype_is_inexact(ft_dtype dt) { return ft_dtype_is_float(dt) || ft_dtype_is_complex(dt); }
bool ft_dtype_is_signed(ft_dtype dt) { return dt >= FT_I8 && dt <= FT_I64; }
bool ft_dtype_is_unsigned(ft_dtype dt) { return dt >= FT_U8 && dt <= FT_U64; }
bool ft_dtype_is_int(ft_dtype dt) { return ft_dtype_is_signed(dt) || ft_dtype_is_unsigned(dt); }

bool ft_aval_size_ok(const ft_aval *a) {
  int64_t n = 1;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] < 0) return false;
    if (a->dims[i] == 0) continue;
    if (a->dims[i] > FT_MAX_ELEMS / n) return false;
    n *= a->dims[i];
  }
  return true;
}

/* Avals that reach here passed ft_aval_size_ok; for any other the count
 * saturates at INT64_MAX instead of overflowing. */
int64_t ft_aval_size(const ft_aval *a) {
  int64_t n = 1;
  for (int i = 0; i < a->rank; i++)
    if (__builtin_mul_overflow(n, a->dims[i], &n)) return INT64_MAX;
  return n;
}

bool ft_shape_eq(const ft_aval *a, const ft_aval *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool ft_aval_eq(const ft_aval *a, const ft_aval *b) {
  return a->dtype == b->dtype && ft_shape_eq(a, b);
}

char *ft_aval_str(const ft_aval *a, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", ft_dtype_name(a->dtype));
  for (int i = 0; i < a->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)a->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

ft_aval ft_aval_scalar(ft_dtype dt) {
  ft_aval a = {0};
  a.dtype = dt;
  return a;
}

ft_aval ft_aval_make(ft_dtype dt, int rank, const int64_t *dims) {
  ft_aval a = {0};
  a.dtype = dt;
  a.rank = rank;
  for (int i = 0; i < rank && i < FT_MAX_RANK; i++) a.dims[i] = dims[i];
  return a;
}
