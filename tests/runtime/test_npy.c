/* tests/runtime/test_npy.c: .npy reading and writing — round trips for every
 * dtype and format version, files as NumPy/JAX write them, a table of bad
 * files (each refused with FT_ERR_IO and a message naming the problem), and
 * fuzzed bytes that must never crash the reader; a failing write (each of
 * its writes, close and rename in turn) leaves the old file and no
 * temporary behind, and names the errno. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rt_util.h"

static const ft_dtype ALL[] = {FT_BOOL, FT_I8,  FT_I16, FT_I32,  FT_I64, FT_U8,  FT_U16,
                               FT_U32,  FT_U64, FT_F16, FT_BF16, FT_F32, FT_F64, FT_C64,
                               FT_C128};

/* Builds a .npy image: magic, version, header dict (padded to 64), data. */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *data,
                       size_t n) {
  size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
  size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major, out[7] = 0;
  if (major == 1) out[8] = (unsigned char)hl, out[9] = (unsigned char)(hl >> 8);
  else out[8] = (unsigned char)hl, out[9] = (unsigned char)(hl >> 8), out[10] = 0, out[11] = 0;
  memset(out + pre, ' ', hl);
  memcpy(out + pre, dict, dl);
  out[total - 1] = '\n';
  memcpy(out + total, data, n);
  return total + n;
}

START_TEST(round_trip_every_dtype) {
  int64_t shapes[4][3] = {{0}, {5}, {2, 3}, {2, 0, 4}};
  int ranks[4] = {0, 1, 2, 3};
  for (size_t k = 0; k < FT_COUNTOF(ALL); k++)
    for (int s = 0; s < 4; s++) {
      ft_array *a = ft_array_new(C, ALL[k], ranks[s], shapes[s]);
      unsigned char *p = ft_array_data_mut(a);
      for (size_t i = 0; i < ft_array_nbytes(a); i++)
        p[i] = ALL[k] == FT_BOOL ? (unsigned char)(i % 2) : (unsigned char)(i * 37 + 11);
      void *buf;
      size_t len;
      ck_assert_int_eq(ft_npy_write_mem(C, a, &buf, &len), FT_OK);
      ck_assert_uint_eq((len - ft_array_nbytes(a)) % 64, 0);
      ft_array *b = ft_npy_read_mem(C, buf, len, "rt.npy");
      ck_assert_msg(b != NULL, "%s: %s", ft_dtype_name(ALL[k]), ft_ctx_error(C));
      ck_assert(ft_array_equal_bits(a, b));
      ft_free(buf), ft_array_free(a), ft_array_free(b);
    }
}
END_TEST

START_TEST(versions_and_numpy_files) {
  unsigned char buf[512];
  float v[3] = {1, -0.0f, 2.5f};
  const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  for (int major = 1; major <= 3; major++) {
    size_t n = make_npy(buf, major, d, v, sizeof v);
    ft_array *a = ft_npy_read_mem(C, buf, n, "v.npy");
    ck_assert_msg(a != NULL, "%s", ft_ctx_error(C));
    ck_assert_mem_eq(ft_array_data(a), v, sizeof v);
    ft_array_free(a);
  }
  /* exactly what np.save of a JAX bfloat16 array writes (ml_dtypes: '<V2') */
  uint16_t bf[2] = {0x3fc0, 0x4000};
  size_t n = make_npy(buf, 1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", bf, 4);
  ft_array *a = ft_npy_read_mem(C, buf, n, "bf.npy");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(ft_array_aval(a).dtype, FT_BF16);
  ck_same_f32(ft_get_f64(a, 0), 1.5f);
  ft_array_free(a);
  /* double quotes, no trailing comma, shape first, 2-D, spaces */
  int32_t m[4] = {1, 2, 3, 4};
  n = make_npy(buf, 2, "{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<i4\"}", m, 16);
  a = ft_npy_read_mem(C, buf, n, "m.npy");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(ft_array_aval(a).dims[1], 2);
  ck_assert_int_eq(ft_get_i64(a, 3), 4);
  ft_array_free(a);
  /* a scalar */
  double s = -3.25;
  n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &s, 8);
  a = ft_npy_read_mem(C, buf, n, "s.npy");
  ck_assert_int_eq(ft_array_aval(a).rank, 0);
  ck_same_f64(ft_get_f64(a, 0), -3.25);
  ft_array_free(a);
  /* the header we write is the one NumPy writes */
  int64_t d23[2] = {2, 3};
  a = ft_array_new(C, FT_I64, 2, d23);
  void *out;
  size_t len;
  ck_assert_int_eq(ft_npy_write_mem(C, a, &out, &len), FT_OK);
  ck_assert_int_eq(memcmp((char *)out + 10,
                          "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", 59), 0);
  ck_assert_int_eq(((char *)out)[len - 48 - 1], '\n');
  ft_free(out), ft_array_free(a);
}
END_TEST

