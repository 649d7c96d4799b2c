#!/usr/bin/env bash
# scripts/device.sh: the one script run on the lent H200 (device tool; run from the repo root,
# with `carry: [".carry"]` prepared here by scripts/prepare_carry.sh).
#
#   configure + build (Release, CUDA sm_90a, the torch binding through the device's python3)
#   ctest
#   recops check --backend cuda          -> $OUT/check_cuda.json
#   recops check --threads 8 --streams 4 -> $OUT/stress_cuda.json (DEVICE_STRESS, default on)
#   scripts/kernel_bench.py              -> $OUT/kernels_cuda.json (our kernels vs the copy ceiling)
#   recops bench --backend cuda          -> $OUT/bench_cuda.json
#   python3 bench/jagged_peers.py        -> $OUT/peers_cuda.json
#   python3 bench/jagged_peers.py --device cpu --shapes S3 -> $OUT/peers_cpu.json
#   compute-sanitizer memcheck and racecheck over a small `recops check` selection
#   recops check --backend cuda --impl ID, each CUDA implementation in turn -> $OUT/check_cuda_impl_*.json
#   pytest tests/python (CUDA tests included)
#   a summary table, last
#
# Knobs: DEVICE_STEPS (default "all"; else a subset of: ctest check kernels bench peers peers_cpu
# sanitizer impls pytest extra; DEVICE_PYTEST_ARGS / DEVICE_PYTEST_S set the pytest step's paths and limit) and DEVICE_TARGETS (build targets, default all) let a short run build and run only
# what it needs. Each area may add scripts/device.d/<name>.sh (run as the step "extra:<name>", with
# ROOT, BUILD, RECOPS, OUT exported and the time left in STEP_LIMIT_S); they write under $OUT.
# DEVICE_EXTRAS (default all) names the extras to run, e.g. DEVICE_EXTRAS="hstu stem"; each runs
# for at most DEVICE_EXTRA_S seconds (default 240).
#
# Every step runs under a time limit taken from one overall budget (DEVICE_BUDGET_S, default 560 s,
# inside the tool's 600 s); a step's failure is shown and remembered, later steps still run, and
# the script exits non-zero at the end if any step failed. Logs: at most 8 files under $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out-device}
mkdir -p "$OUT"
BUILD=${BUILD:-build}
BUDGET=${DEVICE_BUDGET_S:-560}
JOBS=${JOBS:-$(nproc)}
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONUNBUFFERED=1
CARRY=$ROOT/.carry/usr
export LD_LIBRARY_PATH=$CARRY/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
RECOPS=$ROOT/$BUILD/bin/recops
STEPS=" ${DEVICE_STEPS:-all} "
wants() { [ "$STEPS" = " all " ] || [[ "$STEPS" == *" $1 "* ]]; }
export ROOT BUILD RECOPS OUT
# The device copy of the tree may have no git metadata: pass RECOPS_COMMIT=<hash> from here.
export RECOPS_COMMIT=${RECOPS_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}

names=()
verdicts=()
failed=0

# step NAME MAX_SECONDS LOGFILE COMMAND...: run with a limit of min(MAX, budget left - 10 s),
# append the output to LOGFILE (and echo its tail), remember the verdict.
step() {
  local name=$1 max=$2 log=$3
  shift 3
  local left=$((BUDGET - SECONDS - 10))
  local limit=$((max < left ? max : left))
  names+=("$name")
  if [ "$limit" -lt 5 ]; then
    verdicts+=("SKIP  (no time left)")
    failed=1
    echo "=== $name: skipped, out of time budget"
    return 0
  fi
  touch "$log"
  local before
  before=$(wc -l <"$log")
  echo "=== $name (limit ${limit}s): $*" | tee -a "$log"
  local start=$SECONDS rc=0
  timeout --kill-after=5 "$limit" "$@" >>"$log" 2>&1 || rc=$?
  local took=$((SECONDS - start))
  tail -n +"$((before + 2))" "$log" | tail -n 15
  if [ "$rc" -eq 0 ]; then
    verdicts+=("PASS  ${took}s")
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdicts+=("TIME  ${took}s (limit ${limit}s)")
    failed=1
  else
    verdicts+=("FAIL  ${took}s exit $rc")
    failed=1
  fi
}

have_file() { [ -e "$1" ]; }

# ---- machine -------------------------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)  commit: $RECOPS_COMMIT"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv,noheader || true
  nvcc --version | tail -1
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
} 2>&1 | tee "$OUT/build.log"

if [ ! -d "$CARRY" ]; then
  echo "warning: $CARRY is missing (run scripts/prepare_carry.sh here and carry .carry);"
  echo "         the CLI and the C++ tests need yaml-cpp, CLI11, nlohmann-json and GoogleTest"
