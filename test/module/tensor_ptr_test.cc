// Tensor helpers and .npy I/O.
#include "extension/module/tensor_ptr.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace ember {
namespace {

std::string tmp(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

TEST(TensorPtr, FromBlobDoesNotCopy) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  TensorPtr t = from_blob(data, {2, 3});
  EXPECT_EQ(t.data<float>(), data);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.tensor().rank, 2);
  EXPECT_EQ(t.tensor().sizes[1], 3);
}

TEST(TensorPtr, Factories) {
  TensorPtr z = zeros({2, 2}, ScalarType::Int32);
  TensorPtr o = ones({3}, ScalarType::Float16);
  TensorPtr f = full({2}, 2.5, ScalarType::BFloat16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(z.data<int32_t>()[i], 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(element_as_double(o.tensor(), i), 1.0);
  EXPECT_EQ(element_as_double(f.tensor(), 1), 2.5);
  TensorPtr r1 = rand({100}, ScalarType::Float32, 7), r2 = rand({100}, ScalarType::Float32, 7);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(r1.data<float>()[i], r2.data<float>()[i]);
    EXPECT_GE(r1.data<float>()[i], 0.f);
    EXPECT_LT(r1.data<float>()[i], 1.f);
  }
  TensorPtr ints = rand({50}, ScalarType::Int64, 1, 5);
  for (int i = 0; i < 50; ++i) {
    EXPECT_GE(ints.data<int64_t>()[i], 0);
    EXPECT_LT(ints.data<int64_t>()[i], 5);
  }
}

TEST(Npy, RoundTripsEveryDtype) {
  for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::Int8,
                           ScalarType::Int16, ScalarType::Int32, ScalarType::Int64, ScalarType::UInt8,
                           ScalarType::Bool}) {
    TensorPtr t = rand({2, 3, 4}, dtype, 3, 2);
    std::string path = tmp(std::string("rt_") + scalar_type_name(dtype) + ".npy");
    ASSERT_TRUE(write_npy(path, t.tensor()).ok());
    auto back = read_npy(path);
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(back->dtype(), dtype);
    EXPECT_EQ(back->sizes(), (std::vector<int64_t>{2, 3, 4}));
    for (int64_t i = 0; i < t.numel(); ++i) {
      EXPECT_EQ(element_as_double(back->tensor(), i), element_as_double(t.tensor(), i));
    }
  }
}

TEST(Npy, ScalarAndVectorShapes) {
  TensorPtr v = make_tensor(std::vector<float>{1, 2, 3}, {3});
  ASSERT_TRUE(write_npy(tmp("v.npy"), v.tensor()).ok());
  auto back = read_npy(tmp("v.npy"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->sizes(), std::vector<int64_t>{3});
  EXPECT_EQ(back->data<float>()[2], 3.f);
}

// OpInfo samples hold empty tensors such as [1, 0, 3]: no data, whatever the other dimensions.
TEST(Npy, EmptyArrayWithNonZeroLeadingDimensions) {
  TensorPtr e = zeros({1, 0, 3}, ScalarType::Float32);
  ASSERT_TRUE(write_npy(tmp("empty.npy"), e.tensor()).ok());
  auto back = read_npy(tmp("empty.npy"));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->sizes(), (std::vector<int64_t>{1, 0, 3}));
  EXPECT_EQ(back->numel(), 0);
}

TEST(Npy, RejectsBadFiles) {
  EXPECT_EQ(read_npy(tmp("does_not_exist.npy")).error().code(), Error::AccessFailed);
  std::ofstream(tmp("bad.npy")) << "not numpy";
  EXPECT_EQ(read_npy(tmp("bad.npy")).error().code(), Error::InvalidArgument);
  // Header promises more data than the file has.
  TensorPtr t = zeros({16});
  ASSERT_TRUE(write_npy(tmp("trunc.npy"), t.tensor()).ok());
  std::string bytes;
  {
    std::ifstream in(tmp("trunc.npy"), std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::ofstream(tmp("trunc.npy"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 8));
  auto r = read_npy(tmp("trunc.npy"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("shorter"), std::string::npos);
}

}  // namespace
}  // namespace ember
