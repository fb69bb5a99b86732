/* tests/api/test_api_additions.c: the additive API of issue 22, through the
 * public header and the shared library only: ft_status_string,
 * ft_ctx_status, ft_array_wrap (borrowed memory, no copy), the constants of
 * a parsed jaxpr (count, avals, binding values), and the version macros. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <frankentrace.h>

static int pass, fail;
#define CHECK(c)                                                        \
  do {                                                                  \
    if (c) pass++;                                                      \
    else { fail++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } \
  } while (0)

static void status_strings(void) {
  CHECK(!strcmp(ft_status_string(FT_OK), "FT_OK"));
  CHECK(!strcmp(ft_status_string(FT_ERR_PARSE), "FT_ERR_PARSE"));
  CHECK(!strcmp(ft_status_string(FT_ERR_CANCELLED), "FT_ERR_CANCELLED"));
  CHECK(!strcmp(ft_status_string((ft_status)-1), "FT_ERR_?"));
  CHECK(!strcmp(ft_status_string((ft_status)1000), "FT_ERR_?"));
  ft_ctx *ctx = ft_ctx_new(NULL);
  CHECK(ft_ctx_status(ctx) == FT_OK);
  CHECK(!ft_parse(ctx, "{ lambda ; a:f32[3]. let b:f32[3] = frob a in (b,) }", 52, "t"));
  CHECK(ft_ctx_status(ctx) == FT_ERR_PARSE);
  ft_ctx_free(ctx);
  CHECK(!strcmp(ft_version(), FT_VERSION_STRING));
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", FT_VERSION_MAJOR, FT_VERSION_MINOR, FT_VERSION_PATCH);
  CHECK(!strcmp(v, FT_VERSION_STRING));
  CHECK(FT_VERSION_NUMBER == FT_VERSION_AT(FT_VERSION_MAJOR, FT_VERSION_MINOR, FT_VERSION_PATCH));
}

static void array_wrap(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  float *mem = aligned_alloc(64, 64);
  for (int i = 0; i < 4; i++) mem[i] = (float)i + 1;
  ft_array *a = ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){4}, mem);
  CHECK(a && ft_array_data(a) == mem);  /* no copy */
  CHECK(a && ft_array_nbytes(a) == 16);
  /* an interpreter run reads the caller's memory; ft_call_into writes it */
  const char *text = "{ lambda ; a:f32[4]. let b:f32[4] = mul a a in (b,) }";
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "sq");
  ft_array *out = NULL;
  CHECK(j && ft_eval(ctx, j, 1, (const ft_array *const *)&a, 1, &out) == FT_OK);
  CHECK(out && ((const float *)ft_array_data(out))[3] == 16.0f);
  float *dst = aligned_alloc(64, 64);
  ft_array *o = ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){4}, dst);
  ft_fn *fn = j ? ft_jit(ctx, j, NULL) : NULL;
  CHECK(fn && ft_call_into(fn, 1, (const ft_array *const *)&a, 1, &o) == FT_OK);
  CHECK(dst[0] == 1.0f && dst[1] == 4.0f && dst[2] == 9.0f && dst[3] == 16.0f);
  ft_fn_free(fn);
  ft_array_free(o);
  ft_array_free(out);
  ft_array_free(a);  /* frees the handle only */
  CHECK(mem[3] == 4.0f);
  /* misaligned or NULL memory is refused with the reason */
  CHECK(!ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){2}, mem + 1));
  CHECK(ft_ctx_status(ctx) == FT_ERR_INVALID_ARG && strstr(ft_ctx_error(ctx), "64-byte aligned"));
  CHECK(!ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){2}, NULL));
  CHECK(strstr(ft_ctx_error(ctx), "data is NULL"));
  ft_array *empty = ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){0}, NULL);
  CHECK(empty && ft_array_nbytes(empty) == 0);
  ft_array_free(empty);
  ft_jaxpr_free(j);
  free(mem);
  free(dst);
  ft_ctx_free(ctx);
}

