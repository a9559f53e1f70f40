#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {

using exporter::Arg;
using exporter::Node;
using exporter::Value;

bool static_int(const Arg& a, int64_t* v) {
  if (a.kind == Arg::Kind::Int) { *v = a.i; return true; }
  return false;
}
bool static_ints(const Arg& a, std::vector<int64_t>* v) {
  if (a.kind == Arg::Kind::Ints) { *v = a.ints; return true; }
  if (a.kind == Arg::Kind::SymInts) {
    for (int r : a.refs) if (r >= 0) return false;
    *v = a.ints;
    return true;
  }
  return false;
}
bool number(const Arg& a, double* v) {
  if (a.kind == Arg::Kind::Double) { *v = a.d; return true; }
  if (a.kind == Arg::Kind::Int) { *v = static_cast<double>(a.i); return true; }
  return false;
}
std::vector<int32_t> i32(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

std::string no_shader(const Node& n) { return "op " + n.kernel_name() + " has no Vulkan shader"; }

int VulkanLowering::t(const Node& n, size_t i) const {
  if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Tensor) return -1;
  auto it = ids.find(n.args[i].ref);
  return it == ids.end() ? -2 : it->second;
}

VkDType vk_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Int64: return VkDType::Int64;
    case ScalarType::Int32: return VkDType::Int32;
    case ScalarType::Int8: return VkDType::Int8;
    case ScalarType::UInt8: return VkDType::UInt8;
    default: return VkDType::Float32;
  }
}

namespace {
std::vector<uint8_t> dynamic_dims(const Value& v) {
  std::vector<uint8_t> d;
  for (size_t i = 0; i < v.dynamic_dims.size(); ++i)
    if (v.dynamic_dims[i]) d.push_back(static_cast<uint8_t>(i));
  return d;
}
}  // namespace

std::string VulkanLowering::finish(const Node& n, int r) {
  if (r < 0) return b.ok() ? std::string("unmapped input") : b.error();
  const Value& o = out(n);
  if (b.sizes(r) != o.sizes) return "shape mismatch " + sizes_str(b.sizes(r)) + " vs " + sizes_str(o.sizes);
  if (o.is_dynamic()) b.set_dynamic(r, dynamic_dims(o));
  ids[n.outputs[0].ref] = r;
  return b.ok() ? "" : b.error();
}

int VulkanLowering::input(int v) {
  const Value& val = g.values[v];
  const VkDType dt = vk_dtype(val.dtype);
  const int id = b.input(val.sizes, dt);
  if (id >= 0 && val.is_dynamic()) b.set_dynamic(id, dynamic_dims(val));
  ids[v] = id;
  return id;
}

int64_t single_dynamic_bound(const exporter::Graph& g) {
  int64_t bound = 0;
  for (const Value& v : g.values) {
    if (v.type != exporter::ValueType::Tensor) continue;
    for (size_t d = 0; d < v.dynamic_dims.size() && d < v.sizes.size(); ++d) {
      if (!v.dynamic_dims[d]) continue;
      if (bound != 0 && v.sizes[d] != bound) return -1;
      bound = v.sizes[d];
    }
  }
  return bound;
}

bool device_state(const exporter::Graph& g, int v) {
  const Value& val = g.values[v];
  return val.type == exporter::ValueType::Tensor && val.role == exporter::ValueRole::MutableState &&
         val.shared_state.empty() && val.constant >= 0 && val.dtype == ScalarType::Float32 && !val.is_dynamic();
}

namespace {

VulkanOpTable build_table() {
  VulkanOpTable t("Vulkan");
  for (AddOpFamily add : vulkan_op_families()) add(t);
  return t;
}

}  // namespace

const std::vector<AddOpFamily>& vulkan_op_families() {
  static const std::vector<AddOpFamily> families = {add_convolution_pooling_ops, add_elementwise_ops,
                                                    add_normalization_ops, add_matmul_attention_ops, add_shape_ops,
                                                    add_llm_ops, add_quantized_ops};
  return families;
}

const VulkanOpTable& vulkan_op_table() {
  static const VulkanOpTable table = build_table();
  return table;
}

const VulkanOpTraits& op_traits(const Node& n) {
  static const VulkanOpTraits none;
  const VulkanOpEntry* e = vulkan_op_table().find(n.kernel_name());
  return e ? e->traits : none;
}

std::string lower_node(VulkanLowering& ctx, const Node& n) {
  const VulkanOpEntry* e = vulkan_op_table().find(n.kernel_name());
  if (e == nullptr || e->lower == nullptr) return no_shader(n);
  if (n.outputs.empty() || n.outputs[0].kind != Arg::Kind::Tensor) return "not a single-tensor op";
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (!e->traits.updates_state || n.outputs[i].kind != Arg::Kind::Tensor || !device_state(ctx.g, n.outputs[i].ref))
      return "not a single-tensor op";
  }
  const Value& out = ctx.out(n);
  if (out.is_dynamic() && (e->traits.fixed_shape || single_dynamic_bound(ctx.g) <= 0)) return "dynamic output shape";
  if (out.dtype != ScalarType::Float32) return "output is not float32";
  return e->lower(ctx, n);
}

}  // namespace vulkan
}  // namespace ember
