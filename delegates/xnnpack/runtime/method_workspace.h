// One XNNPACK workspace per Method, shared by its XNNPACK runtimes (internal to the backend).
//
// XNNPACK plans each runtime's internal tensors (activations, dynamic-quantisation buffers,
// operator scratch) into a workspace, zero-filled when allocated. With one workspace per
// runtime, a program of many partitions holds the sum of their plans: an LLM of 155
// delegates held hundreds of MB that way. The delegates of one Method run one after another,
// so they can share one workspace sized for the largest (xnn_create_runtime_v4; XNNPACK grows
// it when a runtime needs more and re-points every runtime that uses it).
//
// Key: the Method's allocator (BackendInitContext::method_allocator), which every delegate of
// a Method gets and no two live Methods share. A per-workspace mutex is held while any of its
// runtimes is created, reshaped, set up, invoked or deleted (MethodWorkspaceLock): never
// contended when Methods are used as documented (one thread per Method at a time), and
// correct even when a caller gives two Methods one allocator.
//
// Lifetime: acquire at delegate init, release at destroy after the delegate's runtimes are
// deleted; the last release frees the workspace (XNNPACK defers it until its last runtime is
// gone).
#pragma once

#include <xnnpack.h>

#include <mutex>

namespace ember {
namespace xnnpack {

struct MethodWorkspace;

// The workspace of the Method owning `method_key`, created on first use; nullptr when none
// can be made (too many live Methods, out of memory): runtimes then get their own.
MethodWorkspace* acquire_method_workspace(const void* method_key);
void release_method_workspace(MethodWorkspace* workspace);

// Null for a null workspace (XNNPACK then gives the runtime its own).
xnn_workspace_t workspace_handle(const MethodWorkspace* workspace);

// Holds the workspace's mutex for a scope (nothing for a null workspace).
class MethodWorkspaceLock {
 public:
  explicit MethodWorkspaceLock(MethodWorkspace* workspace);
  ~MethodWorkspaceLock();
  MethodWorkspaceLock(const MethodWorkspaceLock&) = delete;
  MethodWorkspaceLock& operator=(const MethodWorkspaceLock&) = delete;

 private:
  std::mutex* mutex_;
};

}  // namespace xnnpack
}  // namespace ember