static void parsed_constants(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *text = "{ lambda a:f32[3] b:i32[]; c:f32[3]. let d:f32[3] = mul a c in (d, b) }";
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "k");
  CHECK(j && ft_jaxpr_num_consts(j) == 2 && ft_jaxpr_num_inputs(j) == 1);
  ft_aval av;
  CHECK(ft_jaxpr_const_aval(j, 0, &av) == FT_OK && av.dtype == FT_F32 && av.rank == 1 && av.dims[0] == 3);
  CHECK(ft_jaxpr_const_aval(j, 1, &av) == FT_OK && av.dtype == FT_I32 && av.rank == 0);
  CHECK(ft_jaxpr_const_aval(j, 2, &av) == FT_ERR_INVALID_ARG);
  CHECK(!ft_jaxpr_consts_bound(j));
  float kv[3] = {2, 3, 4}, xv[3] = {1, 10, 100};
  int32_t bv = 7;
  ft_array *k = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, kv);
  ft_array *b = ft_array_from_data(ctx, FT_I32, 0, NULL, &bv);
  ft_array *x = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, xv);
  /* wrong count, then a wrong dtype: refused, j unchanged */
  CHECK(ft_jaxpr_bind_consts(ctx, j, 1, (const ft_array *const *)&k) == FT_ERR_INVALID_ARG);
  CHECK(strstr(ft_ctx_error(ctx), "has 2 constants; 1 values given"));
  CHECK(ft_jaxpr_bind_consts(ctx, j, 2, (const ft_array *const *)(ft_array *[]){k, x}) == FT_ERR_TYPE);
  CHECK(strstr(ft_ctx_error(ctx), "constant 1 is i32[]; the value is f32[3]"));
  CHECK(!ft_jaxpr_consts_bound(j));
  /* before binding: constants are leading inputs; after: inputs only */
  ft_array *out[2] = {0};
  CHECK(ft_eval(ctx, j, 3, (const ft_array *const *)(ft_array *[]){k, b, x}, 2, out) == FT_OK);
  CHECK(out[0] && ((const float *)ft_array_data(out[0]))[2] == 400.0f);
  ft_array_free(out[0]), ft_array_free(out[1]);
  char before[33], after[33];
  ft_jaxpr_hash_hex(j, before);
  CHECK(ft_jaxpr_bind_consts(ctx, j, 2, (const ft_array *const *)(ft_array *[]){k, b}) == FT_OK);
  CHECK(ft_jaxpr_consts_bound(j));
  ft_jaxpr_hash_hex(j, after);
  CHECK(strcmp(before, after) != 0);  /* the values are part of the program now */
  kv[0] = -1;                         /* copied: later changes do not reach j */
  ft_array_free(k);
  out[0] = out[1] = NULL;
  CHECK(ft_eval(ctx, j, 1, (const ft_array *const *)&x, 2, out) == FT_OK);
  CHECK(out[0] && ((const float *)ft_array_data(out[0]))[0] == 2.0f && ((const float *)ft_array_data(out[0]))[2] == 400.0f);
  CHECK(out[1] && *(const int32_t *)ft_array_data(out[1]) == 7);
  ft_array_free(out[0]), ft_array_free(out[1]);
  ft_fn *fn = ft_jit(ctx, j, NULL);
  out[0] = out[1] = NULL;
  CHECK(fn && ft_call(fn, 1, (const ft_array *const *)&x, 2, out) == FT_OK);
  CHECK(out[0] && ((const float *)ft_array_data(out[0]))[1] == 30.0f);
  ft_array_free(out[0]), ft_array_free(out[1]);
  ft_fn_free(fn);
  CHECK(ft_jaxpr_bind_consts(ctx, j, 2, (const ft_array *const *)(ft_array *[]){b, b}) == FT_ERR_INVALID_ARG);
  CHECK(strstr(ft_ctx_error(ctx), "already have values"));
  ft_array_free(b);
  ft_array_free(x);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

/* A jit whose closed jaxpr keeps constants (JAX 0.12: jnp.piecewise's
 * tables in sici, spence): the text names them but has no values, so the
 * program is refused until ft_jaxpr_bind_sub_consts binds them; a shared
 * (hoisted) sub-jaxpr is bound once for every call of it. */
