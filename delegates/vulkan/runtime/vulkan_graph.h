// VulkanGraph: one delegate partition made executable. init: parse + validate the blob
// (every shape is re-derived so a corrupt blob cannot make a shader index out of bounds),
// lower nodes to dispatches, allocate buffers, upload the weights once, and record the whole
// graph into one command buffer. execute: copy inputs in, submit, wait on a fence, copy
// outputs out (no heap allocation, no recording).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  size_t num_dispatches() const { return dispatches_.size(); }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // EMBER_VULKAN_PROFILE=1 at init: the per-dispatch GPU time summary so far ("" otherwise).
  std::string profile_report() const { return profiler_.report(); }
  void report_dispatches(const BackendExecuteContext& trace, uint64_t submit_ns, uint64_t done_ns) const;

  // Internal representation (public for the lowering helpers in vulkan_graph.cc).
  struct TensorInfo {
    uint8_t dtype = 0;  // fb::DType
    Sizes sizes;
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
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
  };

 private:
  explicit VulkanGraph(VulkanContext* context) : context_(context) {}
  Error parse(Span<const uint8_t> blob, const BackendInitContext& init, Span<const CompileSpecView> specs,
              Diagnostic* diag);
  Error allocate(Diagnostic* diag);
  Error upload_constants(Diagnostic* diag);
  Error record(Diagnostic* diag);
  const DeviceBuffer& device_buffer(int tensor) const {
    return device_[static_cast<size_t>(tensors_[tensors_[tensor].root].buffer)];
  }

  VulkanContext* context_;
  bool fp16_ = false;         // blob CompileOptions.fp16: fp16 storage (fp16_storage.h)
  std::vector<TensorInfo> tensors_;
  std::vector<Dispatch> dispatches_;
  std::vector<int> inputs_;   // tensor id per input argument; -1: ignored argument
  std::vector<int> outputs_;
  BufferSet device_;
  BufferSet staging_;         // inputs then outputs; empty when device_ is host-visible
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  GpuProfiler profiler_;      // EMBER_VULKAN_PROFILE=1 only (gpu_profiler.h)
};

}  // namespace vulkan
}  // namespace ember
