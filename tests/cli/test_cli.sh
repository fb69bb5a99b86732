#!/usr/bin/env bash
# tests/cli/test_cli.sh FTC FIXTURES: the ftc command line as a user meets it:
# help texts, exit codes, and one-line errors on bad input (never a crash).
set -u
FTC=$1
FIX=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect NAME WANT_EXIT GREP_PATTERN -- command...
expect() {
  local name=$1 want=$2 pat=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, wanted $want"; sed 's/^/    /' "$tmp/err" | head -5
    fail=$((fail + 1)); return
  fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: output lacks /$pat/"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -8
    fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}

expect no-args 2 'usage: ftc' -- "$FTC"
expect help 0 'commands:' -- "$FTC" --help
expect unknown-command 2 "unknown command 'frobnicate'" -- "$FTC" frobnicate
for cmd in $("$FTC" --help | awk '/^commands:/{f=1;next} f && /^  [a-z]/ {print $1}'); do
  expect "help-$cmd" 0 "usage: ftc $cmd" -- "$FTC" "$cmd" --help
done
expect version 0 '^ftc [0-9]+\.[0-9]+\.[0-9]+' -- "$FTC" --version

# print / hash / dot
expect print-missing-file 1 "cannot read '$tmp/nope.jaxpr'" -- "$FTC" print "$tmp/nope.jaxpr"
expect print-no-file 1 'missing FILE' -- "$FTC" print
expect print-two-files 1 'expected one FILE' -- "$FTC" print a b
expect print-bad-option 1 "unknown option '--frob'" -- "$FTC" print --frob x
printf '{ lambda ; a:f32[3]. let\n    b:f32[3] = frob a\n  in (b,) }\n' >"$tmp/bad.jaxpr"
expect print-unknown-prim 1 "2:[0-9]+: .*unknown primitive 'frob'" -- "$FTC" print "$tmp/bad.jaxpr"
printf '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }\n' >"$tmp/sin.jaxpr"
expect print-ok 0 'b:f32\[3\] = sin a' -- "$FTC" print "$tmp/sin.jaxpr"
expect print-stdin 0 'sin a' -- sh -c "\"$FTC\" print - < \"$tmp/sin.jaxpr\""
expect hash-ok 0 '^[0-9a-f]{32}$' -- "$FTC" hash "$tmp/sin.jaxpr"
sed 's/\ba\b/zz/g' "$tmp/sin.jaxpr" >"$tmp/sin2.jaxpr"
h1=$("$FTC" hash "$tmp/sin.jaxpr"); h2=$("$FTC" hash "$tmp/sin2.jaxpr")
if [ "$h1" = "$h2" ] && [ -n "$h1" ]; then pass=$((pass + 1)); else echo "FAIL hash-alpha: $h1 vs $h2"; fail=$((fail + 1)); fi
expect dot-ok 0 'digraph' -- "$FTC" dot "$tmp/sin.jaxpr"

# run
printf '\x93NUMPY\x01\x00' >"$tmp/trunc.npy"
expect run-no-inputs 1 'input' -- "$FTC" run "$tmp/sin.jaxpr"
expect run-truncated-npy 1 'trunc.npy' -- "$FTC" run "$tmp/sin.jaxpr" --in "$tmp/trunc.npy"
expect run-missing-npy 1 'nope.npy' -- "$FTC" run "$tmp/sin.jaxpr" --in "$tmp/nope.npy"
expect run-in-needs-value 1 '--in needs a value' -- "$FTC" run "$tmp/sin.jaxpr" --in
if [ -f "$FIX/golden/mlp_loss.jaxpr" ]; then
  ins=()
  for f in "$FIX"/golden/mlp_loss.in*.npy; do ins+=(--in "$f"); done
  expect run-mlp 0 '' -- "$FTC" run "$FIX/golden/mlp_loss.jaxpr" "${ins[@]}" --out-dir "$tmp/o"
  [ -f "$tmp/o/out0.npy" ] && pass=$((pass + 1)) || { echo "FAIL run-mlp: no out0.npy"; fail=$((fail + 1)); }
  expect run-too-many-inputs 1 'input' -- "$FTC" run "$FIX/golden/mlp_loss.jaxpr" "${ins[@]}" --in "${ins[1]}"
fi

expect demo 0 'parsed back from text: same hash' -- "$FTC" demo
expect demo-extra-arg 1 "unexpected argument" -- "$FTC" demo foo

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
