/* src/lower/codegen.c: LLVM-C IR for a program's kernels (DESIGN.md §6).
 *
 * Each loop kernel is `void ft_kN(ptr bufs, i64 lo, i64 hi)`: it loads the
 * addresses of the buffers it touches and calls an internal, always-inlined
 * body whose pointer parameters are noalias (so the vectorizer needs no
 * run-time alias checks), which runs a loop nest over the collapsed loop
 * shape, the outermost loop over [lo, hi). Every elementwise operation is
 * emitted with exactly the interpreter's semantics (interp_elementwise.c):
 * no fast-math flags, no contraction, transcendentals as calls of the shared
 * math library (ft_vm_*), linked from bitcode and inlined by jit.c.
 * Reduction kernels fold sums and products in the canonical order of
 * docs/determinism.md with a <16 x T> accumulator (16 logical lanes whatever
 * the host's vector width), float max/min with 16 lanes of integer order
 * keys, and the other order-free reductions sequentially. A split reduction
 * (fusion.c) is a kernel of block partials and a kernel folding them. */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <string.h>

#include "lower/lower.h"
#include "lower/vmath/vm_complex.h"
#include "lower/vmath/vmath.h"
#include "runtime/exec.h" /* ft_kernel_inplace_input: the executor's in-place pairs */

typedef struct cg {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
  LLVMValueRef fn;        /* the function being built */
  const ft_program *p;
  char *err;
  bool oom;               /* an allocation failed: ft_codegen_program returns 2 */
} cg;

/* calloc that marks the generator out of memory when it fails. */
static void *cg_calloc(cg *G, size_t n, size_t size) {
  void *q = calloc(n, size);
  if (!q) G->oom = true;
  return q;
}

static LLVMTypeRef ty(cg *G, ft_dtype dt) {
  switch (dt) {
  case FT_BOOL: case FT_I8: case FT_U8: return G->i8;
  case FT_I16: case FT_U16: return G->i16;
  case FT_I32: case FT_U32: return G->i32;
  case FT_I64: case FT_U64: return G->i64;
  case FT_F32: return G->f32;
  case FT_F64: return G->f64;
  case FT_F16: case FT_BF16: return G->i16; /* storage bits; computed in f32 (half_elem) */
  default: return G->i8;
  }
}

static bool isf(ft_dtype dt) { return dt == FT_F32 || dt == FT_F64; }
static bool ishalf(ft_dtype dt) { return dt == FT_F16 || dt == FT_BF16; }
static bool iss(ft_dtype dt) { return ft_dtype_is_signed(dt); }
static int bits(ft_dtype dt) { return dt == FT_BOOL ? 8 : ft_dtype_bits(dt); }

static LLVMValueRef ci(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static LLVMValueRef c64(cg *G, int64_t v) { return ci(G->i64, v); }

/* ---------------------------------------------------------- declarations */
static LLVMValueRef declare(cg *G, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef a0) {
  LLVMValueRef f = LLVMGetNamedFunction(G->m, name);
  if (f) return f;
  LLVMTypeRef args[3] = {a0, a0, a0};
  return LLVMAddFunction(G->m, name, LLVMFunctionType(ret, args, (unsigned)n, 0));
}

static LLVMValueRef call(cg *G, const char *name, LLVMTypeRef t, int n, LLVMValueRef a,
                         LLVMValueRef b2) {
  LLVMValueRef f = declare(G, name, t, n, t);
  LLVMValueRef args[2] = {a, b2};
  return LLVMBuildCall2(G->b, LLVMGlobalGetValueType(f), f, args, (unsigned)n, "");
}

/* A call of the shared math library: ft_vm_<name>_<f32|f64>. */
static LLVMValueRef vm(cg *G, const char *name, ft_dtype dt, LLVMValueRef a, LLVMValueRef b2) {
  char n[64];
  snprintf(n, sizeof n, "ft_vm_%s_%s", name, dt == FT_F64 ? "f64" : "f32");
  return call(G, n, ty(G, dt), b2 ? 2 : 1, a, b2);
}

/* The same for a function of three arguments (vmath.def's VM_TERNARY). */
static LLVMValueRef vm3(cg *G, const char *name, ft_dtype dt, LLVMValueRef a, LLVMValueRef b,
                        LLVMValueRef c) {
  char n[64];
  snprintf(n, sizeof n, "ft_vm_%s_%s", name, dt == FT_F64 ? "f64" : "f32");
  LLVMValueRef f = declare(G, n, ty(G, dt), 3, ty(G, dt));
  LLVMValueRef args[3] = {a, b, c};
  return LLVMBuildCall2(G->b, LLVMGlobalGetValueType(f), f, args, 3, "");
}

/* An LLVM intrinsic on one float type (llvm.floor.f32 ...). */
static LLVMValueRef intr(cg *G, const char *base, ft_dtype dt, LLVMValueRef a) {
  char n[64];
  snprintf(n, sizeof n, "llvm.%s.%s", base, dt == FT_F64 ? "f64" : "f32");
  return call(G, n, ty(G, dt), 1, a, NULL);
}

/* ------------------------------------------------------------- constants */
static bool iscpx(ft_dtype dt) { return dt == FT_C64 || dt == FT_C128; }
/* The real type of a complex dtype's parts. */
static ft_dtype part_dt(ft_dtype dt) { return dt == FT_C128 ? FT_F64 : FT_F32; }

static LLVMValueRef lit_value(cg *G, const ft_var *v, ft_dtype dt) {
  LLVMTypeRef t = ty(G, dt);
  if (iscpx(dt)) { /* the pair (re, im), each rounded as ft_set_c128 does */
    LLVMTypeRef pt = ty(G, part_dt(dt));
    LLVMValueRef parts[2] = {LLVMConstReal(pt, v->lit.f), LLVMConstReal(pt, v->lit_im)};
    return LLVMConstStructInContext(G->c, parts, 2, 0);
  }
  if (isf(dt)) return LLVMConstReal(t, v->lit.f);
  if (ishalf(dt)) /* the interpreter's literal: through f32 (ft_set_f64) */
    return ci(t, dt == FT_F16 ? ft_f64_to_f16((float)v->lit.f) : ft_f64_to_bf16((float)v->lit.f));
  if (dt == FT_BOOL) return ci(t, v->lit.i != 0);
  if (ft_dtype_is_unsigned(dt)) return LLVMConstInt(t, v->lit.u, 0);
  return ci(t, v->lit.i);
}

static LLVMValueRef fconst(cg *G, ft_dtype dt, double v) { return LLVMConstReal(ty(G, dt), v); }

/* ---------------------------------------------------------- float helpers */
static LLVMValueRef signbit_of(cg *G, ft_dtype dt, LLVMValueRef x) {
  LLVMTypeRef it = dt == FT_F64 ? G->i64 : G->i32, xt = LLVMTypeOf(x);
  if (LLVMGetTypeKind(xt) == LLVMVectorTypeKind) it = LLVMVectorType(it, LLVMGetVectorSize(xt));
  LLVMValueRef i = LLVMBuildBitCast(G->b, x, it, "");
  return LLVMBuildICmp(G->b, LLVMIntSLT, i, LLVMConstNull(it), "");
}

/* XLA's max/min as the interpreter's xmax/xmin: a NaN operand wins (a
 * first), -0 < +0. */
static LLVMValueRef fmaxmin(cg *G, ft_dtype dt, LLVMValueRef a, LLVMValueRef b, bool is_max) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef na = LLVMBuildFCmp(B, LLVMRealUNO, a, a, "");
  LLVMValueRef nb = LLVMBuildFCmp(B, LLVMRealUNO, b, b, "");
  LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
  LLVMValueRef sa = signbit_of(G, dt, a);
  LLVMValueRef on_eq = is_max ? LLVMBuildSelect(B, sa, b, a, "") : LLVMBuildSelect(B, sa, a, b, "");
  LLVMValueRef cmp = LLVMBuildFCmp(B, is_max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
  LLVMValueRef r = LLVMBuildSelect(B, cmp, a, b, "");
  r = LLVMBuildSelect(B, eq, on_eq, r, "");
  r = LLVMBuildSelect(B, nb, b, r, "");
  return LLVMBuildSelect(B, na, a, r, "");
}

static LLVMValueRef imaxmin(cg *G, ft_dtype dt, LLVMValueRef a, LLVMValueRef b, bool is_max) {
  LLVMIntPredicate p = is_max ? (iss(dt) ? LLVMIntSGT : LLVMIntUGT) : (iss(dt) ? LLVMIntSLT : LLVMIntULT);
  return LLVMBuildSelect(G->b, LLVMBuildICmp(G->b, p, a, b, ""), a, b, "");
}

static LLVMValueRef bool_norm(cg *G, LLVMValueRef v) {
  return LLVMBuildZExt(G->b, LLVMBuildICmp(G->b, LLVMIntNE, v, ci(G->i8, 0), ""), G->i8, "");
}

static LLVMValueRef zext_i8(cg *G, LLVMValueRef c) { return LLVMBuildZExt(G->b, c, G->i8, ""); }

/* integer_pow on floats: square-and-multiply in the order of JAX's lowering
 * (as the interpreter's ipow). */
static LLVMValueRef fipow(cg *G, ft_dtype dt, LLVMValueRef x, int64_t y) {
  if (y == 0) return fconst(G, dt, 1.0);
  bool recip = y < 0;
  uint64_t n = recip ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
  LLVMValueRef acc = NULL;
  while (n > 0) {
    if (n & 1) acc = acc ? LLVMBuildFMul(G->b, acc, x, "") : x;
    n >>= 1;
    if (n > 0) x = LLVMBuildFMul(G->b, x, x, "");
  }
  return recip ? LLVMBuildFDiv(G->b, fconst(G, dt, 1.0), acc, "") : acc;
}

static LLVMValueRef iipow(cg *G, LLVMTypeRef t, LLVMValueRef x, int64_t y) {
  LLVMValueRef acc = ci(t, 1), b = x;
  for (uint64_t n = (uint64_t)y; n; n >>= 1) {
    if (n & 1) acc = LLVMBuildMul(G->b, acc, b, "");
    if (n >> 1) b = LLVMBuildMul(G->b, b, b, "");
  }
  return acc;
}

/* ------------------------------------------------------------ operations */
static LLVMValueRef unary(cg *G, const ft_eqn *e, ft_dtype dt, LLVMValueRef x) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  if (isf(dt)) {
    switch (e->prim) {
    case FT_P_NEG: return LLVMBuildFNeg(B, x, "");
    case FT_P_SIGN: {
      LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, fconst(G, dt, 0), ""),
                                       fconst(G, dt, -1), x, "");
      r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, fconst(G, dt, 0), ""),
                          fconst(G, dt, 1), r, "");
      return r; /* NaN: neither compare holds, x itself */
    }
    case FT_P_FLOOR: return intr(G, "floor", dt, x);
    case FT_P_CEIL: return intr(G, "ceil", dt, x);
    case FT_P_ROUND: {
      const ft_pval *v = ft_eqn_param(e, "rounding_method");
      bool even = (v->tag == FT_PV_INT && v->u.i == 1) || (v->s && (strstr(v->s, "EVEN") || !strcmp(v->s, "1")));
      return intr(G, even ? "rint" : "round", dt, x);
    }
    case FT_P_EXP: return vm(G, "exp", dt, x, NULL);
    case FT_P_EXP2: return vm(G, "exp2", dt, x, NULL);
    case FT_P_LOG: return vm(G, "log", dt, x, NULL);
    case FT_P_LOG2: { /* JAX's lowering: log(x) * 1/ln 2 rounded to the type */
      LLVMValueRef l = vm(G, "log", dt, x, NULL);
      double k = dt == FT_F64 ? 1.4426950408889634 : (double)1.4426950408889634f;
      return LLVMBuildFMul(B, l, LLVMConstReal(LLVMTypeOf(l), k), "");
    }
    case FT_P_LOG1P: return vm(G, "log1p", dt, x, NULL);
    case FT_P_EXPM1: return vm(G, "expm1", dt, x, NULL);
    case FT_P_TANH: return vm(G, "tanh", dt, x, NULL);
    case FT_P_LOGISTIC: return vm(G, "logistic", dt, x, NULL);
    case FT_P_SIN: return vm(G, "sin", dt, x, NULL);
    case FT_P_COS: return vm(G, "cos", dt, x, NULL);
    case FT_P_TAN: return vm(G, "tan", dt, x, NULL);
    case FT_P_ASIN: return vm(G, "asin", dt, x, NULL);
    case FT_P_ACOS: return vm(G, "acos", dt, x, NULL);
    case FT_P_ATAN: return vm(G, "atan", dt, x, NULL);
    case FT_P_SINH: return vm(G, "sinh", dt, x, NULL);
    case FT_P_COSH: return vm(G, "cosh", dt, x, NULL);
    case FT_P_ASINH: return vm(G, "asinh", dt, x, NULL);
    case FT_P_ACOSH: return vm(G, "acosh", dt, x, NULL);
    case FT_P_ATANH: return vm(G, "atanh", dt, x, NULL);
    case FT_P_SQRT: return vm(G, "sqrt", dt, x, NULL);
    case FT_P_RSQRT: return vm(G, "rsqrt", dt, x, NULL);
    case FT_P_CBRT: return vm(G, "cbrt", dt, x, NULL);
    case FT_P_ERF: return vm(G, "erf", dt, x, NULL);
    case FT_P_ERFC: return vm(G, "erfc", dt, x, NULL);
    case FT_P_ERF_INV: return vm(G, "erf_inv", dt, x, NULL);
    case FT_P_LGAMMA: return vm(G, "lgamma", dt, x, NULL);
    case FT_P_DIGAMMA: return vm(G, "digamma", dt, x, NULL);
    case FT_P_BESSEL_I0E: return vm(G, "bessel_i0e", dt, x, NULL);
    case FT_P_BESSEL_I1E: return vm(G, "bessel_i1e", dt, x, NULL);
    case FT_P_SQUARE: return LLVMBuildFMul(B, x, x, "");
    case FT_P_ONE_MINUS_SQUARE: {
      LLVMValueRef one = LLVMConstReal(LLVMTypeOf(x), 1.0);
      return LLVMBuildFMul(B, LLVMBuildFAdd(B, one, x, ""), LLVMBuildFSub(B, one, x, ""), "");
    }
    case FT_P_ABS: return intr(G, "fabs", dt, x);
    case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: return x;
    case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: return x;
    case FT_P_INTEGER_POW: return fipow(G, dt, x, ft_param_int(e, "y", 0));
    default: break;
    }
  } else {
    bool isbool = dt == FT_BOOL;
    switch (e->prim) {
    case FT_P_NEG: return LLVMBuildNeg(B, x, "");
    case FT_P_SIGN:
      if (!iss(dt)) return LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntNE, x, ci(t, 0), ""), t, "");
      return LLVMBuildSub(B, LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSGT, x, ci(t, 0), ""), t, ""),
                          LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSLT, x, ci(t, 0), ""), t, ""), "");
    case FT_P_ABS:
      if (!iss(dt)) return x;
      return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, x, ci(t, 0), ""),
                             LLVMBuildNeg(B, x, ""), x, "");
    case FT_P_SQUARE: return LLVMBuildMul(B, x, x, "");
    case FT_P_ONE_MINUS_SQUARE:
      return LLVMBuildMul(B, LLVMBuildAdd(B, ci(t, 1), x, ""), LLVMBuildSub(B, ci(t, 1), x, ""), "");
    case FT_P_NOT:
      if (isbool) return zext_i8(G, LLVMBuildICmp(B, LLVMIntEQ, x, ci(t, 0), ""));
      return LLVMBuildNot(B, x, "");
    case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: return x;
    case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: return x;
    case FT_P_POPULATION_COUNT: {
      char n[32];
      snprintf(n, sizeof n, "llvm.ctpop.i%d", bits(dt));
      return call(G, n, t, 1, x, NULL);
    }
    case FT_P_CLZ: { /* the zeros above the highest set bit: popcount of ~(x smeared right) */
      char n[32];
      snprintf(n, sizeof n, "llvm.ctpop.i%d", bits(dt));
      LLVMValueRef s = x;
      for (int sh = 1; sh < bits(dt); sh <<= 1) s = LLVMBuildOr(B, s, LLVMBuildLShr(B, s, ci(t, sh), ""), "");
      return call(G, n, t, 1, LLVMBuildNot(B, s, ""), NULL);
    }
    case FT_P_INTEGER_POW: return iipow(G, t, x, ft_param_int(e, "y", 0));
    default: break;
    }
  }
  return NULL;
}

