/* src/ledger/parity.c: Reed-Solomon parity over fixed-size stripes, through
 * Intel ISA-L (no Galois-field arithmetic of our own), and the byte layout of
 * parity files. A stripe is k data blocks; its entry stores m parity blocks
 * and a 64-bit hash of each of the k+m blocks, so damaged blocks are known by
 * position (erasures) and a rebuild is checked before it is trusted. */
#include <string.h>

#include <isa-l.h>
#include <xxhash.h>

#include "ledger/ledger.h"

int ft_rs_init(ft_rs *rs, int k, int m) {
  memset(rs, 0, sizeof *rs);
  rs->k = k;
  rs->m = m;
  rs->matrix = malloc((size_t)(k + m) * (size_t)k);
  rs->tables = malloc((size_t)k * (size_t)m * 32);
  if (!rs->matrix || !rs->tables) {
    ft_rs_free(rs);
    return -1;
  }
  /* Cauchy: every k x k submatrix is invertible, so any k blocks suffice
   * (a Vandermonde-style RS matrix does not promise that for all k, m). */
  gf_gen_cauchy1_matrix(rs->matrix, k + m, k);
  ec_init_tables(k, m, rs->matrix + k * k, rs->tables);
  return 0;
}

void ft_rs_free(ft_rs *rs) {
  free(rs->matrix);
  free(rs->tables);
  rs->matrix = rs->tables = NULL;
}

void ft_rs_encode(const ft_rs *rs, size_t len, uint8_t *const *data, uint8_t *const *parity) {
  ec_encode_data((int)len, rs->k, rs->m, rs->tables, (unsigned char **)data,
                 (unsigned char **)parity);
}

int ft_rs_decode(const ft_rs *rs, size_t len, uint8_t *const *blocks, const bool *lost) {
  int k = rs->k, m = rs->m, n = k + m, nlost = 0;
  int lost_idx[256], src_idx[256];
  for (int i = 0; i < n; i++)
    if (lost[i]) lost_idx[nlost++] = i;
  if (nlost == 0) return 0;
  if (nlost > m) return -1;
  unsigned char *sub = malloc((size_t)k * k), *inv = malloc((size_t)k * k);
  unsigned char *rows = malloc((size_t)k * nlost), *tbl = malloc((size_t)k * nlost * 32);
  int rc = -1;
  if (!sub || !inv || !rows || !tbl) goto out;
  /* The first k surviving blocks and their rows of the encoding matrix. */
  for (int i = 0, r = 0; i < k; i++, r++) {
    while (lost[r]) r++;
    src_idx[i] = r;
    memcpy(sub + (size_t)k * i, rs->matrix + (size_t)k * r, (size_t)k);
  }
  if (gf_invert_matrix(sub, inv, k) < 0) goto out;
  /* A lost data block j is row j of the inverse applied to the survivors; a
   * lost parity block is its encoding row times the inverse. */
  for (int p = 0; p < nlost; p++) {
    int e = lost_idx[p];
    for (int i = 0; i < k; i++) {
      if (e < k) {
        rows[k * p + i] = inv[k * e + i];
      } else {
        unsigned char s = 0;
        for (int j = 0; j < k; j++) s ^= gf_mul(inv[k * j + i], rs->matrix[k * e + j]);
        rows[k * p + i] = s;
      }
    }
  }
  ec_init_tables(k, nlost, rows, tbl);
  unsigned char *srcs[256], *outs[256];
  for (int i = 0; i < k; i++) srcs[i] = blocks[src_idx[i]];
  for (int p = 0; p < nlost; p++) outs[p] = blocks[lost_idx[p]];
  ec_encode_data((int)len, k, nlost, tbl, srcs, outs);
  rc = 0;
out:
  free(sub);
  free(inv);
  free(rows);
  free(tbl);
  return rc;
}

/* Little-endian fields, so the format does not depend on the host. */
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

#define SEED 0x4654u /* "FT": keeps these checksums distinct from other XXH3 uses */

void ft_lpar_header_encode(const ft_lpar_header *h, uint8_t out[FT_LPAR_HEADER]) {
  memset(out, 0, FT_LPAR_HEADER);
  memcpy(out, FT_LPAR_MAGIC, 8);
  put32(out + 8, h->k);
  put32(out + 12, h->m);
  put32(out + 16, h->block);
  put32(out + 20, h->kind);
  put64(out + 24, h->data_len);
  memcpy(out + 32, h->ident, 16);
  put64(out + 56, XXH3_64bits_withSeed(out, 56, SEED));
}

