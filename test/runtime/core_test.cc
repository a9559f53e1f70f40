// Error, Result, ScalarType, MemoryAllocator and Tensor resizing.
#include <cstring>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {
namespace {

TEST(ErrorTest, EveryCodeHasAStableName) {
  EXPECT_STREQ(error_name(Error::Ok), "Ok");
  EXPECT_STREQ(error_name(Error::InvalidArgument), "InvalidArgument");
  EXPECT_STREQ(error_name(Error::InvalidProgram), "InvalidProgram");
  EXPECT_STREQ(error_name(Error::VersionMismatch), "VersionMismatch");
  EXPECT_STREQ(error_name(Error::NotFound), "NotFound");
  EXPECT_STREQ(error_name(Error::NotSupported), "NotSupported");
  EXPECT_STREQ(error_name(Error::OutOfMemory), "OutOfMemory");
  EXPECT_STREQ(error_name(Error::OutOfBounds), "OutOfBounds");
  EXPECT_STREQ(error_name(Error::AccessFailed), "AccessFailed");
  EXPECT_STREQ(error_name(Error::InvalidState), "InvalidState");
  EXPECT_STREQ(error_name(Error::BackendFailed), "BackendFailed");
  EXPECT_STREQ(error_name(Error::Internal), "Internal");
  EXPECT_STREQ(error_name(static_cast<Error>(200)), "Unknown");
}

struct Counted {
  static int live;
  int value;
  explicit Counted(int v) : value(v) { ++live; }
  Counted(Counted&& o) noexcept : value(o.value) { ++live; }
  ~Counted() { --live; }
};
int Counted::live = 0;

TEST(ResultTest, HoldsAValue) {
  Result<int> r(42);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.error(), Error::Ok);
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(r.get(), 42);
}

TEST(ResultTest, HoldsAnError) {
  Result<int> r(Error::NotFound);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::NotFound);
}

TEST(ResultTest, OkIsNotAnErrorValue) {
  Result<int> r(Error::Ok);  // a bug in the caller: reported as Internal, never as success
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::Internal);
}

TEST(ResultTest, DestroysAndMovesItsValueExactlyOnce) {
  ASSERT_EQ(Counted::live, 0);
  {
    Result<Counted> a(Counted(7));
    EXPECT_EQ(Counted::live, 1);
    Result<Counted> b(std::move(a));
    EXPECT_EQ(Counted::live, 2);  // moved-from value still exists until `a` dies
    EXPECT_EQ(b->value, 7);
    Result<Counted> e(Error::OutOfMemory);
    EXPECT_EQ(Counted::live, 2);  // an error holds no value
  }
  EXPECT_EQ(Counted::live, 0);
}

Error try_twice(Error first, Error second, int* reached) {
  EMBER_TRY(first);
  ++*reached;
  EMBER_TRY(second);
  ++*reached;
  return Error::Ok;
}

TEST(ResultTest, TryPropagatesTheFirstError) {
  int reached = 0;
  EXPECT_EQ(try_twice(Error::Ok, Error::Ok, &reached), Error::Ok);
  EXPECT_EQ(reached, 2);
  reached = 0;
  EXPECT_EQ(try_twice(Error::OutOfBounds, Error::Ok, &reached), Error::OutOfBounds);
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(try_twice(Error::Ok, Error::InvalidState, &reached), Error::InvalidState);
  EXPECT_EQ(reached, 1);
}

Result<int> half(int v) {
  if (v % 2 != 0) return Error::InvalidArgument;
  return v / 2;
}

