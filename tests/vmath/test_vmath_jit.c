/* The shared math library gives the same bits in the interpreter (the
 * functions compiled into the library by the C compiler) and in JIT code
 * (the embedded clang bitcode linked into a module, inlined into a loop
 * kernel, optimized with default<O2> for the host CPU and run by ORC LLJIT).
 *
 *   test_vmath_jit          Check suite: 2^20 inputs per function per dtype
 *                           (2^16 under ASan), specials, short lengths.
 *   test_vmath_jit --full   2^24 inputs per function per dtype; prints a
 *                           summary line per function (docs/math.md).
 *   test_vmath_jit --full 24 tanh logistic   the same for those functions. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "lower/vmath/vm_llvm.h"
#include "lower/vmath/vmath.h"

#if defined(__SANITIZE_ADDRESS__)
#define CI_LOG2N 16
#else
#define CI_LOG2N 20
#endif

typedef struct {
    const char *name;
    int arity;
    float (*u32)(float);
    double (*u64)(double);
    float (*b32)(float, float);
    double (*b64)(double, double);
    float (*t32)(float, float, float);
    double (*t64)(double, double, double);
    double lo, hi;
} vm_fn;

static const vm_fn fns[] = {
#define VM_UNARY(n, lo, hi) {#n, 1, ft_vm_##n##_f32, ft_vm_##n##_f64, NULL, NULL, NULL, NULL, lo, hi},
#define VM_BINARY(n) {#n, 2, NULL, NULL, ft_vm_##n##_f32, ft_vm_##n##_f64, NULL, NULL, -10, 10},
/* betainc's third operand is x in [0, 1]: the typical range [0, 10] puts a
 * tenth of the elements there (the rest hit its domain checks) */
#define VM_TERNARY(n) {#n, 3, NULL, NULL, NULL, NULL, ft_vm_##n##_f32, ft_vm_##n##_f64, 0, 10},
#include "lower/vmath/vmath.def"
#undef VM_UNARY
#undef VM_BINARY
#undef VM_TERNARY
};
#define NFN (sizeof fns / sizeof fns[0])

typedef void (*kernel_fn)(const void *a, const void *b, const void *c, void *out, int64_t n);

/* ---- the JIT module: one loop kernel per function and dtype ------------- */

typedef struct {
    LLVMOrcLLJITRef jit;
    kernel_fn k[NFN][2]; /* [fn][is64] */
    int vectorized[NFN][2];
    char *exp_f32_ir;
} jit_state;

static jit_state J;

static void build_kernel(LLVMModuleRef m, LLVMContextRef ctx, const vm_fn *f, int is64)
{
    LLVMTypeRef t = is64 ? LLVMDoubleTypeInContext(ctx) : LLVMFloatTypeInContext(ctx);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    char name[64];
    snprintf(name, sizeof name, "ft_vm_%s_%s", f->name, is64 ? "f64" : "f32");
    LLVMTypeRef args[3] = {t, t, t};
    LLVMTypeRef mty = LLVMFunctionType(t, args, (unsigned)f->arity, 0);
    LLVMValueRef mfn = LLVMAddFunction(m, name, mty);

    LLVMTypeRef kargs[5] = {ptr, ptr, ptr, ptr, i64};
    snprintf(name, sizeof name, "kern_%s_%s", f->name, is64 ? "f64" : "f32");
    LLVMValueRef k = LLVMAddFunction(m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), kargs, 5, 0));
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    for (unsigned i = 1; i <= 4; i++)
        LLVMAddAttributeAtIndex(k, i, LLVMCreateEnumAttribute(ctx, noalias, 0));
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, k, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, k, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, k, "done");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef n = LLVMGetParam(k, 4);
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, ""), loop, done);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef x[3];
    for (int a = 0; a < f->arity; a++) {
        LLVMValueRef p = LLVMBuildGEP2(b, t, LLVMGetParam(k, (unsigned)a), &i, 1, "");
        x[a] = LLVMBuildLoad2(b, t, p, "");
    }
    LLVMValueRef r = LLVMBuildCall2(b, mty, mfn, x, (unsigned)f->arity, "");
    LLVMBuildStore(b, r, LLVMBuildGEP2(b, t, LLVMGetParam(k, 3), &i, 1, ""));
    LLVMValueRef i1 = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
    LLVMValueRef vals[2] = {zero, i1};
    LLVMBasicBlockRef from[2] = {entry, loop};
    LLVMAddIncoming(i, vals, from, 2);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i1, n, ""), loop, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

