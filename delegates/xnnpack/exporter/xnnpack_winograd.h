// Which fp32 convolutions the exporter computes in the Winograd domain, and with which tiles
// (flags on the blob node; XNNPACK runs them through third_party/xnnpack/patches/0005).
//
// Winograd F(m x m, 3x3) trades the 9 m^2 multiplications of an m x m output tile per channel
// pair for (m + 2)^2: 36 instead of 144 for F(4x4), 16 instead of 36 for F(2x2), plus input and
// output transforms whose cost grows with the channel counts only linearly. It applies to 3x3,
// stride 1, dilation 1, ungrouped convolutions and pays with at least kWinogradMinChannels
// input and output channels. Its transformed filters are larger than the direct ones (36 / 9
// values for F(4x4), 16 / 9 for F(2x2)) and are read once per block of output tiles, so where
// few tiles share them (late, wide layers: 7x7 outputs of 512 channels) their extra bytes cost
// more than the saved arithmetic, most of all on one core reading them from memory. The
// automatic choice: F(4x4) with at least kWinogradMin4x4Tiles 4x4 tiles (batch included, as
// exported), else F(2x2) with at least kWinogradMin2x2Tiles 2x2 tiles, else direct; the
// thresholds come from the device measurements in docs/benchmarks.md ("Winograd"), with the
// filters read from memory as inside a model: F(4x4) from 49 tiles (28x28), F(2x2) for 14x14
// outputs (49 2x2 tiles), direct at 7x7 (16). The runtime uses the flags only on pools of at
// most 4 threads (runtime/xnnpack_delegate.h, kWinogradMaxThreads).
// Results differ from the direct convolution by rounding only (about 2e-6 relative L2 per
// layer for F(4x4), 4e-7 for F(2x2)). `ember export --xnnpack-winograd off|auto|4x4|2x2`
// (backend option winograd=...) overrides the choice; 4x4 and 2x2 force those tiles wherever
// Winograd applies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "delegates/xnnpack/xnnpack_shapes.h"

namespace ember {
namespace xnnpack {

constexpr size_t kWinogradMinChannels = 32;
constexpr size_t kWinogradMin4x4Tiles = 32;
constexpr size_t kWinogradMin2x2Tiles = 32;

enum class WinogradMode { kAuto, kOff, k4x4, k2x2 };

// "auto", "off", "4x4", "2x2" (also 1 / 0 for auto / off); false for anything else.
inline bool parse_winograd_mode(const std::string& s, WinogradMode* mode) {
  if (s == "auto" || s == "1" || s == "on") {
    *mode = WinogradMode::kAuto;
  } else if (s == "off" || s == "0") {
    *mode = WinogradMode::kOff;
  } else if (s == "4x4") {
    *mode = WinogradMode::k4x4;
  } else if (s == "2x2") {
    *mode = WinogradMode::k2x2;
  } else {
    return false;
  }
  return true;
}

struct WinogradShape {
  size_t kernel_h = 0, kernel_w = 0;
  size_t stride_h = 1, stride_w = 1;
  size_t dilation_h = 1, dilation_w = 1;
  size_t groups = 1;
  size_t in_channels = 0, out_channels = 0;
  size_t batch = 1, out_h = 0, out_w = 0;  // as exported (upper bounds of dynamic dims)
};

// The node flags for a convolution of this shape: 0 (direct), kWinogradFlag (F(4x4)) or
// kWinogradFlag | kWinograd2x2Flag (F(2x2)).
inline uint32_t winograd_flags(const WinogradShape& s, WinogradMode mode) {
  const bool applies = s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 &&
                       s.dilation_h == 1 && s.dilation_w == 1 && s.groups == 1;
  if (!applies || mode == WinogradMode::kOff) return 0;
  if (mode == WinogradMode::k4x4) return kWinogradFlag;
  if (mode == WinogradMode::k2x2) return kWinogradFlag | kWinograd2x2Flag;
  if (s.in_channels < kWinogradMinChannels || s.out_channels < kWinogradMinChannels) return 0;
  const size_t tiles4 = s.batch * ((s.out_h + 3) / 4) * ((s.out_w + 3) / 4);
  const size_t tiles2 = s.batch * ((s.out_h + 1) / 2) * ((s.out_w + 1) / 2);
  if (tiles4 >= kWinogradMin4x4Tiles) return kWinogradFlag;
  if (tiles2 >= kWinogradMin2x2Tiles) return kWinogradFlag | kWinograd2x2Flag;
  return 0;
}

}  // namespace xnnpack
}  // namespace ember
