// Sums, means or maxima of bags of embedding rows:
//   aten::embedding_bag.padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
//       per_sample_weights?, include_last_offset, int? padding_idx) -> (out, offset2bag, bag_size, max_indices)
//   aten::_embedding_bag.default / aten::_embedding_bag_forward_only.default (same arguments,
//       padding_idx an int, -1 for none)
//   aten::embedding_bag.default (no padding_idx argument)
// weight [num_embeddings, D]; indices 1-D; offsets 1-D, non-decreasing, starting at 0: bag b holds
// indices[offsets[b] : offsets[b + 1]] (the last bag runs to the end, or with include_last_offset
// the last offset closes the last bag). mode 0 sum (rows scaled by per_sample_weights when
// given), 1 mean, 2 max (per column; max_indices holds the row chosen). Rows equal to
// padding_idx are skipped and not counted; an empty bag gives zeros.
// Auxiliary outputs follow ATen's CPU shapes, in the offsets' dtype: offset2bag [len(indices)]
// (bag of each index; [0] on ATen's fast sum path: float weights, no padding_idx), bag_size
// [num_bags] for mean/max (counts without padding) else offsets' shape, max_indices [num_bags, D]
// for max else bag_size's shape (zeros).
// scale_grad_by_freq and sparse only affect gradients.
#include <initializer_list>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

struct BagArgs {
  const Tensor* weight;
  const Tensor* indices;
  const Tensor* offsets;
  const Tensor* per_sample_weights;  // null when None
  int64_t mode;
  bool include_last_offset;
  int64_t padding_idx;  // < 0: none
  int64_t num_bags;
};

inline int64_t index_at(const Tensor& t, int64_t i) { return load_as<int64_t>(t.data, t.dtype, i); }

// First index of bag b.
inline int64_t bag_begin(const BagArgs& p, int64_t b) { return index_at(*p.offsets, b); }
// One past the last index of bag b.
inline int64_t bag_end(const BagArgs& p, int64_t b) {
  return b + 1 < p.offsets->numel() ? index_at(*p.offsets, b + 1) : p.indices->numel();
}

bool validate(KernelArgs& a, BagArgs& p, Tensor* const outs[4]) {
  const Tensor* w = p.weight;
  if (!require_contiguous(a, w) || !require_contiguous(a, p.indices) || !require_contiguous(a, p.offsets) ||
      !require_contiguous(a, p.per_sample_weights)) {
    return false;
  }
  if (w->rank != 2) return a.fail("weight must be 2-D [num_embeddings, embedding_dim]");
  if (!is_floating(w->dtype)) return a.fail("weight must be a floating tensor");
  if (p.indices->rank != 1 || p.offsets->rank != 1) return a.fail("indices and offsets must be 1-D");
  for (const Tensor* t : {p.indices, p.offsets}) {
    if (t->dtype != ScalarType::Int64 && t->dtype != ScalarType::Int32) {
      return a.fail("indices and offsets must be int64 or int32");
    }
  }
  if (p.mode < kSum || p.mode > kMax) return a.fail("mode must be 0 (sum), 1 (mean) or 2 (max)");
  if (p.per_sample_weights != nullptr) {
    if (p.mode != kSum) return a.fail("per_sample_weights is only supported for mode 'sum'");
    if (p.per_sample_weights->dtype != w->dtype || p.per_sample_weights->rank != 1 ||
        p.per_sample_weights->numel() != p.indices->numel()) {
      return a.fail("per_sample_weights must be 1-D like indices, with weight's dtype");
    }
  }
  const int64_t num_offsets = p.offsets->numel();
  if (p.include_last_offset && num_offsets < 1) return a.fail("include_last_offset needs at least one offset");
  p.num_bags = p.include_last_offset ? num_offsets - 1 : num_offsets;
  const int64_t count = p.indices->numel();
  for (int64_t b = 0; b < num_offsets; ++b) {
    const int64_t o = index_at(*p.offsets, b);
    if (b == 0 && o != 0) return a.fail("offsets[0] must be 0");
    if (o < 0 || o > count || (b > 0 && o < index_at(*p.offsets, b - 1))) {
      return a.fail("offsets must be non-decreasing and within [0, len(indices)]");
    }
  }
  const int64_t rows = w->sizes[0];
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = index_at(*p.indices, i);
    if (r < 0 || r >= rows) return a.fail("index out of range of the embedding table", Error::OutOfBounds);
  }
  if (p.padding_idx >= rows) return a.fail("padding_idx out of range of the embedding table");
  if (outs[0]->dtype != w->dtype) return a.fail("output dtype must equal weight's dtype");
  for (int k = 1; k < 4; ++k) {
    if (outs[k]->dtype != p.offsets->dtype && outs[k]->dtype != p.indices->dtype) {
      return a.fail("offset2bag, bag_size and max_indices must have the offsets' integer dtype");
    }
  }
  return true;
}

