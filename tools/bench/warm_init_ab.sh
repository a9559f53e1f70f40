#!/usr/bin/env bash
# Warm start-up of the XNNPACK delegate, A/B over builds: for each torchvision CNN, each
# bundle (make_device_bundle.sh) exports it, fills its own weights-cache directory, checks its
# output bytes against the first bundle's, then `ember bench` runs warm in interleaved rounds
# at each thread count. Prints the median (min..max) load + init ms and the median latency.
# Runs where PyTorch and torchvision are installed (the device machine).
#
#   tools/bench/warm_init_ab.sh BUNDLE_A BUNDLE_B [BUNDLE...]
#   CNNS (default "mobilenet_v3_small resnet18 mobilenet_v2 efficientnet_b0"),
#   THREADS (default "4 16"), ROUNDS (default 6)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundles=()
for b in "$@"; do bundles+=("$(cd "$b" && pwd)"); done
[ ${#bundles[@]} -ge 2 ] || { echo "usage: $0 BUNDLE_A BUNDLE_B [BUNDLE...]" >&2; exit 2; }
cnns=${CNNS:-mobilenet_v3_small resnet18 mobilenet_v2 efficientnet_b0}
work=$(mktemp -d)
python3 "$repo/tools/models/export_torchvision.py" "$work/models" $cnns > "$work/make.log" 2>&1 || tail -3 "$work/make.log"
rows=$work/rows.txt
for m in $cnns; do
  for k in "${!bundles[@]}"; do
    B=${bundles[$k]}
    LD_LIBRARY_PATH=$B/lib "$B/bin/ember" export "$work/models/$m/model.pt2" -o "$work/$m.$k.pte" --backend xnnpack > /dev/null 2>&1
    EMBER_XNNPACK_WEIGHTS_CACHE=$work/cache$k.$m LD_LIBRARY_PATH=$B/lib "$B/bin/ember" run "$work/$m.$k.pte" \
      --input "$work/models/$m/input_0.npy" --output-dir "$work/out$k.$m" > /dev/null 2>&1
    [ "$k" = 0 ] || { cmp -s "$work/out0.$m/output_0.npy" "$work/out$k.$m/output_0.npy" &&
      echo "$m: bundle $k output identical to bundle 0" || echo "$m: bundle $k output DIFFERS from bundle 0"; }
  done
  for t in ${THREADS:-4 16}; do
    for round in $(seq "${ROUNDS:-6}"); do
      for k in "${!bundles[@]}"; do
        B=${bundles[$k]}
        EMBER_XNNPACK_WEIGHTS_CACHE=$work/cache$k.$m LD_LIBRARY_PATH=$B/lib "$B/bin/ember" bench "$work/$m.$k.pte" \
          --threads "$t" --iterations 20 --warmup 2 --json "$work/b.json" > /dev/null 2>&1
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], sys.argv[4], d['load_ms']+d['init_ms'], d['latency_ms']['median'])" \
          "$work/b.json" "$m" "$t" "$k" >> "$rows"
      done
    done
  done
done
python3 - "$rows" "${bundles[@]}" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m, t, k, init, lat = line.split()
    d[(m, int(t), int(k))].append((float(init), float(lat)))
for k, b in enumerate(sys.argv[2:]):
    print(f"bundle {k}: {b}")
print("model threads bundle | warm load + init ms: median (min..max) | latency ms: median of medians")
for key in sorted(d):
    ini = [x[0] for x in d[key]]; lat = [x[1] for x in d[key]]
    print(*key, "| %.2f (%.2f..%.2f) | %.3f" % (statistics.median(ini), min(ini), max(ini), statistics.median(lat)))
PY
rm -rf "$work"
