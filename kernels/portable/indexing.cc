// Indexing: index.Tensor (advanced indexing with int and bool index tensors and None
// entries), index_put (+accumulate), index_select, gather, scatter (src/value/reduce),
// scatter_add, scatter_reduce, index_copy, index_add, index_fill, masked_select,
// masked_scatter, take, take_along_dim, put, select_scatter, slice_scatter,
// diagonal_scatter. Out-of-range indices are errors. (nonzero & co: nonzero.cc.)
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Copies self into out unless they are the same buffer (in-place variants).
bool copy_self(KernelArgs& a, const Tensor* self, Tensor* out) {
  if (!a.ok() || !require_contiguous(a, self) || !resize_like(a, out, *self)) return false;
  copy_convert(self->data, self->dtype, out->data, out->dtype, self->numel());
  return true;
}

// Advanced indexing plan: maps each element of the result shape to an offset in self.
class IndexPlan {
 public:
  Shape result;

  bool init(KernelArgs& a, KernelContext& ctx, const Tensor* self, Span<Tensor* const> list) {
    self_ = self;
    if (!require_contiguous(a, self)) return false;
    contiguous_strides(self->sizes, self->rank, self_strides_);
    // Expand masks into per-dim long index arrays (nonzero), in temp memory.
    int dim = 0;
    n_idx_ = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      const Tensor* t = list[i];
      if (t == nullptr) {
        ++dim;
        continue;
      }
      if (!require_contiguous(a, t)) return false;
      if (t->dtype == ScalarType::Bool || t->dtype == ScalarType::UInt8) {
        int k = t->rank;
        if (dim + k > self->rank) return a.fail("too many indices for the tensor");
        for (int j = 0; j < k; ++j) {
          if (t->sizes[j] != self->sizes[dim + j]) return a.fail("mask shape does not match the indexed dims");
        }
        int64_t total = t->numel(), count = 0;
        for (int64_t e = 0; e < total; ++e) count += load_as<bool>(t->data, t->dtype, e) ? 1 : 0;
        int64_t* buf = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(count * (k > 0 ? k : 1) + 1)));
        if (buf == nullptr) return a.fail("boolean-mask indexing needs temp memory", Error::OutOfMemory);
        int64_t ts[kMaxRank];
        contiguous_strides(t->sizes, k, ts);
        int64_t c = 0;
        for (int64_t e = 0; e < total; ++e) {
          if (!load_as<bool>(t->data, t->dtype, e)) continue;
          for (int j = 0; j < k; ++j) buf[j * count + c] = (e / ts[j]) % t->sizes[j];
          ++c;
        }
        for (int j = 0; j < k; ++j) {
          if (!add_index(a, buf + j * count, ScalarType::Int64, 1, &count, dim + j)) return false;
        }
        if (k == 0) {
          // A 0-dim mask adds a dim of size count (0 or 1) indexing nothing.
          return a.fail("0-dim boolean index is not supported", Error::NotSupported);
        }
        dim += k;
      } else if (t->dtype == ScalarType::Int64 || t->dtype == ScalarType::Int32 ||
                 t->dtype == ScalarType::Int16 || t->dtype == ScalarType::Int8) {
        if (!add_index(a, t->data, t->dtype, t->rank, t->sizes, dim)) return false;
        ++dim;
      } else {
        return a.fail("index tensors must be integer or bool");
      }
    }
    if (dim > self->rank) return a.fail("too many indices for the tensor");
    // Broadcast the index shapes.
    Shape b;
    for (int k = 0; k < n_idx_; ++k) {
      Shape next;
      if (!broadcast_shapes(b, idx_shape_[k], next)) return a.fail("index tensors do not broadcast");
      b = next;
    }
    b_ = b;
    for (int k = 0; k < n_idx_; ++k) {
      int64_t st[kMaxRank];
      contiguous_strides(idx_shape_[k].d, idx_shape_[k].rank, st);
      for (int d = 0; d < b.rank; ++d) {
        int kd = d - (b.rank - idx_shape_[k].rank);
        idx_bstrides_[k][d] = (kd < 0 || idx_shape_[k].d[kd] == 1) ? 0 : st[kd];
      }
    }
    // Result layout.
    bool indexed[kMaxRank] = {};
    int first = -1, last = -1;
    for (int k = 0; k < n_idx_; ++k) {
      indexed[idx_dim_[k]] = true;
      if (first < 0 || idx_dim_[k] < first) first = idx_dim_[k];
      if (idx_dim_[k] > last) last = idx_dim_[k];
    }
    bool adjacent = true;
    for (int d = first; d <= last && first >= 0; ++d) {
      if (!indexed[d]) adjacent = false;
    }
    result = Shape();
    n_out_ = 0;
    auto push_self = [&](int d) { kind_[n_out_++] = d; result.push(self->sizes[d]); };
    auto push_b = [&]() {
      for (int j = 0; j < b.rank; ++j) {
        kind_[n_out_++] = -1 - j;
        result.push(b.d[j]);
      }
    };
    if (n_idx_ == 0) {
      for (int d = 0; d < self->rank; ++d) push_self(d);
    } else if (adjacent) {
      for (int d = 0; d < first; ++d) push_self(d);
      push_b();
      for (int d = last + 1; d < self->rank; ++d) push_self(d);
    } else {
      push_b();
      for (int d = 0; d < self->rank; ++d) {
        if (!indexed[d]) push_self(d);
      }
    }
    if (result.rank > kMaxRank) return a.fail("result has too many dims");
    return true;
  }

  // Calls f(result_index, self_offset) for every result element; false (with an error on
  // `a`) when an index is out of range.
  template <typename F>
  bool for_each(KernelArgs& a, const F& f) const {
    int64_t total = result.numel();
    Counter c(result.rank, result.d);
    int64_t bidx[kMaxRank] = {};
    for (int64_t r = 0; r < total; ++r, c.next()) {
      int64_t off = 0;
      for (int d = 0; d < result.rank; ++d) {
        if (kind_[d] >= 0) off += c.idx[d] * self_strides_[kind_[d]];
        else bidx[-1 - kind_[d]] = c.idx[d];
      }
      for (int k = 0; k < n_idx_; ++k) {
        int64_t e = 0;
        for (int d = 0; d < b_.rank; ++d) e += bidx[d] * idx_bstrides_[k][d];
        int64_t v = load_as<int64_t>(idx_data_[k], idx_dtype_[k], e);
        int64_t size = self_->sizes[idx_dim_[k]];
        if (v < -size || v >= size) return a.fail("index out of range", Error::OutOfBounds);
        if (v < 0) v += size;
        off += v * self_strides_[idx_dim_[k]];
      }
      f(r, off);
    }
    return true;
  }

 private:
  bool add_index(KernelArgs& a, const void* data, ScalarType dtype, int rank, const int64_t* sizes, int dim) {
    if (n_idx_ >= kMaxRank) return a.fail("too many index tensors");
    if (dim >= self_->rank) return a.fail("too many indices for the tensor");
    idx_data_[n_idx_] = data;
    idx_dtype_[n_idx_] = dtype;
    idx_dim_[n_idx_] = dim;
    Shape s;
    for (int i = 0; i < rank; ++i) s.push(sizes[i]);
    idx_shape_[n_idx_] = s;
    ++n_idx_;
    return true;
  }

  const Tensor* self_ = nullptr;
  int64_t self_strides_[kMaxRank] = {};
  int n_idx_ = 0;
  const void* idx_data_[kMaxRank] = {};
  ScalarType idx_dtype_[kMaxRank] = {};
  int idx_dim_[kMaxRank] = {};
  Shape idx_shape_[kMaxRank];
  int64_t idx_bstrides_[kMaxRank][kMaxRank] = {};
  Shape b_;
  int kind_[kMaxRank] = {};  // >= 0: self dim; < 0: -1 - (broadcast index dim)
  int n_out_ = 0;
};

