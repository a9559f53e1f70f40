// The linear-algebra decomposition kernels against PyTorch's float64 results (data/*.npy,
// written by tools/kernels/gen_linalg_refs.py): ill-conditioned (Hilbert) and larger-norm
// inputs included, compared in double precision; and their errors (singular matrices,
// non-positive-definite input, wrong shapes and dtypes).
#include <cmath>
#include <cstdio>
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
constexpr ScalarType I64 = ScalarType::Int64;

std::unique_ptr<TestTensor> load(const std::string& name) {
  return load_float64_reference("test/kernels/portable/linalg_decomp/data/" + name + ".npy");
}

std::vector<double> values(TestTensor& t) {
  const double* p = t.data<double>();
  return std::vector<double>(p, p + t.numel());
}

// |got - want| <= tol * max(1, max|want|), elementwise, shapes equal.
void expect_near_all(TestTensor& got, TestTensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  std::vector<double> g = values(got), w = values(want);
  double scale = 1.0;
  for (double v : w) scale = std::fmax(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - w[i]) <= tol * scale) && ++bad <= 5) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g[i] << " want " << w[i] << " (scale " << scale << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what;
  EXPECT_TRUE(got.guard_ok()) << what << ": wrote past the output";
}

// An output shaped like `like`.
std::unique_ptr<TestTensor> like(TestTensor& t, ScalarType dt = D) { return std::make_unique<TestTensor>(dt, t.sizes()); }

TEST(LinalgDecomp, MatrixExpSmallLargeAndNonNormal) {
  // Larger norms need scaling and squaring; the non-normal (Jordan-like) case has a large
  // off-diagonal growth that a truncated Taylor series gets wrong.
  for (const char* name : {"matrix_exp_small", "matrix_exp_norm10", "matrix_exp_norm40", "matrix_exp_nonnormal"}) {
    auto x = load(std::string(name) + ".in0");
    auto want = load(std::string(name) + ".out0");
    ASSERT_TRUE(x && want);
    auto out = like(*want);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_matrix_exp.default", {r.tensor(*x), r.tensor(*out)}), Error::Ok) << r.message();
    expect_near_all(*out, *want, 1e-12, name);
  }
}

TEST(LinalgDecomp, InverseWellAndIllConditioned) {
  // Hilbert(7): condition number ~5e8, so ~1e-8 relative accuracy is what double allows.
  const std::pair<const char*, double> cases[] = {{"inv_batch", 1e-12}, {"inv_hilbert7", 1e-6}};
  for (const auto& [name, tol] : cases) {
    auto x = load(std::string(name) + ".in0");
    auto want = load(std::string(name) + ".out0");
    ASSERT_TRUE(x && want);
    auto out = like(*want);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_inv.default", {r.tensor(*x), r.tensor(*out)}), Error::Ok) << r.message();
    expect_near_all(*out, *want, tol, name);
    // The _ex form: same result, info 0 per matrix.
    auto out2 = like(*want);
    std::vector<int64_t> bs = x->sizes();
    bs.resize(bs.size() - 2);
    TestTensor info(ScalarType::Int32, bs);
    KernelRunner r2;
    ASSERT_EQ(r2.run("aten::linalg_inv_ex.default", {r2.tensor(*x), r2.b(false), r2.tensor(*out2), r2.tensor(info)}),
              Error::Ok)
        << r2.message();
    expect_near_all(*out2, *want, tol, name);
    for (int64_t i = 0; i < info.numel(); ++i) EXPECT_EQ(info.data<int32_t>()[i], 0);
  }
}

TEST(LinalgDecomp, SolveLeftRightVectorAndIllConditioned) {
  const std::pair<const char*, bool> cases[] = {{"solve_hilbert6", true}, {"solve_right", false}, {"solve_vector", true}};
  for (const auto& [name, left] : cases) {
    auto a = load(std::string(name) + ".in0");
    auto b = load(std::string(name) + ".in1");
    auto want = load(std::string(name) + ".out0");
    ASSERT_TRUE(a && b && want);
    auto out = like(*want);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_solve.default", {r.tensor(*a), r.tensor(*b), r.b(left), r.tensor(*out)}), Error::Ok)
        << r.message();
    expect_near_all(*out, *want, std::string(name) == "solve_hilbert6" ? 1e-7 : 1e-12, name);
  }
}

