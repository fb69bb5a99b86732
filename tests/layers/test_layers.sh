#!/usr/bin/env bash
# tests/layers/test_layers.sh CHECK ROOT LIB: every #include of the tree
# runs downward (tools/check-layers over ROOT), and so does every call
# between the objects of LIB (libfrankentrace.a, --symbols); each check does
# fail, naming the include or call and the rule, on a small tree and a
# small archive with wrong ones.
set -u
check=$1
root=$2
lib=$3
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

if "$check" "$root"; then ok; else bad "the source tree has includes that cross a layer the wrong way (above)"; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ft-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/ir" "$tmp/src/lower" "$tmp/src/runtime" "$tmp/src/ledger" "$tmp/include" "$tmp/tools"
echo '/* */' > "$tmp/include/frankentrace.h"
echo '#include "frankentrace.h"' > "$tmp/src/ir/ir.h"
echo '#include "ir/ir.h"' > "$tmp/src/lower/lower.h"
echo '#include "ir/ir.h"' > "$tmp/src/runtime/runtime.h"
printf '#include <stdio.h>\n#include "ir/ir.h"\n#include "lower/lower.h"\n' > "$tmp/src/runtime/exec.c"
printf '#include "ir.h"\n#include "runtime/runtime.h"\n' > "$tmp/src/ir/x.c"
printf '#include "ledger/nothere.h"\n' > "$tmp/src/ledger/y.c"
printf '#include "frankentrace.h"\n#include "runtime/runtime.h"\n' > "$tmp/tools/t.c"
out=$("$check" "$tmp")
rc=$?
want='src/ir/x.c:2: #include "runtime/runtime.h" (src/runtime/runtime.h, runtime): ir may include only its own headers and public
src/ledger/y.c:1: #include "ledger/nothere.h": not found in the tree (the check cannot place it in a layer)
src/runtime/exec.c:3: #include "lower/lower.h" (src/lower/lower.h, lower): runtime may include only its own headers and vmath, ir, ledger, public
tools/t.c:2: #include "runtime/runtime.h" (src/runtime/runtime.h, runtime): tools may include only include/ and tools/ (docs/architecture.md, Layers)
check-layers: 4 include(s) cross a layer the wrong way (9 checked); the layer table is in tools/check-layers and docs/architecture.md'
if [ "$rc" -eq 1 ]; then ok; else bad "a tree with wrong includes: exit $rc, want 1"; fi
if [ "$out" = "$want" ]; then ok; else bad "a tree with wrong includes printed:"; echo "$out"; echo "want:"; echo "$want"; fi
"$check" "$tmp/nowhere" 2>/dev/null
rc=$?
if [ "$rc" -eq 2 ]; then ok; else bad "a root without src/: exit $rc, want 2"; fi

if "$check" --symbols "$lib"; then ok; else bad "calls in $lib cross a layer the wrong way (above)"; fi
# An archive whose src/ir object calls a function of src/lower.
mkdir -p "$tmp/o"
printf 'int lower_fn(void);\nint ir_fn(void);\nint ir_fn(void) { return lower_fn(); }\n' > "$tmp/o/a.c"
printf 'int lower_fn(void);\nint lower_fn(void) { return 1; }\n' > "$tmp/o/b.c"
if ${CC:-cc} -c "$tmp/o/a.c" -o "$tmp/o/src_ir_a.c.o" && ${CC:-cc} -c "$tmp/o/b.c" -o "$tmp/o/src_lower_b.c.o" &&
   (cd "$tmp/o" && ar rc libx.a src_ir_a.c.o src_lower_b.c.o); then
  out=$("$check" --symbols "$tmp/o/libx.a")
  rc=$?
  want='src_ir_a.c.o: calls lower_fn (lower, defined in src_lower_b.c.o): ir may use only its own layer and public
check-layers: 1 call(s) cross a layer the wrong way (1 checked)'
  if [ "$rc" -eq 1 ] && [ "$out" = "$want" ]; then ok; else bad "an archive with an upward call: exit $rc, printed:"; echo "$out"; fi
else
  bad "cannot build the test archive with ${CC:-cc}"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
