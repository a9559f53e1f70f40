#!/usr/bin/env bash
# Installs the Ember SDK into PREFIX: headers, static libraries, libember.so, the bundled
# XNNPACK/pthreadpool/cpuinfo libraries, EmberConfig.cmake, ember.pc / ember-static.pc and
# bin/ember. Everything installed is listed in tools/sdk/manifest.txt (read it first).
#
#   tools/sdk/install.sh /opt/ember            # then: cmake -DCMAKE_PREFIX_PATH=/opt/ember ...
#   tools/sdk/install.sh /opt/ember --ops-from a.pte b.pte --jobs=2
#
# Builds with `bazel build -c opt --force_pic`: the static libraries must be position
# independent to link into Debian's default PIE executables and into libember.so.
# --ops-from PROGRAM.pte...: a selective build. The kernel library (libember_portable_kernels.a
# and the kernels in libember.so) registers only the operators these programs use
# (`ember ops --format=list`, installed as PREFIX/share/ember/selected_ops.txt); another
# program fails to load naming the operators that are not in this build. bin/ember keeps
# every kernel (it exports programs).
# --no-python: skip the Python package (PREFIX/python/ember).
# Other arguments after PREFIX go to `bazel build` (e.g. --jobs=2).
set -euo pipefail

if [ $# -lt 1 ] || [ "${1:0:1}" = "-" ]; then
  echo "usage: $0 PREFIX [--ops-from PROGRAM.pte...] [--no-python] [bazel build options]" >&2
  exit 2
fi
mkdir -p "$1"
PREFIX=$(cd "$1" && pwd)
shift
ops_from=()
bazel_args=()
python=1
while [ $# -gt 0 ]; do
  if [ "$1" = "--no-python" ]; then
    python=0
    shift
  elif [ "$1" = "--ops-from" ]; then
    shift
    while [ $# -gt 0 ] && [ "${1:0:1}" != "-" ]; do
      [ -f "$1" ] || { echo "install.sh: --ops-from: no program $1" >&2; exit 2; }
      ops_from+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
      shift
    done
    [ ${#ops_from[@]} -gt 0 ] || { echo "install.sh: --ops-from needs at least one PROGRAM.pte" >&2; exit 2; }
  else
    bazel_args+=("$1")
    shift
  fi
done
set -- ${bazel_args[@]+"${bazel_args[@]}"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
MANIFEST=tools/sdk/manifest.txt
XNN=third_party/xnnpack/local
[ -d "$XNN/lib" ] || { echo "install.sh: $XNN is missing; run ./setup.sh first" >&2; exit 1; }

# --- read the manifest ---------------------------------------------------------------------
components=()          # in manifest order
declare -A whole=() targets=() links=()
bundles=() headers=() binaries=() python_pkg=""
while read -r kind rest; do
  case "$kind" in
    ''|'#'*) continue ;;
    component) read -r name w t <<<"$rest"; components+=("$name"); whole[$name]=$w; targets[$name]=$t ;;
    links) read -r name l <<<"$rest"; links[$name]=$l ;;
    bundle) for f in $rest; do bundles+=("$f"); done ;;
    headers) for f in $rest; do headers+=("$f"); done ;;
    binary) binaries+=("$rest") ;;
    python) python_pkg=$rest ;;
    *) echo "install.sh: $MANIFEST: unknown entry '$kind'" >&2; exit 1 ;;
  esac
