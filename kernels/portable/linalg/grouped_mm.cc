// Grouped matrix multiply of mixture-of-experts layers: rows of `self` [T, K] are grouped by
// expert, group g being rows [offs[g-1], offs[g]) (offs[-1] = 0, offs int32 ascending), and
// group g is multiplied by mat2[g] [K, N]: out [T, N]. Rows past the last offset (no expert)
// come out zero. float32 runs each group on the shared GEMM (linalg/gemm.h); the other
// floating dtypes on a direct loop in double.
//
// Registered as aten::_grouped_mm (2-D x 3-D with offs; PyTorch 2.8+) and as
// transformers::grouped_mm_fallback(input, weight, offs), the operator Hugging Face
// transformers' MoE layers (Mixtral, Qwen-MoE, OLMoE...) export with.
#include <cstring>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

Error grouped_mm_2d_3d(KernelContext& ctx, KernelArgs& a, const Tensor* x, const Tensor* w, const Tensor* offs, const Tensor* bias,
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
  for (int64_t g = 0, start = 0; g < groups; start = ends[g++]) {
    if (ends[g] < start || ends[g] > rows) return a.fail("offs must be ascending and at most self's row count"), a.error();
  }
  const int64_t routed = groups > 0 ? ends[groups - 1] : 0;
  if (x->dtype == ScalarType::Float32) {
    // One product per group on the shared GEMM (bias, when given, pre-filled: beta = 1).
    GemmWorkspace ws = reserve_gemm_workspace(ctx, rows, n, k);
    float* c = out->data_as<float>();
    for (int64_t g = 0, start = 0; g < groups; start = ends[g++]) {
      if (ends[g] == start) continue;
      if (bias != nullptr) {
        for (int64_t r = start; r < ends[g]; ++r) std::memcpy(c + r * n, bias->data_as<float>() + g * n, n * sizeof(float));
      }
      GemmProblem p;
      p.m = ends[g] - start;
      p.n = n;
      p.k = k;
      p.a = GemmMatrix{x->data_as<float>() + start * k, k, 1};
      p.b = GemmMatrix{w->data_as<float>() + g * k * n, n, 1};
      p.c = c + start * n;
      p.ldc = n;
      p.beta = bias != nullptr ? 1.0f : 0.0f;
      gemm(&ctx, ws, p);
    }
  } else {
    for (int64_t g = 0, start = 0; g < groups; start = ends[g++]) {
      for (int64_t r = start; r < ends[g]; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = bias != nullptr ? load_as<double>(bias->data, bias->dtype, g * n + j) : 0.0;
          for (int64_t q = 0; q < k; ++q) {
            acc += load_as<double>(x->data, x->dtype, r * k + q) * load_as<double>(w->data, w->dtype, (g * k + q) * n + j);
          }
          store_as<double>(out->data, out->dtype, r * n + j, acc);
        }
      }
    }
  }
  for (int64_t i = routed * n; i < rows * n; ++i) store_as<double>(out->data, out->dtype, i, 0.0);
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
  return grouped_mm_2d_3d(ctx, a, x, w, offs, bias, out);
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
  return grouped_mm_2d_3d(ctx, a, x, w, offs, nullptr, out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_grouped_mm.default", grouped_mm);
EMBER_REGISTER_KERNEL("transformers::grouped_mm_fallback.default", transformers_grouped_mm);

}  // namespace portable
}  // namespace ember
