// The Vulkan delegate's weight-only quantized layers (linear_wq.comp: int8 and packed int4,
// words and 16-byte quads, the work splits a device sweep forces; embedding_wq.comp) and the
// float row-dot linear, against double-precision reference loops written here (semantics:
// kernels/portable/quantized/weight_only_ops.cc). fp32 and fp16 storage; skipped without a
// Vulkan device (fp16: without 16-bit storage). Split from vulkan_llm_ops_test.cc so each binary
// stays inside its timeout under ASan on lavapipe.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_fp16.h"
#include "test/delegates/vulkan/vulkan_runner.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

// w[n][k] = q[n][k] * scales[n][k / group]; bits 4 packed two per byte (value + 8, low nibble
// first), as kernels/portable/quantized/weight_only_ops.cc reads them.
void check_linear_weight_only(bool fp16) {
  struct Case { int bits; int64_t m, k, n, group; bool bias; };
  for (const Case& c : {Case{8, 1, 64, 5, 64, true}, Case{8, 3, 96, 7, 32, false}, Case{8, 1, 2048, 33, 2048, false},
                        Case{4, 1, 64, 6, 32, true}, Case{4, 5, 128, 9, 8, false}, Case{4, 2, 1024, 17, 32, true},
                        Case{4, 2, 2560, 5, 32, false}, Case{8, 1, 3000, 3, 1000, true},
                        // linear_wq.comp's paths: rows of a few words, rows longer than one
                        // chunk of x in registers (128 invocations x 8 words), odd M and N.
                        Case{4, 3, 32, 70, 32, true}, Case{4, 2, 40, 9, 8, false}, Case{8, 2, 4104, 3, 8, true},
                        Case{4, 1, 16384 + 32, 2, 32, false}, Case{8, 7, 48, 300, 16, true},
                        // groups of 2 and 8 rows (2048+ and 8192+ outputs), the last group partial
                        Case{8, 3, 32, 2731, 32, true}, Case{4, 1, 64, 16387, 16, false}}) {
    const uint32_t seed = static_cast<uint32_t>(c.k * 31 + c.n + c.bits);
    Floats x = random_floats(static_cast<size_t>(c.m * c.k), seed, -1, 1);
    Floats scales = random_floats(static_cast<size_t>(c.n * (c.k / c.group)), seed + 1, 0.001f, 0.02f);
    Floats bias = random_floats(static_cast<size_t>(c.n), seed + 2);
    const std::vector<int> q = random_quantized(static_cast<size_t>(c.n * c.k), c.bits, seed + 3);
    const std::vector<uint8_t> bytes = pack_quantized(q, c.bits);
    const Sizes ws = c.bits == 8 ? Sizes{c.n, c.k} : Sizes{c.n, c.k / 2};
    VulkanBlobBuilder b;
    const int xi = b.input({c.m, c.k});
    const int wi = b.constant_bytes(ws, c.bits == 8 ? VkDType::Int8 : VkDType::UInt8, bytes.data(), bytes.size());
    const int y = b.linear_weight_only(xi, wi, b.constant({c.n, c.k / c.group}, scales),
                                       c.bias ? b.constant({c.n}, bias) : -1, c.bits, static_cast<int>(c.group));
    b.output(y);
    b.set_fp16(fp16);
    Floats got;
    ASSERT_TRUE(run1(b, {HostTensor::f32({c.m, c.k}, x)}, y, &got)) << c.bits << " bits, K " << c.k;
    // With fp16 storage the shader reads x, the scales and the bias rounded to fp16 and then
    // computes in fp32: the reference does the same, so only the output's rounding remains.
    if (fp16)
      for (Floats* v : {&x, &scales, &bias})
        for (float& f : *v) f = half_to_float(float_to_half(f));
    Floats want(static_cast<size_t>(c.m * c.n));
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t n = 0; n < c.n; ++n) {
        double acc = c.bias ? bias[n] : 0.0;
        for (int64_t k = 0; k < c.k; ++k)
          acc += static_cast<double>(x[m * c.k + k]) * q[n * c.k + k] * scales[n * (c.k / c.group) + k / c.group];
        want[m * c.n + n] = static_cast<float>(acc);
      }
    EXPECT_TRUE(near(got, want, fp16 ? kTol16 : kTol32)) << c.bits << " bits, M " << c.m << " K " << c.k << " group " << c.group;
  }
}

TEST(VulkanWeightOnlyTest, WeightOnlyLinearInt8AndInt4) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_linear_weight_only(false);
}

// A work split a device sweep forces (weight_only_split.h's EMBER_VULKAN_WQ_*: workgroup,
// invocations per row group, rows per group, quads or words) computes the same products as the
// heuristic's: 32-invocation groups of 8 rows reading quads (int4's quads too: the heuristic
// gives int4 words); 128-invocation groups of 5 rows (a full batch of loads, then a partial one)
// reading words (int8's words too: the heuristic gives int8 quads wherever they fit).
TEST(VulkanWeightOnlyTest, WeightOnlyLinearForcedWorkSplits) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct Split { const char *wg, *threads, *rows, *quads; };
  for (const Split& s : {Split{"64", "32", "8", "1"}, Split{"128", "128", "5", "0"}}) {
    setenv("EMBER_VULKAN_WQ_WG", s.wg, 1);
    setenv("EMBER_VULKAN_WQ_THREADS", s.threads, 1);
    setenv("EMBER_VULKAN_WQ_ROWS", s.rows, 1);
    setenv("EMBER_VULKAN_WQ_QUADS", s.quads, 1);
    SCOPED_TRACE(std::string("workgroup ") + s.wg + ", threads " + s.threads + ", rows " + s.rows + ", quads " + s.quads);
    check_linear_weight_only(false);
  }
  for (const char* v : {"EMBER_VULKAN_WQ_WG", "EMBER_VULKAN_WQ_THREADS", "EMBER_VULKAN_WQ_ROWS", "EMBER_VULKAN_WQ_QUADS"})
    unsetenv(v);
}

