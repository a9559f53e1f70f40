// fft_irfft / irfft2 / irfftn / hfft / hfft2 / hfftn on real input against PyTorch's float64
// results (data/*.npy from tools/kernels/gen_fft_refs.py: the same case table as below).
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
  return load_float64_reference("test/kernels/portable/fft/data/" + name + ".npy");
}

struct Case {
  const char* name;
  const char* op;      // aten::fft_*.default
  bool one_d;          // (n, dim) rather than (s, dim)
  std::vector<int64_t> size;  // n (one entry) or s; empty: None
  std::vector<int64_t> dim;   // dim (one entry for 1-D) or dims; empty: None
  const char* norm;    // nullptr: None
};

class FftC2r : public ::testing::TestWithParam<Case> {};

TEST_P(FftC2r, MatchesPyTorch) {
  const Case& c = GetParam();
  auto x = load("x");
  auto want = load(c.name);
  ASSERT_TRUE(x && want);
  TestTensor out(D, want->sizes());
  KernelRunner r;
  EValue* size = c.size.empty() ? r.none() : (c.one_d ? r.i(c.size[0]) : r.ints(c.size));
  EValue* dim = c.dim.empty() ? r.none() : (c.one_d ? r.i(c.dim[0]) : r.ints(c.dim));
  EValue* norm = c.norm == nullptr ? r.none() : r.str(c.norm);
  ASSERT_EQ(r.run(c.op, {r.tensor(*x), size, dim, norm, r.tensor(out)}), Error::Ok) << r.message();
  ASSERT_EQ(out.sizes(), want->sizes()) << c.name;
  for (int64_t i = 0; i < want->numel(); ++i) {
    EXPECT_NEAR(out.data<double>()[i], want->data<double>()[i], 1e-12 * (1.0 + std::fabs(want->data<double>()[i])))
        << c.name << " [" << i << "]";
  }
  EXPECT_TRUE(out.guard_ok());
}

INSTANTIATE_TEST_SUITE_P(
    Fft, FftC2r,
    ::testing::Values(Case{"irfft_default", "aten::fft_irfft.default", true, {}, {-1}, nullptr},
                      Case{"irfft_n7_dim1", "aten::fft_irfft.default", true, {7}, {1}, "ortho"},
                      Case{"irfft_n2_forward", "aten::fft_irfft.default", true, {2}, {0}, "forward"},
                      Case{"irfft2_s36", "aten::fft_irfft2.default", false, {3, 6}, {1, 2}, nullptr},
                      Case{"irfftn_all", "aten::fft_irfftn.default", false, {}, {}, "backward"},
                      Case{"irfftn_s_crop", "aten::fft_irfftn.default", false, {2, 3, 4}, {}, "ortho"},
                      Case{"hfft_default", "aten::fft_hfft.default", true, {}, {-1}, nullptr},
                      Case{"hfft_n9_forward", "aten::fft_hfft.default", true, {9}, {2}, "forward"},
                      Case{"hfft2_default", "aten::fft_hfft2.default", false, {}, {-2, -1}, nullptr},
                      Case{"hfftn_ortho", "aten::fft_hfftn.default", false, {5, 8}, {0, 2}, "ortho"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(FftC2rErrors, BadArguments) {
  TestTensor x(D, {3, 4}), out(D, {3, 6});
  {
    KernelRunner r;  // unknown norm
    EXPECT_NE(r.run("aten::fft_irfft.default", {r.tensor(x), r.none(), r.i(-1), r.str("sideways"), r.tensor(out)}), Error::Ok);
  }
  {
    KernelRunner r;  // dim out of range
    EXPECT_NE(r.run("aten::fft_irfft.default", {r.tensor(x), r.none(), r.i(2), r.none(), r.tensor(out)}), Error::Ok);
  }
  {
    KernelRunner r;  // output size 0
    EXPECT_NE(r.run("aten::fft_irfft.default", {r.tensor(x), r.i(0), r.i(-1), r.none(), r.tensor(out)}), Error::Ok);
  }
  {
    KernelRunner r;  // s and dim of different lengths
    EXPECT_NE(r.run("aten::fft_irfftn.default", {r.tensor(x), r.ints({3}), r.ints({0, 1}), r.none(), r.tensor(out)}),
              Error::Ok);
  }
  {
    TestTensor ints(ScalarType::Int64, {3, 4}), o(ScalarType::Int64, {3, 6});
    KernelRunner r;  // integer input
    EXPECT_NE(r.run("aten::fft_irfft.default", {r.tensor(ints), r.none(), r.i(-1), r.none(), r.tensor(o)}), Error::Ok);
  }
  {
    TestTensor small(D, {3, 2});
    KernelRunner r;  // output too small: reported, nothing written past it
    EXPECT_NE(r.run("aten::fft_irfft.default", {r.tensor(x), r.none(), r.i(-1), r.none(), r.tensor(small)}), Error::Ok);
    EXPECT_TRUE(small.guard_ok());
  }
}

}  // namespace
}  // namespace testing
}  // namespace ember
