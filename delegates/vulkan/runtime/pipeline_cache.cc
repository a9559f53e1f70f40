#include "delegates/vulkan/runtime/pipeline_cache.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "delegates/vulkan/runtime/gpu_profiler.h"
#include "delegates/vulkan/runtime/pipeline_statistics.h"
#include "delegates/vulkan/runtime/vulkan_status.h"
#include "runtime/platform/cache_files.h"
#include "runtime/platform/platform.h"

namespace ember {
namespace vulkan {
namespace {

std::mutex g_directory_mutex;
bool g_directory_set = false;
std::string g_directory;

bool is_off(const char* v) { return v[0] == '\0' || std::strcmp(v, "off") == 0; }

// Reads a whole file of at most `limit` bytes; false when it is absent, unreadable or larger.
bool read_file(const std::string& path, size_t limit, std::vector<uint8_t>* out, bool* absent) {
  *absent = false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *absent = true;
    return false;
  }
  out->clear();
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) {
    if (out->size() + n > limit) {
      std::fclose(f);
      return false;
    }
    out->insert(out->end(), chunk, chunk + n);
  }
  const bool ok = std::ferror(f) == 0;
  std::fclose(f);
  return ok;
}

// Milliseconds since `start_ns` on the platform's clock (runtime/platform/platform.h).
double ms_since(uint64_t start_ns) { return static_cast<double>(platform_monotonic_ns() - start_ns) / 1e6; }

}  // namespace

void PipelineCache::set_directory(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_directory_mutex);
  g_directory_set = true;
  g_directory = is_off(dir.c_str()) ? "" : dir;
}

std::string PipelineCache::directory() {
  {
    std::lock_guard<std::mutex> lock(g_directory_mutex);
    if (g_directory_set) return g_directory;
  }
  if (const char* env = std::getenv("EMBER_VULKAN_PIPELINE_CACHE_DIR")) return is_off(env) ? "" : env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/ember/vulkan";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return std::string(home) + "/.cache/ember/vulkan";
  }
  return "";
}

void PipelineCache::attach(VkDevice device, const PipelineCacheIdentity& identity, bool capture_statistics) {
  device_ = device;
  identity_ = identity;
  capture_statistics_ = capture_statistics;
}

void PipelineCache::open_driver_cache_locked() {
  if (driver_cache_opened_) return;
  driver_cache_opened_ = true;
  const std::string dir = directory();
  std::vector<uint8_t> file;
  Span<const uint8_t> data;
  if (dir.empty()) {
    stats_.load_status = "off";
  } else {
    stats_.file = dir + "/" + pipeline_cache_file_name(identity_);
    bool absent = false;
    if (!read_file(stats_.file, kPipelineCacheFileHeader + kMaxPipelineCacheData, &file, &absent)) {
      stats_.load_status = absent ? "no file yet" : "ignored: unreadable or over the size limit";
    } else {
      const char* reason = "";
      data = parse_pipeline_cache_file(file.data(), file.size(), identity_, &reason);
      stats_.load_status = data.size() > 0 ? "loaded " + std::to_string(data.size()) + " bytes"
                                           : std::string("ignored: ") + reason;
    }
  }
  VkPipelineCacheCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  ci.initialDataSize = data.size();
  ci.pInitialData = data.size() > 0 ? data.data() : nullptr;
  if (vkCreatePipelineCache(device_, &ci, nullptr, &driver_cache_) == VK_SUCCESS) {
    stats_.loaded_bytes = data.size();
    return;
  }
  // A driver that refuses the data it wrote itself: start empty rather than fail.
  ci.initialDataSize = 0;
  ci.pInitialData = nullptr;
  if (data.size() > 0) stats_.load_status = "ignored: the driver refused the data";
  if (vkCreatePipelineCache(device_, &ci, nullptr, &driver_cache_) != VK_SUCCESS) driver_cache_ = VK_NULL_HANDLE;
}

Result<ShaderObjects> PipelineCache::shader(ShaderId id, Diagnostic* diag) {
  std::lock_guard<std::mutex> lock(mutex_);
  return shader_locked(id, diag);
}

