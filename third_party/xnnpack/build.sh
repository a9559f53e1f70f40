#!/usr/bin/env bash
# Builds XNNPACK 2024 (Debian 13's source package) for the host or for Arm64 Linux:
#
#   third_party/xnnpack/build.sh          host   (setup.sh; the @xnnpack2024 repository)
#   third_party/xnnpack/build.sh arm64    Arm64, with Debian's aarch64-linux-gnu gcc 12
#                                         (tools/cross/build_arm64.sh; @xnnpack2024_arm64)
#
# The prefix is built once per version in a per-user cache, shared by every clone
# (${EMBER_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/ember}/xnnpack-<target>-<key hash>), and
# third_party/xnnpack/local (host) or local-arm64 (gitignored) is a symbolic link to it.
# Idempotent and silent when the link points at a finished build of the versions below; a
# version or recipe change builds a new prefix.
#
# Debian 13 (trixie) is reached through a PRIVATE apt sources list and private state/cache
# directories: the machine's own apt configuration and installed packages stay untouched,
# nothing from trixie is installed system-wide.
#   - xnnpack orig tarball (the .dsc / Debian patch tarball are not downloadable: not used)
#   - pthreadpool orig tarball -> built here as a static archive (libpthreadpool.a)
#   - libcpuinfo0 / libcpuinfo-dev binary .debs (no downloadable source) -> extracted with
#     dpkg-deb -x; Bazel links libcpuinfo.so.0 from the prefix with a run path.
#   - libpthreadpool-dev .deb: its header is the one of the pthreadpool built here.
set -euo pipefail

XNNPACK_VERSION="0.0~git20241108.4ea82e5"
XNNPACK_DEB_VERSION="${XNNPACK_VERSION}-2"
PTHREADPOOL_VERSION="0.0~git20240616.560c60d"
PTHREADPOOL_DEB_VERSION="${PTHREADPOOL_VERSION}-1"
CPUINFO_DEB_VERSION="0.0~git20250327.39ea79a-1"
# Bump when the build recipe below changes: part of the cache key.
RECIPE=11

TARGET="${1:-host}"
case "${TARGET}" in
  host)
    CC=gcc CXX=g++ DEB_ARCH="$(dpkg --print-architecture)" MULTIARCH="$(gcc -print-multiarch)"
    LINK_NAME=local REPO_NAME=xnnpack2024 SYSTEM_HEADERS=(-I/usr/include) CMAKE_CROSS=() ;;
  arm64)
    CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ DEB_ARCH=arm64 MULTIARCH=aarch64-linux-gnu
    LINK_NAME=local-arm64 REPO_NAME=xnnpack2024_arm64
    # Arch-independent headers (fxdiv, fp16) of the host's -dev packages, after the cross
    # compiler's own system headers.
    SYSTEM_HEADERS=(-idirafter /usr/include)
    CMAKE_CROSS=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64
      -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++
      -DCMAKE_ASM_COMPILER=aarch64-linux-gnu-gcc
      # KleidiAI (Arm int4/int8 GEMM kernels) is a separate project Debian 12 does not have.
      -DXNNPACK_ENABLE_KLEIDIAI=OFF
      "-DCMAKE_C_FLAGS=-idirafter /usr/include" "-DCMAKE_CXX_FLAGS=-idirafter /usr/include") ;;
  *) echo "usage: $0 [host|arm64]" >&2; exit 2 ;;
