#include "delegates/vulkan/vulkan_blob_builder.h"

#include <cstring>

#include "delegates/vulkan/vulkan_graph_generated.h"

namespace ember {
namespace vulkan {
namespace {

size_t dsize(VkDType t) {
  switch (t) {
    case VkDType::Float16: return 2;
    case VkDType::Int64: return 8;
    case VkDType::Int8:
    case VkDType::UInt8: return 1;
    default: return 4;
  }
}

std::pair<uint8_t, uint32_t> P(fb::Params type, uint32_t offset) {
  return {static_cast<uint8_t>(type), offset};
}

}  // namespace

bool VulkanBlobBuilder::fail(const std::string& message) {
  if (error_.empty()) error_ = message;
  return false;
}

bool VulkanBlobBuilder::check(std::initializer_list<int> ids, bool allow_absent_tail) {
  if (!error_.empty()) return false;
  size_t i = 0;
  for (int id : ids) {
    bool optional = allow_absent_tail && i > 0;
    if (id == -1 && optional) { ++i; continue; }
    if (id < 0 || static_cast<size_t>(id) >= tensors_.size()) return fail("tensor id " + std::to_string(id) + " does not exist");
    ++i;
  }
  return true;
}

int VulkanBlobBuilder::add_tensor(TensorDef t) {
  if (!error_.empty()) return -1;
  if (static_cast<int>(t.sizes.size()) > kMaxDims) { fail("rank above " + std::to_string(kMaxDims)); return -1; }
  tensors_.push_back(std::move(t));
  return static_cast<int>(tensors_.size() - 1);
}

int VulkanBlobBuilder::add_node(uint8_t shader, ParamsFn params, std::vector<int> inputs, Sizes out,
                                VkDType dtype) {
  TensorDef t;
  t.dtype = dtype;
  t.sizes = std::move(out);
  t.kind = static_cast<uint8_t>(fb::TensorKind::Internal);
  int id = add_tensor(std::move(t));
  if (id < 0) return -1;
  nodes_.push_back(NodeDef{shader, std::move(params), std::move(inputs), id});
  return id;
}

int VulkanBlobBuilder::input(const Sizes& sizes, VkDType dtype) {
  TensorDef t;
  t.dtype = dtype;
  t.sizes = sizes;
  t.kind = static_cast<uint8_t>(fb::TensorKind::Input);
  t.io = static_cast<uint32_t>(num_inputs_);
  int id = add_tensor(std::move(t));
  if (id >= 0) ++num_inputs_;
  return id;
}

int VulkanBlobBuilder::state_in_slot(const Sizes& sizes, VkDType dtype, int32_t slot) {
  const int id = constant_in_slot(sizes, dtype, slot);
  if (id >= 0) tensors_[id].kind = static_cast<uint8_t>(fb::TensorKind::State);
  return id;
}

int VulkanBlobBuilder::state(const Sizes& sizes, const std::vector<float>& initial) {
  const int id = constant(sizes, initial);
  if (id >= 0) tensors_[id].kind = static_cast<uint8_t>(fb::TensorKind::State);
  return id;
}

void VulkanBlobBuilder::state_output() { state_outputs_.push_back(static_cast<uint32_t>(num_outputs_++)); }

void VulkanBlobBuilder::set_dynamic(int id, const std::vector<uint8_t>& dims) {
  if (!check({id})) return;
  for (uint8_t d : dims) {
    if (d >= tensors_[id].sizes.size()) {
      fail("dynamic dim " + std::to_string(d) + " out of range for " + sizes_str(tensors_[id].sizes));
      return;
    }
  }
  tensors_[id].dynamic_dims = dims;
}

int VulkanBlobBuilder::constant(const Sizes& sizes, const std::vector<float>& data) {
  return constant_bytes(sizes, VkDType::Float32, data.data(), data.size() * sizeof(float));
}

int VulkanBlobBuilder::constant_bytes(const Sizes& sizes, VkDType dtype, const void* data, size_t nbytes) {
  if (static_cast<size_t>(numel(sizes)) * dsize(dtype) != nbytes) {
    fail("constant " + sizes_str(sizes) + " needs " + std::to_string(numel(sizes) * dsize(dtype)) + " bytes, got " + std::to_string(nbytes));
    return -1;
  }
  TensorDef t;
  t.dtype = dtype;
  t.sizes = sizes;
  t.kind = static_cast<uint8_t>(fb::TensorKind::Constant);
  t.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  return add_tensor(std::move(t));
}

int VulkanBlobBuilder::constant_in_slot(const Sizes& sizes, VkDType dtype, int32_t segment, uint64_t offset) {
  if (segment < 0) { fail("negative constant slot"); return -1; }
  TensorDef t;
  t.dtype = dtype;
  t.sizes = sizes;
  t.kind = static_cast<uint8_t>(fb::TensorKind::Constant);
  t.segment = segment;
  t.offset = offset;
  return add_tensor(std::move(t));
}

void VulkanBlobBuilder::output(int id) {
  if (!check({id})) return;
  TensorDef& t = tensors_[id];
  if (t.kind != static_cast<uint8_t>(fb::TensorKind::Internal)) {
    fail("tensor " + std::to_string(id) + " cannot be an output: only node results can (copy inputs/constants first)");
    return;
  }
  t.kind = static_cast<uint8_t>(fb::TensorKind::Output);
  t.io = static_cast<uint32_t>(num_outputs_++);
}

#define EMBER_SHAPE(expr)                 \
  do {                                    \
    std::string e_ = (expr);              \
    if (!e_.empty()) { fail(e_); return -1; } \
  } while (0)

int VulkanBlobBuilder::conv2d(int x, int w, int b, std::vector<int32_t> stride,
                              std::vector<int32_t> padding, std::vector<int32_t> dilation, int groups,
                              VkActivation act) {
  if (!check({x, w}) || !check({x, b}, true)) return -1;
  Window2d win;
  EMBER_SHAPE(read_pair(stride.data(), stride.size(), "stride", true, 1, &win.sh, &win.sw));
  EMBER_SHAPE(read_pair(padding.data(), padding.size(), "padding", true, 0, &win.ph, &win.pw));
  EMBER_SHAPE(read_pair(dilation.data(), dilation.size(), "dilation", true, 1, &win.dh, &win.dw));
  Sizes out;
  EMBER_SHAPE(infer_conv2d(sizes(x), sizes(w), b >= 0 ? numel(sizes(b)) : -1, win, groups, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto s = f.CreateVector(stride), p = f.CreateVector(padding), d = f.CreateVector(dilation);
    return P(fb::Params::Conv2dParams,
             fb::CreateConv2dParams(f, s, p, d, groups, act.clamp ? fb::Activation::Clamp : fb::Activation::None,
                                    act.min, act.max).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Conv2d), params, {x, w, b}, out);
}

int VulkanBlobBuilder::linear(int x, int w, int b, VkActivation act) {
  if (!check({x, w}) || !check({x, b}, true)) return -1;
  Sizes out;
  EMBER_SHAPE(infer_linear(sizes(x), sizes(w), b >= 0 ? numel(sizes(b)) : -1, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::LinearParams,
             fb::CreateLinearParams(f, act.clamp ? fb::Activation::Clamp : fb::Activation::None, act.min, act.max).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Matmul), params, {x, w, b}, out);
}

int VulkanBlobBuilder::linear_weight_only(int x, int w, int scales, int b, int bits, int group) {
  if (!check({x, w, scales}) || !check({x, b}, true)) return -1;
  Sizes out;
  EMBER_SHAPE(infer_linear_weight_only(sizes(x), sizes(w), sizes(scales), b >= 0 ? numel(sizes(b)) : -1, bits, group, &out));
  const VkDType want = bits == 8 ? VkDType::Int8 : VkDType::UInt8;
  if (tensors_[w].dtype != want) {
    fail(std::string("weight-only linear: a ") + std::to_string(bits) + "-bit weight must be " + (bits == 8 ? "Int8" : "UInt8"));
    return -1;
  }
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::LinearParams, fb::CreateLinearParams(f, fb::Activation::None, 0, 0, bits, group).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Matmul), params, {x, w, b, scales}, out);
}

int VulkanBlobBuilder::matmul(int a, int b) {
  if (!check({a, b})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_matmul(sizes(a), sizes(b), &out));
  auto params = [](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::MatmulParams, fb::CreateMatmulParams(f).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Matmul), params, {a, b}, out);
}

