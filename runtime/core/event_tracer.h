// Event tracing: timings of method init, every executed instruction and, inside delegates,
// every operator, delivered to an embedder-supplied EventTracer.
//
// This header is the interface only (//runtime/core). The code that drives it (the traced
// instruction loop, init timing, event details) is runtime/executor/method_tracing.cc, which
// a binary links only if it attaches a tracer (Method::set_event_tracer, or the tracer
// overloads of Program::load_method / Method::init).
//
// Cost: with no tracer attached, execute() pays one pointer check per call and reads no
// clock. With a tracer attached, the runtime reads the
// monotonic clock (platform_monotonic_ns(), clock_gettime through the vDSO on Linux) twice
// per instruction and calls record() once per event: the "no system call in execute" rule
// holds for the untraced path only. Tracing never allocates.
//
// Debug handles: an event's `instruction` is its index in the method's instruction array;
// `debug_name`/`source` come from the program's optional per-instruction debug table
// (written by `ember export`: the .pt2 node name and the last frame of its stack trace).
// Delegate operators carry (instruction, delegate_op) where delegate_op is the operator's
// position in the delegate's execution order; their names come from the delegate (XNNPACK:
// its operator names, e.g. "Convolution (NHWC, F32) IGEMM").
//
// Lifetimes: name/debug_name/source point into the Program or the Method's memory; they
// stay valid while the Method (and its Program) live. Copy them out to keep them longer.
// Threading: record() is called on the thread that runs init()/execute() of the Method the
// tracer is attached to. One tracer per Method unless record() is made thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"

namespace ember {

struct EValue;

enum class TraceEventKind : uint8_t {
  MethodInit = 0,    // Method::init as a whole (recorded at its end, on success only)
  DelegateInit = 1,  // one backend init inside MethodInit; delegate_op = delegate index
  Execute = 2,       // one execute() call as a whole (recorded at its end)
  Instruction = 3,   // one instruction of execute(): kernel call, delegate call, move, ...
  DelegateOp = 4,    // one operator inside a delegate call (its parent is `instruction`)
  ProgramLoad = 5,   // Module::load: opening/mapping the file and verifying the program
                     // (recorded by the Module given the tracer; `name` is the path)
};

constexpr uint32_t kNoTraceIndex = 0xFFFFFFFFu;

struct TraceEvent {
  TraceEventKind kind = TraceEventKind::Instruction;
  // Delegate operators whose backend gives only durations (XNNPACK) are laid out back to
  // back from the moment the delegate started them; `estimated_start` says so.
  bool estimated_start = false;
  uint32_t run = 0;                     // execute() number since attach; 0 for init events
  uint32_t instruction = kNoTraceIndex; // debug handle; kNoTraceIndex for MethodInit/Execute
  uint32_t delegate_op = kNoTraceIndex; // DelegateOp: operator index; DelegateInit: delegate index
  uint32_t delegate_index = kNoTraceIndex;  // delegate calls, their operators and inits
  const char* name = "";        // kernel ("aten::conv2d"), "delegate:<backend>", operator name
  const char* debug_name = "";  // .pt2 node name(s); "" when the program has no debug table
  const char* source = "";      // "file:line in fn" of the .pt2 node; "" when unknown
  uint64_t start_ns = 0;        // platform_monotonic_ns()
  uint64_t end_ns = 0;
  // Instruction events of kernel and delegate calls: the values the instruction just wrote
  // (its trailing `num_outputs` arguments). Valid only during record(): planned memory is
  // reused by later instructions, so a tracer that wants the numbers (`ember debug`)
  // copies them there. Null/0 for other events.
  const EValue* const* outputs = nullptr;
  uint32_t num_outputs = 0;
};

// Receives events. record() runs inside execute(): it must not block, allocate or throw
// (a debugging tracer that copies `outputs` may allocate: it trades speed for insight).
class EventTracer {
 public:
  virtual ~EventTracer() = default;
  virtual void record(const TraceEvent& event) = 0;
  // Asked once per delegate at Method init: true makes delegates build their state with
  // per-operator profiling (XNNPACK: XNN_FLAG_BASIC_PROFILING), which they keep for the
  // Method's life, so it is decided when the tracer is given to load_method().
  virtual bool wants_delegate_ops() const { return true; }
};

// The usual tracer: appends events to an array the embedder owns. When the array is full,
// further events are counted in dropped() and discarded (the run continues unharmed).
// Not thread-safe.
class BufferEventTracer final : public EventTracer {
 public:
  // `events` (capacity entries) must outlive the tracer; null with capacity 0 only counts.
  BufferEventTracer(TraceEvent* events, size_t capacity) : events_(events), capacity_(capacity) {}

  void record(const TraceEvent& event) override {
    if (size_ < capacity_) {
      events_[size_++] = event;
    } else {
      ++dropped_;
    }
  }
  bool wants_delegate_ops() const override { return delegate_ops_; }
  void set_wants_delegate_ops(bool wanted) { delegate_ops_ = wanted; }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t dropped() const { return dropped_; }
  const TraceEvent& event(size_t index) const { return events_[index]; }
  Span<const TraceEvent> events() const { return Span<const TraceEvent>(events_, size_); }
  // Forgets recorded events and the dropped count (e.g. after a warm-up run).
  void clear() {
    size_ = 0;
    dropped_ = 0;
  }

 private:
  TraceEvent* events_;
  size_t capacity_;
  size_t size_ = 0;
  size_t dropped_ = 0;
  bool delegate_ops_ = true;
};

}  // namespace ember
