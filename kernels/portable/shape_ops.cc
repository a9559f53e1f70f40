// View and layout ops, computed as copies into the preallocated output: view/reshape/
// _unsafe_view/flatten/unflatten/squeeze/unsqueeze/clone/alias/contiguous/_to_copy/to.*,
// permute/transpose/t/mT/movedim, expand/broadcast_to, slice/select/narrow, flip, roll,
// diagonal, unfold, as_strided, repeat/tile, copy, tril/triu, pixel_(un)shuffle.
#include <cstring>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/kernel_args.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// out = in (same element count, any shape), converting dtype when out's differs.
Error copy_reshaped(KernelArgs& a, const Tensor* in, Tensor* out, const Shape& shape) {
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (shape.numel() != in->numel()) return a.fail("shape is invalid for the input size"), a.error();
  if (!resize_to(a, out, shape)) return a.error();
  copy_convert(in->data, in->dtype, out->data, out->dtype, in->numel());
  return Error::Ok;
}

// out = view v of in, out shape = v's sizes.
Error copy_strided(KernelContext& ctx, KernelArgs& a, const Tensor* in, const StridedView& v, Tensor* out) {
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  Shape s;
  s.rank = v.rank;
  for (int i = 0; i < v.rank; ++i) s.d[i] = v.sizes[i];
  if (!resize_to(a, out, s)) return a.error();
  copy_view(ctx, *in, v, *out);
  return Error::Ok;
}

// Sizes with at most one -1 inferred from numel.
bool infer_shape(KernelArgs& a, Span<const int64_t> sizes, int64_t numel, Shape& s) {
  if (!a.ok()) return false;
  if (sizes.size() > static_cast<size_t>(kMaxRank)) return a.fail("too many dims");
  s = Shape();
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer >= 0) return a.fail("only one dimension can be inferred");
      infer = static_cast<int>(i);
      s.push(1);
    } else {
      if (sizes[i] < 0) return a.fail("negative size");
      // A product past int64 cannot match any tensor's element count (fuzzed programs).
      if (__builtin_mul_overflow(known, sizes[i], &known)) return a.fail("shape is invalid for the input size");
      s.push(sizes[i]);
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) return a.fail("shape is invalid for the input size");
    s.d[infer] = numel / known;
  }
  return true;
}

// view / reshape / _unsafe_view / view_copy(self, size[], out)
Error view(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> sizes = a.int_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  Shape s;
  if (!infer_shape(a, sizes, in->numel(), s)) return a.error();
  return copy_reshaped(a, in, out, s);
}

// view_as / reshape_as(self, other, out)
Error view_as(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* other = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  return copy_reshaped(a, in, out, Shape(*other));
}

// Same-shape copies: (self, out) or (self, <ignored args>..., out), e.g. clone(self,
// memory_format, out), _to_copy(self, dtype, layout, device, pin_memory, non_blocking,
// memory_format, out). The output's dtype decides the conversion.
template <size_t kArgs>
Error same_shape_copy(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kArgs)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(kArgs - 1);
  if (!a.ok()) return a.error();
  return copy_reshaped(a, in, out, Shape(*in));
}

