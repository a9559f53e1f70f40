// Attention without a cache in one dispatch (Sdpa nodes, sdpa.comp) and the layouts folded into
// it (runtime/dispatch_fusion.h: lazy_layout, sdpa_permute; runtime/strided_view.h):
//   - the strides of reshaped views, against hand-worked cases (no device needed);
//   - sdpa.comp against a double loop, with and without broadcast masks, keys and values of
//     another length and width than the queries;
//   - a ViT encoder's attention (one qkv linear, its split into q, k, v by view / permute /
//     select, heads moved in front of the tokens, the output permuted back, the out projection
//     and the residual add): fused it is three dispatches (qkv, attention, out projection with
//     the add in its epilogue) and equals the unfused graph and a double-loop reference.
// Skips the device cases without a Vulkan device (lavapipe in CI).
#include <cmath>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/strided_view.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

TEST(StridedViewTest, ReshapedStrides) {
  std::vector<int64_t> st;
  // Contiguous [2, 3, 4] as [6, 4] and [2, 12] and [24].
  ASSERT_TRUE(reshaped_strides({2, 3, 4}, {12, 4, 1}, {6, 4}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{4, 1}));
  ASSERT_TRUE(reshaped_strides({2, 3, 4}, {12, 4, 1}, {24}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{1}));
  // A transposed [3, 4] (strides 1, 3): its last dim split is fine, merging both is not.
  ASSERT_TRUE(reshaped_strides({3, 4}, {1, 3}, {3, 2, 2}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{1, 6, 3}));
  EXPECT_FALSE(reshaped_strides({3, 4}, {1, 3}, {12}, &st));
  // Size-1 dims come and go with any stride: [197, 1, 192] (row stride 576, a qkv slice) as
  // [197, 3, 64] and as [1, 197, 192].
  ASSERT_TRUE(reshaped_strides({197, 1, 192}, {576, 99, 1}, {197, 3, 64}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{576, 64, 1}));
  ASSERT_TRUE(reshaped_strides({197, 1, 192}, {576, 99, 1}, {1, 197, 192}, &st));
  EXPECT_EQ(st[1], 576);
  EXPECT_EQ(st[2], 1);
  EXPECT_FALSE(reshaped_strides({2, 3}, {3, 1}, {7}, &st));  // element counts differ
  EXPECT_EQ(permuted_strides({12, 4, 1}, {2, 0, 1}), (std::vector<int64_t>{1, 12, 4}));
}

// y[b, h, l, :] = softmax(q[b, h, l] . k[b, h, j] * scale + mask[b, h, l, j]) . v[b, h, j, :].
Floats reference_sdpa(const Floats& q, const Floats& k, const Floats& v, const Floats* mask, const Sizes& ms, int64_t B,
                      int64_t H, int64_t L, int64_t S, int64_t E, int64_t EV, double scale) {
  Floats y(static_cast<size_t>(B * H * L * EV));
  const Sizes scores{B, H, L, S};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> s(static_cast<size_t>(S));
        double m = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < E; ++e) acc += double(q[((b * H + h) * L + l) * E + e]) * k[((b * H + h) * S + j) * E + e];
          acc *= scale;
          if (mask != nullptr) acc += (*mask)[broadcast_index(scores, ((b * H + h) * L + l) * S + j, ms)];
          s[j] = acc;
          m = std::max(m, acc);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int64_t e = 0; e < EV; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += s[j] * v[((b * H + h) * S + j) * EV + e];
          y[((b * H + h) * L + l) * EV + e] = static_cast<float>(acc / sum);
        }
      }
  return y;
}

TEST(VulkanSdpaTest, MatchesReferenceWithAndWithoutMasks) {
  EMBER_SKIP_WITHOUT_VULKAN();
  // S, EV > 64: each invocation takes two keys of a row and two of its outputs.
  const int64_t B = 2, H = 3, L = 17, S = 71, E = 8, EV = 70;
  const Floats q = random_floats(B * H * L * E, 1), k = random_floats(B * H * S * E, 2), v = random_floats(B * H * S * EV, 3);
  const std::vector<Sizes> masks = {{}, {L, S}, {B, 1, 1, S}, {1, H, L, 1}};
  for (const Sizes& ms : masks) {
    VulkanBlobBuilder b;
    const int qi = b.input({B, H, L, E}), ki = b.input({B, H, S, E}), vi = b.input({B, H, S, EV});
    const Floats mask = random_floats(ms.empty() ? 0 : numel(ms), 4, -2.0f, 2.0f);
    const int mi = ms.empty() ? -1 : b.input(ms);
    const int y = b.sdpa(qi, ki, vi, mi, 0.3f);
    ASSERT_GE(y, 0) << b.error();
    b.output(y);
    std::vector<HostTensor> ins{HostTensor::f32({B, H, L, E}, q), HostTensor::f32({B, H, S, E}, k),
                                HostTensor::f32({B, H, S, EV}, v)};
    if (mi >= 0) ins.push_back(HostTensor::f32(ms, mask));
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, ins, {y}, &out)) << sizes_str(ms);
    const Floats want = reference_sdpa(q, k, v, mi >= 0 ? &mask : nullptr, ms, B, H, L, S, E, EV, 0.3);
    EXPECT_TRUE(near(out[0], want, 2e-5f)) << "mask " << sizes_str(ms);
  }
}

