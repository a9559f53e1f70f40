// Without the custom operator's kernel (this test does not link scaled_tanh_kernel.cc), the
// program still exports, since its kernel is the application's, and loading it fails with
// an error naming the operator, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "examples/custom_op/custom_op_test.h"
#include "extension/module/module.h"

namespace ember {
namespace custom_op_example {
namespace {

TEST(CustomOpMissingKernel, LoadingNamesTheOperator) {
  const std::string pte = tmp_file("custom_op_no_kernel.pte");
  ASSERT_TRUE(export_example(pte).ok());
  Module m(pte);
  Status s = m.load_method("forward");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("ember_example::scaled_tanh.default"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace custom_op_example
}  // namespace ember
