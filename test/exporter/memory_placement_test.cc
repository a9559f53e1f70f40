// Placement of tensor lifetimes (exporter/memory/placement.h): every placement valid, never
// below the live-bytes bound nor above the best greedy ordering, deterministic, and on the
// recorded lifetimes of architectures where every greedy ordering misses the bound (taken
// from their exported graphs: testdata/lifetimes/README.md) the local search reaches it.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "exporter/memory/placement.h"
#include "gtest/gtest.h"
#include "test/support/repo_path.h"

namespace ember {
namespace exporter {
namespace {

std::vector<Lifetime> read_lifetimes(const std::string& name) {
  std::ifstream in(testing::repo_path("test/exporter/testdata/lifetimes/" + name + ".txt"));
  std::vector<Lifetime> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Lifetime l;
    l.value = static_cast<int>(out.size());
    fields >> l.first >> l.last >> l.size;
    out.push_back(l);
  }
  return out;
}

uint64_t next(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

// Random lifetimes over `nodes` nodes, sizes multiples of 64 with a few large ones.
std::vector<Lifetime> random_lifetimes(uint64_t seed, int count, int nodes) {
  std::vector<Lifetime> out;
  for (int i = 0; i < count; ++i) {
    Lifetime l;
    l.value = i;
    // One draw per statement: the order of two calls within an expression is unspecified,
    // and compilers differ (the ASan build drew other instances).
    l.first = static_cast<int>(next(&seed) % nodes);
    const bool long_lived = next(&seed) % 6 == 0;
    const uint64_t span = next(&seed);
    l.last = l.first + static_cast<int>(long_lived ? span % nodes : span % 4);
    const bool large = next(&seed) % 5 == 0;
    l.size = 64 * (1 + next(&seed) % (large ? 400 : 24));
    out.push_back(l);
  }
  return out;
}

TEST(MemoryPlacement, RandomInstancesAreValidBoundedAndDeterministic) {
  int searched_below_greedy = 0, greedy_above_bound = 0, reached_bound = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    std::vector<Lifetime> lts = random_lifetimes(seed, 10 + static_cast<int>(seed % 90), 40);
    Placement p = place_lifetimes(lts);
    ASSERT_EQ(check_placement(lts, p.offsets), "") << "seed " << seed;
    size_t top = 0;
    for (size_t i = 0; i < lts.size(); ++i) top = std::max(top, static_cast<size_t>(p.offsets[i]) + lts[i].size);
    EXPECT_EQ(p.size, top) << "seed " << seed;
    EXPECT_GE(p.size, live_bytes_peak(lts)) << "seed " << seed;
    EXPECT_LE(p.size, p.greedy_size) << "seed " << seed;
    std::vector<int64_t> by_size, by_first_use;
    EXPECT_LE(p.greedy_size, place_by_size(lts, &by_size)) << "seed " << seed;
    EXPECT_LE(p.greedy_size, place_by_first_use(lts, &by_first_use)) << "seed " << seed;
    EXPECT_EQ(check_placement(lts, by_size), "");
    EXPECT_EQ(check_placement(lts, by_first_use), "");
    if (p.size < p.greedy_size) ++searched_below_greedy;
    if (p.greedy_size > live_bytes_peak(lts)) ++greedy_above_bound;
    if (p.size == live_bytes_peak(lts)) ++reached_bound;
    Placement again = place_lifetimes(lts);
    EXPECT_EQ(again.offsets, p.offsets) << "seed " << seed;
  }
  std::printf("[placement] 150 random instances: greedy above the bound in %d, the search improved %d, %d at the "
              "bound\n", greedy_above_bound, searched_below_greedy, reached_bound);
  // Greedy orderings miss the bound in some of these instances; the search improves most of
  // those (the bound is not always reachable, so not necessarily all).
  EXPECT_GE(greedy_above_bound, 5);
  EXPECT_GE(searched_below_greedy * 4, greedy_above_bound * 3);
  EXPECT_GE(reached_bound, 140);
}

TEST(MemoryPlacement, NoSearchBudgetKeepsTheBestGreedyOrdering) {
  std::vector<Lifetime> lts = read_lifetimes("gpt_neox");
  PlacementOptions greedy_only;
  greedy_only.search_budget = 0;
  Placement p = place_lifetimes(lts, greedy_only);
  EXPECT_EQ(p.search_steps, 0);
  EXPECT_EQ(p.size, p.greedy_size);
  EXPECT_EQ(check_placement(lts, p.offsets), "");
}

TEST(MemoryPlacement, SearchStopsWhenItsBudgetIsSpent) {
  std::vector<Lifetime> lts = read_lifetimes("mamba2");  // needs ~1,600 steps to reach the bound
  PlacementOptions small;
  small.search_budget = 50000;  // a few full placements' worth of neighbour visits
  Placement p = place_lifetimes(lts, small);
  EXPECT_GT(p.search_steps, 0);
  EXPECT_LT(p.search_steps, 200);
  EXPECT_GT(p.size, live_bytes_peak(lts));
  EXPECT_LE(p.size, p.greedy_size);
  EXPECT_EQ(check_placement(lts, p.offsets), "");
}

TEST(MemoryPlacement, CheckPlacementNamesOverlapsAndMissingOffsets) {
  std::vector<Lifetime> lts = {{7, 0, 2, 128}, {9, 1, 3, 64}, {11, 3, 4, 64}};
  EXPECT_EQ(check_placement(lts, {0, 128, 0}), "");
  std::string overlap = check_placement(lts, {0, 64, 0});
  EXPECT_NE(overlap.find("values 7 and 9"), std::string::npos) << overlap;
  EXPECT_NE(check_placement(lts, {0, 128, -1}).find("value 11"), std::string::npos);
  EXPECT_NE(check_placement(lts, {0, 128}), "");
}

class RecordedLifetimes : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedLifetimes, SearchReachesTheLowerBoundWhereGreedyMissesIt) {
  std::vector<Lifetime> lts = read_lifetimes(GetParam());
  ASSERT_GT(lts.size(), 40u) << "testdata/lifetimes/" << GetParam() << ".txt not read";
  const size_t bound = live_bytes_peak(lts);
  std::vector<int64_t> by_size, by_first_use;
  const size_t old_plan = std::min(place_by_size(lts, &by_size), place_by_first_use(lts, &by_first_use));
  Placement p = place_lifetimes(lts);
  ASSERT_EQ(check_placement(lts, p.offsets), "");
  std::printf("[placement] %-16s %4zu lifetimes: bound %8zu, size-or-first-use %8zu (%.3fx), best greedy %8zu "
              "(%s), searched %8zu in %d steps\n",
              GetParam(), lts.size(), bound, old_plan, static_cast<double>(old_plan) / static_cast<double>(bound),
              p.greedy_size, p.strategy.c_str(), p.size, p.search_steps);
  EXPECT_GT(old_plan, bound * 102 / 100);  // why the file is here: the old planner missed by > 2%
  EXPECT_EQ(p.size, bound);
}

INSTANTIATE_TEST_SUITE_P(ExportedGraphs, RecordedLifetimes,
                         ::testing::Values("gpt_neox", "edgenext", "mamba2", "olmoe", "mnasnet0_5", "efficientnet_v2"));

}  // namespace
}  // namespace exporter
}  // namespace ember
