// Multi-op graphs (direct and through a Program/Method with weights in data segments),
// repeated execution, and rejection of corrupt or unsupported blobs.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_graph_generated.h"
#include "runtime/executor/method.h"
#include "test/delegates/vulkan/vulkan_test_util.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

// conv(3->4, 3x3, pad 1) -> relu -> maxpool 2 -> flatten -> linear(4*3*3 -> 5) -> softmax.
struct SmallNet {
  Sizes xs{1, 3, 6, 7};
  Sizes cws{4, 3, 3, 3}, lws{5, 36};
  Floats cw = random_floats(108, 31), cb = random_floats(4, 32), lw = random_floats(180, 33),
         lb = random_floats(5, 34);

  Floats reference(const Floats& x) const {
    Floats conv(4 * 6 * 7);
    for (int oc = 0; oc < 4; ++oc)
      for (int h = 0; h < 6; ++h)
        for (int w = 0; w < 7; ++w) {
          float acc = cb[oc];
          for (int ic = 0; ic < 3; ++ic)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                int ih = h - 1 + kh, iw = w - 1 + kw;
                if (ih < 0 || ih >= 6 || iw < 0 || iw >= 7) continue;
                acc += x[(ic * 6 + ih) * 7 + iw] * cw[((oc * 3 + ic) * 3 + kh) * 3 + kw];
              }
          conv[(oc * 6 + h) * 7 + w] = std::max(acc, 0.0f);
        }
    Floats pooled;
    for (int c = 0; c < 4; ++c)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 3; ++w) {
          float m = -INFINITY;
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) m = std::max(m, conv[(c * 6 + 2 * h + i) * 7 + 2 * w + j]);
          pooled.push_back(m);
        }
    Floats logits(5);
    for (int n = 0; n < 5; ++n) {
      float acc = lb[n];
      for (int k = 0; k < 36; ++k) acc += pooled[k] * lw[n * 36 + k];
      logits[n] = acc;
    }
    float m = *std::max_element(logits.begin(), logits.end()), s = 0;
    for (float& v : logits) s += (v = std::exp(v - m));
    for (float& v : logits) v /= s;
    return logits;
  }

  // Adds the net to `b` reading weights via `weight(sizes, data)`; returns the output id.
  template <typename WeightFn>
  int build(VulkanBlobBuilder& b, WeightFn weight) const {
    int x = b.input(xs);
    int c = b.conv2d(x, weight(cws, cw), weight(Sizes{4}, cb), {1}, {1}, {1}, 1);
    int r = b.unary(VkUnary::Relu, c);
    int p = b.max_pool2d(r, {2}, {2}, {0}, {1}, false);
    int f = b.view(p, {1, -1});
    int l = b.linear(f, weight(lws, lw), weight(Sizes{5}, lb));
    int y = b.softmax(l, -1);
    b.output(y);
    return y;
  }
};

TEST(VulkanGraphTest, BackendIsRegistered) {
  EXPECT_EQ(find_backend("vulkan"), &vulkan_backend());
}

TEST(VulkanGraphTest, SmallNetInlineWeightsRepeated) {
  EMBER_SKIP_WITHOUT_VULKAN();
  SmallNet net;
  VulkanBlobBuilder b;
  int y = net.build(b, [&](const Sizes& s, const Floats& d) { return b.constant(s, d); });
  ASSERT_TRUE(b.ok()) << b.error();
  Delegate d;
  ASSERT_EQ(d.init(b.build()), Error::Ok) << d.message();
  for (uint32_t seed : {40u, 41u, 42u}) {  // the recorded command buffer is reused
    Floats x = random_floats(numel(net.xs), seed);
    std::vector<HostTensor> ins{HostTensor::f32(net.xs, x)};
    std::vector<HostTensor> outs{HostTensor::f32(b.sizes(y), Floats(5, NAN))};
    ASSERT_EQ(d.execute(ins, outs), Error::Ok) << d.message();
    Floats got(5);
    std::memcpy(got.data(), outs[0].bytes.data(), 20);
    EXPECT_TRUE(near(got, net.reference(x)));
  }
}

