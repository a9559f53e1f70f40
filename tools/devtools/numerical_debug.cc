#include "tools/devtools/numerical_debug.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "exporter/exporter.h"
#include "exporter/partition/per_operator_partitioner.h"
#include "runtime/core/event_tracer.h"
#include "extension/module/module.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

// The reference export runs the same pre-partitioning passes as the delegated one (they
// run only when a partitioner is present), so node names and values line up.
class ClaimNothing final : public exporter::Partitioner {
 public:
  std::string backend_id() const override { return "reference"; }
  std::vector<std::vector<int>> claim(const exporter::Graph&) override { return {}; }
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph&, const exporter::Partition&) override {
    return absl::InternalError("the reference partitioner claims nothing");
  }
};

// One output of one executed instruction, copied while it was valid.
struct CapturedOutput {
  bool is_tensor = false;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<double> values;
};

struct CapturedInstruction {
  int instruction = 0;
  std::string name;        // kernel name or "delegate:<backend>"
  std::string debug_name;  // .pt2 node name
  std::string source;
  bool delegated = false;
  std::vector<CapturedOutput> outputs;
};

// Copies every kernel/delegate call's outputs during execute(). Allocates in record():
// a debugging tool, not a production tracer.
class CapturingTracer final : public EventTracer {
 public:
  void record(const TraceEvent& e) override {
    if (e.kind != TraceEventKind::Instruction || e.num_outputs == 0) return;
    CapturedInstruction c;
    c.instruction = static_cast<int>(e.instruction);
    c.name = e.name;
    c.debug_name = e.debug_name;
    c.source = e.source;
    c.delegated = e.delegate_index != kNoTraceIndex;
    for (uint32_t k = 0; k < e.num_outputs; ++k) {
      CapturedOutput o;
      const EValue* v = e.outputs[k];
      if (v != nullptr && v->is_tensor() && v->as_tensor != nullptr) {
        const Tensor& t = *v->as_tensor;
        o.is_tensor = true;
        o.dtype = t.dtype;
        o.sizes.assign(t.sizes, t.sizes + t.rank);
        const int64_t n = t.numel();
        o.values.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) o.values[static_cast<size_t>(i)] = element_as_double(t, i);
      }
      c.outputs.push_back(std::move(o));
    }
    captured.push_back(std::move(c));
  }
  bool wants_delegate_ops() const override { return false; }

  std::vector<CapturedInstruction> captured;
};

struct RunResult {
  std::vector<CapturedInstruction> captured;
  std::vector<CapturedOutput> outputs;
};

absl::Status to_absl(const Status& s, const std::string& what) {
  return absl::InvalidArgumentError(what + ": " + s.message());
}

absl::StatusOr<std::vector<TensorPtr>> inputs_for(Module& module, const std::string& method,
                                                   const std::vector<TensorPtr>& given) {
  Expected<MethodMeta> meta = module.method_meta(method);
  if (!meta.ok()) return to_absl(meta.error(), "reference program");
  if (!given.empty()) {
    if (given.size() != meta->num_inputs()) {
      return absl::InvalidArgumentError("method '" + method + "' takes " + std::to_string(meta->num_inputs()) +
                                        " inputs, " + std::to_string(given.size()) + " given");
    }
    return given;
  }
  Expected<std::vector<TensorPtr>> generated = generate_inputs(*meta, 0);
  if (!generated.ok()) return to_absl(generated.error(), "generating inputs");
  return *generated;
}

