/* tests/mpi/test_mpi.c: shard_map over MPI ranks (issue 27, docs/spmd.md),
 * run by tests/mpi/run-mpi under mpirun with 2 and 4 ranks. On every rank:
 *  - every case of fixtures/spmd/ (one-axis and 2x2 meshes, collectives
 *    in control flow, pmap; every mesh has 4 devices, so 2 and 4 ranks
 *    divide it) evaluates over the communicator to the very bits of the
 *    one-process run (the simulated axis) and of JAX; for the losses
 *    (flag grad) also JAX's grad printout, ft_value_and_grad and
 *    ft_hessian (against the one-process run);
 *  - 12 SGD steps of fixtures/spmd_train/step.jaxpr (a data-parallel MLP:
 *    per-shard gradients, psum) on data whose sums are inexact give the
 *    one-process weights bit for bit; the native MPI_Allreduce opt-out
 *    runs and stays within 1e-5 of them;
 *  - ranks running different programs fail with "the ranks disagree" on
 *    every rank; a cond holding a psum whose branch differs between ranks
 *    fails on every rank (the exchanged index); a mesh axis that the rank count does not divide fails;
 *    in hardened mode a collective that another rank never joins fails
 *    after the timeout instead of hanging.
 * With --die, rank 1 exits inside the run (run-mpi checks that the job
 * fails instead of hanging).
 * Prints "test_mpi: rank R of P: N checks passed" and exits 0, or names the
 * failed check and aborts every rank (exit 1). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frankentrace.h"

static int64_t nelem(const ft_array *a) {
  ft_aval av = ft_array_aval(a);
  return ft_aval_size(&av);
}

static int rank, nranks, checks;

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    checks++;                                                                     \
    if (!(cond)) {                                                                \
      fprintf(stderr, "test_mpi: rank %d: %s:%d: ", rank, __FILE__, __LINE__);    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fputc('\n', stderr);                                                        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                               \
    }                                                                             \
  } while (0)

static const char *fixtures;
/* A context on the communicator with 4 executor threads, for the JIT's
 * compiled shard_maps (strict: no interpreter step). */
static ft_ctx *jdist;

/* j compiled strictly on jdist and called: its outputs. */
static void jit_call(const ft_jaxpr *j, int nin, ft_array **in, int nout, ft_array **out, const char *name) {
  ft_fn *fn = ft_jit(jdist, j, NULL);
  CHECK(fn != NULL, "%s: strict jit: %s", name, ft_ctx_error(jdist));
  CHECK(ft_call(fn, nin, (const ft_array *const *)in, nout, out) == FT_OK, "%s: compiled over MPI: %s", name,
        ft_ctx_error(jdist));
  ft_fn_free(fn);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  CHECK(s && fread(s, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
  s[n] = 0;
  fclose(f);
  return s;
}

static ft_jaxpr *load(ft_ctx *ctx, const char *dir, const char *name) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s/%s.jaxpr", fixtures, dir, name);
  char *text = slurp(p);
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), name);
  CHECK(j != NULL, "%s: %s", name, ft_ctx_error(ctx));
  free(text);
  return j;
}

static ft_array *npy(ft_ctx *ctx, const char *name, const char *what) {
  char p[2048];
  snprintf(p, sizeof p, "%s/spmd/%s.%s.npy", fixtures, name, what);
  ft_array *a = ft_npy_read(ctx, p);
  CHECK(a != NULL, "%s: %s", p, ft_ctx_error(ctx));
  return a;
}

