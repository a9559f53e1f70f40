// linear_wq.comp's work split: how many invocations share a row of weights, how many rows a
// group of them computes, and how much of a row each holds in registers.
// A pure function of the shapes and the device's workgroup limit (plus EMBER_VULKAN_WQ_*
// overrides for tuning on a device), so the lowering and the tests see the same choice.
#pragma once

#include <cstdint>

namespace ember {
namespace vulkan {

// linear_wq.comp's MAX_ROWS and MAX_XW (32-bit words; quads: MAX_XQ = MAX_XW / 4).
constexpr int64_t kWqMaxRows = 8, kWqMaxWords = 8;

struct WeightOnlySplit {
  int64_t threads;     // invocations per row group, a power of two, at most `workgroup`
  int64_t rows;        // output rows per group, 1..kWqMaxRows
  bool quads;          // K read in 16-byte quads of 4 words (the shader's QUADS), else in words
  int64_t units;       // words (quads) per invocation and chunk of K, 1..kWqMaxWords (/ 4)
  uint32_t workgroup;  // invocations per workgroup: 128 where the device allows, else 64
};

// m rows of x, n outputs (all outputs of a split group), k inputs, `bits` (8 or 4) weights with a
// scale per `group` inputs (k and group multiples of the values in a 32-bit word). Quads for int8
// weights where rows and scale groups are whole quads (one 16-byte load and one scale per quad);
// int4 reads words (its quads, 32 values each, measured slower: docs/benchmarks-gpu.md).
// Environment overrides, read on every call (init only): EMBER_VULKAN_WQ_WG (64 / 128), _THREADS
// (a power of two), _ROWS (1..8), _QUADS (0 / 1, where the shapes allow quads).
WeightOnlySplit weight_only_split(int64_t m, int64_t n, int64_t k, int bits, int64_t group, uint32_t max_workgroup);

}  // namespace vulkan
}  // namespace ember
