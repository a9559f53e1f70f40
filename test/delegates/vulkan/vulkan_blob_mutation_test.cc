// Hostile Vulkan blobs that are well-formed FlatBuffers: a valid decoder-like graph (RMSNorm,
// weight-only int8 linear, view, permute, RoPE, slice, KV-cache attention with State caches, a
// SwiGLU of two linears and a residual add, which the runtime fuses (dispatch_fusion.h),
// one dynamic size, a state output) serialised after a few random changes to its fields —
// dtypes, sizes, kinds, io indices, dynamic dims, constant bytes, node inputs, outputs,
// shaders and params, the graph's counts and state outputs. Each blob must be refused at init
// with a message, or initialise and then execute (at random dynamic sizes and positions, some
// invalid), reset its state and execute again without crashing or touching memory it does not
// own (ASan + UBSan in CI). Fixed seeds; EMBER_VK_MUTATIONS=N runs more.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_graph_generated.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

struct TensorSpec {
  int dtype = 0;  // fb::DType
  Sizes sizes;
  int kind = 0;  // fb::TensorKind
  uint32_t io = 0;
  std::vector<uint8_t> dynamic_dims;
  int64_t constant_bytes = -1;  // inline constant bytes (-1: none)
};

struct NodeSpec {
  int shader = 0;  // fb::Shader
  int params = 0;  // which of the params below (a Params union type)
  std::vector<int> inputs;
  std::vector<uint32_t> outputs;
  int a = 0, b = 0, c = 0;  // params fields (meaning depends on the type)
  float f = 0;
};

struct GraphSpec {
  std::vector<TensorSpec> tensors;
  std::vector<NodeSpec> nodes;
  uint32_t num_inputs = 0, num_outputs = 0;
  std::vector<uint32_t> state_outputs;
  bool fp16 = false;
};

using fb::Params;