// flatten.using_ints(self, start_dim, end_dim, out)
Error flatten(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t start = a.int_value(1), end = a.int_value(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  if (in->rank == 0) return copy_reshaped(a, in, out, [] { Shape s; s.push(1); return s; }());
  start = wrap_dim(start, in->rank);
  end = wrap_dim(end, in->rank);
  if (start < 0 || end < 0 || start > end) return a.fail("invalid flatten dims"), a.error();
  Shape s;
  for (int d = 0; d < in->rank; ++d) {
    if (d > start && d <= end) s.d[s.rank - 1] *= in->sizes[d];
    else s.push(in->sizes[d]);
  }
  return copy_reshaped(a, in, out, s);
}

// unflatten.int(self, dim, sizes[], out)
Error unflatten(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Span<const int64_t> sizes = a.int_list(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  Shape inner;
  if (!infer_shape(a, sizes, in->sizes[dim], inner)) return a.error();
  Shape s;
  for (int d = 0; d < in->rank; ++d) {
    if (d == dim) {
      for (int k = 0; k < inner.rank; ++k) s.push(inner.d[k]);
    } else {
      s.push(in->sizes[d]);
    }
  }
  return copy_reshaped(a, in, out, s);
}

// unsqueeze(self, dim, out)
Error unsqueeze(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, in->rank + 1);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  Shape s;
  for (int d = 0; d <= in->rank; ++d) {
    if (d == dim) s.push(1);
    if (d < in->rank) s.push(in->sizes[d]);
  }
  return copy_reshaped(a, in, out, s);
}

// squeeze.default(self, out), squeeze.dim(self, dim, out), squeeze.dims(self, dims[], out)
Error squeeze(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 2 && n != 3) return a.expect(3), a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(n - 1);
  if (!a.ok()) return a.error();
  bool squeeze_dim[kMaxRank] = {};
  if (n == 2) {
    for (int d = 0; d < in->rank; ++d) squeeze_dim[d] = true;
  } else {
    Span<const int64_t> dims = a.int_list(1);
    if (!a.ok()) return a.error();
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t d = wrap_dim(dims[i], in->rank);
      if (d < 0) return a.fail("dim out of range"), a.error();
      if (in->rank > 0) squeeze_dim[d] = true;
    }
  }
  Shape s;
  for (int d = 0; d < in->rank; ++d) {
    if (!(squeeze_dim[d] && in->sizes[d] == 1)) s.push(in->sizes[d]);
  }
  return copy_reshaped(a, in, out, s);
}

// atleast_{1,2,3}d(self, out)
template <int kRank>
Error atleast(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  Shape s(*in);
  if (in->rank < kRank) {
    s = Shape();
    if (kRank == 1) {
      s.push(1);
    } else if (kRank == 2) {
      s.push(1);
      s.push(in->rank == 1 ? in->sizes[0] : 1);
    } else {
      if (in->rank == 0) { s.push(1); s.push(1); s.push(1); }
      if (in->rank == 1) { s.push(1); s.push(in->sizes[0]); s.push(1); }
      if (in->rank == 2) { s.push(in->sizes[0]); s.push(in->sizes[1]); s.push(1); }
    }
  }
  return copy_reshaped(a, in, out, s);
}

// ravel(self, out)
Error ravel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  Shape s;
  s.push(in->numel());
  return copy_reshaped(a, in, out, s);
}

// permute(self, dims[], out)
Error permute(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> dims = a.int_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (dims.size() != in->rank) return a.fail("permute dims must match the rank"), a.error();
  StridedView base = StridedView::of(*in), v = base;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < in->rank; ++i) {
    int64_t d = wrap_dim(dims[i], in->rank);
    if (d < 0 || seen[d]) return a.fail("invalid permutation"), a.error();
    seen[d] = true;
    v.sizes[i] = base.sizes[d];
    v.strides[i] = base.strides[d];
  }
  return copy_strided(ctx, a, in, v, out);
}

Error transpose_dims(KernelContext& ctx, KernelArgs& a, const Tensor* in, int64_t d0, int64_t d1, Tensor* out) {
  if (!a.ok()) return a.error();
  StridedView v = StridedView::of(*in);
  if (in->rank == 0) return copy_strided(ctx, a, in, v, out);
  d0 = wrap_dim(d0, in->rank);
  d1 = wrap_dim(d1, in->rank);
  if (d0 < 0 || d1 < 0) return a.fail("dim out of range"), a.error();
  int64_t ts = v.sizes[d0], tt = v.strides[d0];
  v.sizes[d0] = v.sizes[d1];
  v.strides[d0] = v.strides[d1];
  v.sizes[d1] = ts;
  v.strides[d1] = tt;
  return copy_strided(ctx, a, in, v, out);
}

// transpose.int(self, dim0, dim1, out)
Error transpose(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  return transpose_dims(ctx, a, a.tensor(0), a.int_value(1), a.int_value(2), a.out(3));
}

