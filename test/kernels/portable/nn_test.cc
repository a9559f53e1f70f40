// softmax / log_softmax, scaled_dot_product_attention, embedding and LSTM against
// reference loops.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

TEST(Softmax, AllDimsAndOverloads) {
  std::mt19937 rng(41);
  ReverseOrderPool pool(3);
  const std::vector<int64_t> shape = {3, 7, 5};
  for (int64_t dim = -3; dim < 3; ++dim) {
    KernelRunner r(1 << 20, &pool);
    TestTensor x(F, shape), out(F, shape), out2(F, shape), lout(F, shape), lout2(F, shape);
    x.fill_random(rng, -5, 5);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    int64_t strides[3] = {35, 5, 1};
    std::vector<float> want(x.numel()), want_log(x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t base = i - ((i / strides[d]) % shape[d]) * strides[d];
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < shape[d]; ++j) m = std::max(m, double(x.f()[base + j * strides[d]]));
      for (int64_t j = 0; j < shape[d]; ++j) s += std::exp(x.f()[base + j * strides[d]] - m);
      want[i] = static_cast<float>(std::exp(x.f()[i] - m) / s);
      want_log[i] = static_cast<float>(x.f()[i] - m - std::log(s));
    }
    ASSERT_EQ(r.run("aten::_softmax.default", {r.tensor(x), r.i(dim), r.b(false), r.tensor(out)}), Error::Ok)
        << r.message();
    expect_close(out.values(), want, 1e-5f, "_softmax");
    ASSERT_EQ(r.run("aten::softmax.int", {r.tensor(x), r.i(dim), r.none(), r.tensor(out2)}), Error::Ok);
    expect_close(out2.values(), want, 1e-5f, "softmax.int");
    ASSERT_EQ(r.run("aten::_log_softmax.default", {r.tensor(x), r.i(dim), r.b(false), r.tensor(lout)}), Error::Ok);
    expect_close(lout.values(), want_log, 1e-5f, "_log_softmax");
    ASSERT_EQ(r.run("aten::log_softmax.int", {r.tensor(x), r.i(dim), r.none(), r.tensor(lout2)}), Error::Ok);
    expect_close(lout2.values(), want_log, 1e-5f, "log_softmax.int");
  }
  KernelRunner r;
  TestTensor x(F, {2, 2}), out(F, {2, 2});
  EXPECT_EQ(r.run("aten::_softmax.default", {r.tensor(x), r.i(2), r.b(false), r.tensor(out)}), Error::InvalidArgument);
}

struct Sdpa {
  int64_t b, hq, hk, l, s, e, ev;
  int mask;  // 0 none, 1 bool [L, S], 2 float [B, 1, L, S]
  bool causal;
  double scale;  // 0: default
};

