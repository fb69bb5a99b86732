/* tests/fuzz/fuzz_transform.c: transform composition strings
 * (ft_transform, ft_transform_ex; include/ft.h "compose") applied to two
 * fixed small jaxprs. Any string must either fail with a status and a
 * message or give a verified jaxpr that prints and parses back to the same
 * hash. Inputs with more than MAX_PARENS parentheses are skipped: nested
 * hessians grow the program exponentially, which is expected, not a bug. */
#include <string.h>

#include "fuzz.h"
#include "ft.h"

enum { MAX_PARENS = 10, MAX_LEN = 512 };

/* f(w, x) = sum(sin(w * x)): two inputs, one scalar output. */
static const char *F2 =
    "{ lambda ; a:f32[3] b:f32[3]. let\n"
    "    c:f32[3] = mul a b\n"
    "    d:f32[3] = sin c\n"
    "    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] d\n"
    "  in (e,) }";
/* g(x, s, n) = (max(sum(x * s, 1)), sum(x * s, 1), n): a non-scalar output
 * and an integer input and output. */
static const char *G3 =
    "{ lambda ; a:f32[2,3] b:f32[] c:i32[]. let\n"
    "    d:f32[2,3] = mul a b\n"
    "    e:f32[2] = reduce_sum[axes=(1,) out_sharding=None] d\n"
    "    f:f32[] = reduce_max[axes=(0,) out_sharding=None] e\n"
    "  in (f, e, c) }";

static ft_ctx *ctx;
static ft_jaxpr *progs[2];
static const ft_aval f2_avals[2] = {{.dtype = FT_F32, .rank = 2, .dims = {4, 3}},
                                    {.dtype = FT_F32, .rank = 1, .dims = {3}}};

static void on_step(void *user, const ft_transform_step *s) {
  (void)user;
  FUZZ_CHECK(s->result && s->name && s->expr && s->params, "step %d incomplete", s->index);
}

static void check_result(ft_jaxpr *r, const char *expr) {
  if (!r) {
    FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "'%s' failed silently", expr);
    return;
  }
  FUZZ_CHECK(ft_jaxpr_verify(ctx, r) == FT_OK, "'%s' gave an unverified jaxpr: %s", expr,
             ft_ctx_error(ctx));
  char *text = ft_jaxpr_print(ctx, r);
  FUZZ_CHECK(text != NULL, "'%s': print failed: %s", expr, ft_ctx_error(ctx));
  ft_jaxpr *k = ft_parse(ctx, text, strlen(text), "fuzz-transform");
  FUZZ_CHECK(k != NULL, "'%s': printed result does not parse: %s\n%s", expr, ft_ctx_error(ctx), text);
  uint8_t h1[16], h2[16];
  ft_jaxpr_hash(r, h1);
  ft_jaxpr_hash(k, h2);
  FUZZ_CHECK(!memcmp(h1, h2, 16), "'%s': hash changed across print/parse\n%s", expr, text);
  ft_jaxpr_free(k);
  ft_free(text);
  ft_jaxpr_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) {
    if (!(ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1}))) abort();
    const char *src[2] = {F2, G3};
    for (int i = 0; i < 2; i++)
      if (!(progs[i] = ft_parse(ctx, src[i], strlen(src[i]), "fixed"))) {
        fprintf(stderr, "fuzz_transform: %s\n", ft_ctx_error(ctx));
        abort();
      }
  }
  if (size > MAX_LEN) return 0;
  int parens = 0;
  for (size_t i = 0; i < size; i++) parens += data[i] == '(';
  if (parens > MAX_PARENS) return 0;
  char *expr = malloc(size + 1);
  if (!expr) return 0;
  memcpy(expr, data, size);
  expr[size] = 0;  /* an embedded NUL just ends the string early */
  for (int i = 0; i < 2; i++) {
    ft_ctx_clear_error(ctx);
    check_result(ft_transform(ctx, progs[i], expr), expr);
  }
  ft_transform_options o = {.size = sizeof(ft_transform_options), .in_avals = f2_avals, .n_in_avals = 2, .name = "f",
                            .on_step = on_step};
  ft_ctx_clear_error(ctx);
  check_result(ft_transform_ex(ctx, progs[0], expr, &o), expr);
  free(expr);
  return 0;
}