Result<int> quarter(int v) {
  EMBER_ASSIGN_OR_RETURN(int h, half(v));
  EMBER_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(ResultTest, AssignOrReturn) {
  EXPECT_EQ(*quarter(12), 3);
  EXPECT_EQ(quarter(6).error(), Error::InvalidArgument);
  EXPECT_EQ(quarter(7).error(), Error::InvalidArgument);
}

TEST(ScalarTypeTest, SizesAndNames) {
  EXPECT_EQ(element_size(ScalarType::Float32), 4u);
  EXPECT_EQ(element_size(ScalarType::Float16), 2u);
  EXPECT_EQ(element_size(ScalarType::BFloat16), 2u);
  EXPECT_EQ(element_size(ScalarType::Float64), 8u);
  EXPECT_EQ(element_size(ScalarType::Int8), 1u);
  EXPECT_EQ(element_size(ScalarType::Int16), 2u);
  EXPECT_EQ(element_size(ScalarType::Int32), 4u);
  EXPECT_EQ(element_size(ScalarType::Int64), 8u);
  EXPECT_EQ(element_size(ScalarType::UInt8), 1u);
  EXPECT_EQ(element_size(ScalarType::Bool), 1u);
  EXPECT_EQ(element_size(static_cast<ScalarType>(77)), 0u);
  EXPECT_STREQ(scalar_type_name(ScalarType::Float32), "float32");
  EXPECT_STREQ(scalar_type_name(ScalarType::Int64), "int64");
  EXPECT_STREQ(scalar_type_name(ScalarType::Bool), "bool");
  EXPECT_STREQ(scalar_type_name(static_cast<ScalarType>(77)), "invalid");
  EXPECT_TRUE(is_valid_scalar_type(0));
  EXPECT_TRUE(is_valid_scalar_type(9));
  EXPECT_FALSE(is_valid_scalar_type(10));
  EXPECT_FALSE(is_valid_scalar_type(-1));
  EXPECT_TRUE(is_floating(ScalarType::BFloat16));
  EXPECT_FALSE(is_floating(ScalarType::Int32));
  EXPECT_TRUE(is_integral(ScalarType::UInt8, false));
  EXPECT_FALSE(is_integral(ScalarType::Bool, false));
  EXPECT_TRUE(is_integral(ScalarType::Bool, true));
  EXPECT_FALSE(is_integral(ScalarType::Float64, true));
}

TEST(EValueTest, ToDouble) {
  EValue v;
  EXPECT_TRUE(v.is_none());
  EXPECT_EQ(v.to_double(), 0.0);
  v.tag = ValueTag::Int;
  v.as_int = -3;
  EXPECT_EQ(v.to_double(), -3.0);
  v.tag = ValueTag::Double;
  v.as_double = 2.5;
  EXPECT_EQ(v.to_double(), 2.5);
  v.tag = ValueTag::Bool;
  v.as_bool = true;
  EXPECT_EQ(v.to_double(), 1.0);
}

TEST(EValueTest, IntListRefreshesSymbolicEntries) {
  EValue values[2];
  values[1].tag = ValueTag::Int;
  values[1].as_int = 9;
  int64_t items[3] = {1, 2, 3};
  int32_t refs[3] = {-1, 1, -1};
  IntListValue list{items, refs, values, 3};
  Span<const int64_t> got = list.get();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 9);
  EXPECT_EQ(got[2], 3);
  values[1].as_int = 11;
  EXPECT_EQ(list.get()[1], 11);
}

// --- MemoryAllocator -------------------------------------------------------------------

TEST(MemoryAllocatorTest, AlignsEveryAllocation) {
  alignas(256) uint8_t buffer[1024];
  MemoryAllocator a(buffer, sizeof(buffer));
  void* p1 = a.allocate(1, 1);
  EXPECT_EQ(p1, buffer);
  for (size_t alignment : {2u, 4u, 8u, 16u, 32u, 64u, 128u}) {
    void* p = a.allocate(3, alignment);
    ASSERT_NE(p, nullptr) << alignment;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u) << alignment;
  }
  // Default alignment is 16.
  a.allocate(1, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.allocate(8)) % 16, 0u);
  double* d = a.allocate_array<double>(3);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % alignof(double), 0u);
}

TEST(MemoryAllocatorTest, AlignmentPaddingCountsAsUsed) {
  alignas(64) uint8_t buffer[128];
  MemoryAllocator a(buffer, sizeof(buffer));
  ASSERT_EQ(a.allocate(1, 1), buffer);
  ASSERT_EQ(a.allocate(1, 64), buffer + 64);
  EXPECT_EQ(a.used(), 65u);
  EXPECT_EQ(a.high_water(), 65u);
}

TEST(MemoryAllocatorTest, ExhaustionReturnsNullAndReportsBytesNeeded) {
  alignas(64) uint8_t buffer[100];
  MemoryAllocator a(buffer, sizeof(buffer));
  EXPECT_NE(a.allocate(60, 1), nullptr);
  EXPECT_NE(a.allocate(40, 1), nullptr);  // exactly full
  EXPECT_EQ(a.used(), 100u);
  EXPECT_EQ(a.allocate(1, 1), nullptr);
  EXPECT_EQ(a.used(), 100u);  // a failed request changes nothing
  EXPECT_EQ(a.bytes_needed(), 101u);
  EXPECT_EQ(a.allocate(30, 1), nullptr);
  EXPECT_EQ(a.bytes_needed(), 131u);
  // Sizing a new allocator to bytes_needed() makes the same sequence fit.
  alignas(64) uint8_t bigger[131];
  MemoryAllocator b(bigger, sizeof(bigger));
  EXPECT_NE(b.allocate(60, 1), nullptr);
  EXPECT_NE(b.allocate(40, 1), nullptr);
  EXPECT_NE(b.allocate(1, 1), nullptr);
  EXPECT_NE(b.allocate(30, 1), nullptr);
  EXPECT_EQ(b.bytes_needed(), 131u);
}

TEST(MemoryAllocatorTest, HugeRequestsFailWithoutOverflow) {
  alignas(64) uint8_t buffer[64];
  MemoryAllocator a(buffer, sizeof(buffer));
  a.allocate(1, 1);
  EXPECT_EQ(a.allocate(SIZE_MAX - 8, 16), nullptr);
  EXPECT_EQ(a.allocate_array<uint64_t>(SIZE_MAX / 4), nullptr);
  EXPECT_EQ(a.used(), 1u);
  EXPECT_NE(a.allocate(8, 8), nullptr);
}

