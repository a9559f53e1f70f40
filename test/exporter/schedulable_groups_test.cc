// Property tests of exporter/partition/schedulable_groups.h on random DAGs with random claims:
// whatever a backend claims, the calls made of it are convex, schedulable together, cover
// exactly the claimed nodes, and are the claim itself whenever the claim was schedulable.
#include "exporter/partition/schedulable_groups.h"

#include <algorithm>
#include <random>
#include <cstdio>
#include <set>

#include "gtest/gtest.h"

namespace ember {
namespace exporter {
namespace {

using Deps = std::vector<std::vector<int>>;

// False when some path from a node of `set` leaves it and comes back.
bool convex(const Deps& deps, const std::vector<int>& set) {
  const int n = int(deps.size());
  std::vector<char> in(n, 0), left(n, 0);  // left[i]: reached from the set through an outside node
  for (int i : set) in[i] = 1;
  for (int i = 0; i < n; ++i) {
    for (int d : deps[i]) {
      if ((in[d] && !in[i]) || left[d]) left[i] = 1;
    }
    if (in[i] && left[i]) return false;
  }
  return true;
}

Deps random_dag(std::mt19937& rng, int n, double edge_p) {
  Deps deps(n);
  std::bernoulli_distribution edge(edge_p);
  for (int i = 1; i < n; ++i) {
    for (int j = std::max(0, i - 12); j < i; ++j) {
      if (edge(rng)) deps[i].push_back(j);
    }
  }
  return deps;
}

std::vector<std::vector<int>> random_claims(std::mt19937& rng, int n, int sets, double claimed_p) {
  std::vector<std::vector<int>> claims(sets);
  std::bernoulli_distribution claimed(claimed_p);
  std::uniform_int_distribution<int> which(0, sets - 1);
  for (int i = 0; i < n; ++i) {
    if (claimed(rng)) claims[which(rng)].push_back(i);
  }
  claims.erase(std::remove_if(claims.begin(), claims.end(), [](const std::vector<int>& c) { return c.empty(); }),
               claims.end());
  return claims;
}

TEST(SchedulableGroups, RandomClaimsBecomeConvexSchedulableCalls) {
  std::mt19937 rng(20261126);
  int steps[4] = {0, 0, 0, 0};
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 2 + int(rng() % 40);
    const Deps deps = random_dag(rng, n, 0.05 + 0.4 * double(rng() % 100) / 100);
    const auto claims = random_claims(rng, n, 1 + int(rng() % 4), 0.3 + 0.6 * double(rng() % 100) / 100);
    int step = 0;
    const auto groups = schedulable_groups(deps, claims, &step);
    ASSERT_GE(step, 1);
    ASSERT_LE(step, 3);
    steps[step]++;
    std::multiset<int> claimed, covered;
    for (const auto& c : claims) claimed.insert(c.begin(), c.end());
    for (const auto& grp : groups) {
      ASSERT_FALSE(grp.empty());
      covered.insert(grp.begin(), grp.end());
      EXPECT_TRUE(convex(deps, grp)) << "trial " << trial;
    }
    EXPECT_EQ(covered, claimed) << "trial " << trial;  // each claimed node in exactly one call
    EXPECT_TRUE(contraction_is_acyclic(deps, groups)) << "trial " << trial;
    // Nodes of one call were claimed together.
    std::vector<int> owner(n, -1);
    for (size_t s = 0; s < claims.size(); ++s) {
      for (int i : claims[s]) owner[i] = int(s);
    }
    for (const auto& grp : groups) {
      for (int i : grp) EXPECT_EQ(owner[i], owner[grp.front()]) << "trial " << trial;
    }
    if (contraction_is_acyclic(deps, claims)) {
      EXPECT_EQ(groups, claims) << "trial " << trial;
    }
  }
  // The trials reach every step (else the generator above tests less than it claims).
  EXPECT_GT(steps[1], 100);
  EXPECT_GT(steps[2], 100);
  EXPECT_GT(steps[3], 10);
  std::printf("[schedulable groups] 3000 random claims: %d as claimed, %d split convex, %d by levels\n", steps[1],
              steps[2], steps[3]);
}

TEST(SchedulableGroups, SplitsAtEachExitAndReentry) {
  // 0 -> 1 -> 2 -> 3 -> 4, claimed {0, 2, 4}: each re-entry starts a piece.
  const Deps deps = {{}, {0}, {1}, {2}, {3}};
  EXPECT_EQ(split_convex(deps, {0, 2, 4}), (std::vector<std::vector<int>>{{0}, {2}, {4}}));
  // A diamond 0 -> {1, 2} -> 3: claimed {0, 1, 3}, the path through 2 re-enters at 3; claimed
  // whole, it is convex.
  const Deps diamond = {{}, {0}, {0}, {1, 2}};
  EXPECT_EQ(split_convex(diamond, {0, 1, 3}), (std::vector<std::vector<int>>{{0, 1}, {3}}));
  EXPECT_EQ(split_convex(diamond, {0, 1, 2, 3}), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
}

TEST(SchedulableGroups, SetsThatFeedEachOtherAreSeparated) {
  // Sets A = {0, 3} and B = {1, 2}: 0 -> 1 (A feeds B) and 2 -> 3 (B feeds A). Each is convex
  // (0 does not reach 3, 1 does not reach 2), together they deadlock.
  const Deps deps = {{}, {0}, {}, {2}};
  const std::vector<std::vector<int>> claims = {{0, 3}, {1, 2}};
  EXPECT_FALSE(contraction_is_acyclic(deps, claims));
  int step = 0;
  const auto groups = schedulable_groups(deps, claims, &step);
  EXPECT_EQ(step, 3);
  EXPECT_TRUE(contraction_is_acyclic(deps, groups));
  EXPECT_EQ(groups.size(), 4u);
}

TEST(SchedulableGroups, SchedulableClaimsStayAsClaimed) {
  const Deps deps = {{}, {0}, {1}, {2}};
  const std::vector<std::vector<int>> claims = {{2, 3}, {0, 1}};  // the backend's order is kept
  int step = 0;
  EXPECT_EQ(schedulable_groups(deps, claims, &step), claims);
  EXPECT_EQ(step, 1);
}

}  // namespace
}  // namespace exporter
}  // namespace ember
