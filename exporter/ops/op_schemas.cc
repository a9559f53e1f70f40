#include "exporter/ops/op_schemas.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace ember {
namespace exporter {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

// Splits on commas at bracket depth 0.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  bool quote = false;
  for (char c : s) {
    if (c == '\'' || c == '"') quote = !quote;
    if (!quote && (c == '(' || c == '[')) depth++;
    if (!quote && (c == ')' || c == ']')) depth--;
    if (!quote && c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

// Removes alias annotations: "Tensor(a!)" -> "Tensor", "Tensor(a -> *)[]" -> "Tensor[]".
std::string strip_alias(const std::string& t) {
  std::string out;
  int depth = 0;
  for (char c : t) {
    if (c == '(') { depth++; continue; }
    if (c == ')') { depth--; continue; }
    if (depth == 0) out += c;
  }
  return trim(out);
}

bool is_int_literal(const std::string& s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i) if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

absl::StatusOr<Arg> parse_default(const SchemaArg& a, const std::string& text) {
  std::string v = trim(text);
  const std::string& base = a.base;
  bool floating = base == "float";
  if (v == "None") return Arg::none();
  if (v == "True" || v == "False") {
    bool b = v == "True";
    if (a.is_list) {
      Arg r; r.kind = Arg::Kind::Bools; r.bools.assign(a.list_size > 0 ? a.list_size : 1, b); return r;
    }
    return Arg::boolean(b);
  }
  if (!v.empty() && (v[0] == '\'' || v[0] == '"')) {
    Arg r; r.kind = Arg::Kind::String; r.s = v.substr(1, v.size() - 2); return r;
  }
  static const std::map<std::string, int64_t> kNamed = {
      {"Mean", 1}, {"Sum", 2}, {"contiguous_format", 1}, {"long", 7}, {"strided", 7},
  };
  auto it = kNamed.find(v);
  if (it != kNamed.end()) return Arg::integer(it->second);
  if (!v.empty() && v[0] == '[') {
    std::string inner = trim(v.substr(1, v.size() - 2));
    std::vector<std::string> items = inner.empty() ? std::vector<std::string>() : split_top(inner);
    if (floating) {
      Arg r; r.kind = Arg::Kind::Doubles;
      for (auto& s : items) r.doubles.push_back(std::strtod(s.c_str(), nullptr));
      return r;
    }
    if (base == "bool") {
      Arg r; r.kind = Arg::Kind::Bools;
      for (auto& s : items) r.bools.push_back(s == "True");
      return r;
    }
    std::vector<int64_t> ints;
    for (auto& s : items) {
      if (!is_int_literal(s)) return absl::InvalidArgumentError("bad list default '" + v + "'");
      ints.push_back(std::strtoll(s.c_str(), nullptr, 10));
    }
    return Arg::int_list(ints);
  }
  if (is_int_literal(v)) {
    int64_t n = std::strtoll(v.c_str(), nullptr, 10);
    if (floating) return Arg::real(static_cast<double>(n));
    if (a.is_list) {
      return Arg::int_list(std::vector<int64_t>(a.list_size > 0 ? a.list_size : 1, n));
    }
    return Arg::integer(n);
  }
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (end != nullptr && *end == '\0' && !v.empty()) {
    if (a.is_list) {
      Arg r; r.kind = Arg::Kind::Doubles; r.doubles.assign(a.list_size > 0 ? a.list_size : 1, d); return r;
    }
    return Arg::real(d);
  }
  return absl::InvalidArgumentError("cannot parse default value '" + v + "'");
}

}  // namespace

int OpSchema::arg_index(const std::string& arg_name) const {
  for (size_t i = 0; i < args.size(); ++i) if (args[i].name == arg_name) return static_cast<int>(i);
  return -1;
}

absl::StatusOr<OpSchema> parse_op_schema(const std::string& signature) {
  OpSchema s;
  s.text = signature;
  size_t open = signature.find('(');
  size_t arrow = signature.rfind("->");
  if (open == std::string::npos || arrow == std::string::npos || arrow < open) {
    return absl::InvalidArgumentError("malformed op schema: " + signature);
  }
  size_t close = signature.rfind(')', arrow);
  if (close == std::string::npos || close < open) {
    return absl::InvalidArgumentError("malformed op schema: " + signature);
  }
  std::string full = trim(signature.substr(0, open));
  size_t dot = full.find('.', full.find("::") == std::string::npos ? 0 : full.find("::") + 2);
  std::string name = dot == std::string::npos ? full : full.substr(0, dot);
  s.overload = dot == std::string::npos ? "default" : full.substr(dot + 1);
  s.name = name.find("::") == std::string::npos ? "aten::" + name : name;
  bool kwarg_only = false;
  for (const std::string& piece : split_top(signature.substr(open + 1, close - open - 1))) {
    if (piece == "*") {
      kwarg_only = true;
      continue;
    }
    SchemaArg a;
    a.kwarg_only = kwarg_only;
    std::string decl = piece;
    size_t eq = std::string::npos;
    {
      int depth = 0;
      for (size_t i = 0; i < decl.size(); ++i) {
        if (decl[i] == '(' || decl[i] == '[') depth++;
        if (decl[i] == ')' || decl[i] == ']') depth--;
        if (decl[i] == '=' && depth == 0) { eq = i; break; }
      }
    }
    std::string def;
    if (eq != std::string::npos) {
      def = decl.substr(eq + 1);
      decl = trim(decl.substr(0, eq));
      a.has_default = true;
    }
    size_t sp = decl.find_last_of(' ');
    if (sp == std::string::npos) return absl::InvalidArgumentError("malformed argument '" + piece + "' in " + signature);
    a.writes = decl.substr(0, sp).find('!') != std::string::npos;
    a.type = strip_alias(decl.substr(0, sp));
    a.name = trim(decl.substr(sp + 1));
    std::string t = a.type;
    if (!t.empty() && t.back() == '?') { a.optional = true; t.pop_back(); }
    size_t br = t.find('[');
    if (br != std::string::npos) {
      a.is_list = true;
      std::string n = t.substr(br + 1, t.find(']') - br - 1);
      a.list_size = n.empty() ? 0 : std::atoi(n.c_str());
      t = t.substr(0, br);
    }
    if (!t.empty() && t.back() == '?') { a.optional = true; t.pop_back(); }  // "Tensor?[]"
    a.base = t;
    if (a.has_default) {
      auto d = parse_default(a, def);
      if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat(d.status().message(), " in ", signature));
      a.default_value = *d;
    }
    s.args.push_back(std::move(a));
  }
  std::string ret = trim(signature.substr(arrow + 2));
  if (!ret.empty() && ret[0] == '(') ret = ret.substr(1, ret.size() - 2);
  for (const std::string& r : split_top(ret)) {
    std::string t = strip_alias(r);
    size_t sp = t.find(' ');
    if (sp != std::string::npos) t = t.substr(0, sp);
    s.returns.push_back(SchemaReturn{t});
  }
  return s;
}

namespace {
struct Table {
  std::vector<OpSchema> schemas;
  std::map<std::string, size_t> index;
};

const Table& table() {
  static const Table* t = [] {
    auto* tab = new Table();
    for (const std::vector<const char*>* strings : {&op_schema_strings(), &generated_aten_schema_strings()}) {
      for (const char* sig : *strings) {
        auto s = parse_op_schema(sig);
        if (!s.ok()) continue;  // covered by op_schemas_test (every entry must parse)
        if (tab->index.count(s->full_name())) continue;  // the hand-written entry wins
        tab->index[s->full_name()] = tab->schemas.size();
        tab->schemas.push_back(std::move(*s));
      }
    }
    return tab;
  }();
  return *t;
}
}  // namespace

namespace {
// Custom operators: a deque, so the pointers find_op_schema returns stay valid as it grows.
struct CustomTable {
  std::deque<OpSchema> schemas;
  std::map<std::string, const OpSchema*> index;
};
CustomTable& custom_table() {
  static CustomTable* t = new CustomTable();
  return *t;
}
}  // namespace

const OpSchema* find_op_schema(const std::string& name, const std::string& overload) {
  const Table& t = table();
  const std::string full = name + "." + (overload.empty() ? "default" : overload);
  auto it = t.index.find(full);
  if (it != t.index.end()) return &t.schemas[it->second];
  const CustomTable& c = custom_table();
  auto ct = c.index.find(full);
  return ct == c.index.end() ? nullptr : ct->second;
}

void preload_op_schemas() { table(); }

absl::Status add_custom_op_schema(const std::string& signature) {
  const std::string sig = trim(signature);
  const size_t paren = sig.find('(');
  if (paren == std::string::npos || sig.substr(0, paren).find("::") == std::string::npos) {
    return absl::InvalidArgumentError(
        "custom operator signature '" + sig +
        "' needs a namespace and an argument list, e.g. 'mylib::scaled_tanh(Tensor x, float scale) -> Tensor'");
  }
  auto s = parse_op_schema(sig);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("custom operator signature: ", s.status().message()));
  const std::string ns = s->name.substr(0, s->name.find("::"));
  if (ns == "aten" || ns == "prims") {
    return absl::InvalidArgumentError("custom operator " + s->full_name() + ": the " + ns +
                                      " namespace belongs to PyTorch; use your library's own namespace");
  }
  if (std::any_of(s->args.begin(), s->args.end(), [](const SchemaArg& a) { return a.writes; })) {
    return absl::InvalidArgumentError("custom operator " + s->full_name() +
                                      " writes to an argument (an alias annotation with '!'): only functional "
                                      "custom operators are supported; return a new tensor instead");
  }
  if (s->returns.empty()) {
    return absl::InvalidArgumentError("custom operator " + s->full_name() + " returns nothing: it must return a value");
  }
  const std::string full = s->full_name();
  if (table().index.count(full)) {
    return absl::InvalidArgumentError("custom operator " + full + " is already a built-in operator of the exporter");
  }
  CustomTable& c = custom_table();
  auto it = c.index.find(full);
  if (it != c.index.end()) {
    if (it->second->text == s->text) return absl::OkStatus();
    return absl::InvalidArgumentError("custom operator " + full + " was given two signatures: '" + it->second->text +
                                      "' and '" + s->text + "'");
  }
  c.schemas.push_back(std::move(*s));
  c.index[full] = &c.schemas.back();
  return absl::OkStatus();
}

