// ember_quantized::linear_weight_only / embedding_weight_only against the dequantized weights
// computed here in double: int8 per-channel and grouped, int4 packed two per byte (every
// nibble value, odd row counts, groups longer than the kernel's chunk), batched inputs, bias,
// several threads; and the parameter checks.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

struct Case {
  int64_t rows, n, k, group;
  int bits;
  bool bias;
};

// A random quantized weight in the operator's layout and its float values.
struct Weight {
  Weight(int64_t n, int64_t k, int64_t group, int bits)
      : q(bits == 8 ? ScalarType::Int8 : ScalarType::UInt8, {n, bits == 8 ? k : k / 2}),
        scales(ScalarType::Float32, {n, k / group}) {}
  TestTensor q, scales;
  std::vector<double> values;  // [n, k]
};

void fill_weight(Weight& w, int64_t n, int64_t k, int64_t group, int bits, std::mt19937& rng) {
  std::uniform_int_distribution<int> qd(bits == 8 ? -128 : -8, bits == 8 ? 127 : 7);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  for (int64_t i = 0; i < n * (k / group); ++i) w.scales.f()[i] = sd(rng);
  w.values.resize(static_cast<size_t>(n * k));
  for (int64_t o = 0; o < n; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      const int v = qd(rng);
      if (bits == 8) {
        w.q.data<int8_t>()[o * k + j] = static_cast<int8_t>(v);
      } else {
        uint8_t& byte = w.q.data<uint8_t>()[(o * k + j) / 2];
        byte = (j % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | (v + 8)) : static_cast<uint8_t>((byte & 0x0F) | ((v + 8) << 4));
      }
      w.values[o * k + j] = v * static_cast<double>(w.scales.f()[o * (k / group) + j / group]);
    }
  }
}