int VulkanBlobBuilder::binary(VkBinary op, int a, int b, float alpha) {
  if (!check({a, b})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_broadcast(sizes(a), sizes(b), &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::BinaryParams, fb::CreateBinaryParams(f, static_cast<fb::BinaryOp>(op), alpha).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Binary), params, {a, b}, out);
}

int VulkanBlobBuilder::unary(VkUnary op, int x, float min, float max) {
  if (!check({x})) return -1;
  if (op == VkUnary::Relu) { min = 0; max = kInf; }
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::UnaryParams, fb::CreateUnaryParams(f, static_cast<fb::UnaryOp>(op), min, max).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Unary), params, {x}, sizes(x));
}

int VulkanBlobBuilder::max_pool2d(int x, std::vector<int32_t> kernel, std::vector<int32_t> stride,
                                  std::vector<int32_t> padding, std::vector<int32_t> dilation, bool ceil_mode) {
  if (!check({x})) return -1;
  Window2d win;
  EMBER_SHAPE(read_pair(kernel.data(), kernel.size(), "kernel", false, 1, &win.kh, &win.kw));
  if (stride.empty()) { win.sh = win.kh; win.sw = win.kw; }
  else EMBER_SHAPE(read_pair(stride.data(), stride.size(), "stride", false, 1, &win.sh, &win.sw));
  EMBER_SHAPE(read_pair(padding.data(), padding.size(), "padding", true, 0, &win.ph, &win.pw));
  EMBER_SHAPE(read_pair(dilation.data(), dilation.size(), "dilation", true, 1, &win.dh, &win.dw));
  Sizes out;
  EMBER_SHAPE(infer_pool2d(sizes(x), win, ceil_mode, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto k = f.CreateVector(kernel), s = f.CreateVector(stride), p = f.CreateVector(padding), d = f.CreateVector(dilation);
    return P(fb::Params::Pool2dParams, fb::CreatePool2dParams(f, fb::PoolMode::Max, k, s, p, d, ceil_mode).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Pool2d), params, {x}, out);
}

int VulkanBlobBuilder::avg_pool2d(int x, std::vector<int32_t> kernel, std::vector<int32_t> stride,
                                  std::vector<int32_t> padding, bool ceil_mode, bool count_include_pad,
                                  int32_t divisor_override) {
  if (!check({x})) return -1;
  Window2d win;
  EMBER_SHAPE(read_pair(kernel.data(), kernel.size(), "kernel", false, 1, &win.kh, &win.kw));
  if (stride.empty()) { win.sh = win.kh; win.sw = win.kw; }
  else EMBER_SHAPE(read_pair(stride.data(), stride.size(), "stride", false, 1, &win.sh, &win.sw));
  EMBER_SHAPE(read_pair(padding.data(), padding.size(), "padding", true, 0, &win.ph, &win.pw));
  Sizes out;
  EMBER_SHAPE(infer_pool2d(sizes(x), win, ceil_mode, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto k = f.CreateVector(kernel), s = f.CreateVector(stride), p = f.CreateVector(padding);
    return P(fb::Params::Pool2dParams, fb::CreatePool2dParams(f, fb::PoolMode::Avg, k, s, p, 0, ceil_mode,
                                                              count_include_pad, divisor_override).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Pool2d), params, {x}, out);
}

int VulkanBlobBuilder::adaptive_avg_pool2d(int x, int64_t oh, int64_t ow) {
  if (!check({x})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_adaptive_pool2d(sizes(x), oh, ow, &out));
  auto params = [](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::Pool2dParams, fb::CreatePool2dParams(f, fb::PoolMode::AdaptiveAvg).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Pool2d), params, {x}, out);
}

int VulkanBlobBuilder::softmax(int x, int32_t dim, bool log) {
  if (!check({x})) return -1;
  int64_t d;
  if (!normalize_dim(dim, sizes(x).size(), &d)) { fail("softmax dim out of range"); return -1; }
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::SoftmaxParams, fb::CreateSoftmaxParams(f, dim, log).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Softmax), params, {x}, sizes(x));
}

