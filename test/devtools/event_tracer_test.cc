// Event tracing end to end on shared/models/bert_tiny exported with the XNNPACK partitioner
// (6 portable kernels + 1 XNNPACK delegate): one event per instruction in order, delegate
// operators as many as XNNPACK runs and inside their call, debug names from the .pt2,
// overflow counted, no allocation while tracing, and `ember profile`'s outputs.
//
// This binary counts heap allocations (malloc family wrapped, operator new replaced; see
// BUILD), like //test/runtime:alloc_count_test.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "delegates/xnnpack/xnnpack_graph_generated.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "runtime/core/event_tracer.h"
#include "extension/module/module.h"
#include "schema/program_generated.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"
#include "test/support/allocation_counter.h"
#include "tools/devtools/trace_report.h"

namespace ember {
namespace tools {
int profile_command(int argc, char** argv);
}  // namespace tools

namespace {

using exporter::NpyArray;

struct Exported {
  std::vector<uint8_t> pte;
  std::vector<NpyArray> inputs;
  std::string dir;
};

// bert_tiny exported once for the whole binary; empty when shared/ is missing.
const Exported& bert() {
  static const Exported e = [] {
    Exported out;
    const std::string shared = testing::shared_dir();
    if (shared.empty()) return out;
    out.dir = shared + "/models/bert_tiny";
    exporter::ExportOptions o;
    o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    auto r = exporter::export_pt2_file(out.dir + "/model.pt2", o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) out.pte = r->pte;
    out.inputs = testing::read_npy_series(out.dir, "input_");
    return out;
  }();
  return e;
}

const schema::Method* forward(const std::vector<uint8_t>& pte) {
  return schema::GetProgram(pte.data() + 64)->methods()->Get(0);
}

// Operators in the XNNPACK blob of delegate `index` (each one XNNPACK operator when none is
// fused away, which holds for bert_tiny: no activation follows a linear there).
size_t blob_nodes(const std::vector<uint8_t>& pte, uint32_t index) {
  const schema::Program* program = schema::GetProgram(pte.data() + 64);
  const schema::Delegate* d = program->methods()->Get(0)->delegates()->Get(index);
  const schema::Segment* seg = program->segments()->Get(static_cast<uint32_t>(d->blob_segment()));
  uint64_t area = 0;
  std::memcpy(&area, pte.data() + 32, sizeof(area));  // header: segment_area_offset
  const uint8_t* blob = pte.data() + area + seg->offset();
  return xnnpack::fb::GetGraph(blob)->nodes()->size();
}

class TracedBert : public ::testing::Test {
 protected:
  void SetUp() override {
    if (bert().pte.empty()) GTEST_SKIP() << "shared/ data not found";
  }
  // Loads with `tracer` given at init, so delegates profile their operators.
  void load(EventTracer* tracer) {
    std::string why = runner_.load(bert().pte, "forward", tracer);
    ASSERT_EQ(why, "");
  }
  testing::PteRunner runner_;
};

TEST_F(TracedBert, OneEventPerInstructionInOrderWithDelegateOpsInside) {
  std::vector<TraceEvent> buffer(4096);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  ASSERT_NO_FATAL_FAILURE(load(&tracer));
  const schema::Method* m = forward(bert().pte);
  const uint32_t num_instructions = m->instructions()->size();
  ASSERT_EQ(m->delegates()->size(), 1u);
  // Init: one DelegateInit inside one MethodInit.
  ASSERT_EQ(tracer.size(), 2u);
  EXPECT_EQ(tracer.event(0).kind, TraceEventKind::DelegateInit);
  EXPECT_STREQ(tracer.event(0).name, "xnnpack#0");
  EXPECT_EQ(tracer.event(1).kind, TraceEventKind::MethodInit);
  EXPECT_LE(tracer.event(1).start_ns, tracer.event(0).start_ns);
  EXPECT_GE(tracer.event(1).end_ns, tracer.event(0).end_ns);
  EXPECT_GT(tracer.event(0).end_ns, tracer.event(0).start_ns);
  tracer.clear();

  const std::vector<NpyArray> reference_inputs = bert().inputs;
  for (int run = 0; run < 2; ++run) ASSERT_EQ(runner_.run(reference_inputs), "");
  // The traced run computes what PyTorch computed.
  std::vector<NpyArray> expected = testing::read_npy_series(bert().dir, "output_");
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(runner_.output(0).shape, expected[0].shape);

  EXPECT_EQ(tracer.dropped(), 0u);
  std::vector<TraceEvent> instructions, ops, executes;
  for (const TraceEvent& e : tracer.events()) {
    if (e.kind == TraceEventKind::Instruction) instructions.push_back(e);
    if (e.kind == TraceEventKind::DelegateOp) ops.push_back(e);
    if (e.kind == TraceEventKind::Execute) executes.push_back(e);
  }
  ASSERT_EQ(executes.size(), 2u);
  ASSERT_EQ(instructions.size(), 2 * num_instructions);  // no jumps in this program
  const size_t expected_ops = blob_nodes(bert().pte, 0);
  EXPECT_GT(expected_ops, 40u);
  EXPECT_EQ(ops.size(), 2 * expected_ops);
  size_t kernels = 0, delegate_calls = 0;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const TraceEvent& e = instructions[i];
    EXPECT_EQ(e.run, i / num_instructions);
    EXPECT_EQ(e.instruction, i % num_instructions);
    EXPECT_LE(e.start_ns, e.end_ns);
    if (i > 0) {
      EXPECT_GE(e.start_ns, instructions[i - 1].end_ns) << i;  // sequential, non-decreasing
    }
    EXPECT_GE(e.start_ns, executes[e.run].start_ns);
    EXPECT_LE(e.end_ns, executes[e.run].end_ns);
    if (e.delegate_index != kNoTraceIndex) {
      ++delegate_calls;
      EXPECT_STREQ(e.name, "xnnpack#0");
      EXPECT_NE(std::string(e.debug_name).find("nodes)"), std::string::npos) << e.debug_name;
    } else {
      ++kernels;
      EXPECT_EQ(std::string(e.name).rfind("aten::", 0), 0u) << e.name;
    }
    // The exporter wrote a .pt2 node name and its source line for every instruction.
    EXPECT_STRNE(e.debug_name, "") << e.name;
    EXPECT_NE(std::string(e.source).find("line"), std::string::npos) << e.name;
  }
  EXPECT_EQ(delegate_calls, 2u);
  EXPECT_EQ(kernels, 2u * (num_instructions - 1));
  EXPECT_GE(kernels, 2u * 5);
  // Every delegate operator lies inside its delegate call, in order, back to back.
  for (size_t k = 0; k < ops.size(); ++k) {
    const TraceEvent& op = ops[k];
    const TraceEvent* parent = nullptr;
    for (const TraceEvent& e : instructions) {
      if (e.run == op.run && e.instruction == op.instruction) parent = &e;
    }
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(parent->delegate_index, 0u);
    EXPECT_EQ(op.delegate_op, k % expected_ops);
    EXPECT_TRUE(op.estimated_start);
    EXPECT_GE(op.start_ns, parent->start_ns);
    EXPECT_LE(op.end_ns, parent->end_ns);
    EXPECT_LE(op.start_ns, op.end_ns);
    if (k % expected_ops != 0) {
      EXPECT_EQ(op.start_ns, ops[k - 1].end_ns);
    }
    EXPECT_STRNE(op.name, "");
  }
  // XNNPACK's names: bert's linear layers are fully connected operators. XNNPACK runs one
  // operator per blob node here, so each operator carries its .pt2 node's name.
  std::set<std::string> names;
  size_t linears = 0;
  for (const TraceEvent& op : ops) {
    names.insert(op.name);
    if (std::string(op.name) == "Fully Connected (NC, F32) GEMM") {
      ++linears;
      EXPECT_EQ(std::string(op.debug_name).rfind("linear", 0), 0u) << op.debug_name;
    }
    EXPECT_EQ(std::string(op.debug_name).find("nodes)"), std::string::npos) << op.debug_name;
  }
  EXPECT_EQ(names.count("Fully Connected (NC, F32) GEMM"), 1u);
  EXPECT_EQ(linears, 2u * 12u);  // 2 runs x bert_tiny's 2 layers x (q, k, v, out, ffn in, ffn out)
}

TEST_F(TracedBert, OverflowIsCountedAndTheRunUnharmed) {
  testing::PteRunner plain;
  ASSERT_EQ(plain.load(bert().pte), "");
  ASSERT_EQ(plain.run(bert().inputs), "");
  std::vector<TraceEvent> buffer(5);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  ASSERT_NO_FATAL_FAILURE(load(&tracer));
  ASSERT_EQ(runner_.run(bert().inputs), "");
  const schema::Method* m = forward(bert().pte);
  // 2 init events + every instruction + the delegate's operators + 1 execute.
  const size_t total = 2 + m->instructions()->size() + blob_nodes(bert().pte, 0) + 1;
  EXPECT_EQ(tracer.size(), 5u);
  EXPECT_EQ(tracer.dropped(), total - 5);
  EXPECT_EQ(runner_.output(0).data, plain.output(0).data);
}

// A Module given a tracer records the program load before the method's init events.
TEST_F(TracedBert, ModuleRecordsProgramLoadFirst) {
  const std::vector<uint8_t>& pte = bert().pte;
  std::vector<uint8_t> storage(pte.size() + 64);  // the Module wants 64-byte aligned memory
  uint8_t* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  std::memcpy(aligned, pte.data(), pte.size());
  std::vector<TraceEvent> buffer(64);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  ModuleOptions options;
  options.event_tracer = &tracer;
  // Events name strings the program owns: read them while the Module lives.
  Module module(aligned, pte.size(), options);
  ASSERT_TRUE(module.load_method("forward").ok());
  ASSERT_EQ(tracer.size(), 3u);  // program load, delegate init, method init
  EXPECT_EQ(tracer.event(0).kind, TraceEventKind::ProgramLoad);
  EXPECT_STREQ(tracer.event(0).name, "<memory>");
  EXPECT_GT(tracer.event(0).end_ns, tracer.event(0).start_ns);
  EXPECT_EQ(tracer.event(1).kind, TraceEventKind::DelegateInit);
  EXPECT_EQ(tracer.event(2).kind, TraceEventKind::MethodInit);
  EXPECT_LE(tracer.event(0).end_ns, tracer.event(2).start_ns);
  const std::string json = tools::chrome_trace_json(tools::copy_events(buffer.data(), tracer.size()));
  EXPECT_NE(json.find("program_load"), std::string::npos) << json;
}

TEST_F(TracedBert, TracerAttachedAfterInitGetsNoDelegateOps) {
  ASSERT_EQ(runner_.load(bert().pte), "");
  std::vector<TraceEvent> buffer(1024);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  runner_.method().set_event_tracer(&tracer);
  ASSERT_EQ(runner_.run(bert().inputs), "");
  const size_t num_instructions = forward(bert().pte)->instructions()->size();
  EXPECT_EQ(tracer.size(), num_instructions + 1);  // instructions + execute
  runner_.method().set_event_tracer(nullptr);
  ASSERT_EQ(runner_.run(bert().inputs), "");
  EXPECT_EQ(tracer.size(), num_instructions + 1);  // detached: nothing more
}

TEST_F(TracedBert, TracedExecuteDoesNotAllocate) {
  std::vector<TraceEvent> buffer(64 * 1024);
  BufferEventTracer tracer(buffer.data(), buffer.size());
  ASSERT_NO_FATAL_FAILURE(load(&tracer));
  ASSERT_EQ(runner_.run(bert().inputs), "");  // inputs bound once by the runner's vectors
  Method& m = runner_.method();
  Error errors[50];
  const uint64_t before = ::ember::testing::allocation_count();
  for (int i = 0; i < 50; ++i) errors[i] = m.execute();
  const uint64_t after = ::ember::testing::allocation_count();
  EXPECT_EQ(after - before, 0u);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(errors[i], Error::Ok) << m.last_error_message();
  EXPECT_EQ(tracer.dropped(), 0u);
  EXPECT_GT(tracer.size(), 50u * 50u);
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST_F(TracedBert, ProfileCommandWritesANestedChromeTrace) {
  const std::string pte = temp_path("bert_tiny.pte");
  {
    std::ofstream f(pte, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bert().pte.data()), static_cast<std::streamsize>(bert().pte.size()));
  }
  const std::string trace = temp_path("trace.json"), svg = temp_path("timeline.svg");
  const std::string in0 = bert().dir + "/input_0.npy", in1 = bert().dir + "/input_1.npy";
  std::vector<std::string> args = {"profile", pte, "--input", in0, "--input", in1, "--iterations", "3",
                                   "--warmup", "1", "--trace", trace, "--svg", svg};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  ASSERT_EQ(tools::profile_command(static_cast<int>(argv.size()), argv.data()), 0);

  std::ifstream f(trace);
  nlohmann::json root = nlohmann::json::parse(f);
  ASSERT_TRUE(root.contains("traceEvents"));
  const nlohmann::json& events = root["traceEvents"];
  const size_t num_instructions = forward(bert().pte)->instructions()->size();
  const size_t ops_per_call = blob_nodes(bert().pte, 0);
  size_t complete = 0, instructions = 0, ops = 0, executes = 0, inits = 0, loads = 0;
  std::vector<const nlohmann::json*> delegate_calls;
  for (const nlohmann::json& e : events) {
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X");
    for (const char* key : {"name", "ts", "dur", "pid", "tid", "args"}) ASSERT_TRUE(e.contains(key)) << key;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    ++complete;
    const std::string cat = e["cat"];
    if (cat == "instruction") ++instructions;
    if (cat == "delegate_op") ++ops;
    if (cat == "execute") ++executes;
    if (cat == "method_init" || cat == "delegate_init") ++inits;
    if (cat == "program_load") ++loads;
    if (cat == "instruction" && e["args"].contains("delegate")) delegate_calls.push_back(&e);
  }
  EXPECT_EQ(executes, 3u);
  EXPECT_EQ(inits, 2u);
  EXPECT_EQ(loads, 1u);  // the Module's program load
  EXPECT_EQ(instructions, 3 * num_instructions);
  EXPECT_EQ(ops, 3 * ops_per_call);
  EXPECT_EQ(complete, executes + inits + loads + instructions + ops);
  ASSERT_EQ(delegate_calls.size(), 3u);
  // Nesting: each operator's [ts, ts + dur] lies in its call's (same run and instruction).
  for (const nlohmann::json& e : events) {
    if (e["ph"] != "X" || e["cat"] != "delegate_op") continue;
    const nlohmann::json* parent = nullptr;
    for (const nlohmann::json* c : delegate_calls) {
      if ((*c)["args"]["run"] == e["args"]["run"]) parent = c;
    }
    ASSERT_NE(parent, nullptr);
    const double ts = e["ts"], dur = e["dur"], pts = (*parent)["ts"], pdur = (*parent)["dur"];
    EXPECT_GE(ts + 1e-3, pts);
    EXPECT_LE(ts + dur, pts + pdur + 1e-3);
    EXPECT_EQ(e["args"]["instruction"], (*parent)["args"]["instruction"]);
  }
  std::ifstream s(svg);
  std::stringstream text;
  text << s.rdbuf();
  EXPECT_EQ(text.str().rfind("<svg", 0), 0u);
  // One box per instruction and per delegate operator of the last run.
  size_t boxes = 0;
  for (size_t p = text.str().find("<rect x="); p != std::string::npos; p = text.str().find("<rect x=", p + 1)) ++boxes;
  EXPECT_EQ(boxes, num_instructions + ops_per_call);
}

TEST(TraceReport, SummaryRowsSumToTheInstructionsAndSplitDelegateTime) {
  // Two runs of: kernel (10 us), delegate call (100 us) with operators 30 + 50 us.
  std::vector<TraceEvent> raw;
  for (uint32_t run = 0; run < 2; ++run) {
    const uint64_t t = 1000000 * (run + 1);
    TraceEvent k;
    k.run = run;
    k.instruction = 0;
    k.name = "aten::add";
    k.debug_name = "add_1";
    k.start_ns = t;
    k.end_ns = t + 10000;
    TraceEvent op1, op2, call, exec;
    op1.kind = op2.kind = TraceEventKind::DelegateOp;
    op1.run = op2.run = call.run = exec.run = run;
    op1.instruction = op2.instruction = call.instruction = 1;
    op1.delegate_index = op2.delegate_index = call.delegate_index = 0;
    op1.delegate_op = 0;
    op2.delegate_op = 1;
    op1.name = "Fully Connected (NC, F32) GEMM";
    op2.name = "Softmax (NC, F32)";
    call.name = "xnnpack#0";
    op1.start_ns = t + 10000;
    op1.end_ns = op2.start_ns = t + 40000;
    op2.end_ns = t + 90000;
    call.start_ns = t + 10000;
    call.end_ns = t + 110000;
    exec.kind = TraceEventKind::Execute;
    exec.name = "forward";
    exec.start_ns = t;
    exec.end_ns = t + 111000;
    raw.insert(raw.end(), {k, op1, op2, call, exec});
  }
  tools::ProfileSummary s = tools::summarize(tools::copy_events(raw.data(), raw.size()));
  EXPECT_EQ(s.runs, 2u);
  EXPECT_EQ(s.execute_total_ns, 222000u);
  EXPECT_EQ(s.execute_min_ns, 111000u);
  EXPECT_EQ(s.instructions_total_ns, 220000u);
  ASSERT_EQ(s.rows.size(), 4u);
  uint64_t sum = 0;
  for (const tools::OperatorRow& r : s.rows) sum += r.total_ns;
  EXPECT_EQ(sum, s.instructions_total_ns);
  EXPECT_EQ(s.rows[0].name, "Softmax (NC, F32)");
  EXPECT_EQ(s.rows[0].where, "#1/1");
  EXPECT_EQ(s.rows[0].count, 2u);
  EXPECT_DOUBLE_EQ(s.rows[0].mean_us(), 50.0);
  EXPECT_EQ(s.rows[1].total_ns, 60000u);  // the GEMM
  EXPECT_EQ(s.rows[2].name, "xnnpack#0 (outside operators)");
  EXPECT_EQ(s.rows[2].total_ns, 40000u);
  EXPECT_EQ(s.rows[3].name, "aten::add");
  EXPECT_EQ(s.rows[3].debug_name, "add_1");
  const std::string table = tools::format_table(s, 0);
  EXPECT_NE(table.find("Softmax (NC, F32)"), std::string::npos);
  EXPECT_NE(table.find("45.5%"), std::string::npos);  // 100 of 220 us
  // By type: one row per name, counts and times added up.
  std::vector<tools::OperatorRow> types = tools::by_operator_type(s);
  ASSERT_EQ(types.size(), 4u);
  EXPECT_EQ(types[0].name, "Softmax (NC, F32)");
  EXPECT_EQ(types[0].count, 2u);
  EXPECT_EQ(types[0].total_ns, 100000u);
  EXPECT_NE(tools::format_type_table(s, 0).find("calls/run"), std::string::npos);
}

}  // namespace
}  // namespace ember
