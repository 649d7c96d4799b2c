#!/usr/bin/env bash
# scripts/prepare_peers.sh: run HERE before a device benchmark run that times the jagged or training
# peers (bench/jagged_peers.py, bench/training_peers.py).
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

# The training-op peers of bench/training_peers.py: Liger-Kernel and fla-core are pure Python +
# Triton, so their wheels are unpacked whole (with fla's one pure-Python dependency, einops) into
# .peers/training/, which the benchmark puts on sys.path. quack-kernels is not carried: it needs
# nvidia-cutlass-dsl, whose libs-cu12 4.8.1 wheel alone is 92 MB, past the 64 MiB carry limit; the
# benchmark records that.
LIGER_VERSION=${LIGER_VERSION:-0.8.5}
FLA_VERSION=${FLA_VERSION:-0.6.0}
EINOPS_VERSION=${EINOPS_VERSION:-0.8.2}
tdest=.peers/training
rm -rf "$tdest"
mkdir -p "$tdest"
"$PY" -m pip download -q --no-deps -d "$work" "liger-kernel==$LIGER_VERSION" \
  "fla-core==$FLA_VERSION" "einops==$EINOPS_VERSION"
for whl in "$work"/liger_kernel-*.whl "$work"/fla_core-*.whl "$work"/einops-*.whl; do
  (cd "$tdest" && unzip -q -o "$whl")
done
printf 'liger-kernel==%s\nfla-core==%s\neinops==%s\n' "$LIGER_VERSION" "$FLA_VERSION" \
  "$EINOPS_VERSION" > "$tdest/VERSION"
du -sh "$tdest"
