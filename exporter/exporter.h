// The exporter pipeline: .pt2 -> import -> canonicalise -> conv/BN folding -> DCE ->
// partition (delegates) -> kernel check -> finalise outputs -> memory plan -> emit .pte.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/emit/pte_emitter.h"
#include "exporter/ir/graph.h"
#include "exporter/memory/memory_planner.h"
#include "exporter/partition/partitioner.h"
#include "exporter/quantize/quantizer.h"

namespace ember {
namespace exporter {

struct ExportOptions {
  std::string method_name = "forward";
  // Signatures of custom operators the model calls ("ns::op.overload(Tensor x, float s) ->
  // Tensor"; exporter/ops/op_schemas.h): added to the process-wide schema table before the
  // .pt2 is imported; their kernels are the application's (ember::register_kernel).
  std::vector<std::string> custom_op_schemas;
  std::vector<std::shared_ptr<Partitioner>> partitioners;  // in priority order
  // A claimed node its backend then fails to lower: false, it runs on the portable kernels
  // (ExportResult::warnings says which and why); true, the export fails.
  bool strict_delegation = false;
  bool fold_conv_bn = true;
  bool fold_constants = true;  // needs the kernel library linked (it runs the kernels)
  // PT2E Q/DQ chains around conv2d/linear become ember_quantized:: integer ops (int8 weights
  // kept), and weight-only dequantize -> linear / embedding pairs become *_weight_only ops.
  // False keeps PyTorch's float reference form (the float ops between Q/DQ).
  bool lower_quantized = true;
  // Ember's own quantizer (exporter/quantize/quantizer.h), run after conv+bn folding.
  QuantizeOptions quantize;
  // Llama decoder patterns (KV-cache attention, RMSNorm, RoPE, SwiGLU) become the fused
  // ember_llm:: operators when their kernels are linked (exporter/passes/fuse_llm_attention.cc).
  bool fuse_llm_kernels = true;
  bool check_kernels = true;
  std::vector<BundledCaseData> bundled_cases;  // written as Program.bundled_cases
  ProgramMetadata metadata;                    // written as Program.metadata
  // Non-empty: the weights go to this .ptd data file instead of the program (the result's
  // `ptd` holds the file to write there). An existing file is appended to: its entries are
  // kept and reused where the bytes are equal (exporter/emit/data_file_writer.h).
  std::string external_weights;
  // Several methods (export_methods): mutable buffers with the same name, dtype, sizes and
  // initial value in two or more methods are one state, planned once and persisting across
  // calls of any of them (a prefill and a decode method share their KV cache). False: each
  // method keeps its own copy (`ember export --separate-state`).
  bool share_state = true;
};

// What one partitioner took.
struct BackendSummary {
  std::string backend_id;
  int delegates = 0;               // delegate calls created
  int nodes = 0;                   // original nodes they replaced
  std::map<std::string, int> ops;  // "aten::conv2d.default" -> count
  std::vector<std::string> notes;  // how claimed sets were re-formed into calls (verbose output)
  int fallbacks = 0;               // claimed nodes it could not lower (left on portable kernels)
};

struct ExportResult {
  std::vector<uint8_t> pte;
  std::vector<uint8_t> ptd;        // the data file, when ExportOptions::external_weights is set
  DataFileStats data_file_stats;
  MemoryPlan plan;
  EmitStats stats;
  size_t num_nodes_imported = 0;
  size_t num_nodes_final = 0;
  int conv_bn_folded = 0;
  int constants_folded = 0;
  int quantized_lowered = 0;       // conv/linear chains lowered to ember_quantized:: ops
  int weight_only_lowered = 0;     // int8/int4 weights read in place by *_weight_only ops
  QuantizeReport quantize_report;  // when options.quantize.mode is not None
  std::vector<BackendSummary> backends;    // one per partitioner, in priority order
  std::map<std::string, int> portable_ops; // ops left on the portable kernels (final graph)
  std::vector<std::string> warnings;       // worth a user's attention; the program is valid
  // Metadata the exporter added from the graph (not given in ExportOptions::metadata):
  // max_seq_len of a decoder whose KV cache is mutable state (the LLM runner's context length).
  ProgramMetadata inferred_metadata;
};

// A program of several methods (`ember export --method NAME=A.pt2 --method ...`): each graph
// lowered with the same options, then emitted into one program whose identical constants are
// stored once (EmitStats::deduplicated_*).
struct NamedGraph {
  std::string name;
  Graph graph;
};
struct ProgramExport {
  std::vector<uint8_t> pte;
  std::vector<std::string> shared_state;  // names of the buffers the methods share
  std::vector<uint8_t> ptd;        // as ExportResult::ptd
  DataFileStats data_file_stats;
  EmitStats stats;
  std::vector<std::pair<std::string, ExportResult>> methods;  // each method's report (no bytes)
  ProgramMetadata metadata;                                   // what the program carries
};
absl::StatusOr<ProgramExport> export_methods(std::vector<NamedGraph> methods, const ExportOptions& options);
// (name, .pt2 path) per method, in program order.
absl::StatusOr<ProgramExport> export_pt2_files(const std::vector<std::pair<std::string, std::string>>& methods,
                                               const ExportOptions& options);

// Runs every stage after import on `g`.
absl::StatusOr<ExportResult> export_graph(Graph g, const ExportOptions& options);
absl::StatusOr<ExportResult> export_pt2_file(const std::string& path, const ExportOptions& options);
// The same for a .pt2 archive held in memory (fuzzing, embedding); never throws.
absl::StatusOr<ExportResult> export_pt2_bytes(const void* data, size_t size, const ExportOptions& options);

}  // namespace exporter
}  // namespace ember
