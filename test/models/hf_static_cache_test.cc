// A Llama decoder exported the way Hugging Face users export one for on-device runtimes:
// transformers.integrations.executorch.convert_and_export_with_cache (static KV cache as
// mutable buffers, inputs input_ids [1, 1] and cache_position [1]); test/models/
// hf_llama_static_cache, written by tools/models/export_partition_cases.py hf_llama_tiny with
// transformers 5.17 and PyTorch 2.11. Its XNNPACK export once failed (a claimed partition was
// not convex through the cache writes) and `ember generate` stopped at once (the runner took
// the one-token input for the context length).
//
// Checked, portable and XNNPACK: two calls on one loaded program against the exported
// program's logits in PyTorch (the second is right only if the first call's cache writes are
// kept); the exporter records the cache length as max_seq_len; and greedy generation through
// the LLM runner gives exactly PyTorch's tokens (transformers' generate() gave the same).
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "extension/llm/text_generator.h"
#include "test/exporter/pte_runner.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

using testing::repo_path;

const char* kDir = "test/models/hf_llama_static_cache";

exporter::NpyArray npy(const std::string& name) {
  auto a = exporter::read_npy(repo_path(std::string(kDir) + "/" + name));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : exporter::NpyArray();
}

class HfStaticCache : public ::testing::TestWithParam<bool> {};  // XNNPACK or not

TEST_P(HfStaticCache, RunsAndGeneratesPyTorchsGreedyTokens) {
  const bool xnnpack = GetParam();
  std::ifstream meta_file(repo_path(std::string(kDir) + "/meta.json"));
  const nlohmann::json meta = nlohmann::json::parse(meta_file);
  exporter::ExportOptions options;
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = exporter::export_pt2_file(repo_path(std::string(kDir) + "/model.pt2"), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->warnings.empty());
  if (xnnpack) {
    ASSERT_EQ(r->backends.size(), 1u);
    EXPECT_GT(r->backends[0].nodes, 50);
    EXPECT_EQ(r->backends[0].fallbacks, 0);
  }
  ASSERT_EQ(r->inferred_metadata.size(), 1u);
  EXPECT_EQ(r->inferred_metadata[0].first, "max_seq_len");
  EXPECT_EQ(r->inferred_metadata[0].second, std::to_string(meta["max_cache_len"].get<int64_t>()));

  // Two calls, one program: the cache carries over.
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_EQ(runner.run({npy("input_0.npy"), npy("input_1.npy")}), "");
  EXPECT_LT(testing::relative_l2(runner.output(0), npy("output_0.npy")), 1e-4);
  ASSERT_EQ(runner.run({npy("step_input_0.npy"), npy("step_input_1.npy")}), "");
  EXPECT_LT(testing::relative_l2(runner.output(0), npy("step_output_0.npy")), 1e-4);

  // Greedy generation through the runner, token by token through the static cache.
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                           (xnnpack ? "/hf_static_cache_xnnpack.pte" : "/hf_static_cache.pte");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(r->pte.data()), std::streamsize(r->pte.size()));
  auto g = llm::TextGenerator::load(path, nullptr);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ((*g)->max_seq_len(), meta["max_cache_len"].get<int64_t>());
  const std::vector<int32_t> prompt = meta["prompt"].get<std::vector<int32_t>>();
  const std::vector<int32_t> want = meta["greedy"].get<std::vector<int32_t>>();
  EXPECT_EQ(want, meta["hf_generate"].get<std::vector<int32_t>>());  // the reference agrees with itself
  llm::GenerationConfig config;
  config.max_new_tokens = int32_t(want.size());
  config.add_bos = false;
  llm::GenerationResult result;
  ASSERT_TRUE((*g)->generate(prompt, config, nullptr, &result).ok());
  EXPECT_EQ(result.generated_tokens, want);
  EXPECT_EQ(result.prompt_tokens, int32_t(prompt.size()));
}

INSTANTIATE_TEST_SUITE_P(Backends, HfStaticCache, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "xnnpack" : "portable"; });

}  // namespace
}  // namespace ember
