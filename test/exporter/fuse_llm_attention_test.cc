// exporter/passes/fuse_llm_attention.cc on the shared tiny_llama_kv decoder: which patterns it
// rewrites, what it must leave alone, and that the fused program gives the unfused program's
// logits (prefill, then a decode step that reads the cache written by the prefill).
#include <limits.h>
#include <stdlib.h>

#include <cstring>
#include <map>
#include <string>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/import/pt2_importer.h"
#include "exporter/passes/passes.h"
#include "gtest/gtest.h"
#include "runtime/kernel/kernel_registry.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace exporter {
namespace {

bool linked(const std::string& name) { return find_kernel(name.c_str()) != nullptr; }

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> c;
  for (const Node& n : g.nodes) {
    if (!n.erased) c[n.kernel_name()]++;
  }
  return c;
}

// The imported model after the passes that run before the fusion in export_graph.
Graph prepared(const std::string& path) {
  auto g = import_pt2(path);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return Graph();
  EXPECT_TRUE(canonicalize(*g).ok());
  eliminate_dead_code(*g);
  EXPECT_TRUE(fold_constants(*g).ok());
  eliminate_dead_code(*g);
  return std::move(*g);
}

std::string tiny_llama_kv() {
  const std::string shared = testing::shared_dir();
  return shared.empty() ? "" : shared + "/models/tiny_llama_kv";
}

TEST(FuseLlm, RewritesEveryLlamaPatternOfTinyLlamaKv) {
  const std::string dir = tiny_llama_kv();
  if (dir.empty()) GTEST_SKIP() << "shared/ data not found";
  Graph g = prepared(dir + "/model.pt2");
  // 2 layers: 2 attentions, 5 RMSNorms (2 per layer + final), 4 RoPEs (q, k per layer), 2 SwiGLUs.
  EXPECT_EQ(fuse_llm_attention(g, linked), 13);
  eliminate_dead_code(g);
  std::map<std::string, int> ops = op_counts(g);
  EXPECT_EQ(ops["ember_llm::sdpa_with_kv_cache.default"], 2);
  EXPECT_EQ(ops["ember_llm::rms_norm.default"], 5);
  EXPECT_EQ(ops["ember_llm::rope.default"], 4);
  EXPECT_EQ(ops["ember_llm::silu_mul.default"], 2);
  for (const char* gone : {"aten::scaled_dot_product_attention.default", "aten::repeat_interleave.self_int",
                           "aten::index_copy.default", "aten::pow.Tensor_Scalar", "aten::rsqrt.default",
                           "aten::silu.default", "aten::neg.default", "aten::cat.default", "aten::slice.Tensor"}) {
    EXPECT_EQ(ops.count(gone), 0u) << gone;
  }
  EXPECT_EQ(ops["aten::index.Tensor"], 2);  // cos/sin rows stay; the causal-mask rows go
  // The fused attention writes the caches (state) as outputs, so ordering and DCE see it.
  for (const Node& n : g.nodes) {
    if (n.erased || n.op != "ember_llm::sdpa_with_kv_cache") continue;
    ASSERT_EQ(n.outputs.size(), 3u);
    EXPECT_EQ(n.outputs[1].ref, n.args[3].ref);
    EXPECT_EQ(n.outputs[2].ref, n.args[4].ref);
    EXPECT_EQ(g.values[n.args[3].ref].role, ValueRole::MutableState);
  }
}

TEST(FuseLlm, NothingWithoutTheKernels) {
  const std::string dir = tiny_llama_kv();
  if (dir.empty()) GTEST_SKIP() << "shared/ data not found";
  Graph g = prepared(dir + "/model.pt2");
  const size_t before = g.num_live_nodes();
  EXPECT_EQ(fuse_llm_attention(g, [](const std::string&) { return false; }), 0);
  EXPECT_EQ(g.num_live_nodes(), before);
  // Only the attention kernel linked: only attentions are rewritten.
  EXPECT_EQ(fuse_llm_attention(g, [](const std::string& n) { return n == "ember_llm::sdpa_with_kv_cache.default"; }),
            2);
}

