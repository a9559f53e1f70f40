// Vulkan delegate operators in the event trace: small_cnn exported with the Vulkan
// partitioner (lavapipe allowed), loaded with a tracer: every dispatch is one DelegateOp with
// its GPU time, inside its delegate call, the same ones every run. Skips without a device.
#include <string>
#include <vector>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "runtime/core/event_tracer.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

TEST(VulkanTraceTest, EveryDispatchIsAnOperatorInsideItsCall) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  const std::string dir = shared + "/models/small_cnn";
  exporter::ExportOptions o;
  vulkan::VulkanPartitionerOptions vo;
  vo.allow_cpu = true;
  o.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  auto r = exporter::export_pt2_file(dir + "/model.pt2", o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<TraceEvent> buffer(1024);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  testing::PteRunner runner;
  const std::string why = runner.load(r->pte, "forward", &tracer);
  if (why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_EQ(why, "");
  tracer.clear();
  std::vector<exporter::NpyArray> inputs = testing::read_npy_series(dir, "input_");
  ASSERT_EQ(runner.run(inputs), "");
  ASSERT_EQ(runner.run(inputs), "");
  std::vector<TraceEvent> calls, ops[2];
  for (const TraceEvent& e : tracer.events()) {
    if (e.kind == TraceEventKind::Instruction && e.delegate_index != kNoTraceIndex) calls.push_back(e);
    if (e.kind == TraceEventKind::DelegateOp) ops[e.run].push_back(e);
  }
  ASSERT_EQ(calls.size(), 2u);  // one delegate call per run
  ASSERT_GE(ops[0].size(), 4u);  // conv, relu, pool, matmul, softmax (flatten is a view)
  ASSERT_EQ(ops[0].size(), ops[1].size());
  bool conv = false;
  for (int run = 0; run < 2; ++run) {
    for (size_t i = 0; i < ops[run].size(); ++i) {
      const TraceEvent& e = ops[run][i];
      EXPECT_EQ(e.delegate_op, i);
      EXPECT_STREQ(e.name, ops[0][i].name);
      EXPECT_GE(e.start_ns, calls[run].start_ns);
      EXPECT_LE(e.end_ns, calls[run].end_ns);
      EXPECT_LE(e.start_ns, e.end_ns);
      conv |= std::string(e.name).rfind("conv2d(", 0) == 0;
    }
  }
  EXPECT_TRUE(conv);
  EXPECT_EQ(tracer.dropped(), 0u);
}

}  // namespace
}  // namespace ember
