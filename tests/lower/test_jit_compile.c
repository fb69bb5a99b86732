/* tests/lower/test_jit_compile.c: how ft_jit compiles, as opposed to what.
 *
 *  - with two threads a program with several optimized kernels is compiled
 *    as two LLVM modules on two threads, loaded from one object blob: the
 *    results equal the interpreter's and the one-thread compilation's bit
 *    for bit, and the disk cache stores the blob and loads it back;
 *  - a malformed blob is refused with a message, never loaded in part;
 *  - kernels are compiled in units by class (optnone and medium kernels at
 *    codegen level None, the others at Default): the same bits, one blob;
 *  - the reduced pass pipeline (no loop unroller below O3) still vectorizes
 *    the fused chain and the canonical-order sum. */
#include <dirent.h>
#include <unistd.h>

#include "jit_util.h"
#include "lower/lower.h"

/* Four kernels of 4096+ element-iterations each (three loops of different
 * shapes and a reduction), so the program is split over two modules. */
static const char *PROG =
    "{ lambda ; x:f32[4096] y:f32[64,128] z:f32[8192]. let\n"
    "    a:f32[4096] = tanh x\n    b:f32[4096] = mul a x\n"
    "    c:f32[64,128] = logistic y\n    d:f32[64] = reduce_sum[axes=(1,) out_sharding=None] c\n"
    "    e:f32[8192] = exp z\n    f:f32[8192] = sub e z\n"
    "    g:f32[64,128] = sin y\n"
    "  in (b, d, f, g) }\n";

static ft_ctx *ctx_threads(int n) {
  ft_ctx_options o = {.size = sizeof(ft_ctx_options), .num_threads = n};
  ft_ctx *c = ft_ctx_new(&o);
  ck_assert_ptr_nonnull(c);
  return c;
}

static void inputs(ft_ctx *c, ft_jaxpr *j, ft_array **in) {
  for (int i = 0; i < 3; i++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, i, &av), FT_OK);
    ck_assert_ptr_nonnull(in[i] = ft_array_alloc(c, &av));
    jt_fill(in[i], 11 + (uint64_t)i);
  }
}

/* The one cache entry of dir: its path, and whether its object is a blob
 * of several objects (the cache header is 48 bytes). */
static bool cache_entry(const char *dir, char *path, size_t n) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *de;
  path[0] = 0;
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".ftobj")) snprintf(path, n, "%s/%s", dir, de->d_name);
  closedir(d);
  ck_assert_msg(path[0], "no cache entry in %s", dir);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  unsigned char head[48 + 8];
  ck_assert_int_eq(fread(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  if (!memcmp(head + 48, "FTOBJS01", 8)) return true;
  ck_assert_msg(!memcmp(head + 48, "\x7f" "ELF", 4), "the cached object is neither a blob nor ELF");
  return false;
}

/* Compiles PROG in a context of `threads` threads with a fresh cache
 * directory; checks it against the interpreter; returns the outputs. */
static void compile_and_check(int threads, ft_array **out, bool *blob) {
  ft_ctx *c = ctx_threads(threads);
  ft_jaxpr *j = ft_parse(c, PROG, strlen(PROG), "split");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(c));
  ft_array *in[3], *want[4];
  inputs(c, j, in);
  ck_assert_int_eq(ft_eval(c, j, 3, (const ft_array *const *)in, 4, want), FT_OK);
  char dir[] = "/tmp/ft_jit_split_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft_jit_options o = {.size = sizeof(ft_jit_options), .cache_dir = dir};
  ft_jit_cache_clear();
  ft_fn *fn = ft_jit(c, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c));
  ft_jit_stats s;
  ft_fn_stats(fn, &s);
  ck_assert(!s.mem_hit && !s.disk_hit);
  ck_assert_int_eq(s.n_kernels, 4);
  ck_assert_int_eq(ft_call(fn, 3, (const ft_array *const *)in, 4, out), FT_OK);
  for (int k = 0; k < 4; k++) ck_assert_msg(jt_same(out[k], want[k], NULL, NULL), "output %d", k);
  ft_fn_free(fn);
  char path[4200];
  *blob = cache_entry(dir, path, sizeof path);
  /* a new process: the disk entry loads and computes the same bits */
  ft_jit_cache_clear();
  fn = ft_jit(c, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c));
  ft_fn_stats(fn, &s);
  ck_assert(s.disk_hit && !s.disk_corrupt);
  ft_array *again[4];
  ck_assert_int_eq(ft_call(fn, 3, (const ft_array *const *)in, 4, again), FT_OK);
  for (int k = 0; k < 4; k++) ck_assert(jt_same(again[k], want[k], NULL, NULL));
  for (int k = 0; k < 4; k++) ft_array_free(again[k]), ft_array_free(want[k]);
  for (int i = 0; i < 3; i++) ft_array_free(in[i]);
  ft_fn_free(fn);
  ft_jit_cache_clear();
  unlink(path);
  rmdir(dir);
  ft_jaxpr_free(j);
  ft_ctx_free(c);
}

