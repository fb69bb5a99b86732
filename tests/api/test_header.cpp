// tests/api/test_header.cpp: ft.h compiles as C++ and the shared library
// links and runs from C++ (parse, print, hash through the public API only).
#include <cstdio>
#include <cstring>

#include "ft.h"

int main() {
  // The *_INIT macros compile as C++ too; C++ converts ft_array ** to the
  // const input arrays implicitly.
  ft_ctx_options co = FT_CTX_OPTIONS_INIT;
  ft_jit_options jo = FT_JIT_OPTIONS_INIT;
  ft_ledger_options lo = FT_LEDGER_OPTIONS_INIT;
  ft_loop_limits ll = FT_LOOP_LIMITS_INIT;
  ft_transform_options to = FT_TRANSFORM_OPTIONS_INIT;
  if (co.size != sizeof co || jo.size != sizeof jo || lo.size != sizeof lo || ll.size != sizeof ll ||
      to.size != sizeof to)
    return 1;
  ft_ctx *ctx = ft_ctx_new(&co);
  if (!ctx) return 1;
  ft_array *none[1] = {nullptr};
  ft_array *res[1] = {nullptr};
  if (ft_eval(ctx, nullptr, 1, none, 1, res) != FT_ERR_INVALID_ARG) return 1;
  const char *text = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }";
  ft_jaxpr *j = ft_parse(ctx, text, std::strlen(text), "cxx");
  if (!j) {
    std::fprintf(stderr, "parse failed: %s\n", ft_ctx_error(ctx));
    return 1;
  }
  char *out = ft_jaxpr_print(ctx, j);
  int rc = out && std::strcmp(out, text) == 0 ? 0 : 1;
  if (rc) std::fprintf(stderr, "printed:\n%s\nexpected:\n%s", out ? out : "(null)", text);
  ft_free(out);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  std::printf("%s\n", rc ? "1 passed, 1 failed" : "1 passed, 0 failed");
  return rc;
}
