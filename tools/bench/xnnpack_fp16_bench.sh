#!/usr/bin/env bash
# `--xnnpack-fp16` against fp32 on XNNPACK, side by side in one run: median ms of `ember bench`
# at 1 / 4 / 16 threads (each T-thread figure pinned to cores 0..T-1, two interleaved rounds),
# and the fp16 program's relative L2 error against the fp32 program's output and against
# PyTorch's (eager, fp32). Seeded torchvision models (tools/models/export_torchvision.py), so
# it runs where PyTorch is installed (the device machine) over a bundle made by
# make_device_bundle.sh. Prints whether the CPU has AVX512-FP16 (native fp16 arithmetic).
#
#   tools/bench/xnnpack_fp16_bench.sh BUNDLE [MODEL...]   (default resnet18 mobilenet_v2 efficientnet_b0 vit_b_16)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundle=$(cd "$1" && pwd); shift
models=${*:-resnet18 mobilenet_v2 efficientnet_b0 vit_b_16}
export LD_LIBRARY_PATH=$bundle/lib
E=$bundle/bin/ember
work=$(mktemp -d)
grep -qE "avx512_?fp16" /proc/cpuinfo && echo "CPU: AVX512-FP16 (native fp16 arithmetic)" || echo "CPU: no AVX512-FP16"
# shellcheck disable=SC2086
python3 "$repo/tools/models/export_torchvision.py" "$work/models" $models > "$work/make.log" 2>&1
median() { python3 -c "import json,sys; print('%.2f' % json.load(open(sys.argv[1]))['latency_ms']['median'])" "$1"; }
rel() { python3 -c "
import numpy as np, sys
a = np.load(sys.argv[1]).astype(np.float64); b = np.load(sys.argv[2]).astype(np.float64)
print('%.1e' % (np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)))" "$1" "$2"; }
echo "| model | T | fp32 ms | fp16 ms | fp16 / fp32 | fp16 vs fp32 rel. L2 | fp16 vs PyTorch | fp32 vs PyTorch |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for m in $models; do
  d=$work/models/$m
  [ -f "$d/model.pt2" ] || { echo "| $m | export failed: $(tail -1 "$work/make.log") |"; continue; }
  "$E" export "$d/model.pt2" -o "$work/$m.fp32.pte" --backend xnnpack > /dev/null 2>&1
  "$E" export "$d/model.pt2" -o "$work/$m.fp16.pte" --backend xnnpack --xnnpack-fp16 > /dev/null 2>&1
  for p in fp32 fp16; do "$E" run "$work/$m.$p.pte" --input "$d/input_0.npy" --output-dir "$work/$m.$p" > /dev/null 2>&1; done
  e16=$(rel "$work/$m.fp16/output_0.npy" "$work/$m.fp32/output_0.npy")
  e16t=$(rel "$work/$m.fp16/output_0.npy" "$d/output_0.npy")
  e32t=$(rel "$work/$m.fp32/output_0.npy" "$d/output_0.npy")
  for t in 1 4 16; do
    declare -A best=()
    for round in 1 2; do
      for p in fp32 fp16; do
        taskset -c 0-$((t - 1)) "$E" bench "$work/$m.$p.pte" --threads "$t" --iterations 30 --warmup 5 \
          --json "$work/b.json" > /dev/null 2>&1
        v=$(median "$work/b.json")
        if [ -z "${best[$p]:-}" ] || python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$v" "${best[$p]}"; then best[$p]=$v; fi
      done
    done
    ratio=$(python3 -c "import sys; print('%.2fx' % (float(sys.argv[2]) / float(sys.argv[1])))" "${best[fp32]}" "${best[fp16]}")
    echo "| $m | $t | ${best[fp32]} | ${best[fp16]} | $ratio | $e16 | $e16t | $e32t |"
    unset best
  done
done
rm -rf "$work"
