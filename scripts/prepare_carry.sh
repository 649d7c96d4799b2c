#!/usr/bin/env bash
# scripts/prepare_carry.sh: run HERE (not on the GPU host) before a device run. The lent H200 has
# CUDA, CMake, ninja and python3 with torch, but no yaml-cpp, CLI11, nlohmann-json or GoogleTest,
# and it cannot download anything. This fetches those Debian packages with apt-get and unpacks them
# with `dpkg -x` into .carry/ (git-ignored); the device run names .carry in `carry`, and
# scripts/device.sh points CMake (CMAKE_PREFIX_PATH) and the loader (LD_LIBRARY_PATH) at
# .carry/usr. Their CMake package files locate themselves relative to where they lie, so the
# unpacked tree works from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev nlohmann-json3-dev libgtest-dev)

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 777 "$work"  # apt's _apt user writes the downloads
(cd "$work" && apt-get download "${PACKAGES[@]}")

rm -rf .carry
mkdir -p .carry
for deb in "$work"/*.deb; do
  dpkg -x "$deb" .carry
  echo "unpacked $(basename "$deb")"
done
# Documentation is not needed on the device and only adds to what travels.
rm -rf .carry/usr/share/doc .carry/usr/share/man .carry/usr/share/lintian
du -sh .carry