/* One fixture: over the communicator == one process == JAX, bit for bit. */
static void check_case(ft_ctx *one, ft_ctx *dist, const char *name) {
  ft_jaxpr *j = load(one, "spmd", name);
  ft_array *in = npy(one, name, "in0"), *want = npy(one, name, "out0"), *ref = NULL, *got = NULL;
  CHECK(ft_eval(one, j, 1, (const ft_array *const *)&in, 1, &ref) == FT_OK, "%s: %s", name, ft_ctx_error(one));
  CHECK(ft_eval(dist, j, 1, (const ft_array *const *)&in, 1, &got) == FT_OK, "%s over MPI: %s", name, ft_ctx_error(dist));
  CHECK(ft_array_equal_bits(got, ref), "%s: the MPI result differs from the one-process result", name);
  CHECK(ft_array_equal_bits(got, want), "%s: the MPI result differs from JAX's", name);
  ft_array_free(got);
  got = NULL;
  jit_call(j, 1, &in, 1, &got, name);
  CHECK(ft_array_equal_bits(got, ref), "%s: the compiled MPI result differs from the one-process result", name);
  ft_array_free(in), ft_array_free(want), ft_array_free(ref), ft_array_free(got);
  ft_jaxpr_free(j);
}

static void same(ft_ctx *one, ft_ctx *dist, const ft_jaxpr *j, int nin, ft_array **in, int nout, ft_array **ref,
                 ft_array **got, const char *name, const char *what) {
  CHECK(ft_eval(one, j, nin, (const ft_array *const *)in, nout, ref) == FT_OK, "%s %s: %s", name, what, ft_ctx_error(one));
  CHECK(ft_eval(dist, j, nin, (const ft_array *const *)in, nout, got) == FT_OK, "%s %s over MPI: %s", name, what, ft_ctx_error(dist));
  for (int k = 0; k < nout; k++)
    CHECK(ft_array_equal_bits(got[k], ref[k]), "%s %s: output %d over MPI differs from the one-process run", name,
          what, k);
}

/* A loss of (x, w): its value, JAX's grad printout, FrankenTrace's
 * value_and_grad and hessian over the communicator == one process (== JAX
 * but for the hessian, whose zeros' signs may differ from JAX's). */
static void check_grad(ft_ctx *one, ft_ctx *dist, const char *name) {
  ft_jaxpr *j = load(one, "spmd", name);
  char gname[256];
  snprintf(gname, sizeof gname, "%s.grad", name);
  ft_jaxpr *jg = load(one, "spmd", gname);
  ft_array *in[2] = {npy(one, name, "in0"), npy(one, name, "in1")};
  ft_array *want = npy(one, name, "out0"), *gwant = npy(one, name, "grad0");
  ft_array *ref[2] = {0}, *got[2] = {0};
  same(one, dist, j, 2, in, 1, ref, got, name, "value");
  CHECK(ft_array_equal_bits(got[0], want), "%s: the MPI value differs from JAX's", name);
  ft_array_free(ref[0]), ft_array_free(got[0]);
  same(one, dist, jg, 2, in, 1, ref, got, name, "JAX's grad");
  CHECK(ft_array_equal_bits(got[0], gwant), "%s: JAX's grad over MPI differs from JAX's", name);
  ft_array_free(ref[0]), ft_array_free(got[0]);
  int argnum = 0;
  ft_jaxpr *g = ft_value_and_grad(one, j, 1, &argnum, false);
  CHECK(g != NULL, "%s: value_and_grad: %s", name, ft_ctx_error(one));
  same(one, dist, g, 2, in, 2, ref, got, name, "value_and_grad");
  CHECK(ft_array_equal_bits(got[0], want) && ft_array_equal_bits(got[1], gwant),
        "%s: value_and_grad over MPI differs from JAX's", name);
  for (int k = 0; k < 2; k++) ft_array_free(got[k]), got[k] = NULL;
  /* compiled (a few losses: compiling all of them would double the test's time) */
  bool compiled = !strcmp(name, "g_dp_linear") || !strcmp(name, "g_m2") || !strcmp(name, "g_scan") ||
                  !strcmp(name, "g_ppermute_partial") || !strcmp(name, "g_all_to_all") ||
                  !strcmp(name, "g_all_to_all_m2_s1c0");
  if (compiled) {
    jit_call(g, 2, in, 2, got, name);
    CHECK(ft_array_equal_bits(got[0], ref[0]) && ft_array_equal_bits(got[1], ref[1]),
          "%s: compiled value_and_grad over MPI differs from the one-process run", name);
  }
  for (int k = 0; k < 2; k++) ft_array_free(ref[k]), ft_array_free(got[k]);
  ft_jaxpr *h = ft_hessian(one, j, 0);
  CHECK(h != NULL, "%s: hessian: %s", name, ft_ctx_error(one));
  same(one, dist, h, 2, in, 1, ref, got, name, "hessian");
  ft_array_free(ref[0]), ft_array_free(got[0]);
  for (int k = 0; k < 2; k++) ft_array_free(in[k]);
  ft_array_free(want), ft_array_free(gwant);
  ft_jaxpr_free(j), ft_jaxpr_free(jg), ft_jaxpr_free(g), ft_jaxpr_free(h);
}