absl::StatusOr<RunResult> run_capturing(const std::vector<uint8_t>& pte, const std::string& method,
                                        const std::vector<TensorPtr>& inputs, const char* which) {
  CapturingTracer tracer;
  ModuleOptions options;
  options.event_tracer = &tracer;
  Module module(pte.data(), pte.size(), options);
  Status s = module.load_method(method);
  if (!s.ok()) return to_absl(s, std::string("loading the ") + which + " program");
  std::vector<Input> in(inputs.begin(), inputs.end());
  Expected<Outputs> out = module.execute(method, in);
  if (!out.ok()) return to_absl(out.error(), std::string("running the ") + which + " program");
  RunResult r;
  for (const Output& o : *out) {
    CapturedOutput c;
    if (o.is_tensor()) {
      c.is_tensor = true;
      c.dtype = o.dtype();
      c.sizes.assign(o.sizes().begin(), o.sizes().end());
      for (int64_t i = 0; i < o.numel(); ++i) c.values.push_back(element_as_double(o.tensor(), i));
    }
    r.outputs.push_back(std::move(c));
  }
  r.captured = std::move(tracer.captured);
  return r;
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// Fills rel_l2/max_abs/mismatch of `e` from got vs ref.
void compare(const CapturedOutput& got, const CapturedOutput& ref, OperatorError* e) {
  if (!got.is_tensor || !ref.is_tensor) {
    if (got.is_tensor != ref.is_tensor) e->mismatch = "tensor vs non-tensor";
    return;
  }
  if (got.sizes != ref.sizes) {
    e->mismatch = "shape " + sizes_text(got.sizes) + " vs " + sizes_text(ref.sizes);
    return;
  }
  e->numel = static_cast<int64_t>(ref.values.size());
  double diff2 = 0, ref2 = 0, max_abs = 0;
  int nan_mismatch = 0;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double g = got.values[i], r = ref.values[i];
    if (std::isnan(g) || std::isnan(r)) {
      if (std::isnan(g) != std::isnan(r)) ++nan_mismatch;
      continue;
    }
    if (std::isinf(g) || std::isinf(r)) {
      if (g != r) ++nan_mismatch;
      continue;
    }
    const double d = g - r;
    diff2 += d * d;
    ref2 += r * r;
    max_abs = std::max(max_abs, std::fabs(d));
  }
  e->rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  e->max_abs = max_abs;
  if (nan_mismatch > 0) e->mismatch = std::to_string(nan_mismatch) + " NaN/inf elements differ";
}

}  // namespace

absl::StatusOr<NumericalDebugReport> debug_numerics(const std::string& pt2_path,
                                                    std::shared_ptr<exporter::Partitioner> backend,
                                                    const std::vector<TensorPtr>& inputs,
                                                    const NumericalDebugOptions& options) {
  if (backend == nullptr) return absl::InvalidArgumentError("debug_numerics: no backend partitioner given");
  exporter::ExportOptions ref_options;
  ref_options.method_name = options.method;
  ref_options.partitioners.push_back(std::make_shared<ClaimNothing>());
  auto ref_pte = exporter::export_pt2_file(pt2_path, ref_options);
  if (!ref_pte.ok()) return ref_pte.status();

  auto per_op = std::make_shared<exporter::PerOperatorPartitioner>(backend);
  exporter::ExportOptions test_options = ref_options;
  test_options.partitioners = {per_op};
  auto test_pte = exporter::export_pt2_file(pt2_path, test_options);
  if (!test_pte.ok()) return test_pte.status();

  NumericalDebugReport report;
  report.backend = backend->backend_id();
  report.skipped_nodes = per_op->skipped();
  for (const auto& b : test_pte->backends) report.delegated_nodes += b.nodes;

  std::vector<TensorPtr> in;
  {
    Module ref_module(ref_pte->pte.data(), ref_pte->pte.size());
    auto resolved = inputs_for(ref_module, options.method, inputs);
    if (!resolved.ok()) return resolved.status();
    in = std::move(*resolved);
  }
  auto ref = run_capturing(ref_pte->pte, options.method, in, "reference");
  if (!ref.ok()) return ref.status();
  auto got = run_capturing(test_pte->pte, options.method, in, report.backend.c_str());
  if (!got.ok()) return got.status();

  // A pass that turns one node into several (split -> slices, decompositions) gives them
  // all the node's name, in the same order in both programs (the same passes ran, and
  // one-node partitions move nothing): the k-th instruction of a name pairs with the k-th.
  // Where the counts differ, only the last of each (the node's final result) pairs.
  std::map<std::string, std::vector<const CapturedInstruction*>> ref_by_node, got_by_node;
  for (const CapturedInstruction& c : ref->captured) {
    if (!c.debug_name.empty()) ref_by_node[c.debug_name].push_back(&c);
  }
  for (const CapturedInstruction& c : got->captured) {
    if (!c.debug_name.empty()) got_by_node[c.debug_name].push_back(&c);
  }
  std::map<std::string, size_t> seen;
  double largest = -1;
  for (const CapturedInstruction& c : got->captured) {
    const CapturedInstruction* twin = nullptr;
    if (!c.debug_name.empty()) {
      const size_t k = seen[c.debug_name]++;
      auto it = ref_by_node.find(c.debug_name);
      if (it != ref_by_node.end()) {
        const size_t n_got = got_by_node[c.debug_name].size();
        if (it->second.size() == n_got) {
          twin = it->second[k];
        } else if (k + 1 == n_got) {
          twin = it->second.back();
        }
      }
    }
    if (twin == nullptr || twin->outputs.size() != c.outputs.size()) {
      ++report.unmatched;
      continue;
    }
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      OperatorError e;
      e.instruction = c.instruction;
      e.node = c.debug_name;
      e.source = c.source;
      e.op = twin->name;
      e.delegated = c.delegated;
      e.output = k;
      compare(c.outputs[k], twin->outputs[k], &e);
      e.exceeds = !e.mismatch.empty() ||
                  (e.rel_l2 > options.rel_tolerance && e.max_abs > options.abs_tolerance);
      const int index = static_cast<int>(report.operators.size());
      if (e.exceeds && report.first_exceeding < 0) report.first_exceeding = index;
      if (e.delegated && e.mismatch.empty() && e.rel_l2 > largest) {
        largest = e.rel_l2;
        report.largest_delegated = index;
      }
      report.operators.push_back(std::move(e));
    }
  }
  for (size_t i = 0; i < got->outputs.size() && i < ref->outputs.size(); ++i) {
    OperatorError e;
    compare(got->outputs[i], ref->outputs[i], &e);
    report.output_rel_l2.push_back(e.mismatch.empty() ? e.rel_l2 : NAN);
  }
  return report;
}

