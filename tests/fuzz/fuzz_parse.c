/* tests/fuzz/fuzz_parse.c: the jaxpr parser. Any input must either fail with
 * a message or parse to a verified jaxpr whose printed text parses again to
 * the same canonical hash and prints to the same text (print is canonical). */
#include <string.h>

#include "fuzz.h"
#include "ft.h"

static ft_ctx *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx && !(ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1}))) abort();
  ft_ctx_clear_error(ctx);
  ft_jaxpr *j = ft_parse(ctx, (const char *)data, size, "fuzz");
  if (!j) {
    FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "parse failed silently");
    return 0;
  }
  FUZZ_CHECK(ft_jaxpr_verify(ctx, j) == FT_OK, "parsed jaxpr does not verify: %s",
             ft_ctx_error(ctx));
  char *text = ft_jaxpr_print(ctx, j);
  if (!text) {  /* only allocation failure may stop the printer */
    FUZZ_CHECK(ft_ctx_status(ctx) == FT_ERR_NOMEM, "print failed: %s", ft_ctx_error(ctx));
    ft_jaxpr_free(j);
    return 0;
  }
  ft_jaxpr *k = ft_parse(ctx, text, strlen(text), "fuzz-reprint");
  FUZZ_CHECK(k != NULL, "printed text does not parse: %s\n--- text:\n%s", ft_ctx_error(ctx), text);
  uint8_t h1[16], h2[16];
  ft_jaxpr_hash(j, h1);
  ft_jaxpr_hash(k, h2);
  char *text2 = ft_jaxpr_print(ctx, k);
  FUZZ_CHECK(!memcmp(h1, h2, 16), "hash changed across print/parse\n--- text:\n%s", text);
  FUZZ_CHECK(text2 && !strcmp(text, text2), "print is not a fixed point\n--- first:\n%s\n--- second:\n%s",
             text, text2 ? text2 : "(null)");
  ft_free(text2);
  ft_free(text);
  ft_jaxpr_free(k);
  ft_jaxpr_free(j);
  return 0;
}
