// The checked-in language model (examples/llm: a Llama-style decoder trained on Debian's
// fortunes corpus, its byte-level BPE tokenizer and the metadata its export needs) exported
// by Ember and run by TextGenerator reproduces PyTorch's greedy generation token for token
// (test/llm/data/generation/greedy.json, written by tools/models/train_fortunes_llm.py), on
// the portable kernels and with XNNPACK.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "extension/llm/text_generator.h"
#include "test/llm/fortunes_reference.h"
#include "test/support/repo_path.h"

namespace ember {
namespace llm {
namespace {

using testing::repo_path;
using fortunes::expect_greedy_matches;
using fortunes::load;
using fortunes::read_json;
using fortunes::read_metadata;

std::string export_model(bool xnnpack, exporter::QuantizeMode quantize = exporter::QuantizeMode::None,
                         std::map<std::string, int>* portable_ops = nullptr) {
  exporter::ExportOptions options;
  options.metadata = read_metadata();
  options.quantize.mode = quantize;
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto result = exporter::export_pt2_file(repo_path("examples/llm/fortunes_llm.pt2"), options);
  if (!result.ok()) {
    ADD_FAILURE() << result.status().message();
    return "";
  }
  if (portable_ops != nullptr) *portable_ops = result->portable_ops;
  const std::string path = std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
                           (xnnpack ? "/fortunes_xnnpack" : "/fortunes") + std::to_string(int(quantize)) + ".pte";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(result->pte.data()), static_cast<std::streamsize>(result->pte.size()));
  return path;
}

TEST(FortunesLlmTest, PortableGreedyGenerationIsPyTorchsTokenForToken) {
  const std::string pte = export_model(false);
  ASSERT_FALSE(pte.empty());
  auto g = load(pte);
  ASSERT_TRUE(g);
  expect_greedy_matches(*g, 0.0);
}

TEST(FortunesLlmTest, XnnpackGreedyGenerationIsPyTorchs) {
  const std::string pte = export_model(true);
  ASSERT_FALSE(pte.empty());
  auto g = load(pte);
  ASSERT_TRUE(g);
  expect_greedy_matches(*g, 0.01);  // other summation orders: skip the near-tie prompt
}

// Last-position prefill logits of reference prompt 0 (T dynamic) from program `pte`, and
// PyTorch's (float).
void prefill_logits(const std::string& pte, std::vector<float>* got, std::vector<float>* want) {
  const nlohmann::json ref = read_json("test/llm/data/generation/greedy.json");
  const std::vector<int64_t> prompt = ref["generations"][0]["prompt_ids"].get<std::vector<int64_t>>();
  const int64_t n = static_cast<int64_t>(prompt.size());
  std::vector<int64_t> positions(prompt.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
  Module module(pte);
  auto out = module.forward({make_tensor(prompt, {1, n}), make_tensor(positions, {n})});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  auto w = read_npy(repo_path("test/llm/data/generation/prefill_logits_0.npy"));
  ASSERT_TRUE(w.ok());
  const int64_t vocab = w->numel();
  ASSERT_EQ(out->at(0).numel(), n * vocab);
  const float* last = out->at(0).data<float>() + (n - 1) * vocab;
  got->assign(last, last + vocab);
  want->assign(w->data<float>(), w->data<float>() + vocab);
}

// Weight-only int8 / int4 (groups of 32) on XNNPACK's qd8 fully connected layers, with the
// dynamic prefill length and the decode loop: every linear layer is delegated, the prefill
// logits stay near PyTorch's float ones (measured 0.86% / 6.1% relative L2; int8 keeps the
// top token, int4 keeps it among its five highest), and greedy generation runs to the end. (Token-for-token equality is for the float
// program: quantized weights change the model.)
TEST(FortunesLlmTest, QuantizedOnXnnpackStaysNearTheFloatModel) {
  struct Case {
    exporter::QuantizeMode mode;
    double bound;
  };
  for (const Case& c : {Case{exporter::QuantizeMode::Int8Weight, 0.03}, Case{exporter::QuantizeMode::Int4Weight, 0.15}}) {
    std::map<std::string, int> portable;
    const std::string pte = export_model(true, c.mode, &portable);
    ASSERT_FALSE(pte.empty());
    EXPECT_EQ(portable.count("ember_quantized::linear_weight_only.default"), 0u) << "a linear layer stayed portable";
    std::vector<float> got, want;
    prefill_logits(pte, &got, &want);
    double d = 0, norm = 0;
    size_t top_got = 0, top_want = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      d += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      norm += double(want[i]) * want[i];
      top_got = got[i] > got[top_got] ? i : top_got;
      top_want = want[i] > want[top_want] ? i : top_want;
    }
    const double rel = std::sqrt(d / norm);
    std::printf("[fortunes %s xnnpack] prefill logits relative L2 %.5f vs float PyTorch\n",
                c.mode == exporter::QuantizeMode::Int8Weight ? "int8-weight" : "int4-weight", rel);
    EXPECT_LT(rel, c.bound);
    if (c.mode == exporter::QuantizeMode::Int8Weight) {
      EXPECT_EQ(top_got, top_want);
    } else {  // int4 may swap close candidates: PyTorch's top token is among its 5 highest
      int above = 0;
      for (float v : got) above += v > got[top_want];
      EXPECT_LT(above, 5);
    }
    auto g = load(pte);
    ASSERT_TRUE(g);
    GenerationConfig config;
    config.max_new_tokens = 40;
    GenerationResult result;
    ASSERT_TRUE(g->generate(std::string_view("The best way to"), config, nullptr, &result).ok());
    EXPECT_GE(result.generated_tokens.size(), 1u);
  }
}

TEST(FortunesLlmTest, PrefillLogitsMatchPyTorch) {
  const std::string pte = export_model(false);
  ASSERT_FALSE(pte.empty());
  const nlohmann::json ref = read_json("test/llm/data/generation/greedy.json");
  const std::vector<int64_t> prompt = ref["generations"][0]["prompt_ids"].get<std::vector<int64_t>>();
  const int64_t n = static_cast<int64_t>(prompt.size());
  std::vector<int64_t> positions(prompt.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
  Module module(pte);
  auto out = module.forward({make_tensor(prompt, {1, n}), make_tensor(positions, {n})});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  auto want = read_npy(repo_path("test/llm/data/generation/prefill_logits_0.npy"));
  ASSERT_TRUE(want.ok());
  const int64_t vocab = want->numel();
  ASSERT_EQ(out->at(0).numel(), n * vocab);
  const float* last = out->at(0).data<float>() + (n - 1) * vocab;
  double max_diff = 0;
  for (int64_t i = 0; i < vocab; ++i) max_diff = std::max(max_diff, std::fabs(double(last[i]) - want->data<float>()[i]));
  EXPECT_LT(max_diff, 1e-4);
}

}  // namespace
}  // namespace llm
}  // namespace ember
