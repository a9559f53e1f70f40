#include <cmath>
#include <cstring>

#include "exporter/import/pt2_importer.h"
#include "exporter/memory/memory_planner.h"
#include "exporter/ops/op_schemas.h"
#include "exporter/partition/partitioner.h"
#include "exporter/passes/passes.h"
#include "gtest/gtest.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace exporter {
namespace {

int tensor(Graph& g, const std::string& name, std::vector<int64_t> sizes, ValueRole role = ValueRole::Activation) {
  Value v;
  v.name = name;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  v.role = role;
  return g.add_value(v);
}

int constant(Graph& g, const std::string& name, std::vector<int64_t> sizes, std::vector<float> data) {
  Constant c;
  c.name = name;
  c.sizes = sizes;
  c.data.resize(data.size() * 4);
  std::memcpy(c.data.data(), data.data(), c.data.size());
  g.constants.push_back(c);
  int id = tensor(g, name, sizes, ValueRole::Constant);
  g.values[id].constant = static_cast<int>(g.constants.size()) - 1;
  return id;
}

Node node(const std::string& op, const std::string& overload, std::vector<Arg> args, std::vector<int> outs) {
  Node n;
  n.op = op;
  n.overload = overload;
  n.schema = find_op_schema(op, overload);
  n.args = std::move(args);
  for (int o : outs) n.outputs.push_back(Arg::tensor(o));
  return n;
}

void add_node(Graph& g, Node n) {
  for (int r : n.output_values()) g.values[r].producer = static_cast<int>(g.nodes.size());
  g.nodes.push_back(std::move(n));
}

TEST(Canonicalize, RemovesIdentitiesAndAssertsAndFunctionalisesInPlaceOps) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int buf = constant(g, "cache", {8}, std::vector<float>(8, 0.f));
  int idx = tensor(g, "idx", {4}, ValueRole::UserInput);
  g.values[idx].dtype = ScalarType::Int64;
  g.inputs.push_back(idx);
  int d = tensor(g, "d", {4});
  int c = tensor(g, "c", {8});
  int y = tensor(g, "y", {8});
  add_node(g, node("aten::dropout", "default", {Arg::tensor(x), Arg::real(0.1), Arg::boolean(false)}, {d}));
  Node a = node("aten::_assert_tensor_metadata", "default", {Arg::tensor(d)}, {});
  add_node(g, a);
  add_node(g, node("aten::index_copy_", "default", {Arg::tensor(buf), Arg::integer(0), Arg::tensor(idx), Arg::tensor(d)}, {c}));
  add_node(g, node("aten::relu", "default", {Arg::tensor(c)}, {y}));
  g.outputs = {GraphOutput{y}};
  auto changes = canonicalize(g);
  ASSERT_TRUE(changes.ok());
  EXPECT_EQ(*changes, 3);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "aten::index_copy");
  EXPECT_EQ(g.nodes[0].args[3].ref, x);          // dropout removed
  EXPECT_EQ(g.nodes[0].outputs[0].ref, buf);     // writes into the buffer
  EXPECT_EQ(g.values[buf].role, ValueRole::MutableState);
  EXPECT_EQ(g.nodes[1].args[0].ref, buf);        // readers see the buffer
}

TEST(DeadCode, RemovesUnusedChainsButKeepsInPlaceWrites) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int a = tensor(g, "a", {4}), b = tensor(g, "b", {4}), y = tensor(g, "y", {4});
  int state = constant(g, "s", {4}, {0, 0, 0, 0});
  g.values[state].role = ValueRole::MutableState;
  add_node(g, node("aten::neg", "default", {Arg::tensor(x)}, {a}));
  add_node(g, node("aten::exp", "default", {Arg::tensor(a)}, {b}));  // unused chain
  add_node(g, node("aten::relu", "default", {Arg::tensor(x)}, {y}));
  add_node(g, node("aten::copy", "default", {Arg::tensor(state), Arg::tensor(x), Arg::boolean(false)}, {state}));
  g.outputs = {GraphOutput{y}};
  EXPECT_EQ(eliminate_dead_code(g), 2);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "aten::relu");
  EXPECT_EQ(g.nodes[1].op, "aten::copy");
}

