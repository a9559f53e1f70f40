// 16-bit activations with 8-bit weights (a16w8) on the HTP: PT2E programs whose activations are
// quantized to int16 (tools/models/make_qnn_op_cases.py writes <case>_a16w8.pt2 and the float
// model's output <case>_a16w8_float.npy). Ember keeps their layers in PyTorch's reference form
// (or weight-only linear) on the portable kernels; the QNN delegate compiles them with 16-bit
// tensors. Each case must run entirely on QNN and
//   - be as close to the float model as Ember's own portable a16w8 program (16-bit rounding
//     differs: within 1.25x its relative L2 plus 3e-4), and
//   - be closer to the float model than the same op's int8 program on QNN (under 0.7x its
//     relative L2): what a QNN user reaches for a16w8 for.
// MatMul and LayerNorm on 16-bit tensors need HTP v73 or later (the v68 default refuses them;
// measured): those cases compile with htp_arch 73.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

struct A16w8Case {
  const char* name;
  const char* op;  // the operator under test after Ember's passes
  uint32_t htp_arch = 0;
};

const A16w8Case kCases[] = {
    {"conv2d_3x3_pad1", "aten::conv2d.default"},
    {"conv2d_depthwise", "aten::conv2d.default"},
    {"conv2d_relu_fused", "aten::conv2d.default"},
    {"linear", "ember_quantized::linear_weight_only.default"},
    {"add", "aten::add.Tensor"},
    {"mul", "aten::mul.Tensor"},
    {"sigmoid", "aten::sigmoid.default"},
    {"tanh", "aten::tanh.default"},
    {"avg_pool2d_3x3_s2_p1", "aten::avg_pool2d.default"},
    {"mean", "aten::mean.dim"},
    {"softmax_2d", "aten::softmax.int"},
    {"upsample_bilinear_x2", "aten::upsample_bilinear2d.vec"},
    {"matmul_2d", "aten::matmul.default", 73},
    {"layer_norm", "aten::layer_norm.default", 73},
};

std::string case_path(const std::string& file) { return testing::repo_path("test/delegates/qnn/cases/" + file); }

std::vector<exporter::NpyArray> read_inputs(const std::string& stem) {
  std::vector<exporter::NpyArray> inputs;
  for (const char* suffix : {"_input.npy", "_input1.npy"}) {
    const std::string path = case_path(stem + suffix);
    if (!inputs.empty() && !std::ifstream(path).good()) break;
    auto a = exporter::read_npy(path);
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok()) inputs.push_back(std::move(*a));
  }
  return inputs;
}

// Exports `pt2` (on QNN when `qnn`), runs it on `inputs`, returns output 0; `on_qnn` gets the
// delegate's op counts.
std::vector<float> export_and_run(const std::string& pt2, const std::vector<exporter::NpyArray>& inputs, bool qnn,
                                  uint32_t htp_arch, exporter::ExportResult* result) {
  exporter::ExportOptions o;
  if (qnn) {
    qnn::QnnPartitionerOptions q;
    q.target.htp_arch = htp_arch;
    o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>(q));
  }
  auto r = exporter::export_pt2_file(pt2, o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  testing::PteRunner runner(1 << 20, 4 << 20);
  EXPECT_EQ(runner.load(r->pte), "");
  EXPECT_EQ(runner.run(inputs), "");
  const exporter::NpyArray out = runner.output(0);
  *result = std::move(*r);
  return std::vector<float>(out.as<float>(), out.as<float>() + out.data.size() / sizeof(float));
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return a.size() == ref.size() ? std::sqrt(num / std::max(den, 1e-30)) : INFINITY;
}

class QnnA16w8 : public ::testing::TestWithParam<A16w8Case> {};

TEST_P(QnnA16w8, RunsOnQnnAsCloseToFloatAsPortableAndCloserThanInt8) {
  EMBER_REQUIRE_QNN();
  const A16w8Case& c = GetParam();
  const std::string stem = std::string(c.name) + "_a16w8";
  const std::vector<exporter::NpyArray> inputs = read_inputs(stem), inputs8 = read_inputs(c.name);
  auto reference = exporter::read_npy(case_path(stem + "_float.npy"));
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> fl(reference->as<float>(), reference->as<float>() + reference->data.size() / sizeof(float));

  exporter::ExportResult p16, q16, q8;
  const std::vector<float> portable = export_and_run(case_path(stem + ".pt2"), inputs, false, 0, &p16);
  const std::vector<float> npu = export_and_run(case_path(stem + ".pt2"), inputs, true, c.htp_arch, &q16);
  const std::vector<float> npu8 = export_and_run(case_path(std::string(c.name) + ".pt2"), inputs8, true, c.htp_arch, &q8);
  ASSERT_FALSE(portable.empty() || npu.empty() || npu8.empty());
  ASSERT_EQ(q16.backends.size(), 1u);
  EXPECT_GT(q16.backends[0].ops.count(c.op), 0u) << c.op << " not on QNN";
  EXPECT_TRUE(q16.portable_ops.empty()) << "part of the a16w8 program stayed on the portable kernels";
  const qnn::fb::Blob* blob = testing::find_qnn_blob(q16.pte);
  ASSERT_NE(blob, nullptr);
  ASSERT_NE(blob->precision(), nullptr);
  EXPECT_EQ(blob->precision()->str(), "a16w8");

  const double e_npu = rel_l2(npu, fl), e_portable = rel_l2(portable, fl), e_int8 = rel_l2(npu8, fl);
  std::printf("[%s] rel. L2 to float: QNN a16w8 %.2e, portable a16w8 %.2e, QNN int8 %.2e (%.1fx)\n", c.name, e_npu,
              e_portable, e_int8, e_int8 / e_npu);
  EXPECT_LE(e_npu, 1.25 * e_portable + 3e-4);
  EXPECT_LT(e_npu, 0.7 * e_int8);
}

INSTANTIATE_TEST_SUITE_P(Cases, QnnA16w8, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<A16w8Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
