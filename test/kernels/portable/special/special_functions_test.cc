// torch.special's orthogonal polynomials (all three overloads) and Hurwitz zeta against
// PyTorch's float64 results, Airy Ai against mpmath's (data/*.npy from
// tools/kernels/gen_special_refs.py).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "extension/npy/npy_format.h"
#include "test/kernels/portable/float64_reference.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType D = ScalarType::Float64;

std::unique_ptr<TestTensor> load(const std::string& name) {
  return load_float64_reference("test/kernels/portable/special/data/" + name + ".npy");
}

// Relative 1e-12 (absolute below 1); NaN and infinities must match exactly.
void expect_matches(TestTensor& got, TestTensor& want, TestTensor& x, TestTensor* n, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<double>()[i], w = want.data<double>()[i];
    const bool ok = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w) ||
                    std::fabs(g - w) <= 1e-12 * std::fmax(1.0, std::fabs(w));
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << what << " x=" << x.data<double>()[i] << (n ? " n=" + std::to_string(n->data<double>()[i]) : "")
                    << ": got " << g << " want " << w;
    }
  }
  EXPECT_EQ(bad, 0) << what;
  EXPECT_TRUE(got.guard_ok());
}

class Polynomial : public ::testing::TestWithParam<const char*> {};

TEST_P(Polynomial, MatchesPyTorchOnEveryBranch) {
  const std::string name = GetParam();
  auto x = load(name + ".x");
  auto n = load(name + ".n");
  auto want = load(name + ".out");
  ASSERT_TRUE(x && n && want);
  TestTensor out(D, want->sizes());
  KernelRunner r;
  const std::string op = "aten::special_" + name + ".default";
  ASSERT_EQ(r.run(op.c_str(), {r.tensor(*x), r.tensor(*n), r.tensor(out)}), Error::Ok) << r.message();
  expect_matches(out, *want, *x, n.get(), name);
  // .n_scalar / .x_scalar: one row / column of the grid through a Scalar operand.
  const int64_t cols = x->sizes()[1];
  TestTensor xrow(D, {cols}), outrow(D, {cols}), wantrow(D, {cols});
  for (int64_t j = 0; j < cols; ++j) {
    xrow.data<double>()[j] = x->data<double>()[j];  // row 0: x fixed, n varies -> use x_scalar
    wantrow.data<double>()[j] = want->data<double>()[j];
  }
  TestTensor nrow(D, {cols});
  for (int64_t j = 0; j < cols; ++j) nrow.data<double>()[j] = n->data<double>()[j];
  KernelRunner r2;
  const std::string op2 = "aten::special_" + name + ".x_scalar";
  ASSERT_EQ(r2.run(op2.c_str(), {r2.d(x->data<double>()[0]), r2.tensor(nrow), r2.tensor(outrow)}), Error::Ok) << r2.message();
  expect_matches(outrow, wantrow, xrow, &nrow, name + " x_scalar");
}

INSTANTIATE_TEST_SUITE_P(Special, Polynomial,
                         ::testing::Values("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                                           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                                           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                                           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                                           "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"));

TEST(Special, PolynomialScalarOrderAndFloat32) {
  // .n_scalar in float32: T_3(x) = 4x^3 - 3x; n = 3.9 truncates to 3, as ATen does.
  TestTensor x(ScalarType::Float32, {3}), out(ScalarType::Float32, {3});
  x.set({0.5f, -2.0f, 1.0f});
  KernelRunner r;
  ASSERT_EQ(r.run("aten::special_chebyshev_polynomial_t.n_scalar", {r.tensor(x), r.d(3.9), r.tensor(out)}), Error::Ok);
  expect_close(out.values(), {-1.0f, -26.0f, 1.0f}, 1e-6f);
}

TEST(Special, HugeOrdersGiveNaNInsteadOfRunningForCenturies) {
  // x = 0.5 keeps every recurrence finite (|P_n| <= 1, Laguerre bounded by e^{x/2}), so only
  // the step limit ends it; a hostile program's n = 2^62 once hung the runtime (Laguerre), and
  // Hermite H's loop bound n + n overflowed int64. Closed forms still apply at any order.
  for (const char* name : {"hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                           "legendre_polynomial_p"}) {
    TestTensor out(D, {2});
    KernelRunner r;
    const std::string op = std::string("aten::special_") + name + ".n_scalar";
    TestTensor x(D, {2});
    x.data<double>()[0] = 0.5;
    x.data<double>()[1] = 0.25;
    ASSERT_EQ(r.run(op.c_str(), {r.tensor(x), r.d(4611686018427387904.0), r.tensor(out)}), Error::Ok) << name;
    EXPECT_TRUE(std::isnan(out.data<double>()[0]) && std::isnan(out.data<double>()[1])) << name;
  }
  // At the limit the recurrence still runs: P_n(0.25) for n = 2^20 is small and finite.
  TestTensor x(D, {1}), out(D, {1});
  x.data<double>()[0] = 0.25;
  KernelRunner r;
  ASSERT_EQ(r.run("aten::special_legendre_polynomial_p.n_scalar", {r.tensor(x), r.d(1048576.0), r.tensor(out)}),
            Error::Ok);
  EXPECT_TRUE(std::isfinite(out.data<double>()[0]));
  EXPECT_LT(std::fabs(out.data<double>()[0]), 1.0);
  // Chebyshev T in (-1, 1) has its trigonometric closed form at any order: no NaN there.
  ASSERT_EQ(r.run("aten::special_chebyshev_polynomial_t.n_scalar", {r.tensor(x), r.d(4611686018427387904.0), r.tensor(out)}),
            Error::Ok);
  EXPECT_TRUE(std::isfinite(out.data<double>()[0]));
}

TEST(Special, HurwitzZeta) {
  auto s = load("zeta.x");
  auto q = load("zeta.n");
  auto want = load("zeta.out");
  ASSERT_TRUE(s && q && want);
  TestTensor out(D, want->sizes());
  KernelRunner r;
  ASSERT_EQ(r.run("aten::special_zeta.default", {r.tensor(*s), r.tensor(*q), r.tensor(out)}), Error::Ok) << r.message();
  expect_matches(out, *want, *s, q.get(), "zeta");
}

TEST(Special, AiryAi) {
  auto x = load("airy_ai.x");
  auto want = load("airy_ai.out");
  ASSERT_TRUE(x && want);
  TestTensor out(D, want->sizes());
  KernelRunner r;
  ASSERT_EQ(r.run("aten::special_airy_ai.default", {r.tensor(*x), r.tensor(out)}), Error::Ok) << r.message();
  // Reference: mpmath (PyTorch's double Ai is off by ~7e-7 near its zeros). Ember's is within
  // ~2e-11 absolute where the series cancels and 1e-10 relative elsewhere.
  for (int64_t i = 0; i < want->numel(); ++i) {
    const double w = want->data<double>()[i], g = out.data<double>()[i];
    EXPECT_NEAR(g, w, 1e-10 * (1e-1 + std::fabs(w))) << "x=" << x->data<double>()[i];
  }
}

TEST(Special, RejectsNonNumericOperands) {
  TestTensor x(D, {2}), out(D, {2});
  KernelRunner r;
  EXPECT_NE(r.run("aten::special_legendre_polynomial_p.default", {r.tensor(x), r.str("n"), r.tensor(out)}), Error::Ok);
}

}  // namespace
}  // namespace testing
}  // namespace ember
