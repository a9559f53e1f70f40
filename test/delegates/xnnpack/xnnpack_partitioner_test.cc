// The partitioner on a hand-built IR graph: conv -> relu -> (unsupported op) is claimed as
// one group with relu fused; its weights are constant slots (the filter permuted into a new
// constant that replaces the original), never call arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "delegates/xnnpack/xnnpack_graph_generated.h"
#include "delegates/xnnpack/xnnpack_shapes.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;

int tensor_value(Graph& g, const char* name, std::vector<int64_t> sizes, ValueRole role, int producer = -1) {
  Value v;
  v.name = name;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  v.role = role;
  v.producer = producer;
  return g.add_value(v);
}

TEST(XnnpackPartitioner, ClaimsConvReluAndRunsBlob) {
  std::mt19937 rng(3);
  Graph g;
  const int x = tensor_value(g, "x", {1, 3, 7, 6}, ValueRole::UserInput);
  g.inputs = {x};
  std::vector<float> w = random_vector(4 * 3 * 9, rng), bias = random_vector(4, rng);
  auto add_const = [&](const char* name, std::vector<int64_t> sizes, const std::vector<float>& data) {
    exporter::Constant c;
    c.name = name;
    c.sizes = sizes;
    c.data.resize(data.size() * 4);
    std::memcpy(c.data.data(), data.data(), c.data.size());
    g.constants.push_back(c);
    const int v = tensor_value(g, name, sizes, ValueRole::Constant);
    g.values[v].constant = int(g.constants.size()) - 1;
    return v;
  };
  const int wv = add_const("w", {4, 3, 3, 3}, w), bv = add_const("b", {4}, bias);
  Node conv;
  conv.op = "aten::conv2d";
  conv.overload = "default";
  conv.args = {Arg::tensor(x), Arg::tensor(wv), Arg::tensor(bv), Arg::int_list({1, 1}), Arg::int_list({1, 1}),
               Arg::int_list({1, 1}), Arg::integer(1)};
  const int c = tensor_value(g, "c", {1, 4, 7, 6}, ValueRole::Activation, 0);
  conv.outputs = {Arg::tensor(c)};
  g.nodes.push_back(conv);
  Node relu;
  relu.op = "aten::relu";
  relu.overload = "default";
  relu.args = {Arg::tensor(c)};
  const int r = tensor_value(g, "r", {1, 4, 7, 6}, ValueRole::Activation, 1);
  relu.outputs = {Arg::tensor(r)};
  g.nodes.push_back(relu);
  Node other;  // unsupported: stays on portable kernels
  other.op = "aten::cumsum";
  other.overload = "default";
  other.args = {Arg::tensor(r), Arg::integer(1), Arg::none()};
  const int o = tensor_value(g, "o", {1, 4, 7, 6}, ValueRole::Activation, 2);
  other.outputs = {Arg::tensor(o)};
  g.nodes.push_back(other);
  g.outputs = {exporter::GraphOutput{o, false, 0}};

  XnnpackPartitioner part(2);
  std::vector<std::vector<int>> groups = part.claim(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (std::vector<int>{0, 1}));
  EXPECT_NE(XnnpackPartitioner::unsupported_reason(g, 2), "");
  absl::StatusOr<exporter::Partition> p = exporter::make_partition(g, groups[0]);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<exporter::DelegateBlob> blob = part.preprocess(g, *p);
  ASSERT_TRUE(blob.ok()) << blob.status();
  // Compile specs: the summary and num_threads (the fallback thread count).
  ASSERT_EQ(blob->compile_specs.size(), 2u);
  EXPECT_EQ(blob->compile_specs[0].first, exporter::kSummarySpec);
  const std::string summary(blob->compile_specs[0].second.begin(), blob->compile_specs[0].second.end());
  EXPECT_NE(summary.find("aten::conv2d.default x 1"), std::string::npos) << summary;
  EXPECT_NE(summary.find("aten::relu.default x 1"), std::string::npos) << summary;
  // Weights by slot: the 3x3 filter permuted to OHWI as a new constant replacing w, the bias
  // in place.
  ASSERT_EQ(blob->constants.size(), 2u);
  ASSERT_EQ(blob->new_constants.size(), 1u);
  EXPECT_EQ(blob->replaced, (std::vector<int>{g.values[wv].constant}));
  EXPECT_EQ(blob->new_constants[0].sizes, (std::vector<int64_t>{4, 3, 3, 3}));
  std::vector<float> ohwi = oihw_to_ohwi(w.data(), 4, 3, 3, 3);
  EXPECT_EQ(std::memcmp(blob->new_constants[0].data.data(), ohwi.data(), ohwi.size() * 4), 0);
  int new_slots = 0;
  for (int c : blob->constants) new_slots += c < 0;
  EXPECT_EQ(new_slots, 1);
  EXPECT_NE(std::find(blob->constants.begin(), blob->constants.end(), g.values[bv].constant), blob->constants.end());

  // Applied: the delegate call takes only x (weights are not arguments); the new constant
  // joined the graph.
  const size_t constants_before = g.constants.size();
  std::vector<exporter::DelegateRecord> records;
  absl::StatusOr<int> made = exporter::apply_partitioner(g, part, &records);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(*made, 1);
  EXPECT_EQ(g.constants.size(), constants_before + 1);
  for (int c : records[0].blob.constants) EXPECT_GE(c, 0);
  bool found = false;
  for (const Node& n : g.nodes) {
    if (n.op.rfind(exporter::kDelegateOpPrefix, 0) != 0) continue;
    found = true;
    EXPECT_EQ(n.args[0].refs, (std::vector<int>{x}));
  }
  EXPECT_TRUE(found);
}

