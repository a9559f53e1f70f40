#include "extension/module/tensor_ptr.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "runtime/core/float16.h"

namespace ember {
namespace {

std::shared_ptr<void> allocate_owned(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, bytes == 0 ? 64 : bytes) != 0) return nullptr;
  std::memset(p, 0, bytes == 0 ? 64 : bytes);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

size_t numel_of(const std::vector<int64_t>& sizes) {
  size_t n = 1;
  for (int64_t s : sizes) n *= static_cast<size_t>(s < 0 ? 0 : s);
  return n;
}

}  // namespace

TensorPtr::TensorPtr(ScalarType dtype, std::vector<int64_t> sizes, void* data,
                     std::shared_ptr<void> owner)
    : sizes_(std::move(sizes)), owner_(std::move(owner)) {
  tensor_.dtype = dtype;
  tensor_.rank = static_cast<uint8_t>(sizes_.size());
  tensor_.sizes = sizes_.data();
  tensor_.max_sizes = sizes_.data();
  tensor_.data = data;
  tensor_.capacity_bytes = numel_of(sizes_) * element_size(dtype);
}

TensorPtr from_blob(void* data, std::vector<int64_t> sizes, ScalarType dtype) {
  return TensorPtr(dtype, std::move(sizes), data);
}

TensorPtr empty(std::vector<int64_t> sizes, ScalarType dtype) {
  std::shared_ptr<void> owner = allocate_owned(numel_of(sizes) * element_size(dtype));
  void* data = owner.get();
  return TensorPtr(dtype, std::move(sizes), data, std::move(owner));
}

TensorPtr zeros(std::vector<int64_t> sizes, ScalarType dtype) { return empty(std::move(sizes), dtype); }

TensorPtr full(std::vector<int64_t> sizes, double value, ScalarType dtype) {
  TensorPtr t = empty(std::move(sizes), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) set_element_from_double(t.tensor(), i, value);
  return t;
}

TensorPtr ones(std::vector<int64_t> sizes, ScalarType dtype) { return full(std::move(sizes), 1.0, dtype); }

TensorPtr rand(std::vector<int64_t> sizes, ScalarType dtype, uint64_t seed, int64_t high) {
  TensorPtr t = empty(std::move(sizes), dtype);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = is_floating(dtype) ? uniform(gen)
                                  : static_cast<double>(gen() % static_cast<uint64_t>(high < 1 ? 1 : high));
    set_element_from_double(t.tensor(), i, v);
  }
  return t;
}

TensorPtr make_tensor(const std::vector<float>& values, std::vector<int64_t> sizes) {
  TensorPtr t = empty(std::move(sizes), ScalarType::Float32);
  std::memcpy(t.raw_data(), values.data(), std::min(values.size() * 4, t.nbytes()));
  return t;
}

TensorPtr make_tensor(const std::vector<int64_t>& values, std::vector<int64_t> sizes) {
  TensorPtr t = empty(std::move(sizes), ScalarType::Int64);
  std::memcpy(t.raw_data(), values.data(), std::min(values.size() * 8, t.nbytes()));
  return t;
}

double element_as_double(const Tensor& t, int64_t i) {
  const void* d = t.data;
  switch (t.dtype) {
    case ScalarType::Float32: return static_cast<const float*>(d)[i];
    case ScalarType::Float64: return static_cast<const double*>(d)[i];
    case ScalarType::Float16: return half_to_float(static_cast<const uint16_t*>(d)[i]);
    case ScalarType::BFloat16: return bf16_to_float(static_cast<const uint16_t*>(d)[i]);
    case ScalarType::Int8: return static_cast<const int8_t*>(d)[i];
    case ScalarType::Int16: return static_cast<const int16_t*>(d)[i];
    case ScalarType::Int32: return static_cast<const int32_t*>(d)[i];
    case ScalarType::Int64: return static_cast<double>(static_cast<const int64_t*>(d)[i]);
    case ScalarType::UInt8: return static_cast<const uint8_t*>(d)[i];
    case ScalarType::Bool: return static_cast<const uint8_t*>(d)[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

void set_element_from_double(Tensor& t, int64_t i, double v) {
  void* d = t.data;
  switch (t.dtype) {
    case ScalarType::Float32: static_cast<float*>(d)[i] = static_cast<float>(v); break;
    case ScalarType::Float64: static_cast<double*>(d)[i] = v; break;
    case ScalarType::Float16: static_cast<uint16_t*>(d)[i] = float_to_half(static_cast<float>(v)); break;
    case ScalarType::BFloat16: static_cast<uint16_t*>(d)[i] = float_to_bf16(static_cast<float>(v)); break;
    case ScalarType::Int8: static_cast<int8_t*>(d)[i] = static_cast<int8_t>(v); break;
    case ScalarType::Int16: static_cast<int16_t*>(d)[i] = static_cast<int16_t>(v); break;
    case ScalarType::Int32: static_cast<int32_t*>(d)[i] = static_cast<int32_t>(v); break;
    case ScalarType::Int64: static_cast<int64_t*>(d)[i] = static_cast<int64_t>(v); break;
    case ScalarType::UInt8: static_cast<uint8_t*>(d)[i] = static_cast<uint8_t>(v); break;
    case ScalarType::Bool: static_cast<uint8_t*>(d)[i] = v != 0.0; break;
  }
}

}  // namespace ember
