// Bundled programs on shared/models/small_cnn (XNNPACK delegates): cases with PyTorch's
// outputs and with outputs computed by the portable kernels pass; a perturbed expected output
// fails with the element named; a bundle that does not fit the method is rejected at load;
// `ember verify` exits 0 iff every case passes.
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "runtime/module/module.h"
#include "test/exporter/shared_dir.h"
#include "tools/devtools/bundle.h"

namespace ember {
namespace tools {
int verify_command(int argc, char** argv);
}  // namespace tools

namespace {

using exporter::BundledCaseData;
using exporter::NpyArray;

std::string temp_dir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string shared = testing::shared_dir();
    if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
    model_dir_ = shared + "/models/small_cnn";
  }
  exporter::ExportOptions xnnpack() {
    exporter::ExportOptions o;
    o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    return o;
  }
  // Exports with `cases` and verifies through the Module API.
  std::vector<BundledCaseResult> export_and_verify(std::vector<BundledCaseData> cases, double rtol, double atol) {
    exporter::ExportOptions o = xnnpack();
    o.bundled_cases = std::move(cases);
    auto r = exporter::export_pt2_file(model_dir_ + "/model.pt2", o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    pte_.assign(r->pte.size() + 64, 0);
    uint8_t* aligned = pte_.data() + (64 - reinterpret_cast<uintptr_t>(pte_.data()) % 64) % 64;
    std::memcpy(aligned, r->pte.data(), r->pte.size());
    bytes_ = r->pte;
    Module module(aligned, r->pte.size());
    Expected<std::vector<BundledCaseResult>> results = module.verify_bundled_cases(rtol, atol);
    EXPECT_TRUE(results.ok()) << results.error().to_string();
    return results.ok() ? *results : std::vector<BundledCaseResult>();
  }
  std::string model_dir_;
  std::vector<uint8_t> pte_, bytes_;
};

TEST_F(BundleTest, PassesOnCorrectOutputsFailsOnAPerturbedOne) {
  auto good = tools::read_bundle_dir(model_dir_);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->name, "small_cnn");
  ASSERT_EQ(good->inputs.size(), 1u);
  ASSERT_EQ(good->expected_outputs.size(), 1u);  // PyTorch's output
  BundledCaseData bad = *good;
  bad.name = "perturbed";
  float* out = reinterpret_cast<float*>(bad.expected_outputs[0].data.data());
  out[7] += 0.01f;
  std::vector<BundledCaseResult> r = export_and_verify({*good, bad}, 1e-4, 1e-5);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "small_cnn");
  EXPECT_TRUE(r[0].passed) << r[0].message;
  EXPECT_LT(r[0].max_abs_error, 1e-5);
  EXPECT_EQ(r[0].message, "");
  EXPECT_FALSE(r[1].passed);
  EXPECT_NEAR(r[1].max_abs_error, 0.01, 1e-4);
  EXPECT_NE(r[1].message.find("output 0 element 7"), std::string::npos) << r[1].message;

  // The CLI agrees: 1 while a case fails; 0 with only the good case.
  const std::string path = temp_dir("bundle") + "/two_cases.pte";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes_.data()),
                                              static_cast<std::streamsize>(bytes_.size()));
  std::string a0 = "verify", a1 = path, a2 = "--rtol", a3 = "1e-4";
  char* argv[] = {&a0[0], &a1[0], &a2[0], &a3[0]};
  EXPECT_EQ(tools::verify_command(4, argv), 1);
  r = export_and_verify({*good}, 1e-4, 1e-5);
  ASSERT_EQ(r.size(), 1u);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes_.data()),
                                              static_cast<std::streamsize>(bytes_.size()));
  EXPECT_EQ(tools::verify_command(4, argv), 0);
}

TEST_F(BundleTest, OutputsComputedWithThePortableKernelsMatchPyTorch) {
  // A directory with the input only: the expected output comes from a portable-only export.
  const std::string dir = temp_dir("input_only");
  std::ifstream src(model_dir_ + "/input_0.npy", std::ios::binary);
  std::ofstream(dir + "/input_0.npy", std::ios::binary) << src.rdbuf();
  auto c = tools::read_bundle_dir(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->expected_outputs.empty());
  auto portable = exporter::export_pt2_file(model_dir_ + "/model.pt2", exporter::ExportOptions());
  ASSERT_TRUE(portable.ok()) << portable.status();
  std::vector<BundledCaseData> cases = {*c};
  ASSERT_TRUE(tools::compute_expected_outputs(portable->pte, "forward", &cases).ok());
  ASSERT_EQ(cases[0].expected_outputs.size(), 1u);
  auto reference = exporter::read_npy(model_dir_ + "/output_0.npy");
  ASSERT_TRUE(reference.ok());
  const NpyArray& got = cases[0].expected_outputs[0];
  ASSERT_EQ(got.shape, reference->shape);
  const float* g = reinterpret_cast<const float*>(got.data.data());
  const float* w = reinterpret_cast<const float*>(reference->data.data());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << i;
  // And the XNNPACK export passes against them.
  std::vector<BundledCaseResult> r = export_and_verify(cases, 1e-4, 1e-5);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].passed) << r[0].message;
}

TEST_F(BundleTest, ABundleThatDoesNotFitTheMethodIsRejectedAtLoad) {
  auto c = tools::read_bundle_dir(model_dir_);
  ASSERT_TRUE(c.ok());
  c->inputs.push_back(c->inputs[0]);  // small_cnn takes one input
  exporter::ExportOptions o = xnnpack();
  o.bundled_cases = {*c};
  auto r = exporter::export_pt2_file(model_dir_ + "/model.pt2", o);
  ASSERT_TRUE(r.ok()) << r.status();
  absl::Status s = tools::check_program(r->pte);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("bundled case 0 has 2 inputs and 1 outputs; its method takes 1 and gives 1"),
            std::string::npos)
      << s.message();
  // Without bundled cases a program reports that instead of passing vacuously.
  auto plain = exporter::export_pt2_file(model_dir_ + "/model.pt2", xnnpack());
  ASSERT_TRUE(plain.ok());
  std::vector<uint8_t> storage(plain->pte.size() + 64);
  uint8_t* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  std::memcpy(aligned, plain->pte.data(), plain->pte.size());
  Module module(aligned, plain->pte.size());
  Expected<std::vector<BundledCaseResult>> none = module.verify_bundled_cases();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), Error::NotFound);
}

}  // namespace
}  // namespace ember
