/* src/ir/hash.c: the canonical hash. The printer already writes the canonical
 * form (variables renamed by definition order, params in canonical order,
 * sub-jaxprs inline), so the hash is XXH3-128 of that text: alpha-renaming
 * cannot change it and any semantic change does. */
#include <string.h>
#include <xxhash.h>

#include "ir.h"

void ft_jaxpr_hash(const ft_jaxpr *j, uint8_t out[16]) {
  memset(out, 0, 16);
  if (!j) return;
  char *text = ft_jaxpr_print(NULL, j);
  if (!text) return; /* out of memory: the all-zero hash never names a real jaxpr */
  XXH128_hash_t h = XXH3_128bits(text, strlen(text));
  free(text);
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(h.high64 >> (56 - 8 * i));
    out[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
  }
}

void ft_jaxpr_hash_hex(const ft_jaxpr *j, char out[33]) {
  uint8_t h[16];
  ft_jaxpr_hash(j, h);
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}
