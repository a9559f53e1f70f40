// The rule for the bfloat16 block scales of a QBInt4 filter (positive normal numbers), shared
// by the delegate's eager check (xnnpack_quantized_nodes.cc) and the packed-weights cache's
// deferred one (weights_cache.h). XNNPACK's own copy of this check is patched out of the
// build (third_party/xnnpack/patches/README.md): Ember runs it before XNNPACK packs a filter,
// and skips it where XNNPACK reads no scales (packed weights mapped from a cache file).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
namespace xnnpack {

// Index of the first of `count` scales that is not a positive normal bfloat16, or `count`
// when every one is. One branch-free pass (an LLM has tens of millions of scales); the
// search for the index runs only when something is off.
size_t first_bad_block_scale(const uint16_t* scales, size_t count);

}  // namespace xnnpack
}  // namespace ember
