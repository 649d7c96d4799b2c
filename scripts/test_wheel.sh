#!/usr/bin/env bash
# The wheel, as a user gets it: built once with pip (scikit-build-core; build-wheel/ keeps its
# objects between runs and ccache fills a fresh one), its metadata checked, installed into a fresh
# venv, and used from a directory outside the source tree: the console script `recops`, the
# packaged case files, `import recops` and one op.
# The fresh venv sees the test venv's packages (torch, numpy, pyyaml) through a .pth file, so
# nothing is downloaded (pip runs with --no-index) and torch is not installed twice.
#   PY=.venv/bin/python JOBS=2 WHEEL_CUDA=OFF scripts/test_wheel.sh
# WHEEL_CUDA defaults to the main build's RECOPS_WITH_CUDA (build/CMakeCache.txt; BUILD= names
# another build), else OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
JOBS=${JOBS:-$(nproc)}
# The wheel, the venv and the working directory of the smoke test: outside the source tree.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/dist"

# ccache serves the wheel's objects from the main build's when the commands match: the same C++
# compiler name (ccache keys on it, so /usr/bin/c++ and /usr/bin/g++ miss each other), the same CUDA
# setting, and a build directory at the same depth as the main one ($BUILD-wheel next to $BUILD:
# CCACHE_BASEDIR rewrites include paths relative to it, and pyproject's build-wheel/<tag> is one
# level deeper, so every nvcc object missed). On a clone with the main build done: 607 s with g++,
# CUDA off and build-wheel/<tag> (141 of 462 hits); 37 s this way (463 of 463 direct hits).
cache=${BUILD:-build}/CMakeCache.txt
cached() { [ -f "$cache" ] && sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; }
WHEEL_CUDA=${WHEEL_CUDA:-$(cached RECOPS_WITH_CUDA)}
WHEEL_CUDA=${WHEEL_CUDA:-OFF}
cxx=$(cached CMAKE_CXX_COMPILER)
echo "--- building the wheel (RECOPS_WITH_CUDA=$WHEEL_CUDA${cxx:+, CXX $cxx})"
start=$SECONDS
"$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps --no-index \
  -w "$WORK/dist" -C cmake.define.RECOPS_WITH_CUDA="$WHEEL_CUDA" \
  ${cxx:+-C cmake.define.CMAKE_CXX_COMPILER="$cxx"} -C build-dir="${BUILD:-build}-wheel" \
  -C build.tool-args="-j$JOBS" .
whl=$(ls "$WORK"/dist/recops-*.whl)
echo "built $(basename "$whl") in $((SECONDS - start)) s"

echo "--- metadata and contents"
"$PY" - "$whl" <<'PYEOF'
import re, sys, zipfile
import torch
whl = zipfile.ZipFile(sys.argv[1])
names = whl.namelist()
version = re.search(r"project\(recops VERSION ([0-9.]+)", open("CMakeLists.txt").read()).group(1)
meta = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
entry = whl.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
want = {
    "one version (CMakeLists.txt)": f"\nVersion: {version}\n" in meta,
    "torch pinned to the build's": f"Requires-Dist: torch=={torch.__version__.split('+')[0]}" in meta,
    "license": "License-Expression: Apache-2.0" in meta,
    "license file": any(n.endswith("LICENSE") for n in names),
    "console script": re.search(r"^recops = recops\._cli:main$", entry, re.M) is not None,
    "CLI": "recops/bin/recops" in names,
    "binding": "recops/librecops_torch.so" in names,
    "case files": "recops/_ops/jagged/dense_to_jagged/cases.yaml" in names,
}
bad = [k for k, ok in want.items() if not ok]
if bad:
    sys.exit("wheel: missing " + ", ".join(bad) + "\n" + meta[:1500])
print("metadata and contents: " + ", ".join(want))
PYEOF

echo "--- a fresh venv, outside the source tree"
venv=$WORK/venv
"$PY" -m venv --without-pip "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/test-venv-packages.pth"
"$PY" -m pip --python "$venv/bin/python" install -q --disable-pip-version-check --no-index "$whl"
cd "$WORK"
run() { env -u RECOPS_SOURCE_DIR -u RECOPS_TORCH_LIB -u PYTHONPATH "$@"; }
run "$venv/bin/recops" --version
run "$venv/bin/recops" list >/dev/null
run "$venv/bin/recops" check --backend cpu --quick --op dense_to_jagged,complete_cumsum -q |
  tail -n 2
run "$venv/bin/python" - "$ROOT" "$venv" <<'PYEOF'
import sys
from pathlib import Path
import torch, recops
root, venv = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
where = Path(recops.__file__).resolve()
assert venv in where.parents and root not in where.parents, f"recops imported from {where}"
assert venv in recops.library_path.resolve().parents, recops.library_path
offsets = recops.complete_cumsum(torch.tensor([3, 0, 5]))
dense = recops.jagged_to_padded_dense(torch.arange(16.0).reshape(8, 2), offsets, max_seq_len=4)
assert dense.shape == (3, 4, 2) and dense[2, 3, 1].item() == 13.0
print(f"import recops {recops.__version__} from {where.parent}: ok")
PYEOF
echo "wheel test passed in $((SECONDS - start)) s"
