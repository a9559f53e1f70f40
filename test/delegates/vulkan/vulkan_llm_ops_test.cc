// The Vulkan delegate's LLM decoder ops (RMSNorm, RoPE, SiluMul, KV-cache attention over State
// tensors) and dynamic sizes (variants per size, LRU eviction, argument checks), against naive
// double-precision reference loops written here (semantics: kernels/optimized/llm_kernels.cc).
// fp32 and fp16 storage; skipped without a Vulkan device (fp16: without 16-bit storage).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_fp16.h"
#include "test/delegates/vulkan/vulkan_runner.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

// --- references (double precision) ---

Floats rms_norm_ref(const Floats& x, int64_t cols, const Floats& w, double eps) {
  Floats y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>(x[r * cols + c] * inv * w[c]);
  }
  return y;
}

// x [..., T, D]; cos/sin rows [tc, D] (tc = T or 1).
Floats rope_ref(const Floats& x, const Sizes& xs, const Floats& cos, const Floats& sin, int64_t tc) {
  const int64_t D = xs.back(), T = xs[xs.size() - 2], half = D / 2;
  Floats y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const int64_t d = i % D, row = tc == 1 ? 0 : (i / D) % T;
    const double rot = d < half ? -static_cast<double>(x[i + half]) : x[i - half];
    y[i] = static_cast<float>(static_cast<double>(x[i]) * cos[row * D + d] + rot * sin[row * D + d]);
  }
  return y;
}

// A KV cache of its own: write rows t at pos[t], then query row t attends to rows 0..pos[t];
// query head h reads kv head h / (H / Hkv).
struct KvRef {
  int64_t B, H, Hkv, S, D;
  double scale;
  Floats k0, v0;  // initial caches (B, Hkv, S, D)
  std::vector<double> k, v;
  void reset() {
    k.assign(k0.begin(), k0.end());
    v.assign(v0.begin(), v0.end());
  }
  Floats step(const Floats& q, const Floats& kn, const Floats& vn, const std::vector<int64_t>& pos) {
    const int64_t T = static_cast<int64_t>(pos.size());
    for (int64_t bg = 0; bg < B * Hkv; ++bg)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) {
          k[(bg * S + pos[t]) * D + d] = kn[(bg * T + t) * D + d];
          v[(bg * S + pos[t]) * D + d] = vn[(bg * T + t) * D + d];
        }
    Floats out(static_cast<size_t>(B * H * T * D));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const int64_t cache = (b * Hkv + h / (H / Hkv)) * S * D, row = ((b * H + h) * T + t) * D;
          std::vector<double> p(static_cast<size_t>(pos[t] + 1));
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j <= pos[t]; ++j) {
            double s = 0;
            for (int64_t d = 0; d < D; ++d) s += q[row + d] * k[cache + j * D + d];
            p[j] = s * scale;
            mx = std::max(mx, p[j]);
          }
          for (double& e : p) sum += (e = std::exp(e - mx));
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t j = 0; j <= pos[t]; ++j) acc += p[j] * v[cache + j * D + d];
            out[row + d] = static_cast<float>(acc / sum);
          }
        }
    return out;
  }
};

// --- RMSNorm ---

void check_rms_norm(bool fp16) {
  struct Case { Sizes xs; float eps; float scale; };
  // cols < 64: one invocation per row; cols >= 64: a workgroup per row (256 invocations from
  // 1024 columns). Small inputs with a large eps make eps matter; inputs with a nonzero mean
  // catch a subtracted mean.
  for (const Case& c : {Case{{3, 5, 7}, 1e-6f, 1}, Case{{1, 63}, 1e-5f, 1}, Case{{4, 9}, 1e-3f, 0.02f},
                        Case{{2, 3, 64}, 1e-6f, 1}, Case{{5, 100}, 1e-5f, 1}, Case{{3, 129}, 1e-6f, 1},
                        Case{{2, 200}, 1e-3f, 0.02f}, Case{{1, 2048}, 1e-5f, 1}, Case{{3, 1100}, 1e-3f, 0.02f}}) {
    const int64_t cols = c.xs.back();
    Floats x = random_floats(static_cast<size_t>(numel(c.xs)), 11 + static_cast<uint32_t>(cols), -0.5f * c.scale,
                             1.5f * c.scale);
    Floats w = random_floats(static_cast<size_t>(cols), 12, 0.5f, 2.0f);
    VulkanBlobBuilder b;
    int y = b.rms_norm(b.input(c.xs), b.constant({cols}, w), c.eps);
    b.output(y);
    b.set_fp16(fp16);
    Floats got;
    ASSERT_TRUE(run1(b, {HostTensor::f32(c.xs, x)}, y, &got)) << sizes_str(c.xs);
    EXPECT_EQ(b.sizes(y), c.xs);
    EXPECT_TRUE(near(got, rms_norm_ref(x, cols, w, c.eps), fp16 ? kTol16 : kTol32))
        << sizes_str(c.xs) << " eps " << c.eps;
    if (fp16) {
      EXPECT_TRUE(all_fp16(got)) << sizes_str(c.xs);
    }
  }
}