TEST(LinalgDecomp, SolveTriangularReadsOnlyItsTriangle) {
  auto a = load("solve_triangular.in0");
  auto b = load("solve_triangular.in1");
  auto up = load("solve_triangular.out0");
  auto lo_unit = load("solve_triangular.out1");
  ASSERT_TRUE(a && b && up && lo_unit);
  auto out = like(*up);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_solve_triangular.default",
                  {r.tensor(*a), r.tensor(*b), r.b(true), r.b(true), r.b(false), r.tensor(*out)}),
            Error::Ok)
      << r.message();
  expect_near_all(*out, *up, 1e-12, "upper");
  auto out2 = like(*lo_unit);
  KernelRunner r2;
  ASSERT_EQ(r2.run("aten::linalg_solve_triangular.default",
                   {r2.tensor(*a), r2.tensor(*b), r2.b(false), r2.b(true), r2.b(true), r2.tensor(*out2)}),
            Error::Ok)
      << r2.message();
  expect_near_all(*out2, *lo_unit, 1e-12, "lower unitriangular");
}

TEST(LinalgDecomp, DeterminantAndSlogdet) {
  auto x = load("det_batch.in0");
  auto det = load("det_batch.out0");
  auto sign = load("det_batch.out1");
  auto logabs = load("det_batch.out2");
  ASSERT_TRUE(x && det && sign && logabs);
  auto out = like(*det);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_det.default", {r.tensor(*x), r.tensor(*out)}), Error::Ok) << r.message();
  expect_near_all(*out, *det, 1e-12, "det");
  auto s = like(*sign), l = like(*logabs);
  KernelRunner r2;
  ASSERT_EQ(r2.run("aten::linalg_slogdet.default", {r2.tensor(*x), r2.tensor(*s), r2.tensor(*l)}), Error::Ok)
      << r2.message();
  expect_near_all(*s, *sign, 0, "sign");
  expect_near_all(*l, *logabs, 1e-12, "logabsdet");
}

TEST(LinalgDecomp, CholeskyLowerUpperAndHilbert8) {
  auto x = load("cholesky_spd.in0");
  auto lower = load("cholesky_spd.out0");
  auto upper = load("cholesky_spd.out1");
  ASSERT_TRUE(x && lower && upper);
  for (bool up : {false, true}) {
    auto out = like(*x);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_cholesky.default", {r.tensor(*x), r.b(up), r.tensor(*out)}), Error::Ok) << r.message();
    expect_near_all(*out, up ? *upper : *lower, 1e-12, up ? "upper" : "lower");
  }
  auto h = load("cholesky_hilbert8.in0");
  auto hl = load("cholesky_hilbert8.out0");
  ASSERT_TRUE(h && hl);
  auto out = like(*h);
  TestTensor info(ScalarType::Int32, {});
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_cholesky_ex.default", {r.tensor(*h), r.b(false), r.b(true), r.tensor(*out), r.tensor(info)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(info.data<int32_t>()[0], 0);
  expect_near_all(*out, *hl, 1e-9, "hilbert8");
}

TEST(LinalgDecomp, LuMatchesLapackPivoting) {
  auto x = load("lu_wide.in0");
  auto P = load("lu_wide.out0");
  auto L = load("lu_wide.out1");
  auto U = load("lu_wide.out2");
  ASSERT_TRUE(x && P && L && U);
  auto p = like(*P), l = like(*L), u = like(*U);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_lu.default", {r.tensor(*x), r.b(true), r.tensor(*p), r.tensor(*l), r.tensor(*u)}),
            Error::Ok)
      << r.message();
  expect_near_all(*p, *P, 0, "P");
  expect_near_all(*l, *L, 1e-12, "L");
  expect_near_all(*u, *U, 1e-12, "U");
}

TEST(LinalgDecomp, EighValuesAndVectorsWithPyTorchsSigns) {
  // Hilbert(8)'s eigenvalues span 1.7 .. 1.1e-10: absolute accuracy ~1e-16 * 1.7 is needed.
  // Eigenvectors are compared as they are, signs included (LAPACK's ?syevd path).
  for (const char* name : {"eigh_sym", "eigh_hilbert8"}) {
    auto x = load(std::string(name) + ".in0");
    auto w = load(std::string(name) + ".out0");
    auto v = load(std::string(name) + ".out1");
    ASSERT_TRUE(x && w && v);
    auto ow = like(*w), ov = like(*v);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_eigh.default", {r.tensor(*x), r.str("L"), r.tensor(*ow), r.tensor(*ov)}), Error::Ok)
        << r.message();
    expect_near_all(*ow, *w, 1e-14, name);
    expect_near_all(*ov, *v, 1e-9, std::string(name) + " vectors");
    auto ow2 = like(*w);
    KernelRunner r2;
    ASSERT_EQ(r2.run("aten::linalg_eigvalsh.default", {r2.tensor(*x), r2.str("L"), r2.tensor(*ow2)}), Error::Ok);
    expect_near_all(*ow2, *w, 1e-14, name);
  }
}

