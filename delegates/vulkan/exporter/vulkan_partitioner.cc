#include "delegates/vulkan/exporter/vulkan_partitioner.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "delegates/vulkan/exporter/vulkan_lowering.h"
#include "delegates/vulkan/vulkan_blob_builder.h"
#include "delegates/vulkan/vulkan_fp16.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;

// Tensor inputs of a node (value refs that are tensors).
std::vector<int> tensor_inputs(const Graph& g, const Node& n) {
  std::vector<int> r;
  for (const Arg& a : n.args)
    for (int v : a.value_refs())
      if (g.values[v].type == exporter::ValueType::Tensor) r.push_back(v);
  return r;
}

std::string check_value(const Graph& g, const Value& v, const VulkanOpTraits& traits) {
  if (v.type != exporter::ValueType::Tensor) return "symbolic argument";
  if (v.is_dynamic() && (traits.fixed_shape || single_dynamic_bound(g) <= 0)) return "dynamic shape";
  const bool quantized = (v.dtype == ScalarType::Int8 || v.dtype == ScalarType::UInt8) && traits.quantized_weights &&
                         v.role == exporter::ValueRole::Constant;
  if (v.dtype != ScalarType::Float32 && v.dtype != ScalarType::Int64 && v.dtype != ScalarType::Int32 && !quantized)
    return "dtype " + exporter::dtype_name(v.dtype);
  if (static_cast<int>(v.sizes.size()) > kMaxDims) return "rank too high";
  for (int64_t s : v.sizes) if (s == 0) return "zero-size tensor";
  return "";
}

}  // namespace

std::string VulkanPartitioner::unsupported_reason(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  if (n.erased) return "erased";
  const VulkanOpTraits& traits = op_traits(n);
  for (const Arg& a : n.args)
    for (int v : a.value_refs())
      if (g.values[v].type != exporter::ValueType::Tensor && !traits.sizes_from_output) return "symbolic argument";
  // Support is decided by lowering the node into a throwaway builder whose inputs are its own.
  static const VulkanPartitionerOptions kDefaults;
  VulkanBlobBuilder b;
  VulkanLowering ctx(g, b, kDefaults);
  // Integer tensors are moved (views, slices, ...) or used as indices (embedding rows,
  // index.Tensor); every shader that computes does so on float32 (RAFT's integer coordinate
  // grid reached a unary op, was claimed, and failed at load).
  const bool takes_indices = traits.takes_indices || traits.moves_data_only || traits.quantized_weights;
  std::vector<int> updated;  // state this node updates in place (its extra outputs)
  for (size_t i = 1; i < n.outputs.size(); ++i) updated.push_back(n.outputs[i].ref);
  for (int v : tensor_inputs(g, n)) {
    if (ctx.ids.count(v)) continue;
    if (traits.updates_state && std::find(updated.begin(), updated.end(), v) != updated.end()) {
      if (!device_state(g, v)) return "state the device cannot keep";
      ctx.ids[v] = b.state(g.values[v].sizes, std::vector<float>(static_cast<size_t>(g.values[v].numel())));
      continue;
    }
    std::string e = check_value(g, g.values[v], traits);
    if (!e.empty()) return e;
    if (!takes_indices && g.values[v].dtype != ScalarType::Float32) return "an integer tensor input";
    ctx.input(v);
  }
  return lower_node(ctx, n);
}

std::vector<std::vector<int>> VulkanPartitioner::claim(const Graph& g) {
  std::vector<std::vector<int>> sets;
  std::vector<int> run;
  // A run of ops that only move data (VulkanOpTraits::moves_data_only) would cost a GPU round
  // trip (upload, submit, wait, download) and save no arithmetic: it stays on the CPU.
  auto flush = [&] {
    bool computes = false;
    for (int i : run) computes |= !op_traits(g.nodes[i]).moves_data_only;
    if (computes && run.size() >= options_.min_nodes) sets.push_back(run);
    run.clear();
  };
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (g.nodes[i].erased) continue;
    if (unsupported_reason(g, i).empty()) run.push_back(i);
    else flush();
  }
  flush();
  return sets;
}

