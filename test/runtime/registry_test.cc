// Kernel registry (dtype-specialised lookup, duplicates), backend registry, and a fake
// backend's delegate run as one instruction (init/execute/destroy counted).
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/backend/backend.h"
#include "runtime/kernel/kernel_registry.h"
#include "test/support/fake_backend.h"
#include "test/support/program_builder.h"
#include "test/support/test_kernels.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Harness;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;
using testing::TensorHolder;

Error kernel_generic(KernelContext&, EValue**, size_t) { return Error::Ok; }
Error kernel_f32(KernelContext&, EValue**, size_t) { return Error::Ok; }
Error kernel_i64(KernelContext&, EValue**, size_t) { return Error::Ok; }
Error kernel_other(KernelContext&, EValue**, size_t) { return Error::Ok; }

EMBER_REGISTER_KERNEL("registry::op.default", kernel_generic);
EMBER_REGISTER_KERNEL_FOR_DTYPE("registry::op.default", ScalarType::Float32, kernel_f32);
EMBER_REGISTER_KERNEL_FOR_DTYPE("registry::op.default", ScalarType::Int64, kernel_i64);
EMBER_REGISTER_KERNEL_FOR_DTYPE("registry::only_f32.default", ScalarType::Float32, kernel_f32);

TEST(KernelRegistryTest, TestKernelsRegistered) {
  EXPECT_EQ(testing::num_test_kernels_registered(), 8);
  EXPECT_NE(find_kernel("test::matmul.default"), nullptr);
  EXPECT_NE(find_kernel("test::lt.default", static_cast<int>(ScalarType::Bool)), nullptr);
}

TEST(KernelRegistryTest, DtypeSpecialisedLookup) {
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Float32)), &kernel_f32);
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Int64)), &kernel_i64);
  // No specialisation: the generic kernel.
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Float64)), &kernel_generic);
  EXPECT_EQ(find_kernel("registry::op.default"), &kernel_generic);
  // Only a specialisation and the dtype differs: nothing.
  EXPECT_EQ(find_kernel("registry::only_f32.default", static_cast<int>(ScalarType::Float32)), &kernel_f32);
  EXPECT_EQ(find_kernel("registry::only_f32.default", static_cast<int>(ScalarType::Int32)), nullptr);
  EXPECT_EQ(find_kernel("registry::only_f32.default"), nullptr);
  // Names match exactly.
  EXPECT_EQ(find_kernel("registry::op"), nullptr);
  EXPECT_EQ(find_kernel("registry::op.default2"), nullptr);
  EXPECT_EQ(find_kernel("Registry::op.default"), nullptr);
}

TEST(KernelRegistryTest, DuplicatesAndNullsAreRejected) {
  size_t before = num_registered_kernels();
  EXPECT_FALSE(register_kernel("registry::op.default", kernel_other));
  EXPECT_FALSE(register_kernel("registry::op.default", kernel_other, static_cast<int>(ScalarType::Float32)));
  EXPECT_FALSE(register_kernel(nullptr, kernel_other));
  EXPECT_FALSE(register_kernel("registry::null.default", nullptr));
  EXPECT_EQ(num_registered_kernels(), before);
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Float32)), &kernel_f32);
  // A new dtype for an existing name is a new key.
  EXPECT_TRUE(register_kernel("registry::op.default", kernel_other, static_cast<int>(ScalarType::Int8)));
  EXPECT_EQ(num_registered_kernels(), before + 1);
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Int8)), &kernel_other);
  const KernelEntry& last = registered_kernel(before);
  EXPECT_STREQ(last.name, "registry::op.default");
  EXPECT_EQ(last.dtype, static_cast<int>(ScalarType::Int8));
  EXPECT_EQ(last.fn, &kernel_other);
}

// find_kernel's binary search against the linear scan it replaced, over every registered name
// and names just beside them (prefixes, extensions, neighbours in the order), after
// registrations out of order that share prefixes with each other.
KernelFn find_by_scan(const char* name, int dtype) {
  KernelFn generic = nullptr;
  for (size_t i = 0; i < num_registered_kernels(); ++i) {
    const KernelEntry& e = registered_kernel(i);
    if (std::strcmp(e.name, name) != 0) continue;
    if (e.dtype == kAnyDtype) {
      generic = e.fn;
    } else if (e.dtype == dtype) {
      return e.fn;
    }
  }
  return generic;
}

