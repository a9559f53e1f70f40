// Tensor helpers for the Module API.
//
// TensorPtr holds a Tensor plus the storage for its sizes and, optionally, its data:
//  - from_blob(): wraps caller memory without copying; the caller keeps it alive while the
//    TensorPtr is used by execute().
//  - zeros/ones/full/rand/make_tensor: own their data (64-byte aligned).
// Copying a TensorPtr shares the owned data (reference counted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "extension/module/status.h"

namespace ember {

class TensorPtr {
 public:
  TensorPtr() = default;
  TensorPtr(ScalarType dtype, std::vector<int64_t> sizes, void* data,
            std::shared_ptr<void> owner = nullptr);
  // Copies share the data; each copy owns its sizes (the Tensor points at them).
  TensorPtr(const TensorPtr& other) { *this = other; }
  TensorPtr& operator=(const TensorPtr& other) {
    sizes_ = other.sizes_;
    owner_ = other.owner_;
    tensor_ = other.tensor_;
    tensor_.sizes = sizes_.data();
    tensor_.max_sizes = sizes_.data();
    return *this;
  }

  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  ScalarType dtype() const { return tensor_.dtype; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  int64_t numel() const { return tensor_.numel(); }
  size_t nbytes() const { return tensor_.nbytes(); }
  template <typename T>
  T* data() const { return static_cast<T*>(tensor_.data); }
  void* raw_data() const { return tensor_.data; }

 private:
  std::vector<int64_t> sizes_;
  std::shared_ptr<void> owner_;
  Tensor tensor_;
};

// No copy: `data` must outlive every use of the returned tensor.
TensorPtr from_blob(void* data, std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float32);
// Owning tensors.
TensorPtr empty(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float32);
TensorPtr zeros(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float32);
TensorPtr ones(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float32);
TensorPtr full(std::vector<int64_t> sizes, double value, ScalarType dtype = ScalarType::Float32);
// Uniform [0, 1) for floating dtypes, [0, high) for integer dtypes; deterministic in `seed`.
TensorPtr rand(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float32,
               uint64_t seed = 0, int64_t high = 2);
// Copies `values` into a new owning float32 / int64 tensor.
TensorPtr make_tensor(const std::vector<float>& values, std::vector<int64_t> sizes);
TensorPtr make_tensor(const std::vector<int64_t>& values, std::vector<int64_t> sizes);

// Element i of a tensor of any dtype, as double.
double element_as_double(const Tensor& tensor, int64_t index);
// Writes `value` into element i, converting to the tensor's dtype.
void set_element_from_double(Tensor& tensor, int64_t index, double value);

// .npy files (format 1.0/2.0, little-endian, C order; dtypes f2 f4 f8 i1 i2 i4 i8 u1 b1).
Expected<TensorPtr> read_npy(const std::string& path);
Status write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember
