// Typed access to kernel arguments, with checks that turn a malformed call into an error.
//
// Usage inside a kernel:
//   KernelArgs a(ctx, args, n, "aten::add.Tensor");
//   if (!a.expect(4)) return a.error();            // 3 schema args + 1 output
//   Tensor* self = a.tensor(0); double alpha = a.scalar(2); Tensor* out = a.tensor(3);
//   if (!a.ok()) return a.error();
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

class KernelArgs {
 public:
  KernelArgs(KernelContext& ctx, EValue** args, size_t n) : ctx_(ctx), args_(args), n_(n) {}

  // Checks the argument count; records an error when it differs.
  bool expect(size_t count) {
    if (n_ != count) fail("wrong number of arguments");
    return ok_;
  }
  bool ok() const { return ok_; }
  Error error() const { return error_; }
  size_t size() const { return n_; }
  EValue& at(size_t i) { return *args_[i]; }

  // Tensor argument; null (and an error) when it is not a tensor, or when its current sizes
  // do not fit the memory behind it (e.g. an unplanned tensor with no storage), so no kernel
  // reads or writes past a tensor's planned bytes whatever the program says.
  Tensor* tensor(size_t i) {
    if (i >= n_ || !args_[i]->is_tensor()) return fail_null("expected a tensor argument");
    Tensor* t = args_[i]->as_tensor;
    if (!t->fits_storage()) return fail_null("a tensor argument does not fit the planned shape/capacity");
    return t;
  }
  // Optional tensor: null when None.
  Tensor* optional_tensor(size_t i) {
    if (i >= n_) return fail_null("missing argument");
    if (args_[i]->is_none()) return nullptr;
    return tensor(i);
  }
  int64_t int_value(size_t i) {
    if (i >= n_) return fail_zero("missing argument");
    if (args_[i]->is_int()) return args_[i]->as_int;
    if (args_[i]->is_bool()) return args_[i]->as_bool ? 1 : 0;
    return fail_zero("expected an int argument");
  }
  // Optional int: `fallback` when None.
  int64_t optional_int(size_t i, int64_t fallback) {
    if (i < n_ && args_[i]->is_none()) return fallback;
    return int_value(i);
  }
  bool is_none(size_t i) const { return i >= n_ || args_[i]->is_none(); }
  // Scalar (Int, Double or Bool) as double.
  double scalar(size_t i) {
    if (i >= n_) return fail_zero("missing argument");
    const EValue& v = *args_[i];
    if (v.is_int() || v.is_double() || v.is_bool()) return v.to_double();
    return fail_zero("expected a scalar argument");
  }
  bool bool_value(size_t i) {
    if (i >= n_) return fail_zero("missing argument") != 0;
    if (args_[i]->is_bool()) return args_[i]->as_bool;
    if (args_[i]->is_int()) return args_[i]->as_int != 0;
    return fail_zero("expected a bool argument") != 0;
  }
  Span<const int64_t> int_list(size_t i) {
    if (i < n_ && args_[i]->is_int_list()) return args_[i]->as_int_list.get();
    if (i < n_ && args_[i]->is_int()) {  // a single int where a list is allowed
      return Span<const int64_t>(&args_[i]->as_int, 1);
    }
    fail("expected an int list argument");
    return Span<const int64_t>();
  }
  // Tensor list argument; its tensors (None elements are null) checked as tensor() checks one
  // (a recurrent layer's weights in a list reached a GEMM with no storage behind them).
  Span<Tensor* const> tensor_list(size_t i) {
    if (i < n_ && args_[i]->is_tensor_list()) {
      Span<Tensor* const> list = args_[i]->as_tensor_list;
      for (Tensor* t : list) {
        if (t != nullptr && !t->fits_storage()) {
          fail("a tensor in a list argument does not fit the planned shape/capacity");
          return Span<Tensor* const>();
        }
      }
      return list;
    }
    fail("expected a tensor list argument");
    return Span<Tensor* const>();
  }

  // String argument (e.g. rounding_mode); false when not a string.
  bool is_string(size_t i) const { return i < n_ && args_[i]->tag == ValueTag::String; }
  // True when argument i is the string `s`.
  bool string_is(size_t i, const char* s) const {
    if (!is_string(i)) return false;
    const StringValue& v = args_[i]->as_string;
    size_t k = 0;
    for (; k < v.size; ++k) {
      if (s[k] == '\0' || s[k] != v.data[k]) return false;
    }
    return s[k] == '\0';
  }
  // Optional scalar: false (and *value untouched) when None.
  bool optional_scalar(size_t i, double* value) {
    if (is_none(i)) return false;
    *value = scalar(i);
    return ok_;
  }
  // Output tensor at index i (same as tensor(i); named for readability).
  Tensor* out(size_t i) { return tensor(i); }

  // Records a failure (first one wins) and returns false.
  bool fail(const char* message, Error error = Error::InvalidArgument) {
    if (ok_) {
      ok_ = false;
      error_ = ctx_.fail(error, message);
    }
    return false;
  }

 private:
  Tensor* fail_null(const char* m) { fail(m); return nullptr; }
  int64_t fail_zero(const char* m) { fail(m); return 0; }

  KernelContext& ctx_;
  EValue** args_;
  size_t n_;
  bool ok_ = true;
  Error error_ = Error::Ok;
};

// Wraps a negative dim into [0, rank). Returns -1 when out of range.
inline int64_t wrap_dim(int64_t dim, int64_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) return -1;
  return dim < 0 ? dim + r : dim;
}

// Element i of an int list where a single value applies to every dimension (PyTorch's rule
// for kernel_size, stride, padding, ...); `fallback` when the list is empty.
inline int64_t list_at(Span<const int64_t> list, size_t i, int64_t fallback) {
  if (list.size() == 0) return fallback;
  if (list.size() == 1) return list[0];
  return i < list.size() ? list[i] : fallback;
}

}  // namespace portable
}  // namespace ember
