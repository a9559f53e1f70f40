#include "test/support/test_kernels.h"

#include <cstring>

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace testing {
namespace {

// A tensor argument a kernel may read (or, after resizing, write) safely.
bool usable(const EValue* v, ScalarType dtype) {
  if (v == nullptr || !v->is_tensor() || v->as_tensor == nullptr) return false;
  const Tensor& t = *v->as_tensor;
  if (t.dtype != dtype || !t.is_contiguous()) return false;
  if (t.rank > 0 && t.sizes == nullptr) return false;
  if (t.nbytes() > t.capacity_bytes) return false;
  return t.numel() == 0 || t.data != nullptr;
}

Error bad_args(KernelContext& ctx) { return ctx.fail(Error::InvalidArgument, "invalid arguments"); }

template <typename T>
constexpr ScalarType dtype_of();
template <>
constexpr ScalarType dtype_of<float>() { return ScalarType::Float32; }
template <>
constexpr ScalarType dtype_of<int64_t>() { return ScalarType::Int64; }

template <typename T>
Error add_kernel(KernelContext& ctx, EValue** args, size_t n) {
  constexpr ScalarType kType = dtype_of<T>();
  if (n != 3 || !usable(args[0], kType) || !usable(args[1], kType) || !args[2]->is_tensor() ||
      args[2]->as_tensor->dtype != kType) {
    return bad_args(ctx);
  }
  const Tensor& a = *args[0]->as_tensor;
  const Tensor& b = *args[1]->as_tensor;
  Tensor& out = *args[2]->as_tensor;
  int rank = a.rank > b.rank ? a.rank : b.rank;
  if (out.rank != rank) return ctx.fail(Error::InvalidArgument, "output rank does not match the broadcast rank");
  int64_t shape[kMaxRank];
  int64_t sa[kMaxRank];
  int64_t sb[kMaxRank];
  for (int d = 0; d < rank; ++d) {
    int da = d - (rank - a.rank);
    int db = d - (rank - b.rank);
    sa[d] = da >= 0 ? a.sizes[da] : 1;
    sb[d] = db >= 0 ? b.sizes[db] : 1;
    if (sa[d] != sb[d] && sa[d] != 1 && sb[d] != 1) {
      return ctx.fail(Error::InvalidArgument, "shapes cannot be broadcast");
    }
    shape[d] = sa[d] == 1 ? sb[d] : sa[d];
  }
  Error err = resize_tensor(out, Span<const int64_t>(shape, static_cast<size_t>(rank)));
  if (err != Error::Ok) return ctx.fail(err, "the output does not fit its planned capacity");
  if (!usable(args[2], kType)) return bad_args(ctx);
  // Broadcast strides: 0 along broadcast dimensions.
  int64_t ca[kMaxRank];
  int64_t cb[kMaxRank];
  contiguous_strides(sa, rank, ca);
  contiguous_strides(sb, rank, cb);
  for (int d = 0; d < rank; ++d) {
    if (sa[d] == 1) ca[d] = 0;
    if (sb[d] == 1) cb[d] = 0;
  }
  const T* pa = a.data_as<const T>();
  const T* pb = b.data_as<const T>();
  T* po = out.data_as<T>();
  int64_t index[kMaxRank] = {0};
  int64_t numel = out.numel();
  int64_t oa = 0;
  int64_t ob = 0;
  for (int64_t i = 0; i < numel; ++i) {
    po[i] = pa[oa] + pb[ob];
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      oa += ca[d];
      ob += cb[d];
      if (index[d] < shape[d]) break;
      oa -= ca[d] * shape[d];
      ob -= cb[d] * shape[d];
      index[d] = 0;
    }
  }
  return Error::Ok;
}

Error matmul_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 3 || !usable(args[0], ScalarType::Float32) || !usable(args[1], ScalarType::Float32) ||
      !args[2]->is_tensor() || args[2]->as_tensor->dtype != ScalarType::Float32) {
    return bad_args(ctx);
  }
  const Tensor& a = *args[0]->as_tensor;
  const Tensor& b = *args[1]->as_tensor;
  Tensor& out = *args[2]->as_tensor;
  if (a.rank != 2 || b.rank != 2 || out.rank != 2 || a.sizes[1] != b.sizes[0]) {
    return ctx.fail(Error::InvalidArgument, "expects [M,K] x [K,N] -> [M,N]");
  }
  int64_t m = a.sizes[0], k = a.sizes[1], nn = b.sizes[1];
  int64_t shape[2] = {m, nn};
  Error err = resize_tensor(out, Span<const int64_t>(shape, 2));
  if (err != Error::Ok) return ctx.fail(err, "the output does not fit its planned capacity");
  if (!usable(args[2], ScalarType::Float32)) return bad_args(ctx);
  const float* pa = a.data_as<const float>();
  const float* pb = b.data_as<const float>();
  float* po = out.data_as<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < nn; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[p * nn + j];
      po[i * nn + j] = acc;
    }
  }
  return Error::Ok;
}

