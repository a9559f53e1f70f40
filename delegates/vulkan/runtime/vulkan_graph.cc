#include "delegates/vulkan/runtime/vulkan_graph.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "delegates/vulkan/runtime/conv_gemm_plan.h"
#include "delegates/vulkan/runtime/fp16_storage.h"
#include "delegates/vulkan/runtime/graph_lowering.h"
#include "delegates/vulkan/runtime/tuning_env.h"
#include "delegates/vulkan/runtime/vulkan_context.h"
#include "delegates/vulkan/runtime/vulkan_status.h"
#include "delegates/vulkan/vulkan_graph_generated.h"
#include "runtime/core/flatbuffer_alignment.h"
#include "runtime/platform/platform.h"
#include "runtime/program/program.h"

namespace ember {
namespace vulkan {
namespace {

// The blob's 64-bit vectors (tensor sizes, expand sizes) are read in place: their elements must
// be 8-byte aligned, which the verifier does not check (runtime/core/flatbuffer_alignment.h).
bool vectors_aligned(const fb::Graph& g) {
  for (uint32_t i = 0; g.tensors() != nullptr && i < g.tensors()->size(); ++i) {
    if (!elements_aligned(g.tensors()->Get(i)->sizes())) return false;
  }
  for (uint32_t i = 0; g.nodes() != nullptr && i < g.nodes()->size(); ++i) {
    const fb::ExpandParams* p = g.nodes()->Get(i)->params_as_ExpandParams();
    if (p != nullptr && !elements_aligned(p->sizes())) return false;
  }
  return true;
}

using TensorInfo = VulkanGraph::TensorInfo;
using Dispatch = VulkanGraph::Dispatch;

constexpr int64_t kMaxElements = int64_t(1) << 31;  // shaders index with 32-bit ints

ScalarType to_scalar_type(uint8_t t) {
  switch (static_cast<fb::DType>(t)) {
    case fb::DType::Float32: return ScalarType::Float32;
    case fb::DType::Float16: return ScalarType::Float16;
    case fb::DType::Int32: return ScalarType::Int32;
    case fb::DType::Int64: return ScalarType::Int64;
    case fb::DType::Int8: return ScalarType::Int8;
    case fb::DType::UInt8: return ScalarType::UInt8;
  }
  return ScalarType::Float32;
}

// shader_label(), then " push(...)": the dispatch's push constants as int32 words, for the
// profiler's report.
std::string dispatch_label(const VulkanGraph::Dispatch& d) {
  std::string s = shader_label(d.shader, d.spec);
  for (size_t i = 0; i + sizeof(int32_t) <= d.push.size(); i += sizeof(int32_t)) {
    int32_t v;
    std::memcpy(&v, d.push.data() + i, sizeof(v));
    s += (i ? "," : " push(") + std::to_string(v);
  }
  return d.push.size() >= sizeof(int32_t) ? s + ")" : s;
}

}  // namespace

Result<std::unique_ptr<VulkanGraph>> VulkanGraph::create(VulkanContext* context,
                                                         Span<const uint8_t> blob,
                                                         const BackendInitContext& init,
                                                         Span<const CompileSpecView> specs, Diagnostic* diag) {
  std::unique_ptr<VulkanGraph> g(new VulkanGraph(context));
  // Phase times for EMBER_VULKAN_PROFILE=1 (start-up is what a second load should not pay).
  auto now = [] { return platform_monotonic_ns(); };
  auto ms = [](uint64_t a, uint64_t b) { return static_cast<double>(b - a) / 1e6; };
  const auto t0 = now();
  EMBER_TRY(g->parse(blob, init, specs, diag));
  EMBER_TRY(g->allocate(diag));
  const auto t_allocated = now();
  std::vector<int> consts;
  for (size_t i = 0; i < g->tensors_.size(); ++i) {
    const uint8_t k = g->tensors_[i].kind;
    if (k == static_cast<uint8_t>(fb::TensorKind::Constant) || k == static_cast<uint8_t>(fb::TensorKind::State))
      consts.push_back(static_cast<int>(i));
  }
  // The weight upload (staging copies, the transfer, its wait) runs on a helper thread while
  // this one creates every pipeline the graph needs (on several threads) before recording: on
  // an H200 ResNet18's 45 MB took ~35 ms and its pipelines ~15 ms, one after the other.
  // EMBER_VULKAN_UPLOAD_THREAD=0 keeps them in sequence. pthreads: without exceptions a failed
  // std::thread start aborts; a helper that cannot start leaves the upload to this thread.
  struct UploadJob {
    VulkanGraph* graph;
    const std::vector<int>* consts;
    Error error;
    Diagnostic diag;
    uint64_t ns;
  };
  UploadJob job{g.get(), &consts, Error::Ok, {}, 0};
  void* (*run_upload)(void*) = [](void* p) -> void* {
    UploadJob* j = static_cast<UploadJob*>(p);
    const uint64_t start = platform_monotonic_ns();
    j->error = j->graph->upload(*j->consts, j->graph->command_buffer_, &j->diag);
    j->ns = platform_monotonic_ns() - start;
    return nullptr;
  };
  pthread_t uploader;
  const bool threaded =
      tuning_choice("EMBER_VULKAN_UPLOAD_THREAD", true) && pthread_create(&uploader, nullptr, run_upload, &job) == 0;
  if (!threaded) run_upload(&job);
  const auto t_uploaded = now();  // in sequence: after the upload; threaded: when it started
  PipelineCache& pipelines = context->pipelines();
  const size_t created_before = pipelines.stats().created;
  std::vector<PipelineKey> keys;
  for (const Dispatch& d : g->dispatches_) keys.push_back(PipelineKey{d.shader, d.spec, d.workgroup});
  const Error prepared = pipelines.prepare(keys, diag);
  const auto t_pipelines = now();
  if (threaded) pthread_join(uploader, nullptr);
  if (job.error != Error::Ok) return fail(diag, job.error, "%s", job.diag.text());
  EMBER_TRY(prepared);
  const auto t_prepared = now();
  const bool traced = init.event_tracer != nullptr;
  if (GpuProfiler::requested() || traced) {
    std::vector<std::string> labels;
    for (const Dispatch& d : g->dispatches_) labels.push_back(dispatch_label(d));
    const VkPhysicalDeviceProperties& props = context->properties();
    EMBER_TRY(g->profiler_.init(context->device(), context->physical_device(), context->queue_family(),
                                props.limits.timestampPeriod, std::move(labels), diag,
                                /*quiet=*/!GpuProfiler::requested(), /*span=*/!traced && GpuProfiler::span_requested()));
  }
  EMBER_TRY(g->record(diag));
  const auto t_recorded = now();
  pipelines.save();
  if (!traced && GpuProfiler::span_requested()) EMBER_TRY(g->probe_submission(diag));
  if (GpuProfiler::requested()) {
    const PipelineCacheStats st = pipelines.stats();
    std::fprintf(stderr,
                 "ember vulkan init: %.2f ms = parse + allocate %.2f, weight upload %.2f %s pipelines %.2f (%zu new, "
                 "%zu dispatches), record %.2f, cache save %.2f; pipeline cache file %s: %s%s%s\n",
                 ms(t0, now()), ms(t0, t_allocated), static_cast<double>(job.ns) / 1e6,
                 threaded ? "beside" : "then", ms(t_uploaded, t_pipelines),
                 st.created - created_before, keys.size(), ms(t_prepared, t_recorded), ms(t_recorded, now()),
                 st.file.empty() ? "(off)" : st.file.c_str(), st.load_status.c_str(),
                 st.save_status.empty() ? "" : ", ", st.save_status.c_str());
  }
  return g;
}

Error VulkanGraph::parse(Span<const uint8_t> blob, const BackendInitContext& init, Span<const CompileSpecView> specs,
                         Diagnostic* diag) {
  // FlatBuffers needs 8-byte alignment for 64-bit fields; an inline blob may be less aligned.
  std::vector<uint8_t>& copy = blob_copy_;
  const uint8_t* data = blob.data();
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    copy.assign(blob.begin(), blob.end());
    data = copy.data();
  }
  graph_data_ = data;
  if (blob.size() < 8 || !fb::GraphBufferHasIdentifier(data)) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: missing the EVK1 identifier (%zu bytes)", blob.size());
  }
  flatbuffers::Verifier verifier(data, blob.size());
  if (!fb::VerifyGraphBuffer(verifier)) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: FlatBuffer verification failed");
  }
  const fb::Graph* g = fb::GetGraph(data);
  if (g->version() != 1) {
    return fail(diag, Error::VersionMismatch, "vulkan blob: version %u, this runtime reads version 1", g->version());
  }
  fp16_ = g->options() != nullptr && g->options()->fp16();
  if (fp16_) EMBER_TRY(require_fp16_storage(*context_, diag));
  if (!vectors_aligned(*g)) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: a tensor's or an expand's sizes vector is misaligned");
  }
  fusion_ = plan_fusions(*g);
  if (g->tensors() == nullptr) return fail(diag, Error::InvalidProgram, "vulkan blob: no tensor table");
  const uint32_t ni = g->input_args() != 0 ? g->input_args() : g->num_inputs(), no = g->num_outputs();
  if (g->num_inputs() > ni || g->num_inputs() > g->tensors()->size() || no > g->tensors()->size()) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: more inputs/outputs than tensors");
  }
  inputs_.assign(ni, -1);
  outputs_.assign(no, -1);
  tensors_.resize(g->tensors()->size());
  for (uint32_t i = 0; i < g->tensors()->size(); ++i) {
    const fb::Tensor* ft = g->tensors()->Get(i);
    TensorInfo& t = tensors_[i];
    if (ft->id() != i) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has id %u", i, ft->id());
    size_t es = dtype_size(ft->dtype());
    if (es == 0) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has an unknown dtype", i);
    t.dtype = static_cast<uint8_t>(ft->dtype());
    t.kind = static_cast<uint8_t>(ft->kind());
    t.io = ft->io_index();
    t.root = static_cast<int>(i);
    if (ft->sizes() != nullptr) t.sizes.assign(ft->sizes()->begin(), ft->sizes()->end());
    t.bound = t.sizes;
    if (ft->dynamic_dims() != nullptr) {
      for (uint8_t d : *ft->dynamic_dims()) {
        if (d >= t.sizes.size()) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has dynamic dim %u of %zu", i, d, t.sizes.size());
        if (ft->kind() == fb::TensorKind::Constant || ft->kind() == fb::TensorKind::State)
          return fail(diag, Error::InvalidProgram, "vulkan blob: constant or state tensor %u has a dynamic dim", i);
        if (dynamic_bound_ != 0 && t.sizes[d] != dynamic_bound_)
          return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u's dynamic dim %u has bound %lld, others %lld", i, d,
                      static_cast<long long>(t.sizes[d]), static_cast<long long>(dynamic_bound_));
        dynamic_bound_ = t.sizes[d];
        t.dynamic_mask = static_cast<uint8_t>(t.dynamic_mask | (1u << d));
      }
    }
    if (t.sizes.size() > static_cast<size_t>(kMaxDims)) {
      return fail(diag, Error::NotSupported, "vulkan: tensor %u has rank %zu; at most %d is supported", i,
                  t.sizes.size(), kMaxDims);
    }
    int64_t n = 1;
    for (int64_t s : t.sizes) {
      if (s < 0 || s >= kMaxElements) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has a bad size", i);
      if (s == 0) return fail(diag, Error::NotSupported, "vulkan: tensor %u has zero elements", i);
      n *= s;
      if (n >= kMaxElements) {
        return fail(diag, Error::NotSupported, "vulkan: tensor %u has more than 2^31 elements", i);
      }
    }
    t.nbytes = t.device_nbytes = static_cast<size_t>(n) * es;
    switch (ft->kind()) {
      case fb::TensorKind::Internal:
        break;
      case fb::TensorKind::Input:
        if (t.io >= ni || inputs_[t.io] >= 0) return fail(diag, Error::InvalidProgram, "vulkan blob: bad input index %u", t.io);
        inputs_[t.io] = static_cast<int>(i);
        t.available = true;
        break;
      case fb::TensorKind::Output:
        if (t.io >= no || outputs_[t.io] >= 0) return fail(diag, Error::InvalidProgram, "vulkan blob: bad output index %u", t.io);
        outputs_[t.io] = static_cast<int>(i);
        break;
      case fb::TensorKind::State:
        states_.push_back(static_cast<int>(i));
        [[fallthrough]];  // initial bytes as a constant's
      case fb::TensorKind::Constant: {
        const fb::ConstantData* c = ft->constant();
        if (c == nullptr) return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u has no data", i);
        if (c->segment_index() >= 0) {
          // segment_index is the delegate's constant slot (kConstantSegmentsSpec).
          Result<Span<const uint8_t>> seg = delegate_constant(init, specs, static_cast<uint32_t>(c->segment_index()));
          if (!seg.ok()) {
            return fail(diag, Error::InvalidProgram,
                        "vulkan blob: constant %u refers to constant slot %d, which the program does not provide "
                        "(missing %s compile spec, program or segment)", i, c->segment_index(), kConstantSegmentsSpec);
          }
          if (c->nbytes() != t.nbytes || c->offset() > seg->size() || seg->size() - c->offset() < c->nbytes()) {
            return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u (%zu bytes) does not fit constant slot %d", i, t.nbytes, c->segment_index());
          }
          t.constant = Span<const uint8_t>(seg->data() + c->offset(), t.nbytes);
        } else {
          if (c->inline_data() == nullptr || c->inline_data()->size() != t.nbytes) {
            return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u has %u inline bytes, expected %zu", i,
                        c->inline_data() ? c->inline_data()->size() : 0u, t.nbytes);
          }
          // Points into the blob, which lives as long as the program (a copy only while parsing).
          if (!copy.empty()) {
            t.constant = Span<const uint8_t>(blob.data() + (c->inline_data()->data() - data), t.nbytes);
          } else {
            t.constant = Span<const uint8_t>(c->inline_data()->data(), t.nbytes);
          }
        }
        t.available = true;
        break;
      }
      default:
        return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has an unknown kind", i);
    }
  }
  std::vector<bool> state_output(no, false);
  if (g->state_outputs() != nullptr) {
    for (uint32_t k : *g->state_outputs()) {
      if (k >= no || state_output[k] || outputs_[k] >= 0)
        return fail(diag, Error::InvalidProgram, "vulkan blob: bad state output index %u", k);
      state_output[k] = true;
    }
  }
  uint32_t claimed = 0;
  for (uint32_t k = 0; k < ni; ++k) claimed += inputs_[k] >= 0 ? 1 : 0;
  if (claimed != g->num_inputs()) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: %u input tensors, num_inputs says %u", claimed, g->num_inputs());
  }
  for (uint32_t k = 0; k < no; ++k)
    if (outputs_[k] < 0 && !state_output[k]) return fail(diag, Error::InvalidProgram, "vulkan blob: output %u has no tensor", k);

  if (fp16_) EMBER_TRY(prepare_fp16_tensors(tensors_, diag));
  parsed_ = tensors_;
  EMBER_TRY(lower(dynamic_bound_, &tensors_, &dispatches_, diag));
  for (uint32_t k = 0; k < no; ++k) {
    if (outputs_[k] >= 0 && !tensors_[outputs_[k]].available) {
      return fail(diag, Error::InvalidProgram, "vulkan blob: output %u (tensor %d) is never produced", k, outputs_[k]);
    }
  }
  return Error::Ok;
}

