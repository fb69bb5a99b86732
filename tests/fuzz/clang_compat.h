/* tests/fuzz/clang_compat.h: force-included (-include) into every C file of
 * the clang fuzz build by tools/run-fuzz. glibc defines CMPLX/CMPLXF only for
 * GCC >= 4.7 (clang claims GCC 4.2), so src/runtime/interp_elementwise.c
 * does not compile with clang without this. */
#if defined(__clang__) && !defined(CMPLX)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
