// Ops over lists of tensors: cat/concat, stack, hstack/vstack/dstack/column_stack, and the
// Tensor[]-returning ops split/split_with_sizes/unsafe_split/unbind/chunk/tensor_split/
// hsplit/vsplit/dsplit, meshgrid, broadcast_tensors. A Tensor[] result arrives as one
// output tensor per element after the schema arguments (their count is num_args minus the
// schema argument count).
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Concatenates `list` along `dim` where each tensor is viewed with shape shape_of(t)
// (same elements, contiguous). Legacy empty 1-D tensors ([0]) are skipped.
template <typename ShapeOf>
Error cat_impl(KernelArgs& a, Span<Tensor* const> list, int64_t dim, Tensor* out, const ShapeOf& shape_of) {
  if (!a.ok()) return a.error();
  const Tensor* first = nullptr;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == nullptr) return a.fail("cat list has a None entry"), a.error();
    if (!require_contiguous(a, list[i])) return a.error();
    Shape s = shape_of(*list[i]);
    if (!(s.rank == 1 && s.d[0] == 0) && first == nullptr) first = list[i];
  }
  if (first == nullptr) {
    // Everything empty: output keeps its rank with zero elements along dim 0 (or [0]).
    Shape s;
    s.rank = out->rank;
    for (int d = 0; d < s.rank; ++d) s.d[d] = 0;
    return resize_to(a, out, s) ? Error::Ok : a.error();
  }
  Shape ref = shape_of(*first);
  dim = wrap_dim(dim, ref.rank);
  if (dim < 0 || ref.rank == 0) return a.fail("cat dim out of range"), a.error();
  Shape os = ref;
  os.d[dim] = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    Shape s = shape_of(*list[i]);
    if (s.rank == 1 && s.d[0] == 0) continue;
    if (s.rank != ref.rank) return a.fail("cat tensors must have the same rank"), a.error();
    for (int d = 0; d < s.rank; ++d) {
      if (d != dim && s.d[d] != ref.d[d]) return a.fail("cat tensors differ outside the cat dim"), a.error();
    }
    os.d[dim] += s.d[dim];
  }
  if (!resize_to(a, out, os)) return a.error();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= os.d[d];
  for (int d = static_cast<int>(dim) + 1; d < os.rank; ++d) inner *= os.d[d];
  size_t oes = element_size(out->dtype);
  int64_t offset = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor* t = list[i];
    Shape s = shape_of(*t);
    if (s.rank == 1 && s.d[0] == 0) continue;
    int64_t chunk = s.d[dim] * inner;
    size_t ies = element_size(t->dtype);
    for (int64_t o = 0; o < outer; ++o) {
      copy_convert(static_cast<const uint8_t*>(t->data) + o * chunk * ies, t->dtype,
                   static_cast<uint8_t*>(out->data) + (o * os.d[dim] * inner + offset) * oes, out->dtype, chunk);
    }
    offset += chunk;
  }
  return Error::Ok;
}

Shape identity_shape(const Tensor& t) { return Shape(t); }

// cat(tensors[], dim, out)
Error cat(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Span<Tensor* const> list = a.tensor_list(0);
  int64_t dim = a.int_value(1);
  return cat_impl(a, list, dim, a.out(2), identity_shape);
}

// stack(tensors[], dim, out): cat of the tensors unsqueezed at dim.
Error stack(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Span<Tensor* const> list = a.tensor_list(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (list.size() == 0 || list[0] == nullptr) return a.fail("stack needs at least one tensor"), a.error();
  int rank = list[0]->rank;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == nullptr || Shape(*list[i]).rank != rank ||
        Shape(*list[i]).numel() != Shape(*list[0]).numel()) {
      return a.fail("stack tensors must have the same shape"), a.error();
    }
  }
  int64_t d = wrap_dim(dim, rank + 1);
  if (d < 0) return a.fail("stack dim out of range"), a.error();
  return cat_impl(a, list, d, out, [d](const Tensor& t) {
    Shape s;
    for (int i = 0; i <= t.rank; ++i) {
      if (i == d) s.push(1);
      if (i < t.rank) s.push(t.sizes[i]);
    }
    return s;
  });
}

Shape atleast_shape(const Tensor& t, int rank) {
  if (t.rank >= rank) return Shape(t);
  Shape s;
  if (rank == 1) { s.push(1); return s; }
  if (rank == 2) { s.push(1); s.push(t.rank == 1 ? t.sizes[0] : 1); return s; }
  if (t.rank == 0) { s.push(1); s.push(1); s.push(1); }
  if (t.rank == 1) { s.push(1); s.push(t.sizes[0]); s.push(1); }
  if (t.rank == 2) { s.push(t.sizes[0]); s.push(t.sizes[1]); s.push(1); }
  return s;
}