// Finds the constant behind the causal mask (the index.Tensor whose table is [S, S]).
Constant* causal_table(Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.erased || n.kernel_name() != "aten::index.Tensor") continue;
    const Value& t = g.values[n.args[0].ref];
    if (t.constant >= 0 && t.sizes.size() == 2 && t.sizes[0] == t.sizes[1]) return &g.constants[t.constant];
  }
  return nullptr;
}

TEST(FuseLlm, LeavesNearMissesAlone) {
  const std::string dir = tiny_llama_kv();
  if (dir.empty()) GTEST_SKIP() << "shared/ data not found";
  {  // a mask that is not lower-triangular (one entry flipped): attention stays
    Graph g = prepared(dir + "/model.pt2");
    Constant* c = causal_table(g);
    ASSERT_NE(c, nullptr);
    c->data[3] = c->data[3] ? 0 : 1;  // row 0, column 3 (bool bytes)
    EXPECT_EQ(fuse_llm_attention(g, linked), 11);
    EXPECT_EQ(op_counts(g)["aten::scaled_dot_product_attention.default"], 2);
  }
  {  // the silu output read elsewhere too (a graph output): that SwiGLU stays
    Graph g = prepared(dir + "/model.pt2");
    for (const Node& n : g.nodes) {
      if (!n.erased && n.op == "aten::silu") {
        g.outputs.push_back(GraphOutput{n.outputs[0].ref});
        break;
      }
    }
    EXPECT_EQ(fuse_llm_attention(g, linked), 12);
    EXPECT_EQ(op_counts(g)["aten::silu.default"], 1);
  }
  {  // the SwiGLU's gate input overwritten in place between silu and mul: that SwiGLU stays
    Graph g = prepared(dir + "/model.pt2");
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].erased || g.nodes[i].op != "aten::silu") continue;
      const int gate = g.nodes[i].args[0].ref;
      Node& between = g.nodes[i + 1];  // the up projection, between silu and mul
      ASSERT_EQ(between.op, "aten::linear");
      const int up = between.outputs[0].ref;
      between.outputs = {Arg::tensor(gate)};  // now writes the gate in place
      for (Node& n : g.nodes) {
        for (Arg& a : n.args) {
          if (a.kind == Arg::Kind::Tensor && a.ref == up) a.ref = gate;
        }
      }
      break;
    }
    EXPECT_EQ(fuse_llm_attention(g, linked), 12);
    EXPECT_EQ(op_counts(g)["aten::silu.default"], 1);
  }
  {  // RMSNorm over a dim other than the last: that RMSNorm stays
    Graph g = prepared(dir + "/model.pt2");
    for (Node& n : g.nodes) {
      if (!n.erased && n.op == "aten::mean") {
        n.args[1].ints = {1};
        break;
      }
    }
    EXPECT_EQ(fuse_llm_attention(g, linked), 12);
    EXPECT_EQ(op_counts(g)["aten::mean.dim"], 1);
  }
  {  // a cache also written after the graph (a write-back from elsewhere): its attention stays
    Graph g = prepared(dir + "/model.pt2");
    for (const Value& v : g.values) {
      if (v.role == ValueRole::MutableState) {
        g.write_backs.push_back(WriteBack{g.inputs[0], v.id});
        break;
      }
    }
    EXPECT_EQ(fuse_llm_attention(g, linked), 12);
    EXPECT_EQ(op_counts(g)["aten::scaled_dot_product_attention.default"], 1);
  }
  {  // a different eps is kept, not dropped: still fused, with that eps
    Graph g = prepared(dir + "/model.pt2");
    for (Node& n : g.nodes) {
      if (!n.erased && n.kernel_name() == "aten::add.Tensor" && n.args[1].kind == Arg::Kind::Double) {
        n.args[1].d = 1e-3;
        break;
      }
    }
    EXPECT_EQ(fuse_llm_attention(g, linked), 13);
    int with_new_eps = 0;
    for (const Node& n : g.nodes) {
      if (!n.erased && n.op == "ember_llm::rms_norm" && n.args[2].d == 1e-3) ++with_new_eps;
    }
    EXPECT_EQ(with_new_eps, 1);
  }
}

