#!/usr/bin/env bash
# LLM prefill and decode tokens/s on the Vulkan delegate (fp32 weights; the whole decoder in
# one delegate call per token, KV cache on the GPU), next to the GPU's bandwidth roofline:
# decode reads every weight once per token, so tokens/s is at most bandwidth / weight bytes.
# Also runs decode with the row-dot linear path off (EMBER_VULKAN_ROW_DOT=0) for comparison.
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
  echo "| model | weights MiB | prefill tok/s (64) | decode tok/s | decode, row-dot off | roofline tok/s | % of roofline | load ms | first token ms |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} > "$out/results.md"
for p in $presets; do
  [ -f "$out/llama_$p.pt2" ] || python3 "$repo/tools/models/make_llama_bench.py" --preset "$p" --out-dir "$out" >/dev/null 2>&1 || { echo "make $p failed"; continue; }
  meta=$(cat "$out/llama_$p.metadata")
  pte="$out/llama_${p}_vulkan.pte"
  "$ember" export "$out/llama_$p.pt2" -o "$pte" --backend vulkan $meta > "$out/export_$p.log" 2>&1 || { echo "export $p failed: $(tail -2 "$out/export_$p.log")"; continue; }
  tail -1 "$out/export_$p.log"
  mib=$(python3 -c "import os; print(f'{os.path.getsize(\"$pte\") / 2**20:.1f}')")
  "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 128 --eos-id none --quiet --json "$out/gen_$p.json" > "$out/gen_$p.log" 2>&1 || { echo "generate $p failed: $(tail -3 "$out/gen_$p.log")"; continue; }
  EMBER_VULKAN_ROW_DOT=0 "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 32 --eos-id none --quiet --json "$out/gen_${p}_norowdot.json" > /dev/null 2>&1
  python3 - "$out/gen_$p.json" "$out/gen_${p}_norowdot.json" "$p" "$mib" "$bw" >> "$out/results.md" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1])); p, mib, bw = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
off = json.load(open(sys.argv[2]))["decode_tokens_per_s"] if os.path.exists(sys.argv[2]) else float("nan")
roof = bw * 1e9 / (mib * 2**20)  # every weight byte read once per token
print(f"| llama_{p} | {mib:.0f} | {j['prefill_tokens_per_s']:.0f} | {j['decode_tokens_per_s']:.1f} | {off:.1f} | {roof:.0f} | "
      f"{100 * j['decode_tokens_per_s'] / roof:.0f}% | {j.get('load_ms', 0):.0f} | {j.get('ttft_ms', 0):.0f} |")
PY
done
# Where one decode token's GPU time goes (the smallest preset, per-dispatch timestamps).
first=${presets%% *}
EMBER_VULKAN_PROFILE=1 "$ember" generate "$out/llama_${first}_vulkan.pte" --prompt-tokens 1,2,3 --max-new-tokens 16 --eos-id none --quiet > "$out/profile_$first.log" 2>&1
cat "$out/results.md"
