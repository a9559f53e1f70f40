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
// weights come from the cache).
WeightOnlySplit weight_only_split(int64_t m, int64_t n, int64_t row_words, uint32_t max_workgroup) {
  WeightOnlySplit s{32, m > 1 ? kWqMaxRows : std::min<int64_t>(kWqMaxRows, std::max<int64_t>(1, n / 1024)), 1,
                    max_workgroup >= 128 ? 128u : kWorkgroupSize};
  while (s.threads < s.workgroup && s.threads * 4 < row_words) s.threads *= 2;
  const long wg = tuning_number("EMBER_VULKAN_WQ_WG"), threads = tuning_number("EMBER_VULKAN_WQ_THREADS"),
             rows = tuning_number("EMBER_VULKAN_WQ_ROWS");
  if (wg == 64 || (wg == 128 && max_workgroup >= 128))  // at most linear_wq.comp's MAX_WG
    s.workgroup = static_cast<uint32_t>(wg);
  if (threads > 0 && threads <= s.workgroup && (threads & (threads - 1)) == 0) s.threads = threads;
  s.threads = std::min<int64_t>(s.threads, s.workgroup);
  if (rows >= 1 && rows <= kWqMaxRows) s.rows = rows;
  s.words = std::min(kWqMaxWords, std::max<int64_t>(1, (row_words + s.threads - 1) / s.threads));
  return s;
}

}  // namespace vulkan
}  // namespace ember
