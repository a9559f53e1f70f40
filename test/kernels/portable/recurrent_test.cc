// The recurrent ops (aten::lstm, aten::gru, aten::rnn_tanh, aten::rnn_relu; .input and .data
// overloads) against a double-precision reference that runs each sequence on its own:
// layouts (time-major, batch_first, unbatched, packed), layers, directions, biases, LSTM
// projections and the edge cases (one step, one sequence, hidden size 1), plus argument
// validation. PyTorch references for whole models and packed sequences:
// test/models/recurrent_models_test.cc.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

enum class Cell { kLstm, kGru, kTanh, kRelu };

int gates(Cell c) { return c == Cell::kLstm ? 4 : c == Cell::kGru ? 3 : 1; }
const char* op_name(Cell c) { return c == Cell::kLstm ? "lstm" : c == Cell::kGru ? "gru" : c == Cell::kTanh ? "rnn_tanh" : "rnn_relu"; }

struct Case {
  Cell cell;
  int64_t T, B, I, H, layers;
  bool bidirectional, batch_first, bias;
  int64_t proj = 0;                // LSTM proj_size (0: none)
  bool unbatched = false;          // 2-D input [T, I]
  std::vector<int64_t> lengths;    // packed (.data): per-sequence lengths, non-increasing
};

std::string describe(const Case& c) {
  std::string s = std::string(op_name(c.cell)) + " T" + std::to_string(c.T) + " B" + std::to_string(c.B) + " I" +
                  std::to_string(c.I) + " H" + std::to_string(c.H) + " L" + std::to_string(c.layers);
  if (c.bidirectional) s += " bidir";
  if (c.batch_first) s += " batch_first";
  if (!c.bias) s += " no_bias";
  if (c.proj) s += " proj" + std::to_string(c.proj);
  if (c.unbatched) s += " unbatched";
  if (!c.lengths.empty()) s += " packed";
  return s;
}

// Reference: each sequence on its own, in double.
struct Reference {
  Case c;
  int64_t dirs, R, per;
  std::vector<std::vector<float>> params;  // w_ih, w_hh[, b_ih, b_hh][, w_hr] per (layer, dir)