// Copies one element between buffers of the same dtype.
inline void copy_elem(void* dst, int64_t di, const void* src, int64_t si, size_t es) {
  std::memcpy(static_cast<uint8_t*>(dst) + di * es, static_cast<const uint8_t*>(src) + si * es, es);
}

// index.Tensor(self, indices?[], out)
Error index(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* self = a.tensor(0);
  Span<Tensor* const> list = a.tensor_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  IndexPlan plan;
  if (!plan.init(a, ctx, self, list) || !resize_to(a, out, plan.result)) return a.error();
  if (self->dtype == out->dtype) {
    size_t es = element_size(self->dtype);
    plan.for_each(a, [&](int64_t r, int64_t off) { copy_elem(out->data, r, self->data, off, es); });
  } else {
    plan.for_each(a, [&](int64_t r, int64_t off) {
      store_as<double>(out->data, out->dtype, r, load_as<double>(self->data, self->dtype, off));
    });
  }
  return a.ok() ? Error::Ok : a.error();
}

// Offset of result element r in `values` broadcast to `shape`.
struct BroadcastIndexer {
  Shape shape;
  int64_t strides[kMaxRank] = {};
  bool init(KernelArgs& a, const Tensor& v, const Shape& s) {
    shape = s;
    if (v.rank > s.rank) {
      // Allow leading size-1 dims beyond the result rank.
      for (int d = 0; d < v.rank - s.rank; ++d) {
        if (v.sizes[d] != 1) return a.fail("values do not broadcast to the indexed shape");
      }
    }
    int64_t st[kMaxRank];
    contiguous_strides(v.sizes, v.rank, st);
    for (int d = 0; d < s.rank; ++d) {
      int vd = d - (s.rank - v.rank);
      if (vd < 0) { strides[d] = 0; continue; }
      if (v.sizes[vd] != s.d[d] && v.sizes[vd] != 1) return a.fail("values do not broadcast to the indexed shape");
      strides[d] = v.sizes[vd] == 1 ? 0 : st[vd];
    }
    return true;
  }
  int64_t offset(int64_t r) const {
    int64_t off = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      off += (r % shape.d[d]) * strides[d];
      r /= shape.d[d];
    }
    return off;
  }
};

