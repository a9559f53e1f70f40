// Dispatch fusion (delegates/vulkan/runtime/dispatch_fusion.h) on lavapipe: a decoder block of
// weight-only linears lowers to 4 dispatches instead of 10 (RMSNorms folded into their linears,
// the SwiGLU's gate and up in one dispatch, residual adds in epilogues) and computes what the
// unfused graph and a double-precision reference compute; graphs where a fusion would be wrong
// keep the separate dispatches. Skips without a Vulkan device.
#include <cmath>
#include <cstdlib>
#include <functional>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_fp16.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

// A weight-only quantized [n, k] weight: q values, scales per group, the packed blob bytes.
struct QuantWeight {
  int64_t n, k;
  int bits, group;
  std::vector<int> q;
  Floats scales;
  std::vector<uint8_t> bytes;

  QuantWeight(int64_t n_, int64_t k_, int bits_, int group_, uint32_t seed) : n(n_), k(k_), bits(bits_), group(group_) {
    // Effective weights within about +-0.16 for both widths (an int8 q reaches 127, int4 8), so
    // the block's activations stay near 1 as in a trained model.
    const float top = bits == 8 ? 0.02f / 16 : 0.02f;
    scales = random_floats(static_cast<size_t>(n * (k / group)), seed, top / 10, top);
    q = random_quantized(static_cast<size_t>(n * k), bits, seed + 1);
    bytes = pack_quantized(q, bits);
  }
  int add_to(VulkanBlobBuilder& b, int x) const {
    const int w = b.constant_bytes(bits == 8 ? Sizes{n, k} : Sizes{n, k / 2}, bits == 8 ? VkDType::Int8 : VkDType::UInt8,
                                   bytes.data(), bytes.size());
    return b.linear_weight_only(x, w, b.constant({n, k / group}, scales), -1, bits, group);
  }
  std::vector<double> apply(const std::vector<double>& x, int64_t rows) const {
    std::vector<double> y(static_cast<size_t>(rows * n));
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t o = 0; o < n; ++o) {
        double acc = 0;
        for (int64_t c = 0; c < k; ++c) acc += x[m * k + c] * q[o * k + c] * scales[o * (k / group) + c / group];
        y[m * n + o] = acc;
      }
    return y;
  }
};

std::vector<double> rms(const std::vector<double>& x, int64_t cols, const Floats& g, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += x[r * cols + c] * x[r * cols + c];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv * g[c];
  }
  return y;
}

