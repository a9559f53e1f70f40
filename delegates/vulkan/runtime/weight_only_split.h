// linear_wq.comp's work split: how many invocations share a row of weights, how many rows a
// group of them computes, and how much of a row each holds in registers.
// A pure function of the shapes and the device's workgroup limit (plus EMBER_VULKAN_WQ_*
// overrides for tuning on a device), so the lowering and the tests see the same choice.
#pragma once

#include <cstdint>

namespace ember {
namespace vulkan {

// linear_wq.comp's MAX_ROWS and MAX_XW (32-bit words).
constexpr int64_t kWqMaxRows = 8, kWqMaxWords = 8;

struct WeightOnlySplit {
  int64_t threads;     // invocations per row group, a power of two, at most `workgroup`
  int64_t rows;        // output rows per group, 1..kWqMaxRows
  int64_t words;       // 32-bit weight words per invocation and chunk of K, 1..kWqMaxWords
  uint32_t workgroup;  // invocations per workgroup: 128 where the device allows, else 64
};

// m rows of x, n outputs (all outputs of a split group), row_words 32-bit weight words per output
// row. Environment overrides, read on every call (init only): EMBER_VULKAN_WQ_WG (64 / 128),
// _THREADS (a power of two), _ROWS (1..8).
WeightOnlySplit weight_only_split(int64_t m, int64_t n, int64_t row_words, uint32_t max_workgroup);

}  // namespace vulkan
}  // namespace ember
