#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (libFuzzer + ASan + UBSan), outside Bazel (whose
# auto-configured toolchain is gcc, which has no libFuzzer):
#   pte_fuzzer  .pte bytes -> Program::load(Full) -> load_method -> zero inputs -> execute
#               (portable kernels, XNNPACK delegates run, QNN blobs verified)
#   ptd_fuzzer  .ptd bytes -> DataFile::load(Structure, Full) -> index invariants -> programs
#               whose external segments refer to its entries: Program::load -> execute
#   pt2_fuzzer  .pt2 bytes -> import -> full export -> Program::load(Full) of the result
#   tokenizer_fuzzer  tokenizer.json bytes -> load_bpe_tokenizer -> encode/decode fixed texts
#   weights_index_fuzzer  XNNPACK packed-weights cache index / block header bytes -> parse, re-encode
#   vk_pipeline_cache_fuzzer  Vulkan pipeline cache file bytes -> parse, re-encode
# Objects are cached in $EMBER_FUZZ_OUT (default out/fuzz) and rebuilt when a source or one
# of its headers changes. Needs clang-14 and libclang-rt-14-dev (setup.sh installs them).
#
# Usage: tools/fuzz/build_fuzzers.sh   (binaries: out/fuzz/pte_fuzzer, ptd_fuzzer, pt2_fuzzer,
#   tokenizer_fuzzer, weights_index_fuzzer, vk_pipeline_cache_fuzzer)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUT=${EMBER_FUZZ_OUT:-$ROOT/out/fuzz}
CXX=${CXX_FUZZ:-}
if [ -z "$CXX" ]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null 2>&1; then CXX=$c; break; fi
  done
fi
if [ -z "$CXX" ]; then
  echo "build_fuzzers: clang++ not found (install clang-14 libclang-rt-14-dev; see setup.sh)" >&2
  exit 1
fi
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT/gen/schema" "$OUT/obj"

# The generated FlatBuffer accessors, as the //schema genrule makes them.
if [ ! -f "$OUT/gen/schema/program_generated.h" ] || [ schema/program.fbs -nt "$OUT/gen/schema/program_generated.h" ]; then
  flatc --cpp --scoped-enums -o "$OUT/gen/schema" schema/program.fbs
fi
if [ ! -f "$OUT/gen/schema/data_file_generated.h" ] || [ schema/data_file.fbs -nt "$OUT/gen/schema/data_file_generated.h" ] ||
   [ schema/program.fbs -nt "$OUT/gen/schema/data_file_generated.h" ]; then
  flatc --cpp --scoped-enums -I schema -o "$OUT/gen/schema" schema/data_file.fbs
fi

# The exporter's schema table, as the //exporter:aten_schemas_cc genrule makes it.
mkdir -p "$OUT/gen/delegates/qnn"
if [ ! -f "$OUT/gen/delegates/qnn/qnn_blob_generated.h" ] || [ delegates/qnn/qnn_blob.fbs -nt "$OUT/gen/delegates/qnn/qnn_blob_generated.h" ]; then
  flatc --cpp --scoped-enums -o "$OUT/gen/delegates/qnn" delegates/qnn/qnn_blob.fbs
fi

mkdir -p "$OUT/gen/delegates/xnnpack"
if [ ! -f "$OUT/gen/delegates/xnnpack/xnnpack_graph_generated.h" ] ||
   [ delegates/xnnpack/xnnpack_graph.fbs -nt "$OUT/gen/delegates/xnnpack/xnnpack_graph_generated.h" ]; then
  flatc --cpp --scoped-enums -o "$OUT/gen/delegates/xnnpack" delegates/xnnpack/xnnpack_graph.fbs
fi

mkdir -p "$OUT/gen/exporter/ops"
if [ ! -f "$OUT/gen/exporter/ops/aten_schemas.cc" ] || [ exporter/ops/aten_schemas.txt -nt "$OUT/gen/exporter/ops/aten_schemas.cc" ] ||
   [ exporter/ops/aten_schemas_to_cc.awk -nt "$OUT/gen/exporter/ops/aten_schemas.cc" ]; then
  awk -f exporter/ops/aten_schemas_to_cc.awk exporter/ops/aten_schemas.txt >"$OUT/gen/exporter/ops/aten_schemas.cc"
fi

