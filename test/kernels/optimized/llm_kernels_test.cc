// Differential tests of the fused decoder kernels (kernels/optimized/llm_kernels.cc) on every
// instruction-set table this CPU can run (forced with set_llm_isa): random inputs, odd sizes
// below/at/above the vector widths, compared with double-precision references and, for the
// attention, with the portable scaled_dot_product_attention on the masked full cache.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/optimized/llm_simd.h"
#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace {

using optimized::LlmIsa;
using testing::KernelRunner;
using testing::TestTensor;

std::vector<LlmIsa> available_isas() {
  std::vector<LlmIsa> out;
  for (LlmIsa isa : {LlmIsa::Scalar, LlmIsa::Avx2, LlmIsa::Avx512, LlmIsa::Neon}) {
    if (optimized::llm_math_for(isa) != nullptr) out.push_back(isa);
  }
  return out;
}

std::string isa_name(const ::testing::TestParamInfo<LlmIsa>& info) {
  return optimized::llm_math_for(info.param)->name;
}

// max |got - want| / (1 + |want|)
double max_error(const float* got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e = std::max(e, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  return e;
}

class LlmKernels : public ::testing::TestWithParam<LlmIsa> {
 protected:
  void SetUp() override { ASSERT_TRUE(optimized::set_llm_isa(GetParam())); }
  void TearDown() override { optimized::set_llm_isa(optimized::best_llm_isa()); }
  std::mt19937 rng_{1234};
};

TEST_P(LlmKernels, RmsNormMatchesDoubleReference) {
  for (int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 128, 130}) {
    TestTensor x(ScalarType::Float32, {2, 5, n}), w(ScalarType::Float32, {n}), out(ScalarType::Float32, {2, 5, n});
    x.fill_random(rng_, -3.0f, 3.0f);
    w.fill_random(rng_, 0.5f, 1.5f);
    const double eps = 1e-6;
    KernelRunner r;
    ASSERT_EQ(r.run("ember_llm::rms_norm.default", {r.tensor(x), r.tensor(w), r.d(eps), r.tensor(out)}), Error::Ok)
        << r.message();
    std::vector<double> want(static_cast<size_t>(x.numel()));
    for (int64_t row = 0; row < 10; ++row) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x.f()[row * n + i]) * x.f()[row * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (int64_t i = 0; i < n; ++i) want[row * n + i] = x.f()[row * n + i] * inv * w.f()[i];
    }
    EXPECT_LT(max_error(out.f(), want), 2e-6) << "n=" << n;
    EXPECT_TRUE(out.guard_ok());
  }
}

TEST_P(LlmKernels, RopeMatchesRotateHalfReference) {
  struct Case { std::vector<int64_t> x, cs; };
  const std::vector<Case> cases = {
      {{1, 4, 8, 32}, {8, 32}},       {{2, 3, 5, 2}, {5, 2}},       {{1, 2, 7, 18}, {7, 18}},
      {{1, 1, 3, 34}, {1, 1, 3, 34}}, {{2, 2, 6, 48}, {1, 48}},     {{1, 3, 1, 70}, {1, 70}},
      {{4, 9, 16}, {9, 16}},          {{1, 2, 11, 128}, {11, 128}},
  };
  for (const Case& c : cases) {
    TestTensor x(ScalarType::Float32, c.x), cos(ScalarType::Float32, c.cs), sin(ScalarType::Float32, c.cs),
        out(ScalarType::Float32, c.x);
    x.fill_random(rng_);
    cos.fill_random(rng_);
    sin.fill_random(rng_);
    KernelRunner r;
    ASSERT_EQ(r.run("ember_llm::rope.default", {r.tensor(x), r.tensor(cos), r.tensor(sin), r.tensor(out)}), Error::Ok)
        << r.message();
    const int64_t D = c.x.back(), T = c.x[c.x.size() - 2], half = D / 2;
    const int64_t tc = c.cs[c.cs.size() - 2];
    std::vector<double> want(static_cast<size_t>(x.numel()));
    for (int64_t row = 0; row < x.numel() / D; ++row) {
      const float* xr = x.f() + row * D;
      const int64_t cr = (tc == 1 ? 0 : row % T) * D;
      for (int64_t i = 0; i < D; ++i) {
        const double rot = i < half ? -double(xr[i + half]) : double(xr[i - half]);
        want[row * D + i] = double(xr[i]) * cos.f()[cr + i] + rot * sin.f()[cr + i];
      }
    }
    EXPECT_LT(max_error(out.f(), want), 1e-6) << "D=" << D;
    EXPECT_TRUE(out.guard_ok());
  }
}

