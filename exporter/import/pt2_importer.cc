#include "exporter/import/pt2_importer.h"

#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "exporter/import/sym_expr.h"
#include "exporter/import/subgraph_names.h"
#include "exporter/import/zip_archive.h"
#include "exporter/ops/op_schemas.h"

namespace ember {
namespace exporter {
namespace {

using json = nlohmann::json;

absl::Status bad(const std::string& why) { return absl::InvalidArgumentError(why); }

const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
// j[key] or null: nlohmann's const operator[] asserts (UB with NDEBUG) on a missing key.
const json& member(const json& j, const char* key) {
  static const json null_json;
  const json* f = field(j, key);
  return f != nullptr ? *f : null_json;
}
bool get_int(const json& j, const char* key, int64_t* out) {
  const json* f = field(j, key);
  if (f == nullptr || !f->is_number_integer()) return false;
  *out = f->get<int64_t>();
  return true;
}
std::string get_str(const json& j, const char* key) {
  const json* f = field(j, key);
  return f != nullptr && f->is_string() ? f->get<std::string>() : std::string();
}
// A float as torch.export writes it: a JSON number, or "Infinity" / "-Infinity" / "NaN"
// (strings, as JSON has no literal for them).
bool get_double(const json& j, double* out) {
  if (j.is_number()) {
    *out = j.get<double>();
    return true;
  }
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "Infinity" || s == "inf") *out = std::numeric_limits<double>::infinity();
  else if (s == "-Infinity" || s == "-inf") *out = -std::numeric_limits<double>::infinity();
  else if (s == "NaN" || s == "nan") *out = std::numeric_limits<double>::quiet_NaN();
  else return false;
  return true;
}
// The single key of a tagged-union object ({"as_tensor": {...}}).
std::string tag_of(const json& j) {
  if (!j.is_object() || j.empty()) return "";
  return j.begin().key();
}

absl::StatusOr<json> parse_json(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad(what + " is not valid JSON");
  return j;
}

class Importer {
 public:
  explicit Importer(const ZipArchive& zip) : zip_(zip) {}

  absl::StatusOr<Graph> run();

 private:
  absl::Status find_prefix();
  absl::Status read_range_constraints(const json& root);
  absl::StatusOr<int64_t> sym_bound(const json& size, bool* dynamic);
  absl::Status read_tensor_values(const json& graph);
  absl::Status read_sym_values(const json& graph);
  absl::Status read_signature(const json& sig);
  absl::StatusOr<int> load_constant(const std::string& name, const json& config_entry, const std::string& folder);
  absl::StatusOr<const json*> lookup_config(const std::string& key, bool weights_first, std::string* folder);
  absl::Status read_node(const json& node);
  absl::Status inline_subgraph_call(const json& node, const std::string& where);
  absl::StatusOr<Arg> convert_arg(const json& arg, const std::string& where);
  absl::StatusOr<int> value_ref(const json& name_obj, const std::string& where);

