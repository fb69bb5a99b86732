/* src/lower/jit.c: the host target machine, the pass pipeline, object
 * emission, loading objects into ORC LLJIT, and the public ft_jit /
 * ft_call / ft_fn_free (DESIGN.md §6).
 *
 * Every compilation goes module -> default<O2> (host target machine, so
 * loops vectorize) -> object file -> LLJIT. Going through the object file
 * is what lets the disk cache skip LLVM entirely in a later process: a
 * cached object is loaded exactly like a fresh one. */
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <complex.h>
#include <string.h>
#include <time.h>

#include "ir/json.h"
#include "lower/lower.h"
#include "runtime/exec.h"
#include "lower/vmath/vm_llvm.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------ the target */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char *host_triple, *host_cpu, *host_features;
static LLVMTargetRef host_target;

static void host_init(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser();
  host_triple = LLVMGetDefaultTargetTriple();
  host_cpu = LLVMGetHostCPUName();
  host_features = LLVMGetHostCPUFeatures();
  char *err = NULL;
  if (LLVMGetTargetFromTriple(host_triple, &host_target, &err)) host_target = NULL;
  LLVMDisposeMessage(err);
}

const char *ft_jit_host_triple(void) {
  pthread_once(&host_once, host_init);
  return host_triple;
}
const char *ft_jit_host_cpu(void) {
  pthread_once(&host_once, host_init);
  return host_cpu;
}
const char *ft_jit_host_features(void) {
  pthread_once(&host_once, host_init);
  return host_features;
}

/* The code generator's level for a unit: Aggressive at O3, None for a
 * unit of "fast" kernels (see plan_units), else Default. The level never
 * changes the bits: no fast-math, no contraction. */
static LLVMCodeGenOptLevel cg_level(int opt_level, bool fast) {
  if (opt_level >= 3) return LLVMCodeGenLevelAggressive;
  return fast ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault;
}

static LLVMTargetMachineRef new_tm(LLVMCodeGenOptLevel level) {
  pthread_once(&host_once, host_init);
  if (!host_target) return NULL;
  return LLVMCreateTargetMachine(host_target, host_triple, host_cpu, host_features, level, LLVMRelocPIC,
                                 LLVMCodeModelDefault);
}

/* Two target machines per codegen level are kept for the process (a JIT
 * compilation uses up to two threads): creating one (parsing the AVX-512
 * feature string, building the subtarget) costs milliseconds per
 * compilation. A target machine is not safe to use from two threads at
 * once, so a compilation takes one out of the pool and puts it back; a
 * compilation that finds the pool empty makes its own. */
enum { TM_POOL = 2 };
static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMTargetMachineRef tm_pool[4][TM_POOL]; /* by LLVMCodeGenOptLevel */

static LLVMTargetMachineRef tm_acquire(LLVMCodeGenOptLevel level) {
  LLVMTargetMachineRef tm = NULL;
  pthread_mutex_lock(&tm_mu);
  for (int i = 0; i < TM_POOL && !tm; i++)
    if (tm_pool[level][i]) tm = tm_pool[level][i], tm_pool[level][i] = NULL;
  pthread_mutex_unlock(&tm_mu);
  return tm ? tm : new_tm(level);
}

static void tm_release(LLVMCodeGenOptLevel level, LLVMTargetMachineRef tm) {
  pthread_mutex_lock(&tm_mu);
  for (int i = 0; i < TM_POOL && tm; i++)
    if (!tm_pool[level][i]) tm_pool[level][i] = tm, tm = NULL;
  pthread_mutex_unlock(&tm_mu);
  if (tm) LLVMDisposeTargetMachine(tm);
}

/* Kernels doing less than this many element-iterations are compiled without
 * optimization (optnone: the math is still inlined, FastISel, no
 * vectorizer) unless opt_level is 3. They run for nanoseconds either way,
 * and the O2 pipeline plus SelectionDAG codegen cost about 5 ms per small
 * kernel: the MLP training step's 14 kernels went from ~115 ms to ~25 ms of
 * CPU. Optimization never changes the bits (no fast-math, no contraction). */
enum { SMALL_KERNEL_WORK = 2048 };

static int64_t kernel_work(const ft_program *p, int ki);

/* Whether kernel ki is compiled without optimization (see above). */
static bool kernel_small(const ft_program *p, int ki, int opt_level) {
  return opt_level < 3 && kernel_work(p, ki) < SMALL_KERNEL_WORK;
}

static int64_t kernel_work(const ft_program *p, int ki) {
  const ft_kernel *k = &p->kernels[ki];
  int64_t w = 1;
  if (k->kind == FT_KER_LOOP) {
    for (int d = 0; d < k->rank; d++) w *= k->dims[d];
    return w;
  }
  for (int d = 0; d < k->krank; d++) w *= k->kdims[d];
  return w * (k->rcount > 0 ? k->rcount : 1);
}

static void mark_small_kernels(LLVMModuleRef m, const ft_program *p, int opt_level) {
  if (opt_level >= 3) return;
  LLVMContextRef c = LLVMGetModuleContext(m);
  unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  for (int i = 0; i < p->n_kernels; i++) {
    if (!kernel_small(p, i, opt_level)) continue;
    LLVMValueRef f = LLVMGetNamedFunction(m, p->kernels[i].name);
    if (!f) continue;
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, optnone, 0));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, noinline, 0));
  }
}

/* ------------------------------------------------ the math library subset */
/* Parsing the whole embedded math bitcode costs ~1.7 ms per unit, nearly
 * all of it for functions the unit does not call. So the subset a unit
 * needs (the ft_vm_* functions it declares, with their helpers and
 * tables, exactly as ft_vm_link_into would link them) is linked once per
 * process into a module of its own in a private context and kept as
 * bitcode, keyed by the names asked for; a unit parses that small bitcode
 * and links it (the subset's functions are already internal helpers and
 * alwaysinline, the asked-for ones made external again so that they
 * resolve the unit's declarations, then internal after the link). A unit
 * that calls no library function links nothing. Every function of the
 * library is named ft_vm_* and takes and returns f32 or f64; anything
 * else goes through ft_vm_link_into directly. */
