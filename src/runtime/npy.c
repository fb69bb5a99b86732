/* src/runtime/npy.c: reading and writing NumPy .npy files (format 1.0, 2.0
 * and 3.0; little-endian, C order). Everything else — Fortran order,
 * big-endian or structured or object dtypes, pickles, malformed headers or
 * data of the wrong length — is refused with FT_ERR_IO naming the file and
 * the problem. The reader never trusts a byte of its input.
 *
 * bfloat16: NumPy has no bfloat16; JAX arrays saved with np.save (through
 * ml_dtypes) carry descr '<V2' (a 2-byte void). So '<V2', '|V2' and the
 * explicit spelling 'bfloat16' read as bf16, and bf16 is written as '<V2',
 * which np.load returns as raw 2-byte voids (view them as ml_dtypes.bfloat16).
 *
 * float0: jax.dtypes.float0 is np.dtype([('float0', 'V')]), zero bytes an
 * element, which np.save writes as descr [('float0', '|V0')] and no data;
 * that one structured descr reads and writes as FT_FLOAT0. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* descr spellings for each dtype (the first is what we write). */
static const struct {
  const char *descr;
  ft_dtype dt;
} descrs[] = {
    {"|b1", FT_BOOL},  {"<b1", FT_BOOL},  {"|i1", FT_I8},    {"<i1", FT_I8},
    {"<i2", FT_I16},   {"<i4", FT_I32},   {"<i8", FT_I64},   {"|u1", FT_U8},
    {"<u1", FT_U8},    {"<u2", FT_U16},   {"<u4", FT_U32},   {"<u8", FT_U64},
    {"<f2", FT_F16},   {"<V2", FT_BF16},  {"|V2", FT_BF16},  {"bfloat16", FT_BF16},
    {"<f4", FT_F32},   {"<f8", FT_F64},   {"<c8", FT_C64},   {"<c16", FT_C128},
};

typedef struct rd {
  ft_ctx *ctx;
  const char *name;
  const char *p, *end; /* the header dict text */
} rd;

static ft_status bad(rd *r, const char *fmt, const char *detail) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, detail);
  return ft_set_error(r->ctx, FT_ERR_IO, "%s: not a readable .npy file: %s", r->name, msg);
}

static void skip_ws(rd *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static bool eat(rd *r, char c) {
  skip_ws(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return true;
  }
  return false;
}

/* A quoted string ('...' or "..."), without escapes (numpy never writes them). */
static bool read_str(rd *r, char *out, size_t cap) {
  skip_ws(r);
  if (r->p >= r->end || (*r->p != '\'' && *r->p != '"')) return false;
  char q = *r->p++;
  size_t n = 0;
  while (r->p < r->end && *r->p != q) {
    if (*r->p == '\\' || n + 1 >= cap) return false;
    out[n++] = *r->p++;
  }
  if (r->p >= r->end) return false;
  r->p++;
  out[n] = 0;
  return true;
}

static bool read_word(rd *r, const char *w) {
  skip_ws(r);
  size_t n = strlen(w);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n)) return false;
  r->p += n;
  return true;
}

/* A shape tuple: (), (3,), (2, 3), with an optional trailing comma. */
static ft_status read_shape(rd *r, int *rank, int64_t *dims) {
  if (!eat(r, '(')) return bad(r, "%s", "the shape is not a tuple");
  *rank = 0;
  for (;;) {
    if (eat(r, ')')) return FT_OK;
    skip_ws(r);
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
      return bad(r, "%s", "the shape holds something other than non-negative integers");
    uint64_t v = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      v = v * 10 + (uint64_t)(*r->p++ - '0');
      if (v > (UINT64_C(1) << 50)) return bad(r, "%s", "a dimension is too large");
    }
    if (r->p < r->end && (*r->p == 'L' || *r->p == 'l')) r->p++; /* Python 2 longs */
    if (*rank >= FT_MAX_RANK) return bad(r, "the shape has more than %s dimensions", "8");
    dims[(*rank)++] = (int64_t)v;
    if (!eat(r, ',')) {
      if (eat(r, ')')) return FT_OK;
      return bad(r, "%s", "the shape tuple is malformed");
    }
  }
}

static ft_status lookup_descr(rd *r, const char *d, ft_dtype *dt) {
  for (size_t i = 0; i < FT_COUNTOF(descrs); i++)
    if (!strcmp(d, descrs[i].descr)) {
      *dt = descrs[i].dt;
      return FT_OK;
    }
  if (d[0] == '>' && d[1]) return bad(r, "big-endian data ('%s') is not supported", d);
  if (strchr(d, 'O')) return bad(r, "object arrays ('%s') are not supported", d);
  /* '=' is native order: little-endian here, but a file should say so. */
  if (d[0] == '=' && d[1]) {
    char tmp[72];
    snprintf(tmp, sizeof tmp, "<%s", d + 1);
    for (size_t i = 0; i < FT_COUNTOF(descrs); i++)
      if (!strcmp(tmp, descrs[i].descr)) {
        *dt = descrs[i].dt;
        return FT_OK;
      }
  }
  return bad(r, "unsupported dtype descr '%s'", d);
}