TEST(KernelRegistryTest, LookupAgreesWithALinearScan) {
  const char* names[] = {"scan::b.default", "scan::a.default", "scan::a", "scan::a.default.x", "scan::",
                         "scan::c.out",     "scan::a.out",     "scan::b", "scan::ab.default"};
  const int dtypes[] = {static_cast<int>(ScalarType::Int64), kAnyDtype, static_cast<int>(ScalarType::Float32),
                        static_cast<int>(ScalarType::Bool)};
  const KernelFn fns[] = {kernel_generic, kernel_f32, kernel_i64, kernel_other};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    // Each name gets its own subset of the dtypes, registered in a different order.
    for (size_t j = 0; j <= i % 4; ++j) {
      ASSERT_TRUE(register_kernel(names[i], fns[(i + j) % 4], dtypes[(i + j) % 4])) << names[i];
    }
  }
  std::vector<std::string> probes = {"", "scan", "scan::a.d", "scan::a.defaulz", "scan::z", "zzz", "aten::"};
  for (size_t i = 0; i < num_registered_kernels(); ++i) {
    const std::string name = registered_kernel(i).name;
    probes.push_back(name);
    probes.push_back(name + "x");
    probes.push_back(name.substr(0, name.size() - 1));
  }
  size_t found = 0;
  for (const std::string& probe : probes) {
    for (int dtype = kAnyDtype; dtype <= static_cast<int>(ScalarType::Bool) + 1; ++dtype) {
      const KernelFn want = find_by_scan(probe.c_str(), dtype);
      EXPECT_EQ(find_kernel(probe.c_str(), dtype), want) << probe << " dtype " << dtype;
      found += want != nullptr;
    }
  }
  EXPECT_GT(found, num_registered_kernels());
  EXPECT_EQ(find_kernel(nullptr), nullptr);
}

TEST(KernelRegistryTest, TableIsBoundedNotUnbounded) {
  // Fill the table to kMaxKernels with unique names; the next registration fails cleanly.
  static char names[kMaxKernels][32];
  size_t start = num_registered_kernels();
  size_t added = 0;
  for (size_t i = 0; start + added < kMaxKernels; ++i) {
    std::snprintf(names[i], sizeof(names[i]), "fill::k%zu.default", i);
    ASSERT_TRUE(register_kernel(names[i], kernel_other));
    ++added;
  }
  EXPECT_EQ(num_registered_kernels(), kMaxKernels);
  EXPECT_FALSE(register_kernel("fill::overflow.default", kernel_other));
  EXPECT_EQ(num_registered_kernels(), kMaxKernels);
  EXPECT_EQ(find_kernel("fill::overflow.default"), nullptr);
  EXPECT_EQ(find_kernel("registry::op.default", static_cast<int>(ScalarType::Int64)), &kernel_i64);
}

class NullBackend final : public Backend {
 public:
  bool is_available() const override { return true; }
  Result<void*> init(BackendInitContext&, Span<const uint8_t>, Span<const CompileSpecView>) override {
    return static_cast<void*>(nullptr);
  }
  Error execute(BackendExecuteContext&, void*, EValue**, size_t) override { return Error::Ok; }
  void destroy(void*) override {}
};

TEST(BackendRegistryTest, RegisterFindDuplicates) {
  ASSERT_TRUE(testing::fake_backends_registered());
  static NullBackend a;
  static NullBackend b;
  size_t before = num_registered_backends();
  EXPECT_NE(find_backend("test_fake"), nullptr);
  EXPECT_EQ(find_backend("registry_null"), nullptr);
  EXPECT_TRUE(register_backend("registry_null", &a));
  EXPECT_EQ(find_backend("registry_null"), &a);
  EXPECT_FALSE(register_backend("registry_null", &b));  // the id is taken
  EXPECT_EQ(find_backend("registry_null"), &a);
  EXPECT_FALSE(register_backend(nullptr, &b));
  EXPECT_FALSE(register_backend("registry_nobackend", nullptr));
  EXPECT_EQ(num_registered_backends(), before + 1);
  EXPECT_STREQ(registered_backend_id(before), "registry_null");
  EXPECT_EQ(registered_backend_id(num_registered_backends()), nullptr);
  // The table is bounded.
  static char ids[kMaxBackends][24];
  for (size_t i = 0; num_registered_backends() < kMaxBackends; ++i) {
    std::snprintf(ids[i], sizeof(ids[i]), "fill%zu", i);
    ASSERT_TRUE(register_backend(ids[i], &b));
  }
  EXPECT_FALSE(register_backend("one_too_many", &b));
  EXPECT_EQ(num_registered_backends(), kMaxBackends);
}

// --- Delegates -----------------------------------------------------------------------------

