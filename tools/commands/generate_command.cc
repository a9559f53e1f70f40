// `ember generate MODEL.pte [--tokenizer FILE] (--prompt TEXT | --prompt-tokens 1,2,3)
//  [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R]
//  [--seed S] [--stop TEXT]... [--threads N] [--max-seq-len N] [--bos-id ID] [--eos-id IDS]
//  [--no-bos] [--json FILE] [--quiet]`: text generation with a language model program
// (extension/llm/text_generator.h). Text streams to stdout as it is produced (token ids when
// there is no tokenizer); statistics go to stderr and, with --json, to FILE.
// Exit 0 on success, 1 on a load/run error, 2 on usage errors.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "extension/llm/text_generator.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

constexpr const char* kUsage =
    "usage: ember generate MODEL.pte [--tokenizer FILE] (--prompt TEXT | --prompt-tokens 1,2,3)\n"
    "         [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R]\n"
    "         [--seed S] [--stop TEXT]... [--threads N] [--max-seq-len N] [--bos-id ID] [--eos-id IDS]\n"
    "         [--no-bos] [--json FILE] [--quiet]\n"
    "Generates text with a language model program: forward(tokens int64 [1, T], input_pos int64 [T])\n"
    "-> logits [1, T, vocab], its KV cache as state. Settings come from the program's metadata\n"
    "(ember export --metadata max_seq_len=... vocab_size=... bos_id=... eos_id=...); flags override.\n"
    "  --tokenizer FILE       tokenizer.json (byte-level BPE) or SentencePiece .model\n"
    "  --prompt TEXT          text prompt (needs --tokenizer)\n"
    "  --prompt-tokens IDS    prompt as token ids, e.g. 1,2,3 (no tokenizer needed)\n"
    "  --max-new-tokens N     default 128\n"
    "  --temperature T        0 (default) is greedy decoding\n"
    "  --top-k K, --top-p P   restrict sampling to the K most likely / the nucleus of mass P\n"
    "  --repetition-penalty R >1 discourages tokens already in the context (default 1: off)\n"
    "  --seed S               sampling seed (default 0)\n"
    "  --stop TEXT            stop once the generated text ends with TEXT (repeatable)\n"
    "  --threads N            CPU threads (default 1)\n"
    "  --json FILE            write generated_tokens, prompt_tokens, load_ms, ttft_ms,\n"
    "                         prefill_tokens_per_s, decode_tokens_per_s, peak_rss_bytes, ...\n"
    "  --quiet                do not stream the text\n";

bool parse_double(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0';
}

bool parse_int64(const char* text, int64_t* out) {
  char* end = nullptr;
  *out = std::strtoll(text, &end, 10);
  return end != text && *end == '\0';
}

int64_t peak_rss_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

