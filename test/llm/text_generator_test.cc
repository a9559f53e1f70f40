// TextGenerator on the shared tiny_llama_kv decoder (KV cache as state, T dynamic 1..64):
// greedy tokens against PyTorch's logits, conversations continuing and resetting, program
// metadata and its overrides, stop conditions, an allocation-free decode loop and errors.
// The fortunes model's token-for-token check against PyTorch is fortunes_llm_test.cc.
#include "extension/llm/text_generator.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "extension/llm/utf8_streamer.h"
#include "test/exporter/shared_dir.h"
#include "test/support/allocation_counter.h"

namespace ember {
namespace llm {
namespace {

std::string temp_path(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

// tiny_llama_kv exported with `metadata`, written to a temporary file ("" when shared/ is absent).
std::string export_kv(const exporter::ProgramMetadata& metadata, const std::string& name) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) return "";
  exporter::ExportOptions options;
  options.metadata = metadata;
  auto result = exporter::export_pt2_file(shared + "/models/tiny_llama_kv/model.pt2", options);
  if (!result.ok()) {
    ADD_FAILURE() << result.status().message();
    return "";
  }
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(result->pte.data()), static_cast<std::streamsize>(result->pte.size()));
  return path;
}

std::vector<int32_t> ids_of(const TensorPtr& t) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < t.numel(); ++i) ids.push_back(static_cast<int32_t>(t.data<int64_t>()[i]));
  return ids;
}

int32_t argmax_last_row(const TensorPtr& logits) {
  const int64_t vocab = logits.sizes().back();
  const float* row = logits.data<float>() + logits.numel() - vocab;
  int32_t best = 0;
  for (int32_t i = 1; i < vocab; ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

std::unique_ptr<TextGenerator> load(const std::string& path, const GeneratorOptions& options = GeneratorOptions()) {
  auto g = TextGenerator::load(path, nullptr, options);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : nullptr;
}

std::vector<int32_t> greedy(TextGenerator& g, const std::vector<int32_t>& prompt, int n, StopReason* why = nullptr) {
  GenerationConfig config;
  config.max_new_tokens = n;
  GenerationResult result;
  Status s = g.generate(prompt, config, nullptr, &result);
  EXPECT_TRUE(s.ok()) << s.to_string();
  if (why) *why = result.stop_reason;
  return result.generated_tokens;
}

class TextGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = testing::shared_dir();
    if (shared_.empty()) GTEST_SKIP() << "shared/ data not found";
    path_ = export_kv({{"max_seq_len", "64"}, {"vocab_size", "512"}}, "kv.pte");
    ASSERT_FALSE(path_.empty());
    const std::string dir = shared_ + "/models/tiny_llama_kv/";
    prompt_ = ids_of(*read_npy(dir + "input_0.npy"));  // 8 tokens
    step_token_ = ids_of(*read_npy(dir + "step_input_0.npy"))[0];
    prefill_logits_ = *read_npy(dir + "output_0.npy");
    step_logits_ = *read_npy(dir + "step_output_0.npy");
  }
  std::string shared_, path_;
  std::vector<int32_t> prompt_;
  int32_t step_token_ = 0;
  TensorPtr prefill_logits_, step_logits_;
};

TEST_F(TextGeneratorTest, FirstTokensAreTheArgmaxOfPyTorchsLogits) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->max_seq_len(), 64);
  EXPECT_EQ(g->max_chunk(), 64);
  EXPECT_EQ(g->vocab_size(), 512);
  EXPECT_EQ(greedy(*g, prompt_, 1), std::vector<int32_t>{argmax_last_row(prefill_logits_)});
  // PyTorch's second call fed step_token_ at position 8 after the 8-token prefill.
  ASSERT_TRUE(g->reset().ok());
  std::vector<int32_t> nine = prompt_;
  nine.push_back(step_token_);
  EXPECT_EQ(greedy(*g, nine, 1), std::vector<int32_t>{argmax_last_row(step_logits_)});
}

