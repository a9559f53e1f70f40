// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolutions (third_party/xnnpack/patches/0005) against
// a double-precision direct convolution, over many shapes, thread counts, and every x86 fp32
// GEMM family this CPU can run (XNNPACK picks one by CPU features; the transforms and the
// packed-filter offsets must hold for each tile shape and packing: 7x32, 4x16 with sr = 4,
// 5x16, 4x8).
#include <pthreadpool.h>
#include <xnnpack.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "delegates/xnnpack/xnnpack_shapes.h"
#include "gtest/gtest.h"
#include "test/delegates/xnnpack/xnnpack_kernel_selection.h"
#include "xnnpack/operator.h"

namespace ember {
namespace {

struct Shape {
  size_t n, h, w, c, k;
  uint32_t pad_top, pad_right, pad_bottom, pad_left;
  size_t in_stride, out_stride;  // pixel strides (>= c, k)
  float lo, hi;
  bool bias;
};

std::string describe(const Shape& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "n%zu %zux%zu c%zu k%zu pad %u,%u,%u,%u strides %zu/%zu clamp [%g, %g] bias %d", s.n,
                s.h, s.w, s.c, s.k, s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.in_stride, s.out_stride,
                double(s.lo), double(s.hi), int(s.bias));
  return buf;
}

constexpr float kSentinel = -777.0f;

// Direct 3x3 stride-1 convolution in double, NHWC with pixel strides; OHWI filter.
std::vector<double> reference(const Shape& s, const std::vector<float>& x, const std::vector<float>& f,
                              const std::vector<float>& b, size_t oh, size_t ow) {
  std::vector<double> y(s.n * oh * ow * s.k);
  for (size_t n = 0; n < s.n; ++n) {
    for (size_t oy = 0; oy < oh; ++oy) {
      for (size_t ox = 0; ox < ow; ++ox) {
        for (size_t o = 0; o < s.k; ++o) {
          double acc = s.bias ? b[o] : 0.0;
          for (size_t ky = 0; ky < 3; ++ky) {
            const long iy = long(oy + ky) - long(s.pad_top);
            if (iy < 0 || iy >= long(s.h)) continue;
            for (size_t kx = 0; kx < 3; ++kx) {
              const long ix = long(ox + kx) - long(s.pad_left);
              if (ix < 0 || ix >= long(s.w)) continue;
              const float* px = &x[((n * s.h + size_t(iy)) * s.w + size_t(ix)) * s.in_stride];
              const float* pf = &f[((o * 3 + ky) * 3 + kx) * s.c];
              for (size_t i = 0; i < s.c; ++i) acc += double(px[i]) * double(pf[i]);
            }
          }
          acc = std::min<double>(std::max<double>(acc, s.lo), s.hi);
          y[((n * oh + oy) * ow + ox) * s.k + o] = acc;
        }
      }
    }
  }
  return y;
}

// Runs shape `s` as a convolution created with XNN_FLAG_WINOGRAD_CONVOLUTION (and, for
// `tile` 2, XNN_FLAG_WINOGRAD_2X2_TILES) on `threads` threads; fails the test on a wrong
// result or when the Winograd path was not taken.
void check(const Shape& s, size_t threads, size_t tile, const char* label) {
  SCOPED_TRACE(std::string(label) + " F(" + std::to_string(tile) + "x" + std::to_string(tile) + ") threads " +
               std::to_string(threads) + ": " + describe(s));
  const uint32_t flags = XNN_FLAG_WINOGRAD_CONVOLUTION | (tile == 2 ? XNN_FLAG_WINOGRAD_2X2_TILES : 0);
  std::mt19937 rng(uint32_t(s.n * 131 + s.h * 17 + s.w * 7 + s.c * 3 + s.k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(s.n * s.h * s.w * s.in_stride + 64), f(s.k * 9 * s.c), b(s.k);
  for (float& v : x) v = u(rng);
  for (float& v : f) v = u(rng) * 0.3f;
  for (float& v : b) v = u(rng);
  const size_t oh = s.h + s.pad_top + s.pad_bottom - 2, ow = s.w + s.pad_left + s.pad_right - 2;
  std::vector<float> y(s.n * oh * ow * s.out_stride + 64, kSentinel);

  pthreadpool_t pool = threads > 1 ? pthreadpool_create(threads) : nullptr;
  xnn_operator_t op = nullptr;
  ASSERT_EQ(xnn_create_convolution2d_nhwc_f32(s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, 3, 3, 1, 1, 1, 1, 1,
                                              s.c, s.k, s.in_stride, s.out_stride, f.data(),
                                              s.bias ? b.data() : nullptr, s.lo, s.hi, flags, nullptr, nullptr, &op),
            xnn_status_success);
  EXPECT_EQ(op->ukernel.type, xnn_microkernel_type_winograd);
  size_t workspace_size = 0, workspace_alignment = 0;
  ASSERT_EQ(xnn_reshape_convolution2d_nhwc_f32(op, s.n, s.h, s.w, &workspace_size, &workspace_alignment, nullptr,
                                               nullptr, pool),
            xnn_status_success);
  std::vector<char> workspace(workspace_size + 64);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(workspace.data()) + 63) & ~uintptr_t(63));
  ASSERT_EQ(xnn_setup_convolution2d_nhwc_f32(op, aligned, x.data(), y.data()), xnn_status_success);
  ASSERT_EQ(xnn_run_operator(op, pool), xnn_status_success);
  xnn_delete_operator(op);
  if (pool != nullptr) pthreadpool_destroy(pool);

  const std::vector<double> want = reference(s, x, f, b, oh, ow);
  double num = 0.0, den = 0.0;
  size_t touched_padding = 0;
  for (size_t p = 0; p < s.n * oh * ow; ++p) {
    for (size_t o = 0; o < s.out_stride; ++o) {
      const float got = y[p * s.out_stride + o];
      if (o >= s.k) {
        touched_padding += got != kSentinel;
        continue;
      }
      const double d = double(got) - want[p * s.k + o];
      num += d * d;
      den += want[p * s.k + o] * want[p * s.k + o];
    }
  }
  for (size_t i = s.n * oh * ow * s.out_stride; i < y.size(); ++i) touched_padding += y[i] != kSentinel;
  EXPECT_EQ(touched_padding, 0u) << "wrote outside the output's channels";
  // Winograd in fp32: ~1e-6 relative L2 at these sizes for F(4x4), ~4e-7 for F(2x2) (the
  // direct fp32 convolution: ~1e-7); a wrong tile, offset or transform is O(1).
  EXPECT_LE(std::sqrt(num / std::max(den, 1e-30)), 2e-5);
}

std::vector<Shape> shapes() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<Shape> v = {
      {1, 56, 56, 64, 64, 1, 1, 1, 1, 64, 64, 0.0f, kInf, true},      // ResNet stage 1
      {1, 14, 14, 160, 96, 1, 1, 1, 1, 160, 96, -kInf, kInf, true},  // a wide layer
      {1, 7, 7, 96, 80, 1, 1, 1, 1, 96, 80, 0.0f, 6.0f, false},
      {1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, -kInf, kInf, true},            // one output pixel
      {2, 7, 9, 3, 5, 0, 0, 0, 0, 3, 5, -kInf, kInf, false},
      {3, 13, 11, 37, 45, 2, 3, 0, 1, 40, 50, -0.5f, 0.7f, true},      // padding wider than the kernel's
  };
  std::mt19937 rng(2026);
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  for (int i = 0; i < 40; ++i) {
    Shape s;
    s.n = pick(1, 3), s.c = pick(1, 70), s.k = pick(1, 70);
    s.pad_top = uint32_t(pick(0, 2)), s.pad_right = uint32_t(pick(0, 2));
    s.pad_bottom = uint32_t(pick(0, 2)), s.pad_left = uint32_t(pick(0, 2));
    s.h = std::max<size_t>(pick(1, 21), 3 - std::min<size_t>(3, s.pad_top + s.pad_bottom));
    s.w = std::max<size_t>(pick(1, 21), 3 - std::min<size_t>(3, s.pad_left + s.pad_right));
    s.in_stride = s.c + pick(0, 3), s.out_stride = s.k + pick(0, 3);
    s.lo = i % 3 == 0 ? 0.0f : -kInf, s.hi = i % 3 == 0 ? 6.0f : kInf;
    s.bias = i % 2 == 0;
    v.push_back(s);
  }
  return v;
}