TEST(Attention, MatchesReference) {
  std::mt19937 rng(42);
  ReverseOrderPool pool(2);
  const Sdpa cases[] = {
      {1, 1, 1, 1, 1, 1, 1, 0, false, 0},   {2, 3, 3, 7, 9, 5, 4, 0, false, 0},
      {1, 4, 4, 17, 17, 8, 8, 0, true, 0},   {2, 2, 2, 5, 11, 3, 6, 1, false, 0.5},
      {1, 3, 3, 70, 70, 16, 16, 2, false, 0}, {1, 8, 2, 9, 9, 4, 4, 0, true, 0},  // GQA
      {1, 4, 1, 3, 6, 4, 4, 1, true, 0},      // causal with L < S, shared kv head
  };
  for (const Sdpa& c : cases) {
    KernelRunner r(8 << 20, &pool);
    TestTensor q(F, {c.b, c.hq, c.l, c.e}), k(F, {c.b, c.hk, c.s, c.e}), v(F, {c.b, c.hk, c.s, c.ev}),
        out(F, {c.b, c.hq, c.l, c.ev});
    TestTensor bmask(ScalarType::Bool, {c.l, c.s}), fmask(F, {c.b, 1, c.l, c.s});
    q.fill_random(rng);
    k.fill_random(rng);
    v.fill_random(rng);
    fmask.fill_random(rng, -2, 2);
    std::bernoulli_distribution coin(0.7);
    for (int64_t i = 0; i < bmask.numel(); ++i) bmask.data<bool>()[i] = coin(rng);
    if (c.mask == 1) bmask.data<bool>()[0 * c.s + 0] = false;  // row 0 may become fully masked
    const double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(double(c.e));
    std::vector<float> want;
    for (int64_t b = 0; b < c.b; ++b)
      for (int64_t h = 0; h < c.hq; ++h) {
        const int64_t kh = h / (c.hq / c.hk);
        for (int64_t i = 0; i < c.l; ++i) {
          std::vector<double> sc(c.s);
          double m = -INFINITY;
          for (int64_t j = 0; j < c.s; ++j) {
            double s = 0;
            for (int64_t e = 0; e < c.e; ++e)
              s += double(q.f()[((b * c.hq + h) * c.l + i) * c.e + e]) * k.f()[((b * c.hk + kh) * c.s + j) * c.e + e];
            s *= scale;
            if (c.mask == 1 && !bmask.data<bool>()[i * c.s + j]) s = -INFINITY;
            if (c.mask == 2) s += fmask.f()[(b * c.l + i) * c.s + j];
            if (c.causal && j > i) s = -INFINITY;
            sc[j] = s;
            m = std::max(m, s);
          }
          double total = 0;
          for (int64_t j = 0; j < c.s; ++j) {
            sc[j] = m == -INFINITY ? 0.0 : std::exp(sc[j] - m);
            total += sc[j];
          }
          for (int64_t e = 0; e < c.ev; ++e) {
            double o = 0;
            for (int64_t j = 0; j < c.s; ++j) o += sc[j] * v.f()[((b * c.hk + kh) * c.s + j) * c.ev + e];
            want.push_back(total > 0 ? static_cast<float>(o / total) : 0.0f);
          }
        }
      }
    EValue* mask = c.mask == 0 ? r.none() : c.mask == 1 ? r.tensor(bmask) : r.tensor(fmask);
    ASSERT_EQ(r.run("aten::scaled_dot_product_attention.default",
                    {r.tensor(q), r.tensor(k), r.tensor(v), mask, r.d(0.0), r.b(c.causal),
                     c.scale != 0 ? r.d(c.scale) : r.none(), r.b(c.hq != c.hk), r.tensor(out)}),
              Error::Ok)
        << r.message();
    expect_close(out.values(), want, 1e-4f, "sdpa");
    EXPECT_TRUE(out.guard_ok());
  }
}

TEST(Attention, Errors) {
  KernelRunner r;
  TestTensor q(F, {1, 4, 3, 8}), k(F, {1, 2, 5, 8}), v(F, {1, 2, 5, 8}), out(F, {1, 4, 3, 8});
  // Different head counts need enable_gqa.
  EXPECT_EQ(r.run("aten::scaled_dot_product_attention.default",
                  {r.tensor(q), r.tensor(k), r.tensor(v), r.none(), r.d(0.0), r.b(false), r.none(), r.b(false),
                   r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::scaled_dot_product_attention.default",
                  {r.tensor(q), r.tensor(k), r.tensor(v), r.none(), r.d(0.1), r.b(false), r.none(), r.b(true),
                   r.tensor(out)}),
            Error::NotSupported);
  KernelRunner no_temp;
  no_temp.set_use_temp(false);
  EXPECT_EQ(no_temp.run("aten::scaled_dot_product_attention.default",
                        {no_temp.tensor(q), no_temp.tensor(k), no_temp.tensor(v), no_temp.none(), no_temp.d(0.0),
                         no_temp.b(false), no_temp.none(), no_temp.b(true), no_temp.tensor(out)}),
            Error::OutOfMemory);
}

TEST(Embedding, GathersRowsAndChecksRange) {
  std::mt19937 rng(43);
  KernelRunner r;
  TestTensor w(F, {10, 7}), idx(ScalarType::Int64, {2, 3}), out(F, {2, 3, 7});
  w.fill_random(rng);
  const int64_t ids[] = {0, 9, 3, 3, 5, 1};
  for (int i = 0; i < 6; ++i) idx.data<int64_t>()[i] = ids[i];
  ASSERT_EQ(r.run("aten::embedding.default", {r.tensor(w), r.tensor(idx), r.i(-1), r.b(false), r.b(false), r.tensor(out)}),
            Error::Ok)
      << r.message();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j) EXPECT_EQ(out.f()[i * 7 + j], w.f()[ids[i] * 7 + j]);
  TestTensor idx32(ScalarType::Int32, {4}), out32(F, {4, 7});
  const int32_t ids32[] = {2, 2, 8, 0};
  for (int i = 0; i < 4; ++i) idx32.data<int32_t>()[i] = ids32[i];
  ASSERT_EQ(r.run("aten::embedding.default", {r.tensor(w), r.tensor(idx32), r.i(-1), r.b(false), r.b(false), r.tensor(out32)}),
            Error::Ok);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out32.f()[i * 7 + 3], w.f()[ids32[i] * 7 + 3]);
  idx.data<int64_t>()[4] = 10;
  EXPECT_EQ(r.run("aten::embedding.default", {r.tensor(w), r.tensor(idx), r.i(-1), r.b(false), r.b(false), r.tensor(out)}),
            Error::OutOfBounds);
  idx.data<int64_t>()[4] = -1;
  EXPECT_EQ(r.run("aten::embedding.default", {r.tensor(w), r.tensor(idx), r.i(-1), r.b(false), r.b(false), r.tensor(out)}),
            Error::OutOfBounds);
}

