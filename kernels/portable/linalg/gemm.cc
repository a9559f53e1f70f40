#include "kernels/portable/linalg/gemm.h"

#include <cstring>

#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/util/parallel.h"

namespace ember {
namespace portable {
namespace {

constexpr int kMr = kGemmMr;
constexpr int kNr = kGemmNr;
constexpr int64_t kStackKc = 128;    // depth of the stack path's blocks
constexpr int64_t kTileMPanels = 8;  // packed path: a task computes 8x8 micro-tiles (48x128)
constexpr int64_t kTileNPanels = 8;

// Eight floats; GCC lowers it to one AVX register, two SSE/NEON registers or scalars.
typedef float v8f __attribute__((vector_size(32), may_alias));

#define EMBER_LOAD8(v, p) std::memcpy(&(v), (p), sizeof(v8f))
#define EMBER_STORE8(p, v) std::memcpy((p), &(v), sizeof(v8f))

using MicroKernelFn = void (*)(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc,
                               float alpha, float beta);

// C[0..6) x [0..16) = alpha * sum_p ap[p*6 + r] * bp[p*16 + j] + beta * C (beta == 0: no read).
// Kept as a macro-free inline body so that each target build inlines its own copy.
__attribute__((always_inline)) inline void micro_kernel_body(int64_t kc, const float* ap,
                                                             const float* bp, float* c, int64_t ldc,
                                                             float alpha, float beta) {
  v8f c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {};
  v8f c30 = {}, c31 = {}, c40 = {}, c41 = {}, c50 = {}, c51 = {};
  for (int64_t p = 0; p < kc; ++p) {
    v8f b0, b1;
    EMBER_LOAD8(b0, bp);
    EMBER_LOAD8(b1, bp + 8);
    const float a0 = ap[0], a1 = ap[1], a2 = ap[2], a3 = ap[3], a4 = ap[4], a5 = ap[5];
    c00 += a0 * b0; c01 += a0 * b1;
    c10 += a1 * b0; c11 += a1 * b1;
    c20 += a2 * b0; c21 += a2 * b1;
    c30 += a3 * b0; c31 += a3 * b1;
    c40 += a4 * b0; c41 += a4 * b1;
    c50 += a5 * b0; c51 += a5 * b1;
    ap += kMr;
    bp += kNr;
  }
#define EMBER_STORE_ROW(r, lo, hi)                 \
  do {                                             \
    float* row = c + (r) * ldc;                    \
    v8f x0 = alpha * (lo), x1 = alpha * (hi);      \
    if (beta != 0.0f) {                            \
      v8f y0, y1;                                  \
      EMBER_LOAD8(y0, row);                        \
      EMBER_LOAD8(y1, row + 8);                    \
      x0 += beta * y0;                             \
      x1 += beta * y1;                             \
    }                                              \
    EMBER_STORE8(row, x0);                         \
    EMBER_STORE8(row + 8, x1);                     \
  } while (0)
  EMBER_STORE_ROW(0, c00, c01);
  EMBER_STORE_ROW(1, c10, c11);
  EMBER_STORE_ROW(2, c20, c21);
  EMBER_STORE_ROW(3, c30, c31);
  EMBER_STORE_ROW(4, c40, c41);
  EMBER_STORE_ROW(5, c50, c51);
#undef EMBER_STORE_ROW
}

void micro_kernel_generic(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc,
                          float alpha, float beta) {
  micro_kernel_body(kc, ap, bp, c, ldc, alpha, beta);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(EMBER_GEMM_NO_AVX2)
#define EMBER_GEMM_HAVE_AVX2 1
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int64_t kc, const float* ap,
                                                           const float* bp, float* c, int64_t ldc,
                                                           float alpha, float beta) {
  micro_kernel_body(kc, ap, bp, c, ldc, alpha, beta);
}
#endif

MicroKernelFn select_micro_kernel() {
#ifdef EMBER_GEMM_HAVE_AVX2
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return micro_kernel_avx2;
#endif
  return micro_kernel_generic;
}

// Runs one micro-tile; partial tiles (mr < 6 or nr < 16) go through a local buffer.
inline void run_tile(MicroKernelFn kernel, int64_t kc, const float* ap, const float* bp, float* c,
                     int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta) {
  if (mr == kMr && nr == kNr) {
    kernel(kc, ap, bp, c, ldc, alpha, beta);
    return;
  }
  alignas(64) float tile[kMr * kNr];
  kernel(kc, ap, bp, tile, kNr, 1.0f, 0.0f);
  for (int64_t r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    const float* t = tile + r * kNr;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * t[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * t[j] + beta * row[j];
    }
  }
}

// dst[p * 6 + r] = A(i0 + r, p0 + p), rows beyond mr zero.
void pack_a_panel(const GemmMatrix& a, int64_t i0, int64_t mr, int64_t p0, int64_t kc, float* dst) {
  if (mr < kMr) std::memset(dst, 0, sizeof(float) * kc * kMr);
  if (a.col_stride == 1) {
    for (int64_t r = 0; r < mr; ++r) {
      const float* src = a.data + (i0 + r) * a.row_stride + p0;
      for (int64_t p = 0; p < kc; ++p) dst[p * kMr + r] = src[p];
    }
  } else if (a.row_stride == 1 && mr == kMr) {
    for (int64_t p = 0; p < kc; ++p) {
      std::memcpy(dst + p * kMr, a.data + (p0 + p) * a.col_stride + i0, sizeof(float) * kMr);
    }
  } else {
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = a.data + (p0 + p) * a.col_stride + i0 * a.row_stride;
      for (int64_t r = 0; r < mr; ++r) dst[p * kMr + r] = src[r * a.row_stride];
    }
  }
}

void pack_b_strided(const void* state, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float* dst) {
  const GemmMatrix& b = *static_cast<const GemmMatrix*>(state);
  if (b.col_stride == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      float* d = dst + p * kNr;
      std::memcpy(d, b.data + (p0 + p) * b.row_stride + j0, sizeof(float) * nr);
      for (int64_t j = nr; j < kNr; ++j) d[j] = 0.0f;
    }
    return;
  }
  if (nr < kNr) std::memset(dst, 0, sizeof(float) * kc * kNr);
  for (int64_t j = 0; j < nr; ++j) {
    const float* src = b.data + (j0 + j) * b.col_stride + p0 * b.row_stride;
    for (int64_t p = 0; p < kc; ++p) dst[p * kNr + j] = src[p * b.row_stride];
  }
}

template <typename F>
void run_parallel(KernelContext* ctx, int64_t count, int64_t grain, const F& f) {
  if (ctx == nullptr) {
    f(int64_t{0}, count);
  } else {
    parallel_for_range(*ctx, count, grain, f);
  }
}

// ---- m <= 2 with a contiguous operand: dot products or row updates (memory bound) ----

inline float dot(const float* x, const float* y, int64_t n) {
  v8f s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    v8f x0, x1, x2, x3, y0, y1, y2, y3;
    EMBER_LOAD8(x0, x + i);
    EMBER_LOAD8(x1, x + i + 8);
    EMBER_LOAD8(x2, x + i + 16);
    EMBER_LOAD8(x3, x + i + 24);
    EMBER_LOAD8(y0, y + i);
    EMBER_LOAD8(y1, y + i + 8);
    EMBER_LOAD8(y2, y + i + 16);
    EMBER_LOAD8(y3, y + i + 24);
    s0 += x0 * y0;
    s1 += x1 * y1;
    s2 += x2 * y2;
    s3 += x3 * y3;
  }
  for (; i + 8 <= n; i += 8) {
    v8f x0, y0;
    EMBER_LOAD8(x0, x + i);
    EMBER_LOAD8(y0, y + i);
    s0 += x0 * y0;
  }
  v8f s = (s0 + s1) + (s2 + s3);
  float total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

// B's columns are contiguous (B = W^T of a row-major W) and A's rows are contiguous.
void gemv_dot(KernelContext* ctx, const GemmProblem& pr) {
  run_parallel(ctx, pr.n, 16, [&pr](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < pr.m; ++i) {
      const float* arow = pr.a.data + i * pr.a.row_stride;
      float* crow = pr.c + i * pr.ldc;
      for (int64_t j = j0; j < j1; ++j) {
        float s = pr.alpha * dot(arow, pr.b.data + j * pr.b.col_stride, pr.k);
        crow[j] = pr.beta == 0.0f ? s : s + pr.beta * crow[j];
      }
    }
  });
}

