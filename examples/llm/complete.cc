// Text completion with the LLM runner's C++ API (extension/llm/text_generator.h): loads a
// language model program and its tokenizer, then streams a sampled continuation of each
// prompt, keeping the conversation (the KV cache) between prompts.
//
//   bazel build -c opt //examples/llm:complete
//   bazel-bin/tools/ember export examples/llm/fortunes_llm.pt2 -o /tmp/llm.pte --backend xnnpack \
//       $(sed 's/^/--metadata /' examples/llm/metadata.txt)
//   bazel-bin/examples/llm/complete /tmp/llm.pte examples/llm/tokenizer.json "Q: What is" "A computer"
#include <cstdio>
#include <string_view>

#include "extension/llm/text_generator.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.pte TOKENIZER PROMPT...\n", argv[0]);
    return 2;
  }
  auto tokenizer = ember::llm::load_tokenizer(argv[2]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.error().to_string().c_str());
    return 1;
  }
  auto generator = ember::llm::TextGenerator::load(argv[1], std::move(*tokenizer));
  if (!generator.ok()) {
    std::fprintf(stderr, "%s\n", generator.error().to_string().c_str());
    return 1;
  }
  ember::llm::GenerationConfig config;
  config.max_new_tokens = 60;
  config.sampling.temperature = 0.8f;
  config.sampling.top_p = 0.95f;
  config.sampling.seed = 1;
  for (int i = 3; i < argc; ++i) {
    // Each prompt starts a new text: reset() clears the KV cache (omit it to continue one).
    if (!(*generator)->reset().ok()) return 1;
    std::printf("%s", argv[i]);
    ember::llm::GenerationResult result;
    ember::Status s = (*generator)->generate(
        std::string_view(argv[i]), config,
        [](int32_t, std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;
        },
        &result);
    if (!s.ok()) {
      std::fprintf(stderr, "\n%s\n", s.to_string().c_str());
      return 1;
    }
    std::printf("\n[%zu tokens, %.0f tokens/s]\n\n", result.generated_tokens.size(), result.decode_tokens_per_s());
  }
  return 0;
}
