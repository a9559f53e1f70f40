#!/usr/bin/env bash
# Installs Qualcomm's QNN HTP library (x86-64: the HTP simulator) for the QNN delegate into the
# per-user cache, from the pinned PyPI wheel onnxruntime-qnn (QNN 2.51, core API 2.40):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/ember/qnn-<version>-<sha>/onnxruntime_qnn/libQnnHtp.so
# with ~/.cache/ember/qnn pointing at it (where delegates/qnn/qnn_library.cc looks).
# Nothing system-wide, nothing committed: Qualcomm's licence (Qualcomm_LICENSE.pdf in the
# wheel) allows using the libraries to build applications, not redistributing them on their
# own. Only the wheel's HTP libraries and their bundled libc++ are kept (about 220 MB).
# Idempotent: prints nothing when the pinned version is installed. Needs PyPI (pip download);
# EMBER_SKIP_QNN=1 skips it (the QNN tests then skip, saying how to install).
set -euo pipefail

VERSION=2.7.0
WHEEL=onnxruntime_qnn-${VERSION}-cp311-cp311-manylinux_2_35_x86_64.whl
SHA256=c56c01562b8534fe8980cfea4601408d950c065f8251fb862ce82101c52c9849

[ "${EMBER_SKIP_QNN:-0}" = 1 ] && exit 0
[ "$(uname -m)" = x86_64 ] || exit 0  # the simulator is x86-64 only; phones bring their own

cache="${XDG_CACHE_HOME:-$HOME/.cache}/ember"
dest="$cache/qnn-${VERSION}-${SHA256:0:12}"
if [ -f "$dest/.complete" ]; then
  [ "$(readlink "$cache/qnn" 2>/dev/null)" = "$dest" ] || ln -sfn "$dest" "$cache/qnn"
  exit 0
fi

echo "setup: installing Qualcomm's QNN HTP library (onnxruntime-qnn==$VERSION) into $dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The wheel is fetched as a file, for any local Python: the libraries do not need Python.
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_35_x86_64 --dest "$work" "onnxruntime-qnn==$VERSION"
echo "$SHA256  $work/$WHEEL" | sha256sum -c --quiet -
mkdir -p "$work/x"
python3 - "$work/$WHEEL" "$work/x" <<'PY'
import sys, zipfile
keep = ("onnxruntime_qnn/libQnnHtp.so", "onnxruntime_qnn/libHtpPrepare.so", "onnxruntime_qnn/libQnnSystem.so",
        "onnxruntime_qnn/LICENSE", "onnxruntime_qnn/Qualcomm_LICENSE.pdf")
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name in keep or name.startswith("onnxruntime_qnn.libs/"):
            z.extract(name, sys.argv[2])
PY
rm -rf "$dest"
mkdir -p "$cache"
mv "$work/x" "$dest"
touch "$dest/.complete"
ln -sfn "$dest" "$cache/qnn"
