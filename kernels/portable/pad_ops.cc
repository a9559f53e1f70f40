// Padding (constant_pad_nd, pad with constant/reflect/replicate/circular modes) and
// diagonal constructions (diag, diag_embed, diagflat, trace).
#include <cstring>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum class PadMode { Constant, Reflect, Replicate, Circular };

// Pads the trailing dims of `in` by pad = (last_lo, last_hi, prev_lo, prev_hi, ...).
Error pad_core(KernelArgs& a, const Tensor* in, Span<const int64_t> pad, PadMode mode, const EValue* value,
               Tensor* out) {
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (pad.size() % 2 != 0 || pad.size() / 2 > in->rank) return a.fail("pad length must be even and at most 2*rank"), a.error();
  int64_t lo[kMaxRank] = {};
  Shape s(*in);
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int d = in->rank - 1 - static_cast<int>(i);
    lo[d] = pad[2 * i];
    s.d[d] = in->sizes[d] + pad[2 * i] + pad[2 * i + 1];
    if (s.d[d] < 0) return a.fail("padding makes a dim negative"), a.error();
    if (mode == PadMode::Reflect && (pad[2 * i] >= in->sizes[d] || pad[2 * i + 1] >= in->sizes[d])) {
      return a.fail("reflect padding must be smaller than the dim"), a.error();
    }
    if (mode != PadMode::Constant && in->sizes[d] == 0) return a.fail("cannot pad an empty dim"), a.error();
    if (mode == PadMode::Circular && (pad[2 * i] > in->sizes[d] || pad[2 * i + 1] > in->sizes[d])) {
      return a.fail("circular padding must not exceed the dim"), a.error();
    }
  }
  if (!resize_to(a, out, s)) return a.error();
  int64_t in_strides[kMaxRank];
  contiguous_strides(in->sizes, in->rank, in_strides);
  int64_t total = s.numel();
  int64_t idx[kMaxRank] = {};
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    C fill = value ? scalar_to<C>(*value) : C(0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t off = 0;
      bool inside = true;
      for (int d = 0; d < in->rank; ++d) {
        int64_t size = in->sizes[d];
        int64_t j = idx[d] - lo[d];
        if (j < 0 || j >= size) {
          switch (mode) {
            case PadMode::Constant: inside = false; break;
            case PadMode::Reflect: j = j < 0 ? -j : 2 * (size - 1) - j; break;
            case PadMode::Replicate: j = j < 0 ? 0 : size - 1; break;
            case PadMode::Circular: j = ((j % size) + size) % size; break;
          }
        }
        off += j * in_strides[d];
      }
      store_as<C>(out->data, out->dtype, o, inside ? load_as<C>(in->data, in->dtype, off) : fill);
      for (int d = s.rank - 1; d >= 0; --d) {
        if (++idx[d] < s.d[d]) break;
        idx[d] = 0;
      }
    }
  });
  return Error::Ok;
}

// constant_pad_nd(self, pad[], value, out)
Error constant_pad_nd(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> pad = a.int_list(1);
  a.scalar(2);
  return pad_core(a, in, pad, PadMode::Constant, &a.at(2), a.out(3));
}

// pad(self, pad[], mode, value?, out)
Error pad(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> p = a.int_list(1);
  PadMode mode;
  if (a.string_is(2, "constant")) mode = PadMode::Constant;
  else if (a.string_is(2, "reflect")) mode = PadMode::Reflect;
  else if (a.string_is(2, "replicate")) mode = PadMode::Replicate;
  else if (a.string_is(2, "circular")) mode = PadMode::Circular;
  else return a.fail("unknown pad mode"), a.error();
  const EValue* value = a.is_none(3) ? nullptr : &a.at(3);
  return pad_core(a, in, p, mode, value, a.out(4));
}

// reflection_pad*/replication_pad*(self, padding[], out)
template <PadMode kMode>
Error pad_fixed(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  return pad_core(a, a.tensor(0), a.int_list(1), kMode, nullptr, a.out(2));
}

// diag(self, diagonal, out): 1-D -> square matrix; 2-D -> its diagonal.
Error diag(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->rank == 1) {
    int64_t m = in->sizes[0], size = m + (k >= 0 ? k : -k);
    Shape s;
    s.push(size);
    s.push(size);
    if (!resize_to(a, out, s)) return a.error();
    std::memset(out->data, 0, out->nbytes());
    EMBER_DISPATCH_COMPUTE(out->dtype, C, {
      for (int64_t i = 0; i < m; ++i) {
        int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
        store_as<C>(out->data, out->dtype, r * size + c, load_as<C>(in->data, in->dtype, i));
      }
    });
    return Error::Ok;
  }
  if (in->rank != 2) return a.fail("diag needs a 1-D or 2-D tensor"), a.error();
  int64_t rows = in->sizes[0], cols = in->sizes[1];
  int64_t len = k >= 0 ? (cols - k < rows ? cols - k : rows) : (rows + k < cols ? rows + k : cols);
  if (len < 0) len = 0;
  Shape s;
  s.push(len);
  if (!resize_to(a, out, s)) return a.error();
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    for (int64_t i = 0; i < len; ++i) {
      int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
      store_as<C>(out->data, out->dtype, i, load_as<C>(in->data, in->dtype, r * cols + c));
    }
  });
  return Error::Ok;
}