bool is_custom_op(const std::string& full_name) { return custom_table().index.count(full_name) != 0; }

absl::StatusOr<std::vector<std::string>> read_custom_op_schemas(const std::string& path) {
  std::ifstream f(path);
  if (!f) return absl::NotFoundError("cannot read the custom operator signatures file " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file written on Windows
    const std::string t = trim(line);
    if (!t.empty() && t[0] != '#') out.push_back(t);
  }
  return out;
}

const std::vector<OpSchema>& all_op_schemas() { return table().schemas; }

namespace {
// major.minor.patch of a version string; false when it does not start with a number.
bool release_numbers(const std::string& v, int64_t out[3]) {
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    out[k] = 0;
    if (i >= v.size() || !std::isdigit(static_cast<unsigned char>(v[i]))) return k > 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
      out[k] = out[k] * 10 + (v[i++] - '0');
      if (out[k] > 1000000) return false;
    }
    if (i < v.size() && v[i] == '.') ++i;
    else return true;
  }
  return true;
}
}  // namespace

bool newer_torch_release(const std::string& a, const std::string& b) {
  int64_t x[3], y[3];
  if (!release_numbers(a, x) || !release_numbers(b, y)) return false;
  for (int k = 0; k < 3; ++k) {
    if (x[k] != y[k]) return x[k] > y[k];
  }
  return false;
}

}  // namespace exporter
}  // namespace ember