  const ZipArchive& zip_;
  std::string prefix_;
  Graph g_;
  std::map<std::string, int64_t> symbol_max_;
  int inlined_subgraphs_ = 0;  // numbers the name prefixes of inlined subgraphs
  int subgraph_depth_ = 0;     // nesting of the subgraph calls being inlined
  json weights_config_;
  json constants_config_;
};

absl::Status Importer::find_prefix() {
  for (const std::string& e : zip_.entries()) {
    const std::string tail = "models/model.json";
    if (e.size() >= tail.size() && e.compare(e.size() - tail.size(), tail.size(), tail) == 0) {
      prefix_ = e.substr(0, e.size() - tail.size());
      return absl::OkStatus();
    }
  }
  return bad(zip_.path() + ": not a torch.export archive (no <archive>/models/model.json entry)");
}

absl::Status Importer::read_range_constraints(const json& root) {
  const json* rc = field(root, "range_constraints");
  if (rc == nullptr || !rc->is_object()) return absl::OkStatus();
  for (auto it = rc->begin(); it != rc->end(); ++it) {
    int64_t mx = 0;
    const json* maxv = field(it.value(), "max_val");
    if (maxv == nullptr || !maxv->is_number_integer() || (mx = maxv->get<int64_t>()) > (int64_t{1} << 40)) {
      return bad(absl::StrCat("dynamic dimension ", it.key(),
                              " has no finite upper bound; export it with torch.export.Dim(..., max=N)"));
    }
    symbol_max_[it.key()] = mx;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Importer::sym_bound(const json& size, bool* dynamic) {
  *dynamic = false;
  int64_t v = 0;
  if (get_int(size, "as_int", &v)) return v;
  const json* e = field(size, "as_expr");
  if (e != nullptr) {
    std::string expr = get_str(*e, "expr_str");
    *dynamic = true;
    auto r = evaluate_sym_expr(expr, symbol_max_);
    if (!r.ok()) return r.status();
    return *r < 0 ? 0 : *r;
  }
  return bad("a size is neither as_int nor as_expr: " + size.dump());
}

absl::Status Importer::read_tensor_values(const json& graph) {
  const json* tv = field(graph, "tensor_values");
  if (tv == nullptr || !tv->is_object()) return bad("model.json: graph has no tensor_values");
  for (auto it = tv->begin(); it != tv->end(); ++it) {
    Value v;
    v.name = it.key();
    v.type = ValueType::Tensor;
    int64_t code = 0;
    if (!get_int(it.value(), "dtype", &code)) return bad("tensor " + v.name + " has no dtype");
    auto dt = scalar_type_from_pt2(code);
    if (!dt.ok()) return bad("tensor " + v.name + ": " + std::string(dt.status().message()));
    v.dtype = *dt;
    const json* sizes = field(it.value(), "sizes");
    if (sizes == nullptr || !sizes->is_array()) return bad("tensor " + v.name + " has no sizes");
    for (const json& s : *sizes) {
      bool dyn = false;
      auto b = sym_bound(s, &dyn);
      if (!b.ok()) return bad("tensor " + v.name + ": " + std::string(b.status().message()));
      v.sizes.push_back(*b);
      v.dynamic_dims.push_back(dyn);
    }
    g_.add_value(std::move(v));
  }
  return absl::OkStatus();
}

absl::Status Importer::read_sym_values(const json& graph) {
  const json* sv = field(graph, "sym_int_values");
  if (sv != nullptr && sv->is_object()) {
    for (auto it = sv->begin(); it != sv->end(); ++it) {
      Value v;
      v.name = it.key();
      v.type = ValueType::SymInt;
      bool dyn = false;
      auto b = sym_bound(it.value(), &dyn);
      if (!b.ok()) return bad("symbolic int " + v.name + ": " + std::string(b.status().message()));
      v.sym_upper = *b;
      g_.add_value(std::move(v));
    }
  }
  const json* bv = field(graph, "sym_bool_values");
  if (bv != nullptr && bv->is_object()) {
    for (auto it = bv->begin(); it != bv->end(); ++it) {
      Value v;
      v.name = it.key();
      v.type = ValueType::SymBool;
      g_.add_value(std::move(v));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const json*> Importer::lookup_config(const std::string& key, bool weights_first,
                                                    std::string* folder) {
  const json* wc = field(weights_config_, "config");
  const json* cc = field(constants_config_, "config");
  const json* first = weights_first ? wc : cc;
  const json* second = weights_first ? cc : wc;
  const char* f1 = weights_first ? "data/weights/" : "data/constants/";
  const char* f2 = weights_first ? "data/constants/" : "data/weights/";
  if (first != nullptr && field(*first, key.c_str()) != nullptr) {
    *folder = f1;
    return field(*first, key.c_str());
  }
  if (second != nullptr && field(*second, key.c_str()) != nullptr) {
    *folder = f2;
    return field(*second, key.c_str());
  }
  return absl::NotFoundError("no stored data for '" + key + "' in the weight or constant tables");
}

absl::StatusOr<int> Importer::load_constant(const std::string& name, const json& entry,
                                            const std::string& folder) {
  if (const json* p = field(entry, "use_pickle"); p != nullptr && p->is_boolean() && p->get<bool>()) {
    return bad("constant '" + name + "' is stored pickled; only raw tensors are supported");
  }
  std::string file = get_str(entry, "path_name");
  const json* meta = field(entry, "tensor_meta");
  if (file.empty() || meta == nullptr) return bad("constant '" + name + "' has no path_name/tensor_meta");
  Constant c;
  c.name = name;
  int64_t code = 0;
  if (!get_int(*meta, "dtype", &code)) return bad("constant '" + name + "' has no dtype");
  auto dt = scalar_type_from_pt2(code);
  if (!dt.ok()) return bad("constant '" + name + "': " + std::string(dt.status().message()));
  c.dtype = *dt;
  std::vector<int64_t> strides;
  const json* sizes = field(*meta, "sizes");
  const json* st = field(*meta, "strides");
  if (sizes == nullptr || !sizes->is_array()) return bad("constant '" + name + "' has no sizes");
  for (const json& s : *sizes) {
    int64_t v = 0;
    if (!get_int(s, "as_int", &v) || v < 0) return bad("constant '" + name + "' has a non-static size");
    c.sizes.push_back(v);
  }
  if (st != nullptr && st->is_array()) {
    for (const json& s : *st) {
      int64_t v = 0;
      if (!get_int(s, "as_int", &v)) return bad("constant '" + name + "' has a non-static stride");
      strides.push_back(v);
    }
  }
  if (strides.size() != c.sizes.size()) {  // assume contiguous
    strides.assign(c.sizes.size(), 1);
    for (int i = static_cast<int>(c.sizes.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * c.sizes[i + 1];
  }
  int64_t offset = 0;
  if (const json* so = field(*meta, "storage_offset")) get_int(*so, "as_int", &offset);
  auto raw = zip_.read(prefix_ + folder + file);
  if (!raw.ok()) return bad("constant '" + name + "': " + std::string(raw.status().message()));
  size_t esize = element_size(c.dtype);
  int64_t numel = 1;
  for (int64_t s : c.sizes) numel *= s;
  // Largest element index touched.
  int64_t max_index = offset;
  for (size_t d = 0; d < c.sizes.size(); ++d) {
    if (c.sizes[d] == 0) { max_index = -1; break; }
    if (strides[d] < 0) return bad("constant '" + name + "' has a negative stride");
    max_index += (c.sizes[d] - 1) * strides[d];
  }
  if (numel > 0 && static_cast<size_t>(max_index + 1) * esize > raw->size()) {
    return bad(absl::StrCat("constant '", name, "': ", folder, file, " holds ", raw->size(),
                            " bytes, fewer than its sizes/strides need"));
  }
  c.data.resize(static_cast<size_t>(numel) * esize);
  bool contiguous = true;
  {
    int64_t expect = 1;
    for (int i = static_cast<int>(c.sizes.size()) - 1; i >= 0; --i) {
      if (c.sizes[i] != 1 && strides[i] != expect) contiguous = false;
      expect *= c.sizes[i];
    }
  }
  if (contiguous) {
    if (numel > 0) std::memcpy(c.data.data(), raw->data() + offset * esize, c.data.size());
  } else {
    std::vector<int64_t> idx(c.sizes.size(), 0);
    for (int64_t lin = 0; lin < numel; ++lin) {
      int64_t src = offset;
      for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * strides[d];
      std::memcpy(c.data.data() + lin * esize, raw->data() + src * esize, esize);
      for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
        if (++idx[d] < c.sizes[d]) break;
        idx[d] = 0;
      }
    }
  }
  g_.constants.push_back(std::move(c));
  return static_cast<int>(g_.constants.size()) - 1;
}

absl::Status Importer::read_signature(const json& sig) {
  const json* ins = field(sig, "input_specs");
  const json* outs = field(sig, "output_specs");
  if (ins == nullptr || outs == nullptr || !ins->is_array() || !outs->is_array()) {
    return bad("model.json: graph signature has no input_specs/output_specs");
  }
  for (const json& spec : *ins) {
    std::string kind = tag_of(spec);
    const json& body = member(spec, kind.c_str());
    if (kind == "user_input") {
      const json* arg = field(body, "arg");
      std::string t = arg ? tag_of(*arg) : "";
      if (t == "as_tensor" || t == "as_sym_int") {
        auto id = value_ref((*arg)[t], "user input");
        if (!id.ok()) return id.status();
        g_.values[*id].role = ValueRole::UserInput;
        g_.inputs.push_back(*id);
      } else {
        return bad("unsupported user input kind '" + t + "' (only tensors and symbolic ints)");
      }
      continue;
    }
    if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant" || kind == "constant_tensor") {
      const json* arg = field(body, "arg");
      std::string vname = arg ? get_str(*arg, "name") : "";
      int id = g_.find(vname);
      if (id < 0) return bad("signature input '" + vname + "' is not a tensor of the graph");
      std::string key = kind == "parameter" ? get_str(body, "parameter_name")
                        : kind == "buffer"  ? get_str(body, "buffer_name")
                                            : get_str(body, "tensor_constant_name");
      if (key.empty()) key = get_str(body, "name");
      std::string folder;
      auto entry = lookup_config(key, kind == "parameter" || kind == "buffer", &folder);
      if (!entry.ok()) return bad(kind + " '" + key + "': " + std::string(entry.status().message()));
      auto c = load_constant(key, **entry, folder);
      if (!c.ok()) return c.status();
      Value& v = g_.values[id];
      const Constant& cst = g_.constants[*c];
      if (cst.dtype != v.dtype || cst.sizes != v.sizes) {
        return bad(kind + " '" + key + "': stored dtype/shape differ from the graph's");
      }
      v.role = ValueRole::Constant;
      v.constant = *c;
      continue;
    }
    if (kind == "token") continue;
    return bad("unsupported graph input kind '" + kind + "' (custom objects are not supported)");
  }
  for (const json& spec : *outs) {
    std::string kind = tag_of(spec);
    const json& body = member(spec, kind.c_str());
    const json* arg = field(body, "arg");
    if (arg == nullptr) return bad("output spec '" + kind + "' has no arg");
    if (kind == "user_output") {
      std::string t = tag_of(*arg);
      GraphOutput o;
      if (t == "as_tensor" || t == "as_sym_int") {
        const json& inner = (*arg)[t];
        int64_t cv = 0;
        if (t == "as_sym_int" && get_int(inner, "as_int", &cv)) {
          o.is_int = true;
          o.int_value = cv;
        } else {
          auto id = value_ref(inner, "graph output");
          if (!id.ok()) return id.status();
          o.value = *id;
        }
      } else if (t == "as_int") {
        o.is_int = true;
        o.int_value = (*arg)[t].get<int64_t>();
      } else {
        return bad("unsupported graph output kind '" + t + "'");
      }
      g_.outputs.push_back(o);
    } else if (kind == "buffer_mutation" || kind == "user_input_mutation") {
      int from = g_.find(get_str(*arg, "name"));
      std::string target = get_str(body, kind == "buffer_mutation" ? "buffer_name" : "user_input_name");
      int to = -1;
      if (kind == "user_input_mutation") {
        to = g_.find(target);
      } else {
        for (const json& in : *ins) {
          if (tag_of(in) == "buffer" && get_str(in["buffer"], "buffer_name") == target) {
            to = g_.find(get_str(member(in["buffer"], "arg"), "name"));
          }
        }
      }
      if (from < 0 || to < 0) return bad(kind + " of '" + target + "' refers to unknown values");
      if (kind == "buffer_mutation") g_.values[to].role = ValueRole::MutableState;
      if (kind == "user_input_mutation") g_.mutable_inputs.insert(to);
      g_.write_backs.push_back(WriteBack{from, to});
    } else if (kind == "token") {
      continue;
    } else {
      return bad("unsupported graph output kind '" + kind + "' (training outputs are not supported)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Importer::value_ref(const json& name_obj, const std::string& where) {
  std::string name = get_str(name_obj, "name");
  if (name.empty()) name = get_str(name_obj, "as_name");
  int id = g_.find(name);
  if (id < 0) return bad(where + " refers to unknown value '" + name + "'");
  return id;
}

absl::StatusOr<Arg> Importer::convert_arg(const json& arg, const std::string& where) {
  std::string t = tag_of(arg);
  if (t.empty()) return bad(where + ": malformed argument " + arg.dump());
  const json& v = arg[t];
  Arg a;
  auto fail = [&]() { return bad(where + ": malformed " + t + " argument " + v.dump()); };
  if (t == "as_none") return Arg::none();
  if (t == "as_tensor") {
    auto id = value_ref(v, where);
    if (!id.ok()) return id.status();
    return Arg::tensor(*id);
  }
  if (t == "as_optional_tensor") {
    if (tag_of(v) == "as_none") return Arg::none();
    return convert_arg(v, where);
  }
  if (t == "as_tensors" || t == "as_optional_tensors") {
    if (!v.is_array()) return fail();
    a.kind = t == "as_tensors" ? Arg::Kind::Tensors : Arg::Kind::OptionalTensors;
    for (const json& e : v) {
      if (t == "as_optional_tensors") {
        std::string et = tag_of(e);
        if (et == "as_none") { a.refs.push_back(-1); continue; }
        if (et != "as_tensor") return fail();
        auto id = value_ref(e["as_tensor"], where);
        if (!id.ok()) return id.status();
        a.refs.push_back(*id);
      } else {
        auto id = value_ref(e, where);
        if (!id.ok()) return id.status();
        a.refs.push_back(*id);
      }
    }
    return a;
  }
  if (t == "as_int" || t == "as_memory_format" || t == "as_layout") {
    if (!v.is_number_integer()) return fail();
    return Arg::integer(v.get<int64_t>());
  }
  if (t == "as_scalar_type") {
    if (!v.is_number_integer()) return fail();
    auto st = scalar_type_from_pt2(v.get<int64_t>());
    if (!st.ok()) return bad(where + ": " + std::string(st.status().message()));
    return Arg::integer(static_cast<int64_t>(*st));
  }
  if (t == "as_float") {
    double d = 0;
    if (!get_double(v, &d)) return fail();
    return Arg::real(d);
  }
  if (t == "as_bool") {
    if (!v.is_boolean()) return fail();
    return Arg::boolean(v.get<bool>());
  }
  if (t == "as_string") {
    if (!v.is_string()) return fail();
    a.kind = Arg::Kind::String;
    a.s = v.get<std::string>();
    return a;
  }
  if (t == "as_device") return Arg::none();
  if (t == "as_ints") {
    if (!v.is_array()) return fail();
    std::vector<int64_t> ints;
    for (const json& e : v) { if (!e.is_number_integer()) return fail(); ints.push_back(e.get<int64_t>()); }
    return Arg::int_list(ints);
  }
  if (t == "as_floats") {
    if (!v.is_array()) return fail();
    a.kind = Arg::Kind::Doubles;
    for (const json& e : v) {
      double d = 0;
      if (!get_double(e, &d)) return fail();
      a.doubles.push_back(d);
    }
    return a;
  }
  if (t == "as_bools") {
    if (!v.is_array()) return fail();
    a.kind = Arg::Kind::Bools;
    for (const json& e : v) { if (!e.is_boolean()) return fail(); a.bools.push_back(e.get<bool>()); }
    return a;
  }
  if (t == "as_sym_int" || t == "as_sym_bool") {
    int64_t iv = 0;
    if (get_int(v, "as_int", &iv)) return Arg::integer(iv);
    if (const json* b = field(v, "as_bool"); b != nullptr && b->is_boolean()) return Arg::boolean(b->get<bool>());
    auto id = value_ref(v, where);
    if (!id.ok()) return id.status();
    a.kind = t == "as_sym_int" ? Arg::Kind::SymInt : Arg::Kind::SymBool;
    a.ref = *id;
    return a;
  }
  if (t == "as_sym_ints") {
    if (!v.is_array()) return fail();
    a.kind = Arg::Kind::SymInts;
    bool any_sym = false;
    for (const json& e : v) {
      int64_t iv = 0;
      if (get_int(e, "as_int", &iv)) {
        a.ints.push_back(iv);
        a.refs.push_back(-1);
        continue;
      }
      auto id = value_ref(e, where);
      if (!id.ok()) return id.status();
      a.ints.push_back(g_.values[*id].sym_upper);
      a.refs.push_back(*id);
      any_sym = true;
    }
    if (!any_sym) return Arg::int_list(a.ints);
    return a;
  }
  return bad(where + ": unsupported argument kind '" + t + "'");
}

absl::Status Importer::read_node(const json& node) {
  std::string target = get_str(node, "target");
  std::string source;
  if (const json* md = field(node, "metadata")) source = last_stack_frame(get_str(*md, "stack_trace"));
  std::string where = "node '" + get_str(node, "name") + "' (" + target + ")" +
                      (source.empty() ? "" : " at " + source);
  const json* inputs = field(node, "inputs");
  const json* outputs = field(node, "outputs");
  if (target.empty() || inputs == nullptr || outputs == nullptr || !inputs->is_array() || !outputs->is_array()) {
    return bad("model.json: malformed node " + get_str(node, "name"));
  }
  // with_effects(token, op, *args): an effectful op (e.g. _linalg_check_errors) threaded on
  // an effect token. Execution order is program order here, so the token is dropped and the
  // node becomes a call of `op` itself (outputs: all but the token).
  json unwrapped;
  if (target == "torch.ops.higher_order.with_effects") {
    if (inputs->size() < 2 || outputs->empty()) return bad(where + ": malformed with_effects");
    std::string op = get_str(member((*inputs)[1], "arg"), "as_operator");
    if (op.rfind("torch.ops.", 0) != 0) return bad(where + ": with_effects of an unsupported operator");
    unwrapped = node;
    unwrapped["target"] = op;
    json& in = unwrapped["inputs"];
    in.erase(in.begin(), in.begin() + 2);
    json& out = unwrapped["outputs"];
    out.erase(out.begin());
    return read_node(unwrapped);
  }
  // wrap_with_set_grad_enabled(enabled, subgraph, *args): a `with torch.no_grad():` block
  // inside forward (Hugging Face's rotary embeddings and MoE routing). Gradients mean nothing
  // to inference, so the block's nodes are inlined.
  if (target == "torch.ops.higher_order.wrap_with_set_grad_enabled") return inline_subgraph_call(node, where);
  Node n;
  n.source = source;
  n.name = get_str(node, "name");
  if (target.rfind("torch.ops.", 0) == 0) {
    std::string rest = target.substr(std::strlen("torch.ops."));
    size_t d1 = rest.find('.');
    size_t d2 = d1 == std::string::npos ? std::string::npos : rest.find('.', d1 + 1);
    if (d2 == std::string::npos) return bad(where + ": cannot parse operator target");
    n.op = rest.substr(0, d1) + "::" + rest.substr(d1 + 1, d2 - d1 - 1);
    n.overload = rest.substr(d2 + 1);
  } else if (target.rfind("_operator.", 0) == 0) {
    n.op = "_operator::" + target.substr(std::strlen("_operator."));
    n.overload = "default";
  } else if (target.find("getitem") != std::string::npos) {
    // Multi-output selection: the output aliases one element of the input list.
    if (inputs->size() != 2 || outputs->size() != 1) return bad(where + ": malformed getitem");
    auto list = convert_arg(member((*inputs)[0], "arg"), where);
    if (!list.ok()) return list.status();
    const json& idx = member((*inputs)[1], "arg");
    int64_t k = 0;
    if (!get_int(idx, "as_int", &k) || list->refs.empty() || k < 0 || k >= static_cast<int64_t>(list->refs.size()) ||
        list->refs[static_cast<size_t>(k)] < 0) {
      return bad(where + ": unsupported getitem");
    }
    std::string out_name = get_str(member((*outputs)[0], "as_tensor"), "name");
    g_.by_name[out_name] = list->refs[static_cast<size_t>(k)];
    return absl::OkStatus();
  } else {
    return bad(where + ": unsupported call target (control flow and higher-order ops are not supported)");
  }
  n.schema = find_op_schema(n.op, n.overload);
  if (n.schema != nullptr) {
    n.args.resize(n.schema->args.size());
    n.arg_names.resize(n.schema->args.size());
    std::vector<bool> given(n.schema->args.size(), false);
    size_t positional = 0;
    for (const json& in : *inputs) {
      std::string name = get_str(in, "name");
      int64_t kind = 1;
      get_int(in, "kind", &kind);
      int idx = n.schema->arg_index(name);
      if (idx < 0 && kind == 1 && positional < n.schema->args.size()) idx = static_cast<int>(positional);
      if (idx < 0) return bad(where + ": argument '" + name + "' is not in the schema " + n.schema->text);
      ++positional;
      auto a = convert_arg(field(in, "arg") ? in["arg"] : json(), where);
      if (!a.ok()) return a.status();
      n.args[idx] = *a;
      given[idx] = true;
    }
    for (size_t i = 0; i < given.size(); ++i) {
      const SchemaArg& sa = n.schema->args[i];
      n.arg_names[i] = sa.name;
      if (given[i]) continue;
      if (sa.has_default) n.args[i] = sa.default_value;
      else if (sa.optional) n.args[i] = Arg::none();
      else return bad(where + ": required argument '" + sa.name + "' is missing");
    }
  } else {
    for (const json& in : *inputs) {
      auto a = convert_arg(field(in, "arg") ? in["arg"] : json(), where);
      if (!a.ok()) return a.status();
      n.args.push_back(*a);
      n.arg_names.push_back(get_str(in, "name"));
    }
  }
  for (const json& out : *outputs) {
    std::string t = tag_of(out);
    if (t == "as_none") continue;
    auto a = convert_arg(out, where + " output");
    if (!a.ok()) return a.status();
    n.outputs.push_back(*a);
  }
  int index = static_cast<int>(g_.nodes.size());
  for (int r : n.output_values()) g_.values[r].producer = index;
  g_.nodes.push_back(std::move(n));
  return absl::OkStatus();
}

// Inlines a higher-order call of a subgraph: the subgraph's names get a prefix of their own
// (subgraph_names.h), its placeholders are bound to the call's arguments 2.., its nodes are
// read as the caller's, and the call's outputs become the subgraph's outputs.
absl::Status Importer::inline_subgraph_call(const json& node, const std::string& where) {
  const json* inputs = field(node, "inputs");
  const json* outputs = field(node, "outputs");
  if (inputs == nullptr || outputs == nullptr || !inputs->is_array() || !outputs->is_array() || inputs->size() < 2) {
    return bad(where + ": malformed subgraph call");
  }
  const json* sub = field(member((*inputs)[1], "arg"), "as_graph");
  const json* graph = sub != nullptr ? field(*sub, "graph") : nullptr;
  if (graph == nullptr || !graph->is_object()) return bad(where + ": the second argument is not a subgraph");
  // Each level copies its subgraph and recurses: bound both (a hostile archive nests deeply).
  if (++inlined_subgraphs_ > 10000) return bad(where + ": more than 10000 subgraph calls");
  if (subgraph_depth_ >= 32) return bad(where + ": subgraph calls nested more than 32 deep");
  const json g = prefix_subgraph_names(*graph, "subgraph" + std::to_string(inlined_subgraphs_) + ".");
  const json* sub_inputs = field(g, "inputs");
  const json* sub_outputs = field(g, "outputs");
  const json* nodes = field(g, "nodes");
  if (sub_inputs == nullptr || sub_outputs == nullptr || nodes == nullptr || !sub_inputs->is_array() ||
      !sub_outputs->is_array() || !nodes->is_array() || sub_inputs->size() != inputs->size() - 2 ||
      sub_outputs->size() != outputs->size()) {
    return bad(where + ": the subgraph's inputs or outputs do not match the call's");
  }
  if (auto s = read_sym_values(g); !s.ok()) return s;
  if (auto s = read_tensor_values(g); !s.ok()) return s;
  for (size_t i = 0; i < sub_inputs->size(); ++i) {
    const std::string t = tag_of((*sub_inputs)[i]);
    const json& arg = member((*inputs)[i + 2], "arg");
    if (t != "as_tensor" || tag_of(arg) != "as_tensor") return bad(where + ": only tensor arguments are supported");
    auto outer = value_ref(arg["as_tensor"], where);
    if (!outer.ok()) return outer.status();
    const std::string name = get_str((*sub_inputs)[i]["as_tensor"], "name");
    if (name.empty()) return bad(where + ": a subgraph input has no name");
    g_.by_name[name] = *outer;
  }
  ++subgraph_depth_;
  for (const json& n : *nodes) {
    absl::Status s = read_node(n);
    if (!s.ok()) {
      --subgraph_depth_;
      return s;
    }
  }
  --subgraph_depth_;
  for (size_t k = 0; k < outputs->size(); ++k) {
    if (tag_of((*outputs)[k]) != "as_tensor" || tag_of((*sub_outputs)[k]) != "as_tensor") {
      return bad(where + ": only tensor outputs are supported");
    }
    auto inner = value_ref((*sub_outputs)[k]["as_tensor"], where + " output");
    if (!inner.ok()) return inner.status();
    g_.by_name[get_str((*outputs)[k]["as_tensor"], "name")] = *inner;
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> Importer::run() {
  if (auto s = find_prefix(); !s.ok()) return s;
  auto text = zip_.read_text(prefix_ + "models/model.json");
  if (!text.ok()) return text.status();
  auto root = parse_json(*text, "models/model.json");
  if (!root.ok()) return root.status();
  const json* ver = field(*root, "schema_version");
  int64_t major = -1, minor = -1;
  if (ver == nullptr || !get_int(*ver, "major", &major)) return bad("model.json has no schema_version");
  get_int(*ver, "minor", &minor);
  if (major != kSupportedSchemaMajor) {
    return bad(absl::StrCat("unsupported ExportedProgram schema version ", major, ".", minor,
                            "; this exporter reads major version ", kSupportedSchemaMajor,
                            " (torch.export from PyTorch 2.4+)"));
  }
  if (const json* tv = field(*root, "torch_version"); tv != nullptr && tv->is_string()) {
    g_.torch_version = tv->get<std::string>();
  }
  for (const char* cfg : {"data/weights/model_weights_config.json", "data/constants/model_constants_config.json"}) {
    json& dst = std::strcmp(cfg, "data/weights/model_weights_config.json") == 0 ? weights_config_ : constants_config_;
    if (!zip_.contains(prefix_ + cfg)) { dst = json::object(); continue; }
    auto t = zip_.read_text(prefix_ + cfg);
    if (!t.ok()) return t.status();
    auto j = parse_json(*t, cfg);
    if (!j.ok()) return j.status();
    dst = *j;
  }
  if (auto s = read_range_constraints(*root); !s.ok()) return s;
  const json* gm = field(*root, "graph_module");
  const json* graph = gm ? field(*gm, "graph") : nullptr;
  const json* sig = gm ? field(*gm, "signature") : nullptr;
  if (graph == nullptr || sig == nullptr) return bad("model.json has no graph_module.graph/signature");
  if (auto s = read_sym_values(*graph); !s.ok()) return s;
  if (auto s = read_tensor_values(*graph); !s.ok()) return s;
  const json* nodes = field(*graph, "nodes");
  if (nodes == nullptr || !nodes->is_array()) return bad("model.json: graph has no nodes");
  for (const json& node : *nodes) {
    if (auto s = read_node(node); !s.ok()) return s;
  }
  // After the nodes, so outputs may name getitem aliases.
  if (auto s = read_signature(*sig); !s.ok()) return s;
  return std::move(g_);
}

}  // namespace

absl::StatusOr<ScalarType> scalar_type_from_pt2(int64_t code) {
  switch (code) {
    case 1: return ScalarType::UInt8;
    case 2: return ScalarType::Int8;
    case 3: return ScalarType::Int16;
    case 4: return ScalarType::Int32;
    case 5: return ScalarType::Int64;
    case 6: return ScalarType::Float16;
    case 7: return ScalarType::Float32;
    case 8: return ScalarType::Float64;
    case 12: return ScalarType::Bool;
    case 13: return ScalarType::BFloat16;
    case 9: case 10: case 11: return bad(absl::StrCat("complex dtype (code ", code, ") is not supported"));
    default: return bad(absl::StrCat("unknown dtype code ", code));
  }
}

namespace {

// Frames inside PyTorch itself (nn.Module.forward of a library layer, functional wrappers)
// say nothing about the user's model: the line worth showing is the last frame outside.
bool is_pytorch_frame(const std::string& head) {
  return head.find("/site-packages/torch/") != std::string::npos ||
         head.find("/dist-packages/torch/") != std::string::npos;
}

// "File \"f.py\", line N, in fn: code" for the frame starting at `pos`.
std::string format_frame(const std::string& trace, size_t pos) {
  std::string frame = trace.substr(pos);
  size_t nl = frame.find('\n');
  std::string head = frame.substr(0, nl);
  std::string code;
  if (nl != std::string::npos) {
    code = frame.substr(nl + 1);
    size_t b = code.find_first_not_of(" \t");
    code = b == std::string::npos ? "" : code.substr(b);
    size_t e = code.find('\n');
    if (e != std::string::npos) code = code.substr(0, e);
    if (code.rfind("File \"", 0) == 0) code.clear();  // a frame without a code line
  }
  return code.empty() ? head : head + ": " + code;
}

}  // namespace

std::string last_stack_frame(const std::string& trace) {
  size_t last = trace.rfind("File \"");
  if (last == std::string::npos) return "";
  for (size_t pos = last;; --pos) {
    pos = trace.rfind("File \"", pos);
    if (pos == std::string::npos) break;
    const size_t nl = trace.find('\n', pos);
    if (!is_pytorch_frame(trace.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos))) {
      return format_frame(trace, pos);
    }
    if (pos == 0) break;
  }
  return format_frame(trace, last);
}

absl::StatusOr<Graph> import_pt2(const std::string& path) {
  try {
    auto zip = ZipArchive::open(path);
    if (!zip.ok()) return zip.status();
    Importer imp(**zip);
    return imp.run();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(path + ": malformed archive: " + e.what());
  }
}

absl::StatusOr<Graph> import_pt2_bytes(const void* data, size_t size, const std::string& name) {
  try {
    auto zip = ZipArchive::open_memory(data, size, name);
    if (!zip.ok()) return zip.status();
    Importer imp(**zip);
    return imp.run();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(name + ": malformed archive: " + e.what());
  }
}

}  // namespace exporter
}  // namespace ember