static LLVMValueRef int_div(cg *G, ft_dtype dt, LLVMValueRef a, LLVMValueRef b, bool rem) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, ci(t, 0), "");
  if (iss(dt)) {
    LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, ci(t, -1), "");
    LLVMValueRef safe = LLVMBuildSelect(B, LLVMBuildOr(B, bz, bm1, ""), ci(t, 1), b, "");
    if (rem) {
      LLVMValueRef r = LLVMBuildSRem(B, a, safe, "");
      r = LLVMBuildSelect(B, bm1, ci(t, 0), r, "");
      return LLVMBuildSelect(B, bz, a, r, "");
    }
    LLVMValueRef q = LLVMBuildSDiv(B, a, safe, "");
    q = LLVMBuildSelect(B, bm1, LLVMBuildNeg(B, a, ""), q, "");
    return LLVMBuildSelect(B, bz, ci(t, -1), q, "");
  }
  LLVMValueRef safe = LLVMBuildSelect(B, bz, ci(t, 1), b, "");
  if (rem) return LLVMBuildSelect(B, bz, a, LLVMBuildURem(B, a, safe, ""), "");
  return LLVMBuildSelect(B, bz, ci(t, -1), LLVMBuildUDiv(B, a, safe, ""), "");
}

/* The elementwise operations of three operands (FT_FAM_TERNARY): float only. */
static LLVMValueRef ternary(cg *G, const ft_eqn *e, ft_dtype dt, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef c) {
  if (!isf(dt)) return NULL;
  switch (e->prim) {
  case FT_P_REGULARIZED_INCOMPLETE_BETA: return vm3(G, "betainc", dt, a, b, c);
  default: return NULL;
  }
}

static LLVMValueRef int_shift(cg *G, ft_prim p, ft_dtype dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  int w = bits(dt);
  LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, b, ci(t, w), "");
  LLVMValueRef s = LLVMBuildAnd(B, b, ci(t, w - 1), "");
  switch (p) {
  case FT_P_SHIFT_LEFT: return LLVMBuildSelect(B, big, ci(t, 0), LLVMBuildShl(B, a, s, ""), "");
  case FT_P_SHIFT_RIGHT_LOGICAL:
    return LLVMBuildSelect(B, big, ci(t, 0), LLVMBuildLShr(B, a, s, ""), "");
  default:
    return LLVMBuildSelect(B, big, LLVMBuildAShr(B, a, ci(t, w - 1), ""), LLVMBuildAShr(B, a, s, ""), "");
  }
}

static LLVMValueRef binary(cg *G, const ft_eqn *e, ft_dtype dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = G->b;
  if (isf(dt)) {
    switch (e->prim) {
    case FT_P_ADD: case FT_P_ADD_ANY: return LLVMBuildFAdd(B, a, b, "");
    case FT_P_SUB: return LLVMBuildFSub(B, a, b, "");
    case FT_P_MUL: return LLVMBuildFMul(B, a, b, "");
    case FT_P_DIV: return LLVMBuildFDiv(B, a, b, "");
    case FT_P_REM: return call(G, dt == FT_F64 ? "fmod" : "fmodf", ty(G, dt), 2, a, b);
    case FT_P_POW: return vm(G, "pow", dt, a, b);
    case FT_P_ATAN2: return vm(G, "atan2", dt, a, b);
    case FT_P_POLYGAMMA: return vm(G, "polygamma", dt, a, b);
    case FT_P_ZETA: return vm(G, "zeta", dt, a, b);
    case FT_P_IGAMMA: return vm(G, "igamma", dt, a, b);
    case FT_P_IGAMMAC: return vm(G, "igammac", dt, a, b);
    case FT_P_IGAMMA_GRAD_A: return vm(G, "igamma_grad_a", dt, a, b);
    case FT_P_MAX: return fmaxmin(G, dt, a, b, true);
    case FT_P_MIN: return fmaxmin(G, dt, a, b, false);
    case FT_P_NEXTAFTER: {
      LLVMValueRef un = LLVMBuildFCmp(B, LLVMRealUNO, a, b, "");
      LLVMValueRef n = call(G, dt == FT_F64 ? "nextafter" : "nextafterf", ty(G, dt), 2, a, b);
      return LLVMBuildSelect(B, un, LLVMBuildFAdd(B, a, b, ""), n, "");
    }
    default: return NULL;
    }
  }
  LLVMValueRef r;
  switch (e->prim) {
  case FT_P_ADD: case FT_P_ADD_ANY: r = LLVMBuildAdd(B, a, b, ""); break;
  case FT_P_SUB: r = LLVMBuildSub(B, a, b, ""); break;
  case FT_P_MUL: r = LLVMBuildMul(B, a, b, ""); break;
  case FT_P_DIV: r = int_div(G, dt, a, b, false); break;
  case FT_P_REM: r = int_div(G, dt, a, b, true); break;
  case FT_P_MAX: r = imaxmin(G, dt, a, b, true); break;
  case FT_P_MIN: r = imaxmin(G, dt, a, b, false); break;
  case FT_P_AND: r = LLVMBuildAnd(B, a, b, ""); break;
  case FT_P_OR: r = LLVMBuildOr(B, a, b, ""); break;
  case FT_P_XOR: r = LLVMBuildXor(B, a, b, ""); break;
  case FT_P_MULHI: { /* the high half of the double-width product */
    LLVMTypeRef t = ty(G, dt), w2 = LLVMIntTypeInContext(G->c, (unsigned)(2 * bits(dt)));
    LLVMValueRef xa = iss(dt) ? LLVMBuildSExt(B, a, w2, "") : LLVMBuildZExt(B, a, w2, "");
    LLVMValueRef xb = iss(dt) ? LLVMBuildSExt(B, b, w2, "") : LLVMBuildZExt(B, b, w2, "");
    LLVMValueRef p = LLVMBuildMul(B, xa, xb, "");
    r = LLVMBuildTrunc(B, LLVMBuildLShr(B, p, LLVMConstInt(w2, (unsigned long long)bits(dt), 0), ""), t, "");
    break;
  }
  case FT_P_SHIFT_LEFT: case FT_P_SHIFT_RIGHT_LOGICAL: case FT_P_SHIFT_RIGHT_ARITHMETIC:
    r = int_shift(G, e->prim, dt, a, b);
    break;
  default: return NULL;
  }
  return dt == FT_BOOL ? bool_norm(G, r) : r;
}

/* The IEEE total order key of a float's bits (interp_elementwise.c's
 * total_order_key): the magnitude bits flipped when the sign is set. */
static LLVMValueRef total_key(cg *G, ft_dtype dt, LLVMValueRef x) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef it = LLVMIntTypeInContext(G->c, (unsigned)bits(dt));
  LLVMValueRef k = LLVMBuildBitCast(B, x, it, "");
  LLVMValueRef s = LLVMBuildAShr(B, k, LLVMConstInt(it, (unsigned long long)bits(dt) - 1, 0), "");
  return LLVMBuildXor(B, k, LLVMBuildLShr(B, s, LLVMConstInt(it, 1, 0), ""), "");
}

static LLVMValueRef compare(cg *G, ft_prim p, ft_dtype dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = G->b;
  if (p == FT_P_EQ_TO || p == FT_P_LE_TO || p == FT_P_LT_TO) {
    bool s = isf(dt) || iss(dt);
    if (isf(dt)) a = total_key(G, dt, a), b = total_key(G, dt, b);
    LLVMIntPredicate ip = p == FT_P_EQ_TO ? LLVMIntEQ
                        : p == FT_P_LE_TO ? (s ? LLVMIntSLE : LLVMIntULE)
                                          : (s ? LLVMIntSLT : LLVMIntULT);
    return zext_i8(G, LLVMBuildICmp(B, ip, a, b, ""));
  }
  if (isf(dt)) {
    LLVMRealPredicate rp;
    switch (p) {
    case FT_P_EQ: rp = LLVMRealOEQ; break;
    case FT_P_NE: rp = LLVMRealUNE; break;
    case FT_P_LT: rp = LLVMRealOLT; break;
    case FT_P_LE: rp = LLVMRealOLE; break;
    case FT_P_GT: rp = LLVMRealOGT; break;
    default: rp = LLVMRealOGE; break;
    }
    return zext_i8(G, LLVMBuildFCmp(B, rp, a, b, ""));
  }
  bool s = iss(dt);
  LLVMIntPredicate ip;
  switch (p) {
  case FT_P_EQ: ip = LLVMIntEQ; break;
  case FT_P_NE: ip = LLVMIntNE; break;
  case FT_P_LT: ip = s ? LLVMIntSLT : LLVMIntULT; break;
  case FT_P_LE: ip = s ? LLVMIntSLE : LLVMIntULE; break;
  case FT_P_GT: ip = s ? LLVMIntSGT : LLVMIntUGT; break;
  default: ip = s ? LLVMIntSGE : LLVMIntUGE; break;
  }
  return zext_i8(G, LLVMBuildICmp(B, ip, a, b, ""));
}

/* convert_element_type with the interpreter's semantics (ft_convert_elem). */
static LLVMValueRef convert(cg *G, ft_dtype sd, ft_dtype dd, LLVMValueRef x) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef st = ty(G, sd), dt = ty(G, dd);
  if (dd == FT_BOOL) {
    if (isf(sd)) return zext_i8(G, LLVMBuildFCmp(B, LLVMRealUNE, x, LLVMConstReal(st, 0), ""));
    return zext_i8(G, LLVMBuildICmp(B, LLVMIntNE, x, ci(st, 0), ""));
  }
  if (isf(dd)) {
    if (isf(sd)) {
      if (sd == dd) return x;
      return dd == FT_F64 ? LLVMBuildFPExt(B, x, dt, "") : LLVMBuildFPTrunc(B, x, dt, "");
    }
    return iss(sd) ? LLVMBuildSIToFP(B, x, dt, "") : LLVMBuildUIToFP(B, x, dt, "");
  }
  if (!isf(sd)) {
    int sb = bits(sd), db = bits(dd);
    if (sb == db) return x;
    if (sb > db) return LLVMBuildTrunc(B, x, dt, "");
    return iss(sd) ? LLVMBuildSExt(B, x, dt, "") : LLVMBuildZExt(B, x, dt, "");
  }
  /* float -> int: NaN -> 0, saturate, truncate toward zero (in double) */
  LLVMValueRef d = sd == FT_F64 ? x : LLVMBuildFPExt(B, x, G->f64, "");
  int w = bits(dd);
  LLVMValueRef nan = LLVMBuildFCmp(B, LLVMRealUNO, d, d, "");
  LLVMValueRef r;
  if (iss(dd)) {
    double lim = (double)((uint64_t)1 << (w - 1));
    LLVMValueRef hi = LLVMBuildFCmp(B, LLVMRealOGE, d, LLVMConstReal(G->f64, lim), "");
    LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLE, d, LLVMConstReal(G->f64, -lim), "");
    LLVMValueRef safe = LLVMBuildSelect(B, LLVMBuildOr(B, LLVMBuildOr(B, hi, lo, ""), nan, ""),
                                        LLVMConstReal(G->f64, 0), d, "");
    r = LLVMBuildFPToSI(B, safe, dt, "");
    LLVMValueRef mx = ci(dt, w == 64 ? INT64_MAX : (INT64_C(1) << (w - 1)) - 1);
    r = LLVMBuildSelect(B, hi, mx, r, "");
    r = LLVMBuildSelect(B, lo, LLVMBuildNot(B, mx, ""), r, "");
  } else {
    double lim = w == 64 ? 18446744073709551616.0 : (double)((uint64_t)1 << w);
    LLVMValueRef hi = LLVMBuildFCmp(B, LLVMRealOGE, d, LLVMConstReal(G->f64, lim), "");
    LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLE, d, LLVMConstReal(G->f64, 0), "");
    LLVMValueRef safe = LLVMBuildSelect(B, LLVMBuildOr(B, LLVMBuildOr(B, hi, lo, ""), nan, ""),
                                        LLVMConstReal(G->f64, 0), d, "");
    r = LLVMBuildFPToUI(B, safe, dt, "");
    r = LLVMBuildSelect(B, hi, ci(dt, -1), r, "");
    r = LLVMBuildSelect(B, lo, ci(dt, 0), r, "");
  }
  return LLVMBuildSelect(B, nan, ci(dt, 0), r, "");
}

static LLVMValueRef select_n(cg *G, ft_dtype wdt, LLVMValueRef w, int ncase, LLVMValueRef *cs) {
  LLVMBuilderRef B = G->b;
  if (ncase == 1) return cs[0];
  LLVMValueRef i = w;
  if (bits(wdt) < 64) i = iss(wdt) ? LLVMBuildSExt(B, w, G->i64, "") : LLVMBuildZExt(B, w, G->i64, "");
  if (wdt == FT_U64) i = LLVMBuildAnd(B, i, c64(G, INT64_MAX), "");
  LLVMValueRef r = cs[ncase - 1];
  for (int k = ncase - 2; k >= 0; k--) {
    /* out of range clamps: below 0 takes case 0 */
    LLVMValueRef hit = k == 0 ? LLVMBuildICmp(B, LLVMIntSLE, i, c64(G, 0), "")
                              : LLVMBuildICmp(B, LLVMIntEQ, i, c64(G, k), "");
    r = LLVMBuildSelect(B, hit, cs[k], r, "");
  }
  return r;
}

static LLVMValueRef clamp(cg *G, ft_dtype dt, LLVMValueRef lo, LLVMValueRef x, LLVMValueRef hi) {
  if (isf(dt)) return fmaxmin(G, dt, fmaxmin(G, dt, x, lo, true), hi, false);
  return imaxmin(G, dt, imaxmin(G, dt, x, lo, true), hi, false);
}

/* ------------------------------------------------------- f16 and bf16 */
/* A 16-bit float lives in a kernel as its storage bits (i16), exactly what
 * the interpreter keeps in memory between equations; each operation widens
 * its operands to f32, computes as the f32 operation does, and rounds the
 * result back, as interp_elementwise.c does (ft_get_f64 / ft_set_f64). The
 * conversions are integer code, not LLVM's fpext/fptrunc on half/bfloat:
 * those may become library calls or F16C/AVX512-BF16 instructions whose NaN
 * quieting differs, and the interpreter's rules are specific (array.c): a
 * NaN becomes the sign plus the canonical quiet NaN in 16 bits, and a 16-bit
 * NaN reads as an f32 NaN with its payload and the quiet bit set (what the
 * interpreter's float -> double step leaves). */
static LLVMValueRef k32(cg *G, uint32_t v) { return LLVMConstInt(G->i32, v, 0); }

static LLVMValueRef sel(cg *G, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(G->b, c, a, b, "");
}

static LLVMValueRef icmp(cg *G, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(G->b, p, a, b, "");
}

/* i16 bits of dtype dt -> f32 (ft_f16_to_f32 / ft_bf16_to_f32; NaN quieted). */
static LLVMValueRef half_widen(cg *G, ft_dtype dt, LLVMValueRef h) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef z = LLVMBuildZExt(B, h, G->i32, ""), r;
  if (dt == FT_BF16) {
    LLVMValueRef w = LLVMBuildShl(B, z, k32(G, 16), "");
    LLVMValueRef nan = icmp(G, LLVMIntUGT, LLVMBuildAnd(B, w, k32(G, 0x7fffffffu), ""), k32(G, 0x7f800000u));
    r = sel(G, nan, LLVMBuildOr(B, w, k32(G, 0x00400000u), ""), w);
  } else {
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, z, k32(G, 0x8000), ""), k32(G, 16), "");
    LLVMValueRef e = LLVMBuildAnd(B, LLVMBuildLShr(B, z, k32(G, 10), ""), k32(G, 0x1f), "");
    LLVMValueRef m = LLVMBuildAnd(B, z, k32(G, 0x3ff), "");
    LLVMValueRef m13 = LLVMBuildShl(B, m, k32(G, 13), "");
    LLVMValueRef norm = LLVMBuildOr(B, LLVMBuildShl(B, LLVMBuildAdd(B, e, k32(G, 112), ""), k32(G, 23), ""), m13, "");
    LLVMValueRef quiet = sel(G, icmp(G, LLVMIntNE, m, k32(G, 0)), k32(G, 0x00400000u), k32(G, 0));
    LLVMValueRef inf = LLVMBuildOr(B, LLVMBuildOr(B, m13, quiet, ""), k32(G, 0x7f800000u), "");
    /* a subnormal is m * 2^-24, exact in f32 (as the interpreter computes it) */
    LLVMValueRef sub = LLVMBuildFMul(B, LLVMBuildUIToFP(B, m, G->f32, ""), LLVMConstReal(G->f32, 0x1p-24), "");
    sub = LLVMBuildBitCast(B, sub, G->i32, "");
    r = sel(G, icmp(G, LLVMIntEQ, e, k32(G, 31)), inf, sel(G, icmp(G, LLVMIntEQ, e, k32(G, 0)), sub, norm));
    r = LLVMBuildOr(B, r, sign, "");
  }
  return LLVMBuildBitCast(B, r, G->f32, "");
}

