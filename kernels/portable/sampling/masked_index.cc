// Masked gathers / scatters used by decomposed interpolation and padding code:
//   _unsafe_masked_index(self, mask, indices, fill) = where(mask, self[indices], fill)
//   _unsafe_masked_index_put_accumulate(self, mask, indices, values)
//       = self.index_put(indices, where(mask, values, 0), accumulate=True)
// `indices` index the leading dims of self (one int64/int32 tensor each, broadcast together);
// indices are clamped to [-size, size-1] as ATen does (masked-off positions may hold
// out-of-range indices); masked-off positions never read or write self.
// Any dtype for self/values; mask is bool.
#include <cstring>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

struct IndexPlan {
  int k = 0;                               // indexed leading dims
  int rank = 0;                            // rank of the broadcast index shape B
  int64_t shape[kMaxRank] = {};            // B followed by self's trailing dims
  int full_rank = 0;
  int64_t index_strides[kMaxRank][kMaxRank] = {};  // per index tensor, over B
  const Tensor* index[kMaxRank] = {};
  int64_t tail = 1;                        // elements per indexed position
  int64_t positions = 1;                   // numel(B)
};

bool plan_indices(KernelArgs& a, const Tensor* self, Span<Tensor* const> list, IndexPlan& p) {
  p.k = static_cast<int>(list.size());
  if (p.k == 0 || p.k > self->rank) return a.fail("need between 1 and rank(self) index tensors");
  // B = broadcast of the index shapes.
  int rank = 0;
  for (int i = 0; i < p.k; ++i) {
    if (list[i] == nullptr) return a.fail("None indices are not supported", Error::NotSupported);
    if (list[i]->dtype != ScalarType::Int64 && list[i]->dtype != ScalarType::Int32) return a.fail("indices must be int64 or int32");
    if (!list[i]->is_contiguous()) return a.fail("non-contiguous indices are not supported", Error::NotSupported);
    if (list[i]->rank > rank) rank = list[i]->rank;
  }
  for (int d = 0; d < rank; ++d) p.shape[d] = 1;
  for (int i = 0; i < p.k; ++i) {
    const Tensor* t = list[i];
    for (int d = 0; d < t->rank; ++d) {
      const int bd = rank - t->rank + d;
      const int64_t s = t->sizes[d];
      if (p.shape[bd] == 1) {
        p.shape[bd] = s;
      } else if (s != 1 && s != p.shape[bd]) {
        return a.fail("index tensors do not broadcast together");
      }
    }
  }
  p.rank = rank;
  for (int i = 0; i < p.k; ++i) {
    p.index[i] = list[i];
    if (!broadcast_strides(*list[i], p.shape, rank, p.index_strides[i])) return a.fail("index tensors do not broadcast");
  }
  p.full_rank = rank + self->rank - p.k;
  if (p.full_rank > kMaxRank) return a.fail("result rank is too large");
  p.tail = 1;
  for (int d = p.k; d < self->rank; ++d) {
    p.shape[rank + d - p.k] = self->sizes[d];
    p.tail *= self->sizes[d];
  }
  p.positions = 1;
  for (int d = 0; d < rank; ++d) p.positions *= p.shape[d];
  return true;
}

// Walks the broadcast index positions; f(position, self_offset_in_elements or -1 if out of range).
template <typename F>
void for_each_position(const Tensor* self, const IndexPlan& p, const F& f) {
  int64_t counter[kMaxRank] = {0};
  int64_t self_strides[kMaxRank];
  contiguous_strides(self->sizes, self->rank, self_strides);
  for (int64_t pos = 0; pos < p.positions; ++pos) {
    int64_t offset = 0;
    bool in_range = true;
    for (int i = 0; i < p.k; ++i) {
      int64_t e = 0;
      for (int d = 0; d < p.rank; ++d) e += counter[d] * p.index_strides[i][d];
      int64_t v = p.index[i]->dtype == ScalarType::Int64 ? p.index[i]->data_as<int64_t>()[e]
                                                          : p.index[i]->data_as<int32_t>()[e];
      const int64_t size = self->sizes[i];
      v = v < -size ? -size : (v > size - 1 ? size - 1 : v);  // ATen clamps to [-size, size-1]
      if (v < 0) v += size;
      if (v < 0 || v >= size) in_range = false;
      offset += v * self_strides[i];
    }
    f(pos, in_range ? offset : -1);
    for (int d = p.rank - 1; d >= 0; --d) {
      if (++counter[d] < p.shape[d]) break;
      counter[d] = 0;
    }
  }
}

// Element strides (over shape/full_rank) for mask or values, which broadcast to the result.
bool element_strides(KernelArgs& a, const Tensor* t, const IndexPlan& p, int64_t* strides) {
  if (!t->is_contiguous()) return a.fail("non-contiguous tensors are not supported", Error::NotSupported);
  if (!broadcast_strides(*t, p.shape, p.full_rank, strides)) return a.fail("mask/values do not broadcast to the result");
  return true;
}

