// Builds one QNN graph in a fresh context on the loaded library, finalizes it (the HTP
// compiles it) and returns the context binary. Exporter side only.
//
// The builder owns every string, dimension array, quantization table and constant buffer it
// hands to the library (QNN reads them during graph building and finalize). Tensors are
// referred to by index into the builder. The first failing call is kept: later calls do
// nothing and ok() / error() report it, so lowering code can chain calls and check once.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "delegates/qnn/qnn_library.h"

namespace ember {
namespace qnn {

struct QuantParams {
  float scale = 0;      // 0: not quantized
  int32_t offset = 0;   // QNN's offset = -zero_point
  std::vector<float> axis_scales;  // per-channel (symmetric, offset 0) along `axis`
  int32_t axis = -1;
};

struct TensorSpec {
  std::string name;
  TensorType type = kNative;
  DataType data_type = kFloat32;
  QuantParams quant;
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // kStatic only
};

// One operator parameter.
struct ParamSpec {
  std::string name;
  enum Kind { Scalar, Tensor } kind = Scalar;
  DataType data_type = kUint32;
  uint32_t u32 = 0;
  int32_t i32 = 0;
  float f32 = 0;
  bool b8 = false;
  std::vector<uint32_t> values;  // Tensor: uint32 data
  std::vector<uint32_t> dims;    // Tensor: its shape (default: [values.size()])
};
ParamSpec scalar_u32(const std::string& name, uint32_t v);
ParamSpec scalar_f32(const std::string& name, float v);
ParamSpec scalar_i32(const std::string& name, int32_t v);
ParamSpec scalar_bool(const std::string& name, bool v);
ParamSpec tensor_u32(const std::string& name, std::vector<uint32_t> values, std::vector<uint32_t> dims = {});

// What the graph is compiled for (0: the library's default). A SoC or architecture opens a device
// of its own for this graph; the library's shared device is left as it is.
struct QnnTarget {
  uint32_t soc_model = 0;           // Qualcomm's SoC model number (e.g. 57 = SM8650)
  uint32_t htp_arch = 0;            // HTP architecture version: 68, 69, 73, 75, 79, 81
  uint32_t optimization_level = 0;  // graph finalize optimization, 1 to 3
  bool fp16 = false;                // float graph computed in fp16 (qnn.precision=fp16)
};

// Opens a device for a target SoC / architecture (free it with the API's device_free); "" or why
// the library refused it.
std::string open_target_device(const QnnLibrary& lib, const QnnTarget& target, DeviceHandle* device);

class QnnGraphBuilder {
 public:
  QnnGraphBuilder(const QnnLibrary& library, const std::string& graph_name, const QnnTarget& target = {});
  ~QnnGraphBuilder();
  QnnGraphBuilder(const QnnGraphBuilder&) = delete;
  QnnGraphBuilder& operator=(const QnnGraphBuilder&) = delete;

  // Index of a new tensor (-1 after an error). Names get a unique suffix.
  int add_tensor(TensorSpec spec);
  void add_node(const std::string& type, const std::vector<int>& inputs, const std::vector<int>& outputs,
                const std::vector<ParamSpec>& params = {});

  // Finalizes the graph and serializes the context. Empty on error.
  std::vector<uint8_t> finish();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(const std::string& why) {
    if (error_.empty()) error_ = why;
  }

  const TensorSpec& spec(int index) const { return specs_[static_cast<size_t>(index)]; }
  const Tensor& tensor(int index) const { return tensors_[static_cast<size_t>(index)]; }
  int num_ops() const { return num_ops_; }
  const std::string& graph_name() const { return graph_name_; }

 private:
  const QnnLibrary& lib_;
  std::string graph_name_;
  DeviceHandle own_device_ = nullptr;  // opened for a target SoC / architecture
  ContextHandle context_ = nullptr;
  GraphHandle graph_ = nullptr;
  std::string error_;
  int num_ops_ = 0;
  std::deque<TensorSpec> specs_;   // stable addresses: the library keeps pointers until finalize
  std::deque<Tensor> tensors_;
  std::deque<std::vector<ScaleOffset>> axis_tables_;
  std::deque<std::string> strings_;
  std::deque<std::vector<uint32_t>> param_data_;
  void check(ErrorHandle e, const std::string& what);
  Tensor make_tensor(TensorSpec& spec);
};

}  // namespace qnn
}  // namespace ember
