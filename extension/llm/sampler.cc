#include "extension/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace ember {
namespace llm {
namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// NaN sorts and samples as -inf: a broken logit never wins.
float sanitized(float x) { return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x; }

// The lowest id of the largest logit, NaN never winning (0 when none is above -inf): the scalar
// loop costs ~40 us over a 32,000-entry vocabulary, 3% of a decoded token on a GPU. Blocks of 64
// are reduced with 4-wide vectors (GCC vector extensions: SSE on x86-64, NEON on Arm64), a
// block's maximum compared with the best so far; the winning block is searched at the end.
// A comparison with NaN is false, so NaN is never taken; lanes start at -inf, not at the
// first values (a NaN there would stick).
int32_t greedy_argmax(const float* logits, int32_t n) {
  typedef float Lanes __attribute__((vector_size(16)));
  constexpr int32_t kBlock = 64;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float best = kNegInf;
  int32_t best_block = -1, i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Lanes m[4];
    for (Lanes& v : m) v = Lanes{kNegInf, kNegInf, kNegInf, kNegInf};
    for (int32_t k = 0; k < kBlock; k += 16) {
      Lanes a[4];
      std::memcpy(a, logits + i + k, sizeof(a));
      for (int j = 0; j < 4; ++j) m[j] = a[j] > m[j] ? a[j] : m[j];
    }
    for (int j = 1; j < 4; ++j) m[0] = m[j] > m[0] ? m[j] : m[0];
    float block_max = kNegInf;
    for (int j = 0; j < 4; ++j) block_max = m[0][j] > block_max ? m[0][j] : block_max;
    if (block_max > best) best = block_max, best_block = i;  // strict: the earlier block keeps a tie
  }
  int32_t best_tail = -1;
  for (; i < n; ++i) {
    if (logits[i] > best) best = logits[i], best_tail = i;
  }
  if (best_tail >= 0) return best_tail;
  if (best_block < 0) return 0;
  for (int32_t k = best_block; k < best_block + kBlock; ++k) {
    if (logits[k] == best) return k;
  }
  return best_block;  // not reached: the block holds its maximum
}

}  // namespace

Status validate_sampling_config(const SamplingConfig& c) {
  auto bad = [](const std::string& what) { return Status(Error::InvalidArgument, what); };
  if (!(c.temperature >= 0.f) || !std::isfinite(c.temperature)) {
    return bad("temperature must be a finite number >= 0 (0 is greedy), got " + std::to_string(c.temperature));
  }
  if (c.top_k < 0) return bad("top_k must be >= 0 (0 keeps every token), got " + std::to_string(c.top_k));
  if (!(c.top_p > 0.f && c.top_p <= 1.f)) {
    return bad("top_p must be in (0, 1] (1 keeps every token), got " + std::to_string(c.top_p));
  }
  if (!(c.repetition_penalty > 0.f) || !std::isfinite(c.repetition_penalty)) {
    return bad("repetition_penalty must be a finite number > 0 (1 is off), got " + std::to_string(c.repetition_penalty));
  }
  return Status::Ok();
}

Expected<Sampler> Sampler::create(int32_t vocab_size, const SamplingConfig& config) {
  if (vocab_size <= 0) return Status(Error::InvalidArgument, "the vocabulary size must be > 0");
  Status s = validate_sampling_config(config);
  if (!s.ok()) return s;
  return Sampler(vocab_size, config);
}

Sampler::Sampler(int32_t vocab_size, const SamplingConfig& config)
    : vocab_size_(vocab_size), config_(config), order_(vocab_size), weights_(vocab_size), seen_(vocab_size, 0) {
  reseed(config.seed);
}

void Sampler::reseed(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& word : rng_) word = splitmix64(&state);
}

float Sampler::next_uniform() {
  const uint64_t result = rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = rotl(rng_[3], 45);
  return static_cast<float>(result >> 40) * (1.0f / 16777216.0f);  // 24 random bits
}

void Sampler::apply_repetition_penalty(float* logits, Span<const int32_t> context) {
  if (config_.repetition_penalty == 1.f) return;
  const float penalty = config_.repetition_penalty;
  for (int32_t id : context) {
    if (id < 0 || id >= vocab_size_ || seen_[id]) continue;
    seen_[id] = 1;  // each distinct token is penalised once, however often it occurred
    logits[id] = logits[id] > 0.f ? logits[id] / penalty : logits[id] * penalty;
  }
  for (int32_t id : context) {
    if (id >= 0 && id < vocab_size_) seen_[id] = 0;
  }
}

int32_t Sampler::sample(float* logits, Span<const int32_t> context) {
  apply_repetition_penalty(logits, context);
  const int32_t n = vocab_size_;
  if (config_.temperature == 0.f) return greedy_argmax(logits, n);
  const float inv_t = 1.f / config_.temperature;
  for (int32_t i = 0; i < n; ++i) logits[i] = sanitized(logits[i]) * inv_t;

  // Candidates: every id, or the top k (ordered) when top-k or top-p needs an order.
  int32_t count = n;
  for (int32_t i = 0; i < n; ++i) order_[i] = i;
  auto by_logit = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (config_.top_k > 0 && config_.top_k < n) {
    count = config_.top_k;
    std::nth_element(order_.begin(), order_.begin() + (count - 1), order_.end(), by_logit);
  }
  const bool nucleus = config_.top_p < 1.f;
  if (nucleus || count < n) std::sort(order_.begin(), order_.begin() + count, by_logit);

  float max_logit = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < count; ++i) max_logit = std::max(max_logit, logits[order_[i]]);
  if (max_logit == -std::numeric_limits<float>::infinity()) return 0;  // nothing is possible
  double total = 0.0;
  for (int32_t i = 0; i < count; ++i) {
    weights_[i] = std::exp(logits[order_[i]] - max_logit);
    total += weights_[i];
  }
  if (nucleus) {
    // The smallest prefix (most likely first) whose mass reaches top_p, at least one token.
    const double target = config_.top_p * total;
    double cumulative = 0.0;
    int32_t keep = 0;
    while (keep < count) {
      cumulative += weights_[keep++];
      if (cumulative >= target) break;
    }
    count = keep;
    total = cumulative;
  }
  const double draw = static_cast<double>(next_uniform()) * total;
  double cumulative = 0.0;
  for (int32_t i = 0; i < count; ++i) {
    cumulative += weights_[i];
    if (draw < cumulative) return order_[i];
  }
  return order_[count - 1];  // rounding left the draw at the very end
}

}  // namespace llm
}  // namespace ember
