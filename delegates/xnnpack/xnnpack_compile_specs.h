// Compile specs of XNNPACK delegates: written by the exporter's partitioner, read by the
// runtime backend at init. One definition for both sides.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
namespace xnnpack {

// "num_threads": little-endian uint32 or uint64 fallback thread count (see xnnpack_backend.h).
constexpr const char* kNumThreadsSpec = "num_threads";

// "fp16": one byte, 1: the delegate's runtimes are created for fp16 inference (XNNPACK's
// FORCE_FP16 flag: fp16 weights and activations; native fp16 math on Arm FP16 and x86
// AVX512-FP16 CPUs, fp16 storage around fp32 math (F16C) on other AVX2 CPUs). Where XNNPACK
// cannot (no fp16 support in the CPU, or an op without an fp16 kernel), fp32 with a warning.
// Absent or 0: fp32. Written by `ember export --xnnpack-fp16`.
constexpr const char* kFp16Spec = "fp16";

// "conv_block_bytes": little-endian uint64. A convolution whose filters, shared among the
// delegate's threads, give each thread more than this many bytes runs as output-channel
// blocks of at most this many filter bytes, so each block stays in the core's L2 cache while
// XNNPACK's row tiles reread it (see delegates/xnnpack/runtime/blocked_convolution.cc).
// 0: never split. Absent: kDefaultConvBlockBytes. Written by
// `ember export --xnnpack-conv-block-bytes N`.
constexpr const char* kConvBlockBytesSpec = "conv_block_bytes";
constexpr uint64_t kDefaultConvBlockBytes = uint64_t{1} << 20;  // 1 MiB: within the L2 of current big cores

// The options above as one typed struct: the partitioner encodes it into a delegate's compile
// specs, the backend decodes it at init. One encode / decode pair, so both sides agree on keys,
// sizes and ranges.
struct CompileOptions {
  uint32_t num_threads = 0;  // 0: not written (the method's thread pool decides)
  bool fp16 = false;         // false: not written
  // Written only when set: programs without it get the runtime's default.
  bool has_conv_block_bytes = false;
  uint64_t conv_block_bytes = kDefaultConvBlockBytes;
};
constexpr uint32_t kMaxNumThreads = 1024;

// One encoded spec: `key` (one of the constants above) and its little-endian bytes.
struct EncodedSpec {
  const char* key;
  uint8_t bytes[8];
  uint8_t size;
};
constexpr size_t kMaxCompileSpecs = 3;
// Writes the specs `options` needs into out[0..n) and returns n (<= kMaxCompileSpecs).
size_t encode_compile_options(const CompileOptions& options, EncodedSpec out[kMaxCompileSpecs]);
// Reads one spec into `options` when `key` is one of the constants above (other keys are left
// to their readers and return true). False, with `*why` a static description of what the value
// must be, when the value is malformed or out of range.
bool decode_compile_option(const char* key, const uint8_t* value, size_t size, CompileOptions* options,
                           const char** why);

}  // namespace xnnpack
}  // namespace ember
