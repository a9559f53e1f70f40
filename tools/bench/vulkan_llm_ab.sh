#!/usr/bin/env bash
# A/B of LLM decoding on the Vulkan delegate in one run: baseline ember binaries (earlier
# commits', built the same way: BASELINES="label:path ...") against this bundle's, with dispatch
# fusion off (EMBER_VULKAN_FUSE=0) and on, on the same exported programs (the blob format is unchanged),
# ROUNDS interleaved rounds (default 2) of 64 prompt tokens then 128 greedy tokens; the cell is
# the median decode tokens/s over the rounds. Then one per-dispatch profile of each
# configuration of the last preset's int4 program.
#
#   BASELINES="7afddcf:/tmp/ember_7afddcf" tools/bench/vulkan_llm_ab.sh BUNDLE OUT_DIR "PRESETS"    e.g. .devbundlev /tmp/ab "1b"
# QUANTS: default "int4-weight int8-weight". Needs what vulkan_llm.sh needs (torch + CUDA for
# the models and the copy bandwidth).
set -uo pipefail
bundle=$(readlink -f "$1"); out=$2; presets=$3
declare -A base
for b in ${BASELINES:-}; do base[${b%%:*}]=$(readlink -f "${b#*:}"); done
repo=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$bundle/lib:${LD_LIBRARY_PATH:-}"
source "$repo/tools/bench/nvidia_vulkan_env.sh"
ember="$bundle/bin/ember"
mkdir -p "$out"
prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(64)))")
configs="${!base[*]} fuse0 fuse1"
# Runs configuration $1 (a baseline label, fuse0 or fuse1) with the remaining arguments.
ember_as() {
  local cfg=$1; shift
  case $cfg in
    fuse0) EMBER_VULKAN_FUSE=0 "$ember" "$@" ;;
    fuse1) EMBER_VULKAN_FUSE=1 "$ember" "$@" ;;
    *) "${base[$cfg]}" "$@" ;;
  esac
}
run() {  # config pte json
  ember_as "$1" generate "$2" --prompt-tokens "$prompt" --max-new-tokens 128 --eos-id none --quiet --json "$3" > /dev/null 2>&1
}
for p in $presets; do
  [ -f "$out/llama_$p.pt2" ] || python3 "$repo/tools/models/make_llama_bench.py" --preset "$p" --out-dir "$out" >/dev/null 2>&1 || { echo "make $p failed"; continue; }
  meta=$(cat "$out/llama_$p.metadata")
  for q in ${QUANTS:-int4-weight int8-weight}; do
    flags="--quantize $q"; [ "$q" = int4-weight ] && flags="$flags --group-size 32"
    pte="$out/llama_${p}_${q}_vulkan.pte"
    "$ember" export "$out/llama_$p.pt2" -o "$pte" --backend vulkan $meta $flags > "$out/export_${p}_$q.log" 2>&1 || { echo "export $p $q failed"; continue; }
    for cfg in $configs; do run "$cfg" "$pte" /dev/null; done  # warm the pipeline cache files
    for r in $(seq 1 "${ROUNDS:-2}"); do
      for cfg in $configs; do run "$cfg" "$pte" "$out/gen_${p}_${q}_${cfg}_$r.json"; done
    done
  done
done
python3 - "$out" "$presets" "${QUANTS:-int4-weight int8-weight}" "$configs" <<'PY'
import glob, json, statistics, sys
out, presets, quants, configs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
print("| model | weights | " + " | ".join(f"{c} decode tok/s" for c in configs) + " | " + " | ".join(f"{c} prefill tok/s" for c in configs) + " | tokens equal |")
print("|---|---|" + "---:|" * (2 * len(configs)) + "---|")
for p in presets:
    for q in quants:
        dec, pre, toks = [], [], []
        for c in configs:
            js = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/gen_{p}_{q}_{c}_*.json"))]
            dec.append(f"{statistics.median(j['decode_tokens_per_s'] for j in js):.1f}" if js else "-")
            pre.append(f"{statistics.median(j['prefill_tokens_per_s'] for j in js):.0f}" if js else "-")
            toks.append(js[0]["generated_tokens"] if js else None)
        same = "yes" if all(t == toks[0] for t in toks) else "no: " + ", ".join(
            f"{c} from {next((i for i, (a, b) in enumerate(zip(t or [], toks[0] or [])) if a != b), '-')}" for c, t in zip(configs, toks))
        print(f"| llama_{p} | {q} | " + " | ".join(dec) + " | " + " | ".join(pre) + f" | {same} |")
PY
last=${presets##* }
pte="$out/llama_${last}_int4-weight_vulkan.pte"
for cfg in $configs; do
  echo "## profile: $cfg"
  EMBER_VULKAN_PROFILE=1 ember_as "$cfg" generate "$pte" --prompt-tokens 1,2,3 --max-new-tokens 16 --eos-id none --quiet 2>&1 |
    grep -v "^ember vulkan context"
done
# linear_wq's work split forced (workgroup:rows:threads, 0 = the heuristic's), fused: its GPU
# time per token and its costliest specialisations (the layers' shapes).
for split in ${SPLITS:-0:0:0 128:1:64 128:2:64 128:4:64 128:2:128 128:4:128 64:2:32 128:8:32}; do
  IFS=: read -r wg rows threads <<< "$split"
  echo "## linear_wq split $split: $(EMBER_VULKAN_WQ_WG=$wg EMBER_VULKAN_WQ_ROWS=$rows EMBER_VULKAN_WQ_THREADS=$threads \
    EMBER_VULKAN_PROFILE=1 "$ember" generate "$pte" --prompt-tokens 1,2,3 --max-new-tokens 16 --eos-id none 2>&1 |
    grep -E "linear_wq +[0-9]+ dispatches|profile:| x +[0-9.]+ us +linear_wq" | head -8 | tr -s ' ' | tr '\n' ';')"
done
