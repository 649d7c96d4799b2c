#!/usr/bin/env bash
# scripts/prepare_peers.sh: run HERE before a device benchmark run that times the jagged peers.
# Unpacks the Python + Triton sources of FBGEMM's Triton jagged ops (fbgemm_gpu/triton/jagged) and
# of SLL (fbgemm_gpu/sll/triton) from PyPI's fbgemm-gpu-cpu wheel into .peers/fbgemm_gpu_triton/
# (git-ignored, never committed). Only those .py files are taken: no compiled library, so they
# import on the device's torch + Triton without fbgemm_gpu's own .so (package __init__ files are
# empty stand-ins written here). bench/jagged_peers.py puts the folder on sys.path when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${FBGEMM_VERSION:-1.8.0}
PY=${PY:-.venv/bin/python}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m pip download -q --no-deps -d "$work" "fbgemm-gpu-cpu==$VERSION"
dest=.peers/fbgemm_gpu_triton
rm -rf "$dest"
mkdir -p "$dest"
(cd "$dest" && unzip -q "$work"/fbgemm_gpu_cpu-*.whl 'fbgemm_gpu/sll/triton/*.py' \
  'fbgemm_gpu/triton/jagged/*.py' 'fbgemm_gpu/triton/common.py')
for pkg in fbgemm_gpu fbgemm_gpu/sll fbgemm_gpu/triton; do
  echo "# stand-in written by scripts/prepare_peers.sh (fbgemm-gpu-cpu $VERSION)" > "$dest/$pkg/__init__.py"
done
echo "fbgemm-gpu-cpu==$VERSION" > "$dest/VERSION"
find "$dest" -name '*.py' | wc -l
