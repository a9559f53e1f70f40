// Which XNNPACK GEMM microkernels this CPU gets for Ember's quantized paths, and a way to make
// XNNPACK use another one (test only).
//
// XNNPACK picks each GEMM's microkernels once per process from the CPU's features (its
// gemm-config.c); a test run on one CPU sees one choice. Issue 26: on Zen 5 and Sapphire Rapids
// the int4 path got a 14-row AVX512-VNNI+GFNI kernel that no CPU here had run, and it computed
// wrong rows. These helpers read XNNPACK's own configuration (its internal headers, installed
// by third_party/xnnpack/build.sh), so a test log says what ran, and they can overwrite the
// qd8-f32-qb4w configuration with any variant this CPU can execute, so one machine tests every
// int4 kernel family it supports rather than only the one XNNPACK prefers.
//
// Threading: not thread-safe. ScopedQb4wVariant changes process-wide state; only tests that
// create and run XNNPACK runtimes on one thread may use it, and runtimes created under it must
// be destroyed before it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace testing {

// One quantized GEMM configuration as XNNPACK selected it on this CPU.
struct GemmSelection {
  std::string path;    // "qd8-f32-qb4w", ...
  std::string kernel;  // the many-row microkernel's name where known, else ""
  int mr = 0, nr = 0, kr = 0, planes = 0;
  bool reads_row_params = false;  // qd8 kernels read one dynamic quantization parameter per tile row
};

// XNNPACK's choices for the int4 / int8 weight-only (qd8) and static int8 (qs8) paths.
std::vector<GemmSelection> quantized_gemm_selections();
// "avx2 fma3 avx512f avx512vnni gfni..." as XNNPACK's hardware configuration sees this CPU.
std::string cpu_features();
// Whether XNNPACK's fp16 path computes in fp16 on this CPU (x86 AVX512-FP16, Arm FP16
// arithmetic): products summed in fp16, so `--xnnpack-fp16` errors are several times those of
// the AVX2 + F16C path, which converts to fp32 around every multiply-add.
bool native_fp16_arithmetic();
// XNN_EXTRA_QUANTIZATION_PARAMS of the XNNPACK Ember was built with: how many parameter rows
// XNNPACK pads past a qd8 tensor's rows. A qd8 kernel of MR rows needs MR - 1.
int extra_quantization_params();

// A GEMM microkernel family of XNNPACK 2024 (gemm-config.c) that a test can force.
struct GemmVariant {
  const char* name;
  bool supported;  // this CPU can execute it
  const char* needs;  // the CPU features it needs
};

// An x86 qd8-f32-qb4w microkernel family.
using Qb4wVariant = GemmVariant;
std::vector<Qb4wVariant> qb4w_variants();  // empty where no variant can be forced (not x86-64)

// Makes XNNPACK's qd8-f32-qb4w configuration the variant `name` until destroyed (restores the
// configuration XNNPACK chose). ok() is false (and nothing changes) when `name` is unknown or
// unsupported here.
class ScopedQb4wVariant {
 public:
  explicit ScopedQb4wVariant(const std::string& name);
  ~ScopedQb4wVariant();
  ScopedQb4wVariant(const ScopedQb4wVariant&) = delete;
  ScopedQb4wVariant& operator=(const ScopedQb4wVariant&) = delete;
  bool ok() const { return saved_ != nullptr; }

 private:
  void* saved_ = nullptr;  // a copy of XNNPACK's configuration
};

// An x86 fp32 GEMM microkernel family: the tile shapes and weight packings every fp32 GEMM /
// IGEMM (and the Winograd convolution's GEMMs) can get.
using F32GemmVariant = GemmVariant;
std::vector<F32GemmVariant> f32_gemm_variants();  // empty where none can be forced (not x86-64)

// Makes XNNPACK's fp32 GEMM configuration (GEMM and IGEMM kernels, packing, tile shape) the
// variant `name` until destroyed; as ScopedQb4wVariant otherwise.
class ScopedF32GemmVariant {
 public:
  explicit ScopedF32GemmVariant(const std::string& name);
  ~ScopedF32GemmVariant();
  ScopedF32GemmVariant(const ScopedF32GemmVariant&) = delete;
  ScopedF32GemmVariant& operator=(const ScopedF32GemmVariant&) = delete;
  bool ok() const { return saved_ != nullptr; }

 private:
  void* saved_ = nullptr;
};

}  // namespace testing
}  // namespace ember
