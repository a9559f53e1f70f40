// Quantized operators against PyTorch's quantized reference: the cases in test/quant/opcases
// (tools/conformance/generate_quantized_cases.py: one-op modules quantized by torchao's
// XNNPACK quantizer with PT2E, PyTorch's outputs on a seeded input) in both IR forms.
//
// Portable kernels: static int8 cases must match PyTorch to float rounding (conv / linear
// lowered to Ember's exact integer operators, the rest in PyTorch's Q/DQ reference form).
// Dynamic cases run through ember_quantized::linear_weight_only, whose decode-size path
// (<= 4 rows, K a multiple of 32) requantizes the dequantized activations per block of 32:
// within 2% (docs/llm.md, "Weight-only int8 / int4"); the core form (weights dequantized
// then addmm) matches to float rounding.
// XNNPACK: the model form exported with the XNNPACK partitioner, every case delegated whole;
// outputs within one quantization step of the output where the program ends on a dequantize
// (XNNPACK's requantization rounds at a different point; docs/quantization.md), else within
// 2% relative L2.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/quant/quant_test_data.h"
#include "tools/conformance/case_info.h"
#include "tools/conformance/case_runner.h"

namespace ember {
namespace {

std::string cases_root() { return testing::repo_path("test/quant/opcases"); }

struct QuantCase {
  conformance::CaseInfo info;
  double output_scale = 0;  // 0: the program does not end on a dequantize
};

std::vector<QuantCase> load_cases() {
  std::vector<QuantCase> out;
  for (const std::string& dir : conformance::list_case_dirs(cases_root(), "")) {
    QuantCase c;
    EXPECT_EQ(conformance::read_case_info(dir, &c.info), "");
    std::ifstream in(dir + "/case.json");
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("output_scale") && j["output_scale"].is_number()) {
      c.output_scale = j["output_scale"].get<double>();
    }
    out.push_back(c);
  }
  return out;
}

TEST(QuantizedOpcases, PortableKernelsMatchPyTorchInBothForms) {
  const std::vector<QuantCase> cases = load_cases();
  ASSERT_GE(cases.size(), 20u) << "test/quant/opcases: regenerate with tools/conformance/generate_quantized_cases.py";
  for (const QuantCase& c : cases) {
    for (conformance::Form form : {conformance::Form::Model, conformance::Form::Core}) {
      conformance::RunOptions o;
      if (c.info.variant == "dynamic" && form == conformance::Form::Model) {
        o.tolerance.rtol = 0.02;
        o.tolerance.atol = 0.02;
      }
      const conformance::CaseResult r = conformance::run_case(c.info, form, o);
      EXPECT_EQ(r.outcome, conformance::Outcome::Pass)
          << c.info.name << " (" << conformance::form_name(form) << "): " << r.reason;
    }
  }
}

TEST(QuantizedOpcases, XnnpackMatchesPyTorchWithinOneStep) {
  for (const QuantCase& c : load_cases()) {
    exporter::ExportOptions o;
    o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    auto r = exporter::export_pt2_file(c.info.dir + "/model.pt2", o);
    ASSERT_TRUE(r.ok()) << c.info.name << ": " << r.status();
    std::string left;
    for (const auto& [op, n] : r->portable_ops) left += " " + op;
    EXPECT_TRUE(r->portable_ops.empty()) << c.info.name << " left on portable kernels:" << left;
    std::vector<exporter::NpyArray> inputs;
    for (int i = 0;; ++i) {
      const std::string path = c.info.dir + "/input_" + std::to_string(i) + ".npy";
      if (!std::ifstream(path)) break;
      auto a = exporter::read_npy(path);
      ASSERT_TRUE(a.ok()) << a.status();
      inputs.push_back(*a);
    }
    auto want = exporter::read_npy(c.info.dir + "/output_0.npy");
    ASSERT_TRUE(want.ok()) << want.status();
    testing::PteRunner runner;
    ASSERT_EQ(runner.load(r->pte), "") << c.info.name;
    ASSERT_EQ(runner.run(inputs), "") << c.info.name;
    const exporter::NpyArray got = runner.output(0);
    ASSERT_EQ(got.shape, want->shape) << c.info.name;
    double max_diff = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      max_diff = std::max(max_diff, std::fabs(double(got.as<float>()[i]) - double(want->as<float>()[i])));
    }
    const double rel = testing::relative_l2(got, *want);
    std::printf("[%s] xnnpack: max |diff| %.6f (%.2f steps), relative L2 %.5f\n", c.info.name.c_str(), max_diff,
                c.output_scale > 0 ? max_diff / c.output_scale : 0.0, rel);
    if (c.output_scale > 0) {
      EXPECT_LE(max_diff, c.output_scale * 1.001) << c.info.name << ": more than one quantization step";
    } else {
      EXPECT_LE(rel, 0.02) << c.info.name;
    }
  }
}

}  // namespace
}  // namespace ember
