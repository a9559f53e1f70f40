// Sampler: greedy ties, NaN handling, the sampled distribution against the softmax, top-k,
// top-p, repetition penalty, seeding and configuration errors.
#include "extension/llm/sampler.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "test/support/allocation_counter.h"

namespace ember {
namespace llm {
namespace {

Sampler make(int32_t vocab, SamplingConfig c) {
  auto s = Sampler::create(vocab, c);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return std::move(*s);
}

std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    std::vector<float> row = logits;
    f[s.sample(row.data(), {})] += 1.0 / draws;
  }
  return f;
}

TEST(SamplerTest, GreedyIsArgmaxWithTheLowestIdOnATieAndIgnoresNaN) {
  Sampler s = make(5, SamplingConfig());
  std::vector<float> logits = {1.f, 3.f, 3.f, std::nanf(""), -2.f};
  EXPECT_EQ(s.sample(logits.data(), {}), 1);
  std::vector<float> first_nan = {std::nanf(""), -5.f, -1.f, -7.f, -1.f};
  EXPECT_EQ(s.sample(first_nan.data(), {}), 2);
}

// The greedy pick (vectorised over blocks of 64 ids) against its definition: the lowest id of the
// largest value, NaN as -inf, 0 when nothing is above -inf; vocabularies of 1..300 ids (partial
// blocks, maxima in the tail), values drawn from a few levels with NaN and +-inf (many ties),
// and a 32,000-id row with its maximum in each position class.
TEST(SamplerTest, GreedyMatchesTheScalarDefinitionOnRandomRows) {
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1103515245u + 12345u; };
  auto reference = [](const std::vector<float>& row) {
    int32_t best = 0;
    float best_value = std::isnan(row[0]) ? -INFINITY : row[0];
    for (size_t i = 1; i < row.size(); ++i) {
      const float v = std::isnan(row[i]) ? -INFINITY : row[i];
      if (v > best_value) best = static_cast<int32_t>(i), best_value = v;
    }
    return best;
  };
  for (int trial = 0; trial < 5000; ++trial) {
    const int32_t n = 1 + static_cast<int32_t>(next() % 300);
    std::vector<float> row(static_cast<size_t>(n));
    for (float& f : row) {
      const uint32_t r = next() >> 8, c = r % 10;
      f = c == 0 ? std::nanf("") : c == 1 ? -INFINITY : c == 2 ? INFINITY : static_cast<float>((r >> 4) % 7) - 3.f;
    }
    Sampler s = make(n, SamplingConfig());
    std::vector<float> copy = row;
    ASSERT_EQ(s.sample(copy.data(), {}), reference(row)) << "trial " << trial << ", " << n << " ids";
  }
  Sampler big = make(32000, SamplingConfig());
  for (int32_t at : {0, 1, 63, 64, 65, 12345, 31935, 31999}) {
    std::vector<float> row(32000);
    for (size_t i = 0; i < row.size(); ++i) row[i] = std::sin(static_cast<float>(i) * 0.37f);
    row[static_cast<size_t>(at)] = 2.f;
    row[31999 - static_cast<size_t>(at) / 2] = std::nanf("");
    EXPECT_EQ(big.sample(row.data(), {}), at);
  }
}

TEST(SamplerTest, DrawsFollowTheSoftmaxOfLogitsOverTemperature) {
  SamplingConfig c;
  c.temperature = 2.f;
  c.seed = 7;
  Sampler s = make(3, c);
  const std::vector<float> logits = {std::log(0.1f) * 2, std::log(0.3f) * 2, std::log(0.6f) * 2};
  std::vector<double> f = frequencies(s, logits, 40000);
  EXPECT_NEAR(f[0], 0.1, 0.01);
  EXPECT_NEAR(f[1], 0.3, 0.01);
  EXPECT_NEAR(f[2], 0.6, 0.01);
}

TEST(SamplerTest, TopKKeepsOnlyTheKMostLikely) {
  SamplingConfig c;
  c.temperature = 1.f;
  c.top_k = 2;
  Sampler s = make(4, c);
  // probabilities 0.4, 0.1, 0.3, 0.2: top-2 keeps ids 0 and 2, renormalised to 4/7 and 3/7.
  const std::vector<float> logits = {std::log(0.4f), std::log(0.1f), std::log(0.3f), std::log(0.2f)};
  std::vector<double> f = frequencies(s, logits, 40000);
  EXPECT_NEAR(f[0], 4.0 / 7, 0.012);
  EXPECT_NEAR(f[2], 3.0 / 7, 0.012);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_EQ(f[3], 0.0);
}

