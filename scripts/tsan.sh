#!/usr/bin/env bash
# scripts/tsan.sh: the CPU core and the CLI built with ThreadSanitizer (RECOPS_SANITIZE=thread, in
# build-tsan: no CUDA, no torch, OpenMP off so that TSan sees only host threads), then
# `recops check --quick --threads 8` over a representative op selection: every case from 8 host
# threads at once (registry, tuning tables, per-op caches, thread_local buffers).
#
#   scripts/tsan.sh [OPS=default selection]
#
# Not part of scripts/test_all.sh: on 2 shared cores the -O1 build took about 10 minutes and the
# check of this selection runs for more than 20 (the d128 HSTU cases, serial under TSan).
set -euo pipefail
cd "$(dirname "$0")/.."
OPS=${1:-jagged_to_padded_dense,dense_to_jagged,complete_cumsum,jagged_index_select,jagged_softmax,hstu_attn_fwd,hstu_attn_bwd,stem_indexer_metadata,stem_indexer,stem_prepare,block_sparse_attention,layer_norm,rms_norm,fused_cross_entropy,causal_conv1d,sort_chunks_by_idx}
BUILD=${RECOPS_TSAN_BUILD:-build-tsan}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$BUILD"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DRECOPS_SANITIZE=thread -DRECOPS_WITH_CUDA=OFF -DRECOPS_BUILD_TORCH=OFF \
  -DRECOPS_BUILD_TESTS=OFF -DRECOPS_BUILD_CLI_TESTS=OFF >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; exit 1; }
ninja -C "$BUILD" -j "$JOBS" recops_cli
# halt_on_error: the first race fails the run; no suppressions.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  "$BUILD/bin/recops" check --backend cpu --quick --threads 8 --op "$OPS"
