// LLM decoding on the Vulkan delegate (lavapipe in CI): the shared tiny_llama_kv decoder (KV
// cache as state, T dynamic 1..64) exported for Vulkan runs as one delegate call per token —
// embedding, RMSNorm, RoPE, KV-cache attention with the cache resident on the GPU, SwiGLU,
// logits — and TextGenerator's greedy tokens equal the portable program's, through prefill,
// decode, a continued conversation and a reset; the checked-in fortunes model generates
// PyTorch's greedy text token for token. Skips without a Vulkan device (or ../shared).
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "extension/llm/text_generator.h"
#include "test/exporter/shared_dir.h"
#include "test/llm/fortunes_reference.h"

namespace ember {
namespace llm {
namespace {

std::string temp_path(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

// tiny_llama_kv exported portable or for Vulkan (allowed on a CPU device), written to a file.
std::string export_kv(bool vulkan, exporter::ExportResult* report,
                      exporter::QuantizeMode quantize = exporter::QuantizeMode::None) {
  exporter::ExportOptions options;
  options.metadata = {{"max_seq_len", "64"}, {"vocab_size", "512"}};
  options.quantize.mode = quantize;
  if (vulkan) {
    vulkan::VulkanPartitionerOptions vo;
    vo.allow_cpu = true;
    options.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  }
  auto result = exporter::export_pt2_file(testing::shared_dir() + "/models/tiny_llama_kv/model.pt2", options);
  if (!result.ok()) {
    ADD_FAILURE() << result.status().message();
    return "";
  }
  const std::string path =
      temp_path(std::string(vulkan ? "kv_vulkan" : "kv_portable") + std::to_string(static_cast<int>(quantize)) + ".pte");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(result->pte.data()), static_cast<std::streamsize>(result->pte.size()));
  if (report != nullptr) *report = std::move(*result);
  return path;
}

std::vector<int32_t> greedy(TextGenerator& g, const std::vector<int32_t>& prompt, int n) {
  GenerationConfig config;
  config.max_new_tokens = n;
  GenerationResult result;
  Status s = g.generate(prompt, config, nullptr, &result);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return result.generated_tokens;
}

class VulkanGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    if (testing::shared_dir().empty()) GTEST_SKIP() << "shared/ data not found";
    if (!vulkan::vulkan_backend().is_available()) GTEST_SKIP() << "no Vulkan device";
  }
  void check_conversation();
};

TEST_F(VulkanGenerateTest, OneDelegateTakesTheWholeDecoderWithItsCache) {
  exporter::ExportResult r;
  ASSERT_FALSE(export_kv(true, &r).empty());
  ASSERT_EQ(r.backends.size(), 1u);
  EXPECT_EQ(r.backends[0].delegates, 1);
  EXPECT_EQ(r.backends[0].fallbacks, 0);
  EXPECT_EQ(r.backends[0].ops["ember_llm::sdpa_with_kv_cache.default"], 2);
  EXPECT_EQ(r.backends[0].ops["ember_llm::rope.default"], 4);
  EXPECT_EQ(r.backends[0].ops["ember_llm::rms_norm.default"], 5);
  EXPECT_EQ(r.backends[0].ops["aten::linear.default"], 15);
  // What stays on the CPU: the symbolic sequence length the views used (the delegate takes
  // their sizes from its inputs).
  EXPECT_EQ(r.portable_ops, (std::map<std::string, int>{{"aten::sym_size.int", 1}}));
}

// A conversation (prefill, decode, a second turn, resets) on the GPU and on the portable
// kernels: the same greedy tokens throughout.
void VulkanGenerateTest::check_conversation() {
  const std::string portable_path = export_kv(false, nullptr), vulkan_path = export_kv(true, nullptr);
  ASSERT_FALSE(portable_path.empty());
  ASSERT_FALSE(vulkan_path.empty());
  auto portable = TextGenerator::load(portable_path, nullptr);
  auto gpu = TextGenerator::load(vulkan_path, nullptr);
  ASSERT_TRUE(portable.ok()) << portable.error().to_string();
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  TextGenerator& p = **portable;
  TextGenerator& v = **gpu;

  const std::vector<int32_t> prompt = {5, 17, 300, 42, 8, 99, 100, 7};
  const std::vector<int32_t> first = greedy(p, prompt, 24);
  ASSERT_EQ(first.size(), 24u);
  EXPECT_EQ(greedy(v, prompt, 24), first) << "prefill of 8, then 23 decode steps of 1";
  // The conversation goes on: a 3-token chunk at position 32, then more decoding. The GPU's
  // cache holds the first turn.
  const std::vector<int32_t> more = {3, 141, 59};
  const std::vector<int32_t> second = greedy(p, more, 12);
  EXPECT_EQ(greedy(v, more, 12), second);
  EXPECT_EQ(v.position(), p.position());
  // A reset restores the GPU's cache too: the same prompt again gives the first answer.
  ASSERT_TRUE(v.reset().ok());
  ASSERT_TRUE(p.reset().ok());
  EXPECT_EQ(greedy(v, prompt, 24), first);
  EXPECT_EQ(greedy(p, prompt, 24), first);
  // Then a second reset and a different, shorter prompt: any cache row the reset missed
  // would change its logits.
  ASSERT_TRUE(v.reset().ok());
  ASSERT_TRUE(p.reset().ok());
  const std::vector<int32_t> other = {400, 2, 77};
  EXPECT_EQ(greedy(v, other, 16), greedy(p, other, 16));
}

TEST_F(VulkanGenerateTest, GreedyTokensEqualThePortableProgramsThroughAConversationAndAReset) { check_conversation(); }

// EMBER_VULKAN_EVENT_WAIT=1: each execute returns when the host sees the event its command
// buffer sets after the outputs, its fence waited for at the next use of the queue (the next
// execute, a reset): the same tokens.
// With a 1 us polling bound every wait ends on the fence instead.
TEST_F(VulkanGenerateTest, TheEventWaitGivesTheSameConversation) {
  setenv("EMBER_VULKAN_EVENT_WAIT", "1", 1);
  check_conversation();
  setenv("EMBER_VULKAN_EVENT_SPIN_US", "1", 1);
  check_conversation();
  unsetenv("EMBER_VULKAN_EVENT_SPIN_US");
  unsetenv("EMBER_VULKAN_EVENT_WAIT");
}

// Weight-only int8 and int4 (group 32) linear layers and token embedding, dequantized in the
// shader: the same greedy tokens as the portable weight-only kernels, nothing left on the CPU
// but the views' sequence length.
TEST_F(VulkanGenerateTest, WeightOnlyInt8AndInt4GreedyTokensEqualThePortableProgramsOnes) {
  for (exporter::QuantizeMode mode : {exporter::QuantizeMode::Int8Weight, exporter::QuantizeMode::Int4Weight}) {
    exporter::ExportResult r;
    const std::string vulkan_path = export_kv(true, &r, mode), portable_path = export_kv(false, nullptr, mode);
    ASSERT_FALSE(vulkan_path.empty());
    ASSERT_FALSE(portable_path.empty());
    ASSERT_EQ(r.backends.size(), 1u);
    EXPECT_EQ(r.backends[0].delegates, 1);
    EXPECT_EQ(r.backends[0].ops["ember_quantized::linear_weight_only.default"], 15) << static_cast<int>(mode);
    EXPECT_EQ(r.backends[0].ops["ember_quantized::embedding_weight_only.default"], 1) << static_cast<int>(mode);
    EXPECT_EQ(r.portable_ops, (std::map<std::string, int>{{"aten::sym_size.int", 1}})) << static_cast<int>(mode);
    auto portable = TextGenerator::load(portable_path, nullptr);
    auto gpu = TextGenerator::load(vulkan_path, nullptr);
    ASSERT_TRUE(portable.ok()) << portable.error().to_string();
    ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
    const std::vector<int32_t> prompt = {5, 17, 300, 42, 8, 99, 100, 7};
    EXPECT_EQ(greedy(**gpu, prompt, 20), greedy(**portable, prompt, 20)) << static_cast<int>(mode);
  }
}

TEST_F(VulkanGenerateTest, AContextBeyondTheCacheIsRefusedCleanly) {
  const std::string vulkan_path = export_kv(true, nullptr);
  ASSERT_FALSE(vulkan_path.empty());
  auto gpu = TextGenerator::load(vulkan_path, nullptr);
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  TextGenerator& v = **gpu;
  // 60 prompt tokens + 10 new ones exceed the 64-row cache: the runner stops at the context's
  // end (its own check), never handing the delegate a position past the cache.
  std::vector<int32_t> prompt(60);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37) % 512);
  GenerationConfig config;
  config.max_new_tokens = 10;
  GenerationResult result;
  Status s = v.generate(prompt, config, nullptr, &result);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_LE(v.position(), 64);
  EXPECT_EQ(result.stop_reason, StopReason::ContextFull);
}

// The trained fortunes decoder (examples/llm) exported for Vulkan: one delegate call per token,
// PyTorch's greedy generations token for token (fortunes_reference.h).
TEST(VulkanFortunesTest, GreedyGenerationIsPyTorchs) {
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  if (!vulkan::vulkan_backend().is_available()) GTEST_SKIP() << "no Vulkan device";
  exporter::ExportOptions options;
  options.metadata = fortunes::read_metadata();
  vulkan::VulkanPartitionerOptions vo;
  vo.allow_cpu = true;
  options.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  auto result = exporter::export_pt2_file(fortunes::repo_path("examples/llm/fortunes_llm.pt2"), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->backends.size(), 1u);
  EXPECT_EQ(result->backends[0].delegates, 1);
  EXPECT_EQ(result->portable_ops, (std::map<std::string, int>{{"aten::sym_size.int", 1}}));
  const std::string path = temp_path("fortunes_vulkan.pte");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(result->pte.data()), static_cast<std::streamsize>(result->pte.size()));
  auto g = fortunes::load(path);
  ASSERT_TRUE(g);
  fortunes::expect_greedy_matches(*g, 0.01);  // other summation orders: skip a near-tie prompt
}

}  // namespace
}  // namespace llm
}  // namespace ember
