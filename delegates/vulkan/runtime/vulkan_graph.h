// VulkanGraph: one delegate partition made executable. init: parse + validate the blob
// (every shape is re-derived so a corrupt blob cannot make a shader index out of bounds),
// lower nodes to dispatches (graph_lowering.h), allocate buffers at the bound of the graph's
// dynamic size, upload the weights and initial state once, and record the whole graph into
// one command buffer. execute: copy inputs in, submit, wait, copy outputs out (no heap
// allocation and no recording at a size seen before; see below). The wait: the fence, or on
// discrete GPUs an event the command buffer sets after its outputs, polled by the calling
// thread for up to 4 ms before it blocks on the fence (it keeps a CPU core busy while the GPU
// works; the fence is waited for at the next use of the queue, so the driver's
// end-of-submission work overlaps the caller's).
//
// Dynamic size: a blob may mark dims of its tensors as the graph's one dynamic size (a
// sequence length; fb Tensor.dynamic_dims). execute reads it from the inputs; at the bound it
// runs the graph recorded at init; below it, a variant lowered and recorded for that size on
// its first use (new pipelines only for shapes not seen before; the pipeline cache keeps
// them), then kept: the last kMaxVariants sizes, so a decode loop (size 1) after a prefill
// records once. State tensors (a KV cache) live on the device across executes and are
// restored by reset_state().
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "delegates/vulkan/runtime/dispatch_fusion.h"
#include "delegates/vulkan/runtime/gpu_profiler.h"
#include "delegates/vulkan/runtime/shader_library.h"
#include "delegates/vulkan/runtime/vulkan_memory.h"
#include "delegates/vulkan/vulkan_shapes.h"
#include "runtime/backend/backend.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
class Program;
namespace vulkan {

class VulkanContext;

class VulkanGraph {
 public:
  // Constants with a slot (ConstantData.segment_index = k >= 0) are read in place with
  // ember::delegate_constant(init, specs, k); `init` carries the program (may lack one when
  // every constant is inline).
  static Result<std::unique_ptr<VulkanGraph>> create(VulkanContext* context, Span<const uint8_t> blob,
                                                     const BackendInitContext& init,
                                                     Span<const CompileSpecView> specs, Diagnostic* diag);
  ~VulkanGraph();
  VulkanGraph(const VulkanGraph&) = delete;
  VulkanGraph& operator=(const VulkanGraph&) = delete;

  // `args`: the delegate's inputs then outputs (tensors of the blob's dtypes and sizes).
  // `trace` (may be null): the call's tracing context; with a tracer and a graph created for
  // one, every dispatch is reported as a DelegateOp with its GPU time.
  Error execute(EValue** args, size_t num_args, Diagnostic* diag, const BackendExecuteContext* trace = nullptr);
  // Restores every State tensor to its initial bytes (Method::reset_state).
  Error reset_state(Diagnostic* diag);

  size_t num_dispatches() const { return dispatches_.size(); }
  // How many of the dispatches run `shader` (tests: which path a lowering took).
  size_t num_dispatches_of(ShaderId shader) const;
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // 0 for a graph without a dynamic size.
  int64_t dynamic_bound() const { return dynamic_bound_; }
  // Sizes below the bound lowered and recorded so far (at most kMaxVariants kept).
  size_t num_variants() const { return variants_.size(); }
  static constexpr size_t kMaxVariants = 8;
  // EMBER_VULKAN_PROFILE=1 at init: the per-dispatch GPU time summary so far ("" otherwise).
  std::string profile_report() const { return profiler_.report(); }
  void report_dispatches(const BackendExecuteContext& trace, uint64_t submit_ns, uint64_t done_ns) const;

  // Internal representation (public for the lowering helpers in vulkan_graph.cc).
  struct TensorInfo {
    uint8_t dtype = 0;  // fb::DType
    Sizes sizes;        // at the current dynamic size
    Sizes bound;        // the blob's sizes (at the dynamic size's bound)
    uint8_t dynamic_mask = 0;  // bit d: dim d is the graph's dynamic size
    uint8_t kind = 0;   // fb::TensorKind
    uint32_t io = 0;
    int root = -1;      // tensor owning the buffer (differs for views)
    bool available = false;
    Span<const uint8_t> constant;
    size_t nbytes = 0;         // at the delegate boundary (float32 for fp16 tensors)
    size_t device_nbytes = 0;  // of the device buffer (half of nbytes for fp16 tensors)
    bool fp16 = false;         // float tensor stored as fp16 on the device (fp16_storage.h)
    bool constant_fp16 = false;  // `constant` holds fp16 bytes already
    int buffer = -1;    // index into device_ (roots only)
  };
  struct Dispatch {
    ShaderId shader;
    std::vector<uint32_t> spec;
    std::vector<uint8_t> push;
    std::vector<int> bindings;  // tensor ids
    uint64_t invocations = 0;
    uint32_t workgroup = kWorkgroupSize;  // invocations per workgroup (local_size_x)
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
  };
  // The graph lowered and recorded for one dynamic size below the bound.
  struct Variant {
    int64_t size = 0;
    std::vector<TensorInfo> tensors;
    std::vector<Dispatch> dispatches;  // same count and bindings as the bound's (checked)
    VkCommandBuffer command_buffer = VK_NULL_HANDLE;
    uint64_t last_used = 0;
  };

