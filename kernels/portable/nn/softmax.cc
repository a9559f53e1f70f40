// softmax / log_softmax along one dimension, float32:
// _softmax.default, softmax.int, _log_softmax.default, log_softmax.int.
// Max-subtracted (stable); parallel over the rows (outer x inner positions).
#include <cmath>

#include "kernels/portable/nn/op_helpers.h"
#include "kernels/portable/util/kernel_args.h"
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

// (self, dim, half_to_float | dtype?) -> out
template <bool kLog, bool kDtypeArg>
Error softmax_op(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.tensor(3);
  if (!a.ok()) return a.error();
  if (kDtypeArg) {
    const int64_t dtype = a.optional_int(2, static_cast<int64_t>(ScalarType::Float32));
    if (!a.ok()) return a.error();
    (void)dtype;  // the output's dtype is what counts; it must be float32 too
  } else if (a.bool_value(2)) {
    return ctx.fail(Error::NotSupported, "half_to_float is not supported");
  }
  if (!require_float(a, in) || !require_float(a, out)) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0) return ctx.fail(Error::InvalidArgument, "dim out of range");
  if (!resize_out(a, out, in->sizes, in->rank)) return a.error();
  int64_t outer = 1, inner = 1;
  const int64_t size = in->rank == 0 ? 1 : in->sizes[dim];
  for (int d = 0; d < dim; ++d) outer *= in->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < in->rank; ++d) inner *= in->sizes[d];
  if (in->numel() == 0) return Error::Ok;
  softmax_rows<kLog>(ctx, in->data_as<float>(), out->data_as<float>(), outer, size, inner);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_softmax.default", (softmax_op<false, false>));
EMBER_REGISTER_KERNEL("aten::softmax.int", (softmax_op<false, true>));
EMBER_REGISTER_KERNEL("aten::_log_softmax.default", (softmax_op<true, false>));
EMBER_REGISTER_KERNEL("aten::log_softmax.int", (softmax_op<true, true>));

}  // namespace portable
}  // namespace ember