TEST_P(LlmKernels, SiluMulMatchesDoubleReference) {
  for (int64_t n : {1, 5, 8, 9, 16, 23, 1000, 70001}) {
    TestTensor a(ScalarType::Float32, {n}), b(ScalarType::Float32, {n}), out(ScalarType::Float32, {n});
    a.fill_random(rng_, -12.0f, 12.0f);
    b.fill_random(rng_, -2.0f, 2.0f);
    if (n > 4) {  // saturated ends: exp clamps, no inf/NaN
      a.f()[0] = -100.0f;
      a.f()[1] = 100.0f;
      a.f()[2] = -87.5f;
      a.f()[3] = 0.0f;
    }
    KernelRunner r;
    ASSERT_EQ(r.run("ember_llm::silu_mul.default", {r.tensor(a), r.tensor(b), r.tensor(out)}), Error::Ok)
        << r.message();
    std::vector<double> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[i] = a.f()[i] / (1.0 + std::exp(-double(a.f()[i]))) * b.f()[i];
    EXPECT_LT(max_error(out.f(), want), 1e-6) << "n=" << n;
    EXPECT_TRUE(out.guard_ok());
  }
}

// Attention with a KV cache: caches hold earlier rows, the call writes rows at `pos` and
// attends to [0, pos[t]] per query row.
struct AttentionCase {
  int64_t B, H, Hkv, T, S, D;
  std::vector<int64_t> pos;
};

// Double reference of the cache update + attention; updates `kc`/`vc` like the kernel.
std::vector<double> reference_attention(const AttentionCase& c, const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, std::vector<float>& kc, std::vector<float>& vc,
                                        double scale) {
  const int64_t D = c.D;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t g = 0; g < c.Hkv; ++g)
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t i = 0; i < D; ++i) {
          kc[((b * c.Hkv + g) * c.S + c.pos[t]) * D + i] = k[((b * c.Hkv + g) * c.T + t) * D + i];
          vc[((b * c.Hkv + g) * c.S + c.pos[t]) * D + i] = v[((b * c.Hkv + g) * c.T + t) * D + i];
        }
  std::vector<double> out(static_cast<size_t>(c.B * c.H * c.T * D), 0.0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t t = 0; t < c.T; ++t) {
        const int64_t g = h / (c.H / c.Hkv), L = c.pos[t] + 1;
        const float* qr = &q[((b * c.H + h) * c.T + t) * D];
        std::vector<double> s(static_cast<size_t>(L));
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < L; ++j) {
          double d = 0;
          for (int64_t i = 0; i < D; ++i) d += double(qr[i]) * kc[((b * c.Hkv + g) * c.S + j) * D + i];
          s[j] = d * scale;
          m = std::max(m, s[j]);
        }
        for (int64_t j = 0; j < L; ++j) sum += (s[j] = std::exp(s[j] - m));
        for (int64_t j = 0; j < L; ++j)
          for (int64_t i = 0; i < D; ++i)
            out[((b * c.H + h) * c.T + t) * D + i] += s[j] / sum * vc[((b * c.Hkv + g) * c.S + j) * D + i];
      }
  return out;
}

