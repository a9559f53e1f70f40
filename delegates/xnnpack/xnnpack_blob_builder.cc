#include "delegates/xnnpack/xnnpack_blob_builder.h"

#include <cstring>

#include "flatbuffers/flatbuffers.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr size_t kExtraBytes = 16;  // XNN_EXTRA_BYTES

std::vector<uint64_t> to_u64(const std::vector<size_t>& v) { return std::vector<uint64_t>(v.begin(), v.end()); }

Dims to_dims(const std::vector<uint64_t>& v) {
  Dims d;
  d.rank = static_cast<uint32_t>(v.size() > kMaxDims ? kMaxDims : v.size());
  for (uint32_t i = 0; i < d.rank; ++i) d.d[i] = static_cast<size_t>(v[i]);
  return d;
}

}  // namespace

NodeAttrs to_attrs(fb::OpType op, const XnnNodeParams& p) {
  NodeAttrs a;
  a.op = op;
  for (int i = 0; i < 4; ++i) a.padding[i] = p.padding[i];
  for (int i = 0; i < 2; ++i) {
    a.kernel[i] = p.kernel[i];
    a.stride[i] = p.stride[i];
    a.dilation[i] = p.dilation[i];
    a.adjustment[i] = p.adjustment[i];
  }
  a.groups = p.groups;
  a.output_min = p.output_min;
  a.output_max = p.output_max;
  a.alpha = p.alpha;
  a.padding_value = p.padding_value;
  a.new_shape = p.new_shape.data();
  a.new_shape_rank = p.new_shape.size();
  a.pre_paddings = p.pre_paddings.data();
  a.post_paddings = p.post_paddings.data();
  a.num_paddings = p.pre_paddings.size() == p.post_paddings.size() ? p.pre_paddings.size() : kMaxDims + 1;
  a.new_height = static_cast<size_t>(p.new_height);
  a.new_width = static_cast<size_t>(p.new_width);
  a.flags = p.flags;
  a.axes = p.axes.data();
  a.num_axes = p.axes.size();
  a.offsets = p.offsets.data();
  a.sizes = p.sizes.data();
  a.num_slice = p.offsets.size() == p.sizes.size() ? p.offsets.size() : kMaxDims + 1;
  a.axis = p.axis;
  a.reduce_op = p.reduce_op;
  return a;
}

uint32_t XnnBlobBuilder::set_error(const std::string& message) {
  if (error_.empty()) error_ = message;
  return kInvalidId;
}

uint32_t XnnBlobBuilder::push(const XnnTensorSpec& spec) {
  tensors_.push_back(spec);
  dims_.push_back(to_dims(spec.dims));
  return static_cast<uint32_t>(tensors_.size() - 1);
}

uint32_t XnnBlobBuilder::add_tensor_raw(const XnnTensorSpec& spec) { return push(spec); }

void XnnBlobBuilder::add_node_raw(fb::OpType op, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                                  const XnnNodeParams& params) {
  nodes_.push_back(NodeSpec{op, std::move(inputs), std::move(outputs), params, node_name_});
}

uint32_t XnnBlobBuilder::input(std::vector<size_t> dims, fb::Layout layout, std::vector<size_t> max_dims) {
  if (!ok()) return kInvalidId;
  if (dims.size() > kMaxDims) return set_error("input rank > 6");
  if (layout == fb::Layout::NchwToNhwc && dims.size() != 4) return set_error("NchwToNhwc input must be 4D");
  if (!max_dims.empty() && max_dims.size() != dims.size()) return set_error("max_dims rank != dims rank");
  XnnTensorSpec t;
  t.dims = to_u64(dims);
  t.max_dims = to_u64(max_dims);
  t.kind = fb::TensorKind::ExternalInput;
  t.external_index = num_inputs_++;
  t.layout = layout;
  return push(t);
}

void XnnBlobBuilder::mark_output(uint32_t id, fb::Layout layout, std::vector<size_t> max_dims) {
  if (!ok()) return;
  if (id >= tensors_.size() || tensors_[id].kind != fb::TensorKind::Internal) {
    set_error("mark_output: tensor " + std::to_string(id) + " is not a node output");
    return;
  }
  XnnTensorSpec& t = tensors_[id];
  if (layout == fb::Layout::NchwToNhwc && t.dims.size() != 4) {
    set_error("NchwToNhwc output must be 4D");
    return;
  }
  if (!max_dims.empty() && max_dims.size() != t.dims.size()) {
    set_error("max_dims rank != dims rank");
    return;
  }
  t.kind = fb::TensorKind::ExternalOutput;
  t.external_index = num_outputs_++;
  t.layout = layout;
  t.max_dims = to_u64(max_dims);
}

