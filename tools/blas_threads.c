/* tools/blas_threads.c: linked into ftc and ftledger. OpenBLAS starts one
 * worker thread per core in its library constructor, and each maps a
 * 128 MiB work buffer; when the address space is short (ulimit -v) those
 * threads retry for ever, at start and again at exit, and the process never
 * ends. FrankenTrace calls OpenBLAS single-threaded (the executor owns the
 * parallelism, and OpenBLAS's bits change with its thread count), so the
 * workers would only ever sleep. OpenBLAS reads OPENBLAS_NUM_THREADS once,
 * in that constructor, before main; setting it any later (even from
 * .preinit_array, whose environment libc's own start-up resets) is too
 * late. So a tool started without OPENBLAS_NUM_THREADS=1 sets it and
 * executes itself again, first thing in main: the new image's OpenBLAS
 * starts no thread. A program embedding the library should set it in its
 * environment the same way. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas_threads.h"

void tool_blas_single_threaded(char **argv) {
  const char *v = getenv("OPENBLAS_NUM_THREADS");
  if (v && !strcmp(v, "1")) return;
  if (setenv("OPENBLAS_NUM_THREADS", "1", 1)) return;
  execv("/proc/self/exe", argv);
  /* No /proc, or exec refused: run on, with OpenBLAS's idle threads. */
}
