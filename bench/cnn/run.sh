#!/usr/bin/env bash
# bench/cnn/run.sh: the `ftc demo --model cnn` training step (conv 3x3 to 8
# channels, max pool, dense, Adam; batch 32) as ftc prints it after the
# e-graph, run with `ftc run --engine jit --stats` on one executor thread
# (per-step times: the minimum of 10 calls is the figure on a noisy
# machine), then, with CALLGRIND=1, the instruction counts of the
# convolution and pooling bodies (repeatable under any load). Issue 26.
# BENCH_BUILD picks the build (default build-test).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-test}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
tmp=${TMPDIR:-/tmp}/ft-bench-cnn.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 FT_NUM_THREADS=1
"$build"/tools/ftc demo --model cnn --epochs 1 --threads 1 >"$tmp/demo.txt"
awk '/^== 4\./{f=1;next} /^rules that fired/{f=0} f' "$tmp/demo.txt" >"$tmp/step.jaxpr"
"$py" - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]; rng = np.random.default_rng(0)
shapes = [(8, 1, 3, 3), (8,), (128, 10), (10,)] * 3 + [(), (32, 64), (32, 10)]
for i, s in enumerate(shapes):
    a = (rng.standard_normal(s) * 0.3).astype(np.float32)
    if i >= 8 and i < 12: a = np.abs(a)                # Adam's second moments
    if i == 12: a = np.array(3.0, np.float32)          # the step number
    if i == 13: a = rng.random(s).astype(np.float32)   # the images
    if i == 14: a = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    np.save(f"{d}/in{i:02d}.npy", a)
PY
args=()
for i in $(seq -w 0 14); do args+=(--in "$tmp/in$i.npy"); done
"$build"/tools/ftc run "$tmp/step.jaxpr" "${args[@]}" --engine jit --stats | sed -n '/^executor:/,$p'
if [ "${CALLGRIND:-0}" = 1 ]; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --toggle-collect=ft_conv_into \
    --toggle-collect=ft_reduce_window_into "$build"/tools/ftc run "$tmp/step.jaxpr" "${args[@]}" \
    --engine jit --stats >/dev/null 2>&1
  echo "callgrind, 11 calls (1 warm-up + 10), 2 convolutions and 1 pooling per call:"
  callgrind_annotate --inclusive=yes "$tmp/cg.out" | grep -E ':(ft_conv_into|ft_reduce_window_into) \[' || true
fi
