/* tests/fuzz/fuzz.h: what every fuzz target shares. Each target defines
 * LLVMFuzzerTestOneInput; it is linked either with libFuzzer (-Dfuzz=true,
 * clang) or with replay.c, a main that feeds it every file of the corpus and
 * of the saved crash reproducers (the regular test suite). */
#ifndef FT_FUZZ_H
#define FT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A violated property: abort so both libFuzzer and the replay runner see it. */
#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      abort();                                                             \
    }                                                                      \
  } while (0)

#endif
