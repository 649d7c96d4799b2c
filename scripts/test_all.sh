#!/usr/bin/env bash
# The whole test suite (`make test` after the build): each runner's summary is printed, every
# runner runs even when an earlier one fails, and the exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
PY=${PY:-$ROOT/.venv/bin/python}
JOBS=${JOBS:-$(nproc)}
RECOPS=$ROOT/$BUILD/bin/recops

passed=0
failed=0
failures=()
summary=()

step() {  # step NAME COMMAND...: run, remember the verdict and the last lines of output
  local name=$1
  shift
  echo
  echo "=== $name: $*"
  local start=$SECONDS
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local took=$((SECONDS - start))
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    summary+=("PASS  $name (${took}s)")
  else
    failed=$((failed + 1))
    failures+=("$name")
    summary+=("FAIL  $name (${took}s, exit $rc)")
  fi
  rm -f "$log"
}

# 1. C++ tests (core, ops against the reference, the CLI's own tests).
# cli_check_cpu_full is the whole CPU matrix, which the `recops check --repeat 2` step below runs
# anyway (with the determinism repeat): CI runs it once.
# The CPU check's ctest entries (quick, quick --repeat 3, full) are left to the "recops check" step
# below, which runs every case (large ones too) twice and from 8 threads: the same checks, once.
step ctest ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" \
  -E '^(cli_check_cpu_.*|cli_check_repeat3)$'

# 2. The binding contract (opcheck, gradcheck, torch.compile, plain-PyTorch comparisons), on
#    $JOBS pytest-xdist workers when it is installed (the tests share no files or ports: tmp_path,
#    free ports).
XDIST=()
if [ "$JOBS" -gt 1 ] && "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n "$JOBS"); fi
step pytest "$PY" -m pytest tests/python src/ops -q -p no:cacheprovider "${XDIST[@]}"

# 2b. The wheel: built once (build-wheel/ and ccache keep its objects), installed into a fresh venv
#     and used from outside the source tree (the console script, the case files, import recops).
step wheel env PY="$PY" JOBS="$JOBS" BUILD="$BUILD" bash scripts/test_wheel.sh

# 3. Every op's cases on the CPU against the fp64 golden, twice bit-identical, and then from 8 host
#    threads at once, each bit-identical to the single run (the load test of issue 21: registry,
#    tuning and attribute caches, OpenMP teams started from several threads); then, for 30 s, the
#    8 threads call rows picked at random from the shard's passing rows, every op mixed
#    (--stress-seconds: one result row per thread with its call count).
#    The rows go in $JOBS shards (`check --shard K/N`) run side by side: one process leaves a core
#    idle while a golden is computed on one thread (at b00964e, 346 s wall for 512 s of CPU on 2
#    cores); two shards at once took 275 s. Each shard's log is printed whole, in order.
#    OMP_WAIT_POLICY=passive: with more OpenMP threads than cores (two shards, and the load test's
#    8 host threads) a thread waiting at a barrier sleeps instead of spinning on a core that
#    another one needs (it changes no result: the runs are bit-identical by construction).
check_sharded() {
  local n=$JOBS dir pids=() rc=0 k
  [ "$n" -ge 1 ] || n=1
  dir=$(mktemp -d)
  for k in $(seq 1 "$n"); do
    OMP_WAIT_POLICY=passive \
      "$RECOPS" check --backend cpu --repeat 2 --threads 8 --stress-seconds 30 --shard "$k/$n" \
      >"$dir/$k.log" 2>&1 &
    pids+=($!)
  done
  for k in $(seq 1 "$n"); do
    wait "${pids[$((k - 1))]}" || rc=1
    echo "--- shard $k/$n"
    cat "$dir/$k.log"
  done
  rm -rf "$dir"
  return $rc
}
step "recops check" check_sharded

# 4. The CPU code under AddressSanitizer and UndefinedBehaviorSanitizer (no CUDA, no torch: this is
#    also the torch-free build of the core, the CLI and tests/cpp).
# The sanitizers' Debug build runs the `large` tests (the full check matrix, bench --json over
# every perf shape) 5-15x slower than Release: about 1000 s of the CI's 2 cores. They run in the
# ctest step above; here the quick check of every op (cli_check_cpu_<family>, one test per family
# so that two run at once) covers the same code paths.
# Under the sanitizers every test but the large ones, cli_check_repeat3 (the determinism repeat,
# which the Release `recops check --repeat 2` step covers) and two of the three non-finite shards
# (the NaN one runs: a NaN meeting an integer conversion is UB that UBSan reports; the Release
# ctest runs all three): the ASan step took 1240 s of a 33-minute
# run at 73012b4 with it.
# With clang (the CI has it) this one build also holds the libFuzzer targets (RECOPS_FUZZ, the
# code instrumented with -fsanitize=fuzzer-no-link) that the fuzz step below runs: the sanitized
# library is compiled once, not twice (the separate build-fuzz took about 400 s of the 3577 s CI at
# 73618ac). Debug info is line tables only (-g1), which is what the sanitizers' reports print.
# ctest runs two tests at once, each with an OpenMP team of two: OMP_WAIT_POLICY=passive keeps the
# waiting threads off the cores (two training check shards side by side took 103 s instead of 119).
asan() {
  local extra=()
  if command -v clang++ >/dev/null; then
    extra=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRECOPS_FUZZ=ON
           -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link)
  fi
  # -O1 (asserts kept): ASan's recommended level; at -O0 the quick CPU check alone took 675 s.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
    -DRECOPS_SANITIZE=ON "${extra[@]}" \
    -DRECOPS_WITH_CUDA=OFF -DRECOPS_BUILD_TORCH=OFF >/dev/null &&
    cmake --build build-asan -j "$JOBS" &&
    OMP_WAIT_POLICY=passive ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
      LSAN_OPTIONS=suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0 \
      ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE large \
        -E '^(cli_check_repeat3|cli_check_nonfinite_(inf|neginf))$'
}
step "asan+ubsan ctest" asan

# 5. Formatting of every tracked C++/CUDA source.
step "clang-format" bash -c "git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror"

# 6. Bounded fuzzing (libFuzzer, clang): the case-file parser, the op entries (jagged, cumsum,
#    HSTU, Stem, training), the safetensors reader and the tuning loader.
#    They run from build-asan when the step above built them there (clang), else from their own
#    build-fuzz.
if [ -x scripts/run_fuzz.sh ]; then
  if grep -q '^RECOPS_FUZZ:BOOL=ON' build-asan/CMakeCache.txt 2>/dev/null; then
    step fuzz env RECOPS_FUZZ_BUILD=build-asan scripts/run_fuzz.sh
  else
    step fuzz scripts/run_fuzz.sh
  fi
fi

echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
