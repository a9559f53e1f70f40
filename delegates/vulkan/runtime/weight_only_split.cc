#include "delegates/vulkan/runtime/weight_only_split.h"

#include <algorithm>

#include "delegates/vulkan/runtime/shader_library.h"
#include "delegates/vulkan/runtime/tuning_env.h"

namespace ember {
namespace vulkan {

// A group of 32 (a warp on NVIDIA) reads 128 contiguous bytes of a row per load; groups grow
// until an invocation has at most 4 words of a row (a 2048-wide int4 row: 64 invocations), so
// that every row's loads are few and issued together. More rows per group reuse the x registers
// but make fewer workgroups: decoding a 1.1B Llama, its 2048-output projections get 2, its
// 32,000-output head 8; a prefill gets 8 everywhere (x is read N / rows times per row m; the
// weights come from the cache). Quads (one 16-byte load and one scale for 4 words) make a quarter
// of the load instructions; the invocations per group stay those of words. Decoding the 1.1B
// Llama on an H200 they made int8 8% faster and int4 20% slower (an int4 quad's 32 x values are
// 128 bytes apart from its neighbour's: each x load touches twice the cache sectors).
WeightOnlySplit weight_only_split(int64_t m, int64_t n, int64_t k, int bits, int64_t group, uint32_t max_workgroup) {
  const int64_t per_word = bits == 8 ? 4 : 8, row_words = k / per_word, group_words = group / per_word;
  WeightOnlySplit s{32, m > 1 ? kWqMaxRows : std::min<int64_t>(kWqMaxRows, std::max<int64_t>(1, n / 1024)), false, 1,
                    max_workgroup >= 128 ? 128u : kWorkgroupSize};
  while (s.threads < s.workgroup && s.threads * 4 < row_words) s.threads *= 2;
  const long wg = tuning_number("EMBER_VULKAN_WQ_WG"), threads = tuning_number("EMBER_VULKAN_WQ_THREADS"),
             rows = tuning_number("EMBER_VULKAN_WQ_ROWS");
  if (wg == 64 || (wg == 128 && max_workgroup >= 128))  // at most linear_wq.comp's MAX_WG
    s.workgroup = static_cast<uint32_t>(wg);
  if (threads > 0 && threads <= s.workgroup && (threads & (threads - 1)) == 0) s.threads = threads;
  s.threads = std::min<int64_t>(s.threads, s.workgroup);
  if (rows >= 1 && rows <= kWqMaxRows) s.rows = rows;
  s.quads = tuning_choice("EMBER_VULKAN_WQ_QUADS", bits == 8) && row_words % 4 == 0 && group_words % 4 == 0;
  const int64_t unit = s.quads ? 4 : 1, row_units = row_words / unit;
  s.units = std::min(kWqMaxWords / unit, std::max<int64_t>(1, (row_units + s.threads - 1) / s.threads));
  return s;
}

}  // namespace vulkan
}  // namespace ember
