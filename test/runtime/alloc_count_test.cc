// execute() (and set_input/bind_input between executes) performs no heap allocation.
//
// This binary replaces the global operator new/delete family and wraps the C allocation
// functions (-Wl,--wrap=..., see BUILD; linked statically so calls from the runtime's
// object files are wrapped) and installs counting platform hooks. Every allocation path is
// counted; the test asserts the counters do not move while methods run 100 times.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/platform/platform.h"
#include "test/support/allocation_counter.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Harness;
using testing::TensorHolder;

void* counting_allocate(size_t bytes, size_t alignment) {
  ::ember::testing::count_allocation();
  void* p = nullptr;
  if (__real_posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, bytes ? bytes : 1) != 0) {
    return nullptr;
  }
  return p;
}
void counting_deallocate(void* p) { std::free(p); }

TEST(AllocCountTest, CountersSeeAllocations) {
  // The instrumentation works: each path is observed. (Volatile pointers keep the compiler
  // from eliding the allocate/free pairs; counts are read before any EXPECT allocates.)
  uint64_t start = ::ember::testing::allocation_count();
  int* volatile p = new int(3);
  delete p;
  uint64_t after_new = ::ember::testing::allocation_count();
  void* volatile m = std::malloc(10);
  std::free(m);
  uint64_t after_malloc = ::ember::testing::allocation_count();
  PlatformHooks hooks;
  hooks.allocate = counting_allocate;
  hooks.deallocate = counting_deallocate;
  set_platform_hooks(hooks);
  void* volatile q = platform_allocate(64, 64);
  platform_deallocate(q);
  uint64_t after_platform = ::ember::testing::allocation_count();
  set_platform_hooks(PlatformHooks());
  EXPECT_EQ(after_new - start, 1u);
  EXPECT_EQ(after_malloc - after_new, 1u);
  EXPECT_EQ(after_platform - after_malloc, 1u);
}

TEST(AllocCountTest, ExecuteNeverAllocates) {
  PlatformHooks hooks;
  hooks.allocate = counting_allocate;
  hooks.deallocate = counting_deallocate;
  set_platform_hooks(hooks);
  testing::PteBytes pte = testing::kitchen_sink_program();
  std::vector<float> fdata(64, 1.5f);
  TensorHolder x43(ScalarType::Float32, {4, 3}, fdata.data());
  TensorHolder x23(ScalarType::Float32, {2, 3}, fdata.data());
  TensorHolder x13(ScalarType::Float32, {1, 3}, fdata.data());
  TensorHolder x4(ScalarType::Float32, {4}, fdata.data());
  TensorHolder x22(ScalarType::Float32, {2, 2}, fdata.data());
  EValue n;
  n.tag = ValueTag::Int;
  n.as_int = 3;

  for (const char* name : {"add", "add_dynamic", "matmul", "loop", "counter", "delegate", "values"}) {
    SCOPED_TRACE(name);
    Harness h;
    ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
    ASSERT_EQ(h.load_method(name), Error::Ok) << h.message();
    Method& m = h.method();
    std::string method(name);
    Error errors[100];
    uint64_t before = ::ember::testing::allocation_count();
    for (int i = 0; i < 100; ++i) {
      Error err = Error::Ok;
      if (method == "add") {
        err = m.set_input(0, x43.value);
      } else if (method == "add_dynamic") {
        err = i % 2 ? m.set_input(0, x13.value) : m.bind_input(0, x43.tensor);
      } else if (method == "matmul") {
        err = m.set_input(0, x23.value);
      } else if (method == "loop") {
        err = m.set_input(0, x4.value);
        if (err == Error::Ok) err = m.set_input(1, n);
      } else if (method == "delegate") {
        err = m.set_input(0, x4.value);
      } else if (method == "values") {
        err = m.set_input(0, x22.value);
      } else if (method == "counter" && i == 50) {
        err = m.reset_state();
      }
      if (err == Error::Ok) err = m.execute();
      errors[i] = err;
    }
    uint64_t after = ::ember::testing::allocation_count();
    EXPECT_EQ(after - before, 0u);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(errors[i], Error::Ok) << i << ": " << m.last_error_message();
    if (method == "counter") {
      EXPECT_EQ(m.output(0).as_tensor->data_as<int64_t>()[0], 50);
    }
    if (method == "loop") {
      EXPECT_EQ(m.output(0).as_tensor->data_as<float>()[0], 6.0f);
    }
  }
  set_platform_hooks(PlatformHooks());
}

TEST(AllocCountTest, FailuresDoNotAllocateEither) {
  testing::PteBytes pte = testing::kitchen_sink_program();
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("add_dynamic"), Error::Ok) << h.message();
  std::vector<float> fdata(64, 1.0f);
  TensorHolder too_big(ScalarType::Float32, {5, 3}, fdata.data());
  TensorHolder bad_bcast(ScalarType::Float32, {2, 2}, fdata.data());
  Error e1, e2, e3;
  uint64_t before = ::ember::testing::allocation_count();
  e1 = h.method().set_input(0, too_big.value);  // formats a diagnostic message
  e2 = h.method().set_input(0, bad_bcast.value);
  e3 = h.method().execute();                    // kernel failure + message
  uint64_t after = ::ember::testing::allocation_count();
  EXPECT_EQ(after - before, 0u);
  EXPECT_EQ(e1, Error::OutOfBounds);
  EXPECT_EQ(e2, Error::Ok);
  EXPECT_EQ(e3, Error::InvalidArgument);
}

}  // namespace
}  // namespace ember