static void sub_constants(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *text = "let f = { lambda a:f32[3]; b:f32[3]. let\n"
                     "    c:f32[3] = mul a b\n"
                     "  in (c,) } in\n"
                     "{ lambda ; x:f32[3]. let\n"
                     "    y:f32[3] = jit[name=f jaxpr=f] x\n"
                     "    z:f32[3] = jit[name=f jaxpr=f] y\n"
                     "    w:f32[3] = jit[\n"
                     "      name=g\n"
                     "      jaxpr={ lambda u:f32[3] v:i32[3]; t:f32[3]. let\n"
                     "          s:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] v\n"
                     "          r:f32[3] = mul t u\n"
                     "          q:f32[3] = add r s\n"
                     "        in (q,) }\n"
                     "    ] z\n"
                     "  in (w,) }";
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "sub");
  CHECK(j && ft_jaxpr_num_consts(j) == 0 && ft_jaxpr_num_sub_consts(j) == 2);
  CHECK(ft_jaxpr_sub_num_consts(j, 0) == 1 && ft_jaxpr_sub_num_consts(j, 1) == 2);
  CHECK(ft_jaxpr_sub_num_consts(j, 2) == -1);
  ft_aval av;
  CHECK(ft_jaxpr_sub_const_aval(j, 1, 1, &av) == FT_OK && av.dtype == FT_I32 && av.rank == 1);
  CHECK(ft_jaxpr_sub_const_aval(j, 1, 2, &av) == FT_ERR_INVALID_ARG);
  float kv[3] = {2, 3, 4}, xv[3] = {1, 10, 100}, uv[3] = {1, 1, 2};
  int32_t vv[3] = {5, 6, 7};
  ft_array *k = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, kv);
  ft_array *x = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, xv);
  ft_array *u = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, uv);
  ft_array *v = ft_array_from_data(ctx, FT_I32, 1, (int64_t[]){3}, vv);
  ft_array *out[1] = {0};
  /* unbound: both engines refuse, naming what is missing */
  CHECK(ft_eval(ctx, j, 1, (const ft_array *const *)&x, 1, out) != FT_OK && !out[0]);
  CHECK(strstr(ft_ctx_error(ctx), "closes over 1 constants whose values the text does not carry"));
  ft_fn *fn = ft_jit(ctx, j, NULL);
  CHECK(!fn || ft_call(fn, 1, (const ft_array *const *)&x, 1, out) != FT_OK);
  CHECK(!out[0] && strstr(ft_ctx_error(ctx), "closes over constants whose values the text does not"));
  ft_fn_free(fn);
  /* wrong index, count or dtype: refused, j unchanged */
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 2, 1, (const ft_array *const *)&k) == FT_ERR_INVALID_ARG);
  CHECK(strstr(ft_ctx_error(ctx), "2 sub-jaxprs with constants; no number 2"));
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 1, 1, (const ft_array *const *)&u) == FT_ERR_INVALID_ARG);
  CHECK(strstr(ft_ctx_error(ctx), "the sub-jaxpr has 2 constants; 1 values given"));
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 0, 1, (const ft_array *const *)&v) == FT_ERR_TYPE);
  char h0[33], h1[33];
  ft_jaxpr_hash_hex(j, h0);
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 0, 1, (const ft_array *const *)&k) == FT_OK);
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 1, 2, (const ft_array *const *)(ft_array *[]){u, v}) == FT_OK);
  ft_jaxpr_hash_hex(j, h1);
  CHECK(strcmp(h0, h1) != 0);  /* the bound values are part of the program */
  CHECK(ft_jaxpr_bind_sub_consts(ctx, j, 0, 1, (const ft_array *const *)&k) == FT_ERR_INVALID_ARG);
  CHECK(strstr(ft_ctx_error(ctx), "the sub-jaxpr's constants already have values"));
  kv[0] = -1;  /* copied */
  const float want[3] = {1 * 4 + 5, 10 * 9 + 6, 100 * 16 * 2 + 7};
  CHECK(ft_eval(ctx, j, 1, (const ft_array *const *)&x, 1, out) == FT_OK && out[0]);
  for (int i = 0; out[0] && i < 3; i++) CHECK(((const float *)ft_array_data(out[0]))[i] == want[i]);
  ft_array_free(out[0]);
  out[0] = NULL;
  fn = ft_jit(ctx, j, NULL);
  CHECK(fn && ft_call(fn, 1, (const ft_array *const *)&x, 1, out) == FT_OK && out[0]);
  for (int i = 0; out[0] && i < 3; i++) CHECK(((const float *)ft_array_data(out[0]))[i] == want[i]);
  ft_array_free(out[0]);
  ft_fn_free(fn);
  ft_array_free(k), ft_array_free(x), ft_array_free(u), ft_array_free(v);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

int main(void) {
  status_strings();
  array_wrap();
  parsed_constants();
  sub_constants();
  printf("%d passed, %d failed\n", pass, fail);
  return fail != 0;
}
