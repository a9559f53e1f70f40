// Quantized tensors and nodes of the XNNPACK backend: checks every quantization field of a blob
// before XNNPACK sees it (a mutated or hand-written blob is an error, never a crash inside
// XNNPACK), and defines quantized values. The dtype rules are in xnnpack_graph.fbs.
#include <xnnpack.h>

#include <cmath>

#include "delegates/xnnpack/runtime/block_scales.h"
#include "delegates/xnnpack/runtime/xnnpack_delegate.h"
#include "runtime/core/float16.h"

namespace ember {
namespace xnnpack {
namespace {

bool good_scale(float s) { return std::isfinite(s) && s > 0.0f; }

const char* dtype_name(fb::DataType t) {
  const char* name = fb::EnumNameDataType(t);
  return name != nullptr && name[0] != 0 ? name : "Unknown";
}

const fb::Tensor* tensor_of(const XnnDelegate* d, uint32_t t) { return d->graph->tensors()->Get(t); }

bool same_quant(const fb::Tensor& a, const fb::Tensor& b) {
  return a.quant()->scale() == b.quant()->scale() && a.quant()->zero_point() == b.quant()->zero_point();
}

// Ops that move or select int8 values without arithmetic: XNNPACK requires one quantization
// on all their tensors.
bool passes_values(fb::OpType op) {
  return op == fb::OpType::MaxPooling2d || op == fb::OpType::Concatenate || op == fb::OpType::Clamp ||
         op == fb::OpType::Copy || op == fb::OpType::StaticReshape || op == fb::OpType::StaticTranspose;
}

// Ops with a qs8 kernel that requantizes to their own output parameters.
bool requantizes(const NodeAttrs& a) {
  return a.op == fb::OpType::Add2 || a.op == fb::OpType::Multiply2 || a.op == fb::OpType::GlobalAveragePooling2d ||
         (a.op == fb::OpType::StaticReduce && a.reduce_op == 1);
}

}  // namespace

Error bad_block_scale(uint32_t t, size_t index, uint16_t bits, Diagnostic* diag) {
  return fail(diag, Error::InvalidProgram,
              "xnnpack: QBInt4 tensor %u: block scale %zu is %g; scales must be positive normal numbers", t, index,
              static_cast<double>(bf16_to_float(bits)));
}

Error check_block_scales(uint32_t t, const uint16_t* scales, size_t count, Diagnostic* diag) {
  const size_t i = first_bad_block_scale(scales, count);
  return i == count ? Error::Ok : bad_block_scale(t, i, scales[i], diag);
}

namespace {

// A QBInt4 filter [N, K]: packed int4 with zero point 8, bfloat16 block scales in a constant
// slot (xnnpack_graph.fbs). XNNPACK would reject most violations with an unspecific status or
// read out of bounds on the others, so each is named here.
Error check_block_quantized(XnnDelegate* d, uint32_t t, const fb::Tensor& tensor, BackendInitContext& ctx,
                            Span<const CompileSpecView> specs) {
  Diagnostic* diag = ctx.diag;
  const Dims& dims = d->declared_dims[t];
  const fb::Quantization* q = tensor.quant();
  if (tensor.kind() != fb::TensorKind::Constant) {
    return fail(diag, Error::InvalidProgram, "xnnpack: QBInt4 tensor %u must be a constant (a filter)", t);
  }
  if (dims.rank != 2 || dims.d[1] % 2 != 0) {
    return fail(diag, Error::InvalidProgram, "xnnpack: QBInt4 tensor %u must be [N, K] with K even", t);
  }
  const size_t rows = dims.d[0], cols = dims.d[1], block = q->block_size();
  if (q->zero_point() != 8 || q->channel_dim() != 0) {
    return fail(diag, Error::InvalidProgram, "xnnpack: QBInt4 tensor %u needs zero point 8 and channel dim 0", t);
  }
  if (block < 32 || block % 32 != 0 || cols % block != 0) {
    return fail(diag, Error::InvalidProgram,
                "xnnpack: QBInt4 tensor %u: block size %zu must be a multiple of 32 dividing its %zu inputs per row",
                t, block, cols);
  }
  if ((q->channel_scales() != nullptr && q->channel_scales()->size() != 0) || q->channel_scales_slot() < 0) {
    return fail(diag, Error::InvalidProgram, "xnnpack: QBInt4 tensor %u needs its bfloat16 scales in a constant slot",
                t);
  }
  const size_t count = rows * (cols / block);
  Result<Span<const uint8_t>> seg = delegate_constant(ctx, specs, static_cast<uint32_t>(q->channel_scales_slot()));
  const uint64_t off = q->channel_scales_offset();
  if (!seg.ok() || off > seg->size() || count * sizeof(uint16_t) > seg->size() - off ||
      reinterpret_cast<uintptr_t>(seg->data() + off) % alignof(uint16_t) != 0) {
    return fail(diag, Error::InvalidProgram,
                "xnnpack: QBInt4 tensor %u: its %zu block scales at offset %llu do not fit constant slot %d (or are "
                "misaligned, or the program does not provide the slot)",
                t, count, static_cast<unsigned long long>(off), q->channel_scales_slot());
  }
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(seg->data() + off);
  // With a packed-weights cache the check waits until XNNPACK is about to pack this filter
  // (create_runtime, create_runtime_with_cache): packed weights mapped from a cache file read
  // no scales.
  if (d->weights == nullptr) EMBER_TRY(check_block_scales(t, scales, count, diag));
  d->block_scales[t] = scales;
  return Error::Ok;
}

}  // namespace

Error check_tensor_type(XnnDelegate* d, uint32_t t, const fb::Tensor& tensor, BackendInitContext& ctx,
                        Span<const CompileSpecView> specs) {
  Diagnostic* diag = ctx.diag;
  const Dims& dims = d->declared_dims[t];
  const fb::DataType dtype = tensor.dtype();
  if (element_size(dtype) == 0) {
    return fail(diag, Error::NotSupported, "xnnpack: tensor %u has dtype %d, unknown to this runtime (newer exporter?)",
                t, static_cast<int>(dtype));
  }
  const fb::Quantization* q = tensor.quant();
  if (dtype == fb::DataType::Fp32) {
    if (q != nullptr) return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u is Fp32 but has quantization", t);
    return Error::Ok;
  }
  if (dtype == fb::DataType::QDInt8) {
    if (tensor.kind() != fb::TensorKind::Internal) {
      return fail(diag, Error::InvalidProgram, "xnnpack: QDInt8 tensor %u must be internal (a Convert's output)", t);
    }
    if (q != nullptr) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: QDInt8 tensor %u has quantization parameters; they are computed at run time", t);
    }
    return Error::Ok;
  }
  const char* name = dtype_name(dtype);
  if (q == nullptr) return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u has no quantization", name, t);
  if (dtype == fb::DataType::QBInt4) return check_block_quantized(d, t, tensor, ctx, specs);
  const bool channelwise = dtype == fb::DataType::QCInt8 || dtype == fb::DataType::QCInt32;
  if (dtype != fb::DataType::QInt8 && tensor.kind() != fb::TensorKind::Constant) {
    return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u must be a constant (weights and biases only)", name,
                t);
  }
  if (dtype == fb::DataType::QInt8) {
    if (q->zero_point() < -128 || q->zero_point() > 127) {
      return fail(diag, Error::InvalidProgram, "xnnpack: QInt8 tensor %u has zero point %d, outside [-128, 127]", t,
                  q->zero_point());
    }
  } else if (q->zero_point() != 0) {
    return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u has zero point %d; it must be 0", name, t,
                q->zero_point());
  }
  if (!channelwise) {
    if (!good_scale(q->scale())) {
      return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u has scale %g; it must be positive and finite",
                  name, t, static_cast<double>(q->scale()));
    }
    if ((q->channel_scales() != nullptr && q->channel_scales()->size() != 0) || q->channel_scales_slot() >= 0) {
      return fail(diag, Error::InvalidProgram, "xnnpack: per-tensor %s tensor %u has channel scales", name, t);
    }
    return Error::Ok;
  }
  if (q->channel_dim() >= dims.rank) {
    return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u: channel dim %u is not below its rank %u", name, t,
                q->channel_dim(), dims.rank);
  }
  const size_t channels = dims.d[q->channel_dim()];
  const float* scales = nullptr;
  const size_t inline_count = q->channel_scales() ? q->channel_scales()->size() : 0;
  if (q->channel_scales_slot() >= 0) {
    // Float32 scales read in place from a constant slot (4-byte aligned, inside the slot).
    if (inline_count != 0) {
      return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u has both inline and slot channel scales", name, t);
    }
    Result<Span<const uint8_t>> seg = delegate_constant(ctx, specs, static_cast<uint32_t>(q->channel_scales_slot()));
    const uint64_t off = q->channel_scales_offset();
    if (!seg.ok() || off > seg->size() || channels * sizeof(float) > seg->size() - off ||
        reinterpret_cast<uintptr_t>(seg->data() + off) % alignof(float) != 0) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: %s tensor %u: its %zu channel scales at offset %llu do not fit constant slot %d (or are "
                  "misaligned, or the program does not provide the slot)",
                  name, t, channels, static_cast<unsigned long long>(off), q->channel_scales_slot());
    }
    scales = reinterpret_cast<const float*>(seg->data() + off);
  } else {
    if (inline_count != channels) {
      return fail(diag, Error::InvalidProgram, "xnnpack: %s tensor %u has %zu channel scales for %zu channels", name, t,
                  inline_count, channels);
    }
    scales = q->channel_scales()->data();
  }
  for (size_t c = 0; c < channels; ++c) {
    if (!good_scale(scales[c])) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: %s tensor %u: channel %zu has scale %g; scales must be positive and finite", name, t, c,
                  static_cast<double>(scales[c]));
    }
  }
  d->channel_scales[t] = scales;
  return Error::Ok;
}

