/* examples/aot_call.c: calling a function compiled ahead of time. The build
 * ran `ftc compile aot_predict.jaxpr --emit so --name predict` (a shared
 * library) and `--emit h` (its header, aot_predict.h); this program links
 * that library and libfrankentrace_rt only: no LLVM, no FrankenTrace header.
 *
 *   predict(w, X, b) = (relu(X w + b), sum(relu(X w + b))) */
#include <stdio.h>

#include "aot_predict.h"

int main(void) {
  const float w[3] = {1, -2, 0.5f};
  const float x[4][3] = {{1, 0, 0}, {0, 1, 0}, {2, 1, 4}, {-1, -1, 2}};
  const float b = 0.25f;
  float relu[4], total;
  const void *in[predict_NUM_INPUTS] = {w, x, &b};
  void *out[predict_NUM_OUTPUTS] = {relu, &total};
  if (predict(in, out)) {
    fprintf(stderr, "aot_call: %s\n", predict_error());
    return 1;
  }
  printf("relu(X w + b) = [%g, %g, %g, %g], sum %g\n", relu[0], relu[1], relu[2], relu[3], total);
  /* The second call reuses the plan made by the first. */
  const float w2[3] = {0, 0, 1};
  in[0] = w2;
  if (predict(in, out)) {
    fprintf(stderr, "aot_call: %s\n", predict_error());
    return 1;
  }
  printf("with w = [0, 0, 1]: [%g, %g, %g, %g], sum %g\n", relu[0], relu[1], relu[2], relu[3], total);
  predict_release();
  return 0;
}
