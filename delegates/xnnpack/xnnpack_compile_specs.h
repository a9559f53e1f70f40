// Compile specs of XNNPACK delegates: written by the exporter's partitioner, read by the
// runtime backend at init. One definition for both sides.
#pragma once

#include <cstdint>

namespace ember {
namespace xnnpack {

// "num_threads": little-endian uint32 or uint64 fallback thread count (see xnnpack_backend.h).
constexpr const char* kNumThreadsSpec = "num_threads";

// "fp16": one byte, 1: the delegate's runtimes are created for fp16 inference (XNNPACK's
// FORCE_FP16 flag: fp16 weights and activations; native fp16 math on Arm FP16 and x86
// AVX512-FP16 CPUs, fp16 storage around fp32 math (F16C) on other AVX2 CPUs). Where XNNPACK
// cannot (no fp16 support in the CPU, or an op without an fp16 kernel), fp32 with a warning.
// Absent or 0: fp32. Written by `ember export --xnnpack-fp16`.
constexpr const char* kFp16Spec = "fp16";

}  // namespace xnnpack
}  // namespace ember
