#include "delegates/xnnpack/exporter/xnnpack_weight_only.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace ember {
namespace xnnpack {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;
using exporter::ValueType;

constexpr const char* kLinearWeightOnly = "ember_quantized::linear_weight_only.default";

// Argument positions: (input, weight, weight_scales, group_size, bits, bias).
constexpr size_t kInput = 0, kWeight = 1, kScales = 2, kGroup = 3, kBits = 4, kBias = 5;

const Value* tensor_arg(const Graph& g, const Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Tensor || n.args[i].ref < 0) return nullptr;
  return &g.values[n.args[i].ref];
}
bool is_const(const Value* v) { return v != nullptr && v->role == ValueRole::Constant && v->constant >= 0; }
const float* float_data(const Graph& g, const Value* v) {
  return reinterpret_cast<const float*>(g.constants[v->constant].data.data());
}

float bf16_value(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

}  // namespace

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return uint16_t(bits >> 16);
}

bool is_weight_only_op(const std::string& key) { return key == kLinearWeightOnly; }

std::string weight_only_unsupported_reason(const Graph& g, const Node& n) {
  if (n.args.size() != 6 || n.args[kGroup].kind != Arg::Kind::Int || n.args[kBits].kind != Arg::Kind::Int) {
    return "unexpected arguments";
  }
  if (n.output_values().size() != 1) return "not a single-output op";
  const Value* x = tensor_arg(g, n, kInput);
  const Value& out = g.values[n.output_values()[0]];
  const Value* w = tensor_arg(g, n, kWeight);
  const Value* scales = tensor_arg(g, n, kScales);
  const Value* bias = tensor_arg(g, n, kBias);
  const int64_t group = n.args[kGroup].i, bits = n.args[kBits].i;
  if (x == nullptr || x->type != ValueType::Tensor || x->dtype != ScalarType::Float32 || x->sizes.empty() ||
      is_const(x)) {
    return "input is not a float32 activation";
  }
  // Bounded dynamic batch / sequence dims reshape at run time; the reduced dim may not change.
  if (x->is_dynamic() && (x->dynamic_dims.size() != x->sizes.size() || x->dynamic_dims.back())) {
    return "the input's last dim is dynamic";
  }
  if (out.type != ValueType::Tensor || out.dtype != ScalarType::Float32) return "output is not float32";
  if (!is_const(w) || !is_const(scales) || scales->dtype != ScalarType::Float32 || scales->sizes.size() != 2) {
    return "weights or scales are not constants of the expected types";
  }
  const int64_t rows = scales->sizes[0], cols = x->sizes.back();
  if (n.args[kBias].kind != Arg::Kind::None &&
      (!is_const(bias) || bias->dtype != ScalarType::Float32 || bias->sizes != std::vector<int64_t>{rows})) {
    return "bias is not a constant float32 [out features]";
  }
  const float* s = float_data(g, scales);
  const int64_t count = scales->sizes[0] * scales->sizes[1];
  if (bits == 8) {
    if (w->dtype != ScalarType::Int8 || w->sizes != std::vector<int64_t>{rows, cols}) return "weight is not int8 [N, K]";
    if (group != cols || scales->sizes[1] != 1) {
      return "int8 weights in groups (XNNPACK's qc8w takes one scale per output channel)";
    }
    for (int64_t i = 0; i < count; ++i) {
      if (!std::isnormal(s[i]) || s[i] < 0) return "a weight scale is not a positive normal float";
    }
    return "";
  }
  if (bits != 4) return "bits is neither 8 nor 4";
  if (w->dtype != ScalarType::UInt8 || cols % 2 != 0 || w->sizes != std::vector<int64_t>{rows, cols / 2}) {
    return "weight is not packed int4 uint8 [N, K / 2]";
  }
  if (group < 32 || group % 32 != 0 || cols % group != 0 || scales->sizes[1] != cols / group) {
    return "int4 group size is not a multiple of 32 dividing K (XNNPACK's qb4w blocks)";
  }
  for (int64_t i = 0; i < count; ++i) {
    const float b = bf16_value(float_to_bf16(s[i]));
    if (!std::isfinite(s[i]) || !std::isnormal(b) || b < 0) return "a weight scale is not a positive bfloat16 number";
  }
  return "";
}

absl::Status lower_weight_only_node(const Graph& g, int index, XnnBlobBuilder& b, exporter::ConstantSlots& slots,
                                    const std::map<int, uint32_t>& id, uint32_t* out) {
  const Node& n = g.nodes[index];
  *out = kInvalidId;
  auto it = id.find(n.args[kInput].ref);
  if (it == id.end()) return absl::InternalError("xnnpack preprocess: " + n.name + " input not mapped");
  const Value* w = tensor_arg(g, n, kWeight);
  const Value* scales = tensor_arg(g, n, kScales);
  const Value* bias = tensor_arg(g, n, kBias);
  const size_t rows = size_t(scales->sizes[0]), cols = size_t(g.values[n.args[kInput].ref].sizes.back());
  const uint32_t activations = b.node(fb::OpType::Convert, {it->second});
  b.set_qdint8(activations);
  XnnQuant wq;
  uint32_t filter = kInvalidId;
  if (n.args[kBits].i == 8) {
    wq.scales_slot = int32_t(slots.existing(scales->constant));  // [N, 1] float32: one per row
    filter = b.quantized_constant_in_slot(fb::DataType::QCInt8, {rows, cols}, std::move(wq),
                                          int32_t(slots.existing(w->constant)));
  } else {
    const float* s = float_data(g, scales);
    const size_t count = size_t(scales->sizes[0] * scales->sizes[1]);
    std::vector<uint8_t> bf16(count * sizeof(uint16_t));
    for (size_t i = 0; i < count; ++i) {
      const uint16_t v = float_to_bf16(s[i]);
      std::memcpy(bf16.data() + i * sizeof v, &v, sizeof v);
    }
    const exporter::Constant& c = g.constants[scales->constant];
    wq.scales_slot = int32_t(slots.add(scales->constant, c.name + ".bf16", ScalarType::BFloat16,
                                       {scales->sizes[0], scales->sizes[1]}, std::move(bf16)));
    wq.zero_point = 8;
    wq.block_size = uint32_t(n.args[kGroup].i);
    filter = b.quantized_constant_in_slot(fb::DataType::QBInt4, {rows, cols}, std::move(wq),
                                          int32_t(slots.existing(w->constant)));
  }
  std::vector<uint32_t> ins = {activations, filter};
  if (is_const(bias)) ins.push_back(b.constant_in_slot({rows}, int32_t(slots.existing(bias->constant))));
  *out = b.node(fb::OpType::FullyConnected, ins);
  return absl::OkStatus();
}

}  // namespace xnnpack
}  // namespace ember