// torchvision's ViT attention as torch.export writes it (batch-first MHA, 1 image of T tokens,
// H heads of D): x [1, T, C] -> transpose to [T, 1, C] -> qkv linear [T, 1, 3C] -> view
// [T, 1, 3, C] -> unsqueeze [1, T, 1, 3, C] -> permute to [3, T, 1, 1, C] -> view [3, T, 1, C]
// -> select q / k / v [T, 1, C] -> view [T, H, D] -> transpose [H, T, D] -> view [1, H, T, D]
// -> attention -> permute [T, 1, H, D] -> view [T, C] -> out projection -> view [T, 1, C] ->
// transpose [1, T, C] -> + x.
TEST(VulkanSdpaTest, VitAttentionFoldsItsLayouts) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const int64_t T = 20, H = 3, D = 8, C = H * D;  // >= 16 rows: the linears take the GEMM path
  const Floats x = random_floats(T * C, 10), wqkv = random_floats(3 * C * C, 11, -0.3f, 0.3f),
               bqkv = random_floats(3 * C, 12), wo = random_floats(C * C, 13, -0.3f, 0.3f), bo = random_floats(C, 14);
  VulkanBlobBuilder b;
  const int xi = b.input({1, T, C});
  const int xt = b.permute(xi, {1, 0, 2});
  const int qkv = b.linear(xt, b.constant({3 * C, C}, wqkv), b.constant({3 * C}, bqkv));
  const int split = b.view(b.permute(b.view(b.view(qkv, {T, 1, 3, C}), {1, T, 1, 3, C}), {3, 1, 2, 0, 4}), {3, T, 1, C});
  int heads[3];
  for (int i = 0; i < 3; ++i) {
    const int sel = b.view(b.slice(split, 0, i, i + 1), {T, 1, C});
    heads[i] = b.view(b.permute(b.view(sel, {T, H, D}), {1, 0, 2}), {1, H, T, D});
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const int att = b.sdpa(heads[0], heads[1], heads[2], -1, static_cast<float>(scale));
  const int merged = b.view(b.permute(att, {2, 0, 1, 3}), {T, C});
  const int proj = b.linear(merged, b.constant({C, C}, wo), b.constant({C}, bo));
  const int y = b.binary(VkBinary::Add, b.permute(b.view(proj, {T, 1, C}), {1, 0, 2}), xi);
  ASSERT_GE(y, 0) << b.error();
  b.output(y);

  // The reference: the same arithmetic in double loops.
  Floats qkv_ref(static_cast<size_t>(T * 3 * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < 3 * C; ++o) {
      double acc = bqkv[o];
      for (int64_t c = 0; c < C; ++c) acc += double(x[t * C + c]) * wqkv[o * C + c];
      qkv_ref[t * 3 * C + o] = static_cast<float>(acc);
    }
  Floats qh[3];
  for (int i = 0; i < 3; ++i) {  // [1, H, T, D] from columns i * C + h * D + d
    qh[i].resize(static_cast<size_t>(H * T * D));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) qh[i][(h * T + t) * D + d] = qkv_ref[t * 3 * C + i * C + h * D + d];
  }
  const Floats a = reference_sdpa(qh[0], qh[1], qh[2], nullptr, {}, 1, H, T, T, D, D, scale);
  Floats want(static_cast<size_t>(T * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < C; ++o) {
      double acc = bo[o];
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) acc += double(a[(h * T + t) * D + d]) * wo[o * C + h * D + d];
      want[t * C + o] = static_cast<float>(acc + x[t * C + o]);
    }

  size_t dispatches[2] = {0, 0};
  for (int fuse = 0; fuse < 2; ++fuse) {
    setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
    Delegate del;
    const Error e = del.init(b.build());
    unsetenv("EMBER_VULKAN_FUSE");
    ASSERT_EQ(e, Error::Ok) << del.message();
    dispatches[fuse] = del.graph()->num_dispatches();
    std::vector<HostTensor> ins{HostTensor::f32({1, T, C}, x)};
    std::vector<HostTensor> os{nan_out({1, T, C})};
    ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
    EXPECT_TRUE(near(values(os[0]), want, 2e-5f)) << "fuse " << fuse;
  }
  EXPECT_EQ(dispatches[1], 3u) << "qkv linear, attention, out projection with the residual add";
  // Unfused: the qkv split (1), the selects (3), the head transposes (3), the output permute
  // and the add; the size-1 transposes are aliases either way.
  EXPECT_EQ(dispatches[0], 3u + 9u);
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