TEST(LinalgDecomp, EighUpperReadsAndReducesTheUpperTriangle) {
  auto x = load("eigh_upper.in0");  // not symmetric: the lower triangle must be ignored
  auto w = load("eigh_upper.out0");
  auto v = load("eigh_upper.out1");
  ASSERT_TRUE(x && w && v);
  auto ow = like(*w), ov = like(*v);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_eigh.default", {r.tensor(*x), r.str("U"), r.tensor(*ow), r.tensor(*ov)}), Error::Ok)
      << r.message();
  expect_near_all(*ow, *w, 1e-13, "eigh U values");
  expect_near_all(*ov, *v, 1e-10, "eigh U vectors");
}

TEST(LinalgDecomp, EighFloat32TakesSsyevdsSigns) {
  auto x = load("eigh_float32.in0");
  auto w = load("eigh_float32.out0");
  auto v = load("eigh_float32.out1");
  ASSERT_TRUE(x && w && v);
  const int64_t n = w->numel();
  TestTensor xf(ScalarType::Float32, {n, n}), wf(ScalarType::Float32, {n}), vf(ScalarType::Float32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) xf.f()[i] = static_cast<float>(x->data<double>()[i]);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_eigh.default", {r.tensor(xf), r.str("L"), r.tensor(wf), r.tensor(vf)}), Error::Ok)
      << r.message();
  std::vector<float> want_w(w->data<double>(), w->data<double>() + n), want_v(v->data<double>(), v->data<double>() + n * n);
  expect_close(wf.values(), want_w, 1e-5f, "float32 eigenvalues");
  expect_close(vf.values(), want_v, 1e-4f, "float32 eigenvectors (signs included)");
}

TEST(LinalgDecomp, HouseholderProduct) {
  auto a = load("householder_product.in0");
  auto tau = load("householder_product.in1");
  auto want = load("householder_product.out0");
  ASSERT_TRUE(a && tau && want);
  auto out = like(*want);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_householder_product.default", {r.tensor(*a), r.tensor(*tau), r.tensor(*out)}), Error::Ok)
      << r.message();
  expect_near_all(*out, *want, 1e-12, "householder_product");
}

TEST(LinalgDecomp, PinvHermitianAndSpectralFunctions) {
  auto x = load("pinv_hermitian.in0");
  auto herm = load("pinv_hermitian.out0");
  auto gen = load("pinv_hermitian.out1");
  ASSERT_TRUE(x && herm && gen);
  for (bool h : {true, false}) {
    auto out = like(*x);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_pinv.atol_rtol_float", {r.tensor(*x), r.none(), r.none(), r.b(h), r.tensor(*out)}),
              Error::Ok)
        << r.message();
    expect_near_all(*out, h ? *herm : *gen, 1e-10, h ? "pinv hermitian" : "pinv");
  }
  auto sv = load("spectral.out0");
  auto rank = load("spectral.out1");
  ASSERT_TRUE(sv && rank);
  auto osv = like(*sv);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_svdvals.default", {r.tensor(*x), r.none(), r.tensor(*osv)}), Error::Ok) << r.message();
  expect_near_all(*osv, *sv, 1e-12, "svdvals");
  for (bool h : {false, true}) {
    TestTensor ork(I64, {});
    KernelRunner r2;
    ASSERT_EQ(r2.run("aten::linalg_matrix_rank.atol_rtol_tensor", {r2.tensor(*x), r2.none(), r2.none(), r2.b(h), r2.tensor(ork)}),
              Error::Ok)
        << r2.message();
    EXPECT_EQ(ork.data<int64_t>()[0], static_cast<int64_t>(rank->data<double>()[0])) << "hermitian " << h;
  }
}