std::vector<double> add(std::vector<double> a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

Floats to_floats(const std::vector<double>& v) { return Floats(v.begin(), v.end()); }

// The block: h = rms(x); s = wq1(h) + x; side = wq2(h); h2 = rms(s);
// y = wq_down(silu(wq_gate(h2)) * wq_up(h2)) + s. Outputs y and side.
struct Block {
  int64_t m, d = 64, hidden = 96;
  int bits, group;
  QuantWeight w1, w2, gate, up, down;
  Floats g1 = random_floats(64, 11, 0.5f, 1.5f), g2 = random_floats(64, 12, 0.5f, 1.5f);
  const float eps = 1e-5f;

  Block(int64_t rows, int bits_, int group_)
      : m(rows), bits(bits_), group(group_), w1(64, 64, bits_, group_, 20), w2(64, 64, bits_, group_, 22),
        gate(96, 64, bits_, group_, 24), up(96, 64, bits_, group_, 26), down(64, 96, bits_, group_, 28) {}

  std::vector<int> build(VulkanBlobBuilder& b) const {
    const int x = b.input({m, d});
    const int h = b.rms_norm(x, b.constant({d}, g1), eps);
    const int s = b.binary(VkBinary::Add, w1.add_to(b, h), x);
    const int side = w2.add_to(b, h);
    const int h2 = b.rms_norm(s, b.constant({d}, g2), eps);
    const int act = b.binary(VkBinary::SiluMul, gate.add_to(b, h2), up.add_to(b, h2));
    const int y = b.binary(VkBinary::Add, down.add_to(b, act), s);
    b.output(y);
    b.output(side);
    return {y, side};
  }
  std::vector<Floats> reference(const Floats& xf) const {
    std::vector<double> x(xf.begin(), xf.end());
    const std::vector<double> h = rms(x, d, g1, eps);
    const std::vector<double> s = add(w1.apply(h, m), x);
    const std::vector<double> h2 = rms(s, d, g2, eps);
    std::vector<double> g = gate.apply(h2, m), u = up.apply(h2, m);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return {to_floats(add(down.apply(g, m), s)), to_floats(w2.apply(h, m))};
  }
};

// Runs the block with fusion on or off; its dispatch count and outputs.
::testing::AssertionResult run_block(const Block& blk, bool fuse, bool fp16, size_t* dispatches, std::vector<Floats>* outs) {
  setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
  VulkanBlobBuilder b;
  const std::vector<int> ids = blk.build(b);
  b.set_fp16(fp16);
  std::vector<uint8_t> blob = b.build();
  Delegate del;
  Error e = del.init(blob);
  unsetenv("EMBER_VULKAN_FUSE");
  if (e != Error::Ok) return ::testing::AssertionFailure() << "init: " << del.message();
  *dispatches = del.graph()->num_dispatches();
  const Floats x = random_floats(static_cast<size_t>(blk.m * blk.d), 5, -2, 2);
  std::vector<HostTensor> ins{HostTensor::f32({blk.m, blk.d}, x)};
  std::vector<HostTensor> os;
  for (int id : ids) os.push_back(HostTensor::f32(b.sizes(id), Floats(numel(b.sizes(id)), NAN)));
  for (int rep = 0; rep < 2; ++rep) {  // the second run must not see the first's leftovers
    e = del.execute(ins, os);
    if (e != Error::Ok) return ::testing::AssertionFailure() << "execute: " << del.message();
  }
  outs->clear();
  for (HostTensor& o : os) outs->push_back(values(o));
  const std::vector<Floats> want = blk.reference(x);
  const float tol = fp16 ? 1e-2f : 2e-5f;  // fp16 storage rounds every intermediate to 11 bits
  for (size_t i = 0; i < want.size(); ++i) {
    ::testing::AssertionResult r = near((*outs)[i], want[i], tol);
    if (!r) return r << " (output " << i << (fuse ? ", fused" : ", unfused") << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST(VulkanFusionTest, DecoderBlockIsFourDispatchesAndMatchesTheUnfusedGraph) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct Case { int64_t m; int bits, group; };
  for (const Case& c : {Case{1, 4, 32}, Case{3, 8, 16}, Case{5, 4, 8}}) {
    const Block blk(c.m, c.bits, c.group);
    size_t fused = 0, unfused = 0;
    std::vector<Floats> a, b;
    ASSERT_TRUE(run_block(blk, true, false, &fused, &a)) << c.bits << " bits, M " << c.m;
    ASSERT_TRUE(run_block(blk, false, false, &unfused, &b)) << c.bits << " bits, M " << c.m;
    EXPECT_EQ(unfused, 10u);  // 2 RMSNorms, 5 linears, 2 adds, 1 silu_mul
    EXPECT_EQ(fused, 4u);     // w1 (norm, residual), w2 (norm), gate+up (norm, gated), down (residual)
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(near(a[i], b[i], 2e-5f)) << "output " << i;
  }
}

TEST(VulkanFusionTest, Fp16StorageFusedBlock) {
  EMBER_SKIP_WITHOUT_FP16();
  const Block blk(2, 4, 32);
  size_t fused = 0;
  std::vector<Floats> a;
  ASSERT_TRUE(run_block(blk, true, true, &fused, &a));
  EXPECT_EQ(fused, 4u);
}

// A folded RMSNorm over rows longer than linear_wq.comp holds in registers at once (128
// invocations x 8 words: 8192 int4 values): the sum of squares spans the chunks; M = 3 rows,
// each workgroup's own.
TEST(VulkanFusionTest, FoldedNormOverSeveralStagedChunks) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const int64_t m = 3, k = 8200;
  const QuantWeight w(6, k, 4, 8, 60);
  const Floats g = random_floats(static_cast<size_t>(k), 61, 0.5f, 1.5f), x = random_floats(static_cast<size_t>(m * k), 62);
  VulkanBlobBuilder b;
  const int xi = b.input({m, k});
  const int y = w.add_to(b, b.rms_norm(xi, b.constant({k}, g), 1e-5f));
  b.output(y);
  std::vector<uint8_t> blob = b.build();
  Delegate del;
  ASSERT_EQ(del.init(blob), Error::Ok) << del.message();
  EXPECT_EQ(del.graph()->num_dispatches(), 1u);
  std::vector<HostTensor> ins{HostTensor::f32({m, k}, x)};
  std::vector<HostTensor> os{nan_out({m, 6})};
  ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
  EXPECT_TRUE(near(values(os[0]), to_floats(w.apply(rms(std::vector<double>(x.begin(), x.end()), k, g, 1e-5), m)), 2e-5f));
}

// An attention's q, k and v projections (three weight-only linears of one normalised x, with
// different output widths) run as one SPLIT dispatch with the RMSNorm folded in, and compute what
// the unfused graph (4 dispatches) and the double-precision reference compute. Two linears of the
// same x split too; a fourth starts a group of its own. Widths that are no multiple of a
// workgroup's rows check each output's edge.
TEST(VulkanFusionTest, LinearsOfOneInputShareADispatch) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct Case { int64_t m; int bits, group; std::vector<int64_t> widths; size_t fused; };
  for (const Case& c : {Case{1, 4, 32, {64, 16, 16}, 1}, Case{3, 8, 16, {40, 24, 8}, 1}, Case{2, 4, 8, {17, 5}, 1},
                        Case{1, 8, 32, {8, 16, 24, 32}, 2}}) {
    SCOPED_TRACE(::testing::Message() << c.bits << " bits, M " << c.m << ", " << c.widths.size() << " linears");
    const int64_t k = 64;
    std::vector<QuantWeight> ws;
    for (size_t i = 0; i < c.widths.size(); ++i) ws.emplace_back(c.widths[i], k, c.bits, c.group, 70 + 2 * static_cast<uint32_t>(i));
    const Floats g = random_floats(static_cast<size_t>(k), 80, 0.5f, 1.5f), x = random_floats(static_cast<size_t>(c.m * k), 81);
    const std::vector<double> h = rms(std::vector<double>(x.begin(), x.end()), k, g, 1e-5);
    std::vector<Floats> outs[2];
    for (int fuse = 0; fuse < 2; ++fuse) {
      setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
      VulkanBlobBuilder b;
      const int xi = b.input({c.m, k});
      const int hn = b.rms_norm(xi, b.constant({k}, g), 1e-5f);
      std::vector<int> ys;
      for (const QuantWeight& w : ws) ys.push_back(w.add_to(b, hn));
      for (int y : ys) b.output(y);
      std::vector<uint8_t> blob = b.build();
      Delegate del;
      const Error e = del.init(blob);
      unsetenv("EMBER_VULKAN_FUSE");
      ASSERT_EQ(e, Error::Ok) << del.message();
      EXPECT_EQ(del.graph()->num_dispatches(), fuse ? c.fused : 1 + ws.size());
      std::vector<HostTensor> ins{HostTensor::f32({c.m, k}, x)};
      std::vector<HostTensor> os;
      for (const QuantWeight& w : ws) os.push_back(nan_out({c.m, w.n}));
      ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
      for (size_t i = 0; i < ws.size(); ++i) {
        outs[fuse].push_back(values(os[i]));
        EXPECT_TRUE(near(outs[fuse].back(), to_floats(ws[i].apply(h, c.m)), 2e-5f)) << "output " << i << (fuse ? ", fused" : "");
      }
    }
    for (size_t i = 0; i < ws.size(); ++i) EXPECT_TRUE(near(outs[0][i], outs[1][i], 2e-5f)) << "output " << i;
  }
}