// The kernel quantizes decode-sized inputs (up to 4 rows) to int8 per block of 32 values on
// AVX2 CPUs when the groups are a multiple of 32; the reference does the same to x first.
bool dynamic_int8_activations(const Case& c) {
#if defined(__x86_64__)
  return c.rows <= 4 && c.group % 32 == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// x as the kernel sees it on the dynamic path: per block of 32, scale = max|x| / 127 (float),
// q = round_half_even(x / scale), x' = q * scale.
std::vector<double> block_quantized(const float* x, int64_t k) {
  std::vector<double> out(static_cast<size_t>(k));
  for (int64_t b0 = 0; b0 < k; b0 += 32) {
    float max_abs = 0.f;
    for (int64_t i = b0; i < b0 + 32; ++i) max_abs = std::max(max_abs, std::fabs(x[i]));
    const float scale = max_abs / 127.f;
    for (int64_t i = b0; i < b0 + 32; ++i) out[i] = scale > 0 ? std::nearbyint(x[i] / scale) * double(scale) : 0.0;
  }
  return out;
}

void run_linear(const Case& c, ThreadPool* pool) {
  std::mt19937 rng(static_cast<uint32_t>(c.n * 31 + c.k * 7 + c.group + c.bits));
  Weight w(c.n, c.k, c.group, c.bits);
  fill_weight(w, c.n, c.k, c.group, c.bits, rng);
  TestTensor x(ScalarType::Float32, {c.rows, c.k}), bias(ScalarType::Float32, {c.n}), out(ScalarType::Float32, {c.rows, c.n});
  std::uniform_real_distribution<float> xd(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.f()[i] = xd(rng);
  for (int64_t i = 0; i < c.n; ++i) bias.f()[i] = xd(rng);
  KernelRunner r(size_t{1} << 20, pool);
  ASSERT_EQ(r.run("ember_quantized::linear_weight_only.default",
                  {r.tensor(x), r.tensor(w.q), r.tensor(w.scales), r.i(c.group), r.i(c.bits),
                   c.bias ? r.tensor(bias) : r.none(), r.tensor(out)}),
            Error::Ok)
      << r.message();
  const bool dynamic = dynamic_int8_activations(c);
  for (int64_t i = 0; i < c.rows; ++i) {
    std::vector<double> xi(x.f() + i * c.k, x.f() + (i + 1) * c.k);
    if (dynamic) xi = block_quantized(x.f() + i * c.k, c.k);
    for (int64_t o = 0; o < c.n; ++o) {
      double want = c.bias ? bias.f()[o] : 0.0, magnitude = std::fabs(want);
      for (int64_t j = 0; j < c.k; ++j) {
        want += xi[j] * w.values[o * c.k + j];
        magnitude += std::fabs(xi[j] * w.values[o * c.k + j]);
      }
      ASSERT_NEAR(out.f()[i * c.n + o], want, 1e-5 * magnitude + 1e-6)
          << "row " << i << " col " << o << " bits " << c.bits << " k " << c.k << " group " << c.group;
    }
  }
  EXPECT_TRUE(out.guard_ok());
}

TEST(LinearWeightOnly, MatchesTheDequantizedLinear) {
  const Case cases[] = {
      {1, 7, 64, 64, 8, true},      // per channel (group = K), decode-sized
      {3, 17, 96, 32, 8, false},    // grouped int8
      {1, 9, 64, 32, 4, true},      // int4, one row
      {5, 33, 200, 8, 4, true},     // int4, short groups, K not a multiple of 16
      {2, 4, 1536, 1536, 4, false}, // a group longer than the kernel's chunk
      {1, 3, 6, 2, 4, true},        // tiny: scalar tails only
      {6, 12, 96, 32, 4, true},     // more rows than the fused decode path takes
      {6, 12, 96, 96, 8, false},
      {1, 5, 344, 8, 4, true},      // groups of 8 (tiny_llama's rows): 8-value steps
      {6, 5, 344, 8, 8, true},
      {2, 5, 72, 24, 4, false},     // a group of 24: 16 does not divide it
  };
  for (const Case& c : cases) run_linear(c, nullptr);
  PthreadpoolThreadPool pool(2);
  run_linear({4, 70, 128, 32, 4, true}, &pool);
  run_linear({4, 70, 128, 128, 8, true}, &pool);
}

TEST(LinearWeightOnly, DynamicInt8ActivationsStayWithinOnePercentOfFloat) {
  // Whatever path the CPU takes, a decode-sized product is within 1% (relative L2 over the
  // outputs) of the product with unquantized activations.
  for (int bits : {4, 8}) {
    const int64_t n = 64, k = 512, group = 32;
    std::mt19937 rng(static_cast<uint32_t>(bits + 100));
    Weight w(n, k, group, bits);
    fill_weight(w, n, k, group, bits, rng);
    TestTensor x(ScalarType::Float32, {1, k}), out(ScalarType::Float32, {1, n});
    std::normal_distribution<float> xd(0.f, 1.f);
    for (int64_t i = 0; i < k; ++i) x.f()[i] = xd(rng);
    KernelRunner r;
    ASSERT_EQ(r.run("ember_quantized::linear_weight_only.default",
                    {r.tensor(x), r.tensor(w.q), r.tensor(w.scales), r.i(group), r.i(bits), r.none(), r.tensor(out)}),
              Error::Ok)
        << r.message();
    double num = 0, den = 0;
    for (int64_t o = 0; o < n; ++o) {
      double want = 0;
      for (int64_t j = 0; j < k; ++j) want += x.f()[j] * w.values[o * k + j];
      num += (out.f()[o] - want) * (out.f()[o] - want);
      den += want * want;
    }
    EXPECT_LT(std::sqrt(num / den), 1e-2) << bits << "-bit";  // measured 0.6% (int4), less for int8
  }
}

TEST(LinearWeightOnly, EveryNibbleValueDecodes) {
  // One row holding -8..7 twice, input one-hot per column: out[j] = value(j) * scale.
  TestTensor w(ScalarType::UInt8, {1, 16}), scales(ScalarType::Float32, {1, 1}), x(ScalarType::Float32, {32, 32});
  TestTensor out(ScalarType::Float32, {32, 1});
  for (int j = 0; j < 16; ++j) w.data<uint8_t>()[j] = static_cast<uint8_t>(((2 * j) % 16) | (((2 * j + 1) % 16) << 4));
  scales.f()[0] = 0.5f;
  for (int i = 0; i < 32 * 32; ++i) x.f()[i] = (i / 32 == i % 32) ? 1.f : 0.f;
  KernelRunner r;
  ASSERT_EQ(r.run("ember_quantized::linear_weight_only.default",
                  {r.tensor(x), r.tensor(w), r.tensor(scales), r.i(32), r.i(4), r.none(), r.tensor(out)}),
            Error::Ok)
      << r.message();
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out.f()[j], ((j % 16) - 8) * 0.5f) << j;
}

TEST(EmbeddingWeightOnly, GathersDequantizedRows) {
  for (int bits : {8, 4}) {
    std::mt19937 rng(static_cast<uint32_t>(bits));
    Weight w(11, 48, 16, bits);
    fill_weight(w, 11, 48, 16, bits, rng);
    TestTensor idx(ScalarType::Int64, {2, 3}), out(ScalarType::Float32, {2, 3, 48});
    const int64_t rows[] = {0, 10, 3, 3, 7, 1};
    for (int i = 0; i < 6; ++i) idx.data<int64_t>()[i] = rows[i];
    KernelRunner r;
    ASSERT_EQ(r.run("ember_quantized::embedding_weight_only.default",
                    {r.tensor(w.q), r.tensor(w.scales), r.i(16), r.i(bits), r.tensor(idx), r.tensor(out)}),
              Error::Ok)
        << r.message();
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 48; ++j) ASSERT_FLOAT_EQ(out.f()[i * 48 + j], static_cast<float>(w.values[rows[i] * 48 + j]));
    }
    idx.data<int64_t>()[4] = 11;  // one past the last row
    EXPECT_EQ(r.run("ember_quantized::embedding_weight_only.default",
                    {r.tensor(w.q), r.tensor(w.scales), r.i(16), r.i(bits), r.tensor(idx), r.tensor(out)}),
              Error::OutOfBounds);
  }
}