static int contains_vector(const char *ir, int is64)
{
    return strstr(ir, is64 ? " x double>" : " x float>") != NULL;
}

static void jit_setup(void)
{
    if (J.jit)
        return;
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsctx);
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("vmath_jit_test", ctx);

    char *triple = LLVMGetDefaultTargetTriple();
    char *cpu = LLVMGetHostCPUName();
    char *feats = LLVMGetHostCPUFeatures();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        fprintf(stderr, "target: %s\n", err);
        abort();
    }
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, feats,
        LLVMCodeGenLevelDefault, LLVMRelocDefault, LLVMCodeModelJITDefault);
    LLVMSetTarget(m, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(m, td);
    LLVMDisposeTargetData(td);

    for (size_t f = 0; f < NFN; f++)
        for (int is64 = 0; is64 < 2; is64++)
            build_kernel(m, ctx, &fns[f], is64);
    if (ft_vm_link_into(m, &err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef perr = LLVMRunPasses(m, "default<O2>", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (perr) {
        char *msg = LLVMGetErrorMessage(perr);
        fprintf(stderr, "passes: %s\n", msg);
        abort();
    }
    for (size_t f = 0; f < NFN; f++)
        for (int is64 = 0; is64 < 2; is64++) {
            char name[64];
            snprintf(name, sizeof name, "kern_%s_%s", fns[f].name, is64 ? "f64" : "f32");
            char *ir = LLVMPrintValueToString(LLVMGetNamedFunction(m, name));
            J.vectorized[f][is64] = contains_vector(ir, is64);
            if (!strcmp(name, "kern_exp_f32"))
                J.exp_f32_ir = strdup(ir);
            LLVMDisposeMessage(ir);
        }

    LLVMOrcJITTargetMachineBuilderRef jtmb;
    LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
    if (e) {
        fprintf(stderr, "detect host: %s\n", LLVMGetErrorMessage(e));
        abort();
    }
    LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
    if ((e = LLVMOrcCreateLLJIT(&J.jit, jb))) {
        fprintf(stderr, "lljit: %s\n", LLVMGetErrorMessage(e));
        abort();
    }
    LLVMOrcDefinitionGeneratorRef gen;
    if (!LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen,
            LLVMOrcLLJITGetGlobalPrefix(J.jit), NULL, NULL))
        LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(J.jit), gen);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsctx);
    if ((e = LLVMOrcLLJITAddLLVMIRModule(J.jit, LLVMOrcLLJITGetMainJITDylib(J.jit), tsm))) {
        fprintf(stderr, "add module: %s\n", LLVMGetErrorMessage(e));
        abort();
    }
    for (size_t f = 0; f < NFN; f++)
        for (int is64 = 0; is64 < 2; is64++) {
            char name[64];
            snprintf(name, sizeof name, "kern_%s_%s", fns[f].name, is64 ? "f64" : "f32");
            LLVMOrcExecutorAddress addr = 0;
            if ((e = LLVMOrcLLJITLookup(J.jit, &addr, name))) {
                fprintf(stderr, "lookup %s: %s\n", name, LLVMGetErrorMessage(e));
                abort();
            }
            J.k[f][is64] = (kernel_fn)(uintptr_t)addr;
        }
    LLVMOrcDisposeThreadSafeContext(tsctx);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feats);
}

static void jit_teardown(void)
{
    if (J.jit)
        LLVMOrcDisposeLLJIT(J.jit);
    free(J.exp_f32_ir);
    memset(&J, 0, sizeof J);
}

/* ---- inputs ------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25,
    1e-300, -1e-300, 0x1p-1074, -0x1p-1074, 0x1p-1022, 0x1p-149, 0x1p-126, 0x1.fffffep127,
    0x1.fffffffffffffp1023, 88.72, 88.73, -87.3, -103.9, -104.0, 709.78, 709.79, -745.13,
    -745.14, 0x1p20, 0x1p24, 0x1p52, 0x1p53, 1e22, 3.141592653589793, 1.5707963267948966,
    0.9999999, -0.9999999, 0.9999999999999999, 6.25, 27.0, 28.0, 10.0, -10.0, 20.0, -40.0,
    __builtin_inf(), -__builtin_inf(), __builtin_nan(""), -__builtin_nan("")};
#define NSPECIAL (sizeof specials / sizeof specials[0])

/* Fills x[0..n) for one function: specials first, then a mix of random bit
 * patterns, the function's typical range, [-4, 4] and small integers. */