fi

# ---- build ---------------------------------------------------------------------------------------
# The device's g++ (/opt/gcc) is newer than the CI's: its standard headers no longer pull in
# <cstdint> and friends transitively, so a missing include that the CI cannot see would stop the
# whole run. Force the usual suspects in (the first device run failed on exactly that).
SAFETY_INCLUDES="-include cstdint -include cstring -include algorithm -include utility"
TORCH_PREFIX=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
step configure 90 "$OUT/build.log" \
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DRECOPS_WITH_CUDA=ON -DRECOPS_CUDA_ARCHS=90a \
  -DRECOPS_BUILD_TORCH="${RECOPS_BUILD_TORCH:-ON}" -DPython3_EXECUTABLE="$(command -v python3)" \
  -DRECOPS_BUILD_TESTS=ON -DRECOPS_BUILD_CLI=ON \
  -DCMAKE_PREFIX_PATH="$CARRY;$TORCH_PREFIX" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
  -DCMAKE_CXX_FLAGS="$SAFETY_INCLUDES"
build_targets=()
for t in ${DEVICE_TARGETS:-}; do build_targets+=(--target "$t"); done
step build 330 "$OUT/build.log" cmake --build "$BUILD" -j "$JOBS" "${build_targets[@]}" -- -k 0

# ---- tests, accuracy and timing (most valuable first: the budget may run out) -----------------
wants ctest && step ctest 150 "$OUT/tests.log" ctest --test-dir "$BUILD" --output-on-failure -j 8
# DEVICE_CHECK_ARGS / DEVICE_BENCH_ARGS / DEVICE_PEERS_ARGS (e.g. "--op dense_to_jagged") narrow
# a short run's selection. DEVICE_CHECK_S limits the check (default 300 s: every op's whole matrix,
# 658 rows, took 193-199 s at e2b0645 and 33533a3 once the HSTU golden ran on all cores).
# DEVICE_CHECK_SPLIT="hstu jagged stem training" runs one check process per family at once (the
# fp64 references are CPU work: 3940 rows took over 8 min in one process at 6b902c9) and merges
# their JSON; a family's failure fails the step. An entry FAMILY:K/N runs shard K of N of that
# family (`recops check --shard`), e.g. "hstu jagged stem training:1/3 training:2/3 training:3/3".
# The file name of a DEVICE_CHECK_SPLIT entry: "training:1/4" -> "training_1of4".
split_name() {
  local n=${1//\//of}
  echo "${n//:/_}"
}
check_split() {
  local pids=() rc=0 f n
  for f in $DEVICE_CHECK_SPLIT; do
    n=$(split_name "$f")
    if [[ "$f" == *:* ]]; then
      set -- --op "${f%%:*}" --shard "${f#*:}"
    else
      set -- --op "$f"
    fi
    "$RECOPS" check --backend cuda "$@" ${DEVICE_CHECK_ARGS:-} -q --json "$OUT/check_cuda_$n.json" \
      >"$OUT/check_$n.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  for f in $DEVICE_CHECK_SPLIT; do tail -n 5 "$OUT/check_$(split_name "$f").log"; done
  python3 - "$OUT/check_cuda.json" $(for f in $DEVICE_CHECK_SPLIT; do
    echo "$OUT/check_cuda_$(split_name "$f").json"
  done) <<'PY'
import json, os, sys
rows = []
for f in sys.argv[2:]:
    if os.path.exists(f):
        rows += json.load(open(f))
json.dump(rows, open(sys.argv[1], "w"), indent=1)
bad = [r for r in rows if str(r.get("verdict")).lower() != "pass"]
print(f"merged {len(rows)} rows, {len(bad)} not passing")
for r in bad[:40]:
    print("  ", r.get("verdict"), r.get("op"), r.get("case"), r.get("dtype"), (r.get("detail") or "")[:120])
PY
  return $rc
}
if wants check && [ -n "${DEVICE_CHECK_SPLIT:-}" ]; then
  export -f split_name check_split  # step runs it under timeout, i.e. in a child bash
  step "check cuda" "${DEVICE_CHECK_S:-300}" "$OUT/check_bench.log" bash -c check_split
elif wants check; then
  step "check cuda" "${DEVICE_CHECK_S:-300}" "$OUT/check_bench.log" \
    "$RECOPS" check --backend cuda ${DEVICE_CHECK_ARGS:-} --json "$OUT/check_cuda.json"
fi
# Load on CUDA streams (issue 21): a third of every op's smoke cases from 8 host threads at once,
# on 4 non-blocking streams round robin, each result bit-identical to the single run; then for
# DEVICE_STRESS_MIXED_S (30 s) the 8 threads call rows picked at random, every op mixed
# (--stress-seconds). DEVICE_STRESS=0 skips it; DEVICE_STRESS_S bounds it (default 150 s: the
# rows must finish by 150 - 30 s), DEVICE_STRESS_ARGS replaces the selection (default
# "--smoke --shard 1/3": on an H100 at e732c39 all --quick rows, 4989, did not finish in 210 s,
# 3410 in 195 s, and the smoke rows, 2580, not in 130 s; the rows' goldens are CPU work).
if wants check && [ "${DEVICE_STRESS:-1}" != 0 ]; then
  step "stress cuda" "${DEVICE_STRESS_S:-150}" "$OUT/check_bench.log" \
    "$RECOPS" check --backend cuda --quick --threads 8 --streams 4 \
    --stress-seconds "${DEVICE_STRESS_MIXED_S:-30}" ${DEVICE_STRESS_ARGS:---smoke --shard 1/3} \
    --json "$OUT/stress_cuda.json"
fi
wants kernels && step kernels 120 "$OUT/check_bench.log" \
  python3 scripts/kernel_bench.py --json "$OUT/kernels_cuda.json"
wants bench && step "bench cuda" 90 "$OUT/check_bench.log" \
  "$RECOPS" bench --backend cuda ${DEVICE_BENCH_ARGS:-} --json "$OUT/bench_cuda.json"
if wants peers && have_file bench/jagged_peers.py; then
  # Every jagged op forward and forward+backward with the Triton peers takes minutes (carry
  # .peers/fbgemm_gpu_triton, made by scripts/prepare_peers.sh, and .peers/generative-recommenders).
  step peers "${DEVICE_PEERS_S:-90}" "$OUT/check_bench.log" \
    python3 bench/jagged_peers.py --device cuda ${DEVICE_PEERS_ARGS:-} --json "$OUT/peers_cuda.json"
fi
# The CPU conversions against plain PyTorch on this machine's cores, in the same run (issue 2:
# S3 = B=1024 max_L=1024 D=256 bf16, skewed).
if wants peers_cpu && have_file bench/jagged_peers.py; then
  step "peers cpu" 90 "$OUT/check_bench.log" \
    python3 bench/jagged_peers.py --device cpu --shapes "${DEVICE_PEERS_CPU_SHAPES:-S3}" --thp \
    --json "$OUT/peers_cpu.json"
fi

# ---- sanitizers over a small selection -----------------------------------------------------------
# Small cases of every op (ids from the ops' cases.yaml): conversions with empty sequences and tile
# edges; cumsum with many rows, two tiles, and 256 tiles of look-back; HSTU's worked example,
# zero lengths and a d = 128 jagged case with tails (the sm90 path); Stem prepare, indexer and
# block-sparse attention with tails, empty sequences and a paged cache.
# The second group reaches the ops the first misses (issue 21: every op): expand_1d, jagged2_softmax,
# the index selects and permutes, causal_conv1d, the GDN / KDA chunk ops, chunk_loss,
# fused_cross_entropy, inplace_rope, the mHC ops, solve_tril and sort_chunks_by_idx (a case id
# selects that case in every op that has it).
SAN_CASES=${SAN_CASES:-"uniform_b37_d3 mixed_empty tile_edges r37_n199 r65536_n16 flat_n4097 n_2p20
  worked_example zero_lengths d128_jagged_tails packed_tails paged_16 tails both_empty_mixed
  full_selection_causal empty_rows
  mixed mixed_rows mixed_repeats three_keys_repeats repeats_and_subset tiny_segments b2_d5_t65_w4
  b2_t65_h2_k64 b1_t63_h3_k37_v19 b1_t63_h3_k37 b1_t63_h3_k37_v50 b2_t65_hv2_v64 b2_t65_h3
  b2_t65_hv3_bt64 n63_d17_v101_mean v7_n300_none_int32 dsv4_slice n4_tokens_2d odd_row_bytes"}
# DEVICE_SAN_ARGS (e.g. "--op chunk_fwd_o") narrows the selection; DEVICE_SAN_NOVALIDATE=0 skips
# the jagged no-validation pass.
san_args=(check --backend cuda ${DEVICE_SAN_ARGS:-})
for c in $SAN_CASES; do san_args+=(--case "$c"); done
if wants sanitizer; then
  step memcheck "${DEVICE_SAN_S:-120}" "$OUT/sanitizer.log" \
    compute-sanitizer --tool memcheck --leak-check no --error-exitcode 99 "$RECOPS" "${san_args[@]}"
  step racecheck "${DEVICE_SAN_S:-120}" "$OUT/sanitizer.log" \
    compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 99 "$RECOPS" \
    "${san_args[@]}"
  # Every expected-error case of every op run with validation off: bad offsets, lengths, indices
  # and labels then reach the kernels, which must clamp (SECURITY.md); memcheck judges the reads.
  if [ "${DEVICE_SAN_NOVALIDATE:-1}" != 0 ]; then
    bad_args=(check --backend cuda --no-validate)
    for c in $("$RECOPS" list --cases | awk '$NF == "error" {print $2}' | sort -u); do
      bad_args+=(--case "$c")
    done
    step memcheck-novalidate "${DEVICE_SAN_S:-120}" "$OUT/sanitizer.log" \
      compute-sanitizer --tool memcheck --leak-check no --error-exitcode 99 "$RECOPS" "${bad_args[@]}"
  fi
fi

# ---- per-area extras (scripts/device.d/*.sh) ------------------------------------------------------
if wants extra; then
  for extra in scripts/device.d/*.sh; do
    [ -e "$extra" ] || continue
    name=$(basename "$extra" .sh)
    if [ -n "${DEVICE_EXTRAS:-}" ] && [[ " $DEVICE_EXTRAS " != *" $name "* ]]; then continue; fi
    export STEP_LIMIT_S=$((BUDGET - SECONDS - 20))
    step "extra:$name" "${DEVICE_EXTRA_S:-240}" "$OUT/extra_$name.log" bash "$extra"
  done
fi

# Every CUDA implementation forced in turn (issue 21): `recops check --backend cuda --impl ID` over
# every op for each CUDA implementation id the registry lists (an implementation's check selects
# only the rows it accepts), so that the fallbacks under cuda_sm90 and cuda_sm80_mma (cuda_sm80,
# ...) are judged too, not only the first implementation that accepts a row. One JSON per id
# ($OUT/check_cuda_impl_<id>.json), one log. DEVICE_IMPLS_S bounds the step (default 300 s),
# DEVICE_IMPLS_ARGS narrows it (e.g. "--op jagged --quick").
impls_forced() {
  local rc=0 id
  for id in $("$RECOPS" list --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted({i["id"] for o in d["ops"] for i in o["impls"] if i["backend"] == "cuda"})))'); do
    echo "--- recops check --backend cuda --impl $id ${DEVICE_IMPLS_ARGS:-}"
    local log r=0
    log=$("$RECOPS" check --backend cuda --impl "$id" ${DEVICE_IMPLS_ARGS:-} -q \
      --json "$OUT/check_cuda_impl_$id.json" 2>&1) || r=$?
    echo "$log" | tail -n 25
    # An id that no selected op has (DEVICE_IMPLS_ARGS narrowed the ops) is not a failure.
    if [ "$r" != 0 ] && ! { [ "$r" = 2 ] && [[ "$log" == *"is not an implementation of"* ]]; }; then
      rc=1
    fi
  done
  return $rc
}
if wants impls; then
  export -f impls_forced
  step "impls forced" "${DEVICE_IMPLS_S:-300}" "$OUT/check_impls.log" bash -c impls_forced
fi

if wants pytest && have_file tests/python; then
  # DEVICE_PYTEST_ARGS replaces the paths and options, e.g. "src/ops -k cuda -q -rf" to run every
  # op folder's CUDA tests without stopping at the first failure.
  # shellcheck disable=SC2086
  step pytest "${DEVICE_PYTEST_S:-150}" "$OUT/tests.log" python3 -m pytest ${DEVICE_PYTEST_ARGS:-tests/python -q -x} -p no:cacheprovider
fi

# ---- summary -------------------------------------------------------------------------------------
for f in "$OUT/kernels_cuda.json" "$OUT/bench_cuda.json"; do
  have_file "$f" || continue
  echo "--- $(basename "$f")"
  python3 - "$f" <<'PY' || true
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows.get("records", rows) if isinstance(rows, dict) else rows
print(f"{'op':26} {'shape':34} {'dtype':6} {'ms':>9} {'GB/s':>8} {'frac':>6}")
for r in rows:
    shape = r.get("shape")
    shape = shape.get("id", json.dumps(shape)) if isinstance(shape, dict) else str(shape)
    gb = r.get("gbps"); fr = r.get("frac_bw_ceiling"); ms = r.get("time_ms")
    print(f"{str(r.get('op')):26} {shape[:34]:34} {str(r.get('dtype')):6} "
          f"{ms if ms is None else f'{ms:9.4f}'} {gb if gb is None else f'{gb:8.0f}'} "
          f"{fr if fr is None else f'{fr:6.2f}'}")
PY
done
echo
echo "=== summary ($SECONDS s of ${BUDGET} s; logs and JSON under \$OUT)"
for i in "${!names[@]}"; do
  printf '  %-12s %s\n' "${names[$i]}" "${verdicts[$i]}"
done
exit "$failed"