Error check_node_types(const XnnDelegate* d, uint32_t i, const fb::Node& node, Diagnostic* diag) {
  const NodeAttrs& a = d->attrs[i];
  const char* name = op_name(a.op);
  const uint32_t n_in = node.inputs()->size();
  const fb::Tensor& in0 = *tensor_of(d, node.inputs()->Get(0));
  const fb::Tensor& out = *tensor_of(d, node.outputs()->Get(0));
  auto bad = [&](const char* why) {
    return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s): %s (input %s, output %s)", i, name, why,
                dtype_name(in0.dtype()), dtype_name(out.dtype()));
  };
  bool all_fp32 = out.dtype() == fb::DataType::Fp32;
  bool all_qint8 = out.dtype() == fb::DataType::QInt8;
  for (uint32_t j = 0; j < n_in; ++j) {
    const fb::DataType t = tensor_of(d, node.inputs()->Get(j))->dtype();
    all_fp32 &= t == fb::DataType::Fp32;
    all_qint8 &= t == fb::DataType::QInt8;
  }
  switch (a.op) {
    case fb::OpType::Convert: {
      const fb::DataType from = in0.dtype(), to = out.dtype();
      const bool ok = (from == fb::DataType::Fp32 && (to == fb::DataType::QInt8 || to == fb::DataType::QDInt8)) ||
                      (from == fb::DataType::QInt8 && (to == fb::DataType::Fp32 || to == fb::DataType::QInt8));
      return ok ? Error::Ok : bad("converts only Fp32 <-> QInt8, QInt8 -> QInt8 and Fp32 -> QDInt8");
    }
    case fb::OpType::Convolution2d:
    case fb::OpType::DepthwiseConvolution2d:
    case fb::OpType::FullyConnected: {
      if (in0.dtype() == fb::DataType::Fp32) {
        return all_fp32 ? Error::Ok : bad("an Fp32 input needs Fp32 filter, bias and output");
      }
      const fb::Tensor& filter = *tensor_of(d, node.inputs()->Get(1));
      if (in0.dtype() == fb::DataType::QDInt8) {  // qd8-f32-qc8w / qd8-f32-qb4w
        if (a.op != fb::OpType::FullyConnected) return bad("dynamically quantized inputs feed fully connected only");
        const bool qc8w = filter.dtype() == fb::DataType::QCInt8 && filter.quant()->channel_dim() == 0;
        if (!qc8w && filter.dtype() != fb::DataType::QBInt4) {
          return bad("a QDInt8 input needs a QCInt8 (channel dim 0) or QBInt4 filter");
        }
        if (n_in > 2 && tensor_of(d, node.inputs()->Get(2))->dtype() != fb::DataType::Fp32) {
          return bad("a QDInt8 fully connected takes an Fp32 bias");
        }
        return out.dtype() == fb::DataType::Fp32 ? Error::Ok : bad("a QDInt8 fully connected writes Fp32");
      }
      if (filter.dtype() == fb::DataType::QBInt4) return bad("a QBInt4 filter needs a QDInt8 input");
      const uint32_t channel_dim = a.op == fb::OpType::DepthwiseConvolution2d ? 3 : 0;
      if (in0.dtype() != fb::DataType::QInt8 || out.dtype() != fb::DataType::QInt8) {
        return bad("a quantized convolution / fully connected needs a QInt8 input and output");
      }
      if (filter.dtype() != fb::DataType::QCInt8 || filter.quant()->channel_dim() != channel_dim) {
        return bad(a.op == fb::OpType::DepthwiseConvolution2d
                       ? "the filter must be QCInt8 with channel dim 3 (depthwise [1, KH, KW, C])"
                       : "the filter must be QCInt8 with channel dim 0");
      }
      if (n_in > 2) {
        const fb::Tensor& bias = *tensor_of(d, node.inputs()->Get(2));
        if (bias.dtype() != fb::DataType::QCInt32 || bias.quant()->channel_dim() != 0) {
          return bad("the bias must be QCInt32 [output channels]");
        }
      }
      return Error::Ok;
    }
    default:
      break;
  }
  if (all_fp32) return Error::Ok;
  if (!all_qint8) return bad("mixes dtypes or takes a dtype this op has no kernel for");
  if (passes_values(a.op)) {
    for (uint32_t j = 0; j < n_in; ++j) {
      if (!same_quant(*tensor_of(d, node.inputs()->Get(j)), out)) {
        return bad("QInt8 inputs and output must share one scale and zero point");
      }
    }
    return Error::Ok;
  }
  if (!requantizes(a)) return bad("has no QInt8 kernel");
  if (a.op == fb::OpType::GlobalAveragePooling2d && (a.output_min != -INFINITY || a.output_max != INFINITY)) {
    return bad("QInt8 global average pooling takes no output range");
  }
  return Error::Ok;
}

