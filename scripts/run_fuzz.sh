#!/usr/bin/env bash
# scripts/run_fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, in
# build-fuzz) and runs each for a bounded time over its seed corpus in tests/fuzz/corpus/<target>.
#
#   scripts/run_fuzz.sh [SECONDS_PER_TARGET=10] [TARGET...]
#
# New inputs that raise coverage go to build-fuzz/corpus/<target> (the checked-in seeds stay
# untouched); a crash leaves fuzz-artifacts/<target>/crash-* and a non-zero exit. Turn each
# finding into a regression: a case in the op's cases.yaml, or the input under
# tests/fuzz/corpus/<target>/ (named after what it caught), once it is fixed.
# Ten targets at 10 s each keep the suite's fuzz step near 5 minutes on 2 cores (the build of
# build-fuzz is most of it; the suite runs them from its build-asan instead); give more seconds
# for a longer hunt.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-10}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] ||
  TARGETS=(fuzz_casefile fuzz_case_inputs fuzz_jagged_entries fuzz_attention_entries
           fuzz_training_entries fuzz_training2_entries fuzz_gdn_entries fuzz_kda_entries
           fuzz_safetensors fuzz_tuning)
BUILD=${RECOPS_FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc)}

mkdir -p "$BUILD"
# RECOPS_FUZZ_BUILD may name a build that is already configured with RECOPS_FUZZ=ON (the test
# suite's build-asan, made with clang, the sanitizers and -fsanitize=fuzzer-no-link): it is built
# as it is, not reconfigured.
if [ "$BUILD" = build-fuzz ] || ! grep -q '^RECOPS_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null
then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRECOPS_FUZZ=ON -DRECOPS_SANITIZE=ON \
    -DRECOPS_WITH_CUDA=OFF -DRECOPS_BUILD_TORCH=OFF -DRECOPS_BUILD_TESTS=OFF \
    -DRECOPS_BUILD_CLI_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log"; exit 1; }
fi
ninja -C "$BUILD" -j "$JOBS" "${TARGETS[@]}"

# The targets run $JOBS at a time (libFuzzer is single-threaded): on 2 cores nine 10 s targets
# take about 50 s instead of 90. Each one's summary is printed in target order.
run_one() {  # run_one TARGET: exit status 0 when it found nothing; its summary in $BUILD/TARGET.sum
  local t=$1 seeds=tests/fuzz/corpus/$1 work=$BUILD/corpus/$1 artifacts=fuzz-artifacts/$1
  mkdir -p "$work" "$artifacts"
  {
    echo "== $t: ${SECONDS_PER_TARGET}s over $seeds"
    # -rss_limit_mb bounds a runaway allocation; detect_leaks stays on.
    if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
         "$BUILD/bin/$t" "$work" "$seeds" -max_total_time="$SECONDS_PER_TARGET" \
         -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
         -artifact_prefix="$artifacts/" 2>"$BUILD/$t.log"; then
      echo "!! $t found a problem; see $BUILD/$t.log and $artifacts/"
      grep -m5 -E "ERROR|SUMMARY|runtime error" "$BUILD/$t.log" || true
      exit 1
    fi
    grep -E "stat::number_of_executed_units|cov:" "$BUILD/$t.log" | tail -2 || true
  } >"$BUILD/$t.sum" 2>&1
}

status=0
pids=()
for i in "${!TARGETS[@]}"; do
  if [ ${#pids[@]} -ge "$JOBS" ]; then  # wait for the oldest before starting another
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  run_one "${TARGETS[$i]}" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
for t in "${TARGETS[@]}"; do cat "$BUILD/$t.sum"; done
# A finding is printed again last, with the end of its log (the stack and the input's name), so
# that a CI log cut to its tail still shows what failed.
for t in "${TARGETS[@]}"; do
  if grep -q '^!!' "$BUILD/$t.sum"; then
    echo "== finding of $t (end of $BUILD/$t.log):"
    tail -n 40 "$BUILD/$t.log"
    for f in "fuzz-artifacts/$t"/*; do  # the input itself, to reproduce it from the log alone
      if [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 8192 ]; then
        echo "$f (base64): $(base64 -w0 "$f")"
      fi
    done
  fi
done
exit $status
