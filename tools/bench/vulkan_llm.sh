#!/usr/bin/env bash
# LLM prefill and decode tokens/s on the Vulkan delegate (the whole decoder in one delegate
# call per token, KV cache on the GPU) in fp32 and with weight-only int8 / int4 (group 32)
# linear layers (QUANTS, default "fp32 int8-weight int4-weight"), next to the GPU's bandwidth
# roofline: decode reads every weight once per token, so tokens/s is at most bandwidth / weight
# bytes (the .pte's size). fp32 also runs decode with the row-dot linear path off
# (EMBER_VULKAN_ROW_DOT=0). Each program runs once first (2 tokens) so that the pipeline cache
# file holds its pipelines, as on any later run; the greedy tokens are compared with the CPU's
# (XNNPACK, 16 threads, same weights).
#
#   tools/bench/vulkan_llm.sh BUNDLE OUT_DIR "PRESETS"      e.g. .devbundle /tmp/vk_llm "15m 110m 1b"
# BUNDLE: tools/bench/make_device_bundle.sh's directory (bin/ember, lib/). Needs python3 with
# torch and CUDA (make_llama_bench.py writes the .pt2; the bandwidth is torch's device copy).
set -uo pipefail
bundle=$(readlink -f "$1"); out=$2; presets=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$bundle/lib:${LD_LIBRARY_PATH:-}"
source "$repo/tools/bench/nvidia_vulkan_env.sh"
ember="$bundle/bin/ember"
mkdir -p "$out"
prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(64)))")  # 64 prompt tokens
# Device copy bandwidth (GB/s, read + write): torch copies 1 GiB on the GPU, best of 10.
bw=$(python3 - <<'PY'
import torch
a = torch.ones(1 << 28, device="cuda"); b = torch.empty_like(a); best = 1e9
for _ in range(10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); best = min(best, s.elapsed_time(e) / 1e3)
print(f"{2 * a.numel() * 4 / best / 1e9:.0f}")
PY
)
{
  echo "GPU copy bandwidth: $bw GB/s"
  echo
  echo "| model | weights | .pte MiB | prefill tok/s (64) | decode tok/s | decode, row-dot off | roofline tok/s | % of roofline | load ms | first token ms | greedy tokens = CPU's |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$out/results.md"
for p in $presets; do
  [ -f "$out/llama_$p.pt2" ] || python3 "$repo/tools/models/make_llama_bench.py" --preset "$p" --out-dir "$out" >/dev/null 2>&1 || { echo "make $p failed"; continue; }
  meta=$(cat "$out/llama_$p.metadata")
  for q in ${QUANTS:-fp32 int8-weight int4-weight}; do
    flags=""; [ "$q" = int8-weight ] && flags="--quantize int8-weight"; [ "$q" = int4-weight ] && flags="--quantize int4-weight --group-size 32"
    pte="$out/llama_${p}_${q}_vulkan.pte"
    "$ember" export "$out/llama_$p.pt2" -o "$pte" --backend vulkan $meta $flags > "$out/export_${p}_$q.log" 2>&1 || { echo "export $p $q failed: $(tail -2 "$out/export_${p}_$q.log")"; continue; }
    echo "$p $q: $(tail -1 "$out/export_${p}_$q.log")"
    mib=$(python3 -c "import os; print(f'{os.path.getsize(\"$pte\") / 2**20:.1f}')")
    "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 2 --eos-id none --quiet > /dev/null 2>&1
    "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 128 --eos-id none --quiet --json "$out/gen_${p}_$q.json" > "$out/gen_${p}_$q.log" 2>&1 || { echo "generate $p $q failed: $(tail -3 "$out/gen_${p}_$q.log")"; continue; }
    # The same greedy tokens from the CPU (XNNPACK, 16 threads)?
    "$ember" export "$out/llama_$p.pt2" -o "$out/llama_${p}_cpu.pte" --backend xnnpack $meta $flags > /dev/null 2>&1 &&
      "$ember" generate "$out/llama_${p}_cpu.pte" --prompt-tokens "$prompt" --max-new-tokens 32 --eos-id none --threads 16 --quiet \
        --json "$out/cpu_${p}_$q.json" > /dev/null 2>&1
    rm -f "$out/llama_${p}_cpu.pte"
    [ "$q" = fp32 ] && EMBER_VULKAN_ROW_DOT=0 "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 32 --eos-id none --quiet --json "$out/gen_${p}_norowdot.json" > /dev/null 2>&1
    python3 - "$out/gen_${p}_$q.json" "$out/gen_${p}_norowdot.json" "$p" "$mib" "$bw" "$out/cpu_${p}_$q.json" "$q" >> "$out/results.md" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1])); p, mib, bw, q = sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[7]
cpu = json.load(open(sys.argv[6]))["generated_tokens"] if os.path.exists(sys.argv[6]) else []
gpu = j["generated_tokens"][:len(cpu)]
same = next((i for i, (a, b) in enumerate(zip(gpu, cpu)) if a != b), None)
same = "n/a" if not cpu else ("all %d" % len(cpu) if same is None else "first %d" % same)
off = json.load(open(sys.argv[2]))["decode_tokens_per_s"] if q == "fp32" and os.path.exists(sys.argv[2]) else None
roof = bw * 1e9 / (mib * 2**20)  # every weight byte read once per token
print(f"| llama_{p} | {q} | {mib:.0f} | {j['prefill_tokens_per_s']:.0f} | {j['decode_tokens_per_s']:.1f} | "
      f"{'%.1f' % off if off else '-'} | {roof:.0f} | {100 * j['decode_tokens_per_s'] / roof:.0f}% | {j.get('load_ms', 0):.0f} | "
      f"{j.get('ttft_ms', 0):.0f} | {same} |")
PY
  done
done
# Where a decode token's GPU time goes (per-dispatch timestamps, the largest preset).
last=${presets##* }
EMBER_VULKAN_PROFILE=1 "$ember" generate "$out/llama_${last}_int4-weight_vulkan.pte" --prompt-tokens 1,2,3 --max-new-tokens 16 --eos-id none --quiet > "$out/profile_$last.log" 2>&1
cat "$out/results.md"