namespace {

std::string row(const OperatorError& e) {
  char cols[256];
  std::snprintf(cols, sizeof(cols), "  #%-4d %-28s %-30s %-8s %10.3g %10.3g", e.instruction,
                (e.node + (e.output > 0 ? ":" + std::to_string(e.output) : "")).c_str(), e.op.c_str(),
                e.delegated ? "delegate" : "portable", e.rel_l2, e.max_abs);
  std::string line = cols;
  if (e.exceeds) line += "  <-- exceeds";
  if (!e.mismatch.empty()) line += "  " + e.mismatch;
  if (!e.source.empty()) line += "  " + e.source;
  return line + "\n";
}

}  // namespace

std::string format_report(const NumericalDebugReport& r, const NumericalDebugOptions& o, bool all) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line),
                "%s: %d nodes delegated one per call (%d more claimed but not compilable alone), %zu outputs "
                "compared with the portable kernels, %d without a reference twin\n"
                "tolerance: relative L2 > %g and max abs > %g\n",
                r.backend.c_str(), r.delegated_nodes, r.skipped_nodes, r.operators.size(), r.unmatched,
                o.rel_tolerance, o.abs_tolerance);
  s += line;
  const std::string header = "  instr node                         op                             runs on     rel L2    max abs\n";
  if (r.first_exceeding >= 0) {
    s += "first operator past the tolerance:\n" + header + row(r.operators[r.first_exceeding]);
  } else {
    s += "no operator past the tolerance\n";
  }
  if (r.largest_delegated >= 0) {
    s += "largest delegated error:\n" + header + row(r.operators[r.largest_delegated]);
  }
  for (size_t i = 0; i < r.output_rel_l2.size(); ++i) {
    std::snprintf(line, sizeof(line), "method output %zu: relative L2 %.3g\n", i, r.output_rel_l2[i]);
    s += line;
  }
  if (all) {
    s += "every compared output:\n" + header;
    for (const OperatorError& e : r.operators) s += row(e);
  }
  return s;
}

}  // namespace tools
}  // namespace ember