GraphSpec template_graph() {
  GraphSpec g;
  auto t = [&](fb::DType d, Sizes s, fb::TensorKind k, uint32_t io = 0, std::vector<uint8_t> dyn = {}) {
    TensorSpec ts{static_cast<int>(d), s, static_cast<int>(k), io, dyn, -1};
    if (k == fb::TensorKind::Constant || k == fb::TensorKind::State) {
      int64_t es = d == fb::DType::Int8 || d == fb::DType::UInt8 ? 1 : d == fb::DType::Int64 ? 8 : 4;
      ts.constant_bytes = numel(s) * es;
    }
    g.tensors.push_back(ts);
  };
  using D = fb::DType;
  using K = fb::TensorKind;
  t(D::Float32, {1, 6, 8}, K::Input, 0, {1});   // 0 x
  t(D::Int64, {6}, K::Input, 1, {0});           // 1 positions
  t(D::Float32, {8}, K::Constant);              // 2 rms weight
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 3
  t(D::Int8, {8, 8}, K::Constant);              // 4 int8 weight
  t(D::Float32, {8, 2}, K::Constant);           // 5 scales (group 4)
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 6
  t(D::Float32, {1, 6, 2, 4}, K::Internal, 0, {1});  // 7 view
  t(D::Float32, {1, 2, 6, 4}, K::Internal, 0, {2});  // 8 permute
  t(D::Float32, {1, 4}, K::Constant);           // 9 cos
  t(D::Float32, {1, 4}, K::Constant);           // 10 sin
  t(D::Float32, {1, 2, 6, 4}, K::Internal, 0, {2});  // 11 rope
  t(D::Float32, {1, 1, 16, 4}, K::State);       // 12 key cache
  t(D::Float32, {1, 1, 16, 4}, K::State);       // 13 value cache
  t(D::Float32, {1, 1, 6, 4}, K::Internal, 0, {2});  // 14 slice
  t(D::Float32, {1, 2, 6, 4}, K::Output, 0, {2});    // 15 attention
  // A SwiGLU over the normalised x with a residual add: what runtime/dispatch_fusion.h fuses
  // (the RMSNorm into three linears, gate and up into one dispatch, the add into the down).
  t(D::Int8, {8, 8}, K::Constant);              // 16 gate weight
  t(D::Float32, {8, 2}, K::Constant);           // 17 gate scales
  t(D::Int8, {8, 8}, K::Constant);              // 18 up weight
  t(D::Float32, {8, 2}, K::Constant);           // 19 up scales
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 20 gate
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 21 up
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 22 silu(gate) * up
  t(D::Float32, {1, 6, 8}, K::Internal, 0, {1}); // 23 down
  t(D::Float32, {1, 6, 8}, K::Output, 2, {1});   // 24 down + x
  t(D::Float32, {1, 6, 8}, K::Output, 3, {1});   // 25 a second linear of the normalised x (split with q's)
  // Attention without a cache (Sdpa): q the rope, k and v a permute of the view that only it
  // reads (a lazy layout), its output read only by a permute (written in that order).
  t(D::Float32, {1, 2, 6, 4}, K::Internal, 0, {2});  // 26 attention
  t(D::Float32, {1, 2, 6, 4}, K::Internal, 0, {2});  // 27 permute of the view, read only by the attention
  t(D::Float32, {1, 6, 2, 4}, K::Output, 4, {1});    // 28 permute of the attention
  auto n = [&](fb::Shader s, Params p, std::vector<int> in, uint32_t out, int a = 0, int b = 0, int c = 0, float f = 0) {
    g.nodes.push_back(NodeSpec{static_cast<int>(s), static_cast<int>(p), in, {out}, a, b, c, f});
  };
  n(fb::Shader::LayerNorm, Params::LayerNormParams, {0, 2, -1}, 3, 1, 1);  // a: ndim, b: rms
  n(fb::Shader::Matmul, Params::LinearParams, {3, 4, -1, 5}, 6, 8, 4);      // a: bits, b: group
  n(fb::Shader::None, Params::ViewParams, {6}, 7);
  n(fb::Shader::StridedCopy, Params::PermuteParams, {7}, 8, 2, 1);         // perm (0, a, b, 3)
  n(fb::Shader::Rope, Params::RopeParams, {8, 9, 10}, 11);
  n(fb::Shader::StridedCopy, Params::SliceParams, {11}, 14, 1, 0, 1);      // dim a, start b, end c
  n(fb::Shader::Attention, Params::AttentionParams, {11, 14, 14, 12, 13, 1}, 15, 0, 0, 0, 0.5f);
  n(fb::Shader::Matmul, Params::LinearParams, {3, 16, -1, 17}, 20, 8, 4);
  n(fb::Shader::Matmul, Params::LinearParams, {3, 18, -1, 19}, 21, 8, 4);
  n(fb::Shader::Binary, Params::BinaryParams, {20, 21}, 22, 4);               // a: op (4: SiluMul)
  n(fb::Shader::Matmul, Params::LinearParams, {22, 4, -1, 5}, 23, 8, 4);
  n(fb::Shader::Binary, Params::BinaryParams, {23, 0}, 24, 0);                // Add
  n(fb::Shader::Matmul, Params::LinearParams, {3, 16, -1, 17}, 25, 8, 4);
  n(fb::Shader::StridedCopy, Params::PermuteParams, {7}, 27, 2, 1);
  n(fb::Shader::Sdpa, Params::SdpaParams, {11, 27, 27, -1}, 26, 0, 0, 0, 0.5f);
  n(fb::Shader::StridedCopy, Params::PermuteParams, {26}, 28, 2, 1);
  g.num_inputs = 2;
  g.num_outputs = 5;
  g.state_outputs = {1};
  return g;
}

