#!/usr/bin/env bash
# The wgmma probe (bench/experiments/wgmma_probe.cu: which descriptor readings of
# src/core/cuda/sm90.cuh hold, and the wgmma rate), run by scripts/device.sh's `extra` step with
# ROOT and OUT exported. Log: $OUT/wgmma_probe.log. Under a minute.
set -uo pipefail
cd "$ROOT" || exit 1
export PATH=/usr/local/cuda/bin:$PATH
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a)
echo "--- wgmma_probe"
if ! nvcc "${flags[@]}" -o /tmp/wgmma_probe bench/experiments/wgmma_probe.cu 2>/tmp/wgmma_probe.build; then
  grep -v C7519 /tmp/wgmma_probe.build | tail -n 20
  exit 1
fi
timeout 60 /tmp/wgmma_probe >"$OUT/wgmma_probe.log" 2>&1
rc=$?
cat "$OUT/wgmma_probe.log"
exit $rc
