// Start-up work on the thread pool (third_party/xnnpack/patches/0004): XNNPACK builds the
// convolutions' indirection buffers and zero-fills its workspace in tasks over the delegate's
// pool at init. A tile or row range split wrongly would leave pointers aimed at the wrong
// pixels or at nothing; these graphs are large enough that every convolution's buffer is
// split into several tasks over 4 threads, and their outputs must match the naive reference
// and the one-thread run bit for bit (each output's sum runs in the same order either way).
#include <gtest/gtest.h>

#include <cstring>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

std::vector<size_t> nhwc(const std::vector<int64_t>& nchw) {
  return {size_t(nchw[0]), size_t(nchw[2]), size_t(nchw[3]), size_t(nchw[1])};
}

struct ConvStep {
  int64_t out_channels, kernel, stride, pad, groups;  // groups == in channels: depthwise
};

// Runs the chain of convolutions on `x` with `threads` threads; `threads_used` gets the
// delegate's thread count.
std::vector<float> run_chain(const std::vector<ConvStep>& steps, const std::vector<std::vector<float>>& weights,
                             const std::vector<std::vector<float>>& biases, const std::vector<int64_t>& xs,
                             const std::vector<float>& x, const std::vector<int64_t>& ys, uint8_t threads,
                             size_t* threads_used) {
  XnnBlobBuilder b;
  uint32_t v = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  int64_t channels = xs[1];
  for (size_t i = 0; i < steps.size(); ++i) {
    const ConvStep& s = steps[i];
    XnnNodeParams p;
    p.padding = {{uint32_t(s.pad), uint32_t(s.pad), uint32_t(s.pad), uint32_t(s.pad)}};
    p.stride = {{uint32_t(s.stride), uint32_t(s.stride)}};
    v = b.conv2d_from_oihw(v, weights[i].data(), size_t(s.out_channels), size_t(channels / s.groups),
                           size_t(s.kernel), size_t(s.kernel), biases[i].data(), p, uint32_t(s.groups));
    channels = s.out_channels;
  }
  b.mark_output(v, fb::Layout::NchwToNhwc);
  EXPECT_TRUE(b.ok()) << b.error();
  Runner r(64 << 20);
  Error err = r.init(b.build(), {{"num_threads", {threads, 0, 0, 0}}});
  EXPECT_EQ(err, Error::Ok) << r.message();
  if (err != Error::Ok) return {};
  *threads_used = r.stats().num_threads;
  HostTensor in(xs);
  in.fill(x);
  HostTensor out(ys);
  err = r.run({&in, &out});
  EXPECT_EQ(err, Error::Ok) << r.message();
  EXPECT_TRUE(in.guards_intact());
  EXPECT_TRUE(out.guards_intact());
  return out.values();
}

TEST(XnnpackPoolInit, SplitIndirectionBuffersMatchReferenceAndOneThread) {
  // A ResNet-like 7x7 stride-2 stem (49 pointers per output pixel), a dense 3x3, depthwise
  // 3x3 and 5x5 (row-range indirection), and a 7x7 stride-2 convolution of 24 channels.
  const std::vector<int64_t> xs = {1, 3, 160, 160};
  const std::vector<ConvStep> steps = {
      {24, 7, 2, 3, 1}, {24, 3, 1, 1, 1}, {24, 3, 1, 1, 24}, {24, 5, 2, 2, 24}, {8, 7, 2, 3, 1}};
  std::mt19937 rng(7);
  std::vector<float> x = random_vector(size_t(xs[0] * xs[1] * xs[2] * xs[3]), rng);
  std::vector<std::vector<float>> weights, biases;
  std::vector<float> expected = x;
  std::vector<int64_t> sizes = xs;
  for (const ConvStep& s : steps) {
    const std::vector<int64_t> ws = {s.out_channels, sizes[1] / s.groups, s.kernel, s.kernel};
    weights.push_back(random_vector(size_t(ws[0] * ws[1] * ws[2] * ws[3]), rng, -0.3f, 0.3f));
    biases.push_back(random_vector(size_t(s.out_channels), rng));
    Conv2dArgs a;
    a.stride[0] = a.stride[1] = s.stride;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = s.pad;
    a.groups = s.groups;
    std::vector<int64_t> out_sizes;
    expected = ref_conv2d(expected, sizes, weights.back(), ws, biases.back().data(), a, &out_sizes);
    sizes = out_sizes;
  }
  ASSERT_EQ(sizes, (std::vector<int64_t>{1, 8, 20, 20}));

  size_t four = 0, one = 0;
  const std::vector<float> pooled = run_chain(steps, weights, biases, xs, x, sizes, 4, &four);
  const std::vector<float> single = run_chain(steps, weights, biases, xs, x, sizes, 1, &one);
  ASSERT_EQ(four, 4u) << "the graph must be worth 4 threads, or the split path is not tested";
  ASSERT_EQ(one, 1u);
  EXPECT_LT(max_error(pooled, expected), 1e-4);
  ASSERT_EQ(pooled.size(), single.size());
  EXPECT_EQ(std::memcmp(pooled.data(), single.data(), pooled.size() * sizeof(float)), 0)
      << "4 threads and 1 thread differ";
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
