#!/usr/bin/env bash
# scripts/tsan.sh: the CPU library built once with ThreadSanitizer, and the load test under it
# (issue 21: races between host threads in the registry, the tuning and attribute caches, the
# thread pools' bookkeeping). Not part of scripts/test_all.sh (the build alone takes minutes on
# two cores); run it after changing shared state.
#
#   the recops CLI with -fsanitize=thread, Debug -O1, no CUDA, no torch, no OpenMP (libgomp is not
#   instrumented: TSan would report its barriers) and no BLAS (OpenBLAS's threads are not either);
#   recops check --threads 4 --stress-seconds S over a quarter of the smoke cases of the jagged
#   family and seven ops of the others (TSAN_ARGS replaces the selection; every op's smoke set
#   had not finished after 4 minutes under TSan's slowdown, this one takes about 2): each row from
#   4 host threads at once, each result bit-identical to the single run, then S seconds
#   (TSAN_STRESS_S, default 20) of rows picked at random from those ops by the 4 threads.
#
# A TSan report fails the run (halt_on_error=1, exit code 66). The JSON goes to $OUT (default the
# build folder): tsan_stress.json.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build-tsan}
OUT=${OUT:-$B}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DRECOPS_SANITIZE=thread -DRECOPS_WITH_CUDA=OFF -DRECOPS_BUILD_TORCH=OFF \
  -DRECOPS_BUILD_TENSORFLOW=OFF -DRECOPS_WITH_BLAS=OFF -DRECOPS_BUILD_TESTS=OFF \
  -DRECOPS_BUILD_CLI=ON >/dev/null
cmake --build "$B" -j "${JOBS:-$(nproc)}" --target recops_cli
mkdir -p "$OUT"
OPS=jagged,rms_norm,l2norm,fused_cross_entropy,sort_chunks_by_idx,stem_prepare,stem_indexer,hstu_attn_fwd
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$B/bin/recops" check ${TSAN_ARGS:---smoke --shard 1/4 --op $OPS} --threads 4 \
  --stress-seconds "${TSAN_STRESS_S:-20}" -v \
  --json "$OUT/tsan_stress.json"
