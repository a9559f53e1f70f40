// `--backend xnnpack` for the exporter's backend registry (exporter/partition/backend_registry.h):
// options parsed into the partitioner's typed arguments.
#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/partition/backend_registry.h"

namespace ember {
namespace xnnpack {
namespace {

absl::StatusOr<std::shared_ptr<exporter::Partitioner>> make(const exporter::BackendOptions& options) {
  if (auto s = exporter::check_option_keys("xnnpack", options, {"threads", "fp16", "conv_block_bytes", "winograd"}); !s.ok()) {
    return s;
  }
  int64_t threads = 0, conv_block_bytes = -1;
  bool fp16 = false;
  WinogradMode winograd = WinogradMode::kAuto;
  if (auto s = exporter::read_int_option("xnnpack", options, "threads", 0, 1024, &threads); !s.ok()) return s;
  if (auto s = exporter::read_bool_option("xnnpack", options, "fp16", &fp16); !s.ok()) return s;
  if (auto it = options.find("winograd"); it != options.end() && !parse_winograd_mode(it->second, &winograd)) {
    return absl::InvalidArgumentError("backend xnnpack option winograd=" + it->second +
                                      ": expected auto, off, 4x4 or 2x2");
  }
  if (auto s = exporter::read_int_option("xnnpack", options, "conv_block_bytes", 0, int64_t{1} << 40, &conv_block_bytes);
      !s.ok()) {
    return s;
  }
  return std::shared_ptr<exporter::Partitioner>(
      std::make_shared<XnnpackPartitioner>(static_cast<int>(threads), fp16, conv_block_bytes, winograd));
}

}  // namespace
}  // namespace xnnpack
}  // namespace ember

EMBER_REGISTER_BACKEND(xnnpack, "CPU: XNNPACK's fp32, fp16 and int8 / int4 kernels",
                       "threads=N fp16=0|1 conv_block_bytes=N winograd=auto|off|4x4|2x2", ::ember::xnnpack::make);
