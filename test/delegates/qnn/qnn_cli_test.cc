// `ember export --backend qnn` and the QNN program on the command line, as a user sees them:
// the partition line, `ember inspect`'s description of the compiled delegate, `ember run`, and
// what happens without Qualcomm's library (EMBER_QNN_LIBRARY naming a missing file): export
// falls back to the portable kernels with a warning naming the fix (an error under
// --strict-delegation), and running a QNN program fails cleanly with that fix.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

std::string tmp(const std::string& name) {
  const char* d = std::getenv("TEST_TMPDIR");
  return std::string(d ? d : "/tmp") + "/" + name;
}

// Runs `ember ARGS` with `env` prefixed (e.g. "EMBER_QNN_LIBRARY=/x").
CommandResult ember(const std::string& args, const std::string& env = "") {
  CommandResult r;
  const std::string cmd = env + " " + testing::repo_path("tools/ember") + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const char* kMissing = "EMBER_QNN_LIBRARY=/nonexistent/libQnnHtp.so";

TEST(QnnCli, ExportInspectRun) {
  EMBER_REQUIRE_QNN();
  const std::string model = testing::repo_path("examples/models/fashion_cnn_int8_pt2e.pt2");
  const std::string pte = tmp("fashion_qnn.pte");
  CommandResult e = ember("export " + model + " -o " + pte + " --backend qnn");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("partition: qnn 15 ops in 1 delegate, portable 0 ops"), std::string::npos) << e.output;
  CommandResult i = ember("inspect " + pte);
  ASSERT_EQ(i.exit_code, 0) << i.output;
  EXPECT_NE(i.output.find("QNN context binary"), std::string::npos) << i.output;
  EXPECT_NE(i.output.find("compiled by QNN v2."), std::string::npos) << i.output;
  EXPECT_NE(i.output.find("HTP architecture: the library's default"), std::string::npos) << i.output;
  CommandResult r = ember("run " + pte + " --zeros");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // Compiled for a chosen architecture and optimization level: inspect names both.
  const std::string v73 = tmp("fashion_qnn_v73.pte");
  CommandResult t = ember("export " + model + " -o " + v73 +
                          " --backend qnn --backend-option qnn.htp_arch=73 --backend-option qnn.optimization=3");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  CommandResult ti = ember("inspect " + v73);
  EXPECT_NE(ti.output.find("HTP architecture v73, the library's SoC, optimization level 3"), std::string::npos)
      << ti.output;
  EXPECT_EQ(ember("run " + v73 + " --zeros").exit_code, 0);
  CommandResult bad = ember("export " + model + " -o " + tmp("bad.pte") + " --backend qnn --backend-option qnn.htp_arch=70");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("qnn.htp_arch=70: expected 68, 69, 73, 75, 79 or 81"), std::string::npos) << bad.output;

  // The same program without the library: a clean failure that names the fix.
  CommandResult missing = ember("run " + pte + " --zeros", kMissing);
  EXPECT_NE(missing.exit_code, 0) << missing.output;
  EXPECT_NE(missing.output.find("cannot load the QNN HTP library /nonexistent/libQnnHtp.so"), std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("./setup.sh"), std::string::npos) << missing.output;
}

// A bundled test case (`ember export --bundle`, expected outputs from the portable kernels) in a
// QNN program checks with `ember verify` within a quantization step of the logits (0.17 here).
TEST(QnnCli, BundledCaseVerifies) {
  EMBER_REQUIRE_QNN();
  const std::string dir = tmp("qnn_case");
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  exporter::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {1, 1, 28, 28};
  x.data.resize(28 * 28 * 4);
  float* p = reinterpret_cast<float*>(x.data.data());
  for (int i = 0; i < 28 * 28; ++i) p[i] = 0.5f + 0.5f * std::sin(0.1f * float(i));
  ASSERT_TRUE(exporter::write_npy(dir + "/input_0.npy", x).ok());
  const std::string model = testing::repo_path("examples/models/fashion_cnn_int8_pt2e.pt2");
  const std::string pte = tmp("fashion_qnn_bundled.pte");
  CommandResult e = ember("export " + model + " -o " + pte + " --backend qnn --bundle " + dir);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("bundled 1 test cases"), std::string::npos) << e.output;
  CommandResult v = ember("verify " + pte + " --rtol 0.05 --atol 0.5");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("1 of 1 cases passed"), std::string::npos) << v.output;
}

// Backends in priority order: QNN takes what it can, XNNPACK the rest. The dynamically quantized
// CNN has nothing QNN takes in its default (quantized) precision, so XNNPACK runs it; in fp16
// precision QNN takes all of it first.
TEST(QnnCli, PriorityOrderWithXnnpack) {
  EMBER_REQUIRE_QNN();
  const std::string model = testing::repo_path("examples/models/fashion_cnn_dynamic_pt2e.pt2");
  CommandResult q = ember("export " + model + " -o " + tmp("qx.pte") + " --backend qnn,xnnpack");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("partition: qnn 0 ops in 0 delegates, xnnpack 16 ops in 2 delegates, portable 0 ops"),
            std::string::npos)
      << q.output;
  CommandResult h = ember("export " + model + " -o " + tmp("qx16.pte") +
                          " --backend qnn,xnnpack --backend-option qnn.precision=fp16");
  ASSERT_EQ(h.exit_code, 0) << h.output;
  EXPECT_NE(h.output.find("partition: qnn 16 ops in 1 delegate, xnnpack 0 ops in 0 delegates, portable 0 ops"),
            std::string::npos)
      << h.output;
  EXPECT_EQ(ember("run " + tmp("qx16.pte") + " --zeros").exit_code, 0);
}

TEST(QnnCli, ExportWithoutTheLibraryFallsBackOrFailsWhenStrict) {
  const std::string model = testing::repo_path("examples/models/fashion_cnn_int8_pt2e.pt2");
  CommandResult e = ember("export " + model + " -o " + tmp("fallback.pte") + " --backend qnn", kMissing);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("./setup.sh"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("portable 15 ops"), std::string::npos) << e.output;
  // One warning for the claimed set, not one per node.
  EXPECT_NE(e.output.find("qnn could not lower 15 claimed node(s)"), std::string::npos) << e.output;
  CommandResult strict =
      ember("export " + model + " -o " + tmp("strict.pte") + " --backend qnn --strict-delegation", kMissing);
  EXPECT_NE(strict.exit_code, 0) << strict.output;
  EXPECT_NE(strict.output.find("cannot load the QNN HTP library"), std::string::npos) << strict.output;
}

}  // namespace
}  // namespace ember