Error VulkanGraph::allocate(Diagnostic* diag) {
  std::vector<VkDeviceSize> sizes;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].root == static_cast<int>(i)) {
      tensors_[i].buffer = static_cast<int>(sizes.size());
      sizes.push_back(tensors_[i].device_nbytes);
    }
  }
  EMBER_TRY(device_.create(context_, sizes, MemoryClass::Device, diag));
  if (!device_.host_visible()) {
    std::vector<VkDeviceSize> io;
    for (int t : inputs_) io.push_back(t >= 0 ? tensors_[t].device_nbytes : 0);
    for (int t : outputs_) io.push_back(t >= 0 ? tensors_[t].device_nbytes : 0);
    EMBER_TRY(staging_.create(context_, io, MemoryClass::Staging, diag));
  }
  VkDevice dev = context_->device();
  VkCommandPoolCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = context_->queue_family();
  EMBER_VK_TRY(diag, vkCreateCommandPool(dev, &cp, nullptr, &command_pool_), "creating a command pool");
  EMBER_TRY(new_command_buffer(&command_buffer_, diag));
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  EMBER_VK_TRY(diag, vkCreateFence(dev, &fi, nullptr, &fence_), "creating a fence");
  // Discrete GPUs: the host spins on an event the graph sets after its outputs, rather than
  // blocking on the fence. On an H200 the fence came ~70 us after the work (the driver's
  // end-of-submission work and the wake-up): 1.1B Llama int4 decoding went 866 -> 935 tok/s.
  // The cost is a CPU core busy while the GPU works, so integrated and mobile GPUs block.
  // EMBER_VULKAN_EVENT_WAIT=0 / 1 overrides.
  const bool discrete = context_->properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  if (tuning_choice("EMBER_VULKAN_EVENT_WAIT", discrete)) {
    VkEventCreateInfo ei{};
    ei.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO;
    EMBER_VK_TRY(diag, vkCreateEvent(dev, &ei, nullptr, &done_event_), "creating an event");
    const long spin_us = tuning_number("EMBER_VULKAN_EVENT_SPIN_US");  // 0: unset
    if (spin_us > 0) spin_ns_ = static_cast<uint64_t>(spin_us) * 1000;
  }
  return Error::Ok;
}

