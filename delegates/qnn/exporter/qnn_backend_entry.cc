// `--backend qnn` for the exporter's backend registry (exporter/partition/backend_registry.h).
#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/partition/backend_registry.h"

namespace ember {
namespace qnn {
namespace {

absl::StatusOr<std::shared_ptr<exporter::Partitioner>> make(const exporter::BackendOptions& options) {
  if (auto s = exporter::check_option_keys("qnn", options, {"library", "soc_model", "htp_arch", "optimization", "precision"});
      !s.ok()) {
    return s;
  }
  QnnPartitionerOptions o;
  for (const auto& [key, value] : options) {
    if (key == "library") {
      o.library = value;
    } else if (auto s = parse_qnn_target_option(key, value, &o.target); !s.ok()) {
      return s;
    }
  }
  auto partitioner = std::make_shared<QnnPartitioner>(o);  // sets the library path
  if (auto s = check_qnn_target(o.target); !s.ok()) return s;
  return std::shared_ptr<exporter::Partitioner>(partitioner);
}

}  // namespace
}  // namespace qnn
}  // namespace ember

EMBER_REGISTER_BACKEND(qnn, "NPU: Qualcomm HTP through QNN, int8 / a16w8 (or fp16) programs compiled at export",
                       "library=PATH (libQnnHtp.so), soc_model=N (Qualcomm's SoC number), htp_arch=68|69|73|75|79|81, "
                       "optimization=1|2|3 (graph finalize level), precision=quantized|fp16",
                       ::ember::qnn::make);
