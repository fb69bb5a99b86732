#!/usr/bin/env bash
# bench/jit/run.sh: builds FrankenTrace in release mode (build-bench) and
# prints the JIT table of bench_jit (fused-chain bandwidth vs STREAM copy,
# call overhead, MLP training-step compile time).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/build build-bench -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/jit/bench_jit.c build-bench/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread -lstdc++ \
  -o build-bench/bench_jit
build-bench/bench_jit fixtures/golden "$@"
