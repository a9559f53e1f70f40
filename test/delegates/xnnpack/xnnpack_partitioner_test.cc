// The partitioner on a hand-built IR graph: conv -> relu -> (unsupported op) is claimed as
// one group with relu fused, and its blob runs through the backend like the reference.
#include <gtest/gtest.h>

#include <cstring>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
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
  ASSERT_EQ(blob->compile_specs.size(), 1u);

  Runner runner;
  ASSERT_EQ(runner.init(blob->data, blob->compile_specs), Error::Ok) << runner.message();
  // Delegate args: the partition inputs (x, w, b) then outputs (r).
  ASSERT_EQ(p->inputs.size(), 3u);
  HostTensor xt({1, 3, 7, 6}), wt({4, 3, 3, 3}), bt({4}), yt({1, 4, 7, 6});
  std::vector<float> xin = random_vector(3 * 42, rng);
  xt.fill(xin);
  std::vector<HostTensor*> args;
  for (int v : p->inputs) args.push_back(v == x ? &xt : v == wv ? &wt : &bt);
  args.push_back(&yt);
  ASSERT_EQ(runner.run(args), Error::Ok) << runner.message();
  Conv2dArgs a;
  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
  a.lo = 0;
  std::vector<int64_t> ys;
  EXPECT_LT(max_error(yt.values(), ref_conv2d(xin, {1, 3, 7, 6}, w, {4, 3, 3, 3}, bias.data(), a, &ys)), 1e-4);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