# Campaign builds may trade ASan for speed (EMBER_FUZZ_SAN="-fsanitize=undefined ...") or
# optimise harder (EMBER_FUZZ_OPT=-O2); give them their own EMBER_FUZZ_OUT (objects are cached
# by path, not by flags).
# XNNPACK (setup.sh builds it from Debian 13's sources): the .pte fuzzer runs XNNPACK delegates.
XNN=$ROOT/third_party/xnnpack/local
if [ ! -f "$XNN/lib/libXNNPACK.a" ]; then
  echo "build_fuzzers: no XNNPACK build at $XNN (run ./setup.sh)" >&2
  exit 1
fi
SAN=${EMBER_FUZZ_SAN:-"-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined"}
OPT=${EMBER_FUZZ_OPT:--O1}
BASE="-std=c++17 -g $OPT -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $SAN -I$ROOT -I$OUT/gen -I$XNN/include -Wno-unused-command-line-argument"
RUNTIME_FLAGS="$BASE -fno-exceptions -fno-rtti"
TOOL_FLAGS="$BASE"
# The portable kernels keep edge coverage but not comparison tracing: their inner loops'
# compares were 68% of the .pte fuzzer's time (perf), and the values a kernel's checks compare
# (shapes, dims) come from the program, whose loader is traced.
KERNEL_FLAGS="$RUNTIME_FLAGS -fno-sanitize-coverage=trace-cmp"

# The absl link line, taken from third_party/system/BUILD so it stays in sync.
ABSL_LIBS=$(awk '/name = "absl"/{f=1} f{print} f&&/^\)/{exit}' third_party/system/BUILD |
            grep -o '"-l[^"]*"' | tr -d '"' | tr '\n' ' ')

# The core (runtime/), the .npy codec the exporter shares (extension/npy) and the bundled-case
# validation the pte harness runs (extension/bundled). The other layers of extension/ are above
# the core: module (the STL API), c (the C API over Module, built with exceptions to turn them
# into status codes) and llm (tokenizers and the LLM runner, built with exceptions for
# nlohmann/json: only its tokenizer.json path is fuzzed, below).
runtime_srcs=$( (find runtime -name '*.cc'; echo extension/npy/npy_format.cc; echo extension/bundled/bundled_cases.cc) | sort)
tokenizer_srcs="extension/llm/bpe_tokenizer.cc extension/llm/bpe_tokenizer_load.cc extension/llm/regex.cc extension/llm/utf8.cc"
kernel_srcs=$(find kernels/portable -name '*.cc' -not -path '*/threadpool/*' | sort)
exporter_srcs=$( (find exporter -name '*.cc'; echo "$OUT/gen/exporter/ops/aten_schemas.cc") | sort)

# compile FLAGS SRC: prints the object path; compiles only when stale.
stale() {  # obj dep-file src
  local obj=$1 dep=$2 src=$3
  [ -f "$obj" ] && [ -f "$dep" ] || return 0
  [ "$src" -nt "$obj" ] && return 0
  local f
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
    [ -e "$f" ] || return 0
    [ "$f" -nt "$obj" ] && return 0
  done
  return 1
}
jobs_file=$(mktemp)
trap 'rm -f "$jobs_file"' EXIT
objs_for() {  # kind srcs...
  local kind=$1; shift
  local flags
  case $kind in
    tool) flags=$TOOL_FLAGS ;;
    kernel) flags=$KERNEL_FLAGS ;;
    *) flags=$RUNTIME_FLAGS ;;
  esac
  local src obj rel cmd sum
  for src in "$@"; do
    local rel=${src#"$ROOT"/}  # generated sources live under $OUT
    obj="$OUT/obj/${rel%.cc}.o"
    cmd="$CXX $flags -MMD -MF ${obj%.o}.d -c $src -o $obj"
    # The command's checksum sits beside the object: changed flags rebuild it too.
    sum=$(printf '%s' "$cmd" | cksum | cut -d' ' -f1)
    if stale "$obj" "${obj%.o}.d" "$src" || [ "$(cat "${obj%.o}.cmd" 2>/dev/null)" != "$sum" ]; then
      mkdir -p "$(dirname "$obj")"
      echo "$cmd && echo $sum >${obj%.o}.cmd" >>"$jobs_file"
    fi
    echo "$obj"
  done
}

