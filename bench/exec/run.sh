#!/usr/bin/env bash
# bench/exec/run.sh: builds FrankenTrace in release mode (build-bench, or
# $BENCH_BUILD) and prints the executor's table (bench_exec: overhead per
# task and per program step, 2-thread speedups, planned peak memory against
# the sum of intermediates).
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${BENCH_BUILD:-build-bench}
tools/build "$b" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/exec/bench_exec.c "$b"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread -lstdc++ \
  -o "$b"/bench_exec
"$b"/bench_exec fixtures/golden "$@"