/* f32 -> i16 bits of dtype dt, rounded once to nearest even (encode_small):
 * NaN -> sign | canonical quiet NaN; overflow -> inf; f16 subnormals by an
 * exact shift with round-half-even on the shifted-out bits. */
static LLVMValueRef half_narrow(cg *G, ft_dtype dt, LLVMValueRef f) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef x = LLVMBuildBitCast(B, f, G->i32, "");
  LLVMValueRef u = LLVMBuildAnd(B, x, k32(G, 0x7fffffffu), "");
  LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, x, k32(G, 16), ""), k32(G, 0x8000), "");
  LLVMValueRef nan = icmp(G, LLVMIntUGT, u, k32(G, 0x7f800000u)), r;
  if (dt == FT_BF16) {
    LLVMValueRef odd = LLVMBuildAnd(B, LLVMBuildLShr(B, x, k32(G, 16), ""), k32(G, 1), "");
    LLVMValueRef rn = LLVMBuildLShr(B, LLVMBuildAdd(B, LLVMBuildAdd(B, x, k32(G, 0x7fff), ""), odd, ""),
                                    k32(G, 16), "");
    r = sel(G, nan, LLVMBuildOr(B, sign, k32(G, 0x7fc0), ""), rn);
  } else {
    /* normal results: rebias the exponent, round the 13 dropped bits */
    LLVMValueRef t = LLVMBuildSub(B, u, k32(G, 0x38000000u), "");
    LLVMValueRef odd = LLVMBuildAnd(B, LLVMBuildLShr(B, t, k32(G, 13), ""), k32(G, 1), "");
    LLVMValueRef rn = LLVMBuildLShr(B, LLVMBuildAdd(B, LLVMBuildAdd(B, t, k32(G, 0xfff), ""), odd, ""),
                                    k32(G, 13), "");
    /* subnormal results (|f| < 2^-14): M * 2^(e-150) = (M >> (126-e)) * 2^-24;
     * the shift is clamped to [14, 31] (beyond 25 everything rounds to 0) */
    LLVMValueRef e = LLVMBuildLShr(B, u, k32(G, 23), "");
    e = sel(G, icmp(G, LLVMIntUGT, e, k32(G, 112)), k32(G, 112), e);
    LLVMValueRef s = LLVMBuildSub(B, k32(G, 126), e, "");
    s = sel(G, icmp(G, LLVMIntUGT, s, k32(G, 31)), k32(G, 31), s);
    LLVMValueRef M = LLVMBuildOr(B, LLVMBuildAnd(B, u, k32(G, 0x7fffff), ""), k32(G, 0x800000), "");
    LLVMValueRef q = LLVMBuildLShr(B, M, s, "");
    LLVMValueRef rem = LLVMBuildAnd(B, M, LLVMBuildSub(B, LLVMBuildShl(B, k32(G, 1), s, ""), k32(G, 1), ""), "");
    LLVMValueRef half = LLVMBuildShl(B, k32(G, 1), LLVMBuildSub(B, s, k32(G, 1), ""), "");
    LLVMValueRef up = LLVMBuildOr(B, icmp(G, LLVMIntUGT, rem, half),
                                  LLVMBuildAnd(B, icmp(G, LLVMIntEQ, rem, half),
                                               icmp(G, LLVMIntNE, LLVMBuildAnd(B, q, k32(G, 1), ""), k32(G, 0)), ""), "");
    LLVMValueRef rs = LLVMBuildAdd(B, q, LLVMBuildZExt(B, up, G->i32, ""), "");
    r = sel(G, icmp(G, LLVMIntUGE, u, k32(G, 0x38800000u)), rn, rs);
    r = sel(G, icmp(G, LLVMIntUGE, u, k32(G, 0x477ff000u)), k32(G, 0x7c00), r); /* >= 65520: inf */
    r = sel(G, nan, k32(G, 0x7e00), r);
    r = LLVMBuildOr(B, r, sign, "");
  }
  return LLVMBuildTrunc(B, r, G->i16, "");
}

/* The interpreter's rounding of an f32 value to dt (ft_round_to). */
static LLVMValueRef half_round(cg *G, ft_dtype dt, LLVMValueRef f) {
  return half_widen(G, dt, half_narrow(G, dt, f));
}

/* integer_pow on a 16-bit float: ipow_f32 with each product rounded to dt. */
static LLVMValueRef half_ipow(cg *G, ft_dtype dt, LLVMValueRef x, int64_t y) {
  if (y == 0) return fconst(G, FT_F32, 1.0);
  bool recip = y < 0;
  uint64_t n = recip ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
  LLVMValueRef acc = NULL;
  while (n > 0) {
    if (n & 1) acc = acc ? half_round(G, dt, LLVMBuildFMul(G->b, acc, x, "")) : x;
    n >>= 1;
    if (n > 0) x = half_round(G, dt, LLVMBuildFMul(G->b, x, x, ""));
  }
  return recip ? LLVMBuildFDiv(G->b, fconst(G, FT_F32, 1.0), acc, "") : acc;
}

/* nextafter on the 16-bit grid (the interpreter's nextafter16 and
 * nextafter_half): a, b are the bits, fa, fb their widened values. */
static LLVMValueRef half_nextafter(cg *G, ft_dtype dt, LLVMValueRef a, LLVMValueRef b,
                                   LLVMValueRef fa, LLVMValueRef fb) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = G->i16;
  LLVMValueRef un = LLVMBuildFCmp(B, LLVMRealUNO, fa, fb, "");
  LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, fa, fb, "");
  LLVMValueRef zero = LLVMBuildFCmp(B, LLVMRealOEQ, fa, LLVMConstReal(G->f32, 0), "");
  LLVMValueRef apos = icmp(G, LLVMIntEQ, LLVMBuildAnd(B, a, ci(t, 0x8000), ""), ci(t, 0));
  LLVMValueRef up = icmp(G, LLVMIntEQ, LLVMBuildFCmp(B, LLVMRealOLT, fa, fb, ""), apos);
  LLVMValueRef r = sel(G, up, LLVMBuildAdd(B, a, ci(t, 1), ""), LLVMBuildSub(B, a, ci(t, 1), ""));
  r = sel(G, zero, LLVMBuildOr(B, LLVMBuildAnd(B, b, ci(t, 0x8000), ""), ci(t, 1), ""), r);
  r = sel(G, eq, b, r);
  return sel(G, un, ci(t, dt == FT_F16 ? 0x7e00 : 0x7fc0), r);
}

/* convert_element_type when either side is a 16-bit float (ft_convert_elem:
 * every source is read as a double and stored through f32). */
static LLVMValueRef half_convert(cg *G, ft_dtype sd, ft_dtype dd, LLVMValueRef x) {
  if (ishalf(sd)) {
    LLVMValueRef f = half_widen(G, sd, x);
    return ishalf(dd) ? half_narrow(G, dd, f) : convert(G, FT_F32, dd, f);
  }
  LLVMValueRef d = sd == FT_F64 ? x : convert(G, sd, FT_F64, x); /* exact for f32 */
  return half_narrow(G, dd, LLVMBuildFPTrunc(G->b, d, G->f32, ""));
}

/* An elementwise node with a 16-bit float operand or result; NULL when the
 * node is not one of these (elem's generic path handles it). */
static LLVMValueRef half_elem(cg *G, const ft_knode *n, LLVMValueRef *a) {
  const ft_eqn *e = n->e;
  ft_dtype od = n->dt, id = e->n_in ? e->in[0]->aval.dtype : od;
  ft_family fam = ft_prim_get(e->prim)->family;
  if (fam == FT_FAM_SELECT && e->prim == FT_P_SELECT_N) return NULL; /* moves bits */
  if (fam == FT_FAM_CONVERT) {
    if (e->prim == FT_P_BITCAST_CONVERT_TYPE) return NULL; /* i16 <-> i16 bits */
    return half_convert(G, id, od, a[0]);
  }
  LLVMValueRef w[16];
  for (int k = 0; k < n->n_in; k++)
    w[k] = ishalf(e->in[k]->aval.dtype) ? half_widen(G, e->in[k]->aval.dtype, a[k]) : a[k];
  LLVMValueRef r = NULL;
  switch (fam) {
  case FT_FAM_UNARY:
    if (e->prim == FT_P_IS_FINITE)
      return zext_i8(G, LLVMBuildFCmp(G->b, LLVMRealOLT, intr(G, "fabs", FT_F32, w[0]),
                                      fconst(G, FT_F32, __builtin_inf()), ""));
    r = e->prim == FT_P_INTEGER_POW ? half_ipow(G, od, w[0], ft_param_int(e, "y", 0))
                                    : unary(G, e, FT_F32, w[0]);
    break;
  case FT_FAM_BINARY:
    if (e->prim == FT_P_NEXTAFTER) return half_nextafter(G, od, a[0], a[1], w[0], w[1]);
    r = binary(G, e, FT_F32, w[0], w[1]);
    break;
  case FT_FAM_COMPARE: return compare(G, e->prim, FT_F32, w[0], w[1]);
  case FT_FAM_TERNARY: r = ternary(G, e, FT_F32, w[0], w[1], w[2]); break;
  case FT_FAM_SELECT: r = clamp(G, FT_F32, w[0], w[1], w[2]); break;
  default: return NULL;
  }
  return r ? half_narrow(G, od, r) : NULL;
}

/* ------------------------------------------------------------- complex */
/* A complex value lives in a kernel as the literal struct {re, im} of its
 * part type (f32 for c64, f64 for c128): loads and stores move the two
 * interleaved parts (load_val/store_val), so views, selects and the
 * vectorizer see ordinary scalars. Each operation is the interpreter's
 * (interp_elementwise.c), operation for operation, no contraction: a c64
 * is computed in f32 as binary_cpx does after its exact widening, a c128
 * in f64; division calls libgcc's __divsc3/__divdc3, the very functions
 * the interpreter's C complex division calls (the library imports them
 * from libgcc_s; the kernel resolves them from the process), and abs calls
 * libm's hypotf/hypot as unary does. */
static LLVMTypeRef cpx_ty(cg *G, ft_dtype dt) {
  LLVMTypeRef pt = ty(G, part_dt(dt)), e[2] = {pt, pt};
  return LLVMStructTypeInContext(G->c, e, 2, 0);
}

static LLVMValueRef cpack(cg *G, ft_dtype dt, LLVMValueRef re, LLVMValueRef im) {
  LLVMValueRef z = LLVMGetPoison(cpx_ty(G, dt));
  z = LLVMBuildInsertValue(G->b, z, re, 0, "");
  return LLVMBuildInsertValue(G->b, z, im, 1, "");
}

static LLVMValueRef cre(cg *G, LLVMValueRef z) { return LLVMBuildExtractValue(G->b, z, 0, ""); }
static LLVMValueRef cim(cg *G, LLVMValueRef z) { return LLVMBuildExtractValue(G->b, z, 1, ""); }

/* Element off of a buffer of dt: complex elements are parts 2*off, 2*off+1. */
static LLVMValueRef load_val(cg *G, ft_dtype dt, LLVMValueRef base, LLVMValueRef off) {
  if (!iscpx(dt)) {
    LLVMTypeRef t = ty(G, dt);
    return LLVMBuildLoad2(G->b, t, LLVMBuildGEP2(G->b, t, base, &off, 1, ""), "");
  }
  LLVMTypeRef pt = ty(G, part_dt(dt));
  LLVMValueRef o2 = LLVMBuildMul(G->b, off, c64(G, 2), "");
  LLVMValueRef o3 = LLVMBuildAdd(G->b, o2, c64(G, 1), "");
  LLVMValueRef re = LLVMBuildLoad2(G->b, pt, LLVMBuildGEP2(G->b, pt, base, &o2, 1, ""), "");
  LLVMValueRef im = LLVMBuildLoad2(G->b, pt, LLVMBuildGEP2(G->b, pt, base, &o3, 1, ""), "");
  return cpack(G, dt, re, im);
}

static void store_val(cg *G, ft_dtype dt, LLVMValueRef x, LLVMValueRef base, LLVMValueRef off) {
  if (!iscpx(dt)) {
    LLVMTypeRef t = ty(G, dt);
    LLVMBuildStore(G->b, x, LLVMBuildGEP2(G->b, t, base, &off, 1, ""));
    return;
  }
  LLVMTypeRef pt = ty(G, part_dt(dt));
  LLVMValueRef o2 = LLVMBuildMul(G->b, off, c64(G, 2), "");
  LLVMValueRef o3 = LLVMBuildAdd(G->b, o2, c64(G, 1), "");
  LLVMBuildStore(G->b, cre(G, x), LLVMBuildGEP2(G->b, pt, base, &o2, 1, ""));
  LLVMBuildStore(G->b, cim(G, x), LLVMBuildGEP2(G->b, pt, base, &o3, 1, ""));
}

/* An f32 value after the interpreter's round trip through double
 * (ft_get_f64 / ft_get_c128, then (float)): a signalling NaN comes back
 * quiet (its quiet bit set, payload and sign kept), everything else
 * unchanged. LLVM folds fptrunc(fpext x) to x, so the kernel sets the bit
 * itself; f64 parts make no such trip. */
static LLVMValueRef via_f64(cg *G, ft_dtype pd, LLVMValueRef x) {
  if (pd != FT_F32) return x;
  LLVMValueRef nan = LLVMBuildFCmp(G->b, LLVMRealUNO, x, x, "");
  LLVMValueRef q = LLVMBuildOr(G->b, LLVMBuildBitCast(G->b, x, G->i32, ""), k32(G, 0x00400000u), "");
  return sel(G, nan, LLVMBuildBitCast(G->b, q, G->f32, ""), x);
}

/* a / b by libgcc's __divsc3 / __divdc3 (C's complex division). Their C
 * ABI on x86-64: _Complex float comes back as <2 x float>, _Complex
 * double as {double, double}, as clang declares them (another target's
 * ABI, e.g. AArch64's {float, float}, would need its own form here). */
static LLVMValueRef cpx_div(cg *G, ft_dtype dt, LLVMValueRef a, LLVMValueRef b) {
  bool f64 = dt == FT_C128;
  LLVMTypeRef pt = ty(G, part_dt(dt)), args[4] = {pt, pt, pt, pt};
  LLVMTypeRef rt = f64 ? cpx_ty(G, dt) : LLVMVectorType(G->f32, 2);
  const char *name = f64 ? "__divdc3" : "__divsc3";
  LLVMValueRef f = LLVMGetNamedFunction(G->m, name);
  if (!f) f = LLVMAddFunction(G->m, name, LLVMFunctionType(rt, args, 4, 0));
  LLVMValueRef av[4] = {cre(G, a), cim(G, a), cre(G, b), cim(G, b)};
  LLVMValueRef q = LLVMBuildCall2(G->b, LLVMGlobalGetValueType(f), f, av, 4, "");
  if (f64) return q;
  return cpack(G, dt, LLVMBuildExtractElement(G->b, q, ci(G->i32, 0), ""),
               LLVMBuildExtractElement(G->b, q, ci(G->i32, 1), ""));
}

static LLVMValueRef entry_alloca(cg *G, LLVMTypeRef t);

/* A complex transcendental of the shared math library (vm_complex.c):
 * ft_vm_c<name>_f64 on the parts widened to double (n_in complex operands),
 * the parts it writes rounded to the part type, as the interpreter calls
 * it (unary_cpx, binary_cpx's pow), so the bits are the interpreter's. */
