#!/usr/bin/env bash
# tests/api/check_exports.sh LIB HEADER: the shared library exports only
# ft_* symbols (hidden visibility for the rest), and every function the
# public header marks FT_API is exported.
set -u
lib=$1
header=$2
pass=0
fail=0
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
stray=$(echo "$exported" | grep -vE '^(ft_|__bss_start$|_edata$|_end$|_init$|_fini$)' || true)
if [ -n "$stray" ]; then
  echo "FAIL: non-ft_ symbols exported:"; echo "$stray" | head -20 | sed 's/^/    /'
  fail=$((fail + 1))
else
  pass=$((pass + 1))
fi
declared=$(grep -v '^#' "$header" | tr '\n' ' ' | grep -oE 'FT_API [^;{]*\(' | grep -oE '[A-Za-z_][A-Za-z_0-9]*\($' | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "FAIL: declared FT_API in the header but not exported:"; echo "$missing" | sed 's/^/    /'
  fail=$((fail + 1))
else
  pass=$((pass + 1))
fi
echo "exported: $(echo "$exported" | grep -c '^ft_') ft_ symbols; declared FT_API: $(echo "$declared" | wc -l)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