/* Parses the header dict: {'descr': ..., 'fortran_order': ..., 'shape': ...}. */
static ft_status parse_header(rd *r, ft_dtype *dt, int *rank, int64_t *dims) {
  bool have_d = false, have_f = false, have_s = false;
  if (!eat(r, '{')) return bad(r, "%s", "the header is not a dict (no '{')");
  for (;;) {
    if (eat(r, '}')) break;
    char key[32];
    if (!read_str(r, key, sizeof key)) return bad(r, "%s", "a header key is not a quoted string");
    if (!eat(r, ':')) return bad(r, "expected ':' after the key '%s'", key);
    if (!strcmp(key, "descr")) {
      char d[64];
      skip_ws(r);
      if (r->p < r->end && *r->p == '[') {
        /* jax.dtypes.float0, np.dtype([('float0', 'V')]): the one structured
         * dtype read, as FT_FLOAT0 (zero bytes per element) */
        char f[16], v[8];
        r->p++;
        if (!eat(r, '(') || !read_str(r, f, sizeof f) || !eat(r, ',') || !read_str(r, v, sizeof v) ||
            !eat(r, ')') || !eat(r, ']') || strcmp(f, "float0") || strcmp(v, "|V0"))
          return bad(r, "%s", "structured dtypes are not supported (only float0, [('float0', '|V0')])");
        *dt = FT_FLOAT0;
        have_d = true;
      } else {
        if (!read_str(r, d, sizeof d)) return bad(r, "%s", "'descr' is not a quoted string");
        ft_status st = lookup_descr(r, d, dt);
        if (st) return st;
        have_d = true;
      }
    } else if (!strcmp(key, "fortran_order")) {
      if (read_word(r, "True")) return bad(r, "%s", "Fortran-order arrays are not supported");
      if (!read_word(r, "False")) return bad(r, "%s", "'fortran_order' is not True or False");
      have_f = true;
    } else if (!strcmp(key, "shape")) {
      ft_status st = read_shape(r, rank, dims);
      if (st) return st;
      have_s = true;
    } else {
      return bad(r, "unexpected header key '%s'", key);
    }
    if (!eat(r, ',')) {
      if (eat(r, '}')) break;
      return bad(r, "%s", "expected ',' or '}' in the header dict");
    }
  }
  skip_ws(r);
  while (r->p < r->end && *r->p == '\0') r->p++;
  skip_ws(r);
  if (r->p != r->end) return bad(r, "%s", "trailing characters after the header dict");
  if (!have_d) return bad(r, "%s", "the header has no 'descr'");
  if (!have_f) return bad(r, "%s", "the header has no 'fortran_order'");
  if (!have_s) return bad(r, "%s", "the header has no 'shape'");
  return FT_OK;
}

ft_array *ft_npy_read_mem(ft_ctx *ctx, const void *buf, size_t len, const char *name) {
  rd r = {.ctx = ctx, .name = name ? name : "<memory>"};
  const unsigned char *b = buf;
  if (!buf && len) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: buffer is NULL", r.name);
    return NULL;
  }
  if (len < 8 || memcmp(b, MAGIC, 6)) {
    bad(&r, "%s", len < 8 ? "the file is too short for the magic string"
                          : "bad magic (not \\x93NUMPY)");
    return NULL;
  }
  int major = b[6], minor = b[7];
  size_t hlen, off;
  if (major == 1 && minor == 0) {
    if (len < 10) return bad(&r, "%s", "truncated header length"), NULL;
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    off = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (len < 12) return bad(&r, "%s", "truncated header length"), NULL;
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    off = 12;
  } else {
    char v[32];
    snprintf(v, sizeof v, "%d.%d", major, minor);
    bad(&r, "unsupported format version %s (1.0, 2.0 and 3.0 are)", v);
    return NULL;
  }
  if (hlen > len - off) {
    bad(&r, "%s", "truncated header");
    return NULL;
  }
  for (size_t i = 0; i < hlen; i++)
    if (b[off + i] >= 0x80 && major < 3) {
      bad(&r, "%s", "non-ASCII bytes in the header");
      return NULL;
    }
  r.p = (const char *)b + off;
  r.end = r.p + hlen;
  ft_dtype dt = FT_F32;
  int rank = 0;
  int64_t dims[FT_MAX_RANK] = {0};
  if (parse_header(&r, &dt, &rank, dims) != FT_OK) return NULL;
  ft_aval av = ft_aval_make(dt, rank, dims);
  size_t data_len = len - off - hlen;
  /* Check the length before allocating: a header may claim a huge shape. */
  uint64_t want = ft_dtype_size(dt);
  for (int i = 0; i < rank; i++) {
    if (dims[i] && want > UINT64_MAX / (uint64_t)dims[i]) want = UINT64_MAX;
    else want *= (uint64_t)dims[i];
  }
  if (want != data_len) {
    char msg[96];
    snprintf(msg, sizeof msg, "%zu bytes, but the shape needs %llu", data_len,
             (unsigned long long)want);
    bad(&r, "the data is %s", msg);
    return NULL;
  }
  ft_array *a = ft_array_alloc(ctx, &av);
  if (!a) {
    ft_error_prefix(ctx, "%s", r.name);
    return NULL;
  }
  if (a->nbytes) memcpy(a->data, b + off + hlen, a->nbytes);
  if (dt == FT_BOOL) {
    for (size_t i = 0; i < a->nbytes; i++)
      if (((uint8_t *)a->data)[i] > 1) {
        ft_array_free(a);
        bad(&r, "%s", "a bool element is neither 0 nor 1");
        return NULL;
      }
  }
  return a;
}