/* Deterministic, inexact data: a simple LCG in [-1, 1). */
static float lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((double)(*s >> 8) / (double)(1u << 23)) - 1.0f;
}

enum { STEPS = 12, NP = 3 };

/* STEPS of SGD with step.jaxpr; params[3] are the result. */
static void train(ft_ctx *ctx, const ft_jaxpr *j, ft_array **params, ft_fn *fn) {
  int64_t shapes[5][2] = {{4, 8}, {8, 0}, {8, 2}, {16, 4}, {16, 2}};
  uint32_t seed = 12345;
  for (int k = 0; k < NP; k++) {
    params[k] = ft_array_new(ctx, FT_F32, shapes[k][1] ? 2 : 1, shapes[k]);
    float *p = ft_array_data_mut(params[k]);
    for (int64_t i = 0; i < nelem(params[k]); i++) p[i] = 0.5f * lcg(&seed);
  }
  for (int s = 0; s < STEPS; s++) {
    ft_array *in[5] = {params[0], params[1], params[2], NULL, NULL};
    for (int k = 3; k < 5; k++) {
      in[k] = ft_array_new(ctx, FT_F32, 2, shapes[k]);
      float *p = ft_array_data_mut(in[k]);
      for (int64_t i = 0; i < nelem(in[k]); i++) p[i] = lcg(&seed);
    }
    ft_array *out[NP] = {0};
    ft_status st = fn ? ft_call(fn, 5, (const ft_array *const *)in, NP, out)
                      : ft_eval(ctx, j, 5, (const ft_array *const *)in, NP, out);
    CHECK(st == FT_OK, "train step %d: %s", s, ft_ctx_error(ctx));
    for (int k = 0; k < NP; k++) ft_array_free(params[k]), params[k] = out[k];
    ft_array_free(in[3]), ft_array_free(in[4]);
  }
}

static void check_training(ft_ctx *one, ft_ctx *dist) {
  ft_jaxpr *j = load(one, "spmd_train", "step");
  ft_array *ref[NP], *got[NP], *nat[NP];
  train(one, j, ref, NULL);
  train(dist, j, got, NULL);
  for (int k = 0; k < NP; k++)
    CHECK(ft_array_equal_bits(got[k], ref[k]), "training: parameter %d over %d ranks differs from the "
          "one-process run", k, nranks);
  ft_fn *fn = ft_jit(jdist, j, NULL); /* compiled, 4 executor threads */
  CHECK(fn != NULL, "training: strict jit: %s", ft_ctx_error(jdist));
  for (int k = 0; k < NP; k++) ft_array_free(got[k]);
  train(jdist, j, got, fn);
  ft_fn_free(fn);
  for (int k = 0; k < NP; k++)
    CHECK(ft_array_equal_bits(got[k], ref[k]), "training: compiled, parameter %d over %d ranks differs from the "
          "one-process run", k, nranks);
  /* The weights moved (the check above compares something). */
  CHECK(((const float *)ft_array_data(ref[0]))[0] != 0.0f, "training: weights are zero");
  /* The opt-out: MPI_Allreduce, close but not promised bit-identical. */
  ft_dist_options o = {.size = sizeof(ft_dist_options), .native_allreduce = true};
  CHECK(ft_dist_set_options(dist, &o) == FT_OK, "%s", ft_ctx_error(dist));
  train(dist, j, nat, NULL);
  for (int k = 0; k < NP; k++) {
    const float *a = ft_array_data(nat[k]), *b = ft_array_data(ref[k]);
    for (int64_t i = 0; i < nelem(ref[k]); i++)
      CHECK(fabsf(a[i] - b[i]) <= 1e-5f, "native allreduce: parameter %d[%lld] = %.9g, exact %.9g", k,
            (long long)i, a[i], b[i]);
  }
  o.native_allreduce = false;
  CHECK(ft_dist_set_options(dist, &o) == FT_OK, "%s", ft_ctx_error(dist));
  for (int k = 0; k < NP; k++) ft_array_free(ref[k]), ft_array_free(got[k]), ft_array_free(nat[k]);
  ft_jaxpr_free(j);
}