// t(self, out): transposes 2-D, identity below. mT/mH(self, out): last two dims.
template <bool kMatrix>
Error t(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  if (!a.ok()) return a.error();
  if (kMatrix && in->rank < 2) return a.fail("needs at least 2 dims"), a.error();
  if (!kMatrix && in->rank > 2) return a.fail("t() needs at most 2 dims"), a.error();
  if (in->rank < 2) return transpose_dims(ctx, a, in, 0, 0, a.out(1));
  return transpose_dims(ctx, a, in, -2, -1, a.out(1));
}

// numpy_T(self, out): reverses all dims.
Error numpy_t(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  StridedView base = StridedView::of(*in), v = base;
  for (int i = 0; i < in->rank; ++i) {
    v.sizes[i] = base.sizes[in->rank - 1 - i];
    v.strides[i] = base.strides[in->rank - 1 - i];
  }
  return copy_strided(ctx, a, in, v, out);
}

// movedim.intlist(self, source[], destination[], out) / movedim.int(self, int, int, out)
Error movedim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> src = a.int_list(1), dst = a.int_list(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  if (src.size() != dst.size()) return a.fail("source and destination differ in length"), a.error();
  int r = in->rank;
  int64_t perm[kMaxRank];
  bool used_src[kMaxRank] = {}, used_dst[kMaxRank] = {};
  for (int i = 0; i < r; ++i) perm[i] = -1;
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = wrap_dim(src[i], r), d = wrap_dim(dst[i], r);
    if (s < 0 || d < 0 || used_src[s] || used_dst[d]) return a.fail("invalid movedim dims"), a.error();
    used_src[s] = used_dst[d] = true;
    perm[d] = s;
  }
  int next = 0;
  for (int i = 0; i < r; ++i) {
    if (perm[i] >= 0) continue;
    while (used_src[next]) ++next;
    perm[i] = next++;
  }
  StridedView base = StridedView::of(*in), v = base;
  for (int i = 0; i < r; ++i) {
    v.sizes[i] = base.sizes[perm[i]];
    v.strides[i] = base.strides[perm[i]];
  }
  return copy_strided(ctx, a, in, v, out);
}

// The view of `in` broadcast to `sizes` (-1 keeps a dim).
bool expand_view(KernelArgs& a, const Tensor* in, Span<const int64_t> sizes, StridedView& v) {
  if (!a.ok()) return false;
  int r = static_cast<int>(sizes.size());
  if (r < in->rank || r > kMaxRank) return a.fail("expand needs at least the input's rank");
  StridedView base = StridedView::of(*in);
  v = StridedView();
  v.rank = r;
  for (int d = 0; d < r; ++d) {
    int id = d - (r - in->rank);
    int64_t want = sizes[d];
    if (id < 0) {
      if (want < 0) return a.fail("expand: -1 not allowed for new leading dims");
      v.sizes[d] = want;
      v.strides[d] = 0;
      continue;
    }
    int64_t have = in->sizes[id];
    if (want == -1) want = have;
    if (have != want && have != 1) return a.fail("expanded size must match the existing size");
    v.sizes[d] = want;
    v.strides[d] = have == 1 ? 0 : base.strides[id];
  }
  return true;
}

// expand(self, size[], implicit, out) / expand_copy / broadcast_to(self, size[], out)
Error expand(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 3 && n != 4) return a.expect(4), a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> sizes = a.int_list(1);
  Tensor* out = a.out(n - 1);
  StridedView v;
  if (!expand_view(a, in, sizes, v)) return a.error();
  return copy_strided(ctx, a, in, v, out);
}

// expand_as(self, other, out)
Error expand_as(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* other = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  StridedView v;
  if (!expand_view(a, in, Span<const int64_t>(other->sizes, other->rank), v)) return a.error();
  return copy_strided(ctx, a, in, v, out);
}

// Clamps a slice bound like Python.
int64_t clamp_index(int64_t i, int64_t size) {
  if (i < 0) i += size;
  if (i < 0) return 0;
  return i > size ? size : i;
}

