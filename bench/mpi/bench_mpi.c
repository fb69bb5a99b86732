/* bench/mpi/bench_mpi.c: the MPI transport of shard_map (issue 27,
 * docs/spmd.md), run by bench/mpi/run under mpirun.
 *   bench_mpi allreduce   psum of 1-64 MiB per rank inside a shard_map
 *                         (ft_eval end to end: split, entry check, the
 *                         gather-then-ordered-sum, output check) against
 *                         Open MPI's MPI_Allreduce on the same bytes, and
 *                         MPI_Allgather + an ordered sum written by hand
 *                         (the bit-identical scheme's own cost)
 *   bench_mpi train FILE  one SGD step of FILE (bench/mpi/step_big.jaxpr)
 * Rank 0 prints median and min of REPS timed calls after one warm-up. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace.h"

static int64_t nelem(const ft_array *a) {
  ft_aval av = ft_array_aval(a);
  return ft_aval_size(&av);
}

enum { REPS = 5 };

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void stats(double *t, int n, double *med, double *min) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  *med = t[n / 2];
  *min = t[0];
}

static int rank, nranks;

static void allreduce(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  if (ft_dist_init(ctx, NULL)) {
    fprintf(stderr, "%s\n", ft_ctx_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (!rank)
    printf("| MiB per rank | ranks | ft psum in shard_map, median (min) | MPI_Allgather + ordered sum "
           "| MPI_Allreduce | ft / MPI_Allreduce |\n|---:|---:|---:|---:|---:|---:|\n");
  for (int mib = 1; mib <= 64; mib *= 4) {
    int64_t n = (int64_t)mib << 18;
    char text[2048];
    snprintf(text, sizeof text,
             "{ lambda ; a:f32[%lld]. let\n    b:f32[%lld] = shard_map[\n      check_vma=False\n"
             "      in_specs=(P('i',),)\n      jaxpr={ lambda ; c:f32[%lld]. let\n"
             "          d:f32[%lld] = psum[axes=('i',) axis_index_groups=None] c\n        in (d,) }\n"
             "      mesh=Mesh('i': %d, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
             "      out_specs=(P(),)\n    ] a\n  in (b,) }",
             (long long)(n * nranks), (long long)n, (long long)n, (long long)n, nranks);
    ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "psum");
    if (!j) {
      fprintf(stderr, "%s\n", ft_ctx_error(ctx));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int64_t dims[1] = {n * nranks};
    ft_array *x = ft_array_new(ctx, FT_F32, 1, dims);
    float *xv = ft_array_data(x);
    for (int64_t i = 0; i < n * nranks; i++) xv[i] = (float)(i % 1000) * 0.001f;
    double tf[REPS], tg[REPS], ta[REPS];
    float *buf = malloc((size_t)n * sizeof *buf), *all = malloc((size_t)n * nranks * sizeof *all);
    for (int r = -1; r < REPS; r++) {
      ft_array *out = NULL;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (ft_eval(ctx, j, 1, (const ft_array *const *)&x, 1, &out)) {
        fprintf(stderr, "%s\n", ft_ctx_error(ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      double t1 = MPI_Wtime();
      ft_array_free(out);
      memcpy(buf, xv + (size_t)rank * (size_t)n, (size_t)n * sizeof *buf);
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = MPI_Wtime();
      MPI_Allgather(buf, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
      for (int q = 1; q < nranks; q++)
        for (int64_t i = 0; i < n; i++) all[i] += all[(size_t)q * (size_t)n + (size_t)i];
      double t3 = MPI_Wtime();
      MPI_Barrier(MPI_COMM_WORLD);
      double t4 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t5 = MPI_Wtime();
      if (r >= 0) tf[r] = t1 - t0, tg[r] = t3 - t2, ta[r] = t5 - t4;
    }
    double fm, fn, gm, gn, am, an;
    stats(tf, REPS, &fm, &fn);
    stats(tg, REPS, &gm, &gn);
    stats(ta, REPS, &am, &an);
    if (!rank)
      printf("| %d | %d | %.1f ms (%.1f) | %.1f ms (%.1f) | %.1f ms (%.1f) | %.2f |\n", mib, nranks, 1e3 * fm,
             1e3 * fn, 1e3 * gm, 1e3 * gn, 1e3 * am, 1e3 * an, fm / am);
    free(buf), free(all);
    ft_array_free(x);
    ft_jaxpr_free(j);
  }
  ft_ctx_free(ctx);
}

static void train(const char *path) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  if (nranks > 1 && ft_dist_init(ctx, NULL)) {
    fprintf(stderr, "%s\n", ft_ctx_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  FILE *f = fopen(path, "rb");
  if (!f) MPI_Abort(MPI_COMM_WORLD, 1);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  ft_jaxpr *j = ft_parse(ctx, text, len, path);
  if (!j) {
    fprintf(stderr, "%s\n", ft_ctx_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ft_array *in[5];
  for (int k = 0; k < 5; k++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, k, &av);
    in[k] = ft_array_new(ctx, FT_F32, av.rank, av.dims);
    float *p = ft_array_data(in[k]);
    for (int64_t i = 0; i < nelem(in[k]); i++) p[i] = (float)((i * 7919 + k) % 2001) * 1e-3f - 1.0f;
  }
  double t[REPS];
  for (int r = -1; r < REPS; r++) {
    ft_array *out[3] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (ft_eval(ctx, j, 5, (const ft_array *const *)in, 3, out)) {
      fprintf(stderr, "%s\n", ft_ctx_error(ctx));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (r >= 0) t[r] = MPI_Wtime() - t0;
    for (int k = 0; k < 3; k++) ft_array_free(out[k]);
  }
  double med, min;
  stats(t, REPS, &med, &min);
  if (!rank) printf("train step %s, %d rank(s): median %.2f ms (min %.2f)\n", path, nranks, 1e3 * med, 1e3 * min);
  for (int k = 0; k < 5; k++) ft_array_free(in[k]);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc > 1 && !strcmp(argv[1], "allreduce")) allreduce();
  else if (argc > 2 && !strcmp(argv[1], "train")) train(argv[2]);
  else if (!rank) fprintf(stderr, "usage: bench_mpi allreduce | train FILE\n");
  MPI_Finalize();
  return 0;
}