uint32_t XnnBlobBuilder::constant(std::vector<size_t> dims, const float* data) {
  if (!ok()) return kInvalidId;
  if (dims.size() > kMaxDims) return set_error("constant rank > 6");
  XnnTensorSpec t;
  t.dims = to_u64(dims);
  t.kind = fb::TensorKind::Constant;
  const size_t nbytes = to_dims(t.dims).numel() * sizeof(float);
  t.nbytes = nbytes;
  t.inline_bytes.resize(nbytes + kExtraBytes, 0);
  if (nbytes != 0) std::memcpy(t.inline_bytes.data(), data, nbytes);
  return push(t);
}

uint32_t XnnBlobBuilder::constant_in_slot(std::vector<size_t> dims, int32_t segment, uint64_t offset) {
  if (!ok()) return kInvalidId;
  if (dims.size() > kMaxDims) return set_error("constant rank > 6");
  if (segment < 0) return set_error("constant_in_slot needs a slot >= 0");
  XnnTensorSpec t;
  t.dims = to_u64(dims);
  t.kind = fb::TensorKind::Constant;
  t.segment_index = segment;
  t.segment_offset = offset;
  t.nbytes = to_dims(t.dims).numel() * sizeof(float);
  return push(t);
}

void XnnBlobBuilder::set_qint8(uint32_t id, float scale, int32_t zero_point) {
  if (!ok()) return;
  if (id >= tensors_.size() || tensors_[id].kind == fb::TensorKind::Constant) {
    set_error("set_qint8: tensor " + std::to_string(id) + " is not an input or a node output");
    return;
  }
  tensors_[id].dtype = fb::DataType::QInt8;
  tensors_[id].quant = XnnQuant();
  tensors_[id].quant.scale = scale;
  tensors_[id].quant.zero_point = zero_point;
}

void XnnBlobBuilder::set_qdint8(uint32_t id) {
  if (!ok()) return;
  if (id >= tensors_.size() || tensors_[id].kind != fb::TensorKind::Internal) {
    set_error("set_qdint8: tensor " + std::to_string(id) + " is not a node output");
    return;
  }
  tensors_[id].dtype = fb::DataType::QDInt8;
  tensors_[id].quant = XnnQuant();
}

uint32_t XnnBlobBuilder::quantized_constant(fb::DataType dtype, std::vector<size_t> dims, const void* data,
                                            XnnQuant q) {
  if (!ok()) return kInvalidId;
  if (dims.size() > kMaxDims) return set_error("constant rank > 6");
  if (dtype == fb::DataType::Fp32) return set_error("quantized_constant: Fp32 is not a quantized type");
  XnnTensorSpec t;
  t.dtype = dtype;
  t.quant = std::move(q);
  t.dims = to_u64(dims);
  t.kind = fb::TensorKind::Constant;
  const size_t nbytes = storage_bytes(dtype, to_dims(t.dims).numel());
  t.nbytes = nbytes;
  t.inline_bytes.resize(nbytes + kExtraBytes, 0);
  if (nbytes != 0) std::memcpy(t.inline_bytes.data(), data, nbytes);
  return push(t);
}

uint32_t XnnBlobBuilder::quantized_constant_in_slot(fb::DataType dtype, std::vector<size_t> dims, XnnQuant q,
                                                    int32_t slot, uint64_t offset) {
  if (!ok()) return kInvalidId;
  if (dims.size() > kMaxDims) return set_error("constant rank > 6");
  if (slot < 0) return set_error("quantized_constant_in_slot needs a slot >= 0");
  if (dtype == fb::DataType::Fp32) return set_error("quantized_constant_in_slot: Fp32 is not a quantized type");
  XnnTensorSpec t;
  t.dtype = dtype;
  t.quant = std::move(q);
  t.dims = to_u64(dims);
  t.kind = fb::TensorKind::Constant;
  t.segment_index = slot;
  t.segment_offset = offset;
  t.nbytes = storage_bytes(dtype, to_dims(t.dims).numel());
  return push(t);
}