// diagflat(self, offset, out): diag of the flattened input.
Error diagflat(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  if (!a.ok()) return a.error();
  Tensor flat = *in;
  int64_t fs[1] = {in->numel()};
  flat.rank = 1;
  flat.sizes = fs;
  flat.max_sizes = fs;
  EValue fv;
  fv.tag = ValueTag::Tensor;
  fv.as_tensor = &flat;
  EValue* dargs[3] = {&fv, args[1], args[2]};
  return diag(ctx, dargs, 3);
}

// diag_embed(self, offset, dim1, dim2, out): last dim of self placed on a diagonal.
Error diag_embed(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1), d1 = a.int_value(2), d2 = a.int_value(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->rank < 1 || in->rank + 1 > kMaxRank) return a.fail("invalid rank"), a.error();
  int r = in->rank + 1;
  d1 = wrap_dim(d1, r);
  d2 = wrap_dim(d2, r);
  if (d1 < 0 || d2 < 0 || d1 == d2) return a.fail("invalid dims"), a.error();
  int64_t m = in->sizes[in->rank - 1], size = m + (k >= 0 ? k : -k);
  Shape s;
  int src = 0;
  for (int d = 0; d < r; ++d) {
    if (d == d1 || d == d2) s.push(size);
    else s.push(in->sizes[src++]);
  }
  if (!resize_to(a, out, s)) return a.error();
  std::memset(out->data, 0, out->nbytes());
  int64_t os[kMaxRank];
  contiguous_strides(s.d, r, os);
  int64_t total = in->numel();
  int64_t idx[kMaxRank] = {};
  EMBER_DISPATCH_COMPUTE(out->dtype, C, {
    for (int64_t e = 0; e < total; ++e) {
      int64_t i = idx[in->rank - 1];
      int64_t off = 0;
      int b = 0;
      for (int d = 0; d < r; ++d) {
        if (d == d1) off += (k >= 0 ? i : i - k) * os[d];
        else if (d == d2) off += (k >= 0 ? i + k : i) * os[d];
        else off += idx[b++] * os[d];
      }
      store_as<C>(out->data, out->dtype, off, load_as<C>(in->data, in->dtype, e));
      for (int d = in->rank - 1; d >= 0; --d) {
        if (++idx[d] < in->sizes[d]) break;
        idx[d] = 0;
      }
    }
  });
  return Error::Ok;
}

// trace(self, out): sum of the main diagonal of a 2-D tensor.
Error trace(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->rank != 2) return a.fail("trace needs a 2-D tensor"), a.error();
  if (!resize_to(a, out, Shape())) return a.error();
  int64_t len = in->sizes[0] < in->sizes[1] ? in->sizes[0] : in->sizes[1];
  if (is_floating(out->dtype)) {
    double acc = 0;
    for (int64_t i = 0; i < len; ++i) acc += load_as<double>(in->data, in->dtype, i * in->sizes[1] + i);
    store_as<double>(out->data, out->dtype, 0, acc);
  } else {
    int64_t acc = 0;
    for (int64_t i = 0; i < len; ++i) acc = wrap_add(acc, load_as<int64_t>(in->data, in->dtype, i * in->sizes[1] + i));
    store_as<int64_t>(out->data, out->dtype, 0, acc);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::constant_pad_nd.default", constant_pad_nd);
EMBER_REGISTER_KERNEL("aten::pad.default", pad);
EMBER_REGISTER_KERNEL("aten::reflection_pad1d.default", pad_fixed<PadMode::Reflect>);
EMBER_REGISTER_KERNEL("aten::reflection_pad2d.default", pad_fixed<PadMode::Reflect>);
EMBER_REGISTER_KERNEL("aten::reflection_pad3d.default", pad_fixed<PadMode::Reflect>);
EMBER_REGISTER_KERNEL("aten::replication_pad1d.default", pad_fixed<PadMode::Replicate>);
EMBER_REGISTER_KERNEL("aten::replication_pad2d.default", pad_fixed<PadMode::Replicate>);
EMBER_REGISTER_KERNEL("aten::replication_pad3d.default", pad_fixed<PadMode::Replicate>);
EMBER_REGISTER_KERNEL("aten::_pad_circular.default", pad_fixed<PadMode::Circular>);
EMBER_REGISTER_KERNEL("aten::diag.default", diag);
EMBER_REGISTER_KERNEL("aten::diagflat.default", diagflat);
EMBER_REGISTER_KERNEL("aten::diag_embed.default", diag_embed);
EMBER_REGISTER_KERNEL("aten::trace.default", trace);

}  // namespace portable
}  // namespace ember
