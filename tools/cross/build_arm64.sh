#!/usr/bin/env bash
# Cross-builds the `ember` runner (run / bench / inspect; the exporter stays a host tool)
# for Arm64 Linux with Debian's aarch64 cross compiler, links the portable kernels and the
# XNNPACK delegate, and smoke-tests it under qemu-user.
#
#   tools/cross/build_arm64.sh [PROGRAM.pte]
#
# Output: out/arm64/ember (dynamically linked against glibc, libXNNPACK, libpthreadpool,
# libcpuinfo; copy out/arm64/sysroot/usr/lib/aarch64-linux-gnu/*.so* next to it on the
# device, or install those Debian arm64 packages there) and, when a .pte is given, the
# output of `ember bench` run under qemu-aarch64-static.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUT=$ROOT/out/arm64
SYSROOT=$OUT/sysroot
mkdir -p "$OUT/gen/schema" "$OUT/gen/delegates/xnnpack" "$OUT/obj" "$SYSROOT"

need=()
for p in g++-aarch64-linux-gnu qemu-user-static flatbuffers-compiler; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# arm64 XNNPACK/pthreadpool/cpuinfo cannot be co-installed with the amd64 -dev packages:
# unpack their .debs into a private sysroot instead.
if [ ! -f "$SYSROOT/usr/lib/aarch64-linux-gnu/libXNNPACK.so" ]; then
  dpkg --print-foreign-architectures | grep -q arm64 || { dpkg --add-architecture arm64; apt-get update -qq; }
  (cd "$OUT" && apt-get download -q libxnnpack-dev:arm64 libxnnpack0:arm64 libpthreadpool-dev:arm64 \
      libpthreadpool0:arm64 libcpuinfo-dev:arm64 libcpuinfo0:arm64 >/dev/null 2>&1)
  for deb in "$OUT"/*.deb; do dpkg-deb -x "$deb" "$SYSROOT"; done
fi

flatc --cpp --scoped-enums -o "$OUT/gen/schema" schema/program.fbs
flatc --cpp --scoped-enums -o "$OUT/gen/delegates/xnnpack" delegates/xnnpack/xnnpack_graph.fbs

CXX=aarch64-linux-gnu-g++
FLAGS=(-std=c++17 -O2 -DNDEBUG -fPIC -I"$ROOT" -I"$OUT/gen" -I"$SYSROOT/usr/include" -Wall)
RUNTIME_FLAGS=(-fno-exceptions -fno-rtti)
mapfile -t runtime_srcs < <(ls runtime/core/*.cc runtime/platform/*.cc runtime/kernel/*.cc \
  runtime/backend/*.cc runtime/loader/*.cc runtime/program/*.cc runtime/executor/*.cc)
mapfile -t kernel_srcs < <(find kernels/portable -name '*.cc' | sort)
mapfile -t xnnpack_srcs < <(ls delegates/xnnpack/runtime/*.cc delegates/xnnpack/xnnpack_shapes.cc)
tool_srcs=(runtime/module/module.cc runtime/module/npy.cc runtime/module/tensor_ptr.cc
  runtime/module/thread_pool_factory.cc tools/ember_main.cc tools/commands/command_registry.cc
  tools/commands/command_util.cc tools/commands/run_command.cc tools/commands/bench_command.cc
  tools/commands/inspect_command.cc)

objs=()
compile() {  # src, extra flags...
  local src=$1; shift
  local obj="$OUT/obj/${src//\//_}.o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
    "$CXX" "${FLAGS[@]}" "$@" -c "$src" -o "$obj"
  fi
  objs+=("$obj")
}
for s in "${runtime_srcs[@]}" "${kernel_srcs[@]}" "${xnnpack_srcs[@]}"; do compile "$s" "${RUNTIME_FLAGS[@]}"; done
for s in "${tool_srcs[@]}"; do compile "$s"; done

LIBDIR=$SYSROOT/usr/lib/aarch64-linux-gnu
# Registration objects are linked whole (static registrars must not be dropped).
"$CXX" -o "$OUT/ember" "${objs[@]}" -L"$LIBDIR" -Wl,-rpath-link,"$LIBDIR" \
  -lXNNPACK -lpthreadpool -lcpuinfo -lpthread -lm -static-libstdc++ -static-libgcc
aarch64-linux-gnu-strip -o "$OUT/ember.stripped" "$OUT/ember"
file "$OUT/ember" | sed 's/, BuildID[^,]*//'
echo "stripped size: $(stat -c %s "$OUT/ember.stripped") bytes"

run_qemu() {
  qemu-aarch64-static -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$LIBDIR" "$OUT/ember" "$@"
}
run_qemu --help | head -3
if [ $# -ge 1 ]; then
  run_qemu inspect "$1" | head -8
  run_qemu bench "$1" --warmup 1 --iterations 3
fi