static void fill(void *buf, size_t n, int is64, const vm_fn *f, uint64_t seed, int which)
{
    uint64_t s = seed * 0x2545f4914f6cdd1dULL + (uint64_t)which;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        double u = (double)(r >> 11) * 0x1p-53;
        double v;
        int kind = (int)(rng_next(&s) % 8);
        if (i < NSPECIAL && seed == 0)
            v = specials[(i + (size_t)which * 7) % NSPECIAL];
        else if (kind < 3) {
            if (is64) {
                memcpy((double *)buf + i, &r, 8);
                continue;
            }
            uint32_t w = (uint32_t)(r >> 32);
            memcpy((float *)buf + i, &w, 4);
            continue;
        } else if (kind < 6)
            v = f->lo + (f->hi - f->lo) * u;
        else if (kind == 6)
            v = 8 * u - 4;
        else
            v = (double)(int)(u * 64) - 32;
        if (is64)
            ((double *)buf)[i] = v;
        else
            ((float *)buf)[i] = (float)v;
    }
}

static void reference(const vm_fn *f, int is64, const void *a, const void *b, const void *c,
                      void *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (is64) {
            const double *x = a, *y = b, *z = c;
            ((double *)out)[i] = f->arity == 1 ? f->u64(x[i]) : f->arity == 2 ? f->b64(x[i], y[i])
                                                                             : f->t64(x[i], y[i], z[i]);
        } else {
            const float *x = a, *y = b, *z = c;
            ((float *)out)[i] = f->arity == 1 ? f->u32(x[i]) : f->arity == 2 ? f->b32(x[i], y[i])
                                                                             : f->t32(x[i], y[i], z[i]);
        }
    }
}

/* Runs one function on n inputs from `seed`, both engines; returns the
 * number of elements whose bits differ (and prints the first). */
static size_t compare(size_t fi, int is64, size_t n, uint64_t seed)
{
    const vm_fn *f = &fns[fi];
    size_t es = is64 ? 8 : 4;
    /* +1 element so kernels also run on a misaligned start below */
    unsigned char *a = malloc((n + 1) * es), *b = malloc((n + 1) * es), *c = malloc((n + 1) * es);
    unsigned char *o1 = malloc((n + 1) * es), *o2 = malloc((n + 1) * es);
    if (!a || !b || !c || !o1 || !o2)
        abort(); /* no ck_assert here: --full runs outside Check */
    fill(a, n + 1, is64, f, seed, 0);
    fill(b, n + 1, is64, f, seed, 1);
    fill(c, n + 1, is64, f, seed, 2);
    size_t bad = 0;
    /* the whole array, then a misaligned odd-length tail, then short lengths */
    size_t offs[3] = {0, 1, 0};
    size_t lens[3] = {n, n > 37 ? n - 37 : 0, n < 45 ? n : 45};
    for (int pass = 0; pass < 3; pass++) {
        size_t off = offs[pass] * es;
        size_t len = lens[pass];
        if (pass == 2) {
            for (size_t l = 0; l <= len; l++) {
                memset(o1, 0, l * es);
                J.k[fi][is64](a + off, b + off, c + off, o1, (int64_t)l);
                reference(f, is64, a + off, b + off, c + off, o2, l);
                bad += memcmp(o1, o2, l * es) != 0;
            }
            continue;
        }
        J.k[fi][is64](a + off, b + off, c + off, o1, (int64_t)len);
        reference(f, is64, a + off, b + off, c + off, o2, len);
        for (size_t i = 0; i < len; i++) {
            if (memcmp(o1 + i * es, o2 + i * es, es) == 0)
                continue;
            if (bad++ == 0) {
                if (is64)
                    fprintf(stderr, "%s_f64(%a, %a, %a): jit %a, interpreter %a\n", f->name,
                            ((double *)(a + off))[i], ((double *)(b + off))[i], ((double *)(c + off))[i],
                            ((double *)o1)[i], ((double *)o2)[i]);
                else
                    fprintf(stderr, "%s_f32(%a, %a, %a): jit %a, interpreter %a\n", f->name,
                            (double)((float *)(a + off))[i], (double)((float *)(b + off))[i],
                            (double)((float *)(c + off))[i],
                            (double)((float *)o1)[i], (double)((float *)o2)[i]);
            }
        }
    }
    free(a);
    free(b);
    free(c);
    free(o1);
    free(o2);
    return bad;
}