/* Rank 1 runs pmax where the others run psum: every rank fails, naming
 * the disagreement; the communicator stays usable (the next call works). */
static void check_mismatch(ft_ctx *one, ft_ctx *dist) {
  ft_jaxpr *j = load(one, "spmd", rank == 1 ? "pmax" : "psum");
  ft_array *in = npy(one, "psum", "in0"), *got = NULL;
  CHECK(ft_eval(dist, j, 1, (const ft_array *const *)&in, 1, &got) != FT_OK, "mismatched programs ran");
  CHECK(strstr(ft_ctx_error(dist), "the ranks disagree") != NULL, "mismatch message: %s", ft_ctx_error(dist));
  ft_jaxpr_free(j);
  /* ft_dist_check_program: the same check for a whole program. */
  j = load(one, "spmd", rank == 1 ? "pmax" : "psum");
  CHECK(ft_dist_check_program(dist, j) != FT_OK && strstr(ft_ctx_error(dist), "program"),
        "program check: %s", ft_ctx_error(dist));
  ft_jaxpr_free(j);
  j = load(one, "spmd", "psum");
  CHECK(ft_dist_check_program(dist, j) == FT_OK, "program check of one program: %s", ft_ctx_error(dist));
  CHECK(ft_eval(dist, j, 1, (const ft_array *const *)&in, 1, &got) == FT_OK, "after a mismatch: %s", ft_ctx_error(dist));
  ft_array_free(got), ft_array_free(in);
  ft_jaxpr_free(j);
}

/* check_vma=False lets a body claim P() for a value that differs by index:
 * over MPI it fails as in one process (within a rank, or across ranks by
 * hash), on every rank. */
static void check_unreplicated(ft_ctx *one, ft_ctx *dist) {
  const char *text = "{ lambda ; a:f32[8,3]. let\n    b:f32[2,3] = shard_map[\n      check_vma=False\n"
                     "      in_specs=(P('i',),)\n      jaxpr={ lambda ; c:f32[2,3]. let\n"
                     "          d:f32[2,3] = neg c\n        in (d,) }\n"
                     "      mesh=Mesh('i': 4, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
                     "      out_specs=(P(),)\n    ] a\n  in (b,) }";
  ft_jaxpr *j = ft_parse(one, text, strlen(text), "unreplicated");
  CHECK(j != NULL, "%s", ft_ctx_error(one));
  ft_array *in = npy(one, "psum", "in0"), *got = NULL;
  CHECK(ft_eval(one, j, 1, (const ft_array *const *)&in, 1, &got) != FT_OK && strstr(ft_ctx_error(one), "holds a different value"),
        "one process: %s", ft_ctx_error(one));
  CHECK(ft_eval(dist, j, 1, (const ft_array *const *)&in, 1, &got) != FT_OK, "an unreplicated P() output passed over MPI");
  const char *want = nranks == 4 ? "rank 1's indices hold a different value than rank 0's"
                    : rank == 0 ? "index 1 holds a different value than index 0"
                                : "index 3 holds a different value than index 2";
  CHECK(strstr(ft_ctx_error(dist), want), "over MPI: %s", ft_ctx_error(dist));
  ft_array_free(in);
  ft_jaxpr_free(j);
}

