#!/usr/bin/env bash
# bench/transforms/run.sh: builds FrankenTrace in release mode (build-bench)
# and prints the transform-time table of bench_grad (µs per equation for
# grad of 1k/10k/100k-equation chains; target < 2 µs).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/build build-bench -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/transforms/bench_grad.c build-bench/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o build-bench/bench_grad
build-bench/bench_grad "$@"
