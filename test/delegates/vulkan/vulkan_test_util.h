// Helpers for the Vulkan delegate tests: host tensors, a runner that builds a blob, inits the
// backend directly (no Program) and executes it, deterministic data, naive index helpers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "delegates/vulkan/runtime/vulkan_graph.h"
#include "delegates/vulkan/vulkan_blob_builder.h"
#include "runtime/backend/backend.h"

namespace ember {
namespace vulkan {
namespace testing {

using Floats = std::vector<float>;

// Deterministic values in [lo, hi).
inline Floats random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Floats v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  }
  return v;
}

struct HostTensor {
  ScalarType dtype = ScalarType::Float32;
  Sizes sizes;
  std::vector<uint8_t> bytes;
  static HostTensor f32(Sizes s, const Floats& v) {
    HostTensor t{ScalarType::Float32, std::move(s), {}};
    t.bytes.resize(v.size() * 4);
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());  // empty: no data pointer
    return t;
  }
  static HostTensor i64(Sizes s, const std::vector<int64_t>& v) {
    HostTensor t{ScalarType::Int64, std::move(s), {}};
    t.bytes.resize(v.size() * 8);
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());  // empty: no data pointer
    return t;
  }
  static HostTensor i32(Sizes s, const std::vector<int32_t>& v) {
    HostTensor t{ScalarType::Int32, std::move(s), {}};
    t.bytes.resize(v.size() * 4);
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());  // empty: no data pointer
    return t;
  }
};

// Wraps a HostTensor as an EValue (sizes copied so outputs may be resized).
struct Arg {
  std::vector<int64_t> sizes;
  Tensor tensor;
  EValue value;
  explicit Arg(HostTensor& h) : sizes(h.sizes) {
    tensor.dtype = h.dtype;
    tensor.rank = static_cast<uint8_t>(sizes.size());
    tensor.sizes = sizes.data();
    tensor.max_sizes = sizes.data();
    tensor.data = h.bytes.data();
    tensor.capacity_bytes = h.bytes.size();
    value.tag = ValueTag::Tensor;
    value.as_tensor = &tensor;
  }
};

// Tests run on lavapipe: allow the CPU device, and keep Mesa from writing a shader cache. Set
// once per test binary at static initialisation, before any test creates a Vulkan device.
inline const bool kLavapipeEnvSet = [] {
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  return true;
}();

inline bool vulkan_usable() { return vulkan_backend().is_available(); }

#define EMBER_SKIP_WITHOUT_VULKAN()                                                  \
  do {                                                                               \
    if (!::ember::vulkan::testing::vulkan_usable()) GTEST_SKIP() << "no Vulkan device"; \
  } while (0)

// fp16 storage graphs also need 16-bit storage buffers (storageBuffer16BitAccess).
#define EMBER_SKIP_WITHOUT_FP16()                                                                  \
  do {                                                                                             \
    if (!::ember::vulkan::testing::vulkan_usable()) GTEST_SKIP() << "no Vulkan device";            \
    if (!::ember::vulkan::fp16_supported()) GTEST_SKIP() << "device lacks storageBuffer16BitAccess"; \
  } while (0)

// A backend handle that is destroyed with the object.
class Delegate {
 public:
  Error init(const std::vector<uint8_t>& blob, const Program* program = nullptr) {
    BackendInitContext ctx{nullptr, program, nullptr, &diag_};
    Result<void*> h = vulkan_backend().init(ctx, Span<const uint8_t>(blob.data(), blob.size()),
                                            Span<const CompileSpecView>());
    if (!h.ok()) return h.error();
    handle_ = *h;
    return Error::Ok;
  }
  Error execute(std::vector<HostTensor>& ins, std::vector<HostTensor>& outs) {
    std::vector<std::unique_ptr<Arg>> args;
    std::vector<EValue*> ptrs;
    for (HostTensor& h : ins) args.emplace_back(new Arg(h));
    for (HostTensor& h : outs) args.emplace_back(new Arg(h));
    for (auto& a : args) ptrs.push_back(&a->value);
    BackendExecuteContext ctx{nullptr, nullptr, &diag_};
    return vulkan_backend().execute(ctx, handle_, ptrs.data(), ptrs.size());
  }
  ~Delegate() {
    if (handle_ != nullptr) vulkan_backend().destroy(handle_);
  }
  const char* message() const { return diag_.text(); }
  // The backend's handle is the VulkanGraph (vulkan_backend.cc).
  const VulkanGraph* graph() const { return static_cast<const VulkanGraph*>(handle_); }