  // seq[b][t] = input vector; returns out[b][t] (dirs*R), fills hn [L*D][b] (R), cn (H).
  std::vector<std::vector<std::vector<double>>> run(std::vector<std::vector<std::vector<double>>> seq,
                                                    const std::vector<float>& h0, const std::vector<float>& c0,
                                                    std::vector<float>* hn, std::vector<float>* cn) const {
    const int64_t B = static_cast<int64_t>(seq.size()), H = c.H, G = gates(c.cell);
    hn->assign(h0.size(), 0);
    cn->assign(c0.size(), 0);
    auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    for (int64_t l = 0; l < c.layers; ++l) {
      const int64_t in_f = l == 0 ? c.I : dirs * R;
      std::vector<std::vector<std::vector<double>>> out(B);
      for (int64_t b = 0; b < B; ++b) out[b].assign(seq[b].size(), std::vector<double>(dirs * R));
      for (int64_t d = 0; d < dirs; ++d) {
        const auto* p = &params[(l * dirs + d) * per];
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = static_cast<int64_t>(seq[b].size());
          std::vector<double> h(R), cs(H);
          for (int64_t j = 0; j < R; ++j) h[j] = h0[((l * dirs + d) * B + b) * R + j];
          if (c.cell == Cell::kLstm) {
            for (int64_t j = 0; j < H; ++j) cs[j] = c0[((l * dirs + d) * B + b) * H + j];
          }
          for (int64_t s = 0; s < len; ++s) {
            const int64_t t = d == 0 ? s : len - 1 - s;
            std::vector<double> gi(G * H), gh(G * H);
            for (int64_t k = 0; k < G * H; ++k) {
              double a = c.bias ? p[2][k] : 0.0, e = c.bias ? p[3][k] : 0.0;
              for (int64_t i = 0; i < in_f; ++i) a += double(p[0][k * in_f + i]) * seq[b][t][i];
              for (int64_t i = 0; i < R; ++i) e += double(p[1][k * R + i]) * h[i];
              gi[k] = a;
              gh[k] = e;
            }
            if (c.cell == Cell::kLstm) {
              std::vector<double> full(H);
              for (int64_t j = 0; j < H; ++j) {
                auto g = [&](int64_t q) { return gi[q * H + j] + gh[q * H + j]; };
                cs[j] = sig(g(1)) * cs[j] + sig(g(0)) * std::tanh(g(2));
                full[j] = sig(g(3)) * std::tanh(cs[j]);
              }
              if (c.proj) {
                for (int64_t k = 0; k < R; ++k) {
                  double a = 0;
                  for (int64_t j = 0; j < H; ++j) a += double(p[per - 1][k * H + j]) * full[j];
                  h[k] = a;
                }
              } else {
                h = full;
              }
            } else if (c.cell == Cell::kGru) {
              for (int64_t j = 0; j < H; ++j) {
                const double r = sig(gi[j] + gh[j]), z = sig(gi[H + j] + gh[H + j]);
                const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
                h[j] = (1 - z) * n + z * h[j];
              }
            } else {
              for (int64_t j = 0; j < H; ++j) {
                const double v = gi[j] + gh[j];
                h[j] = c.cell == Cell::kTanh ? std::tanh(v) : std::max(v, 0.0);
              }
            }
            for (int64_t j = 0; j < R; ++j) out[b][t][d * R + j] = h[j];
          }
          for (int64_t j = 0; j < R; ++j) (*hn)[((l * dirs + d) * B + b) * R + j] = static_cast<float>(h[j]);
          if (c.cell == Cell::kLstm) {
            for (int64_t j = 0; j < H; ++j) (*cn)[((l * dirs + d) * B + b) * H + j] = static_cast<float>(cs[j]);
          }
        }
      }
      seq = out;
    }
    return seq;
  }
};