enum class StackKind { H, V, D, Column };

// hstack/vstack/dstack/column_stack(tensors[], out)
template <StackKind kKind>
Error xstack(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  Span<Tensor* const> list = a.tensor_list(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  if (list.size() == 0 || list[0] == nullptr) return a.fail("needs at least one tensor"), a.error();
  switch (kKind) {
    case StackKind::H: {
      bool one_d = atleast_shape(*list[0], 1).rank == 1;
      return cat_impl(a, list, one_d ? 0 : 1, out, [](const Tensor& t) { return atleast_shape(t, 1); });
    }
    case StackKind::V:
      return cat_impl(a, list, 0, out, [](const Tensor& t) { return atleast_shape(t, 2); });
    case StackKind::D:
      return cat_impl(a, list, 2, out, [](const Tensor& t) { return atleast_shape(t, 3); });
    case StackKind::Column:
      return cat_impl(a, list, 1, out, [](const Tensor& t) {
        if (t.rank > 1) return Shape(t);
        Shape s;
        s.push(t.rank == 0 ? 1 : t.sizes[0]);
        s.push(1);
        return s;
      });
  }
  return Error::Internal;
}

// Writes outputs args[first..n) as consecutive pieces of `in` along dim with sizes
// size_of(i); `drop` removes the dim (unbind).
template <typename SizeOf>
Error split_impl(KernelContext& ctx, KernelArgs& a, EValue** args, size_t n, size_t first,
                 const Tensor* in, int64_t dim, bool drop, const SizeOf& size_of) {
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || in->rank == 0) return a.fail("split dim out of range"), a.error();
  int64_t start = 0;
  StridedView base = StridedView::of(*in);
  for (size_t k = first; k < n; ++k) {
    int64_t len = size_of(k - first);
    if (len < 0 || start + len > in->sizes[dim]) return a.fail("split sizes exceed the input", Error::OutOfBounds), a.error();
    Tensor* out = a.out(k);
    if (!a.ok()) return a.error();
    StridedView v = base;
    v.offset = start * base.strides[dim];
    v.sizes[dim] = len;
    if (drop) {
      for (int d = static_cast<int>(dim); d + 1 < v.rank; ++d) {
        v.sizes[d] = v.sizes[d + 1];
        v.strides[d] = v.strides[d + 1];
      }
      --v.rank;
    }
    Shape s;
    s.rank = v.rank;
    for (int d = 0; d < v.rank; ++d) s.d[d] = v.sizes[d];
    if (!resize_to(a, out, s)) return a.error();
    copy_view(ctx, *in, v, *out);
    start += len;
  }
  if (start != in->sizes[dim]) return a.fail("split outputs do not cover the input"), a.error();
  return Error::Ok;
}

// split.Tensor(self, split_size, dim, outs...)
Error split(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.fail("split needs at least one output"), a.error();
  const Tensor* in = a.tensor(0);
  int64_t size = a.int_value(1), dim = a.int_value(2);
  if (!a.ok()) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0 || in->rank == 0) return a.fail("split dim out of range"), a.error();
  int64_t total = in->sizes[d];
  if (size <= 0 && total > 0) return a.fail("split_size must be positive"), a.error();
  return split_impl(ctx, a, args, n, 3, in, dim, false, [=](size_t i) {
    int64_t s = static_cast<int64_t>(i) * size;
    return s + size <= total ? size : (total > s ? total - s : 0);
  });
}

// split_with_sizes(self, split_sizes[], dim, outs...)
Error split_with_sizes(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.fail("split needs at least one output"), a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> sizes = a.int_list(1);
  int64_t dim = a.int_value(2);
  if (!a.ok()) return a.error();
  if (sizes.size() != n - 3) return a.fail("one output per split size expected"), a.error();
  return split_impl(ctx, a, args, n, 3, in, dim, false, [&](size_t i) { return sizes[i]; });
}

// unbind.int(self, dim, outs...)
Error unbind(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 2) return a.expect(2), a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  if (!a.ok()) return a.error();
  return split_impl(ctx, a, args, n, 2, in, dim, true, [](size_t) { return int64_t{1}; });
}

// chunk(self, chunks, dim, outs...)
Error chunk(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.fail("chunk needs at least one output"), a.error();
  const Tensor* in = a.tensor(0);
  int64_t chunks = a.int_value(1), dim = a.int_value(2);
  if (!a.ok()) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0 || in->rank == 0 || chunks <= 0) return a.fail("invalid chunk arguments"), a.error();
  int64_t total = in->sizes[d];
  int64_t size = (total + chunks - 1) / chunks;
  return split_impl(ctx, a, args, n, 3, in, dim, false, [=](size_t i) {
    int64_t s = static_cast<int64_t>(i) * size;
    return s + size <= total ? size : (total > s ? total - s : 0);
  });
}