TEST(VulkanGraphTest, SmallNetThroughMethodWithSegmentWeights) {
  EMBER_SKIP_WITHOUT_VULKAN();
  using ember::testing::Harness;
  using ember::testing::ProgramBuilder;
  using ember::testing::TensorHolder;
  SmallNet net;
  ProgramBuilder pb;
  VulkanBlobBuilder b;
  std::vector<uint8_t> slots;  // kConstantSegmentsSpec: the program segment of each slot
  net.build(b, [&](const Sizes& s, const Floats& data) {
    uint32_t seg = pb.add_segment(data);
    int32_t slot = static_cast<int32_t>(slots.size() / 4);
    for (int k = 0; k < 4; ++k) slots.push_back(static_cast<uint8_t>(seg >> (8 * k)));
    return b.constant_in_slot(s, VkDType::Float32, slot, 0);
  });
  std::vector<uint8_t> blob = b.build();
  ASSERT_FALSE(blob.empty()) << b.error();
  uint32_t blob_seg = pb.add_segment(blob);
  auto& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, net.xs);
  uint32_t y = m.planned_tensor(ScalarType::Float32, {1, 5});
  uint32_t del = m.delegate("vulkan", static_cast<int32_t>(blob_seg), {}, {{kConstantSegmentsSpec, slots}});
  m.delegate_call(del, {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_inputs({x}).set_outputs({y});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  Floats xv = random_floats(numel(net.xs), 50);
  TensorHolder in(ScalarType::Float32, net.xs, xv.data());
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.message();
  const Tensor* out = h.method().output(0).as_tensor;
  Floats got(out->data_as<float>(), out->data_as<float>() + 5);
  EXPECT_TRUE(near(got, net.reference(xv)));
}

// --- corrupt / unsupported blobs ---

std::vector<uint8_t> random_bytes_like(const std::vector<uint8_t>& like) {
  std::vector<uint8_t> r(like.size());
  Floats f = random_floats(like.size(), 77, 0, 256);
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(f[i]);
  return r;
}

std::vector<uint8_t> relu_blob(Sizes in, Sizes out, bool fp16 = false, int node_input = 0) {
  flatbuffers::FlatBufferBuilder f;
  auto t0 = fb::CreateTensor(f, 0, fb::DType::Float32, f.CreateVector(in), fb::TensorKind::Input, 0);
  auto t1 = fb::CreateTensor(f, 1, fb::DType::Float32, f.CreateVector(out), fb::TensorKind::Output, 0);
  auto params = fb::CreateUnaryParams(f, fb::UnaryOp::Relu, 0, INFINITY);
  std::vector<int32_t> ins{node_input};
  std::vector<uint32_t> outs{1};
  auto node = fb::CreateNode(f, fb::Shader::Unary, fb::Params::UnaryParams, params.Union(), f.CreateVector(ins),
                             f.CreateVector(outs));
  std::vector<flatbuffers::Offset<fb::Tensor>> ts{t0, t1};
  std::vector<flatbuffers::Offset<fb::Node>> ns{node};
  auto g = fb::CreateGraph(f, 1, f.CreateVector(ts), f.CreateVector(ns), 1, 1, fb::CreateCompileOptions(f, fp16));
  fb::FinishGraphBuffer(f, g);
  return std::vector<uint8_t>(f.GetBufferPointer(), f.GetBufferPointer() + f.GetSize());
}

TEST(VulkanGraphTest, HandBuiltBlobRuns) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Delegate d;
  ASSERT_EQ(d.init(relu_blob({3}, {3})), Error::Ok) << d.message();
  std::vector<HostTensor> ins{HostTensor::f32({3}, {-1, 2, -3})}, outs{HostTensor::f32({3}, {9, 9, 9})};
  ASSERT_EQ(d.execute(ins, outs), Error::Ok) << d.message();
  Floats got(3);
  std::memcpy(got.data(), outs[0].bytes.data(), 12);
  EXPECT_TRUE(near(got, {0, 2, 0}));
  // Wrong argument count / shape / dtype are errors, not crashes.
  std::vector<HostTensor> none;
  EXPECT_EQ(d.execute(ins, none), Error::InvalidArgument);
  std::vector<HostTensor> bad_in{HostTensor::f32({4}, {1, 2, 3, 4})};
  EXPECT_EQ(d.execute(bad_in, outs), Error::InvalidArgument);
  std::vector<HostTensor> int_in{HostTensor::i32({3}, {1, 2, 3})};
  EXPECT_EQ(d.execute(int_in, outs), Error::InvalidArgument);
}

// EMBER_VULKAN_PROFILE=1: timestamps around every dispatch, summed per execute.
TEST(VulkanGraphTest, ProfilerReportsEveryDispatch) {
  EMBER_SKIP_WITHOUT_VULKAN();
  setenv("EMBER_VULKAN_PROFILE", "1", 1);
  Delegate d;
  Error e = d.init(relu_blob({3}, {3}));
  unsetenv("EMBER_VULKAN_PROFILE");
  ASSERT_EQ(e, Error::Ok) << d.message();
  std::vector<HostTensor> ins{HostTensor::f32({3}, {-1, 2, -3})}, outs{HostTensor::f32({3}, {9, 9, 9})};
  for (int i = 0; i < 2; ++i) ASSERT_EQ(d.execute(ins, outs), Error::Ok) << d.message();
  const std::string report = d.graph()->profile_report();
  if (report.empty()) GTEST_SKIP() << "this device's compute queue has no timestamps";
  EXPECT_NE(report.find("1 dispatches"), std::string::npos) << report;
  EXPECT_NE(report.find("(2 executes)"), std::string::npos) << report;
  EXPECT_NE(report.find("unary("), std::string::npos) << report;  // the slowest-dispatch line
  EXPECT_NE(report.find("from submission to the fence"), std::string::npos) << report;  // the host's times
  Delegate plain;  // without the variable: no profiler, no report
  ASSERT_EQ(plain.init(relu_blob({3}, {3})), Error::Ok);
  ASSERT_EQ(plain.execute(ins, outs), Error::Ok);
  EXPECT_EQ(plain.graph()->profile_report(), "");
}

