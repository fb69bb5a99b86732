/* src/lower/jit.c: the host target machine, the pass pipeline, object
 * emission, loading objects into ORC LLJIT, and the public ft_jit /
 * ft_call / ft_fn_free (DESIGN.md §6).
 *
 * Every compilation goes module -> default<O2> (host target machine, so
 * loops vectorize) -> object file -> LLJIT. Going through the object file
 * is what lets the disk cache skip LLVM entirely in a later process: a
 * cached object is loaded exactly like a fresh one. */
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <string.h>
#include <time.h>

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

static LLVMTargetMachineRef new_tm(int opt_level) {
  pthread_once(&host_once, host_init);
  if (!host_target) return NULL;
  return LLVMCreateTargetMachine(host_target, host_triple, host_cpu, host_features,
                                 opt_level >= 3 ? LLVMCodeGenLevelAggressive : LLVMCodeGenLevelDefault,
                                 LLVMRelocPIC, LLVMCodeModelDefault);
}

/* Two target machines per opt level are kept for the process (a JIT
 * compilation uses up to two threads): creating one (parsing the AVX-512
 * feature string, building the subtarget) costs milliseconds per
 * compilation. A target machine is not safe to use from two threads at
 * once, so a compilation takes one out of the pool and puts it back; a
 * compilation that finds the pool empty makes its own. */
enum { TM_POOL = 2 };
static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMTargetMachineRef tm_pool[4][TM_POOL];

static LLVMTargetMachineRef tm_acquire(int opt_level) {
  LLVMTargetMachineRef tm = NULL;
  pthread_mutex_lock(&tm_mu);
  for (int i = 0; i < TM_POOL && !tm; i++)
    if (tm_pool[opt_level][i]) tm = tm_pool[opt_level][i], tm_pool[opt_level][i] = NULL;
  pthread_mutex_unlock(&tm_mu);
  return tm ? tm : new_tm(opt_level);
}

static void tm_release(int opt_level, LLVMTargetMachineRef tm) {
  pthread_mutex_lock(&tm_mu);
  for (int i = 0; i < TM_POOL && tm; i++)
    if (!tm_pool[opt_level][i]) tm_pool[opt_level][i] = tm, tm = NULL;
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
    if (kernel_work(p, i) >= SMALL_KERNEL_WORK) continue;
    LLVMValueRef f = LLVMGetNamedFunction(m, p->kernels[i].name);
    if (!f) continue;
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, optnone, 0));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, noinline, 0));
  }
}

/* ------------------------------------------------------------- emission */
/* One compilation unit: the kernels of p marked in keep (all when keep is
 * NULL) in their own LLVM context and module. Runs on any thread: it never
 * touches the ft_ctx, a failure leaves its message in msg. */
