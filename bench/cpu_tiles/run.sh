#!/usr/bin/env bash
# bench/cpu_tiles/run.sh [OUT.json]: builds and runs hstu_tiles_vs_blas (needs a CPU with
# AVX512-BF16 and libopenblas-dev, e.g. libopenblas-openmp-dev); prints the JSON, and writes it to
# OUT.json when given. Not part of the build or the test suite: it backs a design choice.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${TMPDIR:-/tmp}/recops_hstu_tiles_vs_blas
INC=$(pkg-config --cflags openblas 2>/dev/null || echo -I/usr/include/x86_64-linux-gnu/openblas-openmp)
g++ -std=c++20 -O3 -mavx512f -mavx512bw -mavx512vl -mavx512bf16 -mavx2 -mfma -mf16c -fopenmp \
  -Iinclude -Isrc $INC bench/cpu_tiles/hstu_tiles_vs_blas.cpp -o "$BIN" -lopenblas
"$BIN" | tee "${1:-/dev/null}"
