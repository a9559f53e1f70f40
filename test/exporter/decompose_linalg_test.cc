// Numerical tests of the training-IR linear-algebra composites of
// exporter/passes/decompose_linalg.cc (linalg_norm .default / .ord_str, linalg_multi_dot,
// linalg_tensorinv, linalg_tensorsolve), of nll_loss_nd with class weights and of
// linear_cross_entropy's chunked torch_nn:: operators: each graph is
// exported with the portable kernels (the composite must be decomposed), run, and compared
// with references computed here in double precision (decompose_case.h).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/exporter/decompose_case.h"

namespace ember {
namespace exporter {
namespace {

using namespace decompose_test;  // NOLINT: the shared harness

// A well-conditioned n x n matrix (diagonally dominant) as a row-major Array.
Array well_conditioned(int64_t n, uint32_t seed) {
  Array a = random({n, n}, seed);
  for (int64_t i = 0; i < n; ++i) a.v[static_cast<size_t>(i * n + i)] += static_cast<double>(n);
  return a;
}

// Solves A X = B (A: n x n, B: n x k, row-major) by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<double> a, std::vector<double> b, int64_t n, int64_t k) {
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
    for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
    for (int64_t j = 0; j < k; ++j) std::swap(b[c * k + j], b[p * k + j]);
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r * n + c] / a[c * n + c];
      for (int64_t j = 0; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      for (int64_t j = 0; j < k; ++j) b[r * k + j] -= f * b[c * k + j];
    }
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < k; ++j) b[r * k + j] /= a[r * n + r];
  return b;
}

std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& y, int64_t m, int64_t k, int64_t n) {
  std::vector<double> r(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) r[i * n + j] += x[i * k + p] * y[p * n + j];
  return r;
}

TEST(DecomposeLinalgNorm, VectorNormsOfEveryOrder) {
  Array x = random({6}, 3);
  Case c;
  int xi = c.input(x);
  std::vector<Array> want;
  const double ords[] = {2.0, 3.0, 1.0, std::numeric_limits<double>::infinity(), 0.5};
  for (double ord : ords) {
    double acc = 0;
    for (double v : x.v) acc = std::isinf(ord) ? std::max(acc, std::fabs(v)) : acc + std::pow(std::fabs(v), ord);
    want.push_back(floats({}, {std::isinf(ord) ? acc : std::pow(acc, 1.0 / ord)}));
    c.op("linalg_norm", "default", {Arg::tensor(xi), Arg::real(ord)}, {});
  }
  // ord None on an N-D input: the 2-norm of the flattened input.
  Array y = random({2, 3, 2}, 4);
  int yi = c.input(y);
  double sq = 0;
  for (double v : y.v) sq += v * v;
  want.push_back(floats({}, {std::sqrt(sq)}));
  c.op("linalg_norm", "default", {Arg::tensor(yi)}, {});
  run_and_compare(c, want, "vector norms");
}

TEST(DecomposeLinalgNorm, DimKeepdimAndFrobenius) {
  Array x = random({3, 4}, 5);
  Case c;
  int xi = c.input(x);
  // dim = [1], ord 1, keepdim: [3, 1].
  std::vector<double> rows;
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += std::fabs(x.v[static_cast<size_t>(i * 4 + j)]);
    rows.push_back(s);
  }
  c.op("linalg_norm", "default", {Arg::tensor(xi), Arg::real(1.0), Arg::int_list({1}), Arg::boolean(true)}, {3, 1});
  // ord None over two dims, and ord 'fro' (.ord_str) on the 2-D input: the Frobenius norm.
  double sq = 0;
  for (double v : x.v) sq += v * v;
  c.op("linalg_norm", "default", {Arg::tensor(xi), Arg::none(), Arg::int_list({0, 1})}, {});
  c.op("linalg_norm", "ord_str", {Arg::tensor(xi), str("fro")}, {});
  run_and_compare(c, {floats({3, 1}, rows), floats({}, {std::sqrt(sq)}), floats({}, {std::sqrt(sq)})}, "norm dims");
}

TEST(DecomposeLinalgNorm, UnsupportedOrderStaysAnExportError) {
  // A numeric matrix order (2: the spectral norm) has no decomposition here: the export fails
  // with the kernel check's message naming the op, never silently computes something else.
  Case c;
  int xi = c.input(random({3, 3}, 6));
  c.op("linalg_norm", "default", {Arg::tensor(xi), Arg::real(2.0), Arg::int_list({0, 1})}, {});
  auto r = c.export_program();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("linalg_norm"), std::string::npos) << r.status();
}

TEST(DecomposeMultiDot, MatrixChainAndVectorEnds) {
  Array a = random({2, 3}, 7), b = random({3, 4}, 8), d = random({4, 5}, 9);
  Array v0 = random({3}, 10), v1 = random({4}, 11);
  Case c;
  int ai = c.input(a), bi = c.input(b), di = c.input(d), v0i = c.input(v0), v1i = c.input(v1);
  c.op("linalg_multi_dot", "default", {Arg::tensor_list({ai, bi, di})}, {2, 5});
  c.op("linalg_multi_dot", "default", {Arg::tensor_list({v0i, bi, v1i})}, {});
  std::vector<double> abd = matmul(matmul(a.v, b.v, 2, 3, 4), d.v, 2, 4, 5);
  std::vector<double> vbv = matmul(matmul(v0.v, b.v, 1, 3, 4), v1.v, 1, 4, 1);
  run_and_compare(c, {floats({2, 5}, abd), floats({}, vbv)}, "multi_dot");
}