START_TEST(two_threads_same_bits) {
  ft_array *one[4], *two[4];
  bool blob1, blob2;
  compile_and_check(1, one, &blob1);
  compile_and_check(2, two, &blob2);
  ck_assert_msg(!blob1, "one thread must emit a single object");
  ck_assert_msg(blob2, "two threads must emit a blob of two objects");
  for (int k = 0; k < 4; k++) {
    ck_assert(jt_same(one[k], two[k], NULL, NULL));
    ft_array_free(one[k]), ft_array_free(two[k]);
  }
}
END_TEST

/* Units by kernel class: an optnone kernel calling the math library
 * (tanh of 8 elements), a medium kernel (relu of 256x512: vectorized,
 * code generated at level None), a kernel calling the library (logistic,
 * level Default) and a large one (2M elements, level Default). One thread
 * compiles a fast and a Default unit in turn (a blob of 2 objects), two
 * threads one of each per thread (4 objects); every compilation, the
 * second with the math subset already extracted, gives the interpreter's
 * bits, and so does the blob loaded back from the disk cache. */
static const char *CLASSES =
    "{ lambda ; x:f32[8] y:f32[256,512] z:f32[4096] w:f32[2097152]. let\n"
    "    a:f32[8] = tanh x\n"
    "    b:f32[256,512] = max y 0.0:f32[]\n    c:f32[256,512] = mul b y\n"
    "    d:f32[4096] = logistic z\n"
    "    e:f32[2097152] = mul w w\n"
    "  in (a, c, d, e) }\n";

/* The number of objects in the one cache entry of dir (1: plain ELF). */
static uint64_t cached_objects(const char *dir) {
  char path[4200];
  if (!cache_entry(dir, path, sizeof path)) return 1;
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  unsigned char head[48 + 16];
  ck_assert_int_eq(fread(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  uint64_t cnt;
  memcpy(&cnt, head + 56, 8);
  return cnt;
}

static void classes_check(int threads, uint64_t want_objects) {
  ft_ctx *c = ctx_threads(threads);
  ft_jaxpr *j = ft_parse(c, CLASSES, strlen(CLASSES), "classes");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(c));
  ft_array *in[4], *want[4], *got[4];
  for (int i = 0; i < 4; i++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, i, &av), FT_OK);
    ck_assert_ptr_nonnull(in[i] = ft_array_alloc(c, &av));
    jt_fill(in[i], 31 + (uint64_t)i);
  }
  ck_assert_int_eq(ft_eval(c, j, 4, (const ft_array *const *)in, 4, want), FT_OK);
  char dir[] = "/tmp/ft_jit_classes_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft_jit_options o = {.size = sizeof(ft_jit_options), .cache_dir = dir};
  for (int round = 0; round < 3; round++) {
    /* rounds 0 and 1 compile (1: the math subset cached), 2 loads the disk entry */
    ft_jit_cache_clear();
    if (round == 1) {
      char path[4200];
      cache_entry(dir, path, sizeof path);
      unlink(path);
    }
    ft_fn *fn = ft_jit(c, j, &o);
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c));
    ft_jit_stats s;
    ft_fn_stats(fn, &s);
    ck_assert_int_eq(s.n_kernels, 4);
    ck_assert(s.disk_hit == (round == 2) && !s.disk_corrupt);
    ck_assert_int_eq(ft_call(fn, 4, (const ft_array *const *)in, 4, got), FT_OK);
    for (int k = 0; k < 4; k++) {
      ck_assert_msg(jt_same(got[k], want[k], NULL, NULL), "%d threads, round %d: output %d", threads, round,
                    k);
      ft_array_free(got[k]);
    }
    ft_fn_free(fn);
    ck_assert_int_eq(cached_objects(dir), want_objects);
  }
  char path[4200];
  cache_entry(dir, path, sizeof path);
  unlink(path);
  rmdir(dir);
  ft_jit_cache_clear();
  for (int k = 0; k < 4; k++) ft_array_free(want[k]), ft_array_free(in[k]);
  ft_jaxpr_free(j);
  ft_ctx_free(c);
}

START_TEST(units_by_class_same_bits) {
  classes_check(1, 2);
  classes_check(2, 4);
}
END_TEST

