#!/usr/bin/env bash
# Packs an opt build of `ember` with the shared libraries it links (all but glibc's own) and
# the given model directories into DIR, so the device machine (no Debian packages, no
# Bazel) can run it: DIR/bin/ember, DIR/lib/*.so*, DIR/models/<name>/{model.pt2,*.npy}.
# Usage: tools/bench/make_device_bundle.sh DIR MODEL_DIR...
# Build first: bazel build -c opt //tools:ember
# PEER_WHEELS=1 also downloads (pip, no dependencies) the ExecuTorch runtime+exporter wheels for the
# device's Python (DEVICE_PY, default 3.12) into DIR/wheels, for cpu_peers.py there (CPU_PEERS=1
# device_compare.sh): the device machine has torch, onnxruntime, torchvision, timm and
# transformers but no executorch and no network. PEERS_DIR=D copies a `cpu_peers.py --prepare D`
# directory into DIR/peers (programs already exported; the device prepares whatever is missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1; shift
ember=bazel-out/k8-opt/bin/tools/ember
[ -x "$ember" ] || { echo "build it first: bazel build -c opt //tools:ember" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir/bin" "$dir/lib" "$dir/models"
cp "$ember" "$dir/bin/ember"
# glibc (libc, libm, libpthread, libdl, librt, ld-linux, vdso) comes from the host; everything else travels.
ldd "$ember" | awk '$3 ~ /^\// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$dir/lib/"; done
for m in "$@"; do
  name=$(basename "$m")
  mkdir -p "$dir/models/$name"
  cp "$m"/model.pt2 "$m"/*.npy "$m"/meta.json "$dir/models/$name/" 2>/dev/null || true
done
if [ "${PEER_WHEELS:-0}" = 1 ]; then
  # executorch 1.5.1 pins no torch; exir + the XNNPACK partitioner import torchao, ruamel.yaml and
  # tabulate (+wcwidth) beyond what torch brings; the rest of its dependencies are not imported.
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${DEVICE_PY:-3.12}" \
    --platform manylinux_2_28_x86_64 -d "$dir/wheels" \
    executorch==1.5.1 torchao==0.18.0 ruamel.yaml==0.19.1 tabulate wcwidth
fi
if [ -n "${PEERS_DIR:-}" ]; then cp -r "$PEERS_DIR" "$dir/peers"; fi
du -sh "$dir"
