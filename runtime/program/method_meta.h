// MethodMeta: what a method takes and returns and how much memory it needs, read straight
// from the program without initialising anything. Valid while its Program lives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember {
namespace schema {
struct Method;
}

struct TensorInfo {
  ScalarType dtype = ScalarType::Float32;
  Span<const int64_t> max_sizes;  // upper bounds (the sizes, for static tensors)
  bool dynamic = false;
  size_t nbytes = 0;              // capacity at the upper bounds
};

class MethodMeta {
 public:
  explicit MethodMeta(const schema::Method* method) : method_(method) {}

  const char* name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  ValueTag input_tag(size_t index) const;   // None when out of range
  ValueTag output_tag(size_t index) const;
  Result<TensorInfo> input_tensor_info(size_t index) const;   // InvalidArgument if not a tensor
  Result<TensorInfo> output_tensor_info(size_t index) const;
  size_t num_arenas() const;
  Result<size_t> arena_size(size_t index) const;
  size_t num_instructions() const;
  size_t num_delegates() const;
  // The backend id of delegate call `index` ("xnnpack", ...); "" when out of range.
  const char* delegate_backend_id(size_t index) const;
  // Tensors that persist across execute() calls (e.g. a KV cache).
  size_t num_mutable_state_tensors() const;

 private:
  const schema::Method* method_;
};

}  // namespace ember
