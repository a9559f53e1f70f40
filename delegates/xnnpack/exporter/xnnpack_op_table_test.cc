// The XNNPACK op table (issue 27): every op registered once, with a check and a lowering, under
// a name the schema table knows; plus differential tests (XNNPACK delegate vs portable kernels)
// for table entries the op-level cases of test/delegates/shared_models_xnnpack_test.cc do not
// reach, a few per family.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_lowering.h"
#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/ops/op_schemas.h"
#include "test/delegates/op_graph.h"

namespace ember {
namespace xnnpack {
namespace {

using exporter::Arg;
using ::ember::testing::ints;
using ::ember::testing::OpCase;
using ::ember::testing::OpGraph;
using ::ember::testing::t;

TEST(XnnpackOpTable, EveryOpRegisteredOnceWithCheckAndLower) {
  const XnnOpTable& table = xnnpack_op_table();
  EXPECT_TRUE(table.duplicates().empty()) << "registered twice: " << table.duplicates()[0];
  ASSERT_GT(table.ops().size(), 60u);
  for (const std::string& op : table.ops()) {
    const XnnOpEntry* e = table.find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_NE(e->check, nullptr) << op;
    EXPECT_NE(e->lower, nullptr) << op;
  }
}

TEST(XnnpackOpTable, EveryFamilyRegistersOpsTheSchemaTableKnows) {
  using AddFamily = void (*)(XnnOpTable&);
  size_t total = 0;
  for (AddFamily add : {add_convolution_pooling_ops, add_elementwise_ops, add_normalization_ops,
                        add_matmul_attention_ops, add_shape_ops, add_quantized_ops, add_weight_only_ops}) {
    XnnOpTable family("family");
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
  EXPECT_EQ(total, xnnpack_op_table().ops().size()) << "an op registered by two families";
}

TEST(XnnpackOpTable, TraitsAgreeWithEachOther) {
  for (const std::string& op : xnnpack_op_table().ops()) {
    const XnnOpTraits& tr = xnnpack_op_table().find(op)->traits;
    // int8 fusions are float ops between Q/DQ; quantized ops are never reshaped at run time.
    EXPECT_TRUE(tr.int8 == Int8Fusion::kNone || !tr.quantized) << op;
    EXPECT_TRUE(!tr.quantized || tr.shapes == ShapeSupport::kStaticOnly) << op;
    // A clamp folds into a producer; it is not one itself (that would chain folds).
    EXPECT_TRUE(tr.clamp == nullptr || !tr.takes_fused_clamp) << op;
  }
}

TEST(XnnpackOpTable, ReasonsComeFromTheEntryOrTheFloatOperandRules) {
  {
    OpGraph o;
    o.output(o.node("aten::erf", "default", {t(o.input({2, 3}))}, {2, 3}));
    EXPECT_EQ(XnnpackPartitioner::unsupported_reason(o.g, 0), "op not supported by XNNPACK");
  }
  {
    OpGraph o;
    o.output(o.node("aten::_softmax", "default", {t(o.input({2, 3})), Arg::integer(0), Arg::boolean(false)}, {2, 3}));
    EXPECT_EQ(XnnpackPartitioner::unsupported_reason(o.g, 0), "softmax must be over the last dim");
  }
  {
    OpGraph o;  // an entry's check runs only on float32 operands
    const int x = o.input({2, 3});
    o.g.values[x].dtype = ScalarType::Int64;
    o.output(o.node("aten::relu", "default", {t(x)}, {2, 3}));
    o.g.values[o.g.nodes[0].outputs[0].ref].dtype = ScalarType::Int64;
    EXPECT_EQ(XnnpackPartitioner::unsupported_reason(o.g, 0).rfind("output is not a float32 tensor", 0), 0u);
  }
}

// ---- differential cases the shared op-level cases do not reach ----

std::vector<OpCase> cases() {
  using A = Arg;
  std::vector<OpCase> c;
  // elementwise: the unary table entries (log on positive inputs; clone / alias alone are
  // removed before partitioning)
  for (const char* u : {"tanh", "exp", "log", "neg", "abs", "floor", "ceil"}) {
    const std::string op = u;
    c.push_back({"unary_" + op, [op](OpGraph& o) {
      const int x = op == "log" ? o.input({2, 3, 4, 5}, 0.1f, 3) : o.input({2, 3, 4, 5}, -3, 3);
      o.output(o.node("aten::" + op, "default", {t(x)}, {2, 3, 4, 5}));
    }});
  }
  // shape: the reshape entries not covered elsewhere, in a partition with NHWC tensors
  c.push_back({"conv_then_flatten_using_ints", [](OpGraph& o) {
    int x = o.input({1, 3, 4, 4}), w = o.constant({2, 3, 1, 1}), b = o.constant({2});
    int y = o.node("aten::conv2d", "default", {t(x), t(w), t(b), ints({1, 1}), ints({0, 0}), ints({1, 1}), A::integer(1)}, {1, 2, 4, 4});
    o.output(o.node("aten::flatten", "using_ints", {t(y), A::integer(1), A::integer(-1)}, {1, 32}));
  }});
  c.push_back({"squeeze_dim_dims_default_unsafe_view", [](OpGraph& o) {
    int x = o.input({1, 3, 1, 4});
    int a = o.node("aten::squeeze", "dim", {t(x), A::integer(2)}, {1, 3, 4});
    int b = o.node("aten::squeeze", "dims", {t(a), ints({0})}, {3, 4});
    int v = o.node("aten::_unsafe_view", "default", {t(b), ints({1, 12, 1})}, {1, 12, 1});
    int s = o.node("aten::squeeze", "default", {t(v)}, {12});
    o.output(o.node("aten::relu", "default", {t(s)}, {12}));  // reshapes alone are not delegated
  }});
  // convolution / pooling: padded average pooling without the padding in the count; a 1x1
  // max pooling (the identity: a Copy node, XNNPACK rejects 1x1 pooling)
  c.push_back({"avg_pool2d_pad1_exclude_pad", [](OpGraph& o) {
    int x = o.input({1, 2, 6, 5});
    o.output(o.node("aten::avg_pool2d", "default", {t(x), ints({3, 3}), ints({2, 2}), ints({1, 1}), A::boolean(false), A::boolean(false), A::none()}, {1, 2, 3, 3}));
  }});
  c.push_back({"max_pool2d_1x1_identity", [](OpGraph& o) {
    int x = o.input({1, 2, 3, 4});
    o.output(o.node("aten::max_pool2d", "default", {t(x), ints({1, 1}), ints({1, 1}), ints({0, 0}), ints({1, 1}), A::boolean(false)}, {1, 2, 3, 4}));
  }});
  // normalisation: global average pooling after a conv (mean over H, W in NHWC); a sum over two dims
  c.push_back({"conv_then_mean_hw_in_nhwc", [](OpGraph& o) {
    int x = o.input({1, 3, 5, 6}), w = o.constant({4, 3, 3, 3}), b = o.constant({4});
    int y = o.node("aten::conv2d", "default", {t(x), t(w), t(b), ints({1, 1}), ints({1, 1}), ints({1, 1}), A::integer(1)}, {1, 4, 5, 6});
    o.output(o.node("aten::mean", "dim", {t(y), ints({2, 3}), A::boolean(true), A::none()}, {1, 4, 1, 1}));
  }});
  c.push_back({"sum_first_and_last_dims", [](OpGraph& o) {
    int x = o.input({3, 4, 5});
    o.output(o.node("aten::sum", "dim_IntList", {t(x), ints({0, -1}), A::boolean(false), A::none()}, {4}));
  }});
  // matrix products: clamps folded into the producer's output range
  c.push_back({"linear_then_hardtanh_folded", [](OpGraph& o) {
    int x = o.input({3, 6}), w = o.constant({4, 6}), b = o.constant({4});
    int y = o.node("aten::linear", "default", {t(x), t(w), t(b)}, {3, 4});
    o.output(o.node("aten::hardtanh", "default", {t(y), A::real(-0.3), A::real(0.4)}, {3, 4}));
  }});
  c.push_back({"addmm_then_relu_folded", [](OpGraph& o) {
    int b = o.constant({5}), x = o.input({2, 7}), w = o.constant({7, 5});
    int y = o.node("aten::addmm", "default", {t(b), t(x), t(w), A::integer(1), A::integer(1)}, {2, 5});
    o.output(o.node("aten::relu", "default", {t(y)}, {2, 5}));
  }});
  c.push_back({"mm_of_activations_then_relu", [](OpGraph& o) {  // the relu folded into mm is kept
    int x = o.input({3, 4}), y = o.input({4, 5});
    int m = o.node("aten::mm", "default", {t(x), t(y)}, {3, 5});
    o.output(o.node("aten::relu", "default", {t(m)}, {3, 5}));
  }});
  c.push_back({"bmm_3d", [](OpGraph& o) {
    int x = o.input({2, 3, 4}), y = o.input({2, 4, 5});
    o.output(o.node("aten::bmm", "default", {t(x), t(y)}, {2, 3, 5}));
  }});
  return c;
}

class XnnpackTableEntryVsPortable : public ::testing::TestWithParam<OpCase> {};

TEST_P(XnnpackTableEntryVsPortable, Matches) {
  OpGraph o;
  GetParam().build(o);
  exporter::ExportOptions options;
  options.partitioners.push_back(std::make_shared<XnnpackPartitioner>());
  ::ember::testing::expect_delegated_matches_portable(o, options, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Entries, XnnpackTableEntryVsPortable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace xnnpack
}  // namespace ember
