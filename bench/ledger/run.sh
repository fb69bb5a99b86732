#!/usr/bin/env bash
# bench/ledger/run.sh: builds FrankenTrace in release mode (build-bench, or
# $FT_BENCH_BUILD) and prints the table of bench_ledger: the ledger's
# overhead on an MLP training step with the reference interpreter, per
# call-logging level and fsync policy (target < 5% at the hashes level).
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${FT_BENCH_BUILD:-build-bench}
tools/build "$b" -Dbuildtype=release -Dtests=false
cc -std=c11 -O2 -Iinclude bench/ledger/bench_ledger.c "$b"/libfrankentrace.a \
  $(pkg-config --libs libxxhash openblas fftw3 fftw3f jansson) -lisal \
  -L"$(llvm-config-19 --libdir 2>/dev/null || echo /usr/lib/llvm-19/lib)" -lLLVM-19 -lm -lpthread \
  -o "$b"/bench_ledger
"$b"/bench_ledger "$@"
