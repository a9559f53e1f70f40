#!/usr/bin/env bash
# End-to-end test of the installed SDK, as another project would use it: installs into a
# temporary prefix, exports MobileNetV2 (examples/models) with the installed `ember`, makes the
# reference output with `ember run` on the portable-kernel program, then builds
# examples/cmake_app (CMake, static and shared), the same source with pkg-config + g++ and
# examples/c_app with gcc, and runs the Python bindings, all against the prefix only; each
# output is checked against the reference (rel. L2). Then a selective install
# (--ops-from mv2.pte) runs MobileNetV2 and refuses another program ("not in this build"). Last line: "N passed, M failed" (one
# case per check).
#   tools/sdk/test_sdk.sh [--keep]     # --keep leaves the temporary directory for inspection
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$(pwd)
keep=0
[ "${1:-}" = "--keep" ] && keep=1
tmp=$(mktemp -d /tmp/ember_sdk_test.XXXXXX)
[ $keep -eq 1 ] || trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
passed=0
failed=0
# check NAME COMMAND...: runs COMMAND (output in $tmp/log/NAME), counts one case.
mkdir -p "$tmp/log"
check() {
  local name=$1
  shift
  if "$@" >"$tmp/log/$name" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $name$(tail -1 "$tmp/log/$name" | sed -n 's/^\(ember .*\)$/: \1/p')"
  else
    failed=$((failed + 1))
    echo "FAIL $name (last lines of its output:)"
    tail -15 "$tmp/log/$name" | sed 's/^/    /'
  fi
}
summary() {
  echo "$passed passed, $failed failed"
  [ $failed -eq 0 ]
  exit
}

start=$(date +%s)
check install tools/sdk/install.sh "$prefix"
echo "install.sh: $(( $(date +%s) - start ))s"
[ -f "$prefix/bin/ember" ] || summary

# Every installed header compiles on its own with only the install tree on the include path.
headers_compile() (  # a subshell: it changes directory, away from the repository
  n=0
  cd "$tmp" || exit 1
  for h in $(cd "$prefix/include/ember" && find . -name '*.h' | sort); do
    g++ -std=c++17 -fsyntax-only -x c++ -I"$prefix/include/ember" "$prefix/include/ember/$h" || exit 1
    n=$((n + 1))
  done
  gcc -std=c11 -fsyntax-only -x c -I"$prefix/include/ember" "$prefix/include/ember/extension/c/ember_c.h" || exit 1
  echo "$n headers compile standalone"
)
check headers_standalone headers_compile

# The prefix is self-contained: the installed binary and libember.so find the bundled
# cpuinfo in PREFIX/lib, and nothing points into the build tree.
self_contained() {
  local f
  for f in "$prefix/bin/ember" "$prefix/lib/libember.so"; do
    local cpuinfo
    cpuinfo=$(ldd "$f" | awk '/libcpuinfo/ {print $3}')
    [ "$(readlink -f "$cpuinfo")" = "$(readlink -f "$prefix/lib/libcpuinfo.so.0")" ] || { ldd "$f"; return 1; }
    ! ldd "$f" | grep -q 'not found' || { ldd "$f"; return 1; }
    ! readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -q -e bazel -e xnnpack || { readelf -d "$f"; return 1; }
  done
}
check self_contained self_contained

E="$prefix/bin/ember"
check export_portable "$E" export examples/models/mobilenet_v2.pt2 -o "$tmp/mv2.pte"
check export_xnnpack "$E" export examples/models/mobilenet_v2.pt2 -o "$tmp/mv2_x.pte" --backend xnnpack
check export_vulkan "$E" export examples/models/mobilenet_v2.pt2 -o "$tmp/mv2_v.pte" --backend vulkan