Error add_scalar_int_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 3 || !args[1]->is_int()) return bad_args(ctx);
  int64_t other = args[1]->as_int;
  if (args[0]->is_int() && args[2]->is_int()) {
    args[2]->as_int = args[0]->as_int + other;
    return Error::Ok;
  }
  if (!usable(args[0], ScalarType::Int64) || !args[2]->is_tensor() ||
      args[2]->as_tensor->dtype != ScalarType::Int64) {
    return bad_args(ctx);
  }
  const Tensor& self = *args[0]->as_tensor;
  Tensor& out = *args[2]->as_tensor;
  Error err = resize_tensor(out, Span<const int64_t>(self.sizes, self.rank));
  if (err != Error::Ok) return ctx.fail(err, "the output does not fit its planned capacity");
  if (!usable(args[2], ScalarType::Int64)) return bad_args(ctx);
  int64_t numel = self.numel();
  for (int64_t i = 0; i < numel; ++i) out.data_as<int64_t>()[i] = self.data_as<const int64_t>()[i] + other;
  return Error::Ok;
}

Error lt_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 3 || !args[0]->is_int() || !args[1]->is_int() || !args[2]->is_bool()) return bad_args(ctx);
  args[2]->as_bool = args[0]->as_int < args[1]->as_int;
  return Error::Ok;
}

Error copy_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 2 || !args[0]->is_tensor() || !usable(args[0], args[0]->as_tensor->dtype) ||
      !args[1]->is_tensor() || args[1]->as_tensor->dtype != args[0]->as_tensor->dtype) {
    return bad_args(ctx);
  }
  const Tensor& src = *args[0]->as_tensor;
  Tensor& out = *args[1]->as_tensor;
  Error err = resize_tensor(out, Span<const int64_t>(src.sizes, src.rank));
  if (err != Error::Ok) return ctx.fail(err, "the output does not fit its planned capacity");
  if (!usable(args[1], src.dtype)) return bad_args(ctx);
  if (src.nbytes() > 0) std::memmove(out.data, src.data, src.nbytes());
  return Error::Ok;
}

Error scratch_sum_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 2 || !usable(args[0], ScalarType::Float32) || !usable(args[1], ScalarType::Float32) ||
      args[1]->as_tensor->numel() != 1) {
    return bad_args(ctx);
  }
  const Tensor& src = *args[0]->as_tensor;
  float* scratch = static_cast<float*>(ctx.allocate_temp(src.nbytes() == 0 ? 1 : src.nbytes()));
  if (scratch == nullptr) return ctx.fail(Error::OutOfMemory, "temp allocator too small");
  if (src.nbytes() > 0) std::memcpy(scratch, src.data, src.nbytes());
  float sum = 0;
  for (int64_t i = 0; i < src.numel(); ++i) sum += scratch[i];
  args[1]->as_tensor->data_as<float>()[0] = sum;
  return Error::Ok;
}

Error fail_kernel(KernelContext& ctx, EValue**, size_t) {
  return ctx.fail(Error::InvalidArgument, "this kernel always fails");
}

const bool kRegistered[] = {
    register_kernel("test::add.default", add_kernel<float>, static_cast<int>(ScalarType::Float32)),
    register_kernel("test::add.default", add_kernel<int64_t>, static_cast<int>(ScalarType::Int64)),
    register_kernel("test::matmul.default", matmul_kernel),
    register_kernel("test::add_scalar_int.default", add_scalar_int_kernel),
    register_kernel("test::lt.default", lt_kernel),
    register_kernel("test::copy.default", copy_kernel),
    register_kernel("test::scratch_sum.default", scratch_sum_kernel),
    register_kernel("test::fail.default", fail_kernel),
};

}  // namespace

int num_test_kernels_registered() {
  int n = 0;
  for (bool ok : kRegistered) n += ok ? 1 : 0;
  return n;
}

}  // namespace testing
}  // namespace ember
