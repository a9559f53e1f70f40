#include "tools/conformance/case_runner.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "exporter/exporter.h"
#include "extension/module/module.h"

namespace ember {
namespace conformance {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// One line: a newline and the indentation after it become "; " (or " " after a ':').
std::string one_line(const std::string& s) {
  std::string out;
  bool line_start = false;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      line_start = true;
      continue;
    }
    if (line_start) {
      if (c == ' ' || c == '\t') continue;
      out += !out.empty() && out.back() == ':' ? " " : "; ";
      line_start = false;
    }
    out += c;
  }
  return out;
}

CaseResult fail(CaseResult r, Outcome outcome, const std::string& why) {
  r.outcome = outcome;
  r.reason = one_line(why);
  return r;
}

// Reads <dir>/<prefix><i>.npy for i = 0, 1, ... until one is missing.
std::string read_arrays(const std::string& dir, const char* prefix, std::vector<TensorPtr>* out) {
  for (int i = 0;; ++i) {
    std::string path = dir + "/" + prefix + std::to_string(i) + ".npy";
    if (!exists(path)) return "";
    Expected<TensorPtr> t = read_npy(path);
    if (!t.ok()) return path + ": " + t.error().to_string();
    out->push_back(*t);
  }
}

// 64-byte aligned copy of the program bytes (constants are used in place).
struct AlignedBytes {
  explicit AlignedBytes(const std::vector<uint8_t>& bytes) : blocks((bytes.size() + 63) / 64 + 1) {
    if (!bytes.empty()) std::memcpy(blocks.data(), bytes.data(), bytes.size());
    size = bytes.size();
  }
  struct alignas(64) Block {
    uint8_t b[64];
  };
  std::vector<Block> blocks;
  size_t size = 0;
};

}  // namespace

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Pass: return "PASS";
    case Outcome::Fail: return "FAIL";
    case Outcome::Unsupported: return "UNSUPPORTED";
  }
  return "?";
}

namespace {

CaseResult run_case_unguarded(const CaseInfo& info, Form form, const RunOptions& options) {
  CaseResult r;
  r.name = info.name;
  r.form = form;
  std::string archive = info.dir + "/" + form_file(form);
  if (!exists(archive)) return fail(r, Outcome::Fail, std::string("case has no ") + form_file(form));

  auto exported = exporter::export_pt2_file(archive, exporter::ExportOptions());
  if (!exported.ok()) return fail(r, Outcome::Unsupported, std::string(exported.status().message()));

  std::vector<TensorPtr> inputs, expected;
  if (std::string e = read_arrays(info.dir, "input_", &inputs); !e.empty()) return fail(r, Outcome::Fail, e);
  if (std::string e = read_arrays(info.dir, "output_", &expected); !e.empty()) return fail(r, Outcome::Fail, e);

  AlignedBytes bytes(exported->pte);
  ModuleOptions mo;
  mo.temp_allocator_bytes = options.temp_allocator_bytes;
  Module module(bytes.blocks.data(), bytes.size, mo);
  if (Status s = module.load_method("forward"); !s.ok()) return fail(r, Outcome::Fail, "load: " + s.to_string());
  Expected<MethodMeta> meta = module.method_meta("forward");
  if (!meta.ok()) return fail(r, Outcome::Fail, "method_meta: " + meta.error().to_string());
  if (meta->num_inputs() != inputs.size()) {
    return fail(r, Outcome::Fail, "method takes " + std::to_string(meta->num_inputs()) + " inputs, case has " +
                                      std::to_string(inputs.size()));
  }
  std::vector<Input> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueTag tag = meta->input_tag(i);
    const Tensor& t = inputs[i].tensor();
    if (tag == ValueTag::Tensor) {
      args.emplace_back(inputs[i]);
    } else if ((tag == ValueTag::Int || tag == ValueTag::Double || tag == ValueTag::Bool) && t.numel() == 1) {
      double v = element_as_double(t, 0);  // a scalar input stored as a 0-d array
      if (tag == ValueTag::Int) args.emplace_back(static_cast<int64_t>(v));
      else if (tag == ValueTag::Double) args.emplace_back(v);
      else args.emplace_back(v != 0);
    } else {
      return fail(r, Outcome::Fail, "input " + std::to_string(i) + " has an unsupported kind");
    }
  }
  Expected<Outputs> outputs = module.forward(args);
  if (!outputs.ok()) return fail(r, Outcome::Fail, "execute: " + outputs.error().to_string());
  if (outputs->size() != expected.size()) {
    return fail(r, Outcome::Fail, "method returns " + std::to_string(outputs->size()) + " outputs, case expects " +
                                      std::to_string(expected.size()));
  }
  bool values = !info.random_values;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Output& out = outputs->at(i);
    const Tensor& want = expected[i].tensor();
    std::string why;
    if (out.is_tensor()) {
      why = compare_output(out.tensor(), want, values, options.tolerance);
    } else {
      // A scalar output (int/double/bool) against a 0-d array.
      const EValue& v = out.value();
      if (want.numel() != 1) {
        why = "scalar output, expected shape " + shape_text(want);
      } else if (values) {
        double w = element_as_double(want, 0), g = v.to_double();
        double tol = is_floating(want.dtype) ? options.tolerance.atol + options.tolerance.rtol * std::fabs(w) : 0.0;
        if (!(std::fabs(g - w) <= tol)) why = "scalar got " + std::to_string(g) + " expected " + std::to_string(w);
      }
    }
    if (!why.empty()) return fail(r, Outcome::Fail, "output " + std::to_string(i) + ": " + why);
  }
  r.outcome = Outcome::Pass;
  if (info.random_values) r.reason = "random values (" + info.random_reason + "): shape and dtype only";
  return r;
}

}  // namespace

CaseResult run_case(const CaseInfo& info, Form form, const RunOptions& options) {
  try {
    return run_case_unguarded(info, form, options);
  } catch (const std::exception& e) {  // host-side code (exporter, JSON) may throw
    CaseResult r;
    r.name = info.name;
    r.form = form;
    return fail(r, Outcome::Fail, std::string("exception: ") + e.what());
  }
}

}  // namespace conformance
}  // namespace ember
