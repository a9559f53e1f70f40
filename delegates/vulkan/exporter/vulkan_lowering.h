// The Vulkan partitioner's op table (internal to delegates/vulkan/exporter): one entry per aten
// operator, declared once in a family file under ops/, each with its lower (the blob nodes it
// becomes) and its traits. vulkan_partitioner.cc's unsupported_reason(), claim() and
// preprocess() are generic loops over this table.
//
// Support is decided by lowering: the entries have no check (null), and unsupported_reason()
// lowers the node into a throwaway builder whose inputs are the node's own; the entry's reason
// is the lowering's. Before an entry's lower runs, lower_node() has checked that the node has one
// float32 tensor output (plus the state it updates, for updates_state ops; entries may rely on
// it).
//
// Dynamic shapes: a graph whose dynamic dims all share one bound (one symbol: a sequence
// length, a batch) may be delegated; blob tensors carry the dims (set_dynamic) and the runtime
// re-derives every shape at each size, checking each fits its buffer. Ops whose lowering
// writes sizes into the blob's params (expand, the causal mask of aten attention) say
// fixed_shape and take only static tensors.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/vulkan_blob_builder.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/delegate_op_table.h"

namespace ember {
namespace vulkan {

struct VulkanOpTraits {
  // Only moves or relabels data (views, permutes, slices, cat, ...): a run of nothing else
  // costs a GPU round trip and saves no arithmetic, so claim() leaves it on the CPU. These ops
  // (and those that read indices) may take integer tensor inputs.
  bool moves_data_only = false;
  // Reads an integer tensor as indices (embedding rows, index.Tensor).
  bool takes_indices = false;
  // Its lowering writes tensor sizes into the blob (expand's target, a mask): static tensors only.
  bool fixed_shape = false;
  // Its symbolic size arguments are the output's sizes (views): the delegate does not read them.
  bool sizes_from_output = false;
  // Reads int8 / packed int4 weight constants (weight-only quantized layers).
  bool quantized_weights = false;
  // Updates mutable state in place (its outputs after the first are the state arguments, kept
  // on the device as State tensors: ember_llm::sdpa_with_kv_cache's KV cache).
  bool updates_state = false;
};

// What lowering one partition (or, in unsupported_reason, one node) needs: the graph, the blob
// being built, graph value -> blob tensor (a partition's inputs mapped before its nodes are
// lowered), the partitioner's options.
struct VulkanLowering {
  VulkanLowering(const exporter::Graph& graph, VulkanBlobBuilder& builder, const VulkanPartitionerOptions& opts)
      : g(graph), b(builder), options(opts) {}

  const exporter::Graph& g;
  VulkanBlobBuilder& b;
  std::map<int, int> ids;  // graph value -> blob tensor
  const VulkanPartitionerOptions& options;

  // The blob tensor of n's tensor argument i: -1 when absent or not a tensor (None), -2 when
  // not mapped.
  int t(const exporter::Node& n, size_t i) const;
  // n's (single, static, float32) output value.
  const exporter::Value& out(const exporter::Node& n) const { return g.values[n.outputs[0].ref]; }
  // Records blob tensor r as n's output: "" or why not (r < 0: an unmapped input or the
  // builder's error; a shape other than the graph's). Marks its dynamic dims.
  std::string finish(const exporter::Node& n, int r);
  // Maps graph value v (a delegate input: dynamic dims marked) into the blob.
  int input(int v);
};

using VulkanOpTable = exporter::DelegateOpTable<VulkanLowering, VulkanOpTraits>;
using VulkanOpEntry = VulkanOpTable::Entry;

// The table, built once from the family files.
const VulkanOpTable& vulkan_op_table();
// The traits of n's entry (default traits when the table has none).
const VulkanOpTraits& op_traits(const exporter::Node& n);
// Adds n to ctx.b (its inputs already mapped in ctx.ids): the output checks shared by every
// op, then its entry's lower. "" or why the node cannot run on the delegate.
std::string lower_node(VulkanLowering& ctx, const exporter::Node& n);

// Family files (ops/*.cc).
void add_convolution_pooling_ops(VulkanOpTable& t);
void add_elementwise_ops(VulkanOpTable& t);
void add_normalization_ops(VulkanOpTable& t);
void add_matmul_attention_ops(VulkanOpTable& t);
void add_shape_ops(VulkanOpTable& t);
void add_llm_ops(VulkanOpTable& t);
void add_quantized_ops(VulkanOpTable& t);
// Every family above, in the order the table is built (its one list).
using AddOpFamily = void (*)(VulkanOpTable&);
const std::vector<AddOpFamily>& vulkan_op_families();

// The bound every dynamic dim of g shares: 0 when g is static, -1 when dims have different
// bounds (two symbols: not delegated).
int64_t single_dynamic_bound(const exporter::Graph& g);
// State value v can live on the device (a State tensor): float32 mutable state of this method
// alone (not shared between methods), static, with an initial value.
bool device_state(const exporter::Graph& g, int v);

// The blob dtype of a graph dtype (float32 for the float types the partitioner admits).
VkDType vk_dtype(ScalarType t);

// Argument helpers shared by the family files.
bool static_int(const exporter::Arg& a, int64_t* v);
bool static_ints(const exporter::Arg& a, std::vector<int64_t>* v);  // Ints, or SymInts all static
bool number(const exporter::Arg& a, double* v);                      // Double or Int
std::vector<int32_t> i32(const std::vector<int64_t>& v);
inline bool has_arg(const exporter::Node& n, size_t i) { return i < n.args.size(); }
// The reason every op without a shader gets.
std::string no_shader(const exporter::Node& n);

}  // namespace vulkan
}  // namespace ember