static LLVMValueRef cpx_vm(cg *G, ft_dtype dt, const char *name, int n_in, LLVMValueRef *z) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef d = G->f64, p = LLVMPointerTypeInContext(G->c, 0);
  char fn[64];
  snprintf(fn, sizeof fn, "ft_vm_c%s_f64", name);
  LLVMValueRef f = LLVMGetNamedFunction(G->m, fn);
  if (!f) {
    LLVMTypeRef at[6] = {d, d, d, d, d, d};
    at[2 * n_in] = at[2 * n_in + 1] = p;
    f = LLVMAddFunction(G->m, fn, LLVMFunctionType(LLVMVoidTypeInContext(G->c), at, (unsigned)(2 * n_in + 2), 0));
  }
  LLVMValueRef args[6];
  for (int k = 0; k < n_in; k++) {
    LLVMValueRef re = cre(G, z[k]), im = cim(G, z[k]);
    args[2 * k] = dt == FT_C64 ? LLVMBuildFPExt(B, re, d, "") : re;
    args[2 * k + 1] = dt == FT_C64 ? LLVMBuildFPExt(B, im, d, "") : im;
  }
  LLVMValueRef pr = entry_alloca(G, d), pi = entry_alloca(G, d);
  args[2 * n_in] = pr, args[2 * n_in + 1] = pi;
  LLVMBuildCall2(B, LLVMGlobalGetValueType(f), f, args, (unsigned)(2 * n_in + 2), "");
  LLVMValueRef re = LLVMBuildLoad2(B, d, pr, ""), im = LLVMBuildLoad2(B, d, pi, "");
  if (dt == FT_C64) re = LLVMBuildFPTrunc(B, re, G->f32, ""), im = LLVMBuildFPTrunc(B, im, G->f32, "");
  return cpack(G, dt, re, im);
}

/* x * y of the parts (a + bi)(c + di) = (ac - bd) + (ad + bc)i, as
 * binary_cpx (square is unary_cpx's a*a - b*b, a*b + b*a). */
static LLVMValueRef cpx_mul(cg *G, ft_dtype dt, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef a = cre(G, x), b = cim(G, x), c = cre(G, y), d = cim(G, y);
  LLVMValueRef re = LLVMBuildFSub(B, LLVMBuildFMul(B, a, c, ""), LLVMBuildFMul(B, b, d, ""), "");
  LLVMValueRef im = LLVMBuildFAdd(B, LLVMBuildFMul(B, a, d, ""), LLVMBuildFMul(B, b, c, ""), "");
  return cpack(G, dt, re, im);
}

/* convert_element_type with a complex side (ft_convert_elem): a real or
 * integer source is read as a double (ft_get_f64) and stored as (that
 * double rounded to the part type, +0); a complex source gives its real
 * part, read as a double, to a real destination, and "re != 0 || im != 0"
 * (NaN is true) to bool. */
static LLVMValueRef cpx_convert(cg *G, ft_dtype sd, ft_dtype dd, LLVMValueRef x) {
  LLVMBuilderRef B = G->b;
  if (iscpx(sd) && iscpx(dd))
    return cpack(G, dd, via_f64(G, part_dt(dd), convert(G, part_dt(sd), part_dt(dd), cre(G, x))),
                 via_f64(G, part_dt(dd), convert(G, part_dt(sd), part_dt(dd), cim(G, x))));
  if (iscpx(sd)) {
    ft_dtype pd = part_dt(sd);
    LLVMValueRef re = cre(G, x);
    if (dd == FT_F32) return via_f64(G, pd, convert(G, pd, dd, re));
    if (dd == FT_BOOL) {
      LLVMValueRef z = fconst(G, pd, 0.0);
      return zext_i8(G, LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNE, re, z, ""),
                                    LLVMBuildFCmp(B, LLVMRealUNE, cim(G, x), z, ""), ""));
    }
    return ishalf(dd) ? half_convert(G, pd, dd, re) : convert(G, pd, dd, re);
  }
  LLVMValueRef d = ishalf(sd) ? convert(G, FT_F32, FT_F64, half_widen(G, sd, x)) : convert(G, sd, FT_F64, x);
  ft_dtype pd = part_dt(dd);
  LLVMValueRef re = convert(G, FT_F64, pd, d);
  return cpack(G, dd, sd == FT_F32 ? via_f64(G, pd, re) : re, fconst(G, pd, 0.0));
}

/* An elementwise node with a complex operand or result, or one of real,
 * imag, conj, complex (fusion.c admits exactly the ones below). */
static LLVMValueRef cpx_elem(cg *G, const ft_knode *n, LLVMValueRef *a) {
  LLVMBuilderRef B = G->b;
  const ft_eqn *e = n->e;
  ft_dtype od = n->dt, id = e->n_in ? e->in[0]->aval.dtype : od;
  ft_dtype cd = iscpx(od) ? od : id; /* the complex dtype involved */
  switch (e->prim) {
  /* the moves below go through double in the interpreter (via_f64) */
  case FT_P_REAL: return via_f64(G, od, cre(G, a[0]));
  case FT_P_IMAG: return via_f64(G, od, cim(G, a[0]));
  case FT_P_CONJ: { /* a real operand gets +0 as its imaginary part */
    ft_dtype pd = part_dt(od);
    if (iscpx(id))
      return cpack(G, od, via_f64(G, pd, cre(G, a[0])), via_f64(G, pd, LLVMBuildFNeg(B, cim(G, a[0]), "")));
    return cpack(G, od, via_f64(G, pd, convert(G, id, pd, a[0])), fconst(G, pd, 0.0));
  }
  case FT_P_COMPLEX: return cpack(G, od, via_f64(G, id, a[0]), via_f64(G, id, a[1]));
  case FT_P_NEG:
    return cpack(G, od, via_f64(G, part_dt(od), LLVMBuildFNeg(B, cre(G, a[0]), "")),
                 via_f64(G, part_dt(od), LLVMBuildFNeg(B, cim(G, a[0]), "")));
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: case FT_P_SHARDING_CONSTRAINT:
  case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
    return cpack(G, od, via_f64(G, part_dt(od), cre(G, a[0])), via_f64(G, part_dt(od), cim(G, a[0])));
  case FT_P_SQUARE: return cpx_mul(G, od, a[0], a[0]);
  case FT_P_ONE_MINUS_SQUARE: { /* (1 + z)(1 - z) with 1 = 1 + 0i, as unary_cpx */
    ft_dtype pd = part_dt(od);
    LLVMValueRef one = fconst(G, pd, 1.0), zero = fconst(G, pd, 0.0);
    LLVMValueRef re = cre(G, a[0]), im = cim(G, a[0]);
    LLVMValueRef p = cpack(G, od, LLVMBuildFAdd(B, one, re, ""), LLVMBuildFAdd(B, zero, im, ""));
    LLVMValueRef m = cpack(G, od, LLVMBuildFSub(B, one, re, ""), LLVMBuildFSub(B, zero, im, ""));
    return cpx_mul(G, od, p, m);
  }
  case FT_P_SIGN: { /* x / |x| part by part, 0 at 0 (the interpreter's unary_cpx) */
    ft_dtype pd = part_dt(od);
    LLVMValueRef re = cre(G, a[0]), im = cim(G, a[0]), zero = fconst(G, pd, 0.0);
    LLVMValueRef m = call(G, od == FT_C128 ? "hypot" : "hypotf", ty(G, pd), 2, re, im);
    LLVMValueRef z = LLVMBuildFCmp(B, LLVMRealOEQ, m, zero, "");
    return cpack(G, od, LLVMBuildSelect(B, z, zero, LLVMBuildFDiv(B, re, m, ""), ""),
                 LLVMBuildSelect(B, z, zero, LLVMBuildFDiv(B, im, m, ""), ""));
  }
  case FT_P_ABS:
    return call(G, cd == FT_C128 ? "hypot" : "hypotf", ty(G, part_dt(cd)), 2, cre(G, a[0]), cim(G, a[0]));
  case FT_P_ADD: case FT_P_ADD_ANY:
    return cpack(G, od, LLVMBuildFAdd(B, cre(G, a[0]), cre(G, a[1]), ""),
                 LLVMBuildFAdd(B, cim(G, a[0]), cim(G, a[1]), ""));
  case FT_P_SUB:
    return cpack(G, od, LLVMBuildFSub(B, cre(G, a[0]), cre(G, a[1]), ""),
                 LLVMBuildFSub(B, cim(G, a[0]), cim(G, a[1]), ""));
  case FT_P_MUL: return cpx_mul(G, od, a[0], a[1]);
  case FT_P_DIV: return cpx_div(G, od, a[0], a[1]);
  case FT_P_POW: return cpx_vm(G, od, "pow", 2, a);
#define CPX_CASE(id, name) case FT_P_##id: return cpx_vm(G, od, #name, 1, a);
  FT_VM_COMPLEX_UNARY(CPX_CASE)
#undef CPX_CASE
  case FT_P_EQ: /* both parts equal; a NaN part makes it false (ne: true) */
    return zext_i8(G, LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOEQ, cre(G, a[0]), cre(G, a[1]), ""),
                                   LLVMBuildFCmp(B, LLVMRealOEQ, cim(G, a[0]), cim(G, a[1]), ""), ""));
  case FT_P_NE:
    return zext_i8(G, LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNE, cre(G, a[0]), cre(G, a[1]), ""),
                                  LLVMBuildFCmp(B, LLVMRealUNE, cim(G, a[0]), cim(G, a[1]), ""), ""));
  case FT_P_SELECT_N: { /* both parts by the same case */
    int nc = n->n_in - 1;
    LLVMValueRef re[16], im[16];
    for (int k = 0; k < nc; k++) re[k] = cre(G, a[1 + k]), im[k] = cim(G, a[1 + k]);
    return cpack(G, od, select_n(G, id, a[0], nc, re), select_n(G, id, a[0], nc, im));
  }
  case FT_P_CONVERT_ELEMENT_TYPE: return cpx_convert(G, id, od, a[0]);
  default: return NULL;
  }
}

static bool cpx_node(const ft_knode *n) {
  const ft_eqn *e = n->e;
  if (iscpx(n->dt)) return true;
  for (int k = 0; k < e->n_in; k++)
    if (iscpx(e->in[k]->aval.dtype)) return true;
  return false;
}

static LLVMValueRef elem(cg *G, const ft_knode *n, LLVMValueRef *v, const ft_knode *nodes) {
  const ft_eqn *e = n->e;
  ft_dtype id = e->n_in ? e->in[0]->aval.dtype : n->dt;
  LLVMValueRef a[16];
  for (int k = 0; k < n->n_in; k++) a[k] = v[n->in[k]];
  (void)nodes;
  if (e->prim == FT_P_POW && n->n_in == 2 && !ft_dtype_is_float(e->in[1]->aval.dtype) &&
      !iscpx(e->in[1]->aval.dtype) && !iscpx(n->dt)) {
    /* an integer exponent: converted to the base's dtype, as JAX lowers it (the
     * interpreter's pow_int_exponent); f16/bf16 rounded to the format and widened */
    ft_dtype bd = e->in[1]->aval.dtype;
    if (ishalf(n->dt)) a[1] = half_widen(G, n->dt, half_narrow(G, n->dt, convert(G, bd, FT_F32, a[1])));
    else a[1] = convert(G, bd, n->dt, a[1]);
  }
  if (cpx_node(n)) return cpx_elem(G, n, a);
  if (ishalf(n->dt) || ishalf(id)) {
    LLVMValueRef h = half_elem(G, n, a);
    if (h || (e->prim != FT_P_SELECT_N && e->prim != FT_P_BITCAST_CONVERT_TYPE)) return h;
  }
  switch (ft_prim_get(e->prim)->family) {
  case FT_FAM_UNARY:
    if (e->prim == FT_P_IS_FINITE)
      return zext_i8(G, LLVMBuildFCmp(G->b, LLVMRealOLT, intr(G, "fabs", id, a[0]),
                                      fconst(G, id, __builtin_inf()), ""));
    return unary(G, e, n->dt, a[0]);
  case FT_FAM_BINARY: return binary(G, e, n->dt, a[0], a[1]);
  case FT_FAM_COMPARE: return compare(G, e->prim, id, a[0], a[1]);
  case FT_FAM_TERNARY: return ternary(G, e, n->dt, a[0], a[1], a[2]);
  case FT_FAM_SELECT:
    if (e->prim == FT_P_CLAMP) return clamp(G, n->dt, a[0], a[1], a[2]);
    return select_n(G, id, a[0], n->n_in - 1, a + 1);
  case FT_FAM_CONVERT:
    if (e->prim == FT_P_BITCAST_CONVERT_TYPE) {
      if (ty(G, id) == ty(G, n->dt)) return n->dt == FT_BOOL ? bool_norm(G, a[0]) : a[0];
      return LLVMBuildBitCast(G->b, a[0], ty(G, n->dt), "");
    }
    return convert(G, id, n->dt, a[0]);
  default: return NULL;
  }
}

/* ------------------------------------------------------------ loop kernels */
typedef struct kctx {
  const ft_kernel *k;
  int nb, cap;          /* distinct buffers */
  int *bufs;            /* buffer ids */
  LLVMValueRef *ptrs;
  LLVMValueRef idx[FT_MAX_RANK];
} kctx;

static int kbuf_slot(kctx *K, int buf) {
  for (int i = 0; i < K->nb; i++)
    if (K->bufs[i] == buf) return i;
  if (K->nb == K->cap) return -1;
  K->bufs[K->nb] = buf;
  return K->nb++;
}

static bool kctx_init(cg *G, kctx *K, const ft_kernel *k) {
  memset(K, 0, sizeof *K);
  K->k = k;
  K->cap = k->n_nodes + k->n_stores + 2;
  K->bufs = cg_calloc(G, (size_t)K->cap, sizeof *K->bufs);
  K->ptrs = cg_calloc(G, (size_t)K->cap, sizeof *K->ptrs);
  return K->bufs && K->ptrs;
}

static void kctx_free(kctx *K) {
  free(K->bufs);
  free(K->ptrs);
}

static LLVMValueRef offset(cg *G, kctx *K, int64_t base, const int64_t *st) {
  LLVMValueRef off = c64(G, base);
  for (int d = 0; d < K->k->rank; d++)
    if (st[d] != 0)
      off = LLVMBuildAdd(G->b, off, LLVMBuildMul(G->b, K->idx[d], c64(G, st[d]), ""), "");
  return off;
}

static LLVMValueRef elem_ptr(cg *G, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(G->b, t, base, &off, 1, "");
}

/* The loop body: every node, then the stores. */
static bool emit_body(cg *G, kctx *K) {
  const ft_kernel *k = K->k;
  LLVMValueRef *v = cg_calloc(G, (size_t)k->n_nodes + 1, sizeof *v);
  if (!v) return false;
  int64_t cst[FT_MAX_RANK], s = 1;
  for (int d = k->rank - 1; d >= 0; d--) cst[d] = s, s *= k->dims[d];
  bool ok = true;
  for (int i = 0; i < k->n_nodes && ok; i++) {
    const ft_knode *n = &k->nodes[i];
    switch (n->kind) {
    case FT_KN_LOAD:
      if (n->acc.buf < 0) {
        v[i] = lit_value(G, n->acc.lit, n->dt);
      } else {
        LLVMValueRef pv = K->ptrs[kbuf_slot(K, n->acc.buf)];
        v[i] = load_val(G, n->dt, pv, offset(G, K, n->acc.base, n->acc.st));
      }
      break;
    case FT_KN_IOTA: {
      LLVMValueRef ix = n->dim < 0 ? c64(G, 0) : K->idx[n->dim];
      if (iscpx(n->dt)) v[i] = cpx_convert(G, FT_I64, n->dt, ix); /* ft_set_f64: (i, +0) */
      else if (ishalf(n->dt)) v[i] = half_convert(G, FT_I64, n->dt, ix);
      else if (isf(n->dt)) v[i] = LLVMBuildSIToFP(G->b, ix, ty(G, n->dt), "");
      else if (n->dt == FT_BOOL) v[i] = zext_i8(G, LLVMBuildICmp(G->b, LLVMIntNE, ix, c64(G, 0), ""));
      else if (bits(n->dt) < 64) v[i] = LLVMBuildTrunc(G->b, ix, ty(G, n->dt), "");
      else v[i] = ix;
      break;
    }
    case FT_KN_ELEM:
      v[i] = elem(G, n, v, k->nodes);
      if (!v[i]) ok = false;
      break;
    }
  }
  for (int i = 0; i < k->n_stores && ok; i++) {
    const ft_knode *n = &k->nodes[k->stores[i].node];
    LLVMValueRef pv = K->ptrs[kbuf_slot(K, k->stores[i].buf)];
    store_val(G, n->dt, v[k->stores[i].node], pv, offset(G, K, 0, cst));
  }
  free(v);
  return ok;
}

