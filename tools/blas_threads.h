/* tools/blas_threads.h: see blas_threads.c. */
#ifndef TOOLS_BLAS_THREADS_H
#define TOOLS_BLAS_THREADS_H
/* Re-executes the tool with OPENBLAS_NUM_THREADS=1 unless it is set so;
 * returns only when it already was (or exec is impossible). */
void tool_blas_single_threaded(char **argv);
#endif
