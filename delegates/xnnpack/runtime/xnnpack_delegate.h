// Internal to the XNNPACK backend: the per-delegate state and the steps that turn a blob
// into an XNNPACK runtime (xnnpack_compiler.cc). Not a public API.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>

#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "delegates/xnnpack/xnnpack_compile_specs.h"
#include "delegates/xnnpack/xnnpack_graph_generated.h"
#include "delegates/xnnpack/xnnpack_shapes.h"
#include "runtime/backend/backend.h"

namespace ember {
namespace xnnpack {

// One delegate input or output.
struct ExternalPort {
  uint32_t tensor_id = 0;
  bool nchw = false;   // Ember side is NCHW, XNNPACK side NHWC (layout NchwToNhwc)
  Dims max_dims;       // XNNPACK order; equals the compiled dims when static
  bool dynamic = false;
  bool ignored = false;      // TensorKind::IgnoredInput: never read, never bound
  bool int8 = false;         // QInt8 tensor: an Int8 tensor on the Ember side (else Float32)
  size_t elem_size = 4;
  void* staging = nullptr;   // max numel * elem_size + XNN_EXTRA_BYTES, 64-byte aligned
};

struct CachedRuntime {
  xnn_runtime_t runtime = nullptr;
  Dims* input_dims = nullptr;   // [num_inputs], XNNPACK order: the cache key
  Dims* output_dims = nullptr;  // [num_outputs]
  void** bound = nullptr;       // [num_inputs + num_outputs]: pointers of the last setup
  bool bound_valid = false;
  uint64_t last_use = 0;
};

struct SharedWeights;  // weights_cache.h
struct MethodWorkspace;  // method_workspace.h

// Tables for per-operator profiling, sized at init from the first runtime (method allocator).
struct OperatorProfile {
  bool enabled = false;
  size_t capacity = 0;            // operators the tables hold
  char* names = nullptr;          // XNNPACK's NUL-separated operator names
  size_t names_bytes = 0;
  const char** name_of = nullptr; // [capacity], into `names`
  // [capacity]: the blob node's .pt2 name for operator i, when XNNPACK runs exactly one
  // operator per blob node (then operator i is blob node i); else null entries.
  const char** debug_of = nullptr;
  uint64_t* timings_us = nullptr; // [capacity]
  xnn_runtime_t named_runtime = nullptr;  // the runtime `name_of` describes
  size_t num_named = 0;
};

struct XnnDelegate {
  const fb::Graph* graph = nullptr;
  uint32_t num_tensors = 0;
  uint32_t num_nodes = 0;
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  const void** constant_data = nullptr;  // [num_tensors], null unless Constant
  const float** channel_scales = nullptr;  // [num_tensors], QCInt8/QCInt32 only (blob or segment)
  const uint16_t** block_scales = nullptr;  // [num_tensors], QBInt4 only: bfloat16 (segment)
  Dims* declared_dims = nullptr;         // [num_tensors], as compiled
  Dims* work_dims = nullptr;             // [num_tensors], scratch for (re)builds
  NodeAttrs* attrs = nullptr;            // [num_nodes]
  Dims* scratch_key = nullptr;           // [num_inputs]: input shapes of the current execute
  ExternalPort* inputs = nullptr;
  ExternalPort* outputs = nullptr;
  CachedRuntime cache[kMaxCachedRuntimes];
  size_t num_cached = 0;
  CachedRuntime* current = nullptr;
  xnn_external_value* externals = nullptr;  // [num_inputs + num_outputs]; the first num_bound used
  uint32_t num_ignored = 0;
  pthreadpool_t pool = nullptr;
  bool owns_pool = false;
  bool fp16 = false;  // runtimes are created with XNN_FLAG_FORCE_FP16_INFERENCE
  uint64_t conv_block_bytes = kDefaultConvBlockBytes;  // compile spec "conv_block_bytes"
  SharedWeights* weights = nullptr;  // the Program's packed-weights cache; null: none
  MethodWorkspace* workspace = nullptr;  // the Method's XNNPACK workspace; null: the runtime's own
  uint64_t clock = 0;
  XnnpackDelegateStats stats;
  OperatorProfile profile;
};

const char* status_name(xnn_status status);
Error status_error(xnn_status status);

// Verifies `blob` and fills every field of `d` up to (not including) the runtime cache:
// tensor tables, resolved constants, node attributes, external ports and staging buffers.
// Constants with a slot (ConstantData.segment_index >= 0) are resolved with
// ember::delegate_constant(context, specs, slot).
Error prepare_delegate(XnnDelegate* d, BackendInitContext& context, Span<const uint8_t> blob,
                       Span<const CompileSpecView> specs);

// Quantized tensors and nodes (xnnpack_quantized_nodes.cc).
// Checks tensor t's dtype and quantization (scales positive and finite, zero points in range,
// channel scales one per channel, QC*/QInt32 only as constants); NotSupported for an unknown
// dtype, InvalidProgram otherwise.
// Per-channel scales kept in a constant slot are resolved here (d->channel_scales[t]), and
// the block scales of a QBInt4 filter (d->block_scales[t]; their values: check_block_scales).
Error check_tensor_type(XnnDelegate* d, uint32_t t, const fb::Tensor& tensor, BackendInitContext& ctx,
                        Span<const CompileSpecView> specs);
// InvalidProgram naming the first of the `count` block scales of QBInt4 tensor t that is not a
// positive normal number (block_scales.h). check_tensor_type runs it at once when the delegate
// has no packed-weights cache; otherwise create_runtime hands the checks to the cache, which
// runs them on the filters XNNPACK packs (weights_cache.h, BlockScaleCheck).
Error check_block_scales(uint32_t t, const uint16_t* scales, size_t count, Diagnostic* diag);
// The InvalidProgram of either path: scale `index` of QBInt4 tensor t has the bfloat16 `bits`.
Error bad_block_scale(uint32_t t, size_t index, uint16_t bits, Diagnostic* diag);
// Checks that node i's tensor dtypes form a combination this backend defines (fp32 ops on
// Fp32 only; quantized conv/fc: QInt8 in/out, QCInt8 filter, QCInt32 bias; ...).
Error check_node_types(const XnnDelegate* d, uint32_t i, const fb::Node& node, Diagnostic* diag);
// xnn_define_tensor_value / xnn_define_quantized_tensor_value /
// xnn_define_channelwise_quantized_tensor_value for blob tensor t.
xnn_status define_value(const XnnDelegate* d, xnn_subgraph_t sg, const fb::Tensor& tensor, const Dims& dims,
                        const void* data, uint32_t t, uint32_t flags, uint32_t* id);

// Re-derives work_dims of every node output from work_dims of the inputs and constants.
// `check_declared`: also require them to equal the compiled dims (init-time verification).
Error infer_shapes(XnnDelegate* d, bool check_declared, Diagnostic* diag);

// Defines the subgraph with work_dims and creates an XNNPACK runtime on d->pool: fp16 when
// d->fp16 (when XNNPACK cannot run this partition in fp16, d->fp16 becomes false, a warning
// is logged and the runtime is fp32), with the shared weights cache d->weights when there is
// one (see weights_cache.h), and with XNN_FLAG_BASIC_PROFILING when d->profile.enabled.
Error create_runtime(XnnDelegate* d, xnn_runtime_t* runtime, Diagnostic* diag);

// Output channels per block of a convolution with `out_channels` filters of
// `filter_bytes_per_channel` bytes run on `threads` threads: `out_channels` (no split) unless
// each thread's share of the filters is over `block_bytes` (0: never split); then blocks of a
// multiple of 64 channels of at most `block_bytes` each where possible, at most 25 blocks.
size_t conv_block_channels(size_t out_channels, size_t filter_bytes_per_channel, size_t threads,
                           uint64_t block_bytes);
// Defines fp32 Convolution2d `node` (groups 1, constant filter and bias) as convolutions of
// `block` (< output channels) output channels reading the filter and bias in place, joined by
// concatenates into the node's output (blocked_convolution.cc).
xnn_status define_blocked_convolution(const XnnDelegate* d, xnn_subgraph_t sg, const NodeAttrs& a,
                                      const fb::Node& node, size_t block, const char** api);

// Threads worth using, of `threads` offered, for one invoke of d's graph at its compiled
// shapes: all of them for memory-bound graphs, else one per 16 MFLOP (thread_budget.cc).
size_t useful_threads(const XnnDelegate* d, size_t threads);

// Sizes the profiling tables from `runtime` (a profiled one), in `alloc`. Init only.
Error init_profiling(XnnDelegate* d, xnn_runtime_t runtime, MemoryAllocator* alloc, Diagnostic* diag);

// After a traced invoke of `runtime` that ran from invoke_start_ns to invoke_end_ns:
// records one DelegateOp event per XNNPACK operator to ctx.event_tracer. XNNPACK gives
// durations only (microseconds), so the events are laid back to back from invoke_start_ns
// and clamped to invoke_end_ns. No allocation.
void report_operators(XnnDelegate* d, xnn_runtime_t runtime, const BackendExecuteContext& ctx,
                      uint64_t invoke_start_ns, uint64_t invoke_end_ns);

}  // namespace xnnpack
}  // namespace ember
