// The quantization commands end to end: `ember export --quantize int8 --calibrate`, its
// per-layer report, `ember inspect` on the quantized program, and `ember eval` accuracies and
// predictions checked against eager PyTorch's on the checked-in test images; usage errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/util/npy.h"
#include "test/quant/quant_test_data.h"

namespace ember {
namespace {

using testing::repo_path;

std::string tmp(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

struct Result {
  int exit_code = -1;
  std::string output;
};

Result ember(const std::string& args) {
  Result r;
  FILE* p = popen((repo_path("tools/ember") + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Argmax per row of PyTorch's reference logits [N, 10].
std::vector<int64_t> reference_predictions(const std::string& logits) {
  auto a = exporter::read_npy(repo_path("test/quant/data/" + logits + ".npy"));
  EXPECT_TRUE(a.ok());
  std::vector<int64_t> p;
  for (int64_t i = 0; a.ok() && i < a->shape[0]; ++i) {
    const float* row = a->as<float>() + i * 10;
    int64_t best = 0;
    for (int c = 1; c < 10; ++c) best = row[c] > row[best] ? c : best;
    p.push_back(best);
  }
  return p;
}

const std::string kImages = " --images " + repo_path("test/quant/data/images.npy") + " --labels " +
                            repo_path("test/quant/data/labels.npy");

TEST(QuantCli, ExportEvalAndInspect) {
  const std::string model = repo_path("examples/models/fashion_cnn.pt2");
  Result f = ember("export " + model + " -o " + tmp("f32.pte"));
  ASSERT_EQ(f.exit_code, 0) << f.output;
  Result q = ember("export " + model + " -o " + tmp("i8.pte") + " --quantize int8 --calibrate " +
                   repo_path("test/quant/data/calibration.npy"));
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_TRUE(contains(q.output, "quantize: 4 of 4 layers to int8")) << q.output;
  EXPECT_TRUE(contains(q.output, "output rel. L2 vs float")) << q.output;
  EXPECT_TRUE(contains(q.output, "quantized: 4 conv2d/linear chains lowered")) << q.output;

  Result i = ember("inspect " + tmp("i8.pte"));
  ASSERT_EQ(i.exit_code, 0) << i.output;
  EXPECT_TRUE(contains(i.output, "ember_quantized::conv2d.default  int8[1, 1, 28, 28] scale")) << i.output;
  EXPECT_TRUE(contains(i.output, "(relu fused)")) << i.output;
  EXPECT_TRUE(contains(i.output, "constants by dtype (bytes): float32")) << i.output;
  EXPECT_FALSE(contains(ember("inspect " + tmp("f32.pte")).output, "quantized operators"));

  // The float program's predictions are PyTorch's, image for image.
  Result e = ember("eval " + tmp("f32.pte") + kImages + " --predictions " + tmp("pred.npy"));
  ASSERT_EQ(e.exit_code, 0) << e.output;
  auto pred = exporter::read_npy(tmp("pred.npy"));
  ASSERT_TRUE(pred.ok()) << pred.status();
  const std::vector<int64_t> want = reference_predictions("fp32_logits");
  ASSERT_EQ(pred->numel(), static_cast<int64_t>(want.size()));
  auto labels = exporter::read_npy(repo_path("test/quant/data/labels.npy"));
  ASSERT_TRUE(labels.ok());
  int correct = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(pred->as<int64_t>()[k], want[k]) << "image " << k;
    correct += want[k] == labels->as<int64_t>()[k];
  }
  EXPECT_TRUE(contains(e.output, "(" + std::to_string(correct) + " of " + std::to_string(want.size()) + ")")) << e.output;
  EXPECT_TRUE(contains(e.output, "class 9:")) << e.output;

  Result e8 = ember("eval " + tmp("i8.pte") + kImages);
  ASSERT_EQ(e8.exit_code, 0) << e8.output;
  EXPECT_TRUE(contains(e8.output, "accuracy: ")) << e8.output;
}

TEST(QuantCli, ErrorsSayWhatToDo) {
  const std::string model = repo_path("examples/models/fashion_cnn.pt2");
  Result a = ember("export " + model + " -o " + tmp("x.pte") + " --quantize int2");
  EXPECT_EQ(a.exit_code, 2) << a.output;
  EXPECT_TRUE(contains(a.output, "int8, a16w8, int8-weight or int4-weight")) << a.output;
  // A group size that does not divide a layer's rows: that layer gets int8 weights, reported.
  Result g = ember("export " + model + " -o " + tmp("x.pte") + " --quantize int4-weight --group-size 64");
  EXPECT_EQ(g.exit_code, 0) << g.output;
  EXPECT_TRUE(contains(g.output, "int8 per channel: --group-size 64 does not divide its 1568 inputs")) << g.output;
  EXPECT_TRUE(contains(g.output, "int4 (1, one value per byte) and int8 (1)")) << g.output;
  EXPECT_EQ(ember("export " + model + " -o " + tmp("x.pte") + " --quantize int4-weight --group-size 0").exit_code, 2);
  Result b = ember("export " + model + " -o " + tmp("x.pte") + " --quantize int8");
  EXPECT_NE(b.exit_code, 0);
  EXPECT_TRUE(contains(b.output, "--calibrate")) << b.output;
  Result b16 = ember("export " + model + " -o " + tmp("x.pte") + " --quantize a16w8");
  EXPECT_NE(b16.exit_code, 0);
  EXPECT_TRUE(contains(b16.output, "--quantize a16w8 needs calibration data: --calibrate")) << b16.output;
  Result c = ember("export " + model + " -o " + tmp("x.pte") + " --quantize int8 --calibrate " + tmp("missing"));
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_TRUE(contains(c.output, "does not exist")) << c.output;

  ASSERT_EQ(ember("export " + model + " -o " + tmp("f.pte")).exit_code, 0);
  Result d = ember("eval " + tmp("f.pte") + " --images " + repo_path("test/quant/data/images.npy"));
  EXPECT_EQ(d.exit_code, 2) << d.output;
  // Labels that do not match the images: 64 calibration images against 100 labels.
  Result e = ember("eval " + tmp("f.pte") + " --images " + repo_path("test/quant/data/calibration.npy") + " --labels " +
                   repo_path("test/quant/data/labels.npy"));
  EXPECT_EQ(e.exit_code, 1) << e.output;
  EXPECT_TRUE(contains(e.output, "--labels must be [N]")) << e.output;
  // Images of the wrong shape: the labels file is 1-D.
  Result f = ember("eval " + tmp("f.pte") + " --images " + repo_path("test/quant/data/labels.npy") + " --labels " +
                   repo_path("test/quant/data/labels.npy"));
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_TRUE(contains(f.output, "--images must be float32 [N, 1, 28, 28]")) << f.output;
}

}  // namespace
}  // namespace ember