enum { VM_CACHE = 32, VM_MAX_NEEDS = 64 };
static pthread_mutex_t vm_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *key;
  void *bc;
  size_t len;
} vm_cache[VM_CACHE];


/* The library functions m declares (sorted), or -1 when the fast path
 * does not apply (too many, or a type other than f32/f64). */
static int vm_needs(LLVMModuleRef m, LLVMValueRef *need) {
  int n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (!LLVMIsDeclaration(f) || strncmp(name, "ft_vm_", 6)) continue;
    if (n == VM_MAX_NEEDS) return -1;
    LLVMTypeRef t = LLVMGlobalGetValueType(f);
    unsigned np = LLVMCountParamTypes(t);
    LLVMTypeRef ps[2];
    if (np < 1 || np > 2 || LLVMIsFunctionVarArg(t)) return -1;
    LLVMGetParamTypes(t, ps);
    LLVMTypeKind k = LLVMGetTypeKind(LLVMGetReturnType(t));
    if (k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) return -1;
    for (unsigned i = 0; i < np; i++)
      if (LLVMGetTypeKind(ps[i]) != k) return -1;
    need[n++] = f;
  }
  for (int i = 1; i < n; i++) /* by name: the key does not depend on declaration order */
    for (int j = i; j > 0 && strcmp(LLVMGetValueName(need[j - 1]), LLVMGetValueName(need[j])) > 0; j--) {
      LLVMValueRef x = need[j];
      need[j] = need[j - 1], need[j - 1] = x;
    }
  return n;
}

/* The subset's bitcode for the n functions of need (declared in m):
 * malloc'd into *bc, or an error message. */
static char *vm_subset_make(LLVMModuleRef m, LLVMValueRef *need, int n, void **bc, size_t *len) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef s = LLVMModuleCreateWithNameInContext("ft_vm_subset", c);
  LLVMSetTarget(s, LLVMGetTarget(m));
  LLVMSetDataLayout(s, LLVMGetDataLayoutStr(m));
  for (int i = 0; i < n; i++) {
    LLVMTypeRef t = LLVMGlobalGetValueType(need[i]);
    LLVMTypeRef r = LLVMGetTypeKind(LLVMGetReturnType(t)) == LLVMFloatTypeKind ? LLVMFloatTypeInContext(c)
                                                                              : LLVMDoubleTypeInContext(c);
    LLVMTypeRef ps[2] = {r, r};
    LLVMAddFunction(s, LLVMGetValueName(need[i]), LLVMFunctionType(r, ps, LLVMCountParamTypes(t), 0));
  }
  char *err = NULL;
  if (!ft_vm_link_into(s, &err)) {
    for (int i = 0; i < n; i++) {
      LLVMValueRef f = LLVMGetNamedFunction(s, LLVMGetValueName(need[i]));
      if (f && !LLVMIsDeclaration(f)) LLVMSetLinkage(f, LLVMExternalLinkage);
    }
    LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(s);
    *len = mb ? LLVMGetBufferSize(mb) : 0;
    *bc = mb ? malloc(*len) : NULL;
    if (*bc)
      memcpy(*bc, LLVMGetBufferStart(mb), *len);
    else
      err = LLVMCreateMessage("out of memory extracting the math library subset");
    if (mb) LLVMDisposeMemoryBuffer(mb);
  }
  LLVMDisposeModule(s);
  LLVMContextDispose(c);
  return err;
}

/* Links the math functions m calls into m (as ft_vm_link_into): 0, 1 with
 * *err, or 2 when out of memory (with *err). */