std::vector<uint8_t> serialise(const GraphSpec& g, std::mt19937& rng) {
  flatbuffers::FlatBufferBuilder f(1024);
  std::vector<flatbuffers::Offset<fb::Tensor>> ts;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const TensorSpec& t = g.tensors[i];
    flatbuffers::Offset<fb::ConstantData> c = 0;
    if (t.constant_bytes >= 0) {
      std::vector<uint8_t> bytes(static_cast<size_t>(t.constant_bytes));
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 7);  // small values: finite floats and ints
      f.ForceVectorAlignment(bytes.size(), 1, 16);
      auto data = f.CreateVector(bytes);
      c = fb::CreateConstantData(f, -1, 0, static_cast<uint64_t>(t.constant_bytes), data);
    }
    auto sizes = f.CreateVector(t.sizes);
    auto dyn = t.dynamic_dims.empty() ? 0 : f.CreateVector(t.dynamic_dims);
    ts.push_back(fb::CreateTensor(f, static_cast<uint32_t>(i), static_cast<fb::DType>(t.dtype), sizes,
                                  static_cast<fb::TensorKind>(t.kind), t.io, c, dyn));
  }
  std::vector<flatbuffers::Offset<fb::Node>> ns;
  for (const NodeSpec& n : g.nodes) {
    flatbuffers::Offset<void> p = 0;
    switch (static_cast<Params>(n.params)) {
      case Params::LayerNormParams: p = fb::CreateLayerNormParams(f, n.a, 1e-5f, n.b != 0).Union(); break;
      case Params::LinearParams: p = fb::CreateLinearParams(f, fb::Activation::None, 0, 0, n.a, n.b).Union(); break;
      case Params::ViewParams: p = fb::CreateViewParams(f).Union(); break;
      case Params::PermuteParams: p = fb::CreatePermuteParams(f, f.CreateVector(std::vector<int32_t>{0, n.a, n.b, 3})).Union(); break;
      case Params::RopeParams: p = fb::CreateRopeParams(f).Union(); break;
      case Params::SliceParams: p = fb::CreateSliceParams(f, n.a, n.b, n.c, 1).Union(); break;
      case Params::AttentionParams: p = fb::CreateAttentionParams(f, n.f).Union(); break;
      case Params::SdpaParams: p = fb::CreateSdpaParams(f, n.f).Union(); break;
      case Params::BinaryParams: p = fb::CreateBinaryParams(f, static_cast<fb::BinaryOp>(n.a), 1.0f).Union(); break;
      default: break;  // NONE, or a type with no table here: a union without a payload
    }
    auto ins = f.CreateVector(n.inputs);
    auto outs = f.CreateVector(n.outputs);
    ns.push_back(fb::CreateNode(f, static_cast<fb::Shader>(n.shader), static_cast<Params>(n.params), p, ins, outs));
  }
  auto tv = f.CreateVector(ts);
  auto nv = f.CreateVector(ns);
  auto so = g.state_outputs.empty() ? 0 : f.CreateVector(g.state_outputs);
  fb::FinishGraphBuffer(f, fb::CreateGraph(f, 1, tv, nv, g.num_inputs, g.num_outputs, fb::CreateCompileOptions(f, g.fp16), 0, so));
  return std::vector<uint8_t>(f.GetBufferPointer(), f.GetBufferPointer() + f.GetSize());
}