int VulkanBlobBuilder::embedding_weight_only(int w, int scales, int idx, int bits, int group) {
  if (!check({w, scales, idx})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_embedding_weight_only(sizes(w), sizes(scales), sizes(idx), bits, group, &out));
  if (tensors_[w].dtype != (bits == 8 ? VkDType::Int8 : VkDType::UInt8)) {
    fail("weight-only embedding: the weight's dtype does not match its bits");
    return -1;
  }
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::EmbeddingParams, fb::CreateEmbeddingParams(f, bits, group).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Embedding), params, {w, idx, scales}, out);
}

int VulkanBlobBuilder::rms_norm(int x, int w, float eps) {
  if (!check({x, w})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_layer_norm(sizes(x), 1, numel(sizes(w)), -1, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::LayerNormParams, fb::CreateLayerNormParams(f, 1, eps, /*rms=*/true).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::LayerNorm), params, {x, w, -1}, out);
}

int VulkanBlobBuilder::rope(int x, int cos, int sin) {
  if (!check({x, cos, sin})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_rope(sizes(x), sizes(cos), sizes(sin), &out));
  auto params = [](flatbuffers::FlatBufferBuilder& f) { return P(fb::Params::RopeParams, fb::CreateRopeParams(f).o); };
  return add_node(static_cast<uint8_t>(fb::Shader::Rope), params, {x, cos, sin}, out);
}

