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
cd "$ROOT"
export PATH=/usr/local/cuda/bin:$PATH
rc=0
skip=" ${WGMMA_SKIP:-} "
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a)
if [[ "$skip" != *" probe "* ]]; then
  echo "--- wgmma_probe"
  if nvcc "${flags[@]}" -o /tmp/wgmma_probe bench/experiments/wgmma_probe.cu 2>/tmp/wgmma_probe.build; then
    timeout 60 /tmp/wgmma_probe >"$OUT/wgmma_probe.log" 2>&1 || rc=1
    cat "$OUT/wgmma_probe.log"
  else
    grep -v C7519 /tmp/wgmma_probe.build | tail -n 20
    rc=1
  fi
fi
if [[ "$skip" != *" hstu "* ]]; then
  for lbo in 1 0; do
    echo "--- hstu_fwd_wgmma (HSTU_V_LBO_IS_ATOM=$lbo)"
    if nvcc "${flags[@]}" -DHSTU_V_LBO_IS_ATOM=$lbo -o /tmp/hstu_fwd_wgmma_$lbo \
      bench/experiments/hstu_fwd_wgmma.cu 2>/tmp/hstu_fwd_wgmma.build; then
      timeout 120 /tmp/hstu_fwd_wgmma_$lbo >"$OUT/hstu_fwd_wgmma_$lbo.log" 2>&1 || rc=1
      cat "$OUT/hstu_fwd_wgmma_$lbo.log"
    else
      grep -v C7519 /tmp/hstu_fwd_wgmma.build | tail -n 20
      rc=1
    fi
  done
fi
if [[ "$skip" != *" bwd "* ]]; then
  echo "--- hstu_bwd_wgmma"
  if nvcc "${flags[@]}" -o /tmp/hstu_bwd_wgmma bench/experiments/hstu_bwd_wgmma.cu \
    2>/tmp/hstu_bwd_wgmma.build; then
    timeout 120 /tmp/hstu_bwd_wgmma >"$OUT/hstu_bwd_wgmma.log" 2>&1 || rc=1
    cat "$OUT/hstu_bwd_wgmma.log"
  else
    grep -v C7519 /tmp/hstu_bwd_wgmma.build | tail -n 20
    rc=1
  fi
fi
if [[ "$skip" != *" bsa "* ]]; then
  echo "--- bsa_wgmma"
  if nvcc "${flags[@]}" -o /tmp/bsa_wgmma bench/experiments/bsa_wgmma.cu 2>/tmp/bsa_wgmma.build; then
    timeout 150 /tmp/bsa_wgmma >"$OUT/bsa_wgmma.log" 2>&1 || rc=1
    cat "$OUT/bsa_wgmma.log"
  else
    grep -v C7519 /tmp/bsa_wgmma.build | tail -n 20
    rc=1
  fi
fi
exit $rc