// tensor_split.sections(self, sections, dim, outs...)
Error split_sections(KernelContext& ctx, KernelArgs& a, EValue** args, size_t n, size_t first,
                     const Tensor* in, int64_t sections, int64_t dim) {
  if (!a.ok()) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0 || in->rank == 0 || sections <= 0) return a.fail("invalid tensor_split arguments"), a.error();
  int64_t total = in->sizes[d];
  int64_t base = total / sections, extra = total % sections;
  return split_impl(ctx, a, args, n, first, in, dim, false, [=](size_t i) {
    return base + (static_cast<int64_t>(i) < extra ? 1 : 0);
  });
}

// Split at the given indices.
Error split_indices(KernelContext& ctx, KernelArgs& a, EValue** args, size_t n, size_t first,
                    const Tensor* in, Span<const int64_t> idx, int64_t dim) {
  if (!a.ok()) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  int64_t total = in->sizes[d];
  if (idx.size() + 1 != n - first) return a.fail("one output per section expected"), a.error();
  return split_impl(ctx, a, args, n, first, in, dim, false, [=](size_t i) {
    auto clampi = [total](int64_t v) { if (v < 0) v += total; return v < 0 ? 0 : (v > total ? total : v); };
    int64_t s = i == 0 ? 0 : clampi(idx[i - 1]);
    int64_t e = i == idx.size() ? total : clampi(idx[i]);
    return e > s ? e - s : int64_t{0};
  });
}

Error tensor_split_sections(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.expect(4), a.error();
  return split_sections(ctx, a, args, n, 3, a.tensor(0), a.int_value(1), a.int_value(2));
}

Error tensor_split_indices(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.expect(4), a.error();
  return split_indices(ctx, a, args, n, 3, a.tensor(0), a.int_list(1), a.int_value(2));
}

// tensor_split.tensor_indices_or_sections(self, Tensor ios, dim, outs...)
Error tensor_split_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 4) return a.expect(4), a.error();
  const Tensor* ios = a.tensor(1);
  if (!a.ok()) return a.error();
  int64_t count = ios->numel();
  if (ios->rank == 0) {
    return split_sections(ctx, a, args, n, 3, a.tensor(0), load_as<int64_t>(ios->data, ios->dtype, 0), a.int_value(2));
  }
  if (count > kMaxRank * 4) return a.fail("too many split indices"), a.error();
  int64_t idx[kMaxRank * 4];
  for (int64_t i = 0; i < count; ++i) idx[i] = load_as<int64_t>(ios->data, ios->dtype, i);
  return split_indices(ctx, a, args, n, 3, a.tensor(0), Span<const int64_t>(idx, static_cast<size_t>(count)),
                       a.int_value(2));
}

// hsplit/vsplit/dsplit: .int(self, sections, outs...) and .array(self, indices[], outs...)
template <int kDim, bool kArray>
Error xsplit(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 3) return a.expect(3), a.error();
  const Tensor* in = a.tensor(0);
  if (!a.ok()) return a.error();
  int64_t dim = kDim;
  if (kDim == 1 && in->rank == 1) dim = 0;
  if (in->rank <= dim) return a.fail("input has too few dims"), a.error();
  if (kArray) return split_indices(ctx, a, args, n, 2, in, a.int_list(1), dim);
  int64_t sections = a.int_value(1);
  if (!a.ok()) return a.error();
  if (sections <= 0 || in->sizes[dim] % sections != 0) return a.fail("size not divisible by sections"), a.error();
  return split_sections(ctx, a, args, n, 2, in, sections, dim);
}

// meshgrid.indexing(tensors[], indexing, outs...) / meshgrid.default(tensors[], outs...)
Error meshgrid(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  Span<Tensor* const> list = a.tensor_list(0);
  if (!a.ok()) return a.error();
  size_t first = n - list.size();
  if (first != 1 && first != 2) return a.fail("one output per input expected"), a.error();
  bool xy = first == 2 && a.string_is(1, "xy");
  size_t k = list.size();
  if (k > static_cast<size_t>(kMaxRank)) return a.fail("too many tensors"), a.error();
  Shape s;
  for (size_t i = 0; i < k; ++i) {
    if (list[i] == nullptr || list[i]->rank > 1) return a.fail("meshgrid takes 0-D or 1-D tensors"), a.error();
    s.push(list[i]->numel());
  }
  if (xy && k >= 2) {
    int64_t t0 = s.d[0];
    s.d[0] = s.d[1];
    s.d[1] = t0;
  }
  for (size_t i = 0; i < k; ++i) {
    size_t dim = i;
    if (xy && k >= 2 && i < 2) dim = 1 - i;
    StridedView v;
    v.rank = s.rank;
    for (int d = 0; d < s.rank; ++d) {
      v.sizes[d] = s.d[d];
      v.strides[d] = static_cast<size_t>(d) == dim ? 1 : 0;
    }
    Tensor* out = a.out(first + i);
    if (!a.ok() || !resize_to(a, out, s)) return a.error();
    copy_view(ctx, *list[i], v, *out);
  }
  return Error::Ok;
}