 private:
  explicit VulkanGraph(VulkanContext* context) : context_(context) {}
  Error parse(Span<const uint8_t> blob, const BackendInitContext& init, Span<const CompileSpecView> specs,
              Diagnostic* diag);
  Error allocate(Diagnostic* diag);
  // Lowers the nodes for dynamic size `size` from parsed_ into *tensors / *dispatches.
  Error lower(int64_t size, std::vector<TensorInfo>* tensors, std::vector<Dispatch>* dispatches, Diagnostic* diag);
  // Uploads the initial bytes of `ids` (Constant / State tensors) with command buffer `cb`.
  Error upload(const std::vector<int>& ids, VkCommandBuffer cb, Diagnostic* diag);
  Error record(Diagnostic* diag);
  Error probe_submission(Diagnostic* diag);
  Error record_commands(VkCommandBuffer cb, const std::vector<TensorInfo>& tensors, const std::vector<Dispatch>& dispatches,
                        Diagnostic* diag);
  // The variant for `size` (made on first use); fills *tensors / *cb.
  Error select_variant(int64_t size, const std::vector<TensorInfo>** tensors, VkCommandBuffer* cb, Diagnostic* diag);
  Error check_positions(EValue** args, Diagnostic* diag) const;
  // The device buffer behind `tensor` (its root's: views share it; the same at every size).
  size_t buffer_index(int tensor) const { return static_cast<size_t>(tensors_[tensors_[tensor].root].buffer); }
  const DeviceBuffer& device_buffer(int tensor) const { return device_[buffer_index(tensor)]; }
  // A primary command buffer from command_pool_.
  Error new_command_buffer(VkCommandBuffer* cb, Diagnostic* diag);
  // Submits the graph's `cb` and returns once its outputs are readable: at the fence, or (with
  // done_event_) as soon as the host sees the event the command buffer sets after its output
  // copies, leaving the fence to settle() (the driver's end-of-submission work then overlaps the
  // host's: the caller's sampling, the next inputs).
  Error run_graph(VkCommandBuffer cb, Diagnostic* diag);
  // Waits for a submission run_graph() left pending; every other use of the queue, the fence,
  // a command buffer or the staging memory comes after it.
  Error settle(Diagnostic* diag);

  VulkanContext* context_;
  bool fp16_ = false;         // blob CompileOptions.fp16: fp16 storage (fp16_storage.h)
  std::vector<uint8_t> blob_copy_;  // the blob, when it was not 8-byte aligned in the program
  const uint8_t* graph_data_ = nullptr;  // the verified fb::Graph (in the program or blob_copy_)
  FusionPlan fusion_;               // made once from the graph's structure, used at every size
  std::vector<TensorInfo> parsed_;  // before lowering: sizes at the bound
  std::vector<TensorInfo> tensors_;  // lowered at the bound
  std::vector<Dispatch> dispatches_;
  int64_t dynamic_bound_ = 0;       // 0: no dynamic size
  std::vector<Variant> variants_;   // sizes below the bound, made on first use
  uint64_t use_clock_ = 0;
  std::vector<std::pair<int, int64_t>> positions_;  // attention position inputs, cache rows
  std::vector<int> states_;         // State tensor ids
  std::vector<int> inputs_;   // tensor id per input argument; -1: ignored argument
  std::vector<int> outputs_;  // tensor id per output argument; -1: a state output (left alone)
  BufferSet device_;
  BufferSet staging_;         // inputs then outputs; empty when device_ is host-visible
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;  // the graph at the bound
  VkCommandBuffer transfer_buffer_ = VK_NULL_HANDLE;  // state resets (staged devices)
  VkFence fence_ = VK_NULL_HANDLE;
  // Set by each graph command buffer after its outputs (run_graph): discrete GPUs, or
  // EMBER_VULKAN_EVENT_WAIT=1.
  VkEvent done_event_ = VK_NULL_HANDLE;
  bool pending_ = false;      // a submission whose fence is not waited for yet
  uint64_t spin_ns_ = 4'000'000;  // the event's polling bound (EMBER_VULKAN_EVENT_SPIN_US)
  GpuProfiler profiler_;      // EMBER_VULKAN_PROFILE=1 only (gpu_profiler.h)
};

}  // namespace vulkan
}  // namespace ember
