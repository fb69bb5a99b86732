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

/* One target machine per opt level is kept for the process: creating one
 * (parsing the AVX-512 feature string, building the subtarget) costs
 * milliseconds per compilation. A target machine is not safe to use from
 * two threads at once, so a compilation takes it out of the pool and puts
 * it back; a concurrent compilation makes its own. */
static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMTargetMachineRef tm_pool[4];

static LLVMTargetMachineRef tm_acquire(int opt_level) {
  pthread_mutex_lock(&tm_mu);
  LLVMTargetMachineRef tm = tm_pool[opt_level];
  tm_pool[opt_level] = NULL;
  pthread_mutex_unlock(&tm_mu);
  return tm ? tm : new_tm(opt_level);
}

static void tm_release(int opt_level, LLVMTargetMachineRef tm) {
  pthread_mutex_lock(&tm_mu);
  if (!tm_pool[opt_level]) tm_pool[opt_level] = tm, tm = NULL;
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
ft_status ft_jit_emit_program(ft_ctx *ctx, const ft_program *p, int opt_level, ft_llvm_out kind,
                              const char *entry, void **out, size_t *len, double *opt_ms,
                              double *cg_ms) {
  *out = NULL;
  *len = 0;
  if (opt_level <= 0) opt_level = 2;
  if (opt_level > 3) opt_level = 3;
  LLVMTargetMachineRef tm = tm_acquire(opt_level);
  if (!tm) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "jit: no LLVM target for %s", host_triple);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("frankentrace", c);
  LLVMSetTarget(m, host_triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
  ft_status st = FT_OK;
  char *err = NULL;
  double t0 = now_ms();
  if (ft_codegen_program(m, p, &err) || (entry && ft_codegen_entry(m, p, entry, &err))) {
    st = ft_set_error(ctx, entry ? FT_ERR_UNSUPPORTED : FT_ERR_INTERNAL, "jit: %s", err ? err : "codegen failed");
    free(err);
    goto done;
  }
  char *lerr = NULL;
  if (ft_vm_link_into(m, &lerr)) {
    st = ft_set_error(ctx, FT_ERR_INTERNAL, "jit: %s", lerr ? lerr : "linking the math library failed");
    LLVMDisposeMessage(lerr);
    goto done;
  }
  mark_small_kernels(m, p, opt_level);
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef perr = LLVMRunPasses(m, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (perr) {
    char *msg = LLVMGetErrorMessage(perr);
    st = ft_set_error(ctx, FT_ERR_INTERNAL, "jit: passes: %s", msg);
    LLVMDisposeErrorMessage(msg);
    goto done;
  }
  double t1 = now_ms();
  if (opt_ms) *opt_ms = t1 - t0;
  if (kind == FT_LO_LLVM) {
    char *s = LLVMPrintModuleToString(m);
    *len = strlen(s);
    *out = malloc(*len + 1);
    if (*out) memcpy(*out, s, *len + 1);
    LLVMDisposeMessage(s);
  } else {
    LLVMMemoryBufferRef mb = NULL;
    char *eerr = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, kind == FT_LO_ASM ? LLVMAssemblyFile : LLVMObjectFile,
                                            &eerr, &mb)) {
      st = ft_set_error(ctx, FT_ERR_INTERNAL, "jit: code generation: %s", eerr ? eerr : "?");
      LLVMDisposeMessage(eerr);
      goto done;
    }
    *len = LLVMGetBufferSize(mb);
    *out = malloc(*len + 1);
    if (*out) {
      memcpy(*out, LLVMGetBufferStart(mb), *len);
      ((char *)*out)[*len] = 0;
    }
    LLVMDisposeMemoryBuffer(mb);
  }
  if (!*out) st = ft_set_error(ctx, FT_ERR_NOMEM, "jit: out of memory");
  if (cg_ms) *cg_ms = now_ms() - t1;
done:
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  tm_release(opt_level, tm);
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
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "ft_jit_object");
  if ((e = LLVMOrcLLJITAddObjectFile(c->jit, dylib, mb))) {
    llvm_err(ctx, e, "adding the object");
    goto fail;
  }
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
  ft_status st = ft_jit_emit_program(ctx, p, o->opt_level, FT_LO_OBJ, NULL, &obj, &len,
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
