/* src/ir/arena.c: the bump allocator that owns every IR node of a jaxpr. */
#include <string.h>

#include "ir.h"

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct ft_arena {
  chunk *head;
  size_t bytes;
  uint32_t next_var_id;
};

enum { CHUNK_MIN = 64 * 1024 };

ft_arena *ft_arena_new(void) { return calloc(1, sizeof(ft_arena)); }

void ft_arena_free(ft_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *ft_arena_alloc(ft_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t sz = n > CHUNK_MIN ? n : CHUNK_MIN;
    /* Grow chunk size with the arena so big jaxprs need few chunks. */
    if (a->bytes / 4 > sz) sz = a->bytes / 4;
    c = malloc(sizeof(chunk) + sz);
    if (!c) return NULL;
    c->size = sz;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->bytes += n;
  memset(p, 0, n);
  return p;
}

char *ft_arena_strndup(ft_arena *a, const char *s, size_t len) {
  char *p = ft_arena_alloc(a, len + 1);
  if (!p) return NULL;
  memcpy(p, s, len);
  p[len] = 0;
  return p;
}

uint32_t ft_arena_next_var_id(ft_arena *a) { return a->next_var_id++; }
uint32_t ft_arena_num_var_ids(const ft_arena *a) { return a->next_var_id; }
size_t ft_arena_bytes(const ft_arena *a) { return a->bytes; }
