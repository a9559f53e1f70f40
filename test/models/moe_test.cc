// Mixture-of-experts decoders from Hugging Face transformers, exported as a user would
// (tools/models/export_moe.py: tiny seeded Mixtral, OLMoE and Qwen2-MoE, transformers 5.17,
// PyTorch 2.11). Their experts are `transformers::grouped_mm_fallback` calls over tokens
// sorted by expert (top-2 of 4 routing: topk, sort, histc, cumsum, index_put), the rotary
// embedding sits in a `wrap_with_set_grad_enabled` subgraph; the prompt routes tokens to every
// expert of every layer (meta.json). Checked, portable and XNNPACK: the logits of the whole
// prompt against eager PyTorch's.
#include <string>
#include <tuple>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

using testing::repo_path;

class MoeDecoder : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(MoeDecoder, MatchesEagerPyTorch) {
  const std::string dir = "test/models/moe/" + std::get<0>(GetParam()) + "/";
  const bool xnnpack = std::get<1>(GetParam());
  exporter::ExportOptions options;
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = exporter::export_pt2_file(repo_path(dir + "model.pt2"), options);
  ASSERT_TRUE(r.ok()) << r.status();
  if (xnnpack) {
    ASSERT_FALSE(r->backends.empty());
    EXPECT_GT(r->backends[0].nodes, 50) << "the experts' neighbours should be delegated";
  }
  auto input = exporter::read_npy(repo_path(dir + "input_0.npy"));
  auto expected = exporter::read_npy(repo_path(dir + "output_0.npy"));
  ASSERT_TRUE(input.ok() && expected.ok());
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_EQ(runner.run({*input}), "");
  EXPECT_LT(testing::relative_l2(runner.output(0), *expected), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, MoeDecoder,
                         ::testing::Combine(::testing::Values("mixtral", "olmoe", "qwen2_moe"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& i) {
                           return std::get<0>(i.param) + (std::get<1>(i.param) ? "_xnnpack" : "_portable");
                         });

}  // namespace
}  // namespace ember
