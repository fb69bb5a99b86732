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
expect print-no-file 2 'missing FILE' -- "$FTC" print
expect print-two-files 2 'expected one FILE' -- "$FTC" print a b
expect print-bad-option 2 "unknown option '--frob'" -- "$FTC" print --frob x
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
printf '{ lambda ; a:f32[4611686018427387904,4]. let\n    b:f32[4611686018427387904,4] = sin a\n  in (b,) }\n' >"$tmp/huge.jaxpr"
expect print-element-overflow 1 'huge.jaxpr:1:14: shape f32\[4611686018427387904,4\] has more than 2\^56 elements' -- "$FTC" print "$tmp/huge.jaxpr"

# run
printf '\x93NUMPY\x01\x00' >"$tmp/trunc.npy"
expect run-no-inputs 1 'input' -- "$FTC" run "$tmp/sin.jaxpr"
expect run-truncated-npy 1 'trunc.npy' -- "$FTC" run "$tmp/sin.jaxpr" --in "$tmp/trunc.npy"
expect run-missing-npy 1 'nope.npy' -- "$FTC" run "$tmp/sin.jaxpr" --in "$tmp/nope.npy"
expect run-in-needs-value 2 '--in needs a value' -- "$FTC" run "$tmp/sin.jaxpr" --in
if [ -f "$FIX/golden/mlp_loss.jaxpr" ]; then
  ins=()
  for f in "$FIX"/golden/mlp_loss.in*.npy; do ins+=(--in "$f"); done
  expect run-mlp 0 '' -- "$FTC" run "$FIX/golden/mlp_loss.jaxpr" "${ins[@]}" --out-dir "$tmp/o"
  [ -f "$tmp/o/out0.npy" ] && pass=$((pass + 1)) || { echo "FAIL run-mlp: no out0.npy"; fail=$((fail + 1)); }
  expect run-too-many-inputs 1 'input' -- "$FTC" run "$FIX/golden/mlp_loss.jaxpr" "${ins[@]}" --in "${ins[1]}"
fi

# An output that cannot be written whole (here a file-size limit, as a full
# disk) fails naming the file and the errno, and leaves the old file intact
# and no temporary behind.
printf '{ lambda ; . let\n    b:f32[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,) sharding=None] 1.0:f32[]\n  in (b,) }\n' >"$tmp/small.jaxpr"
printf '{ lambda ; . let\n    b:f32[3000] = broadcast_in_dim[broadcast_dimensions=() shape=(3000,) sharding=None] 1.0:f32[]\n  in (b,) }\n' >"$tmp/big.jaxpr"
expect run-small-out 0 '' -- "$FTC" run "$tmp/small.jaxpr" --out-dir "$tmp/lim"
expect run-out-too-large 1 "npy: cannot write '$tmp/lim/out0.npy': File too large \(the file was not changed\)" -- \
  sh -c "trap '' XFSZ; ulimit -f 4; exec \"$FTC\" run \"$tmp/big.jaxpr\" --out-dir \"$tmp/lim\""
left="$(ls -A "$tmp/lim" | tr '\n' ' ')"
if [ "$left" = "out0.npy " ] && [ "$(stat -c %s "$tmp/lim/out0.npy")" = 136 ]; then pass=$((pass + 1));
else echo "FAIL run-out-too-large-left: '$left' $(stat -c %s "$tmp/lim/out0.npy")"; fail=$((fail + 1)); fi

# A loop that would run 2^31 times stops at --max-iterations or --max-seconds.
printf '{ lambda ; . let\n    c:i32[] _:i32[] = while[\n      body_jaxpr={ lambda ; d:i32[] e:i32[]. let f:i32[] = add d 1:i32[] in (f, e) }\n      body_nconsts=0\n      cond_jaxpr={ lambda ; g:i32[] h:i32[]. let i:bool[] = lt g h in (i,) }\n      cond_nconsts=0\n    ] 0:i32[] 2147483647:i32[]\n  in (c,) }\n' >"$tmp/forever.jaxpr"
expect run-max-iterations 1 'while: stopped at the loop limit of 1000 iterations' -- "$FTC" run "$tmp/forever.jaxpr" --max-iterations 1000
expect run-max-iterations-jit 1 'jit: while step: while: stopped at the loop limit of 1000 iterations' -- "$FTC" run "$tmp/forever.jaxpr" --engine jit --max-iterations 1000
expect run-max-seconds 1 'while: stopped at the loop time limit of 0.3 s \(after [0-9]+ iterations\)' -- "$FTC" run "$tmp/forever.jaxpr" --max-seconds 0.3
expect run-max-iterations-bad 2 '--max-iterations needs a positive integer' -- "$FTC" run "$tmp/forever.jaxpr" --max-iterations 2.5
expect run-max-seconds-bad 2 '--max-seconds needs a positive number of seconds' -- "$FTC" run "$tmp/forever.jaxpr" --max-seconds 0