// Builds the tensors of a case, runs the kernel and compares every output with the reference.
void run_case(const Case& c, ThreadPool* pool) {
  SCOPED_TRACE(describe(c));
  std::mt19937 rng(static_cast<unsigned>(c.T * 131 + c.B * 17 + c.H * 7 + c.layers + int(c.cell)));
  KernelRunner r(8 << 20, pool);
  const bool packed = !c.lengths.empty();
  const int64_t dirs = c.bidirectional ? 2 : 1, G = gates(c.cell), R = c.proj ? c.proj : c.H;
  const int64_t per = (c.bias ? 4 : 2) + (c.proj ? 1 : 0);
  Reference ref{c, dirs, R, per, {}};
  std::vector<std::unique_ptr<TestTensor>> params;
  std::vector<TestTensor*> param_ptrs;
  for (int64_t l = 0; l < c.layers; ++l) {
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t in_f = l == 0 ? c.I : dirs * R;
      std::vector<std::vector<int64_t>> shapes = {{G * c.H, in_f}, {G * c.H, R}};
      if (c.bias) {
        shapes.push_back({G * c.H});
        shapes.push_back({G * c.H});
      }
      if (c.proj) shapes.push_back({R, c.H});
      for (const auto& shape : shapes) {
        params.push_back(std::make_unique<TestTensor>(F, shape));
        params.back()->fill_random(rng, -0.6f, 0.6f);
        param_ptrs.push_back(params.back().get());
        ref.params.push_back(params.back()->values());
      }
    }
  }
  // Sequences and their rows in the input tensor.
  const int64_t B = packed ? static_cast<int64_t>(c.lengths.size()) : c.B;
  std::vector<int64_t> lengths = packed ? c.lengths : std::vector<int64_t>(B, c.T);
  const int64_t T = packed ? *std::max_element(lengths.begin(), lengths.end()) : c.T;
  std::vector<int64_t> batch_sizes(T, 0), offsets(T, 0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) batch_sizes[t] += lengths[b] > t ? 1 : 0;
    if (t > 0) offsets[t] = offsets[t - 1] + batch_sizes[t - 1];
  }
  const int64_t rows = packed ? offsets[T - 1] + batch_sizes[T - 1] : T * B;
  auto row = [&](int64_t t, int64_t b) { return packed ? offsets[t] + b : c.batch_first ? b * T + t : t * B + b; };
  std::vector<int64_t> in_shape, out_shape, h_shape, c_shape;
  if (packed) {
    in_shape = {rows, c.I};
  } else if (c.unbatched) {
    in_shape = {T, c.I};
  } else {
    in_shape = c.batch_first ? std::vector<int64_t>{B, T, c.I} : std::vector<int64_t>{T, B, c.I};
  }
  out_shape = in_shape;
  out_shape.back() = dirs * R;
  h_shape = c.unbatched ? std::vector<int64_t>{c.layers * dirs, R} : std::vector<int64_t>{c.layers * dirs, B, R};
  c_shape = h_shape;
  c_shape.back() = c.H;
  TestTensor x(F, in_shape), h0(F, h_shape), c0(F, c_shape), out(F, out_shape), hn(F, h_shape), cn(F, c_shape);
  TestTensor bs(ScalarType::Int64, {T});
  for (int64_t t = 0; t < T; ++t) bs.data<int64_t>()[t] = batch_sizes[t];
  x.fill_random(rng);
  h0.fill_random(rng);
  c0.fill_random(rng);
  std::vector<std::vector<std::vector<double>>> seq(B);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < lengths[b]; ++t) {
      const float* p = x.f() + row(t, b) * c.I;
      seq[b].emplace_back(p, p + c.I);
    }
  }
  std::vector<float> want_h, want_c;
  auto ref_out = ref.run(seq, h0.values(), c0.values(), &want_h, &want_c);
  std::vector<float> want_out(static_cast<size_t>(rows * dirs * R));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < lengths[b]; ++t) {
      for (int64_t j = 0; j < dirs * R; ++j) want_out[row(t, b) * dirs * R + j] = static_cast<float>(ref_out[b][t][j]);
    }
  }
  const bool lstm = c.cell == Cell::kLstm;
  const std::string name = std::string("aten::") + op_name(c.cell) + (packed ? ".data" : ".input");
  std::vector<EValue*> args = {r.tensor(x)};
  if (packed) args.push_back(r.tensor(bs));
  args.push_back(lstm ? r.tensors({&h0, &c0}) : r.tensor(h0));
  args.insert(args.end(), {r.tensors(param_ptrs), r.b(c.bias), r.i(c.layers), r.d(0.0), r.b(false), r.b(c.bidirectional)});
  if (!packed) args.push_back(r.b(c.batch_first));
  args.insert(args.end(), {r.tensor(out), r.tensor(hn)});
  if (lstm) args.push_back(r.tensor(cn));
  ASSERT_EQ(r.run(name.c_str(), args), Error::Ok) << r.message();
  expect_close(out.values(), want_out, 1e-4f, "output");
  expect_close(hn.values(), want_h, 1e-4f, "h_n");
  if (lstm) expect_close(cn.values(), want_c, 1e-4f, "c_n");
  EXPECT_TRUE(out.guard_ok() && hn.guard_ok() && cn.guard_ok());
}

