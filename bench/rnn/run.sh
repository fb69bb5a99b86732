#!/usr/bin/env bash
# bench/rnn/run.sh: grad of a 1,000-step RNN (hidden 256, batch 32) in
# FrankenTrace (ft_grad of the scan, ft_jit, ft_call_into) beside
# jax.jit(jax.grad(...)) (the oracle venv), interleaved twice; prints a
# table with the FT/JAX ratios of time and of one call's intermediate
# memory (issue 19: goal <= 1 for both). BENCH_BUILD picks the build
# (default build-bench, release); BENCH_T and BENCH_REPS go to both sides.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-bench}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
tools/build "$build" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/rnn/bench_rnn.c "$build"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o "$build"/bench_rnn
ft=() jx=()
for round in 1 2; do
  ft+=("$(OPENBLAS_NUM_THREADS=1 "$build"/bench_rnn)")
  jx+=("$("$py" bench/rnn/bench_jax.py)")
done
best() { printf '%s\n' "$@" | sort -g -k2 | head -1; }
read -r _ fmed _ farena _ <<<"$(best "${ft[@]}")"
read -r _ jmed _ jtemp <<<"$(best "${jx[@]}")"
echo "| workload | FrankenTrace median (ms) | jax.jit median (ms) | time FT/JAX | FrankenTrace intermediates (MiB) | XLA temp (MiB) | memory FT/JAX | goal |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
awk -v fm="$fmed" -v jm="$jmed" -v fa="$farena" -v jt="$jtemp" 'BEGIN {
  printf "| grad, 1,000-step RNN (H 256, B 32, D 64, f32) | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | <= 1 |\n",
         fm, jm, fm / jm, fa / 1048576, jt / 1048576, fa / jt }'
