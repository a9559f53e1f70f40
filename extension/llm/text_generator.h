// TextGenerator: the prefill/decode loop of a decoder-only language model program.
//
// Model convention (what `ember export` of a Llama-style torch.export model gives, e.g.
// examples/llm and the shared tiny_llama_kv): method `forward(tokens int64 [1, T],
// input_pos int64 [T]) -> logits float32 [1, T, vocab]`, the KV cache being the method's
// mutable state; T is dynamic up to the exported bound. Prefill is one call per chunk of at
// most that bound; decode is one call per token.
//
// Programs of two methods (`ember export --method prefill=P.pt2 --method decode=D.pt2`) are
// used when the program has no `forward` but has `prefill` and `decode` (or the ones
// GeneratorOptions names), both with that signature and sharing their KV cache (state shared
// across methods): prefill takes the prompt in chunks of its T (a static T: the last chunk is
// padded, the padding's cache rows are overwritten by decode before any query can see them),
// decode takes one token per call.
//
// Program metadata read at load (`ember export --metadata key=value`; GeneratorOptions
// override each): max_seq_len (cache length; default: the bound of T), vocab_size (checked
// against the logits), bos_id (-1: none), eos_id (one id or a comma-separated list).
//
// Conversations: generate() continues from the current position (the cache holds the
// context); reset() starts a new conversation (state cleared, position 0, RNG reseeded).
//
// Ownership and threading: a TextGenerator owns its Module, Sampler and (optional)
// Tokenizer; one thread at a time. The decode loop allocates nothing after the first call
// to generate() with a given max_new_tokens (buffers are reserved up front).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extension/llm/sampler.h"
#include "extension/llm/tokenizer.h"
#include "extension/llm/utf8_streamer.h"
#include "extension/module/module.h"
#include "extension/module/tensor_ptr.h"

namespace ember {
namespace llm {

struct GeneratorOptions {
  std::string method = "forward";
  // A two-method program: used when `method` is absent from the program.
  std::string prefill_method = "prefill";
  std::string decode_method = "decode";
  size_t num_threads = 1;
  // Overrides of the program's metadata (unset: take the program's).
  std::optional<int64_t> max_seq_len;
  std::optional<int64_t> bos_id;                // -1: no BOS
  std::optional<std::vector<int64_t>> eos_ids;  // empty: never stop on a token
  ModuleOptions module;
};

struct GenerationConfig {
  int32_t max_new_tokens = 128;
  SamplingConfig sampling;
  std::vector<std::string> stop_strings;  // stop once the generated text ends with one
  bool add_bos = true;  // prepend bos_id at the start of a conversation (if the model has one)
};

enum class StopReason { MaxNewTokens, Eos, StopString, ContextFull, Cancelled };
const char* stop_reason_name(StopReason reason);

struct GenerationResult {
  std::vector<int32_t> generated_tokens;  // an EOS that stopped generation is included
  int32_t prompt_tokens = 0;              // fed in this call (BOS included)
  StopReason stop_reason = StopReason::MaxNewTokens;
  double prefill_ms = 0;  // the prompt's forward calls
  double ttft_ms = 0;     // generate() entry to the first generated token
  double decode_ms = 0;   // the per-token calls after the first token
  // Where decode_ms goes: the model's forward calls, and the sampler (the first token's included);
  // the rest is the runner's own bookkeeping.
  double decode_forward_ms = 0;
  double sample_ms = 0;
  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens * 1e3 / prefill_ms : 0; }
  double decode_tokens_per_s() const {
    const size_t n = generated_tokens.size() > 1 ? generated_tokens.size() - 1 : 0;
    return decode_ms > 0 ? n * 1e3 / decode_ms : 0;
  }
};

// Called once per generated token with the text it completes (possibly empty, see
// Utf8Streamer; always empty without a tokenizer), and once more with token -1 when bytes of
// an unfinished character remain at the end. Return false to stop generating.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

class TextGenerator {
 public:
  // `tokenizer` may be null (token ids only). Errors name the file and the missing piece.
  static Expected<std::unique_ptr<TextGenerator>> load(const std::string& model_path,
                                                       std::unique_ptr<Tokenizer> tokenizer,
                                                       const GeneratorOptions& options = GeneratorOptions());

  // Runs the prompt and generates up to config.max_new_tokens tokens.
  Status generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                  const TokenCallback& on_token, GenerationResult* result);
  // Encodes `prompt` with the tokenizer first (InvalidState without one).
  Status generate(std::string_view prompt, const GenerationConfig& config, const TokenCallback& on_token,
                  GenerationResult* result);

  // Starts a new conversation: KV cache cleared, position 0.
  Status reset();

  int64_t max_seq_len() const { return max_seq_len_; }
  int64_t max_chunk() const { return max_chunk_; }  // most tokens per forward call
  int32_t vocab_size() const { return vocab_size_; }
  int64_t bos_id() const { return bos_id_; }
  const std::vector<int64_t>& eos_ids() const { return eos_ids_; }
  int64_t position() const { return static_cast<int64_t>(context_.size()); }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  Module& module() { return *module_; }
  double load_ms() const { return load_ms_; }

 private:
  TextGenerator() = default;
  Status read_model_settings(const GeneratorOptions& options);
  // Checks `name` follows the convention; its bound of T and vocabulary size.
  Status check_method(const std::string& name, int64_t* max_tokens, bool* dynamic, int32_t* vocab);
  // Runs `count` tokens starting at context_[first] through the model; on success `*logits`
  // points at the last position's row.
  Status forward(size_t first, size_t count, const float** logits);
  bool is_eos(int32_t token) const;

  std::unique_ptr<Module> module_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string method_;         // prefill calls (the only method of a single-method program)
  std::string decode_method_;  // one-token calls (== method_ in a single-method program)
  bool pad_prefill_ = false;   // method_'s T is static: shorter chunks are padded to it
  int64_t max_seq_len_ = 0;
  int64_t max_chunk_ = 0;
  int32_t vocab_size_ = 0;
  int64_t bos_id_ = -1;
  std::vector<int64_t> eos_ids_;
  double load_ms_ = 0;

  std::vector<int32_t> context_;  // every token in the cache, in position order
  // The last generated token, not yet run through the model: the next generate() feeds it
  // before its prompt, so a conversation continues where it stopped.
  std::optional<int32_t> unfed_;
  std::vector<float> logits_row_; // the sampler's working copy of one row
  std::vector<int64_t> step_tokens_, step_positions_;  // one-token decode inputs
  TensorPtr step_tokens_tensor_, step_positions_tensor_;
  std::vector<Input> step_inputs_;
  std::optional<Sampler> sampler_;
  SamplingConfig sampler_config_;
  Utf8Streamer streamer_;
  std::string recent_text_;  // tail of the generated text, for stop strings
};

// "1,2,3" -> ids; an error names the bad entry.
Expected<std::vector<int32_t>> parse_token_list(std::string_view text);

}  // namespace llm
}  // namespace ember
