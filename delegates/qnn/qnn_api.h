// Ember's own declarations of the subset of Qualcomm's QNN C API that the QNN delegate calls.
//
// No public package carries the QNN SDK headers, so these are written from the published
// API's shape (QnnInterface.h, QnnTypes.h, QnnCommon.h of QNN core API 2.x). Only what Ember
// calls is typed; the function table is declared up to the last entry Ember reads, in the
// API's order (providers own the table; Ember never allocates one, so a shorter prefix is
// safe). Sizes and offsets are checked below at compile time against the layout of the
// 64-bit ABI; a provider's API version is checked at load (qnn_library.h) before any call.
//
// Conventions: a quantized value is real = (q + offset) * scale, so offset = -zero_point.
// Tensors are dense, row-major, with 4-D activations in NHWC.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>

namespace ember {
namespace qnn {

using ErrorHandle = uint64_t;  // 0: success
using Handle = void*;
using BackendHandle = Handle;
using ContextHandle = Handle;
using GraphHandle = Handle;
using LogHandle = Handle;
using DeviceHandle = Handle;
using ProfileHandle = Handle;
using SignalHandle = Handle;
using MemHandle = Handle;

// The core API major version this code is written against; minor versions add to it.
constexpr uint32_t kCoreApiMajor = 2;
constexpr uint32_t kCoreApiMinMinor = 10;  // tensor v2, getBinarySize/getBinary
constexpr uint32_t kHtpBackendId = 6;

struct Version {
  uint32_t major, minor, patch;
};
struct ApiVersion {
  Version core_api;
  Version backend_api;
};

enum DataType : uint32_t {
  kInt8 = 0x0008,
  kInt32 = 0x0032,
  kUint8 = 0x0108,
  kUint32 = 0x0132,
  kFloat16 = 0x0216,
  kFloat32 = 0x0232,
  kSfixed8 = 0x0308,
  kSfixed16 = 0x0316,
  kSfixed32 = 0x0332,
  kUfixed8 = 0x0408,
  kUfixed16 = 0x0416,
  kBool8 = 0x0508,
  kDataTypeUndefined = 0x7FFFFFFF,
};

enum TensorType : uint32_t {
  kAppWrite = 0,  // graph input
  kAppRead = 1,   // graph output
  kAppReadWrite = 2,
  kNative = 3,    // intermediate
  kStatic = 4,    // constant, data given at creation
  kTensorTypeUndefined = 0x7FFFFFFF,
};

enum ParamType : uint32_t { kParamScalar = 0, kParamTensor = 1, kParamUndefined = 0xFFFFFFFF };
enum Definition : uint32_t { kImplGenerated = 0, kDefined = 1, kDefinitionUndefined = 0x7FFFFFFF };
enum QuantizationEncoding : uint32_t {
  kScaleOffset = 0,
  kAxisScaleOffset = 1,
  kEncodingUndefined = 0x7FFFFFFF,
};
enum TensorMemType : uint32_t { kMemRaw = 0, kMemHandle = 1, kMemUndefined = 0x7FFFFFFF };

struct ScaleOffset {
  float scale;
  int32_t offset;
};
struct AxisScaleOffset {
  int32_t axis;
  uint32_t num_scale_offsets;
  ScaleOffset* scale_offset;
};
struct BwAxisScaleOffset {  // the union's largest member (sizes only)
  uint32_t bitwidth;
  int32_t axis;
  uint32_t num_elements;
  float* scales;
  int32_t* offsets;
};
struct QuantizeParams {
  Definition definition;
  QuantizationEncoding encoding;
  union {
    ScaleOffset scale_offset;
    AxisScaleOffset axis_scale_offset;
    BwAxisScaleOffset largest_member_;
  };
};

struct ClientBuffer {
  void* data;
  uint32_t data_size;
};

struct TensorV1 {
  uint32_t id;
  const char* name;
  TensorType type;
  uint32_t data_format;  // 0: flat buffer
  DataType data_type;
  QuantizeParams quantize_params;
  uint32_t rank;
  uint32_t* dimensions;
  TensorMemType mem_type;
  union {
    ClientBuffer client_buf;
    MemHandle mem_handle;
  };
};
struct SparseParams {
  uint32_t type;
  uint32_t num_specified_elements, num_sparse_dimensions;
};
struct TensorV2 {
  TensorV1 base;
  uint8_t* is_dynamic_dimensions;
  SparseParams sparse_params;
  uint8_t is_produced;
};
// The API's Qnn_Tensor_t: a version tag and a union of versions. Ember writes version 1
// tensors; the union's size (version 2) sets the stride of tensor arrays.
struct Tensor {
  uint32_t version;
  union {
    TensorV1 v1;
    TensorV2 v2;
  };
};

struct Scalar {
  DataType data_type;
  union {  // 8-byte members (double, int64 in the API) put the value at offset 8
    float f32;
    double f64;
    uint64_t u64;
    int64_t i64;
    uint32_t u32;
    int32_t i32;
    uint8_t b8;
  };
};
struct Param {
  ParamType param_type;
  const char* name;
  union {
    Scalar scalar;
    Tensor tensor;
  };
};
struct OpConfigV1 {
  const char* name;
  const char* package_name;
  const char* type_name;
  uint32_t num_params;
  Param* params;
  uint32_t num_inputs;
  Tensor* inputs;
  uint32_t num_outputs;
  Tensor* outputs;
};
struct OpConfig {
  uint32_t version;  // 1
  union {
    OpConfigV1 v1;
  };
};

// Profiling (QnnProfile.h): event data of one event.
struct ProfileEventData {
  uint32_t type;
  uint64_t value;
  const char* identifier;
  uint32_t unit;  // 1 microseconds, 2 bytes, 3 cycles, 4 count, ...
};
using ProfileEventId = Handle;

using LogCallback = void (*)(const char* fmt, int level, uint64_t timestamp, va_list args);
using Unused = void*;  // table entries Ember does not call

// QNN_INTERFACE_VER_TYPE, in the API's order, up to the last entry Ember calls.
struct FunctionTable {
  Unused property_has_capability;
  ErrorHandle (*backend_create)(LogHandle, const void** config, BackendHandle*);
  Unused backend_set_config;
  ErrorHandle (*backend_get_api_version)(ApiVersion*);
  ErrorHandle (*backend_get_build_id)(const char**);
  Unused backend_register_op_package, backend_get_supported_operations;
  ErrorHandle (*backend_validate_op_config)(BackendHandle, OpConfig);
  ErrorHandle (*backend_free)(BackendHandle);
  ErrorHandle (*context_create)(BackendHandle, DeviceHandle, const void** config, ContextHandle*);
  Unused context_set_config;
  ErrorHandle (*context_get_binary_size)(ContextHandle, uint64_t*);
  ErrorHandle (*context_get_binary)(ContextHandle, void* buffer, uint64_t size, uint64_t* written);
  ErrorHandle (*context_create_from_binary)(BackendHandle, DeviceHandle, const void** config, const void* binary,
                                            uint64_t size, ContextHandle*, ProfileHandle);
  ErrorHandle (*context_free)(ContextHandle, ProfileHandle);
  ErrorHandle (*graph_create)(ContextHandle, const char* name, const void** config, GraphHandle*);
  Unused graph_create_subgraph, graph_set_config;
  ErrorHandle (*graph_add_node)(GraphHandle, OpConfig);
  ErrorHandle (*graph_finalize)(GraphHandle, ProfileHandle, SignalHandle);
  ErrorHandle (*graph_retrieve)(ContextHandle, const char* name, GraphHandle*);
  ErrorHandle (*graph_execute)(GraphHandle, const Tensor* inputs, uint32_t num_inputs, Tensor* outputs,
                               uint32_t num_outputs, ProfileHandle, SignalHandle);
  Unused graph_execute_async, tensor_create_context_tensor;
  ErrorHandle (*tensor_create_graph_tensor)(GraphHandle, Tensor*);
  ErrorHandle (*log_create)(LogCallback, int max_level, LogHandle*);
  Unused log_set_log_level;
  ErrorHandle (*log_free)(LogHandle);
  ErrorHandle (*profile_create)(BackendHandle, uint32_t level, ProfileHandle*);
  Unused profile_set_config;
  ErrorHandle (*profile_get_events)(ProfileHandle, const ProfileEventId** events, uint32_t* count);
  ErrorHandle (*profile_get_sub_events)(ProfileEventId, const ProfileEventId** events, uint32_t* count);
  ErrorHandle (*profile_get_event_data)(ProfileEventId, ProfileEventData*);
  Unused profile_get_extended_event_data;
  ErrorHandle (*profile_free)(ProfileHandle);
  Unused mem_register, mem_de_register, device_get_platform_info, device_free_platform_info,
      device_get_infrastructure;
  ErrorHandle (*device_create)(LogHandle, const void** config, DeviceHandle*);
  Unused device_set_config, device_get_info;
  ErrorHandle (*device_free)(DeviceHandle);
  Unused signal_create, signal_set_config, signal_trigger, signal_free;
  ErrorHandle (*error_get_message)(ErrorHandle, const char**);
};

// Configs passed to deviceCreate / graphCreate (null-terminated arrays of pointers): an option
// and a pointer-sized union, of which Ember uses the backend's custom config.
constexpr uint32_t kConfigOptionCustom = 0;  // QNN_DEVICE_ / QNN_GRAPH_CONFIG_OPTION_CUSTOM
struct Config {
  uint32_t option;
  const void* custom_config;
};

// The HTP's device config (QnnHtpDevice_CustomConfig_t): the SoC model and the HTP
// architecture compiled for. Its union holds a pointer, hence the value at offset 8.
constexpr uint32_t kHtpDeviceOptionSoc = 0;
constexpr uint32_t kHtpDeviceOptionArch = 1;
struct HtpDeviceConfig {
  uint32_t option;
  union {
    uint32_t soc_model;
    struct {
      uint32_t device_id;
      uint32_t arch;  // 68, 69, 73, 75, 79, 81...
    } arch;
    void* pointer_member;  // sizes and alignment only
  };
};

// The HTP's graph config (QnnHtpGraph_CustomConfig_t): the finalize optimization level.
constexpr uint32_t kHtpGraphOptionOptimization = 1;
constexpr uint32_t kHtpGraphOptionPrecision = 2;
constexpr uint32_t kHtpOptimizationFinalizeFlag = 3;  // value: the level, 1 to 3
constexpr uint32_t kPrecisionFloat16 = 1;             // Qnn_Precision_t
struct HtpGraphConfig {
  uint32_t option;
  union {
    struct {
      uint32_t type;
      float value;
    } optimization;
    uint32_t precision;  // float graphs computed in: kPrecisionFloat16
    uint8_t largest_member[48];  // sizes only (the parallel-execution config)
    uint64_t alignment;
  };
};

struct Interface {
  uint32_t backend_id;
  const char* provider_name;
  ApiVersion api_version;
  union {
    FunctionTable functions;
  };
};
using GetProvidersFn = ErrorHandle (*)(const Interface*** providers, uint32_t* count);
constexpr const char* kGetProvidersSymbol = "QnnInterface_getProviders";

constexpr uint32_t kProfileLevelBasic = 1;
constexpr uint32_t kProfileLevelDetailed = 2;

// The 64-bit layout of the API's structs (a mismatch corrupts every call; the first probe
// with an older Qnn_Tensor_t layout crashed inside the library).
static_assert(sizeof(void*) == 8, "the QNN delegate is declared for 64-bit targets");
static_assert(sizeof(QuantizeParams) == 40, "Qnn_QuantizeParams_t");
static_assert(sizeof(TensorV1) == 112, "Qnn_TensorV1_t");
static_assert(offsetof(TensorV1, quantize_params) == 32, "Qnn_TensorV1_t.quantizeParams");
static_assert(offsetof(TensorV1, dimensions) == 80, "Qnn_TensorV1_t.dimensions");
static_assert(offsetof(TensorV1, client_buf) == 96, "Qnn_TensorV1_t.clientBuf");
static_assert(sizeof(Tensor) == 144, "Qnn_Tensor_t");
static_assert(sizeof(Config) == 16 && offsetof(Config, custom_config) == 8, "QnnDevice_Config_t / QnnGraph_Config_t");
static_assert(offsetof(HtpDeviceConfig, soc_model) == 8 && offsetof(HtpDeviceConfig, arch.arch) == 12,
              "QnnHtpDevice_CustomConfig_t");
static_assert(offsetof(HtpGraphConfig, optimization.value) == 12, "QnnHtpGraph_CustomConfig_t");
static_assert(sizeof(Scalar) == 16 && offsetof(Scalar, u32) == 8, "Qnn_Scalar_t");
static_assert(sizeof(Param) == 160, "Qnn_Param_t");
static_assert(sizeof(OpConfig) == 80, "Qnn_OpConfig_t");
static_assert(offsetof(Interface, functions) == 40, "QnnInterface_t");
static_assert(offsetof(FunctionTable, graph_execute) == 21 * sizeof(void*), "graphExecute slot");
static_assert(offsetof(FunctionTable, error_get_message) == 48 * sizeof(void*), "errorGetMessage slot");

}  // namespace qnn
}  // namespace ember
