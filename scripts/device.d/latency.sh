#!/usr/bin/env bash
# Small-shape latency of the jagged ops (issue 17 item 5), run by scripts/device.sh's `extra` step
# with ROOT, OUT and STEP_LIMIT_S exported:
#   python3 bench/jagged_latency.py --device cuda -> $OUT/jagged_latency_cuda.json (each op at S1 /
#     M0 / C1 against an empty torch custom op and aten.alias, measured in the same process)
set -uo pipefail
cd "$ROOT"
timeout "${STEP_LIMIT_S:-120}" python3 bench/jagged_latency.py --device cuda \
  --json "$OUT/jagged_latency_cuda.json"