typedef struct emit_part {
  const ft_program *p;
  int opt_level;
  ft_llvm_out kind;
  const char *entry;
  const unsigned char *keep; /* per kernel: the unit that compiles it (NULL: all here) */
  int part;                  /* which value of keep[] this unit compiles */
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
  LLVMTargetMachineRef tm = tm_acquire(opt_level);
  if (!tm) return part_fail(u, FT_ERR_UNSUPPORTED, "no LLVM target for", host_triple);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("frankentrace", c);
  LLVMSetTarget(m, host_triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
  char *err = NULL;
  double t0 = now_ms();
  if (ft_codegen_program(m, u->p, &err) || (u->entry && ft_codegen_entry(m, u->p, u->entry, &err))) {
    part_fail(u, u->entry ? FT_ERR_UNSUPPORTED : FT_ERR_INTERNAL, err ? err : "codegen failed", NULL);
    free(err);
    goto done;
  }
  if (u->keep) drop_other_kernels(m, u);
  char *lerr = NULL;
  if (ft_vm_link_into(m, &lerr)) {
    part_fail(u, FT_ERR_INTERNAL, lerr ? lerr : "linking the math library failed", NULL);
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
  tm_release(opt_level, tm);
  return u->st;
}

static void *emit_part_thread(void *arg) {
  emit_part_run(arg);
  return NULL;
}

ft_status ft_jit_emit_program(ft_ctx *ctx, const ft_program *p, int opt_level, ft_llvm_out kind,
                              const char *entry, void **out, size_t *len, double *opt_ms,
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

/* Splits the kernels over two units when the machine has a second core and
 * there is enough to split: greedily by a cost estimate (an optimized
 * kernel costs about 5x an optnone one to compile), largest first, kernel
 * order breaking ties. Returns the number of units (1 or 2). */
static int split_kernels(const ft_program *p, int opt_level, unsigned char *keep) {
  int n = p->n_kernels, load[2] = {0, 0}, big = 0;
  for (int i = 0; i < n; i++) big += opt_level >= 3 || kernel_work(p, i) >= SMALL_KERNEL_WORK;
  if (big < 2) return 1;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      bool is_big = opt_level >= 3 || kernel_work(p, i) >= SMALL_KERNEL_WORK;
      if (is_big != (pass == 0)) continue;
      int to = load[1] < load[0];
      keep[i] = (unsigned char)to;
      load[to] += is_big ? 5 : 1;
    }
  return 2;
}

/* The JIT's compilation: one or two units (two on their own threads when
 * threads > 1), the objects in one blob (see FT_OBJS_MAGIC). */
static ft_status emit_for_jit(ft_ctx *ctx, const ft_program *p, int opt_level, int threads, void **out,
                              size_t *len, double *opt_ms, double *cg_ms) {
  if (opt_level <= 0) opt_level = 2;
  if (opt_level > 3) opt_level = 3;
  unsigned char *keep = threads > 1 ? calloc((size_t)p->n_kernels + 1, 1) : NULL;
  if (!keep || split_kernels(p, opt_level, keep) < 2) {
    free(keep);
    return ft_jit_emit_program(ctx, p, opt_level, FT_LO_OBJ, NULL, out, len, opt_ms, cg_ms);
  }
  emit_part u[2];
  for (int k = 0; k < 2; k++)
    u[k] = (emit_part){.p = p, .opt_level = opt_level, .kind = FT_LO_OBJ, .keep = keep, .part = k};
  pthread_t th;
  bool spawned = pthread_create(&th, NULL, emit_part_thread, &u[1]) == 0;
  emit_part_run(&u[0]);
  if (spawned)
    pthread_join(th, NULL);
  else
    emit_part_run(&u[1]);
  free(keep);
  ft_status st = FT_OK;
  for (int k = 0; k < 2 && !st; k++)
    if (u[k].st) st = ft_set_error(ctx, u[k].st, "%s", u[k].msg);
  size_t n = st ? 0 : sizeof FT_OBJS_MAGIC + 8 + 16 + u[0].len + u[1].len;
  unsigned char *blob = n ? malloc(n) : NULL;
  if (!st && !blob) st = ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
  if (!st) {
    size_t at = 0;
    uint64_t cnt = 2;
    memcpy(blob, FT_OBJS_MAGIC, sizeof FT_OBJS_MAGIC), at += sizeof FT_OBJS_MAGIC;
    memcpy(blob + at, &cnt, 8), at += 8;
    for (int k = 0; k < 2; k++) {
      uint64_t l = u[k].len;
      memcpy(blob + at, &l, 8), at += 8;
      memcpy(blob + at, u[k].out, u[k].len), at += u[k].len;
    }
    *out = blob;
    *len = n;
    if (opt_ms) *opt_ms = u[0].opt_ms > u[1].opt_ms ? u[0].opt_ms : u[1].opt_ms;
    if (cg_ms) *cg_ms = u[0].cg_ms > u[1].cg_ms ? u[0].cg_ms : u[1].cg_ms;
  }
  free(u[0].out);
  free(u[1].out);
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
static void plan_params(const ft_jit_options *o, char *buf, size_t n) {
  snprintf(buf, n, "{\"interpret_all\":%s,\"no_fusion\":%s,\"no_optimize\":%s,\"opt_level\":%d}",
           o->interpret_all ? "true" : "false", o->no_fusion ? "true" : "false",
           o->no_optimize ? "true" : "false", o->opt_level);
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
  ft_jit_options o = {0};
  if (opts) o = *opts;
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
  char params[160];
  plan_params(o, params, sizeof params);
  char *text = plan_record_text(p, planned, o, po);
  if (!text) return ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory describing the plan");
  ft_ctx_event ev = {.kind = FT_CTX_EV_COMPILE, .jaxpr = input, .text = text, .len = strlen(text),
                     .op = "jit", .params = params};
  ft_status st = ft_ctx_notify(ctx, &ev);
  free(text);
  return st;
}

ft_fn *ft_jit(ft_ctx *ctx, const ft_jaxpr *j, const ft_jit_options *opts) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "jit: NULL jaxpr");
    return NULL;
  }
  ft_jit_options o = {0};
  if (opts) o = *opts;
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

ft_status ft_call_into(ft_fn *fn, int n_in, ft_array *const *in, int n_out, ft_array *const *out) {
  if (!fn) return FT_ERR_INVALID_ARG;
  ft_program *p = fn->prog;
  if (n_in != p->n_args || (n_in && !in) || n_out != p->n_out || (n_out && !out))
    return ft_set_error(fn->ctx, FT_ERR_INVALID_ARG,
                        "call: expected %d inputs and %d outputs, got %d and %d", p->n_args,
                        p->n_out, n_in, n_out);
  ft_status st = ft_prog_exec_run(fn->pe, fn->ctx, in, out, NULL);
  /* The ledger's call/jit record, as ft_eval's call/interp (same layout). */
  if (st == FT_OK && fn->ctx->on_event) {
    ft_ctx_event ev = {.kind = FT_CTX_EV_EVAL, .jaxpr = p->j, .n_in = n_in, .in = in,
                       .n_out = n_out, .out = out, .op = "jit"};
    st = ft_ctx_notify(fn->ctx, &ev);
  }
  return st;
}

ft_status ft_call(ft_fn *fn, int n_in, ft_array *const *in, int n_out, ft_array **out) {
  if (!fn || (n_out && !out)) return FT_ERR_INVALID_ARG;
  ft_program *p = fn->prog;
  if (n_out != p->n_out)
    return ft_set_error(fn->ctx, FT_ERR_INVALID_ARG, "call: the function has %d outputs, got room for %d",
                        p->n_out, n_out);
  for (int k = 0; k < n_out; k++) out[k] = NULL;
  for (int k = 0; k < n_out; k++)
    if (!(out[k] = ft_array_alloc(fn->ctx, &p->j->outvars[k]->aval))) goto fail;
  if (ft_call_into(fn, n_in, in, n_out, out) == FT_OK) return FT_OK;
fail:
  for (int k = 0; k < n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  return ft_ctx_status(fn->ctx);
}

ft_status ft_fn_stats(const ft_fn *fn, ft_jit_stats *out) {
  if (!fn || !out) return FT_ERR_INVALID_ARG;
  *out = fn->stats;
  return FT_OK;
}

char *ft_fn_plan(const ft_fn *fn) { return fn ? ft_program_describe(fn->prog) : NULL; }

void ft_jit_cache_clear(void) { ft_cache_mem_clear(); }