# shellcheck disable=SC2086
RUNTIME_OBJS=$(objs_for runtime $runtime_srcs)
# shellcheck disable=SC2086
KERNEL_OBJS=$(objs_for kernel $kernel_srcs)
# shellcheck disable=SC2086
EXPORTER_OBJS=$(objs_for tool $exporter_srcs)
PTE_OBJ=$(objs_for runtime test/fuzz/pte_fuzzer.cc)
PTD_OBJ=$(objs_for runtime test/fuzz/ptd_fuzzer.cc)
PT2_OBJ=$(objs_for tool test/fuzz/pt2_fuzzer.cc)
# shellcheck disable=SC2086
TOKENIZER_OBJS=$(objs_for tool $tokenizer_srcs)
TOK_OBJ=$(objs_for tool test/fuzz/tokenizer_fuzzer.cc)
WINDEX_OBJS=$(objs_for runtime delegates/xnnpack/runtime/weights_index.cc test/fuzz/weights_index_fuzzer.cc)
VKCACHE_OBJS=$(objs_for runtime delegates/vulkan/runtime/pipeline_cache_file.cc test/fuzz/vk_pipeline_cache_fuzzer.cc)
# The QNN runtime backend: the .pte fuzzer verifies QNN blobs (the fuzzer points the library
# path nowhere, so Qualcomm's code is never called; see pte_fuzzer.cc).
QNN_OBJS=$(objs_for runtime delegates/qnn/runtime/qnn_backend.cc delegates/qnn/qnn_library.cc)
# The XNNPACK backend: blobs are verified and compiled into XNNPACK runtimes, which run
# (XNNPACK itself is Debian's code built by setup.sh, not instrumented; its inputs are ours).
# shellcheck disable=SC2086
XNN_OBJS=$(objs_for runtime delegates/xnnpack/xnnpack_compile_specs.cc delegates/xnnpack/xnnpack_shapes.cc \
  $(find delegates/xnnpack/runtime -name '*.cc' | sort))
XNN_LIBS="$XNN/lib/libXNNPACK.a $XNN/lib/libmicrokernels-prod.a $XNN/lib/libpthreadpool.a \
  $XNN/usr/lib/x86_64-linux-gnu/libcpuinfo.so.0 -Wl,-rpath,$XNN/usr/lib/x86_64-linux-gnu"

# The hostile-program generator (//test/hardening:hostile_programs_test) on the same ASan +
# UBSan objects, one self-contained binary for campaigns elsewhere (tools/fuzz/campaign.sh).
HOSTILE_OBJS=$(objs_for tool test/hardening/hostile_programs_test.cc test/support/program_builder.cc)

n=$(wc -l <"$jobs_file")
if [ "$n" -gt 0 ]; then
  echo "build_fuzzers: compiling $n files with $CXX ($JOBS jobs)"
  if ! xargs -P "$JOBS" -I{} sh -c '{} || exit 255' <"$jobs_file"; then
    echo "build_fuzzers: compilation failed" >&2
    exit 1
  fi
fi

LINK="$CXX -fsanitize=fuzzer $SAN -g"
# shellcheck disable=SC2086
$LINK $PTE_OBJ $RUNTIME_OBJS $KERNEL_OBJS $QNN_OBJS $XNN_OBJS $XNN_LIBS -lpthread -ldl -o "$OUT/pte_fuzzer"
# runtime/program/data_file.cc and external_data.cc are in the runtime objects (all of runtime/).
# shellcheck disable=SC2086
$LINK $PTD_OBJ $RUNTIME_OBJS $KERNEL_OBJS -lpthread -o "$OUT/ptd_fuzzer"
# shellcheck disable=SC2086
$LINK $PT2_OBJ $EXPORTER_OBJS $RUNTIME_OBJS $KERNEL_OBJS -lzip -lz -lflatbuffers $ABSL_LIBS -lpthread \
  -o "$OUT/pt2_fuzzer"
# PCRE2 is Debian's (not instrumented); the tokenizer's own code is.
# shellcheck disable=SC2086
$LINK $TOK_OBJ $TOKENIZER_OBJS $RUNTIME_OBJS -lpcre2-8 -lpthread -o "$OUT/tokenizer_fuzzer"
# shellcheck disable=SC2086
$LINK $WINDEX_OBJS -o "$OUT/weights_index_fuzzer"
# shellcheck disable=SC2086
$LINK $VKCACHE_OBJS -o "$OUT/vk_pipeline_cache_fuzzer"
# shellcheck disable=SC2086
$CXX -fsanitize=fuzzer-no-link $SAN -g $HOSTILE_OBJS $RUNTIME_OBJS $KERNEL_OBJS -lgtest_main -lgtest -lpthread \
  -o "$OUT/hostile_programs"
echo "build_fuzzers: built $OUT/hostile_programs $OUT/pte_fuzzer $OUT/ptd_fuzzer $OUT/pt2_fuzzer $OUT/tokenizer_fuzzer $OUT/weights_index_fuzzer" \
  "$OUT/vk_pipeline_cache_fuzzer"
