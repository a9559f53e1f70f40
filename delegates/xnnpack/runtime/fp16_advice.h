// Whether an fp16 XNNPACK delegate (`ember export --xnnpack-fp16`) is likely slower than the fp32
// program on this CPU, so loading can say so rather than run slower silently.
//
// XNNPACK computes fp16 graphs in fp16 only on x86 AVX512-FP16 and on Arm FP16 arithmetic
// (elsewhere on Arm it refuses fp16 and the delegate runs fp32 with a warning). On other x86
// CPUs it converts to fp32 around every multiply-add with AVX2 + F16C, 8 lanes, while its fp32
// kernels on an AVX-512 CPU take 16: the issue-31 Xeon (Sapphire Rapids, before AVX512-FP16 was
// enabled) measured fp16 2.2-4x slower than fp32. On AVX2-only CPUs both paths take 8 lanes and
// fp16 halves the bytes moved (this project's AMD VM: ResNet18 175 -> 136 ms), so no warning.
// Pure functions plus a CPUID read; no allocation; thread-safe.
#pragma once

namespace ember {
namespace xnnpack {

struct CpuFp16Features {
  bool x86 = false;
  bool avx512f = false;     // with the OS saving ZMM state
  bool avx512fp16 = false;  // AVX512-FP16 arithmetic
};

// This CPU's (CPUID leaf 7 and XGETBV on x86-64; all false elsewhere).
CpuFp16Features this_cpu_fp16_features();

// A sentence for the load-time warning when fp16 is expected to be slower than fp32 on `cpu`,
// else nullptr (static storage).
const char* fp16_slowdown_reason(const CpuFp16Features& cpu);

}  // namespace xnnpack
}  // namespace ember
