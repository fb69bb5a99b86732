/* src/ir/json.c: the small JSON writer of json.h (moved from
 * src/runtime/exec.c's Chrome trace and src/transforms/vmap.c's params). */
#include "ir/json.h"

void ft_json_str(ft_buf *b, const char *s) {
  ft_buf_puts(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') ft_buf_printf(b, "\\%c", ch);
    else if (ch < 0x20) ft_buf_printf(b, "\\u%04x", ch);
    else ft_buf_putn(b, s, 1);
  }
  ft_buf_puts(b, "\"");
}

void ft_json_key(ft_buf *b, const char *key) {
  ft_json_str(b, key);
  ft_buf_puts(b, ":");
}

void ft_json_ints(ft_buf *b, int n, const int *v, int none) {
  ft_buf_puts(b, "[");
  for (int i = 0; i < n; i++) {
    if (i) ft_buf_puts(b, ",");
    if (v[i] == none) ft_buf_puts(b, "null");
    else ft_buf_printf(b, "%d", v[i]);
  }
  ft_buf_puts(b, "]");
}