void mutate(GraphSpec& g, std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const int64_t sizes[] = {0, 1, 2, 3, 4, 6, 7, 8, 16, 1 << 20};
  const int nt = static_cast<int>(g.tensors.size());
  switch (pick(14)) {
    case 0: g.tensors[pick(nt)].dtype = pick(7); break;  // 6: not a DType
    case 1: {
      TensorSpec& t = g.tensors[pick(nt)];
      if (!t.sizes.empty()) t.sizes[pick(static_cast<int>(t.sizes.size()))] = sizes[pick(10)];
      break;
    }
    case 2: {
      TensorSpec& t = g.tensors[pick(nt)];
      if (pick(2) == 0 && !t.sizes.empty()) t.sizes.pop_back();
      else t.sizes.push_back(sizes[pick(5)]);
      break;
    }
    case 3: g.tensors[pick(nt)].kind = pick(6); break;  // 5: not a TensorKind
    case 4: g.tensors[pick(nt)].io = static_cast<uint32_t>(pick(4)); break;
    case 5: {
      TensorSpec& t = g.tensors[pick(nt)];
      if (pick(3) == 0) t.dynamic_dims.clear();
      else t.dynamic_dims.push_back(static_cast<uint8_t>(pick(6)));
      break;
    }
    case 6: {
      TensorSpec& t = g.tensors[pick(nt)];
      t.constant_bytes = pick(3) == 0 ? -1 : t.constant_bytes + pick(9) - 4;
      break;
    }
    case 7: {
      NodeSpec& n = g.nodes[pick(static_cast<int>(g.nodes.size()))];
      if (n.inputs.empty() || pick(4) == 0) n.inputs.push_back(pick(nt + 3) - 2);
      else n.inputs[pick(static_cast<int>(n.inputs.size()))] = pick(nt + 3) - 2;
      break;
    }
    case 8: {
      NodeSpec& n = g.nodes[pick(static_cast<int>(g.nodes.size()))];
      n.outputs = pick(4) == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{static_cast<uint32_t>(pick(nt + 2))};
      break;
    }
    case 9: g.nodes[pick(static_cast<int>(g.nodes.size()))].shader = pick(4) == 0 ? 255 : pick(13); break;
    case 10: g.nodes[pick(static_cast<int>(g.nodes.size()))].params = pick(19); break;
    case 11: {
      NodeSpec& n = g.nodes[pick(static_cast<int>(g.nodes.size()))];
      const int v[] = {-1, 0, 1, 2, 3, 4, 5, 8, 16, 1 << 30};
      (pick(3) == 0 ? n.a : pick(2) == 0 ? n.b : n.c) = v[pick(10)];
      const float fv[] = {0.0f, -1.0f, 0.5f, INFINITY, NAN, 1e30f};
      if (pick(3) == 0) n.f = fv[pick(6)];
      break;
    }
    case 12:
      if (pick(2) == 0) g.num_inputs = static_cast<uint32_t>(pick(4));
      else g.num_outputs = static_cast<uint32_t>(pick(4));
      break;
    default:
      if (pick(2) == 0) g.state_outputs = {static_cast<uint32_t>(pick(4))};
      else g.fp16 = !g.fp16;
      break;
  }
}

// Delegate arguments for g's inputs and outputs at dynamic size `size`, positions from rng.
struct Args {
  std::vector<HostTensor> host;
  std::vector<std::unique_ptr<Arg>> args;
  std::vector<EValue*> ptrs;
};