TEST_F(TextGeneratorTest, AConversationContinuesAndResetStartsAfresh) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  const std::vector<int32_t> first = greedy(*g, prompt_, 6);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(g->position(), 8 + 5);  // the last generated token is fed by the next call
  const std::vector<int32_t> more = {3, 141, 59};
  const std::vector<int32_t> continued = greedy(*g, more, 5);
  EXPECT_EQ(g->position(), 8 + 6 + 3 + 4);

  // The same context from scratch, in one prefill, gives the same tokens.
  ASSERT_TRUE(g->reset().ok());
  EXPECT_EQ(g->position(), 0);
  std::vector<int32_t> whole = prompt_;
  whole.insert(whole.end(), first.begin(), first.end());
  whole.insert(whole.end(), more.begin(), more.end());
  EXPECT_EQ(greedy(*g, whole, 5), continued);
  ASSERT_TRUE(g->reset().ok());
  EXPECT_EQ(greedy(*g, prompt_, 6), first);
}

TEST_F(TextGeneratorTest, SampledRunsRepeatForASeedAfterReset) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  GenerationConfig config;
  config.max_new_tokens = 12;
  config.sampling.temperature = 1.f;
  config.sampling.top_k = 50;
  config.sampling.seed = 5;
  GenerationResult a, b, c;
  ASSERT_TRUE(g->generate(prompt_, config, nullptr, &a).ok());
  ASSERT_TRUE(g->reset().ok());
  ASSERT_TRUE(g->generate(prompt_, config, nullptr, &b).ok());
  EXPECT_EQ(a.generated_tokens, b.generated_tokens);
  ASSERT_TRUE(g->reset().ok());
  config.sampling.seed = 6;
  ASSERT_TRUE(g->generate(prompt_, config, nullptr, &c).ok());
  EXPECT_NE(a.generated_tokens, c.generated_tokens);
}

TEST_F(TextGeneratorTest, StopsAtEosAtTheContextEndAndWhenTheCallbackSaysSo) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  const std::vector<int32_t> free_run = greedy(*g, prompt_, 4);

  GeneratorOptions options;
  options.eos_ids = std::vector<int64_t>{free_run[2]};
  auto with_eos = load(path_, options);
  ASSERT_TRUE(with_eos);
  StopReason why;
  std::vector<int32_t> stopped = greedy(*with_eos, prompt_, 10, &why);
  EXPECT_EQ(why, StopReason::Eos);
  // The first occurrence of the EOS id ends generation, EOS included.
  size_t first_eos = 0;
  while (free_run[first_eos] != free_run[2]) ++first_eos;
  EXPECT_EQ(stopped, std::vector<int32_t>(free_run.begin(), free_run.begin() + first_eos + 1));

  options = GeneratorOptions();
  options.max_seq_len = 12;
  auto short_ctx = load(path_, options);
  ASSERT_TRUE(short_ctx);
  std::vector<int32_t> limited = greedy(*short_ctx, prompt_, 40, &why);
  EXPECT_EQ(why, StopReason::ContextFull);
  EXPECT_EQ(limited.size(), 12u - 8u + 1u);  // positions 8..11 fed, plus the last sampled token

  ASSERT_TRUE(g->reset().ok());
  GenerationConfig config;
  config.max_new_tokens = 20;
  GenerationResult result;
  int calls = 0;
  ASSERT_TRUE(g->generate(prompt_, config, [&](int32_t, std::string_view) { return ++calls < 3; }, &result).ok());
  EXPECT_EQ(result.stop_reason, StopReason::Cancelled);
  EXPECT_EQ(result.generated_tokens.size(), 3u);
}

