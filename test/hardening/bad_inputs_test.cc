// Bad inputs at run time through the Module API, on real exported models: every mistake a
// caller can make returns an error (or computes, for NaN/Inf, as PyTorch would), and the
// next correct call still returns the reference result.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "extension/module/module.h"
#include "test/hardening/model_fixture.h"

namespace ember {
namespace {

using testing::AlignedBytes;
using testing::exported_model;
using testing::max_abs_diff;

constexpr double kTolerance = 1e-4;

class BadInputs : public ::testing::Test {
 protected:
  void load(const char* name) {
    const testing::ExportedModel& m = exported_model(name);
    model_ = &m;
    if (m.pte.empty()) return;
    bytes_.reset(new AlignedBytes(m.pte));
    module_.reset(new Module(bytes_->data(), bytes_->size()));
  }
  // The correct call: must match PyTorch.
  void expect_reference() {
    auto out = module_->forward({model_->input});
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_LE(max_abs_diff(out->at(0), model_->reference), kTolerance);
  }
  void expect_error(const std::vector<Input>& inputs, Error code, const char* needle) {
    auto out = module_->forward(inputs);
    ASSERT_FALSE(out.ok()) << "expected " << error_name(code);
    EXPECT_EQ(out.error().code(), code) << out.error().to_string();
    EXPECT_NE(out.error().message().find(needle), std::string::npos)
        << "message: " << out.error().message() << "\nexpected it to mention: " << needle;
    expect_reference();
  }

