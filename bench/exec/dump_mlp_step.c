/* bench/exec/dump_mlp_step.c: prints the harness worker's mlp_step jaxpr
 * (784-512-512-10, batch 128: bench/harness/worker.c's own tracing, value_and_grad
 * and SGD splice) to regenerate bench/exec/mlp_step.jaxpr. Build it as run.sh
 * builds bench_exec, with bench/harness/worker.c on the include path:
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/exec/dump_mlp_step.c B/libfrankentrace.a ... */
#define main worker_unused_main
#include "../harness/worker.c"
#undef main
int main(void) {
  setenv("FT_VERIFY", "0", 1);
  g_ctx = ft_ctx_new(NULL);
  const wdef *w = find_workload("mlp_step");
  int64_t d[8][2] = {{784, 512}, {512}, {512, 512}, {512}, {512, 10}, {10}, {128, 784}, {128, 10}};
  int r[8] = {2, 1, 2, 1, 2, 1, 2, 2};
  ft_aval av[8];
  for (int i = 0; i < 8; i++) {
    memset(&av[i], 0, sizeof av[i]);
    av[i].dtype = FT_F32;
    av[i].rank = r[i];
    for (int k = 0; k < r[i]; k++) av[i].dims[k] = d[i][k];
  }
  ft_jaxpr *j = build(w, av, NULL);
  if (!j) { fprintf(stderr, "%s\n", ft_ctx_error(g_ctx)); return 1; }
  char *s = ft_jaxpr_print(g_ctx, j);
  fputs(s, stdout);
  return 0;
}