/* A blob whose lengths do not add up is refused as a whole. */
START_TEST(malformed_blob_refused) {
  ft_ctx *c = ctx_threads(1);
  ft_jaxpr *j = ft_parse(c, PROG, strlen(PROG), "split");
  ck_assert_ptr_nonnull(j);
  ft_plan_options po = {0};
  ft_program *p = ft_program_plan(c, j, &po);
  ck_assert_ptr_nonnull(p);
  unsigned char blob[8 + 8 + 8 + 4] = "FTOBJS01";
  uint64_t cnt = 2, len = 1000; /* claims far more bytes than follow */
  memcpy(blob + 8, &cnt, 8);
  memcpy(blob + 16, &len, 8);
  memcpy(blob + 24, "\x7f" "ELF", 4);
  ck_assert_ptr_null(ft_jit_code_load(c, p, blob, sizeof blob));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(c), "malformed"));
  ft_program_free(p);
  ft_jaxpr_free(j);
  ft_ctx_free(c);
}
END_TEST

/* A 2-D loop reading an operand transposed runs in 16 x 64 tiles; each
 * element is still computed once by the same body: the kernel called on
 * chunks that cut tiles (odd sizes, odd chunk starts) gives the
 * interpreter's bits. A loop without a transposed operand is not tiled. */
START_TEST(transposed_reads_tiled) {
  const char *plain = "{ lambda ; w:f32[100,300] g:f32[100,300]. let\n    o:f32[100,300] = sub w g\n  in (o,) }\n";
  ft_jaxpr *jp = ft_parse(C, plain, strlen(plain), "plain");
  ck_assert_msg(jp != NULL, "%s", ft_ctx_error(C));
  char *ir = jt_emit(jp, FT_EMIT_LLVM);
  ck_assert_ptr_null(strstr(ir, "tile"));
  free(ir);
  ft_jaxpr_free(jp);
  const char *text = "{ lambda ; w:f32[100,300] g:f32[300,100]. let\n"
                     "    t:f32[100,300] = transpose[permutation=(1, 0)] g\n"
                     "    m:f32[100,300] = mul t 0.01:f32[]\n    o:f32[100,300] = sub w m\n  in (o,) }\n";
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "upd");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ir = jt_emit(j, FT_EMIT_LLVM);
  ck_assert_ptr_nonnull(strstr(ir, "tile"));
  free(ir);
  ft_plan_options po = {0};
  ft_program *p = ft_program_plan(C, j, &po);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p->n_kernels, 1);
  void *obj = NULL;
  size_t olen = 0;
  ck_assert_int_eq(ft_jit_emit_program(C, p, 2, FT_LO_OBJ, NULL, &obj, &olen, NULL, NULL), FT_OK);
  ft_jit_code *code = ft_jit_code_load(C, p, obj, olen);
  ck_assert_msg(code != NULL, "%s", ft_ctx_error(C));
  ft_kernel_fn fn = ft_jit_code_kernel(code, 0);
  const ft_step *ks = NULL;
  for (int i = 0; i < p->n_steps; i++)
    if (p->steps[i].kind == FT_STEP_KERNEL) ks = &p->steps[i];
  ck_assert_ptr_nonnull(ks);
  ck_assert_int_eq(ks->extent, 100);
  int64_t dw[2] = {100, 300}, dg[2] = {300, 100};
  ft_array *in[2] = {ft_array_new(C, FT_F32, 2, dw), ft_array_new(C, FT_F32, 2, dg)};
  for (int a = 0; a < 2; a++) {
    float *d = ft_array_data_mut(in[a]);
    for (int64_t i = 0; i < 30000; i++) d[i] = (float)((i * 7919 + a) % 2001 - 1000) * 0.37f;
  }
  ft_array *want = NULL;
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, &want), FT_OK);
  float *out = malloc(30000 * sizeof(float));
  memset(out, 0xff, 30000 * sizeof(float));
  void **kb = calloc((size_t)p->n_bufs, sizeof *kb);
  for (int a = 0; a < ks->n_in; a++) /* an input buffer's index is its argument */
    if (ks->in[a] >= 0) kb[ks->in[a]] = ft_array_data_mut(in[p->bufs[ks->in[a]].index]);
  kb[ks->out[0]] = out;
  fn(kb, 0, 37);
  fn(kb, 37, 41);
  fn(kb, 41, 100);
  ck_assert_mem_eq(out, ft_array_data(want), 30000 * sizeof(float));
  free(kb);
  free(out);
  ft_array_free(want);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jit_code_release(code);
  free(obj);
  ft_program_free(p);
  ft_jaxpr_free(j);
}
END_TEST