TEST(MemoryAllocatorTest, EmptyAllocatorAlwaysFails) {
  MemoryAllocator a;
  EXPECT_EQ(a.allocate(1), nullptr);
  EXPECT_EQ(a.allocate(0), nullptr);
  EXPECT_EQ(a.size(), 0u);
}

TEST(MemoryAllocatorTest, ResetReusesMemoryAndKeepsHighWater) {
  alignas(64) uint8_t buffer[256];
  MemoryAllocator a(buffer, sizeof(buffer));
  void* p = a.allocate(200, 64);
  ASSERT_EQ(p, buffer);
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.high_water(), 200u);
  EXPECT_EQ(a.allocate(10, 64), buffer);
  EXPECT_EQ(a.high_water(), 200u);
  EXPECT_EQ(a.size(), 256u);
}

// --- Tensor ------------------------------------------------------------------------------

struct TestTensor {
  int64_t sizes[3];
  int64_t max_sizes[3];
  float data[24];
  Tensor t;
  TestTensor(std::initializer_list<int64_t> s, bool dynamic) {
    int i = 0;
    for (int64_t v : s) {
      sizes[i] = v;
      max_sizes[i] = v;
      ++i;
    }
    t.dtype = ScalarType::Float32;
    t.rank = static_cast<uint8_t>(i);
    t.dynamic = dynamic;
    t.sizes = sizes;
    t.max_sizes = max_sizes;
    t.data = data;
    t.capacity_bytes = t.nbytes();
  }
};

TEST(TensorTest, NumelAndBytes) {
  TestTensor x({2, 3, 4}, false);
  EXPECT_EQ(x.t.numel(), 24);
  EXPECT_EQ(x.t.nbytes(), 96u);
  EXPECT_EQ(x.t.size(1), 3);
  Tensor scalar;
  EXPECT_EQ(scalar.numel(), 1);  // rank 0
}

TEST(TensorTest, StaticTensorKeepsItsShape) {
  TestTensor x({2, 3}, false);
  int64_t same[] = {2, 3};
  EXPECT_EQ(resize_tensor(x.t, same), Error::Ok);
  int64_t smaller[] = {1, 3};
  EXPECT_EQ(resize_tensor(x.t, smaller), Error::OutOfBounds);
  EXPECT_EQ(x.t.sizes[0], 2);
}

TEST(TensorTest, DynamicTensorResizesWithinCapacity) {
  TestTensor x({4, 3}, true);
  int64_t smaller[] = {2, 3};
  ASSERT_EQ(resize_tensor(x.t, smaller), Error::Ok);
  EXPECT_EQ(x.t.sizes[0], 2);
  EXPECT_EQ(x.t.numel(), 6);
  int64_t empty[] = {0, 3};
  ASSERT_EQ(resize_tensor(x.t, empty), Error::Ok);
  EXPECT_EQ(x.t.numel(), 0);
  int64_t full[] = {4, 3};
  ASSERT_EQ(resize_tensor(x.t, full), Error::Ok);
  EXPECT_EQ(x.t.numel(), 12);
  // Capacity, not per-dimension bounds, limits a resize (documented in tensor.cc).
  int64_t reshaped[] = {3, 4};
  EXPECT_EQ(resize_tensor(x.t, reshaped), Error::Ok);
  int64_t too_big[] = {5, 3};
  EXPECT_EQ(resize_tensor(x.t, too_big), Error::OutOfBounds);
  EXPECT_EQ(x.t.sizes[0], 3);  // unchanged by the failed resize
  EXPECT_EQ(x.t.sizes[1], 4);
}

TEST(TensorTest, ResizeRejectsRankChangeAndNegativeSizes) {
  TestTensor x({4, 3}, true);
  int64_t rank1[] = {12};
  EXPECT_EQ(resize_tensor(x.t, rank1), Error::InvalidArgument);
  int64_t negative[] = {-1, 3};
  EXPECT_EQ(resize_tensor(x.t, negative), Error::InvalidArgument);
  EXPECT_EQ(x.t.sizes[0], 4);
}

TEST(TensorTest, ContiguityAndStrides) {
  TestTensor x({2, 3, 4}, false);
  EXPECT_TRUE(x.t.is_contiguous());
  uint8_t identity[] = {0, 1, 2};
  x.t.dim_order = identity;
  EXPECT_TRUE(x.t.is_contiguous());
  uint8_t channels_last[] = {0, 2, 1};
  x.t.dim_order = channels_last;
  EXPECT_FALSE(x.t.is_contiguous());
  int64_t strides[3];
  contiguous_strides(x.sizes, 3, strides);
  EXPECT_EQ(strides[0], 12);
  EXPECT_EQ(strides[1], 4);
  EXPECT_EQ(strides[2], 1);
}

}  // namespace
}  // namespace ember
