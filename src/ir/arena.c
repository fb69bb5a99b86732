/* src/ir/arena.c: the bump allocator that owns every IR node of a jaxpr. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

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

/* Freed big chunks are kept for the next arenas (issue 26). A chunk over
 * glibc's mmap threshold is a fresh mapping: every transform of a big
 * program took all of its memory page fault by page fault, the kernel
 * zeroing each page (grad of a 100k-equation chain: ~150 MB, a third of
 * its time, and the reason its time per equation grew with the size while
 * a small program reuses the heap's pages). Kept: chunks of at least
 * KEEP_MIN bytes, at most KEEP_MAX in all (process-wide, under a lock);
 * a chunk is reused by an arena that needs at most its size. The memory is
 * given back when the last ft_ctx is freed (ft_arena_release_kept, called
 * by ft_ctx_free), so a program that is done with the library holds none. */
enum { KEEP_SLOTS = 64 };
static const size_t KEEP_MIN = 1u << 20, KEEP_MAX = (size_t)256 << 20;
static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static chunk *keep[KEEP_SLOTS];
static size_t keep_bytes;

/* Keeps c if there is room; false: the caller frees it. */
static bool keep_put(chunk *c) {
  if (c->size < KEEP_MIN) return false;
  bool kept = false;
  pthread_mutex_lock(&keep_mu);
  if (keep_bytes + c->size <= KEEP_MAX)
    for (int i = 0; i < KEEP_SLOTS && !kept; i++)
      if (!keep[i]) keep[i] = c, keep_bytes += c->size, kept = true;
  pthread_mutex_unlock(&keep_mu);
  return kept;
}

/* The smallest kept chunk of at least sz bytes and at most 4 sz (so a
 * small arena does not take a huge chunk), or NULL. */
static chunk *keep_get(size_t sz) {
  if (sz < KEEP_MIN / 4) return NULL;
  chunk *best = NULL;
  int bi = -1;
  pthread_mutex_lock(&keep_mu);
  for (int i = 0; i < KEEP_SLOTS; i++)
    if (keep[i] && keep[i]->size >= sz && keep[i]->size / 4 <= sz && (!best || keep[i]->size < best->size))
      best = keep[i], bi = i;
  if (best) keep[bi] = NULL, keep_bytes -= best->size;
  pthread_mutex_unlock(&keep_mu);
  return best;
}

size_t ft_arena_kept_bytes(void) {
  pthread_mutex_lock(&keep_mu);
  size_t n = keep_bytes;
  pthread_mutex_unlock(&keep_mu);
  return n;
}

void ft_arena_release_kept(void) {
  pthread_mutex_lock(&keep_mu);
  for (int i = 0; i < KEEP_SLOTS; i++) free(keep[i]), keep[i] = NULL;
  keep_bytes = 0;
  pthread_mutex_unlock(&keep_mu);
}

void ft_arena_free(ft_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    if (!keep_put(c)) free(c);
  }
  free(a);
}

/* Big chunks ask for transparent huge pages: a 100k-equation grad fills
 * ~150 MB of fresh memory, and taking it 4 KiB page fault by page fault was
 * a third of the transform's time. Advisory only (no effect where THP is
 * off or unsupported). */
static void huge_pages(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  enum { HUGE = 2 * 1024 * 1024 };
  uintptr_t lo = ((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p, (void)n;
#endif
}

/* Starts a new chunk big enough for n bytes (n already rounded). */
static void *alloc_slow(ft_arena *a, size_t n) {
  size_t sz = n > CHUNK_MIN ? n : CHUNK_MIN;
  /* Grow chunk size with the arena so big jaxprs need few chunks. */
  if (a->bytes / 4 > sz) sz = a->bytes / 4;
  chunk *c = keep_get(sz);
  if (c) {
    sz = c->size;
  } else {
    c = malloc(sizeof(chunk) + sz);
    if (!c) return NULL;
    huge_pages(c, sizeof(chunk) + sz);
  }
  c->size = sz;
  c->used = n;
  c->next = a->head;
  a->head = c;
  a->bytes += n;
  return c->data;
}

void *ft_arena_alloc_raw(ft_arena *a, size_t n) {
  n = n ? (n + 15) & ~(size_t)15 : 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) return alloc_slow(a, n);
  void *p = c->data + c->used;
  c->used += n;
  a->bytes += n;
  return p;
}

void *ft_arena_alloc(ft_arena *a, size_t n) {
  void *p = ft_arena_alloc_raw(a, n);
  if (p) memset(p, 0, n);
  return p;
}

char *ft_arena_strndup(ft_arena *a, const char *s, size_t len) {
  char *p = ft_arena_alloc_raw(a, len + 1);
  if (!p) return NULL;
  memcpy(p, s, len);
  p[len] = 0;
  return p;
}

uint32_t ft_arena_next_var_id(ft_arena *a) { return a->next_var_id++; }
uint32_t ft_arena_num_var_ids(const ft_arena *a) { return a->next_var_id; }
size_t ft_arena_bytes(const ft_arena *a) { return a->bytes; }