xnn_status define_value(const XnnDelegate* d, xnn_subgraph_t sg, const fb::Tensor& tensor, const Dims& dims,
                        const void* data, uint32_t t, uint32_t flags, uint32_t* id) {
  const fb::Quantization* q = tensor.quant();  // present for every quantized dtype (checked)
  switch (tensor.dtype()) {
    case fb::DataType::Fp32:
      return xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.rank, dims.d, data, t, flags, id);
    case fb::DataType::QInt8:
      return xnn_define_quantized_tensor_value(sg, xnn_datatype_qint8, q->zero_point(), q->scale(), dims.rank, dims.d,
                                               data, t, flags, id);
    case fb::DataType::QInt32:
      return xnn_define_quantized_tensor_value(sg, xnn_datatype_qint32, 0, q->scale(), dims.rank, dims.d, data, t,
                                               flags, id);
    case fb::DataType::QDInt8:
      // One set of parameters per row: everything but the last dim is batch.
      return xnn_define_dynamically_quantized_tensor_value(sg, xnn_datatype_qdint8, dims.rank, 1, dims.d, t, flags,
                                                           id);
    case fb::DataType::QBInt4:
      return xnn_define_blockwise_quantized_tensor_value(sg, xnn_datatype_qbint4, q->zero_point(), d->block_scales[t],
                                                         dims.rank, q->channel_dim(), q->block_size(), dims.d, data, t,
                                                         flags, id);
    case fb::DataType::QCInt8:
    case fb::DataType::QCInt32:
      // The scales stay in the blob or the program's segment, which outlive the runtimes.
      return xnn_define_channelwise_quantized_tensor_value(
          sg, tensor.dtype() == fb::DataType::QCInt8 ? xnn_datatype_qcint8 : xnn_datatype_qcint32,
          d->channel_scales[t], dims.rank, q->channel_dim(), dims.d, data, t, flags, id);
  }
  return xnn_status_invalid_parameter;
}

}  // namespace xnnpack
}  // namespace ember