Error VulkanGraph::settle(Diagnostic* diag) {
  if (!pending_) return Error::Ok;
  pending_ = false;
  EMBER_VK_TRY(diag, vkWaitForFences(context_->device(), 1, &fence_, VK_TRUE, UINT64_MAX), "waiting for the GPU");
  EMBER_VK_TRY(diag, vkResetFences(context_->device(), 1, &fence_), "resetting a fence");
  return Error::Ok;
}

Error VulkanGraph::run_graph(VkCommandBuffer cb, Diagnostic* diag) {
  EMBER_TRY(settle(diag));
  if (done_event_ == VK_NULL_HANDLE) return context_->submit_and_wait(cb, fence_, diag);
  VkDevice dev = context_->device();
  EMBER_VK_TRY(diag, vkResetEvent(dev, done_event_), "resetting an event");
  EMBER_TRY(context_->submit(cb, fence_, diag));
  pending_ = true;
  // Spin on the event for up to spin_ns_, checking the fence now and then (a submission that
  // completed without setting the event ends the wait instead of hanging it); past that, block on
  // the fence: a long execute gains nothing from the ~70 us, and a core spinning for
  // milliseconds is waste.
  const uint64_t start = platform_monotonic_ns();
  for (uint32_t polls = 1;; ++polls) {
    const VkResult r = vkGetEventStatus(dev, done_event_);
    if (r == VK_EVENT_SET) return Error::Ok;
    if (r != VK_EVENT_RESET) EMBER_VK_TRY(diag, r, "waiting for the graph's event");
    if (polls % 1024 == 0) {
      const VkResult f = vkGetFenceStatus(dev, fence_);
      if (f == VK_SUCCESS) return Error::Ok;
      if (f != VK_NOT_READY) EMBER_VK_TRY(diag, f, "waiting for the GPU");
      if (platform_monotonic_ns() - start > spin_ns_) return settle(diag);
    }
  }
}