esac
command -v "${CC}" >/dev/null || { echo "setup: ${CC} not found (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }
KEY="target=${TARGET} xnnpack=${XNNPACK_VERSION} pthreadpool=${PTHREADPOOL_VERSION} cpuinfo=${CPUINFO_DEB_VERSION} recipe=${RECIPE}"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${EMBER_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/ember}"
PREFIX="${CACHE}/xnnpack-${TARGET}-$(echo "${KEY}" | sha256sum | cut -c1-16)"
STAMP="${PREFIX}/VERSION"
LINK="${HERE}/${LINK_NAME}"

if [ -f "${STAMP}" ] && [ "$(cat "${STAMP}")" = "${KEY}" ]; then
  if [ "$(readlink "${LINK}" 2>/dev/null)" != "${PREFIX}" ]; then
    rm -rf "${LINK}"
    ln -s "${PREFIX}" "${LINK}"
  fi
  exit 0
fi

START=$(date +%s)
LOG="${HERE}/build-${TARGET}.log"
echo "setup: building XNNPACK ${XNNPACK_VERSION} for ${TARGET} into ${PREFIX} (log: ${LOG})"
rm -rf "${PREFIX}"
WORK="${PREFIX}/work"
mkdir -p "${WORK}/apt/lists/partial" "${WORK}/apt/cache/archives/partial" "${WORK}/dl"
: > "${LOG}"

fail() {
  echo "setup: XNNPACK build failed at: $1. See ${LOG}; fix and rerun ./setup.sh" >&2
  tail -20 "${LOG}" >&2
  exit 1
}

cat > "${WORK}/apt/sources.list" <<SRC
deb [arch=${DEB_ARCH}] http://deb.debian.org/debian trixie main
deb-src http://deb.debian.org/debian trixie main
SRC
APT=(apt-get -q
  -o "Dir::Etc::sourcelist=${WORK}/apt/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=${WORK}/apt/lists" -o "Dir::Cache=${WORK}/apt/cache"
  -o "Debug::NoDropPrivs=true" -o "APT::Sandbox::User=root"
  -o "APT::Architecture=${DEB_ARCH}" -o "APT::Architectures::=${DEB_ARCH}")

"${APT[@]}" update >>"${LOG}" 2>&1 || fail "apt-get update (private trixie sources list)"
(
  cd "${WORK}/dl"
  "${APT[@]}" download "libcpuinfo0=${CPUINFO_DEB_VERSION}" "libcpuinfo-dev=${CPUINFO_DEB_VERSION}" \
    "libpthreadpool0=${PTHREADPOOL_DEB_VERSION}" "libpthreadpool-dev=${PTHREADPOOL_DEB_VERSION}"
  # Only the orig tarballs are downloadable; apt-get source fails on the rest (404), so
  # check for the tarballs instead of apt's exit status.
  "${APT[@]}" source --download-only "xnnpack=${XNNPACK_DEB_VERSION}" || true
  "${APT[@]}" source --download-only "pthreadpool=${PTHREADPOOL_DEB_VERSION}" || true
) >>"${LOG}" 2>&1
XNN_TAR="${WORK}/dl/xnnpack_${XNNPACK_VERSION}.orig.tar.xz"
PTP_TAR="${WORK}/dl/pthreadpool_${PTHREADPOOL_VERSION}.orig.tar.xz"
[ -f "${XNN_TAR}" ] || fail "download of ${XNN_TAR##*/}"
[ -f "${PTP_TAR}" ] || fail "download of ${PTP_TAR##*/}"
for deb in "${WORK}"/dl/*.deb; do
  dpkg-deb -x "${deb}" "${PREFIX}" >>"${LOG}" 2>&1 || fail "dpkg-deb -x ${deb##*/}"
done
LIBDIR="${PREFIX}/usr/lib/${MULTIARCH}"
[ -f "${LIBDIR}/libcpuinfo.so.0" ] || fail "libcpuinfo.so.0 missing from the extracted .deb"

# pthreadpool: a static archive from its orig tarball (same sources as the .deb).
mkdir -p "${WORK}/src/pthreadpool" "${WORK}/obj/pthreadpool"
tar -xf "${PTP_TAR}" -C "${WORK}/src/pthreadpool" --strip-components=1 || fail "unpacking pthreadpool"
for p in "${HERE}"/patches/pthreadpool/*.patch; do
  patch -d "${WORK}/src/pthreadpool" -p1 --forward --quiet < "${p}" >>"${LOG}" 2>&1 || fail "applying pthreadpool/${p##*/}"