absl::StatusOr<exporter::DelegateBlob> VulkanPartitioner::preprocess(const Graph& g,
                                                                     const exporter::Partition& p) {
  VulkanBlobBuilder b;
  b.set_fp16(options_.fp16);
  exporter::ConstantSlots slots(g);
  VulkanLowering ctx(g, b, options_);
  std::map<int, int>& ids = ctx.ids;
  for (int v : p.inputs) {
    const Value& val = g.values[v];
    if (val.type != exporter::ValueType::Tensor) return absl::InvalidArgumentError("vulkan: symbolic partition input");
    if (val.role == exporter::ValueRole::Constant && val.constant >= 0 && options_.fp16 &&
        val.dtype == ScalarType::Float32) {
      // fp16: a Float16 copy of the weight in its own slot (same layout, half the bytes).
      const exporter::Constant& c = g.constants[val.constant];
      const size_t n = c.data.size() / sizeof(float);
      if (static_cast<int64_t>(n) != numel(val.sizes)) return absl::InternalError("vulkan: constant size mismatch");
      std::vector<float> f32(n);
      std::vector<uint8_t> f16(n * sizeof(uint16_t));
      if (n > 0) {
        std::memcpy(f32.data(), c.data.data(), n * sizeof(float));
        floats_to_halves(f32.data(), reinterpret_cast<uint16_t*>(f16.data()), n);
      }
      const uint32_t slot = slots.add(val.constant, c.name + ".fp16", ScalarType::Float16, val.sizes, std::move(f16));
      ids[v] = b.constant_in_slot(val.sizes, VkDType::Float16, static_cast<int32_t>(slot));
    } else if (val.role == exporter::ValueRole::Constant && val.constant >= 0) {
      // Weights stay in the program's segments (PyTorch layouts are the shaders' layouts).
      ids[v] = b.constant_in_slot(val.sizes, vk_dtype(val.dtype), static_cast<int32_t>(slots.existing(val.constant)));
    } else {
      ctx.input(v);
    }
  }
  // State the partition's nodes update in place (a KV cache): kept on the device, from its
  // initial value (the program's constant slot).
  for (int i : p.nodes) {
    const Node& n = g.nodes[i];
    for (size_t k = 1; k < n.outputs.size(); ++k) {
      const int v = n.outputs[k].ref;
      if (n.outputs[k].kind != exporter::Arg::Kind::Tensor || ids.count(v)) continue;
      if (!device_state(g, v)) return absl::InvalidArgumentError("vulkan: node " + std::to_string(i) + " updates state the device cannot keep");
      const Value& val = g.values[v];
      ids[v] = b.state_in_slot(val.sizes, VkDType::Float32, static_cast<int32_t>(slots.existing(val.constant)));
    }
  }
  for (int i : p.nodes) {
    std::string e = lower_node(ctx, g.nodes[i]);
    if (!e.empty()) return absl::InvalidArgumentError("vulkan: node " + std::to_string(i) + ": " + e);
  }
  for (int v : p.outputs) {
    if (g.values[v].role == exporter::ValueRole::MutableState) {  // its copy in the program stays as is
      b.state_output();
      continue;
    }
    auto it = ids.find(v);
    if (it == ids.end()) return absl::InternalError("vulkan: partition output not produced");
    b.output(it->second);
  }
  exporter::DelegateBlob blob;
  blob.data = b.build();
  if (blob.data.empty()) return absl::InvalidArgumentError("vulkan: " + b.error());
  slots.finish(&blob);
  const std::string summary = exporter::summarize_partition(g, p);
  blob.compile_specs.push_back({exporter::kSummarySpec, std::vector<uint8_t>(summary.begin(), summary.end())});
  if (options_.allow_cpu) blob.compile_specs.push_back({"allow_cpu", {1}});
  return blob;
}

}  // namespace vulkan
}  // namespace ember