TEST(LinalgDecomp, MatrixPowerAndCond) {
  auto x = load("matrix_power.in0");
  auto p5 = load("matrix_power.out0");
  auto pm3 = load("matrix_power.out1");
  ASSERT_TRUE(x && p5 && pm3);
  const std::pair<int64_t, TestTensor*> cases[] = {{5, p5.get()}, {-3, pm3.get()}};
  for (const auto& [e, want] : cases) {
    auto out = like(*x);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_matrix_power.default", {r.tensor(*x), r.i(e), r.tensor(*out)}), Error::Ok) << r.message();
    expect_near_all(*out, *want, 1e-11, "matrix_power");
  }
  auto c = load("cond.in0");
  ASSERT_TRUE(c);
  const double ords[] = {2.0, 1.0, -INFINITY};
  for (int k = 0; k < 3; ++k) {
    auto want = load("cond.out" + std::to_string(k));
    ASSERT_TRUE(want);
    auto out = like(*want);
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_cond.default", {r.tensor(*c), k == 0 ? r.none() : r.d(ords[k]), r.tensor(*out)}),
              Error::Ok)
        << r.message();
    expect_near_all(*out, *want, 1e-11, "cond");
  }
}

TEST(LinalgDecomp, MatrixSqrthAndPolar) {
  auto h = load("matrix_sqrth.in0");
  auto root = load("matrix_sqrth.out0");
  ASSERT_TRUE(h && root);
  auto out = like(*root);
  KernelRunner r;
  ASSERT_EQ(r.run("aten::linalg_matrix_sqrth.default", {r.tensor(*h), r.tensor(*out)}), Error::Ok) << r.message();
  expect_near_all(*out, *root, 1e-9, "matrix_sqrth");
  auto x = load("polar.in0");
  auto U = load("polar.out0");
  auto H = load("polar.out1");
  ASSERT_TRUE(x && U && H);
  auto u = like(*U), hh = like(*H);
  KernelRunner r2;
  ASSERT_EQ(r2.run("aten::linalg_polar.default", {r2.tensor(*x), r2.tensor(*u), r2.tensor(*hh)}), Error::Ok) << r2.message();
  expect_near_all(*u, *U, 1e-12, "polar U");
  expect_near_all(*hh, *H, 1e-12, "polar H");
}

TEST(LinalgDecomp, LdlFactorPivotsAndSolve) {
  for (const char* name : {"ldl_sym", "ldl_zero_diag"}) {
    const std::string base(name);
    auto x = load(base + ".in0");
    auto rhs = load(base + ".in1");
    auto LD = load(base + ".out0");
    auto piv = load(base + ".out1");
    auto sol = load(base + ".out2");
    ASSERT_TRUE(x && rhs && LD && piv && sol);
    const int64_t m = x->sizes()[0];
    auto ld = like(*LD);
    TestTensor p(ScalarType::Int32, {m}), info(ScalarType::Int32, {});
    KernelRunner r;
    ASSERT_EQ(r.run("aten::linalg_ldl_factor_ex.default",
                    {r.tensor(*x), r.b(false), r.b(false), r.tensor(*ld), r.tensor(p), r.tensor(info)}),
              Error::Ok)
        << r.message();
    EXPECT_EQ(info.data<int32_t>()[0], 0);
    expect_near_all(*ld, *LD, 1e-12, base + " LD");
    for (int64_t i = 0; i < m; ++i) EXPECT_EQ(p.data<int32_t>()[i], static_cast<int32_t>(piv->data<double>()[i])) << base;
    auto out = like(*sol);
    KernelRunner r2;
    ASSERT_EQ(r2.run("aten::linalg_ldl_solve.default", {r2.tensor(*ld), r2.tensor(p), r2.tensor(*rhs), r2.b(false), r2.tensor(*out)}),
              Error::Ok)
        << r2.message();
    expect_near_all(*out, *sol, 1e-11, base + " solve");
  }
}

// ---------------------------------------------------------------------------------------
// Errors: singular / non-positive-definite input, wrong shapes and dtypes.

