// Kernels registered (statically, link with alwayslink) for runtime tests only. They do not
// depend on kernels/portable. Every kernel validates its arguments (kind, dtype, rank,
// contiguity, capacity) and fails cleanly, so corrupted programs cannot make them crash.
//
//   test::add.default(Tensor self, Tensor other, Tensor out)      float32 / int64 (dtype-
//                                                                 specialised), broadcasting
//   test::matmul.default(Tensor a[M,K], Tensor b[K,N], Tensor out[M,N])     float32
//   test::add_scalar_int.default(self, Int other, out)   self/out: Int values or int64 tensors
//   test::lt.default(Int a, Int b, Bool out)              out = a < b (for JumpFalse)
//   test::copy.default(Tensor src, Tensor out)            any dtype, resizes out
//   test::scratch_sum.default(Tensor src f32, Tensor out f32[1])  sums via ctx.allocate_temp
//   test::fail.default(...)                               always fails (InvalidArgument)
#pragma once

namespace ember {
namespace testing {

// Number of kernels this library registers (all succeed at static init).
int num_test_kernels_registered();

}  // namespace testing
}  // namespace ember