TEST(VulkanLlmOpsTest, RmsNormRowAndCooperativePaths) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_rms_norm(false);
}

// --- RoPE ---

void check_rope(bool fp16) {
  struct Case { Sizes xs, cs; };
  for (const Case& c : {Case{{1, 1, 5, 8}, {1, 1, 5, 8}}, Case{{1, 3, 5, 8}, {1, 1, 1, 8}},
                        Case{{1, 4, 7, 10}, {7, 10}}, Case{{2, 4, 3, 2}, {1, 1, 3, 2}},
                        Case{{4, 6, 16}, {1, 16}}, Case{{6, 12}, {6, 12}}, Case{{1, 2, 1, 64}, {1, 1, 1, 64}}}) {
    const int64_t tc = c.cs[c.cs.size() - 2];
    const uint32_t seed = static_cast<uint32_t>(numel(c.xs));
    Floats x = random_floats(static_cast<size_t>(numel(c.xs)), seed, -2, 2);
    Floats cs = random_floats(static_cast<size_t>(numel(c.cs)), seed + 1), sn = random_floats(static_cast<size_t>(numel(c.cs)), seed + 2);
    VulkanBlobBuilder b;
    const int xi = b.input(c.xs), ci = b.input(c.cs);  // inputs 0, 1 (argument order is unspecified)
    int y = b.rope(xi, ci, b.constant(c.cs, sn));  // cos an input, sin a weight
    b.output(y);
    b.set_fp16(fp16);
    Floats got;
    ASSERT_TRUE(run1(b, {HostTensor::f32(c.xs, x), HostTensor::f32(c.cs, cs)}, y, &got)) << sizes_str(c.xs);
    EXPECT_TRUE(near(got, rope_ref(x, c.xs, cs, sn, tc), fp16 ? kTol16 : kTol32))
        << sizes_str(c.xs) << " cos " << sizes_str(c.cs);
    if (fp16) {
      EXPECT_TRUE(all_fp16(got)) << sizes_str(c.xs);
    }
  }
}

TEST(VulkanLlmOpsTest, RopeFullAndSingleRowCosSin) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_rope(false);
}

// --- SiluMul ---

TEST(VulkanLlmOpsTest, SiluMulIsSiluOfATimesB) {
  EMBER_SKIP_WITHOUT_VULKAN();
  for (const Sizes& bs : {Sizes{3, 17}, Sizes{2, 5, 64}, Sizes{17}}) {  // the last: b broadcast
    const Sizes as = bs.size() == 1 ? Sizes{3, 17} : bs;
    Floats a = random_floats(static_cast<size_t>(numel(as)), 21, -8, 8);
    Floats bv = random_floats(static_cast<size_t>(numel(bs)), 22, -2, 2);
    VulkanBlobBuilder b;
    const int ai = b.input(as), bi = b.input(bs);
    int y = b.binary(VkBinary::SiluMul, ai, bi);
    b.output(y);
    Floats got;
    ASSERT_TRUE(run1(b, {HostTensor::f32(as, a), HostTensor::f32(bs, bv)}, y, &got));
    Floats want(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const double s = a[i] / (1.0 + std::exp(-static_cast<double>(a[i])));
      want[i] = static_cast<float>(s * bv[static_cast<size_t>(broadcast_index(as, static_cast<int64_t>(i), bs))]);
    }
    EXPECT_TRUE(near(got, want, kTol32)) << sizes_str(as) << " * " << sizes_str(bs);
  }
}

// --- KV-cache attention ---