TEST(XnnpackWinograd, MatchesDirectConvolutionAcrossShapesAndThreads) {
  ASSERT_EQ(xnn_initialize(nullptr), xnn_status_success);
  for (const Shape& s : shapes()) {
    for (size_t threads : {1, 2, 3, 7}) {
      for (size_t tile : {4, 2}) check(s, threads, tile, "default GEMM");
    }
  }
}

TEST(XnnpackWinograd, EveryFp32GemmFamilyThisCpuRuns) {
  ASSERT_EQ(xnn_initialize(nullptr), xnn_status_success);
  const std::vector<testing::F32GemmVariant> variants = testing::f32_gemm_variants();
  if (variants.empty()) GTEST_SKIP() << "no fp32 GEMM variants to force on this architecture";
  size_t ran = 0;
  const std::vector<Shape> all = shapes();
  for (const testing::F32GemmVariant& v : variants) {
    if (!v.supported) {
      std::printf("[ skipped  ] %s: needs %s\n", v.name, v.needs);
      continue;
    }
    testing::ScopedF32GemmVariant forced(v.name);
    ASSERT_TRUE(forced.ok()) << v.name;
    for (size_t i = 0; i < all.size(); i += 3) check(all[i], i % 2 == 0 ? 1 : 3, i % 4 < 2 ? 4 : 2, v.name);
    ++ran;
  }
  EXPECT_GT(ran, 0u);
}