static int vm_link(LLVMModuleRef m, char **err) {
  LLVMValueRef need[VM_MAX_NEEDS];
  int n = vm_needs(m, need);
  if (n < 0) return ft_vm_link_into(m, err);
  if (n == 0) return 0;
  size_t klen = 1;
  for (int i = 0; i < n; i++) klen += strlen(LLVMGetValueName(need[i])) + 1;
  char *key = malloc(klen);
  if (!key) {
    *err = LLVMCreateMessage("out of memory");
    return 2;
  }
  key[0] = 0;
  for (int i = 0; i < n; i++) strcat(strcat(key, LLVMGetValueName(need[i])), ",");
  /* the bitcode is copied out under the lock: entries are never freed, but
   * copying keeps the parse below independent of the table */
  void *bc = NULL;
  size_t len = 0;
  pthread_mutex_lock(&vm_mu);
  for (int i = 0; i < VM_CACHE && vm_cache[i].key && !bc; i++)
    if (!strcmp(vm_cache[i].key, key) && (bc = malloc(vm_cache[i].len)))
      memcpy(bc, vm_cache[i].bc, len = vm_cache[i].len);
  pthread_mutex_unlock(&vm_mu);
  if (!bc) {
    if ((*err = vm_subset_make(m, need, n, &bc, &len))) {
      free(key);
      return !bc && len ? 2 : 1;
    }
    pthread_mutex_lock(&vm_mu);
    int i = 0;
    while (i < VM_CACHE && vm_cache[i].key && strcmp(vm_cache[i].key, key)) i++;
    void *keep = i < VM_CACHE && !vm_cache[i].key ? malloc(len) : NULL;
    char *kcopy = keep ? strdup(key) : NULL;
    if (kcopy) {
      memcpy(keep, bc, len);
      vm_cache[i].bc = keep, vm_cache[i].len = len, vm_cache[i].key = kcopy;
    } else {
      free(keep);
    }
    pthread_mutex_unlock(&vm_mu);
  }
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(bc, len, "ft_vm_subset", 0);
  LLVMModuleRef s = NULL;
  int bad = LLVMParseBitcodeInContext2(LLVMGetModuleContext(m), mb, &s);
  LLVMDisposeMemoryBuffer(mb);
  free(bc);
  /* linking replaces the declarations of need[]: look them up again by
   * name (the key lists them, comma-terminated) */
  if (bad || LLVMLinkModules2(m, s)) {
    *err = LLVMCreateMessage(bad ? "jit: cannot parse the math library subset"
                                 : "jit: linking the math library subset failed");
    free(key);
    return 1;
  }
  for (char *name = key, *end; (end = strchr(name, ',')); name = end + 1) {
    *end = 0;
    LLVMValueRef f = LLVMGetNamedFunction(m, name);
    if (f) LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  free(key);
  return 0;
}

/* ------------------------------------------------------------- emission */
/* One compilation unit: the kernels of p marked in keep (all when keep is
 * NULL) in their own LLVM context and module. Runs on any thread: it never
 * touches the ft_ctx, a failure leaves its message in msg. */
typedef struct emit_part {
  const ft_program *p;
  int opt_level;
  ft_llvm_out kind;
  const ft_aot_entry *entry;
  const unsigned char *keep; /* per kernel: the unit that compiles it (NULL: all here) */
  int part;                  /* which value of keep[] this unit compiles */
  bool fast;                 /* only optnone kernels: codegen level None */
  struct emit_part *then;    /* the unit the same thread compiles next, if any */
  void *out;
  size_t len;
  double opt_ms, cg_ms;
  ft_status st;
  char msg[512];
} emit_part;

static ft_status part_fail(emit_part *u, ft_status st, const char *what, const char *detail) {
  snprintf(u->msg, sizeof u->msg, "jit: %s%s%s", what, detail ? ": " : "", detail ? detail : "");
  return u->st = st;
}

/* Drops the kernels another unit compiles (codegen builds them all: IR
 * building is cheap next to optimizing it), then the declarations nothing
 * calls any more, so only the math functions used here are linked. */
static void drop_other_kernels(LLVMModuleRef m, const emit_part *u) {
  for (int i = 0; i < u->p->n_kernels; i++) {
    if (u->keep[i] == u->part) continue;
    char body[40];
    snprintf(body, sizeof body, "%s.body", u->p->kernels[i].name);
    LLVMValueRef f = LLVMGetNamedFunction(m, u->p->kernels[i].name);
    if (f) LLVMDeleteFunction(f);
    if ((f = LLVMGetNamedFunction(m, body))) LLVMDeleteFunction(f);
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
    next = LLVMGetNextFunction(f);
    if (LLVMIsDeclaration(f) && !LLVMGetFirstUse(f)) LLVMDeleteFunction(f);
  }
}

static ft_status emit_part_run(emit_part *u) {
  int opt_level = u->opt_level;
  LLVMCodeGenOptLevel level = cg_level(opt_level, u->fast);
  LLVMTargetMachineRef tm = tm_acquire(level);
  if (!tm) return part_fail(u, FT_ERR_UNSUPPORTED, "no LLVM target for", host_triple);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("frankentrace", c);
  LLVMSetTarget(m, host_triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
  char *err = NULL;
  double t0 = now_ms();
  int cgr = ft_codegen_program(m, u->p, &err);
  if (cgr || (u->entry && ft_aot_codegen_entry(m, u->p, u->entry, &err))) {
    part_fail(u, cgr == 2 ? FT_ERR_NOMEM : u->entry ? FT_ERR_UNSUPPORTED : FT_ERR_INTERNAL,
              err ? err : cgr == 2 ? "codegen: out of memory" : "codegen failed", NULL);
    free(err);
    goto done;
  }
  if (u->keep) drop_other_kernels(m, u);
  char *lerr = NULL;
  int lr = vm_link(m, &lerr);
  if (lr) {
    part_fail(u, lr == 2 ? FT_ERR_NOMEM : FT_ERR_INTERNAL,
              lerr ? lerr : "linking the math library failed", NULL);
    LLVMDisposeMessage(lerr);
    goto done;
  }
  mark_small_kernels(m, u->p, opt_level);
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  /* No loop unroller below O3: the vectorizer already interleaves vector
   * loops, and unrolling what it produced cost ~40% of both the passes and
   * SelectionDAG (bigger bodies) for no measured run-time gain. */
  if (opt_level < 3) LLVMPassBuilderOptionsSetLoopUnrolling(po, 0);
  LLVMErrorRef perr = LLVMRunPasses(m, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (perr) {
    char *msg = LLVMGetErrorMessage(perr);
    part_fail(u, FT_ERR_INTERNAL, "passes", msg);
    LLVMDisposeErrorMessage(msg);
    goto done;
  }
  double t1 = now_ms();
  u->opt_ms = t1 - t0;
  if (u->kind == FT_LO_LLVM) {
    char *s = LLVMPrintModuleToString(m);
    u->len = strlen(s);
    u->out = malloc(u->len + 1);
    if (u->out) memcpy(u->out, s, u->len + 1);
    LLVMDisposeMessage(s);
  } else {
    LLVMMemoryBufferRef mb = NULL;
    char *eerr = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, u->kind == FT_LO_ASM ? LLVMAssemblyFile : LLVMObjectFile,
                                            &eerr, &mb)) {
      part_fail(u, FT_ERR_INTERNAL, "code generation", eerr ? eerr : "?");
      LLVMDisposeMessage(eerr);
      goto done;
    }
    u->len = LLVMGetBufferSize(mb);
    u->out = malloc(u->len + 1);
    if (u->out) {
      memcpy(u->out, LLVMGetBufferStart(mb), u->len);
      ((char *)u->out)[u->len] = 0;
    }
    LLVMDisposeMemoryBuffer(mb);
  }
  if (!u->out) part_fail(u, FT_ERR_NOMEM, "out of memory", NULL);
  u->cg_ms = now_ms() - t1;
done:
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  tm_release(level, tm);
  return u->st;
}

/* Runs a thread's units in turn. */
static void *emit_part_thread(void *arg) {
  for (emit_part *u = arg; u; u = u->then) emit_part_run(u);
  return NULL;
}

ft_status ft_jit_emit_program(ft_ctx *ctx, const ft_program *p, int opt_level, ft_llvm_out kind,
                              const ft_aot_entry *entry, void **out, size_t *len, double *opt_ms,
                              double *cg_ms) {
  *out = NULL;
  *len = 0;
  if (opt_level <= 0) opt_level = 2;
  if (opt_level > 3) opt_level = 3;
  emit_part u = {.p = p, .opt_level = opt_level, .kind = kind, .entry = entry};
  if (emit_part_run(&u)) return ft_set_error(ctx, u.st, "%s", u.msg);
  *out = u.out;
  *len = u.len;
  if (opt_ms) *opt_ms = u.opt_ms;
  if (cg_ms) *cg_ms = u.cg_ms;
  return FT_OK;
}

/* A JIT compilation of several units gives several objects; they travel
 * (and sit in the disk cache) as one blob: FT_OBJS_MAGIC, the count, then
 * per object its length (u64, little-endian as written by this host) and
 * bytes. A blob without the magic is one object file (an ELF file starts
 * with 0x7f 'E' 'L' 'F', so the two cannot be confused). */
static const char FT_OBJS_MAGIC[8] = {'F', 'T', 'O', 'B', 'J', 'S', '0', '1'};

/* A JIT compilation is cut into units by how their kernels are compiled
 * and over the threads. Kernels of the "fast" class go to units whose
 * target machine generates code at level None (FastISel, the fast register
 * allocator): the optnone kernels (their code was FastISel's already; the
 * Default-level machine passes still ran on them) and the medium kernels
 * below: vectorized by the O2 passes as before, code generated ~2x cheaper.
 * The others (large, or calling the math library) keep level Default. With
 * two threads the kernels are balanced over the calling thread and one
 * more by a compile-cost estimate, largest first onto the less loaded
 * thread, each thread with a fast and a Default unit as needed; with one
 * thread the units run in turn. */
enum { MAX_UNITS = 4 };

/* A medium kernel: an optimized loop kernel (not a reduction) of fewer
 * than this many element-iterations that calls no math library function.
 * Level None costs such loops little: they are a few loads, stores and
 * selects per vector, memory-bound at this size (the MLP's 784x512 SGD
 * update 69 -> 71 us, the 128x512 relu within noise); a loop with an
 * inlined tanh/logistic has the register pressure that made the fused
 * chain 1.7x slower at level None, and the canonical-order sum's 16-lane
 * accumulator lost ~25% there, so neither goes there. */
enum { MEDIUM_KERNEL_WORK = 1 << 20 };

static bool prim_calls_library(ft_prim p) {
  switch (p) {
  case FT_P_EXP: case FT_P_EXP2: case FT_P_LOG: case FT_P_LOG2: case FT_P_LOG1P: case FT_P_EXPM1:
  case FT_P_TANH:
  case FT_P_LOGISTIC: case FT_P_SIN: case FT_P_COS: case FT_P_TAN: case FT_P_ASIN: case FT_P_ACOS:
  case FT_P_ATAN: case FT_P_SINH: case FT_P_COSH: case FT_P_ASINH: case FT_P_ACOSH: case FT_P_ATANH:
  case FT_P_SQRT: case FT_P_RSQRT: case FT_P_CBRT: case FT_P_ERF: case FT_P_ERFC: case FT_P_ERF_INV:
  case FT_P_POW: case FT_P_ATAN2: case FT_P_LGAMMA: case FT_P_DIGAMMA: case FT_P_POLYGAMMA:
  case FT_P_ZETA: case FT_P_IGAMMA: case FT_P_IGAMMAC: case FT_P_IGAMMA_GRAD_A:
  case FT_P_BESSEL_I0E: case FT_P_BESSEL_I1E: case FT_P_REGULARIZED_INCOMPLETE_BETA:
    return true;
  default:
    return false;
  }
}

/* Compile-cost estimates in tenths of a millisecond of CPU, fitted on the
 * MLP training step's kernels compiled one per unit (docs/jit.md): a
 * unit's fixed cost (IR for every kernel, linking the math subset, the
 * pipelines' setup), an optnone kernel, an optimized kernel's base. The
 * vectorizer and SelectionDAG grow with the loop body: add/sub/mul are a
 * few instructions, XLA's max/min (NaN and signed-zero selects), compares,
 * selects and divisions many more, an inlined math function the most. A
 * medium kernel at level None costs about half its Default estimate. */
enum { COST_UNIT = 45, COST_SMALL = 3, COST_BIG = 20 };

static int node_cost(const ft_knode *n) {
  if (n->kind != FT_KN_ELEM) return 1;
  switch (n->e->prim) {
  case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_SUB: case FT_P_MUL: case FT_P_NEG:
    return 2;
  case FT_P_MAX: case FT_P_MIN:
    return 65;
  default:
    return prim_calls_library(n->e->prim) ? 60 : 12;
  }
}

/* The kernel's class (fast: level None) and its estimated cost. */
static int kernel_class(const ft_program *p, int ki, int opt_level, bool *fast) {
  if (kernel_small(p, ki, opt_level)) {
    *fast = true;
    return COST_SMALL;
  }
  const ft_kernel *k = &p->kernels[ki];
  int c = COST_BIG;
  bool lib = false;
  for (int i = 0; i < k->n_nodes; i++) {
    c += node_cost(&k->nodes[i]);
    lib |= k->nodes[i].kind == FT_KN_ELEM && prim_calls_library(k->nodes[i].e->prim);
  }
  *fast = opt_level < 3 && !lib && k->kind == FT_KER_LOOP && kernel_work(p, ki) < MEDIUM_KERNEL_WORK;
  return *fast ? c / 2 : c;
}

/* Fills keep[k] (kernel k's unit), thread_of[u] and fast[u]; returns the
 * number of units (1 to MAX_UNITS), or -1 out of memory. */
static int plan_units(const ft_program *p, int opt_level, int threads, unsigned char *keep, int *thread_of,
                      bool *fast) {
  int n = p->n_kernels, nu = 0, load[2] = {0, 0}, unit[2][2] = {{-1, -1}, {-1, -1}};
  int *order = malloc(((size_t)n + 1) * sizeof *order), *cost = malloc(((size_t)n + 1) * sizeof *cost);
  bool *kfast = malloc((size_t)n + 1);
  if (!order || !cost || !kfast) {
    free(order), free(cost), free(kfast);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    cost[i] = kernel_class(p, i, opt_level, &kfast[i]);
    /* insertion by decreasing cost, kernel order among equals */
    int at = i;
    while (at > 0 && cost[order[at - 1]] < cost[i]) order[at] = order[at - 1], at--;
    order[at] = i;
  }
  for (int r = 0; r < n; r++) {
    int i = order[r], t = threads > 1 && load[1] < load[0], f = kfast[i];
    if (unit[t][f] < 0) {
      unit[t][f] = nu, fast[nu] = f, thread_of[nu] = t, nu++;
      load[t] += COST_UNIT;
    }
    keep[i] = (unsigned char)unit[t][f];
    load[t] += cost[i];
  }
  free(order), free(cost), free(kfast);
  return nu;
}

/* The JIT's compilation: the units of plan_units, the objects in one blob
 * (see FT_OBJS_MAGIC) unless there is only one. */
static ft_status emit_for_jit(ft_ctx *ctx, const ft_program *p, int opt_level, int threads, void **out,
                              size_t *len, double *opt_ms, double *cg_ms) {
  if (opt_level <= 0) opt_level = 2;
  if (opt_level > 3) opt_level = 3;
  unsigned char *keep = calloc((size_t)p->n_kernels + 1, 1);
  if (!keep) return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
  int thread_of[MAX_UNITS];
  bool fast[MAX_UNITS];
  int nu = plan_units(p, opt_level, threads, keep, thread_of, fast);
  if (nu < 0) {
    free(keep);
    return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
  }
  emit_part u[MAX_UNITS];
  emit_part *head[2] = {NULL, NULL}, **tail[2] = {&head[0], &head[1]};
  for (int k = 0; k < nu; k++) {
    u[k] = (emit_part){.p = p, .opt_level = opt_level, .kind = FT_LO_OBJ, .keep = nu > 1 ? keep : NULL,
                       .part = k, .fast = fast[k]};
    *tail[thread_of[k]] = &u[k];
    tail[thread_of[k]] = &u[k].then;
  }
  pthread_t th;
  bool spawned = head[1] && pthread_create(&th, NULL, emit_part_thread, head[1]) == 0;
  emit_part_thread(head[0]);
  if (spawned)
    pthread_join(th, NULL);
  else
    emit_part_thread(head[1]);
  free(keep);
  ft_status st = FT_OK;
  for (int k = 0; k < nu && !st; k++)
    if (u[k].st) st = ft_set_error(ctx, u[k].st, "%s", u[k].msg);
  /* the critical path: the busier thread's units */
  double ot[2] = {0, 0}, ct[2] = {0, 0};
  for (int k = 0; k < nu; k++) ot[thread_of[k]] += u[k].opt_ms, ct[thread_of[k]] += u[k].cg_ms;
  int slow = ot[1] + ct[1] > ot[0] + ct[0];
  if (opt_ms) *opt_ms = ot[slow];
  if (cg_ms) *cg_ms = ct[slow];
  if (!st && nu == 1) {
    *out = u[0].out;
    *len = u[0].len;
    return FT_OK;
  }
  size_t n = sizeof FT_OBJS_MAGIC + 8;
  for (int k = 0; k < nu && !st; k++) n += 8 + u[k].len;
  unsigned char *blob = st ? NULL : malloc(n);
  if (!st && !blob) st = ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
  if (!st) {
    size_t at = 0;
    uint64_t cnt = (uint64_t)nu;
    memcpy(blob, FT_OBJS_MAGIC, sizeof FT_OBJS_MAGIC), at += sizeof FT_OBJS_MAGIC;
    memcpy(blob + at, &cnt, 8), at += 8;
    for (int k = 0; k < nu; k++) {
      uint64_t l = u[k].len;
      memcpy(blob + at, &l, 8), at += 8;
      memcpy(blob + at, u[k].out, u[k].len), at += u[k].len;
    }
    *out = blob;
    *len = n;
  }
  for (int k = 0; k < nu; k++) free(u[k].out);
  return st;
}

/* ------------------------------------------------------------ JIT code */
struct ft_jit_code {
  pthread_mutex_t mu;
  int refs;
  LLVMOrcLLJITRef jit;
  int n;
  ft_kernel_fn *fns;
};

static ft_status llvm_err(ft_ctx *ctx, LLVMErrorRef e, const char *what) {
  char *msg = LLVMGetErrorMessage(e);
  ft_status st = ft_set_error(ctx, FT_ERR_INTERNAL, "jit: %s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return st;
}

/* Adds the object file, or every object of a blob, to the dylib. A blob
 * whose lengths do not add up is refused (as corrupt). */
static ft_status add_objects(ft_ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef dylib, const void *obj,
                             size_t len) {
  const unsigned char *b = obj;
  uint64_t cnt = 1, l = len;
  size_t at = 0;
  bool blob = len >= sizeof FT_OBJS_MAGIC + 8 && !memcmp(b, FT_OBJS_MAGIC, sizeof FT_OBJS_MAGIC);
  if (blob) {
    memcpy(&cnt, b + sizeof FT_OBJS_MAGIC, 8);
    at = sizeof FT_OBJS_MAGIC + 8;
  }
  uint64_t k = 0;
  for (; k < cnt; k++) {
    if (blob) {
      if (len - at < 8) break;
      memcpy(&l, b + at, 8);
      at += 8;
      if (l > len - at) break;
    }
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)b + at, (size_t)l,
                                                                       "ft_jit_object");
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(jit, dylib, mb);
    if (e) return llvm_err(ctx, e, "adding the object");
    at += (size_t)l;
  }
  if (at != len || k != cnt)
    return ft_set_error(ctx, FT_ERR_INTERNAL,
                        "jit: the object blob is malformed (%zu of %zu bytes used, %llu of %llu objects)", at,
                        len, (unsigned long long)k, (unsigned long long)cnt);
  return FT_OK;
}

