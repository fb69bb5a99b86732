#!/usr/bin/env bash
# tests/examples/run_example.sh EXPECTED PROGRAM [ARGS...]: runs an example
# and compares its whole standard output with EXPECTED. An argument @TMP@ is
# replaced by a fresh path in a temporary directory (for ledger_audit).
set -u
want=$1; shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for a in "$@"; do args+=("${a//@TMP@/$tmp/x}"); done
"${args[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: exit $rc"; cat "$tmp/err"; exit 1; fi
if ! diff -u "$want" "$tmp/out"; then echo "FAIL: output differs from $want"; exit 1; fi
echo "1 passed, 0 failed"