uint32_t XnnBlobBuilder::qconv2d_from_oihw(uint32_t input, const int8_t* weight, const float* weight_scales,
                                           size_t out_channels, size_t in_per_group, size_t kernel_h, size_t kernel_w,
                                           const int32_t* bias, float out_scale, int32_t out_zero_point,
                                           XnnNodeParams params, uint32_t groups) {
  if (!ok()) return kInvalidId;
  if (input >= tensors_.size() || dims_[input].rank != 4 || tensors_[input].dtype != fb::DataType::QInt8) {
    return set_error("qconv2d: input must be a 4D NHWC QInt8 tensor");
  }
  const size_t in_channels = dims_[input].d[3];
  params.kernel = {{static_cast<uint32_t>(kernel_h), static_cast<uint32_t>(kernel_w)}};
  XnnQuant wq;
  wq.channel_scales.assign(weight_scales, weight_scales + out_channels);
  uint32_t filter = kInvalidId;
  fb::OpType op = fb::OpType::Convolution2d;
  if (groups > 1 && groups == in_channels && in_per_group == 1 && out_channels % groups == 0) {
    op = fb::OpType::DepthwiseConvolution2d;
    params.groups = static_cast<uint32_t>(out_channels / in_channels);
    wq.channel_dim = 3;
    std::vector<int8_t> w = depthwise_oihw_to_1hwo(weight, out_channels, kernel_h, kernel_w);
    filter = quantized_constant(fb::DataType::QCInt8, {1, kernel_h, kernel_w, out_channels}, w.data(), wq);
  } else {
    params.groups = groups;
    std::vector<int8_t> w = oihw_to_ohwi(weight, out_channels, in_per_group, kernel_h, kernel_w);
    filter = quantized_constant(fb::DataType::QCInt8, {out_channels, kernel_h, kernel_w, in_per_group}, w.data(), wq);
  }
  std::vector<uint32_t> inputs = {input, filter};
  if (bias != nullptr) {
    XnnQuant bq;
    for (size_t c = 0; c < out_channels; ++c) bq.channel_scales.push_back(tensors_[input].quant.scale * weight_scales[c]);
    inputs.push_back(quantized_constant(fb::DataType::QCInt32, {out_channels}, bias, bq));
  }
  const uint32_t y = node(op, inputs, params);
  set_qint8(y, out_scale, out_zero_point);
  return y;
}

uint32_t XnnBlobBuilder::qlinear(uint32_t input, const int8_t* weight, const float* weight_scales, size_t out_features,
                                 size_t in_features, const int32_t* bias, float out_scale, int32_t out_zero_point,
                                 const XnnNodeParams& params) {
  if (!ok()) return kInvalidId;
  if (input >= tensors_.size() || tensors_[input].dtype != fb::DataType::QInt8) {
    return set_error("qlinear: input must be a QInt8 tensor");
  }
  XnnQuant wq;
  wq.channel_scales.assign(weight_scales, weight_scales + out_features);
  std::vector<uint32_t> inputs = {
      input, quantized_constant(fb::DataType::QCInt8, {out_features, in_features}, weight, wq)};
  if (bias != nullptr) {
    XnnQuant bq;
    for (size_t c = 0; c < out_features; ++c) bq.channel_scales.push_back(tensors_[input].quant.scale * weight_scales[c]);
    inputs.push_back(quantized_constant(fb::DataType::QCInt32, {out_features}, bias, bq));
  }
  const uint32_t y = node(fb::OpType::FullyConnected, inputs, params);
  set_qint8(y, out_scale, out_zero_point);
  return y;
}

uint32_t XnnBlobBuilder::node(fb::OpType op, std::vector<uint32_t> inputs, const XnnNodeParams& params) {
  if (!ok()) return kInvalidId;
  Dims in[5];
  if (inputs.size() > 5) return set_error(std::string(op_name(op)) + ": too many inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] >= tensors_.size()) return set_error(std::string(op_name(op)) + ": unknown input tensor");
    in[i] = dims_[inputs[i]];
  }
  const NodeAttrs attrs = to_attrs(op, params);
  Dims out;
  const char* why = "";
  if (!infer_output_dims(attrs, in, static_cast<uint32_t>(inputs.size()), &out, &why)) {
    return set_error(std::string(op_name(op)) + ": " + why);
  }
  XnnTensorSpec t;
  t.dims.assign(out.d, out.d + out.rank);
  if (op == fb::OpType::StaticTranspose && !inputs.empty()) {
    // A transpose moves elements: a quantized input gives a quantized output of the same
    // parameters (a layout change inside an int8 chain).
    t.dtype = tensors_[inputs[0]].dtype;
    t.quant = tensors_[inputs[0]].quant;
  }
  const uint32_t id = push(t);
  nodes_.push_back(NodeSpec{op, std::move(inputs), {id}, params, node_name_});
  return id;
}

uint32_t XnnBlobBuilder::conv2d_from_oihw(uint32_t input, const float* weight, size_t out_channels,
                                          size_t in_per_group, size_t kernel_h, size_t kernel_w, const float* bias,
                                          XnnNodeParams params, uint32_t groups) {
  if (!ok()) return kInvalidId;
  if (input >= tensors_.size() || dims_[input].rank != 4) return set_error("conv2d: input must be a 4D NHWC tensor");
  const size_t in_channels = dims_[input].d[3];
  params.kernel = {{static_cast<uint32_t>(kernel_h), static_cast<uint32_t>(kernel_w)}};
  uint32_t filter = kInvalidId;
  fb::OpType op = fb::OpType::Convolution2d;
  if (groups > 1 && groups == in_channels && in_per_group == 1 && out_channels % groups == 0) {
    op = fb::OpType::DepthwiseConvolution2d;
    params.groups = static_cast<uint32_t>(out_channels / in_channels);  // depth multiplier
    std::vector<float> w = depthwise_oihw_to_1hwo(weight, out_channels, kernel_h, kernel_w);
    filter = constant({1, kernel_h, kernel_w, out_channels}, w.data());
  } else {
    params.groups = groups;
    std::vector<float> w = oihw_to_ohwi(weight, out_channels, in_per_group, kernel_h, kernel_w);
    filter = constant({out_channels, kernel_h, kernel_w, in_per_group}, w.data());
  }
  std::vector<uint32_t> inputs = {input, filter};
  if (bias != nullptr) inputs.push_back(constant({out_channels}, bias));
  return node(op, inputs, params);
}

