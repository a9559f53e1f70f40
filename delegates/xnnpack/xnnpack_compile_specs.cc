#include "delegates/xnnpack/xnnpack_compile_specs.h"

#include <cstring>

#include "runtime/core/little_endian.h"

namespace ember {
namespace xnnpack {

size_t encode_compile_options(const CompileOptions& options, EncodedSpec out[kMaxCompileSpecs]) {
  size_t n = 0;
  if (options.num_threads > 0) {
    out[n] = EncodedSpec{kNumThreadsSpec, {}, 4};
    write_le(out[n++].bytes, options.num_threads, 4);
  }
  if (options.fp16) out[n++] = EncodedSpec{kFp16Spec, {1}, 1};
  if (options.has_conv_block_bytes) {
    out[n] = EncodedSpec{kConvBlockBytesSpec, {}, 8};
    write_le(out[n++].bytes, options.conv_block_bytes, 8);
  }
  return n;
}

bool decode_compile_option(const char* key, const uint8_t* value, size_t size, CompileOptions* options,
                           const char** why) {
  if (key == nullptr) return true;
  if (std::strcmp(key, kNumThreadsSpec) == 0) {
    // 4 bytes as written today; 8 as some earlier programs wrote it.
    const uint64_t v = (size == 4 || size == 8) ? read_le(value, int(size)) : 0;
    if ((size != 4 && size != 8) || v > kMaxNumThreads) {
      *why = "num_threads must be a 4- or 8-byte little-endian integer of at most 1024";
      return false;
    }
    options->num_threads = uint32_t(v);
  } else if (std::strcmp(key, kFp16Spec) == 0) {
    if (size != 1 || value[0] > 1) {
      *why = "fp16 must be one byte, 0 or 1";
      return false;
    }
    options->fp16 = value[0] == 1;
  } else if (std::strcmp(key, kConvBlockBytesSpec) == 0) {
    if (size != 8) {
      *why = "conv_block_bytes must be an 8-byte little-endian integer";
      return false;
    }
    options->has_conv_block_bytes = true;
    options->conv_block_bytes = read_le(value, 8);
  }
  return true;
}

}  // namespace xnnpack
}  // namespace ember