/* A cond holding a psum whose branch index differs between devices of
 * different ranks (axis_index < 2: on 2 or 4 ranks each rank's own devices
 * agree): the exchanged index makes every rank fail with the one-process
 * message instead of taking different branches; the communicator stays
 * usable. */
static void check_divergent_cond(ft_ctx *one, ft_ctx *dist) {
  const char *t = "{ lambda ; a:f32[4]. let\n    b:f32[4] = shard_map[\n      check_vma=False\n"
                  "      in_specs=(P('i',),)\n      jaxpr={ lambda ; c:f32[1]. let\n"
                  "          d:i32[] = axis_index[axis_name=i] \n          e:bool[] = lt d 2:i32[]\n"
                  "          g:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
                  "          h:f32[1] = cond[\n            branches=(\n"
                  "              { lambda ; i:f32[1]. let\n"
                  "                  m:f32[1] = psum[axes=('i',) axis_index_groups=None] i\n"
                  "                in (m,) }\n              { lambda ; n:f32[1]. let o:f32[1] = neg n in (o,) }\n"
                  "            )\n          ] g c\n        in (h,) }\n"
                  "      mesh=Mesh('i': 4, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
                  "      out_specs=(P('i',),)\n    ] a\n  in (b,) }\n";
  ft_jaxpr *j = ft_parse(one, t, strlen(t), "cond");
  CHECK(j != NULL, "%s", ft_ctx_error(one));
  float v[4] = {1, 2, 3, 4};
  int64_t d = 4;
  ft_array *a = ft_array_from_data(one, FT_F32, 1, &d, v), *o = NULL;
  const char *want = "cond in a shard_map body: index 2 takes another path than index 0";
  CHECK(ft_eval(one, j, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_UNSUPPORTED && strstr(ft_ctx_error(one), want), "one process: %s",
        ft_ctx_error(one));
  CHECK(ft_eval(dist, j, 1, (const ft_array *const *)&a, 1, &o) == FT_ERR_UNSUPPORTED && strstr(ft_ctx_error(dist), want), "over MPI: %s",
        ft_ctx_error(dist));
  CHECK(o == NULL, "an output after a failure");
  /* compiled: the ranks whose devices take the psum branch meet the others
   * at the outputs' exchange instead: every rank fails, none hangs */
  ft_fn *fn = ft_jit(jdist, j, NULL);
  CHECK(fn != NULL, "%s", ft_ctx_error(jdist));
  CHECK(ft_call(fn, 1, (const ft_array *const *)&a, 1, &o) != FT_OK && strstr(ft_ctx_error(jdist), "the ranks disagree"),
        "compiled over MPI: %s", ft_ctx_error(jdist));
  CHECK(o == NULL, "an output after a failure");
  ft_fn_free(fn);
  ft_array_free(a);
  ft_jaxpr_free(j);
  check_case(one, dist, "cf_cond_psum"); /* the next call works */
}

/* Two independent shard_maps (different bodies) compiled and run with 4
 * executor threads: the executor chains them in program order, so every
 * rank enters them in the same order (else the entry check would fail as
 * "the ranks disagree"), 20 times; the results are the one-process run's. */
static void check_order(ft_ctx *one) {
  const char *t =
      "{ lambda ; a:f32[8] b:f32[8]. let\n"
      "    c:f32[2] = shard_map[\n      check_vma=True\n      in_specs=(P('i',),)\n"
      "      jaxpr={ lambda ; d:f32[2]{V:i}. let\n"
      "          e:f32[2] = psum_invariant[axes=('i',)] d\n        in (e,) }\n"
      "      mesh=Mesh('i': 4, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
      "      out_specs=(P(),)\n    ] a\n"
      "    f:f32[8] = shard_map[\n      check_vma=False\n      in_specs=(P('i',),)\n"
      "      jaxpr={ lambda ; g:f32[2]. let\n"
      "          h:f32[2] = ppermute[axis_name=i perm=((0, 1), (1, 2), (2, 3), (3, 0))] g\n"
      "          k:f32[2] = pmax[axes=('i',) axis_index_groups=None] h\n"
      "          l:f32[2] = mul h k\n        in (l,) }\n"
      "      mesh=Mesh('i': 4, axis_types=(Auto,))\n      newly_manual_axes=frozenset({'i'})\n"
      "      out_specs=(P('i',),)\n    ] b\n"
      "  in (c, f) }\n";
  ft_jaxpr *j = ft_parse(one, t, strlen(t), "two");
  CHECK(j != NULL, "%s", ft_ctx_error(one));
  uint32_t seed = 7;
  int64_t d = 8;
  ft_array *in[2] = {ft_array_new(one, FT_F32, 1, &d), ft_array_new(one, FT_F32, 1, &d)};
  for (int k = 0; k < 2; k++) {
    float *p = ft_array_data_mut(in[k]);
    for (int i = 0; i < 8; i++) p[i] = lcg(&seed);
  }
  ft_array *ref[2] = {0};
  CHECK(ft_eval(one, j, 2, (const ft_array *const *)in, 2, ref) == FT_OK, "%s", ft_ctx_error(one));
  ft_fn *fn = ft_jit(jdist, j, NULL);
  CHECK(fn != NULL, "two shard_maps: strict jit: %s", ft_ctx_error(jdist));
  for (int rep = 0; rep < 20; rep++) {
    ft_array *got[2] = {0};
    CHECK(ft_call(fn, 2, (const ft_array *const *)in, 2, got) == FT_OK, "two shard_maps, run %d: %s", rep,
          ft_ctx_error(jdist));
    for (int k = 0; k < 2; k++) {
      CHECK(ft_array_equal_bits(got[k], ref[k]), "two shard_maps, run %d: output %d differs", rep, k);
      ft_array_free(got[k]);
    }
  }
  ft_fn_free(fn);
  for (int k = 0; k < 2; k++) ft_array_free(in[k]), ft_array_free(ref[k]);
  ft_jaxpr_free(j);
}

/* With 4 ranks: a communicator of ranks 0-2 cannot split the 4-index axis. */
static void check_indivisible(ft_ctx *one) {
  if (nranks != 4) return;
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 3, rank, &sub);
  ft_ctx *c = ft_ctx_new(NULL);
  CHECK(ft_dist_init(c, &sub) == FT_OK, "%s", ft_ctx_error(c));
  ft_jaxpr *j = load(one, "spmd", "psum");
  ft_array *in = npy(one, "psum", "in0"), *got = NULL;
  ft_status st = ft_eval(c, j, 1, (const ft_array *const *)&in, 1, &got);
  if (rank < 3)
    CHECK(st != FT_OK && strstr(ft_ctx_error(c), "do not split over 3 MPI ranks"), "indivisible: %s",
          ft_ctx_error(c));
  else
    CHECK(st == FT_OK, "one rank runs every index: %s", ft_ctx_error(c));
  ft_array_free(got), ft_array_free(in);
  ft_jaxpr_free(j);
  ft_ctx_free(c);
  MPI_Comm_free(&sub);
}

