#!/usr/bin/env bash
# tests/layers/test_layers.sh CHECK ROOT: every #include of the tree runs
# downward (tools/check-layers over ROOT), and the check does fail, naming
# the include and the rule, on a small tree with one include of each wrong
# kind.
set -u
check=$1
root=$2
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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
