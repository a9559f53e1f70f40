// A selective build of the portable kernels (ember_selective_kernels over
// selective_ops.txt): the selected operators register, no other kernel does, and a program
// needing an unselected operator fails to load with one line that names it, says it is not
// in this build and how to rebuild.
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/kernel_selection.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Harness;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::TensorHolder;

// The checked-in list the library was built from (data dependency of the test).
std::set<std::string> selected_ops() {
  std::ifstream f("test/runtime/selective_ops.txt");
  std::set<std::string> ops;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] != '#') ops.insert(line);
  }
  return ops;
}

TEST(SelectiveBuildTest, OnlySelectedOperatorsAreRegistered) {
  const std::set<std::string> selected = selected_ops();
  ASSERT_EQ(selected.size(), 3u);
  for (const std::string& op : selected) EXPECT_NE(find_kernel(op.c_str()), nullptr) << op;
  std::set<std::string> registered;
  for (size_t i = 0; i < num_registered_kernels(); ++i) {
    const std::string name = registered_kernel(i).name;
    // Not the test harness's test::*.
    if (name.rfind("aten::", 0) == 0 || name.rfind("ember_llm::", 0) == 0) registered.insert(name);
  }
  EXPECT_EQ(registered, selected);
  // Operators the full portable library has.
  EXPECT_EQ(find_kernel("aten::mul.Tensor"), nullptr);
  EXPECT_EQ(find_kernel("aten::relu_.default"), nullptr);  // same kernel function, other name
  EXPECT_EQ(find_kernel("aten::convolution.default"), nullptr);
  EXPECT_EQ(find_kernel("ember_llm::rms_norm.default"), nullptr);  // a fused kernel not selected
}

// The fused LLM kernels (kernels/optimized) are part of selective builds: a program exported
// with them runs on a runner that links only the selected kernels.
TEST(SelectiveBuildTest, ASelectedFusedKernelRuns) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t gate = m.input_tensor(ScalarType::Float32, {4});
  int32_t up = m.input_tensor(ScalarType::Float32, {4});
  int32_t y = m.planned_tensor(ScalarType::Float32, {4});
  m.kernel("ember_llm::silu_mul", "default", {gate, up, y});
  m.set_inputs({static_cast<uint32_t>(gate), static_cast<uint32_t>(up)}).set_outputs({static_cast<uint32_t>(y)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  std::vector<float> g = {-1, 0, 1, 2}, u = {2, 3, 4, 5};
  TensorHolder gi(ScalarType::Float32, {4}, g.data()), ui(ScalarType::Float32, {4}, u.data());
  ASSERT_EQ(h.method().set_input(0, gi.value), Error::Ok) << h.method().last_error_message();
  ASSERT_EQ(h.method().set_input(1, ui.value), Error::Ok) << h.method().last_error_message();
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  const float* out = h.method().output(0).as_tensor->data_as<float>();
  for (int i = 0; i < 4; ++i) {
    const double silu = g[i] / (1.0 + std::exp(-double(g[i])));
    EXPECT_NEAR(out[i], silu * u[i], 1e-5) << i;
  }
}

TEST(SelectiveBuildTest, TheLibraryNotesItIsSelective) {
  ASSERT_NE(kernel_selection(), nullptr);
  EXPECT_STREQ(kernel_selection(), "operators of selective_build_test's programs (test/runtime/selective_ops.txt)");
}

TEST(SelectiveBuildTest, ASelectedProgramRuns) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t x = m.input_tensor(ScalarType::Float32, {4});
  int32_t y = m.planned_tensor(ScalarType::Float32, {4});
  m.kernel("aten::relu", "default", {x, y});
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(y)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  std::vector<float> in = {-1, 2, -3, 4};
  TensorHolder input(ScalarType::Float32, {4}, in.data());
  ASSERT_EQ(h.method().set_input(0, input.value), Error::Ok) << h.method().last_error_message();
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  const float* out = h.method().output(0).as_tensor->data_as<float>();
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{0, 2, 0, 4}));
}

TEST(SelectiveBuildTest, AnUnselectedOperatorIsNotInThisBuild) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t x = m.input_tensor(ScalarType::Float32, {4});
  int32_t y = m.planned_tensor(ScalarType::Float32, {4});
  int32_t z = m.planned_tensor(ScalarType::Float32, {4});
  m.kernel("aten::relu", "default", {x, y});
  m.kernel("aten::mul", "Tensor", {y, y, z});
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(z)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  EXPECT_EQ(h.load_method("forward"), Error::NotSupported);
  const std::string msg = h.message();
  EXPECT_EQ(msg,
            "method 'forward' uses operators not in this build: aten::mul.Tensor (kernels selected from "
            "operators of selective_build_test's programs (test/runtime/selective_ops.txt)); rebuild with "
            "this program added to --ops-from");
}

}  // namespace
}  // namespace ember
