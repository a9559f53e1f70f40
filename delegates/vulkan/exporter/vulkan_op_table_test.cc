// The Vulkan op table (issue 27): every op registered once, with a lowering, under a name the
// schema table knows; traits agree with the ops; reasons come from the entry or the shared
// input / output rules.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "delegates/vulkan/exporter/vulkan_lowering.h"
#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "exporter/ops/op_schemas.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;

TEST(VulkanOpTable, EveryOpRegisteredOnceWithALowering) {
  const VulkanOpTable& table = vulkan_op_table();
  EXPECT_TRUE(table.duplicates().empty()) << "registered twice: " << table.duplicates()[0];
  ASSERT_GT(table.ops().size(), 50u);
  for (const std::string& op : table.ops()) {
    const VulkanOpEntry* e = table.find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_NE(e->lower, nullptr) << op;
    // Support is decided by lowering into a throwaway builder (unsupported_reason): no entry
    // has a separate check that could disagree with its lowering.
    EXPECT_EQ(e->check, nullptr) << op;
  }
}

TEST(VulkanOpTable, EveryFamilyRegistersOpsTheSchemaTableKnows) {
  size_t total = 0;
  for (AddOpFamily add : vulkan_op_families()) {
    VulkanOpTable family("family");
    add(family);
    EXPECT_FALSE(family.ops().empty());
    EXPECT_TRUE(family.duplicates().empty());
    total += family.ops().size();
    for (const std::string& op : family.ops()) {
      const size_t dot = op.rfind('.');
      ASSERT_NE(dot, std::string::npos) << op;
      EXPECT_NE(exporter::find_op_schema(op.substr(0, dot), op.substr(dot + 1)), nullptr) << "misspelt? " << op;
    }
  }
  EXPECT_EQ(total, vulkan_op_table().ops().size()) << "an op registered by two families";
}

TEST(VulkanOpTable, TraitsAgreeWithTheOps) {
  auto traits = [](const std::string& op) { return vulkan_op_table().find(op)->traits; };
  EXPECT_TRUE(traits("aten::view.default").moves_data_only);
  EXPECT_TRUE(traits("aten::cat.default").moves_data_only);
  EXPECT_TRUE(traits("aten::index.Tensor").moves_data_only);
  EXPECT_TRUE(traits("aten::index.Tensor").takes_indices);
  EXPECT_TRUE(traits("aten::embedding.default").takes_indices);
  EXPECT_FALSE(traits("aten::embedding.default").moves_data_only);  // a gather worth a GPU call
  EXPECT_FALSE(traits("aten::relu.default").moves_data_only);
  EXPECT_FALSE(traits("aten::conv2d.default").takes_indices);
  // Dynamic shapes: views take sizes from their output; ops that write sizes into the blob
  // take static tensors only; the KV-cache attention updates state and reads positions.
  EXPECT_TRUE(traits("aten::view.default").sizes_from_output);
  EXPECT_FALSE(traits("aten::linear.default").sizes_from_output);
  EXPECT_TRUE(traits("aten::expand.default").fixed_shape);
  EXPECT_TRUE(traits("aten::scaled_dot_product_attention.default").fixed_shape);
  EXPECT_FALSE(traits("aten::linear.default").fixed_shape);
  EXPECT_TRUE(traits("ember_llm::sdpa_with_kv_cache.default").updates_state);
  EXPECT_TRUE(traits("ember_llm::sdpa_with_kv_cache.default").takes_indices);
  EXPECT_FALSE(traits("ember_llm::rms_norm.default").updates_state);
}

int tensor(Graph& g, Sizes sizes, ScalarType dtype = ScalarType::Float32) {
  Value v;
  v.name = "v" + std::to_string(g.values.size());
  v.dtype = dtype;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  v.role = g.values.empty() ? ValueRole::UserInput : ValueRole::Activation;
  return g.add_value(v);
}

void node(Graph& g, const std::string& op, const std::string& overload, std::vector<Arg> args, int out) {
  Node n;
  n.op = op;
  n.overload = overload;
  n.args = std::move(args);
  n.arg_names.assign(n.args.size(), "");
  n.outputs = {Arg::tensor(out)};
  g.values[out].producer = static_cast<int>(g.nodes.size());
  g.nodes.push_back(n);
}

TEST(VulkanOpTable, ReasonsComeFromTheEntryOrTheSharedRules) {
  Graph g;
  const int x = tensor(g, {2, 3});
  g.inputs = {x};
  node(g, "aten::erf", "default", {Arg::tensor(x)}, tensor(g, {2, 3}));
  node(g, "aten::pow", "Tensor_Scalar", {Arg::tensor(x), Arg::none()}, tensor(g, {2, 3}));
  node(g, "aten::add", "Scalar", {Arg::tensor(x), Arg::none()}, tensor(g, {2, 3}));  // no number: no shader
  node(g, "aten::relu", "default", {Arg::tensor(x)}, tensor(g, {2, 3}, ScalarType::Int64));
  node(g, "aten::relu", "default", {Arg::tensor(x)}, tensor(g, {2, 3}));
  node(g, "aten::t", "default", {Arg::tensor(x)}, tensor(g, {3, 2}));
  node(g, "aten::view", "default", {Arg::tensor(x), Arg::int_list({3, 3})}, tensor(g, {3, 3}));
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 0), "op aten::erf.default has no Vulkan shader");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 1), "non-numeric exponent");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 2), "op aten::add.Scalar has no Vulkan shader");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 3), "output is not float32");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 4), "");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 5), "");
  EXPECT_FALSE(VulkanPartitioner::unsupported_reason(g, 6).empty()) << "the builder rejects 6 elements as 3x3";
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