  const testing::ExportedModel* model_ = nullptr;
  std::unique_ptr<AlignedBytes> bytes_;
  std::unique_ptr<Module> module_;
};

TEST_F(BadInputs, WrongDtypeShapeRankAndCount) {
  load("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  expect_reference();
  expect_error({zeros({1, 3, 32, 32}, ScalarType::Int64)}, Error::InvalidArgument, "must be float32");
  expect_error({zeros({1, 3, 32, 32}, ScalarType::Float64)}, Error::InvalidArgument, "must be float32");
  expect_error({zeros({1, 3, 32, 31})}, Error::InvalidArgument, "dimension 3 has size 31");
  expect_error({zeros({1, 3, 32, 33})}, Error::OutOfBounds, "dimension 3 has size 33");
  expect_error({zeros({2, 3, 32, 32})}, Error::OutOfBounds, "dimension 0 has size 2");
  expect_error({zeros({3, 32, 32})}, Error::InvalidArgument, "must have rank 4");
  expect_error({zeros({1, 1, 3, 32, 32})}, Error::InvalidArgument, "must have rank 4");
  expect_error({zeros({})}, Error::InvalidArgument, "must have rank 4");
  expect_error({}, Error::InvalidArgument, "takes 1 inputs, got 0");
  expect_error({model_->input, model_->input}, Error::InvalidArgument, "takes 1 inputs, got 2");
  expect_error({int64_t{3}}, Error::InvalidArgument, "must be a tensor");
  expect_error({1.5}, Error::InvalidArgument, "must be a tensor");
  // Negative sizes never reach a kernel.
  TensorPtr negative = zeros({1, 3, 32, 32});
  negative.tensor().sizes[2] = -32;
  expect_error({negative}, Error::InvalidArgument, "dimension 2 has size -32");
}

TEST_F(BadInputs, NullDataPointer) {
  load("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  expect_error({from_blob(nullptr, {1, 3, 32, 32})}, Error::InvalidArgument, "null data pointer");
  // Through set_input too, then a correct call.
  Status s = module_->set_input("forward", 0, from_blob(nullptr, {1, 3, 32, 32}));
  EXPECT_EQ(s.code(), Error::InvalidArgument) << s.to_string();
  expect_reference();
  // An input index that does not exist.
  s = module_->set_input("forward", 1, model_->input);
  EXPECT_EQ(s.code(), Error::InvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("input 1 does not exist"), std::string::npos) << s.message();
  expect_reference();
}

TEST_F(BadInputs, OutputBufferTooSmallOrMissing) {
  load("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  const size_t need = model_->reference.nbytes();
  std::vector<float> small(need / sizeof(float) - 1);
  Status s = module_->set_output_buffer("forward", 0, small.data(), small.size() * sizeof(float));
  EXPECT_EQ(s.code(), Error::OutOfMemory) << s.to_string();
  EXPECT_NE(s.message().find("needs a buffer of " + std::to_string(need) + " bytes"), std::string::npos)
      << s.message();
  expect_reference();
  s = module_->set_output_buffer("forward", 1, small.data(), need);
  EXPECT_EQ(s.code(), Error::InvalidArgument) << s.to_string();
  expect_reference();
  // A big enough caller buffer receives the result; null returns to planned memory.
  std::vector<float> big(need / sizeof(float));
  ASSERT_TRUE(module_->set_output_buffer("forward", 0, big.data(), need).ok());
  auto out = module_->forward({model_->input});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->at(0).data<float>(), big.data());
  EXPECT_LE(max_abs_diff(out->at(0), model_->reference), kTolerance);
  ASSERT_TRUE(module_->set_output_buffer("forward", 0, nullptr, 0).ok());
  expect_reference();
}

TEST_F(BadInputs, DynamicBatchBeyondItsBound) {
  load("dynamic_mlp");  // batch dimension dynamic in [1, 64]
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  expect_reference();
  const int64_t cols = model_->input.sizes()[1];
  expect_error({zeros({65, cols})}, Error::OutOfBounds, "at most 64");
  expect_error({zeros({1000000, cols})}, Error::OutOfBounds, "at most 64");
  expect_error({zeros({4, cols + 1})}, Error::OutOfBounds, "dimension 1 has size");
  // The format marks dynamism per tensor, not per dimension, so a smaller feature dimension
  // passes the input check; the first kernel that sees it must reject it cleanly.
  {
    auto narrow = module_->forward({zeros({4, cols - 1})});
    EXPECT_FALSE(narrow.ok());
    if (!narrow.ok()) {
      EXPECT_FALSE(narrow.error().message().empty());
    }
    expect_reference();
  }
  // At the bound and at 1 row it runs; then the reference batch again.
  auto at_bound = module_->forward({zeros({64, cols})});
  ASSERT_TRUE(at_bound.ok()) << at_bound.error().to_string();
  EXPECT_EQ(at_bound->at(0).sizes()[0], 64);
  auto one = module_->forward({zeros({1, cols})});
  ASSERT_TRUE(one.ok()) << one.error().to_string();
  EXPECT_EQ(one->at(0).sizes()[0], 1);
  // Zero rows is outside torch.export's range [1, 64]; it must not crash either way.
  auto empty = module_->forward({zeros({0, cols})});
  if (empty.ok()) {
    EXPECT_EQ(empty->at(0).numel(), 0);
  }
  expect_reference();
}

// NaN and Inf are data, not errors: they propagate as in PyTorch and never crash.
TEST_F(BadInputs, NanAndInfPropagateLikePyTorch) {
  load("dynamic_mlp");  // linear -> layer_norm -> gelu, row by row
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  const TensorPtr& ref = model_->reference;
  const int64_t rows = model_->input.sizes()[0], cols = model_->input.sizes()[1];
  const int64_t out_cols = ref.numel() / rows;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    TensorPtr x = zeros({rows, cols});
    std::memcpy(x.raw_data(), model_->input.raw_data(), x.nbytes());
    x.data<float>()[0] = bad;  // row 0 only
    auto out = module_->forward({x});
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    ASSERT_EQ(out->at(0).numel(), ref.numel());
    const float* y = out->at(0).data<float>();
    // Row 0 goes through layer_norm with a NaN or +-Inf element: NaN throughout (as PyTorch).
    for (int64_t c = 0; c < out_cols; ++c) EXPECT_TRUE(std::isnan(y[c])) << "row 0 col " << c << " = " << y[c];
    // The other rows are untouched.
    for (int64_t i = out_cols; i < ref.numel(); ++i) {
      ASSERT_NEAR(y[i], ref.data<float>()[i], kTolerance) << "element " << i;
    }
  }
  expect_reference();
  // All-NaN input on an image model: every output is NaN (PyTorch's relu, max_pool2d and
  // softmax propagate NaN).
  load("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  TensorPtr nan_image = full({1, 3, 32, 32}, std::numeric_limits<double>::quiet_NaN());
  auto out = module_->forward({nan_image});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  for (int64_t i = 0; i < out->at(0).numel(); ++i) {
    EXPECT_TRUE(std::isnan(out->at(0).data<float>()[i])) << "output " << i;
  }
  // One NaN pixel reaches every logit through conv -> relu -> max_pool -> linear -> softmax.
  TensorPtr one_nan = zeros({1, 3, 32, 32});
  std::memcpy(one_nan.raw_data(), model_->input.raw_data(), one_nan.nbytes());
  one_nan.data<float>()[5 * 32 + 7] = std::numeric_limits<float>::quiet_NaN();
  out = module_->forward({one_nan});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  for (int64_t i = 0; i < out->at(0).numel(); ++i) {
    EXPECT_TRUE(std::isnan(out->at(0).data<float>()[i])) << "output " << i;
  }
  // Huge finite values overflow to Inf/NaN without crashing.
  TensorPtr huge = full({1, 3, 32, 32}, 3e38);
  EXPECT_TRUE(module_->forward({huge}).ok());
  expect_reference();
}

TEST_F(BadInputs, UnknownMethodAndStateCalls) {
  load("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  auto out = module_->execute("backward", {model_->input});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), Error::NotFound);
  EXPECT_NE(out.error().message().find("it has: forward"), std::string::npos) << out.error().message();
  EXPECT_TRUE(module_->reset_state("forward").ok());
  EXPECT_EQ(module_->set_num_threads(0).code(), Error::InvalidArgument);
  expect_reference();
}

}  // namespace
}  // namespace ember