// EMBER_VULKAN_PROFILE=span: the graph's whole GPU span and the host's times, no per-dispatch lines,
// and the outputs still right.
TEST(VulkanGraphTest, SpanProfileTimesTheWholeGraph) {
  EMBER_SKIP_WITHOUT_VULKAN();
  setenv("EMBER_VULKAN_PROFILE", "span", 1);
  Delegate d;
  Error e = d.init(relu_blob({3}, {3}));
  unsetenv("EMBER_VULKAN_PROFILE");
  ASSERT_EQ(e, Error::Ok) << d.message();
  std::vector<HostTensor> ins{HostTensor::f32({3}, {-1, 2, -3})}, outs{HostTensor::f32({3}, {9, 9, 9})};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(d.execute(ins, outs), Error::Ok) << d.message();
  EXPECT_EQ(values(outs[0]), (Floats{0, 2, 0}));
  const std::string report = d.graph()->profile_report();
  if (report.empty()) GTEST_SKIP() << "this device's compute queue has no timestamps";
  EXPECT_EQ(report.rfind("ember vulkan span: 1 dispatches", 0), 0u) << report;
  EXPECT_NE(report.find("(3 executes)"), std::string::npos) << report;
  EXPECT_EQ(report.find("unary("), std::string::npos) << report;
  // The medians line: the GPU's span and its copies, the host's parts.
  EXPECT_NE(report.find("ember vulkan span medians per execute: GPU "), std::string::npos) << report;
  EXPECT_NE(report.find("before it: inputs"), std::string::npos) << report;
  EXPECT_NE(report.find("from submission to the fence"), std::string::npos) << report;
}

TEST(VulkanGraphTest, CorruptBlobsAreRejected) {
  EMBER_SKIP_WITHOUT_VULKAN();
  std::vector<uint8_t> good = relu_blob({3}, {3});
  {
    Delegate d;
    EXPECT_EQ(d.init(std::vector<uint8_t>()), Error::InvalidProgram);
  }
  {
    Delegate d;
    EXPECT_EQ(d.init(random_bytes_like(good)), Error::InvalidProgram) << d.message();
  }
  for (size_t cut : {size_t(8), good.size() / 2, good.size() - 4}) {
    Delegate d;
    std::vector<uint8_t> t(good.begin(), good.begin() + cut);
    EXPECT_EQ(d.init(t), Error::InvalidProgram) << "cut at " << cut;
  }
  {
    Delegate d;
    std::vector<uint8_t> wrong_id = good;
    wrong_id[4] = 'X';
    EXPECT_EQ(d.init(wrong_id), Error::InvalidProgram);
  }
  {
    Delegate d;  // output shape inconsistent with the op
    EXPECT_EQ(d.init(relu_blob({3}, {4})), Error::InvalidProgram);
    EXPECT_NE(std::string(d.message()).find("expected"), std::string::npos) << d.message();
  }
  {
    Delegate d;  // node reads its own (not yet produced) output
    EXPECT_EQ(d.init(relu_blob({3}, {3}, false, 1)), Error::InvalidProgram) << d.message();
  }
  {
    Delegate d;  // tensor id out of range
    EXPECT_EQ(d.init(relu_blob({3}, {3}, false, 7)), Error::InvalidProgram) << d.message();
  }
  {
    Delegate d;  // an fp16 blob on a device without 16-bit storage: NotSupported, not a crash
    set_hide_fp16_features(true);
    EXPECT_EQ(d.init(relu_blob({3}, {3}, true)), Error::NotSupported);
    set_hide_fp16_features(false);
    EXPECT_NE(std::string(d.message()).find("re-export without --vulkan-fp16"), std::string::npos) << d.message();
  }
  {
    VulkanBlobBuilder b;  // weights in a constant slot, but no program
    int y = b.linear(b.input({1, 2}), b.constant_in_slot({2, 2}, VkDType::Float32, 0, 0), -1);
    b.output(y);
    Delegate d;
    EXPECT_EQ(d.init(b.build()), Error::InvalidProgram) << d.message();
  }
}

TEST(VulkanGraphTest, BuilderRejectsBadGraphs) {
  VulkanBlobBuilder b;
  int x = b.input({2, 3});
  EXPECT_EQ(b.linear(x, b.constant({4, 5}, Floats(20)), -1), -1);
  EXPECT_FALSE(b.ok());
  EXPECT_TRUE(b.build().empty());
  VulkanBlobBuilder c;
  int in = c.input({2});
  c.output(in);  // an input cannot be an output without a copy
  EXPECT_FALSE(c.ok());
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
