#include "exporter/ir/graph.h"

#include <algorithm>
#include <sstream>

namespace ember {
namespace exporter {

std::vector<int> Arg::value_refs() const {
  std::vector<int> out;
  switch (kind) {
    case Kind::Tensor:
    case Kind::SymInt:
    case Kind::SymBool:
      if (ref >= 0) out.push_back(ref);
      break;
    case Kind::Tensors:
    case Kind::OptionalTensors:
    case Kind::SymInts:
      for (int r : refs) if (r >= 0) out.push_back(r);
      break;
    default:
      break;
  }
  return out;
}

std::vector<int> Node::output_values() const {
  std::vector<int> out;
  for (const Arg& a : outputs) {
    for (int r : a.value_refs()) out.push_back(r);
  }
  return out;
}

int Graph::add_value(Value v) {
  v.id = static_cast<int>(values.size());
  if (!v.name.empty()) by_name[v.name] = v.id;
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_constant(Constant c) {
  Value v;
  v.name = c.name;
  v.role = ValueRole::Constant;
  v.dtype = c.dtype;
  v.sizes = c.sizes;
  v.dynamic_dims.assign(c.sizes.size(), false);
  constants.push_back(std::move(c));
  v.constant = static_cast<int>(constants.size()) - 1;
  return add_value(std::move(v));
}

int Graph::add_constant(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes,
                        const void* data, size_t nbytes) {
  Constant c;
  c.name = name;
  c.dtype = dtype;
  c.sizes = sizes;
  c.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  return add_constant(std::move(c));
}

std::vector<std::vector<int>> Graph::value_readers() const {
  std::vector<std::vector<int>> readers(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].erased) continue;
    for (const Arg& a : nodes[i].args) {
      for (int r : a.value_refs()) readers[r].push_back(static_cast<int>(i));
    }
  }
  for (const GraphOutput& o : outputs) {
    if (o.value >= 0) readers[o.value].push_back(-1);
  }
  for (const WriteBack& w : write_backs) readers[w.from].push_back(-1);
  return readers;
}

int Graph::find(const std::string& name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? -1 : it->second;
}

static void replace_in_arg(Arg& a, int from, int to) {
  if (a.ref == from) a.ref = to;
  for (int& r : a.refs) if (r == from) r = to;
}

void Graph::replace_uses(int from, int to) {
  for (Node& n : nodes) {
    if (n.erased) continue;
    for (Arg& a : n.args) replace_in_arg(a, from, to);
    for (Arg& a : n.outputs) replace_in_arg(a, from, to);  // in-place writers of `from`
  }
  for (GraphOutput& o : outputs) if (o.value == from) o.value = to;
  for (WriteBack& w : write_backs) if (w.from == from) w.from = to;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Node& n : nodes) {
    if (n.erased) continue;
    for (const Arg& a : n.args) for (int r : a.value_refs()) uses[r]++;
  }
  for (const GraphOutput& o : outputs) if (o.value >= 0) uses[o.value]++;
  for (const WriteBack& w : write_backs) {
    uses[w.from]++;
    uses[w.to]++;
  }
  return uses;
}

std::vector<std::vector<int>> Graph::node_dependencies() const {
  std::vector<std::vector<int>> deps(nodes.size());
  std::vector<int> last_writer(values.size(), -1);
  std::vector<std::vector<int>> readers_since_write(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.erased) continue;
    std::vector<int>& d = deps[i];
    for (const Arg& a : n.args) {
      for (int r : a.value_refs()) {
        if (last_writer[r] >= 0) d.push_back(last_writer[r]);
        readers_since_write[r].push_back(static_cast<int>(i));
      }
    }
    for (int r : n.output_values()) {
      if (last_writer[r] >= 0) d.push_back(last_writer[r]);
      for (int reader : readers_since_write[r]) {
        if (reader != static_cast<int>(i)) d.push_back(reader);
      }
      readers_since_write[r].clear();
      last_writer[r] = static_cast<int>(i);
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  return deps;
}

void Graph::compact() {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (Node& n : nodes) if (!n.erased) kept.push_back(std::move(n));
  nodes = std::move(kept);
  for (Value& v : values) v.producer = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int r : nodes[i].output_values()) {
      if (values[r].role == ValueRole::Activation) values[r].producer = static_cast<int>(i);
    }
  }
}

size_t Graph::num_live_nodes() const {
  size_t n = 0;
  for (const Node& node : nodes) n += node.erased ? 0 : 1;
  return n;
}

std::string dtype_name(ScalarType t) { return scalar_type_name(t); }

std::string shape_string(const Value& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    if (i) os << ", ";
    if (i < v.dynamic_dims.size() && v.dynamic_dims[i]) os << "<=";
    os << v.sizes[i];
  }
  os << "]";
  return os.str();
}

}  // namespace exporter
}  // namespace ember
