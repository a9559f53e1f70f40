#!/usr/bin/env bash
# Prefill and decode tokens/s of Llama-architecture programs (seeded weights, no download) in
# fp32, int8-weight and int4-weight (group 32), at several thread counts, next to the
# memory-bandwidth roofline of the machine: decode reads every weight once per token, so
# tokens/s can be at most copy bandwidth / weight bytes.
#
#   tools/llm/bench_llm.sh EMBER OUT_DIR "PRESETS" "THREADS"
#   e.g. tools/llm/bench_llm.sh bazel-bin/tools/ember /tmp/llm_bench "15m 110m" "1 2"
# Needs python3 with torch (tools/models/make_llama_bench.py writes the .pt2; the bandwidth
# is measured with torch's copy).
# Writes OUT_DIR/results.md (a table) and one ember generate --json per run. QUANTS (default
# "fp32 int8-weight int4-weight") picks the weight types.
set -uo pipefail
ember=$(readlink -f "$1"); out=$2; presets=$3; threads=$4
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(64)))")  # 64 prompt tokens
# Copy bandwidth (GB/s, read + write) at each thread count: torch copies a 512 MiB tensor
# with that many threads, best of 5. Decode at the roofline reads the weights at this speed.
declare -A bw
for t in $threads; do
  bw[$t]=$(python3 - "$t" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a = torch.ones(1 << 27); b = torch.empty_like(a); best = 1e9
for _ in range(5):
    t = time.perf_counter(); b.copy_(a); best = min(best, time.perf_counter() - t)
print(f"{2 * a.numel() * 4 / best / 1e9:.1f}")
PY
)
done
echo "copy bandwidth GB/s by threads: $(for t in $threads; do printf '%s: %s  ' "$t" "${bw[$t]}"; done)" > "$out/results.md"
echo >> "$out/results.md"
echo "| model | weights | .pte MiB | threads | prefill tok/s (64) | decode tok/s | roofline tok/s | % of roofline |" >> "$out/results.md"
echo "|---|---|---:|---:|---:|---:|---:|---:|" >> "$out/results.md"
for p in $presets; do
  [ -f "$out/llama_$p.pt2" ] || python3 "$repo/tools/models/make_llama_bench.py" --preset "$p" --out-dir "$out" >/dev/null 2>&1 || { echo "make $p failed"; continue; }
  meta=$(cat "$out/llama_$p.metadata")
  for q in ${QUANTS:-fp32 int8-weight int4-weight}; do
    flags=""; [ "$q" = int8-weight ] && flags="--quantize int8-weight"; [ "$q" = int4-weight ] && flags="--quantize int4-weight --group-size 32"
    pte="$out/llama_${p}_$q.pte"
    "$ember" export "$out/llama_$p.pt2" -o "$pte" --backend xnnpack $meta $flags > "$out/export_${p}_$q.log" 2>&1 || { echo "export $p $q failed: $(tail -2 "$out/export_${p}_$q.log")"; continue; }
    mib=$(python3 -c "import os; print(f'{os.path.getsize(\"$pte\") / 2**20:.1f}')")
    for t in $threads; do
      json="$out/gen_${p}_${q}_t$t.json"
      "$ember" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 32 --eos-id none --threads "$t" --quiet --json "$json" > /dev/null 2>&1 || { echo "generate $p $q t$t failed"; continue; }
      python3 - "$json" "$p" "$q" "$mib" "$t" "${bw[$t]}" >> "$out/results.md" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); p, q, mib, t, bw = sys.argv[2:7]
mib = float(mib); bw = float(bw)
# Weights read per decoded token ~ the program's constant bytes (the KV cache and the
# embedding rows read are small next to them).
roof = bw * 1e9 / (mib * 2**20)
print(f"| llama_{p} | {q} | {mib:.1f} | {t} | {j['prefill_tokens_per_s']:.1f} | {j['decode_tokens_per_s']:.1f} | {roof:.1f} | {100 * j['decode_tokens_per_s'] / roof:.0f}% |")
PY
    done
  done
done
cat "$out/results.md"