Result<ShaderObjects> PipelineCache::shader_locked(ShaderId id, Diagnostic* diag) {
  ShaderObjects& s = shaders_[static_cast<int>(id)];
  if (s.layout != VK_NULL_HANDLE) return s;
  const ShaderInfo& info = shader_info(id);
  if (s.module == VK_NULL_HANDLE) {
    VkShaderModuleCreateInfo m{};
    m.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    m.codeSize = info.spirv_words * sizeof(uint32_t);
    m.pCode = info.spirv;
    EMBER_VK_TRY(diag, vkCreateShaderModule(device_, &m, nullptr, &s.module), "creating a shader module");
  }
  if (s.set_layout == VK_NULL_HANDLE) {
    VkDescriptorSetLayoutBinding b[kMaxBindings];
    for (uint32_t i = 0; i < info.num_bindings; ++i) {
      b[i] = VkDescriptorSetLayoutBinding{};
      b[i].binding = i;
      b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[i].descriptorCount = 1;
      b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo l{};
    l.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    l.bindingCount = info.num_bindings;
    l.pBindings = b;
    EMBER_VK_TRY(diag, vkCreateDescriptorSetLayout(device_, &l, nullptr, &s.set_layout),
                 "creating a descriptor set layout");
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, info.push_constant_bytes};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &s.set_layout;
  pl.pushConstantRangeCount = info.push_constant_bytes > 0 ? 1 : 0;
  pl.pPushConstantRanges = &range;
  EMBER_VK_TRY(diag, vkCreatePipelineLayout(device_, &pl, nullptr, &s.layout), "creating a pipeline layout");
  return s;
}

std::string PipelineCache::key_string(ShaderId id, const std::vector<uint32_t>& spec, uint32_t workgroup_size) {
  std::string key(1, static_cast<char>(id));
  key.append(reinterpret_cast<const char*>(&workgroup_size), sizeof(workgroup_size));
  key.append(reinterpret_cast<const char*>(spec.data()), spec.size() * sizeof(uint32_t));
  return key;
}

// Thread-safe without the lock: the driver synchronises the pipeline cache itself (it was
// not created with VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT).
Result<VkPipeline> PipelineCache::create_pipeline(const ShaderObjects& s, const PipelineKey& key, Diagnostic* diag) {
  std::vector<uint32_t> data(key.spec.size() + 1);
  std::vector<VkSpecializationMapEntry> entries(key.spec.size() + 1);
  data[0] = key.workgroup_size;
  for (size_t i = 0; i < key.spec.size(); ++i) data[i + 1] = key.spec[i];
  for (uint32_t i = 0; i < entries.size(); ++i) {
    entries[i] = VkSpecializationMapEntry{i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)};
  }
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = data.size() * sizeof(uint32_t);
  si.pData = data.data();

  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = s.module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = s.layout;
  if (capture_statistics_) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline p = VK_NULL_HANDLE;
  EMBER_VK_TRY(diag, vkCreateComputePipelines(device_, driver_cache_, 1, &ci, nullptr, &p),
               "creating a compute pipeline");
  if (capture_statistics_) print_pipeline_statistics(device_, p, shader_info(key.shader).name, key.workgroup_size, key.spec);
  return p;
}

Result<VkPipeline> PipelineCache::pipeline(ShaderId id, const std::vector<uint32_t>& spec,
                                           uint32_t workgroup_size, Diagnostic* diag) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key = key_string(id, spec, workgroup_size);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;
  EMBER_ASSIGN_OR_RETURN(ShaderObjects s, shader_locked(id, diag));
  open_driver_cache_locked();
  const uint64_t t0 = platform_monotonic_ns();
  EMBER_ASSIGN_OR_RETURN(VkPipeline p, create_pipeline(s, PipelineKey{id, spec, workgroup_size}, diag));
  stats_.create_ms += ms_since(t0);
  ++stats_.created;
  ++created_since_save_;
  pipelines_.emplace(std::move(key), p);
  return p;
}