// B's rows are contiguous: C[i, :] = beta*C[i, :] + alpha * sum_p A(i, p) * B[p, :].
void gemv_axpy(KernelContext* ctx, const GemmProblem& pr) {
  run_parallel(ctx, pr.n, 64, [&pr](int64_t j0, int64_t j1) {
    constexpr int64_t kChunk = 512;
    for (int64_t i = 0; i < pr.m; ++i) {
      float* crow = pr.c + i * pr.ldc;
      for (int64_t jb = j0; jb < j1; jb += kChunk) {
        int64_t je = jb + kChunk < j1 ? jb + kChunk : j1;
        if (pr.beta == 0.0f) {
          for (int64_t j = jb; j < je; ++j) crow[j] = 0.0f;
        } else if (pr.beta != 1.0f) {
          for (int64_t j = jb; j < je; ++j) crow[j] *= pr.beta;
        }
        for (int64_t p = 0; p < pr.k; ++p) {
          const float s = pr.alpha * pr.a.data[i * pr.a.row_stride + p * pr.a.col_stride];
          axpy(je - jb, s, pr.b.data + p * pr.b.row_stride + jb, crow + jb);
        }
      }
    }
  });
}

// ---- stack path: B blocks of 128 x 16 and A blocks of 128 x 6 packed on the stack ----

