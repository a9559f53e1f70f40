#!/usr/bin/env bash
# Start-up and memory of the XNNPACK delegate with and without packed weights that map
# (delegates/xnnpack/runtime/weights_file_cache.h), next to the portable kernels: load + init
# ms and peak RSS from `ember bench --json` (CNNs) and `ember generate --json` (the LLM),
# each a fresh process, page cache warm. Rows: portable; XNNPACK without a cache directory;
# XNNPACK cold (first run with an empty directory: packs and writes); XNNPACK warm (the
# next runs: maps). Runs where PyTorch is installed (the device machine) over a bundle made by
# make_device_bundle.sh (no models needed in it: they are made here with seeded weights).
#
#   tools/bench/weights_cache_bench.sh BUNDLE OUTDIR [THREADS]     (default threads 16)
#   CNNS (default "resnet18 mobilenet_v2": torchvision, exported here), MODEL_DIRS (more
#   models: directories holding model.pt2 and input_<i>.npy, such as ../shared/models/*),
#   LLM_PRESET (default 1b; "" skips the LLM), LLM_QUANTS (default "int4 fp32")
# Writes OUTDIR/results.md and the JSON of every run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundle=$(cd "$1" && pwd); out=$2; threads=${3:-16}
mkdir -p "$out"
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
work=$(mktemp -d)
md=$out/results.md
lscpu | grep -E '^(Model name|CPU\(s\))' | sed 's/^/    /' > "$md"
{
  echo
  echo "| model | program MiB | run | load + init ms | peak RSS MiB | RSS / portable | outputs |"
  echo "|---|---:|---|---:|---:|---:|---|"
} >> "$md"

row() {  # model mib run json ref_rss  -> prints the row, echoes rss
  python3 - "$@" <<'PY'
import json, sys
model, mib, run, path, ref, same = sys.argv[1:7]
j = json.load(open(path))
start = j.get("load_ms", 0) + j.get("init_ms", 0)
rss = j["peak_rss_kb"] / 1024 if "peak_rss_kb" in j else j["peak_rss_bytes"] / 2**20
ratio = f"{rss / float(ref):.2f}x" if float(ref) > 0 else "1.00x"
print(f"| {model} | {mib} | {run} | {start:.1f} | {rss:.1f} | {ratio} | {same} |")
PY
}
rss_of() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['peak_rss_kb']/1024 if 'peak_rss_kb' in j else j['peak_rss_bytes']/2**20)" "$1"; }

# CNNs: bench (load_ms, init_ms, peak_rss_kb) + run (outputs compared bit for bit).
dirs=()
if [ -n "${CNNS-x}" ]; then
  python3 "$repo/tools/models/export_torchvision.py" "$work/models" ${CNNS:-resnet18 mobilenet_v2} > "$work/make.log" 2>&1
  for m in ${CNNS:-resnet18 mobilenet_v2}; do dirs+=("$work/models/$m"); done
