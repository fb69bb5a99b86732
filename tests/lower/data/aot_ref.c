/* tests/lower/data/aot_ref.c: the reference side of tests/lower/test_aot.sh:
 * ft_jit + ft_call (default options, as `ftc run --engine jit`) on raw
 * inputs. Unlike ftc run it takes each .npy's data bytes as the jaxpr's
 * input aval whatever dtype the file names (NumPy has no bfloat16: the
 * fixtures store bf16 as uint16), and it writes raw outputs.
 *
 * usage: aot_ref JAXPR OUTDIR IN.npy...
 *   Inputs are the jaxpr's constvars then invars. Writes OUTDIR/outK.raw
 *   and prints "outK BYTES" per output; exit 1 with a message on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/runtime.h"

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = NULL;
  long n;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0, *len = (size_t)n;
  fclose(f);
  return s;
}

static int die(ft_ctx *ctx, const char *what) {
  fprintf(stderr, "aot_ref: %s: %s\n", what, ctx ? ft_ctx_error(ctx) : "");
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: aot_ref JAXPR OUTDIR IN.npy...\n"), 2;
  ft_ctx *ctx = ft_ctx_new(NULL);
  size_t len;
  char *text = read_text(argv[1], &len);
  if (!text) return fprintf(stderr, "aot_ref: cannot read '%s'\n", argv[1]), 1;
  ft_jaxpr *j = ft_parse(ctx, text, len, argv[1]);
  free(text);
  if (!j) return die(ctx, "parse");
  int n_in = j->n_const + j->n_in, n_out = j->n_out;
  if (argc - 3 != n_in) return fprintf(stderr, "aot_ref: want %d inputs, got %d\n", n_in, argc - 3), 1;
  ft_array **in = calloc((size_t)n_in + 1, sizeof *in), **out = calloc((size_t)n_out + 1, sizeof *out);
  for (int k = 0; k < n_in; k++) {
    const ft_aval *a = k < j->n_const ? &j->constvars[k]->aval : &j->invars[k - j->n_const]->aval;
    ft_array *file = ft_npy_read(ctx, argv[3 + k]);
    if (!file) return die(ctx, argv[3 + k]);
    size_t want = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
    if (ft_array_nbytes(file) != want)
      return fprintf(stderr, "aot_ref: '%s' has %zu bytes, input %d wants %zu\n", argv[3 + k],
                     ft_array_nbytes(file), k, want), 1;
    if (!(in[k] = ft_array_from_data(ctx, a->dtype, a->rank, a->dims, ft_array_data(file))))
      return die(ctx, "input");
    ft_array_free(file);
  }
  /* AOT emits fallback steps: the reference runs them too */
  ft_fn *fn = ft_jit(ctx, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .allow_fallback = true});
  if (!fn) return die(ctx, "jit");
  if (ft_call(fn, n_in, (const ft_array *const *)in, n_out, out)) return die(ctx, "call");
  for (int k = 0; k < n_out; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.raw", argv[2], k);
    FILE *f = fopen(path, "wb");
    size_t nb = ft_array_nbytes(out[k]);
    if (!f || fwrite(ft_array_data(out[k]), 1, nb, f) != nb || fclose(f))
      return fprintf(stderr, "aot_ref: cannot write '%s'\n", path), 1;
    printf("out%d %zu\n", k, nb);
    ft_array_free(out[k]);
  }
  for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
  free(in), free(out);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return 0;
}
