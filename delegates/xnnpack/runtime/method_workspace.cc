#include "delegates/xnnpack/runtime/method_workspace.h"

#include <cstddef>

namespace ember {
namespace xnnpack {

struct MethodWorkspace {
  const void* key = nullptr;
  size_t refs = 0;
  xnn_workspace_t handle = nullptr;
  std::mutex mutex;  // see MethodWorkspaceLock
};

namespace {

constexpr size_t kMaxMethods = 64;  // live Methods with XNNPACK delegates at once
MethodWorkspace g_table[kMaxMethods];
std::mutex g_table_mutex;

}  // namespace

MethodWorkspace* acquire_method_workspace(const void* method_key) {
  if (method_key == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  MethodWorkspace* free_slot = nullptr;
  for (MethodWorkspace& w : g_table) {
    if (w.refs > 0 && w.key == method_key) {
      w.refs++;
      return &w;
    }
    if (w.refs == 0 && free_slot == nullptr) free_slot = &w;
  }
  if (free_slot == nullptr || xnn_create_workspace(&free_slot->handle) != xnn_status_success) return nullptr;
  free_slot->key = method_key;
  free_slot->refs = 1;
  return free_slot;
}

void release_method_workspace(MethodWorkspace* workspace) {
  if (workspace == nullptr) return;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  if (workspace->refs == 0 || --workspace->refs > 0) return;
  xnn_release_workspace(workspace->handle);  // XNNPACK frees it once no runtime uses it
  workspace->handle = nullptr;
  workspace->key = nullptr;
}

xnn_workspace_t workspace_handle(const MethodWorkspace* workspace) {
  return workspace == nullptr ? nullptr : workspace->handle;
}

MethodWorkspaceLock::MethodWorkspaceLock(MethodWorkspace* workspace)
    : mutex_(workspace == nullptr ? nullptr : &workspace->mutex) {
  if (mutex_ != nullptr) mutex_->lock();
}

MethodWorkspaceLock::~MethodWorkspaceLock() {
  if (mutex_ != nullptr) mutex_->unlock();
}

}  // namespace xnnpack
}  // namespace ember
