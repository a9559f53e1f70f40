// Renaming the values a torch.export subgraph defines, so that its nodes can be inlined into
// the graph that calls it (pt2_importer.cc: higher-order ops such as
// wrap_with_set_grad_enabled, a `with torch.no_grad():` block inside forward).
//
// A subgraph ("as_graph" argument: inputs, outputs, nodes, tensor_values, sym_*_values) names
// its values in its own namespace: its placeholders may reuse the caller's names for other
// values. Every name the subgraph defines (its inputs and the keys of its value tables) gets
// `prefix`, wherever the subgraph refers to it (as_tensor / as_tensors names, as_name of
// symbolic ints and bools); names it does not define (none in well-formed archives) are left.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ember {
namespace exporter {

// Returns a copy of `graph` with the names it defines prefixed.
nlohmann::json prefix_subgraph_names(const nlohmann::json& graph, const std::string& prefix);

}  // namespace exporter
}  // namespace ember
