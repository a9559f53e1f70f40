// Fake delegates for runtime tests, registered statically (link with alwayslink):
//
//  "test_fake": blob = one little-endian float32 `scale`; optional compile spec "bias"
//    (4 bytes, float32). execute(args = [Tensor in f32, Tensor out f32]) writes
//    out = in * scale + bias, resizing out to in's shape. Counts init/execute/destroy.
//  "test_unavailable": is_available() is false.
#pragma once

namespace ember {
namespace testing {

struct FakeBackendStats {
  int init_calls = 0;
  int init_ok = 0;
  int execute_calls = 0;
  int destroy_calls = 0;
};

FakeBackendStats& fake_backend_stats();
// True when both backends registered at static-init time.
bool fake_backends_registered();

}  // namespace testing
}  // namespace ember
