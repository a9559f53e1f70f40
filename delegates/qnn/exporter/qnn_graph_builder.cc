#include "delegates/qnn/exporter/qnn_graph_builder.h"

#include <cstring>

namespace ember {
namespace qnn {

ParamSpec scalar_u32(const std::string& name, uint32_t v) {
  ParamSpec p;
  p.name = name;
  p.data_type = kUint32;
  p.u32 = v;
  return p;
}
ParamSpec scalar_f32(const std::string& name, float v) {
  ParamSpec p;
  p.name = name;
  p.data_type = kFloat32;
  p.f32 = v;
  return p;
}
ParamSpec scalar_i32(const std::string& name, int32_t v) {
  ParamSpec p;
  p.name = name;
  p.data_type = kInt32;
  p.i32 = v;
  return p;
}
ParamSpec scalar_bool(const std::string& name, bool v) {
  ParamSpec p;
  p.name = name;
  p.data_type = kBool8;
  p.b8 = v;
  return p;
}
ParamSpec tensor_u32(const std::string& name, std::vector<uint32_t> values, std::vector<uint32_t> dims) {
  ParamSpec p;
  p.name = name;
  p.kind = ParamSpec::Tensor;
  p.values = std::move(values);
  p.dims = dims.empty() ? std::vector<uint32_t>{static_cast<uint32_t>(p.values.size())} : std::move(dims);
  return p;
}

std::string open_target_device(const QnnLibrary& lib, const QnnTarget& target, DeviceHandle* device) {
  *device = nullptr;
  if (lib.api().device_create == nullptr) {
    return "qnn: this library has no devices, so it cannot compile for a chosen SoC or HTP architecture";
  }
  HtpDeviceConfig soc{}, arch{};
  soc.option = kHtpDeviceOptionSoc;
  soc.soc_model = target.soc_model;
  arch.option = kHtpDeviceOptionArch;
  arch.arch.device_id = 0;
  arch.arch.arch = target.htp_arch;
  Config soc_config{kConfigOptionCustom, &soc}, arch_config{kConfigOptionCustom, &arch};
  const void* configs[3] = {};
  size_t n = 0;
  if (target.soc_model != 0) configs[n++] = &soc_config;
  if (target.htp_arch != 0) configs[n++] = &arch_config;
  const ErrorHandle e = lib.api().device_create(lib.log(), configs, device);
  if (e == 0) return "";
  *device = nullptr;
  return "qnn: the library refused the target (soc_model " + std::to_string(target.soc_model) + ", htp_arch " +
         std::to_string(target.htp_arch) + "): " + lib.message(e) +
         "; use a SoC model and HTP architecture this QNN version knows (docs/qnn.md)";
}

QnnGraphBuilder::QnnGraphBuilder(const QnnLibrary& library, const std::string& graph_name, const QnnTarget& target)
    : lib_(library), graph_name_(graph_name) {
  DeviceHandle device = lib_.device();
  if (target.soc_model != 0 || target.htp_arch != 0) {
    if (std::string why = open_target_device(lib_, target, &own_device_); !why.empty()) {
      fail(why);
      return;
    }
    device = own_device_;
  }
  check(lib_.api().context_create(lib_.backend(), device, nullptr, &context_), "contextCreate");
  if (!ok()) return;
  HtpGraphConfig optimization{}, precision{};
  optimization.option = kHtpGraphOptionOptimization;
  optimization.optimization.type = kHtpOptimizationFinalizeFlag;
  optimization.optimization.value = static_cast<float>(target.optimization_level);
  precision.option = kHtpGraphOptionPrecision;
  precision.precision = kPrecisionFloat16;
  Config optimization_config{kConfigOptionCustom, &optimization}, precision_config{kConfigOptionCustom, &precision};
  const void* graph_configs[3] = {};
  size_t n = 0;
  if (target.optimization_level != 0) graph_configs[n++] = &optimization_config;
  if (target.fp16) graph_configs[n++] = &precision_config;
  check(lib_.api().graph_create(context_, graph_name_.c_str(), n != 0 ? graph_configs : nullptr, &graph_),
        "graphCreate");
}

QnnGraphBuilder::~QnnGraphBuilder() {
  if (context_ != nullptr) lib_.api().context_free(context_, nullptr);
  if (own_device_ != nullptr) lib_.api().device_free(own_device_);
}

void QnnGraphBuilder::check(ErrorHandle e, const std::string& what) {
  if (e != 0) fail("qnn: " + what + " failed: " + lib_.message(e));
}

Tensor QnnGraphBuilder::make_tensor(TensorSpec& spec) {
  Tensor t;
  std::memset(&t, 0, sizeof t);
  t.version = 1;
  TensorV1& v = t.v1;
  v.name = spec.name.c_str();
  v.type = spec.type;
  v.data_format = 0;
  v.data_type = spec.data_type;
  v.quantize_params.definition = kDefinitionUndefined;
  v.quantize_params.encoding = kEncodingUndefined;
  if (!spec.quant.axis_scales.empty()) {
    axis_tables_.emplace_back();
    for (float s : spec.quant.axis_scales) axis_tables_.back().push_back(ScaleOffset{s, 0});
    v.quantize_params.definition = kDefined;
    v.quantize_params.encoding = kAxisScaleOffset;
    v.quantize_params.axis_scale_offset.axis = spec.quant.axis;
    v.quantize_params.axis_scale_offset.num_scale_offsets = static_cast<uint32_t>(axis_tables_.back().size());
    v.quantize_params.axis_scale_offset.scale_offset = axis_tables_.back().data();
  } else if (spec.quant.scale > 0) {
    v.quantize_params.definition = kDefined;
    v.quantize_params.encoding = kScaleOffset;
    v.quantize_params.scale_offset = ScaleOffset{spec.quant.scale, spec.quant.offset};
  }
  v.rank = static_cast<uint32_t>(spec.dims.size());
  v.dimensions = spec.dims.data();
  v.mem_type = kMemRaw;
  if (spec.type == kStatic) {
    v.client_buf.data = spec.data.data();
    v.client_buf.data_size = static_cast<uint32_t>(spec.data.size());
  }
  return t;
}

int QnnGraphBuilder::add_tensor(TensorSpec spec) {
  if (!ok()) return -1;
  if (spec.data.size() > UINT32_MAX) {
    fail("qnn: constant " + spec.name + " is over 4 GiB");
    return -1;
  }
  spec.name += "_" + std::to_string(specs_.size());
  specs_.push_back(std::move(spec));
  tensors_.push_back(make_tensor(specs_.back()));
  check(lib_.api().tensor_create_graph_tensor(graph_, &tensors_.back()), "tensorCreateGraphTensor(" + specs_.back().name + ")");
  return ok() ? static_cast<int>(tensors_.size() - 1) : -1;
}

void QnnGraphBuilder::add_node(const std::string& type, const std::vector<int>& inputs, const std::vector<int>& outputs,
                               const std::vector<ParamSpec>& params) {
  if (!ok()) return;
  std::vector<Tensor> in, out;
  for (int i : inputs) {
    if (i < 0 || static_cast<size_t>(i) >= tensors_.size()) return fail("qnn: " + type + ": missing input tensor");
    in.push_back(tensors_[static_cast<size_t>(i)]);
  }
  for (int i : outputs) {
    if (i < 0 || static_cast<size_t>(i) >= tensors_.size()) return fail("qnn: " + type + ": missing output tensor");
    out.push_back(tensors_[static_cast<size_t>(i)]);
  }
  std::vector<Param> ps(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    std::memset(&ps[i], 0, sizeof(Param));
    strings_.push_back(params[i].name);
    ps[i].name = strings_.back().c_str();
    if (params[i].kind == ParamSpec::Scalar) {
      ps[i].param_type = kParamScalar;
      ps[i].scalar.data_type = params[i].data_type;
      if (params[i].data_type == kFloat32) ps[i].scalar.f32 = params[i].f32;
      else if (params[i].data_type == kBool8) ps[i].scalar.b8 = params[i].b8 ? 1 : 0;
      else if (params[i].data_type == kInt32) ps[i].scalar.i32 = params[i].i32;
      else ps[i].scalar.u32 = params[i].u32;
    } else {
      TensorSpec s;
      s.name = type + "_" + params[i].name;
      s.type = kStatic;
      s.data_type = kUint32;
      s.dims = params[i].dims;
      s.data.resize(params[i].values.size() * sizeof(uint32_t));
      std::memcpy(s.data.data(), params[i].values.data(), s.data.size());
      const int t = add_tensor(std::move(s));
      if (t < 0) return;
      ps[i].param_type = kParamTensor;
      ps[i].tensor = tensors_[static_cast<size_t>(t)];
    }
  }
  strings_.push_back(type + "_" + std::to_string(num_ops_));
  const char* node_name = strings_.back().c_str();
  strings_.push_back(type);
  OpConfig op;
  std::memset(&op, 0, sizeof op);
  op.version = 1;
  op.v1.name = node_name;
  op.v1.package_name = "qti.aisw";
  op.v1.type_name = strings_.back().c_str();
  op.v1.num_params = static_cast<uint32_t>(ps.size());
  op.v1.params = ps.data();
  op.v1.num_inputs = static_cast<uint32_t>(in.size());
  op.v1.inputs = in.data();
  op.v1.num_outputs = static_cast<uint32_t>(out.size());
  op.v1.outputs = out.data();
  check(lib_.api().graph_add_node(graph_, op), "graphAddNode(" + type + ")");
  ++num_ops_;
}

std::vector<uint8_t> QnnGraphBuilder::finish() {
  std::vector<uint8_t> binary;
  if (!ok()) return binary;
  check(lib_.api().graph_finalize(graph_, nullptr, nullptr), "graphFinalize");
  uint64_t size = 0, written = 0;
  if (ok()) check(lib_.api().context_get_binary_size(context_, &size), "contextGetBinarySize");
  if (!ok()) return binary;
  binary.resize(size);
  check(lib_.api().context_get_binary(context_, binary.data(), size, &written), "contextGetBinary");
  if (!ok() || written > size) {
    fail("qnn: contextGetBinary wrote an invalid size");
    return {};
  }
  binary.resize(written);
  return binary;
}

}  // namespace qnn
}  // namespace ember
