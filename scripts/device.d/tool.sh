#!/usr/bin/env bash
# The recops tool on the GPU (issue 6), run by scripts/device.sh's `extra` step with ROOT, BUILD,
# RECOPS, OUT and STEP_LIMIT_S exported; about 2-3 minutes:
#   recops tune --backend cuda for the tunable ops, merged into a copy of the committed file
#                                                            -> $OUT/tuning/<device-slug>.json
#   recops tune --check: the tuned configuration of each tuned shape against the default, timed
#   interleaved (RECOPS_TUNING_FILE=$OUT/tuning)  -> $OUT/tune_check_cuda.json (+ _2 for stem_indexer)
#   recops record --backend cuda for a selection of cases    -> $OUT/record_cuda/, then packed
#                                                               into $OUT/record_cuda.tar (7 MB) to
#                                                               come back for a compare elsewhere
#   recops compare $OUT/record_cuda --backend cpu            -> $OUT/compare_cuda_vs_cpu.json
# TOOL_TUNE_OPS, TOOL_TUNE_SHAPES, TOOL_TUNE_DTYPES (the first group), TOOL_TUNE_GROUPS (all
# groups, space-separated "ops|shapes|dtypes"), TOOL_RECORD_OPS and TOOL_RECORD_CASES
# override the selections; TOOL_SKIP (words: tune check record) skips parts; TOOL_TUNE_S and
# TOOL_CHECK_S limit each group's tune and check. Files left in $OUT:
# tuning/<slug>.json, tune_check_cuda.json, record_cuda.tar, compare_cuda_vs_cpu.json.
set -uo pipefail
cd "$ROOT"
rc=0
skip=" ${TOOL_SKIP:-} "
ops=${TOOL_TUNE_OPS:-jagged_to_padded_dense,dense_to_jagged}
# S5 (a 5.7 GB output, CUDA only) is left out: each candidate's accuracy check copies the output
# to the host and judges it there, and S5 alone would take the whole budget.
shapes=${TOOL_TUNE_SHAPES:-S1,S2,S3,S4}
# S3 fp32 (a 1 GiB output) is left out by dtype for the same reason: S3 bf16 covers that shape.
dtypes=${TOOL_TUNE_DTYPES:-fp16,bf16}
record_ops=${TOOL_RECORD_OPS:-jagged_to_padded_dense,dense_to_jagged,complete_cumsum}
# Cases small enough (a few MB in all) for the recording to come back and be compared on another
# machine too: tile edges, skew, empty and full sequences, strided rows, every dtype, NaN padding,
# several row counts of the scan and an int32 sum that needs the int64 output.
record_cases=${TOOL_RECORD_CASES:-tile_edges,tile_edges_d,tile_edges_trunc,skewed_b37_d5,uniform_b37_d3,all_empty_b37,all_max_b37,every_dtype,rowpad_d3,rowpad_e2d,b0,d0,maxl0,pad_nan,range_b97,s_below_some,s_above_all,n37,r37_n199,flat_n4097,overflow_to_int64,negative_inputs}
mkdir -p "$OUT/tuning"

# Tuning groups "ops|shapes|dtypes": the conversions (above), and stem_indexer's CUDA paths on
# b1_32k (each candidate is judged against the fp64 golden computed on the host: about 8 GFLOP at
# 32K, but ~1 TFLOP at target_128k and more at 512K, minutes of host time each).
# block_sparse_attention (cuda_sm80_fa rows_per_warp 16|32) is tuned on cpu_4k: its golden (fp64,
# OpenMP over (batch, head), bit-identical for any thread count) takes seconds there;
# b1_32k's golden (~10^13 fp64 operations) is out of reach, and the bucket carries the tile
# count's size class, so the cpu_4k result is not applied to b1_32k.
# The file starts from the committed tuning/<slug>.json (TOOL_TUNE_BASE=0: from nothing), so the
# result merges this run's entries into what is committed.
groups=("$ops|$shapes|$dtypes")
[ -n "${TOOL_TUNE_GROUPS:-}" ] || groups+=("stem_indexer|${TOOL_STEM_SHAPES:-b1_32k}|bf16")
[ -n "${TOOL_TUNE_GROUPS:-}" ] || groups+=("block_sparse_attention|cpu_4k|bf16")
[ -z "${TOOL_TUNE_GROUPS:-}" ] || IFS=' ' read -r -a groups <<<"$TOOL_TUNE_GROUPS"
if [ "${TOOL_TUNE_BASE:-1}" = 1 ]; then
  cp tuning/*.json "$OUT/tuning/" 2>/dev/null || true
fi

if [[ "$skip" != *" tune "* ]]; then
  for g in "${groups[@]}"; do
    IFS='|' read -r gops gshapes gdtypes <<<"$g"
    echo "--- recops tune --backend cuda --op $gops --shape $gshapes --dtype $gdtypes"
    timeout "${TOOL_TUNE_S:-90}" "$RECOPS" tune --backend cuda --op "$gops" --shape "$gshapes" \
      --dtype "$gdtypes" --max-seconds 0.1 --out "$OUT/tuning/" --quiet || rc=1
  done
fi

if [[ "$skip" != *" check "* ]]; then
  # The configuration the new file gives each tuned shape against the default, timed interleaved
  # (blocks of calls alternating between the two, so that drift hits both alike).
  n=0
  for g in "${groups[@]}"; do
    IFS='|' read -r gops gshapes gdtypes <<<"$g"
    n=$((n + 1))
    suffix=$([ "$n" = 1 ] && echo "" || echo "_$n")
    echo "--- recops tune --check (default vs tuned): $gops $gshapes $gdtypes"
    RECOPS_TUNING_FILE=$OUT/tuning timeout "${TOOL_CHECK_S:-60}" "$RECOPS" tune --check --backend cuda --op "$gops" \
      --shape "$gshapes" --dtype "$gdtypes" --rounds 10 --json "$OUT/tune_check_cuda$suffix.json" \
      --quiet || rc=1
  done
fi

if [[ "$skip" != *" record "* ]]; then
  echo "--- recops record --backend cuda --op $record_ops --case <selection>"
  rm -rf "$OUT/record_cuda"
  timeout 40 "$RECOPS" record --backend cuda --op "$record_ops" --case "$record_cases" \
    --out "$OUT/record_cuda" --quiet >/tmp/record_cuda.log 2>&1 || rc=1
  tail -n 1 /tmp/record_cuda.log
  echo "--- recops compare $OUT/record_cuda --backend cpu"
  timeout 60 "$RECOPS" compare "$OUT/record_cuda" --backend cpu \
    --json "$OUT/compare_cuda_vs_cpu.json" >/tmp/compare_cuda_vs_cpu.log 2>&1 || rc=1
  grep -v " PASS *$" /tmp/compare_cuda_vs_cpu.log | tail -n 20
  # One file comes back for a compare on another machine: tar -xf record_cuda.tar; recops compare
  # record_cuda --backend cpu (or --golden).
  tar -cf "$OUT/record_cuda.tar" -C "$OUT" record_cuda && rm -rf "$OUT/record_cuda"
fi
exit $rc