TEST(DelegateTest, RunsAsOneInstructionWithCountedLifecycle) {
  testing::FakeBackendStats& stats = testing::fake_backend_stats();
  stats = testing::FakeBackendStats();
  ProgramBuilder pb;
  testing::delegate_method(pb, "forward");
  PteBytes pte = pb.build();
  {
    Harness h;
    ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
    ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
    EXPECT_EQ(h.method().meta().num_delegates(), 1u);
    EXPECT_EQ(h.method().meta().num_instructions(), 2u);
    EXPECT_EQ(stats.init_calls, 1);
    EXPECT_EQ(stats.init_ok, 1);
    EXPECT_EQ(stats.execute_calls, 0);
    float x[4] = {0, 1, 2, -3};
    TensorHolder in(ScalarType::Float32, {4}, x);
    for (int run = 1; run <= 3; ++run) {
      x[0] = static_cast<float>(run);
      ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
      ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
      EXPECT_EQ(stats.execute_calls, run);
      const float* out = h.method().output(0).as_tensor->data_as<const float>();
      for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], 3 * x[i] + 1) << i;  // (2x + 1) + x
    }
    EXPECT_EQ(stats.destroy_calls, 0);
  }
  EXPECT_EQ(stats.destroy_calls, 1);  // the Method's destructor released the handle once
  EXPECT_EQ(stats.init_calls, 1);
}

TEST(DelegateTest, InlineBlobAndFailures) {
  testing::FakeBackendStats& stats = testing::fake_backend_stats();
  stats = testing::FakeBackendStats();
  float scale = -1.0f;
  std::vector<uint8_t> blob(4);
  std::memcpy(blob.data(), &scale, 4);
  ProgramBuilder pb;
  {
    MethodBuilder& m = pb.method("inline");
    uint32_t x = m.input_tensor(ScalarType::Float32, {2});
    uint32_t y = m.planned_tensor(ScalarType::Float32, {2});
    uint32_t d = m.delegate("test_fake", -1, blob);
    m.delegate_call(d, {static_cast<int32_t>(x), static_cast<int32_t>(y)});
    m.set_inputs({x}).set_outputs({y});
  }
  {
    MethodBuilder& m = pb.method("bad_blob");  // 3-byte blob: the backend rejects it at init
    uint32_t d = m.delegate("test_fake", -1, {1, 2, 3});
    (void)d;
  }
  {
    MethodBuilder& m = pb.method("missing_backend");
    m.delegate("no_such_backend", -1, blob);
  }
  {
    MethodBuilder& m = pb.method("unavailable");
    m.delegate("test_unavailable", -1, blob);
  }
  {
    // Two delegates; the second fails init: the first must be destroyed exactly once.
    MethodBuilder& m = pb.method("second_fails");
    m.delegate("test_fake", -1, blob);
    m.delegate("test_fake", -1, {9});
  }
  {
    MethodBuilder& m = pb.method("execute_fails");  // wrong argument count at execute
    uint32_t x = m.input_tensor(ScalarType::Float32, {2});
    uint32_t d = m.delegate("test_fake", -1, blob);
    m.delegate_call(d, {static_cast<int32_t>(x)});
    m.set_inputs({x});
  }
  PteBytes pte = pb.build();
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();

  ASSERT_EQ(h.load_method("inline"), Error::Ok) << h.message();
  float x[2] = {3, -4};
  TensorHolder in(ScalarType::Float32, {2}, x);
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[0], -3.0f);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[1], 4.0f);

  EXPECT_EQ(h.load_method("bad_blob"), Error::InvalidProgram);
  EXPECT_NE(std::strstr(h.message(), "blob must be 4 bytes"), nullptr) << h.message();

  EXPECT_EQ(h.load_method("missing_backend"), Error::NotSupported);
  EXPECT_NE(std::strstr(h.message(), "no_such_backend"), nullptr) << h.message();

  EXPECT_EQ(h.load_method("unavailable"), Error::NotSupported);
  EXPECT_NE(std::strstr(h.message(), "test_unavailable"), nullptr) << h.message();
  EXPECT_NE(std::strstr(h.message(), "the test accelerator is unplugged"), nullptr) << h.message();

  stats = testing::FakeBackendStats();
  EXPECT_EQ(h.load_method("second_fails"), Error::InvalidProgram);
  EXPECT_EQ(stats.init_calls, 2);
  EXPECT_EQ(stats.init_ok, 1);
  EXPECT_EQ(stats.destroy_calls, 1);

  ASSERT_EQ(h.load_method("execute_fails"), Error::Ok) << h.message();
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  EXPECT_EQ(h.method().execute(), Error::InvalidArgument);
  EXPECT_NE(std::strstr(h.method().last_error_message(), "test_fake: expects"), nullptr)
      << h.method().last_error_message();
}

}  // namespace
}  // namespace ember