// index_put(self, indices?[], values, accumulate, out)
Error index_put(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  Span<Tensor* const> list = a.tensor_list(1);
  const Tensor* values = a.tensor(2);
  bool accumulate = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, values)) return a.error();
  IndexPlan plan;
  if (!plan.init(a, ctx, self, list)) return a.error();
  BroadcastIndexer vi;
  if (!vi.init(a, *values, plan.result)) return a.error();
  if (!copy_self(a, self, out)) return a.error();
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    plan.for_each(a, [&](int64_t r, int64_t off) {
      C v = load_as<C>(values->data, values->dtype, vi.offset(r));
      if (accumulate) v = add_op(v, load_as<C>(out->data, out->dtype, off));
      store_as<C>(out->data, out->dtype, off, v);
    });
  });
  return a.ok() ? Error::Ok : a.error();
}

// Wraps and checks an index along a dim of `size`.
inline bool wrap_index(KernelArgs& a, int64_t& v, int64_t size) {
  if (v < -size || v >= size) return a.fail("index out of range", Error::OutOfBounds);
  if (v < 0) v += size;
  return true;
}

// index_select(self, dim, index, out)
Error index_select(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  int64_t dim = a.int_value(1);
  const Tensor* idx = a.tensor(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, idx)) return a.error();
  if (idx->rank > 1) return a.fail("index must be 0-D or 1-D"), a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  Shape s(*self);
  int64_t count = idx->numel();
  if (self->rank > 0) s.d[dim] = count;
  if (!resize_to(a, out, s)) return a.error();
  int64_t outer = 1, inner = 1, size = self->rank > 0 ? self->sizes[dim] : 1;
  for (int d = 0; d < dim; ++d) outer *= self->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < self->rank; ++d) inner *= self->sizes[d];
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
    if (!wrap_index(a, v, size)) return a.error();
    for (int64_t o = 0; o < outer; ++o) {
      copy_convert(static_cast<const uint8_t*>(self->data) + (o * size + v) * inner * element_size(self->dtype),
                   self->dtype,
                   static_cast<uint8_t*>(out->data) + (o * count + i) * inner * element_size(out->dtype),
                   out->dtype, inner);
    }
  }
  return Error::Ok;
}

// Iterates over the elements of `index` (contiguous), giving for each its linear position,
// the offset of the same coordinates in a tensor with strides `sa`, and in one with `sb`,
// with the `dim` coordinate exposed for replacement.
template <typename F>
void for_each_index_elem(const Tensor& index, int dim, const int64_t* sa, const int64_t* sb, const F& f) {
  int64_t total = index.numel();
  Counter c(index.rank, index.sizes);
  for (int64_t i = 0; i < total; ++i, c.next()) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < index.rank; ++d) {
      if (d == dim) continue;
      oa += c.idx[d] * sa[d];
      ob += c.idx[d] * sb[d];
    }
    f(i, oa, ob, c.idx[dim]);
  }
}

// Checks that index fits inside `t` in every dim except `dim`.
bool index_fits(KernelArgs& a, const Tensor& index, const Tensor& t, int dim) {
  if (index.rank != t.rank && !(index.rank <= 1 && t.rank <= 1)) return a.fail("index must have the same rank as the tensor");
  for (int d = 0; d < index.rank && d < t.rank; ++d) {
    if (d != dim && index.sizes[d] > t.sizes[d]) return a.fail("index is larger than the tensor outside dim");
  }
  return true;
}