START_TEST(file_io) {
  char path[] = "/tmp/ft_npy_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  int64_t d[1] = {4};
  float v[4] = {1, 2, 3, NAN};
  ft_array *a = ARR(FT_F32, 1, d, v);
  ck_assert_int_eq(ft_npy_write(C, a, path), FT_OK);
  ft_array *b = ft_npy_read(C, path);
  ck_assert(b && ft_array_equal_bits(a, b));
  ft_array_free(b);
  unlink(path);
  ck_assert_ptr_null(ft_npy_read(C, path));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), path));
  ck_assert_int_eq(ft_npy_write(C, a, "/nonexistent-dir/x.npy"), FT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "/nonexistent-dir/x.npy"));
  ft_array_free(a);
}
END_TEST

/* Names in dir, sorted and joined with spaces (static buffer). */
static const char *listing(const char *dir) {
  static char out[1024];
  char names[16][64];
  int n = 0;
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.' && n < 16) snprintf(names[n++], 64, "%.63s", e->d_name);
  closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char t[64];
      memcpy(t, names[j], 64), memcpy(names[j], names[j - 1], 64), memcpy(names[j - 1], t, 64);
    }
  out[0] = 0;
  for (int i = 0; i < n; i++) strcat(strcat(out, i ? " " : ""), names[i]);
  return out;
}

/* Every write, the close and the rename of an output fail in turn (as a
 * full disk does): each time FT_ERR_IO names the file and the errno, the
 * old file is intact and no temporary is left; then the write succeeds. */
START_TEST(failed_write_leaves_old_file) {
  char dir[] = "/tmp/ft_npy_dir_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/out0.npy", dir);
  int64_t d1[1] = {2}, d2[1] = {3000};
  float old[2] = {7, 8}, *big = calloc(3000, sizeof *big);
  for (int i = 0; i < 3000; i++) big[i] = (float)i;
  ft_array *a = ARR(FT_F32, 1, d1, old), *b = ARR(FT_F32, 1, d2, big);
  ck_assert_int_eq(ft_npy_write(C, a, path), FT_OK);
  ck_assert_str_eq(listing(dir), "out0.npy");
  char want[256];
  snprintf(want, sizeof want, "npy: cannot write '%s': %s (the file was not changed)", path,
           strerror(ENOSPC));
  int n = 1;
  for (;; n++) {
    ft__file_fault(n, ENOSPC);
    ft_status st = ft_npy_write(C, b, path);
    ft__file_fault(0, 0);
    if (st == FT_OK) break;
    ck_assert_int_eq(st, FT_ERR_IO);
    if (!strstr(ft_ctx_error(C), "rename failed")) ck_assert_str_eq(ft_ctx_error(C), want);
    else ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), strerror(ENOSPC)));
    ck_assert_str_eq(listing(dir), "out0.npy");
    ft_array *r = ft_npy_read(C, path);
    ck_assert(r && ft_array_equal_bits(r, a));
    ft_array_free(r);
  }
  ck_assert_int_eq(n, 4); /* failed at the write, the close and the rename */
  ft_array *r = ft_npy_read(C, path);
  ck_assert(r && ft_array_equal_bits(r, b));
  ft_array_free(r);
  ck_assert_str_eq(listing(dir), "out0.npy");
  /* a directory that does not exist: the errno is named too */
  ck_assert_int_eq(ft_npy_write(C, a, "/nonexistent-dir/x.npy"), FT_ERR_IO);
  snprintf(want, sizeof want, "npy: cannot create '/nonexistent-dir/x.npy': %s", strerror(ENOENT));
  ck_assert_str_eq(ft_ctx_error(C), want);
  unlink(path);
  rmdir(dir);
  free(big);
  ft_array_free(a);
  ft_array_free(b);
}
END_TEST

