/* tests/fuzz/fuzz_npy.c: the .npy reader. Any input must either fail with
 * FT_ERR_IO (or NOMEM) and a message, or read to an array that writes and
 * reads back bit-identically: write(read(x)) is a fixed point. */
#include <string.h>

#include "fuzz.h"
#include "ft.h"

static ft_ctx *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx && !(ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1}))) abort();
  ft_ctx_clear_error(ctx);
  ft_array *a = ft_npy_read_mem(ctx, data, size, "fuzz.npy");
  if (!a) {
    ft_status st = ft_ctx_status(ctx);
    FUZZ_CHECK((st == FT_ERR_IO || st == FT_ERR_NOMEM) && ft_ctx_error(ctx)[0],
               "read failed with status %d: '%s'", st, ft_ctx_error(ctx));
    return 0;
  }
  ft_aval av = ft_array_aval(a);
  FUZZ_CHECK(av.rank >= 0 && av.rank <= FT_MAX_RANK, "rank %d", av.rank);
  FUZZ_CHECK((size_t)ft_aval_size(&av) * ft_dtype_size(av.dtype) == ft_array_nbytes(a),
             "nbytes %zu disagrees with the aval", ft_array_nbytes(a));
  FUZZ_CHECK(ft_array_nbytes(a) <= size, "array of %zu bytes from a %zu-byte file",
             ft_array_nbytes(a), size);
  void *w1 = NULL, *w2 = NULL;
  size_t n1 = 0, n2 = 0;
  ft_status st = ft_npy_write_mem(ctx, a, &w1, &n1);
  FUZZ_CHECK(st == FT_OK, "write failed: %s", ft_ctx_error(ctx));
  ft_array *b = ft_npy_read_mem(ctx, w1, n1, "fuzz-rewritten.npy");
  FUZZ_CHECK(b != NULL, "rewritten file does not read: %s", ft_ctx_error(ctx));
  FUZZ_CHECK(ft_array_equal_bits(a, b), "array changed across write/read");
  st = ft_npy_write_mem(ctx, b, &w2, &n2);
  FUZZ_CHECK(st == FT_OK, "second write failed: %s", ft_ctx_error(ctx));
  FUZZ_CHECK(n1 == n2 && !memcmp(w1, w2, n1), "write(read(write(x))) != write(x)");
  /* The data section of the input is what the array holds. */
  size_t nb = ft_array_nbytes(a);
  FUZZ_CHECK(!nb || !memcmp((const uint8_t *)w1 + n1 - nb, ft_array_data(a), nb),
             "written data differs from the array");
  ft_free(w1);
  ft_free(w2);
  ft_array_free(b);
  ft_array_free(a);
  return 0;
}
