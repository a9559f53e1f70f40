// Row routines of the fused LLM kernels (kernels/optimized/llm_kernels.cc), one table per
// instruction set, chosen once at run time from the CPU's features.
//
// Each table is the same template code (llm_simd_body.h) compiled for one target:
//   scalar   every CPU (the fallback, and the reference the SIMD paths are tested against)
//   avx2     x86-64 with AVX2 + FMA          (llm_simd_avx2.cc,   #pragma GCC target)
//   avx512   x86-64 with AVX-512F (+AVX2/FMA) (llm_simd_avx512.cc, #pragma GCC target)
//   neon     Arm64 (NEON is baseline there)   (llm_simd_neon.cc)
// A table exists only when compiled for the build's architecture and usable on this CPU.
//
// Selection: the best table the CPU supports, unless EMBER_LLM_ISA=scalar|avx2|avx512|neon
// names another usable one (benchmarks, A/B checks). Tests force one with set_llm_isa().
// The choice is one atomic pointer, read once per kernel call.
#pragma once

#include <cstdint>

namespace ember {
namespace optimized {

enum class LlmIsa { Scalar, Avx2, Avx512, Neon };

// Most query rows in one AttentionBlock (the row lengths live on the stack).
constexpr int64_t kMaxAttentionRows = 64;

// One block of attention work: query rows [t0, t0 + tn) of the n_rep query heads that
// share one key/value head, over the cached positions [0, pos[t] + 1) of each row.
struct AttentionBlock {
  const float* q;        // query of this batch item, [H, T, D]
  const float* k_cache;  // this key/value head's cache, [S, D]
  const float* v_cache;  // [S, D]
  float* out;            // output of this batch item, [H, T, D]
  const int64_t* pos;    // [T], each in [0, S) (checked by the caller)
  int64_t T, D;
  int64_t head0, n_rep;  // query heads head0 .. head0 + n_rep - 1
  int64_t t0, tn;        // 1 <= tn <= kMaxAttentionRows
  float scale;
  float* scores;         // scratch: tn * n_rep * (max pos in the block + 1) floats
};

struct LlmMath {
  LlmIsa isa;
  const char* name;
  // softmax(scale * q k^T) v per query row of the block, keys limited to each row's prefix.
  void (*attend)(const AttentionBlock& block);
  // rows x n: out = x * (1 / sqrt(mean(x^2) + eps)) * weight[n].
  void (*rms_norm)(const float* x, const float* weight, float eps, float* out, int64_t rows, int64_t n);
  // rows x (2 * half), rotate_half form: out = x * cos + cat(-x[half:], x[:half]) * sin;
  // cos/sin row r is at cos + r * cs_stride (cs_stride 0: one row for all).
  void (*rope)(const float* x, const float* cos, const float* sin, int64_t cs_stride, float* out,
               int64_t rows, int64_t half);
  // n elements: out = a * sigmoid(a) * b.
  void (*silu_mul)(const float* a, const float* b, float* out, int64_t n);
};

// The table in use (selected on first call).
const LlmMath& llm_math();
// The table for `isa`, or null when it is not compiled in or this CPU lacks the features.
const LlmMath* llm_math_for(LlmIsa isa);
// Makes `isa` the table in use; false (nothing changes) when it is unavailable. For tests and
// benchmarks: kernels running concurrently see either the old or the new table.
bool set_llm_isa(LlmIsa isa);
// The best table this CPU supports (what is used unless EMBER_LLM_ISA or set_llm_isa say otherwise).
LlmIsa best_llm_isa();

// Per instruction set (null when not built for this architecture); no CPU check.
const LlmMath* llm_math_scalar();
const LlmMath* llm_math_avx2();
const LlmMath* llm_math_avx512();
const LlmMath* llm_math_neon();

}  // namespace optimized
}  // namespace ember