struct AttnCase {
  int64_t B, H, Hkv, T, S, D;  // T: the bound of the dynamic size
  float scale;
  bool pos64;
};

// q/k/v/pos/out dynamic in T; caches State tensors with random initial values; two state
// outputs (the program's cache copies, left alone).
void check_kv_attention(const AttnCase& c, bool fp16) {
  SCOPED_TRACE("H " + std::to_string(c.H) + " Hkv " + std::to_string(c.Hkv) + (fp16 ? " fp16" : " fp32"));
  const Sizes cache{c.B, c.Hkv, c.S, c.D};
  KvRef ref{c.B, c.H, c.Hkv, c.S, c.D, c.scale, random_floats(static_cast<size_t>(numel(cache)), 31, -1, 1),
            random_floats(static_cast<size_t>(numel(cache)), 32, -1, 1), {}, {}};
  ref.reset();
  VulkanBlobBuilder b;
  const int q = b.input({c.B, c.H, c.T, c.D}), k = b.input({c.B, c.Hkv, c.T, c.D}),
            v = b.input({c.B, c.Hkv, c.T, c.D}), pos = b.input({c.T}, c.pos64 ? VkDType::Int64 : VkDType::Int32);
  const int y = b.attention(q, k, v, b.state(cache, ref.k0), b.state(cache, ref.v0), pos, c.scale);
  b.output(y);
  b.state_output();
  b.state_output();
  for (int id : {q, k, v, y}) b.set_dynamic(id, {2});
  b.set_dynamic(pos, {0});
  b.set_fp16(fp16);
  Runner r;
  ASSERT_TRUE(r.init(b));
  EXPECT_EQ(r.graph().dynamic_bound(), c.T);
  uint32_t seed = 100;
  // One call at positions `p`; checks the output against the reference's (when `want_ok`).
  auto call = [&](const std::vector<int64_t>& p, bool want_ok = true) {
    const int64_t T = static_cast<int64_t>(p.size());
    Floats qv = random_floats(static_cast<size_t>(c.B * c.H * T * c.D), ++seed, -1.5f, 1.5f),
           kv = random_floats(static_cast<size_t>(c.B * c.Hkv * T * c.D), ++seed, -1.5f, 1.5f),
           vv = random_floats(static_cast<size_t>(c.B * c.Hkv * T * c.D), ++seed, -1.5f, 1.5f);
    std::vector<int32_t> p32(p.begin(), p.end());
    std::vector<HostTensor> ins{HostTensor::f32({c.B, c.H, T, c.D}, qv), HostTensor::f32({c.B, c.Hkv, T, c.D}, kv),
                                HostTensor::f32({c.B, c.Hkv, T, c.D}, vv),
                                c.pos64 ? HostTensor::i64({T}, p) : HostTensor::i32({T}, p32)};
    std::vector<HostTensor> outs{nan_out({c.B, c.H, c.T, c.D}), HostTensor::f32(cache, Floats(numel(cache), 7.0f)),
                                 HostTensor::f32(cache, Floats(numel(cache), 7.0f))};
    const Error e = r.execute(ins, outs);
    std::string at = "positions";
    for (int64_t x : p) at += " " + std::to_string(x);
    if (!want_ok) {
      EXPECT_EQ(e, Error::InvalidArgument) << at;
      EXPECT_NE(std::string(r.message()).find("position"), std::string::npos) << r.message();
      return;
    }
    ASSERT_EQ(e, Error::Ok) << at << ": " << r.message();
    EXPECT_EQ(outs[0].sizes, (Sizes{c.B, c.H, T, c.D})) << at;
    Floats got = values(outs[0]);
    EXPECT_TRUE(near(got, ref.step(qv, kv, vv, p), fp16 ? kTol16 : kTol32)) << at;
    if (fp16) {
      EXPECT_TRUE(all_fp16(got)) << at;
    }
    for (int s : {1, 2}) EXPECT_EQ(values(outs[s]), Floats(numel(cache), 7.0f)) << "state output " << s << ", " << at;
  };
  call({0, 1, 2, 3, 4});  // prefill at the bound
  EXPECT_EQ(r.graph().num_variants(), 0u);
  call({5});  // decode on the same graph: the cache kept rows 0..4
  EXPECT_EQ(r.graph().num_variants(), 1u);
  // Positions outside [0, S) are refused before anything runs: row 6 is not written.
  call({6, c.S}, false);
  call({-1}, false);
  call({c.S + 100}, false);
  call({7});  // reads rows 0..7: row 6 still has its initial value
  call({5, 6});  // overwrites rows; a second variant size
  EXPECT_EQ(r.graph().num_variants(), 2u);
  // reset_state: back to the initial caches.
  ASSERT_EQ(r.reset(), Error::Ok) << r.message();
  ref.reset();
  call({0});
  call({3});  // rows 1, 2 are the initial ones again (the prefill wrote them before the reset)
  call({4, 0, 2, 1, 3});  // any order, at the bound
  call({6, 6, 3, 6});     // one row written three times: the last token's wins (read by all four)
  call({c.S - 1});        // the whole cache: more rows than a workgroup's invocations score at once
}

