#!/usr/bin/env bash
# Runs on the device machine (GPU + 16 cores, PyTorch and onnxruntime installed) over a bundle
# made by make_device_bundle.sh: exports every bundled model for vulkan (fp32 and fp16 storage),
# xnnpack and the portable kernels with Ember's own exporter, checks each program's output against the
# PyTorch reference (relative L2), benchmarks them with `ember bench`, then times PyTorch
# eager and onnxruntime on the same CPU (torch_compare.py). Results: OUTDIR/*.json, a log.
# Usage: tools/bench/device_compare.sh BUNDLE OUTDIR [THREADS...]   (default threads: 1 2)
# Environment: BACKENDS (default "vulkan vulkan16 xnnpack portable"), SKIP_TORCH=1 to time
# Ember alone (e.g. re-measuring after a shader change).
# CPU_PEERS=1 adds the CPU table of Ember XNNPACK vs onnxruntime vs ExecuTorch (cpu_peers.py:
# exports what the bundle's peers/ lacks, then times at THREADS; the ExecuTorch wheels of the
# bundle's wheels/ are installed into a temporary directory); CPU_PEERS=only runs just that.
# PEER_MODELS (default: cpu_peers.py's, i.e. the torchvision CNNs + the bundle's vit_tiny and
# bert_tiny), PEER_ITERATIONS (30), PEER_WARMUP (5). Output: OUTDIR/cpu_peers.{md,json,log}.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "$1" && pwd); out=$2; shift 2
threads=${*:-1 2}
mkdir -p "$out"
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
# shellcheck source=tools/bench/nvidia_vulkan_env.sh
. "$(dirname "$0")/nvidia_vulkan_env.sh"
lscpu | grep -E '^(Model name|CPU\(s\))' || true

work=$(mktemp -d)

cpu_peers() {
  local etlib=() peers=$work/peers models=()
  if ls "$bundle"/wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-deps --no-index --target "$work/etlib" "$bundle"/wheels/*.whl &&
      etlib=(--et-path "$work/etlib")
  fi
  mkdir -p "$peers"; [ -d "$bundle/peers" ] && cp -r "$bundle"/peers/. "$peers"/
  [ -n "${PEER_MODELS:-}" ] && models=(--models "$PEER_MODELS")
  python3 "$here/cpu_peers.py" --prepare "$peers" --shared "$bundle/models" "${models[@]}" "${etlib[@]}" \
    2>&1 | tee "$out/cpu_peers.prepare.log" | grep -v '^ '
  python3 "$here/cpu_peers.py" --from "$peers" --ember "$E" --workdir "$work/peers_work" "${models[@]}" "${etlib[@]}" \
    --threads "$(echo $threads | tr ' ' ',')" --iterations "${PEER_ITERATIONS:-30}" --warmup "${PEER_WARMUP:-5}" \
    --json "$out/cpu_peers.json" 2>"$out/cpu_peers.log" | tee "$out/cpu_peers.md"
}
if [ "${CPU_PEERS:-0}" = only ]; then cpu_peers; exit 0; fi

for mdir in "$bundle"/models/*/; do
  m=$(basename "$mdir")
  for b in ${BACKENDS:-vulkan vulkan16 xnnpack portable}; do
    pte=$work/$m.$b.pte
    flags=(--backend "$b")
    [ "$b" = vulkan16 ] && flags=(--backend vulkan --vulkan-fp16)   # fp16 storage variant
    if ! "$E" export "$mdir/model.pt2" -o "$pte" "${flags[@]}" >"$out/$m.$b.export.log" 2>&1; then
      echo "$m $b: export failed: $(tail -1 "$out/$m.$b.export.log")"; continue
    fi
    grep '^partition' "$out/$m.$b.export.log" | sed "s/^/$m $b: /"
    ins=()
    for f in "$mdir"/input_*.npy; do ins+=(--input "$f"); done
    rm -rf "$work/run"; mkdir -p "$work/run"
    if "$E" run "$pte" "${ins[@]}" --output-dir "$work/run" >"$out/$m.$b.run.log" 2>&1; then
      python3 - "$work/run/output_0.npy" "$mdir/output_0.npy" "$m $b" <<'PY'
import sys, numpy as np
a, r = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
print(f"{sys.argv[3]}: relative L2 vs PyTorch {np.linalg.norm(a - r) / max(np.linalg.norm(r), 1e-30):.2e}")
PY
    else
      echo "$m $b: run failed: $(tail -1 "$out/$m.$b.run.log")"; continue
    fi
    bt=$threads; [ "${b#vulkan}" != "$b" ] && bt=1   # the GPU path uses one CPU thread
    for t in $bt; do
      "$E" bench "$pte" --warmup 5 --iterations 30 --threads "$t" --json "$out/$m.$b.t$t.json" >/dev/null 2>&1 ||
        echo "$m $b t$t: bench failed"
    done
  done
done
[ "${SKIP_TORCH:-0}" = 1 ] || python3 "$here/torch_compare.py" "$bundle/models" "$out" $threads
python3 "$here/summarize_bench.py" "$out"
[ "${CPU_PEERS:-0}" = 1 ] && cpu_peers
