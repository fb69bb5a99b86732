#!/usr/bin/env bash
# tests/lower/test_aot.sh FTC FIXTURES DRIVER.c [CC]: AOT (issue 6). For golden
# programs whose plan is only compiled kernels, `ftc compile --emit so` and
# `--emit h`, compiled with a small C program (tests/lower/data/aot_driver.c)
# and run on the golden inputs, give the same output bytes as
# `ftc run --engine jit` (ft_call). The driver is linked with plain CC, no
# sanitizers: the .so is LLVM's code, not the sanitized build's.
set -u
FTC=$1
FIX=$2
DRIVER=$3
CC=${4:-${CC:-cc}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# npy_data_offset FILE: the byte offset of the data part of a .npy file.
npy_data_offset() {
  local b
  read -r -a b <<<"$(od -An -tu1 -j6 -N6 "$1")"
  if [ "${b[0]}" -ge 2 ]; then
    echo $((12 + b[2] + (b[3] << 8) + (b[4] << 16) + (b[5] << 24)))
  else
    echo $((10 + b[2] + (b[3] << 8)))
  fi
}

# check PROG: emit, build, run and compare one golden program.
check() {
  local prog=$1 d="$tmp/$1" f
  mkdir -p "$d"
  local ins=()
  for f in "$FIX/golden/$prog".in*.npy; do [ -e "$f" ] && ins+=("$f"); done
  local inargs=()
  for f in "${ins[@]}"; do inargs+=(--in "$f"); done
  if ! "$FTC" compile "$FIX/golden/$prog.jaxpr" --emit so --name ft_aot -o "$d/libft_aot.so" 2>"$d/err" ||
     ! "$FTC" compile "$FIX/golden/$prog.jaxpr" --emit h --name ft_aot -o "$d/ft_aot.h" 2>"$d/err"; then
    echo "FAIL $prog: ftc compile"; sed 's/^/    /' "$d/err" | head -5
    fail=$((fail + 1)); return
  fi
  if ! env -u LD_PRELOAD "$CC" -std=c11 -Wall -Wextra -Wshadow -Wmissing-prototypes -Werror -I"$d" "$DRIVER" -o "$d/driver" \
         "$d/libft_aot.so" -Wl,-rpath,"$d" 2>"$d/err"; then
    echo "FAIL $prog: building the driver"; sed 's/^/    /' "$d/err" | head -8
    fail=$((fail + 1)); return
  fi
  if ! "$FTC" run "$FIX/golden/$prog.jaxpr" "${inargs[@]}" --engine jit --out-dir "$d/jit" >/dev/null 2>"$d/err"; then
    echo "FAIL $prog: ftc run --engine jit"; sed 's/^/    /' "$d/err" | head -5
    fail=$((fail + 1)); return
  fi
  local outs=() k=0 off size
  while [ -e "$d/jit/out$k.npy" ]; do
    off=$(npy_data_offset "$d/jit/out$k.npy")
    size=$(($(wc -c <"$d/jit/out$k.npy") - off))
    tail -c +$((off + 1)) "$d/jit/out$k.npy" >"$d/want$k.raw"
    outs+=("$d/got$k.raw:$size")
    k=$((k + 1))
  done
  if [ "$k" -eq 0 ]; then
    echo "FAIL $prog: ftc run wrote no outputs"; fail=$((fail + 1)); return
  fi
  if ! env -u LD_PRELOAD "$d/driver" "${ins[@]}" -- "${outs[@]}" 2>"$d/err"; then
    echo "FAIL $prog: driver"; sed 's/^/    /' "$d/err" | head -5
    fail=$((fail + 1)); return
  fi
  local bad=0
  for ((i = 0; i < k; i++)); do
    if ! cmp -s "$d/want$i.raw" "$d/got$i.raw"; then
      echo "FAIL $prog: out$i differs from ft_call (ftc run --engine jit)"
      cmp "$d/want$i.raw" "$d/got$i.raw" 2>&1 | head -1 | sed 's/^/    /'
      bad=1
    fi
  done
  if [ "$bad" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# Fused elementwise chains (one kernel), integer/bool/compare kernels,
# reductions, layouts (transpose, slices) and multi-step plans with a
# scratch arena (layer_norm, grad_layer_norm).
for prog in binary_arith_f32 literals_f32 many_vars_naming int_arith_i32 i8_arith bitwise_bool \
            compare_f32 select_n_ternary scalars_f32 unary_exp reduce_f32 reduce_nan_inf \
            transpose_3d slice_strided broadcast_reshape multi_output layer_norm grad_layer_norm; do
  check "$prog"
done

# The plan of each program above really is compiled kernels only (AOT
# refuses fallback and packed-GEMM steps; this keeps the list honest).
for prog in binary_arith_f32 layer_norm; do
  if "$FTC" compile "$FIX/golden/$prog.jaxpr" --emit plan | grep -qE '^plan: .*\(([0-9]+) compiled kernels, 0 GEMM, 0 fallback\)'; then
    pass=$((pass + 1))
  else
    echo "FAIL plan-$prog: not kernels only"; fail=$((fail + 1))
  fi
done

# A program AOT refuses (a fallback step) fails with an error naming the step
# and leaves no library behind.
# (bf16 arithmetic compiles now; an i32 dot_general is still a fallback.)
"$FTC" compile "$FIX/golden/dot_i32_preferred.jaxpr" --emit so -o "$tmp/refused.so" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'step 0 (dot_general#0)' "$tmp/err" && [ ! -e "$tmp/refused.so" ]; then
  pass=$((pass + 1))
else
  echo "FAIL refuse-fallback: exit $rc"; sed 's/^/    /' "$tmp/err" | head -3; fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
