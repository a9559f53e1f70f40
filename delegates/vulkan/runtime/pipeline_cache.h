// PipelineCache: compute pipelines keyed by (shader, specialization constants, workgroup
// size), plus each shader's module, descriptor-set layout and pipeline layout. Shared by all
// delegates on a device; thread-safe. Objects live as long as the device.
//
// The driver's own pipeline cache (compiled shader code) is kept on disk between runs, so a
// second load of a program skips shader compilation: one file per device and driver
// (pipeline_cache_file.h: validated, safe to delete, rewritten when it fails a check) in
//   set_directory(dir) if called, else $EMBER_VULKAN_PIPELINE_CACHE_DIR, else
//   $XDG_CACHE_HOME/ember/vulkan, else $HOME/.cache/ember/vulkan;
// "off" (or an empty value) for either turns it off. The file is read when the first
// pipeline is created and written (to a temporary name, then renamed, so concurrent
// processes never see half a file) by save() after a graph created new pipelines. File
// errors never fail a load: they are recorded in stats().
//
// prepare() creates a graph's missing pipelines on several threads at once (shader
// compilation is the bulk of a first load): min(missing, hardware threads, 8), or
// $EMBER_VULKAN_PIPELINE_THREADS.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "delegates/vulkan/runtime/pipeline_cache_file.h"
#include "delegates/vulkan/runtime/shader_library.h"
#include "runtime/core/result.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

struct ShaderObjects {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
};

struct PipelineKey {
  ShaderId shader;
  std::vector<uint32_t> spec;  // constant_id i+1 = spec[i] (ints or float bit patterns)
  uint32_t workgroup_size = kWorkgroupSize;  // constant_id 0
};

struct PipelineCacheStats {
  size_t pipelines = 0;         // in memory
  size_t created = 0;           // by this process
  double create_ms = 0;         // wall time spent creating them (prepare + pipeline)
  std::string file;             // the cache file's path ("" when persistence is off)
  std::string load_status;      // "loaded N bytes", "no file yet", "ignored: <why>", "off"
  size_t loaded_bytes = 0;      // driver data given to the driver at start
  std::string save_status;      // "" until a save; "saved N bytes" or what went wrong
};

class PipelineCache {
 public:
  // capture_statistics: the device has VK_KHR_pipeline_executable_properties enabled; every
  // pipeline created prints its statistics (pipeline_statistics.h).
  void attach(VkDevice device, const PipelineCacheIdentity& identity, bool capture_statistics = false);
  // Module + layouts of `shader`, created on first use.
  Result<ShaderObjects> shader(ShaderId shader, Diagnostic* diag);
  // The pipeline for `shader` with constant_id 0 = workgroup_size and constant_id i+1 =
  // spec[i] (32-bit words: ints or float bit patterns).
  Result<VkPipeline> pipeline(ShaderId shader, const std::vector<uint32_t>& spec,
                              uint32_t workgroup_size, Diagnostic* diag);
  // Creates every pipeline of `keys` not yet in memory, several at a time; afterwards
  // pipeline() finds them all. Returns the first creation error.
  Error prepare(const std::vector<PipelineKey>& keys, Diagnostic* diag);
  // Writes the driver cache to the file when pipelines were created since the last save.
  void save();
  size_t num_pipelines();
  PipelineCacheStats stats();

  // The directory for cache files for contexts created afterwards ("off" or "": none);
  // overrides the environment. For tests and apps with their own cache location.
  static void set_directory(const std::string& dir);
  // The directory in effect ("" when persistence is off).
  static std::string directory();

 private:
  Result<ShaderObjects> shader_locked(ShaderId shader, Diagnostic* diag);
  void open_driver_cache_locked();
  Result<VkPipeline> create_pipeline(const ShaderObjects& s, const PipelineKey& key, Diagnostic* diag);
  static std::string key_string(ShaderId shader, const std::vector<uint32_t>& spec, uint32_t workgroup_size);

  VkDevice device_ = VK_NULL_HANDLE;
  PipelineCacheIdentity identity_;
  bool capture_statistics_ = false;
  std::mutex mutex_;
  bool driver_cache_opened_ = false;
  VkPipelineCache driver_cache_ = VK_NULL_HANDLE;
  ShaderObjects shaders_[kNumShaders];
  std::map<std::string, VkPipeline> pipelines_;
  size_t created_since_save_ = 0;
  PipelineCacheStats stats_;
};

}  // namespace vulkan
}  // namespace ember
