#!/usr/bin/env bash
# Where a decoded token's time goes on the Vulkan delegate, on the device machine: decode and
# prefill tokens/s of this bundle's ember against a baseline binary (ROUNDS interleaved rounds,
# default 4, of 64 prompt tokens then 128 greedy tokens of the seeded 1.1B Llama, int4-weight
# g32), then one run with EMBER_VULKAN_PROFILE=span (the graph's GPU span with its own barriers,
# the host's time per execute and from submission to the fence) and one with
# EMBER_VULKAN_PROFILE=1 (per dispatch). The span figures are means over every execute, the
# 64-token prefill included.
#
#   tools/bench/vulkan_llm_span.sh BUNDLE BASELINE_EMBER WORK_DIR
# SWEEP="A=1 B=2,C=3" also times this bundle's ember twice per comma-separated environment
# (e.g. EMBER_VULKAN_WQ_THREADS=64,EMBER_VULKAN_SPIN_US=2000), after the rounds; a baseline may
# be a script that sets an environment and runs the bundle's ember (an A/B of one binary).
# Needs torch (tools/models/make_llama_bench.py) and the Vulkan loader (see docs/benchmarks-gpu.md).
set -u
bundle=$(readlink -f "$1"); base=$(readlink -f "$2"); work=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$bundle/lib:${LD_LIBRARY_PATH:-}"
source "$repo/tools/bench/nvidia_vulkan_env.sh"
mkdir -p "$work"
[ -f "$work/llama_1b.pt2" ] || python3 "$repo/tools/models/make_llama_bench.py" --preset 1b --out-dir "$work" > /dev/null 2>&1 || { echo "make 1b failed"; exit 1; }
pte=$work/llama_1b_int4.pte
"$bundle/bin/ember" export "$work/llama_1b.pt2" -o "$pte" --backend vulkan $(cat "$work/llama_1b.metadata") \
  --quantize int4-weight --group-size 32 2>&1 | grep -i partition
prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(64)))")
gen() {  # ember binary: prints decode and prefill tokens/s; stderr in $work/err.txt
  "$@" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 128 --eos-id none --quiet --json "$work/j.json" \
    > /dev/null 2> "$work/err.txt"
  python3 -c "import json; j=json.load(open('$work/j.json')); print('decode %.1f prefill %.0f' % (j['decode_tokens_per_s'], j['prefill_tokens_per_s']))"
}
gen "$bundle/bin/ember" > /dev/null; gen "$base" > /dev/null  # pipeline cache files
for r in $(seq 1 "${ROUNDS:-4}"); do
  echo "new: $(gen "$bundle/bin/ember")   base: $(gen "$base")"
done
IFS=, read -r -a sweep <<<"${SWEEP:-}"
for envs in "${sweep[@]}"; do
  # shellcheck disable=SC2086
  echo "sweep $envs: $(gen env $envs "$bundle/bin/ember")  /  $(gen env $envs "$bundle/bin/ember")"
done
for mode in span 1; do
  echo "## EMBER_VULKAN_PROFILE=$mode"
  EMBER_VULKAN_PROFILE=$mode gen "$bundle/bin/ember"
  grep -E "span|profile:|generate:" "$work/err.txt"
done