// Reference LSTM on [T, B, X] / [B, T, X] sequences, one layer and direction at a time.
struct RefLstm {
  int64_t T, B, I, H, layers, dirs;
  bool batch_first;
  std::vector<std::vector<float>> params;  // w_ih, w_hh, b_ih, b_hh per (layer, dir)
  int64_t row(int64_t t, int64_t b) const { return batch_first ? b * T + t : t * B + b; }

  void run(const std::vector<float>& x, const std::vector<float>& h0, const std::vector<float>& c0,
           std::vector<float>* out, std::vector<float>* hn, std::vector<float>* cn) const {
    std::vector<float> in = x;
    int64_t in_f = I;
    hn->assign(h0.size(), 0);
    cn->assign(c0.size(), 0);
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<float> o(static_cast<size_t>(T * B * dirs * H));
      for (int64_t d = 0; d < dirs; ++d) {
        const auto& wih = params[(l * dirs + d) * 4 + 0];
        const auto& whh = params[(l * dirs + d) * 4 + 1];
        const auto& bih = params[(l * dirs + d) * 4 + 2];
        const auto& bhh = params[(l * dirs + d) * 4 + 3];
        for (int64_t b = 0; b < B; ++b) {
          std::vector<double> h(H), c(H);
          for (int64_t j = 0; j < H; ++j) {
            h[j] = h0[((l * dirs + d) * B + b) * H + j];
            c[j] = c0[((l * dirs + d) * B + b) * H + j];
          }
          for (int64_t s = 0; s < T; ++s) {
            const int64_t t = d == 0 ? s : T - 1 - s;
            std::vector<double> g(4 * H);
            for (int64_t j = 0; j < 4 * H; ++j) {
              double acc = bih[j] + bhh[j];
              for (int64_t i = 0; i < in_f; ++i) acc += double(wih[j * in_f + i]) * in[row(t, b) * in_f + i];
              for (int64_t i = 0; i < H; ++i) acc += double(whh[j * H + i]) * h[i];
              g[j] = acc;
            }
            auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
            for (int64_t j = 0; j < H; ++j) {
              c[j] = sig(g[H + j]) * c[j] + sig(g[j]) * std::tanh(g[2 * H + j]);
              h[j] = sig(g[3 * H + j]) * std::tanh(c[j]);
              o[row(t, b) * dirs * H + d * H + j] = static_cast<float>(h[j]);
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            (*hn)[((l * dirs + d) * B + b) * H + j] = static_cast<float>(h[j]);
            (*cn)[((l * dirs + d) * B + b) * H + j] = static_cast<float>(c[j]);
          }
        }
      }
      in = o;
      in_f = dirs * H;
    }
    *out = in;
  }
};

