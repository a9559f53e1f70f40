#!/usr/bin/env bash
# Packs an opt build of `ember` with the shared libraries it links (all but glibc's own) and
# the given model directories into DIR, so the device machine (no Debian packages, no
# Bazel) can run it: DIR/bin/ember, DIR/lib/*.so*, DIR/models/<name>/{model.pt2,*.npy}.
# Usage: tools/bench/make_device_bundle.sh DIR MODEL_DIR...
# Build first: bazel build -c opt //tools:ember
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
du -sh "$dir"