int VulkanBlobBuilder::attention(int q, int k, int v, int kc, int vc, int pos, float scale) {
  if (!check({q, k, v, kc, vc, pos})) return -1;
  for (int c : {kc, vc}) {
    if (tensors_[c].kind != static_cast<uint8_t>(fb::TensorKind::State)) {
      fail("attention caches must be state tensors (state_in_slot)");
      return -1;
    }
  }
  if (tensors_[pos].kind != static_cast<uint8_t>(fb::TensorKind::Input)) {
    fail("attention positions must be a delegate input (the runtime checks them before each run)");
    return -1;
  }
  Sizes out;
  EMBER_SHAPE(infer_attention(sizes(q), sizes(k), sizes(v), sizes(kc), sizes(vc), sizes(pos), &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::AttentionParams, fb::CreateAttentionParams(f, scale).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Attention), params, {q, k, v, kc, vc, pos}, out);
}

int VulkanBlobBuilder::sdpa(int q, int k, int v, int mask, float scale) {
  if (!check({q, k, v}) || (mask != -1 && !check({mask}))) return -1;
  Sizes out;
  EMBER_SHAPE(infer_sdpa(sizes(q), sizes(k), sizes(v), mask >= 0 ? sizes(mask) : Sizes{}, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) { return P(fb::Params::SdpaParams, fb::CreateSdpaParams(f, scale).o); };
  return add_node(static_cast<uint8_t>(fb::Shader::Sdpa), params, {q, k, v, mask}, out);
}

int VulkanBlobBuilder::layer_norm(int x, int w, int b, int32_t nd, float eps) {
  if (!check({x, w, b}, true)) return -1;
  Sizes out;
  EMBER_SHAPE(infer_layer_norm(sizes(x), nd, w >= 0 ? numel(sizes(w)) : -1, b >= 0 ? numel(sizes(b)) : -1, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::LayerNormParams, fb::CreateLayerNormParams(f, nd, eps).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::LayerNorm), params, {x, w, b}, out);
}

int VulkanBlobBuilder::mean(int x, std::vector<int64_t> dims, bool keepdim) {
  if (!check({x})) return -1;
  std::vector<int64_t> norm = dims;
  Sizes out;
  EMBER_SHAPE(infer_mean(sizes(x), &norm, keepdim, &out));
  std::vector<int32_t> d32(norm.begin(), norm.end());
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto d = f.CreateVector(d32);
    return P(fb::Params::MeanParams, fb::CreateMeanParams(f, d, keepdim).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::ReduceMean), params, {x}, out);
}

int VulkanBlobBuilder::permute(int x, std::vector<int64_t> perm) {
  if (!check({x})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_permute(sizes(x), perm, &out));
  std::vector<int32_t> p32(perm.begin(), perm.end());
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto p = f.CreateVector(p32);
    return P(fb::Params::PermuteParams, fb::CreatePermuteParams(f, p).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::StridedCopy), params, {x}, out, tensors_[x].dtype);
}

int VulkanBlobBuilder::expand(int x, const Sizes& target) {
  if (!check({x})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_expand(sizes(x), target, &out));
  std::vector<int64_t> t(target.begin(), target.end());
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    auto s = f.CreateVector(t);
    return P(fb::Params::ExpandParams, fb::CreateExpandParams(f, s).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::StridedCopy), params, {x}, out, tensors_[x].dtype);
}

int VulkanBlobBuilder::view(int x, const Sizes& target) {
  if (!check({x})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_view(sizes(x), target, &out));
  auto params = [](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::ViewParams, fb::CreateViewParams(f).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::None), params, {x}, out, tensors_[x].dtype);
}