// The transposes and RoPEs around attention (dispatch_fusion.h): token-major q, k, v [B, T, H, D]
// permuted to [B, H, T, D], RoPE on k (and q when rope_q), attention over State caches, its
// output permuted back and viewed [B, T, H * D]. Folded, the four permutes and the RoPEs cost no
// dispatch (the attention reads through them); outputs equal the unfused graph's at the bound
// (where the copies move data) and at decode sizes.
void check_folded_transposes(bool rope_q) {
  SCOPED_TRACE(rope_q ? "RoPE on q and k" : "RoPE on k");
  const int64_t B = 2, H = 4, Hkv = 2, T = 5, S = 12, D = 8;
  const Sizes cache{B, Hkv, S, D};
  const Floats k0 = random_floats(static_cast<size_t>(numel(cache)), 51), v0 = random_floats(static_cast<size_t>(numel(cache)), 52);
  auto init = [&](Runner& r, const char* fuse) {
    VulkanBlobBuilder b;
    const int qt = b.input({B, T, H, D}), kt = b.input({B, T, Hkv, D}), vt = b.input({B, T, Hkv, D});
    const int cs = b.input({T, D}), sn = b.input({T, D}), pos = b.input({T}, VkDType::Int64);
    const std::vector<int64_t> swap{0, 2, 1, 3};
    int q = b.permute(qt, swap);
    if (rope_q) q = b.rope(q, cs, sn);
    const int k = b.rope(b.permute(kt, swap), cs, sn), v = b.permute(vt, swap);
    const int y = b.attention(q, k, v, b.state(cache, k0), b.state(cache, v0), pos, 0.3f);
    const int out = b.view(b.permute(y, swap), {B, T, H * D});
    b.output(out);
    b.state_output();
    b.state_output();
    for (int id : {qt, kt, vt, out}) b.set_dynamic(id, {1});
    for (int id : {cs, sn, pos}) b.set_dynamic(id, {0});
    setenv("EMBER_VULKAN_FUSE", fuse, 1);
    ::testing::AssertionResult ok = r.init(b);
    unsetenv("EMBER_VULKAN_FUSE");
    return ok;
  };
  Runner fused, unfused;
  ASSERT_TRUE(init(fused, "1"));
  ASSERT_TRUE(init(unfused, "0"));
  const size_t ropes = rope_q ? 2 : 1;
  EXPECT_EQ(unfused.graph().num_dispatches(), 4 + ropes + 1);  // 4 permutes, the attention (with its cache writes)
  EXPECT_EQ(fused.graph().num_dispatches(), 1u);
  uint32_t seed = 60;
  int64_t next = 0;
  for (int64_t t : {T, int64_t{1}, int64_t{1}, int64_t{3}}) {  // a prefill at the bound, decode steps, a shorter prefill
    std::vector<int64_t> p;
    for (int64_t i = 0; i < t; ++i) p.push_back(next++);
    std::vector<HostTensor> ins{HostTensor::f32({B, t, H, D}, random_floats(static_cast<size_t>(B * t * H * D), ++seed)),
                                HostTensor::f32({B, t, Hkv, D}, random_floats(static_cast<size_t>(B * t * Hkv * D), ++seed)),
                                HostTensor::f32({B, t, Hkv, D}, random_floats(static_cast<size_t>(B * t * Hkv * D), ++seed)),
                                HostTensor::f32({t, D}, random_floats(static_cast<size_t>(t * D), ++seed)),
                                HostTensor::f32({t, D}, random_floats(static_cast<size_t>(t * D), ++seed)), HostTensor::i64({t}, p)};
    std::vector<Floats> got;
    for (Runner* r : {&fused, &unfused}) {
      std::vector<HostTensor> outs{nan_out({B, T, H * D}), HostTensor::f32(cache, Floats(numel(cache), 7.0f)),
                                   HostTensor::f32(cache, Floats(numel(cache), 7.0f))};
      ASSERT_EQ(r->execute(ins, outs), Error::Ok) << r->message();
      ASSERT_EQ(outs[0].sizes, (Sizes{B, t, H * D}));
      got.push_back(values(outs[0]));
    }
    EXPECT_TRUE(near(got[0], got[1], 1e-6f)) << "size " << t;
  }
}

