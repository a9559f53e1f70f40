// conv2d_gemm.comp's matrix-unit variant (-DCOOP_MATRIX: fp16 tiles multiplied by
// VK_NV_cooperative_matrix's 16x16x16 units into fp32 sums), which fp16 graphs' GEMM
// convolutions and linear layers take on devices that offer it (NVIDIA; not lavapipe, where
// these tests skip). Each graph runs twice, on the matrix units and with
// EMBER_VULKAN_COOP_MATRIX=0 on the fp32-arithmetic tiles: both read the same fp16 operands and
// sum exactly-representable products in fp32, so they agree to fp16 rounding of the result;
// both are also held to the fp16 bound against the portable float32 kernel. Shapes cross the
// tile edges (partial 64x64 tiles, k not a multiple of 16, 16-row blocks half used), strides,
// padding, dilation, groups, batches and the reduction splits 1, 3 and the planner's.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "test/delegates/vulkan/portable_reference.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

#define EMBER_SKIP_WITHOUT_COOP_MATRIX()                                                             \
  do {                                                                                               \
    EMBER_SKIP_WITHOUT_FP16();                                                                       \
    if (!coop_matrix_f16_supported())                                                                \
      GTEST_SKIP() << "device lacks VK_NV_cooperative_matrix 16x16x16 fp16 on 32-wide subgroups";   \
  } while (0)

// Runs `b` (an fp16 graph of one output y) on the matrix units (coop) or off them; returns the
// output and how many dispatches ran the matrix-unit shader.
::testing::AssertionResult run_fp16(const VulkanBlobBuilder& b, const Sizes& xs, const Floats& x, int y, bool coop,
                                    const char* splits, Floats* out, size_t* coop_dispatches) {
  setenv("EMBER_VULKAN_CONV_GEMM", "1", 1);
  if (splits != nullptr) setenv("EMBER_VULKAN_CONV_SPLITS", splits, 1);
  if (!coop) setenv("EMBER_VULKAN_COOP_MATRIX", "0", 1);
  Delegate del;
  const Error e = del.init(b.build());
  unsetenv("EMBER_VULKAN_CONV_GEMM");
  unsetenv("EMBER_VULKAN_CONV_SPLITS");
  unsetenv("EMBER_VULKAN_COOP_MATRIX");
  if (e != Error::Ok) return ::testing::AssertionFailure() << "init: " << del.message();
  *coop_dispatches = del.graph()->num_dispatches_of(ShaderId::Conv2dGemmCoopFp16);
  std::vector<HostTensor> ins{HostTensor::f32(xs, x)};
  std::vector<HostTensor> os{nan_out(b.sizes(y))};
  if (del.execute(ins, os) != Error::Ok) return ::testing::AssertionFailure() << "execute: " << del.message();
  *out = values(os[0]);
  return ::testing::AssertionSuccess();
}

// The two paths against each other and the reference; `what` names the case.
void check(const VulkanBlobBuilder& b, const Sizes& xs, const Floats& x, int y, const Floats& want,
           const std::string& what) {
  for (const char* splits : {"1", "3", static_cast<const char*>(nullptr)}) {
    const std::string name = what + " splits " + (splits ? splits : "planned");
    Floats on, off;
    size_t n_on = 0, n_off = 0;
    ASSERT_TRUE(run_fp16(b, xs, x, y, true, splits, &on, &n_on)) << name;
    ASSERT_TRUE(run_fp16(b, xs, x, y, false, splits, &off, &n_off)) << name;
    EXPECT_EQ(n_on, 1u) << name << ": the GEMM phase on the matrix units";
    EXPECT_EQ(n_off, 0u) << name;
    const double e_on = rel_l2(on, want), e_off = rel_l2(off, want), e_pair = rel_l2(on, off);
    std::printf("[coop] %-44s rel. L2 vs fp32: matrix units %.3g, fp32 tiles %.3g; between them %.3g\n",
                name.c_str(), e_on, e_off, e_pair);
    EXPECT_LE(e_on, 4e-3) << name;
    EXPECT_LE(e_pair, 1e-3) << name;
  }
}

