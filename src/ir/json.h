/* src/ir/json.h: the library's one small JSON writer (issue 23), for the
 * JSON the stages build as text into an ft_buf: the executor's Chrome
 * trace (src/runtime/exec.c) and the params of transform records
 * (src/transforms/vmap.c). It lives in src/ir because libfrankentrace_rt
 * (the executor, no jansson) needs it too. The ledger reads and writes its
 * records with jansson (canonical text, parsing), src/ledger and
 * src/replay. */
#ifndef FT_JSON_H
#define FT_JSON_H

#include "ir/ir.h"

/* A JSON string: s quoted, '"' and '\\' escaped, control bytes as \u00XX;
 * other bytes (UTF-8 included) as they are. */
void ft_json_str(ft_buf *b, const char *s);
/* An object key and its colon: "key": */
void ft_json_key(ft_buf *b, const char *key);
/* An array of ints; entries equal to none are written as null. n may be 0. */
void ft_json_ints(ft_buf *b, int n, const int *v, int none);

#endif /* FT_JSON_H */