// gather(self, dim, index, sparse_grad, out)
Error gather(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  int64_t dim = a.int_value(1);
  const Tensor* idx = a.tensor(2);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, idx)) return a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0 || !index_fits(a, *idx, *self, static_cast<int>(dim)) || !resize_like(a, out, *idx)) return a.error();
  if (self->rank == 0) {
    if (idx->numel() == 1) {
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, 0);
      if (!wrap_index(a, v, 1)) return a.error();
      copy_convert(self->data, self->dtype, out->data, out->dtype, 1);
    }
    return Error::Ok;
  }
  int64_t ss[kMaxRank], os[kMaxRank];
  contiguous_strides(self->sizes, self->rank, ss);
  contiguous_strides(idx->sizes, idx->rank, os);
  int64_t size = self->sizes[dim];
  EMBER_DISPATCH_COMPUTE(self->dtype, C, {
    for_each_index_elem(*idx, static_cast<int>(dim), ss, os, [&](int64_t i, int64_t so, int64_t, int64_t) {
      if (!a.ok()) return;
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
      if (!wrap_index(a, v, size)) return;
      store_as<C>(out->data, out->dtype, i, load_as<C>(self->data, self->dtype, so + v * ss[dim]));
    });
  });
  return a.ok() ? Error::Ok : a.error();
}

enum class Reduce { None, Sum, Prod, Mean, Max, Min };

bool parse_reduce(KernelArgs& a, size_t i, Reduce& r) {
  if (a.string_is(i, "sum") || a.string_is(i, "add")) r = Reduce::Sum;
  else if (a.string_is(i, "prod") || a.string_is(i, "multiply")) r = Reduce::Prod;
  else if (a.string_is(i, "mean")) r = Reduce::Mean;
  else if (a.string_is(i, "amax")) r = Reduce::Max;
  else if (a.string_is(i, "amin")) r = Reduce::Min;
  else return a.fail("unknown reduce mode");
  return true;
}

template <typename C>
C combine(Reduce r, C acc, C v) {
  switch (r) {
    case Reduce::None: return v;
    case Reduce::Sum:
    case Reduce::Mean: return add_op(acc, v);
    case Reduce::Prod: return mul_op(acc, v);
    case Reduce::Max:
      if constexpr (!std::is_integral<C>::value) { if (std::isnan(v) || std::isnan(acc)) return v + acc; }
      return v > acc ? v : acc;
    case Reduce::Min:
      if constexpr (!std::is_integral<C>::value) { if (std::isnan(v) || std::isnan(acc)) return v + acc; }
      return v < acc ? v : acc;
  }
  return v;
}

// Scatter core: out = self; then for each index element, out[.., index, ..] (op)= src value.
// src == nullptr uses `value`. include_self=false (scatter_reduce) resets touched slots first.
Error scatter_core(KernelContext& ctx, KernelArgs& a, const Tensor* self, int64_t dim, const Tensor* idx,
                   const Tensor* src, const EValue* value, Reduce reduce, bool include_self, Tensor* out) {
  if (!a.ok() || !require_contiguous(a, idx) || (src && !require_contiguous(a, src))) return a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  if (!index_fits(a, *idx, *self, static_cast<int>(dim))) return a.error();
  if (src != nullptr) {
    for (int d = 0; d < idx->rank && d < src->rank; ++d) {
      if (idx->sizes[d] > src->sizes[d]) return a.fail("index is larger than src"), a.error();
    }
  }
  if (!copy_self(a, self, out)) return a.error();
  if (idx->numel() == 0) return Error::Ok;
  int64_t os[kMaxRank] = {}, ss[kMaxRank] = {};
  contiguous_strides(out->sizes, out->rank, os);
  if (src != nullptr) contiguous_strides(src->sizes, src->rank, ss);
  int64_t size = self->rank > 0 ? self->sizes[dim] : 1;
  int64_t dstride = self->rank > 0 ? os[dim] : 0;
  int64_t* counts = nullptr;
  if (reduce == Reduce::Mean || !include_self) {
    counts = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(out->numel() + 1)));
    if (counts == nullptr) return a.fail("scatter_reduce needs temp memory", Error::OutOfMemory), a.error();
    for (int64_t i = 0; i < out->numel(); ++i) counts[i] = include_self ? 1 : 0;
  }
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    C fixed = value ? scalar_to<C>(*value) : C();
    for_each_index_elem(*idx, static_cast<int>(dim), os, ss, [&](int64_t i, int64_t oo, int64_t so, int64_t k) {
      if (!a.ok()) return;
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
      if (!wrap_index(a, v, size)) return;
      int64_t target = oo + v * dstride;
      C x = src ? load_as<C>(src->data, src->dtype, so + k * (src->rank > 0 ? ss[dim] : 0)) : fixed;
      if (counts != nullptr && counts[target] == 0) {
        store_as<C>(out->data, out->dtype, target, x);
      } else {
        C cur = load_as<C>(out->data, out->dtype, target);
        store_as<C>(out->data, out->dtype, target, combine(reduce, cur, x));
      }
      if (counts != nullptr) ++counts[target];
    });
    if (a.ok() && reduce == Reduce::Mean) {
      for (int64_t i = 0; i < out->numel(); ++i) {
        if (counts[i] > 1) {
          C cur = load_as<C>(out->data, out->dtype, i);
          if constexpr (std::is_integral<C>::value) store_as<C>(out->data, out->dtype, i, safe_div_floor(cur, counts[i]));
          else store_as<C>(out->data, out->dtype, i, cur / static_cast<C>(counts[i]));
        }
      }
    }
  });
  return a.ok() ? Error::Ok : a.error();
}

