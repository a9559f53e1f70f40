// softmax / log_softmax along one dimension: _softmax.default, softmax.int,
// _log_softmax.default, log_softmax.int, _safe_softmax.default (rows that are entirely -inf
// give zeros instead of NaN). float32 -> float32 has a fast path; other floating dtypes,
// the `dtype` argument and half_to_float go through a generic path (double for float64).
// Max-subtracted (stable); parallel over the rows (outer x inner positions).
#include <cmath>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

template <bool kLog>
void softmax_rows(KernelContext& ctx, const float* x, float* out, int64_t outer, int64_t dim, int64_t inner) {
  if (inner == 1) {
    parallel_for_range(ctx, outer, 8, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = x + r * dim;
        float* o = out + r * dim;
        float m = -INFINITY;
        for (int64_t i = 0; i < dim; ++i) m = xr[i] > m ? xr[i] : m;
        if (std::isinf(m) && m < 0) m = 0.0f;  // all -inf: exp gives 0 / 0 = NaN like PyTorch
        float sum = 0.0f;
        if (kLog) {
          for (int64_t i = 0; i < dim; ++i) sum += std::exp(xr[i] - m);
          const float lse = std::log(sum);
          for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] - m - lse;
        } else {
          for (int64_t i = 0; i < dim; ++i) {
            o[i] = std::exp(xr[i] - m);
            sum += o[i];
          }
          const float inv = 1.0f / sum;
          for (int64_t i = 0; i < dim; ++i) o[i] *= inv;
        }
      }
    });
    return;
  }
  // Strided: process one outer slice at a time, vectorising across the inner positions.
  parallel_for_range(ctx, outer, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xs = x + r * dim * inner;
      float* os = out + r * dim * inner;
      for (int64_t j = 0; j < inner; ++j) {
        float m = -INFINITY;
        for (int64_t i = 0; i < dim; ++i) m = xs[i * inner + j] > m ? xs[i * inner + j] : m;
        if (std::isinf(m) && m < 0) m = 0.0f;
        float sum = 0.0f;
        for (int64_t i = 0; i < dim; ++i) sum += std::exp(xs[i * inner + j] - m);
        if (kLog) {
          const float lse = std::log(sum);
          for (int64_t i = 0; i < dim; ++i) os[i * inner + j] = xs[i * inner + j] - m - lse;
        } else {
          const float inv = 1.0f / sum;
          for (int64_t i = 0; i < dim; ++i) os[i * inner + j] = std::exp(xs[i * inner + j] - m) * inv;
        }
      }
    }
  });
}

// Any-dtype path: values are converted to the output dtype first (as PyTorch's `dtype=`
// argument does), then computed in double for float64 outputs and float otherwise.
template <typename C>
void softmax_generic(KernelContext& ctx, const Tensor& in, Tensor& out, bool log, bool safe, int64_t outer,
                     int64_t dim, int64_t inner) {
  const ScalarType it = in.dtype, ot = out.dtype;
  const bool reround = it != ot;
  auto load = [&](int64_t i) -> C {
    if (!reround) return load_as<C>(in.data, it, i);
    uint64_t tmp = 0;  // round through the output dtype
    store_as<double>(&tmp, ot, 0, load_as<double>(in.data, it, i));
    return load_as<C>(&tmp, ot, 0);
  };
  parallel_for_range(ctx, outer * inner, 8, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t base = (row / inner) * dim * inner + row % inner;
      C m = -static_cast<C>(INFINITY);
      for (int64_t i = 0; i < dim; ++i) {
        const C v = load(base + i * inner);
        if (v > m || std::isnan(v)) m = v;
      }
      if (safe && std::isinf(m) && m < 0) {  // every entry -inf: zeros
        for (int64_t i = 0; i < dim; ++i) store_as<C>(out.data, ot, base + i * inner, C(0));
        continue;
      }
      if (std::isinf(m) && m < 0) m = 0;
      C sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += std::exp(load(base + i * inner) - m);
      const C lse = std::log(sum);
      for (int64_t i = 0; i < dim; ++i) {
        const C v = load(base + i * inner) - m;
        store_as<C>(out.data, ot, base + i * inner, log ? v - lse : std::exp(v) / sum);
      }
    }
  });
}

// (self, dim, half_to_float | dtype?) -> out
template <bool kLog, bool kDtypeArg, bool kSafe = false>
Error softmax_op(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.tensor(3);
  if (!a.ok()) return a.error();
  if (kDtypeArg) {
    const int64_t dtype = a.optional_int(2, static_cast<int64_t>(in->dtype));
    if (!a.ok()) return a.error();
    if (static_cast<int64_t>(out->dtype) != dtype) {
      return ctx.fail(Error::InvalidArgument, "output dtype differs from the dtype argument");
    }
  } else if (a.bool_value(2)) {
    if (in->dtype != ScalarType::Float16 || out->dtype != ScalarType::Float32) {
      return ctx.fail(Error::InvalidArgument, "half_to_float needs a float16 input and a float32 output");
    }
  } else if (out->dtype != in->dtype) {
    return ctx.fail(Error::InvalidArgument, "output dtype must match the input");
  }
  if (!a.ok()) return a.error();
  if (!is_floating(out->dtype)) return ctx.fail(Error::InvalidArgument, "softmax needs a floating-point output");
  if (!in->is_contiguous() || !out->is_contiguous()) {
    return ctx.fail(Error::NotSupported, "non-contiguous dim order is not supported");
  }
  dim = wrap_dim(dim, in->rank);
  if (dim < 0) return ctx.fail(Error::InvalidArgument, "dim out of range");
  if (!resize_out(a, out, in->sizes, in->rank)) return a.error();
  int64_t outer = 1, inner = 1;
  const int64_t size = in->rank == 0 ? 1 : in->sizes[dim];
  for (int d = 0; d < dim; ++d) outer *= in->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < in->rank; ++d) inner *= in->sizes[d];
  if (in->numel() == 0) return Error::Ok;
  if (!kSafe && in->dtype == ScalarType::Float32 && out->dtype == ScalarType::Float32) {
    softmax_rows<kLog>(ctx, in->data_as<float>(), out->data_as<float>(), outer, size, inner);
  } else if (out->dtype == ScalarType::Float64) {
    softmax_generic<double>(ctx, *in, *out, kLog, kSafe, outer, size, inner);
  } else {
    softmax_generic<float>(ctx, *in, *out, kLog, kSafe, outer, size, inner);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_softmax.default", (softmax_op<false, false>));
EMBER_REGISTER_KERNEL("aten::softmax.int", (softmax_op<false, true>));
EMBER_REGISTER_KERNEL("aten::_log_softmax.default", (softmax_op<true, false>));
EMBER_REGISTER_KERNEL("aten::log_softmax.int", (softmax_op<true, true>));
EMBER_REGISTER_KERNEL("aten::_safe_softmax.default", (softmax_op<false, true, true>));

}  // namespace portable
}  // namespace ember
