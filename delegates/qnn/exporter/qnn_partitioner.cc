#include "delegates/qnn/exporter/qnn_partitioner.h"

#include <cstdlib>

#include <numeric>

#include "delegates/qnn/exporter/qnn_lowering.h"
#include "delegates/qnn/qnn_blob_generated.h"
#include "delegates/qnn/qnn_blob_version.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Graph;
using exporter::Node;
using exporter::Partition;
using exporter::ValueRole;

bool is_qdq(const Node& n) {
  const std::string k = n.kernel_name();
  return k == kQuantizeOp || k == kDequantizeOp;
}

int find_root(std::vector<int>& parent, int i) {
  while (parent[static_cast<size_t>(i)] != i) {
    parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
    i = parent[static_cast<size_t>(i)];
  }
  return i;
}

}  // namespace

QnnPartitioner::QnnPartitioner(QnnPartitionerOptions options) : options_(std::move(options)) {
  if (!options_.library.empty()) QnnLibrary::set_library_path(options_.library);
}

std::string QnnPartitioner::unsupported_reason(const Graph& g, int index, bool fp16) {
  const QuantAnalysis analysis(g);
  const QnnLowering ctx(g, analysis, nullptr, fp16);
  return qnn_op_table().check(ctx, g.nodes[static_cast<size_t>(index)]);
}

std::vector<std::vector<int>> QnnPartitioner::claim(const Graph& g) {
  const QuantAnalysis analysis(g);
  const QnnLowering ctx(g, analysis, nullptr, options_.target.fp16);
  const size_t n = g.nodes.size();
  std::vector<bool> supported(n, false);
  for (size_t i = 0; i < n; ++i) {
    supported[i] = !g.nodes[i].erased && qnn_op_table().check(ctx, g.nodes[i]).empty();
  }
  // Claimed nodes joined through the values they share.
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t i = 0; i < n; ++i) {
    if (!supported[i]) continue;
    for (int v : g.nodes[i].output_values()) {
      for (int reader : analysis.readers(v)) {
        if (reader >= 0 && supported[static_cast<size_t>(reader)]) {
          parent[static_cast<size_t>(find_root(parent, reader))] = find_root(parent, static_cast<int>(i));
        }
      }
    }
  }
  std::vector<std::vector<int>> groups(n);
  std::vector<bool> computes(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!supported[i]) continue;
    const int r = find_root(parent, static_cast<int>(i));
    groups[static_cast<size_t>(r)].push_back(static_cast<int>(i));
    if (!is_qdq(g.nodes[i])) computes[static_cast<size_t>(r)] = true;
  }
  std::vector<std::vector<int>> claims;
  for (size_t r = 0; r < n; ++r) {
    if (!groups[r].empty() && computes[r]) claims.push_back(groups[r]);
  }
  return claims;
}

absl::Status parse_qnn_target_option(const std::string& key, const std::string& value, QnnTarget* target) {
  char* end = nullptr;
  const unsigned long n = std::strtoul(value.c_str(), &end, 10);
  const bool number = !value.empty() && end != nullptr && *end == '\0' && n <= 0xFFFFFFFFul;
  if (key == "soc_model") {
    if (!number || n == 0) {
      return absl::InvalidArgumentError("qnn.soc_model=" + value + ": expected Qualcomm's SoC model number "
                                        "(e.g. 57 for SM8650; see docs/qnn.md)");
    }
    target->soc_model = static_cast<uint32_t>(n);
  } else if (key == "htp_arch") {
    static const uint32_t known[] = {68, 69, 73, 75, 79, 81};
    bool ok = false;
    for (uint32_t a : known) ok = ok || (number && n == a);
    if (!ok) return absl::InvalidArgumentError("qnn.htp_arch=" + value + ": expected 68, 69, 73, 75, 79 or 81");
    target->htp_arch = static_cast<uint32_t>(n);
  } else if (key == "optimization") {
    if (!number || n < 1 || n > 3) {
      return absl::InvalidArgumentError("qnn.optimization=" + value + ": expected 1, 2 or 3 (graph finalize level)");
    }
    target->optimization_level = static_cast<uint32_t>(n);
  } else if (key == "precision") {
    if (value != "fp16" && value != "quantized") {
      return absl::InvalidArgumentError("qnn.precision=" + value +
                                        ": expected quantized (int8 / a16w8 programs, the default) or fp16 (float "
                                        "programs computed in fp16)");
    }
    target->fp16 = value == "fp16";
  } else {
    return absl::InvalidArgumentError("qnn: unknown target option '" + key + "'");
  }
  return absl::OkStatus();
}