TEST(ConvBatchNormFold, FoldsNumerically) {
  Graph g;
  int x = tensor(g, "x", {1, 1, 1, 1}, ValueRole::UserInput);
  g.inputs = {x};
  int w = constant(g, "w", {2, 1, 1, 1}, {2.f, -1.f});
  int b = constant(g, "b", {2}, {0.5f, 1.f});
  int gamma = constant(g, "gamma", {2}, {3.f, 1.f});
  int beta = constant(g, "beta", {2}, {0.25f, -2.f});
  int mean = constant(g, "mean", {2}, {1.f, 0.f});
  int var = constant(g, "var", {2}, {4.f, 1.f});
  int c = tensor(g, "c", {1, 2, 1, 1}), y = tensor(g, "y", {1, 2, 1, 1});
  Node conv = node("aten::conv2d", "default", {Arg::tensor(x), Arg::tensor(w), Arg::tensor(b), Arg::int_list({1, 1}),
                                               Arg::int_list({0, 0}), Arg::int_list({1, 1}), Arg::integer(1)}, {c});
  add_node(g, conv);
  add_node(g, node("aten::batch_norm", "default",
                   {Arg::tensor(c), Arg::tensor(gamma), Arg::tensor(beta), Arg::tensor(mean), Arg::tensor(var),
                    Arg::boolean(false), Arg::real(0.1), Arg::real(0.0), Arg::boolean(true)}, {y}));
  g.outputs = {GraphOutput{y}};
  auto n = fold_conv_batch_norm(g);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.outputs[0].value, c);
  const Constant& nw = g.constants[g.values[g.nodes[0].args[1].ref].constant];
  const Constant& nb = g.constants[g.values[g.nodes[0].args[2].ref].constant];
  const float* fw = reinterpret_cast<const float*>(nw.data.data());
  const float* fb = reinterpret_cast<const float*>(nb.data.data());
  // channel 0: scale = 3/2 -> w 3, b (0.5-1)*1.5+0.25 = -0.5; channel 1: scale 1 -> w -1, b 1-2 = -1
  EXPECT_FLOAT_EQ(fw[0], 3.f);
  EXPECT_FLOAT_EQ(fw[1], -1.f);
  EXPECT_FLOAT_EQ(fb[0], -0.5f);
  EXPECT_FLOAT_EQ(fb[1], -1.f);
}

TEST(ConvBatchNormFold, FoldsEveryBatchNormOfResnet18) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  auto g = import_pt2(shared + "/models/resnet18/model.pt2");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(canonicalize(*g).ok());
  auto n = fold_conv_batch_norm(*g);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 20);
  for (const Node& node : g->nodes) EXPECT_NE(node.op, "aten::batch_norm");
}

TEST(MemoryPlanner, SharesDisjointLifetimesAndNeverOverlapsLiveOnes) {
  std::vector<Lifetime> lts = {{0, 0, 1, 128}, {1, 1, 2, 64}, {2, 2, 3, 128}, {3, 0, 3, 64}};
  std::vector<int64_t> off;
  size_t by_size = place_by_size(lts, &off);
  for (size_t i = 0; i < lts.size(); ++i) {
    for (size_t j = i + 1; j < lts.size(); ++j) {
      bool live_together = lts[i].first <= lts[j].last && lts[j].first <= lts[i].last;
      bool mem_overlap = off[i] < off[j] + static_cast<int64_t>(lts[j].size) && off[j] < off[i] + static_cast<int64_t>(lts[i].size);
      EXPECT_FALSE(live_together && mem_overlap) << i << " " << j;
    }
  }
  EXPECT_EQ(live_bytes_peak(lts), 256u);  // steps 1 and 2: 128 + 64 + 64
  EXPECT_GE(by_size, live_bytes_peak(lts));
  EXPECT_EQ(by_size, 256u);
  std::vector<int64_t> off2;
  EXPECT_GE(place_by_first_use(lts, &off2), live_bytes_peak(lts));
}