// scatter.src / scatter.value(self, dim, index, src|value, out); scatter_add(self, dim, index, src, out)
template <Reduce kReduce>
Error scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  int64_t dim = a.int_value(1);
  const Tensor* idx = a.tensor(2);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  const EValue& s = a.at(3);
  if (s.is_tensor()) return scatter_core(ctx, a, self, dim, idx, s.as_tensor, nullptr, kReduce, true, out);
  a.scalar(3);
  return scatter_core(ctx, a, self, dim, idx, nullptr, &s, kReduce, true, out);
}

// scatter.reduce / scatter.value_reduce(self, dim, index, src|value, reduce, out)
Error scatter_reduce_legacy(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Reduce r;
  if (!parse_reduce(a, 4, r)) return a.error();
  const EValue& s = a.at(3);
  return scatter_core(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), s.is_tensor() ? s.as_tensor : nullptr,
                      s.is_tensor() ? nullptr : &s, r, true, a.out(5));
}

// scatter_reduce.two(self, dim, index, src, reduce, include_self, out)
Error scatter_reduce(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Reduce r;
  if (!parse_reduce(a, 4, r)) return a.error();
  return scatter_core(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), a.tensor(3), nullptr, r,
                      a.bool_value(5), a.out(6));
}

// index_copy / index_add / index_fill / index_reduce: slices of out along dim, chosen by index.
enum class IndexMode { Copy, Add, Fill, Reduce };

Error index_along(KernelContext& ctx, KernelArgs& a, const Tensor* self, int64_t dim, const Tensor* idx,
                  const Tensor* source, const EValue* scalar, IndexMode mode, Reduce reduce, bool include_self,
                  Tensor* out) {
  if (!a.ok() || !require_contiguous(a, idx) || (source && !require_contiguous(a, source))) return a.error();
  if (idx->rank > 1) return a.fail("index must be 0-D or 1-D"), a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  int64_t count = idx->numel();
  int64_t outer = 1, inner = 1, size = self->rank > 0 ? self->sizes[dim] : 1;
  for (int d = 0; d < dim; ++d) outer *= self->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < self->rank; ++d) inner *= self->sizes[d];
  if (source != nullptr) {
    int64_t ssize = source->rank > 0 ? source->sizes[dim < source->rank ? dim : 0] : 1;
    if (source->numel() != outer * count * inner || (source->rank == self->rank && ssize != count)) {
      return a.fail("source shape does not match self and index"), a.error();
    }
  }
  if (!copy_self(a, self, out)) return a.error();
  int64_t* counts = nullptr;
  if (mode == IndexMode::Reduce) {
    counts = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(out->numel() + 1)));
    if (counts == nullptr) return a.fail("index_reduce needs temp memory", Error::OutOfMemory), a.error();
    for (int64_t i = 0; i < out->numel(); ++i) counts[i] = include_self ? 1 : 0;
  }
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    C fixed = scalar ? scalar_to<C>(*scalar) : C(1);
    for (int64_t i = 0; i < count; ++i) {
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
      if (!wrap_index(a, v, size)) return a.error();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          int64_t t = (o * size + v) * inner + j;
          int64_t s = (o * count + i) * inner + j;
          C x = mode == IndexMode::Fill ? fixed : load_as<C>(source->data, source->dtype, s);
          if (mode == IndexMode::Add) x = add_op(load_as<C>(out->data, out->dtype, t), mul_op(fixed, x));
          if (mode == IndexMode::Reduce) {
            if (counts[t] > 0) x = combine(reduce, load_as<C>(out->data, out->dtype, t), x);
            ++counts[t];
          }
          store_as<C>(out->data, out->dtype, t, x);
        }
      }
    }
    if (mode == IndexMode::Reduce && reduce == Reduce::Mean) {
      for (int64_t t = 0; t < out->numel(); ++t) {
        if (counts[t] > 1) {
          C cur = load_as<C>(out->data, out->dtype, t);
          if constexpr (std::is_integral<C>::value) store_as<C>(out->data, out->dtype, t, safe_div_floor(cur, counts[t]));
          else store_as<C>(out->data, out->dtype, t, cur / static_cast<C>(counts[t]));
        }
      }
    }
  });
  return Error::Ok;
}