done
for s in legacy-api portable-api memory pthreads fastpath; do
  "${CC}" -O2 -fPIC -std=c11 -pthread -D_GNU_SOURCE=1 -DPTHREADPOOL_USE_FASTPATH=1 \
    -I"${WORK}/src/pthreadpool/include" -I"${WORK}/src/pthreadpool/src" "${SYSTEM_HEADERS[@]}" \
    -c "${WORK}/src/pthreadpool/src/${s}.c" -o "${WORK}/obj/pthreadpool/${s}.o" >>"${LOG}" 2>&1 \
    || fail "compiling pthreadpool ${s}.c"
done
mkdir -p "${PREFIX}/lib"
"${CC%gcc}ar" rcs "${PREFIX}/lib/libpthreadpool.a" "${WORK}"/obj/pthreadpool/*.o

# XNNPACK: static library + production microkernels, no tests or benchmarks.
mkdir -p "${WORK}/src/xnnpack" "${WORK}/build/xnnpack"
tar -xf "${XNN_TAR}" -C "${WORK}/src/xnnpack" || fail "unpacking xnnpack"
# Dynamic quantization parameters (qd8: one zero point and scale per row) are padded past a
# tensor's last row with XNN_EXTRA_QUANTIZATION_PARAMS (10) copies of that row's, because
# XNNPACK's qd8 GEMM microkernels read the parameters of all MR rows of a tile, rows past the
# batch included (they alias the last row, and the alias stored last wins). A tile starting at
# the last row reads MR - 1 of them, so a kernel with MR > 11 reads past the padding: on Zen 5
# and Sapphire Rapids XNNPACK 2024 picks the 14-row qd8-f32-qb4w AVX512-VNNI+GFNI kernel, and
# int4 linear layers gave wrong rows for M % 14 in {1, 2, 3} (issue 26). Pad for the largest MR
# of any GEMM configuration in these sources instead, so a newer snapshot stays covered.
# //test/delegates/xnnpack:xnnpack_quantized_gemm_sweep_test checks the selected MR against it.
XNN_SRC="${WORK}/src/xnnpack"
# Ember's patches (patches/README.md says what each does and why).
for p in "${HERE}"/patches/*.patch; do
  patch -d "${XNN_SRC}" -p1 --forward --quiet < "${p}" >>"${LOG}" 2>&1 || fail "applying ${p##*/}"
done
MAX_MR=$(grep -ohE '_config\.mr = [0-9]+' "${XNN_SRC}/src/configs/gemm-config.c" | grep -oE '[0-9]+$' | sort -n | tail -1)
[ -n "${MAX_MR}" ] || fail "reading the largest GEMM MR from src/configs/gemm-config.c"
sed -i -E "s/^#define XNN_EXTRA_QUANTIZATION_PARAMS [0-9]+$/#define XNN_EXTRA_QUANTIZATION_PARAMS ${MAX_MR}/" \
  "${XNN_SRC}/include/xnnpack.h"
grep -q "^#define XNN_EXTRA_QUANTIZATION_PARAMS ${MAX_MR}$" "${XNN_SRC}/include/xnnpack.h" \
  || fail "raising XNN_EXTRA_QUANTIZATION_PARAMS to ${MAX_MR} in include/xnnpack.h"
# The SSE2 / SSE4.1 / AVX qd8-f32-qb4w kernels (x86 without AVX2) load each 4-column tile's
# row sums with an aligned 16-byte load, but a tile is 4 * (K / 2 + 8 + 2 * blocks) bytes, a
# multiple of 16 only for an even number of blocks: an int4 layer with an odd number of groups
# (K = 96, group 32) crashed there (general protection fault; found by forcing each kernel
# family in the sweep test above). Unaligned loads cost nothing on these CPUs for this one load.
QB4W_LD=("${XNN_SRC}"/src/qd8-f32-qb4w-gemm/gen/qd8-f32-qb4w-gemm-*-minmax-*-ld*.c)
sed -i 's/_mm_load_ps((const float\*) w)/_mm_loadu_ps((const float*) w)/' "${QB4W_LD[@]}"
if grep -l "_mm_load_ps((const float\*) w)" "${QB4W_LD[@]}" >/dev/null; then
  fail "making the qd8-f32-qb4w SSE / AVX kernels' row-sum loads unaligned"