TEST(MemoryPlanner, RealModelPlanIsValidAndNearTheBound) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  auto g = import_pt2(shared + "/models/mobilenet_v2/model.pt2");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(canonicalize(*g).ok());
  ASSERT_TRUE(fold_conv_batch_norm(*g).ok());
  eliminate_dead_code(*g);
  finalize_outputs(*g);
  MemoryPlan plan = plan_memory(*g);
  std::vector<Lifetime> lts = compute_lifetimes(*g);
  for (size_t i = 0; i < lts.size(); ++i) {
    for (size_t j = i + 1; j < lts.size(); ++j) {
      bool live = lts[i].first <= lts[j].last && lts[j].first <= lts[i].last;
      int64_t a = plan.offset[lts[i].value], b = plan.offset[lts[j].value];
      bool overlap = a < b + static_cast<int64_t>(lts[j].size) && b < a + static_cast<int64_t>(lts[i].size);
      ASSERT_FALSE(live && overlap);
    }
  }
  EXPECT_GE(plan.arena_size, plan.lower_bound);
  EXPECT_LE(plan.arena_size, plan.lower_bound * 102 / 100);  // within 2% of the bound (issue 31)
  EXPECT_EQ(plan.fixed_size, 1u * 3 * 224 * 224 * 4);       // the input, not shared
}

class FakePartitioner : public Partitioner {
 public:
  std::string backend_id() const override { return "FakeBackend"; }
  std::vector<std::vector<int>> claim(const Graph& g) override {
    std::vector<int> set;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].op == "aten::neg" || g.nodes[i].op == "aten::exp") set.push_back(static_cast<int>(i));
    }
    return {set};
  }
  absl::StatusOr<DelegateBlob> preprocess(const Graph& g, const Partition& p) override {
    DelegateBlob b;
    b.data = {static_cast<uint8_t>(p.nodes.size()), static_cast<uint8_t>(p.inputs.size()),
              static_cast<uint8_t>(p.outputs.size())};
    b.compile_specs.push_back({"threads", {1}});
    return b;
  }
};

TEST(Partitioner, ClaimedNodesBecomeOneDelegateCall) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int a = tensor(g, "a", {4}), b = tensor(g, "b", {4}), y = tensor(g, "y", {4});
  add_node(g, node("aten::neg", "default", {Arg::tensor(x)}, {a}));
  add_node(g, node("aten::exp", "default", {Arg::tensor(a)}, {b}));
  add_node(g, node("aten::relu", "default", {Arg::tensor(b)}, {y}));
  g.outputs = {GraphOutput{y}};
  FakePartitioner p;
  std::vector<DelegateRecord> delegates;
  auto n = apply_partitioner(g, p, &delegates);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "delegate::0");
  EXPECT_EQ(g.nodes[0].args[0].refs, (std::vector<int>{x}));
  EXPECT_EQ(g.nodes[0].output_values(), (std::vector<int>{b}));  // a stays internal
  ASSERT_EQ(delegates.size(), 1u);
  EXPECT_EQ(delegates[0].blob.data, (std::vector<uint8_t>{2, 1, 1}));
  EXPECT_EQ(g.nodes[1].args[0].ref, b);
}

// A claimed set a path leaves and re-enters cannot be one call (it would need its own output
// as an input): it becomes one call per convex piece, the outside node between them.
TEST(Partitioner, SplitsNonConvexClaimsIntoConvexCalls) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int a = tensor(g, "a", {4}), b = tensor(g, "b", {4}), y = tensor(g, "y", {4});
  add_node(g, node("aten::neg", "default", {Arg::tensor(x)}, {a}));
  add_node(g, node("aten::relu", "default", {Arg::tensor(a)}, {b}));  // outside, between
  add_node(g, node("aten::exp", "default", {Arg::tensor(b)}, {y}));
  g.outputs = {GraphOutput{y}};
  FakePartitioner p;  // claims {neg, exp}: relu leaves the set and re-enters it
  std::vector<DelegateRecord> delegates;
  PartitionReport report;
  auto n = apply_partitioner(g, p, &delegates, PartitionOptions(), &report);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(report.regrouping, 2);
  ASSERT_EQ(report.notes.size(), 1u);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "delegate::0");
  EXPECT_EQ(g.nodes[0].output_values(), (std::vector<int>{a}));
  EXPECT_EQ(g.nodes[1].op, "aten::relu");
  EXPECT_EQ(g.nodes[2].op, "delegate::1");
  EXPECT_EQ(g.nodes[2].args[0].refs, (std::vector<int>{b}));
}