/* ---- Check tests -------------------------------------------------------- */

START_TEST(test_bitwise_equal)
{
    size_t fi = (size_t)_i / 2;
    int is64 = _i % 2;
    size_t bad = compare(fi, is64, (size_t)1 << CI_LOG2N, 0);
    ck_assert_msg(bad == 0, "%s_%s: %zu inputs differ between JIT and interpreter", fns[fi].name,
                  is64 ? "f64" : "f32", bad);
}
END_TEST

/* The JIT loop for exp_f32 is vectorized (AVX-512: <16 x float>, AVX2:
 * <8 x float>): the math was inlined and is branch-free. */
START_TEST(test_exp_f32_vectorizes)
{
    ck_assert_ptr_nonnull(J.exp_f32_ir);
    ck_assert_msg(strstr(J.exp_f32_ir, "<16 x float>") || strstr(J.exp_f32_ir, "<8 x float>"),
                  "kern_exp_f32 did not vectorize");
    /* no call is left in the loop: the math function was inlined */
    ck_assert_ptr_null(strstr(J.exp_f32_ir, "call float @ft_vm_exp_f32"));
}
END_TEST

/* Every native-float hot function vectorizes too. */
START_TEST(test_hot_f32_vectorize)
{
    static const char *const hot[] = {"exp", "exp2", "log", "expm1", "tanh", "logistic", "sqrt"};
    for (size_t h = 0; h < sizeof hot / sizeof hot[0]; h++)
        for (size_t f = 0; f < NFN; f++)
            if (!strcmp(fns[f].name, hot[h]))
                ck_assert_msg(J.vectorized[f][0], "kern_%s_f32 did not vectorize", hot[h]);
}
END_TEST

static Suite *vmath_jit_suite(void)
{
    Suite *s = suite_create("vmath_jit");
    TCase *tc = tcase_create("jit");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, jit_setup, jit_teardown);
    tcase_add_loop_test(tc, test_bitwise_equal, 0, (int)(2 * NFN));
    tcase_add_test(tc, test_exp_f32_vectorizes);
    tcase_add_test(tc, test_hot_f32_vectorize);
    suite_add_tcase(s, tc);
    return s;
}

/* --full: 2^24 inputs per function per dtype, in chunks of 2^20; only the
 * functions named after log2n when there are any. */
static int run_full(int log2n, int n_only, char **only)
{
    jit_setup();
    size_t total_bad = 0;
    size_t chunks = (size_t)1 << (log2n > 20 ? log2n - 20 : 0);
    size_t n = (size_t)1 << (log2n > 20 ? 20 : log2n);
    printf("| function | dtype | inputs | mismatches | loop vectorized |\n|---|---|---|---|---|\n");
    for (size_t f = 0; f < NFN; f++)
        for (int is64 = 0; is64 < 2; is64++) {
            bool wanted = n_only == 0;
            for (int k = 0; k < n_only; k++)
                wanted = wanted || !strcmp(only[k], fns[f].name);
            if (!wanted)
                continue;
            size_t bad = 0;
            for (size_t c = 0; c < chunks; c++)
                bad += compare(f, is64, n, c);
            total_bad += bad;
            printf("| %s | %s | %zu | %zu | %s |\n", fns[f].name, is64 ? "f64" : "f32",
                   chunks * n, bad, J.vectorized[f][is64] ? "yes" : "no");
            fflush(stdout);
        }
    jit_teardown();
    printf("\ntotal mismatches: %zu\n", total_bad);
    return total_bad != 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--full"))
        return run_full(argc > 2 ? atoi(argv[2]) : 24, argc > 3 ? argc - 3 : 0, argv + 3);
    SRunner *sr = srunner_create(vmath_jit_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
