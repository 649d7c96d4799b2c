#!/usr/bin/env bash
# The wgmma experiments (issues 4 and 5), run by scripts/device.sh's `extra` step with ROOT and OUT
# exported: bench/experiments/wgmma_probe.cu (which descriptor readings hold), then
# bench/experiments/hstu_fwd_wgmma.cu built once per reading of the V descriptor (LBO = atom stride
# or SBO = atom stride), then bench/experiments/hstu_bwd_wgmma.cu (the wgmma backward's two
# kernels against fp64), then bench/experiments/bsa_wgmma.cu (a Hopper block-sparse attention
# against fp64, timed at 32K and 128K). Logs: $OUT/wgmma_probe.log, $OUT/hstu_fwd_wgmma_<0|1>.log,
# $OUT/hstu_bwd_wgmma.log, $OUT/bsa_wgmma.log. About two minutes. WGMMA_SKIP (words: probe hstu
# bwd bsa) skips parts.
set -uo pipefail
cd "$ROOT" || exit 1
export PATH=/usr/local/cuda/bin:$PATH
rc=0
skip=" ${WGMMA_SKIP:-} "
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a)
# run NAME SOURCE LIMIT [NVCC ARGS...]: build bench/experiments/SOURCE into /tmp/NAME, run it
# for at most LIMIT seconds with its log in $OUT/NAME.log (echoed), remember a failure.
run() {
  local name=$1 src=$2 limit=$3
  shift 3
  echo "--- $name"
  if nvcc "${flags[@]}" "$@" -o "/tmp/$name" "bench/experiments/$src" 2>"/tmp/$name.build"; then
    timeout "$limit" "/tmp/$name" >"$OUT/$name.log" 2>&1 || rc=1
    cat "$OUT/$name.log"
  else
    grep -v C7519 "/tmp/$name.build" | tail -n 20
    rc=1
  fi
}
[[ "$skip" == *" probe "* ]] || run wgmma_probe wgmma_probe.cu 60
if [[ "$skip" != *" hstu "* ]]; then
  for lbo in 1 0; do
    run "hstu_fwd_wgmma_$lbo" hstu_fwd_wgmma.cu 120 -DHSTU_V_LBO_IS_ATOM=$lbo
  done
fi
[[ "$skip" == *" bwd "* ]] || run hstu_bwd_wgmma hstu_bwd_wgmma.cu 120
[[ "$skip" == *" bsa "* ]] || run bsa_wgmma bsa_wgmma.cu 150
exit $rc