TEST(LinalgDecompErrors, SingularAndNotPositiveDefinite) {
  TestTensor s(D, {3, 3}), out(D, {3, 3}), info(ScalarType::Int32, {});
  const double sing[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};  // row 2 = 2 * row 1
  std::memcpy(s.data<double>(), sing, sizeof(sing));
  {
    KernelRunner r;
    EXPECT_EQ(r.run("aten::linalg_inv.default", {r.tensor(s), r.tensor(out)}), Error::InvalidArgument);
    EXPECT_NE(r.message().find("singular"), std::string::npos) << r.message();
  }
  {
    KernelRunner r;  // _ex: no error, info says which pivot is zero
    EXPECT_EQ(r.run("aten::linalg_inv_ex.default", {r.tensor(s), r.b(false), r.tensor(out), r.tensor(info)}), Error::Ok);
    EXPECT_GT(info.data<int32_t>()[0], 0);
  }
  {
    KernelRunner r;
    EXPECT_EQ(r.run("aten::linalg_inv_ex.default", {r.tensor(s), r.b(true), r.tensor(out), r.tensor(info)}),
              Error::InvalidArgument);
  }
  {
    TestTensor b(D, {3}), x(D, {3});
    KernelRunner r;
    EXPECT_EQ(r.run("aten::linalg_solve.default", {r.tensor(s), r.tensor(b), r.b(true), r.tensor(x)}), Error::InvalidArgument);
  }
  {
    TestTensor d(D, {}), info2(ScalarType::Int32, {});
    KernelRunner r;  // det of a singular matrix is 0, not an error
    ASSERT_EQ(r.run("aten::linalg_det.default", {r.tensor(s), r.tensor(d)}), Error::Ok);
    EXPECT_EQ(d.data<double>()[0], 0.0);
  }
  {
    // Symmetric but indefinite: cholesky fails, cholesky_ex reports the failing minor (2).
    TestTensor ind(D, {2, 2}), l(D, {2, 2});
    const double v[4] = {1, 2, 2, 1};
    std::memcpy(ind.data<double>(), v, sizeof(v));
    KernelRunner r;
    EXPECT_EQ(r.run("aten::linalg_cholesky.default", {r.tensor(ind), r.b(false), r.tensor(l)}), Error::InvalidArgument);
    EXPECT_NE(r.message().find("positive-definite"), std::string::npos) << r.message();
    KernelRunner r2;
    ASSERT_EQ(r2.run("aten::linalg_cholesky_ex.default", {r2.tensor(ind), r2.b(false), r2.b(false), r2.tensor(l), r2.tensor(info)}),
              Error::Ok);
    EXPECT_EQ(info.data<int32_t>()[0], 2);
    // The core-ATen form of the non-_ex ops: _linalg_check_errors fails on nonzero info.
    KernelRunner r3;
    EXPECT_EQ(r3.run("aten::_linalg_check_errors.default", {r3.tensor(info), r3.str("linalg.cholesky"), r3.b(true)}),
              Error::InvalidArgument);
  }
}

TEST(LinalgDecompErrors, WrongShapesAndDtypes) {
  TestTensor rect(D, {2, 3}), out(D, {2, 3}), vec(D, {3}), ints(I64, {3, 3}), o3(D, {3, 3});
  {
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_inv.default", {r.tensor(rect), r.tensor(out)}), Error::Ok);
    EXPECT_NE(r.message().find("square"), std::string::npos) << r.message();
  }
  {
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_det.default", {r.tensor(vec), r.tensor(out)}), Error::Ok);
  }
  {
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_inv.default", {r.tensor(ints), r.tensor(o3)}), Error::Ok);
    EXPECT_NE(r.message().find("floating"), std::string::npos) << r.message();
  }
  {
    TestTensor a(D, {3, 3}), b(D, {4, 2}), x(D, {3, 2});
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_solve.default", {r.tensor(a), r.tensor(b), r.b(true), r.tensor(x)}), Error::Ok);
  }
  {
    TestTensor a(D, {3, 3}), b(D, {3}), x(D, {3});
    KernelRunner r;  // vector B with left=False: an error, as in PyTorch
    EXPECT_NE(r.run("aten::linalg_solve.default", {r.tensor(a), r.tensor(b), r.b(false), r.tensor(x)}), Error::Ok);
  }
  {
    TestTensor a(D, {3, 3}), w(D, {3}), v(D, {3, 3});
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_eigh.default", {r.tensor(a), r.str("X"), r.tensor(w), r.tensor(v)}), Error::Ok);
  }
  {
    // An output too small for the result is reported, never written past.
    TestTensor a(D, {4, 4}), small(D, {2, 2});
    KernelRunner r;
    EXPECT_NE(r.run("aten::linalg_inv.default", {r.tensor(a), r.tensor(small)}), Error::Ok);
    EXPECT_TRUE(small.guard_ok());
  }
}

}  // namespace
}  // namespace testing
}  // namespace ember
