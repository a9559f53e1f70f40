#!/usr/bin/env bash
# Winograd convolutions on a CPU (issue 31): each model exported four times, with
# --xnnpack-winograd off (direct convolutions), auto (the exporter's per-layer choice, the
# default), 4x4 and 2x2 (those tiles wherever Winograd applies), then
#   - ember bench of the four programs at each thread count, interleaved, 3 rounds, pinned to
#     the last T cores (median of the rounds' medians of 30 calls);
#   - each program's output against the model's eager output (relative L2);
#   - the layer-by-layer benchmark (xnnpack_winograd_benchmark) at each thread count, with
#     warm caches and with the caches evicted before each run.
# Usage: tools/bench/winograd_cpu.sh BUNDLE MODELS_DIR [THREADS]   (default "1 4 16";
# BUNDLE: make_device_bundle.sh output with bin/xnnpack_winograd_benchmark added;
# MODELS_DIR/<name>/{model.pt2,input_0.npy,output_0.npy}, e.g. from export_torchvision.py)
set -uo pipefail
bundle=$(cd "$1" && pwd); models=$(cd "$2" && pwd); threads=${3:-"1 4 16"}
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
work=$(mktemp -d)
cores=$(nproc)
modes="off auto 4x4 2x2"
pin() { local t=$1; shift; taskset -c "$((cores - t))-$((cores - 1))" "$@"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rel_l2() {  # out.npy ref.npy
  python3 -c "import numpy as np,sys; a=np.load(sys.argv[1]).astype(np.float64); b=np.load(sys.argv[2]).astype(np.float64); print('%.3g' % (np.linalg.norm(a-b)/np.linalg.norm(b)))" "$1" "$2"
}
echo "| model | threads | off (direct) ms | auto ms | 4x4 ms | 2x2 ms | off / auto |"
echo "|---|---:|---:|---:|---:|---:|---:|"
acc=""
for d in "$models"/*/; do
  m=$(basename "$d")
  for v in $modes; do
    "$E" export "$d/model.pt2" -o "$work/$m.$v.pte" --backend xnnpack --xnnpack-winograd "$v" > "$work/$m.$v.log" 2>&1 || echo "$m $v: export failed"
    rm -rf "$work/out"; mkdir -p "$work/out"
    "$E" run "$work/$m.$v.pte" --input "$d/input_0.npy" --output-dir "$work/out" >/dev/null 2>&1
    acc+="$m $v $(rel_l2 "$work/out/output_0.npy" "$d/output_0.npy")"$'\n'
  done
  for t in $threads; do
    declare -A runs=()
    for r in 1 2 3; do
      for v in $modes; do
        ms=$(pin "$t" "$E" bench "$work/$m.$v.pte" --threads "$t" --warmup 3 --iterations 30 2>/dev/null | grep -o 'median [0-9.]*' | head -1 | cut -d' ' -f2)
        runs[$v]+=" $ms"
      done
    done
    row="| $m | $t"
    for v in $modes; do row+=" | $(echo "${runs[$v]}" | median)"; done
    off=$(echo "${runs[off]}" | median); auto=$(echo "${runs[auto]}" | median)
    echo "$row | $(python3 -c "print('%.2f' % ($off / $auto))" 2>/dev/null) |"
    unset runs
  done
done
echo
echo "relative L2 against eager PyTorch, per --xnnpack-winograd mode:"
echo "$acc"
if [ -x "$bundle/bin/xnnpack_winograd_benchmark" ]; then
  for t in $threads; do
    pin "$t" "$bundle/bin/xnnpack_winograd_benchmark" "$t"; echo
    pin "$t" "$bundle/bin/xnnpack_winograd_benchmark" "$t" cold; echo
  done
fi
