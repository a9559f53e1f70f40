// Programs the exporter writes put every instruction's output where it may write: never in
// a constant, never in an input the model does not mutate (models in
// test/hardening/models, made by tools/models/export_write_target_models.py).
// - t5_tiny: a Hugging Face T5 encoder once exported into a program whose int64 `add` wrote
//   its output into a constant (constant folding had baked a buffer that later in-place adds
//   target) and `ember run` crashed writing into the read-only mapping of the file. The
//   crashing program itself is regressions/pte/t5_kernel_writes_constant.pte.
// - input_mutation: `x.add_(y)` on a user input: the program declares input 0 mutable.
// Each exports, passes full verification and matches PyTorch, with the portable kernels and
// with XNNPACK.
#include <string>

#include <gtest/gtest.h>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "schema/program_generated.h"
#include "runtime/program/file_header.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

std::string model_dir(const std::string& name) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  std::string root = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
  return root + "test/hardening/models/" + name;
}

exporter::ExportOptions options_for(bool xnnpack) {
  exporter::ExportOptions options;
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  return options;
}

// Exports, checks the program's declared mutable inputs, runs and compares.
void export_run_and_compare(const std::string& name, bool xnnpack, std::vector<uint32_t> mutable_input_positions) {
  auto r = exporter::export_pt2_file(model_dir(name) + "/model.pt2", options_for(xnnpack));
  ASSERT_TRUE(r.ok()) << r.status();
  const schema::Method* method = schema::GetProgram(r->pte.data() + kFileHeaderSize)->methods()->Get(0);
  ASSERT_TRUE(method->calls_declare_outputs());
  std::vector<uint32_t> declared;
  if (method->mutable_inputs() != nullptr) {
    for (uint32_t v : *method->mutable_inputs()) {
      for (uint32_t i = 0; i < method->inputs()->size(); ++i) {
        if (method->inputs()->Get(i) == v) declared.push_back(i);
      }
    }
  }
  EXPECT_EQ(declared, mutable_input_positions);
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");  // full verification: nothing writes a constant
  ASSERT_NO_FATAL_FAILURE(
      testing::run_and_compare_with_reference(runner, model_dir(name), 1e-4, xnnpack ? "xnnpack" : "portable", name));
}

TEST(ExportedWriteTargetsTest, T5EncoderPortable) { export_run_and_compare("t5_tiny", false, {}); }
TEST(ExportedWriteTargetsTest, T5EncoderXnnpack) { export_run_and_compare("t5_tiny", true, {}); }
TEST(ExportedWriteTargetsTest, InputMutationPortable) { export_run_and_compare("input_mutation", false, {0}); }
TEST(ExportedWriteTargetsTest, InputMutationXnnpack) { export_run_and_compare("input_mutation", true, {0}); }

}  // namespace
}  // namespace ember