// The dependencies a backend does not see: an in-place write to a mutable buffer (a KV cache)
// orders its earlier readers before it and its later readers after it. A backend that claims
// both readers by their producers (the buffer has none) claims a set that is not convex
// (Hugging Face's static-cache Llama failed --backend xnnpack on this).
TEST(Partitioner, SplitsClaimsAroundInPlaceBufferWrites) {
  Graph g;
  int buf = tensor(g, "buf", {4}, ValueRole::MutableState);
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int r = tensor(g, "r", {4}), e = tensor(g, "e", {4}), y = tensor(g, "y", {4});
  add_node(g, node("aten::neg", "default", {Arg::tensor(buf)}, {r}));                     // 0 reads buf
  add_node(g, node("aten::copy_", "default", {Arg::tensor(buf), Arg::tensor(x)}, {buf}));  // 1 writes it
  add_node(g, node("aten::exp", "default", {Arg::tensor(buf)}, {e}));                     // 2 reads the new buf
  add_node(g, node("aten::neg", "default", {Arg::tensor(e)}, {y}));                       // 3
  g.outputs = {GraphOutput{r}, GraphOutput{y}};
  FakePartitioner p;  // claims {0, 2, 3}
  std::vector<DelegateRecord> delegates;
  auto n = apply_partitioner(g, p, &delegates);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "delegate::0");  // the read of the old buffer
  EXPECT_EQ(g.nodes[0].output_values(), (std::vector<int>{r}));
  EXPECT_EQ(g.nodes[1].op, "aten::copy_");
  EXPECT_EQ(g.nodes[2].op, "delegate::1");  // exp + neg of the new one
  EXPECT_EQ(g.nodes[2].output_values(), (std::vector<int>{y}));
}

// A backend whose preprocess fails on some claimed nodes (here every exp).
class FailingPartitioner : public FakePartitioner {
 public:
  absl::StatusOr<DelegateBlob> preprocess(const Graph& g, const Partition& p) override {
    for (int i : p.nodes) {
      if (g.nodes[i].op == "aten::exp") return absl::InvalidArgumentError("exp is not lowered here");
    }
    return FakePartitioner::preprocess(g, p);
  }
};

// One node the backend cannot lower never fails the export: it runs on the portable kernels,
// the rest of its set is lowered around it, and the report says which node and why.
TEST(Partitioner, NodesThatFailToLowerFallBackToPortableKernels) {
  auto build = [](Graph& g) {
    int x = tensor(g, "x", {4}, ValueRole::UserInput);
    g.inputs = {x};
    int a = tensor(g, "a", {4}), b = tensor(g, "b", {4}), c = tensor(g, "c", {4}), y = tensor(g, "y", {4});
    add_node(g, node("aten::neg", "default", {Arg::tensor(x)}, {a}));
    add_node(g, node("aten::neg", "default", {Arg::tensor(a)}, {b}));
    add_node(g, node("aten::exp", "default", {Arg::tensor(b)}, {c}));
    add_node(g, node("aten::neg", "default", {Arg::tensor(c)}, {y}));
    g.outputs = {GraphOutput{y}};
    g.nodes[2].name = "the_exp";
  };
  Graph g;
  build(g);
  FailingPartitioner p;
  std::vector<DelegateRecord> delegates;
  PartitionReport report;
  auto n = apply_partitioner(g, p, &delegates, PartitionOptions(), &report);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);  // {neg, neg} and {neg}, the exp between them
  ASSERT_EQ(report.fallbacks.size(), 1u);
  EXPECT_NE(report.fallbacks[0].find("the_exp"), std::string::npos) << report.fallbacks[0];
  EXPECT_NE(report.fallbacks[0].find("exp is not lowered here"), std::string::npos) << report.fallbacks[0];
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "delegate::0");
  EXPECT_EQ(g.nodes[1].op, "aten::exp");
  EXPECT_EQ(g.nodes[2].op, "delegate::1");
  EXPECT_EQ(delegates[0].blob.data[0], 2);  // two nodes in the first call
  EXPECT_EQ(delegates[1].blob.data[0], 1);

  Graph strict_graph;  // --strict-delegation: the backend's error fails the export
  build(strict_graph);
  PartitionOptions strict;
  strict.strict = true;
  std::vector<DelegateRecord> none;
  auto failed = apply_partitioner(strict_graph, p, &none, strict);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(std::string(failed.status().message()).find("exp is not lowered here"), std::string::npos);
}

