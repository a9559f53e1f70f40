// fp16_advice.h: when loading an fp16 XNNPACK delegate warns that it will likely be slower than
// fp32 (x86 with AVX-512 but no AVX512-FP16), and this CPU's features as CPUID reports them,
// checked against XNNPACK's own view of the CPU.
#include <string>

#include <gtest/gtest.h>

#include "delegates/xnnpack/runtime/fp16_advice.h"
#include "test/delegates/xnnpack/xnnpack_kernel_selection.h"

namespace ember {
namespace xnnpack {
namespace {

TEST(Fp16AdviceTest, WarnsOnlyWhereFp32HasTwiceTheLanes) {
  CpuFp16Features avx2;  // this project's AMD VM: AVX2 + F16C only
  avx2.x86 = true;
  EXPECT_EQ(fp16_slowdown_reason(avx2), nullptr);
  CpuFp16Features skylake = avx2;  // AVX-512 without fp16 arithmetic
  skylake.avx512f = true;
  const char* why = fp16_slowdown_reason(skylake);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("AVX512-FP16"), std::string::npos);
  EXPECT_NE(std::string(why).find("re-export without --xnnpack-fp16"), std::string::npos);
  CpuFp16Features sapphire = skylake;  // native fp16
  sapphire.avx512fp16 = true;
  EXPECT_EQ(fp16_slowdown_reason(sapphire), nullptr);
  EXPECT_EQ(fp16_slowdown_reason(CpuFp16Features{}), nullptr);  // Arm and others: XNNPACK decides
}

TEST(Fp16AdviceTest, ThisCpuAgreesWithXnnpack) {
  const CpuFp16Features cpu = this_cpu_fp16_features();
  const std::string xnn = " " + testing::cpu_features() + " ";
  std::printf("CPUID: x86 %d avx512f %d avx512fp16 %d; XNNPACK:%s\n", cpu.x86, cpu.avx512f, cpu.avx512fp16, xnn.c_str());
  if (!cpu.x86) GTEST_SKIP() << "not x86-64";
  EXPECT_EQ(cpu.avx512f, xnn.find(" avx512f ") != std::string::npos);
  EXPECT_EQ(cpu.avx512fp16, testing::native_fp16_arithmetic());
}

}  // namespace
}  // namespace xnnpack
}  // namespace ember