// Runs prefill (input_*) and the decode step (step_input_*) of `pte`; returns both logits.
void run_prefill_and_step(const std::vector<uint8_t>& pte, const std::string& dir, NpyArray* prefill,
                          NpyArray* step) {
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(pte), "");
  ASSERT_EQ(runner.run(testing::read_npy_series(dir, "input_")), "");
  *prefill = runner.output(0);
  ASSERT_EQ(runner.run(testing::read_npy_series(dir, "step_input_")), "");
  *step = runner.output(0);
}

TEST(FuseLlm, FusedProgramGivesTheUnfusedLogits) {
  const std::string dir = tiny_llama_kv();
  if (dir.empty()) GTEST_SKIP() << "shared/ data not found";
  ExportOptions fused_options, plain_options;
  plain_options.fuse_llm_kernels = false;
  auto fused = export_pt2_file(dir + "/model.pt2", fused_options);
  auto plain = export_pt2_file(dir + "/model.pt2", plain_options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(fused->portable_ops.count("ember_llm::sdpa_with_kv_cache.default"), 1u);
  EXPECT_EQ(plain->portable_ops.count("ember_llm::sdpa_with_kv_cache.default"), 0u);
  EXPECT_LT(fused->num_nodes_final, plain->num_nodes_final);
  NpyArray fp, fs, pp, ps;
  ASSERT_NO_FATAL_FAILURE(run_prefill_and_step(fused->pte, dir, &fp, &fs));
  ASSERT_NO_FATAL_FAILURE(run_prefill_and_step(plain->pte, dir, &pp, &ps));
  const std::vector<NpyArray> want = testing::read_npy_series(dir, "output_");
  const std::vector<NpyArray> want_step = testing::read_npy_series(dir, "step_output_");
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(want_step.size(), 1u);
  const double e_prefill = testing::relative_l2(fp, pp), e_step = testing::relative_l2(fs, ps);
  std::printf("[fuse_llm] fused vs unfused relative L2: prefill %.3g, step %.3g; vs PyTorch %.3g, %.3g\n",
              e_prefill, e_step, testing::relative_l2(fp, want[0]), testing::relative_l2(fs, want_step[0]));
  EXPECT_LE(e_prefill, 1e-4);
  EXPECT_LE(e_step, 1e-4);
  EXPECT_LE(testing::relative_l2(fp, want[0]), 1e-4);
  EXPECT_LE(testing::relative_l2(fs, want_step[0]), 1e-4);
}

// With XNNPACK taking the linear layers, the fused operators stay on the CPU between its
// partitions (the cache writes keep their order); the logits are PyTorch's.
TEST(FuseLlm, FusedProgramWithXnnpackMatchesPyTorch) {
  const std::string dir = tiny_llama_kv();
  if (dir.empty()) GTEST_SKIP() << "shared/ data not found";
  ExportOptions options;
  options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = export_pt2_file(dir + "/model.pt2", options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->portable_ops.count("ember_llm::sdpa_with_kv_cache.default"), 1u);
  ASSERT_FALSE(r->backends.empty());
  EXPECT_GT(r->backends[0].delegates, 0);
  NpyArray prefill, step;
  ASSERT_NO_FATAL_FAILURE(run_prefill_and_step(r->pte, dir, &prefill, &step));
  EXPECT_LE(testing::relative_l2(prefill, testing::read_npy_series(dir, "output_")[0]), 1e-4);
  EXPECT_LE(testing::relative_l2(step, testing::read_npy_series(dir, "step_output_")[0]), 1e-4);
}

// With a delegate partitioner, RMSNorm / RoPE / SwiGLU are fused only where the KV-cache
// attention was (which cuts the delegate at every layer anyway): tiny_llama without a cache
// keeps them as ATen ops and runs as one XNNPACK delegate; tiny_llama_kv keeps all four
// fused operators (above).
TEST(FuseLlm, WithADelegateOnlyCacheAttentionGraphsFuseTheRest) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  ExportOptions options;
  options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = export_pt2_file(shared + "/models/tiny_llama/model.pt2", options);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const auto& [op, n] : r->portable_ops) EXPECT_EQ(op.rfind("ember_llm::", 0), std::string::npos) << op;
  ASSERT_EQ(r->backends.size(), 1u);
  EXPECT_EQ(r->backends[0].delegates, 1);
  auto kv = export_pt2_file(tiny_llama_kv() + "/model.pt2", options);
  ASSERT_TRUE(kv.ok()) << kv.status();
  for (const char* op : {"ember_llm::sdpa_with_kv_cache.default", "ember_llm::rms_norm.default",
                         "ember_llm::rope.default", "ember_llm::silu_mul.default"}) {
    EXPECT_GT(kv->portable_ops.count(op), 0u) << op;
  }
  // Without a partitioner every pattern is fused, cache or not.
  auto portable = export_pt2_file(shared + "/models/tiny_llama/model.pt2", ExportOptions());
  ASSERT_TRUE(portable.ok()) << portable.status();
  EXPECT_GT(portable->portable_ops.count("ember_llm::rms_norm.default"), 0u);
}