std::vector<Case> cases_for(Cell cell) {
  const bool lstm = cell == Cell::kLstm;
  std::vector<Case> cs = {
      {cell, 1, 1, 1, 1, 1, false, false, true},             // one step, one sequence, hidden 1
      {cell, 1, 3, 2, 1, 2, true, false, true},              // seq len 1, hidden 1, bidirectional
      {cell, 6, 1, 3, 4, 1, false, true, true},              // batch 1, batch_first
      {cell, 7, 3, 5, 4, 1, false, false, false},            // no biases
      {cell, 5, 2, 3, 6, 3, true, true, true},               // 3 layers, bidirectional, batch_first
      {cell, 9, 2, 4, 3, 2, true, false, false},             // 2 layers, bidirectional, no biases
      {cell, 33, 4, 20, 24, 2, false, true, true},           // larger: GEMM blocking paths
  };
  Case unbatched{cell, 4, 1, 3, 2, 2, true, false, true};
  unbatched.unbatched = true;
  cs.push_back(unbatched);
  // Packed sequences: ragged lengths (forward keeps finished states, reverse starts late).
  Case p1{cell, 0, 0, 3, 4, 2, true, false, true};
  p1.lengths = {5, 3, 3, 1};
  Case p2{cell, 0, 0, 2, 1, 1, false, false, false};
  p2.lengths = {3, 1};
  Case p3{cell, 0, 0, 2, 3, 1, true, false, true};
  p3.lengths = {1};  // one sequence of one step
  Case p4{cell, 0, 0, 4, 5, 3, true, false, true};
  p4.lengths = {4, 4, 4};  // no padding at all
  cs.insert(cs.end(), {p1, p2, p3, p4});
  if (lstm) {  // projections
    Case a{cell, 5, 2, 3, 6, 2, true, false, true};
    a.proj = 2;
    Case b{cell, 4, 3, 2, 3, 1, false, true, false};
    b.proj = 1;
    Case pp{cell, 0, 0, 3, 5, 2, true, false, true};
    pp.proj = 3;
    pp.lengths = {4, 2, 2};
    cs.insert(cs.end(), {a, b, pp});
  }
  return cs;
}

class RecurrentOp : public ::testing::TestWithParam<Cell> {};