// slice.Tensor(self, dim, start?, end?, step, out)
Error slice(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  int64_t step = a.int_value(4);
  Tensor* out = a.out(5);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  if (step <= 0) return a.fail("slice step must be positive"), a.error();
  int64_t size = in->sizes[dim];
  int64_t start = clamp_index(a.optional_int(2, 0), size);
  int64_t end = clamp_index(a.optional_int(3, size), size);
  if (!a.ok()) return a.error();
  int64_t len = end > start ? (end - start + step - 1) / step : 0;
  StridedView v = StridedView::of(*in);
  v.offset = start * v.strides[dim];
  v.sizes[dim] = len;
  v.strides[dim] *= step;
  return copy_strided(ctx, a, in, v, out);
}

// select.int(self, dim, index, out)
Error select(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1), index = a.int_value(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  int64_t size = in->sizes[dim];
  if (index < -size || index >= size) return a.fail("select index out of range", Error::OutOfBounds), a.error();
  if (index < 0) index += size;
  StridedView base = StridedView::of(*in), v;
  v.offset = index * base.strides[dim];
  for (int d = 0; d < in->rank; ++d) {
    if (d == dim) continue;
    v.sizes[v.rank] = base.sizes[d];
    v.strides[v.rank] = base.strides[d];
    ++v.rank;
  }
  return copy_strided(ctx, a, in, v, out);
}

// narrow(self, dim, start, length, out)
Error narrow(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1), start = a.int_value(2), length = a.int_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  int64_t size = in->sizes[dim];
  if (start < 0) start += size;
  if (start < 0 || length < 0 || start + length > size) return a.fail("narrow out of range", Error::OutOfBounds), a.error();
  StridedView v = StridedView::of(*in);
  v.offset = start * v.strides[dim];
  v.sizes[dim] = length;
  return copy_strided(ctx, a, in, v, out);
}

// The view that reverses `dims` of `in` (offset at the last element of each).
bool flip_view(KernelArgs& a, const Tensor* in, const bool* flip, StridedView& v) {
  v = StridedView::of(*in);
  for (int d = 0; d < in->rank; ++d) {
    if (!flip[d] || v.sizes[d] == 0) continue;
    v.offset += (v.sizes[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  return a.ok();
}

// flip(self, dims[], out); fliplr(self, out) (dim 1); flipud(self, out) (dim 0)
Error flip(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> dims = a.int_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  bool f[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], in->rank);
    if (d < 0) return a.fail("dim out of range"), a.error();
    if (in->rank > 0) f[d] = true;
  }
  StridedView v;
  flip_view(a, in, f, v);
  return copy_strided(ctx, a, in, v, out);
}

template <int kDim>
Error flip_fixed(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  if (in->rank < kDim + 1) return a.fail("input has too few dims"), a.error();
  bool f[kMaxRank] = {};
  f[kDim] = true;
  StridedView v;
  flip_view(a, in, f, v);
  return copy_strided(ctx, a, in, v, out);
}

// roll(self, shifts[], dims[], out); empty dims rolls the flattened tensor.
Error roll(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> shifts = a.int_list(1), dims = a.int_list(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, in) || !resize_like(a, out, *in)) return a.error();
  int64_t total = in->numel();
  if (total == 0) return Error::Ok;
  if (in->data == out->data) return a.fail("roll cannot run in place"), a.error();
  size_t es = element_size(in->dtype);
  if (in->dtype != out->dtype) return a.fail("roll output dtype must match the input"), a.error();
  const uint8_t* src = static_cast<const uint8_t*>(in->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  if (dims.size() == 0) {
    if (shifts.size() != 1) return a.fail("roll without dims takes one shift"), a.error();
    int64_t s = ((shifts[0] % total) + total) % total;
    for (int64_t i = 0; i < total; ++i) std::memcpy(dst + ((i + s) % total) * es, src + i * es, es);
    return Error::Ok;
  }
  if (shifts.size() != dims.size()) return a.fail("shifts and dims differ in length"), a.error();
  int64_t shift[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], in->rank);
    if (d < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
    shift[d] += shifts[i];
  }
  int64_t strides[kMaxRank];
  contiguous_strides(in->sizes, in->rank, strides);
  int64_t idx[kMaxRank] = {};
  for (int64_t i = 0; i < total; ++i) {
    int64_t o = 0;
    for (int d = 0; d < in->rank; ++d) {
      int64_t sz = in->sizes[d];
      int64_t j = ((idx[d] + shift[d]) % sz + sz) % sz;
      o += j * strides[d];
    }
    std::memcpy(dst + o * es, src + i * es, es);
    for (int d = in->rank - 1; d >= 0; --d) {
      if (++idx[d] < in->sizes[d]) break;
      idx[d] = 0;
    }
  }
  return Error::Ok;
}