// index_copy(self, dim, index, source, out)
Error index_copy(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  return index_along(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), a.tensor(3), nullptr, IndexMode::Copy,
                     Reduce::None, true, a.out(4));
}

// index_add(self, dim, index, source, alpha, out)
Error index_add(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  a.scalar(4);
  return index_along(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), a.tensor(3), &a.at(4), IndexMode::Add,
                     Reduce::None, true, a.out(5));
}

// index_fill.int_Scalar / int_Tensor(self, dim, index, value, out)
Error index_fill(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  EValue v = a.at(3);
  if (v.is_tensor()) {
    const Tensor* t = v.as_tensor;
    if (t->numel() != 1) return a.fail("fill value must have one element"), a.error();
    double d = load_as<double>(t->data, t->dtype, 0);
    v = EValue();
    v.tag = ValueTag::Double;
    v.as_double = d;
  } else {
    a.scalar(3);
  }
  return index_along(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), nullptr, &v, IndexMode::Fill,
                     Reduce::None, true, a.out(4));
}

// index_reduce(self, dim, index, source, reduce, include_self, out)
Error index_reduce(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Reduce r;
  if (!parse_reduce(a, 4, r)) return a.error();
  return index_along(ctx, a, a.tensor(0), a.int_value(1), a.tensor(2), a.tensor(3), nullptr, IndexMode::Reduce, r,
                     a.bool_value(5), a.out(6));
}

// masked_select(self, mask, out): 1-D output of the selected elements (broadcast).
Error masked_select(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* mask = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, mask)) return a.error();
  Shape b;
  if (!broadcast_shapes(Shape(*self), Shape(*mask), b)) return a.fail("mask does not broadcast"), a.error();
  BroadcastIndexer si, mi;
  if (!si.init(a, *self, b) || !mi.init(a, *mask, b)) return a.error();
  int64_t total = b.numel(), count = 0;
  for (int64_t i = 0; i < total; ++i) count += load_as<bool>(mask->data, mask->dtype, mi.offset(i)) ? 1 : 0;
  Shape s;
  s.push(count);
  if (!resize_to(a, out, s)) return a.error();
  int64_t c = 0;
  EMBER_DISPATCH_COMPUTE(self->dtype, C, {
    for (int64_t i = 0; i < total; ++i) {
      if (load_as<bool>(mask->data, mask->dtype, mi.offset(i))) {
        store_as<C>(out->data, out->dtype, c++, load_as<C>(self->data, self->dtype, si.offset(i)));
      }
    }
  });
  return Error::Ok;
}

// masked_scatter(self, mask, source, out): selected positions take consecutive source values.
Error masked_scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* mask = a.tensor(1);
  const Tensor* source = a.tensor(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, mask) || !require_contiguous(a, source)) return a.error();
  BroadcastIndexer mi;
  if (!mi.init(a, *mask, Shape(*self)) || !copy_self(a, self, out)) return a.error();
  int64_t total = out->numel(), c = 0, avail = source->numel();
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    for (int64_t i = 0; i < total; ++i) {
      if (!load_as<bool>(mask->data, mask->dtype, mi.offset(i))) continue;
      if (c >= avail) return a.fail("source has too few elements", Error::OutOfBounds), a.error();
      store_as<C>(out->data, out->dtype, i, load_as<C>(source->data, source->dtype, c++));
    }
  });
  return Error::Ok;
}

// take(self, index, out): self flattened, indexed by index (output has index's shape).
Error take(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* idx = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, idx) || !resize_like(a, out, *idx)) {
    return a.error();
  }
  int64_t size = self->numel();
  EMBER_DISPATCH_COMPUTE(self->dtype, C, {
    for (int64_t i = 0; i < idx->numel(); ++i) {
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
      if (!wrap_index(a, v, size)) return a.error();
      store_as<C>(out->data, out->dtype, i, load_as<C>(self->data, self->dtype, v));
    }
  });
  return Error::Ok;
}

