// `--backend qnn` for the exporter's backend registry (exporter/partition/backend_registry.h).
#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/partition/backend_registry.h"

namespace ember {
namespace qnn {
namespace {

absl::StatusOr<std::shared_ptr<exporter::Partitioner>> make(const exporter::BackendOptions& options) {
  if (auto s = exporter::check_option_keys("qnn", options, {"library"}); !s.ok()) return s;
  QnnPartitionerOptions o;
  if (auto it = options.find("library"); it != options.end()) o.library = it->second;
  return std::shared_ptr<exporter::Partitioner>(std::make_shared<QnnPartitioner>(o));
}

}  // namespace
}  // namespace qnn
}  // namespace ember

EMBER_REGISTER_BACKEND(qnn, "NPU: Qualcomm HTP through QNN, int8 programs compiled at export",
                       "library=PATH (libQnnHtp.so)", ::ember::qnn::make);
