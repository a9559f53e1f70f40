#include "kernels/optimized/llm_simd.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace ember {
namespace optimized {
namespace {

bool cpu_has(LlmIsa isa) {
  switch (isa) {
    case LlmIsa::Scalar:
      return true;
#if defined(__x86_64__) && defined(__GNUC__)
    case LlmIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case LlmIsa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
#endif
#if defined(__aarch64__)
    case LlmIsa::Neon:
      return true;
#endif
    default:
      return false;
  }
}

const LlmMath* compiled(LlmIsa isa) {
  switch (isa) {
    case LlmIsa::Scalar: return llm_math_scalar();
    case LlmIsa::Avx2: return llm_math_avx2();
    case LlmIsa::Avx512: return llm_math_avx512();
    case LlmIsa::Neon: return llm_math_neon();
  }
  return nullptr;
}

// EMBER_LLM_ISA when it names a usable table, else the best one.
const LlmMath* initial_table() {
  const char* env = std::getenv("EMBER_LLM_ISA");
  if (env != nullptr) {
    for (LlmIsa isa : {LlmIsa::Scalar, LlmIsa::Avx2, LlmIsa::Avx512, LlmIsa::Neon}) {
      const LlmMath* m = llm_math_for(isa);
      if (m != nullptr && std::strcmp(env, m->name) == 0) return m;
    }
  }
  return llm_math_for(best_llm_isa());
}

std::atomic<const LlmMath*> g_active{nullptr};

}  // namespace

const LlmMath* llm_math_for(LlmIsa isa) { return cpu_has(isa) ? compiled(isa) : nullptr; }

LlmIsa best_llm_isa() {
  for (LlmIsa isa : {LlmIsa::Avx512, LlmIsa::Avx2, LlmIsa::Neon}) {
    if (llm_math_for(isa) != nullptr) return isa;
  }
  return LlmIsa::Scalar;
}

const LlmMath& llm_math() {
  const LlmMath* m = g_active.load(std::memory_order_acquire);
  if (m == nullptr) {
    // Racing first calls compute the same table; whichever store wins is correct.
    m = initial_table();
    const LlmMath* expected = nullptr;
    if (!g_active.compare_exchange_strong(expected, m, std::memory_order_acq_rel)) m = expected;
  }
  return *m;
}

bool set_llm_isa(LlmIsa isa) {
  const LlmMath* m = llm_math_for(isa);
  if (m == nullptr) return false;
  g_active.store(m, std::memory_order_release);
  return true;
}

}  // namespace optimized
}  // namespace ember
