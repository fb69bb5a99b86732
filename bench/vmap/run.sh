#!/usr/bin/env bash
# bench/vmap/run.sh: builds FrankenTrace in release mode (build-bench) and
# prints the vmap table of bench_vmap: transform time per equation (target
# < 2 µs) and interpreter time of vmap(f) against a loop of f.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/build build-bench -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/vmap/bench_vmap.c build-bench/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o build-bench/bench_vmap
build-bench/bench_vmap "$@"
