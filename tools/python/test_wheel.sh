#!/usr/bin/env bash
# End-to-end test of the Python package as a user installs it: `python3 -m pip wheel .` (the
# in-tree PEP 517 backend, tools/python/ember_wheel.py: Bazel -c opt --force_pic, the SDK's
# configuration), then fresh venvs with nothing but numpy beside them:
#   wheel_builds        the wheel is made and holds the package, the library and the command line
#   self_contained      every library libember.so and the command line load resolves inside the
#                       wheel (ember/_native) or is the C/C++ runtime every Debian has
#   import_and_run      import ember; export the checked-in GRU model (test/models) on the portable
#                       kernels and XNNPACK; outputs match eager PyTorch's (rel. L2 1e-4); with
#                       its weights in a data file (external_weights / data=), the same outputs
#   console_script      `ember --version` (the entry point) and `python -m ember` agree with
#                       ember.__version__; `ember inspect` reads the exported program
#   pip_install_dot     the documented command, `python3 -m pip install .`, in a second venv
# numpy: Debian's python3-numpy linked into each venv (no download: CI may be offline).
# Last line: "N passed, M failed" (one case per check).
#   tools/python/test_wheel.sh [--keep]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$(pwd)
PY=/usr/bin/python3
keep=0
[ "${1:-}" = "--keep" ] && keep=1
tmp=$(mktemp -d /tmp/ember_wheel_test.XXXXXX)
[ $keep -eq 1 ] || trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
mkdir -p "$tmp/log"
check() {  # check NAME COMMAND...: one case; output in $tmp/log/NAME
  local name=$1
  shift
  local start=$SECONDS
  if "$@" >"$tmp/log/$name" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $name ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    echo "FAIL $name (last lines of its output:)"
    tail -15 "$tmp/log/$name" | sed 's/^/    /'
  fi
}

# A fresh venv whose only other package is Debian's numpy (with its metadata, so pip counts
# the wheel's numpy requirement as met).
make_venv() {
  "$PY" -m venv "$1" || return 1
  local site
  site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  ln -s /usr/lib/python3/dist-packages/numpy "$site/numpy"
  ln -s /usr/lib/python3/dist-packages/numpy-*.egg-info "$site/"
}

wheel_builds() {
  "$PY" -m pip wheel --no-deps -w "$tmp/dist" "$ROOT" || return 1
  wheel=$(ls "$tmp"/dist/ember_runtime-*-py3-none-linux_*.whl) || return 1
  "$PY" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for need in ("ember/__init__.py", "ember/_native/libember.so", "ember/_native/ember"):
    assert need in names, f"{need} missing from the wheel"
assert any(n.endswith(".dist-info/entry_points.txt") for n in names)
bundled = [n for n in names if n.startswith("ember/_native/lib") and n != "ember/_native/libember.so"]
notices = [n for n in names if n.startswith("ember/_native/licenses/")]
assert bundled and notices, "bundled libraries travel with their copyright files"
print(len(bundled), "bundled libraries,", len(notices), "copyright files")
print(sys.argv[1], len(names), "files")
PY
}

install_wheel() {
  make_venv "$tmp/venv" && "$tmp/venv/bin/python" -m pip install --no-index "$tmp"/dist/ember_runtime-*.whl
}

self_contained() {
  local native
  native=$("$tmp/venv/bin/python" -c 'import ember, os; print(os.path.dirname(ember.library_path()))') || return 1
  local bad=0
  for f in "$native/libember.so" "$native/ember"; do
    # Without the build tree or any LD_LIBRARY_PATH: what the loader finds for a user.
    while read -r soname _ path _; do
      case "$soname" in linux-vdso*|/lib64/ld-linux*|ld-linux*) continue ;; esac
      case "$path" in
        "$native"/*) ;;
        */libc.so.*|*/libm.so.*|*/libdl.so.*|*/libpthread.so.*|*/librt.so.*|*/libstdc++.so.*|*/libgcc_s.so.*) ;;
        *) echo "$f: $soname resolves to $path (outside the wheel)"; bad=1 ;;
      esac
    done < <(env -u LD_LIBRARY_PATH ldd "$f" | grep '=>')
  done
  [ $bad -eq 0 ] && echo "every dependency resolves in $native or the C/C++ runtime"
}

import_and_run() {
  cd "$tmp" && "$tmp/venv/bin/python" - "$ROOT/test/models/recurrent/gru_linear_head" <<'PY'
import os, sys
import numpy as np
import ember
d = sys.argv[1]
x = np.load(os.path.join(d, "input_0.npy"))
for backend in ("portable", "xnnpack"):
    pte = f"gru_{backend}.pte"
    ember.export(os.path.join(d, "model.pt2"), pte, backend=backend)
    m = ember.Module(pte)
    outs = m.forward(x)
    for i, o in enumerate(outs):
        want = np.load(os.path.join(d, f"output_{i}.npy"))
        err = float(np.linalg.norm(o.astype(np.float64) - want) / np.linalg.norm(want))
        assert err < 1e-4, (backend, i, err)
        print(backend, i, err)
    print(m)
ember.export(os.path.join(d, "model.pt2"), "gru_external.pte", external_weights="gru.ptd")
external, inline = ember.Module("gru_external.pte", data="gru.ptd"), ember.Module("gru_portable.pte")
assert all((a == b).all() for a, b in zip(external.forward(x), inline.forward(x))), "external weights differ"
assert ember.library_path().startswith(os.path.dirname(ember.__file__)), ember.library_path()
PY
}

console_script() {
  local v
  v=$("$tmp/venv/bin/python" -c 'import ember; print(ember.__version__)') || return 1
  [ "$("$tmp/venv/bin/ember" --version)" = "ember $v" ] || return 1
  [ "$("$tmp/venv/bin/python" -m ember --version)" = "ember $v" ] || return 1
  "$tmp/venv/bin/ember" inspect "$tmp/gru_xnnpack.pte" | grep -q xnnpack
}

pip_install_dot() {
  make_venv "$tmp/venv2" && (cd "$ROOT" && "$tmp/venv2/bin/python" -m pip install .) || return 1
  cd "$tmp" && "$tmp/venv2/bin/python" -c '
import ember, numpy as np
m = ember.Module("gru_portable.pte")
print(m.forward(np.zeros(m.method_meta()["inputs"][0]["shape"], np.float32))[0].shape)'
}

check wheel_builds wheel_builds
check install_wheel install_wheel
check self_contained self_contained
check import_and_run import_and_run
check console_script console_script
check pip_install_dot pip_install_dot
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