TEST(LinearWeightOnly, RejectsInconsistentParameters) {
  KernelRunner r;
  TestTensor x(ScalarType::Float32, {2, 8}), w8(ScalarType::Int8, {3, 8}), w4(ScalarType::UInt8, {3, 4});
  TestTensor s(ScalarType::Float32, {3, 2}), s_bad(ScalarType::Float32, {3, 3}), out(ScalarType::Float32, {2, 3});
  TestTensor bias_bad(ScalarType::Float32, {2}), xi(ScalarType::Int32, {2, 8});
  for (int i = 0; i < 6; ++i) s.f()[i] = 0.1f;
  auto run = [&](TestTensor& in, TestTensor& w, TestTensor& scales, int64_t group, int64_t bits, TestTensor* bias) {
    return r.run("ember_quantized::linear_weight_only.default",
                 {r.tensor(in), r.tensor(w), r.tensor(scales), r.i(group), r.i(bits), bias ? r.tensor(*bias) : r.none(),
                  r.tensor(out)});
  };
  EXPECT_EQ(run(x, w8, s, 4, 8, nullptr), Error::Ok) << r.message();
  EXPECT_EQ(run(x, w4, s, 4, 4, nullptr), Error::Ok) << r.message();
  EXPECT_NE(run(x, w8, s, 4, 4, nullptr), Error::Ok);       // int8 data declared 4-bit
  EXPECT_NE(run(x, w4, s, 4, 8, nullptr), Error::Ok);       // packed data declared 8-bit
  EXPECT_NE(run(x, w8, s, 3, 8, nullptr), Error::Ok);       // group does not divide K
  EXPECT_NE(run(x, w8, s, 0, 8, nullptr), Error::Ok);       // group 0
  EXPECT_NE(run(x, w8, s, 4, 2, nullptr), Error::Ok);       // 2-bit
  EXPECT_NE(run(x, w8, s_bad, 4, 8, nullptr), Error::Ok);   // scales not [N, K / group]
  EXPECT_NE(run(x, w8, s, 4, 8, &bias_bad), Error::Ok);     // bias not [N]
  EXPECT_NE(run(xi, w8, s, 4, 8, nullptr), Error::Ok);      // integer input
  TestTensor w_odd(ScalarType::UInt8, {3, 4});
  EXPECT_NE(run(x, w_odd, s, 1, 4, nullptr), Error::Ok);    // odd group with packed values
}

}  // namespace
}  // namespace testing
}  // namespace ember
