#include "delegates/vulkan/runtime/vulkan_context.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "delegates/vulkan/runtime/gpu_profiler.h"
#include "delegates/vulkan/runtime/pipeline_statistics.h"
#include "delegates/vulkan/runtime/tuning_env.h"
#include "delegates/vulkan/runtime/vulkan_status.h"
#include "runtime/platform/platform.h"

namespace ember {
namespace vulkan {
namespace {

std::atomic<bool> g_allow_cpu_override{false};

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

VkResult create_instance(VkInstance* out) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  return vkCreateInstance(&info, nullptr, out);
}

// Best compute-capable device with Vulkan >= 1.1; false when none.
bool pick_device(VkInstance instance, DeviceCandidate* best) {
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(instance, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkPhysicalDevice> devices(n);
  if (vkEnumeratePhysicalDevices(instance, &n, devices.data()) < 0) return false;
  devices.resize(n);
  int best_rank = -1;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d, &props);
    if (props.apiVersion < VK_API_VERSION_1_1) continue;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qs(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, qs.data());
    int family = -1;
    // EMBER_VULKAN_GRAPHICS_QUEUE=1 (measuring): a family with graphics too, where there is one.
    const bool want_graphics = tuning_choice("EMBER_VULKAN_GRAPHICS_QUEUE", false);
    for (uint32_t i = 0; i < nq; ++i) {
      if ((qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qs[i].queueCount > 0) {
        const bool graphics = (qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0;
        if (want_graphics && !graphics && family >= 0) continue;
        family = static_cast<int>(i);
        // A compute queue without graphics is usually the less contended one.
        if (graphics == want_graphics) break;
      }
    }
    if (family < 0) continue;
    int rank = type_rank(props.deviceType);
    if (rank > best_rank) {
      best_rank = rank;
      best->device = d;
      best->type = props.deviceType;
      best->queue_family = static_cast<uint32_t>(family);
      // Bounded copy that always terminates (the driver's name may fill its whole array).
      size_t n = strnlen(props.deviceName, sizeof(best->name) - 1);
      std::memcpy(best->name, props.deviceName, n);
      best->name[n] = '\0';
    }
  }
  return best_rank >= 0;
}

// Whether conv2d_gemm.comp's matrix-unit variant can run: the device multiplies 16x16x16 fp16
// tiles into fp32 on subgroups (VK_NV_cooperative_matrix), in compute shaders, and its compute
// subgroups are 32 wide (the shader gives each of a workgroup's 8 subgroups two 16x16 tiles).
bool coop_matrix_f16_shape_offered(VkInstance instance, VkPhysicalDevice device) {
  VkPhysicalDeviceCooperativeMatrixPropertiesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  subgroup.pNext = &coop;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(device, &props);
  if (subgroup.subgroupSize != 32 || (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) == 0 ||
      (coop.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) == 0)
    return false;
  auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (list == nullptr) return false;
  uint32_t n = 0;
  if (list(device, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(n);
  for (VkCooperativeMatrixPropertiesNV& p : shapes) p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (list(device, &n, shapes.data()) < 0) return false;
  for (uint32_t i = 0; i < n && i < shapes.size(); ++i) {
    const VkCooperativeMatrixPropertiesNV& p = shapes[i];
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.DType == VK_COMPONENT_TYPE_FLOAT32_NV && p.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  }
  return false;
}

struct Global {
  std::mutex mutex;
  bool tried = false;
  Error error = Error::Ok;
  char message[sizeof(Diagnostic::message)] = {0};
  VulkanContext* context = nullptr;
};

Global& global() {
  static Global* g = new Global();  // never destroyed, see header
  return *g;
}

}  // namespace

std::atomic<bool> VulkanContext::g_hide_fp16_{false};

bool VulkanContext::cpu_allowed() {
  if (g_allow_cpu_override.load()) return true;
  const char* env = std::getenv("EMBER_VULKAN_ALLOW_CPU");
  return env != nullptr && env[0] == '1';
}

void VulkanContext::set_allow_cpu_device(bool allow) { g_allow_cpu_override.store(allow); }

namespace {

// Milliseconds since `start_ns` on the platform's clock (runtime/platform/platform.h).
double ms_since(uint64_t start_ns) { return static_cast<double>(platform_monotonic_ns() - start_ns) / 1e6; }

// The result of looking for a device once per process: whether one exists, and if not, why.
// The instance it created is kept for the context when a device was found: creating a
// second one costs a driver as much again (tens of ms on NVIDIA's).
struct DeviceProbe {
  bool found = false;
  char reason[200] = {0};
  VkInstance instance = VK_NULL_HANDLE;  // handed to the context once (take_probe_instance)
  double ms = 0;
};

DeviceProbe& probe() {
  static DeviceProbe result = [] {
    const uint64_t t0 = platform_monotonic_ns();
    DeviceProbe p;
    VkInstance instance = VK_NULL_HANDLE;
    const VkResult r = create_instance(&instance);
    if (r != VK_SUCCESS) {
      std::snprintf(p.reason, sizeof(p.reason),
                    "no Vulkan driver (vkCreateInstance: %s); install one, or point VK_DRIVER_FILES at its "
                    "ICD manifest",
                    vk_result_name(r));
      return p;
    }
    DeviceCandidate c;
    p.found = pick_device(instance, &c);
    if (p.found) {
      p.instance = instance;
    } else {
      vkDestroyInstance(instance, nullptr);
      std::snprintf(p.reason, sizeof(p.reason), "the Vulkan driver reports no device with Vulkan 1.1 and a compute queue");
    }
    p.ms = ms_since(t0);
    return p;
  }();
  return result;
}

// The probe's instance if it made one and nobody took it yet (under global().mutex).
VkInstance take_probe_instance() {
  DeviceProbe& p = probe();
  VkInstance i = p.instance;
  p.instance = VK_NULL_HANDLE;
  return i;
}

}  // namespace

bool VulkanContext::any_device() {
  Global& g = global();
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    if (g.context != nullptr) return true;
  }
  return probe().found;
}

const char* VulkanContext::unavailable_reason() { return any_device() ? "" : probe().reason; }

bool VulkanContext::unified_memory() const {
  return props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
         props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

Result<VulkanContext*> VulkanContext::get(bool allow_cpu, Diagnostic* diag) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.tried) {
    g.tried = true;
    VulkanContext* c = new VulkanContext();
    Diagnostic d;
    Error e = c->create(&d);
    if (e != Error::Ok) {
      g.error = e;
      std::memcpy(g.message, d.message, sizeof(g.message));
      if (c->device_ != VK_NULL_HANDLE) vkDestroyDevice(c->device_, nullptr);
      if (c->instance_ != VK_NULL_HANDLE) vkDestroyInstance(c->instance_, nullptr);
      delete c;
    } else {
      g.context = c;
    }
  }
  if (g.context == nullptr) return fail(diag, g.error, "%s", g.message);
  if (g.context->is_cpu() && !(allow_cpu || cpu_allowed())) {
    return fail(diag, Error::NotSupported,
                "vulkan: the only Vulkan device is a CPU implementation (%s); it is used only "
                "when allowed (EMBER_VULKAN_ALLOW_CPU=1 or compile spec allow_cpu=1). Export "
                "with the portable backend instead",
                g.context->props_.deviceName);
  }
  return g.context;
}

Error VulkanContext::create(Diagnostic* diag) {
  instance_ = take_probe_instance();
  if (instance_ == VK_NULL_HANDLE) {
    VkResult r = create_instance(&instance_);
    if (r != VK_SUCCESS) {
      instance_ = VK_NULL_HANDLE;
      return fail(diag, Error::NotSupported, "vulkan: no usable Vulkan driver (vkCreateInstance: %s)",
                  vk_result_name(r));
    }
  }
  const uint64_t t_instance = platform_monotonic_ns();
  DeviceCandidate c;
  if (!pick_device(instance_, &c)) {
    return fail(diag, Error::NotSupported,
                "vulkan: no Vulkan 1.1 device with a compute queue was found");
  }
  physical_ = c.device;
  queue_family_ = c.queue_family;
  vkGetPhysicalDeviceProperties(physical_, &props_);
  vkGetPhysicalDeviceMemoryProperties(physical_, &mem_props_);

  // 16-bit features and the fp16 matrix units: query (Vulkan 1.1 core entry points), then
  // enable what exists.
  bool float16_ext = false, executable_ext = false, coop_ext = false;
  {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    if (n > 0 && vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, exts.data()) >= 0) {
      for (uint32_t i = 0; i < n; ++i) {
        float16_ext |= std::strcmp(exts[i].extensionName, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) == 0;
        executable_ext |= std::strcmp(exts[i].extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0;
        coop_ext |= std::strcmp(exts[i].extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
      }
    }
  }
  // Pipeline statistics (pipeline_statistics.h) only when asked for.
  executable_ext = executable_ext && pipeline_statistics_requested();
  // Each queried struct is linked only when its extension exists (the chain is built back to front).
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exe{};
  exe.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  void* chain = nullptr;
  if (executable_ext) chain = &exe;
  if (coop_ext) coop.pNext = chain, chain = &coop;
  if (float16_ext) f16.pNext = chain, chain = &f16;
  s16.pNext = chain;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &s16;
  vkGetPhysicalDeviceFeatures2(physical_, &features);
  storage_buffer16_ = s16.storageBuffer16BitAccess == VK_TRUE;
  shader_float16_ = float16_ext && f16.shaderFloat16 == VK_TRUE;
  const bool statistics = executable_ext && exe.pipelineExecutableInfo == VK_TRUE;
  cooperative_matrix_f16_ = coop_ext && coop.cooperativeMatrix == VK_TRUE && storage_buffer16_ && shader_float16_ &&
                            coop_matrix_f16_shape_offered(instance_, physical_);
  // Enable only these (and nothing else the query reported).
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exe_on{};
  exe_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
  exe_on.pipelineExecutableInfo = VK_TRUE;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_on{};
  coop_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  coop_on.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16_on{};
  f16_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR;
  f16_on.shaderFloat16 = VK_TRUE;
  VkPhysicalDevice16BitStorageFeatures s16_on{};
  s16_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16_on.storageBuffer16BitAccess = storage_buffer16_ ? VK_TRUE : VK_FALSE;
  std::vector<const char*> extensions;
  chain = nullptr;
  if (statistics) chain = &exe_on, extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (cooperative_matrix_f16_) {
    coop_on.pNext = chain, chain = &coop_on;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  if (shader_float16_) {
    f16_on.pNext = chain, chain = &f16_on;
    extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  s16_on.pNext = chain;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo q{};
  q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  info.pNext = &s16_on;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.empty() ? nullptr : extensions.data();
  const uint64_t t_device = platform_monotonic_ns();
  EMBER_VK_TRY(diag, vkCreateDevice(physical_, &info, nullptr, &device_), "creating the logical device");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (GpuProfiler::requested()) {
    std::fprintf(stderr,
                 "ember vulkan context: instance + device list %.2f ms (once per process, the first time a "
                 "backend asks), then device query %.2f, vkCreateDevice %.2f (%s; fp16 matrix units %s)\n",
                 probe().ms, static_cast<double>(t_device - t_instance) / 1e6,
                 ms_since(t_device), props_.deviceName, cooperative_matrix_f16_ ? "yes" : "no");
  }
  PipelineCacheIdentity identity;
  identity.vendor_id = props_.vendorID;
  identity.device_id = props_.deviceID;
  identity.driver_version = props_.driverVersion;
  std::memcpy(identity.cache_uuid, props_.pipelineCacheUUID, sizeof(identity.cache_uuid));
  pipelines_.attach(device_, identity, statistics);
  return Error::Ok;
}

Error VulkanContext::submit(VkCommandBuffer cb, VkFence fence, Diagnostic* diag) {
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cb;
  std::lock_guard<std::mutex> lock(queue_mutex_);
  EMBER_VK_TRY(diag, vkQueueSubmit(queue_, 1, &info, fence), "submitting work");
  return Error::Ok;
}

Error VulkanContext::submit_and_wait(VkCommandBuffer cb, VkFence fence, Diagnostic* diag) {
  EMBER_TRY(submit(cb, fence, diag));
  EMBER_VK_TRY(diag, vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "waiting for the GPU");
  EMBER_VK_TRY(diag, vkResetFences(device_, 1, &fence), "resetting a fence");
  return Error::Ok;
}

}  // namespace vulkan
}  // namespace ember