Error VulkanGraph::new_command_buffer(VkCommandBuffer* cb, Diagnostic* diag) {
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  EMBER_VK_TRY(diag, vkAllocateCommandBuffers(context_->device(), &ca, cb), "allocating a command buffer");
  return Error::Ok;
}

Error VulkanGraph::upload(const std::vector<int>& consts, VkCommandBuffer cb, Diagnostic* diag) {
  if (consts.empty()) return Error::Ok;
  if (device_.host_visible()) {
    for (int c : consts) write_device_bytes(tensors_[c], tensors_[c].constant.data(), device_buffer(c).mapped);
    return Error::Ok;
  }
  BufferSet staging;
  std::vector<VkDeviceSize> sizes;
  for (int c : consts) sizes.push_back(tensors_[c].device_nbytes);
  EMBER_TRY(staging.create(context_, sizes, MemoryClass::Staging, diag));
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(diag, vkBeginCommandBuffer(cb, &bi), "recording the weight upload");
  for (size_t i = 0; i < consts.size(); ++i) {
    const TensorInfo& t = tensors_[consts[i]];
    write_device_bytes(t, t.constant.data(), staging[i].mapped);
    VkBufferCopy region{0, 0, t.device_nbytes};
    vkCmdCopyBuffer(cb, staging[i].buffer, device_buffer(consts[i]).buffer, 1, &region);
  }
  EMBER_VK_TRY(diag, vkEndCommandBuffer(cb), "recording the weight upload");
  EMBER_TRY(settle(diag));
  EMBER_TRY(context_->submit_and_wait(cb, fence_, diag));
  EMBER_VK_TRY(diag, vkResetCommandBuffer(cb, 0), "resetting a command buffer");
  return Error::Ok;
}