// take_along_dim(self, indices, dim?, out)
Error take_along_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  if (a.is_none(2)) {
    EValue* targs[3] = {args[0], args[1], args[3]};
    return take(ctx, targs, 3);
  }
  const Tensor* self = a.tensor(0);
  const Tensor* idx = a.tensor(1);
  int64_t dim = a.int_value(2);
  if (!a.ok()) return a.error();
  if (idx->rank != self->rank) return a.fail("indices must have the same rank as self"), a.error();
  int64_t d = wrap_dim(dim, self->rank);
  if (d < 0) return a.fail("take_along_dim: dim out of range"), a.error();
  bool same = true;
  for (int k = 0; k < self->rank; ++k) same = same && (k == d || idx->sizes[k] == self->sizes[k]);
  if (!same) {
    // self and indices broadcast against each other in every dim but `dim` (ATen), so
    // out[..., j, ...] = self[b(...), idx[b(..., j, ...)], b(...)].
    Tensor* out = a.out(3);
    if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, idx)) return a.error();
    Shape shape;
    for (int k = 0; k < self->rank; ++k) {
      int64_t si = self->sizes[k], ii = idx->sizes[k];
      if (k != d && si != ii && si != 1 && ii != 1) {
        return a.fail("take_along_dim: self and indices do not broadcast outside dim"), a.error();
      }
      shape.push(k == d ? ii : std::max(si, ii));
    }
    if (!resize_to(a, out, shape)) return a.error();
    int64_t ss[kMaxRank], is[kMaxRank], pos[kMaxRank] = {};
    contiguous_strides(self->sizes, self->rank, ss);
    contiguous_strides(idx->sizes, idx->rank, is);
    const int64_t size = self->sizes[d];
    for (int64_t i = 0; i < out->numel(); ++i) {
      int64_t so = 0, io = 0;
      for (int k = 0; k < self->rank; ++k) {
        io += (idx->sizes[k] == 1 ? 0 : pos[k]) * is[k];
        if (k != d) so += (self->sizes[k] == 1 ? 0 : pos[k]) * ss[k];
      }
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, io);
      if (!wrap_index(a, v, size)) return a.error();
      copy_convert(static_cast<const char*>(self->data) + (so + v * ss[d]) * element_size(self->dtype), self->dtype,
                   static_cast<char*>(out->data) + i * element_size(out->dtype), out->dtype, 1);
      for (int k = self->rank - 1; k >= 0 && ++pos[k] == shape.d[k]; --k) pos[k] = 0;
    }
    return Error::Ok;
  }
  EValue sparse;
  sparse.tag = ValueTag::Bool;
  sparse.as_bool = false;
  EValue* gargs[5] = {args[0], args[2], args[1], &sparse, args[3]};
  return gather(ctx, gargs, 5);
}

// put(self, index, source, accumulate, out): flat positions of self.
Error put(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* idx = a.tensor(1);
  const Tensor* source = a.tensor(2);
  bool accumulate = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, idx) || !require_contiguous(a, source)) return a.error();
  if (idx->numel() != source->numel()) return a.fail("index and source differ in size"), a.error();
  if (!copy_self(a, self, out)) return a.error();
  int64_t size = out->numel();
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    for (int64_t i = 0; i < idx->numel(); ++i) {
      int64_t v = load_as<int64_t>(idx->data, idx->dtype, i);
      if (!wrap_index(a, v, size)) return a.error();
      C x = load_as<C>(source->data, source->dtype, i);
      if (accumulate) x = add_op(x, load_as<C>(out->data, out->dtype, v));
      store_as<C>(out->data, out->dtype, v, x);
    }
  });
  return Error::Ok;
}

// out = self with `src` written into view v of it.
Error scatter_view(KernelArgs& a, const Tensor* self, const Tensor* src, const StridedView& v, Tensor* out) {
  if (!a.ok() || !require_contiguous(a, src)) return a.error();
  if (src->numel() != v.numel()) return a.fail("src does not match the target view's shape"), a.error();
  for (int d = 0, sd = 0; d < v.rank; ++d) {
    if (v.sizes[d] == 1) continue;
    while (sd < src->rank && src->sizes[sd] == 1) ++sd;
    if (sd >= src->rank || src->sizes[sd] != v.sizes[d]) return a.fail("src does not match the target view's shape"), a.error();
    ++sd;
  }
  if (!copy_self(a, self, out)) return a.error();
  copy_into_view(*src, *out, v);
  return Error::Ok;
}

// select_scatter(self, src, dim, index, out)
Error select_scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* src = a.tensor(1);
  int64_t dim = a.int_value(2), index = a.int_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0 || self->rank == 0) return a.fail("dim out of range"), a.error();
  if (!wrap_index(a, index, self->sizes[dim])) return a.error();
  StridedView base = StridedView::of(*self), v;
  v.offset = index * base.strides[dim];
  for (int d = 0; d < self->rank; ++d) {
    if (d == dim) continue;
    v.sizes[v.rank] = base.sizes[d];
    v.strides[v.rank] = base.strides[d];
    ++v.rank;
  }
  return scatter_view(a, self, src, v, out);
}

