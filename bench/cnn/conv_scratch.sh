#!/usr/bin/env bash
# bench/cnn/conv_scratch.sh: one f32 conv_general_dilated, 64 -> 64 features,
# 3x3, SAME, on a [1,64,224,224] NCHW image (inputs from NumPy's
# default_rng(0)), run by `ftc run --engine jit --stats` under
# /usr/bin/time: the arena the buffer plan gives the call (the im2col
# scratch), the process's peak RSS and CPU time, and the step's mean time
# over 10 calls. With BEFORE=DIR (a build directory of another commit) the
# two builds alternate REPS times (default 3) in this one script, so the
# two columns share the machine's load. Issue 26.
# BENCH_BUILD picks the build (default build-test).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-test}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
reps=${REPS:-3}
[ -x /usr/bin/time ] || { echo "conv_scratch.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
tmp=${TMPDIR:-/tmp}/ft-bench-conv.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/conv.jaxpr" <<'J'
{ lambda ; a:f32[1,64,224,224] b:f32[64,64,3,3]. let
    c:f32[1,64,224,224] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) out_sharding=None padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a b
  in (c,) }
J
"$py" - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]; r = np.random.default_rng(0)
np.save(f"{d}/a.npy", r.standard_normal((1, 64, 224, 224)).astype(np.float32))
np.save(f"{d}/b.npy", r.standard_normal((64, 64, 3, 3)).astype(np.float32))
PY
builds=("$build")
[ -n "${BEFORE:-}" ] && builds=("$BEFORE" "$build")
echo "| build | run | arena (bytes) | peak RSS | CPU time (11 calls) | mean step time (10 calls) |"
echo "|---|---|---:|---:|---:|---:|"
for ((i = 1; i <= reps; i++)); do
  for b in "${builds[@]}"; do
    /usr/bin/time -f "%M %U %S" -o "$tmp/time" "$b"/tools/ftc run "$tmp/conv.jaxpr" --in "$tmp/a.npy" \
      --in "$tmp/b.npy" --engine jit --stats --out-dir "$tmp/out" >"$tmp/stats"
    arena=$(sed -nE 's/^intermediates: [0-9]+ bytes planned in an arena of ([0-9]+).*/\1/p' "$tmp/stats")
    step=$(awk '/routine conv_general_dilated/ { print $7 }' "$tmp/stats")
    read -r rss u s <"$tmp/time"
    cp "$tmp/out/out0.npy" "$tmp/out.$(basename "$b").npy"
    awk -v b="$b" -v i="$i" -v a="$arena" -v m="$rss" -v u="$u" -v s="$s" -v t="$step" 'BEGIN {
      printf "| %s | %d | %d | %.0f MB | %.2f s | %.1f ms |\n", b, i, a, m / 1024, u + s, t / 1000 }'
  done
done
if [ -n "${BEFORE:-}" ]; then
  cmp -s "$tmp/out.$(basename "$BEFORE").npy" "$tmp/out.$(basename "$build").npy" &&
    echo "outputs: byte-identical" || echo "outputs: DIFFER"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
