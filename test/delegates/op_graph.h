// A tiny builder of single-op exporter graphs (random inputs and weights from a fixed seed)
// for differential tests: the same graph exported with a delegate's partitioner and with
// the portable kernels alone must give the same outputs. Used by the XNNPACK and Vulkan
// op-vs-portable tests.
#pragma once

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "exporter/ir/graph.h"
#include "exporter/ops/op_schemas.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "runtime/kernel/kernel_registry.h"
#include "test/exporter/pte_runner.h"

namespace ember {
namespace testing {

struct OpGraph {
  exporter::Graph g;
  std::mt19937 rng{1234};
  std::vector<exporter::NpyArray> inputs;

  int value(const std::string& name, std::vector<int64_t> sizes, exporter::ValueRole role) {
    exporter::Value v;
    v.name = name;
    v.dtype = ScalarType::Float32;
    v.sizes = sizes;
    v.dynamic_dims.assign(sizes.size(), false);
    v.role = role;
    return g.add_value(v);
  }
  std::vector<float> random(int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = d(rng);
    return v;
  }
  static int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }
  int input(std::vector<int64_t> sizes, float lo = -1, float hi = 1) {
    const int v = value("in" + std::to_string(inputs.size()), sizes, exporter::ValueRole::UserInput);
    g.inputs.push_back(v);
    exporter::NpyArray a;
    a.shape = sizes;
    std::vector<float> data = random(numel(sizes), lo, hi);
    a.data.resize(data.size() * 4);
    std::memcpy(a.data.data(), data.data(), a.data.size());
    inputs.push_back(std::move(a));
    return v;
  }
  // An int64 user input holding `values` (indices).
  int int64_input(std::vector<int64_t> sizes, const std::vector<int64_t>& values) {
    const int v = value("in" + std::to_string(inputs.size()), sizes, exporter::ValueRole::UserInput);
    g.values[v].dtype = ScalarType::Int64;
    g.inputs.push_back(v);
    exporter::NpyArray a;
    a.dtype = ScalarType::Int64;
    a.shape = sizes;
    a.data.resize(values.size() * sizeof(int64_t));
    std::memcpy(a.data.data(), values.data(), a.data.size());
    inputs.push_back(std::move(a));
    return v;
  }
  int constant(std::vector<int64_t> sizes, float lo = -1, float hi = 1) {
    exporter::Constant c;
    c.name = "c" + std::to_string(g.constants.size());
    c.sizes = sizes;
    std::vector<float> data = random(numel(sizes), lo, hi);
    c.data.resize(data.size() * 4);
    std::memcpy(c.data.data(), data.data(), c.data.size());
    g.constants.push_back(c);
    const int v = value(c.name, sizes, exporter::ValueRole::Constant);
    g.values[v].constant = static_cast<int>(g.constants.size()) - 1;
    return v;
  }
  int node(const std::string& op, const std::string& overload, std::vector<exporter::Arg> args, std::vector<int64_t> out_sizes) {
    exporter::Node n;
    n.op = op;
    n.overload = overload;
    n.schema = exporter::find_op_schema(op, overload);
    n.args = std::move(args);
    const int out = value("out" + std::to_string(g.nodes.size()), out_sizes, exporter::ValueRole::Activation);
    g.values[out].producer = static_cast<int>(g.nodes.size());
    n.outputs = {exporter::Arg::tensor(out)};
    g.nodes.push_back(n);
    return out;
  }
  // A node with a Tensor[] result (unbind, split, ...): one value per element.
  std::vector<int> list_node(const std::string& op, const std::string& overload, std::vector<exporter::Arg> args,
                             const std::vector<std::vector<int64_t>>& out_sizes) {
    exporter::Node n;
    n.op = op;
    n.overload = overload;
    n.schema = exporter::find_op_schema(op, overload);
    n.args = std::move(args);
    std::vector<int> outs;
    for (size_t j = 0; j < out_sizes.size(); ++j) {
      const int v = value("out" + std::to_string(g.nodes.size()) + "_" + std::to_string(j), out_sizes[j],
                          exporter::ValueRole::Activation);
      g.values[v].producer = static_cast<int>(g.nodes.size());
      outs.push_back(v);
    }
    n.outputs = {exporter::Arg::tensor_list(outs)};
    g.nodes.push_back(n);
    return outs;
  }
  void output(int v) { g.outputs.push_back(exporter::GraphOutput{v, false, 0}); }
};

struct OpCase {
  std::string name;
  std::function<void(OpGraph&)> build;
};

inline exporter::Arg ints(std::vector<int64_t> v) { return exporter::Arg::int_list(std::move(v)); }
inline exporter::Arg t(int v) { return exporter::Arg::tensor(v); }

// Exports `o` with the portable kernels alone and with `delegated` (one partitioner), checks
// that every node went to the delegate, runs both and compares output 0 (relative L2 <=
// tol). Skips when a node has no portable kernel to compare with.
inline void expect_delegated_matches_portable(const OpGraph& o, const exporter::ExportOptions& delegated,
                                              double tol) {
  for (const exporter::Node& n : o.g.nodes) {
    if (find_kernel(n.kernel_name().c_str()) == nullptr) GTEST_SKIP() << "no portable kernel for " << n.kernel_name();
  }
  auto portable = exporter::export_graph(o.g, exporter::ExportOptions());
  ASSERT_TRUE(portable.ok()) << portable.status();
  auto del = exporter::export_graph(o.g, delegated);
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_EQ(del->backends.size(), 1u);
  EXPECT_EQ(del->backends[0].nodes, static_cast<int>(o.g.nodes.size())) << "not every node was delegated";
  EXPECT_TRUE(del->portable_ops.empty());
  PteRunner a, b;
  ASSERT_EQ(a.load(portable->pte), "");
  ASSERT_EQ(b.load(del->pte), "");
  ASSERT_EQ(a.run(o.inputs), "");
  ASSERT_EQ(b.run(o.inputs), "");
  exporter::NpyArray want = a.output(0), got = b.output(0);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_LE(relative_l2(got, want), tol);
}

}  // namespace testing
}  // namespace ember
