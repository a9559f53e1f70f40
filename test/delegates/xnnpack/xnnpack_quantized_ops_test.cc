// Quantized operators on XNNPACK against the portable kernels: one-op graphs in PT2E's Q/DQ form
// (float input -> quantize -> dequantize -> op -> [activation] -> quantize, int8 per-channel
// weights through dequantize_per_channel) exported twice, with the XNNPACK partitioner and
// without, run, and compared on their int8 outputs.
//
// Tolerance, in quantization steps of the int8 output:
//  - exact (0) where both sides select or move integers: quantize at the partition boundary,
//    max pooling, concatenation, clamp between Q/DQ of one quantization;
//  - at most 1 where XNNPACK rounds differently: conv / linear (the float bias becomes an int32
//    bias rounded to a unit of input_scale * weight_scale: up to half a unit of the integer sum
//    off; XNNPACK multiplies the sum by the one fp32 scale input_scale * weight_scale /
//    output_scale where the portable kernel computes sum * (input_scale * weight_scale) + bias
//    and then * (1 / output_scale): the same real value rounded at different points, so only
//    values within float rounding of a .5 boundary round apart), add (fixed-point qs8 add vs
//    PyTorch's float add then quantize: a few percent of values), mul and mean (integer sum times one fp32 scale vs a float
//    mean). The fraction of values one step apart is bounded too (a systematic offset would
//    show up there).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "test/delegates/op_graph.h"