int VulkanBlobBuilder::cat(const std::vector<int>& xs, int32_t dim) {
  std::vector<Sizes> shapes;
  for (int x : xs) {
    if (!check({x})) return -1;
    shapes.push_back(sizes(x));
  }
  Sizes out;
  EMBER_SHAPE(infer_cat(shapes, dim, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::CatParams, fb::CreateCatParams(f, dim).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::StridedCopy), params, xs, out, tensors_[xs[0]].dtype);
}

int VulkanBlobBuilder::slice(int x, int32_t dim, int64_t start, int64_t end, int64_t step) {
  if (!check({x})) return -1;
  Sizes out;
  int64_t s = start, e = end;
  EMBER_SHAPE(infer_slice(sizes(x), dim, &s, &e, step, &out));
  auto params = [=](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::SliceParams, fb::CreateSliceParams(f, dim, start, end, step).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::StridedCopy), params, {x}, out, tensors_[x].dtype);
}

int VulkanBlobBuilder::embedding(int w, int idx) {
  if (!check({w, idx})) return -1;
  Sizes out;
  EMBER_SHAPE(infer_embedding(sizes(w), sizes(idx), &out));
  auto params = [](flatbuffers::FlatBufferBuilder& f) {
    return P(fb::Params::EmbeddingParams, fb::CreateEmbeddingParams(f).o);
  };
  return add_node(static_cast<uint8_t>(fb::Shader::Embedding), params, {w, idx}, out);
}

#undef EMBER_SHAPE

std::vector<uint8_t> VulkanBlobBuilder::build() const {
  if (!error_.empty()) return {};
  flatbuffers::FlatBufferBuilder f(1024);
  std::vector<flatbuffers::Offset<fb::Tensor>> ts;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorDef& t = tensors_[i];
    flatbuffers::Offset<fb::ConstantData> c = 0;
    if (t.kind == static_cast<uint8_t>(fb::TensorKind::Constant) || t.kind == static_cast<uint8_t>(fb::TensorKind::State)) {
      uint64_t nbytes = static_cast<uint64_t>(numel(t.sizes)) * dsize(t.dtype);
      if (t.segment >= 0) {
        c = fb::CreateConstantData(f, t.segment, t.offset, nbytes);
      } else {
        f.ForceVectorAlignment(t.bytes.size(), 1, 16);
        auto data = f.CreateVector(t.bytes);
        c = fb::CreateConstantData(f, -1, 0, nbytes, data);
      }
    }
    auto sizes = f.CreateVector(t.sizes);
    // fp16 graphs: only constants may be Float16; a view/copy of an fp16 weight is float32
    // (logically; the runtime stores every float tensor of the graph as fp16).
    VkDType dtype = t.dtype;
    if (fp16_ && dtype == VkDType::Float16 && (t.kind == static_cast<uint8_t>(fb::TensorKind::Internal) ||
                                               t.kind == static_cast<uint8_t>(fb::TensorKind::Output)))
      dtype = VkDType::Float32;
    auto dyn = t.dynamic_dims.empty() ? 0 : f.CreateVector(t.dynamic_dims);
    ts.push_back(fb::CreateTensor(f, static_cast<uint32_t>(i), static_cast<fb::DType>(dtype), sizes,
                                  static_cast<fb::TensorKind>(t.kind), t.io, c, dyn));
  }
  std::vector<flatbuffers::Offset<fb::Node>> ns;
  for (const NodeDef& n : nodes_) {
    std::pair<uint8_t, uint32_t> p = n.params(f);
    auto ins = f.CreateVector(n.inputs);
    std::vector<uint32_t> outs{static_cast<uint32_t>(n.output)};
    auto o = f.CreateVector(outs);
    ns.push_back(fb::CreateNode(f, static_cast<fb::Shader>(n.shader), static_cast<fb::Params>(p.first),
                                flatbuffers::Offset<void>(p.second), ins, o));
  }
  auto tv = f.CreateVector(ts);
  auto nv = f.CreateVector(ns);
  auto opts = fb::CreateCompileOptions(f, fp16_);
  auto so = state_outputs_.empty() ? 0 : f.CreateVector(state_outputs_);
  auto g = fb::CreateGraph(f, 1, tv, nv, static_cast<uint32_t>(num_inputs_), static_cast<uint32_t>(num_outputs_), opts,
                           0, so);
  fb::FinishGraphBuffer(f, g);
  return std::vector<uint8_t>(f.GetBufferPointer(), f.GetBufferPointer() + f.GetSize());
}

}  // namespace vulkan
}  // namespace ember