// Float linear layers with few rows take the row-dot path (matmul.comp TILED = 2): rows of x
// staged 2048 values at a time, 8 outputs per workgroup (N not a multiple of 8 here).
TEST(VulkanWeightOnlyTest, RowDotLinearShortAndLongRows) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct Case { int64_t m, k, n; bool bias; };
  for (const Case& c : {Case{1, 64, 3, true}, Case{3, 700, 13, false}, Case{2, 5000, 9, true}, Case{15, 2049, 17, false}}) {
    Floats x = random_floats(static_cast<size_t>(c.m * c.k), 71, -1, 1), w = random_floats(static_cast<size_t>(c.n * c.k), 72),
           bias = random_floats(static_cast<size_t>(c.n), 73);
    VulkanBlobBuilder b;
    const int y = b.linear(b.input({c.m, c.k}), b.constant({c.n, c.k}, w), c.bias ? b.constant({c.n}, bias) : -1);
    b.output(y);
    Floats got;
    ASSERT_TRUE(run1(b, {HostTensor::f32({c.m, c.k}, x)}, y, &got));
    Floats want(static_cast<size_t>(c.m * c.n));
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t n = 0; n < c.n; ++n) {
        double acc = c.bias ? bias[n] : 0.0;
        for (int64_t k = 0; k < c.k; ++k) acc += static_cast<double>(x[m * c.k + k]) * w[n * c.k + k];
        want[m * c.n + n] = static_cast<float>(acc);
      }
    EXPECT_TRUE(near(got, want, kTol32)) << "M " << c.m << " K " << c.k << " N " << c.n;
  }
}

// Quantized token rows (embedding_wq.comp): int8 and packed int4, int64 and int32 indices, one
// out of range (a zero row, as the float embedding gives).
TEST(VulkanWeightOnlyTest, WeightOnlyEmbeddingRows) {
  EMBER_SKIP_WITHOUT_VULKAN();
  for (int bits : {8, 4}) {
    for (bool idx64 : {true, false}) {
      const int64_t v = 11, d = 24, group = 8;
      Floats scales = random_floats(static_cast<size_t>(v * (d / group)), 81 + bits, 0.01f, 0.1f);
      const std::vector<int> q = random_quantized(static_cast<size_t>(v * d), bits, 82);
      const std::vector<uint8_t> bytes = pack_quantized(q, bits);
      const std::vector<int64_t> rows = {3, 0, 10, -1, 42, 7};  // -1: the last row; 42: out of range
      VulkanBlobBuilder b;
      const int w = b.constant_bytes(bits == 8 ? Sizes{v, d} : Sizes{v, d / 2}, bits == 8 ? VkDType::Int8 : VkDType::UInt8,
                                     bytes.data(), bytes.size());
      const int idx = b.input({2, 3}, idx64 ? VkDType::Int64 : VkDType::Int32);
      const int y = b.embedding_weight_only(w, b.constant({v, d / group}, scales), idx, bits, static_cast<int>(group));
      b.output(y);
      ASSERT_EQ(b.sizes(y), (Sizes{2, 3, d}));
      std::vector<int32_t> rows32(rows.begin(), rows.end());
      Floats got;
      ASSERT_TRUE(run1(b, {idx64 ? HostTensor::i64({2, 3}, rows) : HostTensor::i32({2, 3}, rows32)}, y, &got));
      Floats want;
      for (int64_t row : rows) {
        const int64_t rr = row < 0 ? row + v : row;
        for (int64_t k = 0; k < d; ++k)
          want.push_back(rr >= v ? 0.0f : static_cast<float>(q[rr * d + k] * static_cast<double>(scales[rr * (d / group) + k / group])));
      }
      EXPECT_TRUE(near(got, want, kTol32)) << bits << " bits, int" << (idx64 ? 64 : 32) << " indices";
    }
  }
}

TEST(VulkanWeightOnlyTest, WeightOnlyLinearRefusesBadLayouts) {
  VulkanBlobBuilder b;  // K not a multiple of 8 for packed int4
  std::vector<uint8_t> w(3 * 6, 0);
  const int x = b.input({1, 12});
  EXPECT_EQ(b.linear_weight_only(x, b.constant_bytes({3, 6}, VkDType::UInt8, w.data(), w.size()),
                                 b.constant({3, 3}, Floats(9, 1.0f)), -1, 4, 4),
            -1);
  EXPECT_NE(b.error().find("multiple of 8"), std::string::npos) << b.error();
  VulkanBlobBuilder c;  // an int8 weight where 4 bits were declared
  std::vector<uint8_t> w8(3 * 16, 0);
  EXPECT_EQ(c.linear_weight_only(c.input({1, 16}), c.constant_bytes({3, 16}, VkDType::Int8, w8.data(), w8.size()),
                                 c.constant({3, 2}, Floats(6, 1.0f)), -1, 4, 8),
            -1);
  EXPECT_FALSE(c.ok());
}

TEST(VulkanWeightOnlyTest, Fp16WeightOnlyLinear) {
  EMBER_SKIP_WITHOUT_FP16();
  check_linear_weight_only(true);
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
