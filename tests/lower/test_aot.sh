#!/usr/bin/env bash
# tests/lower/test_aot.sh FTC REF FIXTURES DRIVER.c RTLIB [CC [SANITIZE]]: AOT
# (issue 6). For every golden program and a set of conformance cases
# (FFT, conv, gather/scatter, sort, top_k, windows, cumulative ops, GEMMs,
# control flow) that ft_jit runs, `ftc compile --emit obj` and `--emit h`;
# all objects are linked into ONE shared library against libfrankentrace_rt
# (RTLIB: no LLVM), a small C program (DRIVER.c + a generated table of the
# headers' functions) runs each on the fixture's inputs, and the output bytes
# must equal ft_call's (REF: tests/lower/data/aot_ref.c, ft_jit + ft_call
# on the raw input bytes, as `ftc run --engine jit`). Also: `--emit so` with
# FT_AOT_LIBDIR, no libLLVM in the libraries' or the program's dependencies,
# refused names. The driver is linked with plain CC; in a sanitized build
# (SANITIZE, meson's b_sanitize) with -fsanitize=SANITIZE, since
# libfrankentrace_rt then needs the sanitizer runtimes. Environment:
# AOT_ONLY=GLOB runs the cases so named, AOT_JOBS=N prepares N at a time,
# AOT_ALL_CONFORMANCE=1 takes every conformance case.
set -u
FTC=$1
REF=$2
FIX=$3
DRIVER=$4
RTLIB=$5
CC=${6:-${CC:-cc}}
SAN=${7:-none}
RTDIR=$(dirname "$RTLIB")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
sanflags=()
[ "$SAN" != none ] && [ -n "$SAN" ] && sanflags=(-fsanitize="$SAN")
cflags=(-std=c11 -Wall -Wextra -Wshadow -Wmissing-prototypes -Werror)

if ! env -u LD_PRELOAD "$CC" "${cflags[@]}" -DAOT_SPLIT_ONLY "$DRIVER" -o "$tmp/aot_split" 2>"$tmp/err"; then
  echo "FAIL: building the splitter"; sed 's/^/    /' "$tmp/err" | head -8; exit 1
fi