TEST_F(TextGeneratorTest, DecodeLoopAllocatesNothing) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  GenerationConfig config;
  config.max_new_tokens = 16;
  config.sampling.temperature = 0.8f;
  config.sampling.top_p = 0.9f;
  config.stop_strings = {"never printed"};
  GenerationResult result;
  ASSERT_TRUE(g->generate(prompt_, config, nullptr, &result).ok());  // warm-up
  ASSERT_TRUE(g->reset().ok());
  uint64_t at_first = 0, at_last = 0;
  int seen = 0;
  auto count = [&](int32_t, std::string_view) {
    (++seen == 1 ? at_first : at_last) = testing::allocation_count();
    return true;
  };
  ASSERT_TRUE(g->generate(prompt_, config, count, &result).ok());
  ASSERT_EQ(seen, 16);
  EXPECT_EQ(at_last, at_first) << "allocations during 15 decode steps";
  EXPECT_GT(result.decode_tokens_per_s(), 0);
  EXPECT_GT(result.prefill_tokens_per_s(), 0);
  EXPECT_GE(result.ttft_ms, result.prefill_ms);
  // The decode's parts: 15 forward calls and 16 samples, inside decode_ms (plus the first sample).
  EXPECT_GT(result.decode_forward_ms, 0);
  EXPECT_GT(result.sample_ms, 0);
  EXPECT_LE(result.decode_forward_ms, result.decode_ms);
}

TEST_F(TextGeneratorTest, MetadataIsReadAndChecked) {
  Module module(path_);
  auto entries = module.metadata();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].first, "max_seq_len");
  EXPECT_EQ(*module.metadata("vocab_size"), "512");
  auto missing = module.metadata("eos_id");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("it has: max_seq_len, vocab_size"), std::string::npos);

  const std::string wrong_vocab = export_kv({{"vocab_size", "1000"}}, "kv_bad_vocab.pte");
  auto bad = TextGenerator::load(wrong_vocab, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("vocab_size=1000"), std::string::npos) << bad.error().message();
  const std::string not_int = export_kv({{"eos_id", "two"}}, "kv_bad_eos.pte");
  auto bad_eos = TextGenerator::load(not_int, nullptr);
  ASSERT_FALSE(bad_eos.ok());
  EXPECT_NE(bad_eos.error().message().find("eos_id='two'"), std::string::npos) << bad_eos.error().message();
  const std::string with_eos = export_kv({{"eos_id", "3,7"}, {"bos_id", "1"}}, "kv_eos.pte");
  auto ok = load(with_eos);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->eos_ids(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(ok->bos_id(), 1);
  EXPECT_EQ(ok->max_seq_len(), 64);  // no max_seq_len entry: the bound of T
  // BOS is prepended at the start of a conversation.
  GenerationConfig config;
  config.max_new_tokens = 1;
  GenerationResult result;
  ASSERT_TRUE(ok->generate(prompt_, config, nullptr, &result).ok());
  EXPECT_EQ(result.prompt_tokens, 9);

  GeneratorOptions options;
  options.bos_id = 600;
  EXPECT_FALSE(TextGenerator::load(path_, nullptr, options).ok());
}

TEST_F(TextGeneratorTest, BadRequestsAreErrors) {
  auto g = load(path_);
  ASSERT_TRUE(g);
  GenerationConfig config;
  GenerationResult result;
  Status s = g->generate(std::vector<int32_t>{1, 512}, config, nullptr, &result);
  EXPECT_EQ(s.code(), Error::InvalidArgument);
  EXPECT_NE(s.message().find("512"), std::string::npos);
  s = g->generate(std::vector<int32_t>(65, 1), config, nullptr, &result);
  EXPECT_EQ(s.code(), Error::OutOfBounds);
  EXPECT_NE(s.message().find("max_seq_len 64"), std::string::npos) << s.message();
  s = g->generate(std::vector<int32_t>{}, config, nullptr, &result);
  EXPECT_EQ(s.code(), Error::InvalidArgument);
  s = g->generate(std::string_view("text"), config, nullptr, &result);
  EXPECT_EQ(s.code(), Error::InvalidState);
  config.sampling.top_p = 2.f;
  s = g->generate(prompt_, config, nullptr, &result);
  EXPECT_EQ(s.code(), Error::InvalidArgument);
  // A program that is not a language model is refused with the convention spelled out.
  if (!shared_.empty()) {
    auto cnn = exporter::export_pt2_file(shared_ + "/models/small_cnn/model.pt2", exporter::ExportOptions());
    ASSERT_TRUE(cnn.ok());
    const std::string path = temp_path("cnn.pte");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(cnn->pte.data()), static_cast<std::streamsize>(cnn->pte.size()));
    auto not_lm = TextGenerator::load(path, nullptr);
    ASSERT_FALSE(not_lm.ok());
    EXPECT_NE(not_lm.error().message().find("input_pos"), std::string::npos);
  }
  EXPECT_FALSE(TextGenerator::load(temp_path("does_not_exist.pte"), nullptr).ok());
}

