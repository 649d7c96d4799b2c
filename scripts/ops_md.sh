#!/usr/bin/env bash
# docs/ops.md is `recops list --markdown` as a build without CUDA prints it: from a CUDA build the
# `implementations (cuda)` lines are dropped, so the file and its check do not depend on the build.
#   scripts/ops_md.sh RECOPS          rewrite docs/ops.md          (make docs)
#   scripts/ops_md.sh RECOPS --check  exit 1 with the diff when docs/ops.md is not current (ctest)
set -euo pipefail
cd "$(dirname "$0")/.."
recops=${1:?usage: scripts/ops_md.sh PATH/TO/recops [--check]}
new=$(mktemp)
trap 'rm -f "$new"' EXIT
"$recops" list --markdown --cases-dir src/ops |
  sed -e '/^- implementations (cuda): /d' \
    -e 's/^Lists the implementations of a build with CUDA/Lists the implementations of a build without CUDA/' \
    >"$new"
if [ "${2:-}" != "--check" ]; then
  cp "$new" docs/ops.md
  echo "wrote docs/ops.md"
  exit 0
fi
if ! diff -u docs/ops.md "$new" >"$new.diff"; then
  echo "docs/ops.md is out of date (the registry or a cases.yaml changed): run \`make docs\`" \
    "(or scripts/ops_md.sh $recops) and commit docs/ops.md. The difference (- file, + now):"
  head -n 60 "$new.diff"
  rm -f "$new.diff"
  exit 1
fi
rm -f "$new.diff"
echo "docs/ops.md is current"