void run_attention_case(const AttentionCase& c, std::mt19937& rng, ThreadPool* pool, bool with_scale) {
  SCOPED_TRACE("B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) + " Hkv=" + std::to_string(c.Hkv) +
               " T=" + std::to_string(c.T) + " S=" + std::to_string(c.S) + " D=" + std::to_string(c.D));
  TestTensor q(ScalarType::Float32, {c.B, c.H, c.T, c.D}), k(ScalarType::Float32, {c.B, c.Hkv, c.T, c.D}),
      v(ScalarType::Float32, {c.B, c.Hkv, c.T, c.D}), kc(ScalarType::Float32, {c.B, c.Hkv, c.S, c.D}),
      vc(ScalarType::Float32, {c.B, c.Hkv, c.S, c.D}), pos(ScalarType::Int64, {c.T}),
      out(ScalarType::Float32, {c.B, c.H, c.T, c.D});
  for (TestTensor* t : {&q, &k, &v, &kc, &vc}) t->fill_random(rng, -2.0f, 2.0f);
  for (int64_t t = 0; t < c.T; ++t) pos.data<int64_t>()[t] = c.pos[t];
  std::vector<float> kc_ref = kc.values(), vc_ref = vc.values();
  const double scale = with_scale ? 0.37 : 1.0 / std::sqrt(double(c.D));
  std::vector<double> want = reference_attention(c, q.values(), k.values(), v.values(), kc_ref, vc_ref, scale);
  KernelRunner r(size_t{64} << 20, pool);
  ASSERT_EQ(r.run("ember_llm::sdpa_with_kv_cache.default",
                  {r.tensor(q), r.tensor(k), r.tensor(v), r.tensor(kc), r.tensor(vc), r.tensor(pos),
                   with_scale ? r.d(scale) : r.none(), r.tensor(out), r.tensor(kc), r.tensor(vc)}),
            Error::Ok)
      << r.message();
  EXPECT_LT(max_error(out.f(), want), 2e-5);
  EXPECT_EQ(kc.values(), kc_ref);
  EXPECT_EQ(vc.values(), vc_ref);
  for (TestTensor* t : {&out, &kc, &vc}) EXPECT_TRUE(t->guard_ok());

  // The portable path the exporter replaces: repeat_interleave'd caches and SDPA with the mask
  // j <= pos[t] over the whole cache (bool, as causal[input_pos] is).
  const int64_t rep = c.H / c.Hkv;
  TestTensor kr(ScalarType::Float32, {c.B, c.H, c.S, c.D}), vr(ScalarType::Float32, {c.B, c.H, c.S, c.D}),
      mask(ScalarType::Bool, {c.T, c.S}), ref(ScalarType::Float32, {c.B, c.H, c.T, c.D});
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.S * c.D; ++i) {
        kr.f()[(b * c.H + h) * c.S * c.D + i] = kc.f()[(b * c.Hkv + h / rep) * c.S * c.D + i];
        vr.f()[(b * c.H + h) * c.S * c.D + i] = vc.f()[(b * c.Hkv + h / rep) * c.S * c.D + i];
      }
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t j = 0; j < c.S; ++j) mask.data<uint8_t>()[t * c.S + j] = j <= c.pos[t];
  KernelRunner p;
  ASSERT_EQ(p.run("aten::scaled_dot_product_attention.default",
                  {p.tensor(q), p.tensor(kr), p.tensor(vr), p.tensor(mask), p.d(0.0), p.b(false),
                   with_scale ? p.d(scale) : p.none(), p.b(false), p.tensor(ref)}),
            Error::Ok)
      << p.message();
  testing::expect_close(out.values(), ref.values(), 2e-5f, "fused vs portable SDPA");
}

