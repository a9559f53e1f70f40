#!/usr/bin/env bash
# Ember's Vulkan decoding against llama.cpp's CUDA build, one device, one run (issue 32's
# acceptance): builds llama.cpp's llama-bench and llama-quantize with CUDA from a source tree,
# writes the seeded preset as GGUF with the weights Ember's programs hold
# (tools/llm/llama_cpp_peer.py), quantizes it to Q4_0 and Q8_0, exports Ember's int4 (g32) and
# int8 Vulkan programs of the same model, then ROUNDS interleaved rounds of: Ember generate (64
# prompt tokens, 128 new) and llama-bench -p 64 -n 128 -ngl 99 -r 3 for each.
#
#   tools/bench/vulkan_llm_vs_llama_cpp.sh BUNDLE LLAMA_CPP_SRC OUT_DIR [PRESET]   (default 1b)
# BUNDLE: tools/bench/make_device_bundle.sh's directory (Vulkan loader set up as in
# docs/benchmarks-gpu.md); LLAMA_CPP_SRC: llama.cpp's tree (llama-cpp-python's sdist vendors
# one; docs/benchmarks-gpu.md says how it was pruned to travel). Needs nvcc, cmake, python3 with
# torch; CUDA_ARCH (default 90) picks the GPU architecture.
set -uo pipefail
bundle=$(readlink -f "$1"); src=$(readlink -f "$2"); out=$3; preset=${4:-1b}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
build="$out/llama.cpp-build"
( cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF > "$out/cmake.log" 2>&1 &&
  cmake --build "$build" --target llama-bench llama-quantize -j "$(nproc)" >> "$out/cmake.log" 2>&1 ) &
builder=$!
export LD_LIBRARY_PATH="$bundle/lib:${LD_LIBRARY_PATH:-}"
source "$repo/tools/bench/nvidia_vulkan_env.sh" > /dev/null
ember="$bundle/bin/ember"
# Meanwhile (CPU only): Ember's programs and the GGUF file.
python3 "$repo/tools/models/make_llama_bench.py" --preset "$preset" --out-dir "$out" > /dev/null 2>&1 || { echo "make $preset failed"; exit 1; }
meta=$(cat "$out/llama_$preset.metadata")
"$ember" export "$out/llama_$preset.pt2" -o "$out/int4.pte" --backend vulkan $meta --quantize int4-weight --group-size 32 > "$out/export.log" 2>&1 &&
  "$ember" export "$out/llama_$preset.pt2" -o "$out/int8.pte" --backend vulkan $meta --quantize int8-weight >> "$out/export.log" 2>&1 ||
  { echo "export failed: $(tail -3 "$out/export.log")"; exit 1; }
python3 "$repo/tools/llm/llama_cpp_peer.py" --preset "$preset" --out-dir "$out" --gguf-py "$src/gguf-py" > "$out/gguf.log" 2>&1 ||
  { echo "gguf failed: $(tail -3 "$out/gguf.log")"; exit 1; }
wait "$builder" || { echo "llama.cpp build failed: $(tail -5 "$out/cmake.log")"; exit 1; }
for t in Q4_0 Q8_0; do
  "$build/bin/llama-quantize" "$out/llama_$preset.f32.gguf" "$out/llama_$preset.$t.gguf" "$t" > "$out/quantize_$t.log" 2>&1 ||
    { echo "quantize $t failed"; exit 1; }
done
rm -f "$out/llama_$preset.f32.gguf"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
prompt=$(python3 -c "print(','.join(str((i * 7919) % 31000 + 10) for i in range(64)))")
for q in int4 int8; do  # pipelines into the cache file
  "$ember" generate "$out/$q.pte" --prompt-tokens 1,2 --max-new-tokens 2 --eos-id none --quiet > /dev/null 2>&1
done
for r in $(seq 1 "${ROUNDS:-3}"); do
  for q in int4 int8; do
    "$ember" generate "$out/$q.pte" --prompt-tokens "$prompt" --max-new-tokens 128 --eos-id none --quiet --json "$out/g.json" > /dev/null 2>&1
    python3 -c "import json; j=json.load(open('$out/g.json')); print('ember $q round $r: decode tok/s', round(j['decode_tokens_per_s'], 1), 'prefill tok/s', round(j['prefill_tokens_per_s'], 1))"
  done
  for t in Q4_0 Q8_0; do
    echo "llama.cpp $t round $r:"
    "$build/bin/llama-bench" -m "$out/llama_$preset.$t.gguf" -p 64 -n 128 -ngl 99 -r 3 -o md 2> /dev/null | grep -v "^$"
  done
done
