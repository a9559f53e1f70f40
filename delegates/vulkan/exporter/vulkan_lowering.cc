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

std::string VulkanLowering::finish(const Node& n, int r) {
  if (r < 0) return b.ok() ? std::string("unmapped input") : b.error();
  const Value& o = out(n);
  if (b.sizes(r) != o.sizes) return "shape mismatch " + sizes_str(b.sizes(r)) + " vs " + sizes_str(o.sizes);
  ids[n.outputs[0].ref] = r;
  return "";
}

namespace {

VulkanOpTable build_table() {
  VulkanOpTable t("Vulkan");
  add_convolution_pooling_ops(t);
  add_elementwise_ops(t);
  add_normalization_ops(t);
  add_matmul_attention_ops(t);
  add_shape_ops(t);
  return t;
}

}  // namespace

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
  if (n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) return "not a single-tensor op";
  const Value& out = ctx.out(n);
  if (out.is_dynamic()) return "dynamic output shape";
  if (out.dtype != ScalarType::Float32) return "output is not float32";
  const VulkanOpEntry* e = vulkan_op_table().find(n.kernel_name());
  if (e == nullptr || e->lower == nullptr) return no_shader(n);
  return e->lower(ctx, n);
}

}  // namespace vulkan
}  // namespace ember
