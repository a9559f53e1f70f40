// The exporter-side Vulkan partitioner on a hand-built IR graph: claims the supported run,
// leaves the rest, and its weights are constant slots (not blob bytes, not call arguments).
#include <cstdlib>
#include <map>

#include <gtest/gtest.h>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/vulkan_fp16.h"
#include "delegates/vulkan/vulkan_graph_generated.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;

const bool kEnvSet = [] {
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  return true;
}();

int tensor(Graph& g, const std::string& name, Sizes sizes, ValueRole role = ValueRole::Activation,
           const Floats* data = nullptr) {
  Value v;
  v.name = name;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  v.role = role;
  if (data != nullptr) {
    exporter::Constant c;
    c.name = name;
    c.sizes = sizes;
    c.data.resize(data->size() * 4);
    std::memcpy(c.data.data(), data->data(), c.data.size());
    g.constants.push_back(c);
    v.constant = static_cast<int>(g.constants.size() - 1);
  }
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

// Integer tensors reach the GPU only to be moved or used as indices: an op computing on one
// (RAFT's integer coordinate grid converted to float) stays on the CPU; it used to be claimed
// and then failed at load ("tensor 2 is not float32").
TEST(VulkanPartitionerTest, IntegerInputsOnlyAsIndices) {
  Graph g;
  int idx = tensor(g, "idx", {4}, ValueRole::UserInput);
  g.values[idx].dtype = ScalarType::Int64;
  Floats table = random_floats(12, 70);
  int w = tensor(g, "w", {4, 3}, ValueRole::Constant, &table);
  int f = tensor(g, "f", {4}), e = tensor(g, "e", {4, 3});
  g.inputs = {idx};
  node(g, "aten::_to_copy", "default", {Arg::tensor(idx)}, f);  // int64 -> float32
  node(g, "aten::embedding", "default", {Arg::tensor(w), Arg::tensor(idx)}, e);
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 0), "an integer tensor input");
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 1), "");  // indices are what embedding takes
}

TEST(VulkanPartitionerTest, ClaimsLinearReluAndRunsTheBlob) {
  Floats w = random_floats(15, 60), bias = random_floats(3, 61), xv = random_floats(10, 62);
  Graph g;
  int x = tensor(g, "x", {2, 5}, ValueRole::UserInput);
  int wv = tensor(g, "w", {3, 5}, ValueRole::Constant, &w);
  int bv = tensor(g, "b", {3}, ValueRole::Constant, &bias);
  int l = tensor(g, "l", {2, 3});
  int r = tensor(g, "r", {2, 3});
  int u = tensor(g, "u", {2, 3});
  g.inputs = {x};
  node(g, "aten::linear", "default", {Arg::tensor(x), Arg::tensor(wv), Arg::tensor(bv)}, l);
  node(g, "aten::relu", "default", {Arg::tensor(l)}, r);
  node(g, "aten::unknown_op", "default", {Arg::tensor(r)}, u);  // stays outside
  exporter::GraphOutput go;
  go.value = u;
  g.outputs = {go};

  VulkanPartitioner part;
  EXPECT_EQ(VulkanPartitioner::unsupported_reason(g, 0), "");
  EXPECT_NE(VulkanPartitioner::unsupported_reason(g, 2).find("no Vulkan shader"), std::string::npos);
  std::vector<exporter::DelegateRecord> delegates;
  auto made = exporter::apply_partitioner(g, part, &delegates);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(*made, 1);
  ASSERT_EQ(delegates.size(), 1u);
  EXPECT_EQ(delegates[0].backend_id, "vulkan");

  // Weights stay in the program: both are constant slots, neither is a call argument.
  const exporter::DelegateBlob& blob = delegates[0].blob;
  EXPECT_EQ(blob.constants, (std::vector<int>{g.values[wv].constant, g.values[bv].constant}));
  EXPECT_TRUE(blob.new_constants.empty());
  bool summary = false;
  for (const auto& spec : blob.compile_specs) {
    if (spec.first != exporter::kSummarySpec) continue;
    summary = true;
    EXPECT_EQ(std::string(spec.second.begin(), spec.second.end()), "aten::linear.default x 1, aten::relu.default x 1");
  }
  EXPECT_TRUE(summary);
  for (const Node& n : g.nodes) {
    if (n.op.rfind(exporter::kDelegateOpPrefix, 0) == 0) {
      EXPECT_EQ(n.args[0].refs, (std::vector<int>{x}));
    }
  }
  (void)r;
  // Running delegated programs (weights from segments) is covered end to end by
  // //test/delegates:shared_models_vulkan_test and vulkan_graph_test.
}

TEST(VulkanPartitionerTest, Fp16OptionWritesHalfWeightsAndFlagsTheBlob) {
  Floats w = random_floats(15, 70), bias = random_floats(3, 71);
  Graph g;
  int x = tensor(g, "x", {2, 5}, ValueRole::UserInput);
  int wv = tensor(g, "w", {3, 5}, ValueRole::Constant, &w);
  int bv = tensor(g, "b", {3}, ValueRole::Constant, &bias);
  int l = tensor(g, "l", {2, 3});
  g.inputs = {x};
  node(g, "aten::linear", "default", {Arg::tensor(x), Arg::tensor(wv), Arg::tensor(bv)}, l);
  exporter::GraphOutput go;
  go.value = l;
  g.outputs = {go};
  VulkanPartitionerOptions o;
  o.fp16 = true;
  VulkanPartitioner part(o);
  std::vector<exporter::DelegateRecord> delegates;
  auto made = exporter::apply_partitioner(g, part, &delegates);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(delegates.size(), 1u);
  const exporter::DelegateBlob& blob = delegates[0].blob;
  // Both weights are new Float16 graph constants (2 bytes per element) replacing the originals.
  ASSERT_EQ(blob.constants.size(), 2u);
  const Floats* src[] = {&w, &bias};
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_GE(blob.constants[i], 0);
    ASSERT_NE(blob.constants[i], g.values[i == 0 ? wv : bv].constant);
    const exporter::Constant& c = g.constants[static_cast<size_t>(blob.constants[i])];
    EXPECT_EQ(c.dtype, ScalarType::Float16);
    ASSERT_EQ(c.data.size(), src[i]->size() * 2);
    for (size_t k = 0; k < src[i]->size(); ++k) {
      uint16_t h;
      std::memcpy(&h, c.data.data() + 2 * k, 2);
      EXPECT_EQ(h, float_to_half((*src[i])[k]));
    }
  }
  EXPECT_EQ(blob.replaced, (std::vector<int>{g.values[wv].constant, g.values[bv].constant}));
  // The blob asks for fp16 and names its weights Float16.
  flatbuffers::Verifier verifier(blob.data.data(), blob.data.size());
  ASSERT_TRUE(fb::VerifyGraphBuffer(verifier));
  const fb::Graph* fg = fb::GetGraph(blob.data.data());
  ASSERT_NE(fg->options(), nullptr);
  EXPECT_TRUE(fg->options()->fp16());
  int f16 = 0, f32 = 0;
  for (const fb::Tensor* t : *fg->tensors()) {
    if (t->kind() == fb::TensorKind::Constant) f16 += t->dtype() == fb::DType::Float16;
    else f32 += t->dtype() == fb::DType::Float32;
  }
  EXPECT_EQ(f16, 2);
  EXPECT_EQ(f32, 2);  // input and output stay float32
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