# Under an address-space limit a GEMM either runs or fails with out-of-memory;
# nothing hangs (OpenBLAS starts no threads of its own, and its work buffer
# is checked for room before each call that could need a new one).
printf '{ lambda ; . let\n    a:f32[256,256] = broadcast_in_dim[broadcast_dimensions=() shape=(256, 256) sharding=None] 1.0:f32[]\n    b:f32[256,256] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a a\n  in (b,) }\n' >"$tmp/mm.jaxpr"
# Sanitizer builds reserve terabytes of shadow address space: no ulimit -v there.
if ldd "$FTC" 2>/dev/null | grep -qE 'lib(a|t)san'; then
  echo "SKIP ulimit-v: $FTC is built with a sanitizer"
else
for v in 256 320 384 448 512 768; do
  for e in interp jit; do
    out=$(sh -c "ulimit -v $((v * 1024)); exec timeout 60 \"$FTC\" run \"$tmp/mm.jaxpr\" --engine $e" 2>&1)
    rc=$?
    if { [ $rc -eq 0 ] && echo "$out" | grep -q '^out0: f32\[256,256\] = \[256, 256,'; } ||
       { [ $rc -eq 1 ] && echo "$out" | grep -q 'out of memory'; }; then pass=$((pass + 1))
    else echo "FAIL ulimit-v-$v-$e: exit $rc: $out" | head -3; fail=$((fail + 1)); fi
  done
done
out=$(sh -c "ulimit -v $((256 * 1024)); exec timeout 60 \"$FTC\" run \"$tmp/mm.jaxpr\"" 2>&1)
if echo "$out" | grep -q 'dot_general: out of memory: OpenBLAS needs a 128 MiB work buffer'; then pass=$((pass + 1))
else echo "FAIL ulimit-v-256-message: $out" | head -3; fail=$((fail + 1)); fi
fi