TEST_P(RecurrentOp, MatchesReferenceInEveryLayout) {
  ReverseOrderPool pool(2);
  for (const Case& c : cases_for(GetParam())) {
    ASSERT_NO_FATAL_FAILURE(run_case(c, &pool));
    ASSERT_NO_FATAL_FAILURE(run_case(c, nullptr));
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RecurrentOp, ::testing::Values(Cell::kLstm, Cell::kGru, Cell::kTanh, Cell::kRelu),
                         [](const ::testing::TestParamInfo<Cell>& info) { return std::string(op_name(info.param)); });

// A GRU layer (T 3, B 2, I 2, H 2, one layer, biases) with one argument broken at a time.
struct GruArgs {
  TestTensor x{F, {3, 2, 2}}, h0{F, {1, 2, 2}}, w_ih{F, {6, 2}}, w_hh{F, {6, 2}}, b_ih{F, {6}}, b_hh{F, {6}};
  TestTensor out{F, {3, 2, 2}}, hn{F, {1, 2, 2}};
  GruArgs() {
    std::mt19937 rng(5);
    for (TestTensor* t : {&x, &h0, &w_ih, &w_hh, &b_ih, &b_hh}) t->fill_random(rng);
  }
};

TEST(RecurrentOp, RejectsBadArguments) {
  KernelRunner r;
  GruArgs g;
  auto gru = [&](TestTensor& x, TestTensor& h0, std::vector<TestTensor*> params, bool bias, int64_t layers,
                 double dropout, bool train, TestTensor* hn = nullptr) {
    return r.run("aten::gru.input", {r.tensor(x), r.tensor(h0), r.tensors(params), r.b(bias), r.i(layers), r.d(dropout),
                                     r.b(train), r.b(false), r.b(false), r.tensor(g.out), r.tensor(hn ? *hn : g.hn)});
  };
  std::vector<TestTensor*> full = {&g.w_ih, &g.w_hh, &g.b_ih, &g.b_hh};
  ASSERT_EQ(gru(g.x, g.h0, full, true, 1, 0.0, false), Error::Ok) << r.message();
  // Parameter count, biases flag, layers.
  EXPECT_EQ(gru(g.x, g.h0, {&g.w_ih, &g.w_hh}, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_NE(r.message().find("params must hold"), std::string::npos) << r.message();
  EXPECT_EQ(gru(g.x, g.h0, full, true, 2, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(g.x, g.h0, full, true, 0, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(g.x, g.h0, full, true, int64_t{1} << 62, 0.0, false), Error::InvalidArgument);  // no overflow
  // A GRU takes no projection weight.
  TestTensor w_hr(F, {1, 2});
  EXPECT_EQ(gru(g.x, g.h0, {&g.w_ih, &g.w_hh, &g.b_ih, &g.b_hh, &w_hr}, true, 1, 0.0, false), Error::InvalidArgument);
  // Shapes: w_ih columns, w_hh rows not a multiple of 3, biases, h0.
  TestTensor w_ih_bad(F, {6, 3}), w_hh_bad(F, {5, 2}), b_bad(F, {5}), h0_bad(F, {1, 1, 2}), h0_rank(F, {2, 2});
  EXPECT_EQ(gru(g.x, g.h0, {&w_ih_bad, &g.w_hh, &g.b_ih, &g.b_hh}, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(g.x, g.h0, {&g.w_ih, &w_hh_bad, &g.b_ih, &g.b_hh}, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(g.x, g.h0, {&g.w_ih, &g.w_hh, &b_bad, &g.b_hh}, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(g.x, h0_bad, full, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_NE(r.message().find("h0 must be"), std::string::npos) << r.message();
  EXPECT_EQ(gru(g.x, h0_rank, full, true, 1, 0.0, false), Error::InvalidArgument);
  // dtype, input rank.
  TestTensor x_int(ScalarType::Int32, {3, 2, 2}), x_4d(F, {1, 3, 2, 2});
  EXPECT_EQ(gru(x_int, g.h0, full, true, 1, 0.0, false), Error::InvalidArgument);
  EXPECT_EQ(gru(x_4d, g.h0, full, true, 1, 0.0, false), Error::InvalidArgument);
  // Dropout between layers in training mode cannot be reproduced; eval-mode dropout is ignored.
  TestTensor w_ih1(F, {6, 2}), w_hh1(F, {6, 2}), h0_2(F, {2, 2, 2}), hn_2(F, {2, 2, 2});
  std::vector<TestTensor*> two = {&g.w_ih, &g.w_hh, &g.b_ih, &g.b_hh, &w_ih1, &w_hh1, &g.b_ih, &g.b_hh};
  EXPECT_EQ(gru(g.x, h0_2, two, true, 2, 0.5, true, &hn_2), Error::NotSupported);
  EXPECT_EQ(gru(g.x, h0_2, two, true, 2, 0.5, false, &hn_2), Error::Ok) << r.message();
  EXPECT_EQ(gru(g.x, h0_2, two, true, 2, 1.5, false, &hn_2), Error::InvalidArgument);
  // Wrong argument count.
  EXPECT_EQ(r.run("aten::gru.input", {r.tensor(g.x), r.tensor(g.h0)}), Error::InvalidArgument);
  // No temp memory: a clear OutOfMemory, nothing written out of bounds.
  r.set_use_temp(false);
  EXPECT_EQ(gru(g.x, g.h0, full, true, 1, 0.0, false), Error::OutOfMemory);
  EXPECT_TRUE(g.out.guard_ok() && g.hn.guard_ok());
}

TEST(RecurrentOp, RejectsBadBatchSizes) {
  KernelRunner r;
  std::mt19937 rng(6);
  TestTensor data(F, {6, 2}), h0(F, {1, 3, 2}), w_ih(F, {2, 2}), w_hh(F, {2, 2}), out(F, {6, 2}), hn(F, {1, 3, 2});
  for (TestTensor* t : {&data, &h0, &w_ih, &w_hh}) t->fill_random(rng);
  auto rnn = [&](TestTensor& bs) {
    return r.run("aten::rnn_tanh.data", {r.tensor(data), r.tensor(bs), r.tensor(h0), r.tensors({&w_ih, &w_hh}), r.b(false),
                                         r.i(1), r.d(0.0), r.b(false), r.b(false), r.tensor(out), r.tensor(hn)});
  };
  auto sizes = [](std::vector<int64_t> v) {
    auto t = std::make_unique<TestTensor>(ScalarType::Int64, std::vector<int64_t>{static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t->data<int64_t>()[i] = v[i];
    return t;
  };
  EXPECT_EQ(rnn(*sizes({3, 2, 1})), Error::Ok) << r.message();
  EXPECT_EQ(rnn(*sizes({2, 3, 1})), Error::InvalidArgument);  // increasing
  EXPECT_NE(r.message().find("non-increasing"), std::string::npos) << r.message();
  EXPECT_EQ(rnn(*sizes({3, 3, 0})), Error::InvalidArgument);  // a zero
  EXPECT_EQ(rnn(*sizes({3, 2})), Error::InvalidArgument);     // sum differs from the rows
  EXPECT_EQ(rnn(*sizes({4, 1, 1})), Error::InvalidArgument);  // batch 4, h0 has 3
  EXPECT_EQ(rnn(*sizes({-1, 7})), Error::InvalidArgument);
  EXPECT_EQ(rnn(*sizes({int64_t{1} << 62, int64_t{1} << 62, int64_t{1} << 62})), Error::InvalidArgument);
  TestTensor empty(ScalarType::Int64, {0});
  EXPECT_EQ(rnn(empty), Error::InvalidArgument);
  TestTensor as_float(F, {3});
  EXPECT_EQ(rnn(as_float), Error::InvalidArgument);
  EXPECT_TRUE(out.guard_ok() && hn.guard_ok());
}

TEST(RecurrentOp, LstmChecksCellStateAndProjection) {
  KernelRunner r;
  std::mt19937 rng(7);
  TestTensor x(F, {2, 1, 3}), h0(F, {1, 1, 2}), c0(F, {1, 1, 4}), w_ih(F, {16, 3}), w_hh(F, {16, 2}), w_hr(F, {2, 4});
  TestTensor out(F, {2, 1, 2}), hn(F, {1, 1, 2}), cn(F, {1, 1, 4}), c0_bad(F, {1, 1, 2}), w_hr_bad(F, {4, 2});
  for (TestTensor* t : {&x, &h0, &c0, &w_ih, &w_hh, &w_hr}) t->fill_random(rng);
  auto lstm = [&](TestTensor& c, TestTensor& hr, size_t hx_count) {
    std::vector<TestTensor*> hx = {&h0, &c};
    hx.resize(hx_count);
    return r.run("aten::lstm.input", {r.tensor(x), r.tensors(hx), r.tensors({&w_ih, &w_hh, &hr}), r.b(false), r.i(1),
                                      r.d(0.0), r.b(false), r.b(false), r.b(false), r.tensor(out), r.tensor(hn), r.tensor(cn)});
  };
  EXPECT_EQ(lstm(c0, w_hr, 2), Error::Ok) << r.message();
  EXPECT_EQ(lstm(c0_bad, w_hr, 2), Error::InvalidArgument);  // c0 is [L*D, B, hidden], not proj
  EXPECT_NE(r.message().find("c0 must be"), std::string::npos) << r.message();
  EXPECT_EQ(lstm(c0, w_hr_bad, 2), Error::InvalidArgument);
  EXPECT_EQ(lstm(c0, w_hr, 1), Error::InvalidArgument);  // hx without c0
  EXPECT_NE(r.message().find("hx must be [h0, c0]"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace testing
}  // namespace ember
