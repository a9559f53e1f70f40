#include "exporter/exporter.h"

#include "exporter/check/kernel_check.h"
#include "exporter/import/pt2_importer.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {

absl::StatusOr<ExportResult> export_graph(Graph g, const ExportOptions& options) {
  ExportResult r;
  r.num_nodes_imported = g.num_live_nodes();
  auto c = canonicalize(g);
  if (!c.ok()) return c.status();
  eliminate_dead_code(g);
  if (options.fold_conv_bn) {
    auto f = fold_conv_batch_norm(g);
    if (!f.ok()) return f.status();
    r.conv_bn_folded = *f;
    eliminate_dead_code(g);
  }
  std::vector<DelegateRecord> delegates;
  for (const auto& p : options.partitioners) {
    auto n = apply_partitioner(g, *p, &delegates);
    if (!n.ok()) return n.status();
  }
  finalize_outputs(g);
  if (options.check_kernels) {
    if (auto s = check_kernels(g); !s.ok()) return s;
  }
  r.num_nodes_final = g.num_live_nodes();
  r.plan = plan_memory(g);
  auto bytes = emit_pte(g, r.plan, delegates, options.method_name, &r.stats);
  if (!bytes.ok()) return bytes.status();
  r.pte = std::move(*bytes);
  return r;
}

absl::StatusOr<ExportResult> export_pt2_file(const std::string& path, const ExportOptions& options) {
  auto g = import_pt2(path);
  if (!g.ok()) return g.status();
  return export_graph(std::move(*g), options);
}

absl::StatusOr<ExportResult> export_pt2_bytes(const void* data, size_t size, const ExportOptions& options) {
  auto g = import_pt2_bytes(data, size);
  if (!g.ok()) return g.status();
  return export_graph(std::move(*g), options);
}

}  // namespace exporter
}  // namespace ember
