/* tests/fuzz/replay.c: the fuzz targets without libFuzzer. Feeds the target
 * every regular file named on the command line or found (one level deep)
 * in a directory named there, so the regular suite replays the seed corpus
 * and the saved crash reproducers on every run. A missing directory counts
 * as empty (crashes/<target>/ exists only once something was found). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads path into a malloc'd buffer of exactly its size (so ASan sees any
 * overread past the end, as under libFuzzer). */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return 1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "replay: out of memory reading %s\n", path);
    return 1;
  }
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir, in name order (reproducible logs). */
static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : (fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno)), 1);
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  int bad = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *nn);
      if (!nn) {
        bad = 1;
        break;
      }
      names = nn;
    }
    size_t l = strlen(dir) + strlen(de->d_name) + 2;
    if (!(names[n] = malloc(l))) {
      bad = 1;
      break;
    }
    snprintf(names[n++], l, "%s/%s", dir, de->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (!bad && !stat(names[i], &st) && S_ISREG(st.st_mode)) {
      bad |= run_file(names[i]);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (!stat(argv[i], &st) && S_ISREG(st.st_mode)) {
      bad |= run_file(argv[i]);
      count++;
    } else {
      bad |= run_dir(argv[i], &count);
    }
  }
  printf("replayed %d inputs\n", count);
  return bad;
}
