// Grouped matrix multiply of mixture-of-experts layers: rows of `self` [T, K] are grouped by
// expert, group g being rows [offs[g-1], offs[g]) (offs[-1] = 0, offs int32 ascending), and
// group g is multiplied by mat2[g] [K, N]: out [T, N]. Rows past the last offset (no expert)
// come out zero.
//
// Registered as aten::_grouped_mm (2-D x 3-D with offs; PyTorch 2.8+) and as
// transformers::grouped_mm_fallback(input, weight, offs), the operator Hugging Face
// transformers' MoE layers (Mixtral, Qwen-MoE, OLMoE...) export with.
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

Error grouped_mm_2d_3d(KernelArgs& a, const Tensor* x, const Tensor* w, const Tensor* offs, const Tensor* bias,
                       Tensor* out) {
  if (!require_contiguous(a, x) || !require_contiguous(a, w) || !require_contiguous(a, offs)) return a.error();
  if (x->rank != 2 || w->rank != 3) return a.fail("supported form: self [T, K] and mat2 [groups, K, N] with offs"), a.error();
  if (!is_floating(x->dtype) || w->dtype != x->dtype || out->dtype != x->dtype) {
    return a.fail("self, mat2 and out must share one floating dtype"), a.error();
  }
  if (offs->dtype != ScalarType::Int32 || offs->rank != 1) return a.fail("offs must be int32 [groups]"), a.error();
  const int64_t rows = x->sizes[0], k = x->sizes[1], groups = w->sizes[0], n = w->sizes[2];
  if (w->sizes[1] != k) return a.fail("mat2's K does not match self's"), a.error();
  if (offs->sizes[0] != groups) return a.fail("offs must have one entry per group of mat2"), a.error();
  if (bias != nullptr) {
    if (!require_contiguous(a, bias)) return a.error();
    if (bias->dtype != x->dtype || bias->rank != 2 || bias->sizes[0] != groups || bias->sizes[1] != n) {
      return a.fail("bias must be [groups, N] of self's dtype"), a.error();
    }
  }
  Shape s;
  s.push(rows);
  s.push(n);
  if (!resize_to(a, out, s)) return a.error();
  const int32_t* ends = offs->data_as<int32_t>();
  int64_t start = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = ends[g];
    if (end < start || end > rows) return a.fail("offs must be ascending and at most self's row count"), a.error();
    for (int64_t r = start; r < end; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = bias != nullptr ? load_as<double>(bias->data, bias->dtype, g * n + j) : 0.0;
        for (int64_t p = 0; p < k; ++p) {
          acc += load_as<double>(x->data, x->dtype, r * k + p) * load_as<double>(w->data, w->dtype, (g * k + p) * n + j);
        }
        store_as<double>(out->data, out->dtype, r * n + j, acc);
      }
    }
    start = end;
  }
  for (int64_t i = start * n; i < rows * n; ++i) store_as<double>(out->data, out->dtype, i, 0.0);
  return Error::Ok;
}

// aten::_grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None) -> out
Error grouped_mm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* w = a.tensor(1);
  const Tensor* offs = a.optional_tensor(2);
  const Tensor* bias = a.optional_tensor(3);
  Tensor* out = a.out(5);
  if (!a.ok()) return a.error();
  if (offs == nullptr) return a.fail("only the form with offs (groups of rows) is supported"), a.error();
  if (!a.is_none(4)) return a.fail("out_dtype is not supported"), a.error();
  return grouped_mm_2d_3d(a, x, w, offs, bias, out);
}

// transformers::grouped_mm_fallback(input, weight, offs) -> out
Error transformers_grouped_mm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* w = a.tensor(1);
  const Tensor* offs = a.tensor(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  return grouped_mm_2d_3d(a, x, w, offs, nullptr, out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_grouped_mm.default", grouped_mm);
EMBER_REGISTER_KERNEL("transformers::grouped_mm_fallback.default", transformers_grouped_mm);

}  // namespace portable
}  // namespace ember
