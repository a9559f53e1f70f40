// The CI subset of the external-model suite (tools/models/export_external.py, full results in
// docs/model-coverage.md): public architectures from transformers / torchvision / timm /
// torch.nn, checked in under test/models/external/<name>/ (model.pt2, input_<i>.npy,
// output_<i>.npy, meta.json; exported with PyTorch 2.15). Each one is exported with the
// portable kernels and with the XNNPACK partitioner, run with the runtime and compared with
// eager PyTorch (relative L2 <= 1e-4), or, where Ember does not support it yet, must fail at
// export with a message naming what is unsupported (never export and then fail or crash).
#include <cstdio>
#include <string>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace exporter {
namespace {

constexpr double kTolerance = 1e-4;

std::string model_dir(const std::string& name) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  std::string root = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
  return root + "test/models/external/" + name;
}

struct Case {
  std::string model;
  // "" : must export and match. Otherwise the model may export (then it must match: the op
  // was implemented since) or fail at export with a message containing this text.
  std::string unsupported;
  bool xnnpack;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.model + (info.param.xnnpack ? "_xnnpack" : "_portable");
}

ExportOptions options(bool xnnpack) {
  ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  return o;
}

void export_run_and_compare(const Case& c) {
  const std::string dir = model_dir(c.model);
  ASSERT_TRUE(testing::file_exists(dir + "/model.pt2")) << dir;
  auto r = export_pt2_file(dir + "/model.pt2", options(c.xnnpack));
  if (!c.unsupported.empty() && !r.ok()) {
    const std::string msg(r.status().message());
    std::printf("[external] %s: export error (expected): %s\n", c.model.c_str(), msg.substr(0, msg.find('\n', msg.find('\n') + 1)).c_str());
    EXPECT_NE(msg.find(c.unsupported), std::string::npos) << msg;
    return;
  }
  ASSERT_TRUE(r.ok()) << r.status();
  int portable = 0;
  for (const auto& [op, n] : r->portable_ops) portable += n;
  const int delegated = r->backends.empty() ? 0 : r->backends[0].nodes;
  std::printf("[external] %s (%s): %d ops delegated, %d on portable kernels\n", c.model.c_str(),
              c.xnnpack ? "xnnpack" : "portable", delegated, portable);
  if (c.xnnpack) {
    EXPECT_GT(delegated, 0) << "nothing was delegated (every model here has linear or conv layers)";
  }
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_NO_FATAL_FAILURE(testing::run_and_compare_with_reference(runner, dir, kTolerance,
                                                                  c.xnnpack ? "xnnpack" : "portable", c.model));
}

class ExternalModel : public ::testing::TestWithParam<Case> {};

TEST_P(ExternalModel, ExportsRunsAndMatchesPyTorchOrFailsAtExportNamingWhy) { export_run_and_compare(GetParam()); }

std::vector<Case> cases() {
  const std::pair<const char*, const char*> models[] = {
      {"distilbert", ""},  // transformers DistilBertModel: ids + padding mask
      {"gemma", ""},       // transformers GemmaForCausalLM: RMSNorm, RoPE, GQA, GeGLU, type_as
      {"segformer", ""},   // transformers SegFormer: efficient attention, MLP decode head
      {"unet", ""},        // diffusion-style U-Net: GroupNorm, timestep embedding, ConvTranspose
      {"lstm_proj", ""},   // nn.LSTM(proj_size=...)
      {"gru_bidir", ""},   // bidirectional nn.GRU
      {"t5_encoder", ""},  // transformers T5EncoderModel: a kernel once wrote into a constant
      {"gemma2", ""},      // Gemma2ForCausalLM: logit soft-capping (tanh), alternating sliding windows
      {"mamba2", ""},      // Mamba2ForCausalLM: chunked state-space scan (cumsum, segment sums, einsum)
      {"dinov2", ""},      // Dinov2Model at a new resolution: antialiased bicubic position interpolation
  };
  std::vector<Case> out;
  for (const auto& [m, why] : models) {
    for (bool x : {false, true}) out.push_back({m, why, x});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(CiSubset, ExternalModel, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace exporter
}  // namespace ember
