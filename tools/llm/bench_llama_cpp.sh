#!/usr/bin/env bash
# llama.cpp on the same Llama configurations and weights as tools/llm/bench_llm.sh (docs/llm.md,
# "Side by side with llama.cpp"): builds llama.cpp's llama-bench and llama-quantize from a
# source tree (CPU only, tuned for this machine), writes each preset as GGUF
# (tools/llm/llama_cpp_peer.py), quantizes it to Q8_0 and Q4_0 and times prompt processing of
# 64 tokens and generation of 32 at each thread count.
#
#   tools/llm/bench_llama_cpp.sh LLAMA_CPP_SRC OUT_DIR "PRESETS" "THREADS" [TYPES]
#   e.g. tools/llm/bench_llama_cpp.sh /path/to/llama.cpp /tmp/peer "110m 1b" "1,4,16" "Q8_0 Q4_0"
# Needs cmake, ninja, a C++ compiler and python3 with torch + numpy (llama.cpp's gguf-py comes
# from its tree). Writes OUT_DIR/llama_cpp.md (llama-bench's markdown tables).
set -uo pipefail
src=$(readlink -f "$1"); out=$2; presets=$3; threads=$4; types=${5:-"Q8_0 Q4_0"}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
build="$out/llama.cpp-build"
if [ ! -x "$build/bin/llama-bench" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF > "$out/cmake.log" 2>&1 &&
    cmake --build "$build" --target llama-bench llama-quantize -j "$(nproc)" >> "$out/cmake.log" 2>&1 ||
    { echo "llama.cpp build failed: $(tail -5 "$out/cmake.log")"; exit 1; }
fi
: > "$out/llama_cpp.md"
for p in $presets; do
  f32="$out/llama_$p.f32.gguf"
  [ -f "$f32" ] || python3 "$repo/tools/llm/llama_cpp_peer.py" --preset "$p" --out-dir "$out" --gguf-py "$src/gguf-py" ||
    { echo "gguf $p failed"; continue; }
  for t in $types; do
    q="$out/llama_$p.$t.gguf"
    [ -f "$q" ] || "$build/bin/llama-quantize" "$f32" "$q" "$t" > "$out/quantize_${p}_$t.log" 2>&1 ||
      { echo "quantize $p $t failed: $(tail -2 "$out/quantize_${p}_$t.log")"; continue; }
    echo "### llama_$p $t ($(python3 -c "import os; print(f'{os.path.getsize(\"$q\") / 2**20:.1f}')") MiB)" >> "$out/llama_cpp.md"
    "$build/bin/llama-bench" -m "$q" -p 64 -n 32 -t "$threads" -r 2 -o md >> "$out/llama_cpp.md" 2> "$out/bench_${p}_$t.log" ||
      echo "llama-bench $p $t failed: $(tail -3 "$out/bench_${p}_$t.log")" >> "$out/llama_cpp.md"
    echo >> "$out/llama_cpp.md"
  done
  rm -f "$f32"
done
cat "$out/llama_cpp.md"