// The trained example decoder (examples/llm), when it is in the checkout.
TEST(FuseLlm, FortunesLlmFusedMatchesUnfused) {
  std::string path;
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) {
    char buf[PATH_MAX];
    const std::string runfile = std::string(srcdir) + "/" + ws + "/test/exporter/BUILD";
    if (realpath(runfile.c_str(), buf) != nullptr) {
      std::string root(buf);
      root = root.substr(0, root.size() - std::strlen("/test/exporter/BUILD"));
      path = root + "/examples/llm/fortunes_llm.pt2";
    }
  }
  FILE* f = path.empty() ? nullptr : std::fopen(path.c_str(), "rb");
  if (f == nullptr) GTEST_SKIP() << "examples/llm/fortunes_llm.pt2 not in this checkout";
  std::fclose(f);
  ExportOptions plain_options;
  plain_options.fuse_llm_kernels = false;
  auto fused = export_pt2_file(path, ExportOptions());
  auto plain = export_pt2_file(path, plain_options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(fused->portable_ops.count("ember_llm::sdpa_with_kv_cache.default"), 1u);
  // Prompt of 5 tokens, then 3 single-token steps, on both programs.
  testing::PteRunner a, b;
  ASSERT_EQ(a.load(fused->pte), "");
  ASSERT_EQ(b.load(plain->pte), "");
  for (int64_t start : {0, 5, 6, 7}) {
    const int64_t count = start == 0 ? 5 : 1;
    NpyArray tokens, pos;
    tokens.dtype = pos.dtype = ScalarType::Int64;
    tokens.shape = {1, count};
    pos.shape = {count};
    tokens.data.resize(static_cast<size_t>(count) * 8);
    pos.data.resize(static_cast<size_t>(count) * 8);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t t = (start + i) * 37 % 200 + 3, p = start + i;
      std::memcpy(tokens.data.data() + i * 8, &t, 8);
      std::memcpy(pos.data.data() + i * 8, &p, 8);
    }
    ASSERT_EQ(a.run({tokens, pos}), "");
    ASSERT_EQ(b.run({tokens, pos}), "");
    EXPECT_LE(testing::relative_l2(a.output(0), b.output(0)), 1e-4) << "start " << start;
  }
}

}  // namespace
}  // namespace exporter
}  // namespace ember