// slice_scatter(self, src, dim, start?, end?, step, out)
Error slice_scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* src = a.tensor(1);
  int64_t dim = a.int_value(2), step = a.int_value(5);
  Tensor* out = a.out(6);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, self->rank);
  if (dim < 0 || self->rank == 0 || step <= 0) return a.fail("invalid slice_scatter arguments"), a.error();
  int64_t size = self->sizes[dim];
  auto clampi = [size](int64_t i) { if (i < 0) i += size; return i < 0 ? int64_t{0} : (i > size ? size : i); };
  int64_t start = clampi(a.optional_int(3, 0)), end = clampi(a.optional_int(4, size));
  if (!a.ok()) return a.error();
  StridedView v = StridedView::of(*self);
  v.offset = start * v.strides[dim];
  v.sizes[dim] = end > start ? (end - start + step - 1) / step : 0;
  v.strides[dim] *= step;
  return scatter_view(a, self, src, v, out);
}

// diagonal_scatter(self, src, offset, dim1, dim2, out)
Error diagonal_scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* src = a.tensor(1);
  int64_t offset = a.int_value(2), d1 = a.int_value(3), d2 = a.int_value(4);
  Tensor* out = a.out(5);
  if (!a.ok()) return a.error();
  if (self->rank < 2) return a.fail("needs at least 2 dims"), a.error();
  d1 = wrap_dim(d1, self->rank);
  d2 = wrap_dim(d2, self->rank);
  if (d1 < 0 || d2 < 0 || d1 == d2) return a.fail("invalid dims"), a.error();
  StridedView v = diagonal_view(StridedView::of(*self), offset, d1, d2);
  return scatter_view(a, self, src, v, out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::index.Tensor", index);
EMBER_REGISTER_KERNEL("aten::_unsafe_index.Tensor", index);
EMBER_REGISTER_KERNEL("aten::index_put.default", index_put);
EMBER_REGISTER_KERNEL("aten::index_put_.default", index_put);
EMBER_REGISTER_KERNEL("aten::_unsafe_index_put.default", index_put);
EMBER_REGISTER_KERNEL("aten::index_select.default", index_select);
EMBER_REGISTER_KERNEL("aten::gather.default", gather);
EMBER_REGISTER_KERNEL("aten::scatter.src", scatter<Reduce::None>);
EMBER_REGISTER_KERNEL("aten::scatter.value", scatter<Reduce::None>);
EMBER_REGISTER_KERNEL("aten::scatter_.src", scatter<Reduce::None>);
EMBER_REGISTER_KERNEL("aten::scatter_.value", scatter<Reduce::None>);
EMBER_REGISTER_KERNEL("aten::scatter_add.default", scatter<Reduce::Sum>);
EMBER_REGISTER_KERNEL("aten::scatter_add_.default", scatter<Reduce::Sum>);
EMBER_REGISTER_KERNEL("aten::scatter.reduce", scatter_reduce_legacy);
EMBER_REGISTER_KERNEL("aten::scatter.value_reduce", scatter_reduce_legacy);
EMBER_REGISTER_KERNEL("aten::scatter_reduce.two", scatter_reduce);
EMBER_REGISTER_KERNEL("aten::index_copy.default", index_copy);
EMBER_REGISTER_KERNEL("aten::index_copy_.default", index_copy);
EMBER_REGISTER_KERNEL("aten::index_add.default", index_add);
EMBER_REGISTER_KERNEL("aten::index_add_.default", index_add);
EMBER_REGISTER_KERNEL("aten::index_fill.int_Scalar", index_fill);
EMBER_REGISTER_KERNEL("aten::index_fill.int_Tensor", index_fill);
EMBER_REGISTER_KERNEL("aten::index_fill_.int_Scalar", index_fill);
EMBER_REGISTER_KERNEL("aten::index_reduce.default", index_reduce);
EMBER_REGISTER_KERNEL("aten::masked_select.default", masked_select);
EMBER_REGISTER_KERNEL("aten::masked_scatter.default", masked_scatter);
EMBER_REGISTER_KERNEL("aten::take.default", take);
EMBER_REGISTER_KERNEL("aten::take_along_dim.default", take_along_dim);
EMBER_REGISTER_KERNEL("aten::put.default", put);
EMBER_REGISTER_KERNEL("aten::select_scatter.default", select_scatter);
EMBER_REGISTER_KERNEL("aten::slice_scatter.default", slice_scatter);
EMBER_REGISTER_KERNEL("aten::diagonal_scatter.default", diagonal_scatter);

}  // namespace portable
}  // namespace ember
