#!/usr/bin/env bash
# bench/random/run.sh: 2^24 f32 uniforms and normals from one key,
# FrankenTrace (ft_random_* traced, ft_jit, ft_call_into) beside jax.jit of
# jax.random (the oracle venv), interleaved twice; prints a table with the
# FT/JAX ratio of medians (goal <= 0.8, docs/random.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-bench}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
tools/build "$build" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/random/bench_random.c "$build"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o "$build"/bench_random
declare -A ft jx
for round in 1 2; do
  while read -r n med min; do ft[$n]="${ft[$n]:-} $med"; done < <(OPENBLAS_NUM_THREADS=1 "$build"/bench_random)
  while read -r n med min; do jx[$n]="${jx[$n]:-} $med"; done < <("$py" bench/random/bench_jax.py)
done
echo "| sampler, 2^24 f32 from one key | FrankenTrace median (ms) | jax.jit median (ms) | FT/JAX ratio | goal |"
echo "|---|---:|---:|---:|---|"
for n in uniform normal; do
  f=$(echo ${ft[$n]} | tr ' ' '\n' | sort -g | head -1)
  j=$(echo ${jx[$n]} | tr ' ' '\n' | sort -g | head -1)
  r=$(awk -v a="$f" -v b="$j" 'BEGIN { printf "%.3f", a / b }')
  echo "| $n | $f | $j | $r | <= 0.8 |"
done