TEST(VulkanLlmOpsTest, TransposesAndRopesAroundAttentionFoldIntoIt) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_folded_transposes(true);
  check_folded_transposes(false);
}

TEST(VulkanLlmOpsTest, KvCacheAttentionGqa) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_kv_attention({1, 4, 2, 5, 9, 16, 0.25f, true}, false);
}

TEST(VulkanLlmOpsTest, KvCacheAttentionMhaBatchedInt32Positions) {
  EMBER_SKIP_WITHOUT_VULKAN();
  check_kv_attention({2, 3, 3, 5, 11, 8, 1.0f / std::sqrt(8.0f), false}, false);
}

TEST(VulkanLlmOpsTest, KvCacheAttentionLongRowsAndWideHeads) {
  EMBER_SKIP_WITHOUT_VULKAN();
  // D and S above 64: strided loops over d and cache rows.
  check_kv_attention({1, 2, 1, 5, 130, 72, 0.1f, true}, false);
  // A cache longer than the workgroup; an odd D (a row's score split unevenly).
  check_kv_attention({1, 2, 1, 5, 600, 260, 0.05f, false}, false);
  check_kv_attention({1, 3, 3, 5, 70, 5, 0.4f, true}, false);
  // 64-invocation workgroups (EMBER_VULKAN_ATTN_WG, as on a device that allows no wider): D
  // above the workgroup, so the weighted sum of the values takes two and five passes.
  ASSERT_EQ(setenv("EMBER_VULKAN_ATTN_WG", "64", 1), 0);
  check_kv_attention({1, 2, 1, 5, 130, 72, 0.1f, true}, false);
  check_kv_attention({1, 2, 1, 5, 300, 260, 0.05f, false}, false);
  unsetenv("EMBER_VULKAN_ATTN_WG");
}

// --- dynamic sizes ---

// x (T, 6), r (T, 10) dynamic: permute(view(rms_norm(linear(x) + r), (T, 2, 5)), (1, 0, 2)).
struct DynNet {
  int64_t bound;
  Floats w = random_floats(60, 41), bias = random_floats(10, 42), g = random_floats(10, 43, 0.5f, 2);
  int x = -1, r = -1, y = -1;

  void build(VulkanBlobBuilder& b) {
    x = b.input({bound, 6});
    r = b.input({bound, 10});
    int s = b.binary(VkBinary::Add, b.linear(x, b.constant({10, 6}, w), b.constant({10}, bias)), r);
    int vw = b.view(b.rms_norm(s, b.constant({10}, g), 1e-5f), {bound, 2, 5});
    y = b.permute(vw, {1, 0, 2});
    b.output(y);
    b.set_dynamic(x, {0});
    b.set_dynamic(r, {0});
    b.set_dynamic(vw, {0});
    b.set_dynamic(y, {1});
  }
  Floats reference(const Floats& xv, const Floats& rv, int64_t T) const {
    Floats s(static_cast<size_t>(T * 10));
    for (int64_t t = 0; t < T; ++t)
      for (int n = 0; n < 10; ++n) {
        double acc = bias[n];
        for (int kk = 0; kk < 6; ++kk) acc += static_cast<double>(xv[t * 6 + kk]) * w[n * 6 + kk];
        s[t * 10 + n] = static_cast<float>(acc + rv[t * 10 + n]);
      }
    Floats nrm = rms_norm_ref(s, 10, g, 1e-5), out(s.size());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < 5; ++j) out[(i * T + t) * 5 + j] = nrm[t * 10 + i * 5 + j];
    return out;
  }
  // Runs at size T; ok when the result is right and the output was resized to (2, T, 5).
  ::testing::AssertionResult run_at(Runner& rn, int64_t T, uint32_t seed) const {
    Floats xv = random_floats(static_cast<size_t>(T * 6), seed), rv = random_floats(static_cast<size_t>(T * 10), seed + 1);
    std::vector<HostTensor> ins{HostTensor::f32({T, 6}, xv), HostTensor::f32({T, 10}, rv)};
    std::vector<HostTensor> outs{nan_out({2, bound, 5})};
    Error e = rn.execute(ins, outs);
    if (e != Error::Ok) return ::testing::AssertionFailure() << "size " << T << ": " << error_name(e) << ": " << rn.message();
    if (outs[0].sizes != Sizes{2, T, 5})
      return ::testing::AssertionFailure() << "size " << T << ": output resized to " << sizes_str(outs[0].sizes);
    return near(values(outs[0]), reference(xv, rv, T), kTol32) << " (size " << T << ")";
  }
};

