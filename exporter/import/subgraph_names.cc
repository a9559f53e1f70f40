#include "exporter/import/subgraph_names.h"

#include <set>

namespace ember {
namespace exporter {
namespace {

using json = nlohmann::json;

// The value tables of a graph: their keys are the names the graph defines.
constexpr const char* kValueTables[] = {"tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values"};

void collect_defined(const json& graph, std::set<std::string>* names) {
  for (const char* table : kValueTables) {
    auto it = graph.find(table);
    if (it == graph.end() || !it->is_object()) continue;
    for (auto v = it->begin(); v != it->end(); ++v) names->insert(v.key());
  }
  auto in = graph.find("inputs");
  if (in == graph.end() || !in->is_array()) return;
  for (const json& i : *in) {
    if (!i.is_object() || i.empty()) continue;
    const json& v = i.begin().value();
    if (v.is_object()) {
      for (const char* k : {"name", "as_name"}) {
        auto n = v.find(k);
        if (n != v.end() && n->is_string()) names->insert(n->get<std::string>());
      }
    }
  }
}

// Renames, everywhere under `j`, the references to defined names: {"name": X} inside
// as_tensor / as_tensors / graph inputs and outputs, and {"as_name": X}. Argument names
// ({"name": "self", "arg": ...}) are left: their objects carry "arg".
void rename(json& j, const std::set<std::string>& defined, const std::string& prefix) {
  if (j.is_array()) {
    for (json& e : j) rename(e, defined, prefix);
    return;
  }
  if (!j.is_object()) return;
  for (const char* k : {"name", "as_name"}) {
    auto n = j.find(k);
    if (n != j.end() && n->is_string() && j.find("arg") == j.end() && defined.count(n->get<std::string>())) {
      *n = prefix + n->get<std::string>();
    }
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_structured()) rename(it.value(), defined, prefix);
  }
}

}  // namespace

json prefix_subgraph_names(const json& graph, const std::string& prefix) {
  std::set<std::string> defined;
  collect_defined(graph, &defined);
  json out = graph;
  for (const char* table : kValueTables) {
    auto it = out.find(table);
    if (it == out.end() || !it->is_object()) continue;
    json renamed = json::object();
    for (auto v = it->begin(); v != it->end(); ++v) renamed[prefix + v.key()] = v.value();
    *it = std::move(renamed);
  }
  for (const char* part : {"inputs", "outputs", "nodes"}) {
    auto it = out.find(part);
    if (it != out.end()) rename(*it, defined, prefix);
  }
  return out;
}

}  // namespace exporter
}  // namespace ember
