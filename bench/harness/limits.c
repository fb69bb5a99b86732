/* bench/harness/limits.c: the machine's physical limits, measured in the
 * same run as the workloads so each workload can be quoted as a fraction of
 * them.
 *
 *   STREAM copy (c = a) and triad (a = b + s*c) on three 64 MiB arrays of
 *   doubles, with 1 and 2 OpenMP threads (first-touch initialisation by the
 *   same threads, bytes counted as STREAM counts them: no write-allocate).
 *
 *   OpenBLAS SGEMM and DGEMM, n = 1024, with 1 and 2 threads, checked
 *   against a long-double dot product on sampled entries, and the kernel
 *   OpenBLAS chose (openblas_get_corename()). The caller runs this program
 *   once with the environment as set and once with OPENBLAS_CORETYPE /
 *   OPENBLAS_L2_SIZE removed, and compares.
 *
 * Usage: limits [--reps K] [--mib M] [--no-stream] [--no-gemm] [--gemm-n N]
 * Prints one JSON object on stdout. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

/* Not in every cblas.h; OpenBLAS exports them. */
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int n);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xaligned(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes) != 0) {
    fprintf(stderr, "limits: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* One STREAM kernel timed reps times with nt threads; fills best/median GB/s. */
static void stream_run(int nt, int reps, size_t n, double *best, double *med, double *tbest,
                       double *tmed) {
  double *a = xaligned(n * sizeof(double)), *b = xaligned(n * sizeof(double)),
         *c = xaligned(n * sizeof(double));
  omp_set_num_threads(nt);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;
  double *tc = malloc(sizeof(double) * (size_t)reps), *tt = malloc(sizeof(double) * (size_t)reps);
  const double s = 3.0;
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) c[i] = a[i];
    double t1 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    double t2 = now();
    if (r >= 0) tc[r] = t1 - t0, tt[r] = t2 - t1;
  }
  /* a = 2 + 3*1 = 5 after the first triad and stays 5: a cheap check that
   * the loops ran. */
  if (a[n / 2] != 5.0 || c[n / 3] != 5.0) fprintf(stderr, "limits: STREAM check failed\n");
  double copy_bytes = 2.0 * (double)n * sizeof(double), triad_bytes = 3.0 * (double)n * sizeof(double);
  double mc = median(tc, reps), mt = median(tt, reps);
  best[0] = copy_bytes / tc[0] * 1e-9, med[0] = copy_bytes / mc * 1e-9;
  best[1] = triad_bytes / tt[0] * 1e-9, med[1] = triad_bytes / mt * 1e-9;
  tbest[0] = tc[0], tmed[0] = mc, tbest[1] = tt[0], tmed[1] = mt;
  free(tc), free(tt), free(a), free(b), free(c);
}

/* Largest relative error of C over 256 sampled entries against a long
 * double dot product (relative to sum |a||b|, the dot product's own scale). */
static double gemm_check(int dbl, int n, const void *A, const void *B, const void *C) {
  double worst = 0;
  uint64_t s = 88172645463325252ull;
  for (int k = 0; k < 256; k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    int i = (int)(s % (uint64_t)n), j = (int)((s >> 20) % (uint64_t)n);
    long double acc = 0, mag = 0;
    for (int p = 0; p < n; p++) {
      long double x = dbl ? ((const double *)A)[(size_t)i * n + p] : ((const float *)A)[(size_t)i * n + p];
      long double y = dbl ? ((const double *)B)[(size_t)p * n + j] : ((const float *)B)[(size_t)p * n + j];
      acc += x * y, mag += fabsl(x * y);
    }
    long double got = dbl ? ((const double *)C)[(size_t)i * n + j] : ((const float *)C)[(size_t)i * n + j];
    double e = (double)(fabsl(got - acc) / (mag > 0 ? mag : 1));
    if (e > worst) worst = e;
  }
  return worst;
}

static void gemm_run(int dbl, int nt, int reps, int n, FILE *out) {
  size_t es = dbl ? sizeof(double) : sizeof(float), nn = (size_t)n * (size_t)n;
  void *A = xaligned(nn * es), *B = xaligned(nn * es), *C = xaligned(nn * es);
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < 2 * nn; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    void *dst = i < nn ? A : B;
    size_t k = i < nn ? i : i - nn;
    if (dbl) ((double *)dst)[k] = v;
    else ((float *)dst)[k] = (float)v;
  }
  openblas_set_num_threads(nt);
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int r = -1; r < reps; r++) {
    double t0 = now();
    if (dbl)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    double dt = now() - t0;
    if (r >= 0) t[r] = dt;
  }
  double err = gemm_check(dbl, n, A, B, C);
  double flops = 2.0 * n * (double)n * n, med = median(t, reps);
  /* Correct means within a few ulps of the dot product's scale. */
  double tol = dbl ? 1e-13 : 1e-5;
  fprintf(out,
          "{\"routine\": \"%s\", \"n\": %d, \"threads\": %d, \"reps\": %d, \"gflops_best\": %.2f, "
          "\"gflops_median\": %.2f, \"seconds_median\": %.6f, \"max_rel_err\": %.3e, \"correct\": %s}",
          dbl ? "dgemm" : "sgemm", n, nt, reps, flops / t[0] * 1e-9, flops / med * 1e-9, med, err,
          err < tol ? "true" : "false");
  free(t), free(A), free(B), free(C);
}

int main(int argc, char **argv) {
  int reps = 10, do_stream = 1, do_gemm = 1, gn = 1024;
  double mib = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = atof(argv[++i]);
    else if (!strcmp(argv[i], "--gemm-n") && i + 1 < argc) gn = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-stream")) do_stream = 0;
    else if (!strcmp(argv[i], "--no-gemm")) do_gemm = 0;
    else {
      fprintf(stderr, "usage: limits [--reps K] [--mib M] [--gemm-n N] [--no-stream] [--no-gemm]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
  printf("{\"env\": {\"OPENBLAS_CORETYPE\": %s%s%s, \"OPENBLAS_L2_SIZE\": %s%s%s},\n", ct ? "\"" : "",
         ct ? ct : "null", ct ? "\"" : "", l2 ? "\"" : "", l2 ? l2 : "null", l2 ? "\"" : "");
  printf(" \"openblas_corename\": \"%s\", \"openblas_config\": \"%s\",\n", openblas_get_corename(),
         openblas_get_config());
  printf(" \"stream\": [");
  if (do_stream) {
    size_t n = (size_t)(mib * 1024 * 1024) / sizeof(double);
    for (int nt = 1; nt <= 2; nt++) {
      double best[2], med[2], tb[2], tm[2];
      stream_run(nt, reps, n, best, med, tb, tm);
      const char *names[2] = {"copy", "triad"};
      for (int k = 0; k < 2; k++)
        printf("%s{\"kernel\": \"%s\", \"threads\": %d, \"array_mib\": %.0f, \"reps\": %d, "
               "\"gbs_best\": %.2f, \"gbs_median\": %.2f}",
               nt == 1 && k == 0 ? "" : ",\n   ", names[k], nt, mib, reps, best[k], med[k]);
    }
  }
  printf("],\n \"gemm\": [");
  if (do_gemm) {
    int first = 1;
    for (int dbl = 0; dbl <= 1; dbl++)
      for (int nt = 1; nt <= 2; nt++) {
        printf("%s", first ? "" : ",\n   ");
        first = 0;
        gemm_run(dbl, nt, reps, gn, stdout);
      }
  }
  printf("]}\n");
  return 0;
}