namespace ember {
namespace {

using exporter::Arg;
using testing::ints;
using testing::OpGraph;
using testing::t;

constexpr int64_t kInt8 = static_cast<int64_t>(ScalarType::Int8);

struct QuantGraph : OpGraph {
  // quantize_per_tensor(x) -> int8 [sizes]
  int quantize(int x, double scale, int64_t zp) {
    const std::vector<int64_t> sizes = g.values[x].sizes;
    const int out = node("quantized_decomposed::quantize_per_tensor", "default",
                         {t(x), Arg::real(scale), Arg::integer(zp), Arg::integer(-128), Arg::integer(127),
                          Arg::integer(kInt8)},
                         sizes);
    g.values[out].dtype = ScalarType::Int8;
    return out;
  }
  int dequantize(int q, double scale, int64_t zp) {
    return node("quantized_decomposed::dequantize_per_tensor", "default",
                {t(q), Arg::real(scale), Arg::integer(zp), Arg::integer(-128), Arg::integer(127), Arg::integer(kInt8),
                 Arg::none()},
                g.values[q].sizes);
  }
  int qdq(int x, double scale, int64_t zp) { return dequantize(quantize(x, scale, zp), scale, zp); }
  // An int8 user input (random values over the whole range).
  int int8_input(std::vector<int64_t> sizes) {
    const int v = value("in" + std::to_string(inputs.size()), sizes, exporter::ValueRole::UserInput);
    g.values[v].dtype = ScalarType::Int8;
    g.inputs.push_back(v);
    exporter::NpyArray a;
    a.dtype = ScalarType::Int8;
    a.shape = sizes;
    std::uniform_int_distribution<int> d(-128, 127);
    for (int64_t i = 0; i < numel(sizes); ++i) a.data.push_back(uint8_t(int8_t(d(rng))));
    inputs.push_back(std::move(a));
    return v;
  }
  int typed_constant(const std::string& name, ScalarType dtype, std::vector<int64_t> sizes, std::vector<uint8_t> bytes) {
    exporter::Constant c;
    c.name = name;
    c.dtype = dtype;
    c.sizes = sizes;
    c.data = std::move(bytes);
    g.constants.push_back(c);
    const int v = value(name, sizes, exporter::ValueRole::Constant);
    g.values[v].dtype = dtype;
    g.values[v].constant = static_cast<int>(g.constants.size()) - 1;
    return v;
  }
  // A weight [O, ...] quantized symmetrically per output channel (int8 constant + float32
  // scales), read through dequantize_per_channel as PT2E writes it.
  int qweight(std::vector<int64_t> sizes) {
    const int64_t o = sizes[0], per = numel(sizes) / o;
    std::vector<float> w = random(numel(sizes), -0.5f, 0.5f);
    std::vector<uint8_t> q(w.size());
    std::vector<float> scales(static_cast<size_t>(o));
    for (int64_t c = 0; c < o; ++c) {
      float m = 1e-6f;
      for (int64_t i = 0; i < per; ++i) m = std::max(m, std::fabs(w[size_t(c * per + i)]));
      scales[size_t(c)] = m / 127.0f;
      for (int64_t i = 0; i < per; ++i) {
        q[size_t(c * per + i)] = uint8_t(int8_t(std::nearbyint(w[size_t(c * per + i)] / scales[size_t(c)])));
      }
    }
    const int wq = typed_constant("w" + std::to_string(g.constants.size()), ScalarType::Int8, sizes, q);
    std::vector<uint8_t> sb(scales.size() * 4);
    std::memcpy(sb.data(), scales.data(), sb.size());
    const int sv = typed_constant("s" + std::to_string(g.constants.size()), ScalarType::Float32, {o}, sb);
    return node("quantized_decomposed::dequantize_per_channel", "default",
                {t(wq), t(sv), Arg::none(), Arg::integer(0), Arg::integer(-127), Arg::integer(127), Arg::integer(kInt8),
                 Arg::none()},
                sizes);
  }
};

struct Outcome {
  int max_diff = 0;
  double differing = 0;  // fraction of values that differ
  int64_t count = 0;
};

// Exports `o` with and without the XNNPACK partitioner (every node must be delegated, the
// ember_quantized ops among them), runs both on the graph's inputs and compares the int8
// output 0.
Outcome compare(const QuantGraph& o, std::map<std::string, int>* delegated_ops = nullptr) {
  Outcome r;
  exporter::ExportOptions xo;
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto portable = exporter::export_graph(o.g, exporter::ExportOptions());
  EXPECT_TRUE(portable.ok()) << portable.status();
  auto del = exporter::export_graph(o.g, xo);
  EXPECT_TRUE(del.ok()) << del.status();
  if (!portable.ok() || !del.ok()) return r;
  EXPECT_EQ(del->backends.size(), 1u);
  std::string left;
  for (const auto& [op, n] : del->portable_ops) left += " " + op;
  EXPECT_TRUE(del->portable_ops.empty()) << "left on portable kernels:" << left;
  if (delegated_ops != nullptr && !del->backends.empty()) *delegated_ops = del->backends[0].ops;
  // One partition: a dq -> op -> q chain folds into an int8 op only inside one.
  if (!del->backends.empty()) {
    EXPECT_EQ(del->backends[0].delegates, 1);
  }
  testing::PteRunner a, b;
  EXPECT_EQ(a.load(portable->pte), "");
  EXPECT_EQ(b.load(del->pte), "");
  EXPECT_EQ(a.run(o.inputs), "");
  EXPECT_EQ(b.run(o.inputs), "");
  const exporter::NpyArray want = a.output(0), got = b.output(0);
  EXPECT_EQ(want.dtype, ScalarType::Int8);
  EXPECT_EQ(got.dtype, ScalarType::Int8);
  EXPECT_EQ(got.shape, want.shape);
  if (got.shape != want.shape || got.dtype != want.dtype) return r;
  r.count = want.numel();
  int64_t differ = 0;
  for (int64_t i = 0; i < r.count; ++i) {
    const int d = std::abs(int(got.as<int8_t>()[i]) - int(want.as<int8_t>()[i]));
    r.max_diff = std::max(r.max_diff, d);
    differ += d != 0;
  }
  r.differing = r.count ? double(differ) / double(r.count) : 0;
  return r;
}

struct ConvCase {
  const char* name;
  int64_t c, h, w, o, k, stride, pad_h, pad_w, groups;
  bool bias;
  const char* activation;  // "", "relu", "hardtanh"
};

class QuantizedConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(QuantizedConv, MatchesPortableWithinOneStep) {
  const ConvCase& k = GetParam();
  QuantGraph o;
  const double in_scale = 2.0 / 255, out_scale = 0.5 * std::sqrt(double(k.c / k.groups * k.k * k.k)) / 127;
  const int x = o.qdq(o.input({2, k.c, k.h, k.w}), in_scale, -3);
  const int w = o.qweight({k.o, k.c / k.groups, k.k, k.k});
  const Arg bias = k.bias ? t(o.constant({k.o}, -0.2f, 0.2f)) : Arg::none();
  const int64_t oh = (k.h + 2 * k.pad_h - k.k) / k.stride + 1, ow = (k.w + 2 * k.pad_w - k.k) / k.stride + 1;
  int y = o.node("aten::conv2d", "default",
                 {t(x), t(w), bias, ints({k.stride, k.stride}), ints({k.pad_h, k.pad_w}), ints({1, 1}),
                  Arg::integer(k.groups)},
                 {2, k.o, oh, ow});
  if (std::string(k.activation) == "relu") y = o.node("aten::relu", "default", {t(y)}, {2, k.o, oh, ow});
  if (std::string(k.activation) == "hardtanh") {
    y = o.node("aten::hardtanh", "default", {t(y), Arg::real(-0.25), Arg::real(0.5)}, {2, k.o, oh, ow});
  }
  o.output(o.quantize(y, out_scale, 5));
  std::map<std::string, int> ops;
  const Outcome r = compare(o, &ops);
  EXPECT_EQ(ops["ember_quantized::conv2d.default"], 1);
  EXPECT_LE(r.max_diff, 1);
  EXPECT_LE(r.differing, 0.05);
  std::printf("[qconv %s] %lld values, %.3f%% one step apart\n", k.name, static_cast<long long>(r.count),
              100 * r.differing);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, QuantizedConv,
    ::testing::Values(ConvCase{"regular_3x3_relu", 5, 9, 11, 7, 3, 1, 1, 1, 1, true, "relu"},
                      ConvCase{"strided_padded", 6, 13, 10, 9, 3, 2, 2, 1, 1, true, ""},
                      ConvCase{"no_bias_5x5_hardtanh", 4, 12, 12, 8, 5, 1, 2, 2, 1, false, "hardtanh"},
                      ConvCase{"pointwise_1x1", 16, 7, 7, 24, 1, 1, 0, 0, 1, true, "relu"},
                      ConvCase{"depthwise", 8, 10, 9, 8, 3, 1, 1, 1, 8, true, "relu"},
                      ConvCase{"depthwise_multiplier_strided", 6, 11, 11, 12, 3, 2, 1, 1, 6, true, ""},
                      ConvCase{"grouped", 8, 8, 9, 12, 3, 1, 1, 1, 4, true, ""}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

TEST(QuantizedLinear, MatchesPortableWithinOneStep) {
  for (bool bias : {true, false}) {
    QuantGraph o;
    const int x = o.qdq(o.input({3, 37}), 2.0 / 255, 0);
    const int w = o.qweight({19, 37});
    int y = o.node("aten::linear", "default", {t(x), t(w), bias ? t(o.constant({19}, -0.3f, 0.3f)) : Arg::none()},
                   {3, 19});
    y = o.node("aten::relu", "default", {t(y)}, {3, 19});
    o.output(o.quantize(y, 0.02, -128));
    std::map<std::string, int> ops;
    const Outcome r = compare(o, &ops);
    EXPECT_EQ(ops["ember_quantized::linear.default"], 1);
    EXPECT_LE(r.max_diff, 1);
    EXPECT_LE(r.differing, 0.05);
  }
}

TEST(QuantizedAdd, TwoDequantizedInputsMatchWithinOneStep) {
  for (bool relu : {false, true}) {
    QuantGraph o;
    const std::vector<int64_t> s = {2, 6, 7, 5};
    // Both operands from one input (through a float op), so that the partitioner puts every
    // node in one partition: it groups nodes by their producers.
    const int x = o.node("aten::hardtanh", "default", {t(o.input(s, -3, 3)), Arg::real(-3), Arg::real(3)}, s);
    const int a = o.qdq(x, 2.0 / 255, 4);  // saturates outside [-1, 1]
    const int b = o.qdq(o.node("aten::neg", "default", {t(x)}, s), 6.0 / 255, -10);
    int y = o.node("aten::add", "Tensor", {t(a), t(b), Arg::integer(1)}, s);
    if (relu) y = o.node("aten::relu", "default", {t(y)}, s);
    o.output(o.quantize(y, 8.0 / 255, relu ? -128 : 0));
    const Outcome r = compare(o);
    EXPECT_LE(r.max_diff, 1);
    EXPECT_LE(r.differing, 0.1);  // measured 4.0%: fixed-point vs float
    std::printf("[qadd relu=%d] %.3f%% one step apart\n", relu, 100 * r.differing);
  }
}

TEST(QuantizedMul, TwoDequantizedInputsMatchWithinOneStep) {
  QuantGraph o;
  const std::vector<int64_t> s = {3, 4, 9};
  const int x = o.node("aten::hardtanh", "default", {t(o.input(s, -2, 2)), Arg::real(-2), Arg::real(2)}, s);
  const int a = o.qdq(x, 2.0 / 255, -6);
  const int b = o.qdq(o.node("aten::neg", "default", {t(x)}, s), 4.0 / 255, 3);
  const int y = o.node("aten::mul", "Tensor", {t(a), t(b)}, s);
  o.output(o.quantize(y, 2.0 / 127, 0));
  std::map<std::string, int> ops;
  const Outcome r = compare(o, &ops);
  EXPECT_EQ(ops["aten::mul.Tensor"], 1);
  EXPECT_LE(r.max_diff, 1);
  EXPECT_LE(r.differing, 0.1);
  std::printf("[qmul] %.3f%% one step apart\n", 100 * r.differing);
}

// Ops that only select or move values between Q/DQ of one quantization: exact.
TEST(QuantizedSelect, MaxPoolConcatFlattenClampAreExact) {
  const double s = 2.0 / 255;
  {
    QuantGraph o;
    const int x = o.qdq(o.input({1, 5, 9, 8}), s, 7);
    const int y = o.node("aten::max_pool2d", "default",
                         {t(x), ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({1, 1}), Arg::boolean(false)},
                         {1, 5, 5, 4});
    o.output(o.quantize(y, s, 7));
    const Outcome r = compare(o);
    EXPECT_EQ(r.max_diff, 0);
  }
  {
    QuantGraph o;
    const int x = o.node("aten::relu", "default", {t(o.input({1, 3, 4, 5}))}, {1, 3, 4, 5});
    const int a = o.qdq(x, s, 7);
    const int b = o.qdq(o.node("aten::neg", "default", {t(x)}, {1, 3, 4, 5}), s, 7);
    const int y = o.node("aten::cat", "default", {Arg::tensor_list({a, b}), Arg::integer(1)}, {1, 6, 4, 5});
    o.output(o.quantize(y, s, 7));
    EXPECT_EQ(compare(o).max_diff, 0);
  }
  {
    QuantGraph o;
    const int x = o.qdq(o.input({2, 3, 4, 5}), s, 11);
    const int y = o.node("aten::flatten", "using_ints", {t(x), Arg::integer(1), Arg::integer(-1)}, {2, 60});
    o.output(o.quantize(y, s, 11));
    std::map<std::string, int> ops;
    EXPECT_EQ(compare(o, &ops).max_diff, 0);
    EXPECT_EQ(ops["aten::flatten.using_ints"], 1);
  }
  {
    QuantGraph o;
    const int x = o.qdq(o.input({4, 33}), s, -20);
    const int y = o.node("aten::hardtanh", "default", {t(x), Arg::real(-0.5), Arg::real(0.25)}, {4, 33});
    o.output(o.quantize(y, s, -20));
    EXPECT_EQ(compare(o).max_diff, 0);
  }
}

// Global average pooling (adaptive_avg_pool2d to 1x1, mean over H, W) as XNNPACK's qs8 mean.
TEST(QuantizedMean, GlobalAveragePoolingWithinOneStep) {
  for (bool adaptive : {true, false}) {
    QuantGraph o;
    const int x = o.qdq(o.input({2, 16, 7, 7}, 0, 2), 2.0 / 255, -128);
    const int y = adaptive ? o.node("aten::adaptive_avg_pool2d", "default", {t(x), ints({1, 1})}, {2, 16, 1, 1})
                           : o.node("aten::mean", "dim", {t(x), ints({2, 3}), Arg::boolean(true), Arg::none()},
                                    {2, 16, 1, 1});
    o.output(o.quantize(y, 1.0 / 255, -100));
    const Outcome r = compare(o);
    EXPECT_LE(r.max_diff, 1);
    EXPECT_LE(r.differing, 0.1);
  }
}

// Quantize and dequantize at the partition boundary are XNNPACK Convert nodes: exact.
TEST(QuantizedBoundary, ConvertsAreExact) {
  QuantGraph o;
  const double s = 0.0123;
  o.output(o.quantize(o.input({3, 5, 7, 9}, -2, 2), s, -7));
  EXPECT_EQ(compare(o).max_diff, 0);
}

// Float ops without an int8 kernel (average pooling with a window) stay float inside the
// partition between Convert nodes. The mean of 4 values on one quantization grid is a
// half-step tie one time in four; the portable quantize multiplies by float(1 / scale)
// (computed in double), XNNPACK's by 1.0f / float(scale): one ulp apart at times, enough to
// send a tie to the other neighbour (measured 11% of the values here, never more than a step).
TEST(QuantizedBoundary, FloatOpBetweenConvertsWithinOneStep) {
  QuantGraph o;
  const double s = 2.0 / 255;
  const int x = o.qdq(o.input({1, 4, 8, 8}), s, 3);
  const int y = o.node("aten::avg_pool2d", "default",
                       {t(x), ints({2, 2}), ints({2, 2}), ints({0, 0}), Arg::boolean(false), Arg::boolean(true),
                        Arg::none()},
                       {1, 4, 4, 4});
  o.output(o.quantize(y, s, 3));
  std::map<std::string, int> ops;
  const Outcome r = compare(o, &ops);
  EXPECT_LE(r.max_diff, 1);
  EXPECT_LE(r.differing, 0.25);
  EXPECT_EQ(ops["aten::avg_pool2d.default"], 1);
}

// An int8 program input and output: the delegate's arguments are int8 NCHW tensors,
// transposed to and from NHWC at the partition boundary.
TEST(QuantizedBoundary, Int8DelegateInputsAndOutputs) {
  QuantGraph o;
  const int x = o.dequantize(o.int8_input({2, 6, 5, 7}), 0.03, 9);
  const int y = o.node("aten::conv2d", "default",
                       {t(x), t(o.qweight({10, 6, 3, 3})), t(o.constant({10}, -0.1f, 0.1f)), ints({1, 1}),
                        ints({1, 1}), ints({1, 1}), Arg::integer(1)},
                       {2, 10, 5, 7});
  o.output(o.quantize(y, 0.25, -2));
  std::map<std::string, int> ops;
  const Outcome r = compare(o, &ops);
  EXPECT_EQ(ops["ember_quantized::conv2d.default"], 1);
  EXPECT_LE(r.max_diff, 1);
  EXPECT_LE(r.differing, 0.05);
}

// conv -> conv -> residual add -> linear head: the chain a quantized CNN is made of, in one
// partition (int8 between the layers, float only at the ends).
TEST(QuantizedChain, ConvResidualAddPoolLinear) {
  QuantGraph o;
  const double s0 = 2.0 / 255, s1 = 0.05, s2 = 0.08;
  const int x = o.qdq(o.input({1, 8, 10, 10}), s0, 0);
  const int c1 = o.node("aten::conv2d", "default",
                        {t(x), t(o.qweight({8, 8, 3, 3})), t(o.constant({8}, -0.1f, 0.1f)), ints({1, 1}), ints({1, 1}),
                         ints({1, 1}), Arg::integer(1)},
                        {1, 8, 10, 10});
  const int r1 = o.node("aten::relu", "default", {t(c1)}, {1, 8, 10, 10});
  const int q1 = o.dequantize(o.quantize(r1, s1, -128), s1, -128);
  const int sum = o.node("aten::add", "Tensor", {t(q1), t(x), Arg::integer(1)}, {1, 8, 10, 10});
  const int q2 = o.dequantize(o.quantize(sum, s2, -20), s2, -20);
  const int pooled = o.node("aten::adaptive_avg_pool2d", "default", {t(q2), ints({1, 1})}, {1, 8, 1, 1});
  const int q3 = o.dequantize(o.quantize(pooled, s2, -20), s2, -20);
  const int flat = o.node("aten::flatten", "using_ints", {t(q3), Arg::integer(1), Arg::integer(-1)}, {1, 8});
  const int q4 = o.dequantize(o.quantize(flat, s2, -20), s2, -20);
  const int lin = o.node("aten::linear", "default", {t(q4), t(o.qweight({5, 8})), Arg::none()}, {1, 5});
  o.output(o.quantize(lin, 0.03, 0));
  std::map<std::string, int> ops;
  const Outcome r = compare(o, &ops);
  EXPECT_EQ(ops["ember_quantized::conv2d.default"], 1);
  EXPECT_EQ(ops["ember_quantized::linear.default"], 1);
  EXPECT_LE(r.max_diff, 2);  // two requantizing layers in a row: one step each
}

}  // namespace
}  // namespace ember