# A deterministic image-sized input (stdlib only), and the reference from the installed CLI
# running the portable-kernel program.
python3 - "$tmp/input.npy" <<'PY'
import array, sys
n = 1 * 3 * 224 * 224
x, vals = 12345, array.array("f")
for _ in range(n):
    x = (1103515245 * x + 12345) % 2**31
    vals.append(x / 2**30 - 1.0)
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + vals.tobytes())
PY
check reference_run "$E" run "$tmp/mv2.pte" --input "$tmp/input.npy" --output-dir "$tmp/ref"
ref="$tmp/ref/output_0.npy"

# CMake: find_package(Ember) with Debian's cmake; static (whole-archive) and shared builds.
cmake_build() {
  cmake -S examples/cmake_app -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$tmp/cmake" -j 2
}
check cmake_build cmake_build
# The static app carries everything itself: no libember.so.
no_libember() {
  local deps
  deps=$(ldd "$1") || return 1
  echo "$deps"
  ! echo "$deps" | grep -q libember
}
check cmake_static_no_libember no_libember "$tmp/cmake/ember_app_static"
check cmake_static_portable "$tmp/cmake/ember_app_static" "$tmp/mv2.pte" "$tmp/input.npy" "$ref" 1e-6
check cmake_static_xnnpack "$tmp/cmake/ember_app_static" "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" 1e-4 2
check cmake_static_vulkan env EMBER_VULKAN_ALLOW_CPU=1 "$tmp/cmake/ember_app_static" "$tmp/mv2_v.pte" "$tmp/input.npy" "$ref" 1e-4
check cmake_shared_xnnpack "$tmp/cmake/ember_app_shared" "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" 1e-4

# pkg-config + plain g++ (the same source) and gcc for the C API example.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
check pkgconfig_gxx_shared bash -c "g++ -std=c++17 -O2 examples/cmake_app/main.cc -o '$tmp/app_pc' \$(pkg-config --cflags --libs ember)"
check pkgconfig_shared_xnnpack "$tmp/app_pc" "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" 1e-4
check pkgconfig_gxx_static bash -c "g++ -std=c++17 -O2 examples/cmake_app/main.cc -o '$tmp/app_pc_static' \$(pkg-config --cflags --libs ember-static)"
check pkgconfig_static_portable "$tmp/app_pc_static" "$tmp/mv2.pte" "$tmp/input.npy" "$ref" 1e-6
# Why whole-archive: the same static link without it drops every kernel registration, and
# the program must then fail to load (naming missing kernels) instead of running.
without_whole_archive() {
  local libs
  libs=$(pkg-config --libs ember-static | sed 's/-Wl,--whole-archive//; s/-Wl,--no-whole-archive//')
  # shellcheck disable=SC2086
  g++ -std=c++17 -O2 examples/cmake_app/main.cc -o "$tmp/app_no_whole" $(pkg-config --cflags ember-static) $libs || return 1
  if "$tmp/app_no_whole" "$tmp/mv2.pte" "$tmp/input.npy" "$ref" 1e-6 >"$tmp/no_whole.out" 2>&1; then
    echo "ran without the kernels' registrations?"; return 1
  fi
  cat "$tmp/no_whole.out"
  grep -qi 'kernel' "$tmp/no_whole.out"
}
check static_without_whole_archive_fails without_whole_archive
check c_api_gcc bash -c "gcc -std=c11 -O2 -Wall -Werror examples/c_app/main.c -o '$tmp/c_app' \$(pkg-config --cflags --libs ember) -lm"
check c_api_portable "$tmp/c_app" "$tmp/mv2.pte" "$tmp/input.npy" "$ref" 1e-6
check c_api_xnnpack "$tmp/c_app" "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" 1e-4

