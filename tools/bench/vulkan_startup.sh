#!/usr/bin/env bash
# Vulkan delegate start-up on a device: method init (ember bench's init_ms: delegate init =
# parse, allocation, weight upload, pipelines, recording) of each model in four situations,
# each a new process, 3 runs each (median):
#   before        the pipeline cache file off, pipelines created one at a time (as before
#                 2026-11-27), the NVIDIA driver's own shader disk cache off
#   first load    an empty Ember cache directory, pipelines created on several threads,
#                 the driver's disk cache off
#   second load   the same directory again (the file the first load wrote)
#   driver cache  Ember's file off, the driver's own disk cache on, second run (what the
#                 driver alone gives a second load)
# and one EMBER_VULKAN_PROFILE=1 init line per model (phase times) for the second load.
# Usage: tools/bench/vulkan_startup.sh BUNDLE MODELS_DIR   (MODELS_DIR/<name>/model.pt2)
# Environment: EXPORT_FLAGS (added to `ember export`, e.g. --vulkan-fp16).
set -uo pipefail
bundle=$(cd "$1" && pwd); models=$(cd "$2" && pwd)
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
# shellcheck source=tools/bench/nvidia_vulkan_env.sh
. "$(dirname "$0")/nvidia_vulkan_env.sh"
work=$(mktemp -d)
init_ms() {  # pte json-file -> prints init_ms
  python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['init_ms'])" "$1"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bench() {  # pte -> init ms (env set by the caller)
  "$E" bench "$1" --iterations 3 --warmup 1 --json "$work/b.json" >/dev/null 2>"$work/b.err" || { echo fail; head -3 "$work/b.err" >&2; return; }
  init_ms "$work/b.json"
}
echo "| model | before | first load | second load | driver cache only (2nd run) | latency ms |"
echo "|---|---:|---:|---:|---:|---:|"
for d in "$models"/*/; do
  m=$(basename "$d")
  # shellcheck disable=SC2086
  "$E" export "$d/model.pt2" -o "$work/$m.pte" --backend vulkan ${EXPORT_FLAGS:-} >/dev/null 2>&1 || { echo "| $m | export failed |"; continue; }
  before="" first="" second="" driver=""
  for r in 1 2 3; do
    before+=" $(EMBER_VULKAN_PIPELINE_CACHE_DIR=off EMBER_VULKAN_PIPELINE_THREADS=1 __GL_SHADER_DISK_CACHE=0 bench "$work/$m.pte")"
    dir=$work/cache_${m}_$r; rm -rf "$dir"
    first+=" $(EMBER_VULKAN_PIPELINE_CACHE_DIR=$dir __GL_SHADER_DISK_CACHE=0 bench "$work/$m.pte")"
    second+=" $(EMBER_VULKAN_PIPELINE_CACHE_DIR=$dir __GL_SHADER_DISK_CACHE=0 bench "$work/$m.pte")"
    gl=$work/gl_${m}_$r; rm -rf "$gl"; mkdir -p "$gl"
    EMBER_VULKAN_PIPELINE_CACHE_DIR=off __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$gl bench "$work/$m.pte" >/dev/null
    driver+=" $(EMBER_VULKAN_PIPELINE_CACHE_DIR=off __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$gl bench "$work/$m.pte")"
  done
  lat=$(python3 -c "import json; print('%.3f' % json.load(open('$work/b.json'))['latency_ms']['median'])")
  echo "| $m | $(echo $before | median) | $(echo $first | median) | $(echo $second | median) | $(echo $driver | median) | $lat |"
  EMBER_VULKAN_PROFILE=1 EMBER_VULKAN_PIPELINE_CACHE_DIR=$dir __GL_SHADER_DISK_CACHE=0 "$E" bench "$work/$m.pte" \
    --iterations 1 --warmup 0 2>&1 | grep "ember vulkan init" | sed "s/^/    $m: /" >&2
done
rm -rf "$work"
