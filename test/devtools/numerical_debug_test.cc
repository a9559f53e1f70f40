// `ember debug` (tools/devtools/numerical_debug.h): a test-only backend that runs one
// chosen relu6 (hardtanh) node of MobileNetV2 with a 1% error must be named as the first
// operator past the tolerance, with nothing flagged before it; the same backend computing
// correctly flags nothing; XNNPACK on MobileNetV2 flags nothing and reports its largest
// per-operator error; the CLI exits 3 when an operator exceeds.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/partition/partitioner.h"
#include "gtest/gtest.h"
#include "runtime/backend/backend.h"
#include "test/exporter/shared_dir.h"
#include "tools/devtools/numerical_debug.h"

namespace ember {
namespace tools {
int debug_command(int argc, char** argv);
}  // namespace tools

namespace {

constexpr const char* kScaleSpec = "scale";

// Runs relu6 (hardtanh 0..6) times the float32 scale in its compile spec.
class ScaledRelu6Backend final : public Backend {
 public:
  bool is_available() const override { return true; }
  Result<void*> init(BackendInitContext& ctx, Span<const uint8_t>, Span<const CompileSpecView> specs) override {
    float* scale = ctx.method_allocator->allocate_array<float>(1);
    if (scale == nullptr) return Error::OutOfMemory;
    *scale = 1.0f;
    for (const CompileSpecView& s : specs) {
      if (std::strcmp(s.key, kScaleSpec) == 0 && s.value.size() == sizeof(float)) {
        std::memcpy(scale, s.value.data(), sizeof(float));
      }
    }
    return static_cast<void*>(scale);
  }
  Error execute(BackendExecuteContext&, void* handle, EValue** args, size_t num_args) override {
    if (num_args != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) return Error::InvalidArgument;
    const Tensor& in = *args[0]->as_tensor;
    Tensor& out = *args[1]->as_tensor;
    const float scale = *static_cast<float*>(handle);
    const float* x = in.data_as<float>();
    float* y = out.data_as<float>();
    for (int64_t i = 0; i < in.numel(); ++i) y[i] = std::min(std::max(x[i], 0.0f), 6.0f) * scale;
    return Error::Ok;
  }
  void destroy(void*) override {}
};

ScaledRelu6Backend scaled_relu6_backend;
const bool registered = register_backend("test_scaled_relu6", &scaled_relu6_backend);

// Claims the one node named `node` (a relu6) for the backend above.
class ScaledRelu6Partitioner final : public exporter::Partitioner {
 public:
  ScaledRelu6Partitioner(std::string node, float scale) : node_(std::move(node)), scale_(scale) {}
  std::string backend_id() const override { return "test_scaled_relu6"; }
  std::vector<std::vector<int>> claim(const exporter::Graph& g) override {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const exporter::Node& n = g.nodes[i];
      if (!n.erased && n.name == node_ && n.op == "aten::hardtanh") return {{static_cast<int>(i)}};
    }
    return {};
  }
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph&, const exporter::Partition&) override {
    exporter::DelegateBlob blob;
    std::vector<uint8_t> scale(sizeof(float));
    std::memcpy(scale.data(), &scale_, sizeof(float));
    blob.compile_specs.emplace_back(kScaleSpec, scale);
    return blob;
  }

 private:
  std::string node_;
  float scale_;
};

class NumericalDebugTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registered);
    const std::string shared = testing::shared_dir();
    if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
    pt2_ = shared + "/models/mobilenet_v2/model.pt2";
  }
  std::string pt2_;
};

// The planted node sits mid-network: MobileNetV2's fourth relu6.
constexpr const char* kPlanted = "hardtanh__3";