// A node outside the partition that sits between its members and reads a partition value
// (but feeds nothing back) moves after the delegate call (tiny_llama's XNNPACK export
// failed on this before).
TEST(Partitioner, MovesEarlyConsumersAfterTheDelegateCall) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  g.inputs = {x};
  int a = tensor(g, "a", {4}), s = tensor(g, "s", {4}), y = tensor(g, "y", {4});
  add_node(g, node("aten::neg", "default", {Arg::tensor(x)}, {a}));
  add_node(g, node("aten::sigmoid", "default", {Arg::tensor(a)}, {s}));  // outside, reads a
  add_node(g, node("aten::exp", "default", {Arg::tensor(x)}, {y}));
  g.outputs = {GraphOutput{s}, GraphOutput{y}};
  FakePartitioner p;
  std::vector<DelegateRecord> delegates;
  auto n = apply_partitioner(g, p, &delegates);
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "delegate::0");
  EXPECT_EQ(g.nodes[0].output_values(), (std::vector<int>{a, y}));
  EXPECT_EQ(g.nodes[1].op, "aten::sigmoid");
  EXPECT_EQ(g.values[a].producer, 0);
  EXPECT_EQ(g.values[s].producer, 1);
}

// In-place writes order nodes too: a reader of a buffer stays before the next write to it.
TEST(GraphDependencies, InPlaceWritesFollowEarlierReaders) {
  Graph g;
  int buf = tensor(g, "buf", {4}, ValueRole::MutableState);
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  int r = tensor(g, "r", {4}), w = tensor(g, "w", {4});
  add_node(g, node("aten::relu", "default", {Arg::tensor(buf)}, {r}));            // 0 reads buf
  add_node(g, node("aten::copy_", "default", {Arg::tensor(buf), Arg::tensor(x)}, {buf}));  // 1 writes buf
  add_node(g, node("aten::neg", "default", {Arg::tensor(buf)}, {w}));             // 2 reads new buf
  std::vector<std::vector<int>> d = g.node_dependencies();
  EXPECT_EQ(d[0], (std::vector<int>{}));
  EXPECT_EQ(d[1], (std::vector<int>{0}));  // write after read
  EXPECT_EQ(d[2], (std::vector<int>{1}));  // read after write
}


// conv -> batch_norm -> relu_ (in place) -> add: after folding, relu_ must write into the
// conv output and the add must read it (regression: the in-place write was lost).
TEST(ConvBatchNormFold, KeepsInPlaceConsumers) {
  Graph g;
  int x = tensor(g, "x", {1, 1, 1, 1}, ValueRole::UserInput);
  g.inputs = {x};
  int w = constant(g, "w", {1, 1, 1, 1}, {1.f});
  int mean = constant(g, "mean", {1}, {0.f});
  int var = constant(g, "var", {1}, {1.f});
  int c = tensor(g, "c", {1, 1, 1, 1}), y = tensor(g, "y", {1, 1, 1, 1}), r = tensor(g, "r", {1, 1, 1, 1});
  int s = tensor(g, "s", {1, 1, 1, 1});
  add_node(g, node("aten::conv2d", "default", {Arg::tensor(x), Arg::tensor(w), Arg::none(), Arg::int_list({1, 1}),
                                               Arg::int_list({0, 0}), Arg::int_list({1, 1}), Arg::integer(1)}, {c}));
  add_node(g, node("aten::batch_norm", "default",
                   {Arg::tensor(c), Arg::none(), Arg::none(), Arg::tensor(mean), Arg::tensor(var), Arg::boolean(false),
                    Arg::real(0.1), Arg::real(1e-5), Arg::boolean(true)}, {y}));
  add_node(g, node("aten::relu_", "default", {Arg::tensor(y)}, {r}));
  add_node(g, node("aten::add", "Tensor", {Arg::tensor(r), Arg::tensor(x), Arg::integer(1)}, {s}));
  g.outputs = {GraphOutput{s}};
  ASSERT_TRUE(canonicalize(g).ok());
  ASSERT_EQ(*fold_conv_batch_norm(g), 1);
  eliminate_dead_code(g);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[1].op, "aten::relu");
  EXPECT_EQ(g.nodes[1].args[0].ref, c);
  EXPECT_EQ(g.nodes[1].outputs[0].ref, c);
  EXPECT_EQ(g.nodes[2].args[0].ref, c);
}