TEST(VulkanCoopMatrixTest, ConvolutionsMatchTheFp32TilesAndPortable) {
  EMBER_SKIP_WITHOUT_COOP_MATRIX();
  struct Case {
    Sizes xs, ws;
    int64_t stride, pad, dil, groups;
    bool bias;
  };
  const Case cases[] = {
      {{1, 64, 14, 14}, {70, 64, 3, 3}, 1, 1, 1, 1, true},   // 2 x 4 tiles, both partial; k 576
      {{2, 6, 11, 13}, {40, 3, 3, 2}, 2, 1, 2, 2, true},     // groups, dilation, batch; k 18
      {{1, 3, 23, 23}, {16, 3, 7, 7}, 2, 3, 1, 1, true},     // stem: k = 147
      {{1, 32, 9, 9}, {48, 32, 1, 1}, 1, 0, 1, 1, false},    // pointwise, no bias
      {{1, 256, 7, 7}, {96, 256, 3, 3}, 1, 1, 1, 1, true},   // deep k over 49 pixels
      {{1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1, 1, true},   // a ResNet18 stage-1 layer
  };
  for (const Case& c : cases) {
    const Floats x = random_floats(numel(c.xs), 50), w = random_floats(numel(c.ws), 51, -0.3f, 0.3f),
                 bias = random_floats(c.ws[0], 52);
    VulkanBlobBuilder b;
    const int32_t st = static_cast<int32_t>(c.stride), pd = static_cast<int32_t>(c.pad), dl = static_cast<int32_t>(c.dil);
    const int y = b.conv2d(b.input(c.xs), b.constant(c.ws, w), c.bias ? b.constant({c.ws[0]}, bias) : -1, {st}, {pd},
                           {dl}, static_cast<int>(c.groups), VkActivation{});
    b.output(y);
    b.set_fp16(true);
    Portable p;
    Floats want;
    ASSERT_TRUE(p.run("aten::convolution.default",
                      {p.t(c.xs, x), p.t(c.ws, w), c.bias ? p.t({c.ws[0]}, bias) : p.none(), p.ints({c.stride, c.stride}),
                       p.ints({c.pad, c.pad}), p.ints({c.dil, c.dil}), p.b(false), p.ints({0, 0}), p.i(c.groups),
                       p.out(b.sizes(y))},
                      &want));
    check(b, c.xs, x, y, want, "conv " + sizes_str(c.xs) + " * " + sizes_str(c.ws));
  }
}

// Linear layers of >= 16 rows (ROWS_MAJOR tiles) with a fused GELU, against a double loop.
TEST(VulkanCoopMatrixTest, LinearLayersMatchTheFp32TilesAndReference) {
  EMBER_SKIP_WITHOUT_COOP_MATRIX();
  struct LinCase { Sizes xs; int64_t n; };
  for (const LinCase& c : {LinCase{{197, 192}, 576}, LinCase{{37, 41}, 45}, LinCase{{3, 20, 64}, 130}}) {
    const int64_t k = c.xs.back(), m = numel(c.xs) / k;
    const Floats x = random_floats(numel(c.xs), 100), w = random_floats(c.n * k, 101, -0.2f, 0.2f),
                 bias = random_floats(c.n, 102);
    VulkanBlobBuilder b;
    const int y = b.unary(VkUnary::Gelu, b.linear(b.input(c.xs), b.constant({c.n, k}, w), b.constant({c.n}, bias)));
    b.output(y);
    b.set_fp16(true);
    Floats want(static_cast<size_t>(m * c.n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = bias[static_cast<size_t>(j)];
        for (int64_t q = 0; q < k; ++q) s += static_cast<double>(x[static_cast<size_t>(i * k + q)]) * w[static_cast<size_t>(j * k + q)];
        want[static_cast<size_t>(i * c.n + j)] = static_cast<float>(0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0))));
      }
    check(b, c.xs, x, y, want, "linear " + sizes_str(c.xs) + " x " + std::to_string(c.n));
  }
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
