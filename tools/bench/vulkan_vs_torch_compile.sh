#!/usr/bin/env bash
# The Vulkan delegate against torch.compile (reduce-overhead) and eager CUDA on the same GPU, in
# one run (issue 32's CNN acceptance). For each MODELS/<name>/model.pt2: `ember export --backend
# vulkan`, the output checked against the stored PyTorch output, then ROUNDS interleaved rounds of
# `ember bench` for each Ember variant in VARIANTS ("name=ENV=VALUE[,ENV=VALUE]" or "name=" for
# the defaults), one EMBER_VULKAN_PROFILE=1 run per variant (per-shader GPU time), then
# torch_compile_gpu.py. Prints a markdown table (medians of the rounds' medians) and keeps the logs.
# FP16=1: each model is also exported with --vulkan-fp16 and every variant runs on that program
# too, as "<variant>-fp16".
# Usage: tools/bench/vulkan_vs_torch_compile.sh BUNDLE MODELS OUT [NAME...]
# Environment: VARIANTS (default "ember="), ROUNDS (3), ITERATIONS (50), SKIP_TORCH=1, FP16=1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "$1" && pwd); models=$(cd "$2" && pwd); out=$3; shift 3
mkdir -p "$out"; out=$(cd "$out" && pwd)
names=("$@"); [ ${#names[@]} -gt 0 ] || names=($(ls "$models"))
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
# shellcheck source=tools/bench/nvidia_vulkan_env.sh
. "$here/nvidia_vulkan_env.sh"
read -r -a base_variants <<< "${VARIANTS:-ember=}"
# Each entry: name=ENVS; the fp16 program's entries are named <variant>-fp16.
variants=("${base_variants[@]}")
if [ "${FP16:-0}" = 1 ]; then
  for v in "${base_variants[@]}"; do variants+=("${v%%=*}-fp16=${v#*=}"); done
fi
pte_of() {  # variant model: the program the variant runs
  case ${1%%=*} in *-fp16) echo "$work/$2.fp16.pte" ;; *) echo "$work/$2.pte" ;; esac
}
rounds=${ROUNDS:-3}; iterations=${ITERATIONS:-50}
work=$(mktemp -d)
run_variant() {  # variant pte json [profile]: runs ember bench under the variant's environment
  local spec=${1#*=} envs=()
  [ -n "$spec" ] && IFS=, read -r -a envs <<< "$spec"
  env "${envs[@]}" ${4:+EMBER_VULKAN_PROFILE=1} "$E" bench "$2" --warmup 10 --iterations "$iterations" --json "$3"
}
for m in "${names[@]}"; do
  d=$models/$m
  if ! "$E" export "$d/model.pt2" -o "$work/$m.pte" --backend vulkan > "$out/$m.export.log" 2>&1; then
    echo "$m: export failed: $(tail -1 "$out/$m.export.log")"; continue
  fi
  grep '^partition' "$out/$m.export.log" | sed "s/^/$m: /"
  if [ "${FP16:-0}" = 1 ] &&
     ! "$E" export "$d/model.pt2" -o "$work/$m.fp16.pte" --backend vulkan --vulkan-fp16 > "$out/$m.fp16.export.log" 2>&1; then
    echo "$m: fp16 export failed: $(tail -1 "$out/$m.fp16.export.log")"; continue
  fi
  ins=(); for f in "$d"/input_*.npy; do ins+=(--input "$f"); done
  for v in "${variants[@]}"; do
    rm -rf "$work/run"; mkdir -p "$work/run"
    spec=${v#*=}; envs=(); [ -n "$spec" ] && IFS=, read -r -a envs <<< "$spec"
    env "${envs[@]}" "$E" run "$(pte_of "$v" "$m")" "${ins[@]}" --output-dir "$work/run" > /dev/null 2>&1 &&
      python3 -c "
import sys, numpy as np
a, r = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
print('$m ${v%%=*}: rel L2 vs PyTorch %.1e' % (np.linalg.norm(a - r) / max(np.linalg.norm(r), 1e-30)))" \
        "$work/run/output_0.npy" "$d/output_0.npy"
  done
  for r in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
      run_variant "$v" "$(pte_of "$v" "$m")" "$out/$m.${v%%=*}.r$r.json" > /dev/null 2> "$out/$m.${v%%=*}.r$r.err"
    done
  done
  for v in "${variants[@]}"; do
    run_variant "$v" "$(pte_of "$v" "$m")" "$work/p.json" 1 2>&1 | grep -E "ember vulkan profile|^  " > "$out/$m.${v%%=*}.profile.txt"
  done
done
[ "${SKIP_TORCH:-0}" = 1 ] || python3 "$here/torch_compile_gpu.py" "$models" "$out/torch.json" "${names[@]}" | tee "$out/torch.log"
python3 - "$out" "$rounds" "${variants[@]}" -- "${names[@]}" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]; cut = rest.index("--")
variants, names = [v.split("=")[0] for v in rest[:cut]], rest[cut + 1:]
torch = json.load(open(os.path.join(out, "torch.json"))) if os.path.exists(os.path.join(out, "torch.json")) else {}
cols = variants + ["torch.compile", "torch eager"]
print("| model | " + " | ".join(cols) + " | " + " | ".join(f"{v} / compile" for v in variants) + " |")
print("|---|" + "---:|" * (len(cols) + len(variants)))
for m in names:
    row, ember = [], {}
    for v in variants:
        meds = []
        for r in range(1, rounds + 1):
            p = os.path.join(out, f"{m}.{v}.r{r}.json")
            if os.path.exists(p):
                meds.append(json.load(open(p))["latency_ms"]["median"])
        ember[v] = statistics.median(meds) if meds else None
        row.append(" / ".join(f"{x:.3f}" for x in meds) or "-")
    t = torch.get(m, {})
    comp = t.get("compile", {}).get("median")
    row += [f"{t[k]['median']:.3f}" if k in t else "-" for k in ("compile", "eager")]
    row += [f"{ember[v] / comp:.2f}x" if ember[v] and comp else "-" for v in variants]
    print(f"| {m} | " + " | ".join(row) + " |")
PY
rm -rf "$work"