ft_array *ft_npy_read(ft_ctx *ctx, const char *path) {
  if (!path) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "npy: path is NULL");
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    ft_set_error(ctx, FT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory reading the file", path);
      return NULL;
    }
    errno = 0;
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    unsigned char *nb = cap < (SIZE_MAX >> 1) ? realloc(buf, cap * 2) : NULL;
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  bool err = ferror(f);
  int read_errno = errno;  /* fread sets it (EISDIR for a directory) */
  fclose(f);
  if (err) {
    free(buf);
    if (read_errno == EISDIR) ft_set_error(ctx, FT_ERR_IO, "%s: is a directory, not a .npy file", path);
    else if (read_errno) ft_set_error(ctx, FT_ERR_IO, "%s: read error: %s", path, strerror(read_errno));
    else ft_set_error(ctx, FT_ERR_IO, "%s: read error", path);
    return NULL;
  }
  ft_array *a = ft_npy_read_mem(ctx, buf, len, path);
  free(buf);
  return a;
}

ft_status ft_npy_write_mem(ft_ctx *ctx, const ft_array *a, void **out, size_t *out_len) {
  if (!a || !out || !out_len) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "npy: NULL argument");
  const char *descr = NULL;
  ft_aval keydata; /* a key array is written as its key data, u32[...,words] */
  if (ft_dtype_is_key(a->aval.dtype)) {
    if (a->aval.rank >= FT_MAX_RANK)
      return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "npy: the key data of a rank-%d key array "
                          "exceeds rank %d", a->aval.rank, FT_MAX_RANK);
    keydata = a->aval;
    keydata.dims[keydata.rank++] = ft_key_words(a->aval.dtype);
    keydata.dtype = FT_U32;
    ft_array v = *a;
    v.aval = keydata;
    return ft_npy_write_mem(ctx, &v, out, out_len);
  }
  for (size_t i = 0; i < FT_COUNTOF(descrs); i++)
    if (descrs[i].dt == a->aval.dtype) {
      descr = descrs[i].descr;
      break;
    }
  bool float0 = a->aval.dtype == FT_FLOAT0; /* written as NumPy writes jax.dtypes.float0 */
  if (!descr && !float0)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "npy: cannot write dtype %s",
                        ft_dtype_name(a->aval.dtype));
  char dict[512];
  int n = float0 ? snprintf(dict, sizeof dict, "{'descr': [('float0', '|V0')], 'fortran_order': False, 'shape': (")
                 : snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < a->aval.rank; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld",
                  (long long)a->aval.dims[i]);
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", a->aval.rank == 1 ? "," : "");
  /* Pad with spaces and a final newline so the data starts 64-byte aligned. */
  size_t pre = 10, total = pre + (size_t)n + 1;
  total = (total + 63) / 64 * 64;
  size_t hlen = total - pre;
  unsigned char *b = malloc(total + a->nbytes);
  if (!b) return ft_set_error(ctx, FT_ERR_NOMEM, "npy: out of memory");
  memcpy(b, MAGIC, 6);
  b[6] = 1;
  b[7] = 0;
  b[8] = (unsigned char)(hlen & 0xff);
  b[9] = (unsigned char)(hlen >> 8);
  memset(b + pre, ' ', hlen);
  memcpy(b + pre, dict, (size_t)n);
  b[total - 1] = '\n';
  if (a->nbytes) memcpy(b + total, a->data, a->nbytes);
  *out = b;
  *out_len = total + a->nbytes;
  return FT_OK;
}

ft_status ft_npy_write(ft_ctx *ctx, const ft_array *a, const char *path) {
  if (!path) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "npy: path is NULL");
  void *buf;
  size_t len;
  ft_status st = ft_npy_write_mem(ctx, a, &buf, &len);
  if (st) return st;
  st = ft_file_write(ctx, "npy", path, buf, len);
  free(buf);
  return st;
}
