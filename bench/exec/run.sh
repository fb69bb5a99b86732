#!/usr/bin/env bash
# bench/exec/run.sh: builds FrankenTrace in release mode (build-bench) and
# prints the executor's table (bench_exec: overhead per task, 2-thread
# speedups, planned peak memory against the sum of intermediates).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/build build-bench -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/exec/bench_exec.c build-bench/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread -lstdc++ \
  -o build-bench/bench_exec
build-bench/bench_exec fixtures/golden "$@"