/* C's complex division (libgcc's __divsc3 / __divdc3 behind the '/'), the
 * interpreter's operation, for the kernels' calls of those names
 * (codegen.c's cpx_div): same ABI, same bits. */
static float _Complex cpx_div_f32(float a, float b, float c, float d) {
  return CMPLXF(a, b) / CMPLXF(c, d);
}

static double _Complex cpx_div_f64(double a, double b, double c, double d) {
  return CMPLX(a, b) / CMPLX(c, d);
}

/* Defines __divsc3 and __divdc3 in the kernels' dylib. The process search
 * finds them only where libgcc_s is in the global scope: a host that
 * dlopens the library (Python's extension, RTLD_LOCAL) has it only in the
 * library's own scope, and every kernel dividing complex numbers failed to
 * link ('Symbols not found: [ __divsc3 ]'). */
static int define_cpx_div(ft_ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef dylib) {
  LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
  LLVMOrcCSymbolMapPair syms[2] = {
      {LLVMOrcLLJITMangleAndIntern(jit, "__divsc3"), {(LLVMOrcExecutorAddress)(uintptr_t)cpx_div_f32, fl}},
      {LLVMOrcLLJITMangleAndIntern(jit, "__divdc3"), {(LLVMOrcExecutorAddress)(uintptr_t)cpx_div_f64, fl}}};
  LLVMErrorRef e = LLVMOrcJITDylibDefine(dylib, LLVMOrcAbsoluteSymbols(syms, 2));
  if (e) return llvm_err(ctx, e, "complex division symbols"), -1;
  return 0;
}