TEST(Utf8StreamerTest, HoldsBackSplitCharactersOnly) {
  Utf8Streamer s;
  s.reserve(16);
  EXPECT_EQ(s.push("ab"), "ab");
  EXPECT_EQ(s.push("c\xE2\x82"), "c");  // "€" = E2 82 AC split after two bytes
  EXPECT_EQ(s.push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(s.push("\xF0\x9F"), "");  // half an emoji
  EXPECT_EQ(s.flush(), "\xF0\x9F");
  EXPECT_EQ(s.push("\x80x"), "\x80x");  // a stray continuation byte passes through
}

TEST(ParseTokenListTest, IdsAndErrors) {
  EXPECT_EQ(*parse_token_list("1,2, 3"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(parse_token_list("1,,2").ok());
  EXPECT_FALSE(parse_token_list("1,-2").ok());
  EXPECT_FALSE(parse_token_list("1,x").ok());
  EXPECT_FALSE(parse_token_list("99999999999").ok());
}

// A program of two methods (prefill: 8 tokens, decode: 1 token) sharing one KV cache, from
// test/models/prefill_decode: generation equals PyTorch's greedy tokens, and equals the
// single-method program of the decode archive (the same weights, one token per call) for
// prompts shorter than prefill's T (padded), equal to it and longer (chunks).
namespace pd {

std::string data(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return (srcdir && ws ? std::string(srcdir) + "/" + ws + "/" : "") + "test/models/prefill_decode/" + path;
}

std::string write(const std::vector<uint8_t>& pte, const std::string& name) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(pte.data()), static_cast<std::streamsize>(pte.size()));
  return path;
}

}  // namespace pd

TEST(PrefillDecodeProgram, GeneratesPyTorchsAndTheSingleMethodProgramsTokens) {
  auto pair = exporter::export_pt2_files(
      {{"prefill", pd::data("prefill/model.pt2")}, {"decode", pd::data("decode/model.pt2")}}, exporter::ExportOptions());
  ASSERT_TRUE(pair.ok()) << pair.status();
  auto single = exporter::export_pt2_file(pd::data("decode/model.pt2"), exporter::ExportOptions());
  ASSERT_TRUE(single.ok()) << single.status();
  GeneratorOptions options;
  options.bos_id = -1;
  auto two = load(pd::write(pair->pte, "prefill_decode.pte"), options);
  auto one = load(pd::write(single->pte, "decode_only.pte"), options);
  ASSERT_TRUE(two && one);
  EXPECT_EQ(two->max_chunk(), 8);
  EXPECT_EQ(one->max_chunk(), 1);
  EXPECT_EQ(two->max_seq_len(), 32);

  auto want = read_npy(pd::data("greedy.npy"));
  ASSERT_TRUE(want.ok());
  std::vector<int32_t> prompt = ids_of(*read_npy(pd::data("prompt.npy")));
  EXPECT_EQ(greedy(*two, prompt, 8), ids_of(*want));

  for (size_t length : {3u, 8u, 13u}) {
    std::vector<int32_t> p;
    for (size_t i = 0; i < length; ++i) p.push_back(static_cast<int32_t>((37 * i + 11) % 256));
    ASSERT_TRUE(two->reset().ok());
    ASSERT_TRUE(one->reset().ok());
    EXPECT_EQ(greedy(*two, p, 10), greedy(*one, p, 10)) << "prompt of " << length << " tokens";
  }
  // A conversation continues from the shared cache: a second turn after the first.
  ASSERT_TRUE(two->reset().ok());
  ASSERT_TRUE(one->reset().ok());
  const std::vector<int32_t> turn = {5, 6, 7};
  greedy(*two, prompt, 4);
  greedy(*one, prompt, 4);
  EXPECT_EQ(greedy(*two, turn, 5), greedy(*one, turn, 5));
}

}  // namespace
}  // namespace llm
}  // namespace ember
