// The optional per-instruction debug table (schema Method.debug) and instruction tracing on
// ProgramBuilder programs: names reach the events, programs without the table (all programs
// before it existed) still load and trace, a table of the wrong length is rejected by full
// verification and ignored under minimal verification; jumps trace every executed step.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/event_tracer.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Harness;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;
using testing::TensorHolder;

PteBytes delegate_program(std::vector<std::pair<std::string, std::string>> debug, bool with_debug) {
  ProgramBuilder pb;
  MethodBuilder& m = testing::delegate_method(pb, "forward");
  if (with_debug) m.set_debug(std::move(debug));
  return pb.build();
}

std::vector<TraceEvent> run_traced(Harness& h, const float* x, size_t capacity, size_t* dropped) {
  std::vector<TraceEvent> buffer(capacity);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  h.method().set_event_tracer(&tracer);
  TensorHolder input(ScalarType::Float32, {4}, const_cast<float*>(x));
  EXPECT_EQ(h.method().set_input(0, input.value), Error::Ok);
  EXPECT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  h.method().set_event_tracer(nullptr);
  *dropped = tracer.dropped();
  return std::vector<TraceEvent>(buffer.begin(), buffer.begin() + tracer.size());
}

TEST(DebugTableTest, NamesAndSourcesReachTheEvents) {
  PteBytes pte = delegate_program({{"fake_call", "model.py:3 in forward"}, {"add_1", "model.py:4 in forward"}}, true);
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  const float x[4] = {1, 2, 3, 4};
  size_t dropped = 0;
  std::vector<TraceEvent> events = run_traced(h, x, 16, &dropped);
  EXPECT_EQ(dropped, 0u);
  ASSERT_EQ(events.size(), 3u);  // 2 instructions + execute
  EXPECT_EQ(events[0].kind, TraceEventKind::Instruction);
  EXPECT_EQ(events[0].instruction, 0u);
  EXPECT_EQ(events[0].delegate_index, 0u);
  EXPECT_STREQ(events[0].name, "test_fake#0");
  EXPECT_STREQ(events[0].debug_name, "fake_call");
  EXPECT_STREQ(events[0].source, "model.py:3 in forward");
  EXPECT_EQ(events[1].instruction, 1u);
  EXPECT_EQ(events[1].delegate_index, kNoTraceIndex);
  EXPECT_STREQ(events[1].name, "test::add");
  EXPECT_STREQ(events[1].debug_name, "add_1");
  EXPECT_STREQ(events[1].source, "model.py:4 in forward");
  EXPECT_EQ(events[2].kind, TraceEventKind::Execute);
  EXPECT_STREQ(events[2].name, "forward");
  EXPECT_LE(events[2].start_ns, events[0].start_ns);
  EXPECT_LE(events[0].end_ns, events[1].start_ns);
  EXPECT_LE(events[1].end_ns, events[2].end_ns);
  // out = (2x + 1) + x.
  const float* out = h.method().output(0).as_tensor->data_as<float>();
  EXPECT_FLOAT_EQ(out[3], 13.0f);
}

TEST(DebugTableTest, ProgramsWithoutTheTableTraceWithEmptyNames) {
  PteBytes pte = delegate_program({}, false);
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  const float x[4] = {1, 2, 3, 4};
  size_t dropped = 0;
  std::vector<TraceEvent> events = run_traced(h, x, 16, &dropped);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_STREQ(events[1].name, "test::add");
  EXPECT_STREQ(events[0].debug_name, "");
  EXPECT_STREQ(events[1].source, "");
}

TEST(DebugTableTest, WrongLengthIsRejectedByFullVerificationIgnoredByMinimal) {
  PteBytes pte = delegate_program({{"only_one", ""}}, true);
  Harness full;
  EXPECT_EQ(full.load(pte), Error::InvalidProgram);
  EXPECT_NE(std::string(full.message()).find("1 debug entries for 2 instructions"), std::string::npos)
      << full.message();
  Harness minimal;
  ASSERT_EQ(minimal.load(pte.data(), pte.size(), Program::Verification::Minimal), Error::Ok);
  ASSERT_EQ(minimal.load_method("forward"), Error::Ok) << minimal.message();
  const float x[4] = {1, 2, 3, 4};
  size_t dropped = 0;
  std::vector<TraceEvent> events = run_traced(minimal, x, 16, &dropped);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_STREQ(events[0].debug_name, "");  // a mismatched table is not used
}

TEST(DebugTableTest, OverflowCountsEveryDroppedEvent) {
  PteBytes pte = delegate_program({}, false);
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  const float x[4] = {1, 2, 3, 4};
  size_t dropped = 0;
  std::vector<TraceEvent> events = run_traced(h, x, 1, &dropped);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_EQ(dropped, 2u);
  events = run_traced(h, x, 0, &dropped);  // a counting-only tracer
  EXPECT_EQ(events.size(), 0u);
  EXPECT_EQ(dropped, 3u);
}

TEST(DebugTableTest, JumpsTraceEveryExecutedStep) {
  PteBytes pte = testing::kitchen_sink_program();
  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("loop"), Error::Ok) << h.message();
  std::vector<float> x = {1, 2, 3, 4};
  TensorHolder input(ScalarType::Float32, {4}, x.data());
  EValue n;
  n.tag = ValueTag::Int;
  n.as_int = 3;
  ASSERT_EQ(h.method().set_input(0, input.value), Error::Ok);
  ASSERT_EQ(h.method().set_input(1, n), Error::Ok);
  // Untraced first: how many steps the loop takes is read from a traced run below.
  ASSERT_EQ(h.method().execute(), Error::Ok);
  const float untraced = h.method().output(0).as_tensor->data_as<float>()[0];
  std::vector<TraceEvent> buffer(256);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  h.method().set_event_tracer(&tracer);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[0], untraced);
  EXPECT_EQ(untraced, 4.0f);  // x * (n + 1)
  const size_t num_instructions = h.method().meta().num_instructions();
  size_t jumps = 0, steps = 0;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = tracer.event(i);
    if (e.kind != TraceEventKind::Instruction) continue;
    ++steps;
    EXPECT_LT(e.instruction, num_instructions);
    if (std::string(e.name) == "jump_false") ++jumps;
    if (i > 0) {
      EXPECT_GE(e.start_ns, tracer.event(i - 1).end_ns);
    }
  }
  // Steps 0, 1, then 2..6 for each of the n = 3 iterations, then 2, 3 (exit): the exit jump
  // is tested 4 times, the back jump taken 3 times.
  EXPECT_EQ(steps, 19u);
  EXPECT_EQ(jumps, 7u);
}

}  // namespace
}  // namespace ember