/* How many TEMP buffers of the plan of `text` hold n elements. */
static int temps_of(const char *text, int64_t n) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "temps");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_plan_options po = {0};
  ft_program *p = ft_program_plan(C, j, &po);
  ck_assert_ptr_nonnull(p);
  int k = 0;
  for (int b = 0; b < p->n_bufs; b++)
    k += p->bufs[b].kind == FT_BUF_TEMP && ft_aval_size(&p->bufs[b].aval) == n;
  ft_program_free(p);
  ft_jaxpr_free(j);
  return k;
}

/* A cheap producer that feeds a reduction and another consumer is
 * recomputed in the reduction instead of stored and loaded back: softmax's
 * exp(x - max) feeds its sum and its division, and no [64,300] buffer is
 * planned. A costly one (two transcendentals) is still stored once. Either
 * way the JIT gives the interpreter's bits, on 1 and 2 threads. */
START_TEST(cheap_producer_recomputed_in_reduction) {
  static const char *const softmax =
      "{ lambda ; a:f32[64,300]. let\n"
      "    b:f32[64] = reduce_max[axes=(1,) out_sharding=None] a\n"
      "    c:f32[64,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 1) sharding=None] b\n"
      "    d:f32[64,1] = stop_gradient c\n    e:f32[64,300] = sub a d\n    f:f32[64,300] = exp e\n"
      "    g:f32[64] = reduce_sum[axes=(1,) out_sharding=None] f\n"
      "    h:f32[64,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 1) sharding=None] g\n"
      "    i:f32[64,300] = div f h\n  in (i,) }\n";
  static const char *const costly =
      "{ lambda ; a:f32[64,300]. let\n"
      "    e:f32[64,300] = tanh a\n    f:f32[64,300] = exp e\n"
      "    g:f32[64] = reduce_sum[axes=(1,) out_sharding=None] f\n"
      "    h:f32[64,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 1) sharding=None] g\n"
      "    i:f32[64,300] = div f h\n  in (i,) }\n";
  ck_assert_int_eq(temps_of(softmax, 64 * 300), 0);
  ck_assert_int_eq(temps_of(costly, 64 * 300), 1);
  const char *const progs[2] = {softmax, costly};
  for (int pi = 0; pi < 2; pi++)
    for (int threads = 1; threads <= 2; threads++) {
      ft_ctx *c = ctx_threads(threads);
      ft_jaxpr *j = ft_parse(c, progs[pi], strlen(progs[pi]), "prog");
      ck_assert_msg(j != NULL, "%s", ft_ctx_error(c));
      ft_aval av;
      ck_assert_int_eq(ft_jaxpr_input_aval(j, 0, &av), FT_OK);
      ft_array *in = ft_array_alloc(c, &av), *want = NULL, *got = NULL;
      ck_assert_ptr_nonnull(in);
      jt_fill(in, 5);
      ck_assert_int_eq(ft_eval(c, j, 1, (const ft_array *const *)&in, 1, &want), FT_OK);
      ft_fn *fn = ft_jit(c, j, NULL);
      ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c));
      ck_assert_int_eq(ft_call(fn, 1, (const ft_array *const *)&in, 1, &got), FT_OK);
      ck_assert_msg(jt_same(got, want, NULL, NULL), "program %d, %d threads", pi, threads);
      ft_array_free(got), ft_array_free(want), ft_array_free(in);
      ft_fn_free(fn);
      ft_jaxpr_free(j);
      ft_ctx_free(c);
    }
}
END_TEST

/* Without the loop unroller, the chain still runs in 16- or 8-wide vectors,
 * and the sum keeps its <16 x float> canonical accumulator. */
START_TEST(vectorized_without_unroller) {
  const char *text = "{ lambda ; x:f32[100000]. let\n"
                     "    a:f32[100000] = tanh x\n    b:f32[100000] = mul a x\n"
                     "    s:f32[] = reduce_sum[axes=(0,) out_sharding=None] x\n  in (b, s) }\n";
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "chain");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  char *ir = jt_emit(j, FT_EMIT_LLVM);
  ck_assert_msg(strstr(ir, "<16 x float>") || strstr(ir, "<8 x float>"), "the loop did not vectorize");
  ck_assert_ptr_nonnull(strstr(ir, "fadd <16 x float>"));
  ck_assert_ptr_null(strstr(ir, "call float @ft_vm_"));
  free(ir);
  ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("jit_compile");
  TCase *t = tcase_create("jit_compile");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 300);
  tcase_add_test(t, two_threads_same_bits);
  tcase_add_test(t, malformed_blob_refused);
  tcase_add_test(t, vectorized_without_unroller);
  tcase_add_test(t, transposed_reads_tiled);
  tcase_add_test(t, cheap_producer_recomputed_in_reduction);
  tcase_add_test(t, units_by_class_same_bits);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
