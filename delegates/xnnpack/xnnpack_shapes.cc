#include "delegates/xnnpack/xnnpack_shapes.h"

#include "runtime/core/flatbuffer_alignment.h"

namespace ember {
namespace xnnpack {
namespace {

using fb::OpType;

bool fail(const char** why, const char* message) {
  *why = message;
  return false;
}

// Output extent of a sliding window; false when the window does not fit.
bool window_out(size_t in, uint32_t pad_a, uint32_t pad_b, uint32_t kernel, uint32_t stride,
                uint32_t dilation, size_t* out) {
  if (kernel == 0 || stride == 0 || dilation == 0) return false;
  const size_t padded = in + pad_a + pad_b;
  const size_t effective = static_cast<size_t>(dilation) * (kernel - 1) + 1;
  if (padded < effective) return false;
  *out = (padded - effective) / stride + 1;
  return true;
}

bool spatial(const NodeAttrs& a, const Dims& in, size_t* oh, size_t* ow) {
  return window_out(in.d[1], a.padding[0], a.padding[2], a.kernel[0], a.stride[0], a.dilation[0], oh) &&
         window_out(in.d[2], a.padding[3], a.padding[1], a.kernel[1], a.stride[1], a.dilation[1], ow);
}

bool broadcast(const Dims& x, const Dims& y, Dims* out) {
  out->rank = x.rank > y.rank ? x.rank : y.rank;
  for (uint32_t i = 0; i < out->rank; ++i) {
    // Align from the innermost dimension.
    const size_t xd = i + x.rank >= out->rank ? x.d[i + x.rank - out->rank] : 1;
    const size_t yd = i + y.rank >= out->rank ? y.d[i + y.rank - out->rank] : 1;
    if (xd != yd && xd != 1 && yd != 1) return false;
    out->d[i] = xd == 1 ? yd : xd;
  }
  return true;
}

bool check_bias(const Dims* in, uint32_t n, size_t channels) {
  return n < 3 || (in[2].rank == 1 && in[2].d[0] == channels);
}

}  // namespace

const char* op_name(fb::OpType op) {
  const char* name = fb::EnumNameOpType(op);
  return name != nullptr && name[0] != 0 ? name : "Unknown";
}

void op_arity(fb::OpType op, uint32_t* min_inputs, uint32_t* max_inputs, uint32_t* num_outputs) {
  *num_outputs = 1;
  switch (op) {
    case OpType::Convolution2d:
    case OpType::DepthwiseConvolution2d:
    case OpType::Deconvolution2d:
    case OpType::FullyConnected:
      *min_inputs = 2;
      *max_inputs = 3;
      return;
    case OpType::Add2:
    case OpType::Subtract:
    case OpType::Multiply2:
    case OpType::Divide:
    case OpType::Maximum2:
    case OpType::Minimum2:
    case OpType::SquaredDifference:
    case OpType::Prelu:
    case OpType::BatchMatrixMultiply:
      *min_inputs = *max_inputs = 2;
      return;
    case OpType::Concatenate:
      *min_inputs = 2;
      *max_inputs = 5;
      return;
    default:
      *min_inputs = *max_inputs = 1;
      return;
  }
}

bool infer_output_dims(const NodeAttrs& a, const Dims* in, uint32_t n, Dims* out, const char** why) {
  uint32_t min_in = 0, max_in = 0, num_out = 0;
  op_arity(a.op, &min_in, &max_in, &num_out);
  if (n < min_in || n > max_in) return fail(why, "wrong number of inputs");
  *out = Dims();
  switch (a.op) {
    case OpType::Convolution2d: {
      const Dims& x = in[0];
      const Dims& f = in[1];
      if (x.rank != 4 || f.rank != 4) return fail(why, "input and filter must be 4D (NHWC, OHWI)");
      if (a.groups == 0 || f.d[0] % a.groups != 0) return fail(why, "output channels not divisible by groups");
      if (f.d[3] * a.groups != x.d[3]) return fail(why, "input channels != groups * filter input channels");
      if (f.d[1] != a.kernel[0] || f.d[2] != a.kernel[1]) return fail(why, "filter size != kernel");
      if (!check_bias(in, n, f.d[0])) return fail(why, "bias must be [output channels]");
      size_t oh = 0, ow = 0;
      if (!spatial(a, x, &oh, &ow)) return fail(why, "kernel does not fit the padded input");
      out->rank = 4;
      out->d[0] = x.d[0], out->d[1] = oh, out->d[2] = ow, out->d[3] = f.d[0];
      return true;
    }
    case OpType::DepthwiseConvolution2d: {
      const Dims& x = in[0];
      const Dims& f = in[1];
      if (x.rank != 4 || f.rank != 4) return fail(why, "input and filter must be 4D (NHWC, 1HWO)");
      if (a.groups == 0 || f.d[0] != 1 || f.d[3] != x.d[3] * a.groups) {
        return fail(why, "depthwise filter must be [1, KH, KW, channels * multiplier]");
      }
      if (f.d[1] != a.kernel[0] || f.d[2] != a.kernel[1]) return fail(why, "filter size != kernel");
      if (!check_bias(in, n, f.d[3])) return fail(why, "bias must be [output channels]");
      size_t oh = 0, ow = 0;
      if (!spatial(a, x, &oh, &ow)) return fail(why, "kernel does not fit the padded input");
      out->rank = 4;
      out->d[0] = x.d[0], out->d[1] = oh, out->d[2] = ow, out->d[3] = f.d[3];
      return true;
    }
    case OpType::Deconvolution2d: {
      const Dims& x = in[0];
      const Dims& f = in[1];
      if (x.rank != 4 || f.rank != 4) return fail(why, "input and filter must be 4D");
      if (a.groups == 0 || f.d[0] % a.groups != 0 || f.d[3] * a.groups != x.d[3]) {
        return fail(why, "filter/input channels inconsistent with groups");
      }
      if (f.d[1] != a.kernel[0] || f.d[2] != a.kernel[1]) return fail(why, "filter size != kernel");
      if (!check_bias(in, n, f.d[0])) return fail(why, "bias must be [output channels]");
      size_t o[2];
      for (int k = 0; k < 2; ++k) {
        if (a.stride[k] == 0 || a.dilation[k] == 0 || a.kernel[k] == 0 || a.adjustment[k] >= a.stride[k] ||
            x.d[1 + k] == 0) {
          return fail(why, "bad stride/dilation/adjustment");
        }
        const size_t full = a.stride[k] * (x.d[1 + k] - 1) + a.adjustment[k] +
                            static_cast<size_t>(a.dilation[k]) * (a.kernel[k] - 1) + 1;
        const size_t pads = k == 0 ? a.padding[0] + a.padding[2] : a.padding[1] + a.padding[3];
        if (full <= pads) return fail(why, "padding removes the whole output");
        o[k] = full - pads;
      }
      out->rank = 4;
      out->d[0] = x.d[0], out->d[1] = o[0], out->d[2] = o[1], out->d[3] = f.d[0];
      return true;
    }
    case OpType::FullyConnected: {
      const Dims& x = in[0];
      const Dims& f = in[1];
      if (x.rank < 1 || f.rank != 2) return fail(why, "filter must be [out, in] and input at least 1D");
      if (a.flags != 0) return fail(why, "fully connected flags are not supported");
      if (x.d[x.rank - 1] != f.d[1]) return fail(why, "input's last dim != filter's in features");
      if (!check_bias(in, n, f.d[0])) return fail(why, "bias must be [out features]");
      *out = x;
      out->d[x.rank - 1] = f.d[0];
      return true;
    }
    case OpType::MaxPooling2d:
    case OpType::AveragePooling2d: {
      const Dims& x = in[0];
      if (x.rank != 4) return fail(why, "pooling input must be 4D NHWC");
      if (a.op == OpType::AveragePooling2d && (a.dilation[0] != 1 || a.dilation[1] != 1)) {
        return fail(why, "average pooling has no dilation");
      }
      size_t oh = 0, ow = 0;
      if (!spatial(a, x, &oh, &ow)) return fail(why, "window does not fit the padded input");
      out->rank = 4;
      out->d[0] = x.d[0], out->d[1] = oh, out->d[2] = ow, out->d[3] = x.d[3];
      return true;
    }
    case OpType::GlobalAveragePooling2d: {
      if (in[0].rank != 4) return fail(why, "global average pooling input must be 4D NHWC");
      out->rank = 4;
      out->d[0] = in[0].d[0], out->d[1] = 1, out->d[2] = 1, out->d[3] = in[0].d[3];
      return true;
    }
    case OpType::Add2:
    case OpType::Subtract:
    case OpType::Multiply2:
    case OpType::Divide:
    case OpType::Maximum2:
    case OpType::Minimum2:
    case OpType::SquaredDifference:
      if (in[0].rank > kMaxDims || in[1].rank > kMaxDims) return fail(why, "binary operands are limited to 6D");
      if (!broadcast(in[0], in[1], out)) return fail(why, "operands are not broadcastable");
      return true;
    case OpType::Prelu:
      if (in[0].rank != 4 || in[1].rank != 1 || in[1].d[0] != in[0].d[3]) {
        return fail(why, "prelu needs input [N,H,W,C] and slope [C]");
      }
      *out = in[0];
      return true;
    case OpType::Softmax:
      if (in[0].rank < 1) return fail(why, "softmax input must be at least 1D");
      *out = in[0];
      return true;
    case OpType::StaticConstantPad: {
      if (a.num_paddings != in[0].rank) return fail(why, "paddings must have one entry per dim");
      *out = in[0];
      for (uint32_t i = 0; i < in[0].rank; ++i) {
        if (a.pre_paddings[i] > (1u << 30) || a.post_paddings[i] > (1u << 30)) return fail(why, "padding too large");
        out->d[i] += a.pre_paddings[i] + a.post_paddings[i];
      }
      return true;
    }
    case OpType::StaticReshape: {
      if (a.new_shape_rank > kMaxDims) return fail(why, "reshape rank > 6");
      size_t known = 1;
      int inferred = -1;
      out->rank = static_cast<uint32_t>(a.new_shape_rank);
      for (uint32_t i = 0; i < out->rank; ++i) {
        if (a.new_shape[i] == -1) {
          if (inferred >= 0) return fail(why, "reshape has more than one -1");
          inferred = static_cast<int>(i);
          out->d[i] = 1;
        } else if (a.new_shape[i] < 0 || a.new_shape[i] > (int64_t{1} << 40)) {
          return fail(why, "reshape dim out of range");
        } else {
          out->d[i] = static_cast<size_t>(a.new_shape[i]);
          known *= out->d[i];
        }
      }
      const size_t numel = in[0].numel();
      if (inferred >= 0) {
        if (known == 0 || numel % known != 0) return fail(why, "reshape cannot infer the -1 dim");
        out->d[inferred] = numel / known;
      } else if (known != numel) {
        return fail(why, "reshape changes the element count");
      }
      return true;
    }
    case OpType::StaticResizeBilinear2d:
      if (in[0].rank != 4) return fail(why, "resize input must be 4D NHWC");
      if (a.new_height == 0 || a.new_width == 0 || a.new_height > (1u << 24) || a.new_width > (1u << 24)) {
        return fail(why, "bad resize output size");
      }
      out->rank = 4;
      out->d[0] = in[0].d[0], out->d[1] = a.new_height, out->d[2] = a.new_width, out->d[3] = in[0].d[3];
      return true;
    case OpType::DepthToSpace: {
      const size_t b = a.groups;
      if (in[0].rank != 4 || b < 2 || in[0].d[3] % (b * b) != 0) {
        return fail(why, "depth_to_space needs 4D input with channels divisible by block^2");
      }
      out->rank = 4;
      out->d[0] = in[0].d[0], out->d[1] = in[0].d[1] * b, out->d[2] = in[0].d[2] * b;
      out->d[3] = in[0].d[3] / (b * b);
      return true;
    }
    case OpType::BatchMatrixMultiply: {
      const Dims& x = in[0];
      const Dims& y = in[1];
      if (x.rank < 2 || y.rank < 2) return fail(why, "batch matrix multiply operands must be at least 2D");
      if ((a.flags & ~kTransposeBFlag) != 0) return fail(why, "batch matrix multiply takes only XNN_FLAG_TRANSPOSE_B");
      const bool tb = (a.flags & kTransposeBFlag) != 0;
      const size_t k = x.d[x.rank - 1];
      const size_t kb = tb ? y.d[y.rank - 1] : y.d[y.rank - 2];
      const size_t nn = tb ? y.d[y.rank - 2] : y.d[y.rank - 1];
      if (k != kb) return fail(why, "batch matrix multiply: inner dimensions differ");
      Dims bx = x, by = y;
      bx.rank -= 2;
      by.rank -= 2;
      if (!broadcast(bx, by, out)) return fail(why, "batch matrix multiply: batch dims are not broadcastable");
      out->d[out->rank] = x.d[x.rank - 2];
      out->d[out->rank + 1] = nn;
      out->rank += 2;
      return true;
    }
    case OpType::StaticTranspose: {
      if (a.num_axes != in[0].rank || in[0].rank == 0) return fail(why, "transpose needs one axis per input dim");
      bool seen[kMaxDims] = {false, false, false, false, false, false};
      out->rank = in[0].rank;
      for (uint32_t i = 0; i < out->rank; ++i) {
        if (a.axes[i] >= in[0].rank || seen[a.axes[i]]) return fail(why, "transpose axes are not a permutation");
        seen[a.axes[i]] = true;
        out->d[i] = in[0].d[a.axes[i]];
      }
      return true;
    }
    case OpType::StaticSlice: {
      if (a.num_slice != in[0].rank || in[0].rank == 0) return fail(why, "slice needs one offset and size per dim");
      *out = in[0];
      for (uint32_t i = 0; i < out->rank; ++i) {
        if (a.sizes[i] == 0 || a.offsets[i] > in[0].d[i] || a.sizes[i] > in[0].d[i] - a.offsets[i]) {
          return fail(why, "slice is empty or exceeds the input");
        }
        out->d[i] = static_cast<size_t>(a.sizes[i]);
      }
      return true;
    }
    case OpType::Concatenate: {
      if (a.axis >= in[0].rank) return fail(why, "concatenate axis out of range");
      *out = in[0];
      for (uint32_t j = 1; j < n; ++j) {
        if (in[j].rank != in[0].rank) return fail(why, "concatenate inputs differ in rank");
        for (uint32_t i = 0; i < in[0].rank; ++i) {
          if (i != a.axis && in[j].d[i] != in[0].d[i]) return fail(why, "concatenate inputs differ off the axis");
        }
        out->d[a.axis] += in[j].d[a.axis];
      }
      return true;
    }
    case OpType::StaticReduce: {
      if (a.reduce_op > 1) return fail(why, "reduce_op must be 0 (sum) or 1 (mean)");
      if ((a.flags & ~kKeepDimsFlag) != 0) return fail(why, "reduce takes only XNN_FLAG_KEEP_DIMS");
      if (a.num_axes == 0 || a.num_axes > in[0].rank) return fail(why, "reduce needs 1..rank axes");
      bool reduced[kMaxDims] = {false, false, false, false, false, false};
      for (size_t i = 0; i < a.num_axes; ++i) {
        if (a.axes[i] >= in[0].rank || reduced[a.axes[i]]) return fail(why, "reduce axes out of range or repeated");
        reduced[a.axes[i]] = true;
      }
      const bool keep = (a.flags & kKeepDimsFlag) != 0;
      for (uint32_t i = 0; i < in[0].rank; ++i) {
        if (!reduced[i]) {
          out->d[out->rank++] = in[0].d[i];
        } else if (keep) {
          out->d[out->rank++] = 1;
        }
      }
      return true;
    }
    case OpType::Gelu:
    case OpType::Tanh:
    case OpType::Exp:
    case OpType::ReciprocalSquareRoot:
    case OpType::Log:
    case OpType::Clamp:
    case OpType::Sigmoid:
    case OpType::HardSwish:
    case OpType::LeakyRelu:
    case OpType::Elu:
    case OpType::Abs:
    case OpType::Negate:
    case OpType::Square:
    case OpType::SquareRoot:
    case OpType::Ceiling:
    case OpType::Floor:
    case OpType::Sine:
    case OpType::Cosine:
    case OpType::BankersRounding:
    case OpType::Copy:
    case OpType::Convert:
      *out = in[0];
      return true;
  }
  return fail(why, "unknown op type");
}

namespace {

template <typename T, typename V>
bool read_pair(const V* v, T out[2]) {
  if (v == nullptr) return true;
  if (v->size() != 2) return false;
  out[0] = v->Get(0);
  out[1] = v->Get(1);
  return true;
}

}  // namespace

bool read_node_attrs(const fb::Node& node, NodeAttrs* a, const char** why) {
  *a = NodeAttrs();
  a->op = node.op();
  if (node.padding() != nullptr) {
    if (node.padding()->size() != 4) return fail(why, "padding must have 4 entries (top, right, bottom, left)");
    for (int i = 0; i < 4; ++i) a->padding[i] = node.padding()->Get(i);
  }
  if (!read_pair(node.kernel(), a->kernel)) return fail(why, "kernel must have 2 entries");
  if (!read_pair(node.stride(), a->stride)) return fail(why, "stride must have 2 entries");
  if (!read_pair(node.dilation(), a->dilation)) return fail(why, "dilation must have 2 entries");
  if (!read_pair(node.adjustment(), a->adjustment)) return fail(why, "adjustment must have 2 entries");
  for (int i = 0; i < 2; ++i) {
    if (a->kernel[i] > (1u << 16) || a->stride[i] > (1u << 16) || a->dilation[i] > (1u << 16) ||
        a->padding[i] > (1u << 24) || a->padding[i + 2] > (1u << 24)) {
      return fail(why, "kernel/stride/dilation/padding out of range");
    }
  }
  a->groups = node.groups();
  a->output_min = node.output_min();
  a->output_max = node.output_max();
  if (!(a->output_min <= a->output_max)) return fail(why, "output_min > output_max (or NaN)");
  a->alpha = node.alpha();
  a->padding_value = node.padding_value();
  // The 64-bit vectors are read in place: their elements must be 8-byte aligned.
  if (!elements_aligned(node.new_shape()) || !elements_aligned(node.pre_paddings()) ||
      !elements_aligned(node.post_paddings()) || !elements_aligned(node.axes()) || !elements_aligned(node.offsets()) ||
      !elements_aligned(node.sizes())) {
    return fail(why, "a new_shape, paddings, axes, offsets or sizes vector is misaligned");
  }
  if (node.new_shape() != nullptr) {
    a->new_shape = node.new_shape()->data();
    a->new_shape_rank = node.new_shape()->size();
  } else if (a->op == fb::OpType::StaticReshape) {
    a->new_shape_rank = 0;
  }
  const size_t pre = node.pre_paddings() ? node.pre_paddings()->size() : 0;
  const size_t post = node.post_paddings() ? node.post_paddings()->size() : 0;
  if (pre != post) return fail(why, "pre_paddings and post_paddings differ in length");
  if (pre != 0) {
    a->pre_paddings = node.pre_paddings()->data();
    a->post_paddings = node.post_paddings()->data();
  }
  a->num_paddings = pre;
  a->new_height = node.new_height();
  a->new_width = node.new_width();
  a->flags = node.flags();
  if (node.axes() != nullptr) {
    if (node.axes()->size() > kMaxDims) return fail(why, "more than 6 axes");
    a->axes = node.axes()->data();
    a->num_axes = node.axes()->size();
  }
  const size_t offsets = node.offsets() ? node.offsets()->size() : 0;
  const size_t sizes = node.sizes() ? node.sizes()->size() : 0;
  if (offsets != sizes) return fail(why, "offsets and sizes differ in length");
  if (offsets != 0) {
    a->offsets = node.offsets()->data();
    a->sizes = node.sizes()->data();
  }
  a->num_slice = offsets;
  a->axis = node.axis();
  a->reduce_op = node.reduce_op();
  return true;
}

}  // namespace xnnpack
}  // namespace ember
