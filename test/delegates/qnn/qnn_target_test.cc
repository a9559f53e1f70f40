// Target options of the QNN exporter (--backend-option qnn.soc_model / htp_arch / optimization):
// the graph is compiled for the chosen HTP architecture (the simulator's numerics change with
// it), the choice is recorded in the blob (`ember inspect`: qnn_cli_test), the program still
// runs and matches the portable int8 kernels within a step, and a target the library refuses or
// a malformed value fails the export with a message instead of leaving every node portable.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "delegates/qnn/qnn_blob_generated.h"
#include "exporter/exporter.h"
#include "exporter/import/pt2_importer.h"
#include "exporter/partition/backend_registry.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "exporter/util/npy.h"
#include "test/exporter/pte_runner.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

const char* kCase = "test/delegates/qnn/cases/conv2d_3x3_pad1";

absl::StatusOr<exporter::ExportResult> export_for(const qnn::QnnTarget& target) {
  exporter::ExportOptions o;
  qnn::QnnPartitionerOptions q;
  q.target = target;
  o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>(q));
  return exporter::export_pt2_file(testing::repo_path(std::string(kCase) + ".pt2"), o);
}

std::vector<float> run(const std::vector<uint8_t>& pte) {
  testing::PteRunner runner;
  EXPECT_EQ(runner.load(pte), "");
  auto x = exporter::read_npy(testing::repo_path(std::string(kCase) + "_input.npy"));
  EXPECT_TRUE(x.ok()) << x.status();
  if (!x.ok() || runner.run({*x}) != "") return {};
  const exporter::NpyArray out = runner.output(0);
  const float* p = reinterpret_cast<const float*>(out.data.data());
  return std::vector<float>(p, p + out.data.size() / sizeof(float));
}

TEST(QnnTarget, ArchitectureAndOptimizationAreCompiledInAndRecorded) {
  EMBER_REQUIRE_QNN();
  auto def = export_for({});
  ASSERT_TRUE(def.ok()) << def.status();
  qnn::QnnTarget t;
  t.htp_arch = 73;
  t.optimization_level = 3;
  auto v73 = export_for(t);
  ASSERT_TRUE(v73.ok()) << v73.status();
  ASSERT_EQ(v73->backends.size(), 1u);

  const qnn::fb::Blob* b = testing::find_qnn_blob(v73->pte);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->htp_arch(), 73u);
  EXPECT_EQ(b->optimization_level(), 3u);
  EXPECT_EQ(b->soc_model(), 0u);
  const qnn::fb::Blob* d = testing::find_qnn_blob(def->pte);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->htp_arch(), 0u);
  ASSERT_NE(d->precision(), nullptr);
  EXPECT_EQ(d->precision()->str(), "int8");
  // A different context binary: the library compiled for v73.
  ASSERT_NE(b->context_binary(), nullptr);
  ASSERT_NE(d->context_binary(), nullptr);
  EXPECT_FALSE(b->context_binary()->size() == d->context_binary()->size() &&
               std::memcmp(b->context_binary()->data(), d->context_binary()->data(), d->context_binary()->size()) == 0);

  // Both run and stay within one output step of each other (each is within a step of the portable
  // int8 kernels in qnn_ops_test; the v73 kernels round some outputs the other way).
  const std::vector<float> a = run(def->pte), c = run(v73->pte);
  ASSERT_EQ(a.size(), c.size());
  ASSERT_FALSE(a.empty());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(c[i])));
  auto graph = exporter::import_pt2(testing::repo_path(std::string(kCase) + ".pt2"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const double step = testing::output_step(*graph);
  ASSERT_GT(step, 0);
  EXPECT_LE(worst, 2 * step + 1e-6) << "more than two steps apart";
}

TEST(QnnTarget, SocModelIsRecorded) {
  EMBER_REQUIRE_QNN();
  qnn::QnnTarget t;
  t.soc_model = 57;  // SM8650
  auto r = export_for(t);
  ASSERT_TRUE(r.ok()) << r.status();
  const qnn::fb::Blob* b = testing::find_qnn_blob(r->pte);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->soc_model(), 57u);
  EXPECT_FALSE(run(r->pte).empty());
}

TEST(QnnTarget, RefusedOrMalformedTargetsFailTheExportWithAMessage) {
  EMBER_REQUIRE_QNN();
  const exporter::BackendEntry* entry = exporter::find_backend("qnn");
  ASSERT_NE(entry, nullptr);
  auto make = [&](const std::string& key, const std::string& value) {
    exporter::BackendOptions o;
    o[key] = value;
    return entry->factory(o);
  };
  auto unknown_soc = make("soc_model", "99999");
  ASSERT_FALSE(unknown_soc.ok());
  EXPECT_NE(std::string(unknown_soc.status().message()).find("the library refused the target"), std::string::npos)
      << unknown_soc.status();
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"htp_arch", "42"}, {"htp_arch", "v73"}, {"optimization", "0"}, {"optimization", "4"},
           {"soc_model", "0"}, {"soc_model", "-1"}, {"soc_model", "12x"}, {"precision", "fp32"}}) {
    auto r = make(key, value);
    ASSERT_FALSE(r.ok()) << key << "=" << value;
    EXPECT_NE(std::string(r.status().message()).find("qnn." + key + "=" + value), std::string::npos) << r.status();
  }
  EXPECT_TRUE(make("htp_arch", "75").ok());
  EXPECT_TRUE(make("optimization", "2").ok());
  EXPECT_TRUE(make("precision", "fp16").ok());
}

}  // namespace
}  // namespace ember
