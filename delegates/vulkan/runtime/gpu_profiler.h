// Per-dispatch GPU timing for the Vulkan delegate, opt-in with EMBER_VULKAN_PROFILE=1 in the
// environment (read once per graph at init). A timestamp query is written before the first
// dispatch and after each one; since dispatches are serialised by barriers, the difference of
// neighbours is one dispatch's time including its barrier. After each execute the results
// are added up (vkGetQueryPoolResults: no allocation); when the graph is destroyed a summary
// goes to stderr: mean GPU time per execute, per shader, and the slowest dispatches with
// their specialisation constants (the shapes), and the host's time per execute. Off by
// default: no query pool, no cost.
// EMBER_VULKAN_PROFILE=span times the graph as it normally runs instead: two timestamps, before
// the first dispatch and after the last, with only the graph's own barriers (independent
// dispatches overlap), beside the host's time per execute and from submission to the fence:
// what the per-dispatch profile's serialisation hides, and what the GPU does not account for.
// It also reports medians per execute (a generation's one long prefill skews the means) of the
// span, the GPU's time before it (input copies) and after it (output copies), and the host's
// time before submission, from submission to the fence, and reading outputs.
// A method loaded with an EventTracer (runtime/core/event_tracer.h) enables it too,
// quietly (no stderr summary), and the graph reports each dispatch's last GPU time as a
// DelegateOp event.
//
// Lifetime: owned by one VulkanGraph; init() after the dispatches are known, record_*() while
// the graph's command buffer is recorded, collect() after each completed submission.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

class GpuProfiler {
 public:
  ~GpuProfiler();

  // True when EMBER_VULKAN_PROFILE=1, =all (the summary and every dispatch) or =span;
  // span_requested(): =span.
  static bool requested();
  static bool span_requested();
  // EMBER_VULKAN_PROFILE=all: also every dispatch, and each pipeline's creation time.
  static bool all_requested();

  // `labels[i]` names dispatch i. A device whose compute queue has no timestamps leaves the
  // profiler disabled (with a note on stderr) and returns Ok.
  // `quiet`: no stderr notes or summary (profiling asked for by an event tracer).
  // `span`: the two-timestamp mode above.
  Error init(VkDevice device, VkPhysicalDevice physical, uint32_t queue_family, float timestamp_period_ns,
             std::vector<std::string> labels, Diagnostic* diag, bool quiet = false, bool span = false);
  bool enabled() const { return pool_ != VK_NULL_HANDLE; }
  // Timestamps after every dispatch (and a barrier before each): the per-dispatch mode.
  bool per_dispatch() const { return enabled() && !span_; }

  // In recording order: the command buffer's first command (reset; span: a timestamp), before
  // the first dispatch (after the input copies), after dispatch `dispatch`, and the last command
  // (span: a timestamp after the output copies).
  void record_begin(VkCommandBuffer cb) const;
  void record_start(VkCommandBuffer cb) const;
  void record_after(VkCommandBuffer cb, size_t dispatch) const;
  void record_end(VkCommandBuffer cb) const;
  // The host's nanoseconds of one execute: in all, before the submission (checks, inputs), from
  // submission to the fence, and after it (outputs read back).
  struct HostTimes {
    uint64_t total_ns, before_submit_ns, wait_ns, outputs_ns;
  };
  // Reads the last execute's timestamps and adds them up, with the host's times.
  Error collect(const HostTimes& host, Diagnostic* diag);
  // The summary (also written by the destructor when anything was collected, unless quiet).
  std::string report() const;
  // The last collect()'s GPU time of dispatch `i` and its label (valid while the profiler lives).
  size_t num_dispatches() const { return labels_.size(); }
  double last_ns(size_t i) const { return last_ns_[i]; }
  const char* label(size_t i) const { return labels_[i].c_str(); }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  double period_ns_ = 1.0;
  uint64_t valid_mask_ = ~uint64_t{0};
  std::vector<std::string> labels_;
  std::vector<uint64_t> stamps_;  // scratch for one execute's results
  std::vector<double> total_ns_;  // per dispatch, summed over executes
  std::vector<double> last_ns_;   // per dispatch, the last execute
  bool quiet_ = false;
  bool span_ = false;
  double span_ns_ = 0, host_ns_ = 0, wait_ns_ = 0;  // summed over executes
  uint64_t executes_ = 0;
  // Span mode: per execute (the first kMaxSamples): span, GPU inputs, GPU outputs, host total,
  // before submission, wait, outputs; reserved at init, so collect() never allocates.
  static constexpr size_t kMaxSamples = 16384;
  static constexpr size_t kSampleKinds = 7;
  std::vector<float> samples_[kSampleKinds];
};

}  // namespace vulkan
}  // namespace ember