int generate_command(int argc, char** argv) {
  std::string model_path, tokenizer_path, prompt, prompt_tokens, json_path;
  bool have_prompt = false, have_prompt_tokens = false, quiet = false;
  llm::GeneratorOptions options;
  llm::GenerationConfig config;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember generate: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    double d = 0;
    int64_t n = 0;
    if (a == "--tokenizer") {
      tokenizer_path = value("--tokenizer");
    } else if (a == "--prompt") {
      prompt = value("--prompt");
      have_prompt = true;
    } else if (a == "--prompt-tokens") {
      prompt_tokens = value("--prompt-tokens");
      have_prompt_tokens = true;
    } else if (a == "--max-new-tokens") {
      if (!parse_int64(value("--max-new-tokens"), &n) || n < 0 || n > INT32_MAX) {
        return usage_error("generate", "--max-new-tokens must be an integer >= 0");
      }
      config.max_new_tokens = static_cast<int32_t>(n);
    } else if (a == "--temperature") {
      if (!parse_double(value("--temperature"), &d)) return usage_error("generate", "--temperature must be a number");
      config.sampling.temperature = static_cast<float>(d);
    } else if (a == "--top-k") {
      if (!parse_int64(value("--top-k"), &n) || n < 0 || n > INT32_MAX) return usage_error("generate", "--top-k must be an integer >= 0");
      config.sampling.top_k = static_cast<int32_t>(n);
    } else if (a == "--top-p") {
      if (!parse_double(value("--top-p"), &d)) return usage_error("generate", "--top-p must be a number in (0, 1]");
      config.sampling.top_p = static_cast<float>(d);
    } else if (a == "--repetition-penalty") {
      if (!parse_double(value("--repetition-penalty"), &d)) return usage_error("generate", "--repetition-penalty must be a number");
      config.sampling.repetition_penalty = static_cast<float>(d);
    } else if (a == "--seed") {
      if (!parse_int64(value("--seed"), &n)) return usage_error("generate", "--seed must be an integer");
      config.sampling.seed = static_cast<uint64_t>(n);
    } else if (a == "--stop") {
      config.stop_strings.push_back(value("--stop"));
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &options.num_threads)) return usage_error("generate", "--threads must be a positive integer");
    } else if (take_data_flag(a, [&] { return value(a.c_str()); }, &options.module)) {
    } else if (a == "--max-seq-len") {
      if (!parse_int64(value("--max-seq-len"), &n) || n < 1) return usage_error("generate", "--max-seq-len must be an integer >= 1");
      options.max_seq_len = n;
    } else if (a == "--bos-id") {
      if (!parse_int64(value("--bos-id"), &n) || n < -1) return usage_error("generate", "--bos-id must be an id or -1 (none)");
      options.bos_id = n;
    } else if (a == "--eos-id") {
      const char* v = value("--eos-id");
      std::vector<int64_t> ids;
      if (std::string(v) != "none") {
        auto list = llm::parse_token_list(v);
        if (!list.ok()) return usage_error("generate", ("--eos-id: " + list.error().message()).c_str());
        ids.assign(list->begin(), list->end());
      }
      options.eos_ids = ids;
    } else if (a == "--no-bos") {
      config.add_bos = false;
    } else if (a == "--json") {
      json_path = value("--json");
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("%s%s", kUsage, kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("generate", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("generate", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty()) return usage_error("generate", "needs MODEL.pte (see --help)");
  if (have_prompt == have_prompt_tokens) return usage_error("generate", "give exactly one of --prompt TEXT and --prompt-tokens IDS");
  if (have_prompt && tokenizer_path.empty()) return usage_error("generate", "--prompt needs --tokenizer FILE (or use --prompt-tokens)");
  Status valid = llm::validate_sampling_config(config.sampling);
  if (!valid.ok()) return usage_error("generate", valid.message().c_str());

  const auto load_start = std::chrono::steady_clock::now();
  std::unique_ptr<llm::Tokenizer> tokenizer;
  if (!tokenizer_path.empty()) {
    auto t = llm::load_tokenizer(tokenizer_path);
    if (!t.ok()) return report_error("generate", t.error());
    tokenizer = std::move(*t);
  }
  auto loaded = llm::TextGenerator::load(model_path, std::move(tokenizer), options);
  if (!loaded.ok()) return report_error("generate", loaded.error());
  llm::TextGenerator& generator = **loaded;
  // Program + method + tokenizer, as a user waits for them.
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();

  std::vector<int32_t> ids;
  if (have_prompt) {
    Status s = generator.tokenizer()->encode(prompt, &ids);
    if (!s.ok()) return report_error("generate", s);
  } else {
    auto list = llm::parse_token_list(prompt_tokens);
    if (!list.ok()) return usage_error("generate", ("--prompt-tokens: " + list.error().message()).c_str());
    ids = *list;
  }
  const bool has_tokenizer = generator.tokenizer() != nullptr;
  TextStream out(stdout);
  if (!quiet && has_tokenizer) out.write(prompt);
  llm::GenerationResult result;
  Status s = generator.generate(
      ids, config,
      [&](int32_t token, std::string_view text) {
        if (quiet) return true;
        if (has_tokenizer) {
          out.write(text);
        } else if (token >= 0) {
          char id[24];  // no allocation per token: the decode rate includes this callback
          const int n = std::snprintf(id, sizeof(id), "%d ", token);
          out.write(std::string_view(id, static_cast<size_t>(n)));
        }
        return true;
      },
      &result);
  // The text's line ends (once) before the statistics or an error go to stderr.
  out.finish();
  if (!s.ok()) return report_error("generate", s);

  const int64_t rss = peak_rss_bytes();
  std::fprintf(stderr,
               "ember generate: %d prompt tokens, %zu generated (stop: %s); load %.1f ms, time to first token %.1f ms, "
               "prefill %.1f tokens/s, decode %.1f tokens/s, peak RSS %.1f MiB\n",
               result.prompt_tokens, result.generated_tokens.size(), llm::stop_reason_name(result.stop_reason),
               load_ms, result.ttft_ms, result.prefill_tokens_per_s(), result.decode_tokens_per_s(),
               rss / 1048576.0);
  if (!json_path.empty()) {
    nlohmann::json j;
    j["generated_tokens"] = result.generated_tokens;
    j["prompt_tokens"] = result.prompt_tokens;
    j["prompt_token_ids"] = ids;
    j["stop_reason"] = llm::stop_reason_name(result.stop_reason);
    j["load_ms"] = load_ms;
    j["ttft_ms"] = result.ttft_ms;
    j["prefill_ms"] = result.prefill_ms;
    j["decode_ms"] = result.decode_ms;
    j["decode_forward_ms"] = result.decode_forward_ms;
    j["sample_ms"] = result.sample_ms;
    j["prefill_tokens_per_s"] = result.prefill_tokens_per_s();
    j["decode_tokens_per_s"] = result.decode_tokens_per_s();
    j["peak_rss_bytes"] = rss;
    j["threads"] = generator.module().num_threads();
    j["max_seq_len"] = generator.max_seq_len();
    if (has_tokenizer) j["text"] = generator.tokenizer()->decode(result.generated_tokens);
    std::ofstream f(json_path);
    f << j.dump(1) << "\n";
    if (!f) return report_error("generate", Status(Error::AccessFailed, "cannot write --json file " + json_path));
  }
  return 0;
}

EMBER_REGISTER_COMMAND(generate, "generate text with a language model program (LLM runner)", generate_command);

}  // namespace tools
}  // namespace ember
