// QnnPartitioner: claims the quantized parts of a graph that Qualcomm's HTP runs and compiles
// each partition AT EXPORT into a QNN context binary (graph built and finalized by the QNN
// library, then serialized), stored in the blob (delegates/qnn/qnn_blob.fbs) with the I/O
// tensor descriptions the runtime binds Ember's tensors to. The runtime never compiles.
//
// What it claims: the op table's entries (delegates/qnn/exporter/ops/, listed by
// qnn_op_table().ops()) on int8 programs: Ember's `--quantize int8` output and PT2E int8
// programs, both lowered to ember_quantized:: operators with quantize / dequantize around the
// float ops (see qnn_lowering.h for how those run quantized). Claimed nodes connected through
// their values form one claim each; claims of only quantize / dequantize nodes are dropped (a
// delegate call to convert a tensor costs more than the portable kernel). Weights become static
// tensors inside the context binary: they are not call arguments and not emitted unless a
// portable node reads them.
//
// The library is needed at export (it compiles): QnnLibrary (qnn_library.h) finds it; without
// it preprocess fails with the install hint, and apply_partitioner leaves the nodes on the
// portable kernels (or fails the export under --strict-delegation).
#pragma once

#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_graph_builder.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace qnn {

struct QnnPartitionerOptions {
  std::string library;  // libQnnHtp.so to compile with ("" = QnnLibrary's search order)
  QnnTarget target;     // SoC / HTP architecture / optimization level (qnn_graph_builder.h)
};

// Parses the `--backend-option qnn.KEY=VALUE` target keys (soc_model, htp_arch, optimization,
// precision) into `target`; an error names the key and the values it takes.
absl::Status parse_qnn_target_option(const std::string& key, const std::string& value, QnnTarget* target);

// Whether the library accepts `target` (a device opened and closed with its SoC / architecture),
// so that a wrong target fails the export at once instead of leaving every node portable. OK
// when no library is installed: preprocess then reports that, as without a target.
absl::Status check_qnn_target(const QnnTarget& target);

class QnnPartitioner final : public exporter::Partitioner {
 public:
  explicit QnnPartitioner(QnnPartitionerOptions options = {});
  std::string backend_id() const override { return "qnn"; }
  std::vector<std::vector<int>> claim(const exporter::Graph& g) override;
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph& g, const exporter::Partition& p) override;
  bool supports(const exporter::Graph& g, int node) const override {
    return unsupported_reason(g, node, options_.target.fp16).empty();
  }
  // The HTP has no float residual stream: --quantize int8 gives every activation a grid.
  bool wants_integer_activations() const override { return true; }

  // Why node `index` is not claimed ("" when it is supported); `fp16`: in an fp16 graph.
  static std::string unsupported_reason(const exporter::Graph& g, int index, bool fp16 = false);

 private:
  QnnPartitionerOptions options_;
};

}  // namespace qnn
}  // namespace ember