TEST(Lstm, MatchesReference) {
  std::mt19937 rng(44);
  ReverseOrderPool pool(2);
  struct Case {
    int64_t T, B, I, H, layers;
    bool bidirectional, batch_first;
  };
  const Case cases[] = {{1, 1, 1, 1, 1, false, false}, {7, 3, 5, 4, 1, false, false}, {49, 1, 40, 64, 2, false, true},
                        {5, 2, 3, 6, 3, true, true},   {9, 2, 4, 3, 2, true, false}};
  for (const Case& cs : cases) {
    KernelRunner r(8 << 20, &pool);
    const int64_t dirs = cs.bidirectional ? 2 : 1;
    RefLstm ref{cs.T, cs.B, cs.I, cs.H, cs.layers, dirs, cs.batch_first, {}};
    std::vector<std::unique_ptr<TestTensor>> params;
    std::vector<TestTensor*> param_ptrs;
    for (int64_t l = 0; l < cs.layers; ++l) {
      for (int64_t d = 0; d < dirs; ++d) {
        const int64_t in_f = l == 0 ? cs.I : dirs * cs.H;
        const std::vector<std::vector<int64_t>> shapes = {{4 * cs.H, in_f}, {4 * cs.H, cs.H}, {4 * cs.H}, {4 * cs.H}};
        for (const auto& shape : shapes) {
          params.push_back(std::make_unique<TestTensor>(F, shape));
          params.back()->fill_random(rng, -0.5f, 0.5f);
          param_ptrs.push_back(params.back().get());
          ref.params.push_back(params.back()->values());
        }
      }
    }
    std::vector<int64_t> in_shape = cs.batch_first ? std::vector<int64_t>{cs.B, cs.T, cs.I}
                                                   : std::vector<int64_t>{cs.T, cs.B, cs.I};
    std::vector<int64_t> out_shape = in_shape;
    out_shape[2] = dirs * cs.H;
    TestTensor x(F, in_shape), h0(F, {cs.layers * dirs, cs.B, cs.H}), c0(F, {cs.layers * dirs, cs.B, cs.H});
    TestTensor out(F, out_shape), hn(F, {cs.layers * dirs, cs.B, cs.H}), cn(F, {cs.layers * dirs, cs.B, cs.H});
    x.fill_random(rng);
    h0.fill_random(rng);
    c0.fill_random(rng);
    std::vector<float> want_out, want_h, want_c;
    ref.run(x.values(), h0.values(), c0.values(), &want_out, &want_h, &want_c);
    ASSERT_EQ(r.run("aten::lstm.input", {r.tensor(x), r.tensors({&h0, &c0}), r.tensors(param_ptrs), r.b(true),
                                         r.i(cs.layers), r.d(0.0), r.b(false), r.b(cs.bidirectional),
                                         r.b(cs.batch_first), r.tensor(out), r.tensor(hn), r.tensor(cn)}),
              Error::Ok)
        << r.message();
    expect_close(out.values(), want_out, 1e-4f, "lstm output");
    expect_close(hn.values(), want_h, 1e-4f, "h_n");
    expect_close(cn.values(), want_c, 1e-4f, "c_n");
    EXPECT_TRUE(out.guard_ok() && hn.guard_ok() && cn.guard_ok());
  }
}

TEST(Lstm, Errors) {
  KernelRunner r;
  TestTensor x(F, {3, 1, 2}), h0(F, {1, 1, 4}), c0(F, {1, 1, 4}), w_ih(F, {16, 2}), w_hh(F, {16, 4});
  TestTensor out(F, {3, 1, 4}), hn(F, {1, 1, 4}), cn(F, {1, 1, 4});
  // has_biases=true but only two parameters (an invalid list now that projections are supported).
  EXPECT_EQ(r.run("aten::lstm.input", {r.tensor(x), r.tensors({&h0, &c0}), r.tensors({&w_ih, &w_hh}), r.b(true), r.i(1),
                                       r.d(0.0), r.b(false), r.b(false), r.b(false), r.tensor(out), r.tensor(hn),
                                       r.tensor(cn)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::lstm.input", {r.tensor(x), r.tensors({&h0, &c0}), r.tensors({&w_ih, &w_hh}), r.b(false),
                                       r.i(1), r.d(0.0), r.b(false), r.b(false), r.b(false), r.tensor(out),
                                       r.tensor(hn), r.tensor(cn)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(r.run("aten::lstm.input", {r.tensor(x), r.tensors({&h0, &c0})}), Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