void gemm_stack(KernelContext* ctx, MicroKernelFn kernel, GemmPackB pack_b, const void* pack_state,
                const GemmProblem& pr) {
  const int64_t npanels = ceil_div(pr.n, kNr);
  const int64_t row_block = 16 * kMr;
  const int64_t row_groups = ceil_div(pr.m, row_block);
  struct Shared {
    const GemmProblem* pr;
    MicroKernelFn kernel;
    GemmPackB pack_b;
    const void* pack_state;
    int64_t npanels, row_block;
  } sh{&pr, kernel, pack_b, pack_state, npanels, row_block};
  run_parallel(ctx, npanels * row_groups, 1, [&sh](int64_t t0, int64_t t1) {
    const GemmProblem& p = *sh.pr;
    alignas(64) float bbuf[kStackKc * kNr];
    alignas(64) float abuf[kStackKc * kMr];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t panel = t % sh.npanels;
      const int64_t i_begin = (t / sh.npanels) * sh.row_block;
      const int64_t i_end = i_begin + sh.row_block < p.m ? i_begin + sh.row_block : p.m;
      const int64_t j0 = panel * kNr;
      const int64_t nr = p.n - j0 < kNr ? p.n - j0 : kNr;
      for (int64_t p0 = 0; p0 < p.k; p0 += kStackKc) {
        const int64_t kc = p.k - p0 < kStackKc ? p.k - p0 : kStackKc;
        const float beta = p0 == 0 ? p.beta : 1.0f;
        sh.pack_b(sh.pack_state, p0, kc, j0, nr, bbuf);
        for (int64_t i0 = i_begin; i0 < i_end; i0 += kMr) {
          const int64_t mr = i_end - i0 < kMr ? i_end - i0 : kMr;
          pack_a_panel(p.a, i0, mr, p0, kc, abuf);
          run_tile(sh.kernel, kc, abuf, bbuf, p.c + i0 * p.ldc + j0, p.ldc, mr, nr, p.alpha, beta);
        }
      }
    }
  });
}

// ---- packed path ----

void gemm_packed(KernelContext* ctx, MicroKernelFn kernel, GemmPackB pack_b, const void* pack_state,
                 const GemmWorkspace& ws, const GemmProblem& pr) {
  for (int64_t jc = 0; jc < pr.n; jc += ws.nc) {
    const int64_t nc = pr.n - jc < ws.nc ? pr.n - jc : ws.nc;
    const int64_t npanels = ceil_div(nc, kNr);
    for (int64_t pc = 0; pc < pr.k; pc += ws.kc) {
      const int64_t kc = pr.k - pc < ws.kc ? pr.k - pc : ws.kc;
      const float beta = pc == 0 ? pr.beta : 1.0f;
      float* bpack = ws.b_pack;
      run_parallel(ctx, npanels, 4, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t j0 = jc + q * kNr;
          const int64_t nr = jc + nc - j0 < kNr ? jc + nc - j0 : kNr;
          pack_b(pack_state, pc, kc, j0, nr, bpack + q * kc * kNr);
        }
      });
      for (int64_t ic = 0; ic < pr.m; ic += ws.mc) {
        const int64_t mc = pr.m - ic < ws.mc ? pr.m - ic : ws.mc;
        const int64_t mpanels = ceil_div(mc, kMr);
        float* apack = ws.a_pack;
        run_parallel(ctx, mpanels, 4, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t i0 = ic + r * kMr;
            const int64_t mr = ic + mc - i0 < kMr ? ic + mc - i0 : kMr;
            pack_a_panel(pr.a, i0, mr, pc, kc, apack + r * kc * kMr);
          }
        });
        const int64_t mtiles = ceil_div(mpanels, kTileMPanels);
        const int64_t ntiles = ceil_div(npanels, kTileNPanels);
        run_parallel(ctx, mtiles * ntiles, 1, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t mt = t % mtiles, nt = t / mtiles;
            const int64_t rp_end = (mt + 1) * kTileMPanels < mpanels ? (mt + 1) * kTileMPanels : mpanels;
            const int64_t qp_end = (nt + 1) * kTileNPanels < npanels ? (nt + 1) * kTileNPanels : npanels;
            for (int64_t q = nt * kTileNPanels; q < qp_end; ++q) {
              const int64_t j0 = jc + q * kNr;
              const int64_t nr = jc + nc - j0 < kNr ? jc + nc - j0 : kNr;
              const float* bp = bpack + q * kc * kNr;
              for (int64_t r = mt * kTileMPanels; r < rp_end; ++r) {
                const int64_t i0 = ic + r * kMr;
                const int64_t mr = ic + mc - i0 < kMr ? ic + mc - i0 : kMr;
                run_tile(kernel, kc, apack + r * kc * kMr, bp, pr.c + i0 * pr.ldc + j0, pr.ldc, mr,
                         nr, pr.alpha, beta);
              }
            }
          }
        });
      }
    }
  }
}