TEST(DecomposeTensorInv, ReshapedInverse) {
  // [2, 3, 6] with ind = 2: the inverse of the 6 x 6 matrix, viewed as [6, 2, 3].
  Array m = well_conditioned(6, 12);
  Array x = m;
  x.sizes = {2, 3, 6};
  Case c;
  int xi = c.input(x);
  c.op("linalg_tensorinv", "default", {Arg::tensor(xi), Arg::integer(2)}, {6, 2, 3});
  std::vector<double> eye(36, 0.0);
  for (int i = 0; i < 6; ++i) eye[static_cast<size_t>(i * 7)] = 1.0;
  run_and_compare(c, {floats({6, 2, 3}, solve(m.v, eye, 6, 6))}, "tensorinv");
}

TEST(DecomposeTensorSolve, WithAndWithoutDims) {
  Array m = well_conditioned(6, 13);
  Array a = m;
  a.sizes = {2, 3, 6};
  Array b = random({2, 3}, 14);
  // dims = [0]: A given as [6, 2, 3] (the solved-for dim first) is moved back to [2, 3, 6].
  Array at = floats({6, 2, 3}, std::vector<double>(36));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 6; ++j) at.v[static_cast<size_t>(j * 6 + r)] = m.v[static_cast<size_t>(r * 6 + j)];
  Case c;
  int ai = c.input(a), bi = c.input(b), ati = c.input(at);
  c.op("linalg_tensorsolve", "default", {Arg::tensor(ai), Arg::tensor(bi)}, {6});
  c.op("linalg_tensorsolve", "default", {Arg::tensor(ati), Arg::tensor(bi), Arg::int_list({0})}, {6});
  std::vector<double> x = solve(m.v, b.v, 6, 1);
  run_and_compare(c, {floats({6}, x), floats({6}, x)}, "tensorsolve");
}

TEST(DecomposeNllLoss, ClassWeightsIgnoreIndexAndSpatialDims) {
  Array logp = random({4, 3}, 15), t = ints({4}, {0, 2, 1, 2}), w = floats({3}, {0.5, 2.0, 1.5});
  const int64_t ignore = 1;
  std::vector<double> per;
  double wsum = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t k = static_cast<int64_t>(t.v[static_cast<size_t>(i)]);
    const double wk = k == ignore ? 0.0 : w.v[static_cast<size_t>(k)];
    per.push_back(-wk * logp.v[static_cast<size_t>(i * 3 + k)]);
    wsum += wk;
  }
  double total = 0;
  for (double v : per) total += v;
  Case c;
  int li = c.input(logp), ti = c.input(t), wi = c.input(w);
  for (int64_t red : {kNone, kMean, kSum}) {
    c.op("nll_loss_nd", "default", {Arg::tensor(li), Arg::tensor(ti), Arg::tensor(wi), Arg::integer(red), Arg::integer(ignore)},
         red == kNone ? Sizes{4} : Sizes{});
  }
  run_and_compare(c, {floats({4}, per), floats({}, {total / wsum}), floats({}, {total})}, "weighted nll_loss_nd");
}

TEST(DecomposeLinearCrossEntropy, ChunkedOpsAsLinearLogSoftmaxNll) {
  Array x = random({3, 4}, 16), w = random({5, 4}, 17), bias = random({5}, 18), t = ints({3}, {4, 0, 2});
  // Reference: logits = x w^T + bias, per-sample -log_softmax(logits)[target].
  std::vector<double> per;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<double> z;
    double mx = -1e300;
    for (int64_t c = 0; c < 5; ++c) {
      double v = bias.v[static_cast<size_t>(c)];
      for (int64_t k = 0; k < 4; ++k) v += x.v[static_cast<size_t>(i * 4 + k)] * w.v[static_cast<size_t>(c * 4 + k)];
      z.push_back(v);
      mx = std::max(mx, v);
    }
    double se = 0;
    for (double v : z) se += std::exp(v - mx);
    per.push_back(-(z[static_cast<size_t>(t.v[static_cast<size_t>(i)])] - mx - std::log(se)));
  }
  double total = per[0] + per[1] + per[2];
  Case c;
  int xi = c.input(x), wi = c.input(w), bi = c.input(bias), ti = c.input(t);
  Arg none = Arg::none();
  auto chunked = [&](const char* reduction) {
    return std::vector<Arg>{Arg::tensor(xi), Arg::tensor(wi), Arg::tensor(ti), Arg::tensor(bi), none, str(reduction),
                            Arg::integer(-100), Arg::real(0.0), Arg::integer(1), str("compact"),
                            Arg::integer(static_cast<int64_t>(ScalarType::Float32)), Arg::boolean(true),
                            Arg::boolean(false), Arg::boolean(false), Arg::boolean(false)};
  };
  c.ops("torch_nn::_linear_cross_entropy_batch_chunked", "default", chunked("mean"),
        {{}, {0, 0}, {0, 0}, {0}});
  c.ops("torch_nn::_linear_cross_entropy_batch_chunked", "default", chunked("sum"),
        {{}, {0, 0}, {0, 0}, {0}});
  c.op("torch_nn::_linear_cross_entropy_batch_chunked_no_reduction", "default",
       {Arg::tensor(xi), Arg::tensor(wi), Arg::tensor(ti), Arg::tensor(bi), none, Arg::integer(-100), Arg::integer(1),
        str("compact"), Arg::integer(static_cast<int64_t>(ScalarType::Float32))},
       {3});
  Array empty2 = floats({0, 0}, {}), empty1 = floats({0}, {});
  run_and_compare(c,
                  {floats({}, {total / 3}), empty2, empty2, empty1, floats({}, {total}), empty2, empty2, empty1,
                   floats({3}, per)},
                  "linear_cross_entropy");
}

}  // namespace
}  // namespace exporter
}  // namespace ember
