// Malformed and unsupported tokenizer files: each is an error that names the problem, never a
// crash or a tokenizer that would give wrong ids.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "extension/llm/tokenizer.h"

namespace ember {
namespace llm {
namespace {

using Json = nlohmann::json;

std::string data_file(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  std::string path = "test/llm/data/" + name;
  if (srcdir != nullptr && ws != nullptr) path = std::string(srcdir) + "/" + ws + "/" + path;
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const Json& gpt2() {
  static const Json j = Json::parse(data_file("gpt2_bpe.json"));
  return j;
}

// Loading `bytes` fails with `code` and a message containing `needle`.
void expect_error(const std::string& bytes, Error code, const std::string& needle) {
  auto t = load_tokenizer_from_buffer(bytes, "test.json");
  ASSERT_FALSE(t.ok()) << "loaded: " << bytes.substr(0, 200);
  EXPECT_EQ(t.error().code(), code) << t.error().to_string();
  EXPECT_NE(t.error().message().find(needle), std::string::npos) << t.error().to_string();
  EXPECT_NE(t.error().message().find("test.json"), std::string::npos) << t.error().to_string();
}

void expect_json_error(const Json& j, Error code, const std::string& needle) {
  expect_error(j.dump(), code, needle);
}

TEST(TokenizerErrorTest, MissingUnreadableAndEmptyFiles) {
  auto missing = load_tokenizer("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Error::AccessFailed);
  EXPECT_NE(missing.error().message().find("/nonexistent/dir/tokenizer.json"), std::string::npos);
  EXPECT_NE(missing.error().message().find("No such file"), std::string::npos);
  auto dir = load_tokenizer("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message().find("not a regular file"), std::string::npos);
  expect_error("", Error::InvalidArgument, "empty");
}

TEST(TokenizerErrorTest, CorruptAndTruncatedJson) {
  const std::string text = data_file("gpt2_bpe.json");
  ASSERT_GT(text.size(), 1000u);
  expect_error(text.substr(0, text.size() / 2), Error::InvalidArgument, "not valid JSON");
  expect_error("{\"model\": {\"type\": \"BPE\",}", Error::InvalidArgument, "not valid JSON");
  expect_error("{\"model\": \"\xFF\xFE\"}", Error::InvalidArgument, "not valid JSON");
  expect_error("  [1, 2]", Error::InvalidArgument, "SentencePiece");  // not '{': SentencePiece
  expect_error("{\"version\": \"1.0\"}", Error::InvalidArgument, "model");
  expect_error("{\"model\": 5}", Error::InvalidArgument, "model");
}

TEST(TokenizerErrorTest, NotASentencePieceModel) {
  expect_error("garbage bytes that are no protobuf \x01\x02\x03", Error::InvalidArgument,
               "SentencePiece");
  const std::string sp = data_file("sp_bpe.model");
  ASSERT_GT(sp.size(), 100u);
  auto t = load_tokenizer_from_buffer(sp.substr(0, sp.size() / 3), "test.model");
  EXPECT_FALSE(t.ok());  // truncated protobuf
}

TEST(TokenizerErrorTest, UnsupportedModelAndPipeline) {
  Json j = gpt2();
  j["model"]["type"] = "Unigram";
  expect_json_error(j, Error::NotSupported, "'Unigram' is not supported");
  j = gpt2();
  j["model"]["type"] = "WordPiece";
  expect_json_error(j, Error::NotSupported, "WordPiece");
  j = gpt2();
  j["normalizer"] = {{"type", "NFC"}};
  expect_json_error(j, Error::NotSupported, "'NFC'");
  j = gpt2();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_json_error(j, Error::NotSupported, "'Whitespace'");
  j = gpt2();
  j["pre_tokenizer"] = nullptr;
  expect_json_error(j, Error::NotSupported, "ByteLevel");
  j = gpt2();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {gpt2()["pre_tokenizer"], gpt2()["pre_tokenizer"]}}};
  expect_json_error(j, Error::NotSupported, "exactly one");
  j = gpt2();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_json_error(j, Error::NotSupported, "decoder");
  j = gpt2();
  j["model"]["dropout"] = 0.1;
  expect_json_error(j, Error::NotSupported, "dropout");
  j = gpt2();
  j["model"]["continuing_subword_prefix"] = "##";
  expect_json_error(j, Error::NotSupported, "continuing_subword_prefix");
  j = gpt2();
  j["model"]["future_flag"] = true;
  expect_json_error(j, Error::NotSupported, "future_flag");
  j = gpt2();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_json_error(j, Error::InvalidArgument, "does not compile");
}

TEST(TokenizerErrorTest, BadVocabMergesAndAddedTokens) {
  Json j = gpt2();
  j["model"]["merges"].push_back("zz\xC4\xA0 qqq");
  expect_json_error(j, Error::InvalidArgument, "not in model.vocab");
  j = gpt2();
  j["model"]["merges"].push_back("a b c");
  expect_json_error(j, Error::InvalidArgument, "one space");
  j = gpt2();
  j["model"]["merges"].push_back(Json::array({"a"}));
  expect_json_error(j, Error::InvalidArgument, "model.merges[");
  j = gpt2();
  j["model"]["merges"] = "h e";
  expect_json_error(j, Error::InvalidArgument, "must be an array");
  j = gpt2();
  j["model"]["vocab"]["newtoken"] = 5;  // 5 is already another token's id
  expect_json_error(j, Error::InvalidArgument, "each id must name one token");
  j = gpt2();
  j["model"]["vocab"]["newtoken"] = -1;
  expect_json_error(j, Error::InvalidArgument, "integer");
  j = gpt2();
  j["model"]["vocab"]["newtoken"] = "7";
  expect_json_error(j, Error::InvalidArgument, "integer");
  j = gpt2();
  j["model"]["vocab"]["newtoken"] = 5000000;
  expect_json_error(j, Error::InvalidArgument, "sparse");
  j = gpt2();
  j["model"]["vocab"] = Json::object();
  expect_json_error(j, Error::InvalidArgument, "non-empty");
  j = gpt2();
  j["model"]["unk_token"] = "<unk>";
  expect_json_error(j, Error::InvalidArgument, "unk_token");
  j = gpt2();
  j["added_tokens"][0]["id"] = 7;  // <|endoftext|> is id 0 in the vocab
  expect_json_error(j, Error::InvalidArgument, "model.vocab gives it id 0");
  j = gpt2();
  j["added_tokens"].push_back({{"id", 5}, {"content", "<new>"}, {"special", true}});
  expect_json_error(j, Error::InvalidArgument, "already model.vocab's");
  j = gpt2();
  j["added_tokens"].push_back({{"id", 2000}, {"content", "<|endoftext|>"}, {"special", true}});
  expect_json_error(j, Error::InvalidArgument, "added_tokens[1]");
  j = gpt2();
  j["added_tokens"].push_back({{"id", 2000}, {"content", ""}});
  expect_json_error(j, Error::InvalidArgument, "content");
  j = gpt2();
  j["added_tokens"][0]["lstrip"] = "yes";
  expect_json_error(j, Error::InvalidArgument, "true or false");
}

TEST(TokenizerErrorTest, EveryTruncationOfASmallFileIsHandled) {
  // A complete small tokenizer.json, cut at every length: errors, never a crash.
  Json vocab = Json::object();
  for (int b = 0; b < 26; ++b) vocab[std::string(1, static_cast<char>('a' + b))] = b;
  vocab["ab"] = 26;
  const std::string text =
      Json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}},
           {"pre_tokenizer", {{"type", "ByteLevel"}}},
           {"decoder", {{"type", "ByteLevel"}}}}
          .dump();
  ASSERT_TRUE(load_tokenizer_from_buffer(text, "test.json").ok());
  for (size_t n = 0; n < text.size(); ++n) {
    auto t = load_tokenizer_from_buffer(text.substr(0, n), "test.json");
    EXPECT_FALSE(t.ok()) << n;
  }
}

}  // namespace
}  // namespace llm
}  // namespace ember