absl::Status check_qnn_target(const QnnTarget& target) {
  if (target.soc_model == 0 && target.htp_arch == 0) return absl::OkStatus();
  std::string error;
  const QnnLibrary* lib = QnnLibrary::get(&error);
  if (lib == nullptr) return absl::OkStatus();
  DeviceHandle device = nullptr;
  if (std::string why = open_target_device(*lib, target, &device); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  lib->api().device_free(device);
  return absl::OkStatus();
}

namespace {

// For `ember inspect`'s summary line.
std::string describe_target(const QnnTarget& t) {
  std::string s = t.htp_arch != 0 ? "HTP architecture v" + std::to_string(t.htp_arch)
                                   : std::string("HTP architecture: the library's default");
  s += t.soc_model != 0 ? ", SoC model " + std::to_string(t.soc_model) : std::string(", the library's SoC");
  s += t.optimization_level != 0 ? ", optimization level " + std::to_string(t.optimization_level)
                                 : ", the library's optimization level";
  return s;
}

// The blob's precision: "fp16" for a float graph, "a16w8" when the partition computes on 16-bit
// activations, else "int8".
std::string partition_precision(const Graph& g, const QuantAnalysis& analysis, const Partition& p,
                                const QnnTarget& target) {
  if (target.fp16) return "fp16";
  for (int i : p.nodes) {
    for (int v : g.nodes[static_cast<size_t>(i)].output_values()) {
      if (analysis.rep(v).valid && analysis.rep(v).dtype == ScalarType::Int16) return "a16w8";
    }
  }
  return "int8";
}

}  // namespace

absl::StatusOr<exporter::DelegateBlob> QnnPartitioner::preprocess(const Graph& g, const Partition& p) {
  std::string error;
  const QnnLibrary* lib = QnnLibrary::get(&error);
  if (lib == nullptr) return absl::FailedPreconditionError(error);
  const QuantAnalysis analysis(g);
  exporter::DelegateBlob blob;
  std::vector<int> call_inputs;
  for (int v : p.inputs) {
    const exporter::Value& value = g.values[static_cast<size_t>(v)];
    if (value.role == ValueRole::Constant && value.constant >= 0) {
      blob.replaced.push_back(value.constant);  // compiled into the context binary
    } else {
      call_inputs.push_back(v);
    }
  }
  QnnGraphBuilder builder(*lib, "ember_qnn", options_.target);
  QnnLowering ctx(g, analysis, &builder, options_.target.fp16);
  ctx.set_boundary(call_inputs, p.outputs);
  for (int i : p.nodes) {
    const Node& node = g.nodes[static_cast<size_t>(i)];
    std::string why = qnn_op_table().check(ctx, node);
    if (why.empty()) why = qnn_op_table().lower(ctx, node);
    if (why.empty() && !builder.ok()) why = builder.error();
    if (!why.empty()) {
      return absl::InvalidArgumentError("qnn preprocess: node " + std::to_string(i) + " (" + node.kernel_name() +
                                        "): " + why);
    }
  }
  if (std::string why = ctx.finish_outputs(); !why.empty()) return absl::InvalidArgumentError(why);
  const std::vector<uint8_t> binary = builder.finish();
  if (!builder.ok()) return absl::InvalidArgumentError(builder.error());
  const std::string precision = partition_precision(g, analysis, p, options_.target);

  flatbuffers::FlatBufferBuilder fbb;
  auto io = [&](const std::vector<int>& values, const std::vector<int>& tensors) {
    std::vector<flatbuffers::Offset<fb::IoTensor>> out;
    for (size_t i = 0; i < values.size(); ++i) {
      const exporter::Value& v = g.values[static_cast<size_t>(values[i])];
      const TensorSpec& s = builder.spec(tensors[i]);
      std::vector<uint32_t> dims(v.sizes.begin(), v.sizes.end());
      out.push_back(fb::CreateIoTensor(fbb, builder.tensor(tensors[i]).v1.id, fbb.CreateString(s.name), s.data_type,
                                       s.quant.scale, s.quant.offset, fbb.CreateVector(dims),
                                       static_cast<int8_t>(v.dtype), v.nbytes()));
    }
    return fbb.CreateVector(out);
  };
  auto inputs = io(call_inputs, ctx.io_inputs);
  auto outputs = io(p.outputs, ctx.io_outputs);
  auto root = fb::CreateBlob(fbb, kQnnBlobVersion, fbb.CreateString(builder.graph_name()), inputs, outputs,
                             fbb.CreateVector(binary), lib->api_version().core_api.major,
                             lib->api_version().core_api.minor, lib->api_version().backend_api.major,
                             lib->api_version().backend_api.minor, fbb.CreateString(lib->build_id()), options_.target.soc_model,
                             options_.target.htp_arch, fbb.CreateString(precision), static_cast<uint32_t>(builder.num_ops()),
                             options_.target.optimization_level);
  fb::FinishBlobBuffer(fbb, root);
  blob.data.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  // `ember inspect` shows this line: what was compiled, by which library, for which target.
  const ApiVersion& v = lib->api_version();
  const std::string summary = "QNN context binary " + std::to_string(binary.size()) + " bytes, " +
                              std::to_string(builder.num_ops()) + " QNN ops, " + precision + ", " +
                              describe_target(options_.target) +
                              "; compiled by QNN " + lib->build_id() + " (core API " +
                              std::to_string(v.core_api.major) + "." + std::to_string(v.core_api.minor) + "); " +
                              exporter::summarize_partition(g, p);
  blob.compile_specs.push_back({exporter::kSummarySpec, std::vector<uint8_t>(summary.begin(), summary.end())});
  return blob;
}

}  // namespace qnn
}  // namespace ember
