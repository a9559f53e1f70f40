#!/usr/bin/env bash
# Cross-builds the `ember_runner` (run / bench / inspect; the exporter stays a host tool) for
# Arm64 Linux from the same Bazel BUILD files as the host (`--config=arm64`: Debian's
# g++-aarch64-linux-gnu, third_party/toolchains/aarch64), against XNNPACK 2024 cross-built
# by third_party/xnnpack/build.sh arm64, then smoke-tests it under qemu-user: a small XNNPACK
# program exported on the host must load, run and agree with the host runner's output, and
# `ember bench` must time it; a QNN program must be inspected and, without the device's QNN
# library, refused cleanly. CI runs this script (.ci/run), so the Arm64 path cannot rot.
#
#   tools/cross/build_arm64.sh [-c opt|fastbuild]       (default opt)
#
# Output in out/arm64/: ember_runner (aarch64, libstdc++ linked statically) and
# libcpuinfo.so.0, the one shared library it needs besides glibc (Debian 13's cpuinfo; put
# it next to the runner on the device: the runner's run path includes $ORIGIN).
# The last line is "N passed, M failed" (one case per check).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUT=$ROOT/out/arm64
MODE=opt
if [ "${1:-}" = "-c" ] && [ -n "${2:-}" ]; then MODE=$2; fi
mkdir -p "$OUT"

passed=0
failed=0
check() {  # name, status
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "arm64: $1 ok"
  else failed=$((failed + 1)); echo "arm64: $1 FAILED"; fi
}
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

need=()
for p in g++-aarch64-linux-gnu qemu-user-static; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "arm64: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" = "0" ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

third_party/xnnpack/build.sh arm64
check "XNNPACK 2024 for arm64 (third_party/xnnpack/build.sh arm64)" $?

# Host exporter first: bazel-bin follows the last build's configuration.
bazel build -c "$MODE" //tools:ember
host_built=$?
HOST_BIN=$(bazel info -c "$MODE" bazel-bin 2>/dev/null)
bazel build -c "$MODE" --config=arm64 //tools:ember_runner
check "bazel build --config=arm64 //tools:ember_runner" $?
ARM_BIN=$(bazel info -c "$MODE" --config=arm64 bazel-bin 2>/dev/null)
if [ ! -x "$ARM_BIN/tools/ember_runner" ] || [ "$host_built" -ne 0 ]; then
  echo "arm64: no runner or no host exporter; skipping the smoke run"
  failed=$((failed + 1))
  finish
fi
install -m 755 "$ARM_BIN/tools/ember_runner" "$OUT/ember_runner"
cp -L third_party/xnnpack/local-arm64/usr/lib/aarch64-linux-gnu/libcpuinfo.so.0 "$OUT/"

file "$OUT/ember_runner" | grep -q "ARM aarch64"
check "ember_runner is an aarch64 executable" $?

# Smoke run under qemu: MobileNetV2 (the README's example) with the XNNPACK delegate.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
HOST_EMBER="$HOST_BIN/tools/ember"
"$HOST_EMBER" export examples/models/mobilenet_v2.pt2 -o "$WORK/mv2.pte" --backend xnnpack
check "host export of examples/models/mobilenet_v2.pt2 --backend xnnpack" $?
python3 - "$WORK/input.npy" <<'EOF'
import struct, sys, random
# A deterministic 1x3x224x224 float32 .npy without numpy (CI's python3 has no numpy).
random.seed(7)
n = 3 * 224 * 224
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }"
header += " " * (127 - 10 - len(header)) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % n, *[random.uniform(-1, 1) for _ in range(n)]))
EOF
QEMU=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
"$HOST_EMBER" run "$WORK/mv2.pte" --input "$WORK/input.npy" --output-dir "$WORK/host" >/dev/null
"${QEMU[@]}" "$OUT/ember_runner" run "$WORK/mv2.pte" --input "$WORK/input.npy" --output-dir "$WORK/arm64"
check "qemu: ember_runner run mobilenet_v2 (XNNPACK)" $?
python3 - "$WORK/host/output_0.npy" "$WORK/arm64/output_0.npy" <<'EOF'
import math, struct, sys
def load(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    body = data[10 + hlen:]
    return struct.unpack("<%df" % (len(body) // 4), body)
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b) == 1000, (len(a), len(b))
err = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))) / math.sqrt(sum(x * x for x in a))
print("arm64: rel. L2 of the aarch64 output against the host's: %.2e" % err)
# Different microkernels (NEON vs AVX) sum in different orders: float rounding only.
sys.exit(0 if err <= 1e-4 else 1)
EOF
check "aarch64 output matches the host output (rel. L2 <= 1e-4)" $?
"${QEMU[@]}" "$OUT/ember_runner" bench "$WORK/mv2.pte" --iterations 1 --warmup 0  # ~15 s a call under qemu
check "qemu: ember_runner bench mobilenet_v2 (XNNPACK)" $?

# The QNN delegate is linked in: a QNN program (compiled on the host with Qualcomm's x86-64
# library, which ./setup.sh installs) is inspected, and without the device's libQnnHtp.so (none
# for aarch64 here) refused at load with the message that names the fix, not a crash.
if "$HOST_EMBER" export examples/models/fashion_cnn_int8_pt2e.pt2 -o "$WORK/fashion_qnn.pte" --backend qnn \
     --strict-delegation >/dev/null 2>&1; then
  "${QEMU[@]}" "$OUT/ember_runner" inspect "$WORK/fashion_qnn.pte" | grep -q "QNN context binary"
  check "qemu: ember_runner inspect shows the QNN delegate" $?
  out=$(EMBER_QNN_LIBRARY=/nonexistent/libQnnHtp.so "${QEMU[@]}" "$OUT/ember_runner" run "$WORK/fashion_qnn.pte" --zeros 2>&1)
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && echo "$out" | grep -q "cannot load the QNN HTP library"
  check "qemu: a QNN program without the device's library fails cleanly, naming it" $?
else
  echo "arm64: no QNN library on the host (./setup.sh installs it); QNN checks skipped"
fi
finish
