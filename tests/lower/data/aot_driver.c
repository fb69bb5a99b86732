/* tests/lower/data/aot_driver.c: a small C program around an AOT-emitted
 * entry function (`ftc compile --emit so|h --name ft_aot`), as a user of the
 * shared library would write it. Built by tests/lower/test_aot.sh with plain
 * `cc` (no sanitizers: the .so is LLVM's code), with -I pointing at the
 * directory of the emitted ft_aot.h.
 *
 * usage: aot_driver IN.npy... -- OUT.raw:BYTES...
 * Inputs are .npy files (the data part, C order, is passed as in[k]);
 * each output buffer of BYTES bytes is written raw to OUT.raw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_aot.h"

static void *read_npy_data(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char h[12];
  void *data = NULL;
  if (fread(h, 1, 10, f) != 10 || memcmp(h, "\x93NUMPY", 6)) goto done;
  long hlen = h[8] | (long)h[9] << 8, off = 10;
  if (h[6] >= 2) {
    if (fread(h + 10, 1, 2, f) != 2) goto done;
    hlen |= (long)h[10] << 16 | (long)h[11] << 24;
    off = 12;
  }
  if (fseek(f, 0, SEEK_END)) goto done;
  long size = ftell(f) - off - hlen;
  if (size < 0 || fseek(f, off + hlen, SEEK_SET)) goto done;
  data = malloc(size ? (size_t)size : 1);
  if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    data = NULL;
  }
done:
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  const void *in[ft_aot_NUM_INPUTS + 1];
  void *out[ft_aot_NUM_OUTPUTS + 1];
  size_t out_len[ft_aot_NUM_OUTPUTS + 1];
  char *out_path[ft_aot_NUM_OUTPUTS + 1];
  int i = 1, n_in = 0, n_out = 0;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (n_in == ft_aot_NUM_INPUTS) return fprintf(stderr, "aot_driver: too many inputs\n"), 2;
    if (!(in[n_in++] = read_npy_data(argv[i])))
      return fprintf(stderr, "aot_driver: cannot read '%s'\n", argv[i]), 2;
  }
  for (i++; i < argc; i++) {
    char *colon = strrchr(argv[i], ':');
    if (!colon || n_out == ft_aot_NUM_OUTPUTS) return fprintf(stderr, "aot_driver: bad output '%s'\n", argv[i]), 2;
    *colon = '\0';
    out_path[n_out] = argv[i];
    out_len[n_out] = (size_t)strtoul(colon + 1, NULL, 10);
    /* Poison the buffers so an output the function fails to write differs. */
    if (!(out[n_out] = malloc(out_len[n_out] ? out_len[n_out] : 1))) return 2;
    memset(out[n_out], 0xA5, out_len[n_out]);
    n_out++;
  }
  if (n_in != ft_aot_NUM_INPUTS || n_out != ft_aot_NUM_OUTPUTS)
    return fprintf(stderr, "aot_driver: want %d inputs and %d outputs, got %d and %d\n", ft_aot_NUM_INPUTS,
                   ft_aot_NUM_OUTPUTS, n_in, n_out), 2;
  int rc = ft_aot(in, out);
  if (rc) return fprintf(stderr, "aot_driver: ft_aot returned %d\n", rc), 1;
  for (int k = 0; k < n_out; k++) {
    FILE *f = fopen(out_path[k], "wb");
    if (!f || fwrite(out[k], 1, out_len[k], f) != out_len[k] || fclose(f))
      return fprintf(stderr, "aot_driver: cannot write '%s'\n", out_path[k]), 2;
    free(out[k]);
  }
  for (int k = 0; k < n_in; k++) free((void *)in[k]);
  return 0;
}