START_TEST(bad_files) {
  static const struct {
    int major;
    const char *dict;
    size_t data, cut; /* data bytes; cut: truncate the file to this (0: no) */
    const char *why;
  } t[] = {
      {1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, 0, "Fortran"},
      {1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, 0, "big-endian"},
      {1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16, 0, "object"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, 0, "the data is 8 bytes"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8, 0, "the data is 8 bytes"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8, 0, "expected ','"},
      {1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 0, "expected ':'"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, 0, "non-negative"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }", 8, 0, "not a tuple"},
      {1, "{'descr': '<f4', 'shape': (2,), }", 8, 0, "no 'fortran_order'"},
      {1, "{'fortran_order': False, 'shape': (2,), }", 8, 0, "no 'descr'"},
      {1, "{'descr': '<f4', 'fortran_order': False, }", 8, 0, "no 'shape'"},
      {1, "{'descr': '<x9', 'fortran_order': False, 'shape': (2,), }", 8, 0, "unsupported dtype"},
      {1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, 0, "structured"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, 0, "unexpected header key"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8, 0, "trailing"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, 0, "more than"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 8, 0, "the data is"},
      {1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8, 0, "not True or False"},
      {1, "('descr', '<f4')", 8, 0, "not a dict"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 40, "truncated header"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 9, "truncated header length"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 5, "too short"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 131, "the data is 3 bytes"},
      {4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 0, "version 4.0"},
  };
  unsigned char buf[1024], data[64] = {0};
  for (size_t k = 0; k < FT_COUNTOF(t); k++) {
    size_t n = make_npy(buf, t[k].major == 4 ? 1 : t[k].major, t[k].dict, data, t[k].data);
    if (t[k].major == 4) buf[6] = 4;
    if (t[k].cut) n = t[k].cut;
    ft_ctx_clear_error(C);
    ft_array *a = ft_npy_read_mem(C, buf, n, "bad.npy");
    ck_assert_msg(a == NULL, "case %zu accepted", k);
    ck_assert_int_eq(ft_ctx_status(C), FT_ERR_IO);
    ck_assert_msg(strstr(ft_ctx_error(C), t[k].why) && strstr(ft_ctx_error(C), "bad.npy"),
                  "case %zu: message '%s' lacks '%s'", k, ft_ctx_error(C), t[k].why);
  }
  /* bad magic; a pickle (what np.save(allow_pickle) of an object writes) */
  ck_assert_ptr_null(ft_npy_read_mem(C, "\x80\x04\x95garbage-pickle", 18, "p.npy"));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "bad magic"));
  /* a bool byte other than 0/1 */
  unsigned char b2 = 2;
  size_t n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", &b2, 1);
  ck_assert_ptr_null(ft_npy_read_mem(C, buf, n, "b.npy"));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "bool"));
}
END_TEST

/* Every truncation and many random corruptions of valid files: the reader
 * returns an array or an error, never crashes (ASan watches). */
START_TEST(fuzz_never_crashes) {
  unsigned char good[256], buf[256];
  int32_t data[6] = {1, 2, 3, 4, 5, 6};
  const char *dicts[] = {"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                         "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }"};
  uint32_t s = 2024;
  int accepted = 0;
  for (int dv = 0; dv < 2; dv++) {
    size_t n = make_npy(good, 1 + dv, dicts[dv], data, sizeof data);
    for (size_t cut = 0; cut <= n; cut++) {
      ft_array *a = ft_npy_read_mem(C, good, cut, "f.npy");
      ck_assert(cut == n ? a != NULL : a == NULL);
      ft_array_free(a);
    }
    for (int it = 0; it < 20000; it++) {
      memcpy(buf, good, n);
      int flips = 1 + it % 4;
      for (int f = 0; f < flips; f++) {
        s = s * 1664525u + 1013904223u;
        size_t pos = (s >> 8) % n;
        s = s * 1664525u + 1013904223u;
        buf[pos] = (it & 1) ? (unsigned char)(s >> 24) : (unsigned char)(buf[pos] ^ (1u << (s >> 29)));
      }
      s = s * 1664525u + 1013904223u;
      size_t len = (it % 3 == 0) ? (s >> 8) % (n + 1) : n;
      ft_array *a = ft_npy_read_mem(C, buf, len, "f.npy");
      if (a) {
        accepted++;
        ck_assert_uint_le(ft_array_nbytes(a), len);
      } else {
        ck_assert_int_eq(ft_ctx_status(C), FT_ERR_IO);
      }
      ft_array_free(a);
    }
  }
  ck_assert_int_gt(accepted, 0); /* flips inside the data still read */
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("npy");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, rt_setup, rt_teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, round_trip_every_dtype);
  tcase_add_test(t, versions_and_numpy_files);
  tcase_add_test(t, file_io);
  tcase_add_test(t, failed_write_leaves_old_file);
  tcase_add_test(t, bad_files);
  tcase_add_test(t, fuzz_never_crashes);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
