#include "tools/conformance/case_info.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace ember {
namespace conformance {
namespace {

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// "aten.bernoulli_.default" -> "bernoulli"; "bernoulli" -> "bernoulli".
std::string base_name(const std::string& op) {
  std::string s = op;
  if (s.rfind("aten.", 0) == 0) s = s.substr(5);
  size_t dot = s.find('.');
  if (dot != std::string::npos) s = s.substr(0, dot);
  while (!s.empty() && s.back() == '_') s.pop_back();  // in-place variants
  return s;
}

// Ops that sample random numbers.
const std::set<std::string>& sampling_ops() {
  static const std::set<std::string> ops = {
      "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
      "normal_functional", "uniform", "rand", "rand_like", "randn", "randn_like", "randint",
      "randint_like", "randperm", "poisson", "native_dropout", "rrelu", "rrelu_with_noise",
      "rrelu_with_noise_functional", "fractional_max_pool2d", "fractional_max_pool3d"};
  return ops;
}

// Ops whose results are uninitialised memory. Only random-valued when they are the op under
// test (the training graph); decompositions also use them as scratch that is fully written.
const std::set<std::string>& uninitialised_ops() {
  static const std::set<std::string> ops = {"empty", "empty_like", "empty_permuted", "empty_strided",
                                            "new_empty", "new_empty_strided"};
  return ops;
}

}  // namespace

const char* form_name(Form form) { return form == Form::Model ? "model" : "core"; }
const char* form_file(Form form) { return form == Form::Model ? "model.pt2" : "core.pt2"; }

bool is_random_valued_op(const std::string& aten_op) {
  std::string b = base_name(aten_op);
  return sampling_ops().count(b) != 0 || uninitialised_ops().count(b) != 0;
}

std::string read_case_info(const std::string& dir, CaseInfo* info) {
  *info = CaseInfo();
  info->dir = dir;
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  size_t slash = d.find_last_of('/');
  info->name = slash == std::string::npos ? d : d.substr(slash + 1);
  std::ifstream in(dir + "/case.json");
  if (!in) return "cannot read " + dir + "/case.json";
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return dir + "/case.json is not a JSON object";
  if (j.contains("op") && j["op"].is_string()) info->op = j["op"].get<std::string>();
  if (j.contains("variant") && j["variant"].is_string()) info->variant = j["variant"].get<std::string>();
  std::vector<std::string> model_ops, core_ops;
  for (const char* key : {"ops", "core_aten_ops"}) {
    if (!j.contains(key) || !j[key].is_array()) continue;
    for (const auto& e : j[key]) {
      if (!e.is_string()) continue;
      (std::string(key) == "ops" ? model_ops : core_ops).push_back(e.get<std::string>());
      info->aten_ops.push_back(e.get<std::string>());
    }
  }
  for (const std::string& op : info->aten_ops) {
    if (sampling_ops().count(base_name(op)) != 0) {
      info->random_values = true;
      info->random_reason = op;
      break;
    }
  }
  for (const std::string& op : model_ops) {
    if (info->random_values) break;
    if (uninitialised_ops().count(base_name(op)) != 0) {
      info->random_values = true;
      info->random_reason = op;
    }
  }
  if (j.contains("nondeterministic") && j["nondeterministic"].is_boolean() &&
      j["nondeterministic"].get<bool>() && !info->random_values) {
    info->random_values = true;
    info->random_reason = "case.json nondeterministic";
  }
  return "";
}

std::vector<std::string> list_case_dirs(const std::string& root, const std::string& filter) {
  std::vector<std::string> out;
  if (is_file(root + "/case.json")) {
    out.push_back(root);
    return out;
  }
  DIR* d = opendir(root.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::string path = root + "/" + name;
    if (is_file(path + "/case.json")) out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace conformance
}  // namespace ember
