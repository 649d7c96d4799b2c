#!/usr/bin/env bash
# The Stem sparse-prefill ops on the GPU (issue 5), run by scripts/device.sh's `extra` step with
# ROOT, BUILD, RECOPS and OUT exported (or by hand with those set):
#   recops check --op stem_prepare --op stem_indexer --op block_sparse_attention --backend cuda
#     -> $OUT/check_stem_cuda.json (the first non-passing rows, with their details, on stdout);
#     then block_sparse_attention once more with --impl cuda_sm80 (the first kernel)
#   pytest tests/python/test_stem_cuda.py (when the torch binding is importable)
#   recops bench --op <the three> --backend cuda -> $OUT/bench_stem_cuda.json
#   python3 bench/stem_pipeline.py              -> $OUT/stem_pipeline.json
#   python3 bench/stem_indexer_split.py, once per configuration of STEM_SPLIT_CONFIGS (";"-separated,
#     "default" for the library's own choice)  -> $OUT/stem_indexer_split_<n>.json
# STEM_SKIP (words: check pytest bench pipeline split) skips parts; STEM_PIPELINE_ARGS is passed on.
set -uo pipefail
cd "$ROOT"
export RECOPS_SOURCE_DIR=${RECOPS_SOURCE_DIR:-$ROOT}
rc=0
skip=" ${STEM_SKIP:-} "
ops=(--op stem_prepare --op stem_indexer --op block_sparse_attention)
if [[ "$skip" != *" check "* ]]; then
  echo "--- recops check ${ops[*]} --backend cuda"
  timeout "${STEM_CHECK_S:-100}" "$RECOPS" check "${ops[@]}" --backend cuda \
    --json "$OUT/check_stem_cuda.json" >"$OUT/check_stem_cuda.log" 2>&1
  crc=$?
  [ "$crc" -eq 0 ] || rc=1
  tail -n 2 "$OUT/check_stem_cuda.log"
  echo "--- first non-passing rows (exit $crc)"
  grep -v " PASS" "$OUT/check_stem_cuda.log" | head -n 40
  if [ -s "$OUT/check_stem_cuda.json" ]; then
    python3 - "$OUT/check_stem_cuda.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc.get("results", doc) if isinstance(doc, dict) else doc
bad = [r for r in rows if isinstance(r, dict) and str(r.get("status", r.get("verdict", ""))).upper() not in ("PASS", "PASS (ERROR)", "SKIP")]
for r in bad[:8]:
    print(json.dumps(r)[:1500])
PY
  fi
fi
if [[ "$skip" != *" check "* ]]; then
  # block_sparse_attention's first kernel (cuda_sm80) serves D = 256 and other block sizes;
  # check it on every case it takes too (cuda_sm80_fa runs by default where it applies).
  echo "--- recops check --op block_sparse_attention --backend cuda --impl cuda_sm80"
  timeout "${STEM_CHECK_S:-100}" "$RECOPS" check --op block_sparse_attention --backend cuda \
    --impl cuda_sm80 >"$OUT/check_stem_cuda_bsa_sm80.log" 2>&1 || rc=1
  tail -n 1 "$OUT/check_stem_cuda_bsa_sm80.log"
  grep -v " PASS" "$OUT/check_stem_cuda_bsa_sm80.log" | grep -v "^---\|^op " | head -n 10
fi
if [[ "$skip" != *" pytest "* ]] && python3 -c "import recops, torch; torch.ops.recops.stem_indexer" 2>/dev/null; then
  echo "--- pytest tests/python/test_stem_cuda.py"
  timeout "${STEM_PYTEST_S:-60}" python3 -m pytest tests/python/test_stem_cuda.py -q -x \
    -p no:cacheprovider 2>&1 | tail -n 30
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
if [[ "$skip" != *" bench "* ]]; then
  echo "--- recops bench ${ops[*]} --backend cuda"
  timeout "${STEM_BENCH_S:-60}" "$RECOPS" bench "${ops[@]}" --backend cuda --max-seconds 0.5 \
    --json "$OUT/bench_stem_cuda.json" 2>&1 | tail -n 20
fi
if [[ "$skip" != *" pipeline "* ]] && python3 -c "import recops, torch; torch.ops.recops.stem_indexer" 2>/dev/null; then
  echo "--- bench/stem_pipeline.py"
  timeout "${STEM_PIPELINE_S:-90}" python3 bench/stem_pipeline.py --json "$OUT/stem_pipeline.json" \
    ${STEM_PIPELINE_ARGS:-} || rc=1
fi
if [[ "$skip" != *" split "* ]] && python3 -c "import recops, torch; torch.ops.recops.stem_indexer" 2>/dev/null; then
  n=0
  IFS=';' read -r -a cfgs <<<"${STEM_SPLIT_CONFIGS:-default}"
  for c in "${cfgs[@]}"; do
    n=$((n + 1))
    echo "--- bench/stem_indexer_split.py ($c)"
    extra=()
    [ "$c" = default ] || extra=(--config "$c")
    [ "$n" = 1 ] || extra+=(--no-cublas)
    (cd bench && timeout "${STEM_SPLIT_S:-60}" python3 stem_indexer_split.py "${extra[@]}" \
      --json "$OUT/stem_indexer_split_$n.json" >"$OUT/stem_indexer_split_$n.log" 2>&1) || rc=1
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['config'], round(d['call_ms'],3), {k.split('(')[0].split('::')[-1]: round(v['ms_per_call'],3) for k,v in d['kernels'].items()}, {k: round(v,3) for k,v in d.items() if k.startswith('cublas')})" "$OUT/stem_indexer_split_$n.json" 2>/dev/null || tail -n 5 "$OUT/stem_indexer_split_$n.log"
  done
fi
exit $rc
