// Turning a backend's claimed node sets into delegate calls the program can schedule.
//
// A set of nodes can become one delegate call only if it is convex (no path leaves it and
// comes back: the call would need its own output as an input) and the calls together leave
// the graph acyclic (two sets that feed each other through different members deadlock, each
// convex on its own). Backends claim by their own rules (XNNPACK by producer chains, Vulkan by
// runs), and the dependencies they see are not all of them: in-place writes to mutable
// buffers (KV caches) order nodes through Graph::node_dependencies() too. So instead of
// rejecting what a backend claims, these functions re-form it, changing nothing that is
// already schedulable:
//   1. the claimed sets as they are, when their contraction is acyclic;
//   2. else each set split into convex pieces by how many times a path has left the set
//      before reaching a node (nodes reached after k exits form piece k);
//   3. else pieces by the longest path counting every step between different sets or
//      through unclaimed nodes, which is acyclic by construction (every edge between pieces
//      goes from a smaller count to a larger one).
// Nodes are graph indices; `deps[i]` are the nodes node i must follow, all earlier (the graph's
// node order is an execution order), as Graph::node_dependencies() returns them.
#pragma once

#include <set>
#include <vector>

namespace ember {
namespace exporter {

// The dependency edges between representatives: node i stands for rep[i], edges inside one
// representative vanish. (*succ)[a]: the representatives that must follow a; (*indegree)[b]:
// how many distinct ones b must follow.
void contract_dependencies(const std::vector<std::vector<int>>& deps, const std::vector<int>& rep,
                           std::vector<std::set<int>>* succ, std::vector<int>* indegree);

// True when contracting each set of `sets` (disjoint) to one node leaves the dependency graph
// acyclic.
bool contraction_is_acyclic(const std::vector<std::vector<int>>& deps, const std::vector<std::vector<int>>& sets);

// Step 2 for one set: its convex pieces, each in graph order (one piece when it is convex).
std::vector<std::vector<int>> split_convex(const std::vector<std::vector<int>>& deps, const std::vector<int>& set);

// Steps 1-3: `claimed` itself (order kept) when step 1 suffices, else pieces in graph order of
// their first node. `*regrouped` (optional) is the step that was needed: 1, 2 or 3.
std::vector<std::vector<int>> schedulable_groups(const std::vector<std::vector<int>>& deps,
                                                 const std::vector<std::vector<int>>& claimed, int* regrouped = nullptr);

}  // namespace exporter
}  // namespace ember