// The flags of the one convolution node the partitioner lowers for conv2d(x [1, C, size, size],
// w [O, C, k, k], stride, padding k / 2) with the Winograd option `winograd`.
uint32_t conv_node_flags(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
                         WinogradMode winograd, int64_t size = 12) {
  std::mt19937 rng(5);
  Graph g;
  const int x = tensor_value(g, "x", {1, in_channels, size, size}, ValueRole::UserInput);
  g.inputs = {x};
  exporter::Constant c;
  c.name = "w";
  c.sizes = {out_channels, in_channels, kernel, kernel};
  const std::vector<float> w = random_vector(size_t(out_channels * in_channels * kernel * kernel), rng);
  c.data.resize(w.size() * 4);
  std::memcpy(c.data.data(), w.data(), c.data.size());
  g.constants.push_back(c);
  const int wv = tensor_value(g, "w", c.sizes, ValueRole::Constant);
  g.values[wv].constant = 0;
  Node conv;
  conv.op = "aten::conv2d";
  conv.overload = "default";
  conv.args = {Arg::tensor(x), Arg::tensor(wv), Arg::none(), Arg::int_list({stride, stride}),
               Arg::int_list({kernel / 2, kernel / 2}), Arg::int_list({1, 1}), Arg::integer(1)};
  const int64_t out = (size + 2 * (kernel / 2) - kernel) / stride + 1;
  const int y = tensor_value(g, "y", {1, out_channels, out, out}, ValueRole::Activation, 0);
  conv.outputs = {Arg::tensor(y)};
  g.nodes.push_back(conv);
  g.outputs = {exporter::GraphOutput{y, false, 0}};
  XnnpackPartitioner part(0, false, -1, winograd);
  const std::vector<std::vector<int>> groups = part.claim(g);
  EXPECT_EQ(groups.size(), 1u);
  if (groups.size() != 1) return ~0u;
  absl::StatusOr<exporter::Partition> p = exporter::make_partition(g, groups[0]);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<exporter::DelegateBlob> blob = part.preprocess(g, *p);
  EXPECT_TRUE(blob.ok()) << blob.status();
  if (!p.ok() || !blob.ok()) return ~0u;
  const fb::Graph* graph = fb::GetGraph(blob->data.data());
  for (const fb::Node* n : *graph->nodes()) {
    if (n->op() == fb::OpType::Convolution2d) return n->flags();
  }
  ADD_FAILURE() << "no Convolution2d node";
  return ~0u;
}

TEST(XnnpackPartitioner, MarksWinogradConvolutionsByShapeAndOption) {
  const WinogradMode kAuto = WinogradMode::kAuto;
  const uint32_t f2 = kWinogradFlag | kWinograd2x2Flag;
  // auto: F(4x4) from 32 4x4 output tiles (24x24: 36), else F(2x2) from 32 2x2 tiles.
  EXPECT_EQ(conv_node_flags(32, 32, 3, 1, kAuto, 24), kWinogradFlag);
  EXPECT_EQ(conv_node_flags(64, 48, 3, 1, kAuto, 12), f2);  // 9 4x4 tiles, 36 2x2 tiles
  EXPECT_EQ(conv_node_flags(64, 64, 3, 1, kAuto, 7), 0u);   // 4 and 16: filters too large for so few
  EXPECT_EQ(conv_node_flags(64, 64, 3, 1, kAuto, 4), 0u);   // 1 and 4
  EXPECT_EQ(conv_node_flags(16, 64, 3, 1, kAuto, 24), 0u);  // too few input channels to pay
  EXPECT_EQ(conv_node_flags(64, 16, 3, 1, kAuto, 24), 0u);  // too few output channels
  EXPECT_EQ(conv_node_flags(64, 64, 3, 2, kAuto, 24), 0u);  // stride 2
  EXPECT_EQ(conv_node_flags(64, 64, 5, 1, kAuto, 24), 0u);  // 5x5
  EXPECT_EQ(conv_node_flags(64, 64, 1, 1, kAuto, 24), 0u);  // pointwise
  // --xnnpack-winograd off / 4x4 / 2x2
  EXPECT_EQ(conv_node_flags(64, 48, 3, 1, WinogradMode::kOff, 24), 0u);
  EXPECT_EQ(conv_node_flags(8, 8, 3, 1, WinogradMode::k4x4, 4), kWinogradFlag);
  EXPECT_EQ(conv_node_flags(8, 8, 3, 1, WinogradMode::k2x2, 24), f2);
  EXPECT_EQ(conv_node_flags(64, 64, 3, 2, WinogradMode::k4x4, 24), 0u);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