Error PipelineCache::prepare(const std::vector<PipelineKey>& keys, Diagnostic* diag) {
  // The lock is held throughout: other graphs wait rather than compile the same pipelines.
  std::lock_guard<std::mutex> lock(mutex_);
  struct Job {
    const PipelineKey* key = nullptr;
    std::string key_string;
    ShaderObjects shader;
    VkPipeline pipeline = VK_NULL_HANDLE;
    Error error = Error::Ok;
    Diagnostic diag;
    double ms = 0;  // its creation (compile, or the driver cache's hit)
  };
  std::vector<Job> jobs;
  for (const PipelineKey& k : keys) {
    std::string ks = key_string(k.shader, k.spec, k.workgroup_size);
    if (pipelines_.count(ks) > 0) continue;
    bool queued = false;
    for (const Job& j : jobs) queued = queued || j.key_string == ks;
    if (queued) continue;
    EMBER_ASSIGN_OR_RETURN(ShaderObjects s, shader_locked(k.shader, diag));
    Job job;
    job.key = &k;
    job.key_string = std::move(ks);
    job.shader = s;
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return Error::Ok;
  open_driver_cache_locked();

  size_t threads = std::min<size_t>({jobs.size(), std::max(1u, std::thread::hardware_concurrency()), 8});
  if (const char* env = std::getenv("EMBER_VULKAN_PIPELINE_THREADS")) {
    const long n = std::strtol(env, nullptr, 10);
    if (n >= 1 && n <= 64) threads = std::min<size_t>(jobs.size(), static_cast<size_t>(n));
  }
  const uint64_t t0 = platform_monotonic_ns();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const uint64_t start = platform_monotonic_ns();
      Result<VkPipeline> p = create_pipeline(jobs[i].shader, *jobs[i].key, &jobs[i].diag);
      jobs[i].ms = ms_since(start);
      if (p.ok()) {
        jobs[i].pipeline = *p;
      } else {
        jobs[i].error = p.error();
      }
    }
  };
  // pthreads rather than std::thread: without exceptions a failed std::thread start aborts;
  // a helper that cannot start just leaves its share to the others and the calling thread.
  auto run_work = [](void* arg) -> void* {
    (*static_cast<decltype(work)*>(arg))();
    return nullptr;
  };
  std::vector<pthread_t> helpers;
  for (size_t t = 1; t < threads; ++t) {
    pthread_t helper;
    if (pthread_create(&helper, nullptr, run_work, &work) == 0) helpers.push_back(helper);
  }
  work();
  for (pthread_t helper : helpers) pthread_join(helper, nullptr);
  stats_.create_ms += ms_since(t0);
  // EMBER_VULKAN_PROFILE=all: what each pipeline cost (a first load waits for the slowest).
  if (GpuProfiler::all_requested())
    for (const Job& j : jobs)
      std::fprintf(stderr, "ember vulkan pipeline: %7.1f ms  %s x %u\n", j.ms,
                   shader_label(j.key->shader, j.key->spec).c_str(), j.key->workgroup_size);

  Error first_error = Error::Ok;
  for (Job& j : jobs) {
    if (j.pipeline == VK_NULL_HANDLE) {
      if (first_error == Error::Ok) {
        first_error = j.error;
        if (diag != nullptr) *diag = j.diag;
      }
      continue;
    }
    pipelines_.emplace(std::move(j.key_string), j.pipeline);
    ++stats_.created;
    ++created_since_save_;
  }
  return first_error;
}

void PipelineCache::save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (created_since_save_ == 0 || driver_cache_ == VK_NULL_HANDLE || stats_.file.empty()) return;
  created_since_save_ = 0;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, driver_cache_, &size, nullptr) != VK_SUCCESS || size == 0 ||
      size > kMaxPipelineCacheData) {
    stats_.save_status = "not saved: the driver gave no data";
    return;
  }
  std::vector<uint8_t> data(size);
  if (vkGetPipelineCacheData(device_, driver_cache_, &size, data.data()) != VK_SUCCESS) {
    stats_.save_status = "not saved: the driver gave no data";
    return;
  }
  data.resize(size);
  const std::string dir = stats_.file.substr(0, stats_.file.rfind('/'));
  if (!make_directories(dir, 0700)) {
    stats_.save_status = "not saved: cannot create the cache directory";
    return;
  }
  const std::vector<uint8_t> bytes = encode_pipeline_cache_file(data.data(), size, identity_);
  const int err = write_file_atomically(stats_.file, bytes.data(), bytes.size());
  stats_.save_status =
      err == 0 ? "saved " + std::to_string(size) + " bytes" : std::string("not saved: ") + std::strerror(err);
}

size_t PipelineCache::num_pipelines() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

PipelineCacheStats PipelineCache::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  PipelineCacheStats s = stats_;
  s.pipelines = pipelines_.size();
  return s;
}

}  // namespace vulkan
}  // namespace ember