// Graphs where a fusion would change the result keep their dispatches.
TEST(VulkanFusionTest, NoFusionWhereItWouldBeWrong) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const QuantWeight wa(8, 32, 4, 32, 40), wb(8, 32, 4, 32, 42);
  const Floats g = random_floats(32, 44, 0.5f, 1.5f);
  const Floats xv = random_floats(2 * 32, 45), zv = random_floats(2 * 8, 46), bv = random_floats(8, 47);
  // Builds a graph over x [2, 32] and z [2, 8] with fusion on and off: the same dispatches
  // (nothing fused) and the reference's values.
  auto check = [&](const char* what, const std::function<int(VulkanBlobBuilder&, int, int)>& build,
                   const std::vector<double>& want) {
    size_t counts[2] = {0, 0};
    for (int fuse = 0; fuse < 2; ++fuse) {
      setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
      VulkanBlobBuilder b;
      const int x = b.input({2, 32}), z = b.input({2, 8});
      const int y = build(b, x, z);
      b.output(y);
      std::vector<uint8_t> blob = b.build();
      Delegate del;
      const Error e = del.init(blob);
      unsetenv("EMBER_VULKAN_FUSE");
      ASSERT_EQ(e, Error::Ok) << what << ": " << del.message();
      counts[fuse] = del.graph()->num_dispatches();
      std::vector<HostTensor> ins{HostTensor::f32({2, 32}, xv), HostTensor::f32({2, 8}, zv)};
      std::vector<HostTensor> os{HostTensor::f32(b.sizes(y), Floats(numel(b.sizes(y)), NAN))};
      ASSERT_EQ(del.execute(ins, os), Error::Ok) << what << ": " << del.message();
      EXPECT_TRUE(near(values(os[0]), to_floats(want), 2e-5f)) << what << (fuse ? ", fused" : "");
    }
    EXPECT_EQ(counts[0], counts[1]) << what << ": a fusion happened";
  };
  const std::vector<double> x(xv.begin(), xv.end()), z(zv.begin(), zv.end());
  // The RMSNorm's output is also read by an add: it stays (3 dispatches: norm, linear, add).
  {
    const std::vector<double> h = rms(x, 32, g, 1e-5);
    std::vector<double> want = wa.apply(h, 2);
    for (int64_t m = 0; m < 2; ++m)
      for (int64_t o = 0; o < 8; ++o) want[m * 8 + o] += h[m * 32 + o] + h[m * 32 + o];
    check("norm read by a non-linear",
          [&](VulkanBlobBuilder& b, int xi, int) {
            const int h2 = b.rms_norm(xi, b.constant({32}, g), 1e-5f);
            const int lin2 = wa.add_to(b, h2);
            const int sl = b.slice(h2, 1, 0, 8);
            return b.binary(VkBinary::Add, lin2, b.binary(VkBinary::Add, sl, sl));
          },
          want);
  }
  // The residual is computed after the linear (z * 2 below): the add stays.
  {
    std::vector<double> want = wa.apply(x, 2);
    for (size_t i = 0; i < want.size(); ++i) want[i] += z[i] * 2;
    check("residual produced after the linear",
          [&](VulkanBlobBuilder& b, int xi, int zi) {
            const int l = wa.add_to(b, xi);
            return b.binary(VkBinary::Add, l, b.binary(VkBinary::Add, zi, zi));
          },
          want);
  }
  // A broadcast residual ([8] onto [2, 8]): the add stays.
  {
    std::vector<double> want = wa.apply(x, 2);
    for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i % 8];
    check("broadcast residual",
          [&](VulkanBlobBuilder& b, int xi, int) { return b.binary(VkBinary::Add, wa.add_to(b, xi), b.constant({8}, bv)); },
          want);
  }
  // Two linears of x, one with a bias (SPLIT takes none): two dispatches and the product.
  {
    std::vector<double> want = wa.apply(x, 2), other = wb.apply(x, 2);
    for (size_t i = 0; i < want.size(); ++i) want[i] = (want[i] + bv[i % 8]) * other[i];
    check("linears of one input, one with a bias",
          [&](VulkanBlobBuilder& b, int xi, int) {
            const int wt = b.constant_bytes({8, 16}, VkDType::UInt8, wa.bytes.data(), wa.bytes.size());
            const int biased = b.linear_weight_only(xi, wt, b.constant({8, 1}, wa.scales), b.constant({8}, bv), 4, 32);
            return b.binary(VkBinary::Mul, biased, wb.add_to(b, xi));
          },
          want);
  }
  // silu_mul of linears of different inputs (x and a slice of x's square): not one dispatch.
  {
    std::vector<double> x2(x.size());
    for (size_t i = 0; i < x.size(); ++i) x2[i] = x[i] * x[i];
    std::vector<double> ga = wa.apply(x, 2), ub = wb.apply(x2, 2), want(ga.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = ga[i] / (1.0 + std::exp(-ga[i])) * ub[i];
    check("gate and up of different inputs",
          [&](VulkanBlobBuilder& b, int xi, int) {
            return b.binary(VkBinary::SiluMul, wa.add_to(b, xi), wb.add_to(b, b.binary(VkBinary::Mul, xi, xi)));
          },
          want);
  }
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
