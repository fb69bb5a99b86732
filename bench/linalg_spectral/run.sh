#!/usr/bin/env bash
# bench/linalg_spectral/run.sh: jnp.linalg.eigh and svd at n = 256 (f32),
# FrankenTrace (ft_eigh / ft_svd traced, ft_jit, ft_call: LAPACK syevd /
# gesdd on one OpenBLAS thread) beside jax.jit (the oracle venv), interleaved
# twice; prints a table with the FT/JAX ratio of the best medians (goal <= 1,
# issue 20).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-bench}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
tools/build "$build" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/linalg_spectral/bench_spectral.c "$build"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o "$build"/bench_spectral
declare -A ft jx
for round in 1 2; do
  while read -r n med min; do ft[$n]="${ft[$n]:-} $med"; done < <("$build"/bench_spectral)
  while read -r n med min; do jx[$n]="${jx[$n]:-} $med"; done < <("$py" bench/linalg_spectral/bench_jax.py)
done
echo "| jnp.linalg, 256 x 256 f32 | FrankenTrace median (ms) | jax.jit median (ms) | FT/JAX ratio | goal |"
echo "|---|---:|---:|---:|---|"
for n in eigh svd; do
  f=$(echo ${ft[$n]} | tr ' ' '\n' | sort -g | head -1)
  j=$(echo ${jx[$n]} | tr ' ' '\n' | sort -g | head -1)
  r=$(awk -v a="$f" -v b="$j" 'BEGIN { printf "%.3f", a / b }')
  echo "| $n | $f | $j | $r | <= 1 |"
done