Error VulkanGraph::reset_state(Diagnostic* diag) {
  if (states_.empty()) return Error::Ok;
  EMBER_TRY(settle(diag));
  if (!device_.host_visible() && transfer_buffer_ == VK_NULL_HANDLE) EMBER_TRY(new_command_buffer(&transfer_buffer_, diag));
  return upload(states_, transfer_buffer_, diag);
}

size_t VulkanGraph::num_dispatches_of(ShaderId shader) const {
  size_t n = 0;
  for (const Dispatch& d : dispatches_) n += d.shader == shader ? 1 : 0;
  return n;
}

Error VulkanGraph::lower(int64_t size, std::vector<TensorInfo>* tensors, std::vector<Dispatch>* dispatches, Diagnostic* diag) {
  *tensors = parsed_;
  if (size != dynamic_bound_) {
    for (TensorInfo& t : *tensors) {
      if (t.dynamic_mask == 0) continue;
      Sizes s = t.bound;
      for (size_t d = 0; d < s.size(); ++d)
        if (t.dynamic_mask & (1u << d)) s[d] = size;
      set_tensor_sizes(t, s);
    }
  }
  LoweringResult r;
  const fb::Graph& g = *fb::GetGraph(graph_data_);
  const VkPhysicalDeviceLimits& lim = context_->properties().limits;
  LoweringLimits limits;
  limits.max_shared_bytes = lim.maxComputeSharedMemorySize;
  limits.max_workgroup = std::min(lim.maxComputeWorkGroupSize[0], lim.maxComputeWorkGroupInvocations);
  // EMBER_VULKAN_COOP_MATRIX=0: the fp32-arithmetic GEMM (measuring one against the other).
  limits.coop_matrix_f16 = fp16_ && context_->cooperative_matrix_f16() && lim.maxComputeSharedMemorySize >= kConvGemmCoopSharedBytes &&
                           tuning_choice("EMBER_VULKAN_COOP_MATRIX", true);
  EMBER_TRY(lower_nodes(g, fusion_, size != dynamic_bound_, limits, *tensors, &r, diag));
  if (fp16_) use_fp16_shaders(*tensors, r.dispatches);
  for (const Dispatch& d : r.dispatches) {
    uint64_t groups = (d.invocations + d.workgroup - 1) / d.workgroup;
    uint64_t x = groups < lim.maxComputeWorkGroupCount[0] ? groups : lim.maxComputeWorkGroupCount[0];
    if (x > 0 && (groups + x - 1) / x > lim.maxComputeWorkGroupCount[1]) {
      return fail(diag, Error::NotSupported, "vulkan: a %s dispatch is too large for this device",
                  shader_info(d.shader).name);
    }
  }
  *dispatches = std::move(r.dispatches);
  positions_ = std::move(r.positions);
  return Error::Ok;
}

namespace {
void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
             VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}
}  // namespace

Error VulkanGraph::record(Diagnostic* diag) {
  VkDevice dev = context_->device();
  PipelineCache& cache = context_->pipelines();
  // Descriptor sets.
  if (!dispatches_.empty()) {
    uint32_t num_buffers = 0;
    for (const Dispatch& d : dispatches_) num_buffers += static_cast<uint32_t>(d.bindings.size());
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, num_buffers};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = static_cast<uint32_t>(dispatches_.size());
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    EMBER_VK_TRY(diag, vkCreateDescriptorPool(dev, &pi, nullptr, &descriptor_pool_), "creating a descriptor pool");
  }
  for (Dispatch& d : dispatches_) {
    EMBER_ASSIGN_OR_RETURN(ShaderObjects so, cache.shader(d.shader, diag));
    EMBER_ASSIGN_OR_RETURN(d.pipeline, cache.pipeline(d.shader, d.spec, d.workgroup, diag));
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = descriptor_pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &so.set_layout;
    EMBER_VK_TRY(diag, vkAllocateDescriptorSets(dev, &ai, &d.set), "allocating a descriptor set");
    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    const uint32_t want = shader_info(d.shader).num_bindings;
    if (d.bindings.size() != want || want > kMaxBindings)
      return fail(diag, Error::Internal, "vulkan: a dispatch binds %zu buffers, its shader %u", d.bindings.size(), want);
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      infos[i] = VkDescriptorBufferInfo{device_buffer(d.bindings[i]).buffer, 0, VK_WHOLE_SIZE};
      writes[i] = VkWriteDescriptorSet{};
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = d.set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(dev, static_cast<uint32_t>(d.bindings.size()), writes, 0, nullptr);
  }

  return record_commands(command_buffer_, tensors_, dispatches_, diag);
}