TEST(ConstantFold, RunsWeightOnlyNodesAtExportTime) {
  Graph g;
  // w (2x3 constant) -> permute -> wt (3x2); x (user) + wt -> y. Only the permute folds.
  int w = constant(g, "w", {2, 3}, {1, 2, 3, 4, 5, 6});
  int wt = tensor(g, "wt", {3, 2});
  int x = tensor(g, "x", {3, 2}, ValueRole::UserInput);
  int y = tensor(g, "y", {3, 2});
  g.inputs = {x};
  add_node(g, node("aten::permute", "default", {Arg::tensor(w), Arg::int_list({1, 0})}, {wt}));
  add_node(g, node("aten::add", "Tensor", {Arg::tensor(x), Arg::tensor(wt), Arg::real(1.0)}, {y}));
  g.outputs.push_back(GraphOutput{y});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(*folded, 1);
  ASSERT_EQ(g.num_live_nodes(), 1u);
  EXPECT_EQ(g.nodes[0].op, "aten::add");
  const Value& folded_value = g.values[wt];
  ASSERT_EQ(folded_value.role, ValueRole::Constant);
  const Constant& c = g.constants[folded_value.constant];
  const float* data = reinterpret_cast<const float*>(c.data.data());
  const float expected[] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(data[i], expected[i]) << i;
}

TEST(ConstantFold, LeavesRandomAndInputDependentNodesAlone) {
  Graph g;
  int w = constant(g, "w", {4}, {1, 2, 3, 4});
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  int r = tensor(g, "r", {4});
  int y = tensor(g, "y", {4});
  g.inputs = {x};
  add_node(g, node("aten::rand_like", "default", {Arg::tensor(w), Arg::none(), Arg::none(), Arg::none(),
                                                   Arg::none(), Arg::none()}, {r}));
  add_node(g, node("aten::mul", "Tensor", {Arg::tensor(x), Arg::tensor(w)}, {y}));
  g.outputs.push_back(GraphOutput{y});
  g.outputs.push_back(GraphOutput{r});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, 0);
  EXPECT_EQ(g.num_live_nodes(), 2u);
}


// split.Tensor [2, 7] into pieces of 3 along dim 1 -> slices [0,3), [3,6), [6,7) writing the
// piece values themselves (readers need no renaming).
TEST(SplitToSlices, OneSlicePerPieceCoveringTheInput) {
  Graph g;
  int x = tensor(g, "x", {2, 7}, ValueRole::UserInput);
  g.inputs = {x};
  int a = tensor(g, "a", {2, 3}), b = tensor(g, "b", {2, 3}), c = tensor(g, "c", {2, 1});
  Node s = node("aten::split", "Tensor", {Arg::tensor(x), Arg::integer(3), Arg::integer(-1)}, {});
  s.outputs = {Arg::tensor_list({a, b, c})};
  add_node(g, s);
  g.outputs = {GraphOutput{a}, GraphOutput{b}, GraphOutput{c}};
  EXPECT_EQ(split_to_slices(g), 1);
  ASSERT_EQ(g.nodes.size(), 3u);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 3}, {3, 6}, {6, 7}};
  const int pieces[] = {a, b, c};
  for (size_t i = 0; i < 3; ++i) {
    const Node& n = g.nodes[i];
    EXPECT_EQ(n.kernel_name(), "aten::slice.Tensor");
    EXPECT_EQ(n.args[1].i, 1);
    EXPECT_EQ(n.args[2].i, ranges[i].first);
    EXPECT_EQ(n.args[3].i, ranges[i].second);
    EXPECT_EQ(n.output_values(), (std::vector<int>{pieces[i]}));
    EXPECT_EQ(g.values[pieces[i]].producer, static_cast<int>(i));
  }
}

// Pieces that do not tile the input (an inconsistent graph) are left alone.
TEST(SplitToSlices, LeavesInconsistentSplitsAlone) {
  Graph g;
  int x = tensor(g, "x", {5}, ValueRole::UserInput);
  int a = tensor(g, "a", {2}), b = tensor(g, "b", {2});
  Node s = node("aten::split", "Tensor", {Arg::tensor(x), Arg::integer(2), Arg::integer(0)}, {});
  s.outputs = {Arg::tensor_list({a, b})};
  add_node(g, s);
  EXPECT_EQ(split_to_slices(g), 0);
  EXPECT_EQ(g.nodes[0].kernel_name(), "aten::split.Tensor");
}

