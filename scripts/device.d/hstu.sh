#!/usr/bin/env bash
# HSTU attention on the GPU (issue 4), run by scripts/device.sh's `extra` step with ROOT, BUILD,
# RECOPS, OUT and STEP_LIMIT_S exported:
#   recops check --op hstu_attn --backend cuda, each CUDA implementation forced in turn
#     -> $OUT/check_hstu_cuda_<impl>.json (failing rows and their reproducers printed)
#   recops check --repeat 5 over the backward cases (determinism) on a small selection
#   python3 bench/hstu_cuda.py -> $OUT/bench_hstu_cuda.json
# HSTU_BENCH_ARGS (e.g. --quick) is passed to the bench.
set -uo pipefail
cd "$ROOT"
rc=0
for impl in cuda_sm80; do
  log=$OUT/check_hstu_$impl.log
  echo "--- recops check --op hstu_attn --backend cuda --impl $impl"
  timeout 150 "$RECOPS" check --op hstu_attn --backend cuda --impl "$impl" \
    --json "$OUT/check_hstu_cuda_$impl.json" >"$log" 2>&1 || rc=1
  grep -v " PASS" "$log" | head -n 80
  tail -n 2 "$log"
done
echo "--- determinism (--repeat 5)"
timeout 60 "$RECOPS" check --op hstu_attn --backend cuda --repeat 5 \
  --case worked_example,rab_bcast_gqa,gqa_4to1,all_features,b37_s199_d128 2>&1 | grep -v " PASS" | tail -n 20 || rc=1
echo "--- bench/hstu_cuda.py"
timeout 200 python3 bench/hstu_cuda.py --json "$OUT/bench_hstu_cuda.json" ${HSTU_BENCH_ARGS:-} || rc=1
exit $rc