fi
for d in ${MODEL_DIRS:-}; do dirs+=("$(cd "$d" && pwd)"); done
for d in "${dirs[@]}"; do
  m=$(basename "$d")
  [ -f "$d/model.pt2" ] || { echo "no $m: $(tail -2 "$work/make.log")"; continue; }
  inputs=()
  for i in 0 1 2 3 4 5 6 7; do [ -f "$d/input_$i.npy" ] && inputs+=(--input "$d/input_$i.npy"); done
  "$E" export "$d/model.pt2" -o "$work/$m.portable.pte" > /dev/null 2>&1
  "$E" export "$d/model.pt2" -o "$work/$m.xnnpack.pte" --backend xnnpack > /dev/null 2>&1
  mib=$(python3 -c "import os; print(f'{os.path.getsize(\"$work/$m.xnnpack.pte\") / 2**20:.1f}')")
  cache=$work/cache_$m
  bench() {  # pte name [cache dir]
    if [ -n "${3:-}" ]; then
      EMBER_XNNPACK_WEIGHTS_CACHE=$3 "$E" bench "$1" --threads "$threads" --iterations 5 --warmup 1 --json "$out/$m.$2.json" > /dev/null 2>&1
      EMBER_XNNPACK_WEIGHTS_CACHE=$3 "$E" run "$1" "${inputs[@]}" --output-dir "$work/$m.$2" > /dev/null 2>&1
    else
      "$E" bench "$1" --threads "$threads" --iterations 5 --warmup 1 --json "$out/$m.$2.json" > /dev/null 2>&1
      "$E" run "$1" "${inputs[@]}" --output-dir "$work/$m.$2" > /dev/null 2>&1
    fi
  }
  bench "$work/$m.portable.pte" portable
  bench "$work/$m.xnnpack.pte" xnnpack
  rm -rf "$cache"
  bench "$work/$m.xnnpack.pte" cold "$cache"   # bench packs and writes; its run then maps
  for k in 1 2 3; do bench "$work/$m.xnnpack.pte" warm$k "$cache"; done
  ref=$(rss_of "$out/$m.portable.json")
  for r in portable xnnpack cold warm1 warm2 warm3; do
    same=$(cmp -s "$work/$m.$r/output_0.npy" "$work/$m.xnnpack/output_0.npy" && echo "= uncached" || echo "DIFFER")
    [ "$r" = portable ] && same="reference"
    row "$m" "$mib" "$r" "$out/$m.$r.json" "$ref" "$same" >> "$md"
  done
  du -sh "$cache" | sed "s|^|    cache of $m: |" >> "$md.cache"
done

# The LLM: ember generate --json (load_ms covers program load and every method's init).
if [ -n "${LLM_PRESET-1b}" ]; then
  p=${LLM_PRESET:-1b}
  python3 "$repo/tools/models/make_llama_bench.py" --preset "$p" --out-dir "$work" > "$work/llm.log" 2>&1
  meta=$(cat "$work/llama_$p.metadata" 2>/dev/null)
  prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(16)))")
  for q in ${LLM_QUANTS:-int4 fp32}; do
    flags=""; [ $q = int4 ] && flags="--quantize int4-weight --group-size 32"
    pte=$work/llama_$p.$q.pte
    # shellcheck disable=SC2086
    "$E" export "$work/llama_$p.pt2" -o "$pte" --backend xnnpack $meta $flags > "$work/llm_export_$q.log" 2>&1 ||
      { echo "llm export $q failed: $(tail -2 "$work/llm_export_$q.log")" >> "$md"; continue; }
    mib=$(python3 -c "import os; print(f'{os.path.getsize(\"$pte\") / 2**20:.1f}')")
    gen() {  # name [cache]
      if [ -n "${2:-}" ]; then
        EMBER_XNNPACK_WEIGHTS_CACHE=$2 "$E" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 8 --eos-id none --threads "$threads" --quiet --json "$out/llama.$q.$1.json" > /dev/null 2>&1
      else
        "$E" generate "$pte" --prompt-tokens "$prompt" --max-new-tokens 8 --eos-id none --threads "$threads" --quiet --json "$out/llama.$q.$1.json" > /dev/null 2>&1
      fi
    }
    cache=$work/cache_llama_$q
    rm -rf "$cache"
    gen xnnpack; gen cold "$cache"; gen warm1 "$cache"; gen warm2 "$cache"
    for r in xnnpack cold warm1 warm2; do
      same=$(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['generated_tokens']; b=json.load(open(sys.argv[2]))['generated_tokens']; print('= uncached tokens' if a==b else 'DIFFER')" "$out/llama.$q.$r.json" "$out/llama.$q.xnnpack.json")
      row "llama_$p $q" "$mib" "$r" "$out/llama.$q.$r.json" 0 "$same" >> "$md"
    done
    du -sh "$cache" | sed "s|^|    cache of llama $q: |" >> "$md.cache"
    rm -f "$pte"
  done
fi
cat "$md.cache" >> "$md" 2>/dev/null
cat "$md"
rm -rf "$work"