// A boolean mask read by two attentions gets one where(mask, 0, -inf), placed right after the
// mask's producer (not before each attention, which would split a delegated run).
TEST(AttentionMasks, OneAdditiveMaskRightAfterItsProducer) {
  Graph g;
  int q = tensor(g, "q", {1, 2, 4, 8}, ValueRole::UserInput);
  int m_in = tensor(g, "m_in", {4, 4}, ValueRole::UserInput);
  g.values[m_in].dtype = ScalarType::Bool;
  g.inputs = {q, m_in};
  int mask = tensor(g, "mask", {4, 4});
  g.values[mask].dtype = ScalarType::Bool;
  int h = tensor(g, "h", {1, 2, 4, 8}), y1 = tensor(g, "y1", {1, 2, 4, 8}), y2 = tensor(g, "y2", {1, 2, 4, 8});
  add_node(g, node("aten::logical_not", "default", {Arg::tensor(m_in)}, {mask}));
  add_node(g, node("aten::relu", "default", {Arg::tensor(q)}, {h}));
  for (int y : {y1, y2}) {
    add_node(g, node("aten::scaled_dot_product_attention", "default",
                     {Arg::tensor(h), Arg::tensor(h), Arg::tensor(h), Arg::tensor(mask)}, {y}));
  }
  g.outputs = {GraphOutput{y1}, GraphOutput{y2}};
  EXPECT_EQ(make_attention_masks_additive(g), 1);
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_EQ(g.nodes[0].kernel_name(), "aten::logical_not.default");
  const Node& w = g.nodes[1];
  EXPECT_EQ(w.kernel_name(), "aten::where.Scalar");
  EXPECT_EQ(w.args[0].ref, mask);
  EXPECT_EQ(w.args[1].d, 0.0);
  EXPECT_TRUE(std::isinf(w.args[2].d) && w.args[2].d < 0);
  const int additive = w.outputs[0].ref;
  EXPECT_EQ(g.values[additive].dtype, ScalarType::Float32);
  EXPECT_EQ(g.values[additive].sizes, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(g.nodes[3].args[3].ref, additive);
  EXPECT_EQ(g.nodes[4].args[3].ref, additive);
}


// The unsupported sigmoid depends on the input alone and moves to the front. The unsupported
// buffer write (copy_) must stay after neg, which reads the buffer's old value (write after
// read), and runs as soon as that allows.
TEST(ClusterSupportedNodes, MovesUnsupportedNodesEarlyWithinDependencies) {
  Graph g;
  int x = tensor(g, "x", {4}, ValueRole::UserInput);
  int buf = tensor(g, "buf", {4}, ValueRole::MutableState);
  g.inputs = {x};
  int a = tensor(g, "a", {4}), s = tensor(g, "s", {4}), e = tensor(g, "e", {4}), r = tensor(g, "r", {4});
  add_node(g, node("aten::relu", "default", {Arg::tensor(x)}, {a}));                        // 0 supported
  add_node(g, node("aten::neg", "default", {Arg::tensor(buf)}, {r}));                       // 1 supported, reads buf
  add_node(g, node("aten::sigmoid", "default", {Arg::tensor(x)}, {s}));                     // 2 not
  add_node(g, node("aten::copy_", "default", {Arg::tensor(buf), Arg::tensor(x)}, {buf}));  // 3 not, writes buf
  add_node(g, node("aten::exp", "default", {Arg::tensor(a)}, {e}));                         // 4 supported
  g.outputs = {GraphOutput{s}, GraphOutput{e}, GraphOutput{r}};
  auto supported = [&](int i) {
    const std::string op = g.nodes[i].op;
    return op == "aten::relu" || op == "aten::neg" || op == "aten::exp";
  };
  EXPECT_TRUE(cluster_supported_nodes(g, supported));
  std::vector<std::string> order;
  for (const Node& n : g.nodes) order.push_back(n.op);
  EXPECT_EQ(order, (std::vector<std::string>{"aten::sigmoid", "aten::relu", "aten::neg", "aten::copy_", "aten::exp"}));
  EXPECT_EQ(g.values[s].producer, 0);
  EXPECT_EQ(g.values[e].producer, 4);
  EXPECT_FALSE(cluster_supported_nodes(g, supported)) << "a second pass has nothing left to move";
}

}  // namespace
}  // namespace exporter
}  // namespace ember