uint32_t XnnBlobBuilder::linear(uint32_t input, const float* weight, size_t out_features, size_t in_features,
                                const float* bias, const XnnNodeParams& params) {
  if (!ok()) return kInvalidId;
  std::vector<uint32_t> inputs = {input, constant({out_features, in_features}, weight)};
  if (bias != nullptr) inputs.push_back(constant({out_features}, bias));
  return node(fb::OpType::FullyConnected, inputs, params);
}

std::vector<uint8_t> XnnBlobBuilder::build() const {
  if (!ok()) return {};
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const XnnTensorSpec& t : tensors_) {
    flatbuffers::Offset<fb::ConstantData> constant = 0;
    if (t.kind == fb::TensorKind::Constant || !t.inline_bytes.empty() || t.segment_index >= 0) {
      flatbuffers::Offset<flatbuffers::Vector<uint8_t>> bytes = 0;
      if (!t.inline_bytes.empty()) {
        fbb.ForceVectorAlignment(t.inline_bytes.size(), 1, 16);
        bytes = fbb.CreateVector(t.inline_bytes);
      }
      constant = fb::CreateConstantData(fbb, t.segment_index, t.segment_offset, t.nbytes, bytes);
    }
    flatbuffers::Offset<fb::Quantization> quant = 0;
    if (t.dtype != fb::DataType::Fp32 && t.dtype != fb::DataType::QDInt8) {  // QDInt8: parameters at run time
      auto scales = t.quant.channel_scales.empty() ? 0 : fbb.CreateVector(t.quant.channel_scales);
      quant = fb::CreateQuantization(fbb, t.quant.scale, t.quant.zero_point, scales, t.quant.channel_dim,
                                     t.quant.scales_slot, t.quant.scales_offset, t.quant.block_size);
    }
    auto dims = fbb.CreateVector(t.dims);
    auto max_dims = t.max_dims.empty() ? 0 : fbb.CreateVector(t.max_dims);
    tensors.push_back(
        fb::CreateTensor(fbb, t.dtype, dims, max_dims, t.kind, t.external_index, t.layout, constant, quant));
  }
  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  for (const NodeSpec& n : nodes_) {
    const XnnNodeParams& p = n.params;
    auto inputs = fbb.CreateVector(n.inputs);
    auto outputs = fbb.CreateVector(n.outputs);
    auto padding = fbb.CreateVector(p.padding.data(), 4);
    auto kernel = fbb.CreateVector(p.kernel.data(), 2);
    auto stride = fbb.CreateVector(p.stride.data(), 2);
    auto dilation = fbb.CreateVector(p.dilation.data(), 2);
    auto adjustment = fbb.CreateVector(p.adjustment.data(), 2);
    auto pre = p.pre_paddings.empty() ? 0 : fbb.CreateVector(p.pre_paddings);
    auto post = p.post_paddings.empty() ? 0 : fbb.CreateVector(p.post_paddings);
    auto new_shape = p.new_shape.empty() ? 0 : fbb.CreateVector(p.new_shape);
    auto axes = p.axes.empty() ? 0 : fbb.CreateVector(p.axes);
    auto offsets = p.offsets.empty() ? 0 : fbb.CreateVector(p.offsets);
    auto sizes = p.sizes.empty() ? 0 : fbb.CreateVector(p.sizes);
    auto name = n.name.empty() ? 0 : fbb.CreateSharedString(n.name);
    nodes.push_back(fb::CreateNode(fbb, n.op, inputs, outputs, padding, kernel, stride, dilation, adjustment, p.groups,
                                   p.output_min, p.output_max, p.alpha, pre, post, p.padding_value, new_shape,
                                   p.new_height, p.new_width, p.flags, axes, offsets, sizes, p.axis, p.reduce_op,
                                   name));
  }
  auto graph = fb::CreateGraph(fbb, version_, fbb.CreateVector(tensors), fbb.CreateVector(nodes), num_inputs_,
                               num_outputs_);
  fb::FinishGraphBuffer(fbb, graph);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace xnnpack
}  // namespace ember
