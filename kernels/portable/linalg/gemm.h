// Single-precision GEMM shared by linear/addmm/mm/bmm/matmul and convolution:
//
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C      (beta == 0: C is not read)
//
// Operands are addressed through element strides, so transposed views cost nothing:
// A(i, p) = a.data[i * a.row_stride + p * a.col_stride], likewise B(p, j); C is row-major
// with leading dimension ldc. B may instead come from a packing callback (convolution packs
// im2col columns straight from the input image, without materialising the column matrix).
//
// Algorithm: the classic cache-blocked scheme. B is packed into kc x 16 column panels and A
// into 6-row panels (both in a GemmWorkspace taken from ctx.allocate_temp()); a 6x16
// register-blocked micro-kernel (GCC vector extensions; an AVX2+FMA build of it is chosen at
// run time on x86-64) computes each tile. Without a workspace, or for tiny m, a path that
// packs small blocks on the stack is used (slower, same results up to rounding).
// Threads: gemm() spreads packing and tiles over ctx->parallel_for; do not call it from
// inside another parallel_for of the same pool (pass ctx = nullptr there).
#pragma once

#include <cstdint>

#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

constexpr int kGemmMr = 6;   // micro-kernel rows
constexpr int kGemmNr = 16;  // micro-kernel columns (= packed B panel width)

struct GemmMatrix {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

// Writes rows [p0, p0 + kc) of columns [j0, j0 + nr) of B (nr <= kGemmNr) to
// dst[(p - p0) * kGemmNr + (j - j0)], zero-filling columns nr..kGemmNr-1.
using GemmPackB = void (*)(const void* state, int64_t p0, int64_t kc, int64_t j0, int64_t nr,
                           float* dst);

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  GemmMatrix a;
  GemmMatrix b;                  // ignored when pack_b is set
  GemmPackB pack_b = nullptr;
  const void* pack_b_state = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// Packing buffers sized for problems up to (max_m, max_n, k); `valid()` is false when the
// temp allocator could not provide them (gemm() then uses its stack path).
struct GemmWorkspace {
  float* a_pack = nullptr;
  float* b_pack = nullptr;
  int64_t mc = 0;  // rows of A packed at once (multiple of kGemmMr)
  int64_t kc = 0;  // depth of a block
  int64_t nc = 0;  // columns of B packed at once (multiple of kGemmNr)
  bool valid() const { return a_pack != nullptr && b_pack != nullptr; }
};

// Reserves packing buffers once per kernel call (the temp allocator cannot free, so reserve
// before a loop of gemm() calls and reuse). Tries smaller blocks before giving up.
GemmWorkspace reserve_gemm_workspace(KernelContext& ctx, int64_t max_m, int64_t max_n, int64_t k);

// Computes the problem. `ctx` (may be null: serial) supplies the thread pool only.
void gemm(KernelContext* ctx, const GemmWorkspace& workspace, const GemmProblem& problem);

// Convenience: reserves a workspace and runs one problem.
void gemm(KernelContext& ctx, const GemmProblem& problem);

}  // namespace portable
}  // namespace ember