TEST(XnnpackWinograd, FlagIsAHintOtherConvolutionsIgnore) {
  ASSERT_EQ(xnn_initialize(nullptr), xnn_status_success);
  std::vector<float> f(8 * 9 * 8, 0.1f), f5(8 * 25 * 8, 0.1f);
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    uint32_t kh, kw, sh, sw, dh, dw, groups;
  } cases[] = {{3, 3, 2, 2, 1, 1, 1}, {3, 3, 1, 1, 2, 2, 1}, {3, 3, 1, 1, 1, 1, 2}, {5, 5, 1, 1, 1, 1, 1}};
  for (const Case& c : cases) {
    xnn_operator_t op = nullptr;
    const size_t per_group = 8 / c.groups;
    ASSERT_EQ(xnn_create_convolution2d_nhwc_f32(1, 1, 1, 1, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.groups, per_group,
                                                per_group, 8, 8, c.kh == 5 ? f5.data() : f.data(), nullptr, -inf, inf,
                                                XNN_FLAG_WINOGRAD_CONVOLUTION, nullptr, nullptr, &op),
              xnn_status_success);
    EXPECT_NE(op->ukernel.type, xnn_microkernel_type_winograd) << c.kh << "x" << c.kw << " s" << c.sh << " d" << c.dh
                                                               << " g" << c.groups;
    xnn_delete_operator(op);
  }
  static_assert(xnnpack::kWinogradFlag == XNN_FLAG_WINOGRAD_CONVOLUTION &&
                    xnnpack::kWinograd2x2Flag == XNN_FLAG_WINOGRAD_2X2_TILES,
                "the blob's flags are XNNPACK's");
}

}  // namespace
}  // namespace ember
