/* src/runtime/bufplan.c: the static buffer plan. Buffers with live
 * intervals get offsets in one arena: first, accepted in-place offers merge
 * buffers into chains that share one block; then blocks are placed greedily
 * by size (largest first), each into the best-fitting gap left by the
 * blocks already placed whose intervals intersect its own. This is the
 * "greedy by size" planner of TFLite and friends: simple, deterministic, and
 * close to the lower bound (the most bytes ever live at once) in practice.
 * The validator checks any plan from first principles. */
#include <string.h>

#include "runtime/exec.h"

typedef struct block {
  size_t size, align, offset;
  int first, last;
  int id;                 /* smallest member index: a deterministic tie-break */
} block;

static size_t align_of(const ft_bufplan_buf *b) { return b->align ? b->align : 64; }
static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static int by_size_desc(const void *pa, const void *pb) {
  const block *a = *(const block *const *)pa, *b = *(const block *const *)pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->id - b->id;
}

static int by_offset(const void *pa, const void *pb) {
  const block *a = *(const block *const *)pa, *b = *(const block *const *)pb;
  if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
  return a->id - b->id;
}

static bool meets(int f1, int l1, int f2, int l2) { return !(l1 < f2 || l2 < f1); }

/* The most bytes live at one time, over blocks (an O(n^2) sweep at starts). */
static size_t lower_bound(int nb, const block *bl) {
  size_t best = 0;
  for (int i = 0; i < nb; i++) {
    size_t live = 0;
    for (int k = 0; k < nb; k++)
      if (bl[k].first <= bl[i].first && bl[i].first <= bl[k].last) live += bl[k].size;
    if (live > best) best = live;
  }
  return best;
}

/* Places blk among the already placed blocks (sorted by offset in tmp). */
static void place(block *blk, block **placed, int np, block **tmp) {
  int nt = 0;
  for (int k = 0; k < np; k++)
    if (meets(blk->first, blk->last, placed[k]->first, placed[k]->last)) tmp[nt++] = placed[k];
  qsort(tmp, (size_t)nt, sizeof *tmp, by_offset);
  size_t at = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
  for (int k = 0; k < nt; k++) {
    size_t cand = round_up(at, blk->align);
    if (cand + blk->size <= tmp[k]->offset) {
      size_t gap = tmp[k]->offset - cand;
      if (gap < best_gap) best_gap = gap, best = cand;
    }
    size_t end = tmp[k]->offset + tmp[k]->size;
    if (end > at) at = end;
  }
  blk->offset = best != SIZE_MAX ? best : round_up(at, blk->align);
}

