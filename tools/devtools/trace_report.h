// Turns runtime trace events (runtime/core/event_tracer.h) into reports: an operator
// table, a Chrome trace-event JSON (opens in Perfetto / chrome://tracing) and a timeline
// SVG. Host-side tooling (STL, nlohmann-json); used by `ember profile` and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/event_tracer.h"

namespace ember {
namespace tools {

// A copy of a TraceEvent whose strings are owned (events outlive the Method they came from).
struct OwnedEvent {
  TraceEventKind kind = TraceEventKind::Instruction;
  bool estimated_start = false;
  uint32_t run = 0;
  uint32_t instruction = kNoTraceIndex;
  uint32_t delegate_op = kNoTraceIndex;
  uint32_t delegate_index = kNoTraceIndex;
  std::string name, debug_name, source;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

std::vector<OwnedEvent> copy_events(const TraceEvent* events, size_t count);

// One row of the operator table: a kernel instruction, an operator inside a delegate call,
// or a delegate call's own time outside its reported operators ("(outside operators)").
struct OperatorRow {
  std::string name;        // kernel / delegate operator name
  std::string where;       // "#12" (instruction) or "#3/7" (delegate call 3, operator 7)
  std::string debug_name;  // .pt2 node name(s)
  std::string source;      // file:line
  size_t count = 0;        // occurrences over the runs
  uint64_t total_ns = 0;
  double mean_us() const { return count ? total_ns / 1e3 / count : 0.0; }
};

struct ProfileSummary {
  size_t runs = 0;                 // Execute events
  uint64_t execute_total_ns = 0;   // sum of Execute events
  uint64_t execute_min_ns = 0;
  uint64_t instructions_total_ns = 0;  // sum of Instruction events (= rows' total)
  std::vector<OperatorRow> rows;   // by total time, descending
};

// Leaf rows over the execute events (init events are ignored). Rows sum to the
// instructions' total time.
ProfileSummary summarize(const std::vector<OwnedEvent>& events);

// The table as text; `top` rows at most (0: all). Share is of the instructions' total.
std::string format_table(const ProfileSummary& summary, size_t top);

// Rows added up by operator name (every conv of a model in one line), by total time.
std::vector<OperatorRow> by_operator_type(const ProfileSummary& summary);
std::string format_type_table(const ProfileSummary& summary, size_t top);

// {"traceEvents":[...], "displayTimeUnit":"ns"}: complete ("X") events in microseconds
// since the first event, pid 1, tid 1 (the thread that ran the method); delegate operators
// lie inside their delegate call's interval. args carry instruction, run, debug name, source.
std::string chrome_trace_json(const std::vector<OwnedEvent>& events);

// Timeline of run `run` (execute events only): one lane for the executing thread, with
// delegate operators drawn in a second row under their delegate call.
std::string timeline_svg(const std::vector<OwnedEvent>& events, uint32_t run);

}  // namespace tools
}  // namespace ember
