// Sampler: picks the next token from a row of logits.
//
// Order of the steps (Hugging Face generate()'s): repetition penalty over the context's
// distinct tokens -> temperature -> top-k -> top-p (nucleus) -> a draw from the renormalised
// distribution. temperature == 0 is greedy decoding: the argmax after the penalty (the lowest
// id on a tie, as torch.argmax).
//
// Ownership: a Sampler owns its scratch, sized for the vocabulary at create(); sample() never
// allocates. Threading: one Sampler per generation thread (sample() mutates the RNG state).
// Determinism: the RNG (xoshiro256**, seeded by splitmix64 from `seed`) gives the same
// tokens for the same seed, logits and config on every platform.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/span.h"
#include "extension/module/status.h"

namespace ember {
namespace llm {

struct SamplingConfig {
  float temperature = 0.f;         // 0: greedy; otherwise logits are divided by it
  int32_t top_k = 0;               // keep the k most likely tokens; 0: all
  float top_p = 1.f;               // keep the smallest set whose probability reaches p; 1: all
  float repetition_penalty = 1.f;  // > 1 discourages tokens already in the context; 1: off
  uint64_t seed = 0;
};

// Ok, or InvalidArgument saying which field is out of range and what it accepts.
Status validate_sampling_config(const SamplingConfig& config);

class Sampler {
 public:
  static Expected<Sampler> create(int32_t vocab_size, const SamplingConfig& config);

  // Next token from `logits` (vocab_size floats; modified in place: penalty and temperature
  // are applied to them). `context` holds the tokens the repetition penalty looks at (ids
  // outside the vocabulary are ignored). NaN logits count as -inf; when every logit is -inf
  // or NaN the result is token 0.
  int32_t sample(float* logits, Span<const int32_t> context);

  // Restarts the random sequence (a new conversation with the same seed repeats itself).
  void reseed(uint64_t seed);
  const SamplingConfig& config() const { return config_; }
  int32_t vocab_size() const { return vocab_size_; }

 private:
  Sampler(int32_t vocab_size, const SamplingConfig& config);
  void apply_repetition_penalty(float* logits, Span<const int32_t> context);
  float next_uniform();  // [0, 1)

  int32_t vocab_size_ = 0;
  SamplingConfig config_;
  uint64_t rng_[4] = {};
  std::vector<int32_t> order_;    // candidate ids
  std::vector<float> weights_;    // their unnormalised probabilities
  std::vector<uint8_t> seen_;     // per id: already penalised in this call
};

}  // namespace llm
}  // namespace ember
