#include "exporter/partition/schedulable_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace ember {
namespace exporter {

namespace {

// owner[i]: index of the set holding node i, or -1.
std::vector<int> owners(size_t num_nodes, const std::vector<std::vector<int>>& sets) {
  std::vector<int> owner(num_nodes, -1);
  for (size_t s = 0; s < sets.size(); ++s) {
    for (int i : sets[s]) {
      if (i >= 0 && size_t(i) < num_nodes) owner[i] = int(s);
    }
  }
  return owner;
}

std::vector<std::vector<int>> sorted_by_first_node(std::vector<std::vector<int>> groups) {
  for (auto& grp : groups) std::sort(grp.begin(), grp.end());
  groups.erase(std::remove_if(groups.begin(), groups.end(), [](const std::vector<int>& v) { return v.empty(); }),
               groups.end());
  std::sort(groups.begin(), groups.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
  return groups;
}

}  // namespace

void contract_dependencies(const std::vector<std::vector<int>>& deps, const std::vector<int>& rep,
                           std::vector<std::set<int>>* succ, std::vector<int>* indegree) {
  const size_t n = deps.size();
  succ->assign(n, {});
  indegree->assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int d : deps[i]) {
      const int a = rep[size_t(d)], b = rep[i];
      if (a != b && (*succ)[size_t(a)].insert(b).second) (*indegree)[size_t(b)]++;
    }
  }
}

bool contraction_is_acyclic(const std::vector<std::vector<int>>& deps, const std::vector<std::vector<int>>& sets) {
  const int n = int(deps.size());
  // Representative of each node: its set's first node, or itself.
  std::vector<int> rep(n);
  for (int i = 0; i < n; ++i) rep[i] = i;
  for (const auto& s : sets) {
    if (s.empty()) continue;
    const int r = *std::min_element(s.begin(), s.end());
    for (int i : s) rep[i] = r;
  }
  std::vector<std::set<int>> succ;
  std::vector<int> indegree;
  contract_dependencies(deps, rep, &succ, &indegree);
  std::vector<int> ready;
  int seen = 0, reps = 0;
  for (int i = 0; i < n; ++i) {
    if (rep[i] != i) continue;
    ++reps;
    if (indegree[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++seen;
    for (int s : succ[i]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  return seen == reps;
}

std::vector<std::vector<int>> split_convex(const std::vector<std::vector<int>>& deps, const std::vector<int>& set) {
  const int n = int(deps.size());
  std::vector<char> in(n, 0);
  for (int i : set) in[i] = 1;
  // exits[i]: the most times a path ending at node i has left the set (outside nodes carry the
  // count of the path that left; entering the set for the first time counts nothing). Along
  // any path the count never falls, and a path that leaves a piece and comes back raises it,
  // so the nodes of one count form a convex piece.
  std::vector<int> exits(n, 0);
  for (int i = 0; i < n; ++i) {
    int e = 0;
    for (int d : deps[i]) e = std::max(e, exits[d] + ((in[d] && !in[i]) ? 1 : 0));
    exits[i] = e;
  }
  std::map<int, std::vector<int>> pieces;
  for (int i : set) pieces[exits[i]].push_back(i);
  std::vector<std::vector<int>> out;
  for (auto& [count, nodes] : pieces) out.push_back(std::move(nodes));
  return sorted_by_first_node(std::move(out));
}

std::vector<std::vector<int>> schedulable_groups(const std::vector<std::vector<int>>& deps,
                                                 const std::vector<std::vector<int>>& claimed, int* regrouped) {
  if (regrouped != nullptr) *regrouped = 1;
  if (contraction_is_acyclic(deps, claimed)) return claimed;  // as claimed, in the backend's order
  const std::vector<std::vector<int>> sets = sorted_by_first_node(claimed);

  std::vector<std::vector<int>> convex;
  for (const auto& s : sets) {
    for (auto& piece : split_convex(deps, s)) convex.push_back(std::move(piece));
  }
  convex = sorted_by_first_node(std::move(convex));
  if (regrouped != nullptr) *regrouped = 2;
  if (contraction_is_acyclic(deps, convex)) return convex;

  // Longest path where a step stays free only between two members of one convex piece.
  const int n = int(deps.size());
  const std::vector<int> owner = owners(deps.size(), convex);
  std::vector<int> level(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int d : deps[i]) {
      const bool same = owner[i] >= 0 && owner[i] == owner[d];
      level[i] = std::max(level[i], level[d] + (same ? 0 : 1));
    }
  }
  std::map<std::pair<int, int>, std::vector<int>> pieces;  // (piece, level) -> nodes
  for (int i = 0; i < n; ++i) {
    if (owner[i] >= 0) pieces[{owner[i], level[i]}].push_back(i);
  }
  std::vector<std::vector<int>> out;
  for (auto& [key, nodes] : pieces) out.push_back(std::move(nodes));
  if (regrouped != nullptr) *regrouped = 3;
  return sorted_by_first_node(std::move(out));
}

}  // namespace exporter
}  // namespace ember
