#!/usr/bin/env bash
# `ember debug` on every shared model with XNNPACK and Vulkan: a markdown table of the
# largest per-operator relative L2 against the portable kernels, the operator it is on,
# and whether any operator passed the default tolerance (docs/devtools.md).
#   tools/devtools/debug_shared_models.sh [../shared/models] [xnnpack vulkan]
# Vulkan runs on whatever driver the loader finds (lavapipe on a machine without a GPU).
set -uo pipefail
cd "$(dirname "$0")/../.."
models=${1:-../shared/models}
shift || true
backends=("${@:-xnnpack vulkan}")
bazel build -c opt //tools:ember >&2 || exit 1
ember=$(bazel info -c opt bazel-bin 2>/dev/null)/tools/ember
echo "| model | backend | ops delegated (one call each) | largest per-op rel. L2 | at node (op) | first past tolerance | output rel. L2 |"
echo "|---|---|---|---|---|---|---|"
for dir in "$models"/*/; do
  name=$(basename "$dir")
  [ -f "$dir/model.pt2" ] || continue
  inputs=()
  for f in "$dir"/input_*.npy; do [ -f "$f" ] && inputs+=(--input "$f"); done
  for b in ${backends[*]}; do
    out=$("$ember" debug "$dir/model.pt2" --backend "$b" "${inputs[@]}" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
      echo "| $name | $b | error: $(echo "$out" | tail -1 | cut -c1-80) | | | | |"
      continue
    fi
    delegated=$(echo "$out" | sed -nE '1s/^[a-z]+: ([0-9]+) nodes delegated.*/\1/p')
    largest=$(echo "$out" | awk '/^largest delegated error:/{getline; getline; print $2" ("$3") "$5; exit}')
    first=$(echo "$out" | awk '/^first operator past the tolerance:/{getline; getline; print $2; exit}')
    output=$(echo "$out" | sed -nE 's/^method output 0: relative L2 (.*)/\1/p')
    read -r node op err <<<"$largest"
    echo "| $name | $b | $delegated | ${err:-} | ${node:-} ${op:-} | ${first:-none} | $output |"
  done
done