TEST(SamplerTest, TopPKeepsTheSmallestNucleus) {
  SamplingConfig c;
  c.temperature = 1.f;
  c.top_p = 0.75f;
  Sampler s = make(3, c);
  // 0.5 falls short of 0.75, 0.5 + 0.3 reaches it: ids 0 and 1 remain (5/8, 3/8); id 2 never comes.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::vector<double> f = frequencies(s, logits, 40000);
  EXPECT_NEAR(f[0], 0.625, 0.012);
  EXPECT_NEAR(f[1], 0.375, 0.012);
  EXPECT_EQ(f[2], 0.0);
  c.top_p = 0.4f;  // the most likely token alone reaches it
  Sampler one = make(3, c);
  EXPECT_NEAR(frequencies(one, logits, 1000)[0], 1.0, 1e-9);
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOnce) {
  SamplingConfig c;
  c.repetition_penalty = 2.f;
  Sampler s = make(3, c);
  std::vector<float> logits = {2.f, 1.5f, -1.f};
  const std::vector<int32_t> context = {0, 0, 2, 9};  // 9 is outside the vocabulary: ignored
  EXPECT_EQ(s.sample(logits.data(), Span<const int32_t>(context.data(), context.size())), 1);
  EXPECT_FLOAT_EQ(logits[0], 1.f);   // 2 / 2, once although it occurs twice
  EXPECT_FLOAT_EQ(logits[1], 1.5f);  // not in the context
  EXPECT_FLOAT_EQ(logits[2], -2.f);  // -1 * 2
}

TEST(SamplerTest, SameSeedSameTokensAndReseedRepeats) {
  SamplingConfig c;
  c.temperature = 1.f;
  c.seed = 42;
  Sampler a = make(50, c), b = make(50, c);
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = std::sin(i * 0.7f);
  std::vector<int32_t> first, second, third;
  for (int i = 0; i < 64; ++i) {
    std::vector<float> r1 = logits, r2 = logits;
    first.push_back(a.sample(r1.data(), {}));
    second.push_back(b.sample(r2.data(), {}));
  }
  EXPECT_EQ(first, second);
  a.reseed(42);
  for (int i = 0; i < 64; ++i) {
    std::vector<float> r = logits;
    third.push_back(a.sample(r.data(), {}));
  }
  EXPECT_EQ(first, third);
  c.seed = 43;
  Sampler other = make(50, c);
  std::vector<int32_t> fourth;
  for (int i = 0; i < 64; ++i) {
    std::vector<float> r = logits;
    fourth.push_back(other.sample(r.data(), {}));
  }
  EXPECT_NE(first, fourth);
}

TEST(SamplerTest, AllImpossibleGivesTokenZero) {
  SamplingConfig c;
  c.temperature = 1.f;
  Sampler s = make(3, c);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {-inf, std::nanf(""), -inf};
  EXPECT_EQ(s.sample(logits.data(), {}), 0);
}

TEST(SamplerTest, SamplingAllocatesNothing) {
  SamplingConfig c;
  c.temperature = 0.9f;
  c.top_k = 40;
  c.top_p = 0.9f;
  c.repetition_penalty = 1.1f;
  Sampler s = make(4096, c);
  std::vector<float> logits(4096);
  std::vector<int32_t> context = {1, 2, 3, 4000};
  const uint64_t before = testing::allocation_count();
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 4096; ++j) logits[j] = std::cos(j * 0.01f + i);
    s.sample(logits.data(), Span<const int32_t>(context.data(), context.size()));
  }
  EXPECT_EQ(testing::allocation_count(), before);
}

TEST(SamplerTest, BadConfigurationsAreErrorsNamingTheField) {
  auto expect_error = [](SamplingConfig c, const char* field) {
    auto s = Sampler::create(10, c);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code(), Error::InvalidArgument);
    EXPECT_NE(s.error().message().find(field), std::string::npos) << s.error().message();
  };
  SamplingConfig c;
  c.temperature = -1.f;
  expect_error(c, "temperature");
  c = SamplingConfig();
  c.temperature = std::nanf("");
  expect_error(c, "temperature");
  c = SamplingConfig();
  c.top_p = 0.f;
  expect_error(c, "top_p");
  c = SamplingConfig();
  c.top_p = 1.5f;
  expect_error(c, "top_p");
  c = SamplingConfig();
  c.top_k = -3;
  expect_error(c, "top_k");
  c = SamplingConfig();
  c.repetition_penalty = 0.f;
  expect_error(c, "repetition_penalty");
  EXPECT_FALSE(Sampler::create(0, SamplingConfig()).ok());
}

}  // namespace
}  // namespace llm
}  // namespace ember