/* ------------------------------------------------------------ tiled nests
 * A 2-D loop that reads an operand transposed (strided along the inner
 * loop, contiguous along the outer one) walks that operand a whole column
 * of cache lines per output row: 512 lines for a 512-wide row, more than L1
 * holds, so every row reloads them from L2 (the MLP step's SGD update of
 * a weight whose gradient GEMM wrote it transposed ran at ~2 ns an
 * element). Tiles of FT_TILE_I rows by FT_TILE_J columns touch FT_TILE_J
 * lines, reused by the tile's FT_TILE_I rows; the inner loop is one
 * 16-wide vector (a gather). Wider tiles lose at power-of-two row
 * lengths: 512 floats apart, the lines fall into 2 of L1's 64 sets (16
 * ways in all). Measured single-threaded, w - 0.01*transpose(g): 512x512
 * 530 -> 145 us, 784x512 700 -> 205 us (16x64 tiles: 530 and 240).
 * Every element is still computed once by the same body, so the bits do
 * not change; chunks stay [lo, hi) ranges of the outer loop. */
#define FT_TILE_I 32
#define FT_TILE_J 16

static bool wants_tiles(const ft_kernel *k) {
  if (k->rank != 2 || k->dims[0] < 2 * FT_TILE_I || k->dims[1] < 2 * FT_TILE_J) return false;
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *n = &k->nodes[i];
    if (n->kind != FT_KN_LOAD || n->acc.buf < 0) continue;
    int64_t si = n->acc.st[1] < 0 ? -n->acc.st[1] : n->acc.st[1];
    if (si >= 16 && (n->acc.st[0] == 1 || n->acc.st[0] == -1)) return true; /* a line per step */
  }
  return false;
}

typedef struct tloop {
  LLVMBasicBlockRef body, exit, pre;
  LLVMValueRef i, end, step;
} tloop;

/* for (i = start; i < end; i += step): positions the builder in the body. */
static LLVMValueRef tloop_open(cg *G, tloop *L, LLVMValueRef start, LLVMValueRef end, int64_t step) {
  LLVMBuilderRef B = G->b;
  L->pre = LLVMGetInsertBlock(B);
  L->body = LLVMAppendBasicBlockInContext(G->c, G->fn, "tile");
  L->exit = LLVMAppendBasicBlockInContext(G->c, G->fn, "tile_done");
  L->end = end;
  L->step = c64(G, step);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, start, end, ""), L->body, L->exit);
  LLVMPositionBuilderAtEnd(B, L->body);
  L->i = LLVMBuildPhi(B, G->i64, "t");
  LLVMAddIncoming(L->i, &start, &L->pre, 1);
  return L->i;
}

static void tloop_close(cg *G, tloop *L) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef next = LLVMBuildAdd(B, L->i, L->step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, next, L->end, ""), L->body, L->exit);
  LLVMAddIncoming(L->i, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(B, L->exit);
}

static LLVMValueRef smin64(cg *G, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(G->b, LLVMBuildICmp(G->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static bool emit_tiled(cg *G, kctx *K, LLVMValueRef lo, LLVMValueRef hi) {
  tloop ti, tj, li, lj;
  LLVMValueRef n1 = c64(G, K->k->dims[1]);
  LLVMValueRef i0 = tloop_open(G, &ti, lo, hi, FT_TILE_I);
  LLVMValueRef ihi = smin64(G, LLVMBuildAdd(G->b, i0, c64(G, FT_TILE_I), ""), hi);
  LLVMValueRef j0 = tloop_open(G, &tj, c64(G, 0), n1, FT_TILE_J);
  LLVMValueRef jhi = smin64(G, LLVMBuildAdd(G->b, j0, c64(G, FT_TILE_J), ""), n1);
  K->idx[0] = tloop_open(G, &li, i0, ihi, 1);
  K->idx[1] = tloop_open(G, &lj, j0, jhi, 1);
  bool ok = emit_body(G, K);
  tloop_close(G, &lj);
  tloop_close(G, &li);
  tloop_close(G, &tj);
  tloop_close(G, &ti);
  return ok;
}

/* Loop d of the nest: [lo, hi) for d == 0, else [0, dims[d]). */
static bool emit_loop(cg *G, kctx *K, int d, LLVMValueRef lo, LLVMValueRef hi) {
  if (d == 0 && wants_tiles(K->k)) return emit_tiled(G, K, lo, hi);
  LLVMBuilderRef B = G->b;
  LLVMValueRef start = d == 0 ? lo : c64(G, 0), end = d == 0 ? hi : c64(G, K->k->dims[d]);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(G->c, G->fn, "loop");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(G->c, G->fn, "exit");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, start, end, ""), body, exit);
  LLVMPositionBuilderAtEnd(B, body);
  LLVMValueRef i = LLVMBuildPhi(B, G->i64, "i");
  K->idx[d] = i;
  bool ok = d + 1 < K->k->rank ? emit_loop(G, K, d + 1, lo, hi) : emit_body(G, K);
  LLVMValueRef next = LLVMBuildAdd(B, i, c64(G, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, next, end, ""), body, exit);
  LLVMValueRef vals[2] = {start, next};
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMAddIncoming(i, vals, from, 2);
  LLVMPositionBuilderAtEnd(B, exit);
  return ok;
}

static void add_attr(cg *G, LLVMValueRef f, unsigned idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, idx, LLVMCreateEnumAttribute(G->c, kind, 0));
}

/* An in-place pair (new_body) run on one buffer: without noalias, LLVM
 * guards the vector loop with a pointer-distance check that fails exactly
 * when the two pointers are equal, and the scalar loop ran tanh 15x slower.
 * So when they are equal the entry calls the body with the same pointer
 * for both: inlined, the loop sees one base read and written at one index
 * and vectorizes unguarded. Otherwise (or for other kernels) the builder
 * is left where the plain call goes. */
static void emit_inplace_call(cg *G, LLVMValueRef f, kctx *K, LLVMValueRef *cargs,
                              LLVMValueRef body) {
  int ib = ft_kernel_inplace_input(G->p, K->k), si = -1, so = -1;
  for (int i = 0; ib >= 0 && i < K->nb; i++) {
    if (K->bufs[i] == ib) si = i;
    if (K->bufs[i] == K->k->stores[0].buf) so = i;
  }
  if (si < 0 || so < 0) return;
  LLVMBasicBlockRef same = LLVMAppendBasicBlockInContext(G->c, f, "inplace");
  LLVMBasicBlockRef apart = LLVMAppendBasicBlockInContext(G->c, f, "apart");
  LLVMBuildCondBr(G->b, LLVMBuildICmp(G->b, LLVMIntEQ, cargs[si], cargs[so], ""), same, apart);
  LLVMPositionBuilderAtEnd(G->b, same);
  LLVMValueRef own = cargs[si];
  cargs[si] = cargs[so];
  LLVMBuildCall2(G->b, LLVMGlobalGetValueType(body), body, cargs, (unsigned)K->nb + 2, "");
  LLVMBuildRetVoid(G->b);
  cargs[si] = own;
  LLVMPositionBuilderAtEnd(G->b, apart);
}

/* The exported entry: loads buffer addresses, calls the noalias body. */
static LLVMValueRef emit_entry(cg *G, const char *name, kctx *K, LLVMValueRef body) {
  LLVMTypeRef args[3] = {G->ptr, G->i64, G->i64};
  LLVMValueRef f = LLVMAddFunction(G->m, name, LLVMFunctionType(G->vd, args, 3, 0));
  add_attr(G, f, LLVMAttributeFunctionIndex, "nounwind");
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(G->c, f, "entry");
  LLVMPositionBuilderAtEnd(G->b, bb);
  LLVMValueRef *cargs = cg_calloc(G, (size_t)K->nb + 2, sizeof *cargs);
  if (!cargs) return NULL;
  for (int i = 0; i < K->nb; i++) {
    LLVMValueRef slot = c64(G, K->bufs[i]);
    LLVMValueRef pp = LLVMBuildGEP2(G->b, G->ptr, LLVMGetParam(f, 0), &slot, 1, "");
    cargs[i] = LLVMBuildLoad2(G->b, G->ptr, pp, "");
  }
  cargs[K->nb] = LLVMGetParam(f, 1);
  cargs[K->nb + 1] = LLVMGetParam(f, 2);
  emit_inplace_call(G, f, K, cargs, body);
  LLVMBuildCall2(G->b, LLVMGlobalGetValueType(body), body, cargs, (unsigned)K->nb + 2, "");
  LLVMBuildRetVoid(G->b);
  free(cargs);
  return f;
}

/* bufs[i]: the buffer id of parameter i. A loop kernel the executor may
 * run in place (ft_kernel_inplace_input: an input that dies at it, read
 * with the store's own index, overwritten by its first store) gets no
 * noalias on that pair, so one buffer passed for both keeps the IR's
 * promises. */
static LLVMValueRef new_body(cg *G, const ft_kernel *k, const int *bufs, int nb) {
  const char *name = k->name;
  int alias_in = ft_kernel_inplace_input(G->p, k);
  LLVMTypeRef *args = cg_calloc(G, (size_t)nb + 2, sizeof *args);
  if (!args) return NULL;
  for (int i = 0; i < nb; i++) args[i] = G->ptr;
  args[nb] = G->i64;
  args[nb + 1] = G->i64;
  char bn[64];
  snprintf(bn, sizeof bn, "%s.body", name);
  LLVMValueRef f = LLVMAddFunction(G->m, bn, LLVMFunctionType(G->vd, args, (unsigned)nb + 2, 0));
  free(args);
  LLVMSetLinkage(f, LLVMInternalLinkage);
  add_attr(G, f, LLVMAttributeFunctionIndex, "alwaysinline");
  add_attr(G, f, LLVMAttributeFunctionIndex, "nounwind");
  for (int i = 0; i < nb; i++)
    if (alias_in < 0 || (bufs[i] != alias_in && bufs[i] != k->stores[0].buf))
      add_attr(G, f, (unsigned)i + 1, "noalias");
  return f;
}

static bool emit_loop_body_fn(cg *G, kctx *K_, LLVMValueRef body);

static bool emit_loop_kernel(cg *G, const ft_kernel *k) {
  kctx K;
  bool ok = kctx_init(G, &K, k);
  for (int i = 0; ok && i < k->n_nodes; i++)
    if (k->nodes[i].kind == FT_KN_LOAD && k->nodes[i].acc.buf >= 0) ok = kbuf_slot(&K, k->nodes[i].acc.buf) >= 0;
  for (int i = 0; ok && i < k->n_stores; i++) ok = kbuf_slot(&K, k->stores[i].buf) >= 0;
  LLVMValueRef body = ok ? new_body(G, k, K.bufs, K.nb) : NULL;
  ok = ok && body && emit_loop_body_fn(G, &K, body); /* body NULL: out of memory */
  kctx_free(&K);
  return ok;
}

static bool emit_loop_body_fn(cg *G, kctx *K_, LLVMValueRef body) {
  kctx K = *K_;
  const ft_kernel *k = K.k;
  G->fn = body;
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(G->c, body, "entry");
  LLVMPositionBuilderAtEnd(G->b, bb);
  for (int i = 0; i < K.nb; i++) K.ptrs[i] = LLVMGetParam(body, (unsigned)i);
  if (!emit_loop(G, &K, 0, LLVMGetParam(body, (unsigned)K.nb), LLVMGetParam(body, (unsigned)K.nb + 1)))
    return false;
  LLVMBuildRetVoid(G->b);
  return emit_entry(G, k->name, &K, body) != NULL;
}

/* ------------------------------------------------------- reduction kernels */
static LLVMValueRef vsplat(cg *G, LLVMTypeRef vt, LLVMValueRef s) {
  LLVMValueRef v = LLVMGetUndef(vt);
  for (unsigned l = 0; l < 16; l++) v = LLVMBuildInsertElement(G->b, v, s, ci(G->i32, l), "");
  return v;
}

/* The constant c of integer type it, splatted when it is a vector. */
static LLVMValueRef vsplat_or(cg *G, LLVMTypeRef it, int64_t c) {
  if (LLVMGetTypeKind(it) != LLVMVectorTypeKind) return LLVMConstInt(it, (unsigned long long)c, 0);
  LLVMTypeRef et = LLVMGetElementType(it);
  LLVMValueRef e[16];
  unsigned n = LLVMGetVectorSize(it);
  for (unsigned q = 0; q < n && q < 16; q++) e[q] = LLVMConstInt(et, (unsigned long long)c, 0);
  return LLVMConstVector(e, n);
}

static LLVMValueRef vop(cg *G, bool sum, LLVMValueRef a, LLVMValueRef b) {
  return sum ? LLVMBuildFAdd(G->b, a, b, "") : LLVMBuildFMul(G->b, a, b, "");
}

/* A counted loop `for (i = start; i < end; i++)`. Loop-carried state lives
 * in allocas of the entry block (SROA turns them into registers), so loops
 * that may run zero times need no exit phis. */
typedef struct cloop {
  LLVMBasicBlockRef body, exit;
  LLVMValueRef i, end;
} cloop;

static LLVMValueRef cloop_begin(cg *G, cloop *L, LLVMValueRef start, LLVMValueRef end) {
  LLVMBuilderRef B = G->b;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
  L->body = LLVMAppendBasicBlockInContext(G->c, G->fn, "l");
  L->exit = LLVMAppendBasicBlockInContext(G->c, G->fn, "l_done");
  L->end = end;
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, start, end, ""), L->body, L->exit);
  LLVMPositionBuilderAtEnd(B, L->body);
  L->i = LLVMBuildPhi(B, G->i64, "i");
  LLVMAddIncoming(L->i, &start, &pre, 1);
  return L->i;
}

static void cloop_end(cg *G, cloop *L) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef next = LLVMBuildAdd(B, L->i, c64(G, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, next, L->end, ""), L->body, L->exit);
  LLVMAddIncoming(L->i, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(B, L->exit);
}

/* An alloca at the start of the entry block. */
static LLVMValueRef entry_alloca(cg *G, LLVMTypeRef t) {
  LLVMBuilderRef B = G->b;
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(B), entry = LLVMGetEntryBasicBlock(G->fn);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(B, first);
  else LLVMPositionBuilderAtEnd(B, entry);
  LLVMValueRef a = LLVMBuildAlloca(B, t, "");
  LLVMSetAlignment(a, 64);
  LLVMPositionBuilderAtEnd(B, cur);
  return a;
}

/* A reduction being generated: where each load node is, per output. */
typedef struct rk {
  const ft_kernel *k;
  kctx *K;
  LLVMValueRef *kbase;      /* by node: offset of the current output's first element */
  int *nseg;                /* by node: collapsed runs of the reduced axes */
  int64_t (*segdim)[FT_MAX_RANK], (*segst)[FT_MAX_RANK]; /* innermost first */
  LLVMValueRef *v;          /* by node: values at the current element */
  bool half;                /* the folded value is f16/bf16 bits (hdt): folded widened to f32 */
  ft_dtype hdt;
} rk;

/* Collapses the reduced (red) or kept (!red) axes of load strides st into
 * runs, innermost first: consecutive axes whose strides chain merge. */
static int runs_of(const ft_kernel *k, const int64_t *st, bool red, int64_t *dim, int64_t *rst) {
  int n = 0;
  for (int d = k->irank - 1; d >= 0; d--) {
    if (k->ired[d] != red || k->idims[d] == 1) continue;
    if (n > 0 && st[d] == rst[n - 1] * dim[n - 1]) {
      dim[n - 1] *= k->idims[d];
      continue;
    }
    dim[n] = k->idims[d];
    rst[n++] = st[d];
  }
  return n;
}

/* sum_r (rest % dim_r) * st_r over runs innermost first, rest /= dim_r. */
static LLVMValueRef unravel_off(cg *G, LLVMValueRef idx, int n, const int64_t *dim, const int64_t *st) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef off = c64(G, 0), rest = idx;
  for (int r = 0; r < n; r++) {
    LLVMValueRef ix = r + 1 == n ? rest : LLVMBuildURem(B, rest, c64(G, dim[r]), "");
    if (r + 1 < n) rest = LLVMBuildUDiv(B, rest, c64(G, dim[r]), "");
    if (st[r] != 0) off = LLVMBuildAdd(B, off, LLVMBuildMul(B, ix, c64(G, st[r]), ""), "");
  }
  return off;
}

