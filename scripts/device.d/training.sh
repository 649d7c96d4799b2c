#!/usr/bin/env bash
# Training ops on the GPU (issue 18), run by scripts/device.sh's `extra` step with ROOT, BUILD,
# RECOPS, OUT and STEP_LIMIT_S exported:
#   python3 bench/training_peers.py --device cuda -> $OUT/training_peers_cuda.json (ours, eager
#     PyTorch, torch.compile, and Liger-Kernel / fla-core when .peers/training is carried: made by
#     scripts/prepare_peers.sh)
# TRAINING_BENCH_ARGS (e.g. "--quick" or "--ops rms_norm,l2norm") is passed to the bench.
set -uo pipefail
cd "$ROOT"
timeout "${STEP_LIMIT_S:-240}" python3 bench/training_peers.py --device cuda \
  ${TRAINING_BENCH_ARGS:-} --json "$OUT/training_peers_cuda.json"
