// The custom operator example end to end: the exporter refuses the op until given its
// signature and says how; with it, the program runs through the Module API and through the
// example's `ember` (kernel linked in) and matches eager PyTorch (output_0.npy).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "examples/custom_op/custom_op_test.h"
#include "exporter/ops/op_schemas.h"
#include "extension/module/module.h"

namespace ember {
namespace custom_op_example {
namespace {

// Runs first (gtest keeps the file's order): the schema table is process-wide and only grows.
TEST(CustomOp, UnknownOperatorErrorSaysHowToSupplyIt) {
  auto r = exporter::export_pt2_file(example_file("model.pt2"), exporter::ExportOptions());
  ASSERT_FALSE(r.ok());
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("ember_example::scaled_tanh.default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--op-schema"), std::string::npos) << msg;
  EXPECT_NE(msg.find("register_kernel"), std::string::npos) << msg;
}

TEST(CustomOp, ModuleRunMatchesPyTorch) {
  const std::string pte = tmp_file("custom_op.pte");
  ASSERT_TRUE(export_example(pte).ok());
  auto x = read_npy(example_file("input_0.npy"));
  auto expected = read_npy(example_file("output_0.npy"));
  ASSERT_TRUE(x.ok() && expected.ok());
  Module m(pte);
  auto out = m.forward({*x});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  const Output& y = out->at(0);
  ASSERT_EQ(y.numel(), expected->numel());
  ASSERT_GT(y.numel(), 0);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double d = double(y.data<float>()[i]) - double(expected->data<float>()[i]);
    err += d * d;
    norm += double(expected->data<float>()[i]) * double(expected->data<float>()[i]);
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-5) << "relative L2 against eager PyTorch";
}

TEST(CustomOp, CommandLineWithTheKernelExportsRunsAndVerifies) {
  const std::string ember = example_file("ember");
  const std::string pte = tmp_file("custom_op_cli.pte");
  const std::string dir = example_file("");
  // The example's directory is also a bundle case: input_0.npy with PyTorch's output_0.npy.
  const std::string exp = ember + " export " + example_file("model.pt2") + " -o " + pte + " --op-schemas " +
                          example_file("op_schemas.txt") + " --bundle " + dir + " > /dev/null";
  ASSERT_EQ(std::system(exp.c_str()), 0) << exp;
  const std::string verify = ember + " verify " + pte;
  EXPECT_EQ(std::system(verify.c_str()), 0) << verify;
  const std::string run = ember + " run " + pte + " --input " + example_file("input_0.npy") + " --output-dir " +
                          tmp_file("cli_out") + " > /dev/null";
  EXPECT_EQ(std::system(run.c_str()), 0) << run;
  auto y = read_npy(tmp_file("cli_out") + "/output_0.npy");
  auto expected = read_npy(example_file("output_0.npy"));
  ASSERT_TRUE(y.ok() && expected.ok());
  ASSERT_EQ(y->numel(), expected->numel());
  for (int64_t i = 0; i < y->numel(); ++i) {
    EXPECT_NEAR(y->data<float>()[i], expected->data<float>()[i], 1e-5) << i;
  }
}

TEST(CustomOp, SignaturesAreChecked) {
  using exporter::add_custom_op_schema;
  EXPECT_FALSE(add_custom_op_schema("scaled(Tensor x) -> Tensor").ok()) << "no namespace";
  EXPECT_FALSE(add_custom_op_schema("aten::my_relu(Tensor x) -> Tensor").ok()) << "PyTorch's namespace";
  EXPECT_FALSE(add_custom_op_schema("mylib::inplace(Tensor(a!) x) -> Tensor(a!)").ok()) << "mutates";
  EXPECT_FALSE(add_custom_op_schema("mylib::nothing(Tensor x) -> ()").ok()) << "returns nothing";
  EXPECT_FALSE(add_custom_op_schema("mylib::broken(Tensor x -> Tensor").ok()) << "does not parse";
  ASSERT_TRUE(add_custom_op_schema("mylib::twice(Tensor x, int k=2) -> Tensor").ok());
  EXPECT_TRUE(add_custom_op_schema("mylib::twice(Tensor x, int k=2) -> Tensor").ok()) << "same again";
  EXPECT_FALSE(add_custom_op_schema("mylib::twice(Tensor x, float k) -> Tensor").ok()) << "a second signature";
  ASSERT_NE(exporter::find_op_schema("mylib::twice", "default"), nullptr);
  EXPECT_TRUE(exporter::is_custom_op("mylib::twice.default"));
  EXPECT_FALSE(exporter::is_custom_op("aten::relu.default"));
  // Only an alias annotation's '!' means "writes": a default string may hold one.
  EXPECT_TRUE(add_custom_op_schema("mylib::say(Tensor x, str s=\"hi!\") -> Tensor").ok());
}

TEST(CustomOp, SignatureFilesSkipCommentsBlankLinesAndCarriageReturns) {
  const std::string path = tmp_file("schemas.txt");
  std::ofstream(path) << "  # a comment\r\n\r\n  mylib::one(Tensor x) -> Tensor\r\nmylib::two(Tensor x) -> Tensor\n";
  auto sigs = exporter::read_custom_op_schemas(path);
  ASSERT_TRUE(sigs.ok()) << sigs.status();
  EXPECT_EQ(*sigs, (std::vector<std::string>{"mylib::one(Tensor x) -> Tensor", "mylib::two(Tensor x) -> Tensor"}));
  EXPECT_FALSE(exporter::read_custom_op_schemas(tmp_file("no_such_file.txt")).ok());
}

}  // namespace
}  // namespace custom_op_example
}  // namespace ember