/* The folded value at reduced position kk of the current output. */
static LLVMValueRef eval_at(cg *G, rk *R, LLVMValueRef kk) {
  const ft_kernel *k = R->k;
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *n = &k->nodes[i];
    if (n->kind == FT_KN_ELEM) {
      R->v[i] = elem(G, n, R->v, k->nodes);
      if (!R->v[i]) return NULL;
    } else if (n->kind == FT_KN_LOAD && n->acc.buf < 0) {
      R->v[i] = lit_value(G, n->acc.lit, n->dt);
    } else if (n->kind == FT_KN_LOAD) {
      LLVMTypeRef t = ty(G, n->dt);
      LLVMValueRef off = LLVMBuildAdd(G->b, R->kbase[i],
                                      unravel_off(G, kk, R->nseg[i], R->segdim[i], R->segst[i]), "");
      R->v[i] = LLVMBuildLoad2(G->b, t, elem_ptr(G, t, R->K->ptrs[kbuf_slot(R->K, n->acc.buf)], off), "");
    } else {
      return NULL;
    }
  }
  /* a 16-bit float folds widened to f32 exactly, as the interpreter reads
   * it (ft_get_f64); sums and products round each step (half_canon_fold) */
  return R->half ? half_widen(G, R->hdt, R->v[k->rnode]) : R->v[k->rnode];
}

static LLVMValueRef fold_identity(cg *G, ft_prim pr, ft_dtype dt) {
  LLVMTypeRef t = ty(G, dt);
  bool mx = pr == FT_P_REDUCE_MAX;
  if (isf(dt)) {
    if (pr == FT_P_REDUCE_SUM) return fconst(G, dt, 0.0);
    if (pr == FT_P_REDUCE_PROD) return fconst(G, dt, 1.0);
    return fconst(G, dt, mx ? -__builtin_inf() : __builtin_inf());
  }
  int w = bits(dt);
  bool s = iss(dt);
  int64_t lo = s ? (w == 64 ? INT64_MIN : -(INT64_C(1) << (w - 1))) : 0;
  int64_t hi = s ? (w == 64 ? INT64_MAX : (INT64_C(1) << (w - 1)) - 1) : -1;
  if (dt == FT_BOOL) lo = 0, hi = 1;
  switch (pr) {
  case FT_P_REDUCE_PROD: return ci(t, 1);
  case FT_P_REDUCE_MAX: return ci(t, lo);
  case FT_P_REDUCE_MIN: return ci(t, hi);
  case FT_P_REDUCE_AND: return ci(t, dt == FT_BOOL ? 1 : -1);
  default: return ci(t, 0);
  }
}

static LLVMValueRef fold_op(cg *G, ft_prim pr, ft_dtype dt, LLVMValueRef acc, LLVMValueRef x) {
  LLVMBuilderRef B = G->b;
  if (isf(dt)) {
    if (pr == FT_P_REDUCE_SUM || pr == FT_P_REDUCE_PROD) return vop(G, pr == FT_P_REDUCE_SUM, acc, x);
    return fmaxmin(G, dt, acc, x, pr == FT_P_REDUCE_MAX); /* the interpreter's fold rule */
  }
  switch (pr) {
  case FT_P_REDUCE_SUM: return LLVMBuildAdd(B, acc, x, "");
  case FT_P_REDUCE_PROD: return LLVMBuildMul(B, acc, x, "");
  case FT_P_REDUCE_MAX: return imaxmin(G, dt, x, acc, true);
  case FT_P_REDUCE_MIN: return imaxmin(G, dt, x, acc, false);
  case FT_P_REDUCE_AND: return LLVMBuildAnd(B, acc, x, "");
  case FT_P_REDUCE_XOR: return LLVMBuildXor(B, acc, x, "");
  default: return LLVMBuildOr(B, acc, x, "");
  }
}

/* The horizontal step of the canonical order: the halving tree over the
 * 16 lanes (w = 8, 4, 2, 1: lane[l] op= lane[l + w]); op is `fold`. */
static LLVMValueRef lane_tree(cg *G, LLVMValueRef acc,
                              LLVMValueRef (*fold)(cg *, LLVMValueRef, LLVMValueRef, void *), void *arg) {
  LLVMBuilderRef B = G->b;
  for (int w = 8; w >= 1; w /= 2) {
    LLVMValueRef lo_m[8], hi_m[8];
    for (int q = 0; q < w; q++) lo_m[q] = ci(G->i32, q), hi_m[q] = ci(G->i32, q + w);
    LLVMValueRef lo = LLVMBuildShuffleVector(B, acc, LLVMGetUndef(LLVMTypeOf(acc)), LLVMConstVector(lo_m, (unsigned)w), "");
    LLVMValueRef hi = LLVMBuildShuffleVector(B, acc, LLVMGetUndef(LLVMTypeOf(acc)), LLVMConstVector(hi_m, (unsigned)w), "");
    acc = fold(G, lo, hi, arg);
  }
  return LLVMBuildExtractElement(B, acc, ci(G->i32, 0), "");
}

static LLVMValueRef tree_sum(cg *G, LLVMValueRef a, LLVMValueRef b, void *arg) {
  return vop(G, *(bool *)arg, a, b);
}

/* Inside a loop over j: the 16 values at reduced positions start + 16 j ..
 * start + 16 j + 15, through the small array tmp that the loop vectorizer
 * fills, as one <16 x T> vector (NULL on failure). */
static LLVMValueRef load16(cg *G, rk *R, LLVMTypeRef t, LLVMTypeRef vt, LLVMValueRef tmp,
                           LLVMValueRef start, LLVMValueRef j) {
  LLVMBuilderRef B = G->b;
  cloop Ll;
  LLVMValueRef j16 = LLVMBuildAdd(B, start, LLVMBuildMul(B, j, c64(G, 16), ""), "");
  LLVMValueRef l = cloop_begin(G, &Ll, c64(G, 0), c64(G, 16));
  LLVMValueRef x = eval_at(G, R, LLVMBuildAdd(B, j16, l, ""));
  if (!x) return NULL;
  LLVMBuildStore(B, x, elem_ptr(G, t, tmp, l));
  cloop_end(G, &Ll);
  LLVMValueRef xv = LLVMBuildLoad2(B, vt, tmp, "");
  LLVMSetAlignment(xv, 64);
  return xv;
}

/* One block of the canonical order: the m values at reduced positions
 * start .. start + m - 1, value j into lane j % 16 of a <16 x T> accumulator
 * that starts at the identity (16 values at a time through a small array
 * the loop vectorizer fills), the tail lane by lane, then the halving tree.
 * The block's partial. */
static LLVMValueRef canon_block(cg *G, rk *R, ft_dtype dt, bool sum, LLVMValueRef start, LLVMValueRef m) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt), vt = LLVMVectorType(t, 16), at = LLVMArrayType(t, 16);
  LLVMValueRef accp = entry_alloca(G, vt), tmp = entry_alloca(G, at);
  cloop Lj, Lr;
  LLVMValueRef chunks = LLVMBuildLShr(B, m, c64(G, 4), "");
  LLVMValueRef rem = LLVMBuildAnd(B, m, c64(G, 15), "");
  LLVMBuildStore(B, vsplat(G, vt, fconst(G, dt, sum ? 0.0 : 1.0)), accp);
  LLVMValueRef j = cloop_begin(G, &Lj, c64(G, 0), chunks);
  LLVMValueRef xv = load16(G, R, t, vt, tmp, start, j);
  if (!xv) return NULL;
  LLVMBuildStore(B, vop(G, sum, LLVMBuildLoad2(B, vt, accp, ""), xv), accp);
  cloop_end(G, &Lj);
  LLVMValueRef t0 = LLVMBuildAdd(B, start, LLVMBuildMul(B, chunks, c64(G, 16), ""), "");
  LLVMValueRef r = cloop_begin(G, &Lr, c64(G, 0), rem);
  LLVMValueRef x = eval_at(G, R, LLVMBuildAdd(B, t0, r, ""));
  if (!x) return NULL;
  LLVMValueRef acc = LLVMBuildLoad2(B, vt, accp, "");
  LLVMValueRef lane = LLVMBuildExtractElement(B, acc, r, "");
  LLVMBuildStore(B, LLVMBuildInsertElement(B, acc, vop(G, sum, lane, x), r, ""), accp);
  cloop_end(G, &Lr);
  return lane_tree(G, LLVMBuildLoad2(B, vt, accp, ""), tree_sum, &sum);
}

/* The length of block b (FT_SUM_BLOCK, the last one shorter) of n values. */
static LLVMValueRef block_len(cg *G, LLVMValueRef start, int64_t bsize, int64_t n) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef left = LLVMBuildSub(B, c64(G, n), start, "");
  return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, c64(G, bsize), ""), left, c64(G, bsize), "");
}

/* sum/prod of the n values in the canonical order of docs/determinism.md:
 * blocks of FT_SUM_BLOCK (canon_block) combined left to right. n == 1 is
 * the value itself. */
static LLVMValueRef canon_fold(cg *G, rk *R, ft_dtype dt, bool sum, int64_t n) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  if (n == 0) return fconst(G, dt, sum ? 0.0 : 1.0);
  if (n == 1) return eval_at(G, R, c64(G, 0));
  LLVMValueRef totp = entry_alloca(G, t);
  cloop Lb;
  int64_t nb = (n + FT_SUM_BLOCK - 1) / FT_SUM_BLOCK;
  LLVMValueRef b = cloop_begin(G, &Lb, c64(G, 0), c64(G, nb));
  LLVMValueRef start = LLVMBuildMul(B, b, c64(G, FT_SUM_BLOCK), "");
  LLVMValueRef part = canon_block(G, R, dt, sum, start, block_len(G, start, FT_SUM_BLOCK, n));
  if (!part) return NULL;
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, b, c64(G, 0), "");
  LLVMValueRef tot = LLVMBuildLoad2(B, t, totp, "");
  LLVMBuildStore(B, LLVMBuildSelect(B, first, part, vop(G, sum, tot, part), ""), totp);
  cloop_end(G, &Lb);
  return LLVMBuildLoad2(B, t, totp, "");
}

/* sum/prod of f16/bf16 values in the canonical order with every step
 * rounded to the dtype, as ft_sum_f32/ft_prod_f32(..., rdt) compute it:
 * per block of FT_SUM_BLOCK, 16 f32 lane accumulators in a small array
 * from the identity (element k of the block into lane k % 16), the halving
 * tree, then blocks left to right; each addition (multiplication) is
 * rounded to rdt and read back (half_round, the interpreter's
 * ft_round_to). eval_at gives the values widened to f32. n == 1 is the
 * value itself. */
static LLVMValueRef half_canon_fold(cg *G, rk *R, bool sum, int64_t n) {
  LLVMBuilderRef B = G->b;
  ft_dtype rdt = R->hdt;
  LLVMTypeRef t = G->f32;
  LLVMValueRef id = fconst(G, FT_F32, sum ? 0.0 : 1.0);
  if (n == 0) return id;
  if (n == 1) return eval_at(G, R, c64(G, 0));
  LLVMValueRef accp = entry_alloca(G, LLVMArrayType(t, 16)), totp = entry_alloca(G, t);
  LLVMValueRef tmp = entry_alloca(G, LLVMArrayType(t, 16));
  LLVMBuildStore(B, id, totp);
  cloop Lb, Li, Lk;
  int64_t nb = (n + FT_SUM_BLOCK - 1) / FT_SUM_BLOCK;
  LLVMValueRef b = cloop_begin(G, &Lb, c64(G, 0), c64(G, nb));
  LLVMValueRef start = LLVMBuildMul(B, b, c64(G, FT_SUM_BLOCK), "");
  LLVMValueRef m = block_len(G, start, FT_SUM_BLOCK, n);
  LLVMValueRef l = cloop_begin(G, &Li, c64(G, 0), c64(G, 16));
  LLVMBuildStore(B, id, elem_ptr(G, t, accp, l));
  cloop_end(G, &Li);
  /* 16 values at a time into tmp (load16), then the 16 lanes updated by a
   * 16-iteration loop the vectorizer turns into vector code; the tail
   * lane by lane */
  LLVMValueRef chunks = LLVMBuildLShr(B, m, c64(G, 4), ""), rem = LLVMBuildAnd(B, m, c64(G, 15), "");
  LLVMValueRef j = cloop_begin(G, &Lk, c64(G, 0), chunks);
  if (!load16(G, R, t, LLVMVectorType(t, 16), tmp, start, j)) return NULL;
  l = cloop_begin(G, &Li, c64(G, 0), c64(G, 16));
  LLVMValueRef lp = elem_ptr(G, t, accp, l), xp = elem_ptr(G, t, tmp, l);
  LLVMValueRef v = vop(G, sum, LLVMBuildLoad2(B, t, lp, ""), LLVMBuildLoad2(B, t, xp, ""));
  LLVMBuildStore(B, half_round(G, rdt, v), lp);
  cloop_end(G, &Li);
  cloop_end(G, &Lk);
  LLVMValueRef t0 = LLVMBuildAdd(B, start, LLVMBuildShl(B, chunks, c64(G, 4), ""), "");
  LLVMValueRef r = cloop_begin(G, &Lk, c64(G, 0), rem);
  LLVMValueRef x = eval_at(G, R, LLVMBuildAdd(B, t0, r, ""));
  if (!x) return NULL;
  lp = elem_ptr(G, t, accp, r);
  LLVMBuildStore(B, half_round(G, rdt, vop(G, sum, LLVMBuildLoad2(B, t, lp, ""), x)), lp);
  cloop_end(G, &Lk);
  for (int w = 8; w >= 1; w /= 2)
    for (int q = 0; q < w; q++) {
      LLVMValueRef pa = elem_ptr(G, t, accp, c64(G, q)), pb = elem_ptr(G, t, accp, c64(G, q + w));
      LLVMValueRef pv = vop(G, sum, LLVMBuildLoad2(B, t, pa, ""), LLVMBuildLoad2(B, t, pb, ""));
      LLVMBuildStore(B, half_round(G, rdt, pv), pa);
    }
  LLVMValueRef part = LLVMBuildLoad2(B, t, elem_ptr(G, t, accp, c64(G, 0)), "");
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, b, c64(G, 0), "");
  LLVMValueRef tot = half_round(G, rdt, vop(G, sum, LLVMBuildLoad2(B, t, totp, ""), part));
  LLVMBuildStore(B, LLVMBuildSelect(B, first, part, tot, ""), totp);
  cloop_end(G, &Lb);
  return LLVMBuildLoad2(B, t, totp, "");
}

/* The order-free reductions: a sequential fold from the identity. */
static LLVMValueRef seq_fold(cg *G, rk *R, ft_prim pr, ft_dtype dt, int64_t n) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  LLVMValueRef id = fold_identity(G, pr, dt);
  if (n == 0) return id;
  LLVMValueRef accp = entry_alloca(G, t);
  LLVMBuildStore(B, id, accp);
  cloop L;
  LLVMValueRef kk = cloop_begin(G, &L, c64(G, 0), c64(G, n));
  LLVMValueRef x = eval_at(G, R, kk);
  if (!x) return NULL;
  LLVMBuildStore(B, fold_op(G, pr, dt, LLVMBuildLoad2(B, t, accp, ""), x), accp);
  cloop_end(G, &L);
  return LLVMBuildLoad2(B, t, accp, "");
}

/* The float's bits as a signed integer in the float order, -0 < +0: the
 * magnitude bits flipped when the sign is set (an involution, so it also
 * decodes). A positive NaN lands above +inf, a negative one below -inf. */
static LLVMValueRef order_key(cg *G, LLVMValueRef bits, int w) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef it = LLVMTypeOf(bits);
  LLVMValueRef sh = LLVMBuildAShr(B, bits, vsplat_or(G, it, w - 1), "");
  return LLVMBuildXor(B, bits, LLVMBuildLShr(B, sh, vsplat_or(G, it, 1), ""), "");
}

