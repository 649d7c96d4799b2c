#!/usr/bin/env bash
# HSTU attention on the GPU (issue 4), run by scripts/device.sh's `extra` step with ROOT, BUILD,
# RECOPS, OUT and STEP_LIMIT_S exported:
#   recops check --op hstu_attn --backend cuda, each CUDA implementation forced in turn
#     -> $OUT/check_hstu_cuda_<impl>.json and .log (non-passing rows streamed to stdout);
#     cuda_sm80_fa is checked on its dtypes (bf16, fp16), cuda_sm90 on the d = 128 cases;
#     HSTU_IMPLS picks impls
#   python3 bench/hstu_cuda.py -> $OUT/bench_hstu_cuda.json (ours, plain PyTorch and, when
#     .peers/generative-recommenders is carried, Meta's Triton kernel)
#   recops check --repeat 5 on a few backward cases (determinism)
#   pytest tests/python/test_hstu_attn_cuda.py
# HSTU_BENCH_ARGS (e.g. --quick) is passed to the bench, HSTU_BENCH_S is its time limit;
# HSTU_SKIP (words: check det pytest bench) skips parts; HSTU_CHECK_ARGS (e.g. "--case a,b")
# narrows the checks.
set -uo pipefail
cd "$ROOT"
rc=0
skip=" ${HSTU_SKIP:-} "
if [[ "$skip" != *" check "* ]]; then
  # cuda_sm90 serves d = dv = 128 and 64 (forward and backward) and 256 (forward): its rows are
  # the d = 128 cases ...
  sm90_cases=causal_s199_d128,d128_jagged_tails,d128_gqa_contexts_targets,d128_targets_g1
  sm90_cases+=,d128_window,d128_window_two_sided_targets,d128_anti_causal,d128_no_mask
  sm90_cases+=,d128_delta_q,d128_dense,d128_scales,d128_long
  # ... and the d = 64 and d = 256 cases
  sm90_cases+=,d64_gqa_contexts_targets,d64_window_delta_q,d64_dense_anti_causal
  sm90_cases+=,d256_jagged_targets,d256_gqa_window,d256_no_mask_scales,s760_d256
  for impl in ${HSTU_IMPLS:-cuda_sm90 cuda_sm80_fa cuda_sm80}; do
    extra=()
    [ "$impl" = cuda_sm80_fa ] && extra=(--dtype bf16,fp16)
    [ "$impl" = cuda_sm90 ] && extra=(--dtype bf16,fp16 --case "$sm90_cases")
    log=$OUT/check_hstu_$impl.log
    echo "--- recops check --op hstu_attn --backend cuda --impl $impl ${extra[*]}"
    timeout "${HSTU_CHECK_S:-100}" "$RECOPS" check --op hstu_attn --backend cuda --impl "$impl" \
      "${extra[@]}" ${HSTU_CHECK_ARGS:-} --json "$OUT/check_hstu_cuda_$impl.json" 2>&1 | tee "$log" | grep --line-buffered -v " PASS"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  done
fi
if [[ "$skip" != *" bench "* ]]; then
  echo "--- bench/hstu_cuda.py"
  timeout "${HSTU_BENCH_S:-200}" python3 bench/hstu_cuda.py --json "$OUT/bench_hstu_cuda.json" ${HSTU_BENCH_ARGS:-} ||
    rc=1
fi
if [[ "$skip" != *" det "* ]]; then
  echo "--- determinism (--repeat 5)"
  timeout 40 "$RECOPS" check --op hstu_attn --backend cuda --repeat 5 \
    --case worked_example,rab_bcast_gqa,gqa_4to1,all_features,b37_s199_d128,d128_gqa_contexts_targets 2>&1 |
    grep -v " PASS" | tail -n 20
fi
if [[ "$skip" != *" pytest "* ]]; then
  echo "--- pytest tests/python/test_hstu_attn_cuda.py"
  timeout 90 python3 -m pytest tests/python/test_hstu_attn_cuda.py -q -x -p no:cacheprovider 2>&1 |
    tail -n 30
fi
exit $rc
