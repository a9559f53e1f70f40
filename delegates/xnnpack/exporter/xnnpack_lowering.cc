#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

#include <cstring>
#include <limits>

#include "delegates/xnnpack/exporter/graph_access.h"

namespace ember {
namespace xnnpack {
namespace {

// Permutes NCHW data of `sizes` (rank <= 4, padded with leading 1s) into NHWC order.
std::vector<float> to_nhwc(const float* src, std::vector<int64_t> sizes, std::vector<size_t>* dims) {
  while (sizes.size() < 4) sizes.insert(sizes.begin(), 1);
  const int64_t N = sizes[0], C = sizes[1], H = sizes[2], W = sizes[3];
  std::vector<float> out(size_t(N * C * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) out[size_t((n * H * W + i) * C + c)] = src[(n * C + c) * H * W + i];
  *dims = {size_t(N), size_t(H), size_t(W), size_t(C)};
  return out;
}

XnnOpTable build_table() {
  XnnOpTable t("xnnpack");
  add_convolution_pooling_ops(t);
  add_elementwise_ops(t);
  add_normalization_ops(t);
  add_matmul_attention_ops(t);
  add_shape_ops(t);
  add_quantized_ops(t);
  add_weight_only_ops(t);
  return t;
}

}  // namespace

LayoutNeed nhwc_layout(const Graph&, const Node&) { return kNhwcLayout; }
LayoutNeed any_layout(const Graph&, const Node&) { return kAnyLayout; }

const XnnOpTable& xnnpack_op_table() {
  static const XnnOpTable table = build_table();
  return table;
}

const XnnOpTraits& op_traits(const Node& n) {
  static const XnnOpTraits none;
  const XnnOpEntry* e = xnnpack_op_table().find(n.kernel_name());
  return e ? e->traits : none;
}

void clamp_output_range(const Node& n, XnnNodeParams* prm) {
  prm->output_min = -std::numeric_limits<float>::infinity();
  prm->output_max = std::numeric_limits<float>::infinity();
  op_traits(n).clamp(n, &prm->output_min, &prm->output_max);
}

uint32_t scalar_constant(XnnBlobBuilder& b, size_t rank, float value) {
  return b.constant(std::vector<size_t>(rank, 1), &value);
}

uint32_t XnnLowering::input(const Value* v) const {
  if (v == nullptr) return kInvalidId;
  auto it = id.find(v->id);
  return it == id.end() ? kInvalidId : it->second;
}

std::vector<size_t> XnnLowering::dims(const Value& v, bool in_nhwc) const {
  return in_nhwc ? xdims(v) : std::vector<size_t>(v.sizes.begin(), v.sizes.end());
}

uint32_t XnnLowering::existing(const Value* v, std::vector<size_t> dims) {
  return b->constant_in_slot(std::move(dims), int32_t(slots->existing(v->constant)));
}

uint32_t XnnLowering::transformed(const Value* v, const char* suffix, std::vector<size_t> dims,
                                  const std::vector<float>& data) {
  const exporter::Constant& c = g.constants[v->constant];
  if (c.data.size() == data.size() * sizeof(float) && std::memcmp(c.data.data(), data.data(), c.data.size()) == 0) {
    return existing(v, std::move(dims));
  }
  std::vector<uint8_t> bytes(data.size() * sizeof(float));
  if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
  const uint32_t slot = slots->add(v->constant, c.name + suffix, ScalarType::Float32,
                                   std::vector<int64_t>(dims.begin(), dims.end()), std::move(bytes));
  return b->constant_in_slot(std::move(dims), int32_t(slot));
}

uint32_t XnnLowering::plain(const Value* v) {
  if (v == nullptr) return kInvalidId;
  if (!is_const(v)) return input(v);
  return existing(v, std::vector<size_t>(v->sizes.begin(), v->sizes.end()));
}

uint32_t XnnLowering::operand(const Value* v, bool out4d) {
  if (!is_const(v)) return input(v);
  if (out4d && nhwc) {
    std::vector<size_t> nhwc_dims;
    std::vector<float> data = to_nhwc(float_data(g, v), v->sizes, &nhwc_dims);
    return transformed(v, ".nhwc", nhwc_dims, data);
  }
  return existing(v, std::vector<size_t>(v->sizes.begin(), v->sizes.end()));
}

}  // namespace xnnpack
}  // namespace ember