// diagonal(self, offset, dim1, dim2, out)
Error diagonal(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t offset = a.int_value(1), d1 = a.int_value(2), d2 = a.int_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  if (in->rank < 2) return a.fail("diagonal needs at least 2 dims"), a.error();
  d1 = wrap_dim(d1, in->rank);
  d2 = wrap_dim(d2, in->rank);
  if (d1 < 0 || d2 < 0 || d1 == d2) return a.fail("invalid diagonal dims"), a.error();
  StridedView v = diagonal_view(StridedView::of(*in), offset, d1, d2);
  if (v.sizes[v.rank - 1] == 0) v.offset = 0;
  return copy_strided(ctx, a, in, v, out);
}

// unfold(self, dimension, size, step, out): windows along `dimension` as a new last dim.
Error unfold(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1), size = a.int_value(2), step = a.int_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  StridedView v = StridedView::of(*in);
  if (in->rank == 0) {
    v.rank = 1;
    v.sizes[0] = 1;
    v.strides[0] = 1;
    return copy_strided(ctx, a, in, v, out);
  }
  dim = wrap_dim(dim, in->rank);
  if (dim < 0 || step <= 0 || size < 0 || size > in->sizes[dim]) return a.fail("invalid unfold arguments"), a.error();
  if (in->rank >= kMaxRank) return a.fail("too many dims"), a.error();
  int64_t st = v.strides[dim];
  v.sizes[dim] = (in->sizes[dim] - size) / step + 1;
  v.strides[dim] = st * step;
  v.sizes[v.rank] = size;
  v.strides[v.rank] = st;
  ++v.rank;
  return copy_strided(ctx, a, in, v, out);
}

// as_strided(self, size[], stride[], storage_offset?, out): over the input's storage.
Error as_strided(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1), stride = a.int_list(2);
  int64_t offset = a.optional_int(3, 0);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  if (size.size() != stride.size() || size.size() > static_cast<size_t>(kMaxRank)) {
    return a.fail("size and stride differ in length"), a.error();
  }
  StridedView v;
  v.rank = static_cast<int>(size.size());
  v.offset = offset;
  int64_t max_off = offset, numel = 1;
  for (int d = 0; d < v.rank; ++d) {
    if (size[d] < 0 || stride[d] < 0) return a.fail("negative size or stride"), a.error();
    v.sizes[d] = size[d];
    v.strides[d] = stride[d];
    numel *= size[d];
    if (size[d] > 0) max_off += (size[d] - 1) * stride[d];
  }
  if (numel > 0 && (offset < 0 || max_off >= in->numel())) {
    return a.fail("as_strided view exceeds the input storage", Error::OutOfBounds), a.error();
  }
  return copy_strided(ctx, a, in, v, out);
}