ft_jit_code *ft_jit_code_load(ft_ctx *ctx, const ft_program *p, const void *obj, size_t len) {
  pthread_once(&host_once, host_init);
  ft_jit_code *c = calloc(1, sizeof *c);
  if (!c || !(c->fns = calloc((size_t)p->n_kernels + 1, sizeof *c->fns))) {
    free(c);
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  c->refs = 1;
  c->n = p->n_kernels;
  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) {
    llvm_err(ctx, e, "detecting the host");
    goto fail;
  }
  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
  if ((e = LLVMOrcCreateLLJIT(&c->jit, jb))) {
    c->jit = NULL;
    llvm_err(ctx, e, "creating the LLJIT");
    goto fail;
  }
  LLVMOrcJITDylibRef dylib = LLVMOrcLLJITGetMainJITDylib(c->jit);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if ((e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
           &gen, LLVMOrcLLJITGetGlobalPrefix(c->jit), NULL, NULL))) {
    llvm_err(ctx, e, "process symbols");
    goto fail;
  }
  LLVMOrcJITDylibAddGenerator(dylib, gen);
  if (define_cpx_div(ctx, c->jit, dylib)) goto fail;
  if (add_objects(ctx, c->jit, dylib, obj, len)) goto fail;
  for (int k = 0; k < p->n_kernels; k++) {
    LLVMOrcExecutorAddress addr = 0;
    if ((e = LLVMOrcLLJITLookup(c->jit, &addr, p->kernels[k].name))) {
      llvm_err(ctx, e, "looking up a kernel");
      goto fail;
    }
    c->fns[k] = (ft_kernel_fn)(uintptr_t)addr;
  }
  return c;
