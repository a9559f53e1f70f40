#!/usr/bin/env bash
# Installs Ember's build and test dependencies from Debian packages. Idempotent: prints
# nothing and installs nothing when everything is already present.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-rules-java
  flatbuffers-compiler libflatbuffers-dev
  libfp16-dev libfxdiv-dev libpsimd-dev ninja-build cmake xz-utils
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev pkg-config
  nlohmann-json3-dev libzip-dev libpng-dev libpcre2-dev libsentencepiece-dev
  clang-14 libclang-rt-14-dev zlib1g-dev
  python3 patch patchelf python3-numpy python3-pytest python3-pip python3-venv
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# XNNPACK 2024 (Debian 13's source package), built into third_party/xnnpack/local/.
# Cached by version: prints nothing when the build is current.
"$(dirname "${BASH_SOURCE[0]}")/third_party/xnnpack/build.sh"


# Qualcomm's QNN HTP library (the NPU delegate's simulator on x86-64) from the pinned
# onnxruntime-qnn wheel into ~/.cache/ember/qnn. Cached by version: prints nothing when current.
"$(dirname "${BASH_SOURCE[0]}")/third_party/qnn/install.sh"

# Bazel's disk cache (.bazelrc) kept under its size limit.
"$(dirname "${BASH_SOURCE[0]}")/tools/build/trim_disk_cache.sh"
