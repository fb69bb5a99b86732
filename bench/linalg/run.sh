#!/usr/bin/env bash
# bench/linalg/run.sh: the linear-algebra workloads of issue 20
# (bench_linalg.c: cholesky and solve at n = 64, 256, 1024, 512 solves of
# 16x16, a GP likelihood and its gradient at n = 512), FrankenTrace
# (traced with the C API, ft_jit, ft_call) beside jax.jit (the oracle venv,
# bench_jax.py), interleaved twice; prints a table with the FT/JAX ratio of
# the best median (goal <= 1, docs/linalg.md). BENCH_BUILD=DIR uses an
# existing build's libfrankentrace.a instead of building build-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD:-build-bench}
py=${BENCH_PYTHON:-.venv-oracle/bin/python}
[ -n "${BENCH_BUILD:-}" ] && [ -f "$build/libfrankentrace.a" ] || \
  tools/build "$build" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/linalg/bench_linalg.c "$build"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o "$build"/bench_linalg
declare -A ft jx
for round in 1 2; do
  while read -r n med min; do ft[$n]="${ft[$n]:-} $med"; done < <(OPENBLAS_NUM_THREADS=1 "$build"/bench_linalg)
  while read -r n med min; do jx[$n]="${jx[$n]:-} $med"; done < <("$py" bench/linalg/bench_jax.py)
done
echo "| workload (f32) | FrankenTrace median (ms) | jax.jit median (ms) | FT/JAX ratio | goal |"
echo "|---|---:|---:|---:|---|"
for n in cholesky_64 cholesky_256 cholesky_1024 solve_64 solve_256 solve_1024 solve_batch512x16 \
         gp_nll_value_and_grad_512; do
  f=$(echo ${ft[$n]:-nan} | tr ' ' '\n' | sort -g | head -1)
  j=$(echo ${jx[$n]:-nan} | tr ' ' '\n' | sort -g | head -1)
  r=$(awk -v a="$f" -v b="$j" 'BEGIN { printf "%.2f", a / b }')
  echo "| $n | $f | $j | $r | <= 1 |"
done