bool make_args(const GraphSpec& g, int64_t size, std::mt19937& rng, Args* a) {
  const uint32_t total = g.num_inputs + g.num_outputs;
  if (total > 16) return false;
  a->host.resize(total);
  std::vector<bool> set(total, false);
  for (const TensorSpec& t : g.tensors) {
    const bool in = t.kind == static_cast<int>(fb::TensorKind::Input), out = t.kind == static_cast<int>(fb::TensorKind::Output);
    if ((!in && !out) || t.sizes.size() > 8 || numel(t.sizes) > (1 << 16)) continue;
    const uint32_t slot = in ? t.io : g.num_inputs + t.io;
    if (slot >= total || (in && t.io >= g.num_inputs) || set[slot]) continue;
    Sizes s = t.sizes;
    for (uint8_t d : t.dynamic_dims)
      if (in && d < s.size()) s[d] = size;
    HostTensor h;
    h.dtype = t.dtype == static_cast<int>(fb::DType::Int64)   ? ScalarType::Int64
              : t.dtype == static_cast<int>(fb::DType::Int32) ? ScalarType::Int32
                                                              : ScalarType::Float32;
    h.sizes = s;
    h.bytes.resize(static_cast<size_t>(std::max(numel(s), numel(t.sizes))) * element_size(h.dtype));
    // Positions / indices: in range mostly (the cache has 16 rows), sometimes past either end.
    const bool wild = rng() % 8 == 0;
    auto index = [&] { return wild ? static_cast<int64_t>(rng() % 40) - 10 : static_cast<int64_t>(rng() % 16); };
    if (h.dtype == ScalarType::Int64) {
      for (size_t i = 0; i < h.bytes.size() / 8; ++i) reinterpret_cast<int64_t*>(h.bytes.data())[i] = index();
    } else if (h.dtype == ScalarType::Int32) {
      for (size_t i = 0; i < h.bytes.size() / 4; ++i) reinterpret_cast<int32_t*>(h.bytes.data())[i] = static_cast<int32_t>(index());
    } else {
      for (size_t i = 0; i < h.bytes.size() / 4; ++i) reinterpret_cast<float*>(h.bytes.data())[i] = static_cast<float>(rng() % 200) / 100.0f - 1.0f;
    }
    a->host[slot] = std::move(h);
    set[slot] = true;
  }
  for (uint32_t k = 0; k < total; ++k)
    if (!set[k]) a->host[k] = HostTensor::f32({1}, {0.0f});  // an argument the blob leaves alone (or a wrong one)
  for (HostTensor& h : a->host) a->args.emplace_back(new Arg(h));
  for (auto& x : a->args) a->ptrs.push_back(&x->value);
  return true;
}

TEST(VulkanBlobMutationTest, HostileWellFormedBlobsAreRefusedOrRunCleanly) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const int runs = getenv("EMBER_VK_MUTATIONS") ? atoi(getenv("EMBER_VK_MUTATIONS")) : 3000;
  int initialised = 0, executed = 0;
  Backend& backend = vulkan_backend();
  for (int seed = 0; seed < runs; ++seed) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    GraphSpec g = template_graph();
    const int changes = seed == 0 ? 0 : 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < changes; ++i) mutate(g, rng);
    const std::vector<uint8_t> blob = serialise(g, rng);
    Diagnostic diag;
    BackendInitContext init{nullptr, nullptr, nullptr, &diag};
    Result<void*> h = backend.init(init, Span<const uint8_t>(blob.data(), blob.size()), Span<const CompileSpecView>());
    if (seed == 0) {
      ASSERT_TRUE(h.ok()) << "the template must be valid: " << diag.text();
      // Fused (dispatch_fusion.h), so mutations reach the fusion plan: q and the last linear
      // with the RMSNorm (one split dispatch), RoPE reading through the permute, the slice, the
      // attention with its cache writes, gate+up, down+add, the attention without a cache
      // reading k and v through a permute and writing through another (16 unfused).
      EXPECT_EQ(static_cast<const VulkanGraph*>(*h)->num_dispatches(), 7u);
    }
    if (!h.ok()) {
      EXPECT_NE(std::string(diag.text()), "") << "seed " << seed << ": refused without a message";
      continue;
    }
    ++initialised;
    // The bound, a size below it (past it one time in 8), and 1 (a decode step).
    for (int64_t size : {int64_t(6), int64_t(rng() % 8 == 0 ? 7 : 1 + rng() % 6), int64_t(1)}) {
      Args a;
      if (!make_args(g, size, rng, &a)) break;
      BackendExecuteContext ctx{nullptr, nullptr, &diag};
      if (backend.execute(ctx, *h, a.ptrs.data(), a.ptrs.size()) == Error::Ok) ++executed;
      EXPECT_EQ(backend.reset_state(*h, &diag), Error::Ok) << "seed " << seed;
    }
    backend.destroy(*h);
  }
  std::printf("[vulkan blob mutations] %d blobs: %d initialised, %d executes ran\n", runs, initialised, executed);
  // The mutations must leave most graphs near valid, or this test only exercises the verifier.
  EXPECT_GT(initialised, runs / 20);
  EXPECT_GT(executed, runs / 20);
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
