#include "delegates/xnnpack/runtime/fp16_advice.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <cstdint>
#define EMBER_FP16_ADVICE_X86 1
#endif

namespace ember {
namespace xnnpack {

CpuFp16Features this_cpu_fp16_features() {
  CpuFp16Features f;
#if defined(EMBER_FP16_ADVICE_X86)
  f.x86 = true;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return f;  // no OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool zmm_saved = (xcr0_lo & 0xE6u) == 0xE6u;  // SSE, AVX, opmask, ZMM 0-15 and 16-31 state
  if (!zmm_saved || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx512f = (b & (1u << 16)) != 0;
  f.avx512fp16 = f.avx512f && (d & (1u << 23)) != 0;
#endif
  return f;
}

const char* fp16_slowdown_reason(const CpuFp16Features& cpu) {
  if (!cpu.x86 || !cpu.avx512f || cpu.avx512fp16) return nullptr;
  return "this CPU has AVX-512 but no AVX512-FP16: XNNPACK runs fp16 graphs with 8-lane AVX2 + F16C "
         "conversions around fp32 math, while its fp32 kernels use 16 lanes (measured 2.2-4x slower "
         "than the fp32 program on such a Xeon). The fp16 program saves memory, not time; re-export "
         "without --xnnpack-fp16 for speed";
}

}  // namespace xnnpack
}  // namespace ember
