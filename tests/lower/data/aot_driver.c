/* tests/lower/data/aot_driver.c: a small C program around AOT-emitted entry
 * functions (`ftc compile --emit obj|h --name NAME`), as a user of the
 * emitted code would write it: it includes only the generated headers and
 * links the objects' library and libfrankentrace_rt, never the compiler.
 * tests/lower/test_aot.sh generates aot_table.c (AOT_TABLE: one row per
 * emitted function) and builds this file with it.
 *
 * usage: aot_driver NAME IN.npy... -- OUT.raw:BYTES...
 *   Runs NAME on the inputs (the data part of each .npy, C order, is in[k])
 *   and writes each output buffer of BYTES bytes raw to OUT.raw.
 * usage (built with -DAOT_SPLIT_ONLY): aot_split --split PACK N DIR
 *   Writes the first N .npy files of a conformance pack (.npys: .npy files
 *   back to back, constants and inputs first) to DIR/in0.npy ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_file(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *data = NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (data = malloc((size_t)*size + 1)) && fread(data, 1, (size_t)*size, f) != (size_t)*size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

/* The header length and data offset of the .npy at p (n bytes), or -1. */
static long npy_data_offset(const unsigned char *p, long n, long *hlen) {
  if (n < 10 || memcmp(p, "\x93NUMPY", 6)) return -1;
  if (p[6] >= 2) {
    if (n < 12) return -1;
    *hlen = p[8] | (long)p[9] << 8 | (long)p[10] << 16 | (long)p[11] << 24;
    return 12 + *hlen;
  }
  *hlen = p[8] | (long)p[9] << 8;
  return 10 + *hlen;
}

/* Bytes of the data of the .npy at p: the item size of 'descr' times the
 * product of 'shape'. -1 when the header is not understood. */
static long npy_data_bytes(const unsigned char *p, long n) {
  long hlen, off = npy_data_offset(p, n, &hlen);
  if (off < 0 || off > n) return -1;
  char h[1024];
  long l = off - (p[6] >= 2 ? 12 : 10);
  if (l >= (long)sizeof h) return -1;
  memcpy(h, p + off - l, (size_t)l);
  h[l] = 0;
  const char *d = strstr(h, "'descr':"), *s = strstr(h, "'shape':");
  if (!d || !s || !(d = strchr(d + 8, '\'')) || !(s = strchr(s, '('))) return -1;
  long item = strtol(d + 3, NULL, 10); /* '<f4', '|b1', '<c8' */
  long count = 1;
  for (s++; *s && *s != ')';) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s) {
      s++;
      continue;
    }
    count *= v;
    s = end;
  }
  return item > 0 ? off + item * count : -1;
}

static int split(const char *pack, int n, const char *dir) {
  long size;
  unsigned char *p = read_file(pack, &size);
  if (!p) return fprintf(stderr, "aot_driver: cannot read '%s'\n", pack), 2;
  long at = 0;
  for (int k = 0; k < n; k++) {
    long len = npy_data_bytes(p + at, size - at);
    if (len < 0 || at + len > size) return fprintf(stderr, "aot_driver: bad array %d in '%s'\n", k, pack), 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/in%d.npy", dir, k);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p + at, 1, (size_t)len, f) != (size_t)len || fclose(f))
      return fprintf(stderr, "aot_driver: cannot write '%s'\n", path), 2;
    at += len;
  }
  free(p);
  return 0;
}

static void *read_npy_data(const char *path) {
  long size, hlen;
  unsigned char *p = read_file(path, &size);
  long off = p ? npy_data_offset(p, size, &hlen) : -1;
  if (off < 0 || off > size) {
    free(p);
    return NULL;
  }
  memmove(p, p + off, (size_t)(size - off));
  return p;
}

#ifdef AOT_SPLIT_ONLY /* the splitter, built before any function is emitted */
int main(int argc, char **argv) {
  (void)read_npy_data;
  if (argc == 5 && !strcmp(argv[1], "--split")) return split(argv[2], atoi(argv[3]), argv[4]);
  return fprintf(stderr, "usage: aot_split --split PACK N DIR\n"), 2;
}
#else
#include "aot_table.h"

int main(int argc, char **argv) {
  (void)split;
  if (argc < 2) return fprintf(stderr, "usage: aot_driver NAME IN.npy... -- OUT.raw:BYTES...\n"), 2;
  const aot_entry *e = NULL;
  for (size_t t = 0; t < sizeof aot_table / sizeof *aot_table; t++)
    if (!strcmp(aot_table[t].name, argv[1])) e = &aot_table[t];
  if (!e) return fprintf(stderr, "aot_driver: no function '%s'\n", argv[1]), 2;
  const void **in = calloc((size_t)e->n_in + 1, sizeof *in);
  void **out = calloc((size_t)e->n_out + 1, sizeof *out);
  size_t *out_len = calloc((size_t)e->n_out + 1, sizeof *out_len);
  char **out_path = calloc((size_t)e->n_out + 1, sizeof *out_path);
  if (!in || !out || !out_len || !out_path) return 2;
  int i = 2, n_in = 0, n_out = 0;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (n_in == e->n_in) return fprintf(stderr, "aot_driver: too many inputs\n"), 2;
    if (!(in[n_in++] = read_npy_data(argv[i])))
      return fprintf(stderr, "aot_driver: cannot read '%s'\n", argv[i]), 2;
  }
  for (i++; i < argc; i++) {
    char *colon = strrchr(argv[i], ':');
    if (!colon || n_out == e->n_out) return fprintf(stderr, "aot_driver: bad output '%s'\n", argv[i]), 2;
    *colon = '\0';
    out_path[n_out] = argv[i];
    out_len[n_out] = (size_t)strtoul(colon + 1, NULL, 10);
    /* Poison the buffers so an output the function fails to write differs. */
    if (!(out[n_out] = malloc(out_len[n_out] ? out_len[n_out] : 1))) return 2;
    memset(out[n_out], 0xA5, out_len[n_out]);
    n_out++;
  }
  if (n_in != e->n_in || n_out != e->n_out)
    return fprintf(stderr, "aot_driver: want %d inputs and %d outputs, got %d and %d\n", e->n_in, e->n_out,
                   n_in, n_out), 2;
  /* Twice: the first call plans, the second runs the planned program. */
  for (int rep = 0; rep < 2; rep++) {
    int rc = e->fn(in, out);
    if (rc) return fprintf(stderr, "aot_driver: %s returned %d: %s\n", e->name, rc, e->error()), 1;
  }
  if (e->error()[0]) return fprintf(stderr, "aot_driver: %s_error() after success: %s\n", e->name, e->error()), 1;
  for (int k = 0; k < n_out; k++) {
    FILE *f = fopen(out_path[k], "wb");
    if (!f || fwrite(out[k], 1, out_len[k], f) != out_len[k] || fclose(f))
      return fprintf(stderr, "aot_driver: cannot write '%s'\n", out_path[k]), 2;
    free(out[k]);
  }
  for (int k = 0; k < n_in; k++) free((void *)in[k]);
  e->release();
  free(in), free(out), free(out_len), free(out_path);
  return 0;
}
#endif