fail:
  if (c->jit) LLVMOrcDisposeLLJIT(c->jit);
  pthread_mutex_destroy(&c->mu);
  free(c->fns);
  free(c);
  return NULL;
}

void ft_jit_code_retain(ft_jit_code *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
}

void ft_jit_code_release(ft_jit_code *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  int left = --c->refs;
  pthread_mutex_unlock(&c->mu);
  if (left) return;
  if (c->jit) LLVMOrcDisposeLLJIT(c->jit);
  pthread_mutex_destroy(&c->mu);
  free(c->fns);
  free(c);
}

ft_kernel_fn ft_jit_code_kernel(const ft_jit_code *c, int k) { return c->fns[k]; }

/* ------------------------------------------------------------- the ft_fn */
struct ft_fn {
  ft_ctx *ctx;
  ft_program *prog;
  ft_jit_code *code;
  /* Calls run on the dependency-wave executor (src/runtime/exec.h): a
   * shared pool of the context's thread count, and the program's steps as
   * tasks with a buffer plan over waves. Each call takes its own frame
   * (arena) from the executor's free list, so calls need no lock. */
  ft_pool *pool;
  ft_prog_exec *pe;
  ft_jit_stats stats;
  ft_jaxpr *optimized;  /* the exact-tier rewrite of the input, which prog points into */
};

void ft_fn_free(ft_fn *fn) {
  if (!fn) return;
  ft_prog_exec_free(fn->pe); /* borrows prog: first */
  ft_pool_release_shared(fn->pool);
  ft_jit_code_release(fn->code);
  ft_program_free(fn->prog);
  ft_jaxpr_free(fn->optimized);
  free(fn);
}

/* Compiles (or fetches from a cache) the code of fn->prog. */
static ft_status get_code(ft_fn *fn, const ft_jaxpr *j, const ft_jit_options *o,
                          const ft_plan_options *po) {
  ft_ctx *ctx = fn->ctx;
  ft_program *p = fn->prog;
  ft_cache_key key;
  ft_cache_key_make(j, o->opt_level, po, &key);
  if (!o->no_cache && (fn->code = ft_cache_mem_get(&key))) {
    fn->stats.mem_hit = true;
    return FT_OK;
  }
  char dir[4096];
  bool use_disk = !o->no_cache && !o->no_disk_cache && ft_cache_dir(o->cache_dir, dir, sizeof dir);
  void *obj = NULL;
  size_t len = 0;
  if (use_disk) {
    int r = ft_cache_disk_get(dir, &key, &obj, &len);
    if (r < 0) fn->stats.disk_corrupt = true;
    if (r > 0) {
      double t0 = now_ms();
      fn->code = ft_jit_code_load(ctx, p, obj, len);
      fn->stats.load_ms = now_ms() - t0;
      free(obj);
      obj = NULL;
      if (fn->code) {
        fn->stats.disk_hit = true;
        ft_cache_mem_put(&key, fn->code);
        return FT_OK;
      }
      /* an object that does not load is as good as corrupt: rebuild it */
      fn->stats.disk_corrupt = true;
      ft_ctx_clear_error(ctx);
    }
  }
  ft_status st = emit_for_jit(ctx, p, o->opt_level, ft_pool_default_threads(&ctx->opts), &obj, &len,
                              &fn->stats.opt_ms, &fn->stats.codegen_ms);
  if (st) return st;
  double t0 = now_ms();
  fn->code = ft_jit_code_load(ctx, p, obj, len);
  fn->stats.load_ms = now_ms() - t0;
  if (fn->code && use_disk) ft_cache_disk_put(dir, &key, obj, len);
  free(obj);
  if (!fn->code) return ft_ctx_status(ctx);
  if (!o->no_cache) ft_cache_mem_put(&key, fn->code);
  return FT_OK;
}

