#include "delegates/vulkan/runtime/gpu_profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>

#include "delegates/vulkan/runtime/vulkan_status.h"

namespace ember {
namespace vulkan {

namespace {
bool profile_env_is(const char* value) {
  const char* env = std::getenv("EMBER_VULKAN_PROFILE");
  return env != nullptr && std::strcmp(env, value) == 0;
}
}  // namespace

bool GpuProfiler::requested() { return profile_env_is("1") || profile_env_is("span") || profile_env_is("all"); }

bool GpuProfiler::span_requested() { return profile_env_is("span"); }

bool GpuProfiler::all_requested() { return profile_env_is("all"); }

GpuProfiler::~GpuProfiler() {
  if (executes_ > 0 && !quiet_) std::fprintf(stderr, "%s", report().c_str());
  if (pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(device_, pool_, nullptr);
}

Error GpuProfiler::init(VkDevice device, VkPhysicalDevice physical, uint32_t queue_family, float timestamp_period_ns,
                        std::vector<std::string> labels, Diagnostic* diag, bool quiet, bool span) {
  quiet_ = quiet;
  span_ = span;
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
  const uint32_t bits = queue_family < n ? families[queue_family].timestampValidBits : 0;
  if (bits == 0 || labels.empty()) {
    if (!quiet) std::fprintf(stderr, "ember vulkan profile: the compute queue has no timestamps; profiling is off\n");
    return Error::Ok;
  }
  device_ = device;
  period_ns_ = timestamp_period_ns > 0 ? timestamp_period_ns : 1.0;
  valid_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  labels_ = std::move(labels);
  stamps_.assign(span_ ? 4 : labels_.size() + 1, 0);
  if (span_)
    for (std::vector<float>& v : samples_) v.reserve(kMaxSamples);
  total_ns_.assign(labels_.size(), 0.0);
  last_ns_.assign(labels_.size(), 0.0);
  VkQueryPoolCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = static_cast<uint32_t>(stamps_.size());
  EMBER_VK_TRY(diag, vkCreateQueryPool(device_, &qi, nullptr, &pool_), "creating the profiling query pool");
  return Error::Ok;
}

// Span stamps: 0 the command buffer's start, 1 after the input copies, 2 after the last dispatch,
// 3 after the output copies (1..3 wait for the commands before them: bottom of pipe).
void GpuProfiler::record_begin(VkCommandBuffer cb) const {
  if (!enabled()) return;
  vkCmdResetQueryPool(cb, pool_, 0, static_cast<uint32_t>(stamps_.size()));
  if (span_) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
}

void GpuProfiler::record_start(VkCommandBuffer cb) const {
  if (!enabled()) return;
  if (span_) {
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
  } else {
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
  }
}

void GpuProfiler::record_after(VkCommandBuffer cb, size_t dispatch) const {
  if (!enabled()) return;
  if (span_ && dispatch + 1 != labels_.size()) return;
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, static_cast<uint32_t>(span_ ? 2 : dispatch + 1));
}

void GpuProfiler::record_end(VkCommandBuffer cb) const {
  if (enabled() && span_) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 3);
}

Error GpuProfiler::collect(const HostTimes& host, Diagnostic* diag) {
  if (!enabled()) return Error::Ok;
  host_ns_ += static_cast<double>(host.total_ns);
  wait_ns_ += static_cast<double>(host.wait_ns);
  EMBER_VK_TRY(diag,
               vkGetQueryPoolResults(device_, pool_, 0, static_cast<uint32_t>(stamps_.size()),
                                     stamps_.size() * sizeof(uint64_t), stamps_.data(), sizeof(uint64_t),
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "reading profiling timestamps");
  if (span_) {
    auto between = [&](size_t a, size_t b) { return static_cast<double>((stamps_[b] - stamps_[a]) & valid_mask_) * period_ns_; };
    const double span = between(1, 2);
    span_ns_ += span;
    if (samples_[0].size() < kMaxSamples) {
      const double values[kSampleKinds] = {span, between(0, 1), between(2, 3), static_cast<double>(host.total_ns),
                                           static_cast<double>(host.before_submit_ns), static_cast<double>(host.wait_ns),
                                           static_cast<double>(host.outputs_ns)};
      for (size_t i = 0; i < kSampleKinds; ++i) samples_[i].push_back(static_cast<float>(values[i]));
    }
    ++executes_;
    return Error::Ok;
  }
  for (size_t i = 0; i < total_ns_.size(); ++i) {
    const uint64_t d = (stamps_[i + 1] - stamps_[i]) & valid_mask_;
    last_ns_[i] = static_cast<double>(d) * period_ns_;
    total_ns_[i] += last_ns_[i];
  }
  ++executes_;
  return Error::Ok;
}

std::string GpuProfiler::report() const {
  if (executes_ == 0) return "";
  const double runs = static_cast<double>(executes_);
  const double all = std::accumulate(total_ns_.begin(), total_ns_.end(), 0.0) / runs;
  std::string out;
  char line[512];
  if (span_) {
    std::snprintf(line, sizeof(line),
                  "ember vulkan span: %zu dispatches, %.1f us GPU per execute from the first dispatch to the last; "
                  "host %.1f us per execute, %.1f us of it from submission to the fence (%llu executes)\n",
                  labels_.size(), span_ns_ / runs / 1e3, host_ns_ / runs / 1e3, wait_ns_ / runs / 1e3,
                  static_cast<unsigned long long>(executes_));
    out += line;
    double median[kSampleKinds];
    for (size_t i = 0; i < kSampleKinds; ++i) {
      std::vector<float> v = samples_[i];
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      median[i] = v.empty() ? 0.0 : v[v.size() / 2] / 1e3;
    }
    std::snprintf(line, sizeof(line),
                  "ember vulkan span medians per execute: GPU %.1f us (and %.1f before it: inputs, %.1f after it: "
                  "outputs); host %.1f us: %.1f before submission, %.1f from submission to the fence, %.1f reading "
                  "outputs\n",
                  median[0], median[1], median[2], median[3], median[4], median[5], median[6]);
    return out + line;
  }
  std::snprintf(line, sizeof(line),
                "ember vulkan profile: %zu dispatches, %.1f us GPU per execute (%llu executes); host %.1f us per "
                "execute, %.1f us of it from submission to the fence\n",
                labels_.size(), all / 1e3, static_cast<unsigned long long>(executes_), host_ns_ / runs / 1e3,
                wait_ns_ / runs / 1e3);
  out += line;
  // Mean ns per execute and dispatch count, summed over the labels that share a key.
  auto sum_by = [&](bool whole_label) {
    std::map<std::string, std::pair<double, int>> sums;
    for (size_t i = 0; i < labels_.size(); ++i) {
      // A label's push constants (" push(...)") differ per layer: grouped without them.
      auto& e = sums[labels_[i].substr(0, whole_label ? labels_[i].find(" push(") : labels_[i].find('('))];
      e.first += total_ns_[i] / runs;
      e.second += 1;
    }
    return sums;
  };
  for (const auto& [name, e] : sum_by(false)) {  // per shader: the label's name before '('
    std::snprintf(line, sizeof(line), "  %-16s %4d dispatches %9.1f us %5.1f%%\n", name.c_str(), e.second,
                  e.first / 1e3, all > 0 ? 100.0 * e.first / all : 0.0);
    out += line;
  }
  // The same shader and constants (e.g. every layer's q projection) summed: where tuning pays.
  const std::map<std::string, std::pair<double, int>> by_label = sum_by(true);
  std::vector<std::pair<std::string, std::pair<double, int>>> labels(by_label.begin(), by_label.end());
  std::sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  out += "  by specialisation (total, dispatches, mean):\n";
  for (size_t k = 0; k < labels.size() && k < 10; ++k) {
    std::snprintf(line, sizeof(line), "  %9.1f us %4d x %7.2f us  %s\n", labels[k].second.first / 1e3, labels[k].second.second,
                  labels[k].second.first / 1e3 / labels[k].second.second, labels[k].first.c_str());
    out += line;
  }
  std::vector<size_t> order(labels_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total_ns_[a] > total_ns_[b]; });
  out += "  slowest dispatches (shader(specialisation constants)):\n";
  for (size_t k = 0; k < order.size() && k < 12; ++k) {
    std::snprintf(line, sizeof(line), "  %4zu %9.1f us  %s\n", order[k], total_ns_[order[k]] / runs / 1e3,
                  labels_[order[k]].c_str());
    out += line;
  }
  if (all_requested()) {  // every dispatch in recording order
    out += "  every dispatch (shader(specialisation constants) push(push constants)):\n";
    for (size_t i = 0; i < labels_.size(); ++i) {
      std::snprintf(line, sizeof(line), "  %4zu %9.1f us  %s\n", i, total_ns_[i] / runs / 1e3, labels_[i].c_str());
      out += line;
    }
  }
  return out;
}

}  // namespace vulkan
}  // namespace ember
