/* tests/alloc/test_alloc_routines.c: a steady-state ft_call_into of a
 * compiled program whose routine steps run sort, top_k, gather, the scatter
 * family, reduce_window, conv, cumlogsumexp, f16 cumsum, reduce_precision
 * and fft (one plan per compiled function, also inside a scan whose rows
 * are misaligned views), integer/f16 dot_general, a complex sum, reshape
 * with dimensions and empty2 makes no heap allocation, has no fallback step,
 * and gives the interpreter's bytes. The library's allocations go through
 * the counters below (linked with -Wl,--wrap=...; FFTW and LLVM are shared
 * libraries, so their internals are not counted: FFTW's execute functions
 * allocate nothing, and LLVM runs only in ft_jit). */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

static atomic_long allocs;
static atomic_bool counting;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
static void count(void) {
  if (atomic_load(&counting)) atomic_fetch_add(&allocs, 1);
}
void *__wrap_malloc(size_t n) { count(); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { count(); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { count(); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { count(); return __real_aligned_alloc(a, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n) { count(); return __real_posix_memalign(p, a, n); }
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strdup(const char *s) { count(); return __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { count(); return __real_strndup(s, n); }

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Fills a with bytes that are valid values: floats in [-8, 8), small ints. */
static void fill(ft_array *a, uint64_t seed) {
  ft_aval av = ft_array_aval(a);
  int64_t n = 1;
  for (int d = 0; d < av.rank; d++) n *= av.dims[d];
  unsigned char *p = ft_array_data_mut(a);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)(rng(&seed) >> 11) * 0x1p-53 * 16 - 8;
    switch (av.dtype) {
    case FT_F32: { float f = (float)v; memcpy(p + i * 4, &f, 4); break; }
    case FT_F64: memcpy(p + i * 8, &v, 8); break;
    case FT_C64: { float f[2] = {(float)v, (float)(v * 0.25)}; memcpy(p + i * 8, f, 8); break; }
    case FT_I32: { int32_t k = (int32_t)(rng(&seed) % 9) - 2; memcpy(p + i * 4, &k, 4); break; }
    case FT_F16: { uint16_t h = (uint16_t)(0x3c00 + rng(&seed) % 0x400); memcpy(p + i * 2, &h, 2); break; }
    default: memset(p, 0, ft_array_nbytes(a)); return;
    }
  }
}

static const char *const PROGRAMS[] = {
    "{ lambda ; a:f32[4,33] b:i32[4,33]. let\n"
    "    c:f32[4,33] d:i32[4,33] = sort[dimension=1 is_stable=True num_keys=1] a b\n"
    "    e:f32[4,5] f:i32[4,5] = top_k[axis=-1 k=5] a\n"
    "  in (c, d, e, f) }\n",
    "{ lambda ; a:f32[6,3] i:i32[4,1] u:f32[4,3]. let\n"
    "    b:f32[4,3] = gather[\n"
    "      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
    "      fill_value=None indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 3) unique_indices=False\n"
    "    ] a i\n"
    "    c:f32[6,3] = scatter-add[\n"
    "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
    "      indices_are_sorted=False mode=GatherScatterMode.CLIP unique_indices=False update_consts=() update_jaxpr=None\n"
    "    ] a i u\n"
    "  in (b, c) }\n",
    "{ lambda ; a:f32[1,2,6,6] k:f32[3,2,2,2] h:f16[9] x:f32[9]. let\n"
    "    c:f32[1,2,3,3] = reduce_window_max[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) "
    "window_dilation=(1, 1, 1, 1) window_dimensions=(1, 1, 2, 2) window_strides=(1, 1, 2, 2)] a\n"
    "    d:f32[1,3,5,5] = conv_general_dilated[\n"
    "      batch_group_count=1\n"
    "      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))\n"
    "      feature_group_count=1 lhs_dilation=(1, 1) out_sharding=None padding=((0, 0), (0, 0)) precision=None\n"
    "      preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)\n"
    "    ] a k\n"
    "    e:f16[9] = cumsum[axis=0 reverse=False] h\n"
    "    f:f32[9] = cumlogsumexp[axis=0 reverse=True] x\n"
    "    g:f32[9] = reduce_precision[exponent_bits=5 mantissa_bits=10] x\n"
    "  in (c, d, e, f, g) }\n",
    "{ lambda ; a:c64[8,64] r:f32[8,30]. let\n"
    "    b:c64[8,64] = fft[fft_lengths=(64,) fft_type=0] a\n"
    "    c:c64[8,16] = fft[fft_lengths=(30,) fft_type=2] r\n"
    "    d:f32[8,30] = fft[fft_lengths=(30,) fft_type=3] c\n"
    "    e:c64[8,64] = fft[fft_lengths=(8, 64) fft_type=1] b\n"
    "  in (b, c, d, e) }\n",
    "{ lambda ; x:c64[3,15]. let\n"
    "    y:c64[3,15] = scan[\n"
    "      jaxpr={ lambda ; a:c64[15]. let\n"
    "          b:c64[15] = fft[fft_lengths=(15,) fft_type=0] a\n"
    "        in (b,) }\n"
    "      length=3 num_carry=0 num_consts=0 reverse=False unroll=1\n"
    "    ] x\n"
    "  in (y,) }\n",
    /* what used to be fallback steps: integer and f16 dots, a complex sum,
     * reshape with dimensions, empty2 (routines); f16 sum and max (kernels) */
    "{ lambda ; a:i32[3,4] b:i32[4,5] c:c64[3,7] h:f16[3,4] k:f16[4,2] x:f32[2,3]. let\n"
    "    d:i32[3,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
    "    e:c64[3] = reduce_sum[axes=(1,)] c\n"
    "    f:f16[3,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] h k\n"
    "    g:f32[3,2] = reshape[dimensions=(1, 0) new_sizes=(3, 2) sharding=None] x\n"
    "    z:f32[] = empty2[dtype=float32 memory_space=MemorySpace.Device] \n"
    "    s:f16[4] = reduce_sum[axes=(0,)] h\n"
    "    m:f16[] = reduce_max[axes=(0, 1)] h\n"
    "  in (d, e, f, g, z, s, m) }\n",
};

START_TEST(steady_state_routine_calls_do_not_allocate) {
  const char *text = PROGRAMS[_i];
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "alloc routines");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  ft_array *in[8] = {0}, *want[8] = {0}, *got[8] = {0};
  for (int k = 0; k < n_in; k++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, k, &av), FT_OK);
    in[k] = ft_array_new(ctx, av.dtype, av.rank, av.dims);
    fill(in[k], 31u * (uint64_t)k + (uint64_t)_i);
    if (av.dtype == FT_I32) /* indices: some out of range */
      for (int64_t e = 0; e < av.dims[0]; e++) ((int32_t *)ft_array_data_mut(in[k]))[e] = (int32_t)(e * 3) - 2;
  }
  ck_assert_msg(ft_eval(ctx, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s", ft_ctx_error(ctx));
  for (int k = 0; k < n_out; k++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_output_aval(j, k, &av), FT_OK);
    got[k] = ft_array_new(ctx, av.dtype, av.rank, av.dims);
  }
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_disk_cache = true};
  ft_fn *fn = ft_jit(ctx, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
  ft_jit_stats st;
  ck_assert_int_eq(ft_fn_stats(fn, &st), FT_OK);
  ck_assert_int_eq(st.n_fallback, 0);
  ck_assert_int_eq(ft_call_into(fn, n_in, (const ft_array *const *)in, n_out, got), FT_OK); /* first call: frames */
  atomic_store(&allocs, 0);
  atomic_store(&counting, true);
  int fails = 0;
  for (int rep = 0; rep < 20; rep++) fails += ft_call_into(fn, n_in, (const ft_array *const *)in, n_out, got) != FT_OK;
  atomic_store(&counting, false);
  long n_allocs = atomic_load(&allocs);
  ck_assert_int_eq(fails, 0);
  ck_assert_msg(n_allocs == 0, "program %d: %ld allocations in 20 calls", _i, n_allocs);
  for (int k = 0; k < n_out; k++)
    ck_assert_msg(ft_array_equal_bits(want[k], got[k]), "program %d output %d differs", _i, k);
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("alloc_routines");
  TCase *t = tcase_create("routines");
  tcase_set_timeout(t, 300);
  tcase_add_loop_test(t, steady_state_routine_calls_do_not_allocate, 0,
                      (int)(sizeof PROGRAMS / sizeof PROGRAMS[0]));
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