// EMBER_VULKAN_PROFILE=span: the round trip of an empty command buffer (submission, the fence,
// the wake-up), the median of 32, for comparing with an execute's time from submission to the
// fence beyond the GPU's work.
Error VulkanGraph::probe_submission(Diagnostic* diag) {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  EMBER_TRY(new_command_buffer(&cb, diag));
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  EMBER_VK_TRY(diag, vkBeginCommandBuffer(cb, &bi), "recording the submission probe");
  EMBER_VK_TRY(diag, vkEndCommandBuffer(cb), "recording the submission probe");
  EMBER_TRY(settle(diag));
  std::vector<uint64_t> ns;
  for (int i = 0; i < 32; ++i) {
    const uint64_t start = platform_monotonic_ns();
    EMBER_TRY(context_->submit_and_wait(cb, fence_, diag));
    ns.push_back(platform_monotonic_ns() - start);
  }
  vkFreeCommandBuffers(context_->device(), command_pool_, 1, &cb);
  std::nth_element(ns.begin(), ns.begin() + 16, ns.end());
  std::fprintf(stderr, "ember vulkan span: an empty submission's round trip %.1f us (median of 32)\n",
               static_cast<double>(ns[16]) / 1e3);
  return Error::Ok;
}

// The whole graph for one dynamic size, recorded once.
Error VulkanGraph::record_commands(VkCommandBuffer cb, const std::vector<TensorInfo>& tensors,
                                   const std::vector<Dispatch>& dispatches, Diagnostic* diag) {
  PipelineCache& cache = context_->pipelines();
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  EMBER_VK_TRY(diag, vkBeginCommandBuffer(cb, &bi), "recording the graph");
  profiler_.record_begin(cb);
  const bool staged = !device_.host_visible();
  if (staged && !inputs_.empty()) {
    for (size_t k = 0; k < inputs_.size(); ++k) {
      if (inputs_[k] < 0) continue;
      VkBufferCopy region{0, 0, tensors[inputs_[k]].device_nbytes};
      vkCmdCopyBuffer(cb, staging_[k].buffer, device_buffer(inputs_[k]).buffer, 1, &region);
    }
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  }
  const VkPhysicalDeviceLimits& lim = context_->properties().limits;
  profiler_.record_start(cb);
  // A barrier only before a dispatch that reads or writes a buffer written since the last one,
  // or writes one read since (every shader writes its last num_outputs bindings and reads the
  // others), so independent dispatches overlap. With the profiler on, one between every two
  // dispatches (its timestamps time them one by one).
  std::vector<uint8_t> written(device_.size(), 0), read(device_.size(), 0);
  for (size_t di = 0; di < dispatches.size(); ++di) {
    const Dispatch& d = dispatches[di];
    const ShaderInfo& info = shader_info(d.shader);
    const size_t first_output = d.bindings.size() > info.num_outputs ? d.bindings.size() - info.num_outputs : 0;
    bool hazard = di > 0 && profiler_.per_dispatch();
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      const size_t buf = buffer_index(d.bindings[i]);
      hazard = hazard || written[buf] || (i >= first_output && read[buf]);
    }
    if (hazard) {
      barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      std::fill(written.begin(), written.end(), 0);
      std::fill(read.begin(), read.end(), 0);
    }
    // Reads first: a buffer bound both as an input and an output counts as written.
    for (size_t i = 0; i < first_output; ++i) read[buffer_index(d.bindings[i])] = 1;
    for (size_t i = first_output; i < d.bindings.size(); ++i) written[buffer_index(d.bindings[i])] = 1;
    EMBER_ASSIGN_OR_RETURN(ShaderObjects so, cache.shader(d.shader, diag));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, so.layout, 0, 1, &d.set, 0, nullptr);
    if (info.push_constant_bytes > 0) {
      uint8_t push[128] = {0};
      std::memcpy(push, d.push.data(), d.push.size() < sizeof(push) ? d.push.size() : sizeof(push));
      vkCmdPushConstants(cb, so.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, info.push_constant_bytes, push);
    }
    uint64_t groups = (d.invocations + d.workgroup - 1) / d.workgroup;
    uint64_t x = groups < lim.maxComputeWorkGroupCount[0] ? groups : lim.maxComputeWorkGroupCount[0];
    uint64_t y = x == 0 ? 0 : (groups + x - 1) / x;
    if (x > 0) vkCmdDispatch(cb, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1);
    profiler_.record_after(cb, di);
  }
  if (staged) {
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    for (size_t k = 0; k < outputs_.size(); ++k) {
      if (outputs_[k] < 0) continue;  // a state output: the state stays on the device
      VkBufferCopy region{0, 0, tensors[outputs_[k]].device_nbytes};
      vkCmdCopyBuffer(cb, device_buffer(outputs_[k]).buffer, staging_[inputs_.size() + k].buffer, 1, &region);
    }
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else {
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  profiler_.record_end(cb);
  if (done_event_ != VK_NULL_HANDLE) vkCmdSetEvent(cb, done_event_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  EMBER_VK_TRY(diag, vkEndCommandBuffer(cb), "recording the graph");
  return Error::Ok;
}

// GPU times are durations on the GPU's clock: laid back to back from the submission on the
// CPU's monotonic clock and clamped to the end of the wait (estimated starts).
void VulkanGraph::report_dispatches(const BackendExecuteContext& trace, uint64_t submit_ns, uint64_t done_ns) const {
  double t = static_cast<double>(submit_ns);
  for (size_t i = 0; i < profiler_.num_dispatches(); ++i) {
    TraceEvent e;
    e.kind = TraceEventKind::DelegateOp;
    e.estimated_start = true;
    e.run = trace.run;
    e.instruction = trace.instruction;
    e.delegate_op = static_cast<uint32_t>(i);
    e.delegate_index = trace.delegate_index;
    e.name = profiler_.label(i);
    e.debug_name = trace.debug_name;
    e.start_ns = std::min(static_cast<uint64_t>(t), done_ns);
    t += profiler_.last_ns(i);
    e.end_ns = std::min(static_cast<uint64_t>(t), done_ns);
    trace.event_tracer->record(e);
  }
}

// Positions come from the caller: a cache row outside [0, S) is refused here, before the GPU
// could write outside the cache (the shaders skip such rows too).
Error VulkanGraph::check_positions(EValue** args, Diagnostic* diag) const {
  for (const auto& [id, rows] : positions_) {
    const TensorInfo& t = parsed_[static_cast<size_t>(id)];
    const Tensor& a = *args[t.io]->as_tensor;
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = a.dtype == ScalarType::Int64 ? a.data_as<int64_t>()[i] : a.data_as<int32_t>()[i];
      if (p < 0 || p >= rows) {
        return fail(diag, Error::InvalidArgument,
                    "vulkan: position %lld (input %u, element %lld) is outside the KV cache's %lld rows; keep positions "
                    "below the exported cache length", static_cast<long long>(p), t.io, static_cast<long long>(i),
                    static_cast<long long>(rows));
      }
    }
  }
  return Error::Ok;
}

Error VulkanGraph::select_variant(int64_t size, const std::vector<TensorInfo>** tensors, VkCommandBuffer* cb,
                                  Diagnostic* diag) {
  if (size == dynamic_bound_) {
    *tensors = &tensors_;
    *cb = command_buffer_;
    return Error::Ok;
  }
  ++use_clock_;
  for (Variant& v : variants_) {
    if (v.size == size) {
      v.last_used = use_clock_;
      *tensors = &v.tensors;
      *cb = v.command_buffer;
      return Error::Ok;
    }
  }
  // First use of this size: lower, check it binds what the bound's dispatches bind (so their
  // descriptor sets serve it), create any new pipelines, record.
  Variant v;
  v.size = size;
  v.last_used = use_clock_;
  EMBER_TRY(lower(size, &v.tensors, &v.dispatches, diag));
  if (v.dispatches.size() != dispatches_.size()) {
    return fail(diag, Error::NotSupported, "vulkan: the graph lowers to %zu dispatches at size %lld, %zu at its bound",
                v.dispatches.size(), static_cast<long long>(size), dispatches_.size());
  }
  std::vector<PipelineKey> keys;
  for (size_t i = 0; i < v.dispatches.size(); ++i) {
    Dispatch& d = v.dispatches[i];
    if (d.bindings != dispatches_[i].bindings || d.shader != dispatches_[i].shader) {  // the set layout: the shader's
      return fail(diag, Error::NotSupported, "vulkan: dispatch %zu differs between size %lld and the bound", i,
                  static_cast<long long>(size));
    }
    d.set = dispatches_[i].set;
    keys.push_back(PipelineKey{d.shader, d.spec, d.workgroup});
  }
  PipelineCache& pipelines = context_->pipelines();
  EMBER_TRY(pipelines.prepare(keys, diag));
  for (Dispatch& d : v.dispatches) {
    EMBER_ASSIGN_OR_RETURN(d.pipeline, pipelines.pipeline(d.shader, d.spec, d.workgroup, diag));
  }
  EMBER_TRY(settle(diag));  // the command buffer may be re-recorded, the pipelines' cache saved
  if (variants_.size() >= kMaxVariants) {  // reuse the least recently used one's command buffer
    size_t lru = 0;
    for (size_t i = 1; i < variants_.size(); ++i)
      if (variants_[i].last_used < variants_[lru].last_used) lru = i;
    v.command_buffer = variants_[lru].command_buffer;
    EMBER_VK_TRY(diag, vkResetCommandBuffer(v.command_buffer, 0), "resetting a command buffer");
    variants_.erase(variants_.begin() + static_cast<long>(lru));
  } else {
    EMBER_TRY(new_command_buffer(&v.command_buffer, diag));
  }
  Error e = record_commands(v.command_buffer, v.tensors, v.dispatches, diag);
  variants_.push_back(std::move(v));  // kept even on failure: its command buffer is the pool's
  if (e != Error::Ok) {
    variants_.back().size = -1;  // never selected again
    return e;
  }
  pipelines.save();
  *tensors = &variants_.back().tensors;
  *cb = variants_.back().command_buffer;
  return Error::Ok;
}

Error VulkanGraph::execute(EValue** args, size_t num_args, Diagnostic* diag, const BackendExecuteContext* trace) {
  const uint64_t start_ns = profiler_.enabled() ? platform_monotonic_ns() : 0;
  const size_t ni = inputs_.size(), no = outputs_.size();
  if (num_args != ni + no) {
    return fail(diag, Error::InvalidArgument, "vulkan: delegate expects %zu inputs + %zu outputs, got %zu args", ni, no, num_args);
  }
  // The dynamic size, from the inputs' dynamic dims (every other dim as exported).
  int64_t size = dynamic_bound_;
  bool sized = false;
  for (size_t k = 0; k < ni + no; ++k) {
    if (k < ni ? inputs_[k] < 0 : outputs_[k - ni] < 0) continue;  // an ignored argument
    const TensorInfo& t = parsed_[static_cast<size_t>(k < ni ? inputs_[k] : outputs_[k - ni])];
    if (args[k] == nullptr || !args[k]->is_tensor() || args[k]->as_tensor == nullptr) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu is not a tensor", k);
    }
    Tensor& a = *args[k]->as_tensor;
    if (a.dtype != to_scalar_type(t.dtype)) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu is %s, expected %s", k,
                  scalar_type_name(a.dtype), scalar_type_name(to_scalar_type(t.dtype)));
    }
    if (k >= ni) continue;
    bool same = a.rank == t.bound.size();
    for (size_t d = 0; same && d < t.bound.size(); ++d) {
      if (t.dynamic_mask & (1u << d)) {
        const int64_t v = a.sizes[d];
        if (v < 1 || v > t.bound[d] || (sized && v != size)) {
          return fail(diag, Error::InvalidArgument,
                      "vulkan: input %zu has size %lld in dim %zu, the dynamic size (1..%lld%s)", k,
                      static_cast<long long>(v), d, static_cast<long long>(t.bound[d]),
                      sized ? ", the same in every input" : "");
        }
        size = v;
        sized = true;
      } else {
        same = a.sizes[d] == t.bound[d];
      }
    }
    if (!same) return fail(diag, Error::InvalidArgument, "vulkan: input %zu has a different shape than exported", k);
  }
  const std::vector<TensorInfo>* ts = nullptr;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  EMBER_TRY(select_variant(size, &ts, &cb, diag));
  for (size_t k = 0; k < ni + no; ++k) {
    const int id = k < ni ? inputs_[k] : outputs_[k - ni];
    if (id < 0) continue;
    const TensorInfo& t = (*ts)[static_cast<size_t>(id)];
    Tensor& a = *args[k]->as_tensor;
    if (k >= ni) {
      Error e = resize_tensor(a, Span<const int64_t>(t.sizes.data(), t.sizes.size()));
      if (e != Error::Ok) return fail(diag, e, "vulkan: output %zu cannot hold the delegate's output shape", k - ni);
    }
    if (a.data == nullptr || a.nbytes() != t.nbytes) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu has no data", k);
    }
  }
  EMBER_TRY(check_positions(args, diag));
  EMBER_TRY(settle(diag));  // the previous execute's submission no longer reads the inputs
  const bool staged = !device_.host_visible();
  for (size_t k = 0; k < ni; ++k) {
    if (inputs_[k] < 0) continue;
    void* dst = staged ? staging_[k].mapped : device_buffer(inputs_[k]).mapped;
    write_device_bytes((*ts)[static_cast<size_t>(inputs_[k])], args[k]->as_tensor->data, dst);
  }
  const bool report = trace != nullptr && trace->event_tracer != nullptr && profiler_.per_dispatch();
  const uint64_t submit_ns = profiler_.enabled() ? platform_monotonic_ns() : 0;
  EMBER_TRY(run_graph(cb, diag));
  const uint64_t done_ns = profiler_.enabled() ? platform_monotonic_ns() : 0;
  if (report) report_dispatches(*trace, submit_ns, done_ns);
  for (size_t k = 0; k < no; ++k) {
    if (outputs_[k] < 0) continue;
    const void* src = staged ? staging_[ni + k].mapped : device_buffer(outputs_[k]).mapped;
    read_device_bytes((*ts)[static_cast<size_t>(outputs_[k])], src, args[ni + k]->as_tensor->data);
  }
  if (profiler_.enabled()) {
    const uint64_t end_ns = platform_monotonic_ns();
    EMBER_TRY(profiler_.collect({end_ns - start_ns, submit_ns - start_ns, done_ns - submit_ns, end_ns - done_ns}, diag));
  }
  return Error::Ok;
}

VulkanGraph::~VulkanGraph() {
  VkDevice dev = context_->device();
  if (pending_) vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX);
  if (done_event_ != VK_NULL_HANDLE) vkDestroyEvent(dev, done_event_, nullptr);
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(dev, fence_, nullptr);
  if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, command_pool_, nullptr);
  if (descriptor_pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
  staging_.reset();
  device_.reset();
}

}  // namespace vulkan
}  // namespace ember
