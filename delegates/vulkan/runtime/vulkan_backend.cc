#include "delegates/vulkan/runtime/vulkan_backend.h"

#include <cstring>
#include <memory>

#include "delegates/vulkan/runtime/vulkan_context.h"
#include "delegates/vulkan/runtime/vulkan_graph.h"

namespace ember {
namespace vulkan {
namespace {

class VulkanBackend final : public Backend {
 public:
  bool is_available() const override { return VulkanContext::any_device(); }
  const char* unavailable_reason() const override { return VulkanContext::unavailable_reason(); }

  Result<void*> init(BackendInitContext& context, Span<const uint8_t> blob,
                     Span<const CompileSpecView> compile_specs) override {
    bool allow_cpu = false;
    for (const CompileSpecView& s : compile_specs) {
      if (s.key != nullptr && std::strcmp(s.key, "allow_cpu") == 0) {
        allow_cpu = !s.value.empty() && s.value[0] != 0;
      }
    }
    Result<VulkanContext*> ctx = VulkanContext::get(allow_cpu, context.diag);
    if (!ctx.ok()) return ctx.error();
    Result<std::unique_ptr<VulkanGraph>> graph = VulkanGraph::create(*ctx, blob, context, compile_specs, context.diag);
    if (!graph.ok()) return graph.error();
    return static_cast<void*>(graph->release());
  }

  Error execute(BackendExecuteContext& context, void* handle, EValue** args, size_t num_args) override {
    if (handle == nullptr) return fail(context.diag, Error::InvalidState, "vulkan: execute without init");
    return static_cast<VulkanGraph*>(handle)->execute(args, num_args, context.diag, &context);
  }

  Error reset_state(void* handle, Diagnostic* diag) override {
    return handle == nullptr ? Error::Ok : static_cast<VulkanGraph*>(handle)->reset_state(diag);
  }

  void destroy(void* handle) override { delete static_cast<VulkanGraph*>(handle); }
};

VulkanBackend g_backend;
const bool g_registered = register_backend("vulkan", &g_backend);

}  // namespace

Backend& vulkan_backend() {
  (void)g_registered;
  return g_backend;
}

void set_allow_cpu_device(bool allow) { VulkanContext::set_allow_cpu_device(allow); }

bool fp16_supported() {
  Result<VulkanContext*> ctx = VulkanContext::get(false, nullptr);
  return ctx.ok() && (*ctx)->storage_buffer16();
}

bool coop_matrix_f16_supported() {
  Result<VulkanContext*> ctx = VulkanContext::get(false, nullptr);
  return ctx.ok() && (*ctx)->cooperative_matrix_f16();
}

void set_hide_fp16_features(bool hide) { VulkanContext::set_hide_fp16_features(hide); }

}  // namespace vulkan
}  // namespace ember