// repeat(self, repeats[], out) / tile(self, dims[], out)
template <bool kTile>
Error repeat(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> reps = a.int_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  int r = static_cast<int>(reps.size());
  int64_t rep[kMaxRank];
  if (kTile && r < in->rank) {
    // tile pads the repeats with leading ones.
    for (int d = 0; d < in->rank; ++d) rep[d] = d < in->rank - r ? 1 : reps[d - (in->rank - r)];
    r = in->rank;
  } else {
    if (r < in->rank) return a.fail("repeat needs at least as many repeats as dims"), a.error();
    for (int d = 0; d < r; ++d) rep[d] = reps[d];
  }
  if (2 * r > kMaxRank) return a.fail("too many dims"), a.error();
  // View as [rep0, size0, rep1, size1, ...] with stride 0 for the repeat dims.
  StridedView base = StridedView::of(*in), v;
  Shape s;
  for (int d = 0; d < r; ++d) {
    int id = d - (r - in->rank);
    int64_t size = id >= 0 ? in->sizes[id] : 1;
    if (rep[d] < 0) return a.fail("negative repeat"), a.error();
    v.sizes[v.rank] = rep[d];
    v.strides[v.rank] = 0;
    ++v.rank;
    v.sizes[v.rank] = size;
    v.strides[v.rank] = id >= 0 ? base.strides[id] : 0;
    ++v.rank;
    s.push(rep[d] * size);
  }
  if (!a.ok() || !require_contiguous(a, in) || !resize_to(a, out, s)) return a.error();
  copy_view(ctx, *in, v, *out);
  return Error::Ok;
}

// copy(self, src, non_blocking, out): src broadcast to self's shape, in out's dtype.
Error copy(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* src = a.tensor(1);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  StridedView v;
  if (!expand_view(a, src, Span<const int64_t>(self->sizes, self->rank), v)) return a.error();
  return copy_strided(ctx, a, src, v, out);
}

// tril/triu(self, diagonal, out): zero above/below the diagonal of the last two dims.
template <bool kLower>
Error tri(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (in->rank < 2) return a.fail("needs at least 2 dims"), a.error();
  EMBER_TRY(copy_reshaped(a, in, out, Shape(*in)));
  int64_t rows = in->sizes[in->rank - 2], cols = in->sizes[in->rank - 1];
  int64_t batches = rows * cols == 0 ? 0 : in->numel() / (rows * cols);
  size_t es = element_size(out->dtype);
  uint8_t* o = static_cast<uint8_t*>(out->data);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = kLower ? (j - i <= k) : (j - i >= k);
        if (!keep) std::memset(o + ((b * rows + i) * cols + j) * es, 0, es);
      }
    }
  }
  return Error::Ok;
}

// pixel_shuffle(self, r, out): [.., C*r*r, H, W] -> [.., C, H*r, W*r]; pixel_unshuffle inverse.
template <bool kShuffle>
Error pixel_shuffle(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t r = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (in->rank < 3 || r <= 0) return a.fail("pixel shuffle needs [.., C, H, W] and r > 0"), a.error();
  int R = in->rank;
  int64_t batch = 1;
  for (int d = 0; d < R - 3; ++d) batch *= in->sizes[d];
  int64_t c = in->sizes[R - 3], h = in->sizes[R - 2], w = in->sizes[R - 1];
  Shape s(*in);
  StridedView v;
  if (kShuffle) {
    if (c % (r * r) != 0) return a.fail("channels not divisible by r^2"), a.error();
    int64_t oc = c / (r * r);
    s.d[R - 3] = oc;
    s.d[R - 2] = h * r;
    s.d[R - 1] = w * r;
    // input as [B, oc, r1, r2, H, W] -> output order [B, oc, H, r1, W, r2]
    int64_t sz[6] = {batch, oc, h, r, w, r};
    int64_t st[6] = {c * h * w, r * r * h * w, w, r * h * w, 1, h * w};
    v.rank = 6;
    for (int i = 0; i < 6; ++i) { v.sizes[i] = sz[i]; v.strides[i] = st[i]; }
  } else {
    if (h % r != 0 || w % r != 0) return a.fail("spatial size not divisible by r"), a.error();
    int64_t oh = h / r, ow = w / r;
    s.d[R - 3] = c * r * r;
    s.d[R - 2] = oh;
    s.d[R - 1] = ow;
    // input [B, C, oh, r1, ow, r2] -> output order [B, C, r1, r2, oh, ow]
    int64_t sz[6] = {batch, c, r, r, oh, ow};
    int64_t st[6] = {c * h * w, h * w, w, 1, r * w, r};
    v.rank = 6;
    for (int i = 0; i < 6; ++i) { v.sizes[i] = sz[i]; v.strides[i] = st[i]; }
  }
  if (!require_contiguous(a, in) || !resize_to(a, out, s)) return a.error();
  copy_view(ctx, *in, v, *out);
  return Error::Ok;
}

