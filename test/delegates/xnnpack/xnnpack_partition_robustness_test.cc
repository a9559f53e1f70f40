// The partitioning layer on graphs nobody here wrote (issue 27): whatever sets of nodes a
// backend claims, and whichever of them it then fails to lower, the export succeeds and the
// program computes what the portable kernels compute.
//
// Random DAGs of float ops XNNPACK runs (add, mul, sub, neg, tanh, abs, relu) and ops it does
// not (erf, atan) are exported twice: with the portable kernels alone, and with a partitioner
// that claims XNNPACK-supported nodes in random sets (convex or not, feeding each other or
// not: apply_partitioner must re-form them) and lowers them with XNNPACK's own preprocess,
// except that it fails on a few "poisoned" nodes (those must fall back to the portable
// kernels). Both programs run on the same inputs; outputs must agree to float rounding.
// Plus the graph shape of torchvision's RAFT that failed --backend xnnpack: a convolution of a
// constant image (a coordinate grid folded at export).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "test/delegates/op_graph.h"

namespace ember {
namespace {

using exporter::Arg;
using testing::ints;
using testing::OpGraph;
using testing::t;

// Claims XNNPACK-supported nodes in `sets` random sets; preprocess is XNNPACK's, failing on
// any partition that holds a poisoned node.
class RandomClaims : public exporter::Partitioner {
 public:
  RandomClaims(uint32_t seed, int sets, double poison_p) : rng_(seed), sets_(sets), poison_p_(poison_p) {}
  std::string backend_id() const override { return "xnnpack"; }
  std::vector<std::vector<int>> claim(const exporter::Graph& g) override {
    std::vector<std::vector<int>> out(static_cast<size_t>(sets_), std::vector<int>());
    std::uniform_int_distribution<int> which(0, sets_ - 1);
    std::bernoulli_distribution poison(poison_p_);
    for (int i = 0; i < int(g.nodes.size()); ++i) {
      if (g.nodes[i].erased || !xnnpack::XnnpackPartitioner::unsupported_reason(g, i).empty()) continue;
      out[size_t(which(rng_))].push_back(i);
      if (poison(rng_)) poisoned_.insert(g.nodes[i].name);
    }
    claimed_ = 0;
    for (const auto& s : out) claimed_ += int(s.size());
    return out;
  }
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph& g, const exporter::Partition& p) override {
    for (int i : p.nodes) {
      if (poisoned_.count(g.nodes[i].name)) return absl::InvalidArgumentError("poisoned node " + g.nodes[i].name);
    }
    return inner_.preprocess(g, p);
  }
  int claimed() const { return claimed_; }
  size_t poisoned() const { return poisoned_.size(); }