TEST_F(NumericalDebugTest, NamesThePlantedWrongOperator) {
  auto r = tools::debug_numerics(pt2_, std::make_shared<ScaledRelu6Partitioner>(kPlanted, 1.01f), {},
                                 tools::NumericalDebugOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delegated_nodes, 1);
  ASSERT_GE(r->first_exceeding, 0);
  const tools::OperatorError& first = r->operators[r->first_exceeding];
  EXPECT_EQ(first.node, kPlanted);
  EXPECT_TRUE(first.delegated);
  EXPECT_EQ(first.op, "aten::hardtanh");
  EXPECT_GT(first.rel_l2, 5e-3);  // 1% on the positive part
  EXPECT_LT(first.rel_l2, 2e-2);
  // Everything before it matches the reference exactly (same kernels, same inputs).
  for (int i = 0; i < r->first_exceeding; ++i) EXPECT_EQ(r->operators[i].rel_l2, 0.0) << r->operators[i].node;
  EXPECT_EQ(r->operators[r->largest_delegated].node, kPlanted);
  ASSERT_EQ(r->output_rel_l2.size(), 1u);
  EXPECT_GT(r->output_rel_l2[0], 0.0);
  const std::string text = tools::format_report(*r, tools::NumericalDebugOptions(), false);
  EXPECT_NE(text.find(std::string("first operator past the tolerance:")), std::string::npos) << text;
  EXPECT_NE(text.find(kPlanted), std::string::npos) << text;
}

TEST_F(NumericalDebugTest, CorrectBackendFlagsNothing) {
  auto r = tools::debug_numerics(pt2_, std::make_shared<ScaledRelu6Partitioner>(kPlanted, 1.0f), {},
                                 tools::NumericalDebugOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->first_exceeding, -1);
  for (const tools::OperatorError& e : r->operators) EXPECT_EQ(e.rel_l2, 0.0) << e.node;
  EXPECT_EQ(r->output_rel_l2[0], 0.0);
}

TEST_F(NumericalDebugTest, XnnpackMobileNetV2) {
  auto r = tools::debug_numerics(pt2_, std::make_shared<xnnpack::XnnpackPartitioner>(), {},
                                 tools::NumericalDebugOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  // Every node ran in XNNPACK, one call each, and each was compared.
  EXPECT_EQ(r->delegated_nodes, 100);
  EXPECT_EQ(r->skipped_nodes, 0);
  EXPECT_EQ(r->unmatched, 0);
  EXPECT_EQ(r->operators.size(), 100u);
  EXPECT_EQ(r->first_exceeding, -1);
  ASSERT_GE(r->largest_delegated, 0);
  const double largest = r->operators[r->largest_delegated].rel_l2;
  EXPECT_GT(largest, 0.0);   // a different implementation: not bit-identical
  EXPECT_LT(largest, 1e-4);  // fp32 rounding only
  for (const tools::OperatorError& e : r->operators) EXPECT_LE(e.rel_l2, largest);
  std::printf("[debug] mobilenet_v2 xnnpack: largest per-op relative L2 %.3g at %s, output %.3g\n", largest,
              r->operators[r->largest_delegated].node.c_str(), r->output_rel_l2[0]);
}

TEST_F(NumericalDebugTest, RejectsInputsThatDoNotFit) {
  auto r = tools::debug_numerics(pt2_, std::make_shared<xnnpack::XnnpackPartitioner>(),
                                 {zeros({1, 3, 224, 224}), zeros({1})}, tools::NumericalDebugOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("takes 1 inputs, 2 given"), std::string::npos) << r.status();
}

TEST_F(NumericalDebugTest, CommandExitStatus) {
  std::string model = pt2_;
  const char* ok_args[] = {"debug", model.c_str(), "--backend", "xnnpack"};
  EXPECT_EQ(tools::debug_command(4, const_cast<char**>(ok_args)), 0);
  // A tolerance no implementation meets makes every differing operator exceed.
  const char* strict[] = {"debug", model.c_str(), "--backend", "xnnpack", "--rtol", "0", "--atol", "0"};
  EXPECT_EQ(tools::debug_command(8, const_cast<char**>(strict)), 3);
  const char* bad[] = {"debug", model.c_str(), "--backend", "npu"};
  EXPECT_EQ(tools::debug_command(4, const_cast<char**>(bad)), 2);
}

}  // namespace
}  // namespace ember
