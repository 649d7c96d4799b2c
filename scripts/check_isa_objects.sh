#!/usr/bin/env bash
# scripts/check_isa_objects.sh OBJDIR: no AVX code can reach a CPU without AVX through the linker.
#
# The *_avx2.cpp / *_avx512.cpp files are compiled with those instructions (CMakeLists.txt) and run
# only after core::cpu_features() says so. An inline function or template they share with
# baseline files (a std:: member, a header helper) is emitted as a weak symbol in both objects and
# the linker keeps one copy, whichever it meets first: if that copy is the AVX one, baseline code
# calls AVX instructions and dies with SIGILL on an older CPU. recops/isa_ns.h's inline namespace
# gives our own header code distinct names; this check covers everything else. It lists the weak
# symbols (nm W / V / u) that each ISA object defines outside an isa_* namespace and fails if any
# of them contains a VEX or EVEX instruction (a mnemonic starting with v, other than verr/verw, or
# an AVX-512 mask instruction k*). Run by ctest (isa_objects); usage: OBJDIR = the build's
# CMakeFiles/recops_core.dir. `--selftest CXX` builds an object that does share an AVX copy of an
# inline function and expects the check to fail on it (ctest isa_objects_selftest).
set -euo pipefail
if [ "${1:-}" = "--selftest" ]; then
  cxx=${2:?usage: check_isa_objects.sh --selftest CXX}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cat >"$tmp/shared.h" <<'CPP'
inline void scale_all(float* x, int n, float s) {
  for (int i = 0; i < n; ++i) x[i] *= s;
}
CPP
  printf '#include "shared.h"\nvoid kernel_avx2(float* x, int n) { scale_all(x, n, 2.0f); }\n' \
    >"$tmp/k_avx2.cpp"
  "$cxx" -O2 -mavx2 -fno-inline -c "$tmp/k_avx2.cpp" -o "$tmp/k_avx2.cpp.o"
  if "$0" "$tmp" >"$tmp/log" 2>&1; then
    echo "check_isa_objects --selftest: an AVX2 copy of an inline function was not caught" >&2
    cat "$tmp/log" >&2
    exit 1
  fi
  grep -q 'weak symbol scale_all' "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  echo "check_isa_objects --selftest: the shared AVX2 copy of scale_all was caught (pass)"
  exit 0
fi
dir=${1:?usage: check_isa_objects.sh OBJDIR}
mapfile -t objs < <(find "$dir" -name '*_avx2.cpp.o' -o -name '*_avx512.cpp.o' | sort)
if [ "${#objs[@]}" -eq 0 ]; then
  echo "check_isa_objects: no *_avx2 / *_avx512 objects under $dir" >&2
  exit 1
fi
bad=0
checked=0
for o in "${objs[@]}"; do
  while read -r sym; do
    checked=$((checked + 1))
    n=$(objdump -d --no-show-raw-insn --disassemble="$sym" "$o" |
      awk -F'\t' 'NF >= 2 { split($2, w, " "); m = w[1];
                  if ((m ~ /^v/ && m !~ /^ver[rw]$/) || m ~ /^k[a-z]/) c++ } END { print c + 0 }')
    if [ "$n" -gt 0 ]; then
      echo "FAIL $(basename "$o"): weak symbol $(c++filt "$sym") has $n AVX instructions;" \
        "a baseline object may link to this copy (wrap its header in RECOPS_ISA_NS," \
        "recops/isa_ns.h, or keep it out of the ISA file)" >&2
      bad=1
    fi
  done < <(nm --defined-only "$o" | awk '$2 ~ /^[WVu]$/ { print $3 }' | grep -v 'isa_avx' || true)
done
if [ "$bad" -eq 0 ]; then
  echo "check_isa_objects: ${#objs[@]} ISA objects, $checked shared weak symbols, none with AVX code"
fi
exit "$bad"