# ftc demo trains the digits classifier; one epoch keeps these runs short
# (the full run is tools/run-demo; tests/demo checks its pieces).
D=(demo --epochs 1 --quiet)
expect demo 0 '13 of 13 outputs bit-identical' -- "$FTC" "${D[@]}"
expect demo-jax 0 'weights FNV-1a 108cfae0d4df4515 here, 108cfae0d4df4515 in JAX: bit-identical' -- "$FTC" "${D[@]}"
expect demo-extra-arg 2 "unknown option 'foo'" -- "$FTC" demo foo
expect demo-bad-epochs 2 "--epochs takes an integer in 1..1000, not '0'" -- "$FTC" demo --epochs 0
expect demo-bad-model 2 "--model takes mlp or cnn, not .resnet." -- "$FTC" demo --model resnet
expect demo-no-data 1 "the digits: $tmp/nodata/images.npy" -- "$FTC" demo --data "$tmp/nodata"
# A run that disagrees with JAX's recorded one fails: a changed step loss
# (the full default run: 540 steps), a changed initial-weights hash.
mkdir -p "$tmp/jax"
cp "$FIX/demo/mlp.txt" "$FIX/demo/mlp_loss.npy" "$tmp/jax/"
# step 101's float32 (little-endian): flip bit 0 of its top byte, an exponent bit (x4 or /4)
off=$(( $(stat -c %s "$tmp/jax/mlp_loss.npy") - 540 * 4 + 100 * 4 + 3 ))
orig=$(dd if="$tmp/jax/mlp_loss.npy" bs=1 skip=$off count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "\\$(printf %o $(( orig ^ 1 )))" | dd of="$tmp/jax/mlp_loss.npy" bs=1 seek=$off conv=notrunc 2>/dev/null
expect demo-jax-trajectory 1 "step 101's loss .* is not JAX's .* within" -- "$FTC" demo --quiet --jax "$tmp/jax"
sed 's/^init_hash .*/init_hash 0000000000000000/' "$FIX/demo/mlp.txt" >"$tmp/jax/mlp.txt"
expect demo-jax-init 1 "the initial weights are not JAX's for seed 0" -- "$FTC" "${D[@]}" --jax "$tmp/jax"

# --ledger: ftc demo records the trace, the value_and_grad, the inlining,
# the exact-tier rewrites and compilations of ft_jit, the initialization,
# the one-step check, the first training step and the final evaluation;
# ftledger then verifies, replays and re-executes it.
FTLEDGER=${3:-$(dirname "$FTC")/ftledger}
L="$tmp/demo-ledger"
expect demo-ledger 0 'ledger: 27 records' -- "$FTC" "${D[@]}" --ledger "$L"
expect demo-ledger-verify 0 'clean - 27 records' -- "$FTLEDGER" verify "$L"
expect demo-ledger-replay 0 '19 recomputed, 19 match, 0 diverged; 0 not replayable' -- "$FTLEDGER" replay "$L"
expect demo-ledger-reexec 0 '8 recomputed, 8 match, 0 diverged; 0 not replayable' -- "$FTLEDGER" reexec "$L"
expect demo-ledger-show 0 'transform value_and_grad +\{"argnums":\[0,1,2,3\],"has_aux":false\}' -- "$FTLEDGER" show "$L"
expect demo-ledger-again 0 '' -- "$FTC" --ledger "$L" "${D[@]}"
expect demo-ledger-grows 0 'clean - 54 records' -- "$FTLEDGER" verify "$L"
# One flipped byte: ftc refuses to append (that would make it permanent),
# names the damage and the repair; after 'ftledger repair' it appends again.
size=$(stat -c %s "$L/log.jsonl")
orig=$(dd if="$L/log.jsonl" bs=1 skip=$((size - 40)) count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "\\$(printf %o $(( orig ^ 1 )))" | dd of="$L/log.jsonl" bs=1 seek=$((size - 40)) conv=notrunc 2>/dev/null
expect demo-ledger-damaged 1 "log.jsonl is damaged \(bytes [0-9]+\.\.[0-9]+ do not match their parity\); not opened for writing; run 'ftledger repair $L'" -- "$FTC" "${D[@]}" --ledger "$L"
expect demo-ledger-damaged-untouched 4 'corrupt - 53 records' -- "$FTLEDGER" verify "$L"
expect demo-ledger-repair 0 'repaired 1 blocks or files; 0 places beyond repair' -- "$FTLEDGER" repair "$L"
expect demo-ledger-after-repair 0 '' -- "$FTC" "${D[@]}" --ledger "$L"
expect demo-ledger-after-repair-verify 0 'clean - 81 records' -- "$FTLEDGER" verify "$L"
expect demo-ledger-hashes 0 '' -- "$FTC" "${D[@]}" --ledger "$tmp/l2" --ledger-calls hashes
expect demo-ledger-hashes-reexec 0 '0 recomputed.*8 not replayable' -- "$FTLEDGER" reexec "$tmp/l2"
expect demo-ledger-none 0 '' -- "$FTC" "${D[@]}" --ledger "$tmp/l3" --ledger-calls none
expect demo-ledger-none-verify 0 'clean - 19 records' -- "$FTLEDGER" verify "$tmp/l3"
expect ledger-needs-value 2 '--ledger needs a value' -- "$FTC" demo --ledger
expect ledger-calls-bad 2 "--ledger-calls takes none, hashes or bytes" -- "$FTC" demo --ledger "$tmp/l4" --ledger-calls all
expect ledger-not-a-dir 1 'ledger' -- "$FTC" demo --ledger /dev/null/x
printf '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }\n' >"$tmp/sin3.jaxpr"
expect jvp-ledger 0 '' -- "$FTC" jvp "$tmp/sin3.jaxpr" --ledger "$tmp/l5"
expect jvp-ledger-replay 0 '2 recomputed, 2 match' -- "$FTLEDGER" replay "$tmp/l5"

# transform: a JAX-style transform stack, the IR after every step, bad strings with a caret
printf '{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = mul a b\n    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n  in (d,) }\n' >"$tmp/dot.jaxpr"
expect transform-grad 0 'd:f32\[3\] = mul c b' -- "$FTC" transform "$tmp/dot.jaxpr" 'grad(f)'
expect transform-bad-name 1 "unknown transform 'grad2'" -- "$FTC" transform "$tmp/dot.jaxpr" 'vmap(grad2(f))'
expect transform-bad-caret 1 '^      \^$' -- "$FTC" transform "$tmp/dot.jaxpr" 'grad(f'
expect transform-in-axes 1 'column 17: in_axes has 3 entries but the function takes 2 inputs' -- "$FTC" transform "$tmp/dot.jaxpr" 'vmap(f, in_axes=(0, None, 0), axis_size=2)'
expect transform-needs-size 1 'vmap needs axis_size=' -- "$FTC" transform "$tmp/dot.jaxpr" 'vmap(f)'
expect transform-step-error 1 '^ftc transform: grad\(\.\.\.\): gradient' -- "$FTC" transform "$tmp/dot.jaxpr" 'grad(vmap(f, axis_size=2))'
expect transform-no-expr 2 'missing EXPR' -- "$FTC" transform "$tmp/dot.jaxpr"
if [ -f "$FIX/golden/mlp_loss.jaxpr" ]; then
  M="$FIX/golden/mlp_loss.jaxpr"
  E='jit(vmap(grad(f, argnums=0), in_axes=(None, None, None, None, 0, 0)))'
  expect transform-dump 0 'axis_size=7 \(from the input shapes\)' -- "$FTC" transform "$M" "$E" --dump \
    --in-shapes 'f32[4,3],f32[3],f32[3,2],f32[2],f32[7,5,4],f32[7,5,2]'
  heads=$(grep '^# ' "$tmp/out" | cut -c1-20 | tr '\n' '|')
  want='# input: f|# step 1: grad(f, ar|# step 2: vmap(grad(|# step 3: jit(vmap(g|'
  if [ "$heads" = "$want" ]; then pass=$((pass + 1)); else echo "FAIL transform-dump-order: $heads"; fail=$((fail + 1)); fi
  ins=()
  for f in "$FIX"/golden/mlp_loss.in*.npy; do ins+=(--in "$f"); done
  expect transform-run-jit 0 'compiled by ft_jit' -- "$FTC" transform "$M" 'jit(grad(f, argnums=(0, 1)))' --run "${ins[@]}" --quiet
  grep -v '^#' "$tmp/out" >"$tmp/jit.txt"
  expect transform-run-eval 0 'reference interpreter' -- "$FTC" transform "$M" 'grad(f, argnums=(0, 1))' --run "${ins[@]}" --quiet
  grep -v '^#' "$tmp/out" >"$tmp/eval.txt"
  if [ -s "$tmp/jit.txt" ] && cmp -s "$tmp/jit.txt" "$tmp/eval.txt"; then pass=$((pass + 1)); else echo "FAIL transform-run-same"; fail=$((fail + 1)); fi
fi

# hessian: the Hessian of sum(x^3) at x = (1, 2, 3) is diag(6, 12, 18), exactly.
printf '{ lambda ; a:f32[3]. let\n    b:f32[3] = integer_pow[y=3] a\n    c:f32[] = reduce_sum[axes=(0,) out_sharding=None] b\n  in (c,) }\n' >"$tmp/cube.jaxpr"
printf '\x93NUMPY\x01\x00\x3a\x00{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (3,), }\n\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40' >"$tmp/x123.npy"
expect hessian-cli 0 'b:f32\[3,3\]|f32\[3,3\]' -- "$FTC" hessian "$tmp/cube.jaxpr"
expect hessian-value 0 'out0: f32\[3,3\] = \[6, 0, 0, 0, 12, 0, 0, 0, 18\]' -- \
  "$FTC" transform "$tmp/cube.jaxpr" 'hessian(f)' --run --in "$tmp/x123.npy" --quiet

# Conventions (issue 22): --opt=VALUE as --opt VALUE, exit 2 for usage
# errors, 'ftc help CMD', --quiet on every transform command.
expect help-cmd 0 '^usage: ftc grad FILE' -- "$FTC" help grad
expect help-unknown 2 "ftc help: unknown command 'nope'" -- "$FTC" help nope
expect grad-argnums-eq 0 '' -- "$FTC" grad "$tmp/dot.jaxpr" --argnums=0,1 --quiet
cp "$tmp/out" "$tmp/grad-eq.txt"
expect grad-argnums-sep 0 '' -- "$FTC" grad "$tmp/dot.jaxpr" --argnums 0,1 --quiet
if [ -s "$tmp/out" ] && cmp -s "$tmp/out" "$tmp/grad-eq.txt"; then pass=$((pass + 1)); else echo "FAIL argnums-eq-same"; fail=$((fail + 1)); fi
expect grad-argnums-bad 2 "bad --argnums 'x'" -- "$FTC" grad "$tmp/dot.jaxpr" --argnums=x
expect grad-unknown-option 2 "unknown option '--frob' \(try 'ftc help grad'\)" -- "$FTC" grad "$tmp/dot.jaxpr" --frob
expect run-engine-bad 2 "--engine must be interp or jit" -- "$FTC" run "$tmp/sin.jaxpr" --engine=gpu --in "$tmp/x123.npy"
expect compile-no-emit 2 "--emit must be" -- "$FTC" compile "$tmp/sin.jaxpr"
expect opt-tier-bad 2 "unknown tier" -- "$FTC" opt "$tmp/sin.jaxpr" --tier=fast
# A refused transform prints its error and nothing on standard output.
expect grad-argnums-range 1 'argnums' -- "$FTC" grad "$tmp/dot.jaxpr" --argnums 5
if [ ! -s "$tmp/out" ]; then pass=$((pass + 1)); else echo "FAIL grad-argnums-range printed:"; head -3 "$tmp/out"; fail=$((fail + 1)); fi
for c in jvp vjp grad jacfwd jacrev hessian; do
  expect "quiet-$c" 0 '' -- "$FTC" "$c" "$tmp/cube.jaxpr" --quiet
  if ! grep -q '^# ' "$tmp/out" && grep -q 'lambda' "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL quiet-$c-output"; fail=$((fail + 1)); fi
done
expect quiet-vmap 0 '' -- "$FTC" vmap "$tmp/cube.jaxpr" --axis-size 2 --quiet
if ! grep -q '^# ' "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL quiet-vmap-output"; fail=$((fail + 1)); fi
expect quiet-opt 0 '' -- "$FTC" opt "$tmp/cube.jaxpr" --quiet
expect quiet-transform 0 '' -- "$FTC" transform "$tmp/cube.jaxpr" 'grad(f)' --quiet
# grad --run of a jaxpr with a constant: its value comes first, then the input.
printf '{ lambda a:f32[3]; b:f32[3]. let\n    c:f32[3] = mul a b\n    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n  in (d,) }\n' >"$tmp/const.jaxpr"
expect grad-run-const 0 '^out0: f32\[3\] = \[1, 2, 3\]$' -- "$FTC" grad "$tmp/const.jaxpr" --run --in "$tmp/x123.npy" --in "$tmp/x123.npy" --quiet
expect grad-run-const-count 1 'takes 2 inputs \(the values of its 1 constants, then 1 arguments\); 1 given' -- \
  "$FTC" grad "$tmp/const.jaxpr" --run --in "$tmp/x123.npy"
expect jvp-run-const 0 '^out1: f32\[\] = \[14\]$' -- "$FTC" jvp "$tmp/const.jaxpr" --run --in "$tmp/x123.npy" --in "$tmp/x123.npy" --in "$tmp/x123.npy" --quiet
# vmap: the batch size is --axis-size or comes from --in; never a silent default.
expect vmap-needs-size 2 'needs the batch size: --axis-size N, or the batched inputs with --in' -- "$FTC" vmap "$tmp/cube.jaxpr"
printf '\x93NUMPY\x01\x00\x3a\x00{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (2,3),}\n\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40' >"$tmp/x2x3.npy"
expect vmap-size-from-in 0 'axis_size=2' -- "$FTC" vmap "$tmp/cube.jaxpr" --in "$tmp/x2x3.npy"
expect vmap-run 0 '^out0: f32\[2\] = \[36, 36\]$' -- "$FTC" vmap "$tmp/cube.jaxpr" --in "$tmp/x2x3.npy" --run --quiet
expect vmap-in-rank 1 'has rank 1: no axis 1 to map' -- "$FTC" vmap "$tmp/cube.jaxpr" --in-axes 1 --in "$tmp/x123.npy"
expect vmap-run-needs-in 2 '--run needs the inputs' -- "$FTC" vmap "$tmp/cube.jaxpr" --axis-size 2 --run
# Printed values are exact in every dtype: vmap/grad/jvp --run once printed
# 0 for u8 (and every dtype but f32/f64/i32/i64/bool), run and transform
# printed an i32 above 2^30 as 2.14748365e+09 and f16 as "...".
npy() { # npy FILE DESCR SHAPE BYTES(printf escapes): a format 1.0 .npy file
  local h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  printf "\x93NUMPY\x01\x00\\x$(printf %02x $((${#h} + 1)))\x00%s\n$4" "$h" >"$1"
}
npy "$tmp/u8.npy" '|u1' '(2, 2)' '\xc8\x07\xff\x80'
npy "$tmp/i32.npy" '<i4' '(2,)' '\xfe\xff\xff\x3f\x00\x00\x00\x80'
npy "$tmp/f16.npy" '<f2' '(3,)' '\x00\x3c\x00\x7c\x01\x00'
printf '{ lambda ; a:u8[2]. let b:u8[2] = add a a in (b,) }\n' >"$tmp/u8.jaxpr"
printf '{ lambda ; a:i32[2]. let b:i32[2] = add a 1:i32[] in (b,) }\n' >"$tmp/i32.jaxpr"
printf '{ lambda ; a:f16[3]. let b:f16[3] = neg a in (b,) }\n' >"$tmp/f16.jaxpr"
expect vmap-run-u8 0 '^out0: u8\[2,2\] = \[144, 14, 254, 0\]$' -- "$FTC" vmap "$tmp/u8.jaxpr" --in "$tmp/u8.npy" --run --quiet
expect run-i32-exact 0 '^out0: i32\[2\] = \[1073741823, -2147483647\]$' -- "$FTC" run "$tmp/i32.jaxpr" --in "$tmp/i32.npy"
expect run-f16 0 '^out0: f16\[3\] = \[-1, -inf, -5.96046448e-08\]$' -- "$FTC" run "$tmp/f16.jaxpr" --in "$tmp/f16.npy"
expect transform-run-i32 0 '^out0: i32\[2\] = \[1073741823, -2147483647\]$' -- \
  "$FTC" transform "$tmp/i32.jaxpr" 'jit(f)' --run --in "$tmp/i32.npy" --quiet
# jacfwd, jacrev and hessian run their result as grad/jvp/vjp do.
expect jacfwd-run 0 '^out0: f32\[3\] = \[3, 12, 27\]$' -- "$FTC" jacfwd "$tmp/cube.jaxpr" --run --in "$tmp/x123.npy"
expect hessian-run 0 '^out0: f32\[3,3\] = \[6, 0, 0, 0, 12, 0, 0, 0, 18\]$' -- "$FTC" hessian "$tmp/cube.jaxpr" --run --in "$tmp/x123.npy"
expect jacrev-in-without-run 2 '--in is for --run' -- "$FTC" jacrev "$tmp/cube.jaxpr" --in "$tmp/x123.npy"
# JAX's transform names that are not commands say where their work is done.
expect unknown-command-jit 2 "unknown command 'jit': to run with the JIT, 'ftc run FILE --engine jit" -- "$FTC" jit "$tmp/i32.jaxpr"
# A directory given as a .npy file is named as one.
expect npy-directory 1 "$tmp: is a directory, not a .npy file" -- "$FTC" run "$tmp/sin.jaxpr" --in "$tmp"

# The compile cache on disk: FT_CACHE_DIR moves it, FT_CACHE=off turns it
# off, FT_CACHE_MAX caps it (least recently used out first); ftc cache.
C="$tmp/cache"
expect cache-empty 0 "^entries: 0$" -- env FT_CACHE_DIR="$C" "$FTC" cache info
expect cache-dir 0 "^directory: $C$" -- env FT_CACHE_DIR="$C" "$FTC" cache info
names=()
for p in sin cube dot; do
  args=(--in "$tmp/x123.npy")
  [ $p = dot ] && args+=(--in "$tmp/x123.npy")
  before=$(ls "$C" 2>/dev/null)
  expect "cache-fill-$p" 0 '' -- env FT_CACHE_DIR="$C" "$FTC" run "$tmp/$p.jaxpr" --engine jit "${args[@]}"
  new=$(comm -13 <(echo "$before") <(ls "$C"))
  touch -d "@$((1700000000 + ${#names[@]}))" "$C/$new"  # a known age order
  names+=("$new")
done
expect cache-three 0 "^entries: 3$" -- env FT_CACHE_DIR="$C" "$FTC" cache info
# A cap of the three entries' total: a new entry evicts the oldest first, and
# the next oldest while the rest do not fit (here sin's object is the oldest
# and cos's is no larger, so exactly the oldest goes).
cap=0
for n in "${names[@]}"; do cap=$((cap + $(stat -c %s "$C/$n"))); done
printf '{ lambda ; a:f32[3]. let\n    b:f32[3] = cos a\n  in (b,) }\n' >"$tmp/cos.jaxpr"
before=$(ls "$C")
expect cache-evict-run 0 '' -- env FT_CACHE_DIR="$C" FT_CACHE_MAX="$cap" "$FTC" run "$tmp/cos.jaxpr" --engine jit --in "$tmp/x123.npy"
newest=$(comm -13 <(echo "$before") <(ls "$C"))
left=$(ls "$C" | sort | tr '\n' ' ')
want=$(printf '%s\n' "${names[1]}" "${names[2]}" "$newest" | sort | tr '\n' ' ')
total=$(cat "$C"/*.ftobj 2>/dev/null | wc -c)
if [ -n "$newest" ] && [ "$left" = "$want" ] && [ "$total" -le "$cap" ]; then pass=$((pass + 1));
else echo "FAIL cache-evict: left $left($total bytes, cap $cap), wanted $want"; fail=$((fail + 1)); fi
expect cache-clear 0 "^removed [0-9]+ entries from $C$" -- env FT_CACHE_DIR="$C" "$FTC" cache clear
expect cache-cleared 0 "^entries: 0$" -- env FT_CACHE_DIR="$C" "$FTC" cache info
expect cache-off-run 0 '' -- env FT_CACHE=off FT_CACHE_DIR="$C" "$FTC" run "$tmp/sin.jaxpr" --engine jit --in "$tmp/x123.npy"
if [ -z "$(ls -A "$C")" ]; then pass=$((pass + 1)); else echo "FAIL cache-off wrote: $(ls "$C")"; fail=$((fail + 1)); fi
expect cache-off-info 0 '^disk cache: off \(FT_CACHE=off\)$' -- env FT_CACHE=off "$FTC" cache info
expect cache-bad 2 "expected info or clear, got 'purge'" -- "$FTC" cache purge

# ftledger: --version, --help, --opt=VALUE, usage errors (exit 2, as ftc).
expect ftledger-version 0 '^ftledger [0-9]+\.[0-9]+\.[0-9]+$' -- "$FTLEDGER" --version
expect ftledger-cmd-help 0 'usage: ftledger' -- "$FTLEDGER" verify --help
expect ftledger-seq-eq 0 '' -- "$FTLEDGER" show "$L" --seq=1
cp "$tmp/out" "$tmp/seq-eq.txt"
expect ftledger-seq-sep 0 '' -- "$FTLEDGER" show "$L" --seq 1
if [ -s "$tmp/out" ] && cmp -s "$tmp/out" "$tmp/seq-eq.txt"; then pass=$((pass + 1)); else echo "FAIL ftledger-seq-same"; fail=$((fail + 1)); fi
expect ftledger-bad-option 2 "ftledger verify: unknown option '--frob'" -- "$FTLEDGER" verify "$L" --frob
expect ftledger-seq-bad 2 "--seq takes a record number \\(1, 2, ...\\), not 'x'" -- "$FTLEDGER" show "$L" --seq=x
# --mode hardened (issue 18): guards fire, are printed, fail the run with
# --guard-fail, and are ledger records ftledger shows; strict prints none.
printf '{ lambda ; a:f32[4]. let\n    b:f32[4] = log a\n  in (b,) }\n' >"$tmp/log.jaxpr"
printf '\x93NUMPY\x01\x00\x3a\x00{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (4,), }\n\x00\x00\x80\x3f\x00\x00\x00\x00\x00\x00\x80\xbf\x00\x00\x80\x40' >"$tmp/x1014.npy"
G='guard nonfinite \(continued\) in ENG: NaN/Inf in output 0 \(f32\[4\]\): 2 element\(s\), the first at flat index 1; the result is kept'
expect mode-bad 2 "--mode takes strict or hardened, not 'lax'" -- "$FTC" run "$tmp/log.jaxpr" --mode lax
expect mode-needs-value 2 "--mode takes strict or hardened, not ''" -- "$FTC" run "$tmp/log.jaxpr" --mode
expect guard-fail-needs-hardened 2 '--guard-fail and --guard-each-step need --mode hardened' -- "$FTC" run "$tmp/log.jaxpr" --guard-fail
expect hardened-run 0 "${G/ENG/interp}" -- "$FTC" --mode hardened run "$tmp/log.jaxpr" --in "$tmp/x1014.npy"
expect hardened-run-jit 0 "${G/ENG/jit}" -- "$FTC" run "$tmp/log.jaxpr" --in "$tmp/x1014.npy" --engine jit --mode hardened
expect strict-run 0 'out0: f32\[4\] = \[0, -inf, nan, 1.38629' -- "$FTC" run "$tmp/log.jaxpr" --in "$tmp/x1014.npy"
if grep -q guard "$tmp/err"; then echo "FAIL strict-run-no-guard"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
expect hardened-guard-fail 1 'ftc run: hardened: NaN/Inf in output 0 \(f32\[4\]\): 2 element\(s\), the first at flat index 1; the call fails \(guard_fail\)' -- \
  "$FTC" --mode hardened --guard-fail run "$tmp/log.jaxpr" --in "$tmp/x1014.npy" --out-dir "$tmp/gf"
if [ -e "$tmp/gf/out0.npy" ]; then echo "FAIL hardened-guard-fail-no-output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
expect hardened-each-step 0 'guard nonfinite \(continued\) in interp: NaN/Inf appears in result 0 \(f32\[4\]\) of equation 0 \(log\)' -- \
  "$FTC" --mode hardened --guard-each-step run "$tmp/log.jaxpr" --in "$tmp/x1014.npy"
expect hardened-ledger 0 '' -- "$FTC" --mode hardened --ledger "$tmp/lg" run "$tmp/log.jaxpr" --in "$tmp/x1014.npy" --engine jit
expect hardened-ledger-verify 0 'clean - 5 records' -- "$FTLEDGER" verify "$tmp/lg"
expect hardened-ledger-replay 0 '3 recomputed, 3 match, 0 diverged; 0 not replayable' -- "$FTLEDGER" replay "$tmp/lg"
expect hardened-ledger-show 0 'guard nonfinite fired in jit, equation -1 \(\), output 0: continued' -- "$FTLEDGER" show "$tmp/lg" --kind guard
expect hardened-ledger-show-mode 0 '^#[0-9]+ +guard +nonfinite .*\[hardened\]' -- "$FTLEDGER" show "$tmp/lg" --kind guard
printf '{ lambda ; a:c64[3]. let\n    b:c64[] = reduce_max[axes=(0,)] a\n  in (b,) }\n' >"$tmp/cmax.jaxpr"
expect jit-fallback-refused 1 'jit: 1 equation\(s\) would run as interpreter fallback steps, the first equation 0 \(reduce_max\)' -- \
  "$FTC" run "$tmp/cmax.jaxpr" --engine jit
expect jit-fallback-allowed 1 'expected 1 inputs' -- "$FTC" run "$tmp/cmax.jaxpr" --engine jit --allow-fallback
# a custom_jvp rule JAX printed only by name: refused; --custom-jvp=primal opts in (docs/autodiff.md)
printf '{ lambda ; a:f32[2]. let\n    b:f32[] = custom_jvp_call[\n      name=safe_norm\n      call_jaxpr={ lambda ; c:f32[2]. let\n          d:f32[2] = integer_pow[y=2] c\n          e:f32[] = reduce_sum[axes=(0,)] d\n          f:f32[] = sqrt e\n        in (f,) }\n      jvp=_\n      symbolic_zeros=False\n    ] a\n  in (b,) }\n' >"$tmp/snorm.jaxpr"
expect custom-jvp-refused 1 "jvp of custom_jvp_call 'safe_norm': its jvp rule is only a name in the printout \(jvp=_\)" -- \
  "$FTC" grad "$tmp/snorm.jaxpr"
expect custom-jvp-primal 0 'sqrt' -- "$FTC" grad "$tmp/snorm.jaxpr" --custom-jvp=primal
expect custom-jvp-bad 2 "--custom-jvp takes refuse or primal, not 'maybe'" -- "$FTC" --custom-jvp=maybe grad "$tmp/snorm.jaxpr"
# run --sub-const: a nested jaxpr's constants (printed without values) bound from .npy files
printf '{ lambda ; x:f32[3]. let\n    w:f32[3] = jit[\n      name=g\n      jaxpr={ lambda u:f32[3]; t:f32[3]. let\n          q:f32[3] = mul t u\n        in (q,) }\n    ] x\n  in (w,) }\n' >"$tmp/subc.jaxpr"
expect run-sub-const-unbound 1 'ft_jaxpr_bind_sub_consts' -- "$FTC" run "$tmp/subc.jaxpr" --in "$tmp/x123.npy"
expect run-sub-const 0 '^out0: f32\[3\] = \[1, 4, 9\]$' -- "$FTC" run "$tmp/subc.jaxpr" --sub-const "0=$tmp/x123.npy" --in "$tmp/x123.npy"
expect run-sub-const-jit 0 '^out0: f32\[3\] = \[1, 4, 9\]$' -- "$FTC" run "$tmp/subc.jaxpr" --engine jit --sub-const "0=$tmp/x123.npy" --in "$tmp/x123.npy"
expect run-sub-const-bad-k 1 "--sub-const '1=x.npy': expected K=FILE.npy with K in \[0, 1\)" -- "$FTC" run "$tmp/subc.jaxpr" --sub-const 1=x.npy --in "$tmp/x123.npy"
expect run-sub-const-missing 1 'nope.npy' -- "$FTC" run "$tmp/subc.jaxpr" --sub-const "0=$tmp/nope.npy" --in "$tmp/x123.npy"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