// out[b] = reduction of the bag's rows; bag_size[b] = rows used; max_indices[b, c] = row of the max.
template <typename C>
void reduce_bags(const BagArgs& p, Tensor& out, Tensor& bag_size, Tensor* max_indices) {
  const Tensor& w = *p.weight;
  const int64_t dim = w.sizes[1];
  for (int64_t b = 0; b < p.num_bags; ++b) {
    int64_t used = 0;
    const int64_t end = bag_end(p, b);
    for (int64_t c = 0; c < dim; ++c) store_as<C>(out.data, out.dtype, b * dim + c, C(0));
    for (int64_t i = bag_begin(p, b); i < end; ++i) {
      const int64_t r = index_at(*p.indices, i);
      if (r == p.padding_idx) continue;
      const C scale = p.per_sample_weights != nullptr ? load_as<C>(p.per_sample_weights->data, w.dtype, i) : C(1);
      for (int64_t c = 0; c < dim; ++c) {
        const C v = load_as<C>(w.data, w.dtype, r * dim + c);
        const C cur = load_as<C>(out.data, out.dtype, b * dim + c);
        if (p.mode == kMax) {
          if (used == 0 || v > cur) {
            store_as<C>(out.data, out.dtype, b * dim + c, v);
            store_as<int64_t>(max_indices->data, max_indices->dtype, b * dim + c, r);
          }
        } else {
          store_as<C>(out.data, out.dtype, b * dim + c, cur + v * scale);
        }
      }
      ++used;
    }
    if (p.mode == kMean && used > 0) {
      for (int64_t c = 0; c < dim; ++c) {
        const C cur = load_as<C>(out.data, out.dtype, b * dim + c);
        store_as<C>(out.data, out.dtype, b * dim + c, cur / static_cast<C>(used));
      }
    }
    if (b < bag_size.numel()) store_as<int64_t>(bag_size.data, bag_size.dtype, b, used);
  }
}

// How the op passes padding_idx.
enum class Padding { Absent, Wrapped, Raw };

Error embedding_bag_impl(KernelContext& ctx, EValue** args, size_t n, Padding padding) {
  KernelArgs a(ctx, args, n);
  const size_t num_args = padding == Padding::Absent ? 8 : 9;
  if (!a.expect(num_args + 4)) return a.error();
  BagArgs p;
  p.weight = a.tensor(0);
  p.indices = a.tensor(1);
  p.offsets = a.tensor(2);
  p.mode = a.int_value(4);
  p.per_sample_weights = a.optional_tensor(6);
  p.include_last_offset = a.bool_value(7);
  p.padding_idx = -1;
  if (padding == Padding::Wrapped && !a.is_none(8)) {
    // embedding_bag.padding_idx: a given index in [-num_embeddings, num_embeddings) wraps.
    const int64_t v = a.int_value(8), rows = p.weight != nullptr && p.weight->rank == 2 ? p.weight->sizes[0] : 0;
    if (a.ok() && (v < -rows || v >= rows)) return a.fail("padding_idx out of range of the embedding table"), a.error();
    p.padding_idx = v < 0 ? v + rows : v;
  } else if (padding == Padding::Raw) {
    p.padding_idx = a.int_value(8);  // _embedding_bag: negative means none
  }
  p.num_bags = 0;
  Tensor* outs[4];
  for (int k = 0; k < 4; ++k) outs[k] = a.out(num_args + k);
  if (!a.ok() || !validate(a, p, outs)) return a.error();

  const int64_t dim = p.weight->sizes[1];
  const int64_t out_shape[2] = {p.num_bags, dim};
  if (!resize_out(a, outs[0], out_shape, 2)) return a.error();
  // offset2bag: ATen skips it on the fast sum path.
  const bool fast_sum = p.mode == kSum && p.padding_idx < 0 &&
                        (p.weight->dtype == ScalarType::Float32 || p.weight->dtype == ScalarType::Float16 ||
                         p.weight->dtype == ScalarType::BFloat16);
  const int64_t o2b_len = fast_sum ? 0 : p.indices->numel();
  if (!resize_out(a, outs[1], &o2b_len, 1)) return a.error();
  const int64_t bag_len = p.mode == kSum ? p.offsets->numel() : p.num_bags;
  if (!resize_out(a, outs[2], &bag_len, 1)) return a.error();
  if (p.mode == kMax) {
    if (!resize_out(a, outs[3], out_shape, 2)) return a.error();
  } else if (!resize_out(a, outs[3], &bag_len, 1)) {
    return a.error();
  }
  for (int k = 1; k < 4; ++k) {
    for (int64_t i = 0; i < outs[k]->numel(); ++i) store_as<int64_t>(outs[k]->data, outs[k]->dtype, i, 0);
  }
  for (int64_t b = 0; b < p.num_bags && o2b_len > 0; ++b) {
    for (int64_t i = bag_begin(p, b); i < bag_end(p, b); ++i) store_as<int64_t>(outs[1]->data, outs[1]->dtype, i, b);
  }
  EMBER_DISPATCH_COMPUTE(p.weight->dtype, C, reduce_bags<C>(p, *outs[0], *outs[2], outs[3]));
  return Error::Ok;
}

Error embedding_bag_padding_idx(KernelContext& ctx, EValue** args, size_t n) {
  return embedding_bag_impl(ctx, args, n, Padding::Wrapped);
}
Error embedding_bag_default(KernelContext& ctx, EValue** args, size_t n) {
  return embedding_bag_impl(ctx, args, n, Padding::Absent);
}
Error embedding_bag_internal(KernelContext& ctx, EValue** args, size_t n) {
  return embedding_bag_impl(ctx, args, n, Padding::Raw);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::embedding_bag.padding_idx", embedding_bag_padding_idx);
EMBER_REGISTER_KERNEL("aten::embedding_bag.default", embedding_bag_default);
EMBER_REGISTER_KERNEL("aten::_embedding_bag.default", embedding_bag_internal);
EMBER_REGISTER_KERNEL("aten::_embedding_bag_forward_only.default", embedding_bag_internal);

}  // namespace portable
}  // namespace ember