inline int64_t offset_of(const int64_t* strides, const IndexPlan& p, int64_t pos, int64_t j) {
  // pos indexes B (row-major), j the tail.
  int64_t off = 0;
  for (int d = p.full_rank - 1; d >= p.rank; --d) {
    off += (j % p.shape[d]) * strides[d];
    j /= p.shape[d];
  }
  for (int d = p.rank - 1; d >= 0; --d) {
    off += (pos % p.shape[d]) * strides[d];
    pos /= p.shape[d];
  }
  return off;
}

// _unsafe_masked_index(self, mask, indices, fill) -> out
Error unsafe_masked_index(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  Tensor* self = a.tensor(0);
  Tensor* mask = a.tensor(1);
  Span<Tensor* const> list = a.tensor_list(2);
  const double fill = a.scalar(3);
  Tensor* out = a.tensor(4);
  if (!a.ok()) return a.error();
  if (mask->dtype != ScalarType::Bool) return ctx.fail(Error::InvalidArgument, "mask must be bool");
  if (out->dtype != self->dtype || !self->is_contiguous() || !out->is_contiguous()) {
    return ctx.fail(Error::InvalidArgument, "output must be contiguous and of self's dtype");
  }
  IndexPlan p;
  int64_t mstr[kMaxRank];
  if (!plan_indices(a, self, list, p) || !element_strides(a, mask, p, mstr)) return a.error();
  if (!resize_out(a, out, p.shape, p.full_rank)) return a.error();
  const size_t es = element_size(self->dtype);
  const uint8_t* src = static_cast<const uint8_t*>(self->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  const uint8_t* m = mask->data_as<uint8_t>();  // bool bytes: any non-zero byte is true
  uint64_t fill_bits = 0;
  store_as<double>(&fill_bits, self->dtype, 0, fill);
  bool ok = true;
  for_each_position(self, p, [&](int64_t pos, int64_t off) {
    for (int64_t j = 0; j < p.tail; ++j) {
      uint8_t* d = dst + static_cast<size_t>(pos * p.tail + j) * es;
      if (m[offset_of(mstr, p, pos, j)]) {
        if (off < 0) {
          ok = false;
          std::memcpy(d, &fill_bits, es);
        } else {
          std::memcpy(d, src + static_cast<size_t>(off + j) * es, es);
        }
      } else {
        std::memcpy(d, &fill_bits, es);
      }
    }
  });
  if (!ok) return ctx.fail(Error::InvalidArgument, "_unsafe_masked_index: an unmasked index is out of range");
  return Error::Ok;
}

// _unsafe_masked_index_put_accumulate(self, mask, indices, values) -> out
Error unsafe_masked_index_put_accumulate(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  Tensor* self = a.tensor(0);
  Tensor* mask = a.tensor(1);
  Span<Tensor* const> list = a.tensor_list(2);
  Tensor* values = a.tensor(3);
  Tensor* out = a.tensor(4);
  if (!a.ok()) return a.error();
  if (mask->dtype != ScalarType::Bool) return ctx.fail(Error::InvalidArgument, "mask must be bool");
  if (out->dtype != self->dtype || !self->is_contiguous() || !out->is_contiguous()) {
    return ctx.fail(Error::InvalidArgument, "output must be contiguous and of self's dtype");
  }
  IndexPlan p;
  int64_t mstr[kMaxRank], vstr[kMaxRank];
  if (!plan_indices(a, self, list, p) || !element_strides(a, mask, p, mstr) || !element_strides(a, values, p, vstr)) {
    return a.error();
  }
  if (!resize_out(a, out, self->sizes, self->rank)) return a.error();
  if (out->data != self->data) std::memcpy(out->data, self->data, self->nbytes());
  const uint8_t* m = mask->data_as<uint8_t>();  // bool bytes: any non-zero byte is true
  bool ok = true;
  const ScalarType vt = values->dtype, ot = out->dtype;
  for_each_position(self, p, [&](int64_t pos, int64_t off) {
    for (int64_t j = 0; j < p.tail; ++j) {
      if (!m[offset_of(mstr, p, pos, j)]) continue;
      if (off < 0) {
        ok = false;
        continue;
      }
      const int64_t e = off + j;
      const int64_t vi = offset_of(vstr, p, pos, j);
      if (ot == ScalarType::Float64 || !is_floating(ot)) {
        if (is_floating(ot)) {
          store_as<double>(out->data, ot, e, load_as<double>(out->data, ot, e) + load_as<double>(values->data, vt, vi));
        } else {
          store_as<int64_t>(out->data, ot, e, load_as<int64_t>(out->data, ot, e) + load_as<int64_t>(values->data, vt, vi));
        }
      } else {
        store_as<float>(out->data, ot, e, load_as<float>(out->data, ot, e) + load_as<float>(values->data, vt, vi));
      }
    }
  });
  if (!ok) return ctx.fail(Error::InvalidArgument, "_unsafe_masked_index_put_accumulate: an unmasked index is out of range");
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_unsafe_masked_index.default", unsafe_masked_index);
EMBER_REGISTER_KERNEL("aten::_unsafe_masked_index_put_accumulate.default", unsafe_masked_index_put_accumulate);

}  // namespace portable
}  // namespace ember
