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
    [FT_KEY_FRY] = {"key<fry>", "key<fry>", 64},     [FT_KEY_FRY4] = {"key<fry4>", "key<fry4>", 128},
    [FT_KEY_PHX2] = {"key<phx2>", "key<phx2>", 32},  [FT_KEY_PHX4] = {"key<phx4>", "key<phx4>", 64},
    [FT_KEY_RBG] = {"key<rbg>", "key<rbg>", 128},    [FT_KEY_URBG] = {"key<urbg>", "key<urbg>", 128},
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
bool ft_dtype_is_key(ft_dtype dt) { return dt >= FT_KEY_FRY && dt <= FT_KEY_URBG; }
int ft_key_words(ft_dtype dt) { return ft_dtype_is_key(dt) ? dtypes[dt].bits / 32 : 0; }

/* The impl tag of a key dtype ("fry" for key<fry>), as random_seed's and
 * random_wrap's impl param spells it; NULL for other dtypes. */
const char *ft_key_tag(ft_dtype dt) {
  static const char *const tags[] = {"fry", "fry4", "phx2", "phx4", "rbg", "urbg"};
  return ft_dtype_is_key(dt) ? tags[dt - FT_KEY_FRY] : NULL;
}

ft_status ft_key_from_tag(const char *tag, size_t n, ft_dtype *out) {
  for (ft_dtype d = FT_KEY_FRY; d <= FT_KEY_URBG; d++) {
    const char *t = ft_key_tag(d);
    if (strlen(t) == n && !strncmp(t, tag, n)) {
      *out = d;
      return FT_OK;
    }
  }
  return FT_ERR_INVALID_ARG;
}

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