/* Hardened mode: rank 0 enters a psum on a communicator the other ranks
 * never use; it fails after the timeout, naming it. */
static void check_timeout(ft_ctx *one) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  ft_ctx_options co = {.size = sizeof(ft_ctx_options)};
  co.mode = FT_MODE_HARDENED;
  ft_ctx *c = ft_ctx_new(&co);
  CHECK(ft_dist_init(c, &dup) == FT_OK, "%s", ft_ctx_error(c)); /* collective (MPI_Comm_dup) */
  ft_dist_options o = {.size = sizeof(ft_dist_options), .timeout_seconds = 0.3};
  CHECK(ft_dist_set_options(c, &o) == FT_OK, "%s", ft_ctx_error(c));
  if (rank == 0) {
    ft_jaxpr *j = load(one, "spmd", "psum");
    ft_array *in = npy(one, "psum", "in0"), *got = NULL;
    CHECK(ft_eval(c, j, 1, (const ft_array *const *)&in, 1, &got) != FT_OK, "a collective without the other ranks finished");
    CHECK(strstr(ft_ctx_error(c), "timed out after 0.3 s") != NULL, "timeout message: %s", ft_ctx_error(c));
    CHECK(ft_eval(c, j, 1, (const ft_array *const *)&in, 1, &got) != FT_OK && strstr(ft_ctx_error(c), "unusable"),
          "after a timeout: %s", ft_ctx_error(c));
    ft_array_free(in);
    ft_jaxpr_free(j);
  }
  ft_ctx_free(c);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  fixtures = argc > 1 ? argv[1] : getenv("FT_FIXTURES");
  if (argc > 2 && !strcmp(argv[2], "--die")) { /* run-mpi: rank 1 dies inside a run */
    ft_ctx_options co = {.size = sizeof(ft_ctx_options)};
    co.mode = FT_MODE_HARDENED;
    ft_ctx *c = ft_ctx_new(&co);
    CHECK(ft_dist_init(c, NULL) == FT_OK, "%s", ft_ctx_error(c));
    if (rank == 1) _exit(3);
    ft_jaxpr *j = load(c, "spmd", "psum");
    ft_array *in = npy(c, "psum", "in0"), *got = NULL;
    ft_status st = ft_eval(c, j, 1, (const ft_array *const *)&in, 1, &got);
    fprintf(stderr, "test_mpi: rank %d: %s\n", rank, st ? ft_ctx_error(c) : "finished without rank 1");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK(fixtures != NULL, "usage: test_mpi FIXTURES_DIR");
  ft_ctx *one = ft_ctx_new(NULL), *dist = ft_ctx_new(NULL);
  CHECK(ft_dist_available(), "built without MPI");
  CHECK(ft_dist_size(dist) == 1 && ft_dist_rank(dist) == 0, "no communicator: size 1, rank 0");
  CHECK(ft_dist_init(dist, NULL) == FT_OK, "ft_dist_init: %s", ft_ctx_error(dist));
  CHECK(ft_dist_size(dist) == nranks && ft_dist_rank(dist) == rank, "rank %d of %d", ft_dist_rank(dist),
        ft_dist_size(dist));
  CHECK(ft_dist_init(dist, NULL) != FT_OK && strstr(ft_ctx_error(dist), "already attached"), "second init");
  ft_ctx_options jo = {.size = sizeof(ft_ctx_options), .num_threads = 4};
  jdist = ft_ctx_new(&jo);
  CHECK(ft_dist_init(jdist, NULL) == FT_OK, "ft_dist_init: %s", ft_ctx_error(jdist));
  char p[2048];
  snprintf(p, sizeof p, "%s/spmd/CASES", fixtures);
  char *cases = slurp(p);
  int ncases = 0, ngrad = 0;
  for (char *save = NULL, *c = strtok_r(cases, "\n", &save); c; c = strtok_r(NULL, "\n", &save), ncases++) {
    char *flags = strchr(c, ' '); /* "name [linear [vmap]|grad]" */
    if (flags) *flags++ = 0;
    if (flags && !strcmp(flags, "grad")) check_grad(one, dist, c), ngrad++;
    else check_case(one, dist, c);
  }
  CHECK(ncases == 57 && ngrad == 16, "fixtures/spmd/CASES: %d cases (%d losses), want 57 (16)", ncases, ngrad);
  free(cases);
  check_training(one, dist);
  check_mismatch(one, dist);
  check_unreplicated(one, dist);
  check_divergent_cond(one, dist);
  check_order(one);
  check_indivisible(one);
  check_timeout(one);
  CHECK(ft_dist_finalize(dist) == FT_OK && ft_dist_size(dist) == 1, "finalize");
  ft_ctx_free(dist);
  ft_ctx_free(jdist);
  ft_ctx_free(one);
  printf("test_mpi: rank %d of %d: %d checks passed\n", rank, nranks, checks);
  MPI_Finalize();
  return 0;
}
