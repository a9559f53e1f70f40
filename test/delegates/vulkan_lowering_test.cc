// Vulkan partitioner lowering vs the portable kernels, one small graph per ATen op that the
// partitioner rewrites into the delegate's shader ops (transpose -> permute, select ->
// slice + view, scalar arithmetic -> affine, addmm -> matmul + add, attention -> matmuls,
// softmax and masks). Each graph is exported twice, with and without the partitioner, and
// both programs must agree. Data-movement ops are followed by a relu so the run computes
// something (a run of views alone is left on the CPU). Runs on lavapipe in CI; skips
// without a Vulkan device.
#include <memory>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "gtest/gtest.h"
#include "test/delegates/op_graph.h"

namespace ember {
namespace {

using exporter::Arg;
using testing::ints;
using testing::OpCase;
using testing::OpGraph;
using testing::t;

exporter::ExportOptions vulkan_options() {
  exporter::ExportOptions o;
  o.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>());
  return o;
}

// x -> op -> relu (out_sizes: the op's output).
int then_relu(OpGraph& o, int v, std::vector<int64_t> sizes) {
  return o.node("aten::relu", "default", {t(v)}, std::move(sizes));
}

std::vector<OpCase> cases() {
  using A = Arg;
  std::vector<OpCase> c;
  c.push_back({"transpose_negative_dims", [](OpGraph& o) {
    int x = o.input({2, 3, 5});
    o.output(then_relu(o, o.node("aten::transpose", "int", {t(x), A::integer(-1), A::integer(0)}, {5, 3, 2}), {5, 3, 2}));
  }});
  c.push_back({"t_matrix", [](OpGraph& o) {
    int x = o.input({4, 7});
    o.output(then_relu(o, o.node("aten::t", "default", {t(x)}, {7, 4}), {7, 4}));
  }});
  c.push_back({"select_negative_index", [](OpGraph& o) {
    int x = o.input({3, 4, 5});
    o.output(then_relu(o, o.node("aten::select", "int", {t(x), A::integer(1), A::integer(-2)}, {3, 5}), {3, 5}));
  }});
  c.push_back({"unsqueeze_squeeze_unflatten", [](OpGraph& o) {
    int x = o.input({6, 4});
    int u = o.node("aten::unsqueeze", "default", {t(x), A::integer(0)}, {1, 6, 4});
    int s = o.node("aten::squeeze", "dim", {t(u), A::integer(0)}, {6, 4});
    int f = o.node("aten::unflatten", "int", {t(s), A::integer(0), ints({2, 3})}, {2, 3, 4});
    o.output(then_relu(o, f, {2, 3, 4}));
  }});
  c.push_back({"add_sub_scalar_with_alpha", [](OpGraph& o) {
    int x = o.input({3, 5});
    int a = o.node("aten::add", "Tensor", {t(x), A::real(0.75), A::real(2.0)}, {3, 5});
    o.output(o.node("aten::sub", "Tensor", {t(a), A::real(-1.5), A::integer(1)}, {3, 5}));
  }});
  c.push_back({"mul_div_neg_scalar", [](OpGraph& o) {
    int x = o.input({4, 3});
    int m = o.node("aten::mul", "Tensor", {t(x), A::real(-3.5)}, {4, 3});
    int d = o.node("aten::div", "Tensor", {t(m), A::real(7.0)}, {4, 3});
    o.output(o.node("aten::neg", "default", {t(d)}, {4, 3}));
  }});
  c.push_back({"rmsnorm_pow_mean_rsqrt", [](OpGraph& o) {  // tiny_llama's RMSNorm
    int x = o.input({2, 3, 8}, -2, 2), w = o.constant({8});
    int sq = o.node("aten::pow", "Tensor_Scalar", {t(x), A::integer(2)}, {2, 3, 8});
    int ms = o.node("aten::mean", "dim", {t(sq), ints({-1}), A::boolean(true), A::none()}, {2, 3, 1});
    int eps = o.node("aten::add", "Tensor", {t(ms), A::real(1e-6), A::integer(1)}, {2, 3, 1});
    int rs = o.node("aten::rsqrt", "default", {t(eps)}, {2, 3, 1});
    int n = o.node("aten::mul", "Tensor", {t(x), t(rs)}, {2, 3, 8});
    o.output(o.node("aten::mul", "Tensor", {t(n), t(w)}, {2, 3, 8}));
  }});
  c.push_back({"sqrt_exp", [](OpGraph& o) {
    int x = o.input({9}, 0.1, 3);
    o.output(o.node("aten::exp", "default", {t(o.node("aten::sqrt", "default", {t(x)}, {9}))}, {9}));
  }});
  c.push_back({"addmm_gpt2_conv1d", [](OpGraph& o) {
    int x = o.input({5, 6}), w = o.constant({6, 4}), b = o.constant({4});
    o.output(o.node("aten::addmm", "default", {t(b), t(x), t(w), A::integer(1), A::integer(1)}, {5, 4}));
  }});
  c.push_back({"sdpa_no_mask", [](OpGraph& o) {
    int q = o.input({1, 2, 5, 4}), k = o.input({1, 2, 6, 4}), v = o.input({1, 2, 6, 3});
    o.output(o.node("aten::scaled_dot_product_attention", "default",
                    {t(q), t(k), t(v), A::none(), A::real(0.0), A::boolean(false), A::none(), A::boolean(false)},
                    {1, 2, 5, 3}));
  }});
  c.push_back({"sdpa_float_mask_and_scale", [](OpGraph& o) {
    int q = o.input({2, 3, 4}), k = o.input({2, 5, 4}), v = o.input({2, 5, 4}), m = o.input({3, 5}, -4, 0);
    o.output(o.node("aten::scaled_dot_product_attention", "default",
                    {t(q), t(k), t(v), t(m), A::real(0.0), A::boolean(false), A::real(0.3), A::boolean(false)},
                    {2, 3, 4}));
  }});
  c.push_back({"sdpa_causal", [](OpGraph& o) {
    int q = o.input({1, 2, 4, 8}), k = o.input({1, 2, 4, 8}), v = o.input({1, 2, 4, 8});
    o.output(o.node("aten::scaled_dot_product_attention", "default",
                    {t(q), t(k), t(v), A::none(), A::real(0.0), A::boolean(true), A::none(), A::boolean(false)},
                    {1, 2, 4, 8}));
  }});
  c.push_back({"expand_broadcast_and_new_dims", [](OpGraph& o) {
    int x = o.input({3, 1, 4});
    int e = o.node("aten::expand", "default", {t(x), ints({2, 3, 5, -1})}, {2, 3, 5, 4});
    o.output(then_relu(o, e, {2, 3, 5, 4}));
  }});
  c.push_back({"repeat_interleave_heads", [](OpGraph& o) {  // grouped-query attention's k/v
    int x = o.input({1, 2, 3, 4});
    int r = o.node("aten::repeat_interleave", "self_int", {t(x), A::integer(3), A::integer(1), A::none()},
                   {1, 6, 3, 4});
    o.output(then_relu(o, r, {1, 6, 3, 4}));
  }});
  c.push_back({"index_rows_by_position", [](OpGraph& o) {  // RoPE tables: cos[positions]
    int table = o.constant({10, 2, 3});
    int pos = o.int64_input({2, 4}, {0, 3, 9, 1, -1, 5, 5, 2});
    Arg indices = Arg::tensor_list({pos});
    int g = o.node("aten::index", "Tensor", {t(table), indices}, {2, 4, 2, 3});
    o.output(then_relu(o, g, {2, 4, 2, 3}));
  }});
  return c;
}

class VulkanLoweringVsPortable : public ::testing::TestWithParam<OpCase> {};

TEST_P(VulkanLoweringVsPortable, Matches) {
  if (!vulkan::vulkan_backend().is_available()) GTEST_SKIP() << "no Vulkan device";
  OpGraph o;
  GetParam().build(o);
  testing::expect_delegated_matches_portable(o, vulkan_options(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Ops, VulkanLoweringVsPortable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

// A run of data-movement ops alone would cost a GPU round trip for no arithmetic: unclaimed.
TEST(VulkanPartitioner, LeavesRunsOfViewsAlone) {
  OpGraph o;
  int x = o.input({2, 6});
  int v = o.node("aten::view", "default", {t(x), ints({3, 4})}, {3, 4});
  o.output(o.node("aten::transpose", "int", {t(v), Arg::integer(0), Arg::integer(1)}, {4, 3}));
  vulkan::VulkanPartitioner part;
  EXPECT_TRUE(part.claim(o.g).empty());
}

}  // namespace
}  // namespace ember
