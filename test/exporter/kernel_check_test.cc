// check_kernels: missing kernels and kernel-unsupported configurations are export errors
// that name the op (an exported program always loads and runs).
#include "exporter/check/kernel_check.h"

#include "exporter/ops/op_schemas.h"
#include "gtest/gtest.h"

namespace ember {
namespace exporter {
namespace {

int tensor(Graph& g, std::vector<int64_t> sizes) {
  Value v;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  return g.add_value(v);
}

// aten::lstm.input with `per_direction` parameter tensors per layer and direction.
Graph lstm_graph(int per_direction, bool has_biases, int64_t layers, bool bidirectional) {
  Graph g;
  Node n;
  n.op = "aten::lstm";
  n.overload = "input";
  n.schema = find_op_schema("aten::lstm", "input");
  n.source = "model.py:12 in forward";
  const int64_t dirs = bidirectional ? 2 : 1;
  std::vector<int> params;
  for (int64_t i = 0; i < layers * dirs * per_direction; ++i) params.push_back(tensor(g, {4}));
  n.args = {Arg::tensor(tensor(g, {5, 1, 3})), Arg::tensor_list({tensor(g, {dirs, 1, 4}), tensor(g, {dirs, 1, 4})}),
            Arg::tensor_list(params), Arg::boolean(has_biases), Arg::integer(layers), Arg::real(0.0),
            Arg::boolean(false), Arg::boolean(bidirectional), Arg::boolean(false)};
  n.outputs = {Arg::tensor(tensor(g, {5, 1, 4 * dirs})), Arg::tensor(tensor(g, {dirs, 1, 4})),
               Arg::tensor(tensor(g, {dirs, 1, 4}))};
  g.nodes.push_back(n);
  return g;
}

TEST(KernelCheck, LstmWithoutProjectionsPasses) {
  ASSERT_NE(find_op_schema("aten::lstm", "input"), nullptr);
  EXPECT_TRUE(check_kernels(lstm_graph(4, true, 2, true)).ok());
  EXPECT_TRUE(check_kernels(lstm_graph(2, false, 1, false)).ok());
}

// nn.LSTM(proj_size=...) has w_ih, w_hh, b_ih, b_hh, w_hr per layer and direction (the
// recurrent driver runs it); a list of any other length is an export error naming the op.
TEST(KernelCheck, LstmWithProjectionsPassesAndAWrongParameterCountIsAnExportError) {
  for (bool bias : {true, false}) {
    EXPECT_TRUE(check_kernels(lstm_graph(bias ? 5 : 3, bias, 2, true)).ok());
  }
  absl::Status s = check_kernels(lstm_graph(1, true, 1, false));
  ASSERT_FALSE(s.ok());
  const std::string msg(s.message());
  EXPECT_NE(msg.find("aten::lstm.input"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.py:12 in forward"), std::string::npos) << msg;
}

}  // namespace
}  // namespace exporter
}  // namespace ember
