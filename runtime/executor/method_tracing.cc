// Event tracing for Method (runtime/core/event_tracer.h): the traced init, the traced
// instruction loop and what each instruction reports. Nothing in method.cc refers to this
// file: execute() reaches run_traced() only through the pointer set_event_tracer() and the
// traced init set, so a binary that never attaches a tracer does not link it.
#include <cstring>

#include "runtime/executor/instruction_loop.h"
#include "runtime/executor/method.h"
#include "runtime/platform/platform.h"
#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {

// Times each backend init; the events are recorded only once the whole init succeeded (a
// caller may retry it, e.g. Module growing its method allocator).
class Method::DelegateInitTimer final : public InitObserver {
 public:
  DelegateInitTimer(EventTracer* tracer, uint64_t* times, size_t num_delegates)
      : tracer_(tracer), times_(times), num_delegates_(num_delegates) {}
  EventTracer* delegate_tracer() override { return tracer_->wants_delegate_ops() ? tracer_ : nullptr; }
  void delegate_init(size_t index, bool done) override {
    if (index < num_delegates_) times_[2 * index + (done ? 1 : 0)] = platform_monotonic_ns();
  }

 private:
  EventTracer* tracer_;
  uint64_t* times_;
  size_t num_delegates_;
};

template Error Method::run_instructions<true>();

Error Method::run_traced(Method& method) { return method.run_instructions<true>(); }

void Method::set_event_tracer(EventTracer* tracer) {
  event_tracer_ = tracer;
  traced_run_ = tracer != nullptr ? &Method::run_traced : nullptr;
  trace_runs_ = 0;
}

Result<Method> Method::init(const Program& program, const schema::Method* method,
                            MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool,
                            EventTracer* event_tracer) {
  if (event_tracer == nullptr || memory == nullptr || memory->method_allocator == nullptr) {
    return init_with(program, method, memory, diag, thread_pool, nullptr);
  }
  const uint64_t start_ns = platform_monotonic_ns();
  const size_t num_delegates = MethodMeta(method).num_delegates();
  uint64_t* times = memory->method_allocator->allocate_array<uint64_t>(2 * num_delegates + 1);
  if (times == nullptr) return method_allocator_too_small(diag, *memory->method_allocator, "the trace timers");
  for (size_t i = 0; i < 2 * num_delegates; ++i) times[i] = 0;
  DelegateInitTimer timer(event_tracer, times, num_delegates);
  Result<Method> m = init_with(program, method, memory, diag, thread_pool, &timer);
  if (!m.ok()) return m;
  for (uint32_t i = 0; i < num_delegates; ++i) {
    TraceEvent e;
    e.kind = TraceEventKind::DelegateInit;
    e.delegate_op = i;
    e.delegate_index = i;
    e.name = m->delegate_names_ + i * kDelegateNameBytes;
    e.start_ns = times[2 * i];
    e.end_ns = times[2 * i + 1];
    event_tracer->record(e);
  }
  TraceEvent e;
  e.kind = TraceEventKind::MethodInit;
  e.name = m->meta().name();
  e.start_ns = start_ns;
  e.end_ns = platform_monotonic_ns();
  event_tracer->record(e);
  m->set_event_tracer(event_tracer);
  return m;
}

Result<Method> Program::load_method(const char* name, MemoryManager* memory, Diagnostic* diag,
                                    ThreadPool* thread_pool, EventTracer* event_tracer) const {
  const schema::Method* method = find_method(name);
  if (method == nullptr) {
    return fail(diag, Error::NotFound, "the program has no method named '%s'", name ? name : "(null)");
  }
  return Method::init(*this, method, memory, diag, thread_pool, event_tracer);
}

// Reads the event's name, the program's debug entry ("" when absent or when the table does
// not match the instructions one to one, which only a minimally verified file can have) and
// the values the instruction wrote, from the program and the instruction table: nothing is
// precomputed at init, so an untraced Method carries no tracing tables.
void Method::describe_instruction(size_t pc, TraceEvent* event) const {
  const Instruction& ins = instructions_[pc];
  const schema::Instruction* si = method_->instructions()->Get(static_cast<flatbuffers::uoffset_t>(pc));
  uint32_t num_outputs = 0;
  switch (ins.kind) {
    case Instruction::Kind::Kernel:
      event->name = ins.op_name;
      num_outputs = si->kind_as_KernelCall()->num_outputs();
      break;
    case Instruction::Kind::Delegate:
      event->name = ins.a < num_delegates_ ? delegate_names_ + ins.a * kDelegateNameBytes : "delegate";
      num_outputs = si->kind_as_DelegateCall()->num_outputs();
      break;
    case Instruction::Kind::Move:
      event->name = "move";
      break;
    case Instruction::Kind::JumpFalse:
      event->name = "jump_false";
      break;
    case Instruction::Kind::Nop:
      event->name = "free";
      break;
  }
  const auto* debug = method_->debug();
  if (debug != nullptr && debug->size() == num_instructions_) {
    const schema::InstructionDebug* entry = debug->Get(static_cast<flatbuffers::uoffset_t>(pc));
    if (entry != nullptr && entry->name() != nullptr) event->debug_name = entry->name()->c_str();
    if (entry != nullptr && entry->source() != nullptr) event->source = entry->source()->c_str();
  }
  if (num_outputs > ins.num_args) num_outputs = ins.num_args;
  event->outputs = ins.args + (ins.num_args - num_outputs);
  event->num_outputs = num_outputs;
}

}  // namespace ember