// channel_shuffle(self, groups, out): [N, g*k, ...] -> channels reordered as [k, g].
Error channel_shuffle(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t g = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (in->rank < 2 || g <= 0 || in->sizes[1] % g != 0) return a.fail("invalid channel_shuffle"), a.error();
  int64_t nb = in->sizes[0], c = in->sizes[1], k = c / g, inner = 1;
  for (int d = 2; d < in->rank; ++d) inner *= in->sizes[d];
  StridedView v;
  int64_t sz[4] = {nb, k, g, inner};
  int64_t st[4] = {c * inner, inner, k * inner, 1};
  v.rank = 4;
  for (int i = 0; i < 4; ++i) { v.sizes[i] = sz[i]; v.strides[i] = st[i]; }
  if (!require_contiguous(a, in) || !resize_like(a, out, *in)) return a.error();
  copy_view(ctx, *in, v, *out);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::view.default", view);
EMBER_REGISTER_KERNEL("aten::_unsafe_view.default", view);
EMBER_REGISTER_KERNEL("aten::reshape.default", view);
EMBER_REGISTER_KERNEL("aten::view_copy.default", view);
EMBER_REGISTER_KERNEL("aten::_reshape_alias.default", view);
EMBER_REGISTER_KERNEL("aten::view_as.default", view_as);
EMBER_REGISTER_KERNEL("aten::reshape_as.default", view_as);
EMBER_REGISTER_KERNEL("aten::clone.default", same_shape_copy<3>);
EMBER_REGISTER_KERNEL("aten::contiguous.default", same_shape_copy<3>);
EMBER_REGISTER_KERNEL("aten::alias.default", same_shape_copy<2>);
EMBER_REGISTER_KERNEL("aten::alias_copy.default", same_shape_copy<2>);
EMBER_REGISTER_KERNEL("aten::lift_fresh_copy.default", same_shape_copy<2>);
EMBER_REGISTER_KERNEL("aten::detach.default", same_shape_copy<2>);
EMBER_REGISTER_KERNEL("aten::detach_copy.default", same_shape_copy<2>);
EMBER_REGISTER_KERNEL("aten::ravel.default", ravel);
EMBER_REGISTER_KERNEL("aten::_to_copy.default", same_shape_copy<8>);
EMBER_REGISTER_KERNEL("aten::to.dtype", same_shape_copy<6>);
EMBER_REGISTER_KERNEL("aten::to.device", same_shape_copy<7>);
EMBER_REGISTER_KERNEL("aten::to.dtype_layout", same_shape_copy<9>);
EMBER_REGISTER_KERNEL("aten::to.other", same_shape_copy<6>);
EMBER_REGISTER_KERNEL("aten::type_as.default", same_shape_copy<3>);
EMBER_REGISTER_KERNEL("aten::_to_dim_order_copy.default", same_shape_copy<5>);
EMBER_REGISTER_KERNEL("aten::flatten.using_ints", flatten);
EMBER_REGISTER_KERNEL("aten::unflatten.int", unflatten);
EMBER_REGISTER_KERNEL("aten::unsqueeze.default", unsqueeze);
EMBER_REGISTER_KERNEL("aten::unsqueeze_copy.default", unsqueeze);
EMBER_REGISTER_KERNEL("aten::squeeze.default", squeeze);
EMBER_REGISTER_KERNEL("aten::squeeze.dim", squeeze);
EMBER_REGISTER_KERNEL("aten::squeeze.dims", squeeze);
EMBER_REGISTER_KERNEL("aten::squeeze_copy.default", squeeze);
EMBER_REGISTER_KERNEL("aten::squeeze_copy.dim", squeeze);
EMBER_REGISTER_KERNEL("aten::squeeze_copy.dims", squeeze);
EMBER_REGISTER_KERNEL("aten::atleast_1d.default", atleast<1>);
EMBER_REGISTER_KERNEL("aten::atleast_2d.default", atleast<2>);
EMBER_REGISTER_KERNEL("aten::atleast_3d.default", atleast<3>);
EMBER_REGISTER_KERNEL("aten::permute.default", permute);
EMBER_REGISTER_KERNEL("aten::permute_copy.default", permute);
EMBER_REGISTER_KERNEL("aten::transpose.int", transpose);
EMBER_REGISTER_KERNEL("aten::transpose_copy.int", transpose);
EMBER_REGISTER_KERNEL("aten::swapaxes.default", transpose);
EMBER_REGISTER_KERNEL("aten::swapdims.default", transpose);
EMBER_REGISTER_KERNEL("aten::t.default", t<false>);
EMBER_REGISTER_KERNEL("aten::t_copy.default", t<false>);
EMBER_REGISTER_KERNEL("aten::mT.default", t<true>);
EMBER_REGISTER_KERNEL("aten::mH.default", t<true>);
EMBER_REGISTER_KERNEL("aten::matrix_H.default", t<true>);
EMBER_REGISTER_KERNEL("aten::adjoint.default", t<true>);
EMBER_REGISTER_KERNEL("aten::numpy_T.default", numpy_t);
EMBER_REGISTER_KERNEL("aten::movedim.intlist", movedim);
EMBER_REGISTER_KERNEL("aten::movedim.int", movedim);
EMBER_REGISTER_KERNEL("aten::moveaxis.intlist", movedim);
EMBER_REGISTER_KERNEL("aten::expand.default", expand);
EMBER_REGISTER_KERNEL("aten::expand_copy.default", expand);
EMBER_REGISTER_KERNEL("aten::broadcast_to.default", expand);
EMBER_REGISTER_KERNEL("aten::expand_as.default", expand_as);
EMBER_REGISTER_KERNEL("aten::slice.Tensor", slice);
EMBER_REGISTER_KERNEL("aten::slice_copy.Tensor", slice);
EMBER_REGISTER_KERNEL("aten::select.int", select);
EMBER_REGISTER_KERNEL("aten::select_copy.int", select);
EMBER_REGISTER_KERNEL("aten::narrow.default", narrow);
EMBER_REGISTER_KERNEL("aten::narrow_copy.default", narrow);
EMBER_REGISTER_KERNEL("aten::flip.default", flip);
EMBER_REGISTER_KERNEL("aten::fliplr.default", flip_fixed<1>);
EMBER_REGISTER_KERNEL("aten::flipud.default", flip_fixed<0>);
EMBER_REGISTER_KERNEL("aten::roll.default", roll);
EMBER_REGISTER_KERNEL("aten::diagonal.default", diagonal);
EMBER_REGISTER_KERNEL("aten::diagonal_copy.default", diagonal);
EMBER_REGISTER_KERNEL("aten::unfold.default", unfold);
EMBER_REGISTER_KERNEL("aten::unfold_copy.default", unfold);
EMBER_REGISTER_KERNEL("aten::as_strided.default", as_strided);
EMBER_REGISTER_KERNEL("aten::as_strided_copy.default", as_strided);
EMBER_REGISTER_KERNEL("aten::repeat.default", repeat<false>);
EMBER_REGISTER_KERNEL("aten::tile.default", repeat<true>);
EMBER_REGISTER_KERNEL("aten::copy.default", copy);
EMBER_REGISTER_KERNEL("aten::copy_.default", copy);
EMBER_REGISTER_KERNEL("aten::tril.default", tri<true>);
EMBER_REGISTER_KERNEL("aten::triu.default", tri<false>);
EMBER_REGISTER_KERNEL("aten::pixel_shuffle.default", pixel_shuffle<true>);
EMBER_REGISTER_KERNEL("aten::pixel_unshuffle.default", pixel_shuffle<false>);
EMBER_REGISTER_KERNEL("aten::channel_shuffle.default", channel_shuffle);

}  // namespace portable
}  // namespace ember