 private:
  std::mt19937 rng_;
  int sets_;
  double poison_p_;
  std::set<std::string> poisoned_;
  int claimed_ = 0;
  xnnpack::XnnpackPartitioner inner_;
};

// A random DAG over [1, 16] float tensors: each node reads one or two earlier values.
OpGraph random_graph(std::mt19937& rng, int nodes) {
  OpGraph o;
  o.rng.seed(rng());
  const std::vector<int64_t> shape = {1, 16};
  std::vector<int> values = {o.input(shape), o.input(shape)};
  std::vector<int> uses(values.size(), 0);
  const char* unary[] = {"aten::neg", "aten::tanh", "aten::abs", "aten::relu", "aten::erf", "aten::atan"};
  const char* binary[] = {"aten::add", "aten::mul", "aten::sub"};
  for (int k = 0; k < nodes; ++k) {
    // Mostly recent values (long chains), sometimes any (branches that rejoin).
    auto pick = [&]() {
      const int n = int(values.size());
      const int i = (rng() % 3 == 0) ? int(rng() % n) : std::max(0, n - 1 - int(rng() % 3));
      uses[size_t(i)]++;
      return values[size_t(i)];
    };
    int out;
    if (rng() % 2 == 0) {
      const int a = pick(), b = pick();
      const char* op = binary[rng() % 3];
      out = std::string(op) == "aten::mul" ? o.node(op, "Tensor", {t(a), t(b)}, shape)
                                             : o.node(op, "Tensor", {t(a), t(b), Arg::integer(1)}, shape);
    } else {
      out = o.node(unary[rng() % 6], "default", {t(pick())}, shape);
    }
    o.g.nodes.back().name = "n" + std::to_string(k);
    values.push_back(out);
    uses.push_back(0);
  }
  for (size_t i = 2; i < values.size(); ++i) {
    if (uses[i] == 0) o.output(values[i]);  // every value someone computes is observed
  }
  return o;
}

TEST(PartitionRobustness, RandomClaimsAndLoweringFailuresMatchPortable) {
  for (const char* op : {"aten::erf", "aten::atan"}) {  // the generator's ops XNNPACK must not take
    OpGraph o;
    o.output(o.node(op, "default", {t(o.input({1, 16}))}, {1, 16}));
    ASSERT_FALSE(xnnpack::XnnpackPartitioner::unsupported_reason(o.g, 0).empty()) << op;
  }
  std::mt19937 rng(271828);
  int delegated = 0, fallbacks = 0, regrouped = 0, programs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    OpGraph o = random_graph(rng, 6 + int(rng() % 30));
    RandomClaims* claims = new RandomClaims(uint32_t(rng()), 1 + int(rng() % 4), trial % 3 == 0 ? 0.0 : 0.15);
    exporter::ExportOptions xo;
    xo.partitioners.push_back(std::shared_ptr<exporter::Partitioner>(claims));
    auto portable = exporter::export_graph(o.g, exporter::ExportOptions());
    auto del = exporter::export_graph(o.g, xo);
    ASSERT_TRUE(portable.ok()) << "trial " << trial << ": " << portable.status();
    ASSERT_TRUE(del.ok()) << "trial " << trial << ": " << del.status();
    ASSERT_EQ(del->backends.size(), 1u);
    delegated += del->backends[0].nodes;
    fallbacks += del->backends[0].fallbacks;
    regrouped += !del->backends[0].notes.empty();
    EXPECT_EQ(del->warnings.size(), size_t(del->backends[0].fallbacks));
    for (const std::string& w : del->warnings) EXPECT_NE(w.find("poisoned node"), std::string::npos) << w;
    EXPECT_EQ(del->backends[0].nodes + del->backends[0].fallbacks, claims->claimed()) << "trial " << trial;

    testing::PteRunner a(1 << 20, 1 << 20), d(1 << 20, 1 << 20);
    ASSERT_EQ(a.load(portable->pte), "") << "trial " << trial;
    ASSERT_EQ(d.load(del->pte), "") << "trial " << trial;
    ASSERT_EQ(a.run(o.inputs), "") << "trial " << trial;
    ASSERT_EQ(d.run(o.inputs), "") << "trial " << trial;
    ASSERT_EQ(a.method().num_outputs(), d.method().num_outputs());
    for (size_t k = 0; k < a.method().num_outputs(); ++k) {
      EXPECT_LT(testing::relative_l2(d.output(k), a.output(k)), 1e-5) << "trial " << trial << " output " << k;
    }
    ++programs;
  }
  std::printf("[partition robustness] %d random programs: %d nodes delegated, %d lowering failures on the "
              "portable kernels, %d exports with claims re-formed\n",
              programs, delegated, fallbacks, regrouped);
  EXPECT_GT(delegated, 200);
  EXPECT_GT(fallbacks, 10);
  EXPECT_GT(regrouped, 10);
}

// RAFT's motion encoder convolves a coordinate grid that export folds into a constant: a
// convolution whose image is a constant. XNNPACK leaves it to the portable kernels (it was
// claimed, then failed to lower, and failed the whole export); the rest is delegated.
TEST(PartitionRobustness, ConvolutionOfAConstantImage) {
  OpGraph o;
  const int x = o.input({1, 2, 8, 8});
  const int grid = o.constant({1, 2, 8, 8});
  const int w = o.constant({4, 2, 3, 3}, -0.5f, 0.5f);
  const int b = o.constant({4}, -0.1f, 0.1f);
  const int c1 = o.node("aten::conv2d", "default", {t(grid), t(w), t(b), ints({1, 1}), ints({1, 1}), ints({1, 1}),
                                                    Arg::integer(1)},
                        {1, 4, 8, 8});
  const int c2 = o.node("aten::conv2d", "default", {t(x), t(w), t(b), ints({1, 1}), ints({1, 1}), ints({1, 1}),
                                                    Arg::integer(1)},
                        {1, 4, 8, 8});
  o.output(o.node("aten::add", "Tensor", {t(c1), t(c2), Arg::integer(1)}, {1, 4, 8, 8}));
  exporter::ExportOptions xo;
  xo.fold_constants = false;  // keep the constant convolution a node, as RAFT's was
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  exporter::ExportOptions po;
  po.fold_constants = false;
  auto portable = exporter::export_graph(o.g, po);
  auto del = exporter::export_graph(o.g, xo);
  ASSERT_TRUE(portable.ok()) << portable.status();
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_TRUE(del->warnings.empty());  // not claimed at all: no lowering failure either
  EXPECT_EQ(del->portable_ops["aten::conv2d.default"], 1);
  ASSERT_EQ(del->backends.size(), 1u);
  EXPECT_EQ(del->backends[0].ops["aten::conv2d.default"], 1);
  testing::PteRunner a, d;
  ASSERT_EQ(a.load(portable->pte), "");
  ASSERT_EQ(d.load(del->pte), "");
  ASSERT_EQ(a.run(o.inputs), "");
  ASSERT_EQ(d.run(o.inputs), "");
  EXPECT_LT(testing::relative_l2(d.output(0), a.output(0)), 1e-5);
}

}  // namespace
}  // namespace ember
