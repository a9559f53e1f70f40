#!/usr/bin/env bash
# Per-dispatch GPU profile of the Vulkan delegate with the direct and the tiled matmul/conv2d
# shader paths forced in turn (EMBER_VULKAN_TILED=0/1), for every model in a device bundle
# (make_device_bundle.sh). Prints each profile (EMBER_VULKAN_PROFILE=1) and the bench median.
# Usage: tools/bench/vulkan_profile.sh BUNDLE [MODEL...]   (default: every bundled model)
set -uo pipefail
bundle=$(cd "$1" && pwd); shift
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
# shellcheck source=tools/bench/nvidia_vulkan_env.sh
. "$(dirname "$0")/nvidia_vulkan_env.sh"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=($(ls "$bundle/models"))
work=$(mktemp -d)
for m in "${models[@]}"; do
  "$E" export "$bundle/models/$m/model.pt2" -o "$work/$m.pte" --backend vulkan >/dev/null 2>&1 || {
    echo "$m: export failed"; continue; }
  for tiled in 0 1; do
    echo "=== $m EMBER_VULKAN_TILED=$tiled"
    EMBER_VULKAN_TILED=$tiled EMBER_VULKAN_PROFILE=1 "$E" bench "$work/$m.pte" --warmup 5 --iterations 30 2>&1 |
      grep -E "ember vulkan profile|^  |latency"
  done
done