static LLVMValueRef ismaxmin(cg *G, LLVMValueRef a, LLVMValueRef b, bool mx) {
  return LLVMBuildSelect(G->b, LLVMBuildICmp(G->b, mx ? LLVMIntSGT : LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef tree_smax(cg *G, LLVMValueRef a, LLVMValueRef b, void *arg) {
  (void)arg;
  return ismaxmin(G, a, b, true);
}

static LLVMValueRef tree_smin(cg *G, LLVMValueRef a, LLVMValueRef b, void *arg) {
  (void)arg;
  return ismaxmin(G, a, b, false);
}

/* Float reduce_max/reduce_min of the m values at reduced positions start ..
 * start + m - 1. max/min are exact (docs/determinism.md: order-free, NaN
 * wins, -0 < +0), so any grouping gives the sequential fold's value: 16
 * lanes (element k into lane k % 16, 16 values at a time through a small
 * array the loop vectorizer fills, as canon_block), a halving tree, the
 * tail. The lanes keep the integer max and min of order_key: two integer
 * ops per element instead of XLA's select chain (NaN tests, signed zeros).
 * A NaN shows as a max key above +inf's or a min key below -inf's; the
 * result is then that NaN (which NaN wins may differ from the sequential
 * fold's: NaN payloads are outside the contract), else the extreme. */
static LLVMValueRef lane_maxmin(cg *G, rk *R, ft_dtype dt, bool mx, LLVMValueRef start, LLVMValueRef m) {
  LLVMBuilderRef B = G->b;
  int w = dt == FT_F64 ? 64 : 32;
  LLVMTypeRef t = ty(G, dt), it = w == 64 ? G->i64 : G->i32, at = LLVMArrayType(t, 16);
  LLVMTypeRef vi = LLVMVectorType(it, 16), vt = LLVMVectorType(t, 16);
  LLVMValueRef hip = entry_alloca(G, vi), lop = entry_alloca(G, vi), tmp = entry_alloca(G, at);
  LLVMValueRef khi = entry_alloca(G, it), klo = entry_alloca(G, it);
  uint64_t pinf = w == 64 ? UINT64_C(0x7ff0000000000000) : 0x7f800000u;
  LLVMValueRef kpinf = LLVMConstInt(it, pinf, 0), kninf = order_key(G, LLVMConstInt(it, pinf | (UINT64_C(1) << (w - 1)), 0), w);
  LLVMBuildStore(B, vsplat(G, vi, kninf), hip);
  LLVMBuildStore(B, vsplat(G, vi, kpinf), lop);
  cloop Lj, Lr;
  LLVMValueRef chunks = LLVMBuildLShr(B, m, c64(G, 4), "");
  LLVMValueRef j = cloop_begin(G, &Lj, c64(G, 0), chunks);
  LLVMValueRef xv = load16(G, R, t, vt, tmp, start, j);
  if (!xv) return NULL;
  LLVMValueRef kv = order_key(G, LLVMBuildBitCast(B, xv, vi, ""), w);
  LLVMBuildStore(B, ismaxmin(G, LLVMBuildLoad2(B, vi, hip, ""), kv, true), hip);
  LLVMBuildStore(B, ismaxmin(G, LLVMBuildLoad2(B, vi, lop, ""), kv, false), lop);
  cloop_end(G, &Lj);
  LLVMBuildStore(B, lane_tree(G, LLVMBuildLoad2(B, vi, hip, ""), tree_smax, NULL), khi);
  LLVMBuildStore(B, lane_tree(G, LLVMBuildLoad2(B, vi, lop, ""), tree_smin, NULL), klo);
  LLVMValueRef t0 = LLVMBuildAdd(B, start, LLVMBuildMul(B, chunks, c64(G, 16), ""), "");
  LLVMValueRef r = cloop_begin(G, &Lr, t0, LLVMBuildAdd(B, start, m, ""));
  LLVMValueRef x = eval_at(G, R, r);
  if (!x) return NULL;
  LLVMValueRef k1 = order_key(G, LLVMBuildBitCast(B, x, it, ""), w);
  LLVMBuildStore(B, ismaxmin(G, LLVMBuildLoad2(B, it, khi, ""), k1, true), khi);
  LLVMBuildStore(B, ismaxmin(G, LLVMBuildLoad2(B, it, klo, ""), k1, false), klo);
  cloop_end(G, &Lr);
  LLVMValueRef hi = LLVMBuildLoad2(B, it, khi, ""), lo = LLVMBuildLoad2(B, it, klo, "");
  LLVMValueRef res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, lo, kninf, ""), lo, mx ? hi : lo, "");
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, hi, kpinf, ""), hi, res, "");
  return LLVMBuildBitCast(B, order_key(G, res, w), t, "");
}

/* argmax/argmin as the interpreter: the first extreme; once the best is a
 * NaN it stays (a NaN counts as the extreme); -0 and +0 tie. */
static LLVMValueRef arg_fold(cg *G, rk *R, bool mx, ft_dtype dt, int64_t n) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt);
  LLVMValueRef bvp = entry_alloca(G, t), bip = entry_alloca(G, G->i64);
  LLVMValueRef x0 = eval_at(G, R, c64(G, 0));
  if (!x0) return NULL;
  LLVMBuildStore(B, x0, bvp);
  LLVMBuildStore(B, c64(G, 0), bip);
  cloop L;
  LLVMValueRef kk = cloop_begin(G, &L, c64(G, 1), c64(G, n));
  LLVMValueRef x = eval_at(G, R, kk);
  if (!x) return NULL;
  LLVMValueRef bv = LLVMBuildLoad2(B, t, bvp, ""), take;
  if (isf(dt)) {
    LLVMValueRef better = LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, x, bv, "");
    take = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), better, "");
    take = LLVMBuildAnd(B, take, LLVMBuildFCmp(B, LLVMRealORD, bv, bv, ""), "");
  } else {
    bool s = iss(dt);
    take = LLVMBuildICmp(B, mx ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT), x, bv, "");
  }
  LLVMBuildStore(B, LLVMBuildSelect(B, take, x, bv, ""), bvp);
  LLVMBuildStore(B, LLVMBuildSelect(B, take, kk, LLVMBuildLoad2(B, G->i64, bip, ""), ""), bip);
  cloop_end(G, &L);
  return LLVMBuildLoad2(B, G->i64, bip, "");
}

/* (va, ia) or (vb, ib), lane by lane: the one the interpreter's scan would
 * keep whatever the order: a NaN (the lower index of two), else the extreme,
 * equal values (-0 == +0) the lower index. */
static LLVMValueRef arg_take_b(cg *G, bool mx, ft_dtype dt, LLVMValueRef va, LLVMValueRef ia,
                               LLVMValueRef vb, LLVMValueRef ib) {
  LLVMBuilderRef B = G->b;
  LLVMValueRef lower = LLVMBuildICmp(B, LLVMIntSLT, ib, ia, "");
  if (!isf(dt)) {
    bool s = iss(dt);
    LLVMValueRef better = LLVMBuildICmp(B, mx ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT), vb, va, "");
    LLVMValueRef eq = LLVMBuildICmp(B, LLVMIntEQ, vb, va, "");
    return LLVMBuildOr(B, better, LLVMBuildAnd(B, eq, lower, ""), "");
  }
  LLVMValueRef na = LLVMBuildFCmp(B, LLVMRealUNO, va, va, ""), nb = LLVMBuildFCmp(B, LLVMRealUNO, vb, vb, "");
  LLVMValueRef better = LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, vb, va, "");
  LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, vb, va, "");
  LLVMValueRef num = LLVMBuildOr(B, better, LLVMBuildAnd(B, eq, lower, ""), ""); /* false if either is NaN */
  LLVMValueRef nan = LLVMBuildAnd(B, nb, LLVMBuildOr(B, LLVMBuildNot(B, na, ""), lower, ""), "");
  return LLVMBuildOr(B, nan, num, "");
}

/* argmax/argmin with 16 lanes (element k in lane k % 16, each lane the
 * interpreter's scan, lanes combined by arg_take_b, which picks what the
 * sequential scan picks: the result is the same index). n >= 16. */
static LLVMValueRef lane_arg(cg *G, rk *R, bool mx, ft_dtype dt, int64_t n) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef t = ty(G, dt), vt = LLVMVectorType(t, 16), at = LLVMArrayType(t, 16);
  LLVMTypeRef it = LLVMVectorType(G->i64, 16);
  LLVMValueRef bvp = entry_alloca(G, vt), bip = entry_alloca(G, it), tmp = entry_alloca(G, at);
  LLVMValueRef sv = entry_alloca(G, t), sip = entry_alloca(G, G->i64);
  LLVMValueRef lanes[16];
  for (int q = 0; q < 16; q++) lanes[q] = c64(G, q);
  LLVMValueRef iota = LLVMConstVector(lanes, 16);
  cloop Lj, Lr;
  LLVMValueRef j = cloop_begin(G, &Lj, c64(G, 0), c64(G, n / 16));
  LLVMValueRef j16 = LLVMBuildMul(B, j, c64(G, 16), "");
  LLVMValueRef xv = load16(G, R, t, vt, tmp, c64(G, 0), j);
  if (!xv) return NULL;
  LLVMValueRef xi = LLVMBuildAdd(B, vsplat(G, it, j16), iota, "");
  LLVMValueRef bv = LLVMBuildLoad2(B, vt, bvp, ""), bi = LLVMBuildLoad2(B, it, bip, "");
  LLVMValueRef take;
  if (isf(dt)) {
    take = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNO, xv, xv, ""),
                       LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, xv, bv, ""), "");
    take = LLVMBuildAnd(B, take, LLVMBuildFCmp(B, LLVMRealORD, bv, bv, ""), "");
  } else {
    bool s = iss(dt);
    take = LLVMBuildICmp(B, mx ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT), xv, bv, "");
  }
  /* the first chunk initializes the lanes */
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, j, c64(G, 0), "");
  take = LLVMBuildOr(B, take, vsplat(G, LLVMVectorType(G->i1, 16), first), "");
  LLVMBuildStore(B, LLVMBuildSelect(B, take, xv, bv, ""), bvp);
  LLVMBuildStore(B, LLVMBuildSelect(B, take, xi, bi, ""), bip);
  cloop_end(G, &Lj);
  LLVMValueRef av = LLVMBuildLoad2(B, vt, bvp, ""), ai = LLVMBuildLoad2(B, it, bip, "");
  for (int w = 8; w >= 1; w /= 2) {
    LLVMValueRef lo_m[8], hi_m[8];
    for (int q = 0; q < w; q++) lo_m[q] = ci(G->i32, q), hi_m[q] = ci(G->i32, q + w);
    LLVMValueRef lm = LLVMConstVector(lo_m, (unsigned)w), hm = LLVMConstVector(hi_m, (unsigned)w);
    LLVMValueRef lv = LLVMBuildShuffleVector(B, av, LLVMGetUndef(LLVMTypeOf(av)), lm, "");
    LLVMValueRef hv = LLVMBuildShuffleVector(B, av, LLVMGetUndef(LLVMTypeOf(av)), hm, "");
    LLVMValueRef li = LLVMBuildShuffleVector(B, ai, LLVMGetUndef(LLVMTypeOf(ai)), lm, "");
    LLVMValueRef hi = LLVMBuildShuffleVector(B, ai, LLVMGetUndef(LLVMTypeOf(ai)), hm, "");
    LLVMValueRef tb = arg_take_b(G, mx, dt, lv, li, hv, hi);
    av = LLVMBuildSelect(B, tb, hv, lv, "");
    ai = LLVMBuildSelect(B, tb, hi, li, "");
  }
  LLVMBuildStore(B, LLVMBuildExtractElement(B, av, ci(G->i32, 0), ""), sv);
  LLVMBuildStore(B, LLVMBuildExtractElement(B, ai, ci(G->i32, 0), ""), sip);
  /* the tail: all its indices are higher, the scan's rule */
  LLVMValueRef r = cloop_begin(G, &Lr, c64(G, n / 16 * 16), c64(G, n));
  LLVMValueRef x = eval_at(G, R, r);
  if (!x) return NULL;
  LLVMValueRef cv = LLVMBuildLoad2(B, t, sv, "");
  if (isf(dt)) {
    take = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""),
                       LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, x, cv, ""), "");
    take = LLVMBuildAnd(B, take, LLVMBuildFCmp(B, LLVMRealORD, cv, cv, ""), "");
  } else {
    bool s = iss(dt);
    take = LLVMBuildICmp(B, mx ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT), x, cv, "");
  }
  LLVMBuildStore(B, LLVMBuildSelect(B, take, x, cv, ""), sv);
  LLVMBuildStore(B, LLVMBuildSelect(B, take, r, LLVMBuildLoad2(B, G->i64, sip, ""), ""), sip);
  cloop_end(G, &Lr);
  return LLVMBuildLoad2(B, G->i64, sip, "");
}

/* The offsets of output o's first element in every load node (R->kbase). */
static void output_bases(cg *G, rk *R, LLVMValueRef o) {
  const ft_kernel *k = R->k;
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *q = &k->nodes[i];
    if (q->kind != FT_KN_LOAD || q->acc.buf < 0) continue;
    int64_t kd[FT_MAX_RANK], ks[FT_MAX_RANK];
    int nk = runs_of(k, q->acc.st, false, kd, ks);
    R->kbase[i] = LLVMBuildAdd(G->b, c64(G, q->acc.base), unravel_off(G, o, nk, kd, ks), "");
    R->nseg[i] = runs_of(k, q->acc.st, true, R->segdim[i], R->segst[i]);
  }
}

/* Output p of reduction k (n reduced values each, folded in dt), stored. */
static bool reduce_one(cg *G, kctx *K, rk *R, LLVMValueRef p, int64_t n, ft_dtype dt) {
  const ft_kernel *k = K->k;
  LLVMBuilderRef B = G->b;
  LLVMValueRef o = p, start = NULL, m = NULL;
  if (k->rparts > 0) { /* partial p: block p % rparts of output p / rparts */
    o = LLVMBuildUDiv(B, p, c64(G, k->rparts), "");
    start = LLVMBuildMul(B, LLVMBuildURem(B, p, c64(G, k->rparts), ""), c64(G, k->rblock), "");
    m = block_len(G, start, k->rblock, n);
  }
  output_bases(G, R, o);
  LLVMValueRef r;
  bool fl = isf(dt), sum = k->rprim == FT_P_REDUCE_SUM, mx = k->rprim == FT_P_REDUCE_MAX;
  if (R->half && (sum || k->rprim == FT_P_REDUCE_PROD)) /* never split (fusion.c) */
    r = half_canon_fold(G, R, sum, n);
  else if (k->rparts > 0 && fl && (sum || k->rprim == FT_P_REDUCE_PROD))
    r = canon_block(G, R, dt, sum, start, m);
  else if (k->rparts > 0 && fl && (mx || k->rprim == FT_P_REDUCE_MIN))
    r = lane_maxmin(G, R, dt, mx, start, m);
  else if (k->rseq && fl && (mx || k->rprim == FT_P_REDUCE_MIN) && n >= 16)
    /* the fold of a split max/min: order-free too (lane_maxmin), 4096
     * partials in ~1 us instead of ~19 us of sequential select chain */
    r = lane_maxmin(G, R, dt, mx, c64(G, 0), c64(G, n));
  else if (k->rparts > 0 || k->rseq)
    r = k->rseq ? seq_fold(G, R, k->rprim, dt, n) : NULL; /* fusion.c splits only the above */
  else switch (k->rprim) {
  case FT_P_ARGMAX: case FT_P_ARGMIN:
    r = n >= 16 ? lane_arg(G, R, k->rprim == FT_P_ARGMAX, dt, n) : arg_fold(G, R, k->rprim == FT_P_ARGMAX, dt, n);
    if (r && bits(k->rout_dt) < 64) r = LLVMBuildTrunc(B, r, ty(G, k->rout_dt), "");
    break;
  case FT_P_REDUCE_SUM: case FT_P_REDUCE_PROD:
    if (isf(dt)) {
      r = canon_fold(G, R, dt, k->rprim == FT_P_REDUCE_SUM, n);
      break;
    }
    /* fall through */
  case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN:
    if (isf(dt) && n >= 16) {
      r = lane_maxmin(G, R, dt, k->rprim == FT_P_REDUCE_MAX, c64(G, 0), c64(G, n));
      break;
    }
    /* fall through */
  default:
    r = seq_fold(G, R, k->rprim, dt, n);
    break;
  }
  if (!r) return false;
  /* 16-bit floats: the extreme of max/min is one of the inputs and a sum
   * or product was rounded to the dtype at each step, so the narrowing is
   * exact (a NaN becomes its sign plus the canonical NaN, as the
   * interpreter's store makes it) */
  if (ishalf(k->rout_dt)) r = half_narrow(G, k->rout_dt, r);
  LLVMBuildStore(B, r, elem_ptr(G, ty(G, k->rout_dt), K->ptrs[kbuf_slot(K, k->rout)], p));
  return true;
}

/* Column mode: a float sum/prod whose input is contiguous along the
 * innermost kept axis d (of a length that is a multiple of 16) and not
 * along the reduction (a bias gradient: [128,512] summed over axis 0).
 * Returns d, or -1. */
