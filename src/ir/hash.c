/* src/ir/hash.c: the canonical hash. The printer already writes the canonical
 * form (variables renamed by definition order, params in canonical order,
 * sub-jaxprs inline), so the hash is XXH3-128 of that text: alpha-renaming
 * cannot change it and any semantic change does. A traced jaxpr also carries
 * the values of its constvars, which the text does not show, so their bytes
 * are hashed after the text. */
#include <string.h>
#include <xxhash.h>

#include "ir.h"

void ft_jaxpr_hash(const ft_jaxpr *j, uint8_t out[16]) {
  memset(out, 0, 16);
  if (!j) return;
  char *text = ft_jaxpr_print(NULL, j);
  XXH3_state_t *st = XXH3_createState();
  if (!text || !st) { /* out of memory: the all-zero hash never names a real jaxpr */
    free(text);
    XXH3_freeState(st);
    return;
  }
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, text, strlen(text));
  free(text);
  if (j->const_data) {
    XXH3_128bits_update(st, "\0consts", 7);
    for (int i = 0; i < j->n_const; i++) {
      const ft_aval *a = &j->constvars[i]->aval;
      size_t n = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
      if (n) XXH3_128bits_update(st, j->const_data[i], n);
    }
  }
  /* Values bound to sub-jaxprs' constants (ft_jaxpr_bind_sub_consts). */
  const ft_jaxpr **subs = NULL;
  int n_subs = ft_jaxpr_closed_subs(j, &subs);
  for (int k = 0; k < n_subs; k++) {
    if (!subs[k]->const_data) continue;
    XXH3_128bits_update(st, "\0sub", 4);
    XXH3_128bits_update(st, &k, sizeof k);
    for (int i = 0; i < subs[k]->n_const; i++) {
      const ft_aval *a = &subs[k]->constvars[i]->aval;
      size_t n = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
      if (n) XXH3_128bits_update(st, subs[k]->const_data[i], n);
    }
  }
  free(subs);
  if (n_subs < 0) { /* out of memory: the all-zero hash, as above */
    XXH3_freeState(st);
    return;
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
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
