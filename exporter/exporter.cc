#include "exporter/exporter.h"

#include <map>
#include <set>

#include "exporter/ops/op_schemas.h"

#include "exporter/check/kernel_check.h"
#include "exporter/import/pt2_importer.h"
#include "exporter/passes/passes.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace exporter {

namespace {

// The cache length of a decoder in the LLM runner's convention (extension/llm/text_generator.h:
// tokens int64 [1, T], positions int64 [T]) whose KV cache is mutable state [B, H, S, D]: S,
// when every rank-4 state tensor agrees on it and it exceeds T's bound; else 0. Hugging Face's
// static-cache export has T = 1, so without this the runner took 1 for the context length.
int64_t kv_cache_length(const Graph& g) {
  if (g.inputs.size() != 2) return 0;
  const Value& tokens = g.values[g.inputs[0]];
  const Value& positions = g.values[g.inputs[1]];
  if (tokens.dtype != ScalarType::Int64 || tokens.sizes.size() != 2 || tokens.sizes[0] != 1 ||
      positions.dtype != ScalarType::Int64 || positions.sizes.size() != 1 || positions.sizes[0] != tokens.sizes[1]) {
    return 0;
  }
  int64_t length = 0;
  for (const Value& v : g.values) {
    if (v.role != ValueRole::MutableState || v.type != ValueType::Tensor || v.sizes.size() != 4) continue;
    if (length != 0 && v.sizes[2] != length) return 0;
    length = v.sizes[2];
  }
  return length > tokens.sizes[1] ? length : 0;
}

// Every stage after import up to the memory plan: `g` becomes the final graph, `delegates` its
// delegate calls, `r` the report (all but the program bytes).
absl::Status lower_graph(Graph& g, const ExportOptions& options, ExportResult& r,
                         std::vector<DelegateRecord>& delegates) {
  r.num_nodes_imported = g.num_live_nodes();
  if (newer_torch_release(g.torch_version, aten_schemas_torch_version())) {
    r.warnings.push_back("this .pt2 was written by PyTorch " + g.torch_version + ", newer than the " +
                         aten_schemas_torch_version() +
                         " whose operator schemas this exporter knows: an op or argument added since may be "
                         "rejected. Regenerate exporter/ops/aten_schemas.txt with that PyTorch "
                         "(tools/schemas/dump_aten_schemas.py) and rebuild");
  }
  auto c = canonicalize(g);
  if (!c.ok()) return c.status();
  // After canonicalize: buffers written in place are mutable state only from here on.
  bool has_max_seq_len = false;
  for (const auto& [key, value] : options.metadata) has_max_seq_len |= key == "max_seq_len";
  if (const int64_t cache = kv_cache_length(g); cache > 0 && !has_max_seq_len) {
    r.inferred_metadata.emplace_back("max_seq_len", std::to_string(cache));
  }
  if (options.check_kernels) {
    auto d = decompose_composites(g, [](const std::string& name) { return find_kernel(name.c_str()) != nullptr; });
    if (!d.ok()) return d.status();
  }
  eliminate_dead_code(g);
  if (options.fold_conv_bn) {
    auto f = fold_conv_batch_norm(g);
    if (!f.ok()) return f.status();
    r.conv_bn_folded = *f;
    eliminate_dead_code(g);
  }
  if (options.quantize.mode != QuantizeMode::None) {
    QuantizeOptions quantize = options.quantize;
    for (const auto& p : options.partitioners) {
      if (p != nullptr && p->wants_integer_activations()) quantize.all_activations = true;
    }
    auto q = quantize_graph(g, quantize);
    if (!q.ok()) return q.status();
    r.quantize_report = std::move(*q);
  }
  if (options.lower_quantized) {
    r.quantized_lowered = lower_quantized_ops(g);
    r.weight_only_lowered = lower_weight_only_ops(g);
    if (r.quantized_lowered + r.weight_only_lowered > 0) eliminate_dead_code(g);
  }
  if (options.fold_constants) {
    auto f = fold_constants(g);
    if (!f.ok()) return f.status();
    r.constants_folded = *f;
    if (*f > 0) eliminate_dead_code(g);
  }
  if (options.fuse_llm_kernels && options.check_kernels) {  // only with kernels linked
    if (fuse_llm_attention(g, [](const std::string& name) { return find_kernel(name.c_str()) != nullptr; },
                           /*others_need_attention=*/!options.partitioners.empty()) > 0) {
      eliminate_dead_code(g);
    }
  }
  if (!options.partitioners.empty()) {
    make_activations_ssa(g);
    make_attention_masks_additive(g);
    split_to_slices(g);
  }
  for (const auto& p : options.partitioners) {
    BackendSummary summary;
    summary.backend_id = p->backend_id();
    std::map<std::string, int> before;
    for (const Node& n : g.nodes) if (!n.erased) before[n.kernel_name()]++;
    const size_t live_before = g.num_live_nodes();
    PartitionOptions partition_options;
    partition_options.strict = options.strict_delegation;
    PartitionReport report;
    auto n = apply_partitioner(g, *p, &delegates, partition_options, &report);
    if (!n.ok()) return n.status();
    summary.notes = report.notes;
    summary.fallbacks = static_cast<int>(report.fallbacks.size());
    for (const std::string& f : report.fallbacks) r.warnings.push_back(f);
    std::map<std::string, int> after;
    for (const Node& node : g.nodes) if (!node.erased) after[node.kernel_name()]++;
    for (const auto& [op, count] : before) {
      const int taken = count - (after.count(op) ? after[op] : 0);
      if (taken > 0) summary.ops[op] = taken;
    }
    summary.delegates = *n;
    summary.nodes = static_cast<int>(live_before) - static_cast<int>(g.num_live_nodes()) + *n;
    r.backends.push_back(std::move(summary));
  }
  finalize_outputs(g);
  if (options.check_kernels) {
    if (auto s = check_kernels(g); !s.ok()) return s;
  }
  r.num_nodes_final = g.num_live_nodes();
  for (const Node& n : g.nodes) {
    if (!n.erased && n.op.rfind(kDelegateOpPrefix, 0) != 0) r.portable_ops[n.kernel_name()]++;
  }
  r.plan = plan_memory(g);
  return absl::OkStatus();
}

// The options' metadata and what the methods' graphs inferred (the first method's value of a
// key wins; a key the options give is never inferred).
ProgramMetadata program_metadata(const ExportOptions& options, const std::vector<const ExportResult*>& methods) {
  ProgramMetadata metadata = options.metadata;
  for (const ExportResult* r : methods) {
    for (const auto& entry : r->inferred_metadata) {
      bool present = false;
      for (const auto& [key, value] : metadata) present |= key == entry.first;
      if (!present) metadata.push_back(entry);
    }
  }
  return metadata;
}

// ExportOptions::share_state: marks the mutable buffers that several methods have with the same
// name, dtype, sizes and initial value as shared (Value::shared_state) and re-plans the methods'
// arenas without them. Returns the shared names; a same-named buffer that differs stays
// per-method, with a warning on each method that has it.
std::vector<std::string> share_state(std::vector<NamedGraph>& methods, ProgramExport& out) {
  std::map<std::string, std::vector<std::pair<size_t, int>>> by_name;  // name -> (method, value id)
  for (size_t i = 0; i < methods.size(); ++i) {
    const Graph& g = methods[i].graph;
    for (const Value& v : g.values) {
      if (v.type != ValueType::Tensor || v.role != ValueRole::MutableState || v.constant < 0) continue;
      const std::string& name = g.constants[v.constant].name;
      if (!name.empty()) by_name[name].emplace_back(i, v.id);
    }
  }
  std::vector<std::string> shared;
  std::set<size_t> replan;
  for (const auto& [name, uses] : by_name) {
    std::set<size_t> users;
    for (const auto& u : uses) users.insert(u.first);
    if (users.size() < 2 || users.size() != uses.size()) continue;
    const Graph& g0 = methods[uses[0].first].graph;
    const Value& v0 = g0.values[uses[0].second];
    bool same = true;
    for (const auto& [m, id] : uses) {
      const Graph& g = methods[m].graph;
      const Value& v = g.values[id];
      same = same && v.dtype == v0.dtype && v.sizes == v0.sizes && !v.is_dynamic() &&
             g.constants[v.constant].data == g0.constants[v0.constant].data;
    }
    if (!same) {
      for (const auto& [m, id] : uses) {
        out.methods[m].second.warnings.push_back("state '" + name +
                                                 "' differs between methods (dtype, sizes or initial value): each "
                                                 "method keeps its own copy");
      }
      continue;
    }
    for (const auto& [m, id] : uses) {
      methods[m].graph.values[id].shared_state = name;
      replan.insert(m);
    }
    shared.push_back(name);
  }
  for (size_t m : replan) out.methods[m].second.plan = plan_memory(methods[m].graph);
  return shared;
}

// Emits the program, its weights into ExportOptions::external_weights when set.
absl::Status emit(const std::vector<MethodToEmit>& methods, const ExportOptions& options, const ProgramMetadata& metadata,
                  EmitStats* stats, std::vector<uint8_t>* pte, std::vector<uint8_t>* ptd, DataFileStats* data_stats) {
  EmitOptions emit_options;
  absl::StatusOr<DataFileWriter> writer = DataFileWriter();
  if (!options.external_weights.empty()) {
    writer = DataFileWriter::open_for_append(options.external_weights);
    if (!writer.ok()) return writer.status();
    emit_options.external_weights = &*writer;
    const size_t slash = options.external_weights.find_last_of('/');
    emit_options.data_file_name =
        slash == std::string::npos ? options.external_weights : options.external_weights.substr(slash + 1);
  }
  auto bytes = emit_program(methods, stats, options.bundled_cases, metadata, emit_options);
  if (!bytes.ok()) return bytes.status();
  *pte = std::move(*bytes);
  if (emit_options.external_weights != nullptr) {
    *ptd = writer->bytes();
    *data_stats = writer->stats();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExportResult> export_graph(Graph g, const ExportOptions& options) {
  ExportResult r;
  std::vector<DelegateRecord> delegates;
  if (auto s = lower_graph(g, options, r, delegates); !s.ok()) return s;
  if (auto s = emit({MethodToEmit{options.method_name, &g, &r.plan, &delegates}}, options, program_metadata(options, {&r}),
                    &r.stats, &r.pte, &r.ptd, &r.data_file_stats);
      !s.ok()) {
    return s;
  }
  return r;
}

absl::StatusOr<ProgramExport> export_methods(std::vector<NamedGraph> methods, const ExportOptions& options) {
  if (methods.empty()) return absl::InvalidArgumentError("a program needs at least one method");
  ProgramExport out;
  std::vector<std::vector<DelegateRecord>> delegates(methods.size());
  out.methods.resize(methods.size());
  for (size_t i = 0; i < methods.size(); ++i) {
    out.methods[i].first = methods[i].name;
    if (auto s = lower_graph(methods[i].graph, options, out.methods[i].second, delegates[i]); !s.ok()) {
      return absl::Status(s.code(), "method '" + methods[i].name + "': " + std::string(s.message()));
    }
  }
  if (options.share_state && methods.size() > 1) out.shared_state = share_state(methods, out);
  std::vector<MethodToEmit> to_emit;
  std::vector<const ExportResult*> results;
  for (size_t i = 0; i < methods.size(); ++i) {
    to_emit.push_back(MethodToEmit{methods[i].name, &methods[i].graph, &out.methods[i].second.plan, &delegates[i]});
    results.push_back(&out.methods[i].second);
  }
  out.metadata = program_metadata(options, results);
  if (auto s = emit(to_emit, options, out.metadata, &out.stats, &out.pte, &out.ptd, &out.data_file_stats); !s.ok()) {
    return s;
  }
  return out;
}

namespace {
absl::Status add_custom_op_schemas(const ExportOptions& options) {
  for (const std::string& sig : options.custom_op_schemas) {
    if (absl::Status s = add_custom_op_schema(sig); !s.ok()) return s;
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<ProgramExport> export_pt2_files(const std::vector<std::pair<std::string, std::string>>& methods,
                                               const ExportOptions& options) {
  if (absl::Status s = add_custom_op_schemas(options); !s.ok()) return s;
  std::vector<NamedGraph> graphs;
  for (const auto& [name, path] : methods) {
    auto g = import_pt2(path);
    if (!g.ok()) return absl::Status(g.status().code(), "method '" + name + "': " + std::string(g.status().message()));
    graphs.push_back(NamedGraph{name, std::move(*g)});
  }
  return export_methods(std::move(graphs), options);
}

absl::StatusOr<ExportResult> export_pt2_file(const std::string& path, const ExportOptions& options) {
  if (absl::Status s = add_custom_op_schemas(options); !s.ok()) return s;
  auto g = import_pt2(path);
  if (!g.ok()) return g.status();
  return export_graph(std::move(*g), options);
}

absl::StatusOr<ExportResult> export_pt2_bytes(const void* data, size_t size, const ExportOptions& options) {
  if (absl::Status s = add_custom_op_schemas(options); !s.ok()) return s;
  auto g = import_pt2_bytes(data, size);
  if (!g.ok()) return g.status();
  return export_graph(std::move(*g), options);
}

}  // namespace exporter
}  // namespace ember