# Cases: name, jaxpr, input .npy files (in order). Golden programs keep
# their constants and inputs as NAME.constK.npy, NAME.inK.npy; a
# conformance case packs its constants and inputs first in NAME.npys (split
# here).
names=() jaxprs=() inputs=()
for f in "$FIX"/golden/*.jaxpr; do
  b=$(basename "$f" .jaxpr) ins="" k=0
  while [ -e "$FIX/golden/$b.const$k.npy" ]; do ins="$ins $FIX/golden/$b.const$k.npy"; k=$((k + 1)); done
  k=0
  while [ -e "$FIX/golden/$b.in$k.npy" ]; do ins="$ins $FIX/golden/$b.in$k.npy"; k=$((k + 1)); done
  names+=("g_$b") jaxprs+=("$f") inputs+=("$ins")
done
# A fallback step (the interpreter's rule inside the runtime): no fixture
# plans one any more, so a program of the one kind left, mul with an
# out_dtype other than its operands' (on a golden program's inputs).
names+=("d_aot_fallback") jaxprs+=("$(dirname "$DRIVER")/aot_fallback.jaxpr")
inputs+=("$FIX/golden/binary_arith_f32.in0.npy $FIX/golden/binary_arith_f32.in1.npy")
# The conformance set is the families with routine, GEMM and control steps;
# the other ~1090 cases (elementwise primitives per dtype, x64 twins) are
# loop kernels that the golden programs cover, left out for CI time.
# AOT_ALL_CONFORMANCE=1 takes every case (run by hand: ~10 minutes).
conf=() pats=('prim_fft_*' 'x64_prim_fft_*' 'prim_conv_*' 'prim_gather*' 'prim_scatter*' 'prim_sort*'
              'prim_top_k*' 'prim_reduce_window*' 'prim_cum*' 'prim_dot_general_*f32' 'prim_pad*' 'ctl_*')
[ -n "${AOT_ALL_CONFORMANCE:-}" ] && pats=('*')
for pat in "${pats[@]}"; do
  for f in "$FIX"/conformance/$pat.jaxpr; do
    b=$(basename "$f" .jaxpr)
    case $b in *.*) continue ;; esac  # transformed variants have no pack of their own
    [ -e "$FIX/conformance/$b.npys" ] && conf+=("$b")
  done
done
for b in "${conf[@]}"; do
  # the constants and inputs: as many leading arrays as the plan has inputs
  n=$("$FTC" compile "$FIX/conformance/$b.jaxpr" --emit h --name c 2>/dev/null | sed -n 's/^#define c_NUM_INPUTS //p')
  [ -n "$n" ] || n=0
  mkdir -p "$tmp/in/$b"
  if ! "$tmp/aot_split" --split "$FIX/conformance/$b.npys" "$n" "$tmp/in/$b" 2>"$tmp/err"; then
    echo "FAIL c_$b: splitting its inputs"; sed 's/^/    /' "$tmp/err" | head -3; fail=$((fail + 1)); continue
  fi
  ins=""
  for ((k = 0; k < n; k++)); do ins="$ins $tmp/in/$b/in$k.npy"; done
  names+=("c_$b") jaxprs+=("$FIX/conformance/$b.jaxpr") inputs+=("$ins")
done

# Reference outputs (ft_call), then the emitted objects and headers: per
# program in the background, AOT_JOBS (default 2) at a time, each leaving
# its verdict in $d/status (ok, excluded or fail, then a message).
prep() {
  local i=$1 name=${names[$1]} d="$tmp/${names[$1]}"
  mkdir -p "$d"
  # shellcheck disable=SC2086
  if ! "$REF" "${jaxprs[$i]}" "$d" ${inputs[$i]} >"$d/sizes" 2>"$d/err"; then
    echo "excluded $(head -c 160 "$d/err" | tr '\n' ' ')" >"$d/status"
  elif ! "$FTC" compile "${jaxprs[$i]}" --emit obj --name "$name" -o "$d/$name.o" 2>"$d/err" ||
       ! "$FTC" compile "${jaxprs[$i]}" --emit h --name "$name" -o "$tmp/$name.h" 2>"$d/err" ||
       ! "$FTC" compile "${jaxprs[$i]}" --emit plan -o "$d/plan" 2>"$d/err"; then
    echo "fail ftc compile (ft_jit runs it, so AOT must emit it): $(head -c 300 "$d/err" | tr '\n' ' ')" >"$d/status"
  else
    echo ok >"$d/status"
  fi
}
for i in "${!names[@]}"; do
  # shellcheck disable=SC2254
  case ${names[$i]} in ${AOT_ONLY:-*}) ;; *) continue ;; esac  # AOT_ONLY=GLOB: a subset, while debugging
  prep "$i" &
  while [ "$(jobs -rp | wc -l)" -ge "${AOT_JOBS:-2}" ]; do wait -n; done
done
wait
ok=() excluded=() objs=()
for i in "${!names[@]}"; do
  name=${names[$i]} d="$tmp/${names[$i]}"
  [ -e "$d/status" ] || continue
  read -r verdict msg <"$d/status"
  case $verdict in
    ok) objs+=("$d/$name.o") ok+=("$i") ;;
    excluded) excluded+=("$name: $msg") ;;
    *) echo "FAIL $name: $msg"; fail=$((fail + 1)) ;;
  esac
done
echo "emitted ${#ok[@]} programs; excluded (ft_jit or ft_call refuses them): ${#excluded[@]}"
for e in "${excluded[@]}"; do echo "    excluded $e"; done

# One library for every program: the objects' internal kernels and
# descriptors must not collide.
{
  for i in "${ok[@]}"; do echo "#include \"${names[$i]}.h\""; done
  echo 'typedef struct aot_entry {'
  echo '  const char *name;'
  echo '  int (*fn)(const void *const *in, void *const *out);'
  echo '  const char *(*error)(void);'
  echo '  void (*release)(void);'
  echo '  int n_in, n_out;'
  echo '} aot_entry;'
  echo 'static const aot_entry aot_table[] = {'
  for i in "${ok[@]}"; do
    n=${names[$i]}
    echo "  {\"$n\", $n, ${n}_error, ${n}_release, ${n}_NUM_INPUTS, ${n}_NUM_OUTPUTS},"
  done
  echo '};'
} >"$tmp/aot_table.h"
if ! env -u LD_PRELOAD "$CC" -shared -o "$tmp/libaot_all.so" "${objs[@]}" -L"$RTDIR" -l:libfrankentrace_rt.so.1 \
       -Wl,-rpath,"$RTDIR" -lm 2>"$tmp/err"; then
  echo "FAIL: linking libaot_all.so"; sed 's/^/    /' "$tmp/err" | head -8; exit 1
fi
if ! env -u LD_PRELOAD "$CC" "${cflags[@]}" "${sanflags[@]}" -I"$tmp" "$DRIVER" -o "$tmp/driver" \
       "$tmp/libaot_all.so" -Wl,-rpath,"$tmp" -L"$RTDIR" -l:libfrankentrace_rt.so.1 -Wl,-rpath,"$RTDIR" 2>"$tmp/err"; then
  echo "FAIL: building the driver"; sed 's/^/    /' "$tmp/err" | head -8; exit 1
fi

# check I: run program I through the driver and compare with ft_call's bytes.
check() {
  local i=$1 name=${names[$1]} d="$tmp/${names[$1]}" k=0 out size
  local outs=()
  while read -r out size; do
    outs+=("$d/got$k.raw:$size")
    k=$((k + 1))
  done <"$d/sizes"
  # shellcheck disable=SC2086
  if ! env -u LD_PRELOAD "$tmp/driver" "$name" ${inputs[$i]} -- "${outs[@]}" 2>"$d/err"; then
    echo "FAIL $name: driver"; sed 's/^/    /' "$d/err" | head -5
    fail=$((fail + 1)); return
  fi
  local bad=0
  for ((q = 0; q < k; q++)); do
    if ! cmp -s "$d/out$q.raw" "$d/got$q.raw"; then
      echo "FAIL $name: out$q differs from ft_call"
      cmp "$d/out$q.raw" "$d/got$q.raw" 2>&1 | head -1 | sed 's/^/    /'
      bad=1
    fi
  done
  if [ "$bad" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
for i in "${ok[@]}"; do check "$i"; done

# Every step kind was among them (keeps the lists above honest): top-level
# steps from the plans, primitives inside control steps from the jaxprs.
plans=$(for i in "${ok[@]}"; do cat "$tmp/${names[$i]}/plan"; done)
texts=$(for i in "${ok[@]}"; do cat "${jaxprs[$i]}"; done)
[ -n "${AOT_ONLY:-}" ] || for kind in 'step kernel ft_k' 'step gemm dot_general.*packed' 'step FALLBACK' 'step control while' \
            'step control scan' 'step control cond' 'step routine sort' 'step routine gather' \
            'step routine conv_general_dilated' 'step routine reduce_window' 'step routine cumsum' \
            'prim fft' 'prim scatter-add' 'prim top_k'; do
  if { [ "${kind%% *}" = step ] && grep -qE "^step [0-9]+: ${kind#step }" <<<"$plans"; } ||
     { [ "${kind%% *}" = prim ] && grep -qE " ${kind#prim }\[" <<<"$texts"; }; then
    pass=$((pass + 1))
  else
    echo "FAIL coverage: no emitted program has a '$kind' step"; fail=$((fail + 1))
  fi
done

# Neither the runtime library, the programs' library nor the program
# depends on LLVM (the compiler); the library needs libfrankentrace_rt.
for lib in "$RTLIB" "$tmp/libaot_all.so" "$tmp/driver"; do
  if readelf -d "$lib" | grep -qi 'NEEDED.*llvm' || env -u LD_PRELOAD ldd "$lib" | grep -qi llvm; then
    echo "FAIL no-llvm: $(basename "$lib") depends on LLVM:"; readelf -d "$lib" | grep -i llvm | head -3
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
done
if readelf -d "$tmp/libaot_all.so" | grep -q 'NEEDED.*\[libfrankentrace_rt\.so\.1\]'; then  # the SONAME, with the ABI number
  pass=$((pass + 1))
else
  echo "FAIL: libaot_all.so does not record libfrankentrace_rt.so.1"; fail=$((fail + 1))
fi

# The runtime library exports the AOT entry points and only ft_* symbols.
rtsyms=$(nm -D --defined-only "$RTLIB" | awk '{print $3}')
stray=$(grep -vE '^(ft_|__bss_start$|_edata$|_end$|_init$|_fini$)' <<<"$rtsyms" || true)
if [ -z "$stray" ] && [ "$(grep -cE '^ft_aot_rt_(call|error|release)$' <<<"$rtsyms")" -eq 3 ]; then
  pass=$((pass + 1))
else
  echo "FAIL rt-exports: stray symbols or no ft_aot_rt_*:"; echo "$stray" | head -5 | sed 's/^/    /'
  fail=$((fail + 1))
fi

# `--emit so` links the library itself, against libfrankentrace_rt when
# FT_AOT_LIBDIR names its directory; the kernels are not exported.
prog=$FIX/golden/layer_norm.jaxpr
if FT_AOT_LIBDIR=$RTDIR "$FTC" compile "$prog" --emit so --name ln -o "$tmp/libln.so" 2>"$tmp/err" &&
   readelf -d "$tmp/libln.so" | grep -q 'NEEDED.*libfrankentrace_rt' &&
   ! readelf -d "$tmp/libln.so" | grep -qi 'NEEDED.*llvm' &&
   [ "$(nm -D --defined-only "$tmp/libln.so" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')" = "ln ln_error ln_release " ]; then
  pass=$((pass + 1))
else
  echo "FAIL emit-so: FT_AOT_LIBDIR link or exported symbols"; sed 's/^/    /' "$tmp/err" | head -3
  nm -D --defined-only "$tmp/libln.so" 2>&1 | head -5 | sed 's/^/    /'
  fail=$((fail + 1))
fi

# Names whose _error/_release would be the runtime's symbols are refused.
if ! "$FTC" compile "$prog" --emit obj --name ft_aot_rt -o "$tmp/bad.o" 2>"$tmp/err" &&
   grep -q 'ft_aot_rt' "$tmp/err" && [ ! -e "$tmp/bad.o" ]; then
  pass=$((pass + 1))
else
  echo "FAIL refuse-name: ft_aot_rt accepted"; fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