TEST_P(LlmKernels, AttentionWithCacheMatchesReferences) {
  const std::vector<AttentionCase> cases = {
      {1, 4, 2, 8, 64, 32, {0, 1, 2, 3, 4, 5, 6, 7}},  // tiny_llama_kv's prefill
      {1, 4, 2, 1, 64, 32, {8}},                       // and its decode step
      {1, 4, 4, 3, 16, 16, {5, 6, 7}},                 // continued chunk, no grouping
      {2, 6, 2, 11, 37, 33, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
      {1, 8, 1, 1, 37, 5, {36}},                       // multi-query, last position
      {1, 3, 3, 4, 20, 7, {9, 2, 15, 2}},              // unordered, repeated positions
      {1, 2, 1, 17, 40, 64, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
  };
  testing::ReverseOrderPool reverse(4);
  for (const AttentionCase& c : cases) {
    run_attention_case(c, rng_, nullptr, false);
    run_attention_case(c, rng_, &reverse, true);
  }
}

TEST_P(LlmKernels, AttentionOnARealThreadPool) {
  PthreadpoolThreadPool pool(3);
  run_attention_case({2, 8, 2, 19, 48, 24, {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38}},
                     rng_, &pool, false);
}

INSTANTIATE_TEST_SUITE_P(Isa, LlmKernels, ::testing::ValuesIn(available_isas()), isa_name);

// State carries over: prefill then single-token steps equal one reference over all rows.
TEST(LlmKernelState, PrefillThenDecodeStepsReadEarlierRows) {
  const int64_t H = 4, Hkv = 2, S = 16, D = 8;
  std::mt19937 rng(7);
  TestTensor kc(ScalarType::Float32, {1, Hkv, S, D}), vc(ScalarType::Float32, {1, Hkv, S, D});
  kc.fill(0.0f);
  vc.fill(0.0f);
  std::vector<float> kc_ref = kc.values(), vc_ref = vc.values();
  int64_t next = 0;
  for (int64_t T : {5, 1, 1, 3}) {
    AttentionCase c{1, H, Hkv, T, S, D, {}};
    for (int64_t t = 0; t < T; ++t) c.pos.push_back(next + t);
    next += T;
    TestTensor q(ScalarType::Float32, {1, H, T, D}), k(ScalarType::Float32, {1, Hkv, T, D}),
        v(ScalarType::Float32, {1, Hkv, T, D}), pos(ScalarType::Int64, {T}), out(ScalarType::Float32, {1, H, T, D});
    for (TestTensor* t : {&q, &k, &v}) t->fill_random(rng);
    for (int64_t t = 0; t < T; ++t) pos.data<int64_t>()[t] = c.pos[t];
    std::vector<double> want = reference_attention(c, q.values(), k.values(), v.values(), kc_ref, vc_ref,
                                                   1.0 / std::sqrt(double(D)));
    KernelRunner r;
    ASSERT_EQ(r.run("ember_llm::sdpa_with_kv_cache.default",
                    {r.tensor(q), r.tensor(k), r.tensor(v), r.tensor(kc), r.tensor(vc), r.tensor(pos), r.none(),
                     r.tensor(out), r.tensor(kc), r.tensor(vc)}),
              Error::Ok);
    EXPECT_LT(max_error(out.f(), want), 2e-5) << "T=" << T;
  }
}

// int32 positions (what some exports use) give the int64 result.
TEST(LlmKernelState, Int32PositionsMatchInt64) {
  std::mt19937 rng(3);
  TestTensor q(ScalarType::Float32, {1, 4, 3, 16}), k(ScalarType::Float32, {1, 2, 3, 16}),
      v(ScalarType::Float32, {1, 2, 3, 16}), p64(ScalarType::Int64, {3}), p32(ScalarType::Int32, {3}),
      out64(ScalarType::Float32, {1, 4, 3, 16}), out32(ScalarType::Float32, {1, 4, 3, 16});
  TestTensor kc(ScalarType::Float32, {1, 2, 10, 16}), vc(ScalarType::Float32, {1, 2, 10, 16});
  for (TestTensor* t : {&q, &k, &v, &kc, &vc}) t->fill_random(rng);
  for (int64_t t = 0; t < 3; ++t) {
    p64.data<int64_t>()[t] = 4 + t;
    p32.data<int32_t>()[t] = static_cast<int32_t>(4 + t);
  }
  for (auto [pos, out] : {std::make_pair(&p64, &out64), std::make_pair(&p32, &out32)}) {
    KernelRunner r;
    ASSERT_EQ(r.run("ember_llm::sdpa_with_kv_cache.default",
                    {r.tensor(q), r.tensor(k), r.tensor(v), r.tensor(kc), r.tensor(vc), r.tensor(*pos), r.none(),
                     r.tensor(*out), r.tensor(kc), r.tensor(vc)}),
              Error::Ok)
        << r.message();
  }
  EXPECT_EQ(out32.values(), out64.values());
}

TEST(LlmKernelErrors, RejectsBadArguments) {
  TestTensor q(ScalarType::Float32, {1, 4, 2, 8}), k(ScalarType::Float32, {1, 2, 2, 8}),
      v(ScalarType::Float32, {1, 2, 2, 8}), kc(ScalarType::Float32, {1, 2, 16, 8}),
      vc(ScalarType::Float32, {1, 2, 16, 8}), pos(ScalarType::Int64, {2}), out(ScalarType::Float32, {1, 4, 2, 8}),
      other(ScalarType::Float32, {1, 2, 16, 8}), bad_heads(ScalarType::Float32, {1, 3, 2, 8}),
      int_q(ScalarType::Int32, {1, 4, 2, 8});
  kc.fill(1.0f);
  const std::vector<float> before = kc.values();
  auto call = [&](TestTensor& qq, TestTensor& kk, std::vector<int64_t> p, TestTensor& kc_out) {
    for (size_t i = 0; i < p.size(); ++i) pos.data<int64_t>()[i] = p[i];
    KernelRunner r;
    return r.run("ember_llm::sdpa_with_kv_cache.default",
                 {r.tensor(qq), r.tensor(kk), r.tensor(v), r.tensor(kc), r.tensor(vc), r.tensor(pos), r.none(),
                  r.tensor(out), r.tensor(kc_out), r.tensor(vc)});
  };
  EXPECT_EQ(call(q, k, {0, 1}, kc), Error::Ok);
  kc.fill(1.0f);
  // A position outside the cache is an error, and nothing is written.
  EXPECT_EQ(call(q, k, {15, 16}, kc), Error::OutOfBounds);
  EXPECT_EQ(call(q, k, {-1, 0}, kc), Error::OutOfBounds);
  EXPECT_EQ(kc.values(), before);
  EXPECT_EQ(call(q, bad_heads, {0, 1}, kc), Error::InvalidArgument);  // key heads != value heads
  EXPECT_EQ(call(int_q, k, {0, 1}, kc), Error::InvalidArgument);      // dtype
  EXPECT_EQ(call(q, k, {0, 1}, other), Error::InvalidArgument);       // cache output not in place
  TestTensor q3(ScalarType::Float32, {1, 3, 2, 8});
  EXPECT_EQ(call(q3, k, {0, 1}, kc), Error::InvalidArgument);         // 3 query heads over 2 kv heads
  KernelRunner r;
  TestTensor x(ScalarType::Float32, {2, 8}), w(ScalarType::Float32, {7}), y(ScalarType::Float32, {2, 8});
  EXPECT_EQ(r.run("ember_llm::rms_norm.default", {r.tensor(x), r.tensor(w), r.d(1e-6), r.tensor(y)}),
            Error::InvalidArgument);
  TestTensor odd(ScalarType::Float32, {1, 2, 3, 7}), cs(ScalarType::Float32, {3, 7}), o2(ScalarType::Float32, {1, 2, 3, 7});
  EXPECT_EQ(r.run("ember_llm::rope.default", {r.tensor(odd), r.tensor(cs), r.tensor(cs), r.tensor(o2)}),
            Error::InvalidArgument);
  TestTensor a(ScalarType::Float32, {4}), b(ScalarType::Float32, {5}), c(ScalarType::Float32, {4});
  EXPECT_EQ(r.run("ember_llm::silu_mul.default", {r.tensor(a), r.tensor(b), r.tensor(c)}), Error::InvalidArgument);
}

TEST(LlmIsaSelection, BestIsUsableAndUnavailableIsRefused) {
  EXPECT_NE(optimized::llm_math_for(optimized::best_llm_isa()), nullptr);
  EXPECT_NE(optimized::llm_math_for(LlmIsa::Scalar), nullptr);
#if defined(__x86_64__)
  EXPECT_FALSE(optimized::set_llm_isa(LlmIsa::Neon));
#endif
  EXPECT_EQ(&optimized::llm_math(), optimized::llm_math_for(optimized::llm_math().isa));
}

}  // namespace
}  // namespace ember