done <"$MANIFEST"
VERSION=$(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"/\1/p' runtime/version.h)
[ -n "$VERSION" ] || { echo "install.sh: no EMBER_VERSION_STRING in runtime/version.h" >&2; exit 1; }

# --- a selective build: the kernel library of the programs' operators only -----------------
# @ember_selected_ops (kernels/portable/BUILD) is pointed at a directory holding their list.
if [ ${#ops_from[@]} -gt 0 ]; then
  bazel build -c opt --force_pic "$@" //tools:ember
  selection=$(mktemp -d /tmp/ember_selected_ops.XXXXXX)
  trap 'rm -rf "$selection"' EXIT
  cp kernels/portable/selection/WORKSPACE kernels/portable/selection/BUILD "$selection/"
  "$(bazel info -c opt --force_pic "$@" bazel-bin 2>/dev/null)/tools/ember" ops --format=list "${ops_from[@]}" >"$selection/ops.txt"
  echo "install.sh: selective build: $(grep -vc '^#' "$selection/ops.txt" || true) operators of ${ops_from[*]}"
  set -- "$@" --override_repository=ember_selected_ops="$selection"
  full=${targets[portable_kernels]}
  targets[portable_kernels]=${full/portable:portable_kernels/portable:selected_kernels}
  [ "${targets[portable_kernels]}" != "$full" ] || { echo "install.sh: $MANIFEST: no portable_kernels target to select from" >&2; exit 1; }
  # The selected library compiles the fused ember_llm:: kernels too (those the list names):
  # the optimized_kernels component stays, empty, so consumers linking it still link.
  [ -z "${targets[optimized_kernels]:-}" ] || targets[optimized_kernels]=""
fi

all_targets=()
for c in "${components[@]}"; do for t in ${targets[$c]}; do all_targets+=("$t"); done; done
bazel build -c opt --force_pic "$@" "${all_targets[@]}" "${binaries[@]}"
BIN=$(bazel info -c opt --force_pic "$@" bazel-bin 2>/dev/null)

mkdir -p "$PREFIX/include/ember" "$PREFIX/lib/cmake/Ember" "$PREFIX/lib/pkgconfig" "$PREFIX/bin"

# --- static libraries: one merged archive per component --------------------------------------
# The archive of //pkg:name (alwayslink libraries are .lo; --force_pic makes them .pic.*).
archive_of() {
  local pkg=${1#//} name
  name=${pkg#*:}; pkg=${pkg%%:*}
  for ext in pic.a pic.lo a lo; do
    if [ -f "$BIN/$pkg/lib$name.$ext" ]; then echo "$BIN/$pkg/lib$name.$ext"; return; fi
  done
}
for c in "${components[@]}"; do
  out="$PREFIX/lib/libember_$c.a"
  script="CREATE $out"
  for t in ${targets[$c]}; do
    a=$(archive_of "$t")
    if [ -n "$a" ]; then
      script+=$'\n'"ADDLIB $a"
    elif bazel query "labels(srcs, $t)" 2>/dev/null | grep -q '\.cc$'; then
      echo "install.sh: no archive for $t under $BIN" >&2; exit 1
    fi  # else header-only: nothing to merge
  done
  # ar's MRI scripts give ';', '*', '+', ',' and parentheses meanings of their own.
  case "$script" in *[\;\*+,\(\)]*) echo "install.sh: a path contains one of ;*+,() which ar -M cannot take: $script" >&2; exit 1 ;; esac
  rm -f "$out"
  printf '%s\nSAVE\nEND\n' "$script" | ar -M
  ranlib "$out"
done

# --- bundled third-party libraries -----------------------------------------------------------
for b in "${bundles[@]}"; do
  # shellcheck disable=SC2086
  for f in $XNN/$b; do
    [ -f "$f" ] || { echo "install.sh: bundled library $XNN/$b not found" >&2; exit 1; }
    install -m 644 "$f" "$PREFIX/lib/"
    case "$f" in *.so.*) ln -sf "$(basename "$f")" "$PREFIX/lib/$(basename "${f%%.so.*}").so" ;; esac
  done
done

# Link items for a component's dependencies, in static-link order (dependencies after users).
link_items() {  # $1 = component; prints "component:X", "bundled:X", "system:X" words
  local item
  for item in ${links[$1]:-}; do
    case "$item" in
      bundled:*|system:*) echo "$item" ;;
      *) echo "component:$item"; link_items "$item" ;;
    esac
  done
}
# All components' link items after all components, deduplicated keeping the last occurrence
# (so a library comes after everything that uses it).
static_tail=$(for c in "${components[@]}"; do link_items "$c"; done | tac | awk '!seen[$0]++' | tac)

# --- libember.so: every component (whole archive) in one shared library ----------------------
SONAME="libember.so.${VERSION%%.*}"
[ "${VERSION%%.*}" = "0" ] && SONAME="libember.so.${VERSION%.*}"  # 0.x: minor versions break ABI
wl=()
for c in "${components[@]}"; do wl+=("$PREFIX/lib/libember_$c.a"); done
deps=()
excl=()
for item in $static_tail; do
  case "$item" in
    component:*) ;;
    bundled:cpuinfo) deps+=("-lcpuinfo") ;;
    bundled:*) deps+=("$PREFIX/lib/lib${item#bundled:}.a"); excl+=("lib${item#bundled:}.a") ;;
    system:*) deps+=("-l${item#system:}") ;;
  esac
done
# --exclude-libs: XNNPACK and pthreadpool stay private to libember.so (no symbol clashes with
# an app that links its own); $ORIGIN finds the bundled libcpuinfo.so.0 next to it.
excl_list=$(IFS=:; echo "${excl[*]}")
g++ -shared -o "$PREFIX/lib/libember.so.$VERSION" -Wl,-soname,"$SONAME" -Wl,--no-undefined -Wl,--gc-sections \
  -Wl,--whole-archive "${wl[@]}" -Wl,--no-whole-archive -L"$PREFIX/lib" "${deps[@]}" \
  -Wl,--exclude-libs,"$excl_list" -Wl,-rpath,'$ORIGIN' -pthread