bool ft_lpar_header_decode(const uint8_t *in, size_t len, ft_lpar_header *h) {
  if (len < FT_LPAR_HEADER || memcmp(in, FT_LPAR_MAGIC, 8)) return false;
  if (get64(in + 56) != XXH3_64bits_withSeed(in, 56, SEED)) return false;
  for (int i = 48; i < 56; i++)
    if (in[i]) return false;
  h->k = get32(in + 8);
  h->m = get32(in + 12);
  h->block = get32(in + 16);
  h->kind = get32(in + 20);
  h->data_len = get64(in + 24);
  memcpy(h->ident, in + 32, 16);
  return h->k >= 1 && h->k <= 64 && h->m >= 1 && h->m <= 16 && h->block >= 16 &&
         h->block <= (1u << 20) && h->block % 16 == 0 && h->kind <= FT_LPAR_OBJ;
}

static size_t entry_head(int k, int m) { return 16 + 8 * (size_t)(k + m) + 8; }

size_t ft_lpar_entry_size(int k, int m, size_t block) {
  return entry_head(k, m) + (size_t)m * block;
}

uint64_t ft_lpar_block_hash(const uint8_t *block, size_t len) {
  return XXH3_64bits_withSeed(block, len, SEED);
}

void ft_lpar_entry_build(const ft_rs *rs, size_t block, uint64_t stripe, uint64_t covered,
                         const uint8_t *data, uint8_t *entry) {
  int k = rs->k, m = rs->m;
  size_t head = entry_head(k, m);
  uint8_t *dp[64] = {0}, *pp[16] = {0};
  for (int j = 0; j < k; j++) dp[j] = (uint8_t *)data + (size_t)j * block;
  for (int i = 0; i < m; i++) pp[i] = entry + head + (size_t)i * block;
  ft_rs_encode(rs, block, dp, pp);
  put64(entry, stripe);
  put64(entry + 8, covered);
  for (int j = 0; j < k; j++) put64(entry + 16 + 8 * j, ft_lpar_block_hash(dp[j], block));
  for (int i = 0; i < m; i++) put64(entry + 16 + 8 * (k + i), ft_lpar_block_hash(pp[i], block));
  put64(entry + head - 8, XXH3_64bits_withSeed(entry, head - 8, SEED));
}

bool ft_lpar_entry_decode(const uint8_t *entry, int k, int m, size_t block, ft_lpar_entry *e) {
  size_t head = entry_head(k, m);
  if (get64(entry + head - 8) != XXH3_64bits_withSeed(entry, head - 8, SEED)) return false;
  e->stripe = get64(entry);
  e->covered = get64(entry + 8);
  e->hashes = entry + 16;
  e->parity = entry + head;
  return e->covered <= (uint64_t)k * block;
}

uint64_t ft_lpar_entry_hash(const ft_lpar_entry *e, int i) { return get64(e->hashes + 8 * i); }

size_t ft_lpar_object_block(size_t len, int k, size_t block) {
  /* Small objects get small blocks, so their parity costs m/k of their size. */
  size_t b = (len + (size_t)k - 1) / (size_t)k;
  b = (b + 15) / 16 * 16;
  if (b < 16) b = 16;
  return b < block ? b : block;
}

uint8_t *ft_lpar_object_file(const ft_rs *rs, size_t block, const uint8_t *data, size_t len,
                             const uint8_t hash[16], size_t *out_len) {
  int k = rs->k;
  size_t b = ft_lpar_object_block(len, k, block), sw = (size_t)k * b;
  size_t n = (len + sw - 1) / sw, es = ft_lpar_entry_size(k, rs->m, b);
  uint8_t *file = malloc(FT_LPAR_HEADER + n * es), *stripe = malloc(sw);
  if (!file || !stripe) {
    free(file);
    free(stripe);
    return NULL;
  }
  ft_lpar_header h = {(uint32_t)k, (uint32_t)rs->m, (uint32_t)b, FT_LPAR_OBJ, len, {0}};
  memcpy(h.ident, hash, 16);
  ft_lpar_header_encode(&h, file);
  for (size_t s = 0; s < n; s++) {
    size_t have = len - s * sw < sw ? len - s * sw : sw;
    memcpy(stripe, data + s * sw, have);
    memset(stripe + have, 0, sw - have);
    ft_lpar_entry_build(rs, b, s, have, stripe, file + FT_LPAR_HEADER + s * es);
  }
  free(stripe);
  *out_len = FT_LPAR_HEADER + n * es;
  return file;
}