static int column_axis(const ft_kernel *k, ft_dtype dt, bool half, int64_t n) {
  if (half || !isf(dt) || k->rout_dt != dt || k->rparts > 0 || k->rseq || n < 2 ||
      (k->rprim != FT_P_REDUCE_SUM && k->rprim != FT_P_REDUCE_PROD))
    return -1;
  int d = -1, dr = -1;
  for (int a = k->irank - 1; a >= 0; a--) {
    if (k->idims[a] == 1) continue;
    if (!k->ired[a] && d < 0) d = a;
    if (k->ired[a] && dr < 0) dr = a;
  }
  if (d < 0 || dr < 0 || k->idims[d] % 16) return -1;
  const ft_knode *l0 = NULL;
  for (int i = 0; i < k->n_nodes; i++) {
    const ft_knode *q = &k->nodes[i];
    if (q->kind != FT_KN_LOAD && q->kind != FT_KN_ELEM) return -1;
    if (!l0 && q->kind == FT_KN_LOAD && q->acc.buf >= 0) l0 = q;
  }
  return l0 && l0->acc.st[d] == 1 && l0->acc.st[dr] != 1 ? d : -1;
}

/* Outputs p0 .. p0 + 15 of a column-mode reduction (column_axis: they lie
 * along axis d, so each load's offset moves by its stride along d), in
 * the canonical order of every output at once: per block of FT_SUM_BLOCK,
 * 16 lanes of 16-output vectors from the identity, reduced position kk of
 * the block into lane kk % 16, the halving tree over the lanes, blocks
 * left to right. The values of one position for the 16 outputs come
 * through a small array the loop vectorizer fills with one contiguous
 * load. The same operations per output as canon_fold, so the same bits. */
static bool reduce16(cg *G, kctx *K, rk *R, LLVMValueRef p0, int64_t n, ft_dtype dt, int d) {
  const ft_kernel *k = K->k;
  LLVMBuilderRef B = G->b;
  bool sum = k->rprim == FT_P_REDUCE_SUM;
  LLVMTypeRef t = ty(G, dt), vt = LLVMVectorType(t, 16), lanes_t = LLVMArrayType(vt, 16);
  LLVMValueRef accs = entry_alloca(G, lanes_t), totp = entry_alloca(G, vt);
  LLVMValueRef tmp = entry_alloca(G, LLVMArrayType(t, 16));
  output_bases(G, R, p0);
  LLVMValueRef *kb0 = cg_calloc(G, (size_t)k->n_nodes + 1, sizeof *kb0);
  if (!kb0) return false;
  for (int i = 0; i < k->n_nodes; i++) kb0[i] = R->kbase[i];
  LLVMValueRef ident = vsplat(G, vt, fconst(G, dt, sum ? 0.0 : 1.0));
  int64_t nb = (n + FT_SUM_BLOCK - 1) / FT_SUM_BLOCK;
  cloop Lb, Lk, Lq;
  LLVMValueRef b = cloop_begin(G, &Lb, c64(G, 0), c64(G, nb));
  LLVMValueRef start = LLVMBuildMul(B, b, c64(G, FT_SUM_BLOCK), "");
  LLVMValueRef m = block_len(G, start, FT_SUM_BLOCK, n);
  LLVMValueRef lane_p[16];
  for (int l = 0; l < 16; l++) {
    LLVMValueRef ix[2] = {ci(G->i32, 0), ci(G->i32, l)};
    lane_p[l] = LLVMBuildInBoundsGEP2(B, lanes_t, accs, ix, 2, "");
    LLVMBuildStore(B, ident, lane_p[l]);
  }
  LLVMValueRef kk = cloop_begin(G, &Lk, c64(G, 0), m);
  LLVMValueRef r = LLVMBuildAdd(B, start, kk, "");
  LLVMValueRef q = cloop_begin(G, &Lq, c64(G, 0), c64(G, 16));
  for (int i = 0; i < k->n_nodes; i++)
    if (kb0[i]) R->kbase[i] = LLVMBuildAdd(B, kb0[i], LLVMBuildMul(B, q, c64(G, k->nodes[i].acc.st[d]), ""), "");
  LLVMValueRef x = eval_at(G, R, r);
  if (!x) {
    free(kb0);
    return false;
  }
  LLVMBuildStore(B, x, elem_ptr(G, t, tmp, q));
  cloop_end(G, &Lq);
  LLVMValueRef xv = LLVMBuildLoad2(B, vt, tmp, "");
  LLVMSetAlignment(xv, 64);
  LLVMValueRef ix[2] = {ci(G->i32, 0), LLVMBuildTrunc(B, LLVMBuildAnd(B, kk, c64(G, 15), ""), G->i32, "")};
  LLVMValueRef ap = LLVMBuildInBoundsGEP2(B, lanes_t, accs, ix, 2, "");
  LLVMBuildStore(B, vop(G, sum, LLVMBuildLoad2(B, vt, ap, ""), xv), ap);
  cloop_end(G, &Lk);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; l++)
      LLVMBuildStore(B, vop(G, sum, LLVMBuildLoad2(B, vt, lane_p[l], ""), LLVMBuildLoad2(B, vt, lane_p[l + w], "")),
                     lane_p[l]);
  LLVMValueRef part = LLVMBuildLoad2(B, vt, lane_p[0], "");
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, b, c64(G, 0), "");
  LLVMValueRef tot = LLVMBuildLoad2(B, vt, totp, "");
  LLVMBuildStore(B, LLVMBuildSelect(B, first, part, vop(G, sum, tot, part), ""), totp);
  cloop_end(G, &Lb);
  LLVMValueRef st = LLVMBuildStore(B, LLVMBuildLoad2(B, vt, totp, ""),
                                   elem_ptr(G, t, K->ptrs[kbuf_slot(K, k->rout)], p0));
  LLVMSetAlignment(st, (unsigned)(dt == FT_F64 ? 8 : 4));
  free(kb0);
  return true;
}

static bool emit_reduce_body(cg *G, kctx *K, rk *R, LLVMValueRef body) {
  const ft_kernel *k = K->k;
  LLVMBuilderRef B = G->b;
  G->fn = body;
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(G->c, body, "entry"));
  for (int i = 0; i < K->nb; i++) K->ptrs[i] = LLVMGetParam(body, (unsigned)i);
  LLVMValueRef lo = LLVMGetParam(body, (unsigned)K->nb), hi = LLVMGetParam(body, (unsigned)K->nb + 1);
  int64_t n = 1;
  for (int d = 0; d < k->irank; d++)
    if (k->ired[d]) n *= k->idims[d];
  ft_dtype dt = k->nodes[k->rnode].dt;
  if (ishalf(dt)) R->half = true, R->hdt = dt, dt = FT_F32;
  int cd = column_axis(k, dt, R->half, n);
  cloop Lo;
  if (cd < 0) {
    LLVMValueRef p = cloop_begin(G, &Lo, lo, hi);
    if (!reduce_one(G, K, R, p, n, dt)) return false;
    cloop_end(G, &Lo);
  } else {
    /* [lo, a) one by one, [a, b) 16 at a time (groups start at multiples
     * of 16, so a group never crosses a row of axis cd), [b, hi) one by one */
    LLVMValueRef a = LLVMBuildAnd(B, LLVMBuildAdd(B, lo, c64(G, 15), ""), c64(G, -16), "");
    a = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, hi, ""), a, hi, "");
    LLVMValueRef bnd = LLVMBuildAnd(B, hi, c64(G, -16), "");
    bnd = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, bnd, a, ""), a, bnd, "");
    cloop L1, L2, L3;
    LLVMValueRef p = cloop_begin(G, &L1, lo, a);
    if (!reduce_one(G, K, R, p, n, dt)) return false;
    cloop_end(G, &L1);
    LLVMValueRef g = cloop_begin(G, &L2, LLVMBuildLShr(B, a, c64(G, 4), ""), LLVMBuildLShr(B, bnd, c64(G, 4), ""));
    if (!reduce16(G, K, R, LLVMBuildShl(B, g, c64(G, 4), ""), n, dt, cd)) return false;
    cloop_end(G, &L2);
    p = cloop_begin(G, &L3, bnd, hi);
    if (!reduce_one(G, K, R, p, n, dt)) return false;
    cloop_end(G, &L3);
  }
  LLVMBuildRetVoid(B);
  return true;
}

static bool emit_reduce_kernel(cg *G, const ft_kernel *k) {
  kctx K;
  bool ok = kctx_init(G, &K, k);
  rk R = {.k = k, .K = &K};
  size_t nn = (size_t)k->n_nodes + 1;
  R.kbase = cg_calloc(G, nn, sizeof *R.kbase);
  R.nseg = cg_calloc(G, nn, sizeof *R.nseg);
  R.segdim = cg_calloc(G, nn, sizeof *R.segdim);
  R.segst = cg_calloc(G, nn, sizeof *R.segst);
  R.v = cg_calloc(G, nn, sizeof *R.v);
  ok = ok && R.kbase && R.nseg && R.segdim && R.segst && R.v;
  for (int i = 0; ok && i < k->n_nodes; i++)
    if (k->nodes[i].kind == FT_KN_LOAD && k->nodes[i].acc.buf >= 0) ok = kbuf_slot(&K, k->nodes[i].acc.buf) >= 0;
  ok = ok && kbuf_slot(&K, k->rout) >= 0;
  LLVMValueRef body = ok ? new_body(G, k, K.bufs, K.nb) : NULL;
  ok = ok && body && emit_reduce_body(G, &K, &R, body);
  ok = ok && emit_entry(G, k->name, &K, body) != NULL;
  free(R.kbase), free(R.nseg), free(R.segdim), free(R.segst), free(R.v);
  kctx_free(&K);
  return ok;
}

/* A one-pass logsumexp kernel (fusion.c place_lse): a loop over items
 * [lo, hi) calling the shared routine of vmath/vm_lse.c, whose bitcode the
 * JIT links and inlines (its loops left scalar in the bitcode, so they are
 * vectorized here for the host). Partials: item p = row * nb + b is block
 * b of the row; combine: item r is row r. */
static bool emit_lse_kernel(cg *G, const ft_kernel *k) {
  LLVMBuilderRef B = G->b;
  LLVMTypeRef args[3] = {G->ptr, G->i64, G->i64};
  LLVMValueRef f = LLVMAddFunction(G->m, k->name, LLVMFunctionType(G->vd, args, 3, 0));
  add_attr(G, f, LLVMAttributeFunctionIndex, "nounwind");
  G->fn = f;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(G->c, f, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(G->c, f, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(G->c, f, "done");
  LLVMPositionBuilderAtEnd(B, entry);
  LLVMValueRef bufs = LLVMGetParam(f, 0), lo = LLVMGetParam(f, 1), hi = LLVMGetParam(f, 2);
  int ids[5] = {k->lse_x, k->lse_pm, k->lse_ps, k->lse_shift, k->lse_sum};
  LLVMValueRef ptr[5];
  for (int i = 0; i < 5; i++) {
    LLVMValueRef slot = c64(G, ids[i]);
    ptr[i] = LLVMBuildLoad2(B, G->ptr, LLVMBuildGEP2(B, G->ptr, bufs, &slot, 1, ""), "");
  }
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, lo, hi, ""), loop, done);
  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef it = LLVMBuildPhi(B, G->i64, "it");
  LLVMValueRef res;
  if (!k->lse_fin) {
    LLVMTypeRef pt[3] = {G->ptr, G->i64, G->ptr};
    LLVMTypeRef ft = LLVMFunctionType(G->f32, pt, 3, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(G->m, "ft_vm_lse_block_f32");
    if (!fn) fn = LLVMAddFunction(G->m, "ft_vm_lse_block_f32", ft);
    LLVMValueRef row = LLVMBuildUDiv(B, it, c64(G, k->lse_nb), "");
    LLVMValueRef start = LLVMBuildMul(B, LLVMBuildURem(B, it, c64(G, k->lse_nb), ""), c64(G, FT_VM_LSE_BLOCK), "");
    LLVMValueRef rest = LLVMBuildSub(B, c64(G, k->lse_n), start, "");
    LLVMValueRef len = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, rest, c64(G, FT_VM_LSE_BLOCK), ""), rest,
                                       c64(G, FT_VM_LSE_BLOCK), "");
    LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildMul(B, row, c64(G, k->lse_n), ""), start, "");
    LLVMValueRef a[3] = {LLVMBuildGEP2(B, G->f32, ptr[0], &off, 1, ""), len,
                         LLVMBuildGEP2(B, G->f32, ptr[1], &it, 1, "")};
    res = LLVMBuildCall2(B, ft, fn, a, 3, "");
    LLVMBuildStore(B, res, LLVMBuildGEP2(B, G->f32, ptr[2], &it, 1, ""));
  } else {
    LLVMTypeRef pt[6] = {G->ptr, G->i64, G->ptr, G->ptr, G->i64, G->ptr};
    LLVMTypeRef ft = LLVMFunctionType(G->f32, pt, 6, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(G->m, "ft_vm_lse_finish_f32");
    if (!fn) fn = LLVMAddFunction(G->m, "ft_vm_lse_finish_f32", ft);
    LLVMValueRef xo = LLVMBuildMul(B, it, c64(G, k->lse_n), "");
    LLVMValueRef po = LLVMBuildMul(B, it, c64(G, k->lse_nb), "");
    LLVMValueRef a[6] = {LLVMBuildGEP2(B, G->f32, ptr[0], &xo, 1, ""), c64(G, k->lse_n),
                         LLVMBuildGEP2(B, G->f32, ptr[1], &po, 1, ""),
                         LLVMBuildGEP2(B, G->f32, ptr[2], &po, 1, ""), c64(G, k->lse_nb),
                         LLVMBuildGEP2(B, G->f32, ptr[3], &it, 1, "")};
    res = LLVMBuildCall2(B, ft, fn, a, 6, "");
    LLVMBuildStore(B, res, LLVMBuildGEP2(B, G->f32, ptr[4], &it, 1, ""));
  }
  LLVMValueRef next = LLVMBuildAdd(B, it, c64(G, 1), "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, next, hi, ""), loop, done);
  LLVMValueRef inc_v[2] = {lo, next};
  LLVMBasicBlockRef inc_b[2] = {entry, loop};
  LLVMAddIncoming(it, inc_v, inc_b, 2);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMBuildRetVoid(B);
  return true;
}

/* ------------------------------------------------------------------ entry */
static void cg_init(cg *G, LLVMModuleRef m, const ft_program *p) {
  memset(G, 0, sizeof *G);
  G->m = m;
  G->c = LLVMGetModuleContext(m);
  G->b = LLVMCreateBuilderInContext(G->c);
  G->i1 = LLVMInt1TypeInContext(G->c);
  G->i8 = LLVMInt8TypeInContext(G->c);
  G->i16 = LLVMInt16TypeInContext(G->c);
  G->i32 = LLVMInt32TypeInContext(G->c);
  G->i64 = LLVMInt64TypeInContext(G->c);
  G->f32 = LLVMFloatTypeInContext(G->c);
  G->f64 = LLVMDoubleTypeInContext(G->c);
  G->ptr = LLVMPointerTypeInContext(G->c, 0);
  G->vd = LLVMVoidTypeInContext(G->c);
  G->p = p;
}

int ft_codegen_program(void *module, const ft_program *p, char **err) {
  cg G;
  cg_init(&G, (LLVMModuleRef)module, p);
  int bad = 0;
  for (int i = 0; i < p->n_kernels && !bad; i++) {
    const ft_kernel *k = &p->kernels[i];
    bool ok = k->kind == FT_KER_LOOP  ? emit_loop_kernel(&G, k)
              : k->kind == FT_KER_LSE ? emit_lse_kernel(&G, k)
                                      : emit_reduce_kernel(&G, k);
    if (!ok) {
      char msg[128];
      snprintf(msg, sizeof msg, G.oom ? "codegen: out of memory generating kernel %s"
                                      : "codegen: kernel %s could not be generated", k->name);
      *err = strdup(msg);
      bad = G.oom || !*err ? 2 : 1;
    }
  }
  LLVMDisposeBuilder(G.b);
  if (!bad) {
    char *vmsg = NULL;
    if (LLVMVerifyModule(G.m, LLVMReturnStatusAction, &vmsg)) {
      *err = strdup(vmsg ? vmsg : "codegen: the module does not verify");
      bad = *err ? 1 : 2;
    }
    LLVMDisposeMessage(vmsg);
  }
  return bad;
}
