/* tools/ftc_jit.c: `ftc compile`: a jaxpr compiled ahead of time — the
 * execution plan, LLVM IR, assembly, an object file, a shared library, or
 * the C header of the emitted entry function (src/lower, docs/jit.md); and
 * `ftc cache`, the compile cache on disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftc.h"

static int compile_usage(void) {
  printf("usage: ftc compile FILE --emit plan|llvm|asm|obj|so|h [-o OUT] [--name NAME] [-O N]\n"
         "                   [--no-fusion]\n\n"
         "Compiles a jaxpr for this machine's CPU and writes:\n"
         "  plan  the execution plan: fused loop kernels, GEMM calls, and the fallback\n"
         "        steps that still run the interpreter's rule (with the reason)\n"
         "  llvm  the optimized LLVM IR of the kernels      asm  host assembly\n"
         "  obj   an ELF object with the kernels and the entry function NAME (plus\n"
         "        NAME_error, NAME_release); link it with -lfrankentrace_rt (no LLVM)\n"
         "  so    a shared library with the same (linked with $CC or cc; against\n"
         "        libfrankentrace_rt in $FT_AOT_LIBDIR when that is set)\n"
         "  h     the C header declaring `int NAME(const void *const *in, void *const *out)`\n"
         "OUT defaults to standard output for plan, llvm, asm and h. NAME defaults to ft_main.\n"
         "-O N picks the LLVM pipeline default<ON> (1..3, default 2).\n");
  return 0;
}

int ftc_cmd_compile(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) return compile_usage();
  const char *file = NULL, *emit = NULL, *out = NULL, *name = NULL;
  ft_jit_options o = *ftc_jit_options();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--emit") || !strcmp(a, "-o") || !strcmp(a, "--name") || !strcmp(a, "-O")) {
      if (i + 1 >= argc) return ftc_usage("compile", "%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--emit")) emit = v;
      else if (!strcmp(a, "-o")) out = v;
      else if (!strcmp(a, "--name")) name = v;
      else if (strlen(v) != 1 || v[0] < '1' || v[0] > '3')
        return ftc_fail("compile", "-O takes 1, 2 or 3, not '%s'", v);
      else o.opt_level = v[0] - '0';
    } else if (!strcmp(a, "--no-fusion")) {
      o.no_fusion = true;
    } else if (a[0] == '-' && a[1]) {
      return ftc_usage("compile", "unknown option '%s'", a);
    } else if (file) {
      return ftc_usage("compile", "expected one FILE, got '%s' and '%s'", file, a);
    } else {
      file = a;
    }
  }
  if (!file) return ftc_usage("compile", "missing FILE");
  static const char *const kinds[] = {"plan", "llvm", "asm", "obj", "so", "h"};
  int kind = -1;
  for (int k = 0; k < 6; k++)
    if (emit && !strcmp(emit, kinds[k])) kind = k;
  if (kind < 0) return ftc_usage("compile", "--emit must be plan, llvm, asm, obj, so or h");
  if (!out && (kind == FT_EMIT_OBJ || kind == FT_EMIT_SO))
    return ftc_usage("compile", "--emit %s needs -o OUT", emit);
  size_t len;
  char *text = ftc_read_file(file, &len);
  if (!text) return ftc_fail("compile", "cannot read '%s'", file);
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = ft_parse(ctx, text, len, strcmp(file, "-") ? file : "<stdin>");
  free(text);
  int rc = 1;
  if (!j) {
    fprintf(stderr, "ftc compile: %s\n", ft_ctx_error(ctx));
    goto done;
  }
  char tmp[64] = "";
  const char *path = out;
  if (!path) {
    snprintf(tmp, sizeof tmp, "/tmp/ftc-compile-%ld.out", (long)getpid());
    path = tmp;
  }
  if (ft_jit_emit(ctx, j, (ft_emit_kind)kind, name, path, &o) != FT_OK) {
    ftc_fail("compile", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (!out) {
    char *s = ftc_read_file(path, &len);
    if (s) fwrite(s, 1, len, stdout);
    free(s);
    remove(path);
  }
  rc = 0;
done:
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

int ftc_cmd_cache(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc cache info|clear\n\n"
           "The JIT's compile cache on disk (ft_jit, ftc run --engine jit):\n"
           "  info   its directory, state, number of entries, size and cap\n"
           "  clear  remove every compiled object in it\n\n"
           "environment:\n"
           "  FT_CACHE_DIR    the directory (default $XDG_CACHE_HOME/frankentrace,\n"
           "                  else $HOME/.cache/frankentrace)\n"
           "  FT_CACHE=off    no disk cache (compiled code is kept in memory only)\n"
           "  FT_CACHE_MAX    the cap in bytes, K, M or G suffix (default 256M); the\n"
           "                  least recently used entries go first\n");
    return 0;
  }
  if (argc < 2) return ftc_usage("cache", "expected info or clear");
  if (argc > 2 || (strcmp(argv[1], "info") && strcmp(argv[1], "clear")))
    return ftc_usage("cache", "expected info or clear, got '%s'", argv[argc - 1]);
  ft_ctx *ctx = ftc_ctx_new();
  if (!ctx) return 1;
  ft_disk_cache_info info;
  int rc = 0;
  int64_t removed = 0;
  if (!strcmp(argv[1], "info")) {
    if (ft_jit_disk_cache_info(ctx, NULL, &info) != FT_OK) rc = ftc_fail("cache", "%s", ft_ctx_error(ctx));
    else if (!info.enabled) printf("disk cache: off (FT_CACHE=%s)\n", getenv("FT_CACHE"));
    else
      printf("directory: %s\nentries: %lld\nbytes: %lld\nmax bytes: %lld\n", info.dir,
             (long long)info.entries, (long long)info.bytes, (long long)info.max_bytes);
  } else if (ft_jit_disk_cache_info(ctx, NULL, &info) != FT_OK ||
             ft_jit_disk_cache_clear(ctx, NULL, &removed) != FT_OK) {
    rc = ftc_fail("cache", "%s", ft_ctx_error(ctx));
  } else if (!info.enabled) {
    printf("disk cache: off (FT_CACHE=%s): nothing to clear\n", getenv("FT_CACHE"));
  } else {
    printf("removed %lld entries from %s\n", (long long)removed, info.dir);
  }
  ft_ctx_free(ctx);
  return rc;
}
