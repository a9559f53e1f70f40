// The checked-in fortunes model's PyTorch references (test/llm/data/generation/greedy.json,
// written by tools/models/train_fortunes_llm.py) and the check that a program generates them:
// shared by fortunes_llm_test.cc (portable, XNNPACK) and vulkan_generate_test.cc.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "extension/llm/text_generator.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/support/repo_path.h"

namespace ember {
namespace llm {
namespace fortunes {

using ::ember::testing::repo_path;

inline nlohmann::json read_json(const std::string& rel) {
  std::ifstream in(repo_path(rel));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << rel;
  return j;
}

// examples/llm/metadata.txt: one key=value per line, as `ember export --metadata` takes them.
inline exporter::ProgramMetadata read_metadata() {
  exporter::ProgramMetadata md;
  std::ifstream in(repo_path("examples/llm/metadata.txt"));
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) md.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return md;
}

inline std::unique_ptr<TextGenerator> load(const std::string& pte) {
  auto tokenizer = load_tokenizer(repo_path("examples/llm/tokenizer.json"));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().to_string();
  if (!tokenizer.ok()) return nullptr;
  auto g = TextGenerator::load(pte, std::move(*tokenizer));
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : nullptr;
}

// Generates greedily from every reference prompt; prompts whose closest argmax decision is
// below `min_margin` are skipped (float summation order may flip a near-tie).
inline void expect_greedy_matches(TextGenerator& g, double min_margin) {
  const nlohmann::json ref = read_json("test/llm/data/generation/greedy.json");
  ASSERT_TRUE(ref.contains("generations"));
  EXPECT_EQ(g.bos_id(), ref["bos_id"].get<int64_t>());
  EXPECT_EQ(g.eos_ids(), std::vector<int64_t>{ref["eos_id"].get<int64_t>()});
  EXPECT_EQ(g.max_seq_len(), ref["max_seq_len"].get<int64_t>());
  int checked = 0;
  for (const auto& gen : ref["generations"]) {
    if (gen["min_top2_logit_margin"].get<double>() < min_margin) continue;
    const std::string prompt = gen["prompt"].get<std::string>();
    std::vector<int32_t> want_prompt = gen["prompt_ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> ids;
    ASSERT_TRUE(g.tokenizer()->encode(prompt, &ids).ok());
    EXPECT_EQ(std::vector<int32_t>(want_prompt.begin() + 1, want_prompt.end()), ids) << prompt;  // BOS first

    ASSERT_TRUE(g.reset().ok());
    GenerationConfig config;
    config.max_new_tokens = ref["max_new_tokens"].get<int32_t>();
    GenerationResult result;
    std::string streamed;
    ASSERT_TRUE(g.generate(std::string_view(prompt), config,
                           [&](int32_t, std::string_view text) {
                             streamed.append(text);
                             return true;
                           },
                           &result)
                    .ok());
    EXPECT_EQ(result.prompt_tokens, static_cast<int32_t>(want_prompt.size()));
    std::vector<int32_t> want = gen["generated_ids"].get<std::vector<int32_t>>();
    if (gen["stopped_at_eos"].get<bool>()) {
      want.push_back(ref["eos_id"].get<int32_t>());  // the runner reports the EOS that stopped it
      EXPECT_EQ(result.stop_reason, StopReason::Eos);
    }
    EXPECT_EQ(result.generated_tokens, want) << prompt;
    EXPECT_EQ(streamed, gen["text"].get<std::string>()) << prompt;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace fortunes
}  // namespace llm
}  // namespace ember