ln -sf "libember.so.$VERSION" "$PREFIX/lib/$SONAME"
ln -sf "$SONAME" "$PREFIX/lib/libember.so"

# --- headers: the entry headers and every in-tree header they include ------------------------
# The compiler's dependency scan finds them, so a new include cannot be forgotten.
# Headers outside the tree (system, generated under bazel-bin) are not installed; the
# standalone compile of every installed header in test_sdk.sh catches one that is needed.
hdr_list=""
for h in "${headers[@]}"; do
  deps_of=$(g++ -std=c++17 -x c++ -MM -MT x -I. -I"$BIN" "$h") ||
    { echo "install.sh: cannot scan the includes of $h (listed in $MANIFEST)" >&2; exit 1; }
  hdr_list+=$'\n'$(echo "$deps_of" | tr ' \\' '\n\n' | grep -E '\.h$' | grep -v '^/' || true)
done
hdr_list=$(echo "$hdr_list" | grep . | sort -u)
for h in $hdr_list; do
  install -D -m 644 "$h" "$PREFIX/include/ember/$h"
done

# --- binaries --------------------------------------------------------------------------------
for t in "${binaries[@]}"; do
  p=${t#//}; f="$BIN/${p%%:*}/${p#*:}"
  install -m 755 "$f" "$PREFIX/bin/"
  # Bazel's run path points into the build tree; the installed one looks in PREFIX/lib.
  patchelf --set-rpath '$ORIGIN/../lib' "$PREFIX/bin/$(basename "$f")"
done

# --- Python package: pure Python over the C API in PREFIX/lib/libember.so (ctypes) ------------
if [ -n "$python_pkg" ] && [ $python -eq 1 ]; then
  mkdir -p "$PREFIX/python/ember"
  install -m 644 "$python_pkg"/*.py "$PREFIX/python/ember/"
fi

# --- CMake package and pkg-config files, generated from the manifest -------------------------
cmake_item() {  # a link item as CMake names it
  case "$1" in
    component:*) echo "Ember::${1#component:}" ;;
    bundled:*) echo "Ember::bundled_${1#bundled:}" ;;
    system:pthread) echo "Threads::Threads" ;;
    system:dl) echo "\${CMAKE_DL_LIBS}" ;;
    system:*) echo "${1#system:}" ;;
  esac
}
{
  cat <<CMAKE
# Generated by tools/sdk/install.sh from tools/sdk/manifest.txt; do not edit.
# find_package(Ember REQUIRED) defines these imported targets (include directory, C++17 and
# every library each needs, in link order):
#   Ember::runtime           core runtime, loaders, Module API, C API, thread pool
#   Ember::portable_kernels  portable CPU kernels
#   Ember::xnnpack           XNNPACK delegate (with the bundled XNNPACK, pthreadpool, cpuinfo)
#   Ember::vulkan            Vulkan delegate (links the system's libvulkan)
#   Ember::ember             libember.so: all of the above in one shared library
# Kernels and delegates register themselves from static initialisers, which a static link
# drops unless something references them: the static targets link their archive whole
# (\$<LINK_LIBRARY:WHOLE_ARCHIVE,...>, CMake >= 3.24), so linking Ember::portable_kernels
# is all it takes to have the kernels.
if(CMAKE_VERSION VERSION_LESS 3.24)
  set(Ember_FOUND FALSE)
  set(Ember_NOT_FOUND_MESSAGE "Ember needs CMake >= 3.24 (whole-archive linking of its kernel and delegate libraries); found \${CMAKE_VERSION}")
  return()
endif()
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_ember_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(Ember_INCLUDE_DIRS "\${_ember_prefix}/include/ember")
set(Ember_LIBRARY_DIR "\${_ember_prefix}/lib")
set(Ember_VERSION_STRING "$VERSION")
if(NOT TARGET Ember::runtime)
CMAKE
  for item in $(printf '%s\n' $static_tail | grep '^bundled:' | sort -u); do
    b=${item#bundled:}
    if [ "$b" = cpuinfo ]; then
      so=$(cd "$PREFIX/lib" && ls libcpuinfo.so.* | head -1)
      printf 'add_library(Ember::bundled_cpuinfo SHARED IMPORTED)\nset_target_properties(Ember::bundled_cpuinfo PROPERTIES IMPORTED_LOCATION "${_ember_prefix}/lib/%s" IMPORTED_SONAME "%s")\n' "$so" "$so"
    else
      printf 'add_library(Ember::bundled_%s STATIC IMPORTED)\nset_target_properties(Ember::bundled_%s PROPERTIES IMPORTED_LOCATION "${_ember_prefix}/lib/lib%s.a" IMPORTED_LINK_INTERFACE_LANGUAGES C)\n' "$b" "$b" "$b"
    fi
  done
  for c in "${components[@]}"; do
    deps=""
    for item in ${links[$c]:-}; do
      case "$item" in bundled:*|system:*) ;; *) item="component:$item" ;; esac
      deps+="$(cmake_item "$item");"
    done
    lib="Ember::${c}"
    arc="Ember::libember_${c}"
    use="$arc"
    [ "${whole[$c]}" = yes ] && use="\$<LINK_LIBRARY:WHOLE_ARCHIVE,$arc>"
    cat <<CMAKE
add_library($arc STATIC IMPORTED)
set_target_properties($arc PROPERTIES IMPORTED_LOCATION "\${_ember_prefix}/lib/libember_$c.a"
  IMPORTED_LINK_INTERFACE_LANGUAGES CXX INTERFACE_LINK_LIBRARIES "${deps%;}")
add_library($lib INTERFACE IMPORTED)
set_target_properties($lib PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${_ember_prefix}/include/ember"
  INTERFACE_COMPILE_FEATURES cxx_std_17 INTERFACE_LINK_LIBRARIES "$use")
CMAKE
  done
  cat <<CMAKE
add_library(Ember::ember SHARED IMPORTED)
set_target_properties(Ember::ember PROPERTIES IMPORTED_LOCATION "\${_ember_prefix}/lib/libember.so.$VERSION"
  IMPORTED_SONAME "$SONAME" INTERFACE_INCLUDE_DIRECTORIES "\${_ember_prefix}/include/ember"
  INTERFACE_COMPILE_FEATURES cxx_std_17)
endif()
unset(_ember_prefix)
CMAKE
} >"$PREFIX/lib/cmake/Ember/EmberConfig.cmake"

# Same major.minor is compatible (0.x: the minor version is the ABI version, as the soname).
cat >"$PREFIX/lib/cmake/Ember/EmberConfigVersion.cmake" <<CMAKE
# Generated by tools/sdk/install.sh; do not edit.
set(PACKAGE_VERSION "$VERSION")
if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "${VERSION%%.*}" AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
   AND ("${VERSION%%.*}" STRGREATER "0" OR PACKAGE_FIND_VERSION_MINOR STREQUAL "$(echo "$VERSION" | cut -d. -f2)"))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")  # unset: a project without languages
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE

# pkg-config: ember.pc links libember.so; ember-static.pc the static libraries (kernels and
# delegates whole-archive, for the reason above). ${pcfiledir} keeps the prefix relocatable.
static_libs="-Wl,--whole-archive"
for c in "${components[@]}"; do [ "${whole[$c]}" = yes ] && static_libs+=" -lember_$c"; done
static_libs+=" -Wl,--no-whole-archive"
for c in "${components[@]}"; do [ "${whole[$c]}" = yes ] || static_libs+=" -lember_$c"; done
for item in $static_tail; do
  case "$item" in
    bundled:*|system:*) static_libs+=" -l${item#*:}" ;;
  esac
done
pc_head="prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include
"
printf '%sName: Ember\nDescription: Ember on-device inference runtime (libember.so: runtime, Module and C API, portable kernels, XNNPACK and Vulkan delegates)\nVersion: %s\nCflags: -I${includedir}/ember\nLibs: -L${libdir} -Wl,-rpath,${libdir} -lember\n' \
  "$pc_head" "$VERSION" >"$PREFIX/lib/pkgconfig/ember.pc"
printf '%sName: Ember (static)\nDescription: Ember on-device inference runtime, static libraries (kernels and delegates linked whole-archive)\nVersion: %s\nCflags: -I${includedir}/ember\nLibs: -L${libdir} -Wl,-rpath,${libdir} %s\n' \
  "$pc_head" "$VERSION" "$static_libs" >"$PREFIX/lib/pkgconfig/ember-static.pc"

# The selection a selective build was made from (no file: every kernel).
rm -f "$PREFIX/share/ember/selected_ops.txt"
if [ ${#ops_from[@]} -gt 0 ]; then
  install -D -m 644 "$selection/ops.txt" "$PREFIX/share/ember/selected_ops.txt"
fi

echo "install.sh: Ember $VERSION installed into $PREFIX ($(echo "$hdr_list" | wc -l) headers," \
  "${#components[@]} static libraries + libember.so)"
