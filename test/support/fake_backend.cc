#include "test/support/fake_backend.h"

#include <cstring>

#include "runtime/backend/backend.h"
#include "runtime/core/tensor.h"

namespace ember {
namespace testing {
namespace {

struct Handle {
  float scale;
  float bias;
};

bool usable_f32(const EValue* v) {
  if (v == nullptr || !v->is_tensor() || v->as_tensor == nullptr) return false;
  const Tensor& t = *v->as_tensor;
  if (t.dtype != ScalarType::Float32 || !t.is_contiguous()) return false;
  if (t.nbytes() > t.capacity_bytes) return false;
  return t.numel() == 0 || t.data != nullptr;
}

class FakeBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<void*> init(BackendInitContext& context, Span<const uint8_t> blob,
                     Span<const CompileSpecView> compile_specs) override {
    ++fake_backend_stats().init_calls;
    if (blob.size() != 4) {
      return fail(context.diag, Error::InvalidProgram, "test_fake: blob must be 4 bytes, got %zu", blob.size());
    }
    Handle* h = context.method_allocator->allocate_array<Handle>(1);
    if (h == nullptr) {
      return fail(context.diag, Error::OutOfMemory,
                  "test_fake: method allocator too small: %zu bytes given, at least %zu needed",
                  context.method_allocator->size(), context.method_allocator->bytes_needed());
    }
    std::memcpy(&h->scale, blob.data(), 4);
    h->bias = 0;
    for (const CompileSpecView& spec : compile_specs) {
      if (std::strcmp(spec.key, "bias") == 0) {
        if (spec.value.size() != 4) return fail(context.diag, Error::InvalidProgram, "test_fake: bad bias");
        std::memcpy(&h->bias, spec.value.data(), 4);
      }
    }
    ++fake_backend_stats().init_ok;
    return static_cast<void*>(h);
  }

  Error execute(BackendExecuteContext& context, void* handle, EValue** args, size_t num_args) override {
    ++fake_backend_stats().execute_calls;
    if (num_args != 2 || !usable_f32(args[0]) || !args[1]->is_tensor() ||
        args[1]->as_tensor->dtype != ScalarType::Float32) {
      return fail(context.diag, Error::InvalidArgument, "test_fake: expects (in f32, out f32)");
    }
    const Tensor& in = *args[0]->as_tensor;
    Tensor& out = *args[1]->as_tensor;
    Error err = resize_tensor(out, Span<const int64_t>(in.sizes, in.rank));
    if (err != Error::Ok) return fail(context.diag, err, "test_fake: output does not fit");
    if (!usable_f32(args[1])) return fail(context.diag, Error::InvalidArgument, "test_fake: bad output");
    const Handle& h = *static_cast<const Handle*>(handle);
    for (int64_t i = 0; i < in.numel(); ++i) {
      out.data_as<float>()[i] = in.data_as<const float>()[i] * h.scale + h.bias;
    }
    return Error::Ok;
  }

  void destroy(void*) override { ++fake_backend_stats().destroy_calls; }
};

class UnavailableBackend final : public Backend {
 public:
  bool is_available() const override { return false; }
  const char* unavailable_reason() const override { return "the test accelerator is unplugged"; }
  Result<void*> init(BackendInitContext&, Span<const uint8_t>, Span<const CompileSpecView>) override {
    return Error::Internal;  // must never be called
  }
  Error execute(BackendExecuteContext&, void*, EValue**, size_t) override { return Error::Internal; }
  void destroy(void*) override {}
};

FakeBackend g_fake;
UnavailableBackend g_unavailable;
const bool kFakeRegistered = register_backend("test_fake", &g_fake);
const bool kUnavailableRegistered = register_backend("test_unavailable", &g_unavailable);

}  // namespace

FakeBackendStats& fake_backend_stats() {
  static FakeBackendStats stats;
  return stats;
}

bool fake_backends_registered() { return kFakeRegistered && kUnavailableRegistered; }

}  // namespace testing
}  // namespace ember