int64_t round_up(int64_t v, int64_t m) { return ceil_div(v, m) * m; }

}  // namespace

GemmWorkspace reserve_gemm_workspace(KernelContext& ctx, int64_t max_m, int64_t max_n, int64_t k) {
  GemmWorkspace ws;
  if (max_m <= 0 || max_n <= 0 || k <= 0) return ws;
  // (mc, nc) candidates from large to small; kc is 256 (or k when smaller).
  static const int64_t kMcs[] = {384, 96, 48};
  static const int64_t kNcs[] = {1024, 256, 64};
  const int64_t kc = k < 256 ? k : 256;
  for (int s = 0; s < 3; ++s) {
    const int64_t mc = round_up(max_m, kMr) < kMcs[s] ? round_up(max_m, kMr) : kMcs[s];
    const int64_t nc = round_up(max_n, kNr) < kNcs[s] ? round_up(max_n, kNr) : kNcs[s];
    const int64_t a_floats = round_up(kc * mc, 16);  // keeps b_pack 64-byte aligned
    const size_t bytes = sizeof(float) * static_cast<size_t>(a_floats + kc * nc);
    float* base = static_cast<float*>(ctx.allocate_temp(bytes, 64));
    if (base != nullptr) {
      ws.a_pack = base;
      ws.b_pack = base + a_floats;
      ws.mc = mc;
      ws.kc = kc;
      ws.nc = nc;
      return ws;
    }
  }
  return ws;
}

void gemm(KernelContext* ctx, const GemmWorkspace& ws, const GemmProblem& pr) {
  if (pr.m <= 0 || pr.n <= 0) return;
  if (pr.k <= 0) {  // C = beta * C
    for (int64_t i = 0; i < pr.m; ++i) {
      float* row = pr.c + i * pr.ldc;
      for (int64_t j = 0; j < pr.n; ++j) row[j] = pr.beta == 0.0f ? 0.0f : pr.beta * row[j];
    }
    return;
  }
  if (pr.pack_b == nullptr && pr.m <= 2) {
    if (pr.b.row_stride == 1 && pr.a.col_stride == 1) return gemv_dot(ctx, pr);
    if (pr.b.col_stride == 1) return gemv_axpy(ctx, pr);
  }
  const MicroKernelFn kernel = select_micro_kernel();
  GemmPackB pack_b = pr.pack_b != nullptr ? pr.pack_b : pack_b_strided;
  const void* pack_state = pr.pack_b != nullptr ? pr.pack_b_state : static_cast<const void*>(&pr.b);
  // Per-call workspaces sized for smaller problems still work: blocks just loop more.
  if (ws.valid() && pr.m > kMr && (ws.kc >= pr.k || ws.kc >= 64)) {
    gemm_packed(ctx, kernel, pack_b, pack_state, ws, pr);
  } else {
    gemm_stack(ctx, kernel, pack_b, pack_state, pr);
  }
}

void gemm(KernelContext& ctx, const GemmProblem& problem) {
  GemmWorkspace ws;
  if (problem.m > kMr) ws = reserve_gemm_workspace(ctx, problem.m, problem.n, problem.k);
  gemm(&ctx, ws, problem);
}

}  // namespace portable
}  // namespace ember
