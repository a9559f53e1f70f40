// Which fp32 convolutions the exporter marks for Winograd F(4x4, 3x3) (kWinogradFlag on the
// blob node; XNNPACK computes them through third_party/xnnpack/patches/0005).
//
// Winograd trades the 144 multiplications of a 4x4 output tile per channel pair for 36, plus
// input and output transforms whose cost grows with the channel counts only linearly. It pays
// where the 36 GEMMs dominate: 3x3, stride 1, dilation 1, ungrouped, with at least
// kWinogradMinChannels input and output channels (measured: 16 channels break even, 32 gain
// 1.5x, 64-256 gain 1.7-2.8x on one thread; docs/benchmarks.md). Its results differ from the
// direct convolution by rounding only (about 2e-6 relative L2 per layer); `ember export
// --xnnpack-no-winograd` (backend option winograd=0) keeps every convolution direct.
#pragma once

#include <cstddef>

namespace ember {
namespace xnnpack {

constexpr size_t kWinogradMinChannels = 32;

struct WinogradShape {
  size_t kernel_h = 0, kernel_w = 0;
  size_t stride_h = 1, stride_w = 1;
  size_t dilation_h = 1, dilation_w = 1;
  size_t groups = 1;
  size_t in_channels = 0, out_channels = 0;
};

// True when a convolution of this shape runs faster as Winograd F(4x4, 3x3).
inline bool winograd_suits(const WinogradShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 &&
         s.dilation_w == 1 && s.groups == 1 && s.in_channels >= kWinogradMinChannels &&
         s.out_channels >= kWinogradMinChannels;
}

}  // namespace xnnpack
}  // namespace ember