 private:
  void* handle_ = nullptr;
  Diagnostic diag_;
};

// Builds `b`, runs it on `ins` and returns the float outputs (the ids marked by output()).
inline ::testing::AssertionResult run(const VulkanBlobBuilder& b, std::vector<HostTensor> ins,
                                      const std::vector<int>& out_ids, std::vector<Floats>* outs,
                                      int repeats = 1) {
  if (!b.ok()) return ::testing::AssertionFailure() << "builder: " << b.error();
  std::vector<uint8_t> blob = b.build();
  Delegate d;
  Error e = d.init(blob);
  if (e != Error::Ok) return ::testing::AssertionFailure() << "init: " << error_name(e) << ": " << d.message();
  std::vector<HostTensor> os;
  for (int id : out_ids) os.push_back(HostTensor::f32(b.sizes(id), Floats(numel(b.sizes(id)), NAN)));
  for (int r = 0; r < repeats; ++r) {
    e = d.execute(ins, os);
    if (e != Error::Ok) return ::testing::AssertionFailure() << "execute: " << error_name(e) << ": " << d.message();
  }
  outs->clear();
  for (HostTensor& o : os) {
    Floats v(o.bytes.size() / 4);
    std::memcpy(v.data(), o.bytes.data(), o.bytes.size());
    outs->push_back(v);
  }
  return ::testing::AssertionSuccess();
}

// Random weight-only quantized values (bits 8: -127..127, bits 4: -8..7) from uniform draws.
inline std::vector<int> random_quantized(size_t n, int bits, uint32_t seed) {
  const Floats r = random_floats(n, seed, 0, 1);
  const int lo = bits == 8 ? -127 : -8, span = bits == 8 ? 255 : 16;
  std::vector<int> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = lo + std::min(span - 1, static_cast<int>(r[i] * span));
  return q;
}

// Their constant bytes: int8, or int4 packed two per byte (value + 8, low nibble first), as
// kernels/portable/quantized/weight_only_ops.cc reads them.
inline std::vector<uint8_t> pack_quantized(const std::vector<int>& q, int bits) {
  std::vector<uint8_t> bytes(bits == 8 ? q.size() : q.size() / 2, 0);
  for (size_t i = 0; i < q.size(); ++i) {
    if (bits == 8) bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(q[i]));
    else bytes[i / 2] |= static_cast<uint8_t>((q[i] + 8) << (i % 2 ? 4 : 0));
  }
  return bytes;
}

inline HostTensor nan_out(const Sizes& s) { return HostTensor::f32(s, Floats(static_cast<size_t>(numel(s)), NAN)); }

// The first numel(sizes) floats of an output.
inline Floats values(const HostTensor& t) {
  Floats v(static_cast<size_t>(numel(t.sizes)));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

inline ::testing::AssertionResult near(const Floats& got, const Floats& want, float tol = 1e-4f) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    float d = std::fabs(got[i] - want[i]);
    if (!(d <= tol * (1.0f + std::fabs(want[i]))) && !(std::isinf(want[i]) && got[i] == want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Relative L2 distance ||got - want|| / ||want|| (||got - want|| when want is all zero);
// infinity for different sizes or a non-finite difference.
inline double rel_l2(const Floats& got, const Floats& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  if (got.size() != want.size() || !std::isfinite(num)) return INFINITY;
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Linear index into `in` (right-aligned, broadcast) of the element at `out_index` of `out`.
inline int64_t broadcast_index(const Sizes& out, int64_t out_index, const Sizes& in) {
  int64_t idx = 0, stride = 1;
  size_t lead = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    int64_t i = out_index % out[d];
    out_index /= out[d];
    if (d >= lead) {
      int64_t s = in[d - lead];
      if (s != 1) idx += i * stride;
      stride *= s;
    }
  }
  return idx;
}

}  // namespace testing
}  // namespace vulkan
}  // namespace ember