TEST(VulkanLlmOpsTest, DynamicSizeVariants) {
  EMBER_SKIP_WITHOUT_VULKAN();
  DynNet net{8};
  VulkanBlobBuilder b;
  net.build(b);
  Runner rn;
  ASSERT_TRUE(rn.init(b));
  EXPECT_EQ(rn.graph().dynamic_bound(), 8);
  const std::pair<int64_t, size_t> steps[] = {{8, 0}, {3, 1}, {1, 2}, {3, 2}, {8, 2}};
  uint32_t seed = 50;
  for (const auto& [T, variants] : steps) {
    EXPECT_TRUE(net.run_at(rn, T, seed += 2));
    EXPECT_EQ(rn.graph().num_variants(), variants) << "after size " << T;
  }
  // Bad arguments are errors (and leave the graph usable).
  auto bad = [&](Sizes xs, Sizes rs, const char* what) {
    std::vector<HostTensor> ins{HostTensor::f32(xs, Floats(numel(xs), 0.5f)), HostTensor::f32(rs, Floats(numel(rs), 0.5f))};
    std::vector<HostTensor> outs{nan_out({2, 8, 5})};
    EXPECT_EQ(rn.execute(ins, outs), Error::InvalidArgument) << what;
  };
  bad({3, 6}, {4, 10}, "dynamic dims disagree");
  bad({9, 6}, {9, 10}, "above the bound");
  bad({3, 7}, {3, 10}, "a static dim differs");
  bad({3, 6}, {3, 10, 1}, "a different rank");
  bad({0, 6}, {0, 10}, "size 0");
  EXPECT_TRUE(net.run_at(rn, 5, 90));
  EXPECT_TRUE(net.run_at(rn, 3, 92));
  EXPECT_EQ(rn.graph().num_variants(), 3u);  // 3, 1, 5
}

TEST(VulkanLlmOpsTest, DynamicSizeVariantsEvictLeastRecentlyUsed) {
  EMBER_SKIP_WITHOUT_VULKAN();
  DynNet net{16};
  VulkanBlobBuilder b;
  net.build(b);
  Runner rn;
  ASSERT_TRUE(rn.init(b));
  uint32_t seed = 200;
  for (int64_t T = 1; T < 16; ++T) {  // 15 sizes below the bound, more than kMaxVariants
    EXPECT_TRUE(net.run_at(rn, T, seed += 2));
    EXPECT_EQ(rn.graph().num_variants(), std::min<size_t>(static_cast<size_t>(T), VulkanGraph::kMaxVariants));
  }
  for (int64_t T : {1, 2, 15, 16, 9, 1, 4, 14, 3, 5, 6, 7, 8, 2, 16})  // evicted ones made again
    EXPECT_TRUE(net.run_at(rn, T, seed += 2));
  EXPECT_EQ(rn.graph().num_variants(), VulkanGraph::kMaxVariants);
}

TEST(VulkanLlmOpsTest, Fp16RmsNormRopeAttention) {
  EMBER_SKIP_WITHOUT_FP16();
  check_rms_norm(true);
  check_rope(true);
  check_kv_attention({1, 4, 2, 5, 9, 16, 0.25f, true}, true);
  check_kv_attention({1, 2, 2, 5, 70, 8, 0.3f, false}, true);
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