// broadcast_tensors(tensors[], outs...)
Error broadcast_tensors(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  Span<Tensor* const> list = a.tensor_list(0);
  if (!a.ok()) return a.error();
  if (n != list.size() + 1) return a.fail("one output per input expected"), a.error();
  Shape s;
  for (size_t i = 0; i < list.size(); ++i) {
    Shape next;
    if (list[i] == nullptr || !broadcast_shapes(s, Shape(*list[i]), next)) return a.fail("shapes do not broadcast"), a.error();
    s = next;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = *list[i];
    StridedView base = StridedView::of(t), v;
    v.rank = s.rank;
    for (int d = 0; d < s.rank; ++d) {
      int td = d - (s.rank - t.rank);
      v.sizes[d] = s.d[d];
      v.strides[d] = (td < 0 || t.sizes[td] == 1) ? 0 : base.strides[td];
    }
    Tensor* out = a.out(1 + i);
    if (!a.ok() || !require_contiguous(a, &t) || !resize_to(a, out, s)) return a.error();
    copy_view(ctx, t, v, *out);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::cat.default", cat);
EMBER_REGISTER_KERNEL("aten::concat.default", cat);
EMBER_REGISTER_KERNEL("aten::concatenate.default", cat);
EMBER_REGISTER_KERNEL("aten::stack.default", stack);
EMBER_REGISTER_KERNEL("aten::hstack.default", xstack<StackKind::H>);
EMBER_REGISTER_KERNEL("aten::vstack.default", xstack<StackKind::V>);
EMBER_REGISTER_KERNEL("aten::dstack.default", xstack<StackKind::D>);
EMBER_REGISTER_KERNEL("aten::column_stack.default", xstack<StackKind::Column>);
EMBER_REGISTER_KERNEL("aten::split.Tensor", split);
EMBER_REGISTER_KERNEL("aten::unsafe_split.Tensor", split);
EMBER_REGISTER_KERNEL("aten::split_copy.Tensor", split);
EMBER_REGISTER_KERNEL("aten::split.sizes", split_with_sizes);
EMBER_REGISTER_KERNEL("aten::split_with_sizes.default", split_with_sizes);
EMBER_REGISTER_KERNEL("aten::split_with_sizes_copy.default", split_with_sizes);
EMBER_REGISTER_KERNEL("aten::unsafe_split_with_sizes.default", split_with_sizes);
EMBER_REGISTER_KERNEL("aten::unbind.int", unbind);
EMBER_REGISTER_KERNEL("aten::unbind_copy.int", unbind);
EMBER_REGISTER_KERNEL("aten::chunk.default", chunk);
EMBER_REGISTER_KERNEL("aten::unsafe_chunk.default", chunk);
EMBER_REGISTER_KERNEL("aten::tensor_split.sections", tensor_split_sections);
EMBER_REGISTER_KERNEL("aten::tensor_split.indices", tensor_split_indices);
EMBER_REGISTER_KERNEL("aten::tensor_split.tensor_indices_or_sections", tensor_split_tensor);
EMBER_REGISTER_KERNEL("aten::hsplit.int", (xsplit<1, false>));
EMBER_REGISTER_KERNEL("aten::vsplit.int", (xsplit<0, false>));
EMBER_REGISTER_KERNEL("aten::dsplit.int", (xsplit<2, false>));
EMBER_REGISTER_KERNEL("aten::hsplit.array", (xsplit<1, true>));
EMBER_REGISTER_KERNEL("aten::vsplit.array", (xsplit<0, true>));
EMBER_REGISTER_KERNEL("aten::dsplit.array", (xsplit<2, true>));
EMBER_REGISTER_KERNEL("aten::meshgrid.indexing", meshgrid);
EMBER_REGISTER_KERNEL("aten::meshgrid.default", meshgrid);
EMBER_REGISTER_KERNEL("aten::broadcast_tensors.default", broadcast_tensors);

}  // namespace portable
}  // namespace ember
