// The Vulkan partitioner's op table (internal to delegates/vulkan/exporter): one entry per aten
// operator, declared once in a family file under ops/, each with its lower (the blob nodes it
// becomes) and its traits. vulkan_partitioner.cc's unsupported_reason(), claim() and
// preprocess() are generic loops over this table.
//
// Support is decided by lowering: the entries have no check (null), and unsupported_reason()
// lowers the node into a throwaway builder whose inputs are the node's own; the entry's reason
// is the lowering's. Before an entry's lower runs, lower_node() has checked that the node has one
// static float32 tensor output (entries may rely on it).
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
  // builder's error; a shape other than the graph's).
  std::string finish(const exporter::Node& n, int r);
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