/* Points every kernel step, sub-programs' included, at its compiled code. */
static void bind_kernels(ft_program *q, const ft_jit_code *code) {
  for (int i = 0; i < q->n_steps; i++) {
    ft_step *s = &q->steps[i];
    if (s->kind == FT_STEP_KERNEL) s->fn = ft_jit_code_kernel(code, s->kernel);
    if (s->kind == FT_STEP_CONTROL)
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++) bind_kernels(ft_control_sub(s->ctl, k), code);
  }
}

/* The options that decide a plan, as the params of a compile/jit ledger
 * record (canonical: keys sorted). Cache placement options do not change
 * what is compiled and are left out. */
static void plan_params(const ft_jit_options *o, ft_buf *b) {
  const struct { const char *key; bool on; } flags[] = {
      {"interpret_all", o->interpret_all}, {"no_fusion", o->no_fusion}, {"no_optimize", o->no_optimize}};
  ft_buf_puts(b, "{");
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    ft_json_key(b, flags[i].key);
    ft_buf_puts(b, flags[i].on ? "true," : "false,");
  }
  ft_json_key(b, "opt_level");
  ft_buf_printf(b, "%d}", o->opt_level);
}

/* The deterministic result of compiling: the plan text plus the cache key
 * (which names the machine, the library version and the options, not the
 * build file, so any binary of this version can replay it). malloc'd. */
static char *plan_record_text(const ft_program *p, const ft_jaxpr *planned, const ft_jit_options *o,
                              const ft_plan_options *po) {
  char *plan = ft_program_describe(p);
  if (!plan) return NULL;
  ft_cache_key key;
  ft_cache_key_make_portable(planned, o->opt_level, po, &key);
  size_t n = strlen(plan) + 64;
  char *text = malloc(n);
  if (text) snprintf(text, n, "%scache key: %s\n", plan, key.hex);
  free(plan);
  return text;
}

char *ft_jit_plan_record(ft_ctx *ctx, const ft_jaxpr *j, const ft_jit_options *opts) {
  ft_jit_options o;
  if (ft_opts_read(ctx, "ft_jit_options", opts, sizeof o, &o)) return NULL;
  ft_jaxpr *opt = NULL;
  if (!o.no_optimize) {
    if (!(opt = ft_optimize(ctx, j, FT_OPT_EXACT, NULL))) return NULL;
    j = opt;
  }
  ft_plan_options po = {.no_fusion = o.no_fusion, .no_compile = o.interpret_all};
  ft_program *p = ft_program_plan(ctx, j, &po);
  char *text = p ? plan_record_text(p, j, &o, &po) : NULL;
  if (p && !text) ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory describing the plan");
  ft_program_free(p);
  ft_jaxpr_free(opt);
  return text;
}

/* Reports a finished compilation to the context's observer (the ledger). */
static ft_status notify_compile(ft_ctx *ctx, const ft_jaxpr *input, const ft_jaxpr *planned,
                                const ft_program *p, const ft_jit_options *o,
                                const ft_plan_options *po) {
  if (!ctx->on_event) return FT_OK;
  ft_buf params = {0};
  plan_params(o, &params);
  char *text = params.failed ? NULL : plan_record_text(p, planned, o, po);
  if (!text) {
    free(params.p);
    return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory describing the plan");
  }
  ft_ctx_event ev = {.kind = FT_CTX_EV_COMPILE, .jaxpr = input, .text = text, .len = strlen(text),
                     .op = "jit", .params = params.p};
  ft_status st = ft_ctx_notify(ctx, &ev);
  free(text);
  free(params.p);
  return st;
}

ft_fn *ft_jit(ft_ctx *ctx, const ft_jaxpr *j, const ft_jit_options *opts) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "jit: NULL jaxpr");
    return NULL;
  }
  ft_jit_options o;
  if (ft_opts_read(ctx, "ft_jit_options", opts, sizeof o, &o)) return NULL;
  if (o.opt_level < 0 || o.opt_level > 3) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "jit: opt_level %d is not 0..3", o.opt_level);
    return NULL;
  }
  double t0 = now_ms();
  const ft_jaxpr *input = j;
  ft_fn *fn = calloc(1, sizeof *fn);
  if (!fn) {
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
    return NULL;
  }
  fn->ctx = ctx;
  /* DESIGN §5: the exact tier of the e-graph runs by default at jit. Its
   * rewrites preserve every output bit (NaN payloads aside, which the
   * determinism contract leaves open), so results equal ft_eval of j. */
  if (!o.no_optimize) {
    if (!(fn->optimized = ft_optimize(ctx, j, FT_OPT_EXACT, NULL))) goto fail;
    j = fn->optimized;
  }
  ft_plan_options po = {.no_fusion = o.no_fusion, .no_compile = o.interpret_all};
  fn->prog = ft_program_plan(ctx, j, &po);
  if (!fn->prog) goto fail;
  fn->stats.plan_ms = now_ms() - t0;
  ft_program *p = fn->prog;
  /* Fail closed on what the compiler does not compile, unless asked. */
  char fb[640];
  if (p->n_fallback && !o.allow_fallback && !o.interpret_all && ft_program_first_fallback(p, fb, sizeof fb)) {
    ft_set_error(ctx, FT_ERR_UNSUPPORTED, "jit: %d equation(s) would run as interpreter fallback "
                 "steps, the first %s (allow them with ft_jit_options.allow_fallback, or ftc "
                 "--allow-fallback)", p->n_fallback, fb);
    goto fail;
  }
  if (p->n_kernels > 0) {
    if (get_code(fn, j, &o, &po)) goto fail;
    bind_kernels(p, fn->code);
  }
  /* One frame made now: even the first call allocates nothing. */
  int threads = ft_pool_default_threads(&ctx->opts);
  if (!(fn->pool = ft_pool_acquire_shared(threads))) {
    ft_set_error(ctx, FT_ERR_NOMEM, "jit: cannot start %d executor threads", threads);
    goto fail;
  }
  if (!(fn->pe = ft_prog_exec_new(ctx, p, fn->pool, NULL)) ||
      ft_exec_reserve(ft_prog_exec_executor(fn->pe), ctx, 1) != FT_OK)
    goto fail;
  ft_jit_stats *s = &fn->stats;
  s->n_steps = p->n_steps;
  s->n_kernels = p->n_kernels;
  s->n_fused_eqns = p->n_fused_eqns;
  s->n_gemm = p->n_gemm;
  s->n_fallback = p->n_fallback;
  s->arena_bytes = ft_prog_exec_plan_stats(fn->pe).peak;
  s->buffers_bytes = ft_prog_exec_plan_stats(fn->pe).sum;
  s->total_ms = now_ms() - t0;
  if (notify_compile(ctx, input, j, p, &o, &po)) goto fail;
  return fn;