fi
# The AVX512-FP16 GEMM / IGEMM kernels of 64 columns (built since patches/0003) store their
# second 32 columns at `(uint16_t*) c + 1`, one element past the first store instead of 32: every
# fp16 layer with 64 or more output channels came out wrong on Sapphire Rapids (measured on the
# device machine: relative error 1.2 on a 3x3 convolution of 64 channels, correct at 32). Store
# them at c + 32.
F16_AVX512=("${XNN_SRC}"/src/f16-gemm/gen/*-avx512fp16-*.c "${XNN_SRC}"/src/f16-igemm/gen/*-avx512fp16-*.c)
sed -i -E 's/_mm512_storeu_ph\(\(uint16_t\*\) (c[0-9]+) \+ 1, (vacc[0-9]+x1)\)/_mm512_storeu_ph((uint16_t*) \1 + 32, \2)/' "${F16_AVX512[@]}"
if grep -lE '_mm512_storeu_ph\(\(uint16_t\*\) c[0-9]+ \+ 1,' "${F16_AVX512[@]}" >/dev/null; then
  fail "moving the AVX512-FP16 GEMM kernels' second 32-column store to c + 32"
fi
cmake -G Ninja -S "${WORK}/src/xnnpack" -B "${WORK}/build/xnnpack" "${CMAKE_CROSS[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DXNNPACK_USE_SYSTEM_LIBS=ON -DXNNPACK_LIBRARY_TYPE=static \
  -DXNNPACK_BUILD_TESTS=OFF -DXNNPACK_BUILD_BENCHMARKS=OFF -DXNNPACK_BUILD_ALL_MICROKERNELS=OFF \
  -DCPUINFO_SOURCE_DIR="${PREFIX}/usr" -DPTHREADPOOL_SOURCE_DIR="${PREFIX}/usr" \
  -DFXDIV_SOURCE_DIR=/usr -DFP16_SOURCE_DIR=/usr \
  -DCMAKE_PREFIX_PATH="${PREFIX}/usr" -DCMAKE_LIBRARY_PATH="${LIBDIR}" \
  >>"${LOG}" 2>&1 || fail "cmake configure"
ninja -C "${WORK}/build/xnnpack" XNNPACK microkernels-prod >>"${LOG}" 2>&1 || fail "ninja XNNPACK microkernels-prod"
cp "${WORK}/build/xnnpack/libXNNPACK.a" "${WORK}/build/xnnpack/libmicrokernels-prod.a" "${PREFIX}/lib/"
mkdir -p "${PREFIX}/include"
cp "${WORK}/src/xnnpack/include/xnnpack.h" "${WORK}/src/xnnpack/include/experiments-config.h" \
  "${PREFIX}/include/" 2>/dev/null || cp "${WORK}/src/xnnpack/include/xnnpack.h" "${PREFIX}/include/"
cp "${WORK}/src/pthreadpool/include/pthreadpool.h" "${PREFIX}/include/"
# Internal headers for tests that report or force microkernel choices (BUILD.local.tpl).
mkdir -p "${PREFIX}/internal/xnnpack"
cp "${XNN_SRC}"/src/xnnpack/*.h "${PREFIX}/internal/xnnpack/"
cp "${PREFIX}/usr/include/cpuinfo.h" "${PREFIX}/include/"
# Only the shared cpuinfo (run path) is linked from usr/lib; the .deb's libpthreadpool.so
# is removed so nothing can pick it up instead of the static archive.
rm -f "${LIBDIR}"/libpthreadpool.so*
# The @xnnpack2024 / @xnnpack2024_arm64 Bazel repository (WORKSPACE) over this prefix.
sed -e "s|@MULTIARCH@|${MULTIARCH}|g" -e "s|@LIBDIR@|${LIBDIR}|g" "${HERE}/BUILD.local.tpl" > "${PREFIX}/BUILD.bazel"
echo "workspace(name = \"${REPO_NAME}\")" > "${PREFIX}/WORKSPACE"
rm -rf "${WORK}"
echo "${KEY}" > "${STAMP}"
rm -rf "${LINK}"
ln -s "${PREFIX}" "${LINK}"
echo "setup: XNNPACK for ${TARGET} built in $(( $(date +%s) - START )) s"