# Python bindings (Debian's python3 + numpy): numbers against the reference, errors as exceptions.
python_check() {
  PYTHONPATH="$prefix/python" /usr/bin/python3 - "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" <<'PY'
import sys
import numpy as np
import ember
pte, inp, ref = sys.argv[1:]
m = ember.Module(pte)
assert m.method_names() == ["forward"], m.method_names()
m.set_num_threads(2)
x, r = np.load(inp), np.load(ref)
outs = m.forward([x])
assert len(outs) == 1 and outs[0].shape == r.shape and outs[0].dtype == np.float32, outs
rel = float(np.linalg.norm(outs[0] - r) / np.linalg.norm(r))
assert rel <= 1e-4, rel
again = m.forward([x])[0]  # outputs are copies: the first result must not change
assert np.array_equal(again, outs[0])
for bad, what in (([x.astype(np.float64)], "float32"), ([x, x], "inputs"), ([x[:, :, ::2]], "input 0")):
    try:
        m.forward(bad)
        raise SystemExit("no error for a bad input (%s)" % what)
    except (RuntimeError, ValueError, TypeError) as e:
        assert what in str(e), str(e)
try:
    ember.Module("/nonexistent.pte")
    raise SystemExit("no error for a missing file")
except RuntimeError as e:
    assert "/nonexistent.pte" in str(e), str(e)
print("ember %s (Python): %s output 0: %d values, rel. L2 %.3g (max 1e-4): MATCH" % (ember.__version__, pte, r.size, rel))
PY
}
check python_bindings python_check

# The prefix is relocatable: a copy elsewhere works with no path from the original inside.
relocated() {
  local moved="$tmp/moved"
  cp -a "$prefix" "$moved" || return 1
  ! grep -rl --binary-files=text "$prefix" "$moved" || return 1
  PKG_CONFIG_PATH="$moved/lib/pkgconfig" bash -c \
    "gcc -std=c11 -O2 examples/c_app/main.c -o '$tmp/c_app_moved' \$(pkg-config --cflags --libs ember) -lm" || return 1
  mv "$prefix" "$prefix.hidden"  # nothing may still resolve into the original
  "$moved/bin/ember" inspect "$tmp/mv2_x.pte" >/dev/null && "$tmp/c_app_moved" "$tmp/mv2_x.pte" "$tmp/input.npy" "$ref" 1e-4
  local rc=$?
  mv "$prefix.hidden" "$prefix"
  return $rc
}
check relocated_prefix relocated

# A selective install (--ops-from): only MobileNetV2's operators. Its static app runs
# MobileNetV2, and a program with other operators (small_cnn from ../shared: relu, max_pool2d,
# softmax) fails to load with one line naming them as not in this build.
sel="$tmp/prefix_selective"
sel_start=$(date +%s)
check selective_install tools/sdk/install.sh "$sel" --ops-from "$tmp/mv2.pte" --no-python
echo "install.sh --ops-from: $(( $(date +%s) - sel_start ))s"
check selective_app_build bash -c "g++ -std=c++17 -O2 examples/cmake_app/main.cc -o '$tmp/app_selective' \$(PKG_CONFIG_PATH='$sel/lib/pkgconfig' pkg-config --cflags --libs ember-static)"
check selective_runs_its_program "$tmp/app_selective" "$tmp/mv2.pte" "$tmp/input.npy" "$ref" 1e-6
selective_refuses_other_operators() {
  local shared_model="$ROOT/../shared/models/small_cnn/model.pt2" out
  "$E" export "$shared_model" -o "$tmp/small_cnn.pte" >/dev/null || return 1
  if out=$("$tmp/app_selective" "$tmp/small_cnn.pte" "$tmp/input.npy" "$ref" 2>&1); then
    echo "a program outside the selection ran: $out"; return 1
  fi
  echo "$out"
  [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"not in this build: aten::relu.default"* ]] &&
    [[ "$out" == *"--ops-from"* ]] || return 1
  strip -o "$tmp/app_full.stripped" "$tmp/app_pc_static" && strip -o "$tmp/app_selective.stripped" "$tmp/app_selective" || return 1
  local full selective
  full=$(stat -c %s "$tmp/app_full.stripped")
  selective=$(stat -c %s "$tmp/app_selective.stripped")
  echo "ember static app, stripped: $full bytes with every kernel, $selective with MobileNetV2's operators"
}
check selective_refuses_other_operators selective_refuses_other_operators

echo "sdk test: $(( $(date +%s) - start ))s"
summary