fail:
  ft_fn_free(fn);
  return NULL;
}

/* Hardened mode: the call boundary, the run (step by step on the calling
 * thread with guard_each_step: the same kernels and routines, so the same
 * bits), NaN/Inf in the outputs. */
static ft_status call_hardened(ft_fn *fn, const ft_array *const *in, ft_array *const *out) {
  ft_ctx *ctx = fn->ctx;
  const ft_program *p = fn->prog;
  ft_guard_where saved = ft_guard_tl;
  ft_guard_tl = (ft_guard_where){.engine = "jit", .eqn = -1, .depth = 0};
  ft_status st = ft_guard_boundary(ctx, p->j, p->n_args, in, p->n_out, out);
  if (!st && ctx->opts.guard_each_step) {
    void **kbufs = calloc((size_t)p->n_bufs + 1, sizeof *kbufs);
    void *arena = aligned_alloc(64, (p->arena_bytes + 63) / 64 * 64 + 64);
    st = kbufs && arena ? ft_program_run_checked(ctx, p, in, out, kbufs, arena)
                        : ft_set_error(ctx, FT_ERR_NOMEM, "call: out of memory");
    free(kbufs), free(arena);
  } else if (!st) {
    st = ft_prog_exec_run(fn->pe, ctx, in, out, NULL);
  }
  ft_guard_tl = (ft_guard_where){.engine = "jit", .eqn = -1, .depth = 0};
  if (!st) st = ft_guard_results(ctx, p->j, -1, "", p->n_out, out);
  ft_guard_tl = saved;
  return st;
}

ft_status ft_call_into(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                       ft_array *const *out) {
  if (!fn) return FT_ERR_INVALID_ARG;
  ft_program *p = fn->prog;
  if (n_in != p->n_args || (n_in && !in) || n_out != p->n_out || (n_out && !out))
    return ft_set_error(fn->ctx, FT_ERR_INVALID_ARG,
                        "call: expected %d inputs and %d outputs, got %d and %d", p->n_args,
                        p->n_out, n_in, n_out);
  ft_status st = ft_hardened(fn->ctx) ? call_hardened(fn, in, out)
                                      : ft_prog_exec_run(fn->pe, fn->ctx, in, out, NULL);
  /* The ledger's call/jit record, as ft_eval's call/interp (same layout). */
  if (st == FT_OK && fn->ctx->on_event) {
    ft_ctx_event ev = {.kind = FT_CTX_EV_EVAL, .jaxpr = p->j, .n_in = n_in, .in = in,
                       .n_out = n_out, .out = out, .op = "jit"};
    st = ft_ctx_notify(fn->ctx, &ev);
  }
  return st;
}

ft_status ft_call(ft_fn *fn, int n_in, const ft_array *const *in, int n_out, ft_array **out) {
  if (!fn || (n_out && !out)) return FT_ERR_INVALID_ARG;
  ft_program *p = fn->prog;
  if (n_out != p->n_out)
    return ft_set_error(fn->ctx, FT_ERR_INVALID_ARG, "call: the function has %d outputs, got room for %d",
                        p->n_out, n_out);
  for (int k = 0; k < n_out; k++) out[k] = NULL;
  ft_status st = FT_ERR_NOMEM;
  for (int k = 0; k < n_out; k++)
    if (!(out[k] = ft_array_alloc(fn->ctx, &p->j->outvars[k]->aval))) goto fail;
  if ((st = ft_call_into(fn, n_in, in, n_out, out)) == FT_OK) return FT_OK;
fail:
  /* this call's own status: another thread may have failed on the context since */
  for (int k = 0; k < n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}

/* Per-call errors: the messages this thread sets on fn's context during the
 * call go to err as well (src/ir/ctx.c); a failure that set none (a NULL
 * fn) is named by its status. */
static ft_status call_ex_done(ft_status st, ft_err_capture saved, char *err, size_t err_len) {
  ft_err_capture_end(saved);
  if (err && err_len && st != FT_OK && !err[0])
    snprintf(err, err_len, "call: failed with %s", ft_status_string(st));
  return st;
}

ft_status ft_call_ex(ft_fn *fn, int n_in, const ft_array *const *in, int n_out, ft_array **out,
                     char *err, size_t err_len) {
  ft_err_capture saved = ft_err_capture_begin(fn ? fn->ctx : NULL, err, err_len);
  return call_ex_done(ft_call(fn, n_in, in, n_out, out), saved, err, err_len);
}

ft_status ft_call_into_ex(ft_fn *fn, int n_in, const ft_array *const *in, int n_out,
                          ft_array *const *out, char *err, size_t err_len) {
  ft_err_capture saved = ft_err_capture_begin(fn ? fn->ctx : NULL, err, err_len);
  return call_ex_done(ft_call_into(fn, n_in, in, n_out, out), saved, err, err_len);
}

void ft_fn_cancel(ft_fn *fn) {
  if (fn) ft_ctx_cancel(fn->ctx);
}

ft_status ft_fn_stats(const ft_fn *fn, ft_jit_stats *out) {
  if (!fn || !out) return FT_ERR_INVALID_ARG;
  *out = fn->stats;
  return FT_OK;
}

char *ft_fn_plan(const ft_fn *fn) { return fn ? ft_program_describe(fn->prog) : NULL; }

void ft_jit_cache_clear(void) { ft_cache_mem_clear(); }