ft_status ft_bufplan_solve(ft_ctx *ctx, int n, ft_bufplan_buf *bufs, ft_bufplan_stats *stats) {
  ft_bufplan_stats st = {0};
  if (n <= 0) {
    if (stats) *stats = st;
    return FT_OK;
  }
  for (int i = 0; i < n; i++) {
    size_t a = align_of(&bufs[i]);
    if ((a & (a - 1)) || bufs[i].first > bufs[i].last || bufs[i].inplace_of >= n ||
        bufs[i].inplace_of == i)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "buffer plan: buffer %d: bad alignment %zu, "
                          "interval [%d, %d] or in-place source %d", i, a, bufs[i].first,
                          bufs[i].last, bufs[i].inplace_of);
  }
  int *head = malloc(sizeof *head * (size_t)n);  /* chain head of each buffer */
  int *tail = malloc(sizeof *tail * (size_t)n);  /* valid at heads: the chain's newest member */
  block *bl = calloc((size_t)n, sizeof *bl);
  int *blk_of = malloc(sizeof *blk_of * (size_t)n);
  block **order = malloc(sizeof *order * (size_t)n);
  block **placed = malloc(sizeof *placed * (size_t)n);
  block **tmp = malloc(sizeof *tmp * (size_t)n);
  if (!head || !tail || !bl || !blk_of || !order || !placed || !tmp) {
    free(head), free(tail), free(bl), free(blk_of), free(order), free(placed), free(tmp);
    return ft_set_error(ctx, FT_ERR_NOMEM, "buffer plan: out of memory");
  }
  for (int i = 0; i < n; i++) head[i] = tail[i] = i, bufs[i].inplace = false;
  /* In-place offers, taken in order of the taker's birth so chains grow
   * forward in time: b joins a's chain when a is the chain's newest member
   * and dies exactly where b is born (then every older member is dead). */
  int *ord = malloc(sizeof *ord * (size_t)n);
  if (ord) {
    for (int i = 0; i < n; i++) ord[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort by first: n is small */
      for (int k = i; k > 0 && bufs[ord[k - 1]].first > bufs[ord[k]].first; k--) {
        int t = ord[k];
        ord[k] = ord[k - 1], ord[k - 1] = t;
      }
    for (int q = 0; q < n; q++) {
      int b = ord[q], a = bufs[b].inplace_of;
      if (a < 0 || head[b] != b || tail[b] != b) continue;
      int h = head[a];
      if (tail[h] != a || bufs[a].last != bufs[b].first || bufs[a].first >= bufs[b].first)
        continue;
      head[b] = h;
      tail[h] = b;
      bufs[b].inplace = true;
      st.n_inplace++;
    }
    free(ord);
  }
  int nb = 0;
  for (int i = 0; i < n; i++) {
    st.sum += round_up(bufs[i].size, align_of(&bufs[i]));
    if (head[i] == i) {
      bl[nb] = (block){.size = 0, .align = 1, .first = bufs[i].first, .last = bufs[i].last, .id = i};
      blk_of[i] = nb++;
    }
  }
  for (int i = 0; i < n; i++) {
    block *b = &bl[blk_of[head[i]]];
    size_t a = align_of(&bufs[i]);
    if (bufs[i].size > b->size) b->size = bufs[i].size;
    if (a > b->align) b->align = a;
    if (bufs[i].first < b->first) b->first = bufs[i].first;
    if (bufs[i].last > b->last) b->last = bufs[i].last;
  }
  for (int k = 0; k < nb; k++) bl[k].size = round_up(bl[k].size ? bl[k].size : 1, bl[k].align),
                               order[k] = &bl[k];
  qsort(order, (size_t)nb, sizeof *order, by_size_desc);
  for (int k = 0; k < nb; k++) {
    place(order[k], placed, k, tmp);
    placed[k] = order[k];
    size_t end = order[k]->offset + order[k]->size;
    if (end > st.peak) st.peak = end;
  }
  for (int i = 0; i < n; i++) bufs[i].offset = bl[blk_of[head[i]]].offset;
  st.lower_bound = lower_bound(nb, bl);
  free(head), free(tail), free(bl), free(blk_of), free(order), free(placed), free(tmp);
  if (stats) *stats = st;
  return FT_OK;
}

/* Whether a and b may share memory while both live: a taken in-place pair
 * (one hands over to the other at the same offset, at the moment it dies). */
static bool inplace_pair(const ft_bufplan_buf *bufs, int a, int b) {
  const ft_bufplan_buf *x = &bufs[a], *y = &bufs[b];
  if (x->offset != y->offset) return false;
  if (y->inplace && y->inplace_of == a && x->last == y->first) return true;
  if (x->inplace && x->inplace_of == b && y->last == x->first) return true;
  return false;
}

bool ft_bufplan_validate(int n, const ft_bufplan_buf *bufs, size_t arena, char *why, size_t n_why) {
  char dummy[8];
  if (!why) why = dummy, n_why = sizeof dummy;
  for (int i = 0; i < n; i++) {
    const ft_bufplan_buf *b = &bufs[i];
    if (b->offset % align_of(b)) {
      snprintf(why, n_why, "buffer %d: offset %zu is not %zu-aligned", i, b->offset, align_of(b));
      return false;
    }
    if (b->offset + b->size > arena) {
      snprintf(why, n_why, "buffer %d: [%zu, %zu) is outside the arena of %zu bytes", i,
               b->offset, b->offset + b->size, arena);
      return false;
    }
  }
  for (int i = 0; i < n; i++)
    for (int k = i + 1; k < n; k++) {
      const ft_bufplan_buf *a = &bufs[i], *b = &bufs[k];
      if (!a->size || !b->size || !meets(a->first, a->last, b->first, b->last)) continue;
      if (a->offset + a->size <= b->offset || b->offset + b->size <= a->offset) continue;
      if (inplace_pair(bufs, i, k)) continue;
      snprintf(why, n_why, "buffers %d [%zu, %zu) live [%d, %d] and %d [%zu, %zu) live [%d, %d] "
               "overlap", i, a->offset, a->offset + a->size, a->first, a->last, k, b->offset,
               b->offset + b->size, b->first, b->last);
      return false;
    }
  return true;
}
